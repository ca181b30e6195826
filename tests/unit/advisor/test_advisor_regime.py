"""The roofline node's regime follows the numbers it prints (audit rec #4).

`recommend -m meta-llama/Llama-3.1-70B --gpu h100 -b 8` used to say "linears compute-bound ... batch 8 is
past the w4a16 / w4a8-fp8 crossover (7) -> W+A on fp8", while `roofline` for the same pair says batch 8 is
memory-bound (w4a16's ridge at B = 42.5) and that the crossing at B = 6.8 runs the other way
("w4a8-fp8 -> w4a16": w4a16 is the faster one above it); w4a8-fp8 only overtakes at B = 35.6. Its decode
step ties with w4a16's at batch 8 (16.22 vs 16.21 ms): w4a8-fp8 wins on the prefill (fp8 tensor cores).
Expected figures here are relations to `roofline`'s own output for the same pair, not copies.
"""

from __future__ import annotations

import pytest

import quantadvise as api

# the audit's case at its memory share, vLLM 0.33.0's default 0.92 (given): at vLLM 0.34.0's default share fp8-block
# holds the 8 sequences too, and the node weighs w4a16 against it rather than against w4a8-fp8
LLAMA70 = dict(model="meta-llama/Llama-3.1-70B", gpu="h100", batch=8, memory_utilization=0.92)


def _roof(rec):
    return next(t for t in rec.trace if t.node == "roofline")


def test_the_regime_follows_the_ridge_and_the_crossover_roofline_prints():
    # Issue 25: the lookup tables price w4a16 on TRT-LLM's int4 weight-only table (its M grid 1, 2, 4, 8, 16 ...)
    # and w4a8-fp8 composed from vLLM's CUTLASS fp8 table (M = 1 .. 17, 32, 33 ...): the decode steps cross
    # several times where one table steps and the other does not. The node's crossover is a crossing roofline
    # prints after which w4a8-fp8 is the faster one (its search grid is coarser than roofline's and may step
    # over a blip of a few tenths of a sequence); the regime label follows the two numbers.
    # The pair is the node's best weight-only 4-bit candidate and its best W+A one, read back from the node: on
    # Hopper, vLLM's Humming (NVFP4 weight-only) and Machete (w4a16) carry different weight-stream factors
    # (data/kernel_tables/stream_factors.yaml), so either can be the faster weight-only scheme.
    r = api.recommend(**LLAMA70)
    roof = _roof(r)
    n = roof.numbers
    w = r.workload
    wo, wa = n["crossover"]["a"], n["crossover"]["b"]
    assert wa == "w4a8-fp8" or wa.startswith("fp8")
    rl = api.roofline(w.model, f"{wo},{wa}", gpu="h100", batches=[1, 8], ctx=1920, kv_dtype=r.kv.dtype)
    ridge = rl.ridge_batch[wo]
    up = [c.batch for c in rl.crossovers if c.faster_above == wa]
    at1 = {p.scheme: p.step_time_s for p in rl.points if p.batch == 1}
    assert ridge is not None, rl.crossovers
    if at1[wa] < at1[wo]:  # the W+A step is the faster one from batch 1 on: the node says 1
        assert n["crossover"]["batch"] == 1.0
    else:
        assert up and any(n["crossover"]["batch"] == pytest.approx(x, abs=0.1) for x in up), (n["crossover"], up)
    assert n["weight_only_ridge_batch"] == pytest.approx(ridge, abs=0.1)
    cross, b = n["crossover"]["batch"], 8
    want = ("memory-bound" if b < ridge and b < cross else
            "compute-bound" if b > cross and b >= ridge else "in between")
    assert n["regime"] == want
    text = " ".join([roof.decision, *roof.reasons])
    if want != "compute-bound":
        assert "compute-bound, so the faster tensor-core path wins" not in text
    # the reason quotes both decode steps at the batch, as the node's numbers hold them
    steps = n["decode_step_s_at_batch"]
    assert f"{wo} {steps[wo] * 1e3:.2f} ms" in text and f"{wa} {steps[wa] * 1e3:.2f} ms" in text


def test_past_the_ridge_and_the_crossover_is_compute_bound():
    # Llama-3-8B at batch 128 on an H100: past w4a16's ridge (roofline: B = 43.0) and past the crossing where
    # w4a8-fp8 becomes the faster one (roofline: "w4a16 -> w4a8-fp8 at B = 38.6")
    r = api.recommend(model="meta-llama/Meta-Llama-3-8B", gpu="h100", batch=128, mode="continuous")
    n = _roof(r).numbers
    assert n["crossover"]["batch"] is not None and n["weight_only_ridge_batch"] is not None
    assert 128 > n["crossover"]["batch"] and 128 >= n["weight_only_ridge_batch"]
    assert n["regime"] == "compute-bound"


class _Steps:
    """A decode-step curve: seconds at each batch (a stand-in for a StepModel; hashable by identity)."""

    def __init__(self, fn):
        self.fn = fn

    def decode_time(self, b, ct):
        return self.fn(b)


def test_the_crossover_is_1_when_the_w_plus_a_step_is_faster_from_the_first_batch():
    # W+A faster from batch 1 to ~600, weight-only faster from ~600 to ~800, W+A again past it (a table's tile
    # steps): the batch from which W+A is the faster one is 1, not the later crossing back (~800)
    from quantadvise.advisor.speed import _crossover

    wa = _Steps(lambda b: 1.0 + 0.01 * b)
    wo = _Steps(lambda b: 1.05 + 0.01 * b - (0.2 if 600 <= b <= 800 else 0.0))
    assert _crossover(wo, wa, 0.0) == 1.0
    # weight-only faster at first (1.0 + 0.02 b against W+A's 1.5 + 0.01 b), W+A from 0.5 / 0.01 = batch 50 on
    assert _crossover(_Steps(lambda b: 1.0 + 0.02 * b), _Steps(lambda b: 1.5 + 0.01 * b), 0.0) == pytest.approx(50, rel=1e-3)
    # W+A never the faster one up to 4,096
    assert _crossover(_Steps(lambda b: 1.0 + 0.01 * b), _Steps(lambda b: 2.0 + 0.02 * b), 0.0) is None
