"""`quantadvise recommend` through the real entry point."""

from __future__ import annotations

import pytest


def test_readme_command_works_with_no_other_argument(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    r = cli("recommend", "--batch", "64", "--ctx", "2048")
    assert r.code == 0, r.stderr
    out = r.stdout
    lines = out.splitlines()
    assert out.startswith("Recommendation: ")
    # one screen (issue 29): the answer, the deploy commands and the alternatives in at most 40 lines at 80
    # columns, the serve command within the first 25; the tree, the reasons and the assumptions with --explain
    assert len(lines) <= 40, len(lines)
    assert any(line.startswith("  vllm: vllm serve ") for line in lines[:25])
    assert "Alternatives" in out and "--explain: " in out.rsplit("\n--explain: ", 1)[-1].join(["--explain: ", ""])
    assert not [line for line in lines[lines.index(next(x for x in lines if x.startswith("--explain: "))) + 1:]
                if not line.startswith("  ")]  # what --explain adds is the last paragraph
    assert "f. roofline" not in out and "Assumptions:" not in out
    # a command for each engine, or the engine's refusal in its words (the measured kernels put W4A8 first
    # here, which SGLang 0.5.23's compressed-tensors dispatch does not implement)
    assert "vllm serve" in out and ("sglang.launch_server" in out or "SGLang 0.5.23 refuses it" in out)
    full = cli("recommend", "--batch", "64", "--ctx", "2048", "--explain").stdout
    for label in ("a. native", "b. fit", "c. engine", "d. accuracy", "e. KV cache", "f. roofline"):
        assert label in full
    assert "vllm serve" in full
    # it says what it assumed
    assert "meta-llama/Meta-Llama-3-8B (the bundled default" in full
    assert "H100" in full and "vLLM 0.34.0" in full
    # the default release's own start-up facts (data/engine_startup.yaml vllm-0.34.0), not 0.33.0's stand-in
    assert "vLLM 0.34.0's default --gpu-memory-utilization 1," in " ".join(full.split()) and "0.33.0" not in full


def test_json_contract(cli):
    r = cli("recommend", "--batch", "512", "--ctx", "2048", "--format", "json")
    assert r.code == 0
    doc = r.json()
    assert doc["schema_version"] == 1
    for key in ("scheme", "trace", "alternatives", "engine_args", "assumptions", "kv", "checkpoint"):
        assert key in doc
    assert {"id", "axes"} <= set(doc["scheme"])
    assert set(doc["scheme"]["axes"]) >= {"weights", "activations", "kv_cache", "accumulation"}
    assert [t["node"] for t in doc["trace"]] == ["native", "fit", "engine", "accuracy", "kv", "roofline"]
    for t in doc["trace"]:
        assert {"node", "decision", "numbers"} <= set(t)
    assert set(doc["engine_args"]) == {"vllm", "sglang"}
    assert doc["alternatives"][0]["status"] == "recommended"


def test_explain_renders_the_tree(cli):
    r = cli("recommend", "--batch", "1", "--explain")
    assert r.code == 0
    # the path ends at the recommendation (batch 1 is synchronous: the prompt's prefill counts too, so the
    # 4-bit-weight candidate with the faster prefill leads)
    win = cli("recommend", "--batch", "1", "-f", "json").json()["scheme"]["id"]
    assert "└──" in r.stdout and f"→ {win}" in r.stdout
    assert "✗ w3a16" in r.stdout  # the veto is on the path


def test_workload_file_and_flags_override(cli, tmp_path):
    p = tmp_path / "w.yaml"
    p.write_text("batch: 512\nctx: 2048\ngpu: a100-80gb\ntask: general\naccuracy-tolerance: 2\n")
    r = cli("recommend", "--workload", str(p), "-f", "json")
    assert r.code == 0, r.stderr
    assert r.json()["scheme"]["axes"]["math"] == "int8"
    r2 = cli("recommend", "--workload", str(p), "--gpu", "h100", "-f", "json")
    assert r2.json()["scheme"]["axes"]["math"] == "fp8"


@pytest.mark.parametrize(
    "content, needle",
    [
        ("batch: 4\nbacth: 8\n", "unknown key 'bacth'; did you mean 'batch'"),
        ("batch: -4\n", "field 'batch'"),
        ("batch: many\n", "field 'batch'"),
        ("ctx: [1, 2]\n", "field 'ctx'"),
        ("task: poetry\n", "field 'task'"),
        ("gpus: 0\n", "field 'gpus'"),
        ("- batch: 4\n", "expected a mapping"),
        ("batch: [unclosed\n", "invalid YAML"),
    ],
)
def test_bad_workload_file(cli, tmp_path, content, needle):
    p = tmp_path / "w.yaml"
    p.write_text(content)
    r = cli("recommend", "--workload", str(p))
    assert r.code == 2, r
    assert needle in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--batch", "0"], "--batch must be an integer >= 1"),
        (["--ctx", "-5"], "--ctx must be an integer >= 1"),
        (["--gpu", "h1000"], "unknown GPU"),
        (["--engine", "trt"], "unknown engine 'trt'"),
        (["--engine-version", "nope"], "'nope' is not a vLLM release"),
        (["--candidates", "w4a16,nope"], "unknown scheme 'nope'"),
        (["--ideal", "--profile", "x.yaml"], "not both"),
    ],
)
def test_bad_flags(cli, args, needle):
    r = cli("recommend", *args)
    assert r.code == 2, r
    assert needle in r.stderr and r.stderr.count("\n") == 1


def test_cautions_go_to_stderr_in_json_mode(cli):
    r = cli("recommend", "--batch", "512", "--gpu", "a100-80gb", "-f", "json")
    assert r.code == 0
    r.json()
    assert "warning:" in r.stderr and "expected drop 0-3 points" in r.stderr


def test_engine_that_refuses_the_forced_kv_dtype_is_an_input_error(cli):
    # audit rec #6: SGLang 0.5.23's --kv-cache-dtype choices are auto, fp8_e5m2, fp8_e4m3, mxfp8, bf16,
    # bfloat16, nvfp4, fp4_mx_block16 (sglang/srt/arg_groups/fields/model.py:209-218): no int4 KV cache. The
    # old recommend exited 0, headed "sglang 0.5.23", with only a `vllm serve` command.
    r = cli("recommend", "-b", "64", "--ctx", "8192", "--kv-dtype", "kv-int4-token-head", "--engine", "sglang")
    assert r.code == 2, r.stdout
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and "Traceback" not in r.stderr
    line = errors[0]
    assert "--kv-dtype kv-int4-token-head" in line and "SGLang 0.5.23" in line
    assert "no --kv-cache-dtype for kv-int4-token-head" in line  # the engine's reason
    # the fix: a KV dtype SGLang accepts on this GPU (fp8_e4m3 -> kv-fp8, fp8_e5m2 -> kv-fp8-e5m2, auto), or vLLM,
    # whose CacheDType has int4_per_token_head (data/schemes.yaml kv-int4-token-head)
    assert "kv-fp8" in line and "kv-bf16" in line and "--engine vllm" in line
    assert r.stdout == ""
    # JSON: nothing on stdout either, same exit code
    j = cli("recommend", "-b", "64", "--ctx", "8192", "--kv-dtype", "kv-int4-token-head", "--engine", "sglang",
            "-f", "json")
    assert j.code == 2 and j.stdout.strip() == ""
    # the same KV dtype on vLLM is served, and its deploy command is vLLM's own
    ok = cli("recommend", "-b", "64", "--ctx", "8192", "--kv-dtype", "kv-int4-token-head", "-f", "json")
    assert ok.code == 0, ok.stderr
    assert "int4_per_token_head" in ok.json()["engine_args"]["vllm"]


def test_engine_node_counts_in_words(cli):
    # "vLLM 0.33.0 accepts all 1 candidates" (audit minor): one candidate reads "the one candidate"
    r = cli("recommend", "-b", "8", "--candidates", "bf16", "-f", "json")
    assert r.code == 0, r.stderr
    eng = next(t for t in r.json()["trace"] if t["node"] == "engine")
    assert "all 1 candidates" not in eng["decision"]
    assert "accepts the one candidate" in eng["decision"]


def test_the_native_candidate_name_is_accepted_back(cli):
    # audit rec #10: recommend prints the shipped checkpoint as candidate "native-fp8" (DeepSeek-V3's
    # config.json declares quantization_config.quant_method "fp8"), but --candidates native-fp8 was
    # "unknown scheme"
    ds = ("-m", "deepseek-ai/DeepSeek-V3", "--gpus", "8", "--gpu", "h200", "-b", "32", "--ctx", "8192")
    for name in ("native-fp8", "native", "NATIVE-FP8"):
        r = cli("recommend", *ds, "--candidates", f"{name},fp8-block", "-f", "json")
        assert r.code == 0, (name, r.stderr)
        weighed = {a["scheme"] for a in r.json()["alternatives"]}
        assert {"native-fp8", "fp8-block", "bf16"} <= weighed, (name, weighed)
    # a native name naming another method than the one shipped
    r = cli("recommend", *ds, "--candidates", "native-mxfp4")
    assert r.code == 2 and r.stderr.count("Error:") == 1 and "Traceback" not in r.stderr
    assert "--candidates native-mxfp4" in r.stderr and "native-fp8" in r.stderr
    # a 16-bit checkpoint ships nothing to serve as is: a clear error, not "unknown scheme"
    r = cli("recommend", "--candidates", "native-fp8,w4a16")
    assert r.code == 2 and r.stderr.count("Error:") == 1
    assert "--candidates native-fp8" in r.stderr and "16-bit" in r.stderr and "unknown scheme" not in r.stderr


def test_users_bound_is_named_as_the_users_flag(cli):
    # --users 1 caps the concurrency search at one sequence (one user never has more than one in flight):
    # the wording says "1 sequence" and names --users, not --batch, as what set the bound
    r = cli("recommend", "--users", "1", "--itl-ms", "50", "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    line = next(a for a in doc["assumptions"] if a.startswith("concurrency searched"))
    assert "up to 1 sequence per replica" in line and "--users 1 sets the bound" in line
    text = " ".join(t["decision"] + " " + " ".join(t["reasons"]) for t in doc["trace"])
    assert "--batch raises it" not in text and "--users 1 caps it" in text
    assert "1 sequences" not in text + line


def test_no_scheme_hint_names_the_budget_that_failed(cli):
    # Llama-3.1-70B on one H100, prompts of 1,000 tokens within a 50 ms TTFT: every candidate that fits
    # misses the TTFT budget even at one sequence. The hint names that budget with its value, and lowers
    # only what the workload set (--prompt / --output): neither --batch nor --ctx was given.
    r = cli("recommend", "-m", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--prompt", "1000", "--output", "200",
            "--ttft-ms", "50")
    assert r.code == 2
    err = " ".join(r.stderr.split())
    assert "relax --ttft-ms 50" in err and "try --gpus" in err
    assert "--batch" not in err and "--ctx" not in err
    assert "lower --prompt / --output" in err
