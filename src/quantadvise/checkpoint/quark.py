"""AMD Quark: ``global_quant_config`` with per-layer and per-class overrides, each role a
``dtype`` / ``qscheme`` spec, and the KV cache through ``kv_cache_group``."""

from __future__ import annotations

from typing import Any, Literal, cast

from .args import field_error, get_field, get_group_size, get_str_list, short
from .compressed_tensors import kv_tensor_quant
from .quant import CheckpointQuant, QArgs, QuantGroup, Scope, make_group

_QUARK_DTYPES = {
    "fp8_e4m3": ("float", 8, "fp8_e4m3"), "fp8_e5m2": ("float", 8, "fp8_e5m2"), "int8": ("int", 8, None),
    "uint8": ("int", 8, None), "int4": ("int", 4, None), "uint4": ("int", 4, None), "fp4": ("float", 4, None),
    "fp6_e3m2": ("float", 6, "fp6_e3m2"), "fp6_e2m3": ("float", 6, "fp6_e2m3"), "mx": ("float", 4, None),
}


def _quark_args(raw: Any, where: str, role: str) -> QArgs | None:
    if raw is None:
        return None
    if isinstance(raw, list):
        if not raw:
            return None
        raw = raw[0]  # a list of specs applies them in sequence; the first decides the stored format
    if not isinstance(raw, dict):
        raise field_error(where, f"must be an object with dtype and qscheme, got {short(raw)}")
    dt = get_field(raw, "dtype", where, str).lower()
    if dt not in _QUARK_DTYPES:
        raise field_error(f"{where}.dtype", f"unknown Quark dtype {short(dt)}", hint="expected one of " +
                          ", ".join(_QUARK_DTYPES))
    typ, bits, elem = _QUARK_DTYPES[dt]
    if dt == "mx":
        mx = str(raw.get("mx_element_dtype", "fp4")).lower()
        typ, bits, elem = _QUARK_DTYPES.get(mx, ("float", 4, None))
    qscheme = get_field(raw, "qscheme", where, str, default="per_tensor").lower()
    gsize = get_group_size(raw, "group_size", where, default=None)
    dyn = get_field(raw, "is_dynamic", where, bool, default=False)
    sym = get_field(raw, "symmetric", where, bool, default=not dt.startswith("uint"))
    if qscheme == "per_tensor":
        strategy, g = "tensor", None
    elif qscheme == "per_channel":
        strategy, g = ("token" if role != "weights" else "channel"), None
        if role != "weights":
            dyn = True
    elif qscheme == "per_group":
        strategy, g = "group", gsize or 32
    else:
        raise field_error(f"{where}.qscheme", f"unknown Quark qscheme {short(qscheme)}",
                          hint="choose per_tensor, per_channel or per_group")
    scale = None
    if typ == "float" and g == 32:
        scale = "e8m0"
    if role == "weights":
        dyn = False
    if strategy == "token" and not dyn:
        strategy = "channel"
    return QArgs(num_bits=bits, type=cast(Literal["int", "float"], typ), strategy=strategy, group_size=g, symmetric=sym, dynamic=dyn,
                 scale_dtype=scale, element=elem)


def parse_quark(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    glob = get_field(qc, "global_quant_config", where, dict)
    gw = f"{where}.global_quant_config"
    groups: list[QuantGroup] = []

    def one(name: str, spec: dict[str, Any], targets: tuple[str, ...], w_: str, scope: Scope) -> QuantGroup:
        w = _quark_args(spec.get("weight"), f"{w_}.weight", "weights")
        a = _quark_args(spec.get("input_tensors"), f"{w_}.input_tensors", "activations")
        o = _quark_args(spec.get("output_tensors"), f"{w_}.output_tensors", "activations")
        return make_group(name, targets, w, a, outputs=o, scale_format=dtype, scope=scope, fmt="quark", where=w_)

    for pattern, spec in (get_field(qc, "layer_quant_config", where, dict, default={}) or {}).items():
        if not isinstance(spec, dict):
            raise field_error(f"{where}.layer_quant_config.{pattern}", f"must be an object, got {short(spec)}")
        groups.append(one(pattern, spec, (pattern,), f"{where}.layer_quant_config.{pattern}", "patterns"))
    for cls, spec in (get_field(qc, "layer_type_quant_config", where, dict, default={}) or {}).items():
        if not isinstance(spec, dict):
            raise field_error(f"{where}.layer_type_quant_config.{cls}", f"must be an object, got {short(spec)}")
        groups.append(one(cls, spec, (cls,), f"{where}.layer_type_quant_config.{cls}", "patterns"))
    groups.append(one("global", glob, ("Linear",), gw, "all_linears"))
    exclude = get_str_list(qc, "exclude", where, default=())
    export_raw = qc.get("export")
    export: dict[str, Any] = export_raw if isinstance(export_raw, dict) else {}
    kv_group = get_str_list(qc, "kv_cache_group", where, default=()) or tuple(
        k for k in (export.get("kv_cache_group") or []) if isinstance(k, str))
    kv_tq = None
    kv_args = None
    if kv_group and glob.get("output_tensors"):
        kv_args = _quark_args(glob.get("output_tensors"), f"{gw}.output_tensors", "kv")
        if kv_args is not None:
            kv_tq = kv_tensor_quant(kv_args)
    return CheckpointQuant(
        quant_method=key, family="quark", found_in=where, format="quark", producer="AMD Quark",
        groups=tuple(groups), ignore=exclude, ignore_style="glob", kv_cache=kv_args, kv_cache_quant=kv_tq,
        details={"kv_cache_group": list(kv_group), "export": export or None},
    )
