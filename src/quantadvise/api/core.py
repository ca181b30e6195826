"""The Python API: one function per CLI command. The CLI adds no behaviour these lack.

These functions resolve names (models, schemes, GPUs) through ``registry`` and ``hub`` and then call
the pure core. Everything they return is a pydantic result model; ``.model_dump(mode="json")`` is
exactly what ``--format json`` prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import catalog
from ..errors import InputError
from ..hardware import GPU
from ..model import ModelArch, parse_config
from ..scheme import Scheme, TensorQuant, custom_weight_scheme
from ..sizing import (
    DEFAULT_MEMORY_UTILIZATION,
    DEFAULT_RESERVE_BYTES,
    SizeReport,
    size_model,
)

DEFAULT_MODEL = "meta-llama/Meta-Llama-3-8B"
DEFAULT_GPU = "h100-sxm"


def load_model(model: str | dict[str, Any] | ModelArch = DEFAULT_MODEL) -> tuple[ModelArch, dict[str, Any]]:
    """A model architecture from a bundled id, a local path, the HF cache or the Hub (in that
    order), from a config.json dict, or passed through. Returns (arch, info about the source)."""
    if isinstance(model, ModelArch):
        return model, {"id": model.architecture, "source": "object"}
    if isinstance(model, dict):
        return parse_config(model, "config"), {"id": model.get("_name_or_path", "config"), "source": "dict"}
    from ..hub import resolve_model

    src, cfg = resolve_model(model)
    arch = parse_config(cfg, src.location if src.kind != "bundled" else src.id)
    info = {"id": src.id, "source": src.kind, "location": src.location}
    if src.published_params is not None:
        info["published_params"] = src.published_params
    return arch, info


def resolve_scheme(
    scheme: str | Scheme | None = None,
    *,
    bits: int | None = None,
    group: int | None = None,
    symmetric: bool | None = None,
    lm_head: bool | None = None,
    embedding: bool | None = None,
) -> Scheme:
    """A scheme from a preset name, a YAML file path, a Scheme, or ``bits``/``group``/``symmetric``.

    ``bits`` builds integer weight-only quantization with one scale per ``group`` (default 128) and,
    unless ``symmetric``, a zero-point per group — the form AWQ and GPTQ checkpoints store."""
    if bits is not None and scheme is not None:
        raise InputError("give either --scheme or --bits, not both", field="scheme")
    if bits is not None:
        s = custom_weight_scheme(bits, 128 if group is None else group, bool(symmetric))
    else:
        if symmetric is not None:
            raise InputError(
                "--sym/--asym apply to --bits; a preset fixes its symmetry (e.g. w4a16 vs w4a16-asym)",
                field="symmetric",
            )
        if isinstance(scheme, Scheme):
            s = scheme
        elif scheme is None:
            s = catalog.get_scheme("bf16")
        elif scheme.endswith((".yaml", ".yml")) or Path(scheme).is_file():
            s = catalog.load_scheme_file(Path(scheme))
        else:
            s = catalog.get_scheme(scheme)
        if group is not None:
            s = s.with_weight_group(group)
    changes = {}
    if lm_head is not None:
        changes["quantize_lm_head"] = lm_head
    if embedding is not None:
        changes["quantize_embedding"] = embedding
    if changes and s.quantizes_weights:
        s = s.with_policy(**changes)
    return s


def resolve_kv(kv_dtype: str | TensorQuant | None) -> tuple[TensorQuant | None, str]:
    if kv_dtype is None:
        return None, "bf16"
    if isinstance(kv_dtype, TensorQuant):
        return kv_dtype, kv_dtype.format
    preset = catalog.kv_preset(kv_dtype)
    return preset.kv_cache, preset.id


def get_gpu(gpu: str | GPU) -> GPU:
    return gpu if isinstance(gpu, GPU) else catalog.get_gpu(gpu)


def size(
    model: str | dict[str, Any] | ModelArch = DEFAULT_MODEL,
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
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
    reserve_bytes: int = DEFAULT_RESERVE_BYTES,
) -> SizeReport:
    """Whole-model memory of ``model`` under a scheme, per component, with optional KV and fit.

    >>> r = size("meta-llama/Llama-3-8B", bits=4, group=128)
    >>> round(r.total_bytes / 1e9, 2)
    5.73
    """
    arch, info = load_model(model)
    s = resolve_scheme(scheme, bits=bits, group=group, symmetric=symmetric, lm_head=lm_head, embedding=embedding)
    kv, kv_name = resolve_kv(kv_dtype)
    if gpu is not None and ctx is None:
        ctx = 0
    return size_model(
        arch,
        s,
        model_info=info,
        include_mtp=include_mtp,
        kv=kv,
        kv_name=kv_name,
        ctx=ctx,
        batch=batch,
        gpu=get_gpu(gpu) if gpu is not None else None,
        gpus=gpus,
        memory_utilization=memory_utilization,
        reserve_bytes=reserve_bytes,
    )


from typing import TYPE_CHECKING  # noqa: E402 - kept beside the functions that use it

if TYPE_CHECKING:
    from ..artifacts.scan import DeploymentScan
    from ..evals.stats import AccuracyReport, AccuracyThresholds


def accuracy(
    base: str | Path,
    quant: str | Path,
    *,
    metric: str | None = None,
    filter: str | None = None,
    confidence: float = 0.95,
    max_delta: float | None = None,
    max_flips: float | None = None,
    max_kl: float | None = None,
    min_samples: int | None = None,
    thresholds: AccuracyThresholds | None = None,
    per_task: dict[str, AccuracyThresholds] | None = None,
) -> AccuracyReport:
    """Compare per-sample results of a baseline and a quantized run (files or folders of
    lm-eval ``samples_*.jsonl`` or plain JSONL): per task the accuracy delta with a paired
    confidence interval, flips, McNemar's p and mean KL; with thresholds, pass/fail checks.

    ``max_delta`` / ``max_flips`` are fractions (0.01 = 1 percentage point), ``max_kl`` nats;
    ``thresholds`` (an :class:`~quantadvise.accuracy_stats.AccuracyThresholds`) and ``per_task``
    (task -> thresholds) are the gate's way in. Returns an ``AccuracyReport``; its
    ``exit_code()`` is 1 when a check fails.
    """
    from ..evals.evidence import load_evidence
    from ..evals.stats import AccuracyThresholds, compare

    flags = {"max_delta_drop": max_delta, "max_flip_rate": max_flips, "max_kl": max_kl, "min_samples": min_samples}
    if any(v is not None for v in flags.values()):
        from pydantic import ValidationError

        from ..errors import format_validation_error

        try:
            given = AccuracyThresholds(**{k: v for k, v in flags.items() if v is not None})
        except ValidationError as exc:
            raise InputError(format_validation_error(exc, "thresholds"), field="thresholds") from None
        thresholds = (thresholds or AccuracyThresholds()).overlay(given)
    b = load_evidence(base, metric=metric, filter=filter, role="BASE")
    q = load_evidence(quant, metric=metric, filter=filter, role="QUANT")
    return compare(b, q, base_label=str(base), quant_label=str(quant), confidence=confidence,
                   thresholds=thresholds, per_task=per_task)


def read_deployment(paths: str | Path | list[str | Path], *, env: dict[str, str] | None = None) -> DeploymentScan:
    """Engine invocations (``vllm serve``, ``python -m sglang.launch_server`` ...) found in shell
    scripts, Dockerfiles, Kubernetes manifests, Helm values and docker-compose files under
    ``paths``, each with its file and line and the flags that matter. Returns a ``DeploymentScan``.
    """
    from ..artifacts.scan import read_paths

    return read_paths([paths] if isinstance(paths, str | Path) else list(paths), env=env)


if TYPE_CHECKING:
    from ..perf.profiles import PerfProfile
    from ..perf.step import RooflineResult


def roofline(
    model: str | dict[str, Any] | ModelArch = DEFAULT_MODEL,
    schemes: str | Scheme | list[str | Scheme] | None = None,
    *,
    gpu: str | GPU = DEFAULT_GPU,
    gpus: int = 1,
    kv_dtype: str | TensorQuant | None = None,
    batches: str | int | list[int] = "1,8,64,512",
    ctx: str | int | list[int] = 2048,
    prompt: int | None = None,
    group: int | None = None,
    ideal: bool = False,
    profile: str | Path | PerfProfile | None = None,
    scope: str = "full",
    curve_points: int = 0,
) -> RooflineResult:
    """Decode step time, tokens/s, bound, byte shares and FLOPs per scheme x batch x context on
    ``gpus`` x ``gpu``; each scheme's ridge batch; pairwise crossover batches; TTFT for ``prompt``.

    ``schemes``: names / YAML paths (a list or ``"bf16,w4a16,fp8-dynamic"``); default bf16, w4a16
    and w8a8-fp8 (w8a8-int8 on GPUs without fp8). ``batches``: ``"1,8,64,512"`` or ``"1..512"``.
    Efficiencies come from data/perf_profile.yaml, with ``profile`` (a file or a PerfProfile)
    layered over it; ``ideal=True`` uses the spec sheet instead. ``scope="decoder"`` counts only
    the decoder linear matrices, KV and the residual stream (the chapter's accounting). ``group``
    sets the weight group size of every scheme with per-group weight scales; without it the
    default list picks a group that divides the model's K (gpt-oss: 64), explicit schemes keep theirs.

    >>> r = roofline("meta-llama/Llama-3-8B", "bf16,fp8-dynamic", gpu="h100", ideal=True, batches=1, ctx=0)
    >>> round(r.ridge_batch["bf16"])
    295
    """
    from ..perf.profiles import resolve
    from ..perf.step import fit_weight_group, parse_batches, parse_contexts
    from ..perf.step import roofline as run

    arch, info = load_model(model)
    g = get_gpu(gpu)
    defaults = schemes is None
    if schemes is None:
        schemes = ["bf16", "w4a16", "w8a8-fp8" if g.has_math("fp8") else "w8a8-int8"]
    elif isinstance(schemes, str):
        schemes = [s.strip() for s in schemes.split(",") if s.strip()]
        if not schemes:
            raise InputError("--scheme needs at least one name, e.g. bf16,w4a16,w8a8-fp8", field="scheme")
    elif isinstance(schemes, Scheme):
        schemes = [schemes]
    resolved = [resolve_scheme(s) for s in schemes]
    notes: list[str] = []
    if group is not None:
        resolved = [s.with_weight_group(group) if s.weight is not None and s.weight.scale is not None
                    and s.weight.scale.group.is_per_group else s for s in resolved]
    elif defaults:
        fitted = [fit_weight_group(arch, s) for s in resolved]
        resolved = [s for s, _ in fitted]
        notes = [n for _, n in fitted if n]
    profiles = load_profiles(ideal, profile)
    gpu_names = (g.id, g.name, *g.aliases)
    effs = [resolve(profiles, gpu_names, catalog.scheme_names(s.id) or (s.id,)) for s in resolved]
    kv, kv_name = resolve_kv(kv_dtype)
    return run(
        arch,
        resolved,
        g,
        effs,
        model_info=info,
        kv=kv,
        kv_name=kv_name,
        batches=parse_batches(batches),
        contexts=parse_contexts(ctx),
        prompt=prompt,
        gpus=gpus,
        scope=scope,
        curve_points=curve_points,
        notes=notes,
    )


# -------------------------------------------------------------------------------------------------
# Engines and checkpoints (issue 4)
# -------------------------------------------------------------------------------------------------

if TYPE_CHECKING:  # pragma: no cover
    from ..engines.inspection import InspectReport
    from ..engines.schema import EngineData, EngineDiff, EngineListing, MethodDetail


def get_engine(engine: str = "vllm", version: str | None = None) -> EngineData:
    """One engine release from data/engines/ (``engine`` may carry the version: ``vllm==0.33.0``)."""
    name, ver = _split_engine(engine)
    return catalog.get_engine(name, version or ver)


def _split_engine(spec: str) -> tuple[str, str | None]:
    import re

    m = re.fullmatch(r"\s*([A-Za-z][\w-]*?)\s*(?:(?:==|@|:)\s*v?([\w.+-]+))?\s*", spec or "")
    if not m:
        raise InputError(f"--engine expects NAME or NAME==VERSION (vllm, sglang==0.5.23), got '{spec}'",
                         field="engine")
    return m.group(1), m.group(2)


def engines_list(engine: str = "vllm", version: str | None = None) -> EngineListing:
    """Every method an engine release accepts, with config class, minimum capability, activation
    dtypes, optimized flag; its KV cache dtypes, online shorthands and override order."""
    from ..engines.schema import listing

    return listing(get_engine(engine, version))


def engines_show(method: str, engine: str = "vllm", version: str | None = None) -> MethodDetail:
    """One method in one engine release: its row, the names sharing its config class, the
    overrides that produce it, and the same name in the other engines on file."""
    from ..engines.schema import method_detail

    e = get_engine(engine, version)
    others = [catalog.get_engine(n) for n in catalog.engine_names() if n != e.engine]
    detail = method_detail(e, method, others)
    if detail is None:
        from ..errors import UnknownNameError

        raise UnknownNameError(f"{e.label} quantization method", method, [m.id for m in e.methods],
                               hint=f"`quantadvise engines list --engine {e.engine}` lists them")
    return detail


def engines_diff(a: str = "vllm", b: str = "sglang") -> EngineDiff:
    """Two engine registries side by side: methods only in one, KV cache dtypes, optimized flags."""
    from ..engines.schema import diff

    return diff(get_engine(a), get_engine(b))


def gpu_target(gpu: str | GPU | int | None) -> tuple[dict[str, Any] | None, int | None, str]:
    """(description, compute capability as the engines compare it, platform) for --gpu: a GPU id
    or alias, or a bare capability (``sm75``, ``7.5``, ``75``)."""
    import re

    if gpu is None:
        return None, None, "cuda"
    if isinstance(gpu, int):
        return {"id": f"sm{gpu}", "capability": gpu, "platform": "cuda"}, gpu, "cuda"
    if isinstance(gpu, str):
        m = re.fullmatch(r"\s*(?:sm_?)?(\d{1,2})(?:\.(\d))?\s*", gpu.lower())
        if m and (m.group(2) is not None or gpu.lower().strip().startswith("sm") or len(m.group(1)) == 2):
            cap = int(m.group(1)) * 10 + int(m.group(2)) if m.group(2) is not None else int(m.group(1))
            if cap < 10:
                cap *= 10
            return {"id": f"sm{cap}", "capability": cap, "platform": "cuda"}, cap, "cuda"
    g = get_gpu(gpu)
    platform = "rocm" if g.vendor.lower() in ("amd",) else "cuda"
    return ({"id": g.id, "name": g.name, "capability": g.capability, "platform": platform,
             "compute_capability": g.compute_capability}, g.capability, platform)


def inspect(
    model: str | dict[str, Any],
    *,
    engines: str | list[str] | None = None,
    gpu: str | GPU | int | None = None,
    quantization: str | None = None,
    kv_cache_dtype: str | None = None,
    allow_deprecated: bool = False,
    sidecars: dict[str, Any] | None = None,
) -> InspectReport:
    """Read a checkpoint's quantization_config back into the six axes, size it on disk, and predict
    what each engine does with it.

    ``model``: a bundled id, a local folder or JSON file (config.json, or a bare quantization_config
    / hf_quant_config.json), a Hub id in the local cache or on the Hub, or a config.json dict.
    ``engines``: ``"vllm"``, ``"sglang==0.5.23"``, a list, or None for every engine on file."""
    from ..checkpoint.dialects import (
        SIDECARS,
        model_dtype_format,
        parse_checkpoint,
        parse_quantization_config,
    )
    from ..engines.inspection import inspect_checkpoint

    if isinstance(model, dict):
        cfg, info, side = model, {"id": model.get("_name_or_path", "config"), "source": "dict"}, dict(sidecars or {})
    else:
        from ..hub import read_sidecar, resolve_model

        src, cfg = resolve_model(model)
        info = {"id": src.id, "source": src.kind, "location": src.location}
        side = {n: d for n in SIDECARS if (d := read_sidecar(src, n)) is not None}
        side.update(sidecars or {})
    if not isinstance(cfg, dict):
        from ..errors import ConfigError

        raise ConfigError(f"{info.get('location', info['id'])}: expected a JSON object, got {type(cfg).__name__}")
    arch = None
    if "model_type" in cfg or "text_config" in cfg:
        arch = parse_config(cfg, info.get("location", info["id"]))
        info.update(model_type=arch.model_type, architecture=arch.architecture, kind=arch.kind,
                    torch_dtype=arch.torch_dtype)
        ck = parse_checkpoint(cfg, side)
    elif "quant_method" in cfg or "config_groups" in cfg or "global_quant_config" in cfg:
        ck = parse_quantization_config(cfg, found_in=str(info.get("location", "quantization_config")))
        ck = ck.model_copy(update={"found_in": "quantization_config"})
    elif "quantization" in cfg and "producer" in cfg:
        ck = parse_quantization_config(None, hf_quant_config=cfg)
    else:
        # no model_type and no quant_method: let the config parser name what is missing
        parse_config(cfg, info.get("location", info["id"]))
        ck = None  # pragma: no cover - parse_config raised
    if engines is None:
        specs = catalog.engine_names()
    elif isinstance(engines, str):
        specs = [s for s in engines.split(",") if s.strip()]
    else:
        specs = list(engines)
    if len(specs) == 1 and specs[0].strip().lower() in ("all", "both"):
        specs = catalog.engine_names()
    rows = [get_engine(s) for s in specs]
    gpu_info, capability, platform = gpu_target(gpu)
    stored = model_dtype_format(cfg.get("torch_dtype") or cfg.get("dtype"))
    notes = []
    if stored == "fp32" and ck is not None and ck.is_quantized:
        stored = "fp16"
        notes.append("config torch_dtype is float32; the quantized checkpoint's 16-bit tensors are counted as fp16 "
                     "(as its producer wrote them)")
    presets = [catalog.get_scheme(s) for s in catalog.scheme_ids()]
    report = inspect_checkpoint(
        ck, arch, model_info=info, engines=rows, layouts=catalog.layouts(), presets=presets,
        library=catalog.format_library("compressed-tensors"), capability=capability, platform=platform,
        gpu_info=gpu_info, quantization=quantization, kv_cache_dtype=kv_cache_dtype,
        allow_deprecated=allow_deprecated, stored_dtype=stored,
    )
    return report.model_copy(update={"notes": notes + report.notes}) if notes else report


if TYPE_CHECKING:
    from ..advisor.tree import Recommendation
    from ..workload import Workload

# Schemes the recommender weighs unless the workload names its own candidates.
# Schemes the recommender weighs unless the workload names its own; on a near-tie the earlier wins.
DEFAULT_CANDIDATES = (
    "bf16", "w4a16", "awq", "fp8-dynamic", "w8a8-int8", "w8a16", "fp8-block", "w4a8-fp8",
    "nvfp4", "nvfp4-a16", "mxfp4", "mxfp8", "w3a16",
)
QUANTIZED_KV = {"vllm": "kv-fp8", "sglang": "kv-fp8"}


def load_profiles(ideal: bool = False, profile: str | Path | Any | None = None) -> list[Any]:
    """The efficiency profiles a prediction uses: the spec sheet (``ideal``), or the shipped
    default with a user profile (file or PerfProfile) layered over it."""
    from ..errors import UnknownNameError
    from ..perf.profiles import IDEAL, PerfProfile

    if ideal and profile is not None:
        raise InputError("give --ideal (the spec sheet) or --profile FILE, not both", field="profile")
    if ideal:
        return [IDEAL]
    profiles = [catalog.default_perf_profile()]
    if profile is not None:
        user = profile if isinstance(profile, PerfProfile) else catalog.load_perf_profile(Path(profile))
        known = {catalog.norm_name(n) for n in catalog.gpu_names()}
        for entry in user.gpus:
            if catalog.norm_name(entry.gpu) not in known:
                raise UnknownNameError("GPU", entry.gpu, catalog.gpu_names(), hint=f"in profile {user.id}")
        profiles.append(user)
    return profiles


def load_workload(path: str | Path) -> dict[str, Any]:
    """A workload YAML file as a dict (validated by :func:`recommend`)."""
    from ..errors import ConfigError

    doc = catalog.load_yaml_file(Path(path))
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a mapping of workload keys (batch, ctx, gpu, task ...)")
    return doc


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

    names = list(w.candidates) if w.candidates else list(DEFAULT_CANDIDATES)
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

    quant_kv = QUANTIZED_KV[w.engine]
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


# -------------------------------------------------------------------------------------------------
# Calibration (issue 7): measure the GPU, fold it into the model, show the model's error
# -------------------------------------------------------------------------------------------------

if TYPE_CHECKING:
    from ..perf.calibration import CalibrationResult, Progress, ValidationResult


def calibrate(
    model: str | dict[str, Any] | ModelArch = DEFAULT_MODEL,
    schemes: str | list[str] | None = None,
    *,
    batches: str | int | list[int] = "1..4096",
    backend: str = "torch",
    gpu: str | GPU | None = None,
    seconds: float = 240.0,
    seed: int = 0,
    out: str | Path | None = None,
    command: str = "",
    progress: Progress | None = None,
) -> CalibrationResult:
    """Measure the local GPU (``backend="torch"``, needs ``pip install 'quantadvise[gpu]'`` and
    CUDA) or a synthetic one (``backend="simulated"``, with ``gpu``): read bandwidth, GEMM
    throughput per math format, and the decode-step linear layers of ``model``'s shapes at each
    batch for each scheme with a torch kernel (bf16, fp8-tensor, fp8-dynamic, w8a8-int8, w4a16).
    Writes the resulting efficiency profile to ``out`` (default ``<profile id>.yaml`` in the
    current directory) and returns a summary (``.profile_path`` says where it went).
    ``seconds`` is the timing budget; ``progress(what, done, total)`` is called as it goes."""
    import time

    from .. import __version__
    from ..errors import UnknownNameError
    from ..perf.backends import get_backend
    from ..perf.calibration import parse_schemes, profile_yaml, run_calibration
    from ..perf.step import parse_batches

    arch, info = load_model(model)
    resolved: dict[str, Scheme] = {}
    for name in parse_schemes(schemes):
        preset = catalog.scheme_preset(name)
        resolved[preset.id] = catalog.scheme_from_preset(preset)
    bs = parse_batches(batches, field="batches")
    row = get_gpu(gpu) if gpu is not None else None
    be = get_backend(backend, row, seed=seed)
    started = time.perf_counter()
    try:
        if row is None:
            reported = be.device().gpu_name
            try:
                row = catalog.get_gpu(reported)
            except UnknownNameError:
                raise InputError(f"this GPU reports itself as '{reported}', which data/hardware.yaml does not list",
                                 hint="pass --gpu with its row id, or add the GPU (docs/data.md)",
                                 field="gpu") from None
        presets = {sid: catalog.get_scheme(sid) for sid in catalog.scheme_ids()}
        profile, result = run_calibration(
            be, arch=arch, model_id=str(info.get("id")), gpu=row, schemes=resolved, presets=presets, batches=bs,
            seconds=seconds, tool=f"quantadvise {__version__}", command=command, progress=progress,
            clock=lambda: time.perf_counter() - started,
        )
    finally:
        be.close()
    path = Path(out) if out is not None else Path(f"{profile.id}.yaml")
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise InputError(f"--out {path}: the profile is YAML; name the file .yaml", field="out")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(profile_yaml(profile), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--out {path}: cannot write it ({exc.strerror or exc})", field="out") from None
    return result.model_copy(update={"profile_path": str(path)})


def validate(profile: str | Path | PerfProfile, *, max_error: float = 0.15) -> ValidationResult:
    """Predicted vs measured decode-linear time per scheme and batch for a calibrated profile, with
    the error of the ideal, default-efficiency, measured-ceilings and calibrated models (the last
    leave-one-out over batches). ``max_error`` is a fraction; ``.passed`` / ``.exit_code()`` say
    whether the calibrated model is within it at every measured batch."""
    from ..perf.calibration import validate as run
    from ..perf.profiles import PerfProfile

    prof = profile if isinstance(profile, PerfProfile) else catalog.load_perf_profile(Path(profile))
    archs: dict[str, ModelArch] = {}
    gpus: dict[str, GPU] = {}
    schemes: dict[str, Scheme] = {}
    for entry in prof.gpus:
        if entry.calibration is None:
            continue
        gpus[entry.gpu] = catalog.get_gpu(entry.gpu)
        if entry.calibration.model not in archs:
            archs[entry.calibration.model] = load_model(entry.calibration.model)[0]
        for m in entry.calibration.measurements:
            schemes[m.scheme] = catalog.get_scheme(m.scheme)
    return run(prof, catalog.default_perf_profile(), archs=archs, gpus=gpus, schemes=schemes, max_error=max_error)


# -------------------------------------------------------------------------------------------------
# The CI gate (issue 6): price one scheme, check a deployment
# -------------------------------------------------------------------------------------------------

if TYPE_CHECKING:
    from ..advisor.tree import Prediction
    from ..artifacts.scan import EngineInvocation
    from ..gate.config import DeploymentConfig, LoadedConfig
    from ..gate.rules import Findings, GateResult, InitResult, TargetReport


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


def check(
    paths: str | Path | list[str | Path] | None = None,
    *,
    config: str | Path | DeploymentConfig | dict[str, Any] | None = None,
    discover: bool = True,
    model: str | None = None,
    gpu: str | None = None,
    gpus: int | None = None,
    engine: str | None = None,
    engine_version: str | None = None,
    concurrency: int | None = None,
    ctx: int | None = None,
    quantization: str | None = None,
    kv_cache_dtype: str | None = None,
    task: str | None = None,
    profile: str | Path | None = None,
    fail_on: str | None = None,
    baseline: str | Path | None = None,
    write_baseline: str | Path | None = None,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
) -> GateResult:
    """The CI gate: check every engine command found under ``paths`` (shell scripts, Dockerfiles,
    Kubernetes manifests, Helm values, compose files) against the deployment description
    (``quantadvise.yaml``, ``[tool.quantadvise]`` or ``config``) and the rules QA1xx-QA5xx.

    Keyword values override the description (as the CLI flags do). ``paths`` default to the
    description's ``deployment:`` list, else its folder, else ``cwd``. With no engine command found,
    the description alone is checked. ``baseline`` suppresses findings whose fingerprint (rule +
    subject) it holds; ``write_baseline`` records every current finding there (all then suppressed).
    Returns a :class:`~quantadvise.gate.GateResult`; ``exit_code(fail_on, exit_zero)`` is 0 or 1.
    """
    import json
    import os

    from ..errors import ConfigError
    from ..gate import rules as gate
    from ..gate.config import (
        DeploymentConfig,
        LoadedConfig,
        find_config,
        load_config,
        with_flags,
    )

    root = Path(cwd) if cwd is not None else Path.cwd()
    rel = _relative_to(root)
    if isinstance(config, DeploymentConfig):
        loaded = LoadedConfig(config, None, {}, str(root))
    elif isinstance(config, dict):
        from ..gate.config import validate

        loaded = LoadedConfig(validate(config, "config"), None, {}, str(root))
    else:
        found = Path(config) if config is not None else (find_config(root) if discover else None)
        if found is not None and not found.is_absolute():
            found = root / found
        loaded = load_config(found, rel(found)) if found is not None else LoadedConfig(DeploymentConfig(), None, {},
                                                                                     str(root))
    flags = {"model": model, "gpu": gpu, "gpus": gpus, "engine": engine, "engine_version": engine_version,
             "concurrency": concurrency, "ctx": ctx, "quantization": quantization, "kv_cache_dtype": kv_cache_dtype,
             "task": task, "profile": str(profile) if profile is not None else None, "fail_on": fail_on}
    if model is not None:  # a --model path is relative to the working directory, not the config file
        m = Path(model).expanduser()
        flags["model"] = str(m if m.is_absolute() or not (root / m).exists() else root / m)
    loaded = with_flags(loaded, flags)
    cfg = loaded.config

    # the artifacts
    if paths:
        given = [paths] if isinstance(paths, str | Path) else list(paths)
        scan_paths = [Path(p) if Path(p).is_absolute() else root / p for p in given]
    elif cfg.deployment:
        scan_paths = [Path(loaded.path(p)) for p in cfg.deployment]
        for i, (p, raw) in enumerate(zip(scan_paths, cfg.deployment, strict=True)):
            if not p.exists():
                raise ConfigError(_at(loaded, f"deployment.{i}", f"no such file or directory: {raw}"),
                                  field="deployment")
    else:
        scan_paths = [Path(loaded.base_dir)]
    # relative to the working directory when inside it, so the reader's own errors name short paths
    here = Path.cwd().resolve()
    scan_args = [Path(os.path.relpath(p, here)) if p.resolve().is_relative_to(here) else p for p in scan_paths]
    scan = read_deployment(scan_args, env=env)
    invocations = list(scan.invocations)
    if not invocations and cfg.model is None:
        where = ", ".join(rel(p) for p in scan_paths)
        raise InputError(
            f"nothing to check: no engine command (vllm serve, python -m sglang.launch_server ...) found in {where}, "
            "and no model declared",
            hint="name the deployment files, set model: in quantadvise.yaml or pass --model "
                 "(`quantadvise check --init` writes a starter)", field="paths")
    if cfg.gpu is None:
        raise InputError("no GPU declared: the engine checks, memory and speed depend on it",
                         hint="set gpu: in quantadvise.yaml or pass --gpu (h100, a100-80gb, l4 ...)", field="gpu")
    g = _declared(loaded, "gpu", lambda: get_gpu(cfg.gpu))  # type: ignore[arg-type]

    out = gate.Findings(cfg.rules)
    notes: list[str] = []
    warnings = [w.replace(str(root) + "/", "") for w in scan.warnings if not any(w in i.warnings for i in invocations)]

    # accuracy evidence: one pair for the repository
    evidence = _gate_evidence(loaded, out, rel, notes)
    models: dict[str, Any] = {}  # each model's config read once per check
    targets = [
        _gate_target(inv, loaded, root, rel, g, out, engine_version_flag=engine_version, notes=notes, models=models)
        for inv in (invocations or [None])
    ]

    # the baseline
    findings = gate.sort_findings(out.items)
    base_path = Path(baseline) if baseline is not None else (Path(loaded.path(cfg.baseline)) if cfg.baseline else None)
    if base_path is not None and not base_path.is_absolute():
        base_path = root / base_path
    # writing a baseline accepts everything anyway: the old one need not exist (first adoption)
    known = _read_baseline(base_path) if base_path is not None and write_baseline is None else set()
    active, suppressed = gate.split_baseline(findings, known)
    written = None
    if write_baseline is not None:
        wpath = Path(write_baseline) if Path(write_baseline).is_absolute() else root / write_baseline
        doc = {"schema_version": gate.SCHEMA_VERSION, "tool": "quantadvise check",
               "note": "findings accepted on purpose: `quantadvise check --baseline FILE` ignores these fingerprints",
               "findings": [{"fingerprint": f.fingerprint, "rule_id": f.rule_id, "subject": f.subject,
                             "message": f.message} for f in findings]}
        try:
            wpath.parent.mkdir(parents=True, exist_ok=True)
            wpath.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write the baseline {wpath}: {exc.strerror or exc}",
                             field="write_baseline") from None
        written = rel(wpath)
        active, suppressed = [], findings
    fail = cfg.fail_on or "error"
    floor = gate.SEVERITY_RANK[fail]
    return gate.GateResult(
        passed=not any(gate.SEVERITY_RANK[f.severity] >= floor for f in active), fail_on=fail,
        config_file=loaded.file, paths=[rel(p) for p in scan_paths],
        files_scanned=[rel(f) for f in scan.files_scanned], targets=targets, findings=active, suppressed=suppressed,
        rules=out.statuses(suppressed), accuracy=evidence,
        baseline_file=rel(base_path) if base_path is not None else None, baseline_written=written,
        notes=list(dict.fromkeys(notes)), warnings=list(dict.fromkeys(warnings)),
    )


def check_init(
    path: str | Path | None = None,
    paths: str | Path | list[str | Path] | None = None,
    *,
    force: bool = False,
    cwd: str | Path | None = None,
) -> InitResult:
    """Write a commented starter ``quantadvise.yaml`` (at ``path``, default ./quantadvise.yaml), filled
    in from the first engine command found under ``paths``; refuses to overwrite without ``force``."""
    from ..gate import rules as gate
    from ..gate.config import parse_yaml_config, starter_config

    root = Path(cwd) if cwd is not None else Path.cwd()
    target = Path(path) if path is not None else root / "quantadvise.yaml"
    if not target.is_absolute():
        target = root / target
    if target.suffix.lower() not in (".yaml", ".yml"):
        raise InputError(f"--init writes YAML: give a .yaml path, not {target.name} (in pyproject.toml, copy the keys "
                         "under [tool.quantadvise] by hand)", field="init")
    existed = target.exists()
    if existed and not force:
        raise InputError(f"{_relative_to(root)(target)} already exists; pass --force to overwrite it", field="init")
    values: dict[str, Any] = {}
    if paths:
        given = [paths] if isinstance(paths, str | Path) else list(paths)
        scan_paths = [Path(p) if Path(p).is_absolute() else root / p for p in given]
        scan = read_deployment(scan_paths)
        import os

        values["deployment"] = [Path(os.path.relpath(p, target.parent)).as_posix() for p in scan_paths]
        if scan.invocations:
            inv = scan.invocations[0]
            values["engine"] = inv.engine
            if inv.engine_version:
                values["engine_version"] = inv.engine_version
            if inv.model and "$" not in inv.model:
                values["model"] = inv.model
            if inv.max_num_seqs:
                values["concurrency"] = inv.max_num_seqs
            if inv.max_model_len:
                values["ctx"] = inv.max_model_len
            tp, pp = inv.tensor_parallel_size or 1, inv.pipeline_parallel_size or 1
            values["gpus"] = tp * pp
            if inv.kv_cache_dtype:
                values["kv_cache_dtype"] = inv.kv_cache_dtype
    text = starter_config(values)
    parse_yaml_config(text, str(target))  # the starter must itself be valid
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {target}: {exc.strerror or exc}", field="init") from None
    return gate.InitResult(path=_relative_to(root)(target), overwritten=existed, prefilled=values, text=text)


def _relative_to(root: Path) -> Any:
    """A path as the report shows it: relative to ``root`` (POSIX separators) when inside it."""
    import os

    base = root.resolve()

    def rel(p: str | Path) -> str:
        q = Path(p)
        q = (q if q.is_absolute() else Path.cwd() / q).resolve()
        try:
            r = Path(os.path.relpath(q, base))
        except (OSError, ValueError):  # another drive
            return str(q)
        return r.as_posix() if r.parts[:3].count("..") < 3 else str(q)  # "../pyproject.toml", not "../../../etc/x"

    return rel


def _at(loaded: LoadedConfig, key: str, message: str) -> str:
    """``file: line N: key 'x': message`` for a value from the configuration file."""
    line = loaded.lines.get(key)
    if loaded.file is not None and line is not None:
        return f"{loaded.file}: line {line}: key '{key}': {message}"
    return f"{key.replace('_', '-')}: {message}"


def _declared(loaded: LoadedConfig, key: str, fn: Any) -> Any:
    """Resolve a declared name (GPU, scheme, KV dtype, engine release); a bad one names its line."""
    from ..errors import ConfigError, QuantAdviseError

    try:
        return fn()
    except QuantAdviseError as exc:
        if loaded.file is not None and key in loaded.lines:
            raise ConfigError(_at(loaded, key, str(exc)), field=key) from None
        raise


def _read_baseline(path: Path) -> set[str]:
    import json

    from ..errors import ConfigError

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the baseline {path}: {exc.strerror or exc}",
                          hint="create it with `quantadvise check --write-baseline FILE`") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: line {exc.lineno}: invalid JSON: {exc.msg}") from None
    items = doc.get("findings") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("fingerprint"), str)
                                              for i in items):
        raise ConfigError(f"{path}: key 'findings': expected a list of objects with a 'fingerprint' "
                          "(written by `quantadvise check --write-baseline`)")
    return {i["fingerprint"] for i in items}


def _gate_evidence(loaded: LoadedConfig, out: Findings, rel: Any, notes: list[str]) -> list[Any]:
    from ..errors import ConfigError
    from ..evals.stats import AccuracyThresholds
    from ..gate import rules as gate

    a = loaded.config.accuracy
    if a is None:
        out.skip("QA402", "no accuracy evidence declared (accuracy: in quantadvise.yaml)")
        out.skip("QA403", "no accuracy evidence declared")
        return []
    for key in ("baseline", "quantized"):
        p = Path(loaded.path(getattr(a, key)))
        if not p.exists():
            raise ConfigError(_at(loaded, f"accuracy.{key}", f"no such file or directory: {getattr(a, key)}"),
                              field=f"accuracy.{key}")
    thresholds = AccuracyThresholds(**a.limits())
    per_task = {t: AccuracyThresholds(**lim.limits()) for t, lim in a.tasks.items()}
    if thresholds.empty and all(t.empty for t in per_task.values()):
        thresholds = AccuracyThresholds(max_delta_drop=0.01)
        notes.append("accuracy: no thresholds set; checking the default max_delta_drop of 1 percentage point")
    rep = accuracy(loaded.path(a.baseline), loaded.path(a.quantized), metric=a.metric, filter=a.filter,
                   confidence=a.confidence, thresholds=thresholds, per_task=per_task or None)
    notes.extend(f"accuracy: {w}" for w in rep.warnings)
    files = {t.task: rel(t.quant_file) for t in rep.tasks}
    gate.accuracy_findings(out, rep.checks, files, loaded.file, loaded.lines)
    failed: dict[str, list[str]] = {}
    for c in rep.checks:
        if c.status == "fail":
            failed.setdefault(c.task, []).append(c.check)
    return [gate.TaskEvidence(task=t.task, n=t.n, base_accuracy=t.base_accuracy, quant_accuracy=t.quant_accuracy,
                              delta=t.delta, delta_ci_low=t.delta_ci_low, delta_ci_high=t.delta_ci_high,
                              flip_rate=t.flip_rate, kl_mean_nats=t.kl.mean_nats if t.kl else None,
                              failed=failed.get(t.task, [])) for t in rep.tasks]


_GATE_FIELDS = ("model", "quantization", "kv_cache_dtype", "dtype", "max_num_seqs", "max_model_len",
                "tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization")
_TORCH_NAMES = {"half": "float16", "float16": "float16", "fp16": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16",
                "float": "float32", "float32": "float32", "fp32": "float32"}


def _unresolved(inv: EngineInvocation) -> dict[str, str]:
    """Flags that matter whose value is a run-time reference (``$MODEL``, ``$(cat f)``)."""
    import re

    return {name: inv.raw[name] for name in _GATE_FIELDS
            if name in inv.raw and re.search(r"\$[{(\w]|`", inv.raw[name])}


def _nearest_version(versions: list[str], wanted: str) -> str:
    import re

    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", v)[:3])

    older = [v for v in versions if key(v) <= key(wanted)]
    return max(older, key=key) if older else min(versions, key=key)


def _online_flag(engine: Any, declared: str | None) -> str | None:
    """The --quantization a declaration implies for an unquantized checkpoint (online quantization),
    when there is no engine command to read it from."""
    from ..errors import QuantAdviseError

    if declared is None:
        return None
    name = declared.strip().lower()
    m = engine.method(name)
    if engine.shorthand(name) is not None or (m is not None and m.kind in ("online", "checkpoint_or_online")):
        return name
    try:
        online = catalog.scheme_preset(name).deploy.online
    except QuantAdviseError:
        return None
    return online if online and (engine.shorthand(online) is not None or engine.method(online) is not None) else None


def _served_scheme(ck: Any, res: Any, notes: list[str]) -> tuple[Scheme | None, str, str]:
    """(scheme the engine runs, its id, where that comes from)."""
    from ..errors import QuantAdviseError

    if ck is not None and ck.is_quantized:
        groups = [grp for grp in ck.groups if grp.quantizes_weights]
        if len({grp.preset or grp.name for grp in groups}) > 1:
            notes.append(f"the checkpoint has {len(groups)} quantized config groups; the first ({groups[0].name}) is "
                         "priced and sized")
        grp = groups[0]
        where = f"the checkpoint ({ck.quant_method})"
        if grp.preset:
            return catalog.get_scheme(grp.preset), grp.preset, where
        try:
            s = grp.scheme(catalog.layouts().get(grp.layout) if grp.layout else None)
        except (ValueError, QuantAdviseError):
            return None, grp.weights.describe() if grp.weights else grp.name, where
        return s, s.id, where
    if res.resolved_method is not None:
        where = f"--quantization {res.user_quantization} (quantized online from 16-bit weights)"
        try:
            preset = catalog.scheme_preset(res.resolved_method)
        except QuantAdviseError:
            notes.append(f"'{res.resolved_method}' has no scheme preset: not priced or sized as a scheme")
            return None, res.resolved_method, where
        return catalog.scheme_from_preset(preset), preset.id, where
    return catalog.get_scheme("bf16"), "bf16", "the checkpoint (no quantization_config)"


def _scheme_bits(scheme: Scheme | None, kv: TensorQuant | None) -> float | None:
    roles = (scheme.weight, scheme.activation) if scheme is not None else ()
    ts = [t for t in roles if t is not None and t.is_quantized]
    if kv is not None and kv.is_quantized:
        ts.append(kv)
    return min((t.bits for t in ts), default=None)


def _gate_target(inv: EngineInvocation | None, loaded: LoadedConfig, root: Path, rel: Any, g: GPU, out: Findings, *,
                 engine_version_flag: str | None, notes: list[str], models: dict[str, Any]) -> TargetReport:
    """Resolve one engine command (or the declaration alone) and run every rule on it."""
    import re

    from ..advisor.tree import predict as price
    from ..checkpoint.dialects import SIDECARS, parse_checkpoint
    from ..errors import ConfigError, QuantAdviseError
    from ..gate import rules as gate
    from ..hub import read_sidecar, resolve_model
    from ..kvcache import bytes_per_token, sequence_bytes
    from ..perf.profiles import resolve as resolve_eff
    from ..perf.step import check_tensor_parallel
    from ..sizing import size_model
    from ..workload import parse_workload

    cfg = loaded.config
    tnotes: list[str] = []
    assumptions: list[str] = []
    if inv is not None:
        file = rel(inv.file)
        site = gate.Site(key=f"{file}#{inv.context or inv.engine}",
                         label=f"{file}:{inv.line}" + (f" ({inv.context})" if inv.context else ""), file=file,
                         line=inv.line, flag_lines=dict(inv.flag_lines), config_file=loaded.file,
                         config_lines=dict(loaded.lines))
        source = inv.source
    else:
        site = gate.Site(key=f"{loaded.file or 'command line'}#declared",
                         label=f"{loaded.file} (declared; no engine command found)" if loaded.file else
                         "the command-line declaration", config_file=loaded.file, config_lines=dict(loaded.lines))
        source = "config" if loaded.file else "flags"
        notes.append("no engine command found: the declaration alone is checked (engine flags as declared)")

    # the engine release
    name = inv.engine if inv is not None else (cfg.engine or "vllm")
    versions = catalog.engine_versions(name)
    if engine_version_flag is not None:
        version, vfrom = engine_version_flag, "--engine-version"
    elif inv is not None and inv.engine_version:
        version, vfrom = inv.engine_version, f"the image tag / pinned package in {site.file}"
    elif cfg.engine_version is not None:
        version, vfrom = cfg.engine_version, loaded.file or "--engine-version"
    else:
        version, vfrom = versions[-1], "the newest release on file"
        assumptions.append(f"engine: {name} {version}, the newest release on file (no version declared or in the "
                           "image)")
    if version.removeprefix("v") not in versions and vfrom.startswith("the image"):
        chosen = _nearest_version(versions, version)
        out.add("QA100", f"{name} {version} ({vfrom}) is not on file; checked against {name} {chosen}, the closest "
                f"release on file (on file: {', '.join(versions)})", subject=f"{site.key}|engine-version",
                file=site.file, line=site.line, target=site.label)
        version, vfrom = chosen, f"the closest release on file to {version}"
    else:
        out.ran_rules("QA100")
    eng = _declared(loaded, "engine_version", lambda: catalog.get_engine(name, version))

    # the model
    declared_model = cfg.model
    observed = inv.model if inv is not None and inv.model and "model" not in _unresolved(inv) else None
    if declared_model is not None:
        local = Path(loaded.path(declared_model)) if "model" in loaded.lines else Path(declared_model)
        model_ref = str(local) if local.exists() else declared_model
        model_from = f"{loaded.file}" if "model" in loaded.lines else "--model"
        if observed is not None and not local.exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", observed) \
                and re.fullmatch(r"[\w.-]+/[\w.-]+", declared_model):
            gate.model_drift(out, site, declared=declared_model, served=observed)
        elif observed is not None:
            out.ran_rules("QA504")
    elif observed is not None:
        model_ref, model_from = observed, f"{site.file}:{inv.flag_lines.get('model', inv.line)}"  # type: ignore[union-attr]
    else:
        raise InputError(f"{site.label}: no model to check (the command's model is "
                         f"{inv.raw.get('model', 'missing') if inv is not None else 'missing'})",
                         hint="set model: in quantadvise.yaml (a Hub id or a local copy of its config.json) or pass "
                              "--model",
                         field="model")
    if model_ref not in models:
        if declared_model is None and inv is not None and model_ref.startswith(("/", "./", "~")) \
                and not Path(model_ref).expanduser().exists():
            raise ConfigError(f"{site.file}: line {inv.flag_lines.get('model', inv.line)}: key 'model': "
                              f"'{model_ref}' is a path inside the container, not on this machine",
                              hint="set model: in quantadvise.yaml to its Hub id or a local copy of its config.json",
                              field="model")
        src, cfg_json = _declared(loaded, "model", lambda: resolve_model(model_ref))
        if not isinstance(cfg_json, dict):
            raise ConfigError(f"{src.location}: expected a JSON object")
        side = {n: d for n in SIDECARS if (d := read_sidecar(src, n)) is not None}
        models[model_ref] = (src, cfg_json, side)
    src, cfg_json, side = models[model_ref]
    if inv is not None and inv.dtype and inv.dtype.lower() != "auto":
        cfg_json = {**cfg_json, "torch_dtype": _TORCH_NAMES.get(inv.dtype.lower(), inv.dtype)}

    # what the engine does with it
    ck0 = parse_checkpoint(cfg_json, side) if ("model_type" in cfg_json or "text_config" in cfg_json) else None
    if inv is not None:
        q_flag, kv_flag = inv.quantization, inv.kv_cache_dtype
    else:
        q_flag = _online_flag(eng, cfg.quantization) if ck0 is None or not ck0.is_quantized else None
        kv_flag = None
        if cfg.kv_cache_dtype is not None:
            try:
                d = catalog.kv_preset(cfg.kv_cache_dtype).deploy
                kv_flag = (d.vllm_kv_cache_dtype if name == "vllm" else d.sglang_kv_cache_dtype) or cfg.kv_cache_dtype
            except QuantAdviseError:
                kv_flag = cfg.kv_cache_dtype
    rep = inspect(cfg_json, engines=f"{name}=={eng.version}", gpu=g.id, quantization=q_flag, kv_cache_dtype=kv_flag,
                  sidecars=side)
    res, ck = rep.engines[0], rep.checkpoint
    tnotes.extend(gate.engine_findings(out, site, res.findings, res.label))
    if inv is not None:
        gate.artifact_findings(out, site, inv.warnings, _unresolved(inv))
    arch = load_model(cfg_json)[0] if rep.model.get("architecture") else None
    if arch is None:
        tnotes.append("the model's config.json has no architecture (model_type): memory and speed are not checked")

    # parallelism
    tp = (inv.tensor_parallel_size or 1) if inv is not None else (cfg.gpus or 1)
    pp = (inv.pipeline_parallel_size or 1) if inv is not None else 1
    split_error = None
    if arch is not None:
        try:
            check_tensor_parallel(arch, g, tp)
        except QuantAdviseError as exc:
            split_error = exc.message.replace(f"--gpus {tp}", f"tensor-parallel-size {tp}")
    gate.parallelism_findings(out, site, tp=tp, pp=pp, gpus_given=inv.gpu_count if inv is not None else None,
                              split_error=split_error)

    # what is served
    scheme, scheme_id, scheme_from = _served_scheme(ck, res, tnotes)
    kv_served = res.kv_cache_dtype_resolved or res.kv_cache_dtype or "auto"
    try:
        kvp = catalog.kv_preset(kv_served)
        kv_id, kv_t = kvp.id, (kvp.kv_cache if kvp.kv_cache.is_quantized else None)
    except QuantAdviseError:
        kv_id, kv_t = kv_served, None
        tnotes.append(f"KV cache dtype '{kv_served}' has no preset: sized as 16-bit")
    kv_from = (f"--kv-cache-dtype {kv_flag}" if kv_flag and kv_flag != "auto" else
               "'auto' with this checkpoint" if kv_id != "kv-bf16" else "--kv-cache-dtype auto (the default)")
    declared_scheme = None
    if cfg.quantization is not None:
        declared = _declared(loaded, "quantization", lambda: catalog.get_scheme(cfg.quantization))  # type: ignore[arg-type]
        declared_scheme = declared.id
        if scheme is not None:
            gate.scheme_drift(out, site, declared_id=declared.id, declared=declared, served_id=scheme_id, served=scheme,
                              served_from=scheme_from)
    else:
        out.skip("QA501", "no quantization declared")
        out.skip("QA502", "no quantization declared")
    declared_kv = None
    if cfg.kv_cache_dtype is not None:
        declared_kv = _declared(loaded, "kv_cache_dtype", lambda: catalog.kv_preset(cfg.kv_cache_dtype)).id  # type: ignore[arg-type]
        gate.kv_drift(out, site, declared=declared_kv, served=kv_id, served_from=kv_from,
                      declared_as=cfg.kv_cache_dtype)
    else:
        out.skip("QA503", "no kv_cache_dtype declared")

    # the workload
    w_cfg = cfg.workload
    conc = w_cfg.concurrency or (inv.max_num_seqs if inv is not None else None)
    if conc is None:
        conc = 1
        assumptions.append("concurrency: 1 (declare workload.concurrency, or set --max-num-seqs)")
    elif w_cfg.concurrency is None:
        assumptions.append(f"concurrency: {conc}, the engine's --max-num-seqs (declare workload.concurrency)")
    mml, mml_from = None, None
    if inv is not None and inv.max_model_len is not None:
        mml, mml_from = inv.max_model_len, f"--max-model-len at line {inv.flag_lines.get('max_model_len')}"
    elif inv is not None and arch is not None and arch.max_position_embeddings and "max_model_len" not in inv.raw:
        mml, mml_from = arch.max_position_embeddings, "the model's max_position_embeddings: no --max-model-len"
    ctx = w_cfg.ctx
    if ctx is None and w_cfg.prompt is None and w_cfg.output is None:
        if inv is not None and inv.max_model_len is not None:
            ctx = inv.max_model_len
            assumptions.append(f"context: {ctx:,} tokens per sequence, the engine's --max-model-len (every request "
                               "at the longest; declare workload.ctx)")
        else:
            ctx = 2048
            assumptions.append("context: 2,048 tokens per sequence (declare workload.ctx)")
    util = (inv.gpu_memory_utilization if inv is not None else None) or cfg.gpu_memory_utilization
    if util is None:
        util = 0.9
        assumptions.append("gpu-memory-utilization: 0.9, the engine default")
    reserve_gb = cfg.reserve_gb if cfg.reserve_gb is not None else 2.0
    if inv is not None:
        gate.workload_drift(out, site, concurrency=w_cfg.concurrency, max_num_seqs=inv.max_num_seqs, ctx=w_cfg.ctx,
                            max_model_len=mml, max_model_len_source=mml_from, gpus=cfg.gpus, parallel=tp * pp)
        gate.engine_drift(out, site, declared_engine=cfg.engine, served_engine=name,
                          declared_version=cfg.engine_version if "engine_version" in loaded.lines else None,
                          served_version=inv.engine_version, version_from=f"the image tag in {site.file}")
    else:
        out.skip("QA505", "no engine command")
        out.skip("QA506", "no engine command")
    prof = cfg.profile
    profile_path = (loaded.path(prof) if "profile" in loaded.lines else str(root / prof)) if prof else None
    wdata = {"model": str(src.location) if src.kind == "local" else model_ref, "gpu": g.id, "gpus": tp,
             "engine": name, "engine_version": eng.version, "batch": conc, "ctx": ctx, "prompt": w_cfg.prompt,
             "output": w_cfg.output, "mode": w_cfg.mode, "task": w_cfg.task, "memory_utilization": util,
             "reserve_gb": reserve_gb, "profile": profile_path}
    wdata = {k: v for k, v in wdata.items() if v is not None}
    w = parse_workload(wdata, where=f"{loaded.file or 'command line'}: workload")

    # memory
    mem = None
    if arch is not None and (scheme is not None or rep.size is not None):
        if ck is not None and ck.is_quantized and rep.size is not None:
            wb, wsrc = rep.size.total_bytes, "the checkpoint's tensors"
        elif scheme is not None:
            wb, wsrc = size_model(arch, scheme).total_bytes, f"{scheme_id} weights"
        else:
            wb, wsrc = rep.size.total_bytes, "the checkpoint's tensors"  # type: ignore[union-attr]
        mem = gate.memory_fit(
            gpu=g.id, gpus=tp * pp, gpu_memory_bytes=g.memory_bytes, memory_utilization=util,
            reserve_bytes_per_gpu=int(reserve_gb * 1024**3), weights_bytes=wb, weights_source=wsrc, kv_dtype=kv_id,
            kv_bytes_per_token=bytes_per_token(arch, kv_t), sequence_bytes=lambda n: sequence_bytes(arch, kv_t, n),
            concurrency=conc, kv_tokens_per_sequence=w.kv_tokens_per_sequence, max_model_len=mml,
            max_model_len_source=mml_from,
            kv_tokens_basis=("continuous batching holds sequences at every stage: prompt + half the output on "
                             "average, as `recommend` sizes it" if w.serving_mode == "continuous" else
                             "synchronous batches grow to the full context"),
        )
        gate.memory_findings(out, site, mem, engine=name, min_headroom=cfg.thresholds.min_memory_headroom)
    else:
        for rid in ("QA301", "QA302", "QA303", "QA304"):
            out.skip(rid, "no architecture or scheme to size")

    # speed
    perf = None
    if arch is not None and scheme is not None and split_error is None:
        try:
            profiles = load_profiles(False, profile_path)
            names = (g.id, g.name, *g.aliases)
            eff = resolve_eff(profiles, names, catalog.scheme_names(scheme.id) or (scheme.id,))
            dep = price(arch, g, w, scheme, eff, kv=kv_t, kv_name=kv_id)
            bf16 = catalog.get_scheme("bf16")
            base = price(arch, g, w, bf16, resolve_eff(profiles, names, catalog.scheme_names("bf16")), kv=kv_t,
                         kv_name=kv_id)
        except QuantAdviseError as exc:
            tnotes.append(f"speed not predicted: {exc}")
            dep = base = None
        if dep is not None and base is not None:
            rec = None
            try:
                rec = recommend(dict(wdata))
            except QuantAdviseError as exc:
                tnotes.append(f"no recommendation for this workload: {exc}")
            rec_tps = rec.performance.get("tokens_per_s") if rec is not None else None
            perf = gate.PerfCheck(
                scheme=scheme_id, kv_dtype=kv_id, tokens_per_s=dep.tokens_per_s, step_time_s=dep.step_time_s,
                bf16_tokens_per_s=base.tokens_per_s, speedup_vs_bf16=dep.tokens_per_s / base.tokens_per_s,
                recommended=rec.scheme_id if rec is not None else None,
                recommended_kv_dtype=rec.kv.get("dtype") if rec is not None else None,
                recommended_tokens_per_s=rec_tps, slowdown_vs_recommended=(rec_tps / dep.tokens_per_s - 1) if rec_tps
                else None, profile=dep.profile, mode=dep.mode, batch=dep.batch, model_note=dep.model_note,
            )
            gate.performance_findings(out, site, perf, max_slowdown=cfg.thresholds.max_slowdown_vs_recommended)
    if perf is None:
        out.skip("QA201", "speed not predicted (no architecture or scheme preset)")
        out.skip("QA202", "speed not predicted")

    # accuracy evidence for what is served
    bits = _scheme_bits(scheme, kv_t)
    if scheme is None and ck is not None and ck.groups and ck.groups[0].weight is not None:
        bits = ck.groups[0].weight.bits
    gate.evidence_required(out, site, scheme=scheme_id + (f" + {kv_id}" if kv_t is not None else ""), bits=bits,
                           below=cfg.thresholds.evidence_below_bits, evidence=cfg.accuracy is not None)

    return gate.TargetReport(
        label=site.label, file=site.file, line=site.line, source=source, context=inv.context if inv else None,
        engine=name, engine_version=eng.version, engine_version_from=vfrom, model=model_ref
        if src.kind != "local" else rel(model_ref), model_from=model_from, checkpoint=rep.summary,
        resolved_method=res.resolved_method, engine_status=res.status, scheme=scheme_id, scheme_from=scheme_from,
        declared_scheme=declared_scheme, kv_cache_dtype=kv_id, declared_kv_cache_dtype=declared_kv, gpu=g.id,
        gpus=tp * pp, concurrency=conc, ctx=w.context, mode=w.serving_mode, memory=mem, performance=perf,
        assumptions=assumptions, notes=list(dict.fromkeys(tnotes + list(rep.notes))),
    )
