"""``recommend`` and ``predict``: resolve the workload's names, then walk the decision tree."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import catalog, defaults
from ..scheme import Scheme, TensorQuant
from .common import get_gpu, load_model, load_profiles, resolve_kv, resolve_scheme

if TYPE_CHECKING:
    from ..advisor.tree import Prediction, Recommendation
    from ..workload import Workload


def recommend(workload: Workload | dict[str, Any] | None = None, **overrides: Any) -> Recommendation:
    """Walk the decision tree for a workload and return the recommended scheme, the trace, the
    ranked alternatives and how to deploy it.

    ``workload`` is a :class:`~quantadvise.workload.Workload`, a dict of its keys (what a
    ``--workload`` YAML file holds), or None; keyword overrides win over it.

    >>> r = recommend(batch=1, ctx=2048)
    >>> r.scheme["family"]
    'weight-only 4-bit'
    """
    from ..advisor import plan
    from ..advisor import tree as advisor
    from ..checkpoint.dialects import parse_quantization_config
    from ..engines.schema import resolve
    from ..perf.profiles import resolve as resolve_eff
    from ..workload import Workload, parse_workload

    if isinstance(workload, Workload):
        data = workload.model_dump(exclude_unset=True)
    else:
        data = dict(workload or {})
    data.update({k: v for k, v in overrides.items() if v is not None})
    w = parse_workload(data)
    explicit = set(data)

    arch, info = load_model(w.model)
    g = get_gpu(w.gpu)
    engine = catalog.get_engine(w.engine, w.engine_version)
    other_name = "sglang" if w.engine == "vllm" else "vllm"
    other = catalog.get_engine(other_name, None)
    profiles = load_profiles(w.ideal, w.profile)
    gpu_names = (g.id, g.name, *g.aliases)
    platform = "rocm" if g.vendor == "amd" else "cuda"

    names = list(w.candidates) if w.candidates else list(defaults.CANDIDATES)
    if "bf16" not in [catalog.scheme_preset(n).id for n in names]:
        names.insert(0, "bf16")
    from ..perf.step import fit_weight_group

    seen: set[str] = set()
    picks = []
    group_notes: list[str] = []
    for n in names:
        preset = catalog.scheme_preset(n)
        if preset.id in seen:
            continue
        seen.add(preset.id)
        scheme, regroup_note = fit_weight_group(arch, catalog.scheme_from_preset(preset))
        if regroup_note:
            group_notes.append(regroup_note)
        eff = resolve_eff(profiles, gpu_names, catalog.scheme_names(preset.id) or (preset.id,))
        picks.append((scheme, preset.deploy.model_dump(), eff))
    # a calibrated profile: weigh only the kernels it measured (and bf16, the baseline), so the advice
    # follows the measurement rather than a roofline guess for the schemes it did not time
    unmeasured: list[str] = []
    if not w.candidates and any(e.model == "calibrated" for _, _, e in picks):
        unmeasured = [s.id for s, _, e in picks if e.model != "calibrated" and s.id != "bf16"]
        picks = [pk for pk in picks if pk[2].model == "calibrated" or pk[0].id == "bf16"]

    quant_kv = defaults.QUANTIZED_KV
    forced = catalog.kv_preset(w.kv_dtype) if w.kv_dtype is not None else None
    presets = [catalog.kv_preset("kv-bf16"), catalog.kv_preset(quant_kv), *([forced] if forced else [])]
    kv_options = {p.id: (p.kv_cache if p.kv_cache.is_quantized else None, p.deploy.model_dump()) for p in presets}
    if forced is not None and forced.kv_cache.is_quantized:
        quant_kv = forced.id  # the tree's "quantized KV" is the one the workload asked for

    def kv_flag(eng: Any, kv_id: str | None) -> str | None:
        if kv_id is None or kv_id == "kv-bf16":
            return None
        d = kv_options[kv_id][1]
        return d.get("vllm_kv_cache_dtype") if eng.engine == "vllm" else d.get("sglang_kv_cache_dtype")

    def check(eng: Any, o: advisor.Option | None, kv_id: str | None) -> advisor.EngineVerdict:
        flag = kv_flag(eng, kv_id)
        if kv_id not in (None, "kv-bf16") and flag is None:
            return advisor.EngineVerdict(supported=False, messages=[
                f"{eng.label} has no --kv-cache-dtype for {kv_id}"])
        qc = plan.quantization_config(o.scheme, o.deploy) if o is not None else None
        ck = parse_quantization_config(qc) if qc is not None else None
        res = resolve(eng, ck, capability=g.capability, platform=platform, kv_cache_dtype=flag,
                      model_type=arch.model_type, model_dtype=arch.torch_dtype)
        msgs = [f.engine_message or f.message for f in res.findings if f.severity in ("error", "warning")]
        return advisor.EngineVerdict(
            supported=not res.refused and (ck is None or res.resolved_method is not None),
            method=ck.quant_method if ck else None,
            resolved_method=res.resolved_method or ("unquantized" if ck is None else None),
            scheme_class=next((gd.scheme_class for gd in res.groups if gd.scheme_class), None),
            optimized=res.optimized,
            quantization_flag=None,
            kv_cache_dtype_flag=flag,
            messages=msgs,
        )

    model_id = info.get("id", w.model)
    short = str(model_id).rsplit("/", 1)[-1]

    def deploy_builder(o: advisor.Option, c: advisor.Context) -> tuple[dict[str, str | None], dict[str, Any]]:
        kv_id = c.kv_name
        path = model_id if not o.scheme.quantizes_weights else f"./{short}-{o.scheme.id}"
        cmds: dict[str, str | None] = {}
        notes = []
        for eng in (engine, other):
            # the chosen engine already judged the winner in the tree's engine node (same KV dtype)
            v = o.engine if eng is engine and o.engine is not None else check(eng, o, kv_id)
            kw = dict(quantization=v.quantization_flag, kv=v.kv_cache_dtype_flag, batch=w.batch, ctx=w.context,
                      gpus=w.gpus, memory_utilization=w.memory_utilization)
            if v.supported:
                cmd = (plan.vllm_command if eng.engine == "vllm" else plan.sglang_command)(path, **kw)
                cmds[eng.engine] = cmd
            else:
                cmds[eng.engine] = None
                notes.append(f"{eng.label} refuses it: " + "; ".join(v.messages))
        online = o.deploy.get("online")
        ck: dict[str, Any] = {
            "format": o.deploy.get("checkpoint_format") if o.scheme.quantizes_weights else None,
            "compressed_tensors_preset": o.deploy.get("compressed_tensors_preset"),
            "summary": plan.checkpoint_summary(o.scheme, o.deploy),
            "alternatives": list(o.deploy.get("alternatives") or ()),
            "recipe": plan.llmcompressor_recipe(o.scheme, o.deploy, str(model_id)),
            "quantization_config": plan.quantization_config(o.scheme, o.deploy),
            "suggested_path": path,
            "notes": notes,
        }
        if online and engine.engine == "vllm" and engine.shorthand(online) is not None:
            ck["online"] = plan.vllm_command(
                str(model_id), quantization=online, kv=kv_flag(engine, kv_id), batch=w.batch, ctx=w.context,
                gpus=w.gpus, memory_utilization=w.memory_utilization)
        return cmds, ck

    assumptions = []
    if "model" not in explicit:
        assumptions.append(f"model: {model_id} (the bundled default; --model to change)")
    if "gpu" not in explicit:
        assumptions.append(f"GPU: {g.name} (default; --gpu to change)")
    if "engine" not in explicit or "engine_version" not in explicit:
        assumptions.append(f"engine: {engine.label} (newest bundled; --engine / --engine-version)")
    if "ctx" not in explicit and "prompt" not in explicit:
        assumptions.append(f"context: {w.context:,} tokens per sequence (--ctx)")
    assumptions.append(
        f"lengths: {w.prompt_tokens:,} prompt + {w.output_tokens:,} output tokens per sequence (--prompt/--output); "
        f"a decode step is priced at the average {w.decode_context:,} tokens held; the KV cache is sized for "
        + (f"{w.kv_tokens_per_sequence:,} tokens per sequence (continuous batching's steady-state average)"
           if w.serving_mode == "continuous" else f"the full {w.context:,} tokens (synchronous batches grow together)")
    )
    if "mode" not in explicit:
        assumptions.append(f"serving mode: {w.serving_mode} (auto: batch <= 4 is synchronous; --mode)")
    assumptions.append(
        f"memory: {w.memory_utilization:.0%} of each GPU for the engine, {w.reserve_gb:g} GiB runtime reserve per GPU"
        + (f", {w.headroom:.0%} headroom" if w.headroom else "")
    )
    assumptions.append(f"task: {w.task}, accuracy tolerance {w.accuracy_tolerance:g} %-points")
    if any(e.calibration is not None for _, _, e in picks):
        from ..perf.profiles import describe_models

        assumptions.append(f"speed: profile '{picks[0][2].profile_id}': "
                           + describe_models({sc.id: e for sc, _, e in picks}))
        if unmeasured:
            assumptions.append("not weighed (no measured curve on this GPU; the advice follows the measurement — "
                               "name them with --candidates to price them by the roofline): " + ", ".join(unmeasured))
    else:
        assumptions.append(
            "speed: roofline with " + ("the spec sheet (--ideal)" if w.ideal else
                                       f"efficiency profile '{picks[0][2].profile_id}'")
            + " — a model, not a measurement; calibrate with --profile"
        )
    assumptions.append("candidates: " + ", ".join(s.id for s, _, _ in picks))
    assumptions.extend(group_notes)

    options = advisor.build_options(arch, g, w, picks, kv_options, quant_kv)
    ctx = advisor.Context(
        arch=arch, gpu=g, workload=w, kv_options=kv_options, quant_kv=quant_kv, rules=catalog.accuracy_rules(),
        engine_check=lambda o, kv_id: check(engine, o, kv_id), engine_label=engine.label,
        kv_name=forced.id if forced else "kv-bf16", forced_kv=forced is not None,
    )
    rec = advisor.recommend(ctx, options, assumptions, info, deploy_builder)
    warn = list(arch.warnings) + [x for x in rec.warnings if x not in arch.warnings]
    prov = next((e.calibration for _, _, e in picks if e.calibration is not None), None)
    if prov is not None and prov.simulated:
        warn.append(f"profile {picks[0][2].profile_id} holds SIMULATED timings (calibrate --backend simulated), "
                    "not a measurement of a GPU")
    others = next((e.other_calibrations for _, _, e in picks if e.other_calibrations), ())
    if others:
        warn.append(f"profile {picks[0][2].profile_id} holds measurements for {', '.join(others)}, not for {g.id}: "
                    "the default efficiencies apply")
    return rec.model_copy(update={
        "warnings": warn,
        "workload": {**rec.workload, "engine_version": engine.version},
    })



def predict(workload: Workload | dict[str, Any] | None = None, scheme: str | Scheme = "bf16", *,
            kv_dtype: str | TensorQuant | None = None, **overrides: Any) -> Prediction:
    """Price one scheme at a workload with the recommender's step model and scoring: decode step
    time, tokens/s as the workload experiences them, TTFT. ``kv_dtype`` defaults to the workload's
    (bf16 when unset). Same keys as :func:`recommend`.

    >>> p = predict({"batch": 64, "ctx": 2048}, "fp8-dynamic")
    >>> p.tokens_per_s > predict({"batch": 64, "ctx": 2048}, "bf16").tokens_per_s
    True
    """
    from ..advisor.tree import predict as price
    from ..perf.profiles import resolve as resolve_eff
    from ..workload import Workload, parse_workload

    data = workload.model_dump(exclude_unset=True) if isinstance(workload, Workload) else dict(workload or {})
    data.update({k: v for k, v in overrides.items() if v is not None})
    w = parse_workload(data)
    arch, _ = load_model(w.model)
    g = get_gpu(w.gpu)
    s = resolve_scheme(scheme)
    eff = resolve_eff(load_profiles(w.ideal, w.profile), (g.id, g.name, *g.aliases),
                      catalog.scheme_names(s.id) or (s.id,))
    kv, kv_name = resolve_kv(kv_dtype if kv_dtype is not None else w.kv_dtype)
    if kv is not None and not kv.is_quantized:
        kv = None
    return price(arch, g, w, s, eff, kv=kv, kv_name=kv_name if kv_dtype is not None or w.kv_dtype else "kv-bf16")


