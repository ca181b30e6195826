"""Human output for ``quantadvise recommend``: the scheme, the trace, alternatives, how to deploy;
``explain`` renders the decision tree with rich, the chosen path highlighted."""

from __future__ import annotations

from ..advisor.result import Recommendation
from ..scheme import SchemeAxes
from .text import Table, gb

NODE_LABELS = {
    "native": "a. native",
    "fit": "b. fit",
    "engine": "c. engine",
    "accuracy": "d. accuracy",
    "kv": "e. KV cache",
    "roofline": "f. roofline",
}


def _axes_rows(axes: SchemeAxes) -> Table:
    t = Table(["role", "dtype", "granularity", "scale", "static/dynamic", "symmetric", "zero-point", "scale2"],
              align="llllllll")
    for role, ax in (("weights", axes.weights), ("activations", axes.activations), ("kv cache", axes.kv_cache)):
        if ax is None or ax.dtype in ("bf16", "fp16") and not ax.granularity:
            t.add(role, ax.dtype if ax is not None else "bf16", "-", "-", "-", "-", "-", "-")
            continue
        t.add(
            role,
            ax.dtype,
            ax.granularity or "-",
            ax.scale_dtype or "-",
            "-" if ax.dynamic is None else ("dynamic" if ax.dynamic else "static"),
            "yes" if ax.symmetric else "no",
            ax.zero_point_dtype or "-",
            f"{ax.scale2.dtype} per-tensor" if ax.scale2 else "-",
        )
    return t


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1e3:,.2f}"


def table(r: Recommendation) -> str:
    w = r.workload
    perf = r.performance
    axes = r.scheme.axes
    lines = [
        f"Recommendation: {r.scheme.id} — {r.scheme.description}",
        f"  {w.model_id} on {w.gpus} x {w.gpu}, {w.engine} {w.engine_version or ''}".rstrip()
        + f"; batch {w.batch}, context {w.context:,} tokens, {w.serving_mode} serving, task {w.task}",
        "",
        _axes_rows(axes).render(),
        f"accumulation {axes.accumulation} on {axes.math} tensor cores; "
        f"lm_head {'quantized' if axes.lm_head_quantized else 'bf16'}; "
        f"KV cache {r.kv.dtype} ({gb(r.kv.bytes_total)} for the batch)",
        "",
        "Why (the decision tree):",
    ]
    for node in r.trace:
        lines.append(f"  {NODE_LABELS.get(node.node, node.node):12s} {node.decision}")
        lines.extend(f"  {'':12s} - {reason}" for reason in node.reasons)
    lines.append("")
    vs = []
    if perf.speedup_vs_bf16:
        vs.append(f"{perf.speedup_vs_bf16:.2f}x bf16")
    if perf.vs_runner_up:
        vs.append(f"{perf.vs_runner_up:.2f}x the runner-up {perf.runner_up}")
    held = ("its one sequence" if w.batch == 1 else f"all {w.batch} sequences" if perf.concurrency >= w.batch
            else f"{perf.concurrency} of {w.batch} sequences (serving all needs --gpus {perf.gpus_for_batch})"
            if perf.gpus_for_batch else f"{perf.concurrency} of {w.batch} sequences")
    lines.append(
        f"Predicted with a {perf.kv_dtype} cache, holding {held}: {perf.tokens_per_s:,.0f} output tokens/s"
        + (f" ({perf.decode_tokens_per_s:,.0f} decode tokens/s, {perf.prefill_share:.0%} of GPU time in prefill)"
           if perf.prefill_share is not None else " (decode only)")
        + f", {_ms(perf.step_time_s)} ms per decode step"
        + (f", TTFT {_ms(perf.ttft_s)} ms" if perf.ttft_s else "")
        + (f"; {', '.join(vs)}" if vs else "")
        + f" — {perf.model_note} ({perf.profile})"
    )
    if perf.kernel:
        lines.append(f"Kernel: {perf.kernel}")
    lines += ["", "Alternatives (speed at the sequences each holds, with its KV cache):"]
    t = Table(["scheme", "status", "holds", "tokens/s", "decode tok/s", "vs bf16", "weights GB", "why"],
              align="llrrrrrl")
    for a in r.alternatives:
        t.add(
            a.scheme + (" *" if a.native else ""),
            a.status,
            "-" if a.concurrency is None else f"{a.concurrency}/{w.batch}",
            "-" if a.tokens_per_s is None else f"{a.tokens_per_s:,.0f}",
            "-" if a.decode_tokens_per_s is None else f"{a.decode_tokens_per_s:,.0f}",
            "-" if a.speedup_vs_bf16 is None else f"{a.speedup_vs_bf16:.2f}x",
            "-" if a.weights_bytes is None else f"{a.weights_bytes / 1e9:,.2f}",
            _clip(a.reason),
        )
    lines.append(t.render())
    if any(a.native for a in r.alternatives):
        lines.append("* the checkpoint as shipped")
    lines += ["", "Deploy:"]
    for engine, cmd in r.engine_args.items():
        if cmd:
            lines.append(f"  {engine}: {cmd}")
    ck = r.checkpoint
    if ck.summary:
        lines.append(f"  checkpoint: {ck.summary}")
    for alt in ck.alternatives:
        lines.append(f"       or: {alt}")
    if ck.recipe:
        lines.append(f"  llm-compressor: {ck.recipe}")
    lines.extend(f"  note: {n}" for n in ck.notes)
    lines += ["", "Assumptions:"]
    lines.extend(f"  - {a}" for a in r.assumptions)
    return "\n".join(lines)


def explain(r: Recommendation, color: bool = False) -> str:
    """The decision tree as a rich Tree, the chosen path in bold green (plain text unless
    ``color``; the path is also marked with arrows so it survives without colour)."""
    from io import StringIO

    from rich.console import Console
    from rich.tree import Tree

    w = r.workload
    root = Tree(f"[bold]workload[/]: batch {w.batch}, ctx {w.context:,}, {w.serving_mode}, task {w.task} on "
                f"{w.gpus} x {w.gpu}")
    node = root
    for t in r.trace:
        branch = node.add(f"[bold cyan]{NODE_LABELS.get(t.node, t.node)}[/] [green]{_escape(t.decision)}[/]")
        for reason in t.reasons:
            branch.add(f"[dim]{_escape(reason)}[/]")
        if t.node == "roofline":
            for a in r.alternatives:
                if a.step_time_s is None:
                    continue
                style = "bold green" if a.status == "recommended" else "dim"
                branch.add(f"[{style}]{a.scheme}: {a.tokens_per_s or 0:,.0f} tok/s holding {a.concurrency} "
                           f"({a.kv_dtype}, {a.step_time_s * 1e3:,.2f} ms/step; {a.status})[/]")
        if t.node == "accuracy":
            for a in r.alternatives:
                if a.status == "vetoed":
                    branch.add(f"[red]✗ {a.scheme}: {_escape(a.reason)}[/]")
        node = branch
    node.add(f"[bold green]→ {r.scheme.id}[/] + KV {r.kv.dtype}")
    buf = StringIO()
    Console(file=buf, width=110, force_terminal=color, color_system="standard" if color else None,
            highlight=False).print(root)
    return buf.getvalue().rstrip()


def _clip(text: str, width: int = 90) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _escape(text: str) -> str:
    return text.replace("[", "\\[")
