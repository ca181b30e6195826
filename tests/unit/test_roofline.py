"""The performance model: the chapter's roofline numbers, KV geometry, MoE routing, tensor parallel,
prefill, datapaths and efficiency profiles. Every expected figure is derived in the test."""

from __future__ import annotations

import math

import pytest
import yaml

import quantadvise as api
from quantadvise import catalog
from quantadvise.errors import ConfigError, InputError, SchemeError, norm_name
from quantadvise.perf.datapath import datapath
from quantadvise.perf.efficiency import resolve
from quantadvise.perf.inputs import parse_batches, parse_contexts
from quantadvise.perf.ops import expected_experts
from quantadvise.perf.profiles import IDEAL, Curve, parse_profile
from quantadvise.perf.solve import crossings, first_crossing, first_root
from quantadvise.perf.step import StepModel

# The chapter's H100 SXM constants.
PI_BF16, PI_FP8, BETA = 989.4e12, 1979e12, 3.35e12
# Llama-3-8B: 224 decoder linear matrices holding E params; per layer the output widths (N) of
# q, k, v, o, gate, up, down are 4096, 1024, 1024, 4096, 14336, 14336, 4096.
E = 6_979_321_856
SUM_N = 32 * (4096 + 1024 + 1024 + 4096 + 14336 + 14336 + 4096)  # 1,376,256 output channels
V, H, L = 128256, 4096, 32
KV_PER_TOKEN = 2 * 8 * 128 * 2 * L  # K and V, 8 KV heads, head_dim 128, bf16, 32 layers = 131,072 B
LLAMA = "meta-llama/Llama-3-8B"


def step_model(model=LLAMA, scheme="bf16", gpu="h100", *, ideal=True, scope="full", gpus=1, kv=None, profiles=None):
    arch, _ = api.load_model(model)
    g = catalog.get_gpu(gpu)
    s = api.resolve_scheme(scheme)
    profs = profiles or ([IDEAL] if ideal else [catalog.default_perf_profile()])
    eff = resolve(profs, (g.id, g.name, *g.aliases), catalog.scheme_names(s.id) or (s.id,))
    return StepModel(arch, s, g, kv=api.resolve_kv(kv)[0], gpus=gpus, efficiency=eff, scope=scope)


# -------------------------------------------------------------------------------------------------
# The chapter, ideal model, H100 SXM
# -------------------------------------------------------------------------------------------------


def test_ridge_points_295_and_591():
    r = api.roofline(LLAMA, "bf16,fp8-dynamic", gpu="h100", ideal=True, batches=1, ctx=0)
    ridge = {s.scheme: s.ridge_flop_per_byte for s in r.schemes}
    assert ridge["bf16"] == pytest.approx(PI_BF16 / BETA)  # 295.34
    assert ridge["fp8-dynamic"] == pytest.approx(PI_FP8 / BETA)  # 590.75
    assert round(ridge["bf16"]) == 295 and round(ridge["fp8-dynamic"]) == 591


def test_bf16_and_fp8_turn_compute_bound_at_the_same_batch_295():
    # Intensity of the weight GEMM is 2B / b_w: bf16 b_w = 2 -> B* = pi16/beta = 295.3; fp8 b_w = 1 (+ a bf16
    # per-channel scale per output channel) -> B* = (pi8/beta) * b8 / 2, also ~295: the chapter's "same B*".
    b8 = (E + 2 * SUM_N) / E
    r = api.roofline(LLAMA, "bf16,fp8-dynamic", gpu="h100", ideal=True, batches=1, ctx=0)
    assert r.ridge_batch["bf16"] == pytest.approx(PI_BF16 / BETA, rel=1e-6)
    assert r.ridge_batch["fp8-dynamic"] == pytest.approx(PI_FP8 / BETA * b8 / 2, rel=1e-6)
    assert round(r.ridge_batch["fp8-dynamic"]) == 295


def test_w4a16_turns_compute_bound_near_74():
    # The w4a16 preset stores, per N x K matrix (compressed-tensors pack-quantized): N*K/2 bytes of
    # packed int4, N*K/128 bf16 scales (N*K/64 bytes) and a 16-byte int64[2] shape: over the 224
    # matrices E*33/64 + 224*16 bytes. B* = (pi/beta) * b_w / 2.
    b4 = (E * 33 / 64 + 224 * 16) / E  # 0.515625 bytes/weight: 4.125 bits
    sm = step_model(scheme="w4a16")
    assert sm.bytes_per_weight() == pytest.approx(b4, rel=1e-12)
    assert sm.ridge_batch() == pytest.approx(PI_BF16 / BETA * b4 / 2, rel=1e-6)  # 76.1
    # The chapter's 74 is the scale-free 4-bit figure: (pi/beta) * 0.5 / 2 = 73.8. Per-channel scales
    # (one fp16 per output channel: + 2/K bytes per weight) come within 0.1% of it.
    assert PI_BF16 / BETA * 0.5 / 2 == pytest.approx(73.8, abs=0.05)
    arch, _ = api.load_model(LLAMA)
    per_channel = api.resolve_scheme(None, bits=4, group=-1, symmetric=True)
    g = catalog.get_gpu("h100")
    sm_ch = StepModel(arch, per_channel, g, efficiency=resolve([IDEAL], (g.id,)))
    b_ch = (E / 2 + 2 * SUM_N) / E
    assert sm_ch.ridge_batch() == pytest.approx(PI_BF16 / BETA * b_ch / 2, rel=1e-6)
    assert round(sm_ch.ridge_batch()) == 74


@pytest.mark.parametrize("ctx", [0, 2048])
def test_w4a16_vs_fp8_cross_near_148(ctx):
    # Between W4's ridge (~76) and 295, W4A16 is compute-bound on bf16 (2*B*E/pi16) while FP8 is still
    # memory-bound (E*b8/beta); everything else (lm_head bf16 in both, KV, activations) is the same
    # in both schemes and cancels, so the crossover is B = pi16 * b8 / (2 beta), at any context.
    b8 = (E + 2 * SUM_N) / E
    r = api.roofline(LLAMA, "w4a16,fp8-dynamic", gpu="h100", ideal=True, batches="1..512", ctx=ctx)
    (c,) = r.crossovers
    assert c.batch == pytest.approx(PI_BF16 * b8 / (2 * BETA), rel=1e-6)  # 147.7
    assert round(c.batch) == 148
    assert (c.faster_below, c.faster_above) == ("w4a16", "fp8-dynamic")


def test_w4a16_converges_to_bf16_without_crossing_in_the_ideal_model():
    # Past both ridges both run 2*B*E/pi16 on bf16 tensor cores: a tie, not a crossover.
    r = api.roofline(LLAMA, "bf16,w4a16", gpu="h100", ideal=True, batches="1,1024", ctx=0)
    assert r.crossovers == []
    t = {p.scheme: p.step_time_s for p in r.points if p.batch == 1024}
    assert t["w4a16"] == pytest.approx(t["bf16"], rel=1e-12)


def test_fp8_is_twice_bf16_on_both_sides_of_the_ridge():
    # Decoder scope (the chapter's accounting). Memory side (B=1): 2 bytes vs b8 bytes per weight;
    # compute side (B=4096): pi8 / pi16 = 2.0002. The residual stream (B*L*H*2 bytes) is the only
    # scheme-independent term left and is < 0.1% of the step on both sides.
    b8 = (E + 2 * SUM_N) / E
    bf, f8 = step_model(scope="decoder"), step_model(scheme="fp8-dynamic", scope="decoder")
    assert bf.decode(1, 0).time_s / f8.decode(1, 0).time_s == pytest.approx(2 / b8, rel=1e-3)
    assert bf.decode(4096, 0).time_s / f8.decode(4096, 0).time_s == pytest.approx(PI_FP8 / PI_BF16, rel=1e-2)
    # Full scope: lm_head stays bf16 in both, so the memory-side ratio is (2E + 2VH) / (b8 E + 2VH) = 1.87.
    bf_f, f8_f = step_model(), step_model(scheme="fp8-dynamic")
    expected = (2 * E + 2 * V * H) / (b8 * E + 2 * V * H)
    assert bf_f.decode(1, 0).time_s / f8_f.decode(1, 0).time_s == pytest.approx(expected, rel=1e-3)


def test_chapter_byte_shares_at_batch_1_2k_context():
    # Decoder scope: weights = the 224 matrices at bf16, KV = 2048 tokens x 131,072 B, activations =
    # the residual stream each of the 32 layers reads, 1 x 4096 x 2 B.
    w, kv, act = 2 * E, 2048 * KV_PER_TOKEN, L * H * 2
    c = step_model(scope="decoder").decode(1, 2048)
    assert (c.weights_bytes, c.kv_bytes, c.activation_bytes) == (w, kv, act)
    total = w + kv + act
    assert round(100 * w / total, 1) == 98.1 and round(100 * kv / total, 1) == 1.9
    assert round(100 * act / total, 3) == 0.002  # 0.00184%
    # Full scope adds lm_head (V*H*2), one embedding row (H*2), the norms (65*H*2) and the bf16 logits (V*2):
    # weights 98.2%, KV 1.8%, activations 0.0034%.
    f = step_model().decode(1, 2048)
    w_f = w + 2 * V * H + 2 * H + 2 * 65 * H
    act_f = act + 2 * V
    assert (f.weights_bytes, f.kv_bytes, f.activation_bytes) == (w_f, kv, act_f)
    tot_f = w_f + kv + act_f
    assert round(100 * w_f / tot_f, 1) == 98.2 and round(100 * kv / tot_f, 1) == 1.8
    assert round(100 * act_f / tot_f, 4) == 0.0034


def test_flops_are_two_per_active_weight_per_token():
    # Decoder scope at ctx 0: no attention FLOPs; 2 * B * E.
    assert step_model(scope="decoder").decode(8, 0).flops == 2 * 8 * E
    # Attention at ctx C: 4 * heads * head_dim per cached token-layer per sequence.
    c = step_model(scope="decoder").decode(2, 1000)
    assert c.flops == 2 * 2 * E + 2 * L * 1000 * 4 * 32 * 128


# -------------------------------------------------------------------------------------------------
# KV bytes per token: GQA, explicit head_dim, MLA, sliding / hybrid
# -------------------------------------------------------------------------------------------------


def test_kv_gqa_llama_and_fp8():
    sm = step_model()
    assert sm.kv_bytes_per_token_layer * L == KV_PER_TOKEN
    assert sm.decode(4, 3000).kv_bytes == 4 * 3000 * KV_PER_TOKEN
    # fp8 KV: one byte per element; the per-tensor scale is a per-layer constant, not per token.
    assert step_model(kv="kv-fp8").kv_bytes_per_token_layer == 2 * 8 * 128


def test_kv_gemma2_explicit_head_dim_and_alternating_sliding_window():
    # Gemma-2-9B: head_dim 256 (not hidden/heads = 3584/16 = 224), 8 KV heads, 42 layers alternating
    # local (window 4096, even layers) and global. Per layer-token 2*8*256*2 = 8192 B.
    sm = step_model("google/gemma-2-9b")
    assert sm.kv_bytes_per_token_layer == 2 * 8 * 256 * 2
    # ctx 8192: 21 global layers hold 8192 tokens, 21 local ones 4096.
    assert sm.decode(1, 8192).kv_bytes == (21 * 8192 + 21 * 4096) * 8192
    # below the window every layer holds the whole context
    assert sm.decode(1, 1000).kv_bytes == 42 * 1000 * 8192


def test_kv_gpt_oss_hybrid_sliding_128():
    # gpt-oss-120b: 36 layers alternating sliding (window 128) and full, 8 KV heads x head_dim 64:
    # 2*8*64*2 = 2048 B per layer-token.
    sm = step_model("openai/gpt-oss-120b")
    assert sm.kv_bytes_per_token_layer == 2048
    assert sm.decode(3, 8192).kv_bytes == 3 * (18 * 8192 + 18 * 128) * 2048


def test_kv_mla_deepseek_v3_latent_replicated_under_tp():
    # MLA caches kv_lora_rank + qk_rope_head_dim = 512 + 64 elements per layer-token: 1152 B at bf16,
    # x 61 layers = 70,272 B/token. Under tensor parallel the latent is replicated on every GPU.
    sm = step_model("deepseek-ai/DeepSeek-V3", scheme="fp8-block", gpu="h200", gpus=8)
    assert sm.kv_bytes_per_token_layer == (512 + 64) * 2
    assert sm.decode(2, 1000).kv_bytes == 2 * 1000 * 61 * 1152  # per GPU = all of it
    # absorbed MLA decode: 2 * heads * (2 * 512 + 64) FLOP per cached token-layer, heads split 8 ways
    assert sm.attn_flops_decode == 2 * 128 * (2 * 512 + 64) / 8


# -------------------------------------------------------------------------------------------------
# MoE: expected experts touched
# -------------------------------------------------------------------------------------------------


def test_expected_experts_formula():
    assert expected_experts(8, 2, 1) == pytest.approx(2)  # one token touches its k experts
    assert expected_experts(128, 4, 1) == pytest.approx(4)
    assert expected_experts(8, 2, 2) == pytest.approx(8 * (1 - 0.75**2))  # 3.5
    assert expected_experts(256, 8, 100_000) == pytest.approx(256)  # large batch -> all E
    assert expected_experts(8, 2, 0) == 0


def test_mixtral_reads_k_experts_at_batch_1_and_all_at_large_batch():
    # Mixtral-8x7B (decoder scope, bf16): per layer attention q,k,v,o = 2*4096*4096 + 2*1024*4096 params,
    # router 8*4096, experts 8 x 3 x 14336 x 4096; 32 layers.
    attn = 32 * (2 * 4096 * 4096 + 2 * 1024 * 4096)
    router = 32 * 8 * 4096
    experts = 32 * 8 * 3 * 14336 * 4096
    sm = step_model("mistralai/Mixtral-8x7B-v0.1", scope="decoder")
    assert sm.decode(1, 0).weights_bytes == pytest.approx(2 * (attn + router + experts * 2 / 8), rel=1e-12)
    assert sm.decode(10**6, 0).weights_bytes == pytest.approx(2 * (attn + router + experts), rel=1e-12)
    b = 5  # 8 * (1 - 0.75^5) experts per layer
    assert sm.decode(b, 0).weights_bytes == pytest.approx(2 * (attn + router + experts * (1 - 0.75**b)), rel=1e-12)
    # FLOPs count active parameters only: 2 of 8 experts per token, at any batch.
    assert sm.decode(64, 0).flops == pytest.approx(2 * 64 * (attn + router + experts * 2 / 8), rel=1e-12)


# -------------------------------------------------------------------------------------------------
# Datapaths
# -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scheme", "gpu", "math_fmt", "execution", "dequant"),
    [
        ("bf16", "h100", "bf16", "native", False),
        ("w4a16", "h100", "bf16", "native", True),
        ("fp8-dynamic", "h100", "fp8", "native", False),
        ("w8a8-int8", "a100-80gb", "int8", "native", False),
        ("w4a8-fp8", "h100", "fp8", "native", True),  # int4 weights converted to fp8 in-kernel
        ("nvfp4", "b200", "fp4", "native", False),
        ("mxfp4", "mi355x", "fp4", "native", False),
        ("fp8-dynamic", "a100-80gb", "bf16", "weight-only", True),  # vLLM: W8A16 through Marlin below SM89
        ("nvfp4", "h100", "bf16", "weight-only", True),  # NVFP4 through Marlin below SM100
        ("mxfp4", "mi300x", "bf16", "weight-only", True),
        ("mxfp8", "h100", "bf16", "weight-only", True),  # fp8 cores, but no block-scaled MMA for g32 scales
        ("mxfp8", "b200", "fp8", "native", False),
    ],
)
def test_datapath(scheme, gpu, math_fmt, execution, dequant):
    p = datapath(api.resolve_scheme(scheme), catalog.get_gpu(gpu))
    assert (p.math, p.execution, p.dequant) == (math_fmt, execution, dequant)
    assert (p.note is not None) == (execution != "native")


def test_a_scheme_no_engine_can_run_is_an_error():
    with pytest.raises(SchemeError, match="no fp8 tensor cores"):
        datapath(api.resolve_scheme("w4a8-fp8"), catalog.get_gpu("a100-80gb"))


def test_emulated_scheme_is_shown_with_a_warning():
    r = api.roofline(LLAMA, "nvfp4", gpu="h100", batches=1, ctx=0)
    assert r.schemes[0].execution == "weight-only" and r.schemes[0].math == "bf16"
    assert any("weight-only" in w and "nvfp4" in w for w in r.warnings)


# -------------------------------------------------------------------------------------------------
# Tensor parallel
# -------------------------------------------------------------------------------------------------


def test_tensor_parallel_splits_bytes_and_adds_all_reduces():
    one, two = step_model(), step_model(gpus=2)
    c1, c2 = one.decode(64, 2048), two.decode(64, 2048)
    norms = 65 * H * 2  # replicated on each GPU
    assert c2.weights_bytes - norms == pytest.approx((c1.weights_bytes - norms) / 2, rel=1e-12)
    assert c2.kv_bytes == pytest.approx(c1.kv_bytes / 2)  # 8 KV heads split 2 ways
    # ideal: no latency; 2 all-reduces per layer + the vocab-parallel embedding's, ring volume
    # 2(N-1)/N x B*H*2 bytes each, plus the logits gather (N-1)/N x B*V*2, over 450 GB/s per direction.
    bw = 450e9
    expected = (2 * L + 1) * 1.0 * 64 * H * 2 / bw + 0.5 * 64 * V * 2 / bw
    assert c2.communication_s == pytest.approx(expected, rel=1e-12)


def test_kv_heads_are_replicated_beyond_their_count():
    # 16 GPUs, 8 KV heads: each GPU holds one KV head (1/8 of the cache), not 1/16.
    sm = step_model(gpus=16)
    assert sm.decode(1, 1000).kv_bytes == pytest.approx(1000 * KV_PER_TOKEN / 8)


def test_tensor_parallel_must_divide_heads():
    with pytest.raises(InputError, match="32 attention heads"):
        step_model(gpus=3)


# -------------------------------------------------------------------------------------------------
# Prefill, dequantisation, efficiencies
# -------------------------------------------------------------------------------------------------


def test_prefill_time_by_hand():
    # Decoder scope, ideal, bf16, one 1024-token prompt: the linears are compute-bound (1024 > 295):
    # 2*1024*E / pi. Causal attention: 32 layers x 1024*1025/2 pairs x 4*32*128 FLOP (compute-bound:
    # 16,384 FLOP per pair vs 4096 B of KV written per token-layer). Residual stream: 1024*32*4096*2 B.
    p = 1024
    pairs = L * p * (p + 1) / 2
    expected = 2 * p * E / PI_BF16 + pairs * 4 * 32 * 128 / PI_BF16 + p * L * H * 2 / BETA
    assert step_model(scope="decoder").prefill(1, p).time_s == pytest.approx(expected, rel=1e-9)


def test_dequant_cost_of_weight_only_kernels():
    # Default profile, decoder scope, w4a16 at B=512, ctx 0: every linear is compute-bound:
    # 2*B*E / (0.70 * pi16) + dequant E * 2 FLOP / (1.0 * 66.9e12 fp32 vector) x (512 / 64) passes.
    # The residual stream streams at 80% of 3.35 TB/s. Each of the 32 layers' 4 GEMM calls (q/k/v fused, o,
    # gate/up fused, down) adds the profile's quantized launch floor, 5.75 us, and each layer's attention (no KV
    # to read at ctx 0) its launch floor, 11.9 us (data/perf_profile.yaml).
    b = 512
    t = (2 * b * E / (0.70 * PI_BF16) + E * 2 / 66.9e12 * (b / 64) + b * L * H * 2 / (0.80 * BETA)
         + 32 * 4 * 5.75e-6 + 32 * 11.9e-6)
    sm = step_model(scheme="w4a16", ideal=False, scope="decoder")
    c = sm.decode(b, 0)
    assert c.time_s == pytest.approx(t, rel=1e-9)
    assert c.dequant_s == pytest.approx(E * 2 / 66.9e12 * 8, rel=1e-9)
    assert c.bound == "compute"
    # The real-kernel term brings W4A16's ridge and its crossover with FP8 in from the ideal 76 / 148.
    ideal = api.roofline(LLAMA, "w4a16,fp8-dynamic", gpu="h100", ideal=True, batches="1..512", ctx=0)
    real = api.roofline(LLAMA, "w4a16,fp8-dynamic", gpu="h100", batches="1..512", ctx=0)
    assert real.ridge_batch["w4a16"] < ideal.ridge_batch["w4a16"]
    assert real.crossovers[0].batch < ideal.crossovers[0].batch


def test_efficiency_curve_interpolates_in_log2_batch():
    c = Curve(batch=(1, 64), value=(0.5, 0.8))
    assert c.at(8) == pytest.approx(0.5 + 0.3 * 3 / 6)  # log2(8) = 3 of log2(64) = 6
    assert c.at(0.5) == 0.5 and c.at(1000) == 0.8
    # Everything is memory-bound at B=8, ctx 0 in bf16, so the step is 1/efficiency slower than ideal.
    prof = parse_profile({"id": "t", "source": "test", "as_of": "2026-11-29", "defaults": {
        "memory_efficiency": {"batch": [1, 64], "value": [0.5, 0.8]}, "compute_efficiency": {"bf16": 1.0}}})
    curved = step_model(profiles=[IDEAL.model_copy(update={"ideal": False}), prof])
    ideal = step_model()
    assert curved.decode(8, 0).time_s == pytest.approx(ideal.decode(8, 0).time_s / 0.65, rel=1e-12)
    # the sweep's fast path agrees with the full step on the curve path too
    assert curved.decode_time(8, 0) == pytest.approx(curved.decode(8, 0).time_s, rel=1e-12)


def test_fast_path_matches_full_step():
    for model, scheme, gpus in ((LLAMA, "w4a16", 1), ("deepseek-ai/DeepSeek-V3", "fp8-block", 8),
                                ("openai/gpt-oss-120b", "mxfp4-a16", 2)):
        sm = step_model(model, scheme, gpu="h200", ideal=False, gpus=gpus)
        for ctx in (0, 4096):
            ct = sm.cached_tokens(ctx)
            for b in (1, 3.5, 64, 700):
                assert sm.decode_time(b, ct) == pytest.approx(sm.decode(b, ctx).time_s, rel=1e-12)


# -------------------------------------------------------------------------------------------------
# Profiles
# -------------------------------------------------------------------------------------------------


def test_default_profile_round_trips():
    p = catalog.default_perf_profile()
    again = parse_profile(yaml.safe_load(yaml.safe_dump(p.to_dict())), "roundtrip")
    assert again == p


def test_profile_rejects_unknown_keys_and_bad_values():
    base = {"id": "x", "source": "s", "as_of": "2026-11-29"}
    with pytest.raises(ConfigError, match="memory_eficiency"):
        parse_profile({**base, "defaults": {"memory_eficiency": 0.8}}, "p.yaml")
    with pytest.raises(ConfigError, match=r"must be >= 0\.01 and <= 1"):
        parse_profile({**base, "defaults": {"memory_efficiency": 1.5}}, "p.yaml")
    with pytest.raises(ConfigError, match="strictly increasing"):
        parse_profile({**base, "defaults": {"memory_efficiency": {"batch": [8, 1], "value": [0.5, 0.6]}}}, "p.yaml")
    with pytest.raises(ConfigError, match="unknown math format"):
        parse_profile({**base, "defaults": {"compute_efficiency": {"fp7": 0.5}}}, "p.yaml")


def test_profile_layers_gpu_and_scheme_over_defaults():
    user = parse_profile({"id": "u", "source": "s", "as_of": "2026-11-29", "gpus": [
        {"gpu": "H100", "memory_efficiency": 0.5, "schemes": {"W4A16": {"compute_efficiency": {"bf16": 0.25}}}}]})
    default = catalog.default_perf_profile()
    g = catalog.get_gpu("h100-sxm")
    names = (g.id, g.name, *g.aliases)
    e = resolve([default, user], names, catalog.scheme_names("w4a16"))
    assert e.memory_at(1) == 0.5 and e.compute_at("bf16", 1) == 0.25 and e.compute_at("fp8", 1) == 0.65
    e_bf16 = resolve([default, user], names, ("bf16",))
    assert e_bf16.compute_at("bf16", 1) == 0.70  # the scheme override does not leak
    assert resolve([default, user], ("a100-80gb",)).memory_at(1) == 0.80  # other GPUs keep the default


# -------------------------------------------------------------------------------------------------
# Inputs and search helpers
# -------------------------------------------------------------------------------------------------


def test_parse_batches_and_contexts():
    assert parse_batches("1,8,64,512") == (1, 8, 64, 512)
    assert parse_batches("1..512") == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
    assert parse_batches("3..20") == (3, 6, 12, 20)
    assert parse_batches("16..64:16") == (16, 32, 48, 64)
    assert parse_contexts("512,2k,32k") == (512, 2048, 32768)
    assert parse_contexts("0") == (0,)
    for bad in ("0", "1,-4", "x", "", "8..2"):
        with pytest.raises(InputError):
            parse_batches(bad)
    with pytest.raises(InputError, match=">= 0"):
        parse_contexts("-1")


def test_search_helpers():
    assert first_root(lambda x: x - 10.0, 1.0, 1e6) == pytest.approx(10.0, rel=1e-6)
    assert first_root(lambda x: -1.0, 1.0, 100.0) is None
    roots = crossings(lambda x: math.sin(math.log(x)), 1.0, math.exp(7))
    assert roots == pytest.approx([math.exp(math.pi), math.exp(2 * math.pi)], rel=1e-6)
    # sin(log x) changes sign where log x = pi and 2 pi; the first is found without scanning on,
    # so a function that would fail past it is never called there
    def until_first(x: float) -> float:
        assert x < math.exp(1.5 * math.pi), "scanned past the first crossing"
        return math.sin(math.log(x))

    assert first_crossing(until_first, 1.0, math.exp(7)) == pytest.approx(math.exp(math.pi), rel=1e-6)
    assert first_crossing(lambda x: 1.0, 1.0, 100.0) is None


def test_shipped_profile_is_sourced_and_names_known_gpus():
    p = catalog.default_perf_profile()
    assert p.source and p.as_of and not p.ideal
    known = {norm_name(n) for n in catalog.gpu_names()}
    for entry in p.gpus:
        assert norm_name(entry.gpu) in known
        assert entry.source
    # every math format a GPU row can have gets a default efficiency
    from quantadvise.hardware import MATH_FORMATS

    assert set(MATH_FORMATS) <= set(p.defaults.compute_efficiency)
