"""The roofline's per-call launch floor (perf.profiles.CallFloor, data/perf_profile.yaml ``call_floor_s``).

Before 2026-12-08 a GPU with no published tables (RTX A6000, A10G, L4, ...) priced every GEMM call as
``max(bytes / bandwidth, FLOPs / peak)`` alone: a 4-bit call streams a quarter of a 16-bit one's bytes, so the
roofline called W4A16 up to ~3x faster than bf16 at batch 1 where vLLM's published runs on an RTX A6000 show
2.3-2.6x (Red Hat's model cards, data/validation/e2e_points.yaml, source S8): the speed-up pairs there came
out 16.7% too large in the median. Every call also pays a launch floor (launch, ramp, tail) the tables time.
"""

from __future__ import annotations

import statistics

import pytest

from quantadvise import catalog
from quantadvise.catalog import lookup_tables
from quantadvise.perf.kernel_step import calls_per_pass
from quantadvise.perf.ops import LinearOp
from quantadvise.perf.profiles import parse_profile

LLAMA = "meta-llama/Llama-3.1-8B"
NO_FLOOR = {"id": "nofloor", "source": "test", "as_of": "2026-12-08",
            "defaults": {"call_floor_s": {"bf16": 0.0, "quantized": 0.0, "attention": 0.0, "moe": 0.0, "quant": 0.0}}}
NO_QUANT = {"id": "noquant", "source": "test", "as_of": "2026-12-08", "defaults": {"call_floor_s": {"quant": 0.0}}}


def _floors_of_tables() -> tuple[list[float], list[float]]:
    """Each shipped GEMM table's launch floor (its smallest shape's first call), 16-bit weights and the rest."""
    b: list[float] = []
    q: list[float] = []
    for g in lookup_tables.kernel_table_gpus():
        tabs = lookup_tables.kernel_tables(g)
        assert tabs is not None
        for meta in tabs.index.tables:
            t = tabs.get(meta.id)
            assert t is not None
            (b if meta.weight_bytes >= 2 else q).append(t.floor_s)
    return b, q


def test_the_shipped_floors_are_the_median_launch_floor_of_the_published_tables():
    # recomputed here from the tables on file (not read from the profile): the median over 8 GPUs' GEMM tables
    b, q = _floors_of_tables()
    assert len(b) >= 16 and len(q) >= 40
    floor = catalog.default_perf_profile().defaults.call_floor_s
    assert floor is not None
    assert floor.bf16 == pytest.approx(statistics.median(b), rel=5e-3)  # written to 3 significant digits
    assert floor.quantized == pytest.approx(statistics.median(q), rel=5e-3)
    # a quantized call (scales read, weights unpacked or activations quantized) costs more than a 16-bit one
    assert floor.quantized > 2 * floor.bf16


def _step(gpu: str, scheme: str, *, floor: bool, batch: int = 1, ctx: int = 0, without: dict | None = None,
          engine: str = "vllm") -> float:
    import quantadvise as api

    profile = None if floor else parse_profile(without or NO_FLOOR)
    rep = api.roofline(LLAMA, scheme, gpu=gpu, batches=str(batch), ctx=ctx, engine=engine,
                       **({"profile": profile} if profile is not None else {}))
    return rep.points[0].step_time_s


def test_a_roofline_priced_call_pays_the_floor_once_per_fused_call():
    # RTX A6000 (no tables): Llama-3.1-8B runs 32 layers x 4 GEMM calls (q/k/v fused, o, gate/up fused, down)
    # + the lm_head. bf16: 129 calls x 2.14 us = 276.06 us. w4a16: 128 quantized calls x 5.75 us + the lm_head,
    # kept in 16 bits, x 2.14 us = 738.14 us. Both: 32 decode-attention layers x 11.9 us = 380.8 us, where the
    # attention's roofline at ctx 0 (no KV to read) is nothing.
    attn = 32 * 11.9e-6
    assert _step("rtx-a6000", "bf16", floor=True) - _step("rtx-a6000", "bf16", floor=False) == pytest.approx(
        129 * 2.14e-6 + attn, rel=1e-9)
    assert _step("rtx-a6000", "w4a16", floor=True) - _step("rtx-a6000", "w4a16", floor=False) == pytest.approx(
        128 * 5.75e-6 + 2.14e-6 + attn, rel=1e-9)


def test_the_attention_floor_is_the_median_of_the_published_attention_tables():
    # recomputed from the tables on file: every GPU's vLLM and SGLang decode-attention table, its launch floor
    floors = [a.floor_s for g in lookup_tables.kernel_table_gpus()
              for tabs in (lookup_tables.kernel_tables(g),) if tabs is not None
              for e in ("vllm", "sglang") if (a := tabs.attention(e)) is not None]
    assert len(floors) >= 16
    floor = catalog.default_perf_profile().defaults.call_floor_s
    assert floor is not None and floor.attention == pytest.approx(statistics.median(floors), rel=5e-3)


def test_the_moe_floor_is_the_median_of_the_published_fused_moe_tables():
    floors = [t.floor_s for g in lookup_tables.kernel_table_gpus()
              for tabs in (lookup_tables.kernel_tables(g),) if tabs is not None
              for meta in tabs.index.moe if (t := tabs.moe(meta.id)) is not None]
    assert len(floors) >= 60
    floor = catalog.default_perf_profile().defaults.call_floor_s
    assert floor is not None and floor.moe == pytest.approx(statistics.median(floors), rel=5e-3)


def test_a_layer_of_routed_experts_pays_one_fused_moe_floor():
    # Qwen3-30B-A3B on an L4 (no tables), bf16, ctx 0: 48 layers, each q/k/v (one fused call), o, the router
    # (16-bit GEMMs: 3 x 2.14 us) and one fused-MoE call for its 128 experts (20.0 us), + the lm_head (2.14 us),
    # and 48 attention layers at 11.9 us each (no KV at ctx 0)
    import quantadvise as api

    def step(floor: bool) -> float:
        kw = {} if floor else {"profile": parse_profile(NO_FLOOR)}
        return api.roofline("Qwen/Qwen3-30B-A3B", "bf16", gpu="l4", batches="1", ctx=0, engine="vllm",
                            **kw).points[0].step_time_s

    assert step(True) - step(False) == pytest.approx(48 * (3 * 2.14e-6 + 20.0e-6 + 11.9e-6) + 2.14e-6, rel=1e-9)


def test_the_attention_floor_is_a_floor_not_a_surcharge():
    # a long context's KV read outweighs the launch floor: the step is the roofline's, unchanged. bf16 KV of
    # Llama-3.1-8B: 8 KV heads x 128 x 2 (K, V) x 2 B = 4,096 B a token-layer; 8 sequences x 8,192 tokens x 32
    # layers x 4,096 B = 8.6 GB at 80% of 768 GB/s = 14 ms, far above 32 x 11.9 us
    long = _step("rtx-a6000", "bf16", floor=True, batch=8, ctx=8192)
    flat = _step("rtx-a6000", "bf16", floor=False, batch=8, ctx=8192)
    assert long - flat == pytest.approx(129 * 2.14e-6, rel=1e-6)


def test_a_table_priced_call_carries_its_own_floor():
    # H100 SXM prices bf16 by vLLM's published cuBLAS table, whose cells hold their own launch cost: no second floor
    assert _step("h100-sxm", "bf16", floor=True) == pytest.approx(_step("h100-sxm", "bf16", floor=False), rel=1e-12)


def test_amd_gpus_carry_no_nvidia_floor():
    # the floors were measured on NVIDIA's launch path; no ROCm table is on file (data/perf_profile.yaml)
    assert _step("mi300x", "bf16", floor=True) == pytest.approx(_step("mi300x", "bf16", floor=False), rel=1e-12)


def test_routed_experts_are_one_fused_call_per_layer():
    # 2 layers x 8 experts of gate, up and down (count = layers x experts): one fused-MoE call per layer in all,
    # shared by the three in proportion to their weights; a dense q/k/v fuses into one call per layer
    def op(role: str, n: float, k: float, count: int, experts: int = 0) -> LinearOp:
        return LinearOp(name=role, component="moe" if experts else "attention", decoder=True, quantized=True,
                        bytes=1.0, elements=1.0, flops_per_token=1.0, math="bf16", dequant=False, experts=experts,
                        top_k=2 if experts else 0, n=n, k=k, count=count, role=role)

    ops = [op("gate", 1024, 512, 16, 8), op("up", 1024, 512, 16, 8), op("down", 512, 1024, 16, 8),
           op("q", 512, 512, 2), op("k", 128, 512, 2), op("v", 128, 512, 2), op("o", 512, 512, 2)]
    calls = calls_per_pass(ops)
    assert sum(calls[:3]) == pytest.approx(2.0)  # 2 layers, one call each
    assert calls[0] == pytest.approx(2 * 1024 * 512 / (3 * 1024 * 512))  # gate's share: a third of the weights
    assert sum(calls[3:6]) == pytest.approx(2.0) and calls[3] == pytest.approx(2 * 512 / 768)  # q/k/v: one call
    assert calls[6] == pytest.approx(2.0)  # o alone


def test_the_roofline_band_is_measured_with_the_floor():
    # the roofline's held-out check against the published tables prices the floor it ships with: a tiny shape at
    # M = 1 is launch-bound, so the check with the floor misses by less than without (calibration.lookup_checks)
    from quantadvise.calibration.lookup_checks import roofline_steps

    tabs = lookup_tables.kernel_tables("h100-sxm")
    assert tabs is not None
    t = tabs.get("vllm/cublas-bf16")
    assert t is not None
    gpu = catalog.get_gpu("h100-sxm")
    with_floor = statistics.median(roofline_steps(t, gpu, 0.8, 0.7, 2.14e-6))
    without = statistics.median(roofline_steps(t, gpu, 0.8, 0.7))
    assert with_floor < without
    bands = lookup_tables.uncertainty_bands("h100-sxm")
    recorded = catalog.kernel_table_checks("h100-sxm")
    assert recorded is not None and bands["roofline"] == recorded["bands"]["roofline"]["p68"]


def test_published_a6000_speedups_are_within_their_band():
    # Red Hat's vLLM 0.7.2 runs on an RTX A6000 (S8: w4a16 and w8a8 against bf16, Llama-3.1-8B and Qwen2.5-7B
    # distills, 7 workloads each): the predicted speed-up of each pair against the measured one. Roofline
    # without the floors: median |error| 16.7%; with the GEMM floors 10.7%, the attention's 9.4%, and the separate
    # activation quantization's 8.7% (docs/calibration.md §11). W8A8 against bf16 alone: 13.0% before the
    # quantization's floor and bytes, 10.7% with them.
    from quantadvise.api.e2e import validate_e2e

    rep = validate_e2e()
    gpu_of = {p.id: p.gpu for p in rep.points}
    a6000 = [s for s in rep.speedups if gpu_of[s.ids[0]] == "rtx-a6000"]
    errs = [abs(s.error) for s in a6000]
    assert len(errs) >= 40
    assert statistics.median(errs) <= 0.10
    int8 = [abs(s.error) for s in a6000 if set(s.schemes) == {"bf16", "w8a8-int8"}]
    assert len(int8) >= 14 and statistics.median(int8) <= 0.12


def test_the_quant_floor_is_the_median_of_the_engines_quantization_tables():
    # recomputed from the tables on file: the engines' own activation-quantization kernels (vLLM's per-token and
    # static quantization, 7 GPUs); TRT-LLM's per-tensor quantization (8.4-10.4 us) is a kernel neither engine runs
    floors = [t.floor_s for g in lookup_tables.kernel_table_gpus()
              for tabs in (lookup_tables.kernel_tables(g),) if tabs is not None
              for meta in tabs.index.quant if meta.engine != "trtllm" and (t := tabs.get(meta.id)) is not None]
    assert len(floors) >= 14
    floor = catalog.default_perf_profile().defaults.call_floor_s
    assert floor is not None and floor.quant == pytest.approx(statistics.median(floors), rel=5e-3)


def test_an_unfused_activation_quantization_pays_its_floor_and_its_bytes():
    # vLLM's CUTLASS int8 W8A8 on an RTX A6000 quantizes each GEMM's input in a kernel of its own (data/kernels/:
    # activation_quant: unfused, per-token-quant). Llama-3.1-8B: 32 layers x 4 inputs (q/k/v share one, o, gate/up
    # share one, down) = 128 quantization calls x 2.19 us, at any batch
    for batch in (1, 16):
        assert _step("rtx-a6000", "w8a8-int8", floor=True, batch=batch) - _step(
            "rtx-a6000", "w8a8-int8", floor=False, batch=batch, without=NO_QUANT) == pytest.approx(128 * 2.19e-6,
                                                                                                 rel=1e-9)
    # and each reads its input in 16 bits and writes it in 8: 3 B x (4,096 + 4,096 + 4,096 + 14,336) x 32 layers
    # = 2,555,904 B of activation traffic a token beyond bf16's (its residual stream and logits are the same)
    import quantadvise as api

    def activations(scheme: str, batch: int) -> float:
        return api.roofline(LLAMA, scheme, gpu="rtx-a6000", batches=str(batch), ctx=0,
                            engine="vllm").points[0].bytes.activations

    for batch in (1, 16):
        assert activations("w8a8-int8", batch) - activations("bf16", batch) == pytest.approx(batch * 2_555_904)
    assert activations("w4a16", 16) == pytest.approx(activations("bf16", 16))  # Marlin quantizes nothing


@pytest.mark.parametrize(("gpu", "scheme", "engine"), [
    ("rtx-a6000", "w4a16", "vllm"),  # Marlin: weight-only, no activation quantization
    ("l4", "fp8-dynamic", "vllm"),  # vLLM's CUTLASS fp8 on sm89: the quantization fused into the producer
    ("h100-sxm", "w8a8-int8", "vllm"),  # priced by a published table, which carries its own quantization
])
def test_no_separate_quantization_no_quant_floor(gpu: str, scheme: str, engine: str):
    assert _step(gpu, scheme, floor=True, engine=engine) == pytest.approx(
        _step(gpu, scheme, floor=False, without=NO_QUANT, engine=engine), rel=1e-12)


def test_a_profile_that_gives_one_floor_keeps_the_others():
    # a user layer with only `quantized` (10 us): bf16's floor falls through to the shipped 2.14 us, so bf16's step is
    # unchanged and w4a16's grows by its 128 quantized calls x (10 - 5.75) us = 544 us (Llama-3.1-8B on an A6000)
    import quantadvise as api

    mine = parse_profile({"id": "q", "source": "test", "as_of": "2026-12-08",
                          "defaults": {"call_floor_s": {"quantized": 1.0e-5}}})

    def step(scheme: str, profile=None) -> float:
        kw = {} if profile is None else {"profile": profile}
        return api.roofline(LLAMA, scheme, gpu="rtx-a6000", batches="1", ctx=0, engine="vllm",
                            **kw).points[0].step_time_s

    assert step("bf16", mine) == pytest.approx(step("bf16"), rel=1e-12)
    assert step("w4a16", mine) - step("w4a16") == pytest.approx(128 * (1.0e-5 - 5.75e-6), rel=1e-9)
