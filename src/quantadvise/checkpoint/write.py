"""Writing a checkpoint's quantization metadata for a scheme: the ``quantization_config`` that
llm-compressor / AutoAWQ / AutoGPTQ write for it, the llm-compressor recipe that produces it, and a
one-line summary of the checkpoint.

The recommender feeds the synthetic ``quantization_config`` through the same checkpoint parser and
engine resolver that ``quantadvise inspect`` uses, so a recommendation round-trips through the engine
data. Pure.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..scheme.axes import DeployHints, LayerPolicy, Scheme, TensorQuant
from ..scheme.formats import get_format

if TYPE_CHECKING:
    from ..model.arch import ModelArch


def _ct_args(t: TensorQuant, role: str) -> dict[str, Any]:
    fmt = get_format(t.format)
    args: dict[str, Any] = {
        "num_bits": fmt.bits,
        "type": "float" if fmt.is_float else "int",
        "symmetric": t.symmetric,
        "dynamic": bool(t.scale and t.scale.dynamic),
    }
    g = t.scale.group if t.scale else None
    if g is None or g.is_per_tensor:
        args["strategy"] = "tensor"
    elif g.is_per_row:
        args["strategy"] = "token" if role == "input_activations" else "channel"
    elif g.is_block:
        args["strategy"] = "block"
        args["block_structure"] = [g.row, g.col]
    elif t.scale2 is not None:  # NVFP4: a group scale under one global scale
        args["strategy"] = "tensor_group"
        args["group_size"] = g.col
        if args["dynamic"]:
            args["dynamic"] = "local"
    else:
        args["strategy"] = "group"
        args["group_size"] = g.col
    if t.scale and t.scale.format == "e8m0":
        args["scale_dtype"] = "uint8"
    return args


def _ct_format(s: Scheme) -> str:
    w, a = s.weight, s.activation
    assert w is not None
    if w.format == "fp4_e2m1":
        return "nvfp4-pack-quantized" if w.scale2 is not None else "mxfp4-pack-quantized"
    if w.scale and w.scale.format == "e8m0" and w.format.startswith("fp8"):
        return "mxfp8-quantized"
    if get_format(w.format).is_float:
        return "float-quantized"
    if a is not None and a.is_quantized and w.bits == 8:
        return "int-quantized"
    return "pack-quantized"


def ignore_list(scheme: Scheme, arch: ModelArch | None) -> list[str]:
    """The Linear modules ``scheme``'s layer policy keeps 16-bit, as compressed-tensors / llm-compressor
    ``ignore`` entries: ``lm_head`` and one ``re:`` pattern per module kind under the decoder layers
    (MoE routers and gates, shared-expert gates, attention when only the experts are quantized ...), and one
    ``re:`` pattern per encoder of a multimodal checkpoint (its vision tower and projector).
    The same policy decides which layers :func:`quantadvise.memory.sizing.size_model` counts as quantized,
    so the recipe writes the checkpoint the sizing priced. Without ``arch`` only lm_head is known."""
    if arch is None:
        return [] if scheme.policy.quantize_lm_head else ["lm_head"]
    return list(_ignore(arch, scheme.policy))


@lru_cache(maxsize=64)
def _ignore(arch: ModelArch, policy: LayerPolicy) -> tuple[str, ...]:
    from .placement import modules

    out: list[str] = []
    for m in modules(arch, include_mtp=False):
        comp = m.group.component
        if comp == "embedding" or policy.quantizes(comp):
            continue
        if comp == "lm_head":
            entry = "lm_head"
        else:
            leaf = re.sub(r"^model\.layers\.\d+\.", "", m.name)
            entry = "re:.*" + re.sub(r"\\\.\d+\\\.", r"\\.\\d+\\.", re.escape(leaf)) + "$"
        if entry not in out:
            out.append(entry)
    for g in arch.encoders:  # a multimodal checkpoint's encoders stay 16-bit, as sizing prices them
        entry = f"re:.*{g.name.split('.', 1)[0]}.*"  # re:.*vision_tower.*, re:.*multi_modal_projector.*
        if entry not in out:
            out.append(entry)
    return tuple(out)


def kv_cache_scheme(kv: TensorQuant | None) -> dict[str, Any] | None:
    """The compressed-tensors ``kv_cache_scheme`` of a KV cache with calibrated static scales — fp8 e4m3
    with one static scale per tensor (``strategy: tensor``) or per KV head (``attn_head``) — in
    llm-compressor's documented form (examples/quantization_kv_cache/llama3_fp8_kv_example.py:
    num_bits 8, type float, strategy tensor, dynamic false, symmetric true). None for a 16-bit cache,
    dynamic per-token scales (the engine computes them) or fp8 e5m2 (used without scales)."""
    if kv is None or not kv.is_quantized or kv.format != "fp8_e4m3" or kv.scale is None or kv.scale.dynamic:
        return None
    return {"num_bits": 8, "type": "float", "strategy": "attn_head" if kv.scale.per_head else "tensor",
            "dynamic": False, "symmetric": True}


def quantization_config(scheme: Scheme, deploy: DeployHints, arch: ModelArch | None = None,
                        kv: TensorQuant | None = None) -> dict[str, Any] | None:
    """The quantization_config a checkpoint of ``scheme`` declares (None for bf16); with ``arch`` the
    ``ignore`` list follows the scheme's layer policy (:func:`ignore_list`); with a static-scale ``kv``
    cache a compressed-tensors checkpoint also declares its ``kv_cache_scheme`` (the calibrated k/v scales)."""
    if not scheme.quantizes_weights:
        return None
    w = scheme.weight
    assert w is not None
    group = w.scale.group.reduction_group if w.scale else None
    fmt = deploy.checkpoint_format or "compressed-tensors"
    if fmt == "awq":
        return {"quant_method": "awq", "bits": w.bits, "group_size": group or -1, "zero_point": not w.symmetric,
                "version": "gemm"}
    if fmt == "gptq":
        return {"quant_method": "gptq", "bits": w.bits, "group_size": group or -1, "sym": w.symmetric,
                "desc_act": False, "checkpoint_format": "gptq"}
    ignore = ignore_list(scheme, arch)
    group_cfg: dict[str, Any] = {"targets": ["Linear"], "weights": _ct_args(w, "weights")}
    a = scheme.activation
    group_cfg["input_activations"] = _ct_args(a, "input_activations") if a is not None and a.is_quantized else None
    cfg: dict[str, Any] = {
        "quant_method": "compressed-tensors",
        "format": _ct_format(scheme),
        "config_groups": {"group_0": group_cfg},
        "ignore": ignore,
        "quantization_status": "compressed",
    }
    if (kvs := kv_cache_scheme(kv)) is not None:
        cfg["kv_cache_scheme"] = kvs
    return cfg


def llmcompressor_recipe(scheme: Scheme, deploy: DeployHints, model_id: str, arch: ModelArch | None = None,
                         kv: TensorQuant | None = None) -> str | None:
    """One line of llm-compressor that produces the checkpoint (its ``ignore`` from the layer policy).
    With a static-scale ``kv`` cache the modifier also gets its ``kv_cache_scheme`` (:func:`kv_cache_scheme`;
    every llm-compressor quantization modifier takes one, QuantizationMixin) and the recipe calibrates,
    so the engine reads calibrated k/v scales instead of its default 1.0. A 16-bit scheme with such a
    cache gets a KV-only recipe (the weights stay 16-bit)."""
    preset = deploy.llmcompressor_scheme
    fmt = deploy.checkpoint_format
    kvs = kv_cache_scheme(kv)
    kvarg = f", kv_cache_scheme={_literal(kvs)}" if kvs is not None else ""
    data = 'dataset="open_platypus", num_calibration_samples=512'
    if not scheme.quantizes_weights:
        if kvs is None:
            return None
        return (f'oneshot(model="{model_id}", recipe=QuantizationModifier(kv_cache_scheme={_literal(kvs)}), {data})'
                "  # calibrates the KV cache scales only; the weights stay 16-bit")
    ignore = _literal(ignore_list(scheme, arch))  # "re:.*mlp\\.router$" stays valid Python
    if fmt == "awq":
        return (f'oneshot(model="{model_id}", recipe=AWQModifier(targets="Linear", scheme="W4A16_ASYM", '
                f'ignore={ignore}{kvarg}), dataset="open_platypus", num_calibration_samples=256)  # AWQ-style '
                "checkpoint in compressed-tensors; AutoAWQ writes the GEMM layout")
    if fmt == "gptq":
        return (f'oneshot(model="{model_id}", recipe=GPTQModifier(targets="Linear", scheme="W4A16", '
                f'ignore={ignore}{kvarg}), {data})')
    if preset is None:
        return _config_groups_recipe(scheme, deploy, model_id, arch, ignore, kv)
    a = scheme.activation
    dynamic_only = a is None or not a.is_quantized or bool(a.scale and a.scale.dynamic and a.scale2 is None)
    w_int = scheme.weight is not None and get_format(scheme.weight.format).is_integer
    if preset in ("FP8_DYNAMIC", "FP8_BLOCK", "MXFP8", "MXFP4", "MXFP4A16") or (dynamic_only and not w_int):
        head = (f'oneshot(model="{model_id}", recipe=QuantizationModifier(targets="Linear", scheme="{preset}", '
                f'ignore={ignore}{kvarg})')
        return (f"{head}, {data})  # the weights are data-free; the static KV scales need calibration data"
                if kvs is not None else f"{head})  # data-free")
    if preset in ("W8A8", "INT8"):
        return (f'oneshot(model="{model_id}", recipe=[SmoothQuantModifier(smoothing_strength=0.8), '
                f'GPTQModifier(targets="Linear", scheme="W8A8", ignore={ignore}{kvarg})], {data})')
    if w_int:
        return (f'oneshot(model="{model_id}", recipe=GPTQModifier(targets="Linear", scheme="{preset}", '
                f'ignore={ignore}{kvarg}), {data})')
    return (f'oneshot(model="{model_id}", recipe=QuantizationModifier(targets="Linear", scheme="{preset}", '
            f'ignore={ignore}{kvarg}), {data})')


def _config_groups_recipe(scheme: Scheme, deploy: DeployHints, model_id: str, arch: ModelArch | None,
                          ignore: str, kv: TensorQuant | None = None) -> str | None:
    """A compressed-tensors scheme no named preset carries (e.g. W4A16 regrouped to group 64): the
    recipe spells out the same config groups the checkpoint declares (:func:`quantization_config`)."""
    if deploy.checkpoint_format not in (None, "compressed-tensors"):
        return None
    cfg = quantization_config(scheme, deploy, arch)
    if cfg is None:
        return None
    group = {k: v for k, v in cfg["config_groups"]["group_0"].items() if v is not None}
    a = scheme.activation
    w_int = scheme.weight is not None and get_format(scheme.weight.format).is_integer
    kvs = kv_cache_scheme(kv)
    calibrated = w_int or (a is not None and a.is_quantized and not (a.scale and a.scale.dynamic)) or kvs is not None
    modifier = "GPTQModifier" if w_int else "QuantizationModifier"
    data = ', dataset="open_platypus", num_calibration_samples=512' if calibrated else ""
    kvarg = f", kv_cache_scheme={_literal(kvs)}" if kvs is not None else ""
    return (f'oneshot(model="{model_id}", recipe={modifier}(config_groups={_literal({"group_0": group})}, '
            f'ignore={ignore}{kvarg}){data})')


def _literal(v: Any) -> str:
    """``v`` as a Python literal in the recipe's quoting (double-quoted strings)."""
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_literal(x) for x in v) + "]"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(v)  # bool, None, int, float: Python's own spelling


def checkpoint_summary(scheme: Scheme, deploy: DeployHints) -> str:
    if not scheme.quantizes_weights:
        return "the original bf16 checkpoint"
    fmt = deploy.checkpoint_format or "compressed-tensors"
    w = scheme.weight
    bits = w.bits if w is not None else 4
    group = (w.scale.group.reduction_group if w is not None and w.scale else None) or -1
    if fmt == "awq":
        return f"an AWQ checkpoint (AutoAWQ, GEMM layout, w_bit {bits}, q_group_size {group}, zero_point true)"
    if fmt == "gptq":
        return f"a GPTQ checkpoint (AutoGPTQ / GPTQModel, bits {bits}, group_size {group}, sym true, desc_act false)"
    preset = deploy.compressed_tensors_preset
    if preset:
        return f"a compressed-tensors checkpoint, preset {preset}"
    g = w.scale.group if w is not None and w.scale else None
    if g is not None and g.is_per_group:  # no named preset has this group (a regrouped W4A16)
        return f"a compressed-tensors checkpoint, {bits}-bit weights in groups of {g.col} (config_groups below)"
    return "a compressed-tensors checkpoint"
