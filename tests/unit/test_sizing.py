"""Whole-model sizing: the chapter's numbers, MoE and MLA accounting, KV cache, GPU fit."""

from __future__ import annotations

from fractions import Fraction

import pytest

import quantadvise as api
from quantadvise import catalog
from quantadvise.model.inventory import inventory_of

# Llama-3-8B (the chapter): V=128256, H=4096, 224 decoder linear matrices holding 6,979,321,856
# params, untied embedding + lm_head 2 x 525,336,576, norms 65 x 4096 = 266,240.
V, H = 128256, 4096
EMB = V * H  # 525,336,576
DEC = 6_979_321_856
NORMS = 65 * H
TOTAL = DEC + 2 * EMB + NORMS  # 8,030,261,248
BF16 = 2 * TOTAL  # 16,060,522,496 B = 16.06 GB


def test_chapter_decoder_split():
    arch, _ = api.load_model("meta-llama/Llama-3-8B")
    inv = inventory_of(arch)
    assert inv.decoder_linear_matrices() == 224  # 32 layers x 7 (q, k, v, o, gate, up, down)
    assert inv.decoder_linear_params() == DEC
    assert round(DEC / TOTAL, 3) == 0.869 and round(2 * EMB / TOTAL, 3) == 0.131  # 86.9% / 13.1%


def test_chapter_w4_g128_is_5_73_gb():
    # 4-bit, g128, fp16 scale + 4-bit zero: 4 + 20/128 = 133/32 bits on the 224 decoder matrices;
    # embedding, lm_head and norms stay bf16.
    expected = 2 * (2 * EMB + NORMS) + Fraction(DEC * 133, 32 * 8)
    r = api.size("meta-llama/Llama-3-8B", bits=4, group=128)
    assert r.total_bytes == expected  # 5,727,854,592 B
    assert round(r.total_bytes / 1e9, 2) == 5.73
    assert r.baseline_bytes == BF16 and round(BF16 / 1e9, 2) == 16.06
    assert round(r.compression_ratio, 2) == 2.80
    assert r.effective_bits_per_weight == pytest.approx(4.15625)


def test_chapter_lm_head_quantized_is_3_24x():
    # lm_head joins the quantized matrices: (DEC + EMB) x 133/32 bits, embedding + norms bf16.
    expected = 2 * (EMB + NORMS) + Fraction((DEC + EMB) * 133, 32 * 8)
    r = api.size("meta-llama/Llama-3-8B", bits=4, group=128, lm_head=True)
    assert r.total_bytes == expected
    assert round(float(BF16 / expected), 2) == 3.24
    assert round(r.compression_ratio, 2) == 3.24


def test_sym_drops_the_zero_point():
    # symmetric: 4 + 16/128 = 4.125 = 33/8 bits.
    r = api.size("meta-llama/Llama-3-8B", bits=4, group=128, symmetric=True)
    assert r.total_bytes == 2 * (2 * EMB + NORMS) + Fraction(DEC * 33, 8 * 8)
    assert r.effective_bits_per_weight == pytest.approx(4.125)


def test_per_channel_group():
    # int8 per-channel, fp16 scale, symmetric: each matrix N x K adds N scales of 16 bits.
    arch, _ = api.load_model("meta-llama/Llama-3-8B")
    lin = [g for g in inventory_of(arch).groups if g.linear and g.component in ("attention", "mlp")]
    scale_bits = sum(g.n * g.count * 16 for g in lin)
    r = api.size("meta-llama/Llama-3-8B", bits=8, group=-1, symmetric=True)
    assert r.total_bytes == 2 * (2 * EMB + NORMS) + (DEC * 8 + scale_bits) // 8


def test_bf16_is_the_baseline():
    r = api.size("meta-llama/Llama-3-8B")
    assert r.total_bytes == BF16 and r.compression_ratio == 1.0 and r.effective_bits_per_weight is None


def test_moe_sizing_mixtral():
    # Mixtral-8x7B at int4 g128 sym (4.125 bits): attention (q, o 4096^2; k, v 1024x4096) and the
    # 8 experts x 3 x 4096 x 14336 are quantized; the router (8 x 4096 per layer), embedding,
    # lm_head and norms stay bf16.
    L, E, I = 32, 8, 14336
    attn = L * (2 * H * H + 2 * 1024 * H)
    experts = L * E * 3 * H * I
    bf16_params = 2 * 32000 * H + L * E * H + (2 * L + 1) * H
    expected = 2 * bf16_params + Fraction((attn + experts) * 33, 64)
    r = api.size("mistralai/Mixtral-8x7B-v0.1", bits=4, group=128, symmetric=True)
    assert r.total_bytes == expected
    comps = {c.component: c for c in r.components}
    assert comps["experts"].quantized and not comps["router"].quantized
    assert comps["experts"].params == experts


def test_mla_sizing_reproduces_deepseek_v3_checkpoint():
    # deepseek-ai/DeepSeek-V3 on the Hub stores (safetensors split by dtype, incl. the MTP layer):
    # F8_E4M3 680,571,043,840 + BF16 3,918,786,560 + F32 41,555,600 elements
    # = 680,571,043,840 + 2 x 3,918,786,560 + 4 x 41,555,600 = 688,574,839,360 bytes.
    # Our fp8-block preset (128x128 fp32 scales, routers/embeddings/eh_proj in bf16) must match.
    published = 680_571_043_840 + 2 * 3_918_786_560 + 4 * 41_555_600
    r = api.size("deepseek-ai/DeepSeek-V3", "fp8-block", include_mtp=True)
    # The only difference: 256 x 59 e_score_correction_bias values are F32 on disk, bf16 in our model.
    assert r.total_bytes == published - 2 * 256 * 59
    assert abs(r.total_bytes - published) / published < 0.005
    comps = {c.component for c in r.components if c.quantized}
    assert {"mla", "experts", "shared_experts", "mlp", "mtp"} <= comps


def test_kv_cache_gqa():
    # Llama-3-8B: 2 (K,V) x 8 KV heads x 128 x 2 B = 4096 B per token per layer; x 32 layers = 131,072 B.
    r = api.size("meta-llama/Llama-3-8B", ctx=2048, batch=1)
    assert r.kv.bytes_per_token == 131_072
    assert r.kv.bytes == 131_072 * 2048
    r8 = api.size("meta-llama/Llama-3-8B", ctx=2048, batch=4, kv_dtype="kv-fp8")
    assert r8.kv.bytes == 65_536 * 2048 * 4  # fp8: 1 B per element, per-tensor scale is per layer


def test_kv_cache_per_token_head_scales_counted():
    # int8 per-token-head: per head and token 128 x 1 B + one fp32 scale = 132 B; x 2 x 8 x 32.
    r = api.size("meta-llama/Llama-3-8B", ctx=1, kv_dtype="kv-int8-token-head")
    assert r.kv.bytes_per_token == 2 * 8 * 32 * (128 + 4)


def test_fit_on_gpu():
    # H100 SXM row: 81,559 MiB = 85,520,809,984 B. `size` names no engine: usable = the newest bundled vLLM's
    # (0.34.0) default --gpu-memory-utilization, 1.0 with its extensible KV cache (vllm/config/cache.py:494-501),
    # less the 1 GiB it keeps free after warmup (vllm/v1/worker/extensible_kv_cache.py:64-65): 85,520,809,984 -
    # 1,073,741,824 = 84,447,068,160 B; less the 2 GiB reserve (2,147,483,648) and bf16 weights (16,060,522,496) =
    # 66,239,062,016 B for KV: / 131,072 B per token = 505,363 tokens (remainder 122,880 B); / (131,072 x
    # 8,192 = 1,073,741,824 B per sequence) = 61 sequences.
    gpu = catalog.get_gpu("h100")
    assert gpu.memory_bytes == 85_520_809_984
    r = api.size("meta-llama/Llama-3-8B", gpu="h100", ctx=8192, batch=1)
    assert r.fit.memory_utilization == 84_447_068_160 / 85_520_809_984 and r.fit.usable_bytes == 84_447_068_160
    assert r.fit.free_for_kv_bytes == 66_239_062_016 == 84_447_068_160 - BF16 - 2 * 1024**3
    assert r.fit.kv_token_capacity == 505_363
    assert r.fit.max_sequences_at_ctx == 61
    assert r.fit.fits
    assert any("vLLM 0.34.0's default --gpu-memory-utilization 1" in n for n in r.notes)
    # a given fraction is used as given, with no note
    r = api.size("meta-llama/Llama-3-8B", gpu="h100", ctx=8192, batch=1, memory_utilization=0.9)
    assert r.fit.usable_bytes == 76_968_728_985  # floor(0.9 x 85,520,809,984)
    assert not any("usable memory" in n for n in r.notes)


def test_does_not_fit():
    r = api.size("meta-llama/Llama-3.1-70B", gpu="l4")
    assert not r.fit.fits and r.fit.free_for_kv_bytes < 0


def test_mtp_note_and_tied_note():
    r = api.size("deepseek-ai/DeepSeek-V3", "fp8-block")
    assert any("multi-token-prediction" in n for n in r.notes)
    r2 = api.size("meta-llama/Llama-3.2-1B", "w4a16")
    assert any("tied" in n for n in r2.notes)


def test_gpt_oss_needs_a_group_that_divides_2880():
    from quantadvise.errors import InputError

    with pytest.raises(InputError, match="K=2880") as exc:
        api.size("openai/gpt-oss-20b", "w4a16")  # g128 does not divide 2880 = 2^6 x 45
    assert "--group 64" in str(exc.value)
    r = api.size("openai/gpt-oss-20b", "mxfp4-a16")  # 2880 / 32 = 90
    assert r.effective_bits_per_weight == pytest.approx(4.25)
