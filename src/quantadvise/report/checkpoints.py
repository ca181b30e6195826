"""The human table of ``quantadvise checkpoints``: one row per published checkpoint (scheme, size, one
verdict per engine release, accuracy evidence, popularity), fitted to the terminal width (the id
column clips first, then accuracy and popularity drop); then what each refusal says and where the
figures come from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .text import Table, count_h, wrap

if TYPE_CHECKING:
    from ..engines.inspection import CheckpointsReport, CheckpointVerdict, PublishedEntry

_MARK = {"loads": "loads", "warns": "warns", "refused": "REFUSES", "unknown": "?"}


def _verdict(v: CheckpointVerdict) -> str:
    mark = _MARK.get(v.status, v.status)
    return mark + ("*" if v.basis == "assumed" else "")


def _accuracy(e: PublishedEntry) -> str:
    a = e.accuracy
    if a is None:
        return "-"
    if a.caveat:
        return "not used (see JSON)"
    if a.recovery_pct is not None:
        return f"{a.recovery_pct:g}% rec."
    if e.accuracy_drop_pct is not None:
        lo, hi = e.accuracy_drop_pct
        return f"-{hi:g} pt" if lo == hi else f"<= {hi:g} pt"
    return "published"


def _popularity(e: PublishedEntry) -> str:
    parts = []
    if e.downloads is not None:
        parts.append(f"{count_h(e.downloads)} dl")
    if e.likes is not None:
        parts.append(f"{e.likes} likes")
    return ", ".join(parts) or "-"


def table(r: CheckpointsReport, width: int | None = None) -> str:
    gpu = r.gpu.name or r.gpu.id
    head = [f"Published checkpoints of {r.model}" + (f" (bundled as {r.bundled_model})"
                                                     if r.bundled_model and r.bundled_model != r.model else ""),
            f"  from {r.origin}; verdicts on {gpu}"
            + (f" (compute capability {r.gpu.compute_capability})" if r.gpu.compute_capability else "")]
    lines = [ln for h in head for ln in wrap(h, width, subsequent="    ")]
    if not r.checkpoints:
        return "\n".join([*lines, "", "none on file"])
    labels = r.engines
    t = Table(["checkpoint", "scheme", "size", *labels, "accuracy", "popularity"],
              align="llr" + "l" * len(labels) + "ll", flex=("checkpoint", "scheme"), drop=("popularity", "accuracy"),
              flex_min={"checkpoint": 28, "scheme": 12})
    for e in r.checkpoints:
        verdicts = {v.label: v for v in e.verdicts}
        t.add(e.id, (e.scheme or e.method or "-") + (f"+{e.kv}" if e.kv else ""),
              f"{e.size_bytes / 1e9:,.1f} GB" if e.size_bytes else "-",
              *[_verdict(verdicts[lab]) if lab in verdicts else "-" for lab in labels], _accuracy(e), _popularity(e))
    lines += ["", t.render(width), ""]
    lines += wrap("* the verdict judges the config a checkpoint of that method and scheme writes (its own was not "
                  "read whole; --format json lists what each row rests on)", width, subsequent="  ")
    said: dict[str, list[str]] = {}
    for e in r.checkpoints:
        for v in e.verdicts:
            if v.status == "refused" and v.message:
                msg = v.message.split(" Must be one of [")[0]  # the registry list is in the JSON
                said.setdefault(f"{v.label}: {msg}", []).append(e.id)
    if said:
        lines += ["", "Refusals:"]
        for msg, ids in said.items():
            lines += wrap(f"{', '.join(ids)} — {msg}", width, indent="  ", subsequent="    ")
    with_acc = [e for e in r.checkpoints if e.accuracy is not None and e.accuracy.caveat is None]
    if with_acc:
        lines += ["", "Accuracy (the producer's own evaluation):"]
        for e in with_acc:
            a = e.accuracy
            assert a is not None
            lines += wrap(f"{e.id}: {a.headline()} ({a.source})", width, indent="  ", subsequent="    ")
    for n in r.notes:
        lines += wrap("note: " + n, width, subsequent="  ")
    return "\n".join(lines)
