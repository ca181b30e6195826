"""Listings for ``quantadvise engines``: pure views over one or two engine releases.

:func:`listing` (every method, KV cache dtype and shorthand of a release), :func:`method_detail` (one
method, the names sharing its class, the overrides producing it, the same name elsewhere) and
:func:`diff` (two registries side by side; for two releases of one engine also every fact that
changed, the verdicts that changed on a set of probe checkpoints and GPUs, :func:`verdict_changes`, and
the GEMM kernels that changed where both releases have a kernel table, :func:`kernel_changes`).
"""

from datetime import date
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from ..results import OmitNone, Out, Result, record
from .data import EngineData, KvCacheDtype, Method, Override, PackageSource, Shorthand
from .kernels import KernelTable, checkpoint_kernels
from .resolution import EngineResolution, resolve
from .vocabulary import OptionDiff

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..checkpoint.quant import CheckpointQuant


class RegistryCounts(OmitNone):
    """How many of each thing a release's registry holds (the chapter's counts, by counting the data)."""

    omit_if_none: ClassVar[tuple[str, ...]] = ("optimized_allow_list", "real_cli_not_optimized")

    methods: int
    cli_choices: int
    real_cli_methods: int
    registered_cuda: int
    kv_cache_dtypes: int
    deprecated: int
    online_shorthands: int
    override_order: int
    config_classes: int
    # only where the engine has an optimized allow-list (SGLang); absent from the JSON elsewhere
    optimized_allow_list: int | None = None
    real_cli_not_optimized: int | None = None


class EngineListing(Result):
    engine: str
    version: str
    label: str
    source: PackageSource
    as_of: date
    counts: RegistryCounts
    methods: list[Method]
    kv_cache_dtypes: list[KvCacheDtype]
    shorthands: list[Shorthand]
    override_order: list[str]
    optimized_allow_list: list[str] | None
    notes: list[str]
    warnings: list[str] = []
    # every engine's releases on file, oldest first (label -> versions): the releases a command can name
    releases: dict[str, list[str]] = Field(default_factory=dict)


class MethodDetail(Result):
    engine: str
    version: str
    label: str
    method: Method
    same_class: list[str]  # other names that collapse onto this config class
    overrides: list[Override]  # overrides that return this method
    runs_on_checkpoints: list[str]  # SGLang compatible table: checkpoint methods this CLI name accepts
    platforms: dict[str, bool]
    shorthand: Shorthand | None = None
    elsewhere: dict[str, Method | None] = Field(default_factory=dict)  # the same name in other engines
    warnings: list[str] = []


class DiffRow(Out):
    name: str
    a: Method | None
    b: Method | None


class FactChange(Out):
    """One fact of two releases of the same engine that differs (a method's minimum capability, a
    config rule's accepted values, a dispatch row, a message)."""

    section: str  # methods | kv_cache_dtypes | config_rules | dispatch | messages | optimized_allow_list | kernels ...
    subject: str
    field: str
    before: str
    after: str
    added: list[str] = []  # for a list: the items only the newer release has
    removed: list[str] = []


def _change(section: str, subject: str, field: str, va: Any, vb: Any) -> FactChange:
    added: list[str] = []
    removed: list[str] = []
    if isinstance(va, (list, tuple)) and isinstance(vb, (list, tuple)):
        added = [_show(x) for x in vb if x not in va]
        removed = [_show(x) for x in va if x not in vb]
    return FactChange(section=section, subject=subject, field=field, before=_show(va), after=_show(vb),
                      added=added, removed=removed)


class VerdictChange(Out):
    """A probe checkpoint on one GPU whose verdict, kernel (method / scheme class) or engine warnings
    differ between the two releases."""

    probe: str
    gpu: str
    before: str
    after: str
    added: list[str] = []  # "[kind] engine message" the newer release prints
    removed: list[str] = []


class EngineDiff(Result):
    a: str
    b: str
    counts: dict[str, RegistryCounts]  # per engine label
    only_a: list[str]
    only_b: list[str]
    both: list[DiffRow]
    kv_only_a: list[str]
    kv_only_b: list[str]
    kv_both: list[str]
    not_optimized: dict[str, list[str]]  # per engine: real CLI names outside its optimized list
    # two releases of one engine: every fact that changed, and the verdicts that changed on the probes
    changed: list[FactChange] = []
    verdicts: list[VerdictChange] = []
    probes_compared: int = 0  # probe x GPU pairs judged by both releases
    options: OptionDiff | None = None  # two releases of one engine with both option lists on file (data/flags/)
    # per release label: the kernel table its kernel changes (``changed`` rows of section "kernels") were read
    # from, None where the release has no table of its own (then no kernel is compared)
    kernel_tables: dict[str, str | None] = Field(default_factory=dict)
    warnings: list[str] = []


def counts(e: EngineData) -> RegistryCounts:
    real = e.real_cli_methods
    allow = e.optimized_allow_list
    return RegistryCounts(
        methods=len(e.methods),
        cli_choices=sum(1 for m in e.methods if m.cli_choice),
        real_cli_methods=len(real),
        registered_cuda=len(e.registered_names),
        kv_cache_dtypes=len(e.kv_cache_dtypes),
        deprecated=sum(1 for m in e.methods if m.deprecated),
        online_shorthands=len(e.shorthands),
        override_order=len(e.override_order),
        config_classes=len({m.config_class for m in e.methods if m.config_class}),
        optimized_allow_list=len(allow) if allow is not None else None,
        real_cli_not_optimized=sum(1 for m in real if m.optimized is False) if allow is not None else None,
    )


def listing(e: EngineData) -> EngineListing:
    return EngineListing(
        engine=e.engine, version=e.version, label=e.label, source=e.source, as_of=e.as_of, counts=counts(e),
        methods=list(e.methods), kv_cache_dtypes=list(e.kv_cache_dtypes), shorthands=list(e.shorthands),
        override_order=list(e.override_order),
        optimized_allow_list=list(e.optimized_allow_list) if e.optimized_allow_list is not None else None,
        notes=list(e.notes),
    )


def method_detail(e: EngineData, name: str, others: list[EngineData]) -> MethodDetail | None:
    m = e.method(name.strip().lower())
    if m is None:
        return None
    same = [x.id for x in e.methods if x.id != m.id and x.config_class == m.config_class and m.config_class]
    plats = {"cuda": m.registered}
    for p in e.platform_lists:
        plats[p.id] = m.id in p.allowed
    compat = next((c.checkpoint_methods for c in e.compatible if c.id == m.id), ())
    return MethodDetail(
        engine=e.engine, version=e.version, label=e.label, method=m, same_class=same,
        overrides=[o for o in e.overrides if o.returns == m.id], runs_on_checkpoints=list(compat), platforms=plats,
        shorthand=e.shorthand(m.id), elsewhere={o.label: o.method(m.id) for o in others},
    )


def diff(a: EngineData, b: EngineData, probes: "list[Probe] | None" = None,
         gpus: list[tuple[str, int]] | None = None, options: OptionDiff | None = None,
         kernel_tables: tuple[KernelTable | None, KernelTable | None] | None = None) -> EngineDiff:
    """The two registries side by side: the table the chapter asks readers to regenerate. For two
    releases of one engine, also the facts that changed, over ``probes`` x ``gpus`` (label,
    capability) the verdicts that changed, and ``options`` (engines.vocabulary.compare) as given;
    with ``kernel_tables`` (each release's own table, None where it has none) also the GEMM kernel
    each probe's config groups run where both releases load it (``changed`` rows of section "kernels")."""
    an = [m.id for m in a.methods if m.kind != "escape_hatch"]
    bn = [m.id for m in b.methods if m.kind != "escape_hatch"]
    both = [DiffRow(name=n, a=a.method(n), b=b.method(n)) for n in sorted(set(an) & set(bn))]
    ak, bk = [k.id for k in a.kv_cache_dtypes], [k.id for k in b.kv_cache_dtypes]
    same = a.engine == b.engine
    ta, tb = kernel_tables or (None, None)
    kernels = kernel_changes(a, b, ta, tb, probes or [], gpus or []) if same and ta and tb else []
    tables = {e.label: (t.label if t is not None else None) for e, t in ((a, ta), (b, tb))} if kernel_tables else {}
    return EngineDiff(
        a=a.label, b=b.label, counts={a.label: counts(a), b.label: counts(b)},
        only_a=sorted(set(an) - set(bn)), only_b=sorted(set(bn) - set(an)), both=both,
        kv_only_a=[k for k in ak if k not in bk], kv_only_b=[k for k in bk if k not in ak],
        kv_both=[k for k in ak if k in bk],
        not_optimized={e.label: [m.id for m in e.real_cli_methods if m.optimized is False] for e in (a, b)
                       if e.optimized_allow_list is not None},
        changed=(fact_changes(a, b) + kernels) if same else [], kernel_tables=tables,
        verdicts=verdict_changes(a, b, probes or [], gpus or []) if a.engine == b.engine else [],
        probes_compared=len(probes or []) * len(gpus or []) if a.engine == b.engine else 0, options=options,
        warnings=[f"{a.label} was compared with itself: nothing can differ (name two releases, e.g. "
                  f"{a.engine}@<older> {a.engine}@{a.version})"] if a.id == b.id else [],
    )


# -------------------------------------------------------------------------------------------------
# Two releases of one engine
# -------------------------------------------------------------------------------------------------

_METHOD_FIELDS = ("config_class", "min_capability", "effective_min_capability", "supported_act_dtypes", "deprecated",
                  "optimized", "cli_choice", "registered", "config_filenames", "without_config", "weight_only_below",
                  "weight_only_block_below", "weight_only_a16_except", "weight_only_message")
_KV_FIELDS = ("mode", "storage", "min_capability", "capability_majors", "not_on", "error")
_DISPATCH_FIELDS = ("scheme", "min_capability", "exact_capability", "fallback", "fallback_below",
                    "fallback_min_capability", "fallback_message", "message", "message_below", "message_block_below",
                    "message_except", "error")


def _show(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    return str(v)


def _rows(section: str, a: list[Any], b: list[Any], fields: tuple[str, ...], out: list[FactChange]) -> None:
    bb = {r.id: r for r in b}
    for ra in a:
        rb = bb.get(ra.id)
        if rb is None:
            continue
        for f in fields:
            va, vb = getattr(ra, f), getattr(rb, f)
            if va != vb:
                out.append(_change(section, ra.id, f, va, vb))


def fact_changes(a: EngineData, b: EngineData) -> list[FactChange]:
    """Every fact of the methods, KV cache dtypes, config rules, compressed-tensors dispatch, messages and kernel
    refusals that differs between two releases (rows only in one release are listed too)."""
    out: list[FactChange] = []
    _rows("methods", list(a.methods), list(b.methods), _METHOD_FIELDS, out)
    _rows("kv_cache_dtypes", list(a.kv_cache_dtypes), list(b.kv_cache_dtypes), _KV_FIELDS, out)
    _rows("config_rules", list(a.config_rules), list(b.config_rules), ("methods", "fields", "allowed"), out)
    _rows("marlin_compatible", list(a.marlin_compatible), list(b.marlin_compatible), ("fields", "allowed"), out)
    _rows("rewrites", list(a.rewrites), list(b.rewrites), ("quant_algo", "becomes"), out)
    for section, xa, xb in (("config_rules", a.config_rules, b.config_rules), ("messages", a.messages, b.messages),
                            ("overrides", a.overrides, b.overrides),
                            ("kernel_refusals", a.kernel_refusals, b.kernel_refusals)):
        ia, ib = [r.id for r in xa], [r.id for r in xb]
        out += [FactChange(section=section, subject=i, field="row", before="-", after="added") for i in ib
                if i not in ia]
        out += [FactChange(section=section, subject=i, field="row", before="present", after="-") for i in ia
                if i not in ib]
    _rows("messages", list(a.messages), list(b.messages), ("text", "parts", "exception"), out)
    _rows("kernel_refusals", list(a.kernel_refusals), list(b.kernel_refusals),
          ("schemes", "min_capability", "max_capability", "message"), out)
    if a.compressed_tensors is not None and b.compressed_tensors is not None:
        da, db = list(a.compressed_tensors.dispatch), list(b.compressed_tensors.dispatch)
        ia, ib = [r.id for r in da], [r.id for r in db]
        out += [FactChange(section="dispatch", subject=i, field="row", before="-", after="added") for i in ib
                if i not in ia]
        out += [FactChange(section="dispatch", subject=i, field="row", before="present", after="-") for i in ia
                if i not in ib]
        _rows("dispatch", da, db, _DISPATCH_FIELDS, out)
        ka, kb = a.compressed_tensors.kv_cache_scheme, b.compressed_tensors.kv_cache_scheme
        for f in ("types", "num_bits", "type_and_bits", "strategies", "on_violation"):
            if getattr(ka, f) != getattr(kb, f):
                out.append(_change("kv_cache_scheme", "kv_cache_scheme", f, getattr(ka, f), getattr(kb, f)))
    for name in ("override_order", "optimized_allow_list", "requantization_methods", "humming_preferred"):
        va, vb = getattr(a, name), getattr(b, name)
        if va != vb:
            out.append(_change(name, name, "value", va, vb))
    pa, pb = {p.id: p.allowed for p in a.platform_lists}, {p.id: p.allowed for p in b.platform_lists}
    for plat in sorted(set(pa) | set(pb)):
        if pa.get(plat) != pb.get(plat):
            out.append(_change("platform_lists", plat, "allowed", pa.get(plat) or [], pb.get(plat) or []))
    return out


@record
class Probe:
    """A checkpoint (None: unquantized) and the flags a deployment passes, judged by both releases."""

    label: str
    checkpoint: "CheckpointQuant | None"
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    model_type: str | None = None
    model_dtype: str | None = "bfloat16"


def verdict(r: EngineResolution) -> str:
    """One line: status, the method it resolves to and the kernel scheme of each config group."""
    status = {"ok": "loads", "warnings": "loads, with warnings", "refused": "REFUSES"}[r.status]
    kernels = sorted({g.scheme_class for g in r.groups if g.scheme_class})
    what = r.resolved_method or ("unquantized" if not r.refused else "-")
    return f"{status}: {what}" + (f" ({', '.join(kernels)})" if kernels else "")


def said(r: EngineResolution) -> dict[str, str]:
    """The refusals and warnings: key "[kind] the engine's words" (the kind alone where its text is not
    on file: quantadvise's own wording names the release) -> the line shown."""
    import re

    # a list the message quotes ("Must be one of [...]") grows with the registry: not a new message
    return {re.sub(r"\[[^\]]*\]", "[...]", f"[{f.kind}] {f.engine_message or ''}".strip()):
            f"[{f.kind}] {f.engine_message or f.message}" for f in r.findings if f.severity in ("error", "warning")}


def resolution_change(a: EngineResolution, b: EngineResolution) -> tuple[str, str, list[str], list[str]] | None:
    """(before, after, printed only by b, printed only by a) when the verdict, the method, a kernel
    scheme or what the engine prints differs; None when the two releases behave the same."""
    va, vb = verdict(a), verdict(b)
    sa, sb = said(a), said(b)
    if va == vb and set(sa) == set(sb):
        return None
    return va, vb, [v for k, v in sb.items() if k not in sa], [v for k, v in sa.items() if k not in sb]


def verdict_changes(a: EngineData, b: EngineData, probes: list[Probe], gpus: list[tuple[str, int]]
                    ) -> list[VerdictChange]:
    out = []
    for p in probes:
        for gpu, cap in gpus:
            kw: dict[str, Any] = {"capability": cap, "quantization": p.quantization, "kv_cache_dtype": p.kv_cache_dtype,
                                  "model_type": p.model_type, "model_dtype": p.model_dtype}
            ch = resolution_change(resolve(a, p.checkpoint, **kw), resolve(b, p.checkpoint, **kw))
            if ch is not None:
                out.append(VerdictChange(probe=p.label, gpu=gpu, before=ch[0], after=ch[1], added=ch[2],
                                         removed=ch[3]))
    return out


def _kernel_words(r: EngineResolution, p: Probe, table: KernelTable, capability: int) -> str | None:
    """``"group: kernel"`` for each config group of the probe's checkpoint in ``table``'s release (None: the
    release refuses it, or it has no config group: a refusal is the verdict's change, not a kernel's)."""
    if r.refused or p.checkpoint is None or not p.checkpoint.groups:
        return None
    groups = []
    for g in p.checkpoint.groups:
        try:
            s = g.scheme() if g.weight is not None and g.scheme_error is None else None
        except ValueError:
            s = None
        groups.append((g.name, s, g.format))
    rows = checkpoint_kernels(groups, [table], capability, p.quantization, r.resolved_method)
    words = [k.name.split(" (")[0] if k.name else "not on file" for k in rows]
    return words[0] if len(rows) == 1 else "; ".join(f"{k.group}: {w}" for k, w in zip(rows, words, strict=True))


def kernel_changes(a: EngineData, b: EngineData, ta: KernelTable, tb: KernelTable, probes: list[Probe],
                   gpus: list[tuple[str, int]]) -> list[FactChange]:
    """The GEMM kernel each probe checkpoint's config groups run (engines/kernels), where both releases load
    it and it differs: one row per probe and change, naming the GPUs it holds on (``field`` "kernel on
    sm80, sm86")."""
    seen: dict[tuple[str, str, str], list[str]] = {}
    for p in probes:
        if p.checkpoint is None:
            continue
        for gpu, cap in gpus:
            kw: dict[str, Any] = {"capability": cap, "quantization": p.quantization, "kv_cache_dtype": p.kv_cache_dtype,
                                  "model_type": p.model_type, "model_dtype": p.model_dtype}
            ka = _kernel_words(resolve(a, p.checkpoint, **kw), p, ta, cap)
            kb = _kernel_words(resolve(b, p.checkpoint, **kw), p, tb, cap)
            if ka is not None and kb is not None and ka != kb:
                seen.setdefault((p.label, ka, kb), []).append(gpu.split(" ")[0])
    return [FactChange(section="kernels", subject=label, field=f"kernel on {', '.join(on)}", before=ka, after=kb)
            for (label, ka, kb), on in seen.items()]
