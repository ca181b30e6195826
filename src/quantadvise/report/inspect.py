"""Human report for ``quantadvise inspect``, fitted to the terminal width: the quantization groups
as a table where it fits (long target lists clip, in full in JSON and with ``--wide``), else one
block per group; every other line wraps with a hanging indent."""

from __future__ import annotations

from ..engines.inspection import GroupRow, InspectReport
from .text import Table, count_h, gb, gib, wrap


def _preset(g: GroupRow) -> str:
    preset = g.preset or ""
    if g.ct_preset and g.ct_preset.lower().replace("_", "-") != (g.preset or ""):
        preset += (" / " if preset else "") + g.ct_preset
    return preset or "-"


def _groups(groups: list[GroupRow], width: int | None) -> list[str]:
    t = Table(["group", "targets", "format", "weights", "activations", "acc", "preset", "modules", "GB"],
              align="lllllllrr", flex=("targets",))
    for g in groups:
        t.add(g.group, ", ".join(g.targets), g.format or "-", g.weights or "-", g.activations or "-",
              g.accumulation or "-", _preset(g), "-" if g.modules is None else f"{g.modules:,}",
              "-" if g.bytes is None else f"{g.bytes / 1e9:,.2f}")
    text = t.render(width)
    if width is None or all(len(line) <= width for line in text.splitlines()):
        return text.splitlines()
    out: list[str] = []  # too narrow for the table: a block per group, nothing cut
    for g in groups:
        size = [] if g.modules is None else [f"{g.modules:,} modules"]
        size += [] if g.bytes is None else [f"{g.bytes / 1e9:,.2f} GB"]
        out += wrap(f"group {g.group}: format {g.format or '-'}; preset {_preset(g)}"
                    + (f"; {', '.join(size)}" if size else ""), width, subsequent="    ")
        out += wrap(f"targets: {', '.join(g.targets) or '-'}", width, indent="  ", subsequent="    ")
        out += wrap(f"weights: {g.weights or '-'}", width, indent="  ", subsequent="    ")
        out += wrap(f"activations: {g.activations or '-'}; accumulation {g.accumulation or '-'}", width,
                    indent="  ", subsequent="    ")
    return out


def table(r: InspectReport, width: int | None = None) -> str:
    m = r.model
    head = f"{m.id}  ({m.source}"
    if m.kind:
        head += f"; {m.kind}; {m.architecture}"
    head += ")"
    lines = wrap(head, width, subsequent="  ")

    def para(text: str, indent: str = "", hang: str = "  ") -> None:
        lines.extend(wrap(text, width, indent=indent, subsequent=indent + hang))

    ck = r.checkpoint
    if ck is None:
        para("quantization: none (no quantization_config) - 16-bit weights")
    else:
        prod = f", producer {ck.producer}" if ck.producer else ""
        para(f"quantization: {ck.quant_method} ({ck.family}; from {ck.found_in}{prod})")
        para(f"summary: {r.summary}")
    lines.append("")
    if r.groups:
        lines += [*_groups(r.groups, width), ""]
        for g in r.groups:
            if g.scheme_error:
                para(f"group {g.group}: not a valid scheme: {g.scheme_error}")
    if r.ignore:
        shown = ", ".join(r.ignore[:8]) + (f", ... ({len(r.ignore)} patterns)" if len(r.ignore) > 8 else "")
        para(f"ignored by the config: {shown}")
    if r.left_unquantized_modules:
        para(f"decoder linear modules left 16-bit: {r.left_unquantized_modules:,} (e.g. "
             + ", ".join(r.left_unquantized[:3]) + ")")
    if r.kv_cache:
        para(f"KV cache in the checkpoint: {r.kv_cache}")
    if r.checkpoint is not None and r.checkpoint.transforms:
        online = " (applied at run time)" if r.checkpoint.details.get("transform_online") else " (fused into the weights)"
        para(f"transform_config{online}: " + "; ".join(r.checkpoint.transforms))
    if r.size is not None:
        s = r.size
        q = [c.component for c in s.components if c.quantized]
        para(f"size on disk (model): {gb(s.total_bytes)} ({gib(s.total_bytes)}) for {count_h(s.total_params)} params "
             f"vs {gb(s.baseline_bytes)} bf16 = {s.compression_ratio:.2f}x; quantized: {', '.join(q) or 'nothing'}; "
             f"16-bit tensors in {s.stored_dtype}")
    lines.append("")
    gpu = r.gpu
    target = f" on {gpu.id} (compute capability {gpu.capability if gpu.capability is not None else '?'})" \
        if gpu else " (no --gpu: capability checks skipped)"
    para(f"engines{target}:")
    for e in r.engines:
        verdict = {"ok": "loads", "warnings": "loads, with warnings", "refused": "REFUSES"}[e.status]
        method = e.resolved_method or "none (16-bit)"
        cls = f" -> {e.config_class}" if e.config_class else ""
        para(f"{e.label}: {verdict}; method {method}{cls}"
             + (f"; KV cache {e.kv_cache_dtype_resolved}" if e.kv_cache_dtype_resolved not in (None, "auto") else ""),
             indent="  ")
        if e.steps:
            para("how: " + "; ".join(e.steps), indent="    ")
        for k in r.kernels:
            if (k.engine, k.engine_version) == (e.engine, e.version) and e.status != "refused":
                quant = f", activations quantized {k.activation_quant}" if k.activation_quant not in (None, "none") else ""
                para(f"kernel {k.group}: {k.name or 'not on file'}{quant}"
                     + (f" ({k.source.split(' (')[0]})" if k.source else ""), indent="    ")
        for gd in e.groups:
            para(f"group {gd.group}: {gd.scheme_class or 'no scheme'}"
                 + (f" ({gd.label})" if gd.label else "")
                 + (f", min capability {gd.min_capability}" if gd.min_capability is not None else "")
                 + (f"; {gd.note}" if gd.note else ""), indent="    ")
        for f in e.findings:
            para(f"{f.severity}: [{f.kind}] {f.message}", indent="    ", hang=" " * (len(f.severity) + 2))
            if f.engine_message:
                para(f"{e.label} says: {f.engine_message}", indent="      ")
    for n in r.notes:
        para(f"note: {n}")
    return "\n".join(lines)
