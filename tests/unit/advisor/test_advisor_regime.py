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
from quantadvise import defaults

LLAMA70 = dict(model="meta-llama/Llama-3.1-70B", gpu="h100", batch=8)


def _roof(rec):
    return next(t for t in rec.trace if t.node == "roofline")


def test_memory_bound_step_is_called_memory_bound_and_the_prefill_decides():
    r = api.recommend(**LLAMA70)
    roof = _roof(r)
    n = roof.numbers
    w = r.workload
    # the same pair at the decode context a step is priced at (1,792 + 256 / 2 = 1,920 tokens), as roofline
    # prices it: its ridge and the crossing where w4a8-fp8 becomes the faster one
    rl = api.roofline(w.model, "w4a16,w4a8-fp8", gpu="h100", batches=[8], ctx=1920, kv_dtype=r.kv.dtype)
    ridge = rl.ridge_batch["w4a16"]
    up = [c.batch for c in rl.crossovers if c.faster_above == "w4a8-fp8"]
    assert ridge is not None and up, (ridge, rl.crossovers)
    assert 8 < min(up) < ridge  # batch 8 is below both: a memory-bound step
    assert n["crossover"]["a"] == "w4a16" and n["crossover"]["b"] == "w4a8-fp8"
    assert n["crossover"]["batch"] == pytest.approx(min(up), abs=0.1)
    assert n["weight_only_ridge_batch"] == pytest.approx(ridge, abs=0.1)
    assert n["regime"] == "memory-bound"
    assert roof.decision.startswith("linears memory-bound")
    text = " ".join([roof.decision, *roof.reasons])
    assert "compute-bound, so the faster tensor-core path wins" not in text
    # the roofline point at batch 8 is memory-bound too
    pts = {p.scheme: p for p in rl.points if p.batch == 8}
    assert pts["w4a16"].bound == "memory"
    # the decode steps tie (within defaults.TIE), so the reason names the prefill, with both candidates' figures
    steps = n["decode_step_s_at_batch"]
    assert abs(steps["w4a16"] - steps["w4a8-fp8"]) <= defaults.TIE * max(steps.values())
    assert r.scheme.id == "w4a8-fp8"
    why = next(x for x in roof.reasons if x.startswith("but "))
    assert "the prefill decides" in why and "decode steps tie" in why
    a, b = (next(x for x in r.alternatives if x.scheme == s) for s in ("w4a8-fp8", "w4a16"))
    assert a.prefill_share is not None and b.prefill_share is not None and a.prefill_share < b.prefill_share
    assert f"{a.prefill_share:.0%} of w4a8-fp8's GPU time against {b.prefill_share:.0%} of w4a16's" in why


def test_past_the_ridge_and_the_crossover_is_compute_bound():
    # Llama-3-8B at batch 128 on an H100: past w4a16's ridge (roofline: B = 43.0) and past the crossing where
    # w4a8-fp8 becomes the faster one (roofline: "w4a16 -> w4a8-fp8 at B = 38.6")
    r = api.recommend(model="meta-llama/Meta-Llama-3-8B", gpu="h100", batch=128, mode="continuous")
    n = _roof(r).numbers
    assert n["crossover"]["batch"] is not None and n["weight_only_ridge_batch"] is not None
    assert 128 > n["crossover"]["batch"] and 128 >= n["weight_only_ridge_batch"]
    assert n["regime"] == "compute-bound"
