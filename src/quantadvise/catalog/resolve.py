"""What every API function shares: resolve a model, scheme, KV dtype, GPU, engine release or
efficiency profile by name (bundled data, local files, the HF cache, the Hub) into the values the
pure core takes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import catalog, defaults
from ..errors import InputError, norm_name
from ..files import is_file
from ..model.arch import ModelArch, ModelSource
from ..model.parse import parse_config
from ..scheme.axes import Scheme, TensorQuant, custom_weight_scheme

if TYPE_CHECKING:
    from ..checkpoint.native import Native
    from ..engines.data import EngineData
    from ..hardware import GPU
    from .models import FoundConfig


def load_model(model: str | dict[str, Any] | ModelArch = defaults.MODEL) -> tuple[ModelArch, ModelSource]:
    """A model architecture from a bundled id, a local path, the HF cache or the Hub (in that
    order), from a config.json dict, or passed through. Returns (arch, where it came from)."""
    if isinstance(model, ModelArch):
        return model, ModelSource(id=model.architecture, source="object")
    if isinstance(model, dict):
        return parse_config(model, "config"), ModelSource(id=str(model.get("_name_or_path", "config")), source="dict")
    return from_config(*find_config(model))


def from_config(src: FoundConfig, cfg: dict[str, Any]) -> tuple[ModelArch, ModelSource]:
    """A found config.json parsed, with where it came from (``load_model`` of a name)."""
    arch = parse_config(cfg, src.location if src.kind != "bundled" else src.id)
    return arch, ModelSource(id=src.id, source=src.kind, location=src.location, published_params=src.published_params)


def find_config(name: str) -> tuple[FoundConfig, dict[str, Any]]:
    """(where, config.json dict) of a model by name: ``catalog.hub.resolve_model``'s search, with a
    bundled name answered without importing the Hub module (start-up of ``size`` and ``recommend``)."""
    found = catalog.bundled_source(name)
    if found is not None:
        return found
    from .hub import resolve_model

    return resolve_model(name)


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
        elif scheme.endswith((".yaml", ".yml")) or is_file(scheme):  # is_file: a 5,000-character name is no path
            s = catalog.load_scheme_file(Path(scheme))
        else:
            s = catalog.get_scheme(scheme)
        if group is not None:
            if s.weight is None or s.weight.scale is None:
                raise InputError(f"--group sets the group size of quantized weights, and {s.id} keeps its weights "
                                 "unquantized", hint=f"give --bits (e.g. --bits 4 --group {group}) or a --scheme with "
                                 "per-group scales (w4a16, awq ...)", field="group")
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
    # a name is looked up; anything else is a GPU already (hardware is not imported for this: `size` without
    # --gpu never needs it)
    return catalog.get_gpu(gpu) if isinstance(gpu, str) else gpu


def get_engine(engine: str = defaults.ENGINE, version: str | None = None) -> EngineData:
    """One engine release from data/engines/ (``engine`` may carry the version: ``vllm==0.33.0``)."""
    from ..inputs import split_engine

    name, ver = split_engine(engine)
    return catalog.get_engine(name, version or ver)


def release_warning(engine: str = defaults.ENGINE, version: str | None = None) -> str | None:
    """The one warning a command shows when the release it names (``engine`` may carry it: ``vllm==0.21.1``) is
    not on file and the closest one on file stands in (None: on file, or none named)."""
    from ..inputs import split_engine

    name, carried = split_engine(engine)
    ver = version or carried
    return catalog.release(name, ver).warning if ver and ver.strip().lower() != "latest" else None


def load_profiles(ideal: bool = False, profile: str | Path | Any | None = None, gpu: Any | None = None) -> list[Any]:
    """The efficiency profiles a prediction uses: the spec sheet (``ideal``), or the shipped
    default, then the measured kernel profile shipped for ``gpu`` (data/profiles/<gpu>.yaml), then a
    user profile (file or PerfProfile), each layered over the one before."""
    from ..errors import UnknownNameError
    from ..perf import profiles as perf_profiles
    from ..perf.profiles import PerfProfile
    from .profiles import deployment_doc

    if ideal and profile is not None:
        raise InputError("give --ideal (the spec sheet) or --profile FILE, not both", field="profile")
    if ideal:
        return [perf_profiles.IDEAL]  # made on first use
    profiles = [catalog.default_perf_profile()]
    measured = catalog.measured_profile(gpu.id) if gpu is not None else None
    if measured is not None:
        profiles.append(measured)
    if profile is not None and not isinstance(profile, PerfProfile) and deployment_doc(profile) is not None:
        profile = None  # a deployment profile holds serving terms, not efficiencies (load_site_terms)
    if profile is not None:
        user = profile if isinstance(profile, PerfProfile) else catalog.load_perf_profile(Path(profile))
        known = {norm_name(n) for n in catalog.gpu_names()}
        for entry in user.gpus:
            if norm_name(entry.gpu) not in known:
                raise UnknownNameError("GPU", entry.gpu, catalog.gpu_names(), hint=f"in profile {user.id}")
        profiles.append(user)
    return profiles


def load_site_terms(profile: Any) -> tuple[Any, ...]:
    """The serving terms (``perf.loop.LoopTerms``) of a deployment profile given as ``--profile``: a file
    written by ``calibrate --from-bench``, or a ``SiteProfile``; none for anything else."""
    from ..perf.loop import SiteProfile
    from .profiles import deployment_doc, load_site_profile

    if isinstance(profile, SiteProfile):
        return profile.serving
    if profile is None or not isinstance(profile, (str, Path)) or deployment_doc(profile) is None:
        return ()
    return load_site_profile(profile).serving


def load_workload(path: str | Path) -> dict[str, Any]:
    """A workload YAML file as a dict (validated by :func:`recommend`)."""
    from ..errors import ConfigError

    doc = catalog.load_yaml_file(Path(path))
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a mapping of workload keys (batch, ctx, gpu, task ...)")
    return doc




def engine_share(g: GPU, gpus: int = 1, *, arch: ModelArch | None = None, engine: str | None = None,
                 version: str | None = None) -> tuple[float, int, str]:
    """(memory fraction, runtime reserve bytes per GPU, where the fraction comes from) for a command that
    sizes memory without an engine command (``size --gpu``, ``roofline``): the engine release's own
    default, derived as ``check`` and ``recommend`` derive it (``engines.startup.share_of_gpu``) —
    the newest bundled vLLM's when no engine is named."""
    from ..engines.startup import default_reserve_gb, share_of_gpu

    eng = catalog.get_engine(engine or defaults.ENGINE, version)
    facts = catalog.engine_startup(eng.engine, eng.version)
    usable, why = share_of_gpu(facts, g.memory_bytes, g.vendor, tp=gpus, mla=bool(arch is not None and arch.is_mla),
                               model_path=arch.architecture if arch else "")
    reserve_gb, _ = default_reserve_gb(eng.engine)
    return usable, int(reserve_gb * defaults.GiB), why


def shipped_scheme(arch: ModelArch, src: FoundConfig | None, cfg: dict[str, Any]) -> Native | None:
    """The checkpoint as shipped (its quantization_config, or ModelOpt's hf_quant_config.json beside
    it when ``src`` is a folder or Hub entry), when it quantizes weights: what ``recommend`` weighs as the
    native candidate and ``size`` sizes by default."""
    from ..checkpoint.native import native_scheme
    from ..checkpoint.parse import SIDECARS, find_quantization_config, parse_checkpoint
    from ..checkpoint.presets import with_presets
    side: dict[str, Any] = {}
    if src is not None and src.directory is not None:  # a folder to look in (not a bundled config)
        from .hub import read_sidecar

        side = {n: d for n in SIDECARS if (d := read_sidecar(src, n)) is not None}
    ck = parse_checkpoint(cfg, side)
    if ck is None or not ck.is_quantized:
        return None
    presets = [catalog.get_scheme(s) for s in catalog.scheme_ids()]
    ck = with_presets(ck, presets, catalog.format_library("compressed-tensors"))
    qc, _ = find_quantization_config(cfg)
    return native_scheme(arch, ck, catalog.layouts(), quantization_config=qc or side.get("hf_quant_config.json"))

