"""Human report for ``quantadvise inspect``."""

from __future__ import annotations

from ..engines.inspection import InspectReport
from .text import Table, count_h, gb, gib


def table(r: InspectReport) -> str:
    m = r.model
    head = f"{m.id}  ({m.source}"
    if m.kind:
        head += f"; {m.kind}; {m.architecture}"
    head += ")"
    lines = [head]
    ck = r.checkpoint
    if ck is None:
        lines.append("quantization: none (no quantization_config) - 16-bit weights")
    else:
        prod = f", producer {ck.producer}" if ck.producer else ""
        lines.append(f"quantization: {ck.quant_method} ({ck.family}; from {ck.found_in}{prod})")
        lines.append(f"summary: {r.summary}")
    lines.append("")
    if r.groups:
        t = Table(["group", "targets", "format", "weights", "activations", "acc", "preset", "modules", "GB"],
                  align="lllllllrr")
        for g in r.groups:
            targets = ", ".join(g.targets)
            if len(targets) > 36:
                targets = targets[:33] + "..."
            preset = g.preset or ""
            if g.ct_preset and g.ct_preset.lower().replace("_", "-") != (g.preset or ""):
                preset += (" / " if preset else "") + g.ct_preset
            t.add(g.group, targets, g.format or "-", g.weights or "-", g.activations or "-", g.accumulation or "-",
                  preset or "-", "-" if g.modules is None else f"{g.modules:,}",
                  "-" if g.bytes is None else f"{g.bytes / 1e9:,.2f}")
        lines += [t.render(), ""]
        for g in r.groups:
            if g.scheme_error:
                lines.append(f"group {g.group}: not a valid scheme: {g.scheme_error}")
    if r.ignore:
        shown = ", ".join(r.ignore[:8]) + (f", ... ({len(r.ignore)} patterns)" if len(r.ignore) > 8 else "")
        lines.append(f"ignored by the config: {shown}")
    if r.left_unquantized_modules:
        lines.append(f"decoder linear modules left 16-bit: {r.left_unquantized_modules:,} (e.g. "
                     + ", ".join(r.left_unquantized[:3]) + ")")
    if r.kv_cache:
        lines.append(f"KV cache in the checkpoint: {r.kv_cache}")
    if r.checkpoint is not None and r.checkpoint.transforms:
        online = " (applied at run time)" if r.checkpoint.details.get("transform_online") else " (fused into the weights)"
        lines.append(f"transform_config{online}: " + "; ".join(r.checkpoint.transforms))
    if r.size is not None:
        s = r.size
        q = [c.component for c in s.components if c.quantized]
        lines.append(
            f"size on disk (model): {gb(s.total_bytes)} ({gib(s.total_bytes)}) for {count_h(s.total_params)} params "
            f"vs {gb(s.baseline_bytes)} bf16 = {s.compression_ratio:.2f}x; quantized: {', '.join(q) or 'nothing'}; "
            f"16-bit tensors in {s.stored_dtype}"
        )
    lines.append("")
    gpu = r.gpu
    target = f" on {gpu.id} (compute capability {gpu.capability if gpu.capability is not None else '?'})" \
        if gpu else " (no --gpu: capability checks skipped)"
    lines.append(f"engines{target}:")
    for e in r.engines:
        verdict = {"ok": "loads", "warnings": "loads, with warnings", "refused": "REFUSES"}[e.status]
        method = e.resolved_method or "none (16-bit)"
        cls = f" -> {e.config_class}" if e.config_class else ""
        lines.append(f"  {e.label}: {verdict}; method {method}{cls}"
                     + (f"; KV cache {e.kv_cache_dtype_resolved}" if e.kv_cache_dtype_resolved not in (None, "auto")
                        else ""))
        if e.steps:
            lines.append("    how: " + "; ".join(e.steps))
        for k in r.kernels:
            if (k.engine, k.engine_version) == (e.engine, e.version) and e.status != "refused":
                quant = f", activations quantized {k.activation_quant}" if k.activation_quant not in (None, "none") else ""
                lines.append(f"    kernel {k.group}: {k.name or 'not on file'}{quant}"
                             + (f" ({k.source.split(' (')[0]})" if k.source else ""))
        for gd in e.groups:
            lines.append(f"    group {gd.group}: {gd.scheme_class or 'no scheme'}"
                         + (f" ({gd.label})" if gd.label else "")
                         + (f", min capability {gd.min_capability}" if gd.min_capability is not None else "")
                         + (f"; {gd.note}" if gd.note else ""))
        for f in e.findings:
            lines.append(f"    {f.severity}: [{f.kind}] {f.message}")
            if f.engine_message:
                lines.append(f"      {e.label} says: {f.engine_message}")
    for n in r.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines)
