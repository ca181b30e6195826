"""The compressed-tensors dialect: ``config_groups`` of ``QuantizationArgs``, ``ignore``,
``kv_cache_scheme`` and ``sparsity_config``, validated by the library's own rules.

The ``QuantizationArgs`` and ``kv_cache_scheme`` readers are also used by the dialects that write the
same vocabulary (fp8's and Quark's KV schemes, ModelOpt's config_groups).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..scheme.axes import TensorQuant
from .args import REQUIRED, field_error, get_field, get_group_size, get_int, get_str_list, scale_dtype_format, short
from .quant import CheckpointQuant, QArgs, QuantGroup, make_group

STRATEGIES = ("tensor", "channel", "group", "block", "token", "tensor_group", "attn_head")
COMPRESSION_FORMATS = (
    "dense", "sparse-bitmask", "sparse-24-bitmask", "int-quantized", "float-quantized", "naive-quantized",
    "pack-quantized", "marlin-24", "mixed-precision", "nvfp4-pack-quantized", "mxfp4-pack-quantized",
    "mxfp6-pack-quantized", "mxfp8-quantized", "fakequant",
)
_ACTORDERS = ("weight", "static", "group", "dynamic")


def parse_ct_args(raw: Any, where: str, role: str = "weights") -> QArgs | None:
    """Validate one compressed-tensors ``QuantizationArgs`` dict (the library's own rules)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise field_error(where, f"must be an object of quantization arguments, got {short(raw)}")
    bits = get_int(raw, "num_bits", where, default=8, lo=1, hi=64)
    typ = get_field(raw, "type", where, str, default="int")
    if typ not in ("int", "float"):
        raise field_error(f"{where}.type", f"unknown type {short(typ)} (choose int or float)")
    if typ == "float" and bits not in (4, 6, 8):
        raise field_error(f"{where}.num_bits", f"float quantization stores 4, 6 or 8 bits, got {bits}")
    if typ == "int" and not 2 <= bits <= 8:
        raise field_error(f"{where}.num_bits", f"integer quantization stores 2 to 8 bits, got {bits}")
    gsize = get_group_size(raw, "group_size", where, default=None)
    strategy = get_field(raw, "strategy", where, str, default=None)
    if strategy is None:
        strategy = "tensor" if gsize is None else ("channel" if gsize == -1 else "group")
    strategy = strategy.lower()
    if strategy not in STRATEGIES:
        raise field_error(f"{where}.strategy", f"unknown strategy {short(strategy)}",
                          hint="choose one of " + ", ".join(STRATEGIES))
    block = raw.get("block_structure")
    block_t: tuple[int, int] | None = None
    if block is not None:
        if isinstance(block, str) and re.fullmatch(r"0*[1-9]\d{0,8}x0*[1-9]\d{0,8}", block.strip()):
            r, c = block.strip().split("x")  # "128x128": positive, at most 9 digits each (like the list form's)
            block_t = (int(r), int(c))
        elif isinstance(block, list) and len(block) == 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                                 and 0 < x < 10**9 for x in block):
            block_t = (block[0], block[1])
        else:
            raise field_error(f"{where}.block_structure", "must be [rows, cols] of positive integers below 10^9 "
                              f"(or '128x128'), got {short(block)}")
    if strategy == "block" and block_t is None:
        raise field_error(f"{where}.block_structure", "strategy 'block' needs block_structure [rows, cols]")
    if strategy in ("group", "tensor_group") and (gsize is None or gsize <= 0):
        raise field_error(f"{where}.group_size", f"strategy '{strategy}' needs a positive group_size")
    if strategy == "tensor_group" and typ != "float":
        # group scales under one per-tensor fp32 scale: the NVFP4 layout (fp8 group scales); integer values keep
        # 16-bit group scales, which have no second level, and vLLM matches tensor_group only to its fp4 schemes
        raise field_error(f"{where}.strategy", "strategy 'tensor_group' (group scales under one per-tensor scale) is "
                          "for float values (NVFP4); integer weights use strategy 'group'")
    if strategy == "channel" and gsize not in (None, -1):
        raise field_error(f"{where}.group_size", f"strategy 'channel' takes group_size -1 or none, got {gsize}")
    dyn = raw.get("dynamic", False)
    if dyn is None:
        dyn = False
    if isinstance(dyn, str):
        if dyn.lower() != "local":
            raise field_error(f"{where}.dynamic", f"must be true, false or 'local', got {short(dyn)}")
        dyn = "local"
    elif not isinstance(dyn, bool):
        raise field_error(f"{where}.dynamic", f"must be true, false or 'local', got {short(dyn)}")
    if dyn is True and strategy not in ("token", "tensor", "tensor_group", "group"):
        raise field_error(f"{where}.dynamic", f"dynamic scales exist only per token, tensor, tensor_group or group, "
                          f"not '{strategy}'")
    if dyn == "local" and strategy != "tensor_group":
        raise field_error(f"{where}.dynamic", "'local' dynamic scales need strategy 'tensor_group'")
    if strategy == "token" and dyn is False:
        raise field_error(f"{where}.strategy",
                          "strategy 'token' needs dynamic: true (a per-token scale is computed at run time)")
    if role == "weights" and dyn is not False:
        raise field_error(f"{where}.dynamic",
                          "weights are known at load time, so their scales are static (dynamic: false)")
    sym = get_field(raw, "symmetric", where, bool, default=True)
    actorder = raw.get("actorder")
    if actorder is True:
        actorder = "group"
    elif actorder is False:
        actorder = None
    if actorder is not None and (not isinstance(actorder, str) or actorder.lower() not in _ACTORDERS):
        raise field_error(f"{where}.actorder", f"unknown activation ordering {short(actorder)}",
                          hint="choose weight, static, group or dynamic")
    return QArgs(
        num_bits=bits,
        type=typ,
        strategy=strategy,
        group_size=gsize if strategy in ("group", "tensor_group") else None,
        block_structure=block_t,
        symmetric=sym,
        dynamic=dyn,
        actorder=actorder.lower() if isinstance(actorder, str) else None,
        scale_dtype=scale_dtype_format(raw.get("scale_dtype"), f"{where}.scale_dtype"),
    )


def parse_compressed_tensors(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str, *,
                             engine_groups: bool = True) -> CheckpointQuant:
    """``engine_groups``: the config groups are the ones both engines build their scheme map from
    (``_quantization_scheme_map_from_config``), which iterates ``targets`` and validates every group's
    ``weights`` with ``QuantizationArgs.model_validate``; False for ModelOpt's config_groups, which
    the engines never validate that way."""
    fmt = get_field(qc, "format", where, str, default=None)
    warnings: list[str] = []
    if fmt is not None and fmt not in COMPRESSION_FORMATS:
        warnings.append(f"{where}.format '{fmt}' is not a compressed-tensors 0.20.1 CompressionFormat")
    groups_raw = get_field(qc, "config_groups", where, dict, default={})
    groups: list[QuantGroup] = []
    for gname, g in groups_raw.items():
        gw = f"{where}.config_groups.{gname}"
        if not isinstance(g, dict):
            raise field_error(gw, f"must be an object with targets and weights, got {short(g)}")
        if engine_groups and isinstance(g.get("targets"), str):
            # compressed-tensors QuantizationScheme.targets is list[str] (quant_scheme.py:39), and both engines
            # run `for target in targets`, which takes a string one character at a time
            raise field_error(f"{gw}.targets", f"must be a list of layer names, re:regex patterns or class names, "
                              f"got the string {short(g['targets'])}", hint=f"write {json.dumps([g['targets']])}")
        if engine_groups and g.get("weights") is None:
            # both engines read every group's weights with QuantizationArgs.model_validate(quant_config.get("weights")),
            # which raises a pydantic ValidationError on null / missing
            raise field_error(f"{gw}.weights", "must be an object of quantization arguments (num_bits, type, strategy "
                              "...), got " + ("null" if "weights" in g else "none: the field is missing"),
                              hint="vLLM and SGLang validate every config group's weights and refuse the config")
        # ModelOpt's config_groups may name no targets (Qwen/Qwen3-32B-FP8-Static-PerTensor): neither engine
        # reads them there (vLLM modelopt.py:343-357 and SGLang modelopt_quant.py:466-515 read quant_algo), so
        # the group takes the Linear layers
        targets = get_str_list(g, "targets", gw, default=REQUIRED if engine_groups else ("Linear",))
        if not targets:
            raise field_error(f"{gw}.targets", "must list at least one target (a layer name, re:regex or class name)")
        gfmt = get_field(g, "format", gw, str, default=None) or fmt
        weights = parse_ct_args(g.get("weights"), f"{gw}.weights", "weights")
        acts = parse_ct_args(g.get("input_activations"), f"{gw}.input_activations", "activations")
        outs = parse_ct_args(g.get("output_activations"), f"{gw}.output_activations", "activations")
        if weights is None and acts is None and outs is None:
            warnings.append(f"config group '{gname}' quantizes nothing (no weights or activations)")
        layout = None
        if weights is not None and weights.type == "int" and gfmt == "pack-quantized":
            layout = "ct-pack-quantized"
        groups.append(make_group(gname, targets, weights, acts, outputs=outs, scale_format=dtype, fmt=gfmt,
                                 layout=layout, where=gw))
    ignore = get_str_list(qc, "ignore", where, default=())
    kv_raw = qc.get("kv_cache_scheme")
    kv_args = None
    kv_tq = None
    if kv_raw is not None:
        if not isinstance(kv_raw, dict):
            raise field_error(f"{where}.kv_cache_scheme",
                              f"must be an object of quantization arguments, got {short(kv_raw)}")
        kv_args = parse_kv_args(kv_raw, f"{where}.kv_cache_scheme")
        kv_tq = kv_tensor_quant(kv_args)
    sparsity = qc.get("sparsity_config")
    if sparsity is not None and not isinstance(sparsity, dict):
        raise field_error(f"{where}.sparsity_config", f"must be an object, got {short(sparsity)}")
    producer = None
    if isinstance(qc.get("version"), str):
        producer = f"compressed-tensors {qc['version']}"
    details: dict[str, Any] = {k: qc[k] for k in ("quantization_status", "global_compression_ratio", "version")
                               if k in qc}
    transforms, online = parse_transforms(qc.get("transform_config"), f"{where}.transform_config")
    if transforms:
        details["transform_online"] = online
    return CheckpointQuant(
        quant_method=key, family="compressed-tensors", found_in=where, format=fmt, producer=producer,
        groups=tuple(groups), ignore=ignore, ignore_style="ct", kv_cache=kv_args, kv_cache_quant=kv_tq,
        kv_cache_raw=kv_raw, sparsity=sparsity or None, details=details, warnings=tuple(warnings),
        transforms=transforms,
    )


# compressed-tensors TransformLocation values applied at run time (transform_args.py: is_online);
# weight_input / weight_output are fused into the stored weights.
_ONLINE_LOCATIONS = ("input", "output", "k_cache", "q_attn")


def parse_transforms(raw: Any, where: str) -> tuple[tuple[str, ...], bool]:
    """compressed-tensors ``transform_config`` (SpinQuant / QuIP rotations): one line per scheme
    (``u: hadamard at weight_input, input``), and whether any of them is applied at run time."""
    if raw is None or raw == {}:
        return (), False
    if not isinstance(raw, dict):
        raise field_error(where, f"must be an object with config_groups, got {short(raw)}")
    groups = raw.get("config_groups", {})
    if not isinstance(groups, dict):
        raise field_error(f"{where}.config_groups", f"must be an object of transform schemes, got {short(groups)}")
    out: list[str] = []
    online = False
    for name, scheme in groups.items():
        if not isinstance(scheme, dict):
            raise field_error(f"{where}.config_groups.{name}", f"must be an object, got {short(scheme)}")
        kind = scheme.get("type", "?")
        locs: list[str] = []
        for arg in scheme.get("apply") or []:
            loc = str(arg.get("location", "?")).lower() if isinstance(arg, dict) else "?"
            if loc not in locs:
                locs.append(loc)
        online = online or any(loc in _ONLINE_LOCATIONS for loc in locs)
        out.append(f"{name}: {kind}" + (f" at {', '.join(locs)}" if locs else ""))
    return tuple(out), online


def parse_kv_args(raw: dict[str, Any], where: str) -> QArgs:
    """A kv_cache_scheme is read leniently (each engine decides whether it can use it, and says so),
    but its fields must still have the right types."""
    bits = get_int(raw, "num_bits", where, default=8, lo=1, hi=64)
    typ = get_field(raw, "type", where, str, default="int")
    strategy = get_field(raw, "strategy", where, str, default="tensor")
    sym = get_field(raw, "symmetric", where, bool, default=True)
    dyn = raw.get("dynamic", False)
    if typ not in ("int", "float"):
        raise field_error(f"{where}.type", f"unknown type {short(typ)} (choose int or float)")
    if strategy not in STRATEGIES:
        raise field_error(f"{where}.strategy", f"unknown strategy {short(strategy)}",
                          hint="choose one of " + ", ".join(STRATEGIES))
    if dyn is None:
        dyn = False
    if not isinstance(dyn, (bool, str)):
        raise field_error(f"{where}.dynamic", f"must be true, false or 'local', got {short(dyn)}")
    gsize = get_group_size(raw, "group_size", where, default=None)
    return QArgs(num_bits=bits, type=typ, strategy=strategy, group_size=gsize if gsize and gsize > 0 else None,
                 symmetric=sym, dynamic="local" if dyn == "local" else bool(dyn))


def kv_tensor_quant(a: QArgs) -> TensorQuant | None:
    """The KV cache's six axes when they are a storable format (None for e.g. a 16-bit 'scheme')."""
    ok = (a.type == "float" and a.num_bits in (4, 6, 8)) or (a.type == "int" and 2 <= a.num_bits <= 8)
    if not ok or (a.strategy in ("group", "tensor_group") and a.group_size is None) or a.strategy == "block":
        return None
    return a.tensor_quant("kv_cache", "fp32")
