"""``quantadvise check`` end to end through the real entry point: the examples/ repositories (exit
0, 1 and 2), every output format, baselines, --init, and a failing and a passing case per rule
family. Expected lines are found in the files themselves (``line_of``); expected numbers are
derived here, in the comments, or read from the evidence files independently of the program."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
FIXTURES = REPO / "tests" / "fixtures"
GiB = 1024**3


def line_of(path: Path, needle: str) -> int:
    hits = [i for i, line in enumerate(path.read_text().splitlines(), start=1) if needle in line]
    assert len(hits) == 1, f"{needle!r} occurs {len(hits)} times in {path}"
    return hits[0]


def copy_example(tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(EXAMPLES / name, dst)
    (dst / ".git").mkdir()  # a repository root: config discovery stops here
    return dst


def make_repo(tmp_path: Path, files: dict[str, str | dict]) -> Path:
    root = tmp_path / "repo"
    for name, content in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(content, indent=2) if isinstance(content, dict) else content)
    (root / ".git").mkdir(parents=True, exist_ok=True)
    return root


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def rule_ids(result) -> set[str]:
    return {f["rule_id"] for f in result.json()["findings"]}


def bundled_config(name: str) -> dict:
    return json.loads((REPO / "data" / "models" / name).read_text())


# --- the examples ------------------------------------------------------------------------------


def test_passing_example_exits_0(cli, monkeypatch):
    monkeypatch.chdir(EXAMPLES / "passing-repo")
    r = cli("check")
    assert r.code == 0, r.stdout + r.stderr
    assert r.stdout.startswith("quantadvise check: PASS — 0 errors, 0 warnings (fail on error)")
    assert "no findings" in r.stdout and r.stderr == ""
    j = cli("check", "--format", "json")
    assert j.code == 0
    doc = j.json()
    assert doc["schema_version"] == 1 and doc["passed"] is True and doc["findings"] == []
    assert doc["config_file"] == "quantadvise.yaml" and doc["files_scanned"] == ["deploy/k8s/llm.yaml"]
    assert {s["status"] for s in doc["rules"]} <= {"pass", "skipped"}
    t = doc["targets"][0]
    manifest = EXAMPLES / "passing-repo" / "deploy" / "k8s" / "llm.yaml"
    assert (t["file"], t["line"]) == ("deploy/k8s/llm.yaml", line_of(manifest, "- --model"))
    assert (t["scheme"], t["kv_cache_dtype"], t["gpu"], t["concurrency"]) == ("awq", "kv-fp8", "l4", 16)
    m = t["memory"]
    # Llama-3(.1)-8B at 4-bit, group 128, zero-points: 5,727,854,592 bytes (the chapter's 5.73 GB)
    assert m["weights_bytes"] == 5_727_854_592
    # KV fp8: 32 layers x 8 heads x 128 x (K, V) x 1 byte = 65,536 B/token; continuous batching holds
    # prompt + output/2 = 2048 + 256 tokens per sequence; x 16 sequences
    assert m["kv_bytes"] == 16 * (2048 + 256) * 65_536 == 2_415_919_104
    from quantadvise.catalog import get_gpu

    l4 = get_gpu("l4").memory_bytes
    assert m["budget_bytes"] == int(l4 * 0.90 - 2 * GiB)  # --gpu-memory-utilization=0.90, 2 GiB reserve


def test_failing_example_exits_1_with_every_family(cli, monkeypatch):
    root = EXAMPLES / "failing-repo"
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json")
    assert r.code == 1, r.stderr
    doc = r.json()
    assert doc["passed"] is False
    manifest = root / "k8s" / "deployment.yaml"
    got = {(f["rule_id"], f["file"], f["line"]) for f in doc["findings"]}
    q_line = line_of(manifest, "--quantization gptq")
    tp_line = line_of(manifest, "--tensor-parallel-size 2")
    cmd_line = line_of(manifest, "exec vllm serve")
    expected = {
        ("QA102", "k8s/deployment.yaml", q_line),  # --quantization gptq on an AWQ checkpoint
        ("QA107", "k8s/deployment.yaml", tp_line),  # TP 2 in a container given 1 GPU
        # QA102 and QA107 mean vLLM refuses to start (rules.REFUSES_START): no speed verdict (QA201/QA202)
        # and no queueing verdict (QA303) for a server that never runs (docs/ci.md, Refused deployments)
        ("QA402", "evals/awq/arc_challenge.jsonl", None),
        ("QA402", "evals/awq/gsm8k.jsonl", None),
        ("QA501", "k8s/deployment.yaml", q_line),
        ("QA503", "k8s/deployment.yaml", cmd_line),  # no --kv-cache-dtype: the command's line
        ("QA505", "k8s/deployment.yaml", tp_line),
    }
    assert got == expected
    assert {f["rule_id"][:3] for f in doc["findings"]} == {"QA1", "QA4", "QA5"}
    qa102 = next(f for f in doc["findings"] if f["rule_id"] == "QA102")
    assert qa102["engine_message"].startswith("Quantization method specified in the model config (awq) does not match")
    qa107 = next(f for f in doc["findings"] if f["rule_id"] == "QA107")
    assert f"given 1 (line {line_of(manifest, 'nvidia.com/gpu: 1')})" in qa107["message"]
    # the memory arithmetic is still shown, per GPU: floor(85,520,809,984 x 0.92) = 78,679,145,185 - 2 GiB
    # reserve - 5,727,854,592 / 2 weights (AWQ INT4 g128, the chapter's 5.73 GB, over tensor-parallel 2) =
    # 73,667,734,241 B; but the deployment is refused, so the declared 256 sequences are not judged
    m = doc["targets"][0]["memory"]
    assert m["kv_cache_bytes_per_gpu"] == 73_667_734_241
    assert (m["starts"], m["refused_by"], m["concurrency"]) == (False, ["QA102", "QA107"], None)
    assert m["refusal"].startswith("Quantization method specified in the model config (awq) does not match")
    assert doc["targets"][0]["performance"] is None and doc["targets"][0]["concurrency"] == 256  # as declared
    rules = {s["rule_id"]: s for s in doc["rules"]}
    for rid in ("QA201", "QA202", "QA303", "QA304"):
        assert rules[rid]["status"] == "skipped", rid
        assert rules[rid]["reason"] == ("vLLM refuses to start (QA102 quantization-flag-mismatch, QA107 "
                                        "parallelism-mismatch)"), rid
    # the evidence, counted here from the files: pairs by id, lost = right before and wrong after
    for task in ("arc_challenge", "gsm8k"):
        base = {o["id"]: o["correct"] for o in map(json.loads, (root / "evals/bf16" / f"{task}.jsonl").open())}
        quant = {o["id"]: o["correct"] for o in map(json.loads, (root / "evals/awq" / f"{task}.jsonl").open())}
        lost = sum(1 for i in base if base[i] and not quant[i])
        gained = sum(1 for i in base if not base[i] and quant[i])
        msgs = [f["message"] for f in doc["findings"] if f["rule_id"] == "QA402" and task in f["message"]]
        flips = f"{lost + gained} of {len(base)} answers changed correctness"
        assert any(flips in m for m in msgs), msgs
        assert any(f"drop {(lost - gained) / len(base) * 100:.2f} pp > max 1.00 pp" in m for m in msgs), msgs
    # every rule was looked at; the failing ones are exactly the rules with findings
    status = {s["rule_id"]: s["status"] for s in doc["rules"]}
    assert {k for k, v in status.items() if v == "fail"} == {x[0] for x in expected}


def test_failing_example_table_is_readable(cli, monkeypatch):
    monkeypatch.chdir(EXAMPLES / "failing-repo")
    r = cli("check")
    assert r.code == 1
    assert r.stdout.startswith("quantadvise check: FAIL — 8 errors, 1 warning (fail on error)")
    assert "  refuses to start: QA102 quantization-flag-mismatch, QA107 parallelism-mismatch\n" in r.stdout
    assert "engine says: Quantization method specified in the model config (awq)" in r.stdout


def test_exit_2_on_a_malformed_config_names_file_line_and_key(cli, tmp_path, monkeypatch):
    root = copy_example(tmp_path, "passing-repo")
    cfg = root / "quantadvise.yaml"
    edit(cfg, "  concurrency: 16", "  concurency: 16")
    monkeypatch.chdir(root)
    r = cli("check")
    assert r.code == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [
        f"Error: quantadvise.yaml: line {line_of(cfg, 'concurency')}: key 'workload.concurency': unknown key "
        "(check spelling; docs/ci.md lists the keys)"
    ]
    assert cli("check", "--exit-zero").code == 2  # --exit-zero never hides "could not run"


def test_exit_2_on_a_malformed_manifest_names_file_line_and_key(cli, tmp_path, monkeypatch):
    root = copy_example(tmp_path, "passing-repo")
    manifest = root / "deploy" / "k8s" / "llm.yaml"
    edit(manifest, '            - "16"\n', '            - {value: 16}\n')
    monkeypatch.chdir(root)
    r = cli("check")
    assert r.code == 2
    assert r.stderr.splitlines() == [
        f"Error: deploy/k8s/llm.yaml: line {line_of(manifest, '{value: 16}')}: command/args items must be strings"
    ]
    edit(manifest, "            - {value: 16}\n", "            - [16\n")
    r = cli("check")
    assert r.code == 2 and r.stderr.startswith("Error: deploy/k8s/llm.yaml: line ")
    assert "invalid YAML" in r.stderr and len(r.stderr.splitlines()) == 1


def test_exit_2_on_bad_names_in_the_config(cli, tmp_path, monkeypatch):
    root = copy_example(tmp_path, "passing-repo")
    cfg = root / "quantadvise.yaml"
    monkeypatch.chdir(root)
    edit(cfg, "gpu: l4", "gpu: l44")
    r = cli("check")
    assert r.code == 2
    line = line_of(cfg, "gpu: l44")
    assert r.stderr.startswith(f"Error: quantadvise.yaml: line {line}: key 'gpu': unknown GPU 'l44'")
    edit(cfg, "gpu: l44", "gpu: l4")
    edit(cfg, "quantization: awq", "quantization: awk")
    r = cli("check")
    assert r.code == 2 and f"line {line_of(cfg, 'awk')}: key 'quantization': unknown scheme 'awk'" in r.stderr
    edit(cfg, "quantization: awk", "quantization: awq")
    edit(cfg, "  quantized: evals/awq/", "  quantized: evals/w4/")
    r = cli("check")
    assert r.code == 2 and r.stderr.strip() == (f"Error: quantadvise.yaml: line {line_of(cfg, 'evals/w4/')}: key "
                                                "'accuracy.quantized': no such file or directory: evals/w4/")


# --- output formats -------------------------------------------------------------------------------


def test_github_annotations_have_the_right_file_and_line(cli, monkeypatch):
    root = EXAMPLES / "failing-repo"
    monkeypatch.chdir(root)
    r = cli("check", "--format", "github")
    assert r.code == 1
    manifest = root / "k8s" / "deployment.yaml"
    lines = r.stdout.splitlines()
    q_line = line_of(manifest, "--quantization gptq")
    assert (f"::error file=k8s/deployment.yaml,line={q_line},title=QA102 quantization-flag-mismatch::vLLM 0.33.0: the "
            "checkpoint declares 'awq' but --quantization is 'gptq'; drop --quantization (or pass awq)") in lines
    assert sum(1 for x in lines if x.startswith("::error ")) == 8
    assert sum(1 for x in lines if x.startswith("::warning ")) == 1  # QA505 (refused: no QA202, QA303)
    accuracy = [x for x in lines if "QA402" in x]
    assert accuracy and all(x.startswith("::error file=evals/awq/") and ",line=" not in x for x in accuracy)
    assert all("%25" in x for x in accuracy if "%" in x.split("::", 2)[2])  # '%' escaped in messages


def test_sarif_report_validates_and_locates(cli, monkeypatch, tmp_path):
    import jsonschema

    monkeypatch.chdir(EXAMPLES / "failing-repo")
    out = tmp_path / "qa.sarif"
    r = cli("check", "--format", "sarif", "--output", out)
    assert r.code == 1 and r.stdout == ""
    assert r.stderr.strip() == f"quantadvise check: FAIL — 8 errors, 1 warning; sarif report written to {out}"
    doc = json.loads(out.read_text())
    schema = json.loads((FIXTURES / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft4Validator(schema).validate(doc)
    results = doc["runs"][0]["results"]
    assert len(results) == 9
    manifest = EXAMPLES / "failing-repo" / "k8s" / "deployment.yaml"
    qa107 = next(x for x in results if x["ruleId"] == "QA107")
    assert qa107["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "k8s/deployment.yaml"},
        "region": {"startLine": line_of(manifest, "--tensor-parallel-size 2")},
    }
    assert qa107["level"] == "error"


def test_junit_and_markdown(cli, monkeypatch):
    monkeypatch.chdir(EXAMPLES / "failing-repo")
    r = cli("check", "--format", "junit")
    assert r.code == 1
    root = ET.fromstring(r.stdout)
    cases = root.findall("./testsuite/testcase")
    failed = sorted(c.get("name").split()[0] for c in cases if c.find("failure") is not None)
    # errors fail the cases; the warning (QA505) goes to system-out at --fail-on error
    assert failed == ["QA102", "QA107", "QA402", "QA501", "QA503"]
    assert root.get("failures") == "5"
    r = cli("check", "--format", "junit", "--fail-on", "warning")
    root = ET.fromstring(r.stdout)
    assert root.get("failures") == "6"
    md = cli("check", "--format", "markdown")
    assert md.stdout.startswith("### ❌ quantadvise check: FAIL — 8 errors, 1 warning")
    assert "| error | **QA102** quantization-flag-mismatch | `k8s/deployment.yaml:" in md.stdout


# --- fail-on, exit-zero, baselines ------------------------------------------------------------------


def test_fail_on_warning_and_exit_zero(cli, tmp_path, monkeypatch):
    root = copy_example(tmp_path, "passing-repo")
    cfg = root / "quantadvise.yaml"
    # 24 sequences declared against --max-num-seqs 16: QA505, a warning
    edit(cfg, "  concurrency: 16", "  concurrency: 24")
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json")
    assert r.code == 0 and rule_ids(r) == {"QA505"}
    assert cli("check", "--fail-on", "warning").code == 1
    assert cli("check", "--fail-on", "warning", "--exit-zero").code == 0
    cfg.write_text(cfg.read_text() + "fail_on: warning\n")
    assert cli("check").code == 1
    assert cli("check", "--fail-on", "error").code == 0  # the flag wins over the file
    cfg.write_text(cfg.read_text() + "rules:\n  QA505: off\n")
    assert cli("check").code == 0


def test_exit_zero_on_the_failing_example(cli, monkeypatch):
    monkeypatch.chdir(EXAMPLES / "failing-repo")
    r = cli("check", "--exit-zero")
    assert r.code == 0 and "FAIL" in r.stdout.splitlines()[0]  # the verdict is still reported


def test_baseline_survives_moved_lines_but_not_new_findings(cli, tmp_path, monkeypatch):
    root = copy_example(tmp_path, "failing-repo")
    monkeypatch.chdir(root)
    base = tmp_path / "baseline.json"
    r = cli("check", "--write-baseline", base, "--format", "json")
    assert r.code == 0
    doc = r.json()
    assert doc["findings"] == [] and len(doc["suppressed"]) == 9
    assert (root / doc["baseline_written"]).resolve() == base.resolve()  # shown relative: ../baseline.json
    written = json.loads(base.read_text())
    assert len(written["findings"]) == 9 and all("line" not in f for f in written["findings"])
    assert cli("check", "--baseline", base).code == 0
    # move every line of the manifest down: the findings are the same things, so still accepted
    manifest = root / "k8s" / "deployment.yaml"
    manifest.write_text("# reviewed\n# by the platform team\n\n" + manifest.read_text())
    r = cli("check", "--baseline", base, "--format", "json")
    assert r.code == 0 and r.json()["findings"] == []
    moved = next(f for f in r.json()["suppressed"] if f["rule_id"] == "QA102")
    assert moved["line"] == line_of(manifest, "--quantization gptq")  # reported where it is now
    # a different --quantization is a different finding: new, so the build fails again
    edit(manifest, "--quantization gptq", "--quantization awq_marlin --kv-cache-dtype fp8_e4m4")
    r = cli("check", "--baseline", base, "--format", "json")
    assert r.code == 1
    assert rule_ids(r) == {"QA105"}  # QA102 went away; the unknown KV dtype is new
    # adopting: the config names a baseline that does not exist yet; writing it is what creates it
    first = tmp_path / "first.json"
    cfg_text = (root / "quantadvise.yaml").read_text()
    (root / "quantadvise.yaml").write_text(cfg_text + f"baseline: {first}\n")
    assert cli("check").code == 2  # missing, and not being written
    assert cli("check", "--write-baseline", first).code == 0 and cli("check").code == 0
    (root / "quantadvise.yaml").write_text(cfg_text)
    # the baseline can come from the config file too; a report in JSON works as a baseline
    report = tmp_path / "report.json"
    report.write_text(cli("check", "--format", "json").stdout)
    (root / "quantadvise.yaml").write_text((root / "quantadvise.yaml").read_text() + f"baseline: {report}\n")
    assert cli("check").code == 0
    report.write_text("{not json")
    r = cli("check")
    assert r.code == 2 and "invalid JSON" in r.stderr


# --- --init -----------------------------------------------------------------------------------------


def test_init_writes_a_prefilled_starter_and_refuses_to_overwrite(cli, tmp_path, monkeypatch):
    root = make_repo(tmp_path, {"run.sh": (
        "#!/bin/sh\n"
        "exec vllm serve org/some-model-AWQ \\\n"
        "  --max-num-seqs 48 --max-model-len 16384 \\\n"
        "  -tp 2 --kv-cache-dtype fp8\n"
    )})
    monkeypatch.chdir(root)
    r = cli("check", "--init", "run.sh")
    assert r.code == 0 and r.stdout.startswith("wrote quantadvise.yaml")
    from quantadvise.api.check_config import load_config

    cfg = load_config(root / "quantadvise.yaml").config
    assert (cfg.model, cfg.engine, cfg.gpus, cfg.kv_cache_dtype) == ("org/some-model-AWQ", "vllm", 2, "fp8")
    # --max-num-seqs / --max-model-len are caps, not a workload: shown as the commented examples, not declared
    assert (cfg.workload.batch, cfg.workload.ctx, cfg.deployment) == (None, None, ["run.sh"])
    text = (root / "quantadvise.yaml").read_text()
    assert "  # concurrency: 48" in text and "(the command caps it at 48)" in text and "  # ctx: 16384" in text
    assert cfg.gpu is None and cfg.quantization is None  # never guessed
    r = cli("check", "--init")
    assert r.code == 2 and r.stderr.strip() == "Error: quantadvise.yaml already exists; pass --force to overwrite it"
    # no PATHS: the folder `check` would scan (the working directory), not nothing
    r = cli("check", "--init", "--force", "--format", "json")
    assert r.code == 0 and r.json()["overwritten"] is True
    assert r.json()["prefilled"] == {"deployment": ["."], "engine": "vllm", "model": "org/some-model-AWQ", "gpus": 2,
                                     "kv_cache_dtype": "fp8"}
    r = cli("check", "--init", "--config", "ops/qa.yaml")
    assert r.code == 0 and (root / "ops" / "qa.yaml").is_file()
    assert load_config(root / "ops" / "qa.yaml").config.deployment == [".."]  # relative to the file
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    r = cli("check", "--init", "--force", "--config", "pyproject.toml")
    assert r.code == 2 and "--init writes YAML" in r.stderr
    assert (root / "pyproject.toml").read_text() == "[project]\nname = 'x'\n"  # untouched


def test_init_keeps_a_long_model_id_apart_from_its_comment(cli, tmp_path, monkeypatch):
    """A model id of 35+ characters filled the 40-column field: `model: <id># comment` made the comment
    part of the id, and the next check exited 2. The starter's own text must read back to the id."""
    model = "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"  # 50 characters
    root = make_repo(tmp_path, {"run.sh": f"vllm serve {model}\n"})
    monkeypatch.chdir(root)
    assert cli("check", "--init", "run.sh").code == 0
    from quantadvise.api.check_config import load_config

    assert load_config(root / "quantadvise.yaml").config.model == model
    assert f"model: {model} # Hub id or local path" in (root / "quantadvise.yaml").read_text()


# --- without a config file ---------------------------------------------------------------------------


def test_flags_only_from_a_script(cli, tmp_path, monkeypatch):
    script = ("#!/usr/bin/env bash\n"
              "MODEL=${MODEL:-meta-llama/Llama-3.1-8B}\n"
              "vllm serve \"$MODEL\" --max-model-len=8192 \\\n"
              "    --max-num-seqs 32\n")
    root = make_repo(tmp_path, {"scripts/serve.sh": script})
    monkeypatch.chdir(root)
    r = cli("check", "scripts/serve.sh")
    assert r.code == 2 and r.stderr.startswith("Error: no GPU declared")
    r = cli("check", "scripts/serve.sh", "--gpu", "h100", "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    t = doc["targets"][0]
    assert doc["config_file"] is None
    # no workload declared: the speed rules price the engine's batch when saturated, its cap --max-num-seqs 32
    # (32 sequences of 2,048 tokens fit easily in an H100's KV cache), at `recommend`'s default 2,048-token
    # context; --max-model-len 8192 is the longest request, not every request
    assert (t["model"], t["scheme"], t["concurrency"], t["ctx"]) == ("meta-llama/Llama-3.1-8B", "bf16", 32, 2048)
    assert any(a.startswith("concurrency: 32, the engine's batch when saturated: --max-num-seqs 32") for a in
               t["assumptions"]), t["assumptions"]
    assert any("--max-model-len 8,192 is the longest request, not every one" in a for a in t["assumptions"])
    assert not any(i.startswith("QA3") for i in rule_ids(r))  # it starts, and no workload is declared
    assert "QA401" not in rule_ids(r)  # bf16 needs no evidence
    r = cli("check", "scripts/serve.sh", "--gpu", "h100", "--quantization", "fp8-dynamic", "--format", "json")
    assert "QA501" in rule_ids(r)  # declared on the command line, served bf16


def test_nothing_to_check_is_exit_2(cli, tmp_path, monkeypatch):
    root = make_repo(tmp_path, {"README.md": "no deployment here\n"})
    monkeypatch.chdir(root)
    r = cli("check", "--gpu", "h100")
    assert r.code == 2 and r.stderr.startswith("Error: nothing to check: no engine command")


def test_pyproject_table_is_discovered(cli, tmp_path, monkeypatch):
    root = make_repo(tmp_path, {
        "pyproject.toml": ('[project]\nname = "svc"\n\n[tool.quantadvise]\nmodel = "meta-llama/Llama-3.1-8B"\n'
                           'gpu = "h100"\nquantization = "fp8-dynamic"\n\n[tool.quantadvise.workload]\n'
                           'concurrency = 64\nctx = 4096\n'),
        "deploy/run.sh": "vllm serve meta-llama/Llama-3.1-8B --quantization fp8_per_channel --max-model-len 4096\n",
    })
    monkeypatch.chdir(root / "deploy")
    r = cli("check", "--format", "json")
    assert r.code == 0, r.stdout + r.stderr
    doc = r.json()
    assert doc["config_file"] == "../pyproject.toml"
    t = doc["targets"][0]
    # online FP8 with per-channel weights and per-token activations is the fp8-dynamic preset
    assert (t["scheme"], t["declared_scheme"], t["file"]) == ("fp8-dynamic", "fp8-dynamic", "run.sh")


# --- one failing and one passing case per rule family, beyond the examples --------------------------


def test_qa1_refusals_from_a_compose_file_and_version_fallback(cli, tmp_path, monkeypatch):
    """SGLang on an H100 with an NVFP4 (W4A4) checkpoint, image tag v0.5.24: not on file (QA100), so it is
    checked against the closest release on file, 0.5.23, which serves W4A4 NVFP4 below SM100 weight-only
    through FP4 Marlin and says so (QA106, a warning); the tag is another release than declared (QA506)."""
    from quantadvise import catalog
    from quantadvise.advisor import plan

    cfg = bundled_config("meta-llama/Llama-3.1-8B.json")
    preset = catalog.scheme_preset("nvfp4")
    scheme = catalog.scheme_from_preset(preset)
    cfg["quantization_config"] = plan.quantization_config(scheme, preset.deploy)
    compose = ("services:\n"
               "  llm:\n"
               "    image: lmsysorg/sglang:v0.5.24\n"  # not on file: the newest older release (0.5.23)
               "    command: >\n"
               "      python3 -m sglang.launch_server --model-path /models/llama\n"
               "      --context-length 8192 --max-running-requests 16\n")
    root = make_repo(tmp_path, {
        "quantadvise.yaml": "model: ./ckpt\ngpu: h100\nengine_version: 0.5.23\nquantization: nvfp4\n"
                            "workload: {concurrency: 16, ctx: 8192}\n"
                            "accuracy: {baseline: e/b.jsonl, quantized: e/q.jsonl}\n",
        "ckpt/config.json": cfg, "docker-compose.yml": compose,
        "e/b.jsonl": '{"id": 1, "correct": true}\n{"id": 2, "correct": false}\n',
        "e/q.jsonl": '{"id": 1, "correct": true}\n{"id": 2, "correct": false}\n',
    })
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json")
    found = {(f["rule_id"], f["line"]) for f in r.json()["findings"]}
    cmd = line_of(root / "docker-compose.yml", "sglang.launch_server")
    assert ("QA106", cmd) in found and ("QA100", cmd) in found and ("QA506", cmd) in found
    qa106 = next(f for f in r.json()["findings"] if f["rule_id"] == "QA106")
    assert "weight-only" in qa106["engine_message"]
    # SGLang's own flag names, not vLLM's
    mem = r.json()["targets"][0]["memory"]
    assert (mem["memory_utilization_flag"], mem["max_num_seqs_flag"]) == ("--mem-fraction-static",
                                                                          "--max-running-requests")
    t = r.json()["targets"][0]
    assert t["engine_version"] == "0.5.23" and "closest release on file to 0.5.24" in t["engine_version_from"]
    # the same deployment on a B200 (SM100) loads
    edit(root / "quantadvise.yaml", "gpu: h100", "gpu: b200")
    assert "QA103" not in rule_ids(cli("check", "--format", "json"))


def test_qa105_fp8_e5m2_against_e4m3_kv_scales_and_qa503_auto_becomes_fp8(cli, tmp_path, monkeypatch):
    ck = json.loads((FIXTURES / "checkpoints" / "llm-compressor-tinyllama-fp8-static-kv-cache-scheme.json").read_text())
    script = "vllm serve ./model \\\n  --kv-cache-dtype fp8_e5m2 \\\n  --max-model-len 2048 --max-num-seqs 8\n"
    root = make_repo(tmp_path, {"model/config.json": ck["config"], "serve.sh": script,
                                "quantadvise.yaml": "model: ./model\ngpu: h100\nkv_cache_dtype: auto\n"})
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json")
    assert r.code == 1
    found = {(f["rule_id"], f["line"]) for f in r.json()["findings"]}
    kv_line = line_of(root / "serve.sh", "fp8_e5m2")
    assert ("QA105", kv_line) in found and ("QA503", kv_line) in found
    # without the flag, 'auto' loads the checkpoint's e4m3 KV scales: fp8, not the declared auto
    edit(root / "serve.sh", "  --kv-cache-dtype fp8_e5m2 \\\n", "")
    r = cli("check", "--format", "json")
    assert "QA105" not in rule_ids(r)
    qa503 = next(f for f in r.json()["findings"] if f["rule_id"] == "QA503")
    assert "declared kv_cache_dtype auto (kv-bf16)" in qa503["message"] and "will use kv-fp8" in qa503["message"]
    edit(root / "quantadvise.yaml", "kv_cache_dtype: auto", "kv_cache_dtype: fp8")
    assert "QA503" not in rule_ids(cli("check", "--format", "json"))


def test_qa1_artifact_problems_from_a_shell_script(cli, tmp_path, monkeypatch):
    script = ("#!/bin/bash\n"
              "vllm serve meta-llama/Llama-3.1-8B \\\n"
              "  --max-num-seqs 16 \\\n"
              "  --gpu-memory-utilization high \\\n"
              "  --max-model-len 4096 \\\n"
              "  --max-model-len 8192 \\\n"
              "  --quantization \"$QUANT\"\n")
    root = make_repo(tmp_path, {"run.sh": script, "quantadvise.yaml": "gpu: h100\nworkload: {concurrency: 16}\n"})
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json", "--fail-on", "warning")
    assert r.code == 1
    found = {(f["rule_id"], f["line"]) for f in r.json()["findings"]}
    p = root / "run.sh"
    assert {("QA108", line_of(p, "high")), ("QA109", line_of(p, "8192")), ("QA110", line_of(p, "QUANT"))} <= found


@pytest.mark.parametrize(("flag", "expected"), [("", {"QA302"}), ("--max-model-len 16384 ", set())])
def test_qa302_default_max_model_len_does_not_fit(cli, tmp_path, monkeypatch, flag, expected):
    """Llama 3.1 8B in bf16 on an L4 without --max-model-len: vLLM takes max_position_embeddings,
    131,072 tokens = 131,072 x 131,072 B = 16 GiB of KV; the budget is 24.15 GB x 0.9 - 2 GiB ~ 19.6 GB
    and the weights 16.06 GB, leaving ~3.5 GB. 16,384 tokens (2 GiB) fit."""
    root = make_repo(tmp_path, {
        "run.sh": f"vllm serve meta-llama/Llama-3.1-8B {flag}--max-num-seqs 1\n",
        "quantadvise.yaml": "gpu: l4\nworkload: {concurrency: 1, ctx: 2048}\n",
    })
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json")
    assert {i for i in rule_ids(r) if i.startswith("QA3")} == expected
    if expected:
        msg = next(f["message"] for f in r.json()["findings"] if f["rule_id"] == "QA302")
        assert "max-model-len 131,072 tokens (the model's max_position_embeddings: no --max-model-len)" in msg
        assert "vLLM refuses to start" in msg


def test_qa301_and_qa304(cli, tmp_path, monkeypatch):
    root = make_repo(tmp_path, {
        "run.sh": "vllm serve meta-llama/Llama-3.1-70B --max-model-len 4096\n",
        "quantadvise.yaml": "gpu: l4\nworkload: {concurrency: 1, ctx: 1024}\n",
    })
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json")
    assert r.code == 1 and "QA301" in rule_ids(r)  # 141 GB of bf16 weights on a 24 GB card
    passing = copy_example(tmp_path, "passing-repo")
    monkeypatch.chdir(passing)
    # the passing example on an L4: budget 24,152,899,584 x 0.90 - 2 GiB = 19,590,125,977 B; weights
    # 5,727,854,592 + KV 2,415,919,104 leave 11,446,352,281 B free = 58.4%: a 60% requirement fails, 50% passes
    edit(passing / "quantadvise.yaml", "  min_memory_headroom: 10%", "  min_memory_headroom: 60%")
    r = cli("check", "--format", "json")
    assert rule_ids(r) == {"QA304"} and r.code == 0  # a warning
    edit(passing / "quantadvise.yaml", "  min_memory_headroom: 60%", "  min_memory_headroom: 50%")
    assert rule_ids(cli("check", "--format", "json")) == set()


def test_qa401_and_qa403(cli, tmp_path, monkeypatch):
    root = copy_example(tmp_path, "passing-repo")
    cfg = root / "quantadvise.yaml"
    monkeypatch.chdir(root)
    text = cfg.read_text()
    # no accuracy policy declared (no accuracy:, no thresholds.evidence_below_bits, no rules: QA401): the missing
    # evidence is a note (docs/ci.md, QA401) and the gate passes
    cfg.write_text(text[: text.index("accuracy:")])
    r = cli("check", "--format", "json")
    assert r.code == 0 and rule_ids(r) == {"QA401"}
    assert r.json()["findings"][0]["severity"] == "note"
    # a declared policy (the evidence threshold) makes it an error at the quantization line
    cfg.write_text(text[: text.index("accuracy:")].replace("  min_memory_headroom: 10%\n",
                                                          "  min_memory_headroom: 10%\n  evidence_below_bits: 8\n"))
    r = cli("check", "--format", "json")
    assert r.code == 1 and rule_ids(r) == {"QA401"}
    f = r.json()["findings"][0]
    assert (f["file"], f["line"]) == ("quantadvise.yaml", line_of(cfg, "quantization: awq"))
    cfg.write_text(text.replace("  min_samples: 200\n", "  min_samples: 200\n  max_kl: 0.5\n"))
    r = cli("check", "--format", "json")
    assert rule_ids(r) == {"QA403"} and r.code == 0  # gsm8k logs no log-probs: KL cannot be checked there
    assert r.json()["findings"][0]["file"] == "evals/awq/gsm8k.jsonl"


def test_qa502_qa504_qa505_drift(cli, tmp_path, monkeypatch):
    root = copy_example(tmp_path, "passing-repo")
    cfg = root / "quantadvise.yaml"
    monkeypatch.chdir(root)
    edit(cfg, "quantization: awq", "quantization: w4a16")
    edit(cfg, "  concurrency: 16", "  concurrency: 24")
    r = cli("check", "--format", "json")
    manifest = root / "deploy" / "k8s" / "llm.yaml"
    got = {(f["rule_id"], f["line"]) for f in r.json()["findings"]}
    assert ("QA502", line_of(manifest, "- --model")) in got  # symmetric W4A16 declared, AWQ zero-points served
    assert ("QA505", line_of(manifest, "--max-num-seqs")) in got  # the flag's line
    msg = next(f["message"] for f in r.json()["findings"] if f["rule_id"] == "QA505")
    assert msg == (f"declared concurrency 24 exceeds --max-num-seqs 16 (line {line_of(manifest, '--max-num-seqs')}): "
                   "8 requests queue")
    # a Hub id declared, another served
    flags = make_repo(tmp_path, {"run.sh": "vllm serve meta-llama/Meta-Llama-3-8B --max-model-len 8192\n",
                                 "quantadvise.yaml": "model: meta-llama/Llama-3.1-8B\ngpu: h100\n"})
    monkeypatch.chdir(flags)
    r = cli("check", "--format", "json")
    assert "QA504" in rule_ids(r)
    edit(flags / "run.sh", "meta-llama/Meta-Llama-3-8B", "meta-llama/llama-3.1-8b")
    assert "QA504" not in rule_ids(cli("check", "--format", "json"))


def test_declaration_alone_without_an_engine_command(cli, tmp_path, monkeypatch):
    root = make_repo(tmp_path, {"quantadvise.yaml": (
        "model: meta-llama/Llama-3.1-8B\ngpu: h100\nquantization: fp8\nkv_cache_dtype: fp8\n"
        "workload: {concurrency: 64, ctx: 4096}\n")})
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json")
    assert r.code == 0, r.stdout
    t = r.json()["targets"][0]
    # the declared 'fp8' on 16-bit weights is vLLM's online shorthand, per-tensor: the fp8-tensor preset
    assert (t["source"], t["scheme"], t["kv_cache_dtype"], t["file"]) == ("config", "fp8-tensor", "kv-fp8", None)
    assert any("declaration alone" in n for n in r.json()["notes"])


def test_every_artifact_kind_in_one_repository(cli, monkeypatch):
    """A Dockerfile CMD (exec form, continuation lines, the image's entrypoint), Helm values (a YAML
    args list, --flag=value, vLLM's 4k = 4,000), a compose folded command (SGLang spellings) and a
    script (python -m, $SEQS from an assignment, quoting): four deployments, each located."""
    root = FIXTURES / "gate" / "multi"
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json")
    assert r.code == 0, r.stderr  # warnings only
    doc = r.json()
    targets = {(t["file"], t["line"], t["engine"], t["engine_version"]) for t in doc["targets"]}
    assert targets == {
        ("docker/Dockerfile", line_of(root / "docker/Dockerfile", "CMD ["), "vllm", "0.33.0"),
        ("helm/values.yaml", line_of(root / "helm/values.yaml", 'command: ["vllm"'), "vllm", "0.33.0"),
        ("compose.yaml", line_of(root / "compose.yaml", "sglang.launch_server"), "sglang", "0.5.23"),
        ("scripts/serve.sh", line_of(root / "scripts/serve.sh", "python -m vllm"), "vllm", "0.33.0"),
    }
    for t in doc["targets"]:
        assert (t["concurrency"], t["ctx"], t["kv_cache_dtype"]) == (32, 4096, "kv-fp8"), t["label"]
    by_file = {t["file"]: t for t in doc["targets"]}
    # --mem-fraction-static 0.85 / --gpu-memory-utilization=0.85 against vLLM 0.33.0's own default elsewhere:
    # CacheConfig.gpu_memory_utilization = Field(default=0.92, ...) (vllm/config/cache.py:215)
    assert by_file["compose.yaml"]["memory"]["memory_utilization"] == 0.85
    assert by_file["scripts/serve.sh"]["memory"]["memory_utilization"] == 0.85
    assert by_file["helm/values.yaml"]["memory"]["memory_utilization"] == 0.92
    drift = [f for f in doc["findings"] if f["rule_id"] == "QA505"]
    # vLLM reads "4k" as 4 x 10^3 = 4,000 tokens (4K would be 4,096): shorter than the declared 4,096
    assert [(f["file"], f["line"]) for f in drift] == [("helm/values.yaml", line_of(root / "helm/values.yaml", "4k"))]
    assert "exceeds max-model-len 4,000" in drift[0]["message"]
    assert {f["rule_id"] for f in doc["findings"]} == {"QA202", "QA505"}  # bf16 is 1.59x behind fp8-dynamic here


def test_profile_from_the_config_or_the_flag_prices_the_speed_rules(cli, tmp_path, monkeypatch):
    import yaml

    prof = FIXTURES / "profiles" / "simulated-h100-sxm.yaml"
    prof_id = yaml.safe_load(prof.read_text())["id"]
    root = make_repo(tmp_path, {
        "run.sh": "vllm serve meta-llama/Meta-Llama-3-8B --max-model-len 4096 --max-num-seqs 64\n",
        "quantadvise.yaml": "gpu: h100\nprofile: profiles/h100.yaml\n",
        "profiles/h100.yaml": prof.read_text(),
    })
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json")
    assert r.code in (0, 1), r.stderr
    assert prof_id in r.json()["targets"][0]["performance"]["profile"]  # relative to the config file
    (root / "quantadvise.yaml").write_text("gpu: h100\n")
    plain = cli("check", "--format", "json").json()["targets"][0]["performance"]["profile"]
    assert prof_id not in plain
    flagged = cli("check", "--profile", "profiles/h100.yaml", "--format", "json")  # relative to the working folder
    assert prof_id in flagged.json()["targets"][0]["performance"]["profile"]


def test_a_profile_that_cannot_be_read_is_exit_2_not_a_pass(cli, tmp_path, monkeypatch):
    # `recommend --profile` / `roofline --profile` refuse a missing or broken profile with exit 2; `check` once
    # turned the same error into a note ("speed not predicted: ...") and passed with the speed rules unchecked
    root = copy_example(tmp_path, "passing-repo")
    monkeypatch.chdir(root)
    r = cli("check", "--profile", "nosuch.yaml")
    assert r.code == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [f"Error: cannot read {root / 'nosuch.yaml'}: No such file or directory"]
    (root / "broken.yaml").write_text("a: [\n", encoding="utf-8")
    cfg = root / "quantadvise.yaml"
    edit(cfg, "gpus: 1\n", "gpus: 1\nprofile: broken.yaml\n")
    r = cli("check")
    assert r.code == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "broken.yaml: line 2: invalid YAML" in lines[0]
    assert cli("check", "--exit-zero").code == 2  # --exit-zero never hides "could not run"
