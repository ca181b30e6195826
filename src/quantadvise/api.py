"""The Python API: one function per CLI command. The CLI adds no behaviour these lack.

These functions resolve names (models, schemes, GPUs) through ``registry`` and ``hub`` and then call
the pure core. Everything they return is a pydantic result model; ``.model_dump(mode="json")`` is
exactly what ``--format json`` prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import registry
from .errors import InputError
from .hardware import GPU
from .model import ModelArch, parse_config
from .scheme import Scheme, TensorQuant, custom_weight_scheme
from .sizing import DEFAULT_MEMORY_UTILIZATION, DEFAULT_RESERVE_BYTES, SizeReport, size_model

DEFAULT_MODEL = "meta-llama/Meta-Llama-3-8B"
DEFAULT_GPU = "h100-sxm"


def load_model(model: str | dict[str, Any] | ModelArch = DEFAULT_MODEL) -> tuple[ModelArch, dict[str, Any]]:
    """A model architecture from a bundled id, a local path, the HF cache or the Hub (in that
    order), from a config.json dict, or passed through. Returns (arch, info about the source)."""
    if isinstance(model, ModelArch):
        return model, {"id": model.architecture, "source": "object"}
    if isinstance(model, dict):
        return parse_config(model, "config"), {"id": model.get("_name_or_path", "config"), "source": "dict"}
    from .hub import resolve_model

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
            s = registry.get_scheme("bf16")
        elif scheme.endswith((".yaml", ".yml")) or Path(scheme).is_file():
            s = registry.load_scheme_file(Path(scheme))
        else:
            s = registry.get_scheme(scheme)
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
    preset = registry.kv_preset(kv_dtype)
    return preset.kv_cache, preset.id


def get_gpu(gpu: str | GPU) -> GPU:
    return gpu if isinstance(gpu, GPU) else registry.get_gpu(gpu)


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
    from .accuracy import AccuracyReport, AccuracyThresholds
    from .deploy import DeploymentScan


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
    ``thresholds`` (an :class:`~quantadvise.accuracy.AccuracyThresholds`) and ``per_task``
    (task -> thresholds) are the gate's way in. Returns an ``AccuracyReport``; its
    ``exit_code()`` is 1 when a check fails.
    """
    from .accuracy import AccuracyThresholds, compare
    from .evidence import load_evidence

    flags = {"max_delta_drop": max_delta, "max_flip_rate": max_flips, "max_kl": max_kl, "min_samples": min_samples}
    if any(v is not None for v in flags.values()):
        from pydantic import ValidationError

        from .errors import format_validation_error

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
    from .deploy import read_paths

    return read_paths([paths] if isinstance(paths, str | Path) else list(paths), env=env)


if TYPE_CHECKING:
    from .perfprofile import PerfProfile
    from .roofline import RooflineResult


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
    from .perfprofile import resolve
    from .roofline import fit_weight_group, parse_batches, parse_contexts
    from .roofline import roofline as run

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
    effs = [resolve(profiles, gpu_names, registry.scheme_names(s.id) or (s.id,)) for s in resolved]
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
    from .engines import EngineData, EngineDiff, EngineListing, MethodDetail
    from .inspection import InspectReport


def get_engine(engine: str = "vllm", version: str | None = None) -> EngineData:
    """One engine release from data/engines/ (``engine`` may carry the version: ``vllm==0.33.0``)."""
    name, ver = _split_engine(engine)
    return registry.get_engine(name, version or ver)


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
    from .engines import listing

    return listing(get_engine(engine, version))


def engines_show(method: str, engine: str = "vllm", version: str | None = None) -> MethodDetail:
    """One method in one engine release: its row, the names sharing its config class, the
    overrides that produce it, and the same name in the other engines on file."""
    from .engines import method_detail

    e = get_engine(engine, version)
    others = [registry.get_engine(n) for n in registry.engine_names() if n != e.engine]
    detail = method_detail(e, method, others)
    if detail is None:
        from .errors import UnknownNameError

        raise UnknownNameError(f"{e.label} quantization method", method, [m.id for m in e.methods],
                               hint=f"`quantadvise engines list --engine {e.engine}` lists them")
    return detail


def engines_diff(a: str = "vllm", b: str = "sglang") -> EngineDiff:
    """Two engine registries side by side: methods only in one, KV cache dtypes, optimized flags."""
    from .engines import diff

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
    from .checkpoint import SIDECARS, model_dtype_format, parse_checkpoint, parse_quantization_config
    from .inspection import inspect_checkpoint

    if isinstance(model, dict):
        cfg, info, side = model, {"id": model.get("_name_or_path", "config"), "source": "dict"}, dict(sidecars or {})
    else:
        from .hub import read_sidecar, resolve_model

        src, cfg = resolve_model(model)
        info = {"id": src.id, "source": src.kind, "location": src.location}
        side = {n: d for n in SIDECARS if (d := read_sidecar(src, n)) is not None}
        side.update(sidecars or {})
    if not isinstance(cfg, dict):
        from .errors import ConfigError

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
        specs = registry.engine_names()
    elif isinstance(engines, str):
        specs = [s for s in engines.split(",") if s.strip()]
    else:
        specs = list(engines)
    if len(specs) == 1 and specs[0].strip().lower() in ("all", "both"):
        specs = registry.engine_names()
    rows = [get_engine(s) for s in specs]
    gpu_info, capability, platform = gpu_target(gpu)
    stored = model_dtype_format(cfg.get("torch_dtype") or cfg.get("dtype"))
    notes = []
    if stored == "fp32" and ck is not None and ck.is_quantized:
        stored = "fp16"
        notes.append("config torch_dtype is float32; the quantized checkpoint's 16-bit tensors are counted as fp16 "
                     "(as its producer wrote them)")
    presets = [registry.get_scheme(s) for s in registry.scheme_ids()]
    report = inspect_checkpoint(
        ck, arch, model_info=info, engines=rows, layouts=registry.layouts(), presets=presets,
        library=registry.format_library("compressed-tensors"), capability=capability, platform=platform,
        gpu_info=gpu_info, quantization=quantization, kv_cache_dtype=kv_cache_dtype,
        allow_deprecated=allow_deprecated, stored_dtype=stored,
    )
    return report.model_copy(update={"notes": notes + report.notes}) if notes else report


if TYPE_CHECKING:
    from .advisor import Recommendation
    from .workload import Workload

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
    from .errors import UnknownNameError
    from .perfprofile import IDEAL, PerfProfile

    if ideal and profile is not None:
        raise InputError("give --ideal (the spec sheet) or --profile FILE, not both", field="profile")
    if ideal:
        return [IDEAL]
    profiles = [registry.default_perf_profile()]
    if profile is not None:
        user = profile if isinstance(profile, PerfProfile) else registry.load_perf_profile(Path(profile))
        known = {registry.norm_name(n) for n in registry.gpu_names()}
        for entry in user.gpus:
            if registry.norm_name(entry.gpu) not in known:
                raise UnknownNameError("GPU", entry.gpu, registry.gpu_names(), hint=f"in profile {user.id}")
        profiles.append(user)
    return profiles


def load_workload(path: str | Path) -> dict[str, Any]:
    """A workload YAML file as a dict (validated by :func:`recommend`)."""
    from .errors import ConfigError

    doc = registry.load_yaml_file(Path(path))
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
    from . import advisor, plan
    from .checkpoint import parse_quantization_config
    from .engines import resolve
    from .perfprofile import resolve as resolve_eff
    from .workload import Workload, parse_workload

    if isinstance(workload, Workload):
        data = workload.model_dump(exclude_unset=True)
    else:
        data = dict(workload or {})
    data.update({k: v for k, v in overrides.items() if v is not None})
    w = parse_workload(data)
    explicit = set(data)

    arch, info = load_model(w.model)
    g = get_gpu(w.gpu)
    engine = registry.get_engine(w.engine, w.engine_version)
    other_name = "sglang" if w.engine == "vllm" else "vllm"
    other = registry.get_engine(other_name, None)
    profiles = load_profiles(w.ideal, w.profile)
    gpu_names = (g.id, g.name, *g.aliases)
    platform = "rocm" if g.vendor == "amd" else "cuda"

    names = list(w.candidates) if w.candidates else list(DEFAULT_CANDIDATES)
    if "bf16" not in [registry.scheme_preset(n).id for n in names]:
        names.insert(0, "bf16")
    seen: set[str] = set()
    picks = []
    for n in names:
        preset = registry.scheme_preset(n)
        if preset.id in seen:
            continue
        seen.add(preset.id)
        scheme = registry.scheme_from_preset(preset)
        eff = resolve_eff(profiles, gpu_names, registry.scheme_names(scheme.id) or (scheme.id,))
        picks.append((scheme, preset.deploy.model_dump(), eff))

    quant_kv = QUANTIZED_KV[w.engine]
    kv_ids = {"kv-bf16", quant_kv}
    forced = w.kv_dtype is not None
    if forced:
        kv_ids.add(registry.kv_preset(w.kv_dtype).id)  # type: ignore[arg-type]
    kv_options = {}
    for kid in kv_ids:
        p = registry.kv_preset(kid)
        kv_options[p.id] = (None if not p.kv_cache.is_quantized else p.kv_cache, p.deploy.model_dump())
    if forced:
        quant_kv = registry.kv_preset(w.kv_dtype).id if registry.kv_preset(w.kv_dtype).kv_cache.is_quantized \
            else quant_kv  # type: ignore[arg-type]

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
            v = check(eng, o, kv_id)
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
            "recipe": plan.llmcompressor_recipe(o.scheme, o.deploy, str(model_id)),
            "quantization_config": plan.quantization_config(o.scheme, o.deploy),
            "path_placeholder": path,
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
    assumptions.append(
        "speed: roofline with " + ("the spec sheet (--ideal)" if w.ideal else
                                   f"efficiency profile '{picks[0][2].profile_id}'")
        + " — a model, not a measurement; calibrate with --profile"
    )
    assumptions.append("candidates: " + ", ".join(s.id for s, _, _ in picks))

    options = advisor.build_options(arch, g, w, picks, kv_options, quant_kv)
    ctx = advisor.Context(
        arch=arch, gpu=g, workload=w, kv_options=kv_options, quant_kv=quant_kv, rules=registry.accuracy_rules(),
        engine_check=lambda o, kv_id: check(engine, o, kv_id), engine_label=engine.label,
        kv_name=registry.kv_preset(w.kv_dtype).id if forced else "kv-bf16", forced_kv=forced,  # type: ignore[arg-type]
    )
    rec = advisor.recommend(ctx, options, assumptions, info, deploy_builder)
    warn = list(arch.warnings) + [x for x in rec.warnings if x not in arch.warnings]
    return rec.model_copy(update={
        "warnings": warn,
        "workload": {**rec.workload, "engine_version": engine.version},
    })
