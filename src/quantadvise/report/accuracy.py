"""Human table for ``quantadvise accuracy``."""

from __future__ import annotations

from ..evals.stats import CI_METHOD_TEXT, AccuracyReport
from ..wording import plural
from .text import Table, wrap


def _pct(x: float) -> str:
    return f"{x * 100:.2f}%"


def _pp(x: float) -> str:
    return f"{x * 100:+.2f}"


def table(r: AccuracyReport, width: int | None = None) -> str:
    lines = [*wrap(f"accuracy evidence: baseline {r.base}  vs  quantized {r.quant}", width, subsequent="  "), ""]
    t = Table(
        ["task", "metric", "n", "base", "quant", "delta pp", f"{r.confidence:.0%} CI pp", "flips", "lost/gained",
         "McNemar p", "KL nats"],
        align="llrrrrrrrrr", flex=("task", "metric"), drop=("KL nats", "McNemar p", "lost/gained", "metric", "n"),
    )
    for a in r.tasks:
        metric = a.metric + (f" [{a.filter}]" if a.filter and a.filter != "none" else "")
        t.add(
            a.task, metric, f"{a.n:,}", _pct(a.base_accuracy), _pct(a.quant_accuracy), _pp(a.delta),
            f"{_pp(a.delta_ci_low)} to {_pp(a.delta_ci_high)}", _pct(a.flip_rate), f"{a.lost}/{a.gained}",
            f"{a.mcnemar_p:.3g}", "—" if a.kl is None else f"{a.kl.mean_nats:.4g}",
        )
    lines.append(t.render(width))
    lines.append("")
    lines += wrap(
        f"delta = quantized - baseline accuracy in percentage points; CI: {CI_METHOD_TEXT}. flips = answers whose "
        "correctness changed (lost = right before, wrong after). KL = mean KL(base || quant) over items with "
        "log-probs (softmax over the choices).", width)
    unmatched = [a for a in r.tasks if a.unmatched_base or a.unmatched_quant]
    for a in unmatched:
        lines += wrap(
            f"{a.task}: {plural(a.unmatched_base, 'item')} only in the baseline, {a.unmatched_quant} only in the quantized "
            f"run (e.g. {', '.join(a.unmatched_examples)}); not counted.", width, subsequent="  ")
    if r.checks:
        lines.append("")
        # the detail wraps onto continuation rows (its threshold is the part that matters): never clipped
        c = Table(["task", "check", "result", "detail"], align="llll", flex=("task",))
        lead = max(len(x) for x in ["task", *(row.task for row in r.checks)]) + len("check") + len("result") + 6
        room = None if width is None else max(20, width - lead)
        for row in r.checks:
            chunks = wrap(row.message, room) or [""]
            c.add(row.task, row.check, row.status.upper(), chunks[0])
            for more in chunks[1:]:
                c.add("", "", "", more)
        lines.append(c.render(width))
        lines.append("")
        failed = r.failed
        lines.append(
            f"FAILED: {len(failed)} of {len(r.checks)} checks." if failed else f"passed: all {len(r.checks)} checks."
        )
    return "\n".join(lines)
