"""`recommend` sizes the KV cache with the memory fraction the engine itself starts with, derived by
the same code `check` uses (gate.startup.default_fraction), so one deployment has one KV capacity in
both commands; a fraction the user gives is written on the engine command it prints.

Fixed inputs, each from its own source (as in tests/unit/test_gate_startup.py):
- H100 SXM: 85,520,809,984 B (nvidia-smi 81,559 MiB x 2**20, data/hardware.yaml).
- Meta-Llama-3-8B bf16 weights: 8,030,261,248 params x 2 B = 16,060,522,496 B.
- KV per token: 32 layers x 8 KV heads x 128 dims x (K, V) x 2 B = 131,072 B.
- batch 64 at --ctx 2048 is continuous batching (batch > 4): each sequence holds on average the 1,792-token
  prompt + half the 256 output tokens = 1,920 tokens = 251,658,240 B of KV.
"""

from __future__ import annotations

import pytest

import quantadvise as qa
from tests.cli.test_check_cli import make_repo

H100, W8B, KV_TOK = 85_520_809_984, 16_060_522_496, 131_072
PER_SEQ = 1_920 * KV_TOK  # 251,658,240 B
BF16 = ["--model", "meta-llama/Meta-Llama-3-8B", "--gpu", "h100", "--batch", "64", "--ctx", "2048",
        "--candidates", "bf16", "--kv-dtype", "kv-bf16"]
DECLARED = "gpu: h100\nworkload: {concurrency: 64, ctx: 2048}\n"


def fit(doc: dict) -> dict:
    return next(t for t in doc["trace"] if t["node"] == "fit")["numbers"]


def checked(cli, tmp_path, monkeypatch, command: str) -> dict:
    """`check` on the command `recommend` printed, with the same workload declared."""
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": command + "\n", "quantadvise.yaml": DECLARED}))
    r = cli("check", "--format", "json")
    return r.json()["targets"][0]["memory"]


def test_vllm_recommend_and_check_hold_the_same_kv_cache(cli, tmp_path, monkeypatch):
    """vLLM 0.34.0's default --gpu-memory-utilization is 1.0 with its extensible KV cache
    (vllm/config/cache.py:494-501), which keeps 1 GiB of the GPU free after warmup
    (vllm/v1/worker/extensible_kv_cache.py:64-65, 613-618: min(requested - used, free - margin)):
    usable = 85,520,809,984 - 1,073,741,824 = 84,447,068,160 B (a share of 0.98744...); less the 2 GiB reserve =
    82,299,584,512 B; less the weights = 66,239,062,016 B of KV = floor(66,239,062,016 / 131,072) = 505,363 tokens;
    floor(66,239,062,016 / 251,658,240) = floor(263.21) = 263 sequences of 1,920 tokens."""
    r = cli("recommend", *BF16, "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    n = fit(doc)
    share = 84_447_068_160 / 85_520_809_984
    assert (n["memory_utilization"], n["usable_bytes"], n["budget_bytes"]) == (share, 84_447_068_160, 82_299_584_512)
    assert doc["workload"]["memory_utilization"] == share and doc["workload"]["reserve_gb"] == 2
    assert (doc["scheme"]["id"], doc["kv"]["max_concurrency"]) == ("bf16", 263)
    assert 82_299_584_512 - W8B == 66_239_062_016 and 66_239_062_016 // PER_SEQ == 263
    line = next(a for a in doc["assumptions"] if a.startswith("memory:"))
    assert line.startswith("memory: 98.74% of each GPU (vLLM 0.34.0's default --gpu-memory-utilization 1, "
                           "vllm/config/cache.py:494-501, less the 1 GiB vLLM 0.34.0 keeps free after warmup, "
                           "vllm/v1/worker/extensible_kv_cache.py:64-65; --memory-utilization)")
    command = doc["engine_args"]["vllm"]
    assert "--gpu-memory-utilization" not in command  # vLLM then starts with its own 1.0
    m = checked(cli, tmp_path, monkeypatch, command)
    assert m["memory_utilization"] == 1.0  # the flag's value; the margin comes off it
    assert (m["kv_cache_bytes_per_gpu"], m["kv_capacity_tokens"], m["max_concurrency"]) == (66_239_062_016, 505_363,
                                                                                             263)


def test_vllm_033_recommend_and_check_hold_the_same_kv_cache(cli, tmp_path, monkeypatch):
    """vLLM 0.33.0's default --gpu-memory-utilization is 0.92 (vllm/config/cache.py:215), no margin:
    usable = floor(0.92 x 85,520,809,984) = 78,679,145,185 B; less the 2 GiB reserve = 76,531,661,537 B;
    less the weights = 60,471,139,041 B of KV = floor(60,471,139,041 / 131,072) = 461,358 tokens;
    floor(60,471,139,041 / 251,658,240) = floor(240.29) = 240 sequences of 1,920 tokens."""
    r = cli("recommend", *BF16, "--engine-version", "0.33.0", "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    n = fit(doc)
    assert (n["memory_utilization"], n["usable_bytes"], n["budget_bytes"]) == (0.92, 78_679_145_185, 76_531_661_537)
    assert doc["workload"]["memory_utilization"] == 0.92 and doc["workload"]["reserve_gb"] == 2
    assert (doc["scheme"]["id"], doc["kv"]["max_concurrency"]) == ("bf16", 240)
    assert 76_531_661_537 - W8B == 60_471_139_041 and 60_471_139_041 // PER_SEQ == 240
    line = next(a for a in doc["assumptions"] if a.startswith("memory:"))
    assert line.startswith("memory: 92% of each GPU (vLLM 0.33.0's default --gpu-memory-utilization, "
                           "vllm/config/cache.py:215")
    command = doc["engine_args"]["vllm"]
    assert "--gpu-memory-utilization" not in command  # vLLM then starts with its own 0.92
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": command + "\n", "quantadvise.yaml": DECLARED}))
    m = cli("check", "--engine-version", "0.33.0", "--format", "json").json()["targets"][0]["memory"]
    assert m["memory_utilization"] == 0.92
    assert (m["kv_cache_bytes_per_gpu"], m["kv_capacity_tokens"], m["max_concurrency"]) == (60_471_139_041, 461_358,
                                                                                             240)


def test_sglang_recommend_and_check_hold_the_same_kv_cache(cli, tmp_path, monkeypatch):
    """SGLang 0.5.23 computes mem_fraction_static itself (sglang/srt/arg_groups/memory_hook.py:281-327, the
    gate's sglang_fraction): on the H100 tier (chunked prefill 8,192, 58 prefill graphs) with the
    --max-running-requests 64 the plan writes capping the decode graph batch (memory_hook.py:182-188),
    reserved = 512 + 8,192 x 1.5 + 1 GPU x 128 + 64 x 2 + 58 x 8 = 13,520 MiB (above the 10,240 floor);
    fraction = round((81,559 - 13,520) / 81,559, 3) = round(0.83423, 3) = 0.834. The pool is memory x
    fraction - weights with nothing more reserved: floor(85,520,809,984 x 0.834) = 71,324,355,526 B -
    16,060,522,496 = 55,263,833,030 B = 421,629 tokens; floor(55,263,833,030 / 251,658,240) = floor(219.60)
    = 219 sequences."""
    r = cli("recommend", *BF16, "--engine", "sglang", "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    n = fit(doc)
    assert (n["memory_utilization"], n["usable_bytes"], n["reserve_bytes"]) == (0.834, 71_324_355_526, 0)
    assert n["budget_bytes"] - W8B == 55_263_833_030 and 55_263_833_030 // PER_SEQ == 219
    assert doc["kv"]["max_concurrency"] == 219 and doc["workload"]["reserve_gb"] == 0
    line = next(a for a in doc["assumptions"] if a.startswith("memory:"))
    assert line.startswith("memory: 83.4% of each GPU (SGLang 0.5.23's default --mem-fraction-static for this GPU "
                           "and TP 1: (81,559 - 13,520 MiB reserved) / 81,559 MiB")
    command = doc["engine_args"]["sglang"]
    assert "--max-running-requests 64" in command and "--mem-fraction-static" not in command
    m = checked(cli, tmp_path, monkeypatch, command)
    assert m["memory_utilization"] == 0.834
    assert (m["kv_cache_bytes_per_gpu"], m["kv_capacity_tokens"], m["max_concurrency"]) == (55_263_833_030, 421_629,
                                                                                             219)


def test_a_given_fraction_is_written_on_the_command_and_checks_the_same(cli, tmp_path, monkeypatch):
    """--memory-utilization 0.85: floor(0.85 x 85,520,809,984) = 72,692,688,486 B - 2 GiB = 70,545,204,838 B;
    - weights = 54,484,682,342 B = 415,685 tokens; floor(54,484,682,342 / 251,658,240) = floor(216.50) = 216."""
    r = cli("recommend", *BF16, "--memory-utilization", "0.85", "--format", "json")
    doc = r.json()
    assert fit(doc)["budget_bytes"] == 70_545_204_838 and doc["kv"]["max_concurrency"] == 216
    assert 70_545_204_838 - W8B == 54_484_682_342 and 54_484_682_342 // PER_SEQ == 216
    assert doc["engine_args"]["vllm"].endswith("--gpu-memory-utilization 0.85")
    assert doc["engine_args"]["sglang"].endswith("--mem-fraction-static 0.85")
    assert any(a.startswith("memory: 85% of each GPU (given; the engine commands carry it: --gpu-memory-utilization "
                            "0.85)") for a in doc["assumptions"])
    m = checked(cli, tmp_path, monkeypatch, doc["engine_args"]["vllm"])
    assert (m["memory_utilization"], m["kv_capacity_tokens"], m["max_concurrency"]) == (0.85, 415_685, 216)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_python_api_sizes_as_the_cli_does(cli, engine):
    r = cli("recommend", *BF16, "--engine", engine, "--format", "json")
    rec = qa.recommend(model="meta-llama/Meta-Llama-3-8B", gpu="h100", batch=64, ctx=2048, candidates=["bf16"],
                       kv_dtype="kv-bf16", engine=engine)
    doc = r.json()
    assert rec.workload.memory_utilization == doc["workload"]["memory_utilization"]
    assert rec.workload.reserve_gb == doc["workload"]["reserve_gb"]
    assert rec.kv.max_concurrency == doc["kv"]["max_concurrency"]
    assert rec.engine_args == doc["engine_args"]
    # a workload file's key is a given fraction, as the flag is
    given = qa.recommend({"memory_utilization": 0.85, "batch": 64, "ctx": 2048, "candidates": ["bf16"],
                          "kv_dtype": "kv-bf16", "engine": engine})
    assert given.workload.memory_utilization == 0.85 and "0.85" in (given.engine_args[engine] or "")


def test_size_uses_the_newest_vllms_default_and_says_so(cli):
    """`size` names no engine: vLLM 0.34.0's default 1.0 less the 1 GiB it keeps free; the same 66,239,062,016 B
    left for KV as above."""
    r = cli("size", "meta-llama/Meta-Llama-3-8B", "--gpu", "h100", "--ctx", "2048", "--format", "json")
    doc = r.json()
    assert doc["fit"]["memory_utilization"] == 84_447_068_160 / 85_520_809_984
    assert doc["fit"]["free_for_kv_bytes"] == 66_239_062_016
    assert any("vLLM 0.34.0's default --gpu-memory-utilization 1, vllm/config/cache.py:494-501, less the 1 GiB "
               "vLLM 0.34.0 keeps free after warmup" in n for n in doc["notes"])
    assert qa.size("meta-llama/Meta-Llama-3-8B", gpu="h100", ctx=2048).fit.free_for_kv_bytes == 66_239_062_016
