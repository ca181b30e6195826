"""The integer weight-only dialects: AutoAWQ (``w_bit`` / ``q_group_size`` / ``zero_point``),
GPTQ (``bits`` / ``sym`` / ``desc_act`` and GPTQModel's ``dynamic`` overrides) and Intel AutoRound
(which packs in the GPTQ or AWQ layout)."""

from __future__ import annotations

from typing import Any

from .args import field_error, get_field, get_group_size, get_int, get_str_list, req_group_size, short
from .quant import CheckpointQuant, QArgs, make_group


def int_args(bits: int, group: int, sym: bool, where: str, scale: str | None = None) -> QArgs:
    """Integer weights of ``bits`` in groups of ``group`` (-1: one scale per output channel)."""
    if not 2 <= bits <= 8:
        raise field_error(where, f"weight bits must be between 2 and 8, got {bits}")
    return QArgs(num_bits=bits, type="int", strategy="channel" if group == -1 else "group",
                 group_size=None if group == -1 else group, symmetric=sym, scale_dtype=scale)


def parse_awq(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    bkey = "w_bit" if qc.get("w_bit") is not None or "bits" not in qc else "bits"
    gkey = "q_group_size" if qc.get("q_group_size") is not None or "group_size" not in qc else "group_size"
    bits = get_int(qc, bkey, where)
    group = req_group_size(qc, gkey, where)
    zero = get_field(qc, "zero_point", where, bool, default=True)
    version = get_field(qc, "version", where, str, default="gemm")
    wfield = f"{where}.{'w_bit' if 'w_bit' in qc else 'bits'}"
    weights = int_args(bits, group, not zero, wfield, scale="fp16")
    skip = get_str_list(qc, "modules_to_not_convert", where, default=())
    layout = "awq-gemm" if version.lower() in ("gemm", "gemv_fast", "gemv", "exllama", "ipex") else None
    g = make_group("awq", ("Linear",), weights, None, scale_format="fp16", scope="decoder_linears",
                   fmt=f"awq-{version.lower()}", layout=layout, where=where)
    notes = []
    if version.lower() != "gemm":
        notes.append(f"AWQ version '{version}': sized with the GEMM packing (same bytes, different tensor order)")
    return CheckpointQuant(
        quant_method=key, family="awq", found_in=where, format=f"awq-{version.lower()}", producer="AutoAWQ",
        groups=(g,), ignore=skip, ignore_style="substring", quantize_lm_head=False,
        details={"w_bit": bits, "q_group_size": group, "zero_point": zero, "version": version},
        warnings=tuple(notes),
    )


def parse_gptq(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    bits = get_int(qc, "bits", where)
    group = req_group_size(qc, "group_size", where)
    sym = get_field(qc, "sym", where, bool, default=True)
    desc_act = get_field(qc, "desc_act", where, bool, default=False)
    lm_head = get_field(qc, "lm_head", where, bool, default=False)
    ckpt_fmt = get_field(qc, "checkpoint_format", where, str, default=None) or (
        "marlin" if get_field(qc, "is_marlin_format", where, bool, default=False) else "gptq")
    weights = int_args(bits, group, sym, f"{where}.bits", scale="fp16")
    if desc_act and group != -1:
        # act-order groups follow g_idx (vLLM: MPLinearLayerConfig(has_g_idx=self.quant_config.desc_act),
        # auto_gptq.py); with group_size -1 there is one scale per channel and the engines drop desc_act
        weights = weights.model_copy(update={"actorder": "group"})
    if ckpt_fmt not in ("gptq", "gptq_v2", "marlin"):
        raise field_error(f"{where}.checkpoint_format", f"unknown GPTQ checkpoint_format {short(ckpt_fmt)}",
                          hint="choose gptq, gptq_v2 or marlin")
    dynamic = get_field(qc, "dynamic", where, dict, default={})
    ignore: list[str] = []
    groups = [make_group("gptq", ("Linear",), weights, None, scale_format="fp16", scope="decoder_linears",
                         fmt=ckpt_fmt, layout="gptq" if ckpt_fmt != "marlin" else None, where=where)]
    for pattern, override in dynamic.items():
        if not isinstance(pattern, str):
            raise field_error(f"{where}.dynamic", "keys must be module regexes (prefix '-:' excludes, '+:' overrides)")
        if pattern.startswith("-:"):
            ignore.append("re:" + pattern[2:])
            continue
        if not isinstance(override, dict):
            raise field_error(f"{where}.dynamic.{pattern}", f"must be an object of overrides, got {short(override)}")
        dw = f"{where}.dynamic.{pattern}"
        ob = get_int(override, "bits", dw, default=bits)
        og = get_group_size(override, "group_size", dw, default=group)
        osym = get_field(override, "sym", dw, bool, default=sym)
        patt = "re:" + pattern.removeprefix("+:")
        groups.insert(0, make_group(f"dynamic {pattern.removeprefix('+:')}", (patt,),
                                    int_args(ob, og if og is not None else group, osym, f"{dw}.bits", scale="fp16"),
                                    None, scale_format="fp16", scope="patterns", fmt=ckpt_fmt,
                                    layout="gptq" if ckpt_fmt != "marlin" else None, where=dw))
    blocks = qc.get("modules_in_block_to_quantize")
    details: dict[str, Any] = {"bits": bits, "group_size": group, "sym": sym, "desc_act": desc_act,
                               "checkpoint_format": ckpt_fmt, "lm_head": lm_head}
    if blocks is not None:
        details["modules_in_block_to_quantize"] = blocks
    meta = qc.get("meta")
    producer = None
    if isinstance(meta, dict) and isinstance(meta.get("quantizer"), list) and meta["quantizer"]:
        producer = ", ".join(str(q) for q in meta["quantizer"])
    elif isinstance(meta, dict) and isinstance(meta.get("quantizer"), str):
        producer = meta["quantizer"]
    warnings = []
    if ckpt_fmt == "marlin":
        warnings.append("GPTQ checkpoint_format 'marlin': tensors are pre-repacked for Marlin; sized without "
                        "qzeros/g_idx")
    return CheckpointQuant(
        quant_method=key, family="gptq", found_in=where, format=ckpt_fmt, producer=producer or "AutoGPTQ / GPTQModel",
        groups=tuple(groups), ignore=tuple(ignore), ignore_style="regex", quantize_lm_head=lm_head,
        details=details, warnings=tuple(warnings),
    )


def parse_autoround(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    bits = get_int(qc, "bits", where, default=4)
    group = req_group_size(qc, "group_size", where, default=128)
    sym = get_field(qc, "sym", where, bool, default=True)
    data_type = str(get_field(qc, "data_type", where, str, default="int")).lower()
    packing = (get_field(qc, "packing_format", where, str, default=None)
               or get_field(qc, "backend", where, str, default=None) or "auto_round:auto_gptq")
    act_bits = get_int(qc, "act_bits", where, default=16)
    if data_type in ("int", "int_sym", "int_asym"):
        w = int_args(bits, group, sym, f"{where}.bits", scale="fp16")
    elif data_type in ("mx_fp", "mx_fp4", "mxfp4", "mx_fp8", "mxfp8"):
        w = QArgs(num_bits=bits, type="float", strategy="group", group_size=32, scale_dtype="e8m0")
    elif data_type in ("nv_fp", "nv_fp4", "nvfp4"):
        w = QArgs(num_bits=4, type="float", strategy="tensor_group", group_size=16, scale_dtype="fp8_e4m3")
    elif data_type in ("fp", "fp8", "fp8_e4m3"):
        w = QArgs(num_bits=8, type="float", strategy="channel" if group == -1 else "tensor", scale_dtype="fp32")
    else:
        raise field_error(f"{where}.data_type", f"unknown AutoRound data_type {short(data_type)}",
                          hint="expected int, mx_fp, nv_fp or fp")
    a = None
    if act_bits < 16:
        adt = str(qc.get("act_data_type") or data_type).lower()
        if "fp" in adt and act_bits in (4, 8):
            a = QArgs(num_bits=act_bits, type="float", strategy="group" if act_bits == 4 else "token",
                      group_size=w.group_size if act_bits == 4 else None, dynamic=True,
                      scale_dtype="e8m0" if "mx" in adt else None)
        elif 2 <= act_bits <= 8:
            a = QArgs(num_bits=act_bits, type="int", strategy="token", dynamic=True)
    layout = None
    if w.type == "int":
        pk = packing.lower()
        layout = "awq-gemm" if "awq" in pk else "gptq"
    groups = [make_group("auto-round", ("Linear",), w, a, scale_format="fp16", scope="decoder_linears",
                         fmt=packing, layout=layout, where=where)]
    ignore: list[str] = []
    extra = get_field(qc, "extra_config", where, dict, default={})
    for lname, spec in extra.items():
        if not isinstance(spec, dict):
            raise field_error(f"{where}.extra_config.{lname}", f"must be an object, got {short(spec)}")
        eb = get_int(spec, "bits", f"{where}.extra_config.{lname}", default=bits)
        if eb >= 16:
            ignore.append(lname)
        elif eb != bits or "group_size" in spec or "sym" in spec:
            eg = get_group_size(spec, "group_size", f"{where}.extra_config.{lname}", default=group)
            es = get_field(spec, "sym", f"{where}.extra_config.{lname}", bool, default=sym)
            groups.insert(0, make_group(lname, (lname,), int_args(eb, eg if eg is not None else group, es,
                                                                  f"{where}.extra_config.{lname}.bits", scale="fp16"),
                                        None, scale_format="fp16", fmt=packing, layout=layout, where=where))
    skip = get_str_list(qc, "modules_to_not_convert", where, default=())
    return CheckpointQuant(
        quant_method=key, family="auto-round", found_in=where, format=packing,
        producer="Intel AutoRound" + (f" {qc['autoround_version']}" if isinstance(qc.get("autoround_version"), str)
                                      else ""),
        groups=tuple(groups), ignore=tuple(ignore) + skip, ignore_style="substring",
        quantize_lm_head=bool(qc.get("quant_lm_head", False)),
        details={"bits": bits, "group_size": group, "sym": sym, "data_type": data_type, "packing_format": packing,
                 "act_bits": act_bits},
    )
