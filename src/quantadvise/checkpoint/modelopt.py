"""NVIDIA ModelOpt: ``quant_algo`` / ``kv_cache_quant_algo`` in config.json or
``hf_quant_config.json``, per-layer ``MIXED_PRECISION``, and the newer compressed-tensors style
``config_groups`` export."""

from __future__ import annotations

from typing import Any

from ..scheme.axes import GroupShape, ScaleSpec, TensorQuant
from .args import REQUIRED, field_error, get_field, get_group_size, get_str_list, short
from .compressed_tensors import parse_compressed_tensors
from .quant import CheckpointQuant, QArgs, QuantGroup, make_group

# FP8_PB_WO ("per-block", despite the WO) is served W8A8 by both engines: 128x128 static weight blocks and
# activations quantized at run time per 1x128 group (vllm 0.33.0 modelopt.py:2733-2744 "PbWo: 128x128
# block-static weight, dynamic per-block activation (W8A8)"; sglang 0.5.23 modelopt_quant.py:934-941, an
# Fp8Config with activation_scheme="dynamic" and weight_block_size [128, 128])
_MODELOPT_ALGOS = {
    "FP8": "fp8", "FP8_PER_CHANNEL_PER_TOKEN": "fp8-channel", "FP8_PB_WO": "fp8-block",
    "FP8_BLOCK_SCALES": "fp8-block",
    "NVFP4": "nvfp4", "NVFP4_AWQ": "nvfp4", "W4A16_NVFP4": "nvfp4-a16", "NVFP4_W4A16": "nvfp4-a16",
    "MXFP8": "mxfp8", "W4A8_AWQ": "w4a8-awq", "INT4_AWQ": "int4-awq", "W4A16_AWQ": "int4-awq",
    "INT8_SQ": "int8-sq", "W8A8_SQ": "int8-sq", "W4A8_NVFP4_FP8": "nvfp4-fp8", "MIXED_PRECISION": "mixed",
}


def _modelopt_args(algo: str, group: int | None, where: str) -> tuple[QArgs | None, QArgs | None, str | None]:
    kind = _MODELOPT_ALGOS.get(algo.upper())
    if kind is None:
        return None, None, None
    g16 = group or 16
    nv_w = QArgs(num_bits=4, type="float", strategy="tensor_group", group_size=g16, scale_dtype="fp8_e4m3")
    if kind == "fp8":
        return (QArgs(num_bits=8, type="float", strategy="tensor", scale_dtype="fp32"),
                QArgs(num_bits=8, type="float", strategy="tensor", scale_dtype="fp32"), None)
    if kind == "fp8-channel":
        return (QArgs(num_bits=8, type="float", strategy="channel", scale_dtype="fp32"),
                QArgs(num_bits=8, type="float", strategy="token", dynamic=True, scale_dtype="fp32"), None)
    if kind == "fp8-block":
        return (QArgs(num_bits=8, type="float", strategy="block", block_structure=(128, 128), scale_dtype="fp32"),
                QArgs(num_bits=8, type="float", strategy="group", group_size=128, dynamic=True, scale_dtype="fp32"),
                None)
    if kind == "nvfp4":
        return nv_w, QArgs(num_bits=4, type="float", strategy="tensor_group", group_size=g16, dynamic="local",
                           scale_dtype="fp8_e4m3"), None
    if kind == "nvfp4-a16":
        return nv_w, None, None
    if kind == "nvfp4-fp8":
        return nv_w, QArgs(num_bits=8, type="float", strategy="tensor", scale_dtype="fp32"), None
    if kind == "mxfp8":
        return (QArgs(num_bits=8, type="float", strategy="group", group_size=32, scale_dtype="e8m0"),
                QArgs(num_bits=8, type="float", strategy="group", group_size=32, dynamic=True, scale_dtype="e8m0"),
                None)
    if kind in ("int4-awq", "w4a8-awq"):
        w = QArgs(num_bits=4, type="int", strategy="group", group_size=group or 128, scale_dtype="fp16")
        a = QArgs(num_bits=8, type="float", strategy="tensor", scale_dtype="fp32") if kind == "w4a8-awq" else None
        return w, a, None
    if kind == "int8-sq":
        return (QArgs(num_bits=8, type="int", strategy="channel", scale_dtype="fp32"),
                QArgs(num_bits=8, type="int", strategy="tensor", scale_dtype="fp32"), None)
    return None, None, "mixed"


# Multimodal wrappers name the language model's layers under a prefix the text-only inventory does not
# use; quantized_layers entries are matched after dropping it.
_WRAPPER_PREFIXES = (("model.language_model.", "model."), ("language_model.model.", "model."),
                     ("language_model.", ""))


def _hf_module_name(name: str) -> str:
    for old, new in _WRAPPER_PREFIXES:
        if name.startswith(old):
            return new + name[len(old):]
    return name


def _flat_config_groups(body: dict[str, Any], found: str, dtype: str, key: str, producer: str | None,
                        legacy: bool) -> CheckpointQuant:
    """ModelOpt's newer flat export: compressed-tensors style ``config_groups`` beside ``quant_algo``. Both
    engines read the algorithm and the KV cache from the top level, never the groups: vLLM's flat branch
    (modelopt.py:343-357: ``quant_algo``; a ``kv_cache_scheme`` object of float 8-bit means FP8, a string
    means none) and SGLang's (modelopt_quant.py:1616 ``quant_algo``; ModelOptFp8Config reads only an object
    ``kv_cache_scheme``, else ``kv_cache_quant_algo``, :481-490). So ``quant_algo`` is what the engines'
    algorithm checks test, in this layout as in the legacy one."""
    kv_raw = body.get("kv_cache_scheme")
    notes: list[str] = []
    if kv_raw is not None and not isinstance(kv_raw, dict):
        notes.append(f"{found}.kv_cache_scheme is the string {short(kv_raw)}: vLLM reads only an object there "
                     "(modelopt.py:343-357) and SGLang's ModelOpt FP8 config ignores it (modelopt_quant.py:481-490), "
                     "so the KV cache is not quantized from the checkpoint; pass --kv-cache-dtype to quantize it")
        body = {k: v for k, v in body.items() if k != "kv_cache_scheme"}
    ct = parse_compressed_tensors({**body, "quant_method": "compressed-tensors"}, None, found, dtype,
                                  "compressed-tensors", engine_groups=False)
    algo = body.get("quant_algo") if isinstance(body.get("quant_algo"), str) else None
    kv_algo = body.get("kv_cache_quant_algo") if isinstance(body.get("kv_cache_quant_algo"), str) else None
    if kv_algo is None and isinstance(kv_raw, dict) and kv_raw.get("type") == "float" and kv_raw.get("num_bits") == 8:
        kv_algo = "FP8"  # vLLM modelopt.py:343-357, SGLang modelopt_quant.py:481-490 / 1617-1638
    ignore = ct.ignore + get_str_list(body, "exclude_modules", found, default=())
    details = {**ct.details, "quant_algo": algo, "kv_cache_quant_algo": kv_algo,
               **({"legacy_layout": True} if legacy else {}),
               **({"kv_cache_scheme": kv_raw} if isinstance(kv_raw, str) else {})}
    return ct.model_copy(update={"quant_method": key, "family": "modelopt", "quant_algo": algo,
                                 "kv_cache_algo": kv_algo, "producer": producer or ct.producer,
                                 "ignore": ignore, "ignore_style": "glob", "details": details,
                                 "has_nvfp4_layers": "FP4" in algo.upper() if algo else None,
                                 "warnings": ct.warnings + tuple(notes)})


def parse_modelopt(qc: dict[str, Any], hf: Any, where: str, dtype: str, key: str = "modelopt") -> CheckpointQuant:
    body = dict(qc)
    found = where
    producer = None
    legacy = False
    if isinstance(hf, dict) and qc.get("quant_algo") is not None and isinstance(qc.get("config_groups"), dict):
        # a flat export in config.json is what both engines read; hf_quant_config.json beside it is read only
        # when config.json has no quantization_config (vLLM transformers_utils/config.py:951-965, SGLang
        # configs/model_config.py:1746-1750)
        hf = None
    if isinstance(hf, dict):
        # ``hf``: ModelOpt's {producer, quantization} layout, from hf_quant_config.json or (``qc`` empty)
        # as config.json's quantization_config itself; both engines read either the same way
        label = where if not qc else "hf_quant_config.json"
        q = hf.get("quantization")
        if q is not None and not isinstance(q, dict):
            raise field_error(f"{label}.quantization", f"must be an object, got {short(q)}")
        prod = hf.get("producer")
        if isinstance(q, dict):
            merged = dict(q)
            merged.update({k: v for k, v in body.items() if v is not None})
            body = merged
            # vLLM normalizes quant_algo only for this layout, when it is the config it reads
            # (transformers_utils/model_arch_config_convertor.py:247-256)
            legacy = not qc and ((isinstance(prod, dict) and prod.get("name") == "modelopt")
                                 or "modelopt_quant_config" in q)
        if isinstance(prod, dict):
            producer = f"{prod.get('name', 'modelopt')} {prod.get('version', '')}".strip()
    if producer is None and isinstance(body.get("producer"), dict):  # a flat export names its producer too
        prod = body["producer"]
        producer = f"{prod.get('name', 'modelopt')} {prod.get('version', '')}".strip()
    mixed = str(body.get("quant_algo") or "").upper() == "MIXED_PRECISION" and bool(body.get("quantized_layers"))
    # A flat MIXED_PRECISION export may carry config_groups too (nvidia/Qwen3.6-35B-A3B-NVFP4): both
    # engines read its per-layer quantized_layers map, never the config_groups (vLLM modelopt.py
    # ModelOptMixedPrecisionConfig._from_config; SGLang configs/model_config.py
    # _parse_modelopt_quant_config), so the map wins here too.
    if not mixed and "config_groups" in body and isinstance(body.get("config_groups"), dict) and body["config_groups"]:
        return _flat_config_groups(body, found, dtype, key, producer, legacy)
    algo = get_field(body, "quant_algo", found, str, default=REQUIRED)
    group = get_group_size(body, "group_size", found, default=None)
    kv_algo = get_field(body, "kv_cache_quant_algo", found, str, default=None)
    kv_scheme = body.get("kv_cache_scheme")
    if kv_algo is None and isinstance(kv_scheme, dict) and kv_scheme.get("type") == "float" \
            and kv_scheme.get("num_bits") == 8:
        kv_algo = "FP8"  # vLLM modelopt.py from_config: a float 8-bit kv_cache_scheme means FP8
    exclude = get_str_list(body, "exclude_modules", found, default=()) + get_str_list(body, "ignore", found, default=())
    warnings: list[str] = []
    groups: list[QuantGroup] = []
    has_nvfp4 = None
    w, a, kind = _modelopt_args(algo, group, found)
    if kind == "mixed":
        layers = get_field(body, "quantized_layers", found, dict, default={})
        if not layers:
            raise field_error(f"{found}.quantized_layers", "MIXED_PRECISION needs a non-empty quantized_layers map")
        by_algo: dict[tuple[str, int | None], list[str]] = {}
        for lname, spec in layers.items():
            if not isinstance(spec, dict):
                raise field_error(f"{found}.quantized_layers.{lname}",
                                  f"must be an object with quant_algo, got {short(spec)}")
            la = get_field(spec, "quant_algo", f"{found}.quantized_layers.{lname}", str)
            lg = get_group_size(spec, "group_size", f"{found}.quantized_layers.{lname}", default=None)
            by_algo.setdefault((la.upper(), lg), []).append(_hf_module_name(lname))
        # SGLang's test (configs/model_config.py _parse_modelopt_quant_config): an NVFP4 or W4A16_NVFP4 layer
        has_nvfp4 = any(a_ in ("NVFP4", "W4A16_NVFP4") for a_, _ in by_algo)
        for (la, lg), names in by_algo.items():
            lw, lact, lk = _modelopt_args(la, lg, found)
            if lw is None:
                warnings.append(f"ModelOpt layer algorithm '{la}' is not one quantadvise knows; those layers are "
                                "not sized")
                continue
            groups.append(make_group(la.lower(), tuple(names), lw, lact, scale_format="fp32", scope="patterns",
                                     fmt=f"modelopt-{la.lower()}", where=found))
    elif w is None:
        warnings.append(f"ModelOpt quant_algo '{algo}' is not one quantadvise knows; the layers are not sized")
        groups.append(QuantGroup(name=algo.lower(), targets=("Linear",), scope="unknown", format="modelopt"))
    else:
        groups.append(make_group(algo.lower(), ("Linear",), w, a, scale_format="fp32", scope="decoder_linears",
                                 fmt=f"modelopt-{algo.lower()}", where=found))
        has_nvfp4 = "FP4" in algo.upper()
    kv_tq = None
    if kv_algo:
        ka = kv_algo.upper()
        if ka in ("FP8",):
            kv_tq = TensorQuant(format="fp8_e4m3", scale=ScaleSpec(format="fp32"))
        elif "FP4" in ka:
            kv_tq = TensorQuant(format="fp4_e2m1", scale=ScaleSpec(format="fp8_e4m3", dynamic=True,
                                                                    group=GroupShape(row=1, col=16)),
                                scale2=ScaleSpec(format="fp32"))
    return CheckpointQuant(
        quant_method=key if key.startswith("modelopt") else "modelopt", family="modelopt", found_in=found,
        format="modelopt", producer=producer or "NVIDIA ModelOpt", groups=tuple(groups), ignore=exclude,
        ignore_style="glob", kv_cache_quant=kv_tq, kv_cache_algo=kv_algo, quant_algo=algo,
        has_nvfp4_layers=has_nvfp4, details={"quant_algo": algo, "kv_cache_quant_algo": kv_algo, "group_size": group,
                                             **({"legacy_layout": True} if legacy else {})},
        warnings=tuple(warnings),
    )
