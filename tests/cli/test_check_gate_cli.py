"""``quantadvise check`` judging deployments the way the engine does (issue 14), end to end:
healthy configs pass, refusals fail with the engine's message and numbers, a declared workload that
queues warns, unresolvable models leave the engine rules running, discovery finds the launches that
live in workflows, Makefiles, Python launchers and Helm / production-stack values, and the accuracy
filters follow the tasks. Numbers are derived in the comments (tests/unit/test_gate_startup.py has
the engine arithmetic in full)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.test_check_cli import line_of, make_repo

REPO = Path(__file__).resolve().parents[2]
LM_EVAL = REPO / "tests" / "fixtures" / "accuracy" / "lm_eval"

HEALTHY = ("vllm serve meta-llama/Meta-Llama-3-8B-Instruct --dtype bfloat16 --max-num-seqs 256 "
           "--max-model-len 8192 --gpu-memory-utilization 0.90\n")


def test_the_issues_healthy_h100_deployment_passes(cli, tmp_path, monkeypatch):
    """--max-num-seqs 256 is a cap and --max-model-len 8192 the longest request: vLLM starts (one
    8,192-token sequence is 1 GiB of the 54.73 GiB KV cache) and no workload is declared."""
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": HEALTHY}))
    r = cli("check", "serve.sh", "--gpu", "h100", "--format", "json")
    assert r.code == 0, r.stdout
    doc = r.json()
    assert not [f for f in doc["findings"] if f["rule_id"].startswith("QA3")]
    m = doc["targets"][0]["memory"]
    # floor(85,520,809,984 x 0.90) - 2 GiB - 16,060,522,496 = 58,760,722,841 B; / 131,072 B per token
    assert (m["kv_cache_bytes_per_gpu"], m["kv_capacity_tokens"], m["starts"]) == (58_760_722_841, 448_308, True)
    assert (m["max_num_seqs"], m["concurrency"]) == (256, None)
    status = {s["rule_id"]: (s["status"], s["reason"]) for s in doc["rules"]}
    assert status["QA303"][0] == "skipped" and "no workload declared" in status["QA303"][1]


def test_sglang_is_described_in_its_own_flag_names(cli, tmp_path, monkeypatch):
    """The same model on SGLang: its heuristic fraction 0.83 (memory_hook.py, 13,904 MiB reserved of
    81,559), the pool 79.65 GiB x 0.83 - 14.96 GiB = 51.15 GiB; every message names SGLang's flags."""
    script = "python -m sglang.launch_server --model-path meta-llama/Meta-Llama-3-8B-Instruct --tp-size 2 " \
             "--context-length 8192 --max-running-requests 16\n"
    root = make_repo(tmp_path, {"serve.sh": script,
                                "quantadvise.yaml": "gpu: h100\ngpus: 1\nworkload: {concurrency: 24}\n"})
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json")
    doc = r.json()
    m = doc["targets"][0]["memory"]
    assert (m["engine"], m["memory_utilization_flag"], m["max_num_seqs_flag"]) == (
        "sglang", "--mem-fraction-static", "--max-running-requests")
    # --tp-size 2: tp x pp = 2 -> 2 x 128 MiB; the decode graphs are capped by --max-running-requests 16:
    # 512 + 12,288 + 256 + 16 x 2 + 58 x 8 = 13,552 MiB -> round((81,559 - 13,552) / 81,559, 3) = 0.834
    assert m["memory_utilization"] == 0.834
    messages = " ".join(f["message"] for f in doc["findings"])
    assert "--max-running-requests 16" in messages and "runs on 2 GPUs (--tp-size x --pp-size)" in messages  # QA505
    assert "--max-num-seqs" not in messages and "tensor-parallel-size" not in messages


def test_a_declared_workload_that_queues_is_a_warning_with_the_numbers(cli, tmp_path, monkeypatch):
    root = make_repo(tmp_path, {"serve.sh": HEALTHY, "quantadvise.yaml": (
        "gpu: h100\nworkload: {concurrency: 64, ctx: 8192, mode: sync}\n")})
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json")
    assert r.code == 0  # a warning: vLLM starts and queues
    f = next(x for x in r.json()["findings"] if x["rule_id"] == "QA303")
    # 64 x 8,192 x 131,072 B = 64 GiB of KV against 54.73 GiB: 54 sequences at once
    assert f["severity"] == "warning" and "54 such sequences run at once, up to --max-num-seqs 256" in f["message"]
    assert (f["file"], f["line"]) == ("quantadvise.yaml", line_of(root / "quantadvise.yaml", "concurrency: 64"))
    assert cli("check", "--fail-on", "warning").code == 1


def test_a_refused_start_fails_with_the_engines_message_and_numbers(cli, tmp_path, monkeypatch):
    """vLLM 0.34.0 on an L4, no --max-model-len: the model's 131,072 tokens need 16 GiB of KV. Its default
    --gpu-memory-utilization is 1.0 (the extensible KV cache), so the capacity reserved before warmup is
    24,152,899,584 - 2 GiB - 16,060,522,496 = 5,944,893,440 B (5.54 GiB): too small already, and that check
    refuses, in its words (vllm/v1/core/kv_cache_planning.py:113-132, the hint of :64-96). After warmup the
    cache would get 1 GiB less (the margin, vllm/v1/worker/extensible_kv_cache.py:64-65): 4,871,151,616 B."""
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": "vllm serve meta-llama/Llama-3.1-8B --max-num-seqs 8\n"}))
    r = cli("check", "serve.sh", "--gpu", "l4", "--format", "json")
    assert r.code == 1
    f = next(x for x in r.json()["findings"] if x["rule_id"] == "QA302")
    assert f["engine_message"] == (
        "To serve at least one request with the model's max seq len (131072), (16.0 GiB KV cache is needed, which "
        "is larger than the available KV cache memory (5.54 GiB). Based on the available memory, the estimated "
        "maximum model length is 45355. The extensible KV cache already takes all device memory left after the "
        "model and its activations; decrease `max_model_len` or `max_num_seqs`, or the model needs a device with "
        "more memory. Decreasing `max_model_len` also reduces what is needed. See "
        "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")  # 5,944,893,440 // 131,072
    # what to set passes both checks: floor(4,871,151,616 / 131,072); at 1.0 there is no larger share to ask for
    assert "the longest that fits is 37,163 tokens (set --max-model-len 37163) (" in f["message"]
    assert r.json()["targets"][0]["performance"] is None  # no speed verdict for an engine that does not start
    # vLLM 0.33.0 (default 0.92, one check): floor(24,152,899,584 x 0.92) - 2 GiB - 16,060,522,496 = 4,012,661,473 B
    r = cli("check", "serve.sh", "--gpu", "l4", "--engine-version", "0.33.0", "--format", "json")
    f = next(x for x in r.json()["findings"] if x["rule_id"] == "QA302")
    assert f["engine_message"].startswith("To serve at least one request with the model's max seq len (131072), "
                                          "(16.0 GiB KV cache is needed, which is larger than the available KV cache "
                                          "memory (3.74 GiB).")
    assert "the longest that fits is 30,614 tokens" in f["message"]  # floor(4,012,661,473 / 131,072)


def test_no_workload_prices_the_engines_own_batch(cli, tmp_path, monkeypatch):
    """No --max-num-seqs on an H100: vLLM 0.34.0's default is 1024 (>= 70 GiB, not an A100:
    vllm/engine/arg_utils.py:3010-3043). 1024 sequences of `recommend`'s 2,048-token context (256 MiB
    each, 256 GiB in all) do not fit the 61.69 GiB cache, so the batch priced is what it holds."""
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": "vllm serve meta-llama/Llama-3.1-8B --max-model-len 8192\n"}))
    r = cli("check", "serve.sh", "--gpu", "h100", "--format", "json")
    t = r.json()["targets"][0]
    # the default 1.0 less the 1 GiB vLLM 0.34.0 keeps free after warmup: 85,520,809,984 - 1 GiB = 84,447,068,160
    # - 2 GiB - 16,060,522,496 = 66,239,062,016 B of KV; one 2,048-token sequence = 268,435,456 B -> 246 sequences
    assert t["memory"]["kv_cache_bytes_per_gpu"] == 66_239_062_016
    assert (t["concurrency"], t["ctx"]) == (246, 2048)
    assert any("--max-num-seqs: 1,024, vLLM 0.34.0's default" in a for a in t["assumptions"])
    assert any(a.startswith("concurrency: 246, the engine's batch when saturated") for a in t["assumptions"])


def test_an_unresolvable_model_keeps_the_engine_level_rules(cli, tmp_path, monkeypatch):
    """Issue 14's acceptance: one model that cannot be read (not bundled, HF_HUB_OFFLINE=1), the
    engine-level findings of every deployment still reported, exit 1 where they are errors, and the
    unresolved one named with its file and line."""
    root = make_repo(tmp_path, {
        "a.sh": "vllm serve someorg/private-finetune -q not_a_method\n",
        "b.sh": "vllm serve meta-llama/Llama-3.1-8B --kv-cache-dtype fp8_e5m2\n",
        "c.sh": "python -m sglang.launch_server --model-path /models/in/the/container --quantization awq\n",
    })
    monkeypatch.chdir(root)
    r = cli("check", ".", "--gpu", "h100", "--format", "json")
    assert r.code == 1, r.stderr
    found = {(f["rule_id"], f["file"], f["line"]) for f in r.json()["findings"]}
    assert ("QA101", "a.sh", 1) in found  # 'not_a_method' is not in vLLM 0.33.0's registry: no config needed
    assert ("QA111", "a.sh", 1) in found and ("QA111", "c.sh", 1) in found
    assert not any(f[0] == "QA111" and f[1] == "b.sh" for f in found)  # bundled: checked in full
    qa111 = next(f for f in r.json()["findings"] if f["file"] == "a.sh" and f["rule_id"] == "QA111")
    assert "someorg/private-finetune" in qa111["message"] and "HF_HUB_OFFLINE" in qa111["message"]
    c = next(t for t in r.json()["targets"] if t["file"] == "c.sh")
    assert c["memory"] is None and c["concurrency"] is None
    # SGLang's not-optimized list needs no model config either (QA203: awq is outside it)
    assert ("QA203", "c.sh", 1) in found


def test_discovery_finds_workflows_makefiles_python_and_helm_values(cli, tmp_path, monkeypatch):
    root = make_repo(tmp_path, {
        ".github/workflows/smoke.yml": "jobs:\n  s:\n    steps:\n      - run: |\n"
                                       "          vllm serve meta-llama/Llama-3.1-8B --max-model-len 8192\n",
        "Makefile": "MODEL ?= meta-llama/Llama-3.1-8B\nserve:\n\t@vllm serve $(MODEL) --max-model-len 4096\n",
        "launch.py": "import subprocess, sys\nsubprocess.run([sys.executable, '-m', 'sglang.launch_server',\n"
                     "    '--model-path', 'meta-llama/Llama-3.1-8B', '--context-length', '4096'])\n",
        "chart/values.yaml": "image:\n  repository: vllm/vllm-openai\n  tag: v0.33.0\nserver:\n"
                             "  args: [\"--model\", \"meta-llama/Llama-3.1-8B\", \"--max-model-len\", \"2048\"]\n",
        "stack/values.yaml": "servingEngineSpec:\n  modelSpec:\n  - name: llama\n    repository: vllm/vllm-openai\n"
                             "    tag: v0.33.0\n    modelURL: meta-llama/Llama-3.1-8B\n    requestGPU: 1\n"
                             "    vllmConfig:\n      maxModelLen: 131072\n",
        "README.md": "Start it with `vllm serve meta-llama/Llama-3.1-8B`.\n",
    })
    monkeypatch.chdir(root)
    r = cli("check", ".", "--gpu", "a10g", "--format", "json", "-v")
    targets = {(t["file"], t["engine"]) for t in r.json()["targets"]}
    assert targets == {(".github/workflows/smoke.yml", "vllm"), ("Makefile", "vllm"), ("launch.py", "sglang"),
                       ("chart/values.yaml", "vllm"), ("stack/values.yaml", "vllm")}
    # the production-stack chart's 131,072-token context on a 24 GB A10G: vLLM refuses (QA302) at its line
    qa302 = [(f["file"], f["line"]) for f in r.json()["findings"] if f["rule_id"] == "QA302"]
    assert ("stack/values.yaml", line_of(root / "stack/values.yaml", "maxModelLen")) in qa302
    # -v: what was read and every candidate skipped, with why, on stderr
    assert "read .github/workflows/smoke.yml" in r.stderr
    assert "skipped README.md: mentions an engine launch" in r.stderr
    assert r.json()["files_skipped"] and r.json()["files_skipped"][0].startswith("README.md: ")


def _evals(root: Path) -> None:
    for side in ("base", "quant"):
        src = next((LM_EVAL / side).iterdir())
        dst = root / "evals" / side
        dst.mkdir(parents=True)
        for f in src.glob("samples_*.jsonl"):
            shutil.copy(f, dst / f.name)


def test_a_global_filter_applies_to_the_tasks_that_log_it(cli, tmp_path, monkeypatch):
    """`filter: strict-match` for every task: gsm8k logs it; arc_easy logs only `none` and uses that
    (it used to fail the whole check). From the fixture: gsm8k strict-match base 1,1,0,1,0 vs quant
    1,0,0,1,0 -> 1 flip of 5; flexible-extract base 1,1,1,1,0 vs quant 1,1,0,1,1 -> 2 flips."""
    root = make_repo(tmp_path, {"quantadvise.yaml": (
        "model: meta-llama/Llama-3.1-8B\ngpu: h100\nquantization: bf16\n"
        "accuracy:\n  baseline: evals/base\n  quantized: evals/quant\n  filter: strict-match\n"
        "  max_flip_rate: 100%\n")})
    _evals(root)
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json")
    assert r.code == 0, r.stderr + r.stdout
    ev = {e["task"]: e for e in r.json()["accuracy"]}
    assert ev["gsm8k"]["flip_rate"] == 1 / 5 and set(ev) == {"gsm8k", "arc_easy"}
    assert any("task 'arc_easy' logs only filter 'none'" in n for n in r.json()["notes"])
    # a task's own filter
    cfg = root / "quantadvise.yaml"
    cfg.write_text(cfg.read_text() + "  tasks:\n    gsm8k: {filter: flexible-extract}\n")
    r = cli("check", "--format", "json")
    assert r.code == 0, r.stderr
    assert {e["task"]: e["flip_rate"] for e in r.json()["accuracy"]}["gsm8k"] == 2 / 5


def test_a_missing_task_filter_names_the_key_not_a_flag_check_lacks(cli, tmp_path, monkeypatch):
    root = make_repo(tmp_path, {"quantadvise.yaml": (
        "model: meta-llama/Llama-3.1-8B\ngpu: h100\n"
        "accuracy:\n  baseline: evals/base\n  quantized: evals/quant\n  filter: nope\n")})
    _evals(root)
    monkeypatch.chdir(root)
    r = cli("check")
    assert r.code == 2
    err = r.stderr.strip()
    assert err.startswith("Error: ") and "task 'gsm8k' has no filter 'nope'" in err
    assert "accuracy.tasks.gsm8k.filter in quantadvise.yaml" in err and "--filter" not in err
    json.dumps(err)  # one line
    assert len(err.splitlines()) == 1


def test_check_and_recommend_give_one_figure_for_one_config(cli, tmp_path, monkeypatch):
    """Issue 14 item 10: the same model, GPU, engine, scheme, KV dtype and workload give the same
    tokens/s and the same ratio to bf16 in `check` as in `recommend` (both price through api.predict)."""
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": (
        "vllm serve meta-llama/Meta-Llama-3-8B -q fp8_per_block --kv-cache-dtype fp8 --max-num-seqs 64\n")}))
    c = cli("check", "serve.sh", "--gpu", "h100", "--concurrency", "64", "--ctx", "2048", "--format", "json")
    perf = c.json()["targets"][0]["performance"]
    assert (perf["scheme"], perf["kv_dtype"], perf["batch"]) == ("fp8-block", "kv-fp8", 64)
    r = cli("recommend", "-m", "meta-llama/Meta-Llama-3-8B", "--gpu", "h100", "--batch", "64", "--ctx", "2048",
            "--memory-utilization", "0.92", "--format", "json")
    alt = next(a for a in r.json()["alternatives"] if a["scheme"] == "fp8-block" and a["kv_dtype"] == "kv-fp8")
    assert perf["tokens_per_s"] == alt["tokens_per_s"]
    assert perf["speedup_vs_bf16"] == alt["speedup_vs_bf16"]


def test_a_shipped_checkpoint_is_one_number_in_check_and_recommend(cli, tmp_path, monkeypatch):
    # gpt-oss ships MXFP4 experts with 16-bit attention: the deployed checkpoint and the native candidate
    # `recommend` weighs are the same weights on the same kernels, so check prices them alike (it used to
    # price MXFP4 on every linear layer: 1,363 vs 1,305 tokens/s for the same checkpoint)
    (tmp_path / ".git").mkdir()
    (tmp_path / "serve.sh").write_text("vllm serve openai/gpt-oss-120b --max-model-len 8192 --max-num-seqs 16\n")
    monkeypatch.chdir(tmp_path)
    r = cli("check", "--gpu", "h100", "--format", "json")
    assert r.code in (0, 1), r.stderr
    perf = r.json()["targets"][0]["performance"]
    assert perf["recommended"] == "native-mxfp4"
    assert perf["tokens_per_s"] == pytest.approx(perf["recommended_tokens_per_s"], rel=1e-9)
    rec = cli("recommend", "-m", "openai/gpt-oss-120b", "--gpu", "h100", "--batch", "16", "--ctx", "2048",
              "--format", "json").json()
    native = next(a for a in rec["alternatives"] if a["scheme"] == "native-mxfp4")
    assert native["tokens_per_s"] == pytest.approx(perf["tokens_per_s"], rel=1e-9)
