"""Reading a checkpoint's ``quantization_config`` back into the six axes: where the engines find
it, which dialect parser reads it.

Every producer writes its own dialect — compressed-tensors ``config_groups``, AutoAWQ's ``w_bit`` /
``q_group_size``, GPTQ's ``bits`` / ``sym`` / ``desc_act``, the serialized ``fp8`` config, NVIDIA
ModelOpt's ``quant_algo`` (in config.json or ``hf_quant_config.json``), gpt-oss ``mxfp4``,
bitsandbytes, GGUF, Intel AutoRound, AMD Quark and MLX. :func:`parse_quantization_config` picks the
parser by ``quant_method`` (:data:`PARSERS`, each imported when first needed) and returns a :class:`~.quant.CheckpointQuant`.

Malformed input raises :class:`~quantadvise.errors.ConfigError` naming the field and the fix —
never another exception. Pure: dicts in, frozen models out.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError
from .args import field_error, model_dtype_format, short
from .quant import SIDECARS, CheckpointQuant

# quant_method spellings -> family
_FAMILIES = {
    "compressed-tensors": "compressed-tensors",
    "compressed_tensors": "compressed-tensors",
    "sparseml": "compressed-tensors",
    "awq": "awq",
    "gptq": "gptq",
    "fp8": "fp8",
    "modelopt": "modelopt",
    "modelopt_fp8": "modelopt",
    "modelopt_fp4": "modelopt",
    "mxfp4": "mxfp4",
    "bitsandbytes": "bitsandbytes",
    "gguf": "gguf",
    "auto-round": "auto-round",
    "intel/auto-round": "auto-round",
    "auto_round": "auto-round",
    "quark": "quark",
    "mlx": "mlx",
}

# A dialect parser: (quantization_config, hf_quant_config.json or None, where it was found, the model's
# 16-bit format, the quant_method as written) -> the checkpoint's quantization.
Parser = Callable[[dict[str, Any], Any, str, str, str], CheckpointQuant]

# family -> "module:function" of its parser, imported when a checkpoint of that family is read
PARSERS: dict[str, str] = {
    "compressed-tensors": "compressed_tensors:parse_compressed_tensors",
    "awq": "gptq_awq:parse_awq",
    "gptq": "gptq_awq:parse_gptq",
    "fp8": "fp8_mxfp4:parse_fp8",
    "modelopt": "modelopt:parse_modelopt",
    "mxfp4": "fp8_mxfp4:parse_mxfp4",
    "bitsandbytes": "bnb_gguf_mlx:parse_bitsandbytes",
    "gguf": "bnb_gguf_mlx:parse_gguf",
    "auto-round": "gptq_awq:parse_autoround",
    "quark": "quark:parse_quark",
    "mlx": "bnb_gguf_mlx:parse_mlx",
}


def parser(family: str) -> Parser:
    """The dialect parser of a family (its module imported on first use)."""
    module, _, name = PARSERS[family].partition(":")
    fn: Parser = getattr(importlib.import_module(f"{__package__}.{module}"), name)
    return fn


def find_quantization_config(config: Any) -> tuple[dict[str, Any] | None, str]:
    """Where the engines look, in order: ``quantization_config``, ``text_config.quantization_config``,
    then ``compression_config`` (vLLM's weight_utils fallback chain)."""
    if not isinstance(config, dict):
        raise ConfigError(f"config.json: expected a JSON object, got {type(config).__name__}")
    for key, label in (("quantization_config", "quantization_config"),):
        if config.get(key) is not None:
            return config[key], label
    tc = config.get("text_config")
    if isinstance(tc, dict) and tc.get("quantization_config") is not None:
        return tc["quantization_config"], "text_config.quantization_config"
    if config.get("compression_config") is not None:
        return config["compression_config"], "compression_config"
    return None, ""


def parse_checkpoint(config: Any, sidecars: dict[str, Any] | None = None) -> CheckpointQuant | None:
    """The checkpoint's quantization from its config.json and the side files beside it, or None for
    an unquantized checkpoint.

    Looked up in the engines' order: config.json (``quantization_config``, then
    ``text_config.quantization_config``, then ``compression_config``), then ModelOpt's
    ``hf_quant_config.json`` (vLLM and SGLang read it as the quantization config), then files only
    the producers' own loaders read: ``quantization_config.json`` (compressed-tensors / AutoRound
    exports), ``quantize_config.json`` (AutoGPTQ, some AutoAWQ) and ``quant_config.json`` (early
    AutoAWQ)."""
    sidecars = sidecars or {}
    qc, found = find_quantization_config(config)
    dtype = model_dtype_format(config.get("torch_dtype") or config.get("dtype")) if isinstance(config, dict) else "bf16"
    hf = sidecars.get("hf_quant_config.json")
    if qc is not None:
        return parse_quantization_config(qc, hf_quant_config=hf, found_in=found, model_dtype=dtype)
    if hf is not None:
        return parse_quantization_config(None, hf_quant_config=hf, model_dtype=dtype)
    for name in SIDECARS[1:]:
        raw = sidecars.get(name)
        if raw is None:
            continue
        if not isinstance(raw, dict):
            raise ConfigError(f"{name}: expected a JSON object, got {type(raw).__name__}", field=name)
        raw = dict(raw)
        if "quant_method" not in raw:
            if name == "quant_config.json" or any(k in raw for k in ("w_bit", "q_group_size", "zero_point")):
                raw["quant_method"] = "awq"
            elif "bits" in raw:
                raw["quant_method"] = "gptq"
        ck = parse_quantization_config(raw, found_in=name, model_dtype=dtype)
        if ck.family == "gptq" and name == "quantize_config.json":
            # AutoGPTQ's save_quantized: every QuantLinear carries an fp16 bias buffer, and a tied
            # lm_head is written as its own tensor.
            groups = tuple(g.model_copy(update={"layout": "gptq-autogptq" if g.layout == "gptq" else g.layout})
                           for g in ck.groups)
            ck = ck.model_copy(update={"groups": groups, "tied_lm_head_stored": True,
                                       "producer": "AutoGPTQ" if ck.producer == "AutoGPTQ / GPTQModel"
                                       else ck.producer})
        return ck
    return None


def parse_quantization_config(qc: Any, *, hf_quant_config: Any = None, found_in: str = "quantization_config",
                              model_dtype: str = "bf16") -> CheckpointQuant:
    """Normalize one ``quantization_config`` dict (or ModelOpt's hf_quant_config.json)."""
    where = found_in
    if qc is None:
        if not isinstance(hf_quant_config, dict):
            raise ConfigError("hf_quant_config.json: expected a JSON object", field="hf_quant_config")
        return parser("modelopt")({}, hf_quant_config, "hf_quant_config.json", model_dtype, "modelopt")
    if not isinstance(qc, dict):
        raise ConfigError(f"{where}: expected a JSON object, got {type(qc).__name__} {short(qc)}",
                          hint="quantization_config is an object with a quant_method key", field=where)
    method = qc.get("quant_method")
    if method is None and _modelopt_block(qc):
        # ModelOpt's {producer, quantization} layout as config.json's quantization_config: vLLM reads it
        # exactly like hf_quant_config.json (transformers_utils/config.py:951-965 assigns either to
        # config.quantization_config; model_arch_config_convertor.py:247-270 normalizes it), SGLang
        # unwraps it (configs/model_config.py:1850 unwrap_modelopt_quantization_config)
        return parser("modelopt")({}, qc, where, model_dtype, "modelopt")
    declared = method is not None
    if method is None:
        if qc.get("load_in_4bit") or qc.get("load_in_8bit") or qc.get("_load_in_4bit") or qc.get("_load_in_8bit"):
            method = "bitsandbytes"
        elif isinstance(qc.get("quant_algo"), str) and (_producer(qc) == "modelopt" or "config_groups" in qc):
            # a flat ModelOpt export that names no quant_method (Qwen/Qwen3-32B-FP8-Static-PerTensor): SGLang
            # parses it as ModelOpt (configs/model_config.py:1733-1738); vLLM reads quant_method "" (the
            # engine's no-quant-method reading decides what each engine does with it)
            method = "modelopt"
        elif "config_groups" in qc:
            method = "compressed-tensors"
        elif "global_quant_config" in qc:
            method = "quark"
        elif "bits" in qc and "group_size" in qc and set(qc) <= {"bits", "group_size", "mode"}:
            method = "mlx"  # mlx-lm writes a bare {group_size, bits} (SGLang's mlx override reads it)
        else:
            raise field_error(f"{where}.quant_method", "required field is missing",
                              hint="the engines pick the loader by quant_method (awq, gptq, fp8, compressed-tensors, "
                              "modelopt, mxfp4, bitsandbytes, gguf, auto-round, quark)")
    if not isinstance(method, str) or not method.strip():
        raise field_error(f"{where}.quant_method", f"must be a non-empty string, got {short(method)}")
    key = method.strip().lower()
    family = _FAMILIES.get(key)
    if family is None and key.startswith("modelopt"):
        family = "modelopt"
    if family is None:
        # Not a dialect quantadvise reads (exl2, hqq, ...): keep it, so each engine can say whether
        # it knows the name; nothing is sized.
        return CheckpointQuant(
            quant_method=key, family="unknown", found_in=where,
            details={k: v for k, v in qc.items() if isinstance(v, (str, int, float, bool)) and k != "quant_method"},
            warnings=(f"quant_method '{method}' is not a format quantadvise reads (it reads "
                      + ", ".join(sorted(set(_FAMILIES.values()))) + "); its layers are not sized",),
        )
    ck = parser(family)(qc, hf_quant_config, where, model_dtype, key)
    return ck if declared else ck.model_copy(update={"method_declared": False})


def _producer(qc: dict[str, Any]) -> str | None:
    prod = qc.get("producer")
    return prod.get("name") if isinstance(prod, dict) and isinstance(prod.get("name"), str) else None


def _modelopt_block(qc: dict[str, Any]) -> bool:
    """vLLM's test for the ModelOpt layout (model_arch_config_convertor.py:249-256): a ``quantization``
    object, and a ``producer`` named ``modelopt`` or a legacy ``modelopt_quant_config`` inside."""
    q, prod = qc.get("quantization"), qc.get("producer")
    return isinstance(q, dict) and ((isinstance(prod, dict) and prod.get("name") == "modelopt")
                                    or "modelopt_quant_config" in q)


# The entry points; SIDECARS (quant.py) and model_dtype_format (args.py) come along for the callers
# that read a checkpoint's files.
__all__ = [
    "PARSERS", "SIDECARS", "find_quantization_config", "model_dtype_format", "parse_checkpoint",
    "parse_quantization_config",
]
