"""The deployment plan for a chosen scheme: the checkpoint that carries it, the quantization_config
that checkpoint declares, the engine flags that serve it, and an llm-compressor recipe line.

The synthetic ``quantization_config`` is what llm-compressor / AutoAWQ / AutoGPTQ write for the
scheme; the recommender feeds it through the same checkpoint parser and engine resolver that
``quantadvise inspect`` uses, so a recommendation round-trips through the engine data. Pure.
"""

from __future__ import annotations

from typing import Any

from ..formats import get_format
from ..scheme import DeployHints, Scheme, TensorQuant
from .options import Context, Option
from .result import CheckpointPlan, EngineVerdict


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


def quantization_config(scheme: Scheme, deploy: DeployHints) -> dict[str, Any] | None:
    """The quantization_config a checkpoint of ``scheme`` declares (None for bf16)."""
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
    ignore = [] if scheme.policy.quantize_lm_head else ["lm_head"]
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
    return cfg


def llmcompressor_recipe(scheme: Scheme, deploy: DeployHints, model_id: str) -> str | None:
    """One line of llm-compressor that produces the checkpoint."""
    preset = deploy.llmcompressor_scheme
    fmt = deploy.checkpoint_format
    if not scheme.quantizes_weights:
        return None
    ignore = '[]' if scheme.policy.quantize_lm_head else '["lm_head"]'
    if fmt == "awq":
        return (f'oneshot(model="{model_id}", recipe=AWQModifier(targets="Linear", scheme="W4A16_ASYM", '
                f'ignore={ignore}), dataset="open_platypus", num_calibration_samples=256)  # AWQ-style checkpoint '
                "in compressed-tensors; AutoAWQ writes the GEMM layout")
    if fmt == "gptq":
        return (f'oneshot(model="{model_id}", recipe=GPTQModifier(targets="Linear", scheme="W4A16", '
                f'ignore={ignore}), dataset="open_platypus", num_calibration_samples=512)')
    if preset is None:
        return None
    a = scheme.activation
    dynamic_only = a is None or not a.is_quantized or bool(a.scale and a.scale.dynamic and a.scale2 is None)
    w_int = scheme.weight is not None and get_format(scheme.weight.format).is_integer
    if preset in ("FP8_DYNAMIC", "FP8_BLOCK", "MXFP8", "MXFP4", "MXFP4A16") or (dynamic_only and not w_int):
        return (f'oneshot(model="{model_id}", recipe=QuantizationModifier(targets="Linear", scheme="{preset}", '
                f'ignore={ignore}))  # data-free')
    if preset in ("W8A8", "INT8"):
        return (f'oneshot(model="{model_id}", recipe=[SmoothQuantModifier(smoothing_strength=0.8), '
                f'GPTQModifier(targets="Linear", scheme="W8A8", ignore={ignore})], dataset="open_platypus", '
                "num_calibration_samples=512)")
    if w_int:
        return (f'oneshot(model="{model_id}", recipe=GPTQModifier(targets="Linear", scheme="{preset}", '
                f'ignore={ignore}), dataset="open_platypus", num_calibration_samples=512)')
    return (f'oneshot(model="{model_id}", recipe=QuantizationModifier(targets="Linear", scheme="{preset}", '
            f'ignore={ignore}), dataset="open_platypus", num_calibration_samples=512)')


def checkpoint_summary(scheme: Scheme, deploy: DeployHints) -> str:
    if not scheme.quantizes_weights:
        return "the original bf16 checkpoint"
    fmt = deploy.checkpoint_format or "compressed-tensors"
    if fmt == "awq":
        return "an AWQ checkpoint (AutoAWQ, GEMM layout, w_bit 4, q_group_size 128, zero_point true)"
    if fmt == "gptq":
        return "a GPTQ checkpoint (AutoGPTQ / GPTQModel, bits 4, group_size 128, sym true, desc_act false)"
    preset = deploy.compressed_tensors_preset
    return f"a compressed-tensors checkpoint, preset {preset}" if preset else "a compressed-tensors checkpoint"


def deploy_plan(ctx: Context, winner: Option) -> tuple[dict[str, str | None], CheckpointPlan]:
    """How to serve the winner: one command per engine (the chosen engine first; None where that
    engine refuses it, with its reason in the notes) and the checkpoint that carries it."""
    from ..engines.flags import engine_command
    from .verdict import engine_verdict, kv_flag

    w = ctx.workload
    model_id = ctx.model_id or w.model
    short = model_id.rsplit("/", 1)[-1]
    path = model_id if not winner.scheme.quantizes_weights else f"./{short}-{winner.scheme.id}"

    def command(engine: str, model: str, quantization: str | None, kv: str | None) -> str:
        return engine_command(engine, model, quantization=quantization, kv_cache_dtype=kv, max_num_seqs=w.batch,
                              max_model_len=w.context, tensor_parallel_size=w.gpus,
                              gpu_memory_utilization=w.memory_utilization)

    commands: dict[str, str | None] = {}
    notes = []
    for eng in (ctx.engine, *([ctx.other_engine] if ctx.other_engine is not None else [])):
        # the chosen engine already judged the winner in the engine node (same KV dtype)
        v: EngineVerdict = (winner.engine if eng is ctx.engine and winner.engine is not None
                            else engine_verdict(ctx, eng, winner, ctx.kv_name))
        if v.supported:
            commands[eng.engine] = command(eng.engine, path, v.quantization_flag, v.kv_cache_dtype_flag)
        else:
            commands[eng.engine] = None
            notes.append(f"{eng.label} refuses it: " + "; ".join(v.messages))
    d = winner.deploy
    online = None
    if d.online and ctx.engine.engine == "vllm" and ctx.engine.shorthand(d.online) is not None:
        online = command("vllm", model_id, d.online, kv_flag(ctx, ctx.engine, ctx.kv_name))
    plan = CheckpointPlan(
        format=d.checkpoint_format if winner.scheme.quantizes_weights else None,
        compressed_tensors_preset=d.compressed_tensors_preset,
        summary=checkpoint_summary(winner.scheme, d),
        alternatives=list(d.alternatives),
        recipe=llmcompressor_recipe(winner.scheme, d, model_id),
        quantization_config=quantization_config(winner.scheme, d),
        suggested_path=path,
        notes=notes,
        online=online,
    )
    return commands, plan
