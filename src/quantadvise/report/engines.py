"""Human tables for ``quantadvise engines`` (list / show / diff)."""

from __future__ import annotations

from ..engines.data import Method
from ..engines.listing import EngineDiff, EngineListing, MethodDetail
from .text import Table


def _bits(v: int | tuple[int, ...] | list[int] | None) -> str:
    if v is None:
        return "-"
    if isinstance(v, (list, tuple)):
        return "|".join(str(x) for x in v)
    return str(v)


def _opt(m: Method | None) -> str:
    if m is None:
        return ""
    return {True: "yes", False: "no", None: "-"}[m.optimized]


def _cap(v: int | None) -> str:
    return "-" if v is None else str(v)


def listing(r: EngineListing) -> str:
    c = r.counts
    head = [f"{r.label} — {r.source.artifact} (read {r.as_of})"]
    t = Table(["method", "config class", "get_name", "kind", "min cap", "act dtypes", "W/A bits", "optimized", "notes"],
              align="lllllllll")
    for m in r.methods:
        flags = []
        if m.deprecated:
            flags.append("DEPRECATED")
        if not m.cli_choice:
            flags.append("registry only")
        if not m.registered and m.kind != "escape_hatch":
            flags.append("not registered on CUDA")
        t.add(m.id, m.config_class or "-", m.canonical or "", m.kind, _cap(m.min_capability)
              + (f" ({m.effective_min_capability})" if m.effective_min_capability else ""),
              ",".join(m.supported_act_dtypes or []) or "-", f"{_bits(m.weight_bits)}/{_bits(m.act_bits)}", _opt(m),
              "; ".join(flags))
    lines = [*head, "", t.render(), ""]
    parts = [f"{c.methods} methods", f"{c.real_cli_methods} real --quantization names",
             f"{c.registered_cuda} in the CUDA registry", f"{c.config_classes} config classes",
             f"{c.kv_cache_dtypes} KV cache dtypes"]
    if c.real_cli_not_optimized is not None:
        parts.append(f"{c.real_cli_not_optimized} real CLI names outside the optimized list "
                     f"({c.optimized_allow_list} entries)")
    if c.deprecated:
        parts.append(f"{c.deprecated} deprecated")
    lines.append("; ".join(parts) + ".")
    lines.append("KV cache dtypes: " + ", ".join(k.id for k in r.kv_cache_dtypes))
    if r.shorthands:
        lines.append("online shorthands: " + ", ".join(s.id + (" (deferred)" if s.deferred else "")
                                                         for s in r.shorthands))
    if r.override_order:
        lines.append("override probe order: " + " -> ".join(r.override_order))
    lines.extend(f"note: {n}" for n in r.notes)
    return "\n".join(lines)


def method(r: MethodDetail) -> str:
    m = r.method
    lines = [f"{m.id} in {r.label}", ""]
    rows = [
        ("config class", m.config_class or "-"),
        ("get_name", m.canonical or m.id),
        ("kind", m.kind),
        ("min compute capability", _cap(m.min_capability)
         + (f" (kernels need {m.effective_min_capability})" if m.effective_min_capability else "")),
        ("activation dtypes", ", ".join(m.supported_act_dtypes or []) or "-"),
        ("weight / activation bits", f"{_bits(m.weight_bits)} / {_bits(m.act_bits)}"),
        ("optimized", {True: "yes (in the optimized list)", False: "no: 'not fully optimized' warning",
                       None: "- (no such list in this engine)"}[m.optimized]),
        ("deprecated", "yes" if m.deprecated else "no"),
        ("--quantization choice", "yes" if m.cli_choice else "no (detected from checkpoints only)"),
        ("platforms", ", ".join(f"{p} {'yes' if ok else 'no'}" for p, ok in r.platforms.items())),
    ]
    if r.same_class:
        rows.append(("same class as", ", ".join(r.same_class)))
    if r.runs_on_checkpoints:
        rows.append(("accepts checkpoints declaring", ", ".join(r.runs_on_checkpoints)))
    for sg in m.scheme_gates:
        rows.append((f"scheme gate {sg.scheme}", str(sg.min_capability)))
    for ov in r.overrides:
        cond = []
        if ov.checkpoint_methods:
            cond.append("quant_method in " + "/".join(ov.checkpoint_methods))
        if ov.checkpoint_method_prefix:
            cond.append(f"quant_method starts with {ov.checkpoint_method_prefix}")
        if ov.quant_algo:
            cond.append("quant_algo " + "/".join((*ov.quant_algo.equals, *(f"*{c}*" for c in ov.quant_algo.contains))))
        if ov.model_types:
            cond.append("model_type " + "/".join(ov.model_types))
        if ov.user_in is not None:
            cond.append("--quantization " + "/".join("(none)" if u is None else u for u in ov.user_in))
        if ov.requires_marlin:
            cond.append("Marlin-compatible")
        rows.append((f"override {ov.id}", " and ".join(cond) or "always"))
    if r.shorthand is not None:
        s = r.shorthand
        rows.append(("expands to (linear)", s.linear.weight + (f"; activations {s.linear.activation}"
                                                               if s.linear and s.linear.activation else "")
                     if s.linear else "not quantized"))
        rows.append(("expands to (MoE)", s.moe.weight if s.moe else "not quantized"))
    for other, om in r.elsewhere.items():
        rows.append((f"in {other}", f"{om.config_class}, min cap {_cap(om.min_capability)}, optimized {_opt(om)}"
                     if om else "not a method there"))
    t = Table(["field", "value"], align="ll")
    for k, v in rows:
        t.add(k, v)
    lines.append(t.render())
    if m.notes:
        lines += ["", f"note: {m.notes}"]
    lines.append(f"source: {m.source} (as of {m.as_of})")
    return "\n".join(lines)


def diff(r: EngineDiff) -> str:
    a, b = r.a, r.b
    t = Table(["method", f"{a} class", "cap", "opt", f"{b} class", "cap", "opt"], align="lllllll")
    for row in r.both:
        t.add(row.name, row.a.config_class if row.a else "", _cap(row.a.min_capability) if row.a else "", _opt(row.a),
              row.b.config_class if row.b else "", _cap(row.b.min_capability) if row.b else "", _opt(row.b))
    ca, cb = r.counts[a], r.counts[b]
    lines = [f"{a} vs {b}", "", f"in both ({len(r.both)}):", t.render(), ""]
    lines.append(f"only in {a} ({len(r.only_a)}): " + ", ".join(r.only_a))
    lines.append(f"only in {b} ({len(r.only_b)}): " + ", ".join(r.only_b))
    lines.append("")
    lines.append(f"KV cache dtypes: {a} {ca.kv_cache_dtypes}, {b} {cb.kv_cache_dtypes}; in both: "
                 + ", ".join(r.kv_both))
    lines.append(f"  only in {a}: " + ", ".join(r.kv_only_a))
    lines.append(f"  only in {b}: " + ", ".join(r.kv_only_b))
    for label, names in r.not_optimized.items():
        lines.append(f"{label}: {len(names)} real --quantization names outside the optimized list: "
                     + ", ".join(names))
    for label in (a, b):
        if label not in r.not_optimized:
            lines.append(f"{label}: no optimized allow-list (optimized is '-')")
    if r.probes_compared:
        lines += ["", f"facts that changed ({len(r.changed)}):"]
        if r.changed:
            ft = Table(["section", "subject", "field", a, b], align="lllll")
            for c in r.changed:
                if c.added or c.removed:  # a list: what each release has that the other does not
                    ft.add(c.section, c.subject, c.field, _clip(", ".join(f"-{x}" for x in c.removed) or "(all kept)"),
                           _clip(", ".join(f"+{x}" for x in c.added) or "(nothing added)"))
                else:
                    ft.add(c.section, c.subject, c.field, _clip(c.before), _clip(c.after))
            lines.append(ft.render())
        lines += ["", f"verdicts that changed ({len(r.verdicts)} of {r.probes_compared} probe x GPU pairs: every "
                  "scheme preset's checkpoint, every --quantization name on bf16, every KV preset):"]
        if r.verdicts:
            vt = Table(["probe", "GPU", a, b], align="llll")
            for v in r.verdicts:
                vt.add(v.probe, v.gpu, v.before, v.after)
            lines.append(vt.render())
            said = sorted({x for v in r.verdicts for x in v.added}), sorted({x for v in r.verdicts for x in v.removed})
            lines += [f"  {b} now prints: {x}" for x in said[0]]
            lines += [f"  {b} no longer prints: {x}" for x in said[1]]
    return "\n".join(lines)


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
