"""``inspect``: a checkpoint's quantization_config read back into the six axes, sized on disk, and
judged by each engine release."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import catalog
from ..catalog.resolve import get_engine, get_gpu, release_warning
from ..hardware import GPU
from ..inputs import names
from ..model.parse import parse_config

if TYPE_CHECKING:
    from ..checkpoint.quant import CheckpointQuant
    from ..engines.inspection import GpuTarget, InspectReport


def gpu_target(gpu: str | GPU | int | None) -> GpuTarget | None:
    """The --gpu the engines are judged on (its compute capability as they compare it, and its
    platform): a GPU id or alias, or a bare capability (``sm75``, ``7.5``, ``75``)."""
    import re

    from ..engines.inspection import GpuTarget

    if gpu is None:
        return None
    if isinstance(gpu, int):
        return GpuTarget(id=f"sm{_capability(gpu, str(gpu))}", capability=gpu)
    if isinstance(gpu, str):
        m = re.fullmatch(r"\s*(?:sm_?)?(\d{1,3})(?:\.(\d))?\s*", gpu.lower(), flags=re.ASCII)
        if m and (m.group(2) is not None or gpu.lower().strip().startswith("sm") or len(m.group(1)) >= 2):
            cap = int(m.group(1)) * 10 + int(m.group(2)) if m.group(2) is not None else int(m.group(1))
            if cap < 10:
                cap *= 10
            return GpuTarget(id=f"sm{_capability(cap, gpu)}", capability=cap)
    g = get_gpu(gpu)
    platform = g.platform
    # on ROCm the engines compare the capability vLLM derives from the gfx target (gfx942 -> 9.4)
    ecap = g.engine_capability
    shown = g.compute_capability or (f"{ecap // 10}.{ecap % 10} ({g.gfx_target})" if ecap is not None else None)
    return GpuTarget(id=g.id, name=g.name, capability=ecap, platform=platform, compute_capability=shown)


# CUDA compute capabilities (major.minor as major x 10 + minor): Kepler's 3.0 to Blackwell's 12.x
CAPABILITIES = (30, 129)


def _capability(cap: int, given: str) -> int:
    """``cap`` if it is a CUDA compute capability, else one InputError naming what was given."""
    if not CAPABILITIES[0] <= cap <= CAPABILITIES[1]:
        from ..errors import InputError

        raise InputError(f"--gpu {given!r}: not a CUDA compute capability (3.0 to 12.x: 8.0, 9.0, sm90, sm_120) "
                         "nor a GPU on file (quantadvise list gpus)")
    return cap


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
    from ..checkpoint.parse import (
        SIDECARS,
        find_quantization_config,
        model_dtype_format,
        parse_checkpoint,
        parse_quantization_config,
    )
    from ..engines.inspection import InspectedModel, inspect_checkpoint

    gguf = None
    index: dict[str, Any] | None = None
    if isinstance(model, dict):
        cfg, side = model, dict(sidecars or {})
        info = InspectedModel(id=str(model.get("_name_or_path", "config")), source="dict")
    else:
        from ..catalog.hub import read_sidecar, resolve_model

        gguf = _gguf_weights(model)
        if gguf is not None and gguf[2] is None:
            # GGUF weights and no config.json: the architecture lives in the .gguf header
            cfg, side = {}, dict(sidecars or {})
            info = InspectedModel(id=model, source="local", location=model)
        else:
            src, cfg = resolve_model(model)
            info = InspectedModel(id=src.id, source=src.kind, location=src.location)
            side = {n: d for n in SIDECARS if (d := read_sidecar(src, n)) is not None}
            side.update(sidecars or {})
            index = read_sidecar(src, "model.safetensors.index.json")
    if not isinstance(cfg, dict):
        from ..errors import ConfigError

        raise ConfigError(f"{info.where}: expected a JSON object, got {type(cfg).__name__}")
    arch = None
    ck: CheckpointQuant | None
    gguf_notes: list[str] = []
    if gguf is not None:
        from ..checkpoint.bnb_gguf_mlx import gguf_files_checkpoint

        files, kind, _ = gguf
        ck = gguf_files_checkpoint(files, kind, model if isinstance(model, str) else "")
        if "model_type" in cfg or "text_config" in cfg:
            arch = parse_config(cfg, info.where)
            info = info.model_copy(update={"model_type": arch.model_type, "architecture": arch.architecture,
                                           "kind": arch.kind, "torch_dtype": arch.torch_dtype})
            if find_quantization_config(cfg)[0] is not None:
                gguf_notes.append("config.json also declares a quantization_config; the weights on disk are the "
                                  ".gguf files, which is what the engines would have to load")
        else:
            gguf_notes.append("no config.json: the architecture is inside the .gguf header, which quantadvise does not "
                              "read; layers and size on disk are not computed")
    elif "model_type" in cfg or "text_config" in cfg:
        arch = parse_config(cfg, info.where)
        info = info.model_copy(update={"model_type": arch.model_type, "architecture": arch.architecture,
                                       "kind": arch.kind, "torch_dtype": arch.torch_dtype})
        ck = parse_checkpoint(cfg, side)
    elif "quant_method" in cfg or "config_groups" in cfg or "global_quant_config" in cfg:
        ck = parse_quantization_config(
            cfg, found_in=info.location if info.location is not None else "quantization_config")
        ck = ck.model_copy(update={"found_in": "quantization_config"})
    elif "quantization" in cfg and "producer" in cfg:
        ck = parse_quantization_config(None, hf_quant_config=cfg)
    else:
        # no model_type and no quant_method: let the config parser name what is missing
        parse_config(cfg, info.where)
        ck = None  # pragma: no cover - parse_config raised
    if engines is None:
        specs = catalog.engine_names()
    else:  # each engine once, however often it is named (inputs.names)
        specs = list(names("engine", engines, "vllm,sglang") or ())
    if len(specs) == 1 and specs[0].strip().lower() in ("all", "both"):
        specs = catalog.engine_names()
    rows = [get_engine(s) for s in specs]
    target = gpu_target(gpu)
    stored = model_dtype_format(cfg.get("torch_dtype") or cfg.get("dtype"))
    notes = gguf_notes
    if stored == "fp32" and ck is not None and ck.is_quantized:
        stored = "fp16"
        notes.append("config torch_dtype is float32; the quantized checkpoint's 16-bit tensors are counted as fp16 "
                     "(as its producer wrote them)")
    presets = [catalog.get_scheme(s) for s in catalog.scheme_ids()]
    report = inspect_checkpoint(
        ck, arch, model_info=info, engines=rows, layouts=catalog.layouts(), presets=presets,
        library=catalog.format_library("compressed-tensors"), gpu=target,
        quantization=quantization, kv_cache_dtype=kv_cache_dtype,
        allow_deprecated=allow_deprecated, stored_dtype=stored,
        kernel_tables=tuple(t for e in rows if (t := catalog.kernel_table(e.engine, e.version)) is not None
                            and t.version == e.version),
        carried=tuple((e.engine, e.version, t, catalog.kernel_caveat(e.engine, e.version) or "")
                      for e in rows if (t := catalog.kernel_table(e.engine, e.version)) is not None
                      and t.version != e.version),
    )
    checked = _against_index(report, index)
    if checked:
        report = report.model_copy(update={"warnings": report.warnings + [checked]})
    stand_ins = list(dict.fromkeys(w for s in specs if (w := release_warning(s)) is not None))
    if stand_ins:
        report = report.model_copy(update={"warnings": stand_ins + report.warnings})
    return report.model_copy(update={"notes": notes + report.notes}) if notes else report


def _against_index(report: InspectReport, index: dict[str, Any] | None) -> str | None:
    """A warning when the checkpoint's own safetensors index (``metadata.total_size``, the bytes its
    shards hold) and the size quantadvise predicts disagree by more than 10%: the inventory does not
    account for every tensor of this architecture, and says so instead of a confident wrong total."""
    meta = index.get("metadata") if isinstance(index, dict) else None
    total = meta.get("total_size") if isinstance(meta, dict) else None
    if report.size is None or not isinstance(total, int) or isinstance(total, bool) or not 0 < total < 2**63:
        return None  # no size, or one no file system holds (the comparison would overflow a float)
    predicted = report.size.total_bytes
    if abs(predicted - total) <= 0.10 * total:
        return None
    return (f"model.safetensors.index.json says the shards hold {total / 1e9:.2f} GB; quantadvise accounts for "
            f"{predicted / 1e9:.2f} GB ({(predicted - total) / total:+.0%}): its inventory does not match this "
            "architecture tensor by tensor, so the sizes here are off by that much")




def _gguf_weights(model: str) -> tuple[list[str], str, str | None] | None:
    """(.gguf file names, "file" | "folder", config.json path or None) when the model path is a .gguf
    file or a folder whose weights are .gguf files only (no safetensors / .bin beside them)."""
    from pathlib import Path

    try:
        p = Path(model).expanduser()
        if p.is_file():
            if p.suffix.lower() != ".gguf":
                return None
            cfg = p.parent / "config.json"
            return [p.name], "file", str(cfg) if cfg.is_file() else None
        if not p.is_dir():
            return None
        files = sorted(f.name for f in p.glob("*.gguf"))
        if not files or any(p.glob("*.safetensors")) or any(p.glob("*.bin")):
            return None
        cfg = p / "config.json"
        return files, "folder", str(cfg) if cfg.is_file() else None
    except (OSError, RuntimeError, ValueError):  # ~nosuchuser, a name the file system cannot hold
        return None
