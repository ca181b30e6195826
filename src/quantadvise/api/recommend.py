"""``recommend`` and ``predict``: resolve the workload's names, then walk the decision tree."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any

from .. import catalog, defaults
from ..catalog.resolve import (
    find_config,
    get_gpu,
    load_model,
    load_profiles,
    release_warning,
    resolve_kv,
    resolve_scheme,
    shipped_scheme,
)
from ..engines.flags import kv_cache_flag
from ..errors import InputError, QuantAdviseError
from ..model.inventory import inventory_of
from ..results import record
from ..scheme.axes import Scheme, TensorQuant
from ..scheme.regroup import regrouped, regrouped_deploy
from ..wording import plural

if TYPE_CHECKING:
    from ..advisor.options import Candidate, KvOption
    from ..advisor.result import Prediction, Recommendation
    from ..checkpoint.native import Native
    from ..checkpoint.published import Published, Speculator
    from ..engines.data import EngineData
    from ..engines.limits import ContextLimit
    from ..engines.startup import StartupFacts
    from ..hardware import GPU
    from ..model.arch import ModelArch
    from ..perf.loop import LoopTerms
    from ..perf.serving import Price, Slo, Speculation
    from ..workload import Workload


def recommend(workload: Workload | dict[str, Any] | None = None, *, frontier: bool = False,
              bench_plan: bool = False, **overrides: Any) -> Recommendation:
    """Walk the decision tree for a workload and return the recommended scheme, the trace, the
    ranked alternatives and how to deploy it.

    ``workload`` is a :class:`~quantadvise.workload.Workload`, a dict of its keys (what a
    ``--workload`` YAML file holds), or None; keyword overrides win over it. Serving targets
    (docs/recommend.md): ``ttft_ms`` / ``itl_ms`` / ``e2e_ms`` run each candidate at the largest
    concurrency that meets them; ``rate`` (requests/s) or ``users`` size the GPUs; ``usd_per_gpu_hour``
    prices them (default: data/pricing.yaml); ``spec_tokens`` with ``acceptance`` adds speculative
    decoding. ``frontier=True`` samples each ranked candidate's Pareto frontier (``recommend --plot``);
    ``bench_plan=True`` writes the server and benchmark commands that measure the winner and its closest
    rival at this workload (``recommend --bench-plan``; ``validate --bench`` reads their results).

    >>> r = recommend(batch=1, ctx=2048)
    >>> r.scheme.axes.weights.bits
    4
    """
    from ..errors import InputError
    from ..inputs import serving_pairs
    from ..perf.efficiency import profile_warnings

    data = _workload_data(workload, overrides)
    serving_pairs(data)
    w = _parse(data)
    searched = (_slo(w) is not None or w.rate is not None or w.users is not None) and "batch" not in data
    if searched:  # the batch becomes the upper end of the concurrency search
        bound = defaults.MAX_CONCURRENCY_SEARCH
        if w.users is not None:  # N users never put more than N sequences in flight
            bound = min(bound, w.users)
        w = w.model_copy(update={"batch": bound})
    from .pool import pool_question

    if pool_question(w):  # a pool: the layout search (api/pool.py)
        return _recommend_pool(w, data, searched, frontier)
    inputs = _resolve(w, set(data))
    inputs.batch_bound, inputs.frontier = searched, frontier
    if bench_plan:
        inputs.bench_options = {e.engine: catalog.bench_options(e.engine, e.version)
                                for e in (inputs.engine, *([inputs.other] if inputs.other else []))}
    inputs.price = _price(w, inputs.gpu, "usd_per_gpu_hour" in data)
    inputs.assumptions += _target_assumptions(w, inputs, searched, "gpus" in data)
    if not w.ideal:  # the serving loop every figure runs through (perf.loop)
        lp = catalog.engine_loop(inputs.gpu, inputs.engine.engine, inputs.engine.version, tp=w.gpus, site=inputs.site)
        inputs.assumptions.append(f"serving loop: {lp.label()}" + (f" (deployment profile {w.profile})" if inputs.site
                                                                    else "") + "; docs/calibration.md §9")
    if not w.ideal:  # priced with the release's kernels: say once when its table is another release's
        from .speed import kernel_note

        inputs.assumptions += [n for n in (kernel_note(w.engine, w.engine_version),) if n]
    try:
        if w.rate is not None or w.users is not None:
            rec = _walk_load(inputs, w, fixed_gpus="gpus" in data)
        else:
            rec = _walk(inputs, w)
    except InputError as exc:
        if exc.field == "ctx":
            raise _with_sibling_hint(exc, inputs, w) from None
        if exc.field == "kv_dtype":
            raise _with_kv_hint(exc, inputs) from None
        if exc.field != "workload":
            raise
        raise _with_gpu_hint(exc, inputs, w, set(data)) from None
    warn = list(inputs.arch.warnings) + [x for x in rec.warnings if x not in inputs.arch.warnings]
    warn += profile_warnings([c.efficiency for c in inputs.candidates], inputs.gpu.id)
    stand_in = release_warning(w.engine, w.engine_version)
    return rec.model_copy(update={"warnings": [stand_in, *warn] if stand_in else warn})


def _recommend_pool(w: Workload, data: dict[str, Any], searched: bool, frontier: bool) -> Recommendation:
    """The layout search over the workload's pool, given this module's resolvers."""
    from .pool import recommend_pool

    def walk(inputs: _Inputs, wt: Workload) -> Recommendation:
        inputs.price = _price(wt, inputs.gpu, "usd_per_gpu_hour" in data)
        # the load's own line is the layout search's (api/pool.py), not the tree's tensor-parallel degrees
        told = [a for a in _target_assumptions(wt, inputs, searched, True) if not a.startswith("load:")]
        inputs.assumptions = [*inputs.assumptions, *told]
        rec = _walk(inputs, wt)
        return rec.model_copy(update={"warnings": list(dict.fromkeys([*inputs.arch.warnings, *rec.warnings]))})

    return recommend_pool(w, data, searched=searched, frontier=frontier,
                          hooks={"resolve": _resolve, "walk": walk, "dtypes": _engine_dtypes, "price": _price,
                                 "slo": _slo, "spec": _spec})


@record(frozen=False)
class _Inputs:
    """Everything the tree needs for one workload, resolved once (names, files, engine data)."""

    arch: ModelArch
    model_id: str
    gpu: GPU
    engine: EngineData
    other: EngineData | None
    candidates: list[Candidate]
    kv_options: dict[str, KvOption]
    quant_kv: str
    forced: str | None
    assumptions: list[str]
    native: Native | None
    limits: dict[str, ContextLimit]
    startup: StartupFacts  # the engine release's start-up memory facts (its default memory fraction)
    cache: dict[Any, Any] = field(default_factory=dict)  # sizes and step models, reused across walks
    price: Price | None = None  # the $/GPU-hour behind $/Mtok
    batch_bound: bool = False  # the batch is a search bound (a serving target without --batch)
    frontier: bool = False
    fp16: dict[str, str] = field(default_factory=dict)  # engine -> its float16 fallback message on this GPU
    gpu_refused: dict[str, str] = field(default_factory=dict)  # engine -> the message it refuses this GPU with
    published: tuple[tuple[Published, Scheme], ...] = ()  # published checkpoints of the model as asked
    draft: Speculator | None = None  # its published speculative-decoding draft
    site: tuple[LoopTerms, ...] = ()  # a deployment profile's serving terms (--profile site.yaml)
    bench_options: dict[str, Any] | None = None  # --bench-plan: engine -> its release's benchmark options
    options: dict[str, Any] = field(default_factory=dict)  # engine -> its release's option list (the plan's spellings)


def _resolve(w: Workload, explicit: set[str]) -> _Inputs:
    from ..advisor.options import BF16_KV, KvOption
    from ..engines.limits import context_limit
    from ..model.parse import parse_config

    src, cfg = find_config(w.model)
    arch = parse_config(cfg, src.location if src.kind != "bundled" else src.id)
    g = get_gpu(w.gpu)
    engine = catalog.get_engine(w.engine, w.engine_version)
    other = next((catalog.get_engine(n) for n in catalog.engine_names() if n != engine.engine), None)
    native = shipped_scheme(arch, src, cfg)
    candidates, group_notes, unmeasured = _candidates(w, arch, g, native)
    quant_kv = defaults.QUANTIZED_KV
    forced = catalog.kv_preset(w.kv_dtype) if w.kv_dtype is not None else None
    presets = [catalog.kv_preset(BF16_KV), catalog.kv_preset(quant_kv), *([forced] if forced else [])]
    kv_options = {p.id: KvOption(p.kv_cache if p.kv_cache.is_quantized else None, p.deploy) for p in presets}
    if forced is not None and forced.kv_cache.is_quantized:
        quant_kv = forced.id  # the tree's "quantized KV" is the one the workload asked for
    assumptions = _assumptions(w, explicit, src.id, g.name, engine.label, candidates, unmeasured) + group_notes
    limits = {e.engine: context_limit(cfg, catalog.engine_startup(e.engine, e.version))
              for e in (engine, *([other] if other else []))}
    fp16, refused = _engine_dtypes(arch, g, engine, other)
    return _Inputs(arch=arch, model_id=src.id, gpu=g, engine=engine, other=other, candidates=candidates,
                   kv_options=kv_options, quant_kv=quant_kv, forced=forced.id if forced else None,
                   assumptions=assumptions, native=native, limits=limits,
                   startup=catalog.engine_startup(engine.engine, engine.version), fp16=fp16, gpu_refused=refused,
                   published=_published(w.model, src.id if src.kind == "bundled" else None),
                   draft=_draft(w.model, src.id) if src.kind == "bundled" and w.spec_tokens else None,
                   site=site_terms(w.profile),
                   options={e.engine: catalog.option_names(e.engine, e.version)
                            for e in (engine, *([other] if other else []))})


def _draft(asked: str, bundled: str) -> Speculator | None:
    from ..catalog.checkpoints import speculator_for

    return speculator_for(bundled, asked)


def _published(asked: str, bundled: str | None) -> tuple[tuple[Published, Scheme], ...]:
    """The published checkpoints of the model as asked (data/checkpoints.yaml): rows of its bundled model
    whose base model is the name given (an -Instruct alias serves -Instruct checkpoints, the base id base
    ones), from a producer on defaults.PUBLISHED_PRODUCERS, with a quantized scheme preset."""
    from ..catalog.checkpoints import published_for
    from ..errors import norm_name

    if bundled is None:
        return ()
    want = norm_name(asked)
    out = []
    for p in published_for(bundled):
        if norm_name(p.base_model) != want or norm_name(p.id) == want or p.scheme is None \
                or p.short_producer not in defaults.PUBLISHED_PRODUCERS:
            continue
        scheme = catalog.get_scheme(p.scheme)
        if scheme.quantizes_weights:
            out.append((p, scheme))
    return tuple(out)


def _walk(inputs: _Inputs, w: Workload) -> Recommendation:
    from ..advisor.fit import engine_memory
    from ..advisor.options import BF16_KV, Context, build_options
    from ..advisor.tree import recommend as walk

    ctx = Context(arch=inputs.arch, gpu=inputs.gpu, workload=w, kv_options=inputs.kv_options,
                  quant_kv=inputs.quant_kv, rules=catalog.accuracy_rules(), engine=inputs.engine,
                  other_engine=inputs.other, model_id=inputs.model_id, kv_name=inputs.forced or BF16_KV,
                  forced_kv=inputs.forced is not None, native=inputs.native, limits=inputs.limits,
                  model_params=inventory_of(inputs.arch).total_params(), memo=inputs.cache, slo=_slo(w),
                  spec=_spec(w), usd_per_gpu_hour=inputs.price.usd_per_gpu_hour if inputs.price else None,
                  batch_bound=inputs.batch_bound, frontier=inputs.frontier, startup=inputs.startup,
                  fp16=inputs.fp16, gpu_refused=inputs.gpu_refused, published=inputs.published, draft=inputs.draft,
                  kv_issues=catalog.kv_issues(), bench_options=inputs.bench_options, options=inputs.options,
                  loop=None if w.ideal else catalog.engine_loop(inputs.gpu, inputs.engine.engine,
                                                                inputs.engine.version, tp=w.gpus, site=inputs.site))
    options = build_options(inputs.arch, inputs.gpu, w, inputs.candidates, inputs.kv_options, inputs.quant_kv,
                            inputs.cache)
    memory = engine_memory(ctx, w.gpus).assumption(w.headroom)  # the engine's own share at this GPU count
    rec = walk(ctx, options, [memory if a == _MEMORY else a for a in inputs.assumptions])
    return rec.model_copy(update={"price": inputs.price}) if inputs.price is not None else rec


def _walk_load(inputs: _Inputs, w: Workload, *, fixed_gpus: bool) -> Recommendation:
    """The tree at each tensor-parallel degree, then the GPUs each scheme needs for ``w.rate`` or
    ``w.users`` (:func:`quantadvise.advisor.load.walk_load`)."""
    from ..advisor.load import walk_load

    price = inputs.price.usd_per_gpu_hour if inputs.price else None
    return walk_load(lambda t: _walk(inputs, w.model_copy(update={"gpus": t})), inputs.arch, inputs.gpu, w,
                     fixed_gpus=fixed_gpus, usd_per_gpu_hour=price)


def _engine_dtypes(arch: ModelArch, g: GPU, engine: EngineData,
                   other: EngineData | None) -> tuple[dict[str, str], dict[str, str]]:
    """The engines' start-up dtype checks on this GPU (data/engines/*.yaml dtype_checks), per engine name:
    (the message it logs when it runs this model's 16-bit weights in float16 — bfloat16 below compute
    capability 8.0: vLLM's --dtype auto falls back, SGLang downgrades —, the message it refuses to start
    with whatever the scheme — SGLang below 7.5: "SGLang only supports sm75 and above."). The engine the
    workload names refusing is an input error; the other one gets no command."""
    from ..engines.config_checks import dtype_fallback, dtype_refusal

    cap = g.engine_capability
    fp16: dict[str, str] = {}
    refused: dict[str, str] = {}
    if cap is None:
        return fp16, refused
    how = dict(config_dtype=arch.torch_dtype, gpu_name=g.device_name or g.name, platform=g.platform)
    for eng in (engine, *([other] if other is not None else [])):
        msg = dtype_refusal(eng, cap, "auto", **how)
        if msg is not None:
            refused[eng.engine] = msg
            continue
        fb = dtype_fallback(eng, cap, "auto", **how)
        if fb is not None and fb[0] == "float16":
            fp16[eng.engine] = fb[1]
    if engine.engine in refused:
        raise InputError(f"{engine.label} does not start on {g.name} (compute capability "
                         f"{g.compute_capability}): {refused[engine.engine]}",
                         hint="choose another --engine or --gpu", field="engine")
    return fp16, refused


def _slo(w: Workload) -> Slo | None:
    from ..perf.serving import Slo

    if w.ttft_ms is None and w.itl_ms is None and w.e2e_ms is None:
        return None
    return Slo(ttft_s=w.ttft_ms / 1e3 if w.ttft_ms is not None else None,
               itl_s=w.itl_ms / 1e3 if w.itl_ms is not None else None,
               e2e_s=w.e2e_ms / 1e3 if w.e2e_ms is not None else None)


def _spec(w: Workload) -> Speculation | None:
    from ..perf.serving import Speculation

    if w.spec_tokens is None or w.acceptance is None:
        return None
    return Speculation(tokens=w.spec_tokens, acceptance=w.acceptance)


def _price(w: Workload, g: GPU, given: bool) -> Price | None:
    """The user's $/GPU-hour, else the GPU's row of data/pricing.yaml, else None."""
    from .speed import price_for

    return price_for(g, w.usd_per_gpu_hour if given else None)


def _target_assumptions(w: Workload, inputs: _Inputs, searched: bool, fixed_gpus: bool) -> list[str]:
    """What the serving targets assumed, in words."""
    out = []
    slo = _slo(w)
    if slo is not None:
        out.append(f"latency budgets: {slo.label()} — ITL is the mean a user sees (continuous batching: the prefills "
                   "of the requests that join spread over the output tokens); TTFT under load (queued prefills, "
                   "M/D/1); E2E = TTFT + (output - 1) x ITL")
    if searched:
        by = (f"--users {w.users:,} sets the bound" if w.users is not None and w.batch >= w.users
              else "--batch sets the bound")
        out.append(f"concurrency searched up to {plural(w.batch, 'sequence')} per replica and what the KV cache holds "
                   f"({by})")
    if w.rate is not None or w.users is not None:
        degrees = f"--gpus {w.gpus}" if fixed_gpus else "TP " + ", ".join(map(str, defaults.TP_DEGREES))
        out.append(f"load: {f'{w.rate:g} requests/s' if w.rate is not None else plural(w.users or 0, 'concurrent user')}; "
                   f"replicas of each tensor-parallel degree weighed ({degrees}); users = sequences in flight, think "
                   "time not modelled")
    spec = _spec(w)
    if spec is not None:
        from ..perf.serving import SPEC_MODEL

        out.append(f"{SPEC_MODEL}; K = {spec.tokens}, A = {spec.acceptance:g} -> {spec.tokens_per_step:.2f} tokens per "
                   f"step (a = {spec.per_token_acceptance():.3f})")
    if inputs.price is not None:
        out.append(f"price: {inputs.price.label()}; $/Mtok = $/GPU-hour x GPUs / (output tokens/s x 3600) x 1e6")
    return out


def _with_kv_hint(exc: QuantAdviseError, inputs: _Inputs) -> QuantAdviseError:
    """The engine refuses the forced KV dtype: name the KV presets it accepts on this GPU (each one's
    --kv-cache-dtype value through the engine resolver, as the engine node checks it)."""
    from ..engines.resolution import resolve
    from ..errors import InputError

    eng, g = inputs.engine, inputs.gpu
    platform = g.platform
    ok = []
    for kid in catalog.kv_ids():
        d = catalog.kv_preset(kid).deploy
        flag = kv_cache_flag(eng.engine, d)
        if flag is not None and not resolve(eng, None, capability=g.capability, platform=platform,
                                            kv_cache_dtype=flag).refused:
            ok.append(kid)
    hint = exc.hint or ""
    if ok:
        listed = ", ".join(ok[:-1]) + f" or {ok[-1]}" if len(ok) > 1 else ok[0]
        hint = hint.replace(f"pass a KV cache dtype {eng.label} accepts",
                            f"use --kv-dtype {listed} (what {eng.label} accepts on {g.name})")
    return InputError(exc.message, hint=hint or None, field="kv_dtype")


def _with_gpu_hint(exc: QuantAdviseError, inputs: _Inputs, w: Workload,
                   given: set[str] | None = None) -> QuantAdviseError:
    """Nothing serves the workload on ``w.gpus``: find, by walking the tree again, the smallest GPU
    count (a tensor-parallel degree the model's heads divide) on which something does; then the other
    ways out, in the workload's own terms: the latency budgets every candidate missed (with their
    values), a looser accuracy tolerance where the accuracy filter turned something down, and lower
    lengths or batch — only the ones the workload set (``given``: its keys)."""
    from ..advisor.tree import NoWinnerError
    from ..errors import InputError, NoSchemeError
    from ..perf.step import check_tensor_parallel

    keys = given if given is not None else {"batch", "ctx"}
    relax = list(exc.budgets) if isinstance(exc, NoWinnerError) else []
    # a looser accuracy tolerance helps only where the accuracy filter turned something down
    if not isinstance(exc, NoSchemeError) or exc.vetoed:
        relax.append("--accuracy-tolerance")
    lower = [f"--{k}" for k in ("batch", "ctx", "prompt", "output") if k in keys]
    ways = ([f"relax {', '.join(relax)}"] if relax else []) + ([f"lower {' / '.join(lower)}"] if lower else [])
    for n in range(w.gpus + 1, defaults.MAX_GPUS_SEARCH + 1):
        try:
            check_tensor_parallel(inputs.arch, inputs.gpu, n)
        except QuantAdviseError:
            continue
        try:
            rec = _walk(inputs, w.model_copy(update={"gpus": n}))
        except QuantAdviseError:
            continue
        return InputError(exc.message, field="workload",
                          hint=f"try --gpus {n}: the smallest count on which the tree finds a scheme "
                               f"({rec.scheme.id} with {rec.kv.dtype}, "
                               f"{plural(rec.kv.max_concurrency, 'sequence') if rec.kv.max_concurrency < 10**8 else 'all sequences'} "
                               f"held)" + "".join(f"; or {x}" for x in ways))
    return InputError(exc.message, field="workload",
                      hint=f"no GPU count up to {defaults.MAX_GPUS_SEARCH} serves it either: "
                           + "".join(f"{x}, or " for x in ways) + "choose a larger GPU")


def _with_sibling_hint(exc: QuantAdviseError, inputs: _Inputs, w: Workload) -> QuantAdviseError:
    """The context is over the model's limit: name a bundled sibling with the same shapes (same
    weights to quantize and serve) whose limit holds the context, when there is one."""
    from ..engines.limits import context_limit
    from ..errors import InputError
    from ..model.parse import parse_config

    a = inputs.arch
    shape = (a.model_type, a.hidden_size, a.num_layers, a.num_heads, a.num_kv_heads, a.intermediate_size, a.vocab_size)
    for mid in catalog.bundled_model_ids():
        if mid == inputs.model_id:
            continue
        row = catalog.find_bundled_model(mid)
        if row is None:
            continue
        cfg = catalog.bundled_config(row)
        b = parse_config(cfg, mid)
        if (b.model_type, b.hidden_size, b.num_layers, b.num_heads, b.num_kv_heads, b.intermediate_size,
                b.vocab_size) != shape:
            continue
        lim = context_limit(cfg, catalog.engine_startup(inputs.engine.engine, inputs.engine.version))
        if lim.tokens is not None and lim.tokens >= w.context:
            return InputError(exc.message, field="ctx",
                              hint=f"{exc.hint}, or serve {mid}: the same architecture with a {lim.tokens:,}-token "
                                   f"limit ({lim.key})")
    return exc


def _workload_data(workload: Workload | dict[str, Any] | None, overrides: dict[str, Any]) -> dict[str, Any]:
    from ..inputs import check_all, lengths
    from ..inputs import engine as check_engine
    from ..workload import Workload

    data = workload.model_dump(exclude_unset=True) if isinstance(workload, Workload) else dict(workload or {})
    # a workload file's keys as the schema reads them (``usd-per-gpu-hour``, ``concurrency``), so the
    # checks below that ask whether a key was given ("batch", "gpus", "usd_per_gpu_hour") see it
    data = {k.replace("-", "_") if isinstance(k, str) else k: v for k, v in data.items()}
    if "concurrency" in data and "batch" not in data:
        data["batch"] = data.pop("concurrency")
    given = {k: v for k, v in overrides.items() if v is not None}
    # flags and keyword arguments get the input layer's one message per number (a workload file's keys
    # are checked by the Workload schema against the same limits, with the file named)
    given = check_all(given)
    if "engine" in given:
        given["engine"] = check_engine(given["engine"])
    data.update(given)
    lengths(data.get("ctx"), data.get("prompt"), data.get("output"))
    return data


def _parse(data: dict[str, Any]) -> Workload:
    from ..workload import parse_workload

    return parse_workload(data)


def _candidates(w: Workload, arch: ModelArch, g: GPU,
                native: Native | None = None) -> tuple[list[Candidate], list[str], list[str]]:
    """The schemes to weigh (the workload's, else the default list; bf16 always, as the baseline; the checkpoint
    as shipped first when the model ships quantized), each fitted to the model's group constraints, priced by its
    efficiency curves and with what its engine does that the figures do not show (default MoE tiles). With a
    calibrated profile only the measured kernels are weighed (the advice follows the measurement)."""
    from ..advisor.options import Candidate
    from ..checkpoint.native import requantization
    from ..perf.inputs import fit_weight_group
    from .speed import efficiency, moe_cautions

    profiles = load_profiles(w.ideal, w.profile, g)
    names = [n for n in w.candidates if not _names_native(n, w.model, native)] if w.candidates \
        else list(defaults.CANDIDATES)
    if "bf16" not in [catalog.scheme_preset(n).id for n in names]:
        names.insert(0, "bf16")
    seen: set[str] = set()
    picks: list[Candidate] = []
    notes: list[str] = []
    if native is not None:
        eff = efficiency(profiles, g, native.scheme, engine=w.engine, version=w.engine_version)
        picks.append(Candidate(native.scheme, native.deploy, eff, native.checkpoint,
                               moe_cautions(arch, g, native.scheme, eff, w)))
    for n in names:
        preset = catalog.scheme_preset(n)
        if preset.id in seen:
            continue
        seen.add(preset.id)
        scheme, regroup_note = fit_weight_group(arch, catalog.scheme_from_preset(preset))
        if regroup_note:
            notes.append(regroup_note)
            scheme = scheme.model_copy(update={"description": regrouped(scheme.description, scheme)})
        deploy = regrouped_deploy(preset.deploy, scheme) if regroup_note else preset.deploy
        if native is not None:  # a re-quantization keeps 16-bit what the shipped checkpoint keeps 16-bit
            scheme = requantization(scheme, native)
        eff = efficiency(profiles, g, scheme, engine=w.engine, version=w.engine_version)
        picks.append(Candidate(scheme, deploy, eff, cautions=moe_cautions(arch, g, scheme, eff, w)))
    unmeasured: list[str] = []
    if not w.candidates and any(c.efficiency.model == "calibrated" and c.scheme.quantizes_weights for c in picks):
        unmeasured = [c.scheme.id for c in picks if c.efficiency.model != "calibrated" and c.scheme.id != "bf16"
                      and c.checkpoint is None]
        picks = [c for c in picks if c.efficiency.model == "calibrated" or c.scheme.id == "bf16"
                 or c.checkpoint is not None]
    return picks, notes, unmeasured


def _names_native(name: str, model: str, native: Native | None) -> bool:
    """Whether a --candidates entry names the checkpoint as shipped — ``native`` or the id the tree
    prints for it (``native-fp8``, ``native-mxfp4``) — which is always weighed when the model ships
    quantized. A native name for a 16-bit checkpoint, or one naming another method, is an input error."""
    from ..checkpoint.native import NATIVE_PREFIX
    from ..errors import InputError

    n = name.strip().lower()
    if n != "native" and not n.startswith(NATIVE_PREFIX):
        return False
    if native is None:
        raise InputError(f"--candidates {name}: {model} ships 16-bit weights (no "
                         "quantization_config), so there is no quantized checkpoint to serve as shipped",
                         hint="drop it: every quantized candidate is then a re-quantization (`quantadvise list "
                              "schemes` lists them)", field="candidates")
    if n not in ("native", native.id.lower()):
        raise InputError(f"--candidates {name}: the checkpoint as shipped is {native.id} "
                         f"({native.checkpoint.quant_method})", hint=f"write native or {native.id}", field="candidates")
    return True


_MEMORY = "memory: <the engine's share, per walk>"


def _assumptions(w: Workload, explicit: set[str], model_id: str, gpu_name: str, engine_label: str,
                 candidates: list[Candidate], unmeasured: list[str]) -> list[str]:
    """What the recommendation assumed that the user did not say, in words."""
    out = []
    if "model" not in explicit:
        out.append(f"model: {model_id} (the bundled default; --model to change)")
    if "gpu" not in explicit:
        out.append(f"GPU: {gpu_name} (default; --gpu to change)")
    if "engine" not in explicit or "engine_version" not in explicit:
        out.append(f"engine: {engine_label} (newest bundled; --engine / --engine-version)")
    if "ctx" not in explicit and "prompt" not in explicit:
        out.append(f"context: {plural(w.context, 'token')} per sequence (--ctx)")
    out.append(
        f"lengths: {w.prompt_tokens:,} prompt + {plural(w.output_tokens, 'output token')} per sequence (--prompt/--output); "
        f"a decode step is priced at the average {plural(w.decode_context, 'token')} held; the KV cache is sized for "
        + (f"{w.kv_tokens_per_sequence:,} tokens per sequence (continuous batching's steady-state average)"
           if w.serving_mode == "continuous" else f"the full {plural(w.context, 'token')} (synchronous batches grow together)")
    )
    if "mode" not in explicit:
        out.append(f"serving mode: {w.serving_mode} (auto: batch <= {defaults.SYNC_MAX_BATCH} is synchronous; --mode)")
    out.append(_MEMORY)  # the walk fills it in: the engine's share depends on the GPU count (SGLang)
    out.append(f"task: {w.task}, accuracy tolerance {w.accuracy_tolerance:g} %-points")
    effs = {c.scheme.id: c.efficiency for c in candidates}
    profile_id = candidates[0].efficiency.profile_id
    if any(e.calibration is not None or e.model == "measured-kernels" for e in effs.values()):
        from ..advisor.speed import provenance
        from ..perf.efficiency import describe_models

        kernels = {sid: e for sid, e in effs.items() if e.model == "measured-kernels"}
        rest = {sid: e for sid, e in effs.items() if sid not in kernels}
        kp = next((e.kernels for e in kernels.values() if e.kernels is not None), None)
        parts = ([f"kernel cost curves ({kp.where}: the kernel {kp.context.table.label} runs for each "
                  f"layer): {provenance(kernels)}"] if kp is not None else []) + ([describe_models(rest)] if rest else [])
        out.append(f"speed: profile '{profile_id}': " + "; ".join(parts))
        if unmeasured:
            out.append("not weighed (no measured curve on this GPU; the advice follows the measurement — "
                       "name them with --candidates to price them by the roofline): " + ", ".join(unmeasured))
    else:
        out.append("speed: roofline with " + ("the spec sheet (--ideal)" if w.ideal else
                                                f"efficiency profile '{profile_id}'")
                   + " — a model, not a measurement; calibrate with --profile")
    out.append("candidates: " + ", ".join(c.scheme.id for c in candidates))
    return out


def predict(workload: Workload | dict[str, Any] | None = None, scheme: str | Scheme = "bf16", *,
            kv_dtype: str | TensorQuant | None = None, **overrides: Any) -> Prediction:
    """Price one scheme at a workload with the recommender's step model and scoring: decode step
    time, tokens/s as the workload experiences them, TTFT. ``kv_dtype`` defaults to the workload's
    (bf16 when unset). Same keys as :func:`recommend`.

    >>> p = predict({"batch": 64, "ctx": 2048}, "fp8-dynamic")
    >>> p.tokens_per_s > predict({"batch": 64, "ctx": 2048}, "bf16").tokens_per_s
    True
    """
    from ..advisor.speed import predict as price
    from .speed import efficiency

    w = _parse(_workload_data(workload, overrides))
    arch, _ = load_model(w.model)
    g = get_gpu(w.gpu)
    s = resolve_scheme(scheme)
    eff = efficiency(load_profiles(w.ideal, w.profile, g), g, s, engine=w.engine, version=w.engine_version)
    kv, kv_name = resolve_kv(kv_dtype if kv_dtype is not None else w.kv_dtype)
    if kv is not None and not kv.is_quantized:
        kv = None
    eng = catalog.get_engine(w.engine, w.engine_version)
    loop = None if w.ideal else catalog.engine_loop(g, eng.engine, eng.version, tp=w.gpus, site=site_terms(w.profile))
    return price(arch, g, w, s, eff, kv=kv, kv_name=kv_name if kv_dtype is not None or w.kv_dtype else "kv-bf16",
                 loop=loop)


def site_terms(profile: Any) -> tuple[LoopTerms, ...]:
    """The serving terms of a deployment profile (``calibrate --from-bench``) given as ``--profile``; none
    for an efficiency profile or no profile."""
    from ..catalog.resolve import load_site_terms

    return load_site_terms(profile)


