"""``engines``: an engine release's quantization registry, one method, two releases side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import catalog
from ..catalog.resolve import get_engine
from ..engines.flags import kv_cache_flag

if TYPE_CHECKING:
    from ..engines.listing import EngineDiff, EngineListing, MethodDetail, Probe


def _one_version(engine: str, version: str | None) -> None:
    """``engine`` may carry a version (``vllm@0.30.0``, ``vllm==0.30.0``) and ``version`` name one too: the
    two must agree, or the call is refused (never one of them silently)."""
    from ..errors import InputError
    from ..inputs import split_engine

    _, carried = split_engine(engine)
    given = (version or "").strip().lower().removeprefix("v")
    if carried is not None and given not in ("", "latest") and carried.lower().removeprefix("v") != given:
        raise InputError(f"conflicting versions: '{engine.strip()}' names {carried} and --version names {version}; "
                         "give the version once", field="version")


def engines_list(engine: str = "vllm", version: str | None = None) -> EngineListing:
    """Every method an engine release accepts, with config class, minimum capability, activation
    dtypes, optimized flag; its KV cache dtypes, online shorthands and override order."""
    from ..engines.flags import engine_label
    from ..engines.listing import listing

    _one_version(engine, version)
    out = listing(get_engine(engine, version))
    releases = {engine_label(n): catalog.engine_versions(n) for n in catalog.engine_names()}
    return out.model_copy(update={"releases": releases, "warnings": _release_warnings((engine, version))})


def _release_warnings(*specs: tuple[str, str | None]) -> list[str]:
    """The one warning per named release that is not on file ((engine spec, separate version) pairs; such a
    release is shown as the closest release on file)."""
    from ..inputs import split_engine

    out = []
    for spec, version in specs:
        name, carried = split_engine(spec)
        ver = version or carried
        warning = catalog.release(name, ver).warning if ver and ver.lower() != "latest" else None
        if warning is not None and warning not in out:
            out.append(warning)
    return out


def engines_show(method: str, engine: str = "vllm", version: str | None = None) -> MethodDetail:
    """One method in one engine release: its row, the names sharing its config class, the
    overrides that produce it, and the same name in the other engines on file."""
    from ..engines.listing import method_detail

    _one_version(engine, version)
    e = get_engine(engine, version)
    others = [catalog.get_engine(n) for n in catalog.engine_names() if n != e.engine]
    detail = method_detail(e, method, others)
    if detail is None:
        from ..errors import UnknownNameError

        raise UnknownNameError(f"{e.label} quantization method", method, [m.id for m in e.methods],
                               hint=f"`quantadvise engines list --engine {e.engine}` lists them")
    return detail


def engines_diff(a: str = "vllm", b: str = "sglang") -> EngineDiff:
    """Two engine registries side by side: methods only in one, KV cache dtypes, optimized flags.

    Two releases of one engine (``engines_diff("vllm@0.30.0", "vllm@0.33.0")``) also list every fact
    that changed (minimum capabilities, activation dtypes, config rules, dispatch rows, messages) and
    the verdicts that changed: every scheme preset's checkpoint (as its producer writes it), the
    online shorthands and the KV cache dtypes, judged by both releases on one NVIDIA GPU per compute
    capability on file; and the server options each release registers (data/flags/): added, removed
    (with what the newer release does with the old spelling) and changed in kind; and, where both
    releases have a kernel table (data/kernels/), the GEMM kernel each probe checkpoint's config groups
    run where both load it ("changed" rows of section "kernels")."""
    from ..engines.listing import diff

    ea, eb = get_engine(a), get_engine(b)
    said = _release_warnings((a, None), (b, None))
    if ea.engine != eb.engine:
        out = diff(ea, eb)
        return out.model_copy(update={"warnings": [*said, *out.warnings]}) if said else out
    names = list(dict.fromkeys(m.id for e in (ea, eb) for m in e.methods if m.cli_choice))
    from ..engines.vocabulary import compare

    va, vb = (catalog.flag_vocabulary(e.engine, e.version) for e in (ea, eb))
    # a kernel table is one release's selection logic: a release without its own is not compared
    ta, tb = ((t if t is not None and t.version == e.version else None)
              for e in (ea, eb) for t in (catalog.kernel_table(e.engine, e.version),))
    out = diff(ea, eb, probes(ea.engine, names), probe_gpus(),
               options=compare(va, vb, ea.label, eb.label) if va is not None and vb is not None else None,
               kernel_tables=(ta, tb))
    if said:
        out = out.model_copy(update={"warnings": [*said, *out.warnings]})
    if va is None or vb is None:
        missing = " and ".join(e.label for e, v in ((ea, va), (eb, vb)) if v is None)
        out = out.model_copy(update={"warnings": [*out.warnings, f"server options not compared: no option list on "
                                                  f"file for {missing} (data/flags/)"]})
    if ta is None or tb is None:
        missing = " and ".join(e.label for e, t in ((ea, ta), (eb, tb)) if t is None)
        out = out.model_copy(update={"warnings": [*out.warnings, f"kernels not compared: no kernel table on file "
                                                  f"for {missing} (data/kernels/)"]})
    return out


def probes(engine: str, methods: list[str] | None = None) -> list[Probe]:
    """The checkpoints and flags a release diff judges: each scheme preset's quantization_config,
    every ``--quantization`` name in ``methods`` on a bf16 checkpoint, each KV preset's flag."""
    from ..checkpoint.parse import parse_quantization_config
    from ..checkpoint.write import quantization_config
    from ..engines.listing import Probe

    out = [Probe("bf16 (unquantized)", None)]
    for sid in catalog.scheme_ids():
        preset = catalog.scheme_preset(sid)
        qc = quantization_config(catalog.get_scheme(sid), preset.deploy)
        if qc is not None:
            fmt = qc.get("format") or qc["quant_method"]
            out.append(Probe(f"{sid} checkpoint ({fmt})", parse_quantization_config(qc)))
    for name in methods or []:
        out.append(Probe(f"bf16 + --quantization {name}", None, quantization=name))
    for kid in catalog.kv_ids():
        hints = catalog.kv_preset(kid).deploy
        flag = kv_cache_flag(engine, hints)
        if flag and flag != "auto":
            out.append(Probe(f"bf16 + --kv-cache-dtype {flag}", None, kv_cache_dtype=flag))
    return out


def probe_gpus() -> list[tuple[str, int]]:
    """One NVIDIA GPU per compute capability on file: ("sm80 (a100-40gb)", 80)."""
    seen: dict[int, str] = {}
    for gid in catalog.gpu_ids():
        g = catalog.get_gpu(gid)
        if g.vendor.lower() == "nvidia" and g.capability is not None and g.capability not in seen:
            seen[g.capability] = g.id
    return [(f"sm{c} ({seen[c]})", c) for c in sorted(seen)]


