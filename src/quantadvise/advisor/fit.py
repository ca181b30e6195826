"""The memory nodes of the tree: (a) fit and (c) the KV cache axis.

a. fit — weights + the KV cache the workload holds + the runtime reserve against the GPUs' memory
   (:func:`quantadvise.sizing.memory_budget`, the one budget every command uses). Size only decides
   whether you must quantize, and how far; never which scheme wins.
c. kv  — a quantized KV cache when KV is a large share of the bytes a step moves, or when KV memory
   limits the concurrency; the share, the concurrency gained, and the GPUs needed if even that does
   not fit.
"""

from __future__ import annotations

from typing import Any

from .. import defaults
from ..errors import QuantAdviseError
from ..kvcache import max_sequences, sequence_bytes
from ..perf.step import check_tensor_parallel
from ..scheme import TensorQuant
from ..sizing import memory_budget
from .options import BF16_KV, Context, Option, rank
from .result import TraceNode
from .speed import score
from .verdict import engine_verdict


def _budget(ctx: Context, gpus: int) -> float:
    w = ctx.workload
    return memory_budget(ctx.gpu.memory_bytes, gpus=gpus, memory_utilization=w.memory_utilization,
                         reserve_bytes=int(w.reserve_gb * defaults.GiB), headroom=w.headroom).budget_bytes


def gpus_needed(ctx: Context, o: Option, kv: TensorQuant | None) -> int | None:
    """Smallest tensor-parallel degree on which weights + KV for the whole batch fit."""
    a, w, g = ctx.arch, ctx.workload, ctx.gpu
    need = o.weights_bytes + sequence_bytes(a, kv, w.kv_tokens_per_sequence) * w.batch
    for n in range(1, defaults.MAX_GPUS_SEARCH + 1):
        try:
            check_tensor_parallel(a, g, n)
        except QuantAdviseError:
            continue
        if need <= _budget(ctx, n):
            return n
    return None


def node_fit(ctx: Context, options: list[Option]) -> TraceNode:
    """Weights + the KV cache the workload holds + reserve, against the GPUs' memory.

    KV demand is ``batch x kv_tokens_per_sequence`` (continuous batching: the steady-state average
    prompt + output/2; synchronous: the full context). A candidate is kept when its weights leave room
    for that demand with a quantized KV cache; when no candidate does, the ones whose weights leave
    room for at least one sequence stay and the KV node says what concurrency fits."""
    a, w, g = ctx.arch, ctx.workload, ctx.gpu
    check_tensor_parallel(a, g, w.gpus)
    b = memory_budget(g.memory_bytes, gpus=w.gpus, memory_utilization=w.memory_utilization,
                      reserve_bytes=int(w.reserve_gb * defaults.GiB), headroom=w.headroom)
    ctx.budget_bytes = b.budget_bytes
    tokens = w.kv_tokens_per_sequence
    kv_bf16 = sequence_bytes(a, None, tokens) * w.batch
    qkv = ctx.kv_options[ctx.quant_kv].kv
    kv_q = sequence_bytes(a, qkv, tokens) * w.batch
    bf16_weights = next((o.weights_bytes for o in options if not o.scheme.quantizes_weights), 0)
    for o in options:
        if not o.weights_bytes:
            continue
        o.fits_bf16_kv = o.weights_bytes + kv_bf16 <= ctx.budget_bytes
        o.fits_qkv = o.weights_bytes + kv_q <= ctx.budget_bytes
    full = [o for o in options if o.fits_bf16_kv or o.fits_qkv]
    for o in options:
        if not o.weights_bytes or o in full:
            continue
        n = max_sequences(a, qkv, tokens, ctx.budget_bytes - o.weights_bytes)
        o.reason = (
            f"{o.weights_bytes / 1e9:.1f} GB weights leave room for {n} of {w.batch} sequences "
            f"({ctx.quant_kv}) in the {ctx.budget_bytes / 1e9:.1f} GB budget"
        )
        if n < 1:
            o.status = "does-not-fit"
        else:
            o.partial = True  # kept, ranked after every candidate that holds the whole batch
    room_for_weights = ctx.budget_bytes - kv_bf16
    must = bf16_weights > room_for_weights
    numbers: dict[str, Any] = {
        "gpus": w.gpus,
        "memory_bytes": b.memory_bytes,
        "usable_bytes": b.usable_bytes,
        "reserve_bytes": b.reserve_bytes,
        "budget_bytes": b.budget_bytes,
        "bf16_weights_bytes": bf16_weights,
        "kv_tokens_per_sequence": tokens,
        "kv_bytes_bf16": round(kv_bf16),
        "kv_bytes_quantized": round(kv_q),
        "must_quantize": must,
        "fits_requested_concurrency": [o.id for o in full],
    }
    fitting = [o.id for o in options if o.weights_bytes and o.status != "does-not-fit"]
    numbers["fitting_candidates"] = fitting
    kv_desc = f"{w.batch} x {tokens:,} tokens"
    if not must:
        decision = (
            f"bf16 fits: {bf16_weights / 1e9:.1f} GB weights + {kv_bf16 / 1e9:.1f} GB KV for {kv_desc} within "
            f"{ctx.budget_bytes / 1e9:.1f} GB — quantization is optional, chosen for speed"
        )
    elif room_for_weights > 0:
        max_bits = room_for_weights * 8 / a.inventory.total_params()
        numbers["max_bits_per_param"] = round(max_bits, 2)
        decision = (
            f"must quantize: bf16 needs {bf16_weights / 1e9:.1f} GB + {kv_bf16 / 1e9:.1f} GB KV ({kv_desc}) but the "
            f"budget is {ctx.budget_bytes / 1e9:.1f} GB; weights must average <= {max_bits:.1f} bits/param, or the "
            "KV cache must shrink"
        )
    else:
        decision = (
            f"must quantize: the bf16 KV cache alone ({kv_bf16 / 1e9:.1f} GB for {kv_desc}) exceeds the "
            f"{ctx.budget_bytes / 1e9:.1f} GB budget — the KV cache must be quantized or spread over more GPUs"
        )
    partial = [o.id for o in options if o.partial and o.status != "does-not-fit"]
    numbers["fit_partially"] = partial
    if not full:
        decision += (
            f"; no candidate holds all {w.batch} sequences even with {ctx.quant_kv}, so the ones whose weights fit "
            "stay and the KV node states the concurrency that fits"
            if fitting else "; not even one sequence fits next to any candidate's weights"
        )
    elif partial:
        decision += (
            f"; {', '.join(o.id for o in full)} hold all {w.batch} sequences and rank first; "
            f"{', '.join(partial)} fit only part of the batch and rank after them"
        )
    return TraceNode(node="fit", decision=decision, numbers=numbers)


def _nothing_ranked(ctx: Context, options: list[Option]) -> TraceNode:
    """Nothing fits at this concurrency even with a quantized KV cache: say what would."""
    a, w = ctx.arch, ctx.workload
    numbers: dict[str, Any] = {}
    best = min((o for o in options if o.status == "does-not-fit"), key=lambda o: o.weights_bytes, default=None)
    qkv = ctx.kv_options[ctx.quant_kv].kv
    if best is None:
        return TraceNode(node="kv", decision="no candidate to size the KV cache for", numbers=numbers)
    per_seq = sequence_bytes(a, qkv, w.kv_tokens_per_sequence)
    max_seq = max_sequences(a, qkv, w.kv_tokens_per_sequence, ctx.budget_bytes - best.weights_bytes)
    need = gpus_needed(ctx, best, qkv)
    numbers.update(kv_dtype=ctx.quant_kv, max_concurrency=max_seq, gpus_needed=need,
                   smallest_weights=best.id, kv_bytes_per_sequence=round(per_seq))
    return TraceNode(
        node="kv",
        decision=(
            f"even {best.id} with {ctx.quant_kv} holds only {max_seq} sequences of {w.kv_tokens_per_sequence:,} "
            f"tokens on {w.gpus} x {ctx.gpu.name}; serving {w.batch} needs "
            + (f"{need} GPUs" if need else f"more than {defaults.MAX_GPUS_SEARCH} GPUs")
        ),
        numbers=numbers,
    )


def node_kv(ctx: Context, options: list[Option], ranked: list[Option]) -> TraceNode:
    if not ranked:
        return _nothing_ranked(ctx, options)
    a, w = ctx.arch, ctx.workload
    threshold = defaults.KV_SHARE_THRESHOLD
    top = ranked[0]
    assert top.model is not None
    c = top.model.decode(w.batch, w.decode_context)
    share = c.kv_bytes / c.bytes if c.bytes else 0.0
    tokens = w.kv_tokens_per_sequence
    kv_bf16 = sequence_bytes(a, None, tokens)
    qkv = ctx.kv_options[ctx.quant_kv].kv
    kv_q = sequence_bytes(a, qkv, tokens)
    room = ctx.budget_bytes - top.weights_bytes
    max_bf16 = max_sequences(a, None, tokens, room)
    max_q = max_sequences(a, qkv, tokens, room)
    numbers: dict[str, Any] = dict(
        kv_share_of_step_bytes=round(share, 4),
        kv_bytes_per_sequence_bf16=round(kv_bf16),
        kv_bytes_per_sequence_quantized=round(kv_q),
        kv_bytes_bf16=round(kv_bf16 * w.batch),
        kv_bytes_quantized=round(kv_q * w.batch),
        max_concurrency_bf16=max_bf16,
        max_concurrency_quantized=max_q,
        kv_tokens_per_sequence=tokens,
        threshold=threshold,
        quantized_kv_dtype=ctx.quant_kv,
    )
    reasons = []
    if ctx.forced_kv:
        decision = f"KV cache dtype set by the workload: {ctx.kv_name}"
    else:
        choose = False
        if share >= threshold:
            choose = True
            reasons.append(
                f"KV is {share:.0%} of the bytes a step moves at batch {w.batch} x {w.decode_context:,} tokens "
                f"(>= {threshold:.0%}): halving it shortens every step"
            )
        if max_bf16 < w.batch:
            choose = True
            reasons.append(
                f"a bf16 KV cache holds {max_bf16} sequences of {tokens:,} tokens next to {top.id}'s weights; "
                f"{ctx.quant_kv} holds {max_q} (+{max_q - max_bf16})"
            )
        refused = False
        if choose:
            # the KV dtype on its own (the weights' own engine check is the engine node's job)
            verdict = engine_verdict(ctx, ctx.engine, None, ctx.quant_kv)
            if not verdict.supported:
                choose, refused = False, True
                reasons.append(f"but {ctx.engine.label} refuses it on {ctx.gpu.name}: " + "; ".join(verdict.messages))
        ctx.kv_name = ctx.quant_kv if choose else BF16_KV
        if choose:
            decision = (
                f"{ctx.quant_kv}: KV is {share:.0%} of step bytes; concurrency at {tokens:,} tokens per sequence "
                f"{max_bf16} -> {max_q}"
            )
        elif refused:
            decision = f"{ctx.quant_kv} would help but {ctx.engine.label} refuses it here: keep a bf16 KV cache"
        else:
            decision = (
                f"keep a bf16 KV cache: KV is {share:.0%} of step bytes (< {threshold:.0%}) and "
                f"{max_bf16} sequences fit (>= batch {w.batch})"
            )
    chosen_q = ctx.kv_name != BF16_KV
    fits_at_batch = (max_q if chosen_q else max_bf16) >= w.batch
    numbers["fits_requested_concurrency"] = fits_at_batch
    if not fits_at_batch:
        need = gpus_needed(ctx, top, ctx.kv_options[ctx.kv_name].kv)
        largest = max_q if chosen_q else max_bf16
        numbers.update(largest_concurrency_that_fits=largest, gpus_needed=need)
        decision += (
            f"; even so only {largest} of the {w.batch} sequences fit on {w.gpus} x {ctx.gpu.name} — serving "
            f"{w.batch} at {tokens:,} tokens each needs "
            + (f"{need} GPUs (--tensor-parallel-size {need})" if need else
               f"more than {defaults.MAX_GPUS_SEARCH} GPUs")
        )
    if chosen_q:
        for o in ranked:
            if o.model_kv is not None:
                o.step_s, o.score_s, o.ttft_s, o.throughput = score(o.model_kv, w)
        ranked[:] = rank(ranked)
        numbers["step_time_s_with_kv"] = {o.id: o.step_s for o in ranked}
    return TraceNode(node="kv", decision=decision, numbers=numbers, reasons=reasons)
