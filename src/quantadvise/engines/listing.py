"""Listings for ``quantadvise engines``: pure views over one or two engine releases.

:func:`listing` (every method, KV cache dtype and shorthand of a release), :func:`method_detail` (one
method, the names sharing its class, the overrides producing it, the same name elsewhere) and
:func:`diff` (two registries side by side).
"""

from __future__ import annotations

from datetime import date
from typing import ClassVar

from pydantic import Field

from ..results import OmitNone, Out, Result
from .data import EngineData, KvCacheDtype, Method, Override, PackageSource, Shorthand


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
    warnings: list[str] = Field(default_factory=list)


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
    warnings: list[str] = Field(default_factory=list)


class DiffRow(Out):
    name: str
    a: Method | None
    b: Method | None


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
    warnings: list[str] = Field(default_factory=list)


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


def diff(a: EngineData, b: EngineData) -> EngineDiff:
    """The two registries side by side: the table the chapter asks readers to regenerate."""
    an = [m.id for m in a.methods if m.kind != "escape_hatch"]
    bn = [m.id for m in b.methods if m.kind != "escape_hatch"]
    both = [DiffRow(name=n, a=a.method(n), b=b.method(n)) for n in sorted(set(an) & set(bn))]
    ak, bk = [k.id for k in a.kv_cache_dtypes], [k.id for k in b.kv_cache_dtypes]
    return EngineDiff(
        a=a.label, b=b.label, counts={a.label: counts(a), b.label: counts(b)},
        only_a=sorted(set(an) - set(bn)), only_b=sorted(set(bn) - set(an)), both=both,
        kv_only_a=[k for k in ak if k not in bk], kv_only_b=[k for k in bk if k not in ak],
        kv_both=[k for k in ak if k in bk],
        not_optimized={e.label: [m.id for m in e.real_cli_methods if m.optimized is False] for e in (a, b)
                       if e.optimized_allow_list is not None},
    )
