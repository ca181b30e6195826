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
