"""KV capacity under tensor parallelism: each GPU holds its own share of every sequence's KV cache.

vLLM 0.34.0 gives each of ``tp`` GPUs ``max(1, total_num_kv_heads // tp)`` KV heads, and an MLA model
one latent "head" (``vllm/config/model.py:1693-1703``, ``get_num_kv_heads``; 0.33.0's :1673-1683); the MLA cache spec is
``num_kv_heads=1, head_size=kv_lora_rank + qk_rope_head_dim`` on every rank
(``vllm/model_executor/layers/attention/mla_attention.py:1376-1379``). So the sequences that fit are
one GPU's free memory over one GPU's share of a sequence, never the pooled free memory over one copy.

Fixed inputs, each from its own source:
- H200: 150,754,820,096 B; L4: 24,152,899,584 B (nvidia-smi MiB x 2**20, data/hardware.yaml).
- vLLM 0.34.0's default --gpu-memory-utilization 1.0 (its extensible KV cache, vllm/config/cache.py:494-501), less
  the 1 GiB it keeps free after warmup (vllm/v1/worker/extensible_kv_cache.py:64-65), and the 2 GiB runtime reserve
  per GPU (defaults.RESERVE_GB): per-GPU budget = memory - 1 GiB - 2 GiB.
- DeepSeek-V3: 61 MLA layers, kv_lora_rank 512 + rope 64 = 576 elements per token-layer; fp8 = 1 B,
  so 35,136 B per token (config.json), all of it on every GPU.
- Qwen3-30B-A3B: 48 layers x 4 KV heads x 128 dims x (K, V) x 2 B = 98,304 B per token (config.json); on
  8 GPUs each holds max(1, 4 // 8) = 1 head = a quarter: 24,576 B per token per GPU.
- Weights are split evenly over the GPUs; their bytes are the sizing tests' business (test_sizing.py,
  test_published_sizes.py) and are taken here as the input they are.
"""

from __future__ import annotations

import math

import pytest

import quantadvise as qa
from quantadvise.engines import startup
from quantadvise.memory import kvcache

GiB = 1024**3
H200, L4 = 150_754_820_096, 24_152_899_584
DSV3_TOK_GPU = 61 * (512 + 64) * 1  # 35,136 B per token, whole on each GPU (fp8 latent)
QWEN_TOK_GPU = 48 * 1 * 128 * 2 * 2  # 24,576 B per token per GPU (1 of the 4 KV heads)


def per_gpu_budget(memory: int) -> int:
    return memory - GiB - 2 * GiB


def test_one_home_for_the_share():
    # existing callers import it from gate.startup: the same function
    assert startup.kv_share_per_gpu is kvcache.kv_share_per_gpu
    assert kvcache.kv_share_per_gpu(kv_heads=4, mla=False, tp=8) == pytest.approx(1 / 4)  # max(1, 4 // 8) = 1 of 4
    assert kvcache.kv_share_per_gpu(kv_heads=8, mla=False, tp=2) == pytest.approx(4 / 8)
    arch, _ = qa.load_model("deepseek-ai/DeepSeek-V3")
    assert kvcache.kv_copies(arch, 8) == 8  # the latent whole on each of 8 GPUs
    arch, _ = qa.load_model("Qwen/Qwen3-30B-A3B")
    assert kvcache.kv_copies(arch, 8) == 2  # each head on 8 / 4 = 2 GPUs
    assert kvcache.kv_copies(arch, 4) == 1  # 4 heads split 1 per GPU
    assert kvcache.replication_note(arch, 4) is None


def test_size_deepseek_mla_latent_is_whole_on_every_gpu():
    r = qa.size("deepseek-ai/DeepSeek-V3", "fp8-block", kv_dtype="kv-fp8", ctx=8192, batch=512, gpu="h200", gpus=8)
    weights_gpu = r.total_bytes / 8
    free_gpu = per_gpu_budget(H200) - weights_gpu  # 147,533,594,624 - 84,143,822,764 = 63,389,771,860 B
    # one sequence of 8,192 tokens: 8,192 x 35,136 = 287,834,112 B on each GPU -> floor(220.23) = 220
    assert r.fit.max_sequences_at_ctx == math.floor(free_gpu / (8192 * DSV3_TOK_GPU)) == 220
    assert r.fit.kv_token_capacity == math.floor(free_gpu / DSV3_TOK_GPU) == 1_804_126
    assert not r.fit.fits  # 512 > 220 (the pooled arithmetic said 1,761 and "fits")
    assert r.fit.kv_copies == 8 and r.fit.kv_held_bytes == 8 * r.kv.bytes
    assert "the MLA latent is stored whole on each of the 8 GPUs" in r.fit.kv_replication
    assert qa.size("deepseek-ai/DeepSeek-V3", "fp8-block", kv_dtype="kv-fp8", ctx=8192, batch=220, gpu="h200",
                   gpus=8).fit.fits


def test_size_qwen3_moe_kv_heads_replicate_past_their_count():
    r = qa.size("Qwen/Qwen3-30B-A3B", ctx=32768, batch=17, gpu="l4", gpus=8)
    free_gpu = per_gpu_budget(L4) - r.total_bytes / 8  # 20,931,674,112 - 7,633,030,656 = 13,298,643,456 B
    # one sequence: 32,768 x 24,576 = 805,306,368 B per GPU -> floor(16.51) = 16 (pooled: 33)
    assert r.fit.max_sequences_at_ctx == math.floor(free_gpu / (32768 * QWEN_TOK_GPU)) == 16
    assert not r.fit.fits and r.fit.kv_copies == 2
    assert "4 KV heads do not split over 8 GPUs: each GPU holds 1 head" in r.fit.kv_replication


def test_size_split_kv_heads_are_pooled():
    # Llama-3-8B has 8 KV heads: on 2 GPUs each holds 4 of them, one copy in all -> pooled arithmetic holds
    r = qa.size("meta-llama/Llama-3-8B", ctx=8192, batch=1, gpu="h100", gpus=2)
    assert r.fit.kv_copies == 1 and r.fit.kv_replication is None
    assert r.fit.max_sequences_at_ctx == math.floor(r.fit.free_for_kv_bytes / (8192 * 131_072))


def test_recommend_deepseek_capacity_is_per_gpu():
    # continuous batching at --ctx 8192: 7,936-token prompt + half of 256 output = 8,064 tokens per sequence
    r = qa.recommend(model="deepseek-ai/DeepSeek-V3", gpu="h200", gpus=8, batch=512, ctx=8192,
                     candidates=["fp8-block"], kv_dtype="kv-fp8")
    assert r.kv.tokens_per_sequence == 8064
    weights_gpu = qa.size("deepseek-ai/DeepSeek-V3", "fp8-block").total_bytes / 8
    # (147,533,594,624 - 84,143,822,764) / (8,064 x 35,136 = 283,336,704) = 223.73 -> 223 (pooled: 1,789)
    assert r.kv.max_concurrency == math.floor((per_gpu_budget(H200) - weights_gpu) / (8064 * DSV3_TOK_GPU)) == 223
    fit = next(t for t in r.trace if t.node == "fit")
    assert "the MLA latent is stored whole on each of the 8 GPUs" in fit.decision
    assert fit.numbers["kv_bytes_quantized"] == round(512 * 8064 * DSV3_TOK_GPU * 8)  # 8 copies of the batch's KV


def test_recommend_qwen3_moe_bf16_holds_what_each_gpu_holds():
    r = qa.recommend(model="Qwen/Qwen3-30B-A3B", gpu="l4", gpus=8, batch=30, ctx=32768, candidates=["bf16"],
                     kv_dtype="kv-bf16")
    assert r.kv.tokens_per_sequence == 32640  # 32,512-token prompt + 128
    weights_gpu = qa.size("Qwen/Qwen3-30B-A3B").total_bytes / 8
    # 13,298,643,456 / (32,640 x 24,576 = 802,160,640) = 16.58 -> 16 (pooled: 33)
    assert r.kv.max_concurrency == math.floor((per_gpu_budget(L4) - weights_gpu) / (32640 * QWEN_TOK_GPU)) == 16


# ---- the fit node (b) says the capacities the alternatives table shows (audit rec #5) ----------------
# Llama-3.1 KV: 70B 80 layers x 8 heads x 128 x 2 x 2 B = 327,680 B/token; 8B 32 layers -> 131,072 B/token.
# recommend's default workload at --ctx 2048 holds 1,792 prompt + 128 (half the output) = 1,920 tokens.
H100 = 85_520_809_984


def _fit(r):
    return next(t for t in r.trace if t.node == "fit")


def test_fit_node_and_table_agree_70b_on_one_h100():
    r = qa.recommend(model="meta-llama/Llama-3.1-70B", gpu="h100", batch=16)
    fit, kv = _fit(r), r.kv.dtype
    fp8 = qa.size("meta-llama/Llama-3.1-70B", "fp8-dynamic").total_bytes
    # 85,520,809,984 - 1 GiB - 2 GiB = 82,299,584,512 B; the fp8 model's 72,669,806,592 B leave 9,629,777,920 B:
    # floor(9,629,777,920 / (1,920 x 327,680 = 629,145,600)) = 15 sequences with a bf16 KV cache, one short of 16
    held_bf16 = math.floor((per_gpu_budget(H100) - fp8) / (1920 * 327_680))
    assert held_bf16 == 15
    assert fit.numbers["max_concurrency"]["fp8-dynamic"]["kv-bf16"] == held_bf16
    assert "fp8-dynamic" not in fit.numbers["holds_whole_batch_by_kv"]["kv-bf16"]
    with_bf16 = fit.decision.split("with a bf16 KV cache ")[-1].split("; with ")[0]
    assert "hold 15" in with_bf16 and "fp8-dynamic" in with_bf16.split("hold 15")[0].split("all 16 sequences, ")[-1]
    for a in r.alternatives:  # every table row's "holds" is a figure the fit node states for that KV dtype
        if a.max_concurrency is not None and a.kv_dtype == kv:
            assert fit.numbers["max_concurrency"][a.scheme][kv] == a.max_concurrency, a.scheme


def test_fit_node_bf16_fits_with_a_quantized_kv_cache_8b_on_l4():
    r = qa.recommend(model="meta-llama/Llama-3.1-8B", gpu="l4", batch=20)
    fit = _fit(r)
    # budget 24,152,899,584 - 3 GiB = 20,931,674,112 B; bf16 weights 8,030,261,248 x 2 = 16,060,522,496 B
    # bf16 KV: 20 x 1,920 x 131,072 = 5,033,164,800 B -> 21,093,687,296 B > budget
    # kv-fp8: half, 2,516,582,400 B -> 18,577,104,896 B <= budget: quantization is optional
    assert 16_060_522_496 + 5_033_164_800 > per_gpu_budget(L4) >= 16_060_522_496 + 2_516_582_400
    assert not fit.numbers["must_quantize"] and fit.numbers["bf16_fits_with"] == ["kv-fp8"]
    assert fit.decision.startswith("bf16 fits") and "must quantize" not in fit.decision
    bf16 = next(a for a in r.alternatives if a.scheme == "bf16")
    assert bf16.max_concurrency == fit.numbers["max_concurrency"]["bf16"][bf16.kv_dtype]


def test_fit_node_weighs_only_the_kv_dtype_the_workload_sets():
    # (the audit ran it with --engine sglang, which now refuses this KV dtype; node b is the same on vLLM)
    r = qa.recommend(batch=64, ctx=8192, kv_dtype="kv-int4-token-head", engine="vllm")
    fit = _fit(r)
    # int4 per-token-head KV: (128 x 4 bits + one fp32 scale) = 68 B per head and token x 8 heads x (K, V) x 32
    # layers = 34,816 B/token; 64 x 8,064 tokens = 17.97 GB; + bf16 Llama-3-8B 16.06 GB < 76.53 GB budget
    assert 16_060_522_496 + 64 * 8_064 * 34_816 <= per_gpu_budget(H100)
    assert not fit.numbers["must_quantize"] and fit.numbers["kv_dtypes_weighed"] == ["kv-int4-token-head"]
    assert "bits/param" not in fit.decision  # never "weights must average <= 53.2 bits/param"
