"""The "Predicted ..." note and the speed assumption say what priced each candidate (audit rec #11).

The roofline node prints, per ranked candidate, the kernel and its curve: "measured curve
vllm/cutlass-fp8", "composed curve (sglang/marlin-moe)", "proxy curve (sglang/deepgemm-fp8-block)"
(perf.efficiency.KernelPricing.label). The note under the prediction used to say "prediction from the
measured curve of the kernel each linear layer runs" whatever those lines said. The expectations here
are relations to the trace's own per-candidate lines.
"""

from __future__ import annotations

import re

import quantadvise as api

OLD = "prediction from the measured table of the kernel each linear layer runs"  # the all-measured note


def _groups(note: str) -> dict[str, set[str]]:
    """basis word -> schemes the note lists after it ("composed curve (...) for a, b; proxy ...")."""
    out: dict[str, set[str]] = {}
    for part in note.split(": ", 1)[1].split("; "):
        m = re.match(r"(measured|same-math|composed|proxy|roofline)\b.* for (.+)$", part)
        if m:
            out[m.group(1)] = {x.strip() for x in m.group(2).split(",")}
    return out


def test_the_prediction_note_names_each_curve_basis():
    r = api.recommend(batch=64)
    roof = next(t for t in r.trace if t.node == "roofline")
    # scheme -> "... ; measured table X" / "same-math table X" / "composed from table X" (issue 25: the published
    # tables by lookup) / "composed curve (X)" / "proxy curve (X)"
    kernel = roof.numbers["kernel"]
    basis = {sid: next(b for b in ("measured", "same-math", "composed", "proxy") if re.search(rf"{b} (curve|table|from)",
                                                                                             line))
             for sid, line in kernel.items() if line}
    assert {"composed", "same-math"} & set(basis.values())  # this workload has stand-ins
    note = r.performance.model_note
    assert OLD not in note and "not a measurement of this deployment" in note
    groups = _groups(note)
    for sid, b in basis.items():
        assert sid in groups.get(b, set()), (sid, b, note)
    # the recommended scheme's own curve is among them
    assert r.scheme.id in groups[basis[r.scheme.id]]
    # the speed assumption no longer calls every candidate's curve measured
    speed = next(a for a in r.assumptions if a.startswith("speed:"))
    assert "measured kernel curves" not in speed
    assert re.search(r"composed[^;]* for [^;]*" + re.escape(r.scheme.id), speed) or basis[r.scheme.id] != "composed"
    # speed_model tells them apart, per scheme (issue 25)
    assert roof.numbers["speed_model"] == basis
    assert r.performance.speed_model == basis[r.scheme.id]


def test_all_measured_keeps_the_measured_note():
    # fp8-dynamic and bf16 both run kernels with a measured table (vllm/cutlass-fp8, vllm/cublas-bf16)
    r = api.recommend(batch=64, candidates=["fp8-dynamic"])
    roof = next(t for t in r.trace if t.node == "roofline")
    assert all("measured table" in line for line in roof.numbers["kernel"].values())
    assert OLD in r.performance.model_note


def test_a_candidate_without_a_kernel_curve_is_named_as_roofline():
    # gpt-oss-120b: w4a8-fp8-g64 has no kernel on file (the trace prints no kernel line for it)
    r = api.recommend(model="openai/gpt-oss-120b", gpu="h200")
    roof = next(t for t in r.trace if t.node == "roofline")
    none = [sid for sid, line in roof.numbers["kernel"].items()
            if not line or ("curve" not in line and "table" not in line)]
    note = r.performance.model_note
    if none:
        assert set(none) <= _groups(note).get("roofline", set()), (none, note)
