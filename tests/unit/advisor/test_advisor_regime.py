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
    r = api.recommend(**LLAMA70)
    roof = _roof(r)
    n = roof.numbers
    w = r.workload
    rl = api.roofline(w.model, "w4a16,w4a8-fp8", gpu="h100", batches=[8], ctx=1920, kv_dtype=r.kv.dtype)
    ridge = rl.ridge_batch["w4a16"]
    up = [c.batch for c in rl.crossovers if c.faster_above == "w4a8-fp8"]
    assert ridge is not None and up, (ridge, rl.crossovers)
    assert n["crossover"]["a"] == "w4a16" and n["crossover"]["b"] == "w4a8-fp8"
    assert any(n["crossover"]["batch"] == pytest.approx(x, abs=0.1) for x in up), (n["crossover"], up)
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
    assert f"w4a16 {steps['w4a16'] * 1e3:.2f} ms" in text and f"w4a8-fp8 {steps['w4a8-fp8'] * 1e3:.2f} ms" in text


def test_past_the_ridge_and_the_crossover_is_compute_bound():
    # Llama-3-8B at batch 128 on an H100: past w4a16's ridge (roofline: B = 43.0) and past the crossing where
    # w4a8-fp8 becomes the faster one (roofline: "w4a16 -> w4a8-fp8 at B = 38.6")
    r = api.recommend(model="meta-llama/Meta-Llama-3-8B", gpu="h100", batch=128, mode="continuous")
    n = _roof(r).numbers
    assert n["crossover"]["batch"] is not None and n["weight_only_ridge_batch"] is not None
    assert 128 > n["crossover"]["batch"] and 128 >= n["weight_only_ridge_batch"]
    assert n["regime"] == "compute-bound"
