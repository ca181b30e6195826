"""End to end: the deployments of the gate audit (gate #1, #5, #8; cli #5)."""

from __future__ import annotations

from tests.cli.test_check_cli import make_repo


def _rules(doc):
    return {s["rule_id"]: (s["status"], s["reason"]) for s in doc["rules"]}


def test_deepseek_v3_on_8_h200_is_not_compared_with_a_bf16_that_cannot_load(cli, tmp_path, monkeypatch):
    # bf16 DeepSeek-V3 is 671,026,419,200 x 2 B = 1,342 GB: 156 GiB per GPU over 8, more than an H200's 140.4 GiB
    monkeypatch.chdir(make_repo(tmp_path, {"run.sh": "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 "
                                                     "--max-model-len 65536\n"}))
    r = cli("check", "--gpu", "h200", "--format", "json")
    assert r.code in (0, 1), r.stderr
    doc = r.json()
    assert "QA201" not in {f["rule_id"] for f in doc["findings"]}
    assert _rules(doc)["QA201"][0] == "skipped" and "bf16" in _rules(doc)["QA201"][1]
    assert doc["targets"][0]["performance"]["bf16_unservable"]


def test_gpt_oss_as_shipped_without_a_config_passes(cli, tmp_path, monkeypatch):
    # no quantadvise.yaml, and openai/gpt-oss-120b is only released with MXFP4 experts: no QA401, exit 0
    monkeypatch.chdir(make_repo(tmp_path, {"run.sh": "vllm serve openai/gpt-oss-120b --tensor-parallel-size 1 "
                                                     "--max-model-len 131072\n"}))
    r = cli("check", "--gpu", "h100", "--format", "json")
    assert r.code == 0, r.stdout
    assert _rules(r.json())["QA401"][0] == "skipped"


def test_weights_larger_than_the_gpu_quote_the_loader_not_the_kv_planner(cli, tmp_path, monkeypatch):
    # Llama-3.1-70B in bf16: 70.6e9 x 2 B = 141 GB > one 80 GB H100: vLLM fails in load_model, never reaching the
    # KV cache planning. vLLM 0.34.0's model runner loads with no handler (vllm/v1/worker/gpu/model_runner.py:410-419):
    # torch's OutOfMemoryError, no words of vLLM's to quote
    monkeypatch.chdir(make_repo(tmp_path, {"v.sh": "vllm serve meta-llama/Llama-3.1-70B-Instruct --max-model-len 8192\n"}))
    r = cli("check", "--gpu", "h100", "--format", "json")
    assert r.code == 1
    f = next(f for f in r.json()["findings"] if f["rule_id"] == "QA301")
    assert "No available memory" not in f["message"] and f["engine_message"] is None
    assert "loading runs out of memory" in f["message"] and "vllm/v1/worker/gpu/model_runner.py:410-419" in f["message"]
    # 0.33.0 logged its own words first (vllm/v1/worker/gpu_model_runner.py:5077-5087), not kv_cache_planning.py:56-63
    r = cli("check", "--gpu", "h100", "--engine-version", "0.33.0", "--format", "json")
    f = next(f for f in r.json()["findings"] if f["rule_id"] == "QA301")
    assert "No available memory" not in f["message"] + (f["engine_message"] or "")
    assert f["engine_message"].startswith("Failed to load model - not enough GPU memory.")


def test_the_header_says_refused_when_a_rule_finds_the_engine_refusing(cli, tmp_path, monkeypatch):
    # 32 attention heads do not split over 3 GPUs: QA107, and the header agrees
    monkeypatch.chdir(make_repo(tmp_path, {"Makefile": "serve:\n\tvllm serve meta-llama/Meta-Llama-3-8B "
                                                       "--tensor-parallel-size 3\n"}))
    r = cli("check", "--gpu", "h100", "--format", "json")
    assert r.code == 1
    t = r.json()["targets"][0]
    assert t["engine_status"] == "refused"
    text = cli("check", "--gpu", "h100").stdout
    assert "(refused) serving" in text and "(ok) serving" not in text


def test_a_release_older_than_every_startup_release_says_the_newer_one_is_used(cli, tmp_path, monkeypatch):
    # data/engine_startup.yaml holds vLLM 0.33.0 only: a v0.30.0 image is sized with 0.33.0, and says so
    compose = ("services:\n  vllm:\n    image: vllm/vllm-openai:v0.30.0\n    command: [\"--model\", "
               "\"Qwen/Qwen2.5-7B-Instruct\", \"--max-model-len\", \"8192\"]\n")
    monkeypatch.chdir(make_repo(tmp_path, {"compose.yaml": compose}))
    r = cli("check", "--gpu", "h100", "--format", "json")
    said = [a for a in r.json()["targets"][0]["assumptions"] if a.startswith("start-up memory")]
    assert len(said) == 1 and "no release as old as" in said[0] and "closest" not in said[0], said


def test_sglang_gpt_oss_on_b200_is_not_failed_on_the_roofline(cli, tmp_path):
    # the InferenceMAX-style launch of gpt-oss-120b on two B200s with SGLang: its mxfp4 experts have no measured
    # table on this engine (the roofline with the default profile prices them), so a slower-than-bf16 verdict
    # may be reported but never fails the deployment (a public benchmark's command is not an error)
    (tmp_path / "run.sh").write_text("docker run --gpus all lmsysorg/sglang:v0.5.12.post1 python3 -m "
                                     "sglang.launch_server --model-path openai/gpt-oss-120b --tp 2 "
                                     "--max-running-requests 256\n")
    r = cli("check", str(tmp_path), "--gpu", "b200", "--format", "json")
    assert r.code == 0, r.stdout
    found = [f for f in r.json()["findings"] if f["rule"] == "QA201"]
    assert all(f["severity"] == "warning" for f in found)
