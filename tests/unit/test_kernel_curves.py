"""Per-kernel cost curves (quantadvise.perf.kernel_curves) and how the step model uses them."""

from __future__ import annotations

import math

import pytest

from quantadvise.calibration.heldout import HELD_OUT_SETS, moe_config, moe_time, monotone_floor, step_floor
from quantadvise.perf.kernel_curves import KernelCurve, QuantCurve, blend, lookup, monotone_m_factor


def flat(em: float = 0.5, ec: float = 0.25, **kw) -> KernelCurve:
    base = dict(kernel="k", engine="vllm", basis="proxy", proxy_of="vllm/x", math="bf16", overhead_s=2e-6,
                blend=64.0, nk_knots=(512, 65536), memory_efficiency=((em, em), (em, em)),
                compute_efficiency=((ec, ec), (ec, ec)), m_knots=(1,), m_factor=(1.0,))
    base.update(kw)
    return KernelCurve(**base)


BW, PEAK = 4.8e12, 989.4e12  # H200 row of data/hardware.yaml


def test_memory_bound_call_is_bytes_over_achieved_bandwidth() -> None:
    # M=1, 4096x4096 bf16: weights 4096*4096*2 = 33,554,432 B; activations 1*4096*2 in + 1*4096*2 out
    # = 16,384 B; at 0.5 * 4.8e12 B/s: 33,570,816 / 2.4e12 = 13.988 us; + 2 us overhead
    c = flat()
    assert c.time(1, 4096, 4096, 2.0, BW, PEAK) == pytest.approx(2e-6 + 33_570_816 / 2.4e12, rel=1e-12)


def test_compute_bound_call_is_flops_over_achieved_peak() -> None:
    # M=8192: 2*8192*4096*4096 = 2.749e11 FLOP at 0.25 * 989.4e12 = 1.111 ms (memory 0.21 ms, p=64: max)
    c = flat()
    flops = 2 * 8192 * 4096 * 4096
    assert c.time(8192, 4096, 4096, 2.0, BW, PEAK) == pytest.approx(2e-6 + flops / (0.25 * PEAK), rel=1e-9)


def test_blend_bends_the_corner() -> None:
    # p=2 at the knee (equal terms a=b=1): sqrt(2); the roofline's corner would be 1
    assert blend(1.0, 1.0, 2.0) == pytest.approx(math.sqrt(2))
    assert blend(1.0, 1.0, 1.0) == pytest.approx(2.0)
    assert blend(3.0, 0.0, 2.0) == pytest.approx(3.0)


def test_efficiency_tables_interpolate_geometrically_in_log2_of_the_shape() -> None:
    # N knots 512 and 2048, efficiency 0.2 and 0.8: at N=1024 (half way in log2) sqrt(0.2*0.8) = 0.4
    c = flat(nk_knots=(512, 2048), memory_efficiency=((0.2, 0.2), (0.8, 0.8)))
    em, _ = c.efficiencies(1, 1024, 1024)
    assert em == pytest.approx(0.4)
    # clamped outside the knots
    assert c.efficiencies(1, 64, 1024)[0] == pytest.approx(0.2)
    assert c.efficiencies(1, 1 << 20, 1024)[0] == pytest.approx(0.8)


def test_m_factor_scales_compute_efficiency_with_rows() -> None:
    # factor 1 at M=1, 2 at M=64: at M=8 (half way in log2) sqrt(2)
    c = flat(m_knots=(1, 64), m_factor=(1.0, 2.0))
    assert c.efficiencies(8, 4096, 4096)[1] == pytest.approx(0.25 * math.sqrt(2))


def test_m_tile_rounds_rows_up() -> None:
    c = flat(m_tile=64)
    assert c.rows(1) == 64 and c.rows(64) == 64 and c.rows(65) == 128
    assert flat().rows(65) == 65


def test_m_tile_steps_the_compute_term_at_tile_boundaries() -> None:
    # compute-bound (blend 64 ~ max), no overhead: 2 * rows * N * K / (0.25 * PEAK) with rows = M rounded
    # up to 64: M = 65 and M = 128 cost the same two tiles, M = 64 one tile (half)
    c = flat(m_tile=64, overhead_s=0.0, memory_efficiency=((4.0, 4.0), (4.0, 4.0)))
    n = k = 8192
    one_tile = 2 * 64 * n * k / (0.25 * PEAK)
    assert c.time(64, n, k, 2.0, BW, PEAK) == pytest.approx(one_tile, rel=1e-3)
    assert c.time(65, n, k, 2.0, BW, PEAK) == pytest.approx(2 * one_tile, rel=1e-3)
    assert c.time(128, n, k, 2.0, BW, PEAK) == pytest.approx(c.time(65, n, k, 2.0, BW, PEAK), rel=1e-3)


def test_tile_m_factor_reads_the_m_factor_at_the_rows_computed() -> None:
    # factor 0.5 at 64 rows, 1 at 128; compute-bound. Read at M = 65 itself the factor is
    # 0.5 x 2^log2(65/64) = 0.5078, so 65 rows (computed as 128) would cost 1 / 0.5078 = 1.97x what
    # 128 rows cost: the time would fall as M grows. Read at the rows computed (128) both cost the same.
    kw = dict(m_tile=64, overhead_s=0.0, memory_efficiency=((4.0, 4.0), (4.0, 4.0)), m_knots=(64, 128),
              m_factor=(0.5, 1.0))
    n = k = 8192
    loose, tiled = flat(**kw), flat(tile_m_factor=True, **kw)
    assert loose.time(65, n, k, 2.0, BW, PEAK) / loose.time(128, n, k, 2.0, BW, PEAK) == pytest.approx(
        1 / (0.5 * 2 ** math.log2(65 / 64)), rel=1e-3)
    assert tiled.time(65, n, k, 2.0, BW, PEAK) == pytest.approx(tiled.time(128, n, k, 2.0, BW, PEAK), rel=1e-9)
    assert tiled.m_factor_at(65) == 1.0 and tiled.m_factor_at(64) == 0.5


def test_monotone_floor_is_the_least_worst_error_of_a_non_decreasing_prediction() -> None:
    # never faster with more rows: nothing to pay
    assert monotone_floor([1.0, 1.0, 2.0, 3.0]) == pytest.approx(0.0, abs=1e-12)
    # 1, 2, 1: p2 >= 2(1 - e) and p3 <= 1(1 + e) with p3 >= p2, so 2 - 2e <= 1 + e: e >= 1/3
    # (p = 4/3 at the last two points: 2 * (1 - 1/3) = 4/3 = 1 * (1 + 1/3))
    assert monotone_floor([1.0, 2.0, 1.0]) == pytest.approx(1 / 3, abs=1e-9)
    # a spike of x over a later point: (1 + x) (1 - e) <= 1 + e, e >= x / (2 + x); x = 1.3 -> 0.3939
    assert monotone_floor([1.0, 2.3, 1.0, 7.0]) == pytest.approx(1.3 / 3.3, abs=1e-9)
    assert monotone_floor([1.0]) == 0.0


def test_step_floor_reads_the_held_out_sets() -> None:
    # one set's four GEMMs at two batches; the step at the larger batch is faster (4 x 1 us against
    # 4 x 2 us): 8, 4 -> 8 (1 - e) <= 4 (1 + e), e >= 1/3; cells outside every set are ignored
    cells = list(HELD_OUT_SETS["Llama-3-8B tp4"])
    doc = {"batches": [16, 48], "cells": [list(c) for c in cells] + [[999, 999]],
           "seconds": [[2e-6, 1e-6]] * len(cells) + [[1.0, 1e-9]]}
    assert step_floor(doc) == pytest.approx(1 / 3, abs=1e-9)


def test_quant_curve() -> None:
    # 1 us + 64 * 4096 * 5 B / (0.8 * 4.8e12) = 1 us + 0.341 us
    q = QuantCurve(kernel="per-token-quant", engine="vllm", basis="proxy", proxy_of="x/y", overhead_s=1e-6,
                   bytes_per_element=5.0, efficiency=0.8)
    assert q.time(64, 4096, BW) == pytest.approx(1e-6 + 64 * 4096 * 5 / (0.8 * BW))


def test_lookup_prefers_the_engines_own_measurement() -> None:
    a, b = flat(engine="vllm"), flat(engine="sglang")
    curves = {"vllm/k": a, "sglang/k": b}
    assert lookup(curves, "sglang", "k") is b
    assert lookup({"vllm/k": a}, "sglang", "k") is a
    assert lookup({"vllm/k": a}, "sglang", "other") is None


def test_a_curve_must_be_square_and_labelled() -> None:
    with pytest.raises(ValueError, match="table"):
        flat(memory_efficiency=((0.5,),))
    with pytest.raises(ValueError, match="proxy_of"):
        flat(proxy_of=None)
    with pytest.raises(ValueError, match="measured"):
        flat(basis="measured", proxy_of=None)


def test_moe_layer_reads_the_experts_the_tokens_reach() -> None:
    # 8 experts, top-2, 1 GPU: 1 token reaches 2 experts; each has w13 (2*1024 x 512) and w2 (512 x 1024)
    # stored at 0.5 B/element: 2 * (2*1024*512 + 512*1024) * 0.5 = 1,572,864 B of weights, plus
    # activations 2 * (512*2 + 2048*2 + 1024*2 + 512*2) = 16,384 B -> 1,589,248 B at 0.5*BW; p=64
    c = flat(overhead_s=0.0)
    cfg = moe_config(512, 1024, 2, 8, 1, 1)
    assert moe_time(c, cfg, 1, 0.5, BW, PEAK) == pytest.approx(1_589_248 / (0.5 * BW), rel=1e-9)


def test_the_m_factor_is_read_through_its_largest_non_decreasing_minorant() -> None:
    # The A100 vLLM cuBLAS fit (data/profiles/a100-80gb.yaml, vllm/cublas-bf16; the composed vllm/marlin
    # curve borrows it): 0.9859, 1.0 at M = 1, 16, then 0.3744 at 64. Running minimum from the largest M
    # down, by hand: 1.0, 1.0 at 4096 / 16384; 0.8885 at 1024 (and 512: min(0.9275, 0.8885)); 0.7053
    # at 256; 0.6546 at 128; 0.3744 at 64, 16 and 1.
    fitted = (0.9859, 1.0, 0.3744, 0.6546, 0.7053, 0.9275, 0.8885, 1.0, 1.0)
    assert monotone_m_factor(fitted) == (0.3744, 0.3744, 0.3744, 0.6546, 0.7053, 0.8885, 0.8885, 1.0, 1.0)
    c = flat(m_knots=(1, 16, 64, 128, 256, 512, 1024, 4096, 16384), m_factor=fitted)
    assert c.m_factor_at(16) == pytest.approx(0.3744) and c.m_factor_at(512) == pytest.approx(0.8885)
    # a fused-MoE call reads the factor as fitted (its rows are tokens per expert)
    moe = c.as_fused_moe()
    assert moe.m_factor_at(16) == pytest.approx(1.0) and moe.m_factor_at(512) == pytest.approx(0.9275)
    assert c.m_factor_at(16) == pytest.approx(0.3744)  # the dense curve is unchanged by the copy


def test_a_dense_call_never_costs_more_per_row_as_rows_grow() -> None:
    # Every shipped dense curve (m_tile 1): time(M) / M non-increasing from M = 1 to 8192 for a 4096 x
    # 4096 and a 28672 x 8192 weight. mem / M = N K b / M + K a + 2 N falls, comp / M = 2 N K / (eta_c f(M)
    # peak) does not rise once f never falls, and ((mem/M)^p + (comp/M)^p)^(1/p) follows its terms.
    from quantadvise import catalog
    from quantadvise.catalog.profiles import measured_profile

    moe_ids = {k.id for e, v in (("vllm", "0.33.0"), ("sglang", "0.5.23"))
               if (t := catalog.kernel_table(e, v)) is not None for k in t.moe_kernels}
    checked = 0
    for g in ("h100-sxm", "h200", "a100-80gb", "l40s", "b200"):
        prof = measured_profile(g)
        assert prof is not None
        gpu = catalog.get_gpu(g)
        for curve in prof.gpus[0].kernels.values():
            if curve.kernel in moe_ids or curve.m_tile > 1 or curve.basis == "proxy" and curve.proxy_of is None:
                continue
            peak = gpu.peak(curve.math)
            if peak is None:
                continue
            for n, k in ((4096, 4096), (28672, 8192)):
                per_row = [curve.time(m, n, k, 0.5625, gpu.bandwidth_bytes_per_s, peak) / m for m in range(1, 8193)]
                assert all(b <= a * (1 + 1e-12) for a, b in zip(per_row, per_row[1:], strict=False)), (g, curve.key, n, k)
            checked += 1
    assert checked >= 50


def test_a_copy_with_other_efficiencies_does_not_read_the_originals_cached_tables() -> None:
    # calibration/aiconfigurator.py builds a composed curve as blas.model_copy(update={"memory_efficiency": ...}):
    # the copy must price with its own table even when the original was already evaluated (its log tables and
    # per-shape efficiencies cached). Halving every streaming efficiency doubles the memory time of a call that
    # is memory-bound: M = 1 row of a 4096 x 4096 bf16 weight (2 B each) on 3.35 TB/s, 989 TFLOP/s.
    from quantadvise.catalog.profiles import measured_profile

    curve = next(c for c in measured_profile("h100-sxm").gpus[0].kernels.values() if c.key == "vllm/cublas-bf16")
    before = curve.efficiencies(1.0, 4096, 4096)  # fills the caches
    half = tuple(tuple(v / 2 for v in row) for row in curve.memory_efficiency)
    copy = curve.model_copy(update={"memory_efficiency": half})
    em, ec = copy.efficiencies(1.0, 4096, 4096)
    assert em == pytest.approx(before[0] / 2, rel=1e-9) and ec == pytest.approx(before[1], rel=1e-9)
    assert curve.efficiencies(1.0, 4096, 4096) == before  # the original keeps its own


def test_a_step_model_keeps_its_answers_and_a_kv_copy_does_not_share_them() -> None:
    # perf.memo: decode / prefill / parts / ridge_batch are kept per model (the model is immutable); with_kv's
    # copy prices another KV dtype, so it must not read the original's kept steps. An fp8 KV cache holds a
    # cached token in half the bytes of bf16, so at a long context the fp8 copy's decode step is cheaper.
    from quantadvise import catalog
    from quantadvise.catalog.resolve import get_gpu, load_model, load_profiles, resolve_scheme
    from quantadvise.perf.efficiency import resolve
    from quantadvise.perf.step import StepModel

    g = get_gpu("h100-sxm")
    eff = resolve(load_profiles(True, None, g), (g.id,), ("bf16",))
    sm = StepModel(load_model("meta-llama/Llama-3.1-8B")[0], resolve_scheme("bf16"), g, efficiency=eff)
    first = sm.decode(64, 8192)
    assert sm.decode(64, 8192) is first  # kept
    fp8 = sm.with_kv(catalog.get_kv("kv-fp8"))
    cheaper = fp8.decode(64, 8192)
    assert cheaper is not first and cheaper.time_s < first.time_s
    assert sm.decode(64, 8192) is first  # the original keeps its own
