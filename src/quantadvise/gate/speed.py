"""QA2xx: performance at the deployed concurrency, against bf16 and the recommended scheme."""

from __future__ import annotations

from .. import defaults
from .findings import Findings, Site
from .result import PerfCheck


def performance_findings(out: Findings, site: Site, perf: PerfCheck, *, max_slowdown: float | None) -> None:
    out.ran_rules("QA201")
    where = site.at("quantization", "model")
    note = perf.model_note
    if perf.speedup_vs_bf16 < 1 - defaults.TIE:  # a near-tie with bf16 is not slower (the advisor's tie)
        out.add("QA201", f"{perf.scheme} is predicted at {perf.tokens_per_s:,.0f} tokens/s vs "
                f"{perf.bf16_tokens_per_s:,.0f} for bf16 weights ({perf.speedup_vs_bf16:.2f}x) at {perf.batch} "
                f"concurrent sequences, KV {perf.kv_dtype}, {perf.mode} batching ({note})"
                + (f"; {perf.recommended} is the recommended scheme here" if perf.recommended else ""),
                subject=f"{site.key}|slower-than-bf16", file=where[0], line=where[1], target=site.label)
    if max_slowdown is None:
        out.skip("QA202", "thresholds.max_slowdown_vs_recommended is off")
        return
    if perf.slowdown_vs_recommended is None or perf.recommended is None:
        out.skip("QA202", "no recommendation for this workload")
        return
    out.ran_rules("QA202")
    if perf.slowdown_vs_recommended > max_slowdown + 1e-12:
        out.add("QA202", f"{perf.scheme} ({perf.kv_dtype}) is predicted {perf.slowdown_vs_recommended + 1:.2f}x "
                f"slower than the recommended {perf.recommended} ({perf.recommended_kv_dtype}): "
                f"{perf.tokens_per_s:,.0f} vs {perf.recommended_tokens_per_s:,.0f} tokens/s at {perf.batch} "
                f"concurrent sequences (limit {max_slowdown:.0%} slower; {note}; `quantadvise recommend` shows "
                "the tree)",
                subject=f"{site.key}|slower-than-recommended", file=where[0], line=where[1], target=site.label)


