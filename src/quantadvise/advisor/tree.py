"""The decision tree: from a workload to a scheme, every branch shown in numbers.

Nodes, in order, each a small pure function returning its decision and the numbers behind it:

a. fit       — bf16 weights + the KV cache the workload needs + runtime reserve against the GPUs'
               memory. Size only decides whether you must quantize, and how far; never which wins.
b. roofline  — each candidate's predicted step at the workload's batch and context (the roofline
               model with its efficiency profile), its ridge batch and the crossovers: memory-bound
               -> weight-only 4-bit, compute-bound -> W+A (FP8 where the GPU has fp8 tensor cores,
               INT8 where it does not), in between the predicted time decides. Candidates are
               ranked by predicted speed.
c. kv        — KV fp8 when KV is a large share of the bytes a step moves, or when KV memory limits
               the concurrency; the share, the concurrency gained, and the GPUs needed if even
               that does not fit.
d. engine    — the method must exist in the chosen engine version and accept the GPU; SGLang's
               "not fully optimized" methods rank after optimized ones.
e. accuracy  — published evidence as a veto, last: it can remove candidates, never pick one.

Pure: takes resolved objects (no names, no files), returns a :class:`Recommendation`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import QuantAdviseError
from ..evals.priors import AccuracyRule, Verdict, judge
from ..hardware import GPU
from ..kvcache import max_sequences, sequence_bytes
from ..model import ModelArch
from ..perf.profiles import Efficiency
from ..perf.step import StepModel, check_tensor_parallel, crossings, datapath
from ..scheme import Scheme, TensorQuant
from ..sizing import size_model
from ..workload import Workload

SCHEMA_VERSION = 1
KV_SHARE_THRESHOLD = 0.25  # choose a quantized KV cache when KV is at least this share of step bytes
MAX_GPUS_SEARCH = 64
GiB = 1024**3


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)


class TraceNode(_Out):
    node: str
    decision: str
    numbers: dict[str, Any]
    reasons: list[str] = []


class Alternative(_Out):
    scheme: str
    description: str
    status: str  # recommended | runner-up | slower | vetoed | not-supported | does-not-fit | cannot-run
    reason: str
    step_time_s: float | None = None
    tokens_per_s: float | None = None
    ttft_s: float | None = None
    speedup_vs_bf16: float | None = None
    weights_bytes: int | None = None
    fits: bool | None = None
    kv_dtype: str | None = None
    cautions: list[str] = []


class EngineVerdict(_Out):
    """What one engine version does with a candidate's checkpoint (filled by the engine node)."""

    supported: bool
    method: str | None = None  # what the checkpoint declares / the flag to pass
    resolved_method: str | None = None
    scheme_class: str | None = None
    optimized: bool | None = None
    quantization_flag: str | None = None  # value for --quantization (None: auto-detected)
    kv_cache_dtype_flag: str | None = None
    messages: list[str] = []


class Recommendation(_Out):
    schema_version: int = SCHEMA_VERSION
    workload: dict[str, Any]
    assumptions: list[str]
    scheme: dict[str, Any]
    kv: dict[str, Any]
    trace: list[TraceNode]
    alternatives: list[Alternative]
    engine_args: dict[str, str | None]
    checkpoint: dict[str, Any]
    performance: dict[str, Any]
    notes: list[str] = []
    warnings: list[str] = []

    @property
    def scheme_id(self) -> str:
        return self.scheme["id"]


# -------------------------------------------------------------------------------------------------
# Inputs and per-candidate state
# -------------------------------------------------------------------------------------------------


@dataclass
class Option:
    """A candidate scheme as the tree sees it."""

    scheme: Scheme
    deploy: dict[str, Any]
    efficiency: Efficiency
    status: str = "candidate"
    reason: str = ""
    weights_bytes: int = 0
    model: StepModel | None = None
    model_kv: StepModel | None = None  # with the quantized KV cache option
    step_s: float = math.inf
    ttft_s: float | None = None
    throughput: float = 0.0
    score_s: float = math.inf  # seconds per output token as the workload experiences it
    fits_bf16_kv: bool = False
    fits_qkv: bool = False
    ridge: float | None = None
    cautions: list[str] = field(default_factory=list)
    engine: EngineVerdict | None = None
    family: str = ""
    priority: int = 0  # position in the candidate list (tie-break)
    partial: bool = False  # weights fit, but not the KV cache for the whole batch
    base_score_s: float = math.inf  # score with a bf16 KV cache (what "vs bf16" compares against)

    @property
    def id(self) -> str:
        return self.scheme.id


@dataclass
class Context:
    arch: ModelArch
    gpu: GPU
    workload: Workload
    kv_options: dict[str, tuple[TensorQuant | None, dict[str, Any]]]  # name -> (kv, deploy hints)
    quant_kv: str  # the engine's fp8 KV preset id
    rules: tuple[AccuracyRule, ...]
    engine_check: Callable[[Option | None, str | None], EngineVerdict]  # None: the unquantized checkpoint
    engine_label: str
    budget_bytes: float = 0.0
    kv_name: str = "kv-bf16"
    forced_kv: bool = False


TIE = 0.005  # predictions within 0.5% of each other are a tie: the workload's candidate order decides


def rank(options: list[Option]) -> list[Option]:
    """Fastest first; near-ties (within TIE of the faster one) keep the candidate order, so two
    schemes the model cannot tell apart resolve to the one listed first (the more standard one)."""
    by_speed = sorted(options, key=lambda o: o.score_s)
    out: list[Option] = []
    i = 0
    while i < len(by_speed):
        lead = by_speed[i]
        j = i + 1
        while j < len(by_speed) and by_speed[j].score_s <= lead.score_s * (1 + TIE):
            j += 1
        out.extend(sorted(by_speed[i:j], key=lambda o: o.priority))
        i = j
    # candidates that hold the whole batch come before those that fit only part of it
    return [o for o in out if not o.partial] + [o for o in out if o.partial]


def _family(s: Scheme) -> str:
    if not s.quantizes_weights:
        return "bf16"
    if s.weight_only:
        return f"weight-only {s.weight.bits}-bit"  # type: ignore[union-attr]
    return f"W{s.weight.bits}A{s.activation.bits} {s.math_format}"  # type: ignore[union-attr]


def family_kind(s: Scheme) -> str:
    if not s.quantizes_weights:
        return "bf16"
    return "weight-only" if s.weight_only else "w+a"


# -------------------------------------------------------------------------------------------------
# a. fit
# -------------------------------------------------------------------------------------------------


def node_fit(ctx: Context, options: list[Option]) -> TraceNode:
    """Weights + the KV cache the workload holds + reserve, against the GPUs' memory.

    KV demand is ``batch x kv_tokens_per_sequence`` (continuous batching: the steady-state average
    prompt + output/2; synchronous: the full context). A candidate is kept when its weights leave room
    for that demand with a quantized KV cache; when no candidate does, the ones whose weights leave
    room for at least one sequence stay and the KV node says what concurrency fits."""
    a, w, g = ctx.arch, ctx.workload, ctx.gpu
    check_tensor_parallel(a, g, w.gpus)
    usable = g.memory_bytes * w.memory_utilization * (1 - w.headroom) * w.gpus
    reserve = w.reserve_gb * GiB * w.gpus
    ctx.budget_bytes = usable - reserve
    tokens = w.kv_tokens_per_sequence
    kv_bf16 = sequence_bytes(a, None, tokens) * w.batch
    qkv, _ = ctx.kv_options[ctx.quant_kv]
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
    numbers = {
        "gpus": w.gpus,
        "memory_bytes": g.memory_bytes * w.gpus,
        "usable_bytes": round(usable),
        "reserve_bytes": round(reserve),
        "budget_bytes": round(ctx.budget_bytes),
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


# -------------------------------------------------------------------------------------------------
# b. roofline
# -------------------------------------------------------------------------------------------------


def _score(o: Option, sm: StepModel, w: Workload, mode: str) -> tuple[float, float, float | None, float]:
    """(decode step s, seconds per output token as experienced, ttft s, tokens/s)."""
    step = sm.decode(w.batch, w.decode_context).time_s
    prompt = w.prompt_tokens
    ttft = sm.prefill(1, prompt).time_s if prompt else None
    if mode == "continuous" and prompt:
        # Over the life of `batch` concurrent requests the GPU runs their prefills once and
        # `output` decode steps: seconds per output token, all sequences together.
        prefill_all = sm.prefill(w.batch, prompt).time_s
        per_token = (w.output_tokens * step + prefill_all) / (w.batch * w.output_tokens)
        return step, per_token, ttft, 1.0 / per_token
    return step, step / w.batch, ttft, w.batch / step


def node_roofline(ctx: Context, options: list[Option]) -> TraceNode:
    w, g = ctx.workload, ctx.gpu
    mode = w.serving_mode
    # every runnable option is priced (bf16 stays the baseline even when it does not fit); only
    # the ones still in the running are ranked
    for o in options:
        if o.model is None:
            continue
        o.step_s, o.score_s, o.ttft_s, o.throughput = _score(o, o.model, w, mode)
        o.ridge = o.model.ridge_batch()
        o.base_score_s = o.score_s
    live = [o for o in options if o.status == "candidate"]
    base = next((o for o in options if o.family == "bf16" and o.model is not None), None)
    ranked = rank(live)
    numbers: dict[str, Any] = {
        "batch": w.batch,
        "ctx": w.context,
        "decode_ctx": w.decode_context,
        "mode": mode,
        "profile": live[0].efficiency.profile_id if live else None,
        "speed_model": {o.id: o.efficiency.model for o in live},
        "ridge_batch": {o.id: (round(o.ridge, 1) if o.ridge else None) for o in live},
        "step_time_s": {o.id: o.step_s for o in live},
        "tokens_per_s": {o.id: o.throughput for o in live},
    }
    if base is not None and base.model is not None:
        numbers["ridge_flop_per_byte"] = {
            o.id: round(o.model.ridge_flop_per_byte(w.batch), 1) for o in live if o.model is not None
        }
    # the two families the regime rule compares: best weight-only 4-bit vs best W+A on this GPU
    wa_math = "fp8" if g.has_math("fp8") else "int8"
    wo = [o for o in ranked if o.scheme.weight_only and o.scheme.weight.bits == 4]  # type: ignore[union-attr]
    wa = [o for o in ranked if family_kind(o.scheme) == "w+a" and o.model is not None
          and o.model.path.math == wa_math]
    regime = "unknown"
    reasons: list[str] = []
    if wo and wa:
        best_wo, best_wa = wo[0], wa[0]
        ridge_wo = best_wo.ridge or math.inf
        assert best_wo.model is not None and best_wa.model is not None
        cached = best_wo.model.cached_tokens(w.decode_context)
        xs = crossings(
            lambda b, m1=best_wo.model, m2=best_wa.model, ct=cached: (m1.decode_time(b, ct) - m2.decode_time(b, ct))
            / max(m1.decode_time(b, ct), m2.decode_time(b, ct)),
            1.0,
            4096.0,
        )
        cross = xs[0] if xs else None
        numbers["crossover"] = {"a": best_wo.id, "b": best_wa.id, "batch": round(cross, 1) if cross else None}
        numbers["weight_only_ridge_batch"] = round(ridge_wo, 1) if ridge_wo != math.inf else None
        if w.batch < ridge_wo and (cross is None or w.batch < cross):
            regime = "memory-bound"
            reasons.append(
                f"batch {w.batch} is below {best_wo.id}'s ridge ({ridge_wo:.0f}): the step is memory-bound, so "
                f"the fewest weight bytes win -> weight-only 4-bit"
            )
        elif cross is not None and w.batch > cross:
            regime = "compute-bound"
            reasons.append(
                f"batch {w.batch} is past the {best_wo.id} / {best_wa.id} crossover ({cross:.0f}): compute-bound, "
                f"so the faster tensor-core path wins -> W+A on {wa_math} "
                + ("(this GPU has fp8 tensor cores)" if wa_math == "fp8" else "(no fp8 tensor cores on this GPU)")
            )
        else:
            regime = "in between"
            reasons.append(
                f"batch {w.batch} sits between {best_wo.id}'s ridge ({ridge_wo:.0f}) and the crossover "
                f"({cross:.0f}) " if cross else f"batch {w.batch} is past {best_wo.id}'s ridge ({ridge_wo:.0f}) "
            )
            reasons[-1] += "-> the predicted step time decides"
    if regime == "unknown" and wo and wo[0].ridge:
        regime = "memory-bound" if w.batch < wo[0].ridge else "compute-bound"
        reasons.append(f"batch {w.batch} is {'below' if regime == 'memory-bound' else 'past'} {wo[0].id}'s ridge "
                       f"({wo[0].ridge:.0f}); no W+A candidate on {wa_math} to compare against")
    numbers["regime"] = regime
    if ranked:
        top = ranked[0]
        runner = ranked[1] if len(ranked) > 1 else None
        vs = ""
        if base is not None and base.step_s < math.inf:
            vs = f"{base.score_s / top.score_s:.2f}x bf16"
        if runner is not None:
            vs += f", {runner.score_s / top.score_s:.2f}x the runner-up {runner.id}"
        decision = (
            (f"{regime}: " if regime != "unknown" else "")
            + f"fastest is {top.id} ({_family(top.scheme)}) at {top.step_s * 1e3:.2f} ms per step, "
            f"{top.throughput:,.0f} tokens/s ({vs})"
        )
        if regime in ("memory-bound", "compute-bound"):
            expected = "weight-only" if regime == "memory-bound" else "w+a"
            if family_kind(top.scheme) != expected:
                reasons.append(_why_not_regime(top, ranked, w, mode))
    else:
        decision = "no candidate left to rank"
    for i, o in enumerate(ranked):
        o.reason = f"rank {i + 1} by predicted speed"
    return TraceNode(node="roofline", decision=decision, numbers=numbers, reasons=reasons)


def _why_not_regime(top: Option, ranked: list[Option], w: Workload, mode: str) -> str:
    """Why the fastest candidate is not of the family the decode regime points to."""
    assert top.model is not None
    if mode == "continuous" and w.prompt_tokens:
        step = top.model.decode(w.batch, w.decode_context).time_s
        pre = top.model.prefill(w.batch, w.prompt_tokens).time_s
        share = pre / (w.output_tokens * step + pre)
        return (
            f"but {top.id} wins overall: in continuous batching the prefill of {w.prompt_tokens:,} prompt tokens "
            f"per sequence is {share:.0%} of GPU time and runs compute-bound, where {top.model.path.math} tensor "
            f"cores pay off (pass --mode sync to rank by decode latency alone)"
        )
    return (
        f"but the efficiency profile ({top.efficiency.profile_id}) predicts {top.id} faster at batch {w.batch} "
        "than the regime's family; the prediction is followed"
    )


# -------------------------------------------------------------------------------------------------
# c. KV axis
# -------------------------------------------------------------------------------------------------


def _gpus_needed(ctx: Context, o: Option, kv: TensorQuant | None) -> int | None:
    """Smallest tensor-parallel degree on which weights + KV for the whole batch fit."""
    a, w, g = ctx.arch, ctx.workload, ctx.gpu
    per_gpu_budget = g.memory_bytes * w.memory_utilization * (1 - w.headroom) - w.reserve_gb * GiB
    need = o.weights_bytes + sequence_bytes(a, kv, w.kv_tokens_per_sequence) * w.batch
    for n in range(1, MAX_GPUS_SEARCH + 1):
        try:
            check_tensor_parallel(a, g, n)
        except QuantAdviseError:
            continue
        if need <= per_gpu_budget * n:
            return n
    return None


def node_kv(ctx: Context, options: list[Option], ranked: list[Option]) -> TraceNode:
    a, w = ctx.arch, ctx.workload
    numbers: dict[str, Any] = {}
    if not ranked:
        # nothing fits at this concurrency even with a quantized KV cache: say what would
        best = min((o for o in options if o.status == "does-not-fit"), key=lambda o: o.weights_bytes, default=None)
        qkv, _ = ctx.kv_options[ctx.quant_kv]
        if best is None:
            return TraceNode(node="kv", decision="no candidate to size the KV cache for", numbers=numbers)
        per_seq = sequence_bytes(a, qkv, w.kv_tokens_per_sequence)
        max_seq = max_sequences(a, qkv, w.kv_tokens_per_sequence, ctx.budget_bytes - best.weights_bytes)
        need = _gpus_needed(ctx, best, qkv)
        numbers.update(kv_dtype=ctx.quant_kv, max_concurrency=max_seq, gpus_needed=need,
                       smallest_weights=best.id, kv_bytes_per_sequence=round(per_seq))
        return TraceNode(
            node="kv",
            decision=(
                f"even {best.id} with {ctx.quant_kv} holds only {max_seq} sequences of {w.kv_tokens_per_sequence:,} "
                f"tokens on "
                f"{w.gpus} x {ctx.gpu.name}; serving {w.batch} needs "
                + (f"{need} GPUs" if need else f"more than {MAX_GPUS_SEARCH} GPUs")
            ),
            numbers=numbers,
        )
    top = ranked[0]
    assert top.model is not None
    c = top.model.decode(w.batch, w.decode_context)
    share = c.kv_bytes / c.bytes if c.bytes else 0.0
    tokens = w.kv_tokens_per_sequence
    kv_bf16 = sequence_bytes(a, None, tokens)
    qkv, _ = ctx.kv_options[ctx.quant_kv]
    kv_q = sequence_bytes(a, qkv, tokens)
    room = ctx.budget_bytes - top.weights_bytes
    max_bf16 = max_sequences(a, None, tokens, room)
    max_q = max_sequences(a, qkv, tokens, room)
    numbers.update(
        kv_share_of_step_bytes=round(share, 4),
        kv_bytes_per_sequence_bf16=round(kv_bf16),
        kv_bytes_per_sequence_quantized=round(kv_q),
        kv_bytes_bf16=round(kv_bf16 * w.batch),
        kv_bytes_quantized=round(kv_q * w.batch),
        max_concurrency_bf16=max_bf16,
        max_concurrency_quantized=max_q,
        kv_tokens_per_sequence=tokens,
        threshold=KV_SHARE_THRESHOLD,
        quantized_kv_dtype=ctx.quant_kv,
    )
    reasons = []
    if ctx.forced_kv:
        choose = ctx.kv_name != "kv-bf16"
        decision = f"KV cache dtype set by the workload: {ctx.kv_name}"
    else:
        choose = False
        if share >= KV_SHARE_THRESHOLD:
            choose = True
            reasons.append(
                f"KV is {share:.0%} of the bytes a step moves at batch {w.batch} x {w.decode_context:,} tokens "
                f"(>= {KV_SHARE_THRESHOLD:.0%}): halving it shortens every step"
            )
        if max_bf16 < w.batch:
            choose = True
            reasons.append(
                f"a bf16 KV cache holds {max_bf16} sequences of {tokens:,} tokens next to {top.id}'s weights; "
                f"{ctx.quant_kv} holds {max_q} (+{max_q - max_bf16})"
            )
        refused = False
        if choose:
            # the KV dtype on its own (the weights' own engine check is the next node's job)
            verdict = ctx.engine_check(None, ctx.quant_kv)
            if not verdict.supported:
                choose, refused = False, True
                reasons.append(f"but {ctx.engine_label} refuses it on {ctx.gpu.name}: " + "; ".join(verdict.messages))
        ctx.kv_name = ctx.quant_kv if choose else "kv-bf16"
        if choose:
            decision = (
                f"{ctx.quant_kv}: KV is {share:.0%} of step bytes; concurrency at {tokens:,} tokens per sequence "
                f"{max_bf16} -> {max_q}"
            )
        elif refused:
            decision = f"{ctx.quant_kv} would help but {ctx.engine_label} refuses it here: keep a bf16 KV cache"
        else:
            decision = (
                f"keep a bf16 KV cache: KV is {share:.0%} of step bytes (< {KV_SHARE_THRESHOLD:.0%}) and "
                f"{max_bf16} sequences fit (>= batch {w.batch})"
            )
    chosen_q = ctx.kv_name != "kv-bf16"
    fits_at_batch = (max_q if chosen_q else max_bf16) >= w.batch
    numbers["fits_requested_concurrency"] = fits_at_batch
    if not fits_at_batch:
        kv_t, _ = ctx.kv_options[ctx.kv_name]
        need = _gpus_needed(ctx, top, kv_t)
        largest = max_q if chosen_q else max_bf16
        numbers.update(largest_concurrency_that_fits=largest, gpus_needed=need)
        decision += (
            f"; even so only {largest} of the {w.batch} sequences fit on {w.gpus} x {ctx.gpu.name} — serving "
            f"{w.batch} at {tokens:,} tokens each needs "
            + (f"{need} GPUs (--tensor-parallel-size {need})" if need else f"more than {MAX_GPUS_SEARCH} GPUs")
        )
    if chosen_q:
        for o in ranked:
            if o.model_kv is not None:
                o.step_s, o.score_s, o.ttft_s, o.throughput = _score(o, o.model_kv, w, w.serving_mode)
        ranked[:] = rank(ranked)
        numbers["step_time_s_with_kv"] = {o.id: o.step_s for o in ranked}
    return TraceNode(node="kv", decision=decision, numbers=numbers, reasons=reasons)


# -------------------------------------------------------------------------------------------------
# d. engine
# -------------------------------------------------------------------------------------------------


def node_engine(ctx: Context, ranked: list[Option]) -> TraceNode:
    kv = ctx.kv_name if ctx.kv_name != "kv-bf16" else None
    numbers: dict[str, Any] = {"engine": ctx.engine_label, "gpu_capability": ctx.gpu.compute_capability}
    supported, penalised, reasons = [], [], []
    for o in ranked:
        v = ctx.engine_check(o, kv)
        o.engine = v
        if not v.supported:
            o.status = "not-supported"
            o.reason = "; ".join(v.messages) or f"{ctx.engine_label} cannot run it"
            continue
        if v.optimized is False:
            penalised.append(o)
            msg = next((m for m in v.messages if "not fully optimized" in m), "")
            o.cautions.append(msg or f"{v.resolved_method} is not on {ctx.engine_label}'s optimized list")
            reasons.append(
                f"{o.id} resolves to {v.resolved_method}, which {ctx.engine_label} marks not fully optimized: "
                "ranked after the optimized methods"
            )
        else:
            supported.append(o)
    ranked[:] = supported + penalised
    numbers["resolved"] = {
        o.id: {"method": o.engine.resolved_method, "scheme_class": o.engine.scheme_class,
               "optimized": o.engine.optimized}
        for o in ranked if o.engine is not None
    }
    dropped = [o for o in (supported + penalised)]
    numbers["supported"] = [o.id for o in dropped]
    if ranked:
        top = ranked[0]
        decision = (
            f"{top.id} loads in {ctx.engine_label} as {top.engine.resolved_method}"  # type: ignore[union-attr]
            + (f" ({top.engine.scheme_class})" if top.engine and top.engine.scheme_class else "")
        )
    else:
        decision = f"no candidate is accepted by {ctx.engine_label} on {ctx.gpu.name}"
    return TraceNode(node="engine", decision=decision, numbers=numbers, reasons=reasons)


# -------------------------------------------------------------------------------------------------
# e. accuracy veto
# -------------------------------------------------------------------------------------------------


def node_accuracy(ctx: Context, ranked: list[Option]) -> TraceNode:
    w = ctx.workload
    before = ranked[0].id if ranked else None
    kept: list[Option] = []
    vetoed: dict[str, list[str]] = {}
    cautions: dict[str, list[str]] = {}
    for o in ranked:
        kvq = ctx.kv_options[ctx.kv_name][0]
        scheme = o.scheme.with_kv(kvq) if kvq is not None else o.scheme
        verdicts: list[Verdict] = judge(ctx.rules, scheme, str(w.task), w.accuracy_tolerance)
        vetoes = [v for v in verdicts if v.action == "veto"]
        if vetoes:
            o.status = "vetoed"
            o.reason = f"{vetoes[0].rule}: {vetoes[0].message} ({vetoes[0].source})"
            vetoed[o.id] = [v.rule for v in vetoes]
            continue
        for v in verdicts:
            if v.action == "caution":
                o.cautions.append(f"{v.message} ({v.source})")
                cautions.setdefault(o.id, []).append(v.rule)
        kept.append(o)
    ranked[:] = kept
    numbers = {"task": w.task, "tolerance_pct": w.accuracy_tolerance, "vetoed": vetoed, "cautions": cautions}
    after = ranked[0].id if ranked else None
    reasons = []
    if before and after and after != before:
        reasons.append(
            f"the veto removed the fastest candidate {before} ({', '.join(vetoed.get(before, []))}); "
            f"the runner-up {after} is chosen"
        )
    if not ranked:
        decision = "every remaining candidate is vetoed: nothing meets the accuracy tolerance on this hardware"
    elif vetoed:
        decision = f"vetoed {', '.join(vetoed)}; {after} passes"
    else:
        decision = f"no published evidence vetoes {after}"
    if ranked and ranked[0].cautions:
        decision += f" (with {len(ranked[0].cautions)} caution(s))"
    return TraceNode(node="accuracy", decision=decision, numbers=numbers, reasons=reasons)


# -------------------------------------------------------------------------------------------------
# the tree
# -------------------------------------------------------------------------------------------------


def build_options(
    arch: ModelArch,
    gpu: GPU,
    workload: Workload,
    schemes: Sequence[tuple[Scheme, dict[str, Any], Efficiency]],
    kv_options: dict[str, tuple[TensorQuant | None, dict[str, Any]]],
    quant_kv: str,
) -> list[Option]:
    opts: list[Option] = []
    kv_bf16 = kv_options["kv-bf16"][0]
    kv_q = kv_options[quant_kv][0]
    for i, (scheme, deploy, eff) in enumerate(schemes):
        o = Option(scheme=scheme, deploy=deploy, efficiency=eff, family=_family(scheme), priority=i)
        try:
            o.weights_bytes = size_model(arch, scheme).total_bytes
            path = datapath(scheme, gpu)
            o.model = StepModel(arch, scheme, gpu, kv=kv_bf16, gpus=workload.gpus, efficiency=eff, path=path)
            o.model_kv = StepModel(arch, scheme, gpu, kv=kv_q, gpus=workload.gpus, efficiency=eff, path=path)
            if path.note:
                o.cautions.append(path.note)
        except QuantAdviseError as exc:
            o.status = "cannot-run"
            o.reason = exc.message
        opts.append(o)
    return opts


def recommend(
    ctx: Context,
    options: list[Option],
    assumptions: list[str],
    model_info: dict[str, Any],
    deploy_builder: Callable[[Option, Context], tuple[dict[str, str | None], dict[str, Any]]],
) -> Recommendation:
    w = ctx.workload
    trace = [node_fit(ctx, options)]
    trace.append(node_roofline(ctx, options))
    ranked = rank([o for o in options if o.status == "candidate"])
    trace.append(node_kv(ctx, options, ranked))
    trace.append(node_engine(ctx, ranked))
    trace.append(node_accuracy(ctx, ranked))

    base = next((o for o in options if o.family == "bf16"), None)
    winner = ranked[0] if ranked else None
    warnings: list[str] = []
    if winner is None:
        raise_no_winner(trace)
    assert winner is not None
    winner.status = "recommended"
    def behind(o: Option) -> str:
        ratio = o.score_s / winner.score_s
        if ratio <= 1 + TIE:
            return (f"ties with {winner.id} (within {TIE:.1%} per output token); {winner.id} comes first in the "
                    "candidate order")
        return f"{ratio:.2f}x slower than {winner.id} per output token"

    if len(ranked) > 1:
        ranked[1].status = "runner-up"
        ranked[1].reason = behind(ranked[1])
    for o in ranked[2:]:
        o.status = "slower"
        o.reason = behind(o)
    winner.reason = "fastest candidate that fits, loads in the engine and passes the accuracy veto"

    alternatives = []
    order = {"recommended": 0, "runner-up": 1, "slower": 2, "vetoed": 3, "not-supported": 4, "does-not-fit": 5,
             "cannot-run": 6, "candidate": 7}
    for o in sorted(options, key=lambda o: (order.get(o.status, 9), o.score_s)):
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
    engine_args, checkpoint = deploy_builder(winner, ctx)
    kv_t, kv_deploy = ctx.kv_options[ctx.kv_name]
    final = winner.scheme.with_kv(kv_t) if kv_t is not None else winner.scheme
    warnings.extend(winner.cautions)
    perf = {
        "step_time_s": winner.step_s,
        "tokens_per_s": winner.throughput,
        "ttft_s": winner.ttft_s,
        "speedup_vs_bf16": (base.base_score_s / winner.score_s) if base and base.base_score_s < math.inf else None,
        "baseline": "bf16 weights with a bf16 KV cache",
        "vs_runner_up": (ranked[1].score_s / winner.score_s) if len(ranked) > 1 else None,
        "runner_up": ranked[1].id if len(ranked) > 1 else None,
        "profile": winner.efficiency.profile_id,
        "model_note": ("prediction from the measured curves of a calibrated profile (fitted to its shapes)"
                       if winner.efficiency.model == "calibrated" else
                       "roofline prediction with the efficiency profile, not a measurement"),
        "speed_model": winner.efficiency.model,
    }
    per_seq = sequence_bytes(ctx.arch, kv_t, w.kv_tokens_per_sequence)
    max_conc = (max_sequences(ctx.arch, kv_t, w.kv_tokens_per_sequence, ctx.budget_bytes - winner.weights_bytes)
                if per_seq else w.batch)  # no per-token KV (linear attention): the batch is not KV-bound
    if max_conc < w.batch:
        need = _gpus_needed(ctx, winner, kv_t)
        warnings.append(
            f"{winner.id} with {ctx.kv_name} holds {max_conc} of the {w.batch} sequences ({w.kv_tokens_per_sequence:,} "
            f"tokens each) on {w.gpus} x {ctx.gpu.name}; serving all {w.batch} needs "
            + (f"{need} GPUs (--gpus {need})" if need else f"more than {MAX_GPUS_SEARCH} GPUs")
        )
    kv_info = {
        "dtype": ctx.kv_name,
        "max_concurrency": max_conc,
        "fits_requested_concurrency": max_conc >= w.batch,
        "description": kv_t.describe("kv_cache") if kv_t is not None else "bf16 (model dtype)",
        "tokens_per_sequence": w.kv_tokens_per_sequence,
        "bytes_per_sequence": round(sequence_bytes(ctx.arch, kv_t, w.kv_tokens_per_sequence)),
        "bytes_total": round(sequence_bytes(ctx.arch, kv_t, w.kv_tokens_per_sequence) * w.batch),
        **{k: v for k, v in kv_deploy.items() if v is not None},
    }
    return Recommendation(
        workload={**w.model_dump(mode="json"), "context": w.context, "serving_mode": w.serving_mode,
                  "model_id": model_info.get("id")},
        assumptions=assumptions,
        scheme={"id": winner.id, "description": winner.scheme.description, "family": winner.family,
                "axes": final.axes()},
        kv=kv_info,
        trace=trace,
        alternatives=alternatives,
        engine_args=engine_args,
        checkpoint=checkpoint,
        performance=perf,
        warnings=warnings,
    )


def raise_no_winner(trace: list[TraceNode]) -> None:
    from ..errors import InputError

    last = next((t for t in reversed(trace) if "no candidate" in t.decision or "every" in t.decision), trace[-1])
    need = next((t.numbers.get("gpus_needed") for t in trace if t.node == "kv" and t.numbers.get("gpus_needed")),
                None)
    hint = f"try --gpus {need}" if need else "add GPUs, relax --accuracy-tolerance or lower --batch / --ctx"
    raise InputError(f"no scheme can serve this workload: {last.decision}", hint=hint, field="workload")


# -------------------------------------------------------------------------------------------------
# pricing one given scheme (the CI gate's performance rules use the same step model and scoring)
# -------------------------------------------------------------------------------------------------


class Prediction(_Out):
    """One scheme priced at a workload exactly as the tree prices its candidates."""

    schema_version: int = SCHEMA_VERSION
    scheme: str
    kv_dtype: str
    gpu: str
    gpus: int
    batch: int
    decode_ctx: int
    mode: str
    step_time_s: float
    seconds_per_token: float  # per output token as the workload experiences it (continuous: prefill included)
    tokens_per_s: float
    ttft_s: float | None = None
    profile: str
    model_note: str = "roofline prediction with the efficiency profile, not a measurement"
    speed_model: str = "default-efficiency"  # perfprofile.MODELS: ideal | default-efficiency | calibrated-ceilings | calibrated


def predict(arch: ModelArch, gpu: GPU, workload: Workload, scheme: Scheme, efficiency: Efficiency, *,
            kv: TensorQuant | None = None, kv_name: str = "kv-bf16") -> Prediction:
    """Price ``scheme`` (with the KV cache ``kv``) at ``workload``: the StepModel and the scoring the
    roofline node uses, so a candidate priced here and in :func:`recommend` gets the same numbers."""
    sm = StepModel(arch, scheme, gpu, kv=kv, gpus=workload.gpus, efficiency=efficiency, path=datapath(scheme, gpu))
    mode = workload.serving_mode
    step, per_token, ttft, tps = _score(None, sm, workload, mode)  # type: ignore[arg-type]
    return Prediction(
        scheme=scheme.id, kv_dtype=kv_name, gpu=gpu.id, gpus=workload.gpus, batch=workload.batch,
        decode_ctx=workload.decode_context, mode=mode, step_time_s=step, seconds_per_token=per_token,
        tokens_per_s=tps, ttft_s=ttft, profile=efficiency.profile_id, speed_model=efficiency.model,
        model_note=("prediction from the measured curves of a calibrated profile (fitted to its shapes)"
                    if efficiency.model == "calibrated" else
                    "roofline prediction with the efficiency profile, not a measurement"),
    )
