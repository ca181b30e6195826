"""What an engine release does with a candidate: the candidate's checkpoint (the quantization_config
llm-compressor / AutoAWQ / AutoGPTQ would write for it, :func:`plan.quantization_config`; for the
native candidate the shipped checkpoint itself) goes through the same checkpoint parser and engine
resolver ``quantadvise inspect`` uses, with the KV cache dtype flag the tree would pass. Pure: the
engine release is a value in the context."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..checkpoint.write import quantization_config
from ..engines.flags import kv_cache_flag
from .options import BF16_KV, Context, Option
from .result import EngineVerdict

if TYPE_CHECKING:
    from ..checkpoint.quant import CheckpointQuant
    from ..engines.data import EngineData


def kv_flag(ctx: Context, engine: EngineData, kv_id: str | None) -> str | None:
    """The --kv-cache-dtype value ``engine`` takes for the KV preset ``kv_id`` (None: the default, or
    the engine has no flag value for it)."""
    if kv_id is None or kv_id == BF16_KV:
        return None
    hints = ctx.kv_options[kv_id].hints
    return kv_cache_flag(engine.engine, hints)


def engine_verdict(ctx: Context, engine: EngineData, option: Option | None, kv_id: str | None) -> EngineVerdict:
    """``engine``'s verdict on ``option``'s checkpoint (None: the unquantized checkpoint) served with
    the KV preset ``kv_id`` on the context's GPU."""
    # the scheme, deploy hints and checkpoint objects live as long as the caller's candidates (the memo's owner)
    # the verdict reads the GPU's capability and platform only: GPUs that share them share it (a pool of H100 and H200)
    key = ("verdict", engine.engine, engine.version, ctx.gpu.capability, ctx.platform, kv_id,
           *((id(option.checkpoint), id(option.scheme), id(option.deploy)) if option is not None else ()))
    hit = ctx.memo.get(key)
    if hit is None:
        hit = ctx.memo[key] = _verdict(ctx, engine, option, kv_id)
    return hit


def _verdict(ctx: Context, engine: EngineData, option: Option | None, kv_id: str | None) -> EngineVerdict:
    from ..checkpoint.parse import parse_quantization_config
    from ..engines.resolution import resolve

    flag = kv_flag(ctx, engine, kv_id)
    if kv_id not in (None, BF16_KV) and flag is None:
        return EngineVerdict(supported=False, messages=[f"{engine.label} has no --kv-cache-dtype for {kv_id}"])
    ck: CheckpointQuant | None
    quantization = None
    if option is not None and option.checkpoint is not None:
        ck = option.checkpoint  # the checkpoint as shipped: the engine reads its own quantization_config
        if not ck.engines_read_it:  # a side file only the producer's loader reads: the engine needs the flag
            quantization = ck.quant_method
    else:
        # the checkpoint the plan writes: with a static-scale KV cache it declares its kv_cache_scheme too
        kv = ctx.kv_options[kv_id].kv if kv_id is not None and kv_id in ctx.kv_options else None
        ck = None
        if option is not None:  # the same checkpoint on every GPU: written and parsed once per memo
            qkey = ("checkpoint", id(option.scheme), id(option.deploy), kv_id)
            if qkey not in ctx.memo:
                qc = quantization_config(option.scheme, option.deploy, ctx.arch, kv)
                ctx.memo[qkey] = parse_quantization_config(qc) if qc is not None else None
            ck = ctx.memo[qkey]
    res = resolve(engine, ck, capability=ctx.gpu.capability, platform=ctx.platform, kv_cache_dtype=flag,
                  model_type=ctx.arch.model_type, model_dtype=ctx.arch.torch_dtype, quantization=quantization)
    msgs = [f.engine_message or f.message for f in res.findings if f.severity in ("error", "warning")]
    return EngineVerdict(
        supported=not res.refused and (ck is None or res.resolved_method is not None),
        method=ck.quant_method if ck else None,
        resolved_method=res.resolved_method or ("unquantized" if ck is None else None),
        scheme_class=next((gd.scheme_class for gd in res.groups if gd.scheme_class), None),
        optimized=res.optimized,
        quantization_flag=quantization,
        kv_cache_dtype_flag=flag,
        messages=msgs,
        why=[f.message for f in res.findings if f.severity == "error" and f.engine_message],
    )
