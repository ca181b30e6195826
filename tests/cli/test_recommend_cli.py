"""`quantadvise recommend` through the real entry point."""

from __future__ import annotations

import pytest


def test_readme_command_works_with_no_other_argument(cli):
    r = cli("recommend", "--batch", "64", "--ctx", "2048")
    assert r.code == 0, r.stderr
    out = r.stdout
    assert out.startswith("Recommendation: ")
    for label in ("a. native", "b. fit", "c. engine", "d. accuracy", "e. KV cache", "f. roofline"):
        assert label in out
    # a command for each engine, or the engine's refusal in its words (the measured kernels put W4A8 first
    # here, which SGLang 0.5.23's compressed-tensors dispatch does not implement)
    assert "vllm serve" in out and ("sglang.launch_server" in out or "SGLang 0.5.23 refuses it" in out)
    # it says what it assumed
    assert "meta-llama/Meta-Llama-3-8B (the bundled default" in out
    assert "H100" in out and "vLLM 0.33.0" in out


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
    assert "└──" in r.stdout and "→ w4a16" in r.stdout
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
        ("batch: 4\nbacth: 8\n", "field 'bacth': unknown key"),
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
        (["--engine-version", "0.1"], "unknown vllm version"),
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
