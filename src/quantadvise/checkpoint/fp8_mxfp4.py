"""The serialized float dialects: ``fp8`` (per-tensor, per-token or block-scaled weights, as vLLM's
Fp8Config and transformers write them) and gpt-oss ``mxfp4`` (MoE experts in OCP MXFP4)."""

from __future__ import annotations

from typing import Any

from .args import field_error, get_field, get_str_list, short
from .compressed_tensors import kv_tensor_quant, parse_kv_args
from .quant import CheckpointQuant, QArgs, QuantGroup, make_group

# ``fmt`` spellings producers write (DeepSeek "e4m3", MiniMax "float8_e4m3fn") -> the element format
_FP8_FMTS = {"e4m3": "e4m3", "e4m3fn": "e4m3", "float8_e4m3fn": "e4m3", "float8_e4m3": "e4m3", "fp8_e4m3": "e4m3",
             "e5m2": "e5m2", "float8_e5m2": "e5m2", "fp8_e5m2": "e5m2"}


def parse_fp8(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    scheme = get_field(qc, "activation_scheme", where, str, default="dynamic")
    if scheme not in ("static", "dynamic"):
        raise field_error(f"{where}.activation_scheme", f"must be 'static' or 'dynamic', got {short(scheme)}")
    # Neither vLLM's nor SGLang's Fp8Config.from_config reads ``fmt`` (weights are e4m3 unless the
    # tensors say otherwise), so a spelling quantadvise does not know is a note, never a refusal.
    fmt_raw = qc.get("fmt")
    fmt = _FP8_FMTS.get(str(fmt_raw).strip().lower().removeprefix("torch."), None) if fmt_raw is not None else "e4m3"
    notes: list[str] = []
    if fmt is None:
        notes.append(f"{where}.fmt {short(fmt_raw)} is not an fp8 format quantadvise knows; the engines do not read "
                     "fmt, so the weights are sized as fp8 e4m3")
        fmt = "e4m3"
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
    details: dict[str, Any] = {"activation_scheme": scheme, "fmt": fmt_raw if fmt_raw is not None else fmt,
                               "weight_block_size": list(block_t) if block_t else None}
    groups: list[QuantGroup] = [g]
    quant_algo = qc.get("quant_algo") if isinstance(qc.get("quant_algo"), str) else None
    moe_algo = qc.get("moe_quant_algo")
    if moe_algo is not None:
        # DeepSeek-V4 NVFP4 exports: fp8 block linears + NVFP4 routed experts (vLLM
        # models/deepseek_v41/quant_config.py reads moe_quant_algo; SGLang configs/model_config.py too)
        details["moe_quant_algo"] = moe_algo
        layers = qc.get("quantized_layers")
        n_layers = len(layers) if isinstance(layers, dict) else 0
        if str(moe_algo).upper() == "NVFP4":
            gsize = qc.get("group_size") if isinstance(qc.get("group_size"), int) and qc["group_size"] > 0 else 16
            ew = QArgs(num_bits=4, type="float", strategy="tensor_group", group_size=gsize, scale_dtype="fp8_e4m3")
            ea = QArgs(num_bits=4, type="float", strategy="tensor_group", group_size=gsize, dynamic="local",
                       scale_dtype="fp8_e4m3")
            groups.insert(0, make_group("moe nvfp4", ("experts",), ew, ea, scale_format="fp8_e4m3", scope="experts",
                                        fmt="modelopt-nvfp4", where=where,
                                        notes=("moe_quant_algo NVFP4: routed experts in NVFP4"
                                               + (f" ({n_layers} quantized_layers entries)" if n_layers else ""),)))
        else:
            notes.append(f"{where}.moe_quant_algo {short(moe_algo)} is not one quantadvise knows; the experts are "
                         "sized as fp8")
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
    if quant_algo is not None:
        details["quant_algo"] = quant_algo
    return CheckpointQuant(
        quant_method=key, family="fp8", found_in=where, format="fp8", groups=tuple(groups), ignore=ignore,
        ignore_style="glob", activation_scheme=scheme, weight_block_size=block_t, details=details,
        kv_cache=kv_args, kv_cache_quant=kv_tq, kv_cache_raw=kv_raw if isinstance(kv_raw, dict) else None,
        quant_algo=quant_algo, has_nvfp4_layers=True if moe_algo is not None and str(moe_algo).upper() == "NVFP4"
        else None, warnings=tuple(notes),
    )


def parse_mxfp4(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    skip = get_str_list(qc, "modules_to_not_convert", where, default=())
    w = QArgs(num_bits=4, type="float", strategy="group", group_size=32, scale_dtype="e8m0")
    g = make_group("mxfp4", ("experts",), w, None, scale_format="e8m0", scope="experts", fmt="mxfp4", where=where,
                   notes=("MoE experts only: attention, router, embedding and lm_head stay 16-bit",))
    return CheckpointQuant(quant_method=key, family="mxfp4", found_in=where, format="mxfp4", groups=(g,),
                           ignore=skip, ignore_style="glob", details={"modules_to_not_convert": list(skip)})
