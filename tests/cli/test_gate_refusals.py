"""``quantadvise check``: a deployment the engine refuses to start is refused whichever rule found it,
and a model the gate cannot resolve never stops it (issue 14).

1. Every rule in ``gate.rules.REFUSES_START`` (QA1xx refusals, QA301, QA302, QA306) makes the
   deployment refused: the summary says so, ``memory.starts`` is false with the rules that found it,
   and the verdicts that describe a running engine are not given (QA201/QA202 speed, QA303/QA304
   workload, QA305 "SGLang starts"). A refusal rule turned ``off`` does not count.
2. A model named in quantadvise.yaml that is not bundled, cached or reachable is one QA111 warning per
   deployment at the ``model:`` line, and the engine-level rules still run; only a malformed
   quantadvise.yaml exits 2.

The figures are derived in the comments from the engines' sources and the bundled configs.
"""

from __future__ import annotations

import pytest

from tests.cli.test_check_cli import line_of, make_repo

L4 = 24_152_899_584  # bytes, as nvidia-smi reports an L4 (data/gpus.yaml; tests/unit/test_gate_startup.py)
GIB = 2**30
# Meta-Llama-3-8B(-Instruct) config.json: 32 layers x 8 KV heads x head_dim 128 x (K, V) x 2 B (bf16)
KV_PER_TOKEN = 32 * 8 * 128 * 2 * 2  # = 131,072 B
WEIGHTS_8B = 16_060_522_496  # 8,030,261,248 parameters x 2 B (bf16)
START_DEPENDENT = ("QA201", "QA202", "QA303", "QA304")


def _json(cli, *args):
    r = cli("check", *args, "--format", "json")
    assert r.code in (0, 1), r.stderr
    return r, r.json()


def _status(doc):
    return {s["rule_id"]: (s["status"], s["reason"]) for s in doc["rules"]}


def _refused_only_by(doc, rule, concurrency):
    """The one deployment is refused by ``rule`` alone: its only finding, not priced, the declared
    ``concurrency`` kept as its load. Returns the target."""
    assert {f["rule_id"] for f in doc["findings"]} == {rule}
    t = doc["targets"][0]
    assert t["performance"] is None and t["concurrency"] == concurrency
    assert (t["memory"]["starts"], t["memory"]["refused_by"]) == (False, [rule])
    return t


# --- 1. a refusal from any rule refuses the deployment -------------------------------------------------


def test_vllm_max_model_len_above_the_models_is_refused_with_no_speed_verdict(cli, tmp_path, monkeypatch):
    """The audit's repro. vLLM's ModelConfig raises "User-specified max_model_len (16384) is greater than
    the derived max_model_len (max_position_embeddings=8192 ...)" (vllm/config/model.py:2657-2684)
    before it sizes anything: the server never starts, so "starts: 1 sequence of 16,384 tokens" and
    "2.12x slower than w4a16" described a server that does not exist.

    The memory alone would start: KV per GPU (vLLM 0.34.0: its default 1.0 less the 1 GiB it keeps free after
    warmup, vllm/v1/worker/extensible_kv_cache.py:64-65) = 24,152,899,584 - 1 GiB - 2 GiB - 16,060,522,496
    = 4,871,151,616 B, and one 16,384-token sequence needs 16,384 x 131,072 = 2,147,483,648 B:
    floor(4,871,151,616 / 2,147,483,648) = 2 fit (no QA302). QA306 is the only refusal."""
    root = make_repo(tmp_path, {"a.sh": "vllm serve meta-llama/Meta-Llama-3-8B-Instruct --max-model-len 16384\n"})
    monkeypatch.chdir(root)
    r, doc = _json(cli, ".", "--gpu", "l4")
    assert r.code == 1
    assert [f["rule_id"] for f in doc["findings"]] == ["QA306"]  # no QA202 (was: "2.12x slower")
    f = doc["findings"][0]
    assert f["engine_message"].startswith("User-specified max_model_len (16384) is greater than the derived "
                                          "max_model_len (max_position_embeddings=8192")
    t = doc["targets"][0]
    m = t["memory"]
    kv = L4 - GIB - 2 * GIB - WEIGHTS_8B
    assert m["kv_cache_bytes_per_gpu"] == kv == 4_871_151_616
    assert m["sequences_at_max_model_len"] == kv // (16_384 * KV_PER_TOKEN) == 2  # memory alone: it would fit
    assert (m["starts"], m["refused_by"]) == (False, ["QA306"])
    assert m["refusal"] == f["engine_message"]
    assert t["performance"] is None and t["concurrency"] is None  # no workload declared, nothing priced
    status = _status(doc)
    for rid in START_DEPENDENT:
        assert status[rid] == ("skipped", "vLLM refuses to start (QA306 context-exceeds-model)"), rid
    table = cli("check", ".", "--gpu", "l4", "--wide").stdout
    assert "  refuses to start: QA306 context-exceeds-model\n" in table
    assert "starts:" not in table and "speed:" not in table and "slower" not in table
    assert "note: no speed verdict: vLLM refuses to start (QA306 context-exceeds-model)" in table


def test_sglang_context_length_above_the_models_is_refused_without_qa305(cli, tmp_path, monkeypatch):
    """SGLang's ModelConfig raises ValueError("... User-specified context_length (16384) is greater than
    the derived context_length (8192) ... set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")
    (sglang/srt/configs/model_config.py:1291-1316): it never reaches the pool, so QA305's "SGLang starts
    and warns" is false. The pool it would have had: floor(24,152,899,584 x 0.684) - 16,060,522,496 =
    460,060,819 B = 3,509 tokens < 16,384 (the old QA305)."""
    script = ("python -m sglang.launch_server --model-path meta-llama/Meta-Llama-3-8B-Instruct "
              "--context-length 16384\n")
    monkeypatch.chdir(make_repo(tmp_path, {"a.sh": script}))
    r, doc = _json(cli, ".", "--gpu", "l4")
    assert r.code == 1
    assert [f["rule_id"] for f in doc["findings"]] == ["QA306"]  # no QA305, no QA202
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in doc["findings"][0]["engine_message"]
    assert "SGLang refuses to start" in doc["findings"][0]["message"]
    m = doc["targets"][0]["memory"]
    assert m["kv_capacity_tokens"] == (int(L4 * 0.684) - WEIGHTS_8B) // KV_PER_TOKEN == 3_509
    assert (m["starts"], m["refused_by"]) == (False, ["QA306"])
    status = _status(doc)
    assert status["QA305"] == ("skipped", "SGLang refuses to start (QA306 context-exceeds-model)")
    assert status["QA202"] == ("skipped", "SGLang refuses to start (QA306 context-exceeds-model)")
    table = cli("check", ".", "--gpu", "l4", "--wide").stdout
    assert "SGLang starts" not in table and "refuses to start: QA306 context-exceeds-model" in table


def test_an_engine_level_refusal_suppresses_the_declared_workload_and_speed(cli, tmp_path, monkeypatch):
    """QA105: 'fp8_e4m4' is not one of vLLM 0.33.0's --kv-cache-dtype choices, so its argument parser
    exits. Without it this deployment starts and the declared 64 x 8,192 sync workload (64 GiB of KV
    against 54.73 GiB) is a QA303 warning (tests/cli/test_check_gate_cli.py); refused, it is neither
    priced nor judged, and the report keeps the declared 64 as the load."""
    script = ("vllm serve meta-llama/Meta-Llama-3-8B-Instruct --dtype bfloat16 --max-num-seqs 256 --max-model-len "
              "8192 --gpu-memory-utilization 0.90 --kv-cache-dtype fp8_e4m4\n")
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": script, "quantadvise.yaml": (
        "gpu: h100\nworkload: {concurrency: 64, ctx: 8192, mode: sync}\n")}))
    r, doc = _json(cli)
    assert r.code == 1
    t = _refused_only_by(doc, "QA105", 64)
    assert t["memory"]["concurrency"] is None and t["memory"]["max_concurrency"] is None  # no queueing verdict
    status = _status(doc)
    for rid in START_DEPENDENT:
        assert status[rid] == ("skipped", "vLLM refuses to start (QA105 kv-cache-dtype-refused)"), rid


def test_a_memory_refusal_with_a_declared_workload_is_not_priced(cli, tmp_path, monkeypatch):
    """QA302 on an L4 (the model's 131,072 tokens need 16 GiB of KV; 4.54 GiB is left) with a declared
    concurrency: the declared batch used to be priced anyway (QA201/QA202 on a server that does not
    start)."""
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": "vllm serve meta-llama/Llama-3.1-8B --max-num-seqs 8\n",
                                           "quantadvise.yaml": "gpu: l4\nworkload: {concurrency: 4}\n"}))
    r, doc = _json(cli)
    assert r.code == 1
    _refused_only_by(doc, "QA302", 4)
    status = _status(doc)
    assert status["QA201"] == ("skipped", "vLLM refuses to start (QA302 max-model-len-exceeds-kv-cache)")
    assert status["QA202"] == ("skipped", "vLLM refuses to start (QA302 max-model-len-exceeds-kv-cache)")
    # the KV refusal keeps its own numbers in the summary: 16,384 MiB needed, 37,163 tokens fit
    # (vLLM 0.34.0: (24,152,899,584 - 1 GiB - 2 GiB - 16,060,522,496) // 131,072 = 4,871,151,616 // 131,072 = 37,163)
    assert "refuses to start: one sequence of 131,072 tokens needs 16.00 GiB per GPU; 37,163 fit" in \
        cli("check", "--wide").stdout


def test_a_refusal_rule_turned_off_does_not_refuse_but_a_lowered_one_does(cli, tmp_path, monkeypatch):
    """`rules: {QA306: off}` is how docs/ci.md says to declare VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: vLLM then
    starts, so the speed verdict comes back. Lowering QA306 to a warning changes the exit code, not
    what the engine does: still refused."""
    root = make_repo(tmp_path, {"a.sh": "vllm serve meta-llama/Meta-Llama-3-8B-Instruct --max-model-len 16384\n",
                                "quantadvise.yaml": "gpu: l4\nrules: {QA306: off}\n"})
    monkeypatch.chdir(root)
    r, doc = _json(cli)
    t = doc["targets"][0]
    assert t["memory"]["starts"] is True and "refused_by" not in t["memory"]  # omitted when it starts
    assert t["performance"] is not None
    assert _status(doc)["QA202"][0] in ("pass", "fail")
    (root / "quantadvise.yaml").write_text("gpu: l4\nrules: {QA306: warning}\n")
    r, doc = _json(cli)
    assert r.code == 0 and [f["rule_id"] for f in doc["findings"]] == ["QA306"]
    assert doc["targets"][0]["performance"] is None and doc["targets"][0]["memory"]["refused_by"] == ["QA306"]


# --- 2. an unresolvable declared model does not stop the gate -----------------------------------------

W4A16 = "neuralmagic/Meta-Llama-3.1-8B-Instruct-quantized.w4a16"  # not bundled; HF_HUB_OFFLINE=1 (conftest)


def test_init_then_check_with_a_model_that_is_not_bundled(cli, tmp_path, monkeypatch):
    """The audit's repro: `check --init .` declares the command's model; the next `check --gpu h100`
    exited 2 ("quantadvise.yaml: line 8: key 'model': model ... is not bundled ..."). Now: one QA111
    warning at the model: line, for the deployment, and the gate goes on (exit 0: nothing else the
    flags alone can tell)."""
    root = make_repo(tmp_path, {"a.sh": f"vllm serve {W4A16} --max-model-len 8192\n"})
    monkeypatch.chdir(root)
    assert cli("check", "--init", ".").code == 0
    r, doc = _json(cli, "--gpu", "h100")
    assert r.code == 0, r.stdout
    assert [(f["rule_id"], f["file"], f["line"], f["target"]) for f in doc["findings"]] == [
        ("QA111", "quantadvise.yaml", line_of(root / "quantadvise.yaml", f"model: {W4A16}"), "a.sh:1")]
    assert "HF_HUB_OFFLINE" in doc["findings"][0]["message"] and W4A16 in doc["findings"][0]["message"]
    assert doc["targets"][0]["memory"] is None and doc["targets"][0]["concurrency"] is None


def test_an_unresolvable_declared_model_keeps_every_deployments_engine_findings(cli, tmp_path, monkeypatch):
    """Issue 14's acceptance with the model declared: every deployment's engine-level findings (here
    vLLM 0.33.0's unknown --kv-cache-dtype, QA105, and a container given fewer GPUs than
    --tensor-parallel-size, QA107: neither needs the model's config) and one QA111 per deployment;
    exit 1 for the errors."""
    root = make_repo(tmp_path, {
        "a.sh": f"vllm serve {W4A16} --kv-cache-dtype fp8_e4m4\n",
        "compose.yaml": ("services:\n  vllm:\n    image: vllm/vllm-openai:v0.33.0\n"
                         f"    command: [\"--model\", \"{W4A16}\", \"--tensor-parallel-size\", \"2\"]\n"
                         "    deploy:\n      resources:\n        reservations:\n          devices:\n"
                         "            - driver: nvidia\n              count: 1\n              capabilities: [gpu]\n"),
        "quantadvise.yaml": f"model: {W4A16}\ngpu: h100\n",
    })
    monkeypatch.chdir(root)
    r, doc = _json(cli)
    assert r.code == 1
    found = sorted((f["rule_id"], f["target"]) for f in doc["findings"])
    targets = sorted(t["label"] for t in doc["targets"])
    assert len(targets) == 2
    assert [x for x in found if x[0] == "QA111"] == [("QA111", t) for t in targets]  # one per deployment
    assert ("QA105", "a.sh:1") in found
    assert any(rid == "QA107" and t.startswith("compose.yaml") for rid, t in found)
    assert {f["line"] for f in doc["findings"] if f["rule_id"] == "QA111"} == {1}  # model: is line 1


def test_the_python_api_returns_a_result_for_an_unresolvable_declared_model(tmp_path):
    from quantadvise.api.check import check

    root = make_repo(tmp_path, {"a.sh": f"vllm serve {W4A16}\n", "quantadvise.yaml": f"model: {W4A16}\n"})
    res = check(cwd=root, gpu="h100")
    assert [f.rule_id for f in res.findings] == ["QA111"] and res.exit_code() == 0


@pytest.mark.parametrize(("line", "error"), [
    ("modle: x", "key 'modle': unknown key"),  # an unknown key
    ("model: [a, b]", "key 'model': Input should be a valid string"),  # a wrong type
    ("model: [", "invalid YAML"),  # bad syntax
    ("model: ./weights/config.json", "key 'model': no such file or folder: ./weights/config.json"),  # no local copy
    ("model: llama-nope", "key 'model': unknown model 'llama-nope'"),  # neither bundled nor a Hub id: a typo
])
def test_a_malformed_declaration_still_exits_2_at_its_line(cli, tmp_path, monkeypatch, line, error):
    root = make_repo(tmp_path, {"a.sh": f"vllm serve {W4A16}\n", "quantadvise.yaml": f"gpu: h100\n{line}\n"})
    monkeypatch.chdir(root)
    r = cli("check")
    assert r.code == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: quantadvise.yaml: line ") and error in lines[0], lines


# --- 3. the "nothing fits" hint (recommend) ---------------------------------------------------------


def test_nothing_fits_hint_names_the_accuracy_tolerance_only_when_something_was_vetoed(cli):
    """Llama-3.1-70B on one L4 (22.49 GiB): even 4-bit weights (~35 GiB) do not fit, so every candidate
    is "does not fit" and none was vetoed for accuracy: relaxing the tolerance cannot help."""
    r = cli("recommend", "-m", "meta-llama/Llama-3.1-70B", "--gpu", "l4")
    assert r.code == 2
    assert "do not fit" in r.stderr and "vetoed" not in r.stderr
    assert "--accuracy-tolerance" not in r.stderr


def test_nothing_fits_hint_names_the_accuracy_tolerance_when_something_was_vetoed(cli):
    """Llama-3.1-70B on one H100 with only w3a16 offered: bf16 (141 GB) does not fit in 80 GB and 3-bit
    weights are vetoed at the default 1-point tolerance (published drop 3-20 points, arXiv:2404.14047):
    a looser tolerance is one way out, so the hint says so."""
    r = cli("recommend", "-m", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--candidates", "w3a16")
    assert r.code == 2
    assert "vetoed by the accuracy filter (w3a16)" in r.stderr
    assert "relax --accuracy-tolerance" in r.stderr


@pytest.mark.parametrize("folder", ["2024-01-01", "1_0", "0x10", ".inf", "@x", "1:30", "yes"])
def test_init_quotes_a_path_yaml_would_read_as_something_else(cli, tmp_path, monkeypatch, folder):
    # a deployment folder named like a date, an underscored or hex integer, .inf, a sexagesimal 1:30, yes, or
    # starting with @ was written unquoted: the starter failed its own validation ("deployment.0: Input should
    # be a valid string") and no file was written
    import yaml

    root = make_repo(tmp_path, {f"{folder}/serve.sh": "vllm serve meta-llama/Llama-3.1-8B\n"})
    monkeypatch.chdir(root)
    r = cli("check", "--init", folder)
    assert r.code == 0, r.stderr
    doc = yaml.safe_load((root / "quantadvise.yaml").read_text())
    assert doc["deployment"] == [folder]


def test_sglang_s_own_fraction_at_or_below_zero_is_a_refusal(cli, tmp_path, monkeypatch):
    # SGLang derives --mem-fraction-static from the GPU's memory less what its flags reserve; a 16,384-token
    # chunked prefill on an L4 (22.49 GiB) leaves -0.125: no room for weights or KV, the server does not start.
    # It was "Error: memory utilization must be in (0, 1], got -0.125" (exit 2, no flag named); now QA301
    root = make_repo(tmp_path, {"serve.sh": "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B "
                                            "--chunked-prefill-size 16384\n"})
    monkeypatch.chdir(root)
    r, doc = _json(cli, "--gpu", "l4", "serve.sh")
    assert r.code == 1, r.stderr
    (f,) = [f for f in doc["findings"] if f["severity"] == "error"]
    assert f["rule_id"] == "QA301" and "--mem-fraction-static -0.125" in f["message"]


@pytest.mark.parametrize("model", ["./model", ".", "serve.sh"])
def test_the_command_s_path_that_is_no_checkpoint_here_is_qa111(cli, tmp_path, monkeypatch, model):
    # docs/ci.md §1: only a declared local copy (model: / --model) that cannot be read stops the gate; the
    # command's own path is the container's — on this machine ./model (no config.json), . or the script itself
    # stopped it ("Error: model has no config.json", exit 2), while ./missing already was QA111
    root = make_repo(tmp_path, {"serve.sh": f"vllm serve {model} --max-model-len 4096\n",
                                "model/README.md": "# weights go here\n"})
    monkeypatch.chdir(root)
    r, doc = _json(cli, "--gpu", "h100", "serve.sh")
    assert r.code == 0, r.stderr
    (f,) = doc["findings"]
    assert f["rule_id"] == "QA111" and f["severity"] == "warning" and "could not be resolved" in f["message"]
