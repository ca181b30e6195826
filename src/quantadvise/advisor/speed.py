"""The speed node of the tree, (f) roofline, and the pricing of one scheme at a workload.

Runs last, on the deployable candidates only (engine and accuracy filters and the KV decision come
first), so every figure it prints is about a candidate that can be served. Each candidate is priced
with its step model (the roofline with its efficiency profile) and the workload's KV cache dtype at
the concurrency it holds — ``min(batch, max_concurrency)`` — and ranked on what it delivers there
(:func:`~quantadvise.advisor.options.rank`). Its ridge batch and the crossover of the best
weight-only 4-bit and the best W+A candidate name the regime: memory-bound -> weight-only 4-bit,
compute-bound -> W+A (FP8 where the GPU has fp8 tensor cores, INT8 where it does not), in between
the predicted time decides.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .. import defaults
from ..hardware import GPU
from ..model.arch import ModelArch
from ..perf.datapath import datapath
from ..perf.efficiency import Efficiency
from ..perf.loop import EngineLoop, LoopSummary, prefill_s
from ..perf.serving import Lengths, ParetoPoint, ServePoint, largest_meeting, mark_frontier, pareto_point, serve
from ..perf.solve import iter_crossings
from ..perf.step import StepModel
from ..scheme.axes import Scheme, TensorQuant
from ..wording import MOVED, every, ms, plural
from ..workload import Workload
from .options import BF16_KV, Context, Option, family, family_kind, rank, ranked_after_native, ties
from .result import Prediction, TraceNode, Uncertainty

if TYPE_CHECKING:
    from ..perf.queueing import AtLoad

CALIBRATED_NOTE = "prediction from the measured curves of a calibrated profile (fitted to its shapes)"
ROOFLINE_NOTE = "roofline prediction with the efficiency profile, not a measurement"
MEASURED_NOTE = ("prediction from the measured table of the kernel each linear layer runs (published per-kernel "
                 "tables; held-out error in docs/calibration.md), not a measurement of this deployment")


def model_note(efficiency: Efficiency | dict[str, Efficiency]) -> str:
    """What a predicted speed rests on, in words: one scheme's efficiency, or the ranked candidates'
    (scheme id -> efficiency) — under the measured-kernels model each kernel curve's basis is named
    (measured, composed from another kernel's curve, a proxy's, or none: the roofline), so the note
    never calls a composed or proxy curve measured (:func:`curve_basis`)."""
    effs = efficiency if isinstance(efficiency, dict) else {"": efficiency}
    models = {e.model for e in effs.values()}
    if models == {"calibrated"}:
        return CALIBRATED_NOTE
    if "measured-kernels" not in models:
        return ROOFLINE_NOTE
    moved = next((f"; the tables were timed on {w} and {MOVED}" for e in effs.values()
                  if e.kernels is not None and (w := e.kernels.moved_from)), "")
    if {curve_basis(e) for e in effs.values()} == {"measured"}:
        return MEASURED_NOTE + moved
    return ("prediction from kernel cost curves, not a measurement of this deployment: " + provenance(effs, _BASIS_WORDS)
            + moved)




def provenance(effs: dict[str, Efficiency], words: dict[str, str] | None = None) -> str:
    """``"measured curve for fp8-dynamic, bf16; composed curve for w4a8-fp8, ...; proxy curve for ..."``:
    the schemes grouped by what prices their linear layers (:func:`curve_basis`), in ``effs``' order."""
    names = words or _BASIS_SHORT
    by: dict[str, list[str]] = {}
    for sid, e in effs.items():
        by.setdefault(curve_basis(e), []).append(sid)
    return "; ".join(names.get(b, b) + (f" for {', '.join(ids)}" if any(ids) else "")
                     for b in (*_BASIS_ORDER, *sorted(set(by) - set(_BASIS_ORDER))) if (ids := by.get(b)))


_BASIS_ORDER = ("measured", "same-math", "composed", "proxy", "roofline", "calibrated", "ideal")
_BASIS_WORDS = {
    "measured": "measured table of the kernel it runs (published per-kernel tables read by lookup, held-out error "
                "in docs/calibration.md)",
    "same-math": "same-math table (no table of its kernel: another library's measured table of the same math on "
                 "this GPU)",
    "composed": "composed (no measurement of its kernel: another kernel's measured table or curve, composed)",
    "proxy": "proxy curve (no measurement of its kernel: a similar kernel's measured curve)",
    "roofline": "roofline with the efficiency profile (no kernel curve on file)",
    "calibrated": "calibrated curve (a measured profile)",
    "ideal": "spec-sheet roofline",
}


_BASIS_SHORT = {"measured": "measured table of its kernel", "same-math": "same-math table (another library's measurement)",
                "composed": "composed (another kernel's measurement)",
                "proxy": "proxy curve (a similar kernel's measurement)", "roofline": "roofline (no kernel curve on file)",
                "calibrated": "calibrated curve", "ideal": "spec sheet"}


def curve_basis(efficiency: Efficiency) -> str:
    """What prices a scheme's quantized linear layers: ``measured`` / ``composed`` / ``proxy`` (the
    basis of the kernel curve on file, as ``kernel_line`` names it), ``roofline`` (no kernel curve),
    ``calibrated`` or ``ideal``."""
    if efficiency.model in ("calibrated", "ideal"):
        return efficiency.model
    k = efficiency.kernels
    if efficiency.model != "measured-kernels" or k is None:
        return "roofline"
    return k.basis


def kernel_line(efficiency: Efficiency, model: StepModel | None = None) -> str | None:
    """``"w4a16 via MacheteLinearKernel, vLLM 0.33.0, sm90; ..."``: the kernel that prices a scheme, and with
    ``model`` (a MoE model's step) the fused-MoE curve that prices its routed experts."""
    if efficiency.kernels is None:
        return None
    experts = model.experts_label() if model is not None else None
    return efficiency.kernels.label() + (f"; {experts}" if experts else "")


def lengths_of(w: Workload) -> Lengths:
    """The workload's request lengths as a serving point reads them."""
    return Lengths(prompt=w.prompt_tokens, output=w.output_tokens, decode_ctx=w.decode_context, mode=w.serving_mode)


def priced_model(ctx: Context, o: Option) -> StepModel | None:
    """The step model of ``o`` with the workload's KV cache dtype."""
    return o.model if ctx.kv_name == BF16_KV else o.model_kv


def _apply(o: Option, p: ServePoint, sm: StepModel | None = None, w: Workload | None = None) -> None:
    o.concurrency = p.concurrency
    o.step_s, o.itl_s, o.ttft_s, o.e2e_s = p.step_s, p.itl_s, p.ttft_s, p.e2e_s
    o.throughput, o.decode_tps, o.prefill_share = p.tokens_per_s, p.decode_tokens_per_s, p.prefill_share
    o.bound, o.tokens_per_step = p.bound, p.tokens_per_step
    o.loop = p.loop
    o.basis = curve_basis(o.efficiency)
    k = o.efficiency.kernels
    o.source = (k.source_key or "roofline").split("/")[0] if k is not None else "roofline"
    if sm is not None and w is not None:
        o.u_step, o.u_ttft, o.u_rate = bands(sm, o.efficiency, w, p.concurrency, p.prefill_share)
        o.u_own, o.u_own_measured = own_bands(sm, o.efficiency, w, p.concurrency, p.prefill_share)


def bands(sm: StepModel, eff: Efficiency, w: Workload, concurrency: int, prefill_share: float | None
          ) -> tuple[float | None, float | None, float | None]:
    """(decode step, prefill, delivered tokens/s) relative half-widths at ``concurrency``: each part of the
    step carries the held-out band of what priced it (perf.uncertainty.step_bands); tokens/s mixes the decode
    and the prefill bands by their shares of GPU time. None without bands (the spec sheet)."""
    from ..perf.uncertainty import step_bands

    if eff.bands is None:
        return None, None, None
    return step_bands(sm, eff.bands, concurrency, w.decode_context, w.prompt_tokens, prefill_share)


def own_bands(sm: StepModel, eff: Efficiency, w: Workload, concurrency: int, prefill_share: float | None
              ) -> tuple[float | None, float | None]:
    """The tokens/s half-width from the scheme's own layers alone (what tells two schemes apart:
    perf.uncertainty.own_relative), and the same with the own layers at the measured band (two schemes
    whose own layers come from one library's tables err alike)."""
    from ..perf.uncertainty import mix, own_relative

    if eff.bands is None:
        return None, None
    dec = sm.parts(max(concurrency, 1), w.decode_context)
    pre = sm.parts(1, prompt=w.prompt_tokens) if w.prompt_tokens else None
    out = []
    for as_basis in (None, "measured"):
        u_d = own_relative(dec, eff.bands, as_basis)
        u_p = own_relative(pre, eff.bands, as_basis) if pre is not None else None
        out.append(mix(u_d, u_p, prefill_share))
    return out[0], out[1]


def price(ctx: Context, o: Option) -> str | None:
    """Price ``o`` with the chosen KV cache at the concurrency it holds — with latency budgets, at the
    largest concurrency up to that which meets them (:func:`~quantadvise.perf.serving.largest_meeting`).
    Returns why it cannot meet the budgets (even at one sequence), else None."""
    sm = priced_model(ctx, o)
    if sm is None or o.concurrency < 1:
        return None
    w = ctx.workload
    lengths = lengths_of(w)
    held = "memory" if o.concurrency < w.batch else "batch"

    def at(c: int) -> ServePoint:
        return serve(sm, lengths, c, ctx.spec, ctx.loop)

    if ctx.slo is None or not ctx.slo.active:
        top = at(o.concurrency)
        _apply(o, top, sm, w)
        o.limit = held
        o.at_load = load_point(ctx, at, top, mode=w.serving_mode)
        return None
    found = largest_meeting(at, o.concurrency, ctx.slo, held)
    if found.point is None:
        miss = found.first_miss
        assert miss is not None
        _apply(o, miss, sm, w)
        o.limit = found.limit
        return (f"misses {budget_label(ctx, found.limit)} even at one sequence: "
                f"{ms(budget_value(miss, found.limit))} ms")
    _apply(o, found.point, sm, w)
    o.limit = found.limit
    o.at_load = load_point(ctx, at, found.point, mode=w.serving_mode)
    return None


def load_point(ctx: Context, at: Callable[[int], ServePoint], top: ServePoint, *, mode: str, unit: int = 1
               ) -> AtLoad | None:
    """Replicas and the figures at the workload's ``--rate`` / ``--users`` for one candidate (or layout) priced by
    ``at(concurrency)`` up to ``top``, its latency budgets weighed with the wait for a slot (perf.queueing; None
    without a load). ``mode``: the serving mode; ``unit``: concurrency in whole multiples of it."""
    from ..perf.queueing import at_load

    w, slo = ctx.workload, ctx.slo if ctx.slo is not None and ctx.slo.active else None
    # synchronous batches wait for the next batch, not for a slot: their plan stays the capacity count
    return at_load(at, top, rate=w.rate if mode == "continuous" else None, users=w.users, output=w.output_tokens,
                   unit=unit, ttft_s=slo.ttft_s if slo is not None else None,
                   e2e_s=slo.e2e_s if slo is not None else None, itl_s=slo.itl_s if slo is not None else None)


def frontier(ctx: Context, ranked: list[Option]) -> list[ParetoPoint]:
    """Each ranked candidate across concurrency (doubling from 1 up to what it may run, and the point
    it runs at) on the tokens/s-per-GPU vs tokens/s-per-user plane, frontier marked; the winner's
    point is ``recommended`` (``recommend --plot``)."""
    w = ctx.workload
    lengths = lengths_of(w)
    out: list[ParetoPoint] = []
    for o in ranked:
        sm = priced_model(ctx, o)
        if sm is None:
            continue
        top = max(1, min(o.max_concurrency, max(w.batch, o.concurrency)))
        cs = sorted({*(2**i for i in range(defaults.FRONTIER_MAX_POINTS) if 2**i <= top), top, o.concurrency})
        for c in cs:
            p = serve(sm, lengths, c, ctx.spec, ctx.loop)
            pt = pareto_point(o.id, p, ctx=w.decode_context, gpus=w.gpus, fits=True, price=ctx.usd_per_gpu_hour,
                              slo=ctx.slo)
            u_step, u_ttft, u_rate = bands(sm, o.efficiency, w, c, p.prefill_share)
            band = uncertainty_of(p.step_s, p.tokens_per_s, p.itl_s, p.ttft_s, p.e2e_s, pt.usd_per_mtok, o.basis,
                                  u_step, u_ttft, u_rate, p.loop)
            out.append(pt.model_copy(update={"recommended": o is ranked[0] and c == o.concurrency,
                                             "uncertainty": band}))
    return mark_frontier(out)


def budget_label(ctx: Context, name: str) -> str:
    """``"ITL <= 30 ms"`` for a budget of the context's SLO."""
    slo = ctx.slo
    value = {"itl": slo.itl_s, "ttft": slo.ttft_s, "e2e": slo.e2e_s}.get(name) if slo is not None else None
    return f"{name.upper()} <= {value * 1e3:,.0f} ms" if value is not None else name


def budget_value(p: ServePoint, name: str) -> float:
    return {"itl": p.itl_s, "ttft": p.ttft_s or 0.0, "e2e": p.e2e_s}[name]


def limit_text(ctx: Context, o: Option) -> str:
    """What stops ``o``'s concurrency where it runs, in words."""
    w = ctx.workload
    if o.limit in ("itl", "ttft", "e2e"):
        nxt = "" if o.concurrency >= o.max_concurrency else f"; {plural(o.concurrency + 1, 'sequence')} break it"
        step = ("; the step is compute-bound there: more sequences add latency, not tokens/s"
                if o.bound == "compute" else "")
        return f"{budget_label(ctx, o.limit)} binds{nxt}{step}"
    if o.limit == "memory":
        return f"memory binds: its KV cache holds {plural(o.max_concurrency, 'sequence')}"
    if ctx.batch_bound:
        return f"the search bound of {plural(w.batch, 'sequence')} binds ({bound_flag(w)})"
    return f"the batch ({w.batch:,}) binds"


def bound_flag(w: Workload) -> str:
    """Where the upper end of a concurrency search came from, as the flag that sets it: ``--users N``
    (N users never put more than N sequences in flight) or the search's own bound, which ``--batch``
    raises."""
    if w.users is not None and w.batch >= w.users:
        return f"--users {w.users:,} caps it"
    return "--batch raises it"


@lru_cache(maxsize=256)
def _crossover(m1: StepModel, m2: StepModel, ct: float) -> float | None:
    """The batch where ``m2``'s (W+A) decode step overtakes ``m1``'s (weight-only): where the first stretch of
    batches over which the W+A step is the faster one begins — 1 when it is faster from the first batch on,
    else the first crossing after which it is, as ``roofline`` prints it ("w4a16 -> w4a8-fp8 at B = 35.6"; a
    crossing the other way, where weight-only overtakes, is not it); None when weight-only is faster at every
    batch up to 4,096. Step models are immutable, so the answer is reused across walks."""

    def gap(b: float) -> float:  # relative step-time difference, weight-only minus W+A: > 0 where W+A is faster
        t1, t2 = m1.decode_time(b, ct), m2.decode_time(b, ct)
        return (t1 - t2) / max(t1, t2)

    if gap(1.0) > 0:
        return 1.0
    # the crossovers `roofline` prints for the pair, in order; a grid 4x coarser than roofline's (each step 9%
    # in batch: smooth step curves do not cross twice within it), bisected to the same roots
    return next((x for x in iter_crossings(gap, 1.0, 4096.0, steps=100) if gap(x) > 0), None)


def _regime(ctx: Context, ranked: list[Option], numbers: dict[str, Any], batch: int) -> tuple[str, list[str]]:
    """The decode regime at ``batch`` from the best weight-only 4-bit and the best W+A candidate on this
    GPU: memory-bound below the weight-only ridge and below the batch where the W+A decode step
    overtakes (-> weight-only 4-bit), compute-bound past both (-> W+A), in between otherwise (the
    predicted step decides). Each reason quotes both decode steps at ``batch``, so it follows from the
    numbers it prints."""
    w, g = ctx.workload, ctx.gpu
    wa_math = "fp8" if g.has_math("fp8") else "int8"
    wo = [o for o in ranked if o.scheme.weight_only and o.scheme.weight is not None and o.scheme.weight.bits == 4]
    wa = [o for o in ranked if family_kind(o.scheme) == "w+a" and o.model is not None and o.model.path.math == wa_math]
    regime = "unknown"
    reasons: list[str] = []
    if wo and wa:
        best_wo, best_wa = wo[0], wa[0]
        m1, m2 = priced_model(ctx, best_wo), priced_model(ctx, best_wa)
        assert m1 is not None and m2 is not None
        best_wo.ridge = m1.ridge_batch()
        ridge_wo = best_wo.ridge or math.inf
        ct = m1.cached_tokens(w.decode_context)
        cross = _crossover(m1, m2, ct)
        t1, t2 = m1.decode_time(batch, ct), m2.decode_time(batch, ct)
        numbers["crossover"] = {"a": best_wo.id, "b": best_wa.id, "batch": round(cross, 1) if cross else None,
                                "meaning": "the batch from which b's decode step is faster than a's"}
        numbers["weight_only_ridge_batch"] = round(ridge_wo, 1) if ridge_wo != math.inf else None
        numbers["decode_step_s_at_batch"] = {best_wo.id: t1, best_wa.id: t2}
        steps = (f"decode step at batch {batch}: {best_wo.id} {t1 * 1e3:.2f} ms, {best_wa.id} {t2 * 1e3:.2f} ms"
                 + (" (a tie)" if abs(t1 - t2) <= defaults.TIE * max(t1, t2) else ""))
        ridge_txt = f"{best_wo.id}'s ridge ({ridge_wo:.0f})" if ridge_wo != math.inf else f"{best_wo.id}'s ridge (none)"
        cross_txt = (f"the batch from which {best_wa.id}'s decode step is faster than {best_wo.id}'s (1: every "
                     "batch)" if cross == 1.0 else
                     f"the batch where {best_wa.id}'s decode step overtakes {best_wo.id}'s ({cross:.0f})" if cross
                     else f"any batch where {best_wa.id}'s decode step overtakes {best_wo.id}'s (none up to 4,096)")
        if batch < ridge_wo and (cross is None or batch < cross):
            regime = "memory-bound"
            reasons.append(f"batch {batch} is below {ridge_txt} and below {cross_txt}: the linears are memory-bound, "
                           f"so the fewest weight bytes win -> weight-only 4-bit; {steps}")
        elif cross is not None and batch > cross and batch >= ridge_wo:
            regime = "compute-bound"
            reasons.append(
                f"batch {batch} is past {ridge_txt} and past {cross_txt}: the linears are compute-bound, so the "
                f"faster tensor-core path wins -> W+A on {wa_math} "
                + ("(this GPU has fp8 tensor cores)" if wa_math == "fp8" else "(no fp8 tensor cores on this GPU)")
                + f"; {steps}")
        else:
            regime = "in between"
            reasons.append(f"batch {batch} is {'below' if batch < ridge_wo else 'past'} {ridge_txt} and "
                           f"{'below' if cross is None or batch < cross else 'at' if batch == cross else 'past'} "
                           f"{cross_txt} "
                           f"-> the predicted output tokens/s decide (decode steps and prefill); {steps}")
    if regime == "unknown" and wo and (m := priced_model(ctx, wo[0])) is not None:
        wo[0].ridge = m.ridge_batch()
    if regime == "unknown" and wo and wo[0].ridge:
        regime = "memory-bound" if batch < wo[0].ridge else "compute-bound"
        reasons.append(f"batch {batch} is {'below' if regime == 'memory-bound' else 'past'} {wo[0].id}'s ridge "
                       f"({wo[0].ridge:.0f}); no W+A candidate on {wa_math} to compare against")
    return regime, reasons


def node_roofline(ctx: Context, live: list[Option]) -> tuple[TraceNode, list[Option]]:
    """f. price the deployable candidates at the concurrency each holds (with latency budgets: the
    largest that meets them) and rank them."""
    w = ctx.workload
    slo = ctx.slo is not None and ctx.slo.active
    for o in live:
        if o.concurrency < 1:
            o.status = "does-not-fit"
            o.reason = (f"{o.weights_bytes / 1e9:.1f} GB of weights leave no room for one sequence with a "
                        f"{ctx.kv_name} cache")
        elif (miss := price(ctx, o)) is not None:
            o.status = "misses-slo"
            o.reason = miss
    ranked = rank([o for o in live if o.status == "candidate" and o.concurrency >= 1 and o.priced])
    for o in ranked:  # the ties the ranking sees (advisor.published.prefer_published reads them)
        o.ties = [x.id for x in ranked if x is not o and ties(x, o)]
    numbers: dict[str, Any] = {
        "batch": w.batch, "ctx": w.context, "decode_ctx": w.decode_context, "mode": w.serving_mode,
        "kv_dtype": ctx.kv_name,
        "profile": ranked[0].efficiency.profile_id if ranked else None,
        "speed_model": {o.id: curve_basis(o.efficiency) for o in ranked},
        "uncertainty": {o.id: round(o.u_rate, 4) if o.u_rate is not None else None for o in ranked},
        "kernel": {o.id: kernel_line(o.efficiency, priced_model(ctx, o)) for o in ranked},
        "concurrency": {o.id: o.concurrency for o in ranked},
        "limit": {o.id: o.limit for o in ranked},
        "step_time_s": {o.id: o.step_s for o in ranked},
        "itl_s": {o.id: o.itl_s for o in ranked},
        "ttft_s": {o.id: o.ttft_s for o in ranked},
        "tokens_per_s": {o.id: o.throughput for o in ranked},
        "decode_tokens_per_s": {o.id: o.decode_tps for o in ranked},
        "prefill_share": {o.id: o.prefill_share for o in ranked},
    }
    if ctx.loop is not None:  # which terms of the engine's serving loop bound each candidate's answer
        numbers["serving_loop"] = {
            "loop": ctx.loop.facts.label(), "cites": list(ctx.loop.facts.cites),
            "terms": ctx.loop.terms.label() if ctx.loop.terms is not None else None,
            "bound_by": {o.id: o.loop.bound for o in ranked if o.loop is not None},
            "shares": {o.id: o.loop.shares for o in ranked if o.loop is not None},
            "running": {o.id: o.loop.running for o in ranked if o.loop is not None},
            "padded_batch": {o.id: o.loop.padded_batch for o in ranked if o.loop is not None}}
    if slo:
        assert ctx.slo is not None
        numbers["slo"] = {"itl_s": ctx.slo.itl_s, "ttft_s": ctx.slo.ttft_s, "e2e_s": ctx.slo.e2e_s}
    if ctx.spec is not None:
        numbers["tokens_per_step"] = ctx.spec.tokens_per_step
    batch = ranked[0].concurrency if (ranked and (slo or ctx.batch_bound)) else w.batch
    regime, reasons = _regime(ctx, ranked, numbers, batch)
    numbers["regime"] = regime
    if ranked:
        top = ranked[0]
        share = f", {top.prefill_share:.0%} of GPU time in prefill" if top.prefill_share is not None else ""
        # the regime of the linear layers (ridge and crossover), not the whole step's bound (performance.bound)
        decision = ((f"linears {regime}: " if regime != "unknown" else "")
                    + f"{top.id} ({family(top.scheme)}, {ctx.kv_name}) ranks first: {top.throughput:,.0f} output "
                    f"tokens/s {held_text(ctx, top)} ({top.decode_tps:,.0f} decode tokens/s at {top.step_s * 1e3:.2f} "
                    f"ms per step{share})")
        if len(ranked) > 1:
            r = ranked[1]
            decision += f"; next {r.id} at {r.throughput:,.0f}" + (
                " (ranked after the shipped checkpoint: its published accuracy range reaches the tolerance)"
                if ranked_after_native(r, ranked) else
                f" (within the {defaults.NATIVE_MARGIN:.0%} a re-quantization must beat the shipped checkpoint by)"
                if top.native and r.throughput > top.throughput and not ties(r, top) else
                " (a tie within the model's uncertainty: the evidence orders them, see the alternatives)"
                if ties(r, top) else "")
        if slo:
            reasons.extend(_slo_reasons(ctx, ranked))
        if regime in ("memory-bound", "compute-bound"):
            expected = "weight-only" if regime == "memory-bound" else "w+a"
            if family_kind(top.scheme) != expected and top.scheme.quantizes_weights:
                rival = next((o for o in ranked if family_kind(o.scheme) == expected), None)
                reasons.append(_why_not_regime(ctx, top, rival, batch))
        heavy = _prefill_heavy(ctx, ranked, batch)
        numbers["prefill_heavy"] = top.prefill_share is not None and top.prefill_share >= defaults.PREFILL_HEAVY_SHARE
        if heavy:
            reasons.append(heavy)
        if ctx.spec is not None and ctx.spec.tokens:
            reasons.append(_spec_reason(ctx, top))
        reasons.extend(f"{line}: {o.throughput:,.0f} tokens/s, {o.step_s * 1e3:.2f} ms per step" for o in ranked
                       if (line := kernel_line(o.efficiency, priced_model(ctx, o))) is not None)
        if not slo and not ctx.batch_bound and any(o.concurrency < w.batch for o in ranked):
            reasons.append("a candidate that holds fewer sequences is priced at the concurrency it holds, not at the "
                           "batch it cannot hold")
    else:
        missed = [o.id for o in live if o.status == "misses-slo"]
        decision = (f"no candidate meets {ctx.slo.label()}" if slo and ctx.slo is not None and missed
                    else "no candidate left to rank")
    return TraceNode(node="roofline", decision=decision, numbers=numbers, reasons=reasons), ranked


def held_text(ctx: Context, o: Option) -> str:
    """``holding all 64 sequences`` / ``at concurrency 37 (ITL <= 30 ms binds ...)``."""
    w = ctx.workload
    if (ctx.slo is not None and ctx.slo.active) or ctx.batch_bound:
        return f"at concurrency {o.concurrency:,} ({limit_text(ctx, o)})"
    held = (every(w.batch, "sequence") if o.concurrency >= w.batch
            else f"{o.concurrency} of the {w.batch} sequences")
    return f"holding {held}"


def _slo_reasons(ctx: Context, ranked: list[Option]) -> list[str]:
    """Per ranked candidate: the concurrency the budgets allow, its latencies there, what binds."""
    assert ctx.slo is not None
    out = [f"latency budgets {ctx.slo.label()}: each candidate runs at the largest concurrency that meets them "
           "and is ranked on output tokens/s per GPU there"]
    for o in ranked:
        ttft = f", TTFT {ms(o.ttft_s)} ms" if o.ttft_s is not None else ""
        out.append(f"{o.id}: concurrency {o.concurrency:,}, ITL {ms(o.itl_s or 0)} ms{ttft}, "
                   f"{o.throughput / ctx.workload.gpus:,.0f} tokens/s per GPU; {limit_text(ctx, o)}")
    return out


def _prefill_heavy(ctx: Context, ranked: list[Option], batch: int) -> str | None:
    """A prefill-heavy workload where the best W+A candidate out-delivers the best weight-only one
    although the decode step alone, below the weight-only ridge, favours fewer weight bytes."""
    top = ranked[0]
    if top.prefill_share is None or top.prefill_share < defaults.PREFILL_HEAVY_SHARE:
        return None
    # any weight + activation candidate: W8A8 and W4A8 alike run the prompt on the fast tensor cores
    wa = next((o for o in ranked if family_kind(o.scheme) == "w+a"), None)
    wo = next((o for o in ranked if family_kind(o.scheme) == "weight-only"), None)
    if wa is None or wo is None or wa.throughput <= wo.throughput:
        return (f"prefill-heavy: {top.prefill_share:.0%} of GPU time is prefill (>= "
                f"{defaults.PREFILL_HEAVY_SHARE:.0%}), which runs compute-bound") if wa is None or wo is None else None
    sm = priced_model(ctx, wo)
    ridge = wo.ridge or (sm.ridge_batch() if sm is not None else None)
    below = f" although concurrency {wa.concurrency:,} is below {wo.id}'s decode ridge ({ridge:,.0f})" \
        if ridge and wa.concurrency < ridge else ""
    return (f"prefill-heavy: {top.prefill_share:.0%} of GPU time is prefill (>= {defaults.PREFILL_HEAVY_SHARE:.0%}), "
            f"which runs compute-bound on the tensor cores, so {wa.id} ({family(wa.scheme)}) delivers {wa.throughput:,.0f} output "
            f"tokens/s against weight-only {wo.id}'s {wo.throughput:,.0f}{below}")


def _spec_reason(ctx: Context, top: Option) -> str:
    """Speculative decoding as priced: tokens per step and where the verification step turns compute-bound."""
    spec = ctx.spec
    assert spec is not None
    sm = priced_model(ctx, top)
    ridge = sm.ridge_batch() if sm is not None else None
    where = (f"; a verification step runs {plural(spec.queries, 'token')} per sequence, so {top.id}'s linear layers turn "
             f"compute-bound at {ridge / spec.queries:,.1f} sequences instead of {ridge:,.1f}" if ridge else "")
    return (f"speculative decoding: {plural(spec.tokens, 'drafted token')} per step at acceptance {spec.acceptance:g} -> "
            f"{spec.tokens_per_step:.2f} tokens per step per sequence (Leviathan et al., arXiv:2211.17192){where}")


def _why_not_regime(ctx: Context, top: Option, rival: Option | None, batch: int) -> str:
    """Why the fastest candidate is not of the family the decode regime points to (``rival``: the best
    of that family): from their numbers, which of decode and prefill decides."""
    w = ctx.workload
    if top.native:
        return f"but {top.id} is the checkpoint as shipped and delivers the most as it is"
    if top.concurrency > (rival.concurrency if rival is not None else top.concurrency) and not ctx.batch_bound:
        assert rival is not None
        return (f"but {top.id} holds more sequences ({top.concurrency:,} against {rival.id}'s {rival.concurrency:,}) "
                "and delivers more at the concurrency it holds")
    if rival is not None and top.prefill_share is not None and rival.prefill_share is not None:
        decode_wins = top.step_s < rival.step_s * (1 - defaults.TIE)
        if not decode_wins:
            how = "in continuous batching" if w.serving_mode == "continuous" else "in synchronous batches"
            math_ = top.model.path.math if top.model is not None else "its"
            p_top, p_rival = _prefill_one(ctx, top), _prefill_one(ctx, rival)
            step = ("tie" if abs(top.step_s - rival.step_s) <= defaults.TIE * max(top.step_s, rival.step_s)
                    else "favour " + rival.id)
            prefill = (f"prefilling one {w.prompt_tokens:,}-token prompt takes {p_top * 1e3:,.0f} ms against "
                       f"{p_rival * 1e3:,.0f} ms, " if p_top is not None and p_rival is not None else "")
            at = ((f" at {plural(top.concurrency, 'sequence')}", f" at {rival.concurrency:,}")
                  if top.concurrency != rival.concurrency else ("", ""))  # each at the concurrency it runs
            return (f"but the prefill decides: the decode steps {step} ({top.id} {top.step_s * 1e3:.2f} ms{at[0]}, "
                    f"{rival.id} {rival.step_s * 1e3:.2f} ms{at[1]}), while {how} the prefill runs compute-bound, where {math_} tensor "
                    f"cores pay off: {prefill}{top.prefill_share:.0%} of {top.id}'s GPU time against "
                    f"{rival.prefill_share:.0%} of {rival.id}'s -> {top.throughput:,.0f} against "
                    f"{rival.throughput:,.0f} output tokens/s")
    return (f"but the efficiency profile ({top.efficiency.profile_id}) predicts {top.id} faster at batch {batch} "
            "than the regime's family; the prediction is followed")


def _prefill_one(ctx: Context, o: Option) -> float | None:
    """Seconds to prefill one of the workload's prompts with ``o`` (None: no prompt or no model)."""
    sm = priced_model(ctx, o)
    prompt = ctx.workload.prompt_tokens
    if sm is None or not prompt:
        return None
    return prefill_s(sm, ctx.loop, 1, prompt) if ctx.loop is not None else sm.prefill(1, prompt).time_s


def predict(arch: ModelArch, gpu: GPU, workload: Workload, scheme: Scheme, efficiency: Efficiency, *,
            kv: TensorQuant | None = None, kv_name: str = "kv-bf16", loop: EngineLoop | None = None) -> Prediction:
    """Price ``scheme`` (with the KV cache ``kv``) at ``workload``: the step model, the engine's serving
    loop and the scoring the roofline node uses, so a candidate priced here and in ``recommend`` gets the
    same numbers."""
    sm = StepModel(arch, scheme, gpu, kv=kv, gpus=workload.gpus, efficiency=efficiency, path=datapath(scheme, gpu))
    s = serve(sm, lengths_of(workload), workload.batch, loop=loop)
    return Prediction(
        scheme=scheme.id, kv_dtype=kv_name, gpu=gpu.id, gpus=workload.gpus, batch=workload.batch,
        decode_ctx=workload.decode_context, mode=workload.serving_mode, step_time_s=s.step_s,
        seconds_per_token=1.0 / s.tokens_per_s, tokens_per_s=s.tokens_per_s, ttft_s=s.ttft_s, itl_s=s.itl_s,
        decode_tokens_per_s=s.decode_tokens_per_s, prefill_share=s.prefill_share, profile=efficiency.profile_id,
        speed_model=curve_basis(efficiency), model_note=model_note(efficiency), kernel=kernel_line(efficiency, sm),
        uncertainty=uncertainty_of(s.step_s, s.tokens_per_s, s.itl_s, s.ttft_s, s.e2e_s, None, curve_basis(efficiency),
                                   *bands(sm, efficiency, workload, workload.batch, s.prefill_share), s.loop),
        serving_loop=s.loop,
    )


def uncertainty_of(step: float, tps: float, itl: float | None, ttft: float | None, e2e: float | None,
                   cost: float | None, basis: str, u_step: float | None, u_ttft: float | None,
                   u_rate: float | None, loop: LoopSummary | None = None) -> Uncertainty | None:
    """The low/high of each predicted figure (perf.uncertainty.figure_band), with the basis of its own layers;
    ``loop``: the serving loop that priced them (its terms' held-out band is added)."""
    from ..perf.uncertainty import figure_band

    band = figure_band(u_step=u_step, u_rate=u_rate, u_ttft=u_ttft, step=step, tokens_per_s=tps, itl=itl, ttft=ttft,
                       e2e=e2e, cost=cost, u_loop=loop.uncertainty if loop is not None else None, cls=Uncertainty,
                       basis=basis)
    return band if isinstance(band, Uncertainty) else None
