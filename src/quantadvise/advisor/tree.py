"""The decision tree: from a workload to a scheme, every branch shown in numbers.

Nodes, in order, each a small pure function returning its decision and the numbers behind it:

a. fit       — bf16 weights + the KV cache the workload needs + runtime reserve against the GPUs'
               memory (``fit.py``). Size only decides whether you must quantize, and how far.
b. roofline  — each candidate's predicted step at the workload's batch and context, its ridge batch
               and the crossovers; candidates ranked by predicted speed (``speed.py``).
c. kv        — a quantized KV cache when KV is a large share of the bytes a step moves, or when KV
               memory limits the concurrency (``fit.py``).
d. engine    — the method must exist in the chosen engine release and accept the GPU; SGLang's "not
               fully optimized" methods rank after optimized ones (``veto.py``).
e. accuracy  — published evidence as a veto, last: it can remove candidates, never pick one.

Pure: takes resolved values (the engine releases included, no names, no files, no callbacks) and
returns a typed :class:`~quantadvise.advisor.result.Recommendation`.
"""

from __future__ import annotations

import math

from .. import defaults
from ..errors import InputError
from ..kvcache import max_sequences, sequence_bytes
from .fit import gpus_needed, node_fit, node_kv
from .options import Context, Option, rank
from .plan import deploy_plan
from .result import (
    Alternative,
    KvChoice,
    Performance,
    Recommendation,
    SchemeChoice,
    ServedWorkload,
    TraceNode,
)
from .speed import model_note, node_roofline
from .veto import node_accuracy, node_engine

_STATUS_ORDER = {"recommended": 0, "runner-up": 1, "slower": 2, "vetoed": 3, "not-supported": 4, "does-not-fit": 5,
                 "cannot-run": 6, "candidate": 7}


def recommend(ctx: Context, options: list[Option], assumptions: list[str]) -> Recommendation:
    """Walk the tree over ``options`` and assemble the recommendation (raises InputError, naming the
    node that emptied the list, when no candidate survives)."""
    w = ctx.workload
    trace = [node_fit(ctx, options), node_roofline(ctx, options)]
    ranked = rank([o for o in options if o.status == "candidate"])
    trace.append(node_kv(ctx, options, ranked))
    trace.append(node_engine(ctx, ranked))
    trace.append(node_accuracy(ctx, ranked))
    if not ranked:
        raise_no_winner(trace)
    winner = ranked[0]
    base = next((o for o in options if o.family == "bf16"), None)
    _mark_ranks(ranked)

    alternatives = []
    for o in sorted(options, key=lambda o: (_STATUS_ORDER.get(o.status, 9), o.score_s)):
        alternatives.append(Alternative(
            scheme=o.id,
            description=o.scheme.description,
            status=o.status,
            reason=o.reason,
            step_time_s=o.step_s if o.step_s < math.inf else None,
            tokens_per_s=o.throughput or None,
            ttft_s=o.ttft_s,
            speedup_vs_bf16=(base.base_score_s / o.score_s)
            if base and base.base_score_s < math.inf and o.score_s < math.inf else None,
            weights_bytes=o.weights_bytes or None,
            fits=(o.fits_bf16_kv or o.fits_qkv) if o.weights_bytes else None,
            kv_dtype=ctx.kv_name if o.status in ("recommended", "runner-up", "slower") else None,
            cautions=o.cautions,
        ))
    engine_args, checkpoint = deploy_plan(ctx, winner)
    kv_opt = ctx.kv_options[ctx.kv_name]
    kv_t = kv_opt.kv
    final = winner.scheme.with_kv(kv_t) if kv_t is not None else winner.scheme
    warnings = list(winner.cautions)
    perf = Performance(
        step_time_s=winner.step_s,
        tokens_per_s=winner.throughput,
        ttft_s=winner.ttft_s,
        speedup_vs_bf16=(base.base_score_s / winner.score_s) if base and base.base_score_s < math.inf else None,
        baseline="bf16 weights with a bf16 KV cache",
        vs_runner_up=(ranked[1].score_s / winner.score_s) if len(ranked) > 1 else None,
        runner_up=ranked[1].id if len(ranked) > 1 else None,
        profile=winner.efficiency.profile_id,
        model_note=model_note(winner.efficiency),
        speed_model=winner.efficiency.model,
    )
    tokens = w.kv_tokens_per_sequence
    per_seq = sequence_bytes(ctx.arch, kv_t, tokens)
    max_conc = (max_sequences(ctx.arch, kv_t, tokens, ctx.budget_bytes - winner.weights_bytes)
                if per_seq else w.batch)  # no per-token KV (linear attention): the batch is not KV-bound
    if max_conc < w.batch:
        need = gpus_needed(ctx, winner, kv_t)
        warnings.append(
            f"{winner.id} with {ctx.kv_name} holds {max_conc} of the {w.batch} sequences ({tokens:,} "
            f"tokens each) on {w.gpus} x {ctx.gpu.name}; serving all {w.batch} needs "
            + (f"{need} GPUs (--gpus {need})" if need else f"more than {defaults.MAX_GPUS_SEARCH} GPUs")
        )
    hints = kv_opt.hints
    kv = KvChoice(
        dtype=ctx.kv_name,
        max_concurrency=max_conc,
        fits_requested_concurrency=max_conc >= w.batch,
        description=kv_t.describe("kv_cache") if kv_t is not None else "bf16 (model dtype)",
        tokens_per_sequence=tokens,
        bytes_per_sequence=round(per_seq),
        bytes_total=round(per_seq * w.batch),
        vllm_kv_cache_dtype=hints.vllm_kv_cache_dtype,
        sglang_kv_cache_dtype=hints.sglang_kv_cache_dtype,
        alternatives=list(hints.alternatives),
    )
    return Recommendation(
        workload=ServedWorkload.of(w, model_id=ctx.model_id or None, engine_version=ctx.engine.version),
        assumptions=assumptions,
        scheme=SchemeChoice(id=winner.id, description=winner.scheme.description, family=winner.family,
                            axes=final.axes()),
        kv=kv,
        trace=trace,
        alternatives=alternatives,
        engine_args=engine_args,
        checkpoint=checkpoint,
        performance=perf,
        warnings=warnings,
    )


def _mark_ranks(ranked: list[Option]) -> None:
    """The winner, the runner-up and the slower survivors, each with how far behind it is."""
    winner = ranked[0]
    tie = defaults.TIE

    def behind(o: Option) -> str:
        ratio = o.score_s / winner.score_s
        if ratio <= 1 + tie:
            return (f"ties with {winner.id} (within {tie:.1%} per output token); {winner.id} comes first in the "
                    "candidate order")
        return f"{ratio:.2f}x slower than {winner.id} per output token"

    winner.status = "recommended"
    if len(ranked) > 1:
        ranked[1].status = "runner-up"
        ranked[1].reason = behind(ranked[1])
    for o in ranked[2:]:
        o.status = "slower"
        o.reason = behind(o)
    winner.reason = "fastest candidate that fits, loads in the engine and passes the accuracy veto"


def raise_no_winner(trace: list[TraceNode]) -> None:
    last = next((t for t in reversed(trace) if "no candidate" in t.decision or "every" in t.decision), trace[-1])
    need = next((t.numbers.get("gpus_needed") for t in trace if t.node == "kv" and t.numbers.get("gpus_needed")),
                None)
    hint = f"try --gpus {need}" if need else "add GPUs, relax --accuracy-tolerance or lower --batch / --ctx"
    raise InputError(f"no scheme can serve this workload: {last.decision}", hint=hint, field="workload")
