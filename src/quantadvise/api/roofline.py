"""``roofline``: decode step time, tokens/s and bound per scheme x batch x context."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import catalog, defaults
from ..catalog.resolve import (
    engine_share,
    get_gpu,
    load_profiles,
    load_site_terms,
    release_warning,
    resolve_kv,
    resolve_scheme,
)
from ..errors import InputError
from ..hardware import GPU
from ..model.arch import ModelArch
from ..scheme.axes import Scheme, TensorQuant

if TYPE_CHECKING:
    from ..perf.profiles import PerfProfile
    from ..perf.roofline import RooflineResult


MAX_POINTS = 20_000  # scheme x batch x context points one roofline prices (1..4096 x 3 contexts x 12: 468)


def roofline(
    model: str | dict[str, Any] | ModelArch = defaults.MODEL,
    schemes: str | Scheme | list[str | Scheme] | None = None,
    *,
    gpu: str | GPU = defaults.GPU,
    gpus: int = 1,
    kv_dtype: str | TensorQuant | None = None,
    batches: str | int | list[int] | None = None,
    ctx: str | int | list[int] = defaults.ROOFLINE_CONTEXTS,
    prompt: int | None = None,
    group: int | None = None,
    ideal: bool = False,
    profile: str | Path | PerfProfile | None = None,
    scope: str = "full",
    curve_points: int = 0,
    engine: str | None = None,
    engine_version: str | None = None,
    quantization: str | None = None,
    pareto: bool = False,
    output: int | None = None,
    ttft_ms: float | None = None,
    itl_ms: float | None = None,
    e2e_ms: float | None = None,
    usd_per_gpu_hour: float | None = None,
    spec_tokens: int | None = None,
    acceptance: float | None = None,
) -> RooflineResult:
    """Decode step time, tokens/s, bound, byte shares and FLOPs per scheme x batch x context on
    ``gpus`` x ``gpu``; each scheme's ridge batch; pairwise crossover batches; TTFT for ``prompt``.

    ``schemes``: names / YAML paths (a list or ``"bf16,w4a16,fp8-dynamic"``); default bf16, w4a16
    and w8a8-fp8 (w8a8-int8 on GPUs without fp8). ``batches``: ``"1,8,64,512"`` or ``"1..512"``.
    Efficiencies come from data/perf_profile.yaml, then the GPU's measured kernel profile
    (data/profiles/<gpu>.yaml: each linear layer priced by the curve of the kernel ``engine``
    ``engine_version`` runs for it, started with ``--quantization quantization`` when given), then
    ``profile`` (a file or a PerfProfile); ``ideal=True`` uses the spec sheet instead. ``scope="decoder"`` counts only
    the decoder linear matrices, KV and the residual stream (the chapter's accounting). ``group``
    sets the weight group size of every scheme with per-group weight scales; without it the
    default list picks a group that divides the model's K (gpt-oss: 64), explicit schemes keep theirs.
    ``batches`` defaults to ``defaults.ROOFLINE_BATCHES`` (``defaults.PARETO_BATCHES`` with ``pareto``).
    ``ctx`` is the context a decode step reads (0: no KV cache read); a ``prompt`` must fit in every one.

    Serving (docs/roofline.md §12): ``pareto=True`` prices every (scheme, context, batch) as a serving point
    under continuous batching — requests of ``prompt`` + ``output`` tokens (default
    ``defaults.OUTPUT_TOKENS``), the context a decode step reads being ``ctx`` — and marks each scheme's
    frontier of tokens/s per GPU vs per user and the point to run at, within ``ttft_ms`` / ``itl_ms`` /
    ``e2e_ms``. ``usd_per_gpu_hour`` (default: the GPU's list price in data/pricing.yaml) adds $/Mtok;
    ``spec_tokens`` with ``acceptance`` adds speculative decoding.

    >>> r = roofline("meta-llama/Llama-3-8B", "bf16,fp8-dynamic", gpu="h100", ideal=True, batches=1, ctx=0)
    >>> round(r.ridge_batch["bf16"])
    295
    """
    from ..inputs import check, lengths, names, serving_pairs
    from ..inputs import engine as check_engine
    from ..perf.inputs import fit_weight_group, parse_batches, parse_contexts, unfit_k
    from ..perf.roofline import roofline as run
    from ..perf.serving import Slo, Speculation
    from .size import context_warnings, model_and_config
    from .speed import efficiency, price_for

    # every input checked before any work, by the checks (and messages) recommend, size and check use
    gpus, group = check("gpus", gpus), check("group", group)
    prompt, output = check("prompt", prompt), check("output", output)
    prompt = prompt or None  # an empty prompt, as a workload may have: no prefill to price (--pareto's default)
    engine = check_engine(engine)
    ttft_ms, itl_ms, e2e_ms = check("ttft_ms", ttft_ms), check("itl_ms", itl_ms), check("e2e_ms", e2e_ms)
    usd_per_gpu_hour = check("usd_per_gpu_hour", usd_per_gpu_hour)
    spec_tokens, acceptance = check("spec_tokens", spec_tokens), check("acceptance", acceptance)
    serving_pairs({"spec_tokens": spec_tokens, "acceptance": acceptance})
    budgets = {"--ttft-ms": ttft_ms, "--itl-ms": itl_ms, "--e2e-ms": e2e_ms, "--output": output}
    if not pareto and any(v is not None for v in budgets.values()):
        flag = next(k for k, v in budgets.items() if v is not None)
        raise InputError(f"{flag} applies to the serving points of --pareto", hint="add --pareto", field="pareto")
    if batches is None:
        batches = defaults.PARETO_BATCHES if pareto else defaults.ROOFLINE_BATCHES
    batch_list, contexts = parse_batches(batches), parse_contexts(ctx)
    lengths(min(contexts), prompt, output, decode=True)  # a decode step at --ctx reads the prompt's KV
    arch, info, found = model_and_config(model)  # also the config the context limit reads
    g = get_gpu(gpu)
    use_default_list = schemes is None
    if schemes is None:
        schemes = ["bf16", "w4a16", "w8a8-fp8" if g.has_math("fp8") else "w8a8-int8"]
    elif isinstance(schemes, str):
        schemes = list(names("scheme", schemes, "bf16,w4a16,w8a8-fp8") or ())
    elif isinstance(schemes, Scheme):
        schemes = [schemes]
    points = len(schemes) * len(batch_list) * len(contexts)
    if points > MAX_POINTS:  # each point is a step priced on its own
        raise InputError(f"--scheme x --batch x --ctx is {len(schemes)} x {len(batch_list)} x {len(contexts)} = "
                         f"{points:,} points; at most {MAX_POINTS:,} are priced at once", field="batch")
    resolved = [resolve_scheme(s) for s in schemes]
    notes: list[str] = []
    if group is not None:
        resolved = [s.with_weight_group(group) if s.weight is not None and s.weight.scale is not None
                    and s.weight.scale.group.is_per_group else s for s in resolved]
    elif use_default_list:
        fitted = [fit_weight_group(arch, s) for s in resolved]
        notes = [f"{n} (--group to choose)" for _, n in fitted if n]
        # the default list fits the model: a scheme no group of 16 or more fits is left out, and said so
        resolved = []
        for s, _ in fitted:
            bad = unfit_k(arch, s)
            if bad is None:
                resolved.append(s)
            else:
                notes.append(f"{s.id} left out: no group of 16 or more divides K = {bad:,} (-s {s.id} --group -1 "
                             "prices it per channel)")
    profiles = load_profiles(ideal, profile, g)
    if not ideal:  # priced with the release's kernels: say once when its table is another release's
        from .speed import kernel_note

        notes += [n for n in (kernel_note(engine, engine_version),) if n]
    stand_in = None
    if engine is not None:
        stand_in = release_warning(engine, engine_version)
        eng = catalog.get_engine(engine, engine_version)
        engine, engine_version = eng.engine, eng.version
    effs = [efficiency(profiles, g, s, engine=engine, version=engine_version, quantization=quantization)
            for s in resolved]
    if not ideal:  # a MoE model's experts that run the engine's Triton kernel with its default tiles, said once each
        from .speed import moe_default_tiles

        notes += [n for s, e in zip(resolved, effs, strict=True) if (n := moe_default_tiles(
            arch, g, s, e, model=info.id, gpus=gpus, engine=engine, version=engine_version))]
    kv, kv_name = resolve_kv(kv_dtype)
    # what "fits" means: the engine's own share of each GPU (the named release's, else the newest vLLM's)
    share, reserve, _ = engine_share(g, gpus, arch=arch, engine=engine, version=engine_version)
    too_long = context_warnings(found, info.id, [c for c in contexts if c])  # engines refuse them at startup
    result = run(
        arch,
        resolved,
        g,
        effs,
        model_info=info,
        kv=kv,
        kv_name=kv_name,
        batches=batch_list,
        contexts=contexts,
        prompt=prompt,
        gpus=gpus,
        nvlink_domain=(c.nvlink_domain_gpus or 8) if gpus > 8 and (c := catalog.comm_system(g.id)) is not None else 8,
        scope=scope,
        curve_points=curve_points,
        notes=notes,
        memory_utilization=share,
        reserve_bytes=reserve,
        price=price_for(g, usd_per_gpu_hour),
        spec=Speculation(spec_tokens, acceptance) if spec_tokens is not None and acceptance is not None else None,
        loop=None if ideal or not pareto else catalog.engine_loop(
            g, engine or defaults.ENGINE, catalog.get_engine(engine or defaults.ENGINE, engine_version).version,
            tp=gpus, site=load_site_terms(profile)),
        pareto=(output or defaults.OUTPUT_TOKENS,
                Slo(ttft_s=ttft_ms / 1e3 if ttft_ms else None, itl_s=itl_ms / 1e3 if itl_ms else None,
                    e2e_s=e2e_ms / 1e3 if e2e_ms else None)) if pareto else None,
    )
    said = [*([stand_in] if stand_in else []), *result.warnings, *too_long, *refused_kernels(resolved, effs, g, engine,
                                                                                         engine_version)]
    return result.model_copy(update={"warnings": said}) if said != result.warnings else result


def refused_kernels(schemes: list[Scheme], effs: list[Any], gpu: GPU, engine: str | None,
                    version: str | None) -> list[str]:
    """A warning per scheme whose kernel the engine release picks and stops on at start-up on this GPU (its own
    message): the figures price a kernel the release never reaches."""
    from ..engines.kernel_refusals import refusal_of

    eng = catalog.get_engine(engine or defaults.ENGINE, version if engine else None)  # the release that priced them
    out = []
    for s, e in zip(schemes, effs, strict=True):
        ch = e.kernels.layer_choice if e.kernels is not None else None
        r = refusal_of(eng.kernel_refusals, ch.kernel.id, gpu.capability, gpu.platform) if ch is not None else None
        if r is not None:
            said = eng.message(r.message)
            msg = said.render(capability=gpu.capability) if said is not None else r.message
            out.append(f"{s.id}: {eng.label} stops at start-up on {gpu.name} — {msg} ({r.note})")
    return out
