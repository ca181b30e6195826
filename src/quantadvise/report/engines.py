"""Human tables for ``quantadvise engines`` (list / show / diff), fitted to the terminal width: long
cells (config classes, notes, changed values, verdicts) clip first, then the least important
columns drop; ``--wide`` (width None) shows everything. Prose and engine messages wrap."""

from __future__ import annotations

from ..engines.data import Method
from ..engines.listing import EngineDiff, EngineListing, MethodDetail
from .text import Table, wrap


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


def _fits(text: str, width: int | None) -> bool:
    return width is None or all(len(line) <= width for line in text.splitlines())


def listing(r: EngineListing, width: int | None = None) -> str:
    c = r.counts
    head = wrap(f"{r.label} — {r.source.artifact} (read {r.as_of})", width, subsequent="  ")
    t = Table(["method", "config class", "get_name", "kind", "min cap", "act dtypes", "W/A bits", "optimized", "notes"],
              align="lllllllll", flex=("notes", "act dtypes", "config class"),
              drop=("get_name", "act dtypes", "kind", "optimized", "W/A bits"))
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
    lines = list(head)
    for label, versions in r.releases.items():
        lines += wrap(f"{label} releases on file ({len(versions)}): {', '.join(versions)}", width, subsequent="  ")
    lines += ["", t.render(width), ""]
    parts = [f"{c.methods} methods", f"{c.real_cli_methods} real --quantization names",
             f"{c.registered_cuda} in the CUDA registry", f"{c.config_classes} config classes",
             f"{c.kv_cache_dtypes} KV cache dtypes"]
    if c.real_cli_not_optimized is not None:
        parts.append(f"{c.real_cli_not_optimized} real CLI names outside the optimized list "
                     f"({c.optimized_allow_list} entries)")
    if c.deprecated:
        parts.append(f"{c.deprecated} deprecated")
    lines += wrap("; ".join(parts) + ".", width, subsequent="  ")
    lines += wrap("KV cache dtypes: " + ", ".join(k.id for k in r.kv_cache_dtypes), width, subsequent="  ")
    if r.shorthands:
        lines += wrap("online shorthands: " + ", ".join(s.id + (" (deferred)" if s.deferred else "")
                                                        for s in r.shorthands), width, subsequent="  ")
    if r.override_order:
        lines += wrap("override probe order: " + " -> ".join(r.override_order), width, subsequent="  ")
    for n in r.notes:
        lines += wrap(f"note: {n}", width, subsequent="  ")
    return "\n".join(lines)


def _fields(rows: list[tuple[str, str]], width: int | None) -> list[str]:
    """A field / value table; where it is wider than ``width`` the values wrap under their column
    (or, on a very narrow terminal, below their field), so no value is cut."""
    t = Table(["field", "value"], align="ll")
    for k, v in rows:
        t.add(k, v)
    text = t.render()
    if _fits(text, width):
        return text.splitlines()
    assert width is not None
    kw = max(len(k) for k, _ in [("field", ""), *rows])
    vw = width - kw - 2
    if vw < 24:  # too narrow for two columns: each value under its field
        out = []
        for k, v in rows:
            out += wrap(k, width, subsequent="  ")
            out += wrap(v, width, indent="    ", subsequent="    ")
        return out
    rule_v = min(vw, max(len(v) for _, v in [("", "value"), *rows]))
    out = ["field".ljust(kw) + "  value", "─" * kw + "  " + "─" * rule_v]
    for k, v in rows:
        out += wrap(v, width, indent=k.ljust(kw) + "  ", subsequent=" " * (kw + 2))
    return [line.rstrip() for line in out]


def method(r: MethodDetail, width: int | None = None) -> str:
    m = r.method
    lines = [*wrap(f"{m.id} in {r.label}", width), ""]
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
    lines += _fields(rows, width)
    if m.notes:
        lines += ["", *wrap(f"note: {m.notes}", width, subsequent="  ")]
    lines += wrap(f"source: {m.source} (as of {m.as_of})", width, subsequent="  ")
    return "\n".join(lines)


def _names(head: str, names: list[str], width: int | None, indent: str = "") -> list[str]:
    return wrap(head + ", ".join(names), width, indent=indent, subsequent=indent + "  ")


def diff(r: EngineDiff, width: int | None = None) -> str:
    a, b = r.a, r.b
    t = Table(["method", f"{a} class", "cap", "opt", f"{b} class", "cap", "opt"], align="lllllll")
    # the two releases' columns share their names (cap, opt): flexible and dropped columns by position
    t.flex, t.drop = [1, 4], [3, 6]
    for row in r.both:
        t.add(row.name, row.a.config_class if row.a else "", _cap(row.a.min_capability) if row.a else "", _opt(row.a),
              row.b.config_class if row.b else "", _cap(row.b.min_capability) if row.b else "", _opt(row.b))
    ca, cb = r.counts[a], r.counts[b]
    lines = [*wrap(f"{a} vs {b}", width), "", f"in both ({len(r.both)}):", t.render(width), ""]
    lines += _names(f"only in {a} ({len(r.only_a)}): ", r.only_a, width)
    lines += _names(f"only in {b} ({len(r.only_b)}): ", r.only_b, width)
    lines.append("")
    lines += _names(f"KV cache dtypes: {a} {ca.kv_cache_dtypes}, {b} {cb.kv_cache_dtypes}; in both: ", r.kv_both, width)
    lines += _names(f"only in {a}: ", r.kv_only_a, width, indent="  ")
    lines += _names(f"only in {b}: ", r.kv_only_b, width, indent="  ")
    for label, names in r.not_optimized.items():
        lines += _names(f"{label}: {len(names)} real --quantization names outside the optimized list: ", names, width)
    for label in (a, b):
        if label not in r.not_optimized:
            lines += wrap(f"{label}: no optimized allow-list (optimized is '-')", width, subsequent="  ")
    if r.options is not None:
        o = r.options
        lines += ["", *wrap(f"server options: {a} {o.a_count}, {b} {o.b_count}", width)]
        lines += _names(f"only in {b} ({len(o.added)}): ", o.added, width, indent="  ")
        lines += _names(f"gone in {b} ({len(o.removed)}): ",
                        [f"{c.option} ({c.after})" for c in o.removed],
                        width, indent="  ")
        if o.kind_changed:
            lines += _names(f"changed kind ({len(o.kind_changed)}): ",
                            [f"{c.option} {c.before} -> {c.after}" for c in o.kind_changed], width, indent="  ")
    if r.probes_compared:
        lines += ["", f"facts that changed ({len(r.changed)}):"]
        if r.changed:
            ft = Table(["section", "subject", "field", a, b], align="lllll")
            ft.flex, ft.drop = [4, 3, 1], [0]  # the changed values clip first (in full in JSON and with --wide)
            for c in r.changed:
                if c.added or c.removed:  # a list: what each release has that the other does not
                    ft.add(c.section, c.subject, c.field, ", ".join(f"-{x}" for x in c.removed) or "(all kept)",
                           ", ".join(f"+{x}" for x in c.added) or "(nothing added)")
                else:
                    ft.add(c.section, c.subject, c.field, c.before, c.after)
            lines.append(ft.render(width))
        lines += ["", *wrap(f"verdicts that changed ({len(r.verdicts)} of {r.probes_compared} probe x GPU pairs: "
                            "every scheme preset's checkpoint, every --quantization name on bf16, every KV preset):",
                            width, subsequent="  ")]
        if r.verdicts:
            vt = Table(["probe", "GPU", a, b], align="llll")
            vt.flex = [1, 3, 2, 0]  # the GPU's name after its sm clips first, then the verdicts
            for v in r.verdicts:
                vt.add(v.probe, v.gpu, v.before, v.after)
            lines.append(vt.render(width))
            said = sorted({x for v in r.verdicts for x in v.added}), sorted({x for v in r.verdicts for x in v.removed})
            for x in said[0]:
                lines += wrap(f"{b} now prints: {x}", width, indent="  ", subsequent="    ")
            for x in said[1]:
                lines += wrap(f"{b} no longer prints: {x}", width, indent="  ", subsequent="    ")
    return "\n".join(lines)
