"""The decision tree: from a workload to a scheme, every branch shown in numbers.

Nodes, in order, each a small pure function returning its decision and the numbers behind it:

a. native    — what the checkpoint ships; serving it as shipped is a zero-cost candidate, preferred
               on ties (``native.py``).
b. fit       — weights + the KV cache the workload needs + runtime reserve against the GPUs' memory;
               each candidate's capacity (``fit.py``). Size only decides whether you must quantize.
c. engine    — the method must exist in the chosen engine release and accept the GPU (``veto.py``).
d. accuracy  — published evidence as a filter: it can remove candidates, never pick one.
e. kv        — one KV cache dtype for the deployable candidates, consistent with the one that ranks
               first: never a bf16 cache holding part of the batch where the quantized one holds more
               (``fit.py``).
f. roofline  — each deployable candidate priced at the concurrency it holds with that KV cache,
               ranked on what it delivers, ties broken by evidence; a re-quantization with an accuracy
               risk ranks after the shipped checkpoint (``speed.py``, ``options.rank``).

Filters run before any speed figure, so every number in the trace is about a deployable candidate.
Pure: takes resolved values (the engine releases included, no names, no files, no callbacks) and
returns a typed :class:`~quantadvise.advisor.result.Recommendation`.
"""

from __future__ import annotations

from .. import defaults
from ..errors import InputError, NoSchemeError
from ..memory.kvcache import held_sequence_bytes, kv_copies, sequence_bytes
from ..perf.serving import SpecInfo, usd_per_mtok
from ..scheme.axes import SchemeAxes, TensorAxes
from ..wording import every, more_or_fewer, plural
from .fit import engine_memory, gpus_needed, node_fit, node_kv
from .native import node_native
from .options import Context, Option, clearly_slower, family, ranked_after_native, tie_reason, ties
from .plan import deploy_plan
from .published import attach, prefer_published
from .result import (
    RANKED,
    Alternative,
    BenchPlan,
    KvChoice,
    Performance,
    Recommendation,
    SchemeChoice,
    ServedWorkload,
    Target,
    Tie,
    TraceNode,
    Uncertainty,
)
from .speed import curve_basis, frontier, kernel_line, model_note, node_roofline, price, uncertainty_of
from .veto import node_accuracy, node_engine

_STATUS_ORDER = {"recommended": 0, "runner-up": 1, "ranked-after": 2, "slower": 2, "misses-slo": 3, "vetoed": 4, "not-supported": 5,
                 "does-not-fit": 6, "cannot-run": 7, "candidate": 8}


def check_context(ctx: Context) -> None:
    """Refuse a context the chosen engine refuses for this model (exit 2), with its own message, the
    limit and what would work instead."""
    w = ctx.workload
    limit = ctx.limits.get(ctx.engine.engine)
    if limit is None or limit.tokens is None or w.context <= limit.tokens:
        return
    hint = f"lower --ctx to {limit.tokens:,} or less"
    raise InputError(
        f"{ctx.model_id or w.model} serves at most {limit.tokens:,} tokens per sequence in {ctx.engine.label} "
        f"({limit.key}{f' x rope factor {limit.rope_factor:g}' if limit.rope_factor else ''}); --ctx {w.context:,} "
        f"would be refused at startup: {limit.refusal(w.context)}",
        hint=hint, field="ctx")


def recommend(ctx: Context, options: list[Option], assumptions: list[str]) -> Recommendation:
    """Walk the tree over ``options`` and assemble the recommendation (raises InputError, naming the
    node that emptied the list, when no candidate survives)."""
    w = ctx.workload
    check_context(ctx)
    trace = [node_native(ctx, options), node_fit(ctx, options)]
    live = [o for o in options if o.status == "candidate"]
    trace.append(node_engine(ctx, live))
    live = [o for o in live if o.status == "candidate"]
    if ctx.published:
        attach(ctx, live)  # which published checkpoint carries each candidate: evidence for d and f
    trace.append(node_accuracy(ctx, live))
    live = [o for o in live if o.status == "candidate"]
    trace.append(node_kv(ctx, live))
    roof, ranked = node_roofline(ctx, live)
    trace.append(roof)
    if not ranked:
        raise_no_winner(trace, options, ctx)
    ranked, lead = prefer_published(ranked)
    winner = ranked[0]
    searched = (ctx.slo is not None and ctx.slo.active) or ctx.batch_bound
    _mark_ranks(ranked, w.batch, searched)
    if lead is not None:
        winner.reason = (f"ties with {lead.id} within the speed model's uncertainty and a published checkpoint "
                         f"carries it ({winner.published.id if winner.published else ''}): " + winner.reason)
    base = _baseline(ctx, options)
    price_h = ctx.usd_per_gpu_hour

    def vs_bf16(o: Option) -> float | None:
        return o.throughput / base.throughput if base is not None and o.priced else None

    def cost(o: Option) -> float | None:
        return usd_per_mtok(price_h, w.gpus, o.throughput)

    order = {id(o): i for i, o in enumerate(ranked)}
    alternatives = []
    for o in sorted(options, key=lambda o: (_STATUS_ORDER.get(o.status, 9), order.get(id(o), 0), -o.throughput)):
        live_row = id(o) in order
        alternatives.append(Alternative(
            scheme=o.id, description=o.scheme.description, status=o.status, reason=o.reason, native=o.native,
            step_time_s=o.step_s if live_row else None,
            tokens_per_s=o.throughput if live_row else None,
            tokens_per_s_per_gpu=o.throughput / w.gpus if live_row else None,
            decode_tokens_per_s=o.decode_tps if live_row else None,
            prefill_share=o.prefill_share if live_row else None,
            itl_s=o.itl_s if live_row else None,
            ttft_s=o.ttft_s if live_row else None,
            e2e_s=o.e2e_s if live_row else None,
            usd_per_mtok=cost(o) if live_row else None,
            limit=o.limit if live_row else None,
            speedup_vs_bf16=vs_bf16(o) if live_row else None,
            weights_bytes=o.weights_bytes or None,
            fits=(o.concurrency >= w.batch) if live_row else None,
            concurrency=o.concurrency if live_row else None,
            max_concurrency=o.max_concurrency if live_row else None,
            kv_dtype=o.kv_name if live_row else None,
            expected_drop_pct=o.expected_drop if o.status in (*RANKED, "vetoed") else None,
            serving_bound=o.loop.bound if live_row and o.loop is not None else None,
            cautions=o.cautions,
            uncertainty=_uncertainty(o, cost(o)) if live_row else None,
            at_load=o.at_load if live_row else None,
        ))
    engine_args, checkpoint = deploy_plan(ctx, winner)
    kv_opt = ctx.kv_options[ctx.kv_name]
    kv_t = kv_opt.kv
    final = winner.scheme.with_kv(kv_t) if kv_t is not None else winner.scheme
    fp16 = ctx.engine.engine in ctx.fp16  # no bfloat16 on this GPU: the engine runs 16-bit tensors in fp16
    sixteen = "16-bit (fp16 on this GPU)" if fp16 else "bf16"
    axes = _fp16_axes(final.axes()) if fp16 else final.axes()
    description = winner.scheme.description + (
        f"; run in fp16 ({ctx.gpu.name} has no bf16)" if fp16 and axes != final.axes() else "")
    warnings = list(winner.cautions)
    need = gpus_needed(ctx, winner, kv_t) if winner.concurrency < w.batch else w.gpus
    mem = engine_memory(ctx, w.gpus)
    tokens = w.kv_tokens_per_sequence
    if winner.concurrency < w.batch and not searched:
        warnings.append(
            f"{winner.id} with {ctx.kv_name} holds {winner.concurrency} of the {w.batch} sequences ({tokens:,} tokens each) "
            f"on {w.gpus} x {ctx.gpu.name}; the rest queue. Serving all {w.batch} at once needs "
            + (f"{need} GPUs (--gpus {need})" if need else
               f"more replicas (data parallel): every GPU added to tensor parallelism holds another copy of each "
               f"sequence's KV cache ({kv_copies(ctx.arch, 2):g} copies on 2 GPUs), so no tensor-parallel degree "
               f"up to {defaults.MAX_GPUS_SEARCH} holds them" if kv_copies(ctx.arch, 2) >= 2 else
               f"more than {defaults.MAX_GPUS_SEARCH} GPUs"))
    perf = Performance(
        step_time_s=winner.step_s,
        tokens_per_s=winner.throughput,
        decode_tokens_per_s=winner.decode_tps,
        prefill_share=winner.prefill_share,
        includes=_includes(w.serving_mode, winner.prefill_share is not None),
        concurrency=winner.concurrency,
        kv_dtype=ctx.kv_name,
        ttft_s=winner.ttft_s,
        speedup_vs_bf16=vs_bf16(winner),
        tokens_per_s_per_gpu=winner.throughput / w.gpus,
        itl_s=winner.itl_s if winner.itl_s is not None else winner.step_s,
        e2e_s=winner.e2e_s if winner.e2e_s is not None else 0.0,
        decode_share=1.0 - winner.prefill_share if winner.prefill_share is not None else None,
        limit=winner.limit,
        bound=winner.bound,
        tokens_per_step=winner.tokens_per_step,
        usd_per_mtok=cost(winner),
        baseline=(f"{sixteen} weights with the same {ctx.kv_name} cache at the {base.concurrency} sequences it holds"
                  if base is not None else f"none: {sixteen} weights cannot serve this workload here"),
        vs_runner_up=(winner.throughput / ranked[1].throughput) if len(ranked) > 1 else None,
        runner_up=ranked[1].id if len(ranked) > 1 else None,
        profile=winner.efficiency.profile_id,
        model_note=model_note({o.id: o.efficiency for o in ranked}),
        speed_model=curve_basis(winner.efficiency),
        kernel=kernel_line(winner.efficiency, winner.model_kv if ctx.kv_name != "kv-bf16" else winner.model),
        gpus_for_batch=need,
        uncertainty=_uncertainty(winner, cost(winner)),
        tie=_tie(ctx, ranked),
        serving_loop=winner.loop,
    )
    per_seq = sequence_bytes(ctx.arch, kv_t, tokens)
    hints = kv_opt.hints
    kv = KvChoice(
        dtype=ctx.kv_name,
        max_concurrency=winner.max_concurrency,
        fits_requested_concurrency=winner.max_concurrency >= w.batch,
        description=kv_t.describe("kv_cache") if kv_t is not None else (
            "fp16 (the model dtype as the engine runs it on this GPU)" if fp16 else "bf16 (model dtype)"),
        tokens_per_sequence=tokens,
        bytes_per_sequence=round(per_seq),
        bytes_total=round(held_sequence_bytes(ctx.arch, kv_t, tokens, w.gpus) * winner.concurrency),
        vllm_kv_cache_dtype=hints.vllm_kv_cache_dtype,
        sglang_kv_cache_dtype=hints.sglang_kv_cache_dtype,
        alternatives=list(hints.alternatives),
    )
    return Recommendation(
        workload=ServedWorkload.of(w, model_id=ctx.model_id or None, engine_version=ctx.engine.version,
                                   memory_utilization=mem.fraction, reserve_gb=mem.reserve_gb),
        assumptions=assumptions,
        scheme=SchemeChoice(id=winner.id, description=description, family=family(winner.scheme),
                            axes=axes, native=winner.native),
        kv=kv,
        trace=trace,
        alternatives=alternatives,
        engine_args=engine_args,
        checkpoint=checkpoint,
        performance=perf,
        target=_target(ctx),
        speculation=SpecInfo.of(ctx.spec) if ctx.spec is not None else None,
        frontier=frontier(ctx, ranked) if ctx.frontier else [],
        bench_plan=_bench_plan(ctx, ranked),
        warnings=warnings,
    )


def _bench_plan(ctx: Context, ranked: list[Option]) -> BenchPlan | None:
    """The benchmark commands (--bench-plan only: imported then)."""
    if ctx.bench_options is None:
        return None
    from .bench_plan import bench_plan

    return bench_plan(ctx, ranked, ctx.bench_options)


def _uncertainty(o: Option, cost: float | None) -> Uncertainty | None:
    return uncertainty_of(o.step_s, o.throughput, o.itl_s, o.ttft_s, o.e2e_s, cost, o.basis, o.u_step, o.u_ttft,
                          o.u_rate, o.loop)


def _tie(ctx: Context, ranked: list[Option]) -> Tie | None:
    """The candidates whose intervals overlap the winner's, with the evidence that put the winner first and
    the benchmark commands (the engine's own client, at this workload) that would settle the closest one."""
    from .plan import bench_command

    winner = ranked[0]
    tied = [o for o in ranked[1:] if ties(o, winner)]
    if not tied:
        return None
    cmds = {o.id: c for o in (winner, tied[0]) if (c := bench_command(ctx, o)) is not None}
    return Tie(schemes=[winner.id, *(o.id for o in tied)], evidence=tie_reason(winner, tied[0]), commands=cmds)


def _fp16_axes(axes: SchemeAxes) -> SchemeAxes:
    """``axes`` as the engine runs them on a GPU without bfloat16: every 16-bit bf16 tensor, and a bf16
    math datapath, in fp16 (engines.config_checks.dtype_fallback)."""
    def half(ax: TensorAxes | None) -> TensorAxes | None:
        return ax.model_copy(update={"dtype": "fp16"}) if ax is not None and ax.dtype == "bf16" else ax

    return axes.model_copy(update={"weights": half(axes.weights), "activations": half(axes.activations),
                                   "kv_cache": half(axes.kv_cache),
                                   "math": "fp16" if axes.math == "bf16" else axes.math})


def _includes(mode: str, prefill: bool) -> str:
    """What ``Performance.tokens_per_s`` counts, in words (perf.serving.serve)."""
    if not prefill:
        return "decode steps only (no prompt to prefill)"
    if mode == "continuous":
        return "output tokens per second, each prompt's prefill included (continuous batching)"
    return ("output tokens per second, the batch's prefill included: batch x output tokens / E2E "
            "(synchronous serving)")


def _target(ctx: Context) -> Target | None:
    """The latency budgets and the concurrency bound, when the workload set a serving target."""
    slo = ctx.slo if ctx.slo is not None and ctx.slo.active else None
    if slo is None and not ctx.batch_bound:
        return None
    return Target(ttft_s=slo.ttft_s if slo else None, itl_s=slo.itl_s if slo else None,
                  e2e_s=slo.e2e_s if slo else None, max_concurrency=ctx.workload.batch,
                  batch_is_bound=ctx.batch_bound)


def _baseline(ctx: Context, options: list[Option]) -> Option | None:
    """bf16 weights with the workload's KV cache, priced at the concurrency they hold — None when
    bf16 cannot serve here (it does not fit, or the engine refuses it)."""
    base = next((o for o in options if o.family == "bf16" and not o.native), None)
    if base is None or base.status not in (*RANKED, "vetoed", "candidate"):
        return None
    if not base.priced:  # vetoed or filtered before pricing: price it for the comparison alone
        kvt = ctx.kv_options[ctx.kv_name].kv
        from .fit import capacity

        base.kv_name = ctx.kv_name
        base.max_concurrency = capacity(ctx, base.weights_bytes, kvt)
        base.concurrency = min(ctx.workload.batch, base.max_concurrency)
        if price(ctx, base) is not None:  # bf16 misses the latency budgets: no baseline
            return None
    return base if base.priced else None


def _mark_ranks(ranked: list[Option], batch: int, searched: bool = False) -> None:
    """The winner, the runner-up and the other survivors, each with how it compares to the winner
    (``searched``: each runs at a concurrency a latency budget or a search chose, named as such). A row
    whose tokens/s interval overlaps the winner's (:func:`~.options.ties`), or that is faster, placed after
    it by evidence, is ``ranked-after``; only a row slower beyond the model's uncertainty is ``slower``."""
    winner = ranked[0]
    native = next((o for o in ranked if o.native), None)
    margin = defaults.NATIVE_MARGIN

    def held_of(o: Option) -> str:
        return (f" at concurrency {o.concurrency:,}" if searched else
                f" holding {o.concurrency} of {batch}" if o.concurrency < batch else "")

    def beats_native(o: Option) -> bool:
        """``o`` out-delivers the shipped checkpoint beyond the uncertainty and ranks after it."""
        return (native is not None and o is not native and ranked.index(o) > ranked.index(native)
                and o.throughput > native.throughput and not ties(o, native))

    def behind(o: Option) -> str:
        held = held_of(o)
        if native is not None and beats_native(o) and ranked_after_native(o, ranked):
            lo, hi = o.expected_drop
            more = (o.throughput / winner.throughput - 1) if winner.throughput else 0.0
            if ties(o, winner):
                speed = f"as fast as {winner.id} within the model's uncertainty{held}, but"
            elif more > 0:
                speed = f"{more:.1%} more output tokens/s{held}, but"
            else:
                speed = f"{more_or_fewer(o.throughput, winner.throughput)} output tokens/s than {winner.id}{held}, and"
            return (f"{speed} it re-quantizes the shipped checkpoint with a published drop of {lo:g}-{hi:g} points "
                    f"reaching the tolerance: ranks after {native.id}")
        if native is not None and beats_native(o):
            lead = (f"{o.throughput / native.throughput - 1:.1%} more output tokens/s{held}" if native is winner else
                    f"{more_or_fewer(o.throughput, winner.throughput)} output tokens/s than {winner.id}{held}; "
                    f"{o.throughput / native.throughput - 1:.1%} more than {native.id}")
            risk = (f"; its published drop of {o.expected_drop[0]:g}-{o.expected_drop[1]:g} points also reaches the "
                    "tolerance" if o.behind_native else "")
            return (f"{lead}, within the {margin:.0%} a re-quantization must beat the shipped checkpoint by (the speed "
                    f"model's validated error): ranks after {native.id}{risk}")
        if ties(o, winner) or ties(o, winner, credit=False):
            diff = o.throughput / winner.throughput - 1 if winner.throughput else 0.0
            gap = (f"{diff:+.1%}, " if abs(diff) >= 0.0005 else "")
            band = (f"±{o.u_rate:.0%} against ±{winner.u_rate:.0%}" if o.u_rate is not None and winner.u_rate is not None
                    and abs(diff) > defaults.TIE else f"within {defaults.TIE:.1%}")
            return (f"tie within the model's uncertainty with {winner.id} ({gap}{band}); {winner.id} comes first: "
                    f"{tie_reason(winner, o)}" + after(o))
        shared = ("" if o.throughput >= winner.throughput or clearly_slower(o, winner) else
                  " (beyond the uncertainty of their own kernels; the intervals overlap through the parts both are "
                  "priced alike for, which move them together)")
        return f"{more_or_fewer(o.throughput, winner.throughput)} output tokens/s than {winner.id}{held}{shared}" + after(o)

    def after(o: Option) -> str:
        """Why ``o`` ranks after a candidate it out-delivers (a tie there: evidence decides)."""
        above = ranked[1:ranked.index(o)]
        p = next((x for x in above if x.throughput < o.throughput), None)
        if p is None:
            return ""
        diff = o.throughput / p.throughput - 1
        than = f"{diff:.1%} more than {p.id} (a tie within the model's uncertainty)" if diff >= 0.0005 \
            else f"as fast as {p.id}"
        return f"; {than}, which comes first: {tie_reason(p, o)}"

    winner.status = "recommended"
    if len(ranked) > 1:
        ranked[1].status = "runner-up"
        ranked[1].reason = behind(ranked[1])
    for o in ranked[2:]:
        # as fast as the winner within the uncertainty, or faster, but ranked after it by evidence (a tie, the
        # shipped checkpoint's margin, an accuracy risk the winner does not carry): not "slower"
        o.status = "slower" if clearly_slower(o, winner) else "ranked-after"
        o.reason = behind(o)
    held = (f"runs {plural(winner.concurrency, 'sequence')} at once" if searched
            else f"holds {every(batch, 'sequence')}" if winner.concurrency >= batch
            else f"holds {winner.concurrency} of {batch} sequences")
    faster = [o for o in ranked[1:] if o.throughput > winner.throughput and not ties(o, winner)]
    if faster and winner.native:
        winner.reason = (f"the checkpoint as shipped ({held}): no re-quantization beats it by more than the "
                         f"{margin:.0%} margin without an accuracy risk ({', '.join(o.id for o in faster)} "
                         f"{'is' if len(faster) == 1 else 'are'} predicted faster)")
    elif faster:
        winner.reason = (f"the most output tokens/s of the candidates without an accuracy risk at this tolerance; "
                         f"{held} ({', '.join(o.id for o in faster)} {'is' if len(faster) == 1 else 'are'} faster but rank"
                         f"{'s' if len(faster) == 1 else ''} after the shipped checkpoint)")
    else:
        quicker = [o for o in ranked[1:] if o.throughput > winner.throughput and ties(o, winner)]
        lead = (f"ties within the model's uncertainty with {', '.join(o.id for o in quicker)} (more output tokens/s "
                f"in the central estimate) and comes first by evidence: {tie_reason(winner, quicker[0])}; "
                if quicker else "the most output tokens/s of the candidates that load in the engine and pass the "
                "accuracy filter; ")
        winner.reason = ("the checkpoint as shipped: " if winner.native else "") + lead + held


class NoWinnerError(NoSchemeError):
    """No candidate survives the tree; ``budgets``: the latency budgets every candidate that fits misses
    even at one sequence, as the flags that set them (``--ttft-ms 50``), so the caller can name them."""

    def __init__(self, message: str, *, hint: str | None = None, vetoed: bool = False,
                 budgets: tuple[str, ...] = ()):
        super().__init__(message, hint=hint, vetoed=vetoed)
        self.budgets = budgets


_BUDGET_FLAGS = (("ttft", "--ttft-ms", "ttft_s"), ("itl", "--itl-ms", "itl_s"), ("e2e", "--e2e-ms", "e2e_s"))


def raise_no_winner(trace: list[TraceNode], options: list[Option] | None = None, ctx: Context | None = None) -> None:
    """Nothing survived: say what removed each candidate and, when latency budgets did, which ones (the
    API adds the GPU count that works)."""
    why = {"does-not-fit": "do not fit", "misses-slo": "miss the latency budgets even at one sequence",
           "vetoed": "vetoed by the accuracy filter", "not-supported": "refused by the engine",
           "cannot-run": "cannot run on this GPU"}
    parts = []
    for status, words in why.items():
        ids = [o.id for o in options or [] if o.status == status]
        if ids:
            parts.append(f"{len(ids)} {words} ({', '.join(ids[:4])}{' ...' if len(ids) > 4 else ''})")
    detail = "; ".join(parts) or next((t.decision for t in reversed(trace)), "")
    missed = {o.limit for o in options or [] if o.status == "misses-slo"}
    slo = ctx.slo if ctx is not None else None
    budgets = tuple(f"{flag} {getattr(slo, attr) * 1e3:g}" if slo is not None and getattr(slo, attr) is not None
                    else flag for name, flag, attr in _BUDGET_FLAGS if name in missed)
    vetoed = any(o.status == "vetoed" for o in options or [])
    raise NoWinnerError(f"no scheme can serve this workload: {detail}",
                        hint=(f"relax {' / '.join(budgets)} (the budget every candidate misses even at one sequence), "
                              "add GPUs (tensor parallel shortens each step) or shorten --prompt / --output")
                        if budgets else
                        f"add GPUs{', relax --accuracy-tolerance' if vetoed else ''} or lower --batch / --ctx",
                        vetoed=vetoed, budgets=budgets)
