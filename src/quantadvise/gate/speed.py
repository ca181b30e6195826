"""QA2xx: performance at the deployed concurrency, against bf16 and the recommended scheme.

A comparison is only made against an alternative the deployment could run instead: bf16 weights
that leave the engine a KV cache on the deployment's GPUs (DeepSeek-V3's 1.3 TB of bf16 weights do
not fit 8 x H200: its FP8 release is the only way to serve it there), and a recommendation that
fits and that the engine accepts on the GPU (``recommend``'s fit and engine nodes). A deployment
that serves the checkpoint as shipped is only pointed at a re-quantization that is predicted faster
by more than the speed model's validated error (defaults.NATIVE_MARGIN), as ``recommend`` ranks it.
"""

from __future__ import annotations

from .. import defaults
from ..wording import plural
from .findings import Findings, Site
from .result import MemoryFit, PerfCheck


def bf16_unservable(perf: PerfCheck, mem: MemoryFit | None) -> str | None:
    """Why bf16 weights cannot be served on the deployment's GPUs (None: they can, or it is not known):
    per GPU they fill the memory the engine gives weights and KV cache (the same start-up arithmetic as
    QA301), else ``recommend`` found they leave no room for one sequence."""
    if perf.bf16_weights_bytes is not None and mem is not None and mem.gpus > 0 \
            and perf.bf16_weights_bytes >= mem.budget_bytes:
        gib = defaults.GiB
        return (f"bf16 weights ({perf.bf16_weights_bytes / mem.gpus / gib:,.2f} GiB per GPU) do not fit the "
                f"{mem.budget_bytes / mem.gpus / gib:,.2f} GiB per GPU the engine gives weights and KV cache on "
                f"{mem.gpus} x {mem.gpu}: the model cannot be served unquantized here")
    if perf.bf16_does_not_fit:
        return "bf16 weights leave no room for one sequence on these GPUs (`quantadvise recommend`): the model " \
               "cannot be served unquantized here"
    return None


UNMEASURED = ("roofline", "ideal")  # speed models with no measurement of the deployed scheme's kernel


def performance_findings(out: Findings, site: Site, perf: PerfCheck, *, max_slowdown: float | None,
                         mem: MemoryFit | None = None, shipped: bool = False) -> list[str]:
    """QA201 / QA202 / QA205 on one deployment; returns notes for the report (a comparison not made, and why).
    ``shipped``: the deployment serves a quantized checkpoint as its publisher ships it."""
    notes: list[str] = []
    where = site.at("quantization", "model")
    out.ran_rules("QA205")
    if perf.moe_tiles:
        out.add("QA205", perf.moe_tiles, subject=f"{site.key}|default-moe-tiles", file=where[0], line=where[1],
                target=site.label)
    note = perf.model_note
    seqs = plural(perf.batch, "concurrent sequence")
    unservable = perf.bf16_unservable or bf16_unservable(perf, mem)
    if unservable is not None:
        out.skip("QA201", f"no bf16 alternative: {unservable}")
        notes.append(f"no bf16 comparison (QA201): {unservable}")
    else:
        out.ran_rules("QA201")
        if perf.speedup_vs_bf16 < 1 - defaults.TIE:  # a near-tie with bf16 is not slower (the advisor's tie)
            # no measurement of the deployed scheme's kernel (the roofline with the default profile, or the spec
            # sheet): not evidence enough to fail a deployment, so a warning that says so
            unmeasured = perf.speed_model in UNMEASURED
            out.add("QA201", f"{perf.scheme} is predicted at {perf.tokens_per_s:,.0f} tokens/s vs "
                    f"{perf.bf16_tokens_per_s:,.0f} for bf16 weights ({perf.speedup_vs_bf16:.2f}x) at {seqs}, "
                    f"KV {perf.kv_dtype}, {perf.mode} batching ({note})"
                    + (f"; {perf.recommended} is the recommended scheme here" if perf.recommended else "")
                    + ("; a warning, not an error: no measured table prices this scheme's kernel on this engine "
                       "and GPU (`calibrate` or `validate --bench` on the deployment would measure it)"
                       if unmeasured else ""),
                    subject=f"{site.key}|slower-than-bf16", file=where[0], line=where[1], target=site.label,
                    severity="warning" if unmeasured else None)
    if max_slowdown is None:
        out.skip("QA202", "thresholds.max_slowdown_vs_recommended is off")
        return notes
    if perf.slowdown_vs_recommended is None or perf.recommended is None:
        out.skip("QA202", "no recommendation for this workload")
        return notes
    if perf.recommended_fits is False:
        out.skip("QA202", f"the recommended {perf.recommended} does not hold the workload")
        return notes
    out.ran_rules("QA202")
    requantizes = shipped and not perf.recommended_native
    # the checkpoint as shipped is displaced only by more than the speed model's validated error
    limit = max(max_slowdown, defaults.NATIVE_MARGIN) if requantizes else max_slowdown
    if perf.slowdown_vs_recommended > limit + 1e-12:
        shipped_note = (f"; the deployment serves the checkpoint as shipped (no calibration, the publisher's "
                        f"accuracy): {perf.recommended} re-quantizes its dequantized weights and needs its own "
                        "accuracy evidence" if requantizes else "")
        out.add("QA202", f"{perf.scheme} ({perf.kv_dtype}) is predicted {perf.slowdown_vs_recommended + 1:.2f}x "
                f"slower than the recommended {perf.recommended} ({perf.recommended_kv_dtype}): "
                f"{perf.tokens_per_s:,.0f} vs {perf.recommended_tokens_per_s:,.0f} tokens/s at {seqs} "
                f"(limit {limit:.0%} slower; {note}; `quantadvise recommend` shows the tree){shipped_note}",
                subject=f"{site.key}|slower-than-recommended", file=where[0], line=where[1], target=site.label)
    return notes
