"""``size``: whole-model memory under a scheme."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import catalog, defaults
from ..catalog.resolve import (
    engine_share,
    find_config,
    from_config,
    get_gpu,
    load_model,
    resolve_kv,
    resolve_scheme,
    shipped_scheme,
)
from ..memory.sizing import SizeReport, size_model
from ..model.arch import ModelArch, ModelSource
from ..scheme.axes import Scheme, TensorQuant
from ..scheme.regroup import regrouped_description

if TYPE_CHECKING:
    from ..hardware import GPU


def size(
    model: str | dict[str, Any] | ModelArch = defaults.MODEL,
    scheme: str | Scheme | None = None,
    *,
    bits: int | None = None,
    group: int | None = None,
    symmetric: bool | None = None,
    lm_head: bool | None = None,
    embedding: bool | None = None,
    kv_dtype: str | TensorQuant | None = None,
    ctx: int | None = None,
    batch: int = 1,
    gpu: str | GPU | None = None,
    gpus: int = 1,
    include_mtp: bool = False,
    memory_utilization: float | None = None,
    reserve_bytes: int = defaults.RESERVE_BYTES,
    profile: str | None = None,
) -> SizeReport:
    """Whole-model memory of ``model`` under a scheme, per component, with optional KV and fit.

    ``size`` names no engine: with ``gpu`` and no ``memory_utilization`` the engine's share of each GPU
    is the newest bundled vLLM's default ``--gpu-memory-utilization`` (what ``recommend`` and ``check``
    assume for that release), and a note says so.

    >>> r = size("meta-llama/Llama-3-8B", bits=4, group=128)
    >>> round(r.total_bytes / 1e9, 2)
    5.73
    """
    from ..errors import SchemeError
    from ..inputs import BITS, check, shown, within

    gpus, batch, ctx = check("gpus", gpus), check("batch", batch), check("ctx", ctx)
    group = check("group", group)
    if bits is not None and not within(bits, BITS):  # bounded before any arithmetic, in the scheme's own words
        raise SchemeError(f"--bits must be between 2 and 8 (or 16 for unquantized), got {shown(bits)}", field="bits")
    memory_utilization = check("memory_utilization", memory_utilization)
    # bytes as GiB, the flag's unit; an integer too large for a float is out of range as it is
    check("reserve_gb", reserve_bytes / defaults.GiB if abs(reserve_bytes) < 2**1000 else reserve_bytes)
    arch, info, found = model_and_config(model)  # also the checkpoint as shipped, the context limit
    shipped = native = None
    asked = not (scheme is None and bits is None and group is None and symmetric is None and lm_head is None
                 and embedding is None)
    if found is not None and (not asked or "quantization_config" in found[1]):
        native = shipped_scheme(arch, *found)
        shipped = None if asked else native  # no scheme asked for: the checkpoint as it is stored
    s = shipped.scheme if shipped is not None else resolve_scheme(
        scheme, bits=bits, group=group, symmetric=symmetric, lm_head=lm_head, embedding=embedding)
    if scheme is not None and group is not None and bits is None:
        base = resolve_scheme(scheme, symmetric=symmetric, lm_head=lm_head, embedding=embedding)
        s = s.model_copy(update={"description": regrouped_description(base, s)})
    if asked and native is not None:
        from ..checkpoint.native import requantization

        s = requantization(s, native)  # the layers the shipped checkpoint keeps 16-bit, as recommend sizes it
    kv, kv_name = resolve_kv(kv_dtype)
    g = get_gpu(gpu) if gpu is not None else None
    if g is not None:
        from ..perf.step import check_tensor_parallel

        check_tensor_parallel(arch, g, gpus)  # what recommend and roofline refuse, refused here too
    warnings = ignored_flags(gpu=gpu, gpus=gpus, memory_utilization=memory_utilization, reserve_bytes=reserve_bytes,
                             ctx=ctx, batch=batch, kv_dtype=kv_dtype, include_mtp=include_mtp,
                             mtp_layers=arch.num_mtp_layers)
    if ctx:
        warnings += context_warnings(found, info.id, [ctx])
    note = None
    shipped_note = (f"sized as shipped: {s.id} (the checkpoint's quantization_config; --scheme bf16 for the 16-bit "
                    "model)") if shipped is not None else None
    if g is not None and memory_utilization is None:
        memory_utilization, _, why = engine_share(g, gpus)
        note = (f"usable memory: {round(memory_utilization * 100, 2):g}% of each GPU, {why} (`size` names no engine: "
                "the newest bundled vLLM's; --memory-utilization to change)")
    report = size_model(
        arch,
        s,
        model_info=info,
        include_mtp=include_mtp,
        kv=kv,
        kv_name=kv_name,
        ctx=ctx,
        batch=batch,
        gpu=g,
        gpus=gpus,
        memory_utilization=memory_utilization if memory_utilization is not None else defaults.MEMORY_UTILIZATION,
        reserve_bytes=reserve_bytes,
    )
    update: dict[str, Any] = {"warnings": [*report.warnings, *warnings]}
    notes = [n for n in (shipped_note, note, profile_note(profile)) if n is not None]
    if notes:
        update["notes"] = [*report.notes, *notes]
    return report.model_copy(update=update)


def profile_note(profile: str | None) -> str | None:
    """What ``size`` does with ``--profile``: a deployment profile's serving terms, or an efficiency
    profile's curves, price speed, which ``size`` does not report — said, not silently dropped."""
    if profile is None:
        return None
    from pathlib import Path

    from ..catalog.profiles import deployment_doc, load_perf_profile, load_site_profile

    if deployment_doc(profile) is not None:
        site = load_site_profile(profile)
        what = ", ".join(f"{t.gpu} {t.engine} {t.version}" for t in site.serving)
        return (f"profile {profile}: deployment profile {site.id} (serving terms for {what}) read; they price "
                "speed (recommend, roofline, check), and the memory figures here do not depend on them")
    prof = load_perf_profile(Path(profile))
    return (f"profile {profile}: efficiency profile {prof.id} read; it prices speed (recommend, roofline, check), and "
            "the memory figures here do not depend on it")


def ignored_flags(*, gpu: object, gpus: int, memory_utilization: float | None, reserve_bytes: int, ctx: int | None,
                  batch: int, kv_dtype: object, include_mtp: bool, mtp_layers: int) -> list[str]:
    """One warning per flag ``size`` was given that changes nothing, saying what to add."""
    out: list[str] = []
    if gpu is None:
        given = [f for f, on in (("--gpus", gpus != 1), ("--memory-utilization", memory_utilization is not None),
                                 ("--reserve-gb", reserve_bytes != defaults.RESERVE_BYTES)) if on]
        out += [f"{f} has no effect without --gpu: add --gpu (e.g. --gpu {defaults.GPU}) to size the fit" for f in given]
    if not ctx:
        given = [f for f, on in (("--batch", batch != 1), ("--kv-dtype", kv_dtype is not None)) if on]
        out += [f"{f} has no effect without --ctx: add --ctx (tokens per sequence) to size the KV cache" for f in given]
    if include_mtp and not mtp_layers:
        out.append("--mtp has no effect: this model has no multi-token-prediction layers")
    return out


def model_config(model: object) -> tuple[Any, dict[str, Any]] | None:
    """(where the config came from or None, the config.json dict) of a model given by name or as a dict;
    None for a parsed ModelArch. A name was resolved by load_model already: bundled or cached, no download."""
    if isinstance(model, dict):
        return None, model
    if isinstance(model, str):
        return find_config(model)
    return None


def model_and_config(
    model: str | dict[str, Any] | ModelArch,
) -> tuple[ModelArch, ModelSource, tuple[Any, dict[str, Any]] | None]:
    """``load_model``'s (architecture, where it came from) and :func:`model_config`, the config read once."""
    found = model_config(model)
    arch, info = from_config(*found) if found is not None and found[0] is not None else load_model(model)
    return arch, info, found


def context_warnings(found: tuple[Any, dict[str, Any]] | None, model_id: str, contexts: list[int]) -> list[str]:
    """A warning when a context is longer than the engines serve for this model (``found``: its
    :func:`model_config`): they refuse such a ``--max-model-len`` / ``--context-length`` at startup (the
    limit each derives, ``advisor.limits``)."""
    from ..engines.limits import ContextLimit, context_limit

    if not contexts or found is None:
        return []
    cfg = found[1]
    flags = {"vllm": "--max-model-len", "sglang": "--context-length"}
    by_limit: dict[tuple[int, str, float | None], list[tuple[str, ContextLimit]]] = {}
    for name in sorted(catalog.engine_names(), key=lambda n: n != defaults.ENGINE):  # the default engine first
        lim = context_limit(cfg, catalog.engine_startup(name, catalog.get_engine(name).version))
        if lim.tokens is not None and max(contexts) > lim.tokens:
            by_limit.setdefault((lim.tokens, lim.key or "", lim.rope_factor), []).append(
                (catalog.get_engine(name).label, lim))
    out: list[str] = []
    for (tokens, key, factor), engines in by_limit.items():
        over = sorted(c for c in contexts if c > tokens)
        said = [f"{c:,}" for c in over]
        listed = said[0] if len(said) == 1 else f"{', '.join(said[:-1])} and {said[-1]}"
        label, first = engines[0]
        out.append(f"--ctx {listed} {'is' if len(over) == 1 else 'are'} longer than "
                   f"{model_id} serves: {' and '.join(e for e, _ in engines)} derive at most {tokens:,} tokens per "
                   f"sequence ({key}{f' x rope factor {factor:g}' if factor else ''}) and refuse a longer "
                   f"{' / '.join(flags.get(lim.engine, '--max-model-len') for _, lim in engines)} at startup "
                   f"({label}: \"{first.refusal(over[-1])}\"); these figures are for a configuration that does not "
                   "start")
    return out
