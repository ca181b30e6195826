"""Human table for ``quantadvise size``, fitted to the terminal width."""

from __future__ import annotations

from ..memory.sizing import SizeReport
from .text import Table, count_h, gb, gib, plural, wrap


def ratio_words(ratio: float) -> str:
    """How the size compares with bf16, in words: never "1.00x smaller"."""
    if abs(ratio - 1) < 0.005:
        return "the same size"
    return f"{ratio:.2f}x smaller" if ratio > 1 else f"{1 / ratio:.2f}x larger"


def _room(free_bytes: int, tokens: int) -> str:
    """The memory the weights leave for the KV cache; a negative room is a shortfall, never a negative size."""
    if free_bytes < 0:
        return f"exceeding the usable memory less the runtime reserve by {gb(-free_bytes)}; nothing left for KV"
    return f"left for KV {gb(free_bytes)} = {plural(tokens, 'token')}"


def table(r: SizeReport, width: int | None = None) -> str:
    m = r.model
    out: list[str] = []
    out += wrap(f"{m.id}  ({m.source}; {m.kind}; {m.architecture})", width)
    out += wrap(f"scheme: {r.scheme.id}" + (f" — {r.scheme.description}" if r.scheme.description else ""), width,
                subsequent="  ")
    t = Table(["component", "params", "bits/param", "bytes", "GB", "GiB", "bf16 GB"], align="lrrrrrr",
              flex=("component",), drop=("bytes", "GiB"))
    for c in r.components:
        t.add(
            c.component + (" *" if c.quantized else ""),
            count_h(c.params),
            f"{c.bits_per_param:.3f}",
            f"{c.bytes:,}",
            f"{c.bytes / 1e9:,.2f}",
            f"{c.bytes / 1024**3:,.2f}",
            f"{c.baseline_bytes / 1e9:,.2f}",
        )
    t.add_footer(
        "total",
        count_h(r.total_params),
        f"{r.bits_per_param:.3f}",
        f"{r.total_bytes:,}",
        f"{r.total_bytes / 1e9:,.2f}",
        f"{r.total_bytes / 1024**3:,.2f}",
        f"{r.baseline_bytes / 1e9:,.2f}",
    )
    out += ["", t.render(width), ""]
    eff = (
        f"; {r.effective_bits_per_weight:.3f} effective bits per quantized weight (scales and zero-points included)"
        if r.effective_bits_per_weight
        else ""
    )
    out += wrap(f"{gb(r.total_bytes)} ({gib(r.total_bytes)}) vs {gb(r.baseline_bytes)} bf16: "
                f"{ratio_words(r.compression_ratio)}{eff}.", width)
    out += wrap(f"params: {r.total_params:,}"
                + (f" (published: {m.published_params:,})" if m.published_params else "")
                + ("; * = quantized component" if any(c.quantized for c in r.components) else ""), width)
    if r.kv is not None:
        k = r.kv
        sw = (f", {plural(k.sliding_layers, 'sliding-window layer')} capped at {plural(k.sliding_window or 0, 'token')}"
              if k.sliding_layers else "")
        out += wrap(f"KV cache ({k.dtype}): {k.bytes_per_token:,.0f} B/token over "
                    f"{plural(k.layers_caching_every_token, 'layer')}{sw}; {plural(k.batch, 'sequence')} x "
                    f"{plural(k.ctx, 'token')} = {gb(k.bytes)} ({gib(k.bytes)})",
                    width, subsequent="  ")
    if r.fit is not None:
        f = r.fit
        head = (f"{f.gpus} x {f.gpu}: {gb(f.usable_bytes)} usable ({f.memory_utilization:.0%} of "
                f"{gb(f.memory_bytes)}), {gb(f.reserve_bytes)} ({gib(f.reserve_bytes)}) runtime reserve, weights {gb(f.weights_bytes)}, ")
        room = _room(f.free_for_kv_bytes, f.kv_token_capacity)
        if r.kv is None:  # no workload given: say what room the weights leave, judge nothing else
            verdict = "weights fit" if f.free_for_kv_bytes > 0 else "the weights DO NOT FIT"
            tail = f"{room} -> {verdict} (give --ctx and --batch to size a workload's KV cache)"
        else:
            tail = (f"{room} -> " + ("fits" if f.fits else "DOES NOT FIT")
                    + ("" if f.max_sequences_at_ctx is None or not r.kv.ctx else
                       f"; not one sequence of {plural(r.kv.ctx, 'token')} fits" if f.max_sequences_at_ctx == 0 else
                       f"; at most {plural(f.max_sequences_at_ctx, 'sequence')} of {plural(r.kv.ctx, 'token')}"))
        out += wrap(head + tail, width, subsequent="  ")
        if f.kv_replication:
            held = (f"; the {gb(f.kv_bytes)} KV cache above takes {gb(f.kv_held_bytes)} over the {f.gpus} GPUs"
                    if r.kv is not None and f.kv_bytes else "")
            out += wrap(f"KV replicated: {f.kv_replication}{held}", width, subsequent="  ")
    for n in r.notes:
        out += wrap(f"note: {n}", width, subsequent="  ")
    return "\n".join(out)
