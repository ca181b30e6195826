"""``recommend`` and ``predict``: resolve the workload's names, then walk the decision tree."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import catalog, defaults
from ..scheme import Scheme, TensorQuant
from .common import get_gpu, load_model, load_profiles, resolve_kv, resolve_scheme

if TYPE_CHECKING:
    from ..advisor.options import Candidate
    from ..advisor.result import Prediction, Recommendation
    from ..hardware import GPU
    from ..model import ModelArch
    from ..workload import Workload


def recommend(workload: Workload | dict[str, Any] | None = None, **overrides: Any) -> Recommendation:
    """Walk the decision tree for a workload and return the recommended scheme, the trace, the
    ranked alternatives and how to deploy it.

    ``workload`` is a :class:`~quantadvise.workload.Workload`, a dict of its keys (what a
    ``--workload`` YAML file holds), or None; keyword overrides win over it.

    >>> r = recommend(batch=1, ctx=2048)
    >>> r.scheme.family
    'weight-only 4-bit'
    """
    from ..advisor.options import BF16_KV, Context, KvOption, build_options
    from ..advisor.tree import recommend as walk
    from ..perf.efficiency import profile_warnings

    data = _workload_data(workload, overrides)
    w = _parse(data)
    explicit = set(data)
    arch, info = load_model(w.model)
    g = get_gpu(w.gpu)
    engine = catalog.get_engine(w.engine, w.engine_version)
    other = next((catalog.get_engine(n) for n in catalog.engine_names() if n != engine.engine), None)
    candidates, group_notes, unmeasured = _candidates(w, arch, g)

    quant_kv = defaults.QUANTIZED_KV
    forced = catalog.kv_preset(w.kv_dtype) if w.kv_dtype is not None else None
    presets = [catalog.kv_preset(BF16_KV), catalog.kv_preset(quant_kv), *([forced] if forced else [])]
    kv_options = {p.id: KvOption(p.kv_cache if p.kv_cache.is_quantized else None, p.deploy) for p in presets}
    if forced is not None and forced.kv_cache.is_quantized:
        quant_kv = forced.id  # the tree's "quantized KV" is the one the workload asked for
    model_id = info.id
    assumptions = _assumptions(w, explicit, model_id, g.name, engine.label, candidates, unmeasured) + group_notes

    ctx = Context(arch=arch, gpu=g, workload=w, kv_options=kv_options, quant_kv=quant_kv,
                  rules=catalog.accuracy_rules(), engine=engine, other_engine=other, model_id=model_id,
                  kv_name=forced.id if forced else BF16_KV, forced_kv=forced is not None)
    rec = walk(ctx, build_options(arch, g, w, candidates, kv_options, quant_kv), assumptions)
    warn = list(arch.warnings) + [x for x in rec.warnings if x not in arch.warnings]
    warn += profile_warnings([c.efficiency for c in candidates], g.id)
    return rec.model_copy(update={"warnings": warn})


def _workload_data(workload: Workload | dict[str, Any] | None, overrides: dict[str, Any]) -> dict[str, Any]:
    from ..workload import Workload

    data = workload.model_dump(exclude_unset=True) if isinstance(workload, Workload) else dict(workload or {})
    data.update({k: v for k, v in overrides.items() if v is not None})
    return data


def _parse(data: dict[str, Any]) -> Workload:
    from ..workload import parse_workload

    return parse_workload(data)


def _candidates(w: Workload, arch: ModelArch, g: GPU) -> tuple[list[Candidate], list[str], list[str]]:
    """The schemes to weigh (the workload's, else the default list; bf16 always, as the baseline),
    each fitted to the model's group constraints and priced by its efficiency curves. With a
    calibrated profile only the measured kernels are weighed (the advice follows the measurement)."""
    from ..advisor.options import Candidate
    from ..perf.efficiency import resolve as resolve_eff
    from ..perf.inputs import fit_weight_group

    profiles = load_profiles(w.ideal, w.profile)
    gpu_names = (g.id, g.name, *g.aliases)
    names = list(w.candidates) if w.candidates else list(defaults.CANDIDATES)
    if "bf16" not in [catalog.scheme_preset(n).id for n in names]:
        names.insert(0, "bf16")
    seen: set[str] = set()
    picks: list[Candidate] = []
    notes: list[str] = []
    for n in names:
        preset = catalog.scheme_preset(n)
        if preset.id in seen:
            continue
        seen.add(preset.id)
        scheme, regroup_note = fit_weight_group(arch, catalog.scheme_from_preset(preset))
        if regroup_note:
            notes.append(regroup_note)
        eff = resolve_eff(profiles, gpu_names, catalog.scheme_names(preset.id) or (preset.id,))
        picks.append(Candidate(scheme, preset.deploy, eff))
    unmeasured: list[str] = []
    if not w.candidates and any(c.efficiency.model == "calibrated" for c in picks):
        unmeasured = [c.scheme.id for c in picks if c.efficiency.model != "calibrated" and c.scheme.id != "bf16"]
        picks = [c for c in picks if c.efficiency.model == "calibrated" or c.scheme.id == "bf16"]
    return picks, notes, unmeasured


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
        out.append(f"context: {w.context:,} tokens per sequence (--ctx)")
    out.append(
        f"lengths: {w.prompt_tokens:,} prompt + {w.output_tokens:,} output tokens per sequence (--prompt/--output); "
        f"a decode step is priced at the average {w.decode_context:,} tokens held; the KV cache is sized for "
        + (f"{w.kv_tokens_per_sequence:,} tokens per sequence (continuous batching's steady-state average)"
           if w.serving_mode == "continuous" else f"the full {w.context:,} tokens (synchronous batches grow together)")
    )
    if "mode" not in explicit:
        out.append(f"serving mode: {w.serving_mode} (auto: batch <= {defaults.SYNC_MAX_BATCH} is synchronous; --mode)")
    out.append(
        f"memory: {w.memory_utilization:.0%} of each GPU for the engine, {w.reserve_gb:g} GiB runtime reserve per GPU"
        + (f", {w.headroom:.0%} headroom" if w.headroom else "")
    )
    out.append(f"task: {w.task}, accuracy tolerance {w.accuracy_tolerance:g} %-points")
    effs = {c.scheme.id: c.efficiency for c in candidates}
    profile_id = candidates[0].efficiency.profile_id
    if any(e.calibration is not None for e in effs.values()):
        from ..perf.efficiency import describe_models

        out.append(f"speed: profile '{profile_id}': " + describe_models(effs))
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
    from ..perf.efficiency import resolve as resolve_eff

    w = _parse(_workload_data(workload, overrides))
    arch, _ = load_model(w.model)
    g = get_gpu(w.gpu)
    s = resolve_scheme(scheme)
    eff = resolve_eff(load_profiles(w.ideal, w.profile), (g.id, g.name, *g.aliases),
                      catalog.scheme_names(s.id) or (s.id,))
    kv, kv_name = resolve_kv(kv_dtype if kv_dtype is not None else w.kv_dtype)
    if kv is not None and not kv.is_quantized:
        kv = None
    return price(arch, g, w, s, eff, kv=kv, kv_name=kv_name if kv_dtype is not None or w.kv_dtype else "kv-bf16")


