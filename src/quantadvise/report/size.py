"""Human table for ``quantadvise size``."""

from __future__ import annotations

from ..sizing import SizeReport
from .text import Table, count_h, gb, gib


def table(r: SizeReport) -> str:
    m = r.model
    head = [
        f"{m.id}  ({m.source}; {m.kind}; {m.architecture})",
        f"scheme: {r.scheme.id}" + (f" — {r.scheme.description}" if r.scheme.description else ""),
    ]
    t = Table(["component", "params", "bits/param", "bytes", "GB", "GiB", "bf16 GB"], align="lrrrrrr")
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
    lines = [*head, "", t.render(), ""]
    eff = (
        f"; {r.effective_bits_per_weight:.3f} effective bits per quantized weight (scales and zero-points included)"
        if r.effective_bits_per_weight
        else ""
    )
    lines.append(
        f"{gb(r.total_bytes)} ({gib(r.total_bytes)}) vs {gb(r.baseline_bytes)} bf16: "
        f"{r.compression_ratio:.2f}x smaller{eff}."
    )
    lines.append(f"params: {r.total_params:,}" + (
        f" (published: {m.published_params:,})" if m.published_params else ""
    ) + "; * = quantized component")
    if r.kv is not None:
        k = r.kv
        sw = f", {k.sliding_layers} sliding-window layers capped at {k.sliding_window} tokens" if k.sliding_layers else ""
        lines.append(
            f"KV cache ({k.dtype}): {k.bytes_per_token:,.0f} B/token over {k.layers_caching_every_token} layers{sw}; "
            f"batch {k.batch} x ctx {k.ctx:,} = {gb(k.bytes)} ({gib(k.bytes)})"
        )
    if r.fit is not None:
        f = r.fit
        verdict = "fits" if f.fits else "DOES NOT FIT"
        lines.append(
            f"{f.gpus} x {f.gpu}: {gb(f.usable_bytes)} usable ({f.memory_utilization:.0%} of {gb(f.memory_bytes)}), "
            f"{gb(f.reserve_bytes)} runtime reserve, weights {gb(f.weights_bytes)}, "
            f"left for KV {gb(f.free_for_kv_bytes)} = {f.kv_token_capacity:,} tokens -> {verdict}"
            + (f"; max {f.max_sequences_at_ctx:,} sequences at this ctx" if f.max_sequences_at_ctx is not None
               and r.kv is not None and r.kv.ctx else "")
        )
    lines.extend(f"note: {n}" for n in r.notes)
    return "\n".join(lines)
