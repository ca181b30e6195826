"""The memory nodes of the tree: (b) fit and (e) the KV cache axis.

b. fit — weights + the KV cache the workload holds + the runtime reserve against the GPUs' memory
   (:func:`quantadvise.memory.sizing.memory_budget`, the one budget every command uses). Size only decides
   whether you must quantize, and how far; never which scheme wins. Each candidate's capacity (the
   sequences its KV cache holds next to its weights) is what the speed node prices it at.
e. kv  — one KV cache dtype for the workload, decided after the engine and accuracy filters on the
   deployable candidates: quantized when KV is a large share of the bytes a step moves, or when a
   16-bit KV cache cannot hold the batch. Both are measured next to the deployable candidate with
   the fewest weight bytes (where KV weighs most and the most sequences fit); and when a heavier
   candidate would rank first with a 16-bit cache while holding only part of the batch with it, the
   quantized cache is taken too — the recommended scheme never holds part of the batch with a bf16
   cache where the quantized one holds more; and when the candidate that ranks first with the quantized
   cache holds the batch only with it and outruns the one that ranks first with bf16 beyond their
   uncertainty, it is taken as well — a bf16 cache never hands the batch to a slower scheme. Each
   condition only turns on as the batch grows.
"""

from __future__ import annotations

from typing import Any

from .. import defaults
from ..errors import QuantAdviseError
from ..memory.kvcache import held_sequence_bytes, kv_copies, max_sequences, replication_note, sequence_bytes
from ..memory.sizing import memory_budget
from ..model.inventory import inventory_of
from ..perf.step import check_tensor_parallel
from ..results import record
from ..scheme.axes import Scheme, TensorQuant
from ..wording import every, plural
from .options import BF16_KV, Context, Option, beats
from .result import TraceNode
from .verdict import engine_verdict

UNBOUNDED = 1_000_000_000  # a model with no per-token KV cache (linear attention): memory never caps the batch


@record
class EngineMemory:
    """The engine's share of each GPU and the runtime reserve outside it, on one GPU count."""

    fraction: float
    fraction_from: str  # in a phrase
    reserve_gb: float
    reserve_from: str
    given: bool  # the workload set the fraction: the engine commands carry it

    def assumption(self, headroom: float = 0.0) -> str:
        """``recommend``'s memory assumption line."""
        reserve = (f"{self.reserve_gb:g} GiB runtime reserve per GPU ({self.reserve_from})" if self.reserve_gb else
                   f"no runtime reserve on top ({self.reserve_from})")
        return (f"memory: {round(self.fraction * 100, 2):g}% of each GPU ({self.fraction_from}), {reserve}"
                + (f", {headroom:.0%} headroom" if headroom else ""))


def engine_memory(ctx: Context, gpus: int) -> EngineMemory:
    """The memory share and reserve the workload's engine release runs with on ``gpus`` GPUs: the
    workload's when given, else the engine's own, derived exactly as ``check`` derives it
    (:func:`quantadvise.engines.startup.default_fraction`: vLLM's --gpu-memory-utilization default, SGLang's
    mem_fraction_static heuristic for this GPU, TP, model and the --max-running-requests the plan writes)."""
    from ..engines.flags import ENGINES
    from ..engines.startup import default_reserve_gb, share_of_gpu

    w, engine = ctx.workload, ctx.engine.engine
    given: float | None = w.memory_utilization
    frac_from = ""
    if given is not None:
        flag = ENGINES[engine].for_field("gpu_memory_utilization").name
        frac_from = f"given; the engine commands carry it: {flag} {given:g}"
    if ctx.startup is None:
        if given is None:
            raise ValueError("no engine start-up facts to derive the memory fraction from")
        frac = given
    else:
        # the running cap the fraction heuristic reads, where the release has one (SGLang's tiers); vLLM 0.34.0's
        # extensible KV cache keeps a margin of each GPU free after warmup, whatever the flag says
        sglang = {"max_running_requests": w.batch} if ctx.startup.fraction_tiers else {}
        frac, frac_from = share_of_gpu(ctx.startup, ctx.gpu.memory_bytes, ctx.gpu.vendor, tp=gpus,
                                       mla=ctx.arch.is_mla, model_path=ctx.model_id or w.model, fraction=given,
                                       fraction_from=frac_from, **sglang)
    if given is None:
        frac_from += "; --memory-utilization"
    if w.reserve_gb is not None:
        reserve, reserve_from = w.reserve_gb, "--reserve-gb"
    else:
        reserve, reserve_from = default_reserve_gb(engine)
        reserve_from += "; --reserve-gb"
    return EngineMemory(frac, frac_from, reserve, reserve_from, given=w.memory_utilization is not None)


def budget_for(ctx: Context, gpus: int) -> float:
    m = engine_memory(ctx, gpus)
    return memory_budget(ctx.gpu.memory_bytes, gpus=gpus, memory_utilization=m.fraction,
                         reserve_bytes=int(m.reserve_gb * defaults.GiB), headroom=ctx.workload.headroom).budget_bytes


def capacity(ctx: Context, weights_bytes: int, kv: TensorQuant | None, budget: float | None = None) -> int:
    """Sequences of the workload's KV length that fit next to ``weights_bytes`` on the workload's GPUs,
    each GPU holding its share of every sequence's KV (:func:`quantadvise.memory.kvcache.max_sequences`: an MLA
    latent, or KV heads fewer than the GPUs, are held more than once)."""
    tokens = ctx.workload.kv_tokens_per_sequence
    room = budget if budget is not None else ctx.budget_bytes
    if sequence_bytes(ctx.arch, kv, tokens) <= 0:
        return UNBOUNDED if weights_bytes <= room else 0
    return max_sequences(ctx.arch, kv, tokens, room - weights_bytes, tp=ctx.workload.gpus)


def gpus_needed(ctx: Context, o: Option, kv: TensorQuant | None) -> int | None:
    """Smallest tensor-parallel degree (one the model's heads divide) on which ``o``'s weights + the
    KV cache of the whole batch (as those GPUs hold it, replicated copies included) fit."""
    a, w, g = ctx.arch, ctx.workload, ctx.gpu
    for n in range(1, defaults.MAX_GPUS_SEARCH + 1):
        try:
            check_tensor_parallel(a, g, n)
        except QuantAdviseError:
            continue
        if o.weights_bytes + held_sequence_bytes(a, kv, w.kv_tokens_per_sequence, n) * w.batch <= budget_for(ctx, n):
            return n
    return None


def _kv_label(name: str) -> str:
    return "a bf16 KV cache" if name == BF16_KV else name


def _holds(caps: dict[str, int], batch: int) -> str:
    """Which candidates hold the whole batch and how many the others hold, from each one's capacity."""
    whole = [k for k, v in caps.items() if v >= batch]
    if len(whole) == len(caps):
        return (f"every candidate holds {every(batch, 'sequence', own='the')}" if len(caps) > 1 else
                f"{whole[0]} holds {every(batch, 'sequence', own='the')}")
    by_count: dict[int, list[str]] = {}
    for k, v in caps.items():
        if v < batch:
            by_count.setdefault(v, []).append(k)
    part = ", ".join(f"{', '.join(ids)} {'hold' if len(ids) > 1 else 'holds'} {v:,}"
                     for v, ids in sorted(by_count.items(), reverse=True))
    if not whole:
        return f"none holds {every(batch, 'sequence', own='the')}: {part}"
    return f"{', '.join(whole)} {'hold' if len(whole) > 1 else 'holds'} {every(batch, 'sequence', own='the')}, {part}"


def node_fit(ctx: Context, options: list[Option]) -> TraceNode:
    """Weights + the KV cache the workload holds + reserve, against the GPUs' memory.

    KV demand is ``batch x kv_tokens_per_sequence`` (continuous batching: the steady-state average
    prompt + output/2; synchronous: the full context), as the GPUs hold it (an MLA latent or KV heads
    fewer than the GPUs are stored on several GPUs). It is weighed with each KV cache dtype node (e)
    may choose — a bf16 one and ``quant_kv``, or only the one the workload sets — and every figure is
    said with its dtype, the figures the alternatives table shows for the dtype (e) keeps. Every
    candidate whose weights leave room for at least one sequence stays; how many it holds is its
    capacity, at which the speed node prices it."""
    a, w, g = ctx.arch, ctx.workload, ctx.gpu
    check_tensor_parallel(a, g, w.gpus)
    m = engine_memory(ctx, w.gpus)
    b = memory_budget(g.memory_bytes, gpus=w.gpus, memory_utilization=m.fraction,
                      reserve_bytes=int(m.reserve_gb * defaults.GiB), headroom=w.headroom)
    ctx.budget_bytes = b.budget_bytes
    tokens = w.kv_tokens_per_sequence
    qname = ctx.quant_kv
    qkv = ctx.kv_options[qname].kv
    # the KV cache dtypes node (e) may end with: the one the workload sets, else bf16 or the quantized one
    dtypes = [ctx.kv_name] if ctx.forced_kv else list(dict.fromkeys([BF16_KV, qname]))
    kvs = {d: ctx.kv_options[d].kv for d in dtypes}
    kv_bf16 = held_sequence_bytes(a, None, tokens, w.gpus) * w.batch
    kv_q = held_sequence_bytes(a, qkv, tokens, w.gpus) * w.batch
    kv_need = {d: held_sequence_bytes(a, kv, tokens, w.gpus) * w.batch for d, kv in kvs.items()}
    bf16_weights = next((o.weights_bytes for o in options if not o.scheme.quantizes_weights), 0)
    caps: dict[str, dict[str, int]] = {d: {} for d in dtypes}
    for o in options:
        if not o.weights_bytes:
            continue
        o.max_concurrency_bf16 = capacity(ctx, o.weights_bytes, None)
        o.max_concurrency_quantized = capacity(ctx, o.weights_bytes, qkv)
        held = {d: capacity(ctx, o.weights_bytes, kv) for d, kv in kvs.items()}
        if max(held.values()) < 1 and o.status == "candidate":
            o.status = "does-not-fit"
            o.reason = (f"{o.weights_bytes / 1e9:.1f} GB of weights leave no room for one sequence of "
                        f"{plural(tokens, 'token')} "
                        f"({ctx.kv_name if ctx.forced_kv else qname}) in the {ctx.budget_bytes / 1e9:.1f} GB budget")
        if o.status == "candidate":
            for d in dtypes:
                caps[d][o.id] = held[d]
    room = {d: ctx.budget_bytes - kv_need[d] for d in dtypes}
    first = dtypes[0]
    fits_with = [d for d in dtypes if bf16_weights <= room[d]]
    must = not fits_with
    params = inventory_of(a).total_params()
    room_bf16 = ctx.budget_bytes - kv_bf16
    room_q = ctx.budget_bytes - kv_q
    copies_note = replication_note(a, w.gpus)
    numbers: dict[str, Any] = {
        "gpus": w.gpus, "memory_bytes": b.memory_bytes, "memory_utilization": m.fraction, "usable_bytes": b.usable_bytes,
        "reserve_bytes": b.reserve_bytes, "budget_bytes": b.budget_bytes, "bf16_weights_bytes": bf16_weights,
        "kv_tokens_per_sequence": tokens, "kv_bytes_bf16": round(kv_bf16), "kv_bytes_quantized": round(kv_q),
        "kv_copies": kv_copies(a, w.gpus),
        "quantized_kv_dtype": qname, "kv_dtypes_weighed": dtypes, "must_quantize": must,
        "bf16_fits_with": fits_with,
        # with the KV cache dtype that holds most (the dtypes weighed), and per dtype
        "holds_whole_batch": [k for k in caps[first] if max(c[k] for c in caps.values()) >= w.batch],
        "holds_part_of_batch": [k for k in caps[first] if max(c[k] for c in caps.values()) < w.batch],
        "holds_whole_batch_by_kv": {d: [k for k, v in c.items() if v >= w.batch] for d, c in caps.items()},
        "max_bits_per_param_kv_bf16": round(room_bf16 * 8 / params, 2) if room_bf16 > 0 else None,
        "max_bits_per_param_kv_quantized": round(room_q * 8 / params, 2) if room_q > 0 else None,
        "max_concurrency": {o.id: {"kv-bf16": o.max_concurrency_bf16, qname: o.max_concurrency_quantized}
                            for o in options if o.weights_bytes},
    }
    kv_desc = f"{w.batch} x {plural(tokens, 'token')}"
    budget = f"{ctx.budget_bytes / 1e9:.1f} GB"
    if not must:
        d = fits_with[0]
        decision = (f"bf16 fits: {bf16_weights / 1e9:.1f} GB weights + {kv_need[d] / 1e9:.1f} GB KV for {kv_desc} "
                    + (f"with {d} " if d != BF16_KV else "")
                    + f"within {budget}"
                    + (f" (with a bf16 KV cache it needs {kv_need[BF16_KV] / 1e9:.1f} GB of KV: too much)"
                       if d != BF16_KV and BF16_KV in kv_need else "")
                    + " — quantization is optional, chosen for speed")
    else:
        bounds = [f"<= {room[d] * 8 / params:.1f} bits/param with {_kv_label(d)}" for d in dtypes if room[d] > 0]
        decision = (f"must quantize: bf16 needs {bf16_weights / 1e9:.1f} GB + {kv_need[first] / 1e9:.1f} GB KV "
                    f"({kv_desc}, {_kv_label(first)}) but the budget is {budget}; "
                    + (f"to hold the whole batch, weights must average {' or '.join(bounds)}" if bounds else
                       f"the whole batch cannot be held: its KV cache alone ({kv_need[dtypes[-1]] / 1e9:.1f} GB with "
                       f"{_kv_label(dtypes[-1])}) exceeds the budget"))
    if ctx.batch_bound:
        last = dtypes[-1]
        held_last = caps[last]
        decision = ((f"bf16 fits ({bf16_weights / 1e9:.1f} GB of weights in {budget})" if not must else
                     f"must quantize: bf16 needs {bf16_weights / 1e9:.1f} GB of weights + KV against {budget}")
                    + f"; concurrency is searched up to {w.batch:,}"
                    + (f" (--users {w.users:,})" if w.users is not None and w.batch >= w.users else "")
                    + f": each candidate runs at most the smaller of that bound and what its KV cache holds "
                    f"({', '.join(f'{k} {min(v, w.batch):,}' for k, v in list(held_last.items())[:6])}"
                    + (" ..." if len(held_last) > 6 else "") + f" sequences of {plural(tokens, 'token')} with {last})")
    elif any(caps[d] for d in dtypes):
        decision += "; " + "; ".join(f"with {_kv_label(d)} {_holds(caps[d], w.batch)}" for d in dtypes if caps[d])
        if any(v < w.batch for c in caps.values() for v in c.values()):
            decision += " (each is priced at the concurrency it holds with the KV cache dtype node e keeps)"
    else:
        decision += "; not even one sequence fits next to any candidate's weights"
    if copies_note:
        decision += f"; KV replicated: {copies_note}"
    return TraceNode(node="fit", decision=decision, numbers=numbers)


def _kv_accuracy(ctx: Context, kv: TensorQuant | None) -> list[str]:
    """Published findings that veto a KV cache dtype on its own for this workload."""
    from ..evals.priors import judge

    if kv is None:
        return []
    probe = Scheme(id="kv-probe", kv_cache=kv)
    w = ctx.workload
    return [f"{v.rule}: {v.message} ({v.source})" for v in
            judge(ctx.rules, probe, str(w.task), w.accuracy_tolerance, params=ctx.model_params,
                  prompt_tokens=w.prompt_tokens) if v.action == "veto"]


def _first_with(ctx: Context, live: list[Option], kv_name: str = BF16_KV) -> Option | None:
    """The deployable candidate that ranks first when every candidate is priced with the KV cache ``kv_name``
    at the concurrency it holds with it (the speed node's pricing and ranking, statuses untouched): a copy,
    holding the numbers of that pricing (the node prices every candidate again after its decision)."""
    from copy import copy

    from .options import rank
    from .speed import price

    w = ctx.workload
    kept = ctx.kv_name
    ctx.kv_name = kv_name
    kvt = ctx.kv_options[kv_name].kv
    priced = []
    try:
        for o in live:
            if o.model is None:
                continue
            o.kv_name = kv_name
            o.max_concurrency = capacity(ctx, o.weights_bytes, kvt)
            o.concurrency = min(w.batch, o.max_concurrency)
            if o.concurrency >= 1 and price(ctx, o) is None and o.priced:
                priced.append(o)
    finally:
        ctx.kv_name = kept
    ranked = rank(priced)
    return copy(ranked[0]) if ranked else None


def node_kv(ctx: Context, live: list[Option]) -> TraceNode:
    """e. one KV cache dtype for every deployable candidate (see the module docstring)."""
    a, w = ctx.arch, ctx.workload
    threshold = defaults.KV_SHARE_THRESHOLD
    tokens = w.kv_tokens_per_sequence
    qname = ctx.quant_kv
    qkv = ctx.kv_options[qname].kv
    numbers: dict[str, Any] = {"threshold": threshold, "quantized_kv_dtype": qname, "kv_tokens_per_sequence": tokens,
                               "kv_bytes_per_sequence_bf16": round(sequence_bytes(a, None, tokens)),
                               "kv_bytes_per_sequence_quantized": round(sequence_bytes(a, qkv, tokens))}
    reasons: list[str] = []
    ref = min((o for o in live if o.model is not None), key=lambda o: (o.weights_bytes, o.id), default=None)
    if ctx.forced_kv:
        decision = f"KV cache dtype set by the workload: {ctx.kv_name}"
    elif ref is None:
        decision = "no deployable candidate to size the KV cache for"
    else:
        assert ref.model is not None
        c = ref.model.decode(w.batch, w.decode_context)
        share = c.kv_bytes / c.bytes if c.bytes else 0.0
        holds_bf16 = capacity(ctx, ref.weights_bytes, None)
        holds_q = capacity(ctx, ref.weights_bytes, qkv)
        numbers.update(reference=ref.id, kv_share_of_step_bytes=round(share, 4), max_concurrency_bf16=holds_bf16,
                       max_concurrency_quantized=holds_q)
        want, short = [], []
        issue = next((i for i in ctx.kv_issues if i.applies(ctx.engine, a.model_type, qname)), None)
        capacity_only = issue is not None and issue.effect == "capacity-only"
        if issue is not None:
            numbers["kv_issue"] = issue.id
        if share >= threshold and capacity_only:
            assert issue is not None
            reasons.append(f"KV is {share:.0%} of step bytes next to {ref.id} (>= {threshold:.0%}), but the byte share "
                           f"alone does not take {qname} on {ctx.engine.label} for {a.model_type}: "
                           f"{issue.message} ({', '.join(issue.issues)})")
        elif share >= threshold:
            want.append(f"KV is {share:.0%} of the bytes a step moves at batch {w.batch} x "
                        f"{plural(w.decode_context, 'token')} "
                        f"next to {ref.id}, the deployable candidate with the fewest weight bytes (>= {threshold:.0%})")
            short.append(f"KV is {share:.0%} of step bytes")
        if holds_bf16 < w.batch:
            want.append(f"a bf16 KV cache holds {holds_bf16} of the {w.batch} sequences next to {ref.id}; {qname} holds "
                        f"{min(holds_q, w.batch) if holds_q < 10**8 else w.batch}")
            short.append(f"a bf16 KV cache holds {holds_bf16} of {w.batch} sequences")
        # the candidate that would be recommended with a bf16 cache: when memory caps it there, a quantized cache
        # is taken for every candidate, so the answer never holds part of the batch with bf16 where the quantized
        # cache holds more (the lightest candidate holding the batch says nothing about a heavier winner)
        lead = None
        if not want and any(capacity(ctx, o.weights_bytes, None) < w.batch for o in live if o.model is not None):
            lead = _first_with(ctx, live)
        if lead is not None:
            lead_q = capacity(ctx, lead.weights_bytes, qkv)
            numbers.update(first_with_bf16=lead.id, first_with_bf16_concurrency=lead.concurrency,
                           first_with_bf16_limit=lead.limit, first_with_bf16_max_concurrency_quantized=lead_q)
            if lead.limit == "memory" and min(lead_q, w.batch) > lead.concurrency:
                want.append(f"{lead.id}, the candidate that ranks first with a bf16 KV cache, holds {lead.concurrency} "
                            f"of the {w.batch} sequences with it (memory binds); {qname} holds "
                            f"{min(lead_q, w.batch) if lead_q < 10**8 else w.batch}")
                short.append(f"a bf16 KV cache holds {lead.concurrency} of {w.batch} sequences next to {lead.id}, "
                             "which ranks first with it")
            else:  # a faster candidate the bf16 cache leaves short of the batch: it ranks first with the quantized one
                ahead = _first_with(ctx, live, qname)
                ahead_bf16 = capacity(ctx, ahead.weights_bytes, None) if ahead is not None else w.batch
                if ahead is not None and ahead.id != lead.id and ahead_bf16 < w.batch and beats(ahead, lead):
                    numbers.update(first_with_quantized=ahead.id,
                                   first_with_quantized_tokens_per_s=round(ahead.throughput, 1),
                                   first_with_bf16_tokens_per_s=round(lead.throughput, 1))
                    held = "all" if ahead.concurrency >= w.batch else f"{ahead.concurrency} of the"
                    want.append(f"{ahead.id} ranks first with {qname} ({ahead.throughput:,.0f} tokens/s, {held} "
                                f"{w.batch} sequences) and holds only {ahead_bf16} of "
                                f"them with a bf16 cache, where {lead.id}, first with it, delivers "
                                f"{lead.throughput:,.0f} (beyond their uncertainty)")
                    short.append(f"{ahead.id} holds the batch only with {qname} and outruns {lead.id}")
        refused: list[str] = []
        if want:
            v = engine_verdict(ctx, ctx.engine, None, qname)
            if not v.supported:
                refused.append(f"{ctx.engine.label} refuses it for this model on {ctx.gpu.name}: " + "; ".join(v.messages))
            refused += _kv_accuracy(ctx, qkv)
        reasons += want + [f"but {r}" for r in refused]
        if want and not refused:
            ctx.kv_name = qname
            decision = f"{qname} for every candidate: " + ", and ".join(short)
            if issue is not None:
                reasons.append(("with a caution: " if capacity_only else "") + f"{issue.message} "
                               f"({', '.join(issue.issues)})")
                if capacity_only:
                    for o in live:
                        o.cautions.append(f"{qname} on {ctx.engine.label} for {a.model_type}: known accuracy issues "
                                          f"({', '.join(issue.issues)}); measure it on your task")
        elif want:
            ctx.kv_name = BF16_KV
            decision = f"{qname} would help but is not allowed here: keep a bf16 KV cache"
        else:
            ctx.kv_name = BF16_KV
            fitting = ("any number of sequences fit" if holds_bf16 >= 10**8 else
                       f"{plural(holds_bf16, 'sequence')} {'fits' if holds_bf16 == 1 else 'fit'}")
            decision = (f"keep a bf16 KV cache: KV is {share:.1%} of step bytes next to {ref.id} (< {threshold:.0%}) and "
                        f"{fitting} (>= batch {w.batch})")
            if capacity_only and share >= threshold:
                decision = (f"keep a bf16 KV cache: {ctx.engine.label}'s known {qname} issue on {a.model_type} leaves the "
                            f"byte share ({share:.0%}) aside, and {fitting} (>= batch {w.batch})")
            if lead is not None:
                decision += (f"; {lead.id}, which ranks first with it, holds "
                             + (f"all {w.batch}" if lead.concurrency >= w.batch else
                                f"{lead.concurrency} of {w.batch} ({lead.limit} binds, not memory)"))
    numbers["kv_dtype"] = ctx.kv_name
    kvt = ctx.kv_options[ctx.kv_name].kv
    for o in live:
        o.kv_name = ctx.kv_name
        o.max_concurrency = capacity(ctx, o.weights_bytes, kvt)
        o.concurrency = min(w.batch, o.max_concurrency)
    return TraceNode(node="kv", decision=decision, numbers=numbers, reasons=reasons)
