"""The serialized float dialects: ``fp8`` (per-tensor, per-token or block-scaled weights, as vLLM's
Fp8Config and transformers write them) and gpt-oss ``mxfp4`` (MoE experts in OCP MXFP4)."""

from __future__ import annotations

from typing import Any

from .args import field_error, get_field, get_str_list, short
from .compressed_tensors import kv_tensor_quant, parse_kv_args
from .quant import CheckpointQuant, QArgs, make_group


def parse_fp8(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    scheme = get_field(qc, "activation_scheme", where, str, default="dynamic")
    if scheme not in ("static", "dynamic"):
        raise field_error(f"{where}.activation_scheme", f"must be 'static' or 'dynamic', got {short(scheme)}")
    fmt = get_field(qc, "fmt", where, str, default="e4m3")
    if fmt not in ("e4m3", "e5m2"):
        raise field_error(f"{where}.fmt", f"must be 'e4m3' or 'e5m2', got {short(fmt)}")
    block = get_field(qc, "weight_block_size", where, list, default=None)
    block_t: tuple[int, ...] | None = None
    if block is not None:
        if not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block):
            raise field_error(f"{where}.weight_block_size",
                              f"must be positive integers [rows, cols], got {short(block)}")
        if len(block) != 2:
            raise field_error(f"{where}.weight_block_size",
                              f"must have 2 dimensions [rows, cols], got {len(block)}",
                              hint="the engines refuse it too: "
                              "'The quantization block size of weight must have 2 dimensions'")
        block_t = tuple(block)
    elem = "fp8_e4m3" if fmt == "e4m3" else "fp8_e5m2"
    if block_t is not None:
        w = QArgs(num_bits=8, type="float", strategy="block", block_structure=(block_t[0], block_t[1]),
                  scale_dtype="fp32", element=elem)
        a = QArgs(num_bits=8, type="float", strategy="group", group_size=block_t[1], dynamic=scheme == "dynamic",
                  scale_dtype="fp32", element=elem)
    else:
        w = QArgs(num_bits=8, type="float", strategy="tensor", scale_dtype="fp32", element=elem)
        a = (QArgs(num_bits=8, type="float", strategy="token", dynamic=True, scale_dtype="fp32", element=elem)
             if scheme == "dynamic" else
             QArgs(num_bits=8, type="float", strategy="tensor", scale_dtype="fp32", element=elem))
    ignore = (get_str_list(qc, "ignored_layers", where, default=())
              + get_str_list(qc, "modules_to_not_convert", where, default=()))
    g = make_group("fp8", ("Linear",), w, a, scale_format="fp32", scope="decoder_linears", fmt="fp8", where=where)
    details = {"activation_scheme": scheme, "fmt": fmt, "weight_block_size": list(block_t) if block_t else None}
    kv_raw = qc.get("kv_cache_scheme")
    kv_args = kv_tq = None
    if isinstance(kv_raw, dict):
        kv_args = parse_kv_args(kv_raw, f"{where}.kv_cache_scheme")
        kv_tq = kv_tensor_quant(kv_args)
    elif kv_raw == "static":  # AMD Quark's fp8 export: per-tensor fp8 k_scale / v_scale in the checkpoint
        kv_args = QArgs(num_bits=8, type="float", strategy="tensor")
        kv_tq = kv_tensor_quant(kv_args)
    elif kv_raw is not None:
        raise field_error(f"{where}.kv_cache_scheme", f"must be an object or 'static', got {short(kv_raw)}")
    if "scale_fmt" in qc:
        details["scale_fmt"] = qc["scale_fmt"]
    return CheckpointQuant(
        quant_method=key, family="fp8", found_in=where, format="fp8", groups=(g,), ignore=ignore,
        ignore_style="glob", activation_scheme=scheme, weight_block_size=block_t, details=details,
        kv_cache=kv_args, kv_cache_quant=kv_tq, kv_cache_raw=kv_raw if isinstance(kv_raw, dict) else None,
    )


def parse_mxfp4(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    skip = get_str_list(qc, "modules_to_not_convert", where, default=())
    w = QArgs(num_bits=4, type="float", strategy="group", group_size=32, scale_dtype="e8m0")
    g = make_group("mxfp4", ("experts",), w, None, scale_format="e8m0", scope="experts", fmt="mxfp4", where=where,
                   notes=("MoE experts only: attention, router, embedding and lm_head stay 16-bit",))
    return CheckpointQuant(quant_method=key, family="mxfp4", found_in=where, format="mxfp4", groups=(g,),
                           ignore=skip, ignore_style="glob", details={"modules_to_not_convert": list(skip)})
