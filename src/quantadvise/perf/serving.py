"""Serving points: what a user and the GPUs see at one concurrency, built from the step model.

One function, :func:`serve`, turns a step model, the request lengths and a concurrency into the
figures every command prints for a serving point — so ``recommend``, ``roofline --pareto`` and
``recommend --plot`` give the same number for the same quantity (docs/recommend.md, "Serving targets"):

- **decode step** ``t``: :meth:`~.step.StepModel.decode` at the concurrency B and the decode context;
  with speculative decoding (K drafted tokens per step) a verification step of K+1 tokens per
  sequence plus K drafting passes (:meth:`~.step.StepModel.draft_time`).
- **tokens per step** ``tau = 1 + K·A`` per sequence, A the mean fraction of drafted tokens accepted.
  This is Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative Decoding"
  (arXiv:2211.17192), eq. (1): ``E[tokens] = (1 − α^(K+1)) / (1 − α)`` with α the per-token
  acceptance probability — the sum ``1 + α + … + α^K`` is one guaranteed token plus the expected
  accepted drafts, and ``A = (α + … + α^K) / K`` is the fraction of drafts accepted (what vLLM reports
  as its acceptance rate), so ``tau = 1 + K·A`` exactly. A = 0 gives one token per step, as without
  speculation, while the step still verifies K+1 tokens and drafts K: never faster than no speculation.
- **ITL** (mean inter-token latency a user sees): continuous batching ``t/tau + P_B/O`` — the decode
  step per token plus the prefill of the B requests that join while one request generates its O
  tokens (``P_B`` = prefill of B prompts), spread over those O tokens; synchronous ``t/tau``.
- **output tokens/s**, prefill included in both modes: continuous batching ``B / ITL``; synchronous
  serving ``B·O / E2E`` — a batch of B requests is prefilled together (``P_B``, which yields each first
  token) and then decoded for O − 1 steps, and the next batch starts when it finishes, so the B·O
  tokens take the batch's E2E. ``decode tokens/s = B·tau / t`` (the decode steps alone);
  **prefill share** of GPU time ``P_B / (O·t/tau + P_B)`` (continuous) or ``P_B / E2E`` (synchronous),
  the **decode share** the rest.
- **TTFT**: synchronous, the prefill of the whole batch (its B prompts arrive together: what
  ``roofline --prompt`` prints per point); continuous batching, *under load*: one prompt's prefill
  ``P_1`` plus the prefills queued ahead of it — an M/D/1 queue (Poisson arrivals, a deterministic
  prefill, utilization ρ = the prefill share) waits ``ρ/(2(1−ρ))`` prefills on average, and no more
  than the B − 1 other requests in flight: ``TTFT = P_1 · (1 + min(ρ/(2(1−ρ)), B − 1))``.
- **E2E** = TTFT + (O − 1)·ITL; **$/Mtok** = $/GPU-hour x GPUs / (output tokens/s x 3600) x 1e6.

Pure: no I/O, no printing.
"""

import math
from collections.abc import Callable, Sequence
from datetime import date
from typing import TYPE_CHECKING, Protocol

from ..results import Out, record
from .step import StepModel
from .uncertainty import FigureBand

if TYPE_CHECKING:
    from .loop import EngineLoop, LoopSummary

SPEC_MODEL = ("speculative decoding (Leviathan et al., arXiv:2211.17192, eq. 1): tokens per step = 1 + K x A = "
              "(1 - a^(K+1)) / (1 - a), a the per-token acceptance rate; each step verifies K+1 tokens per sequence "
              "and drafts K with an EAGLE/MTP-style head (one decoder layer + the lm_head per drafted token)")


class Price(Out):
    """The $ per GPU-hour the cost figures use and where it comes from."""

    usd_per_gpu_hour: float
    kind: str  # "list price" (data/pricing.yaml) | "given" (--usd-per-gpu-hour or a workload key)
    source: str
    as_of: date | None = None
    offer: str | None = None  # the instance a list price divides

    def label(self) -> str:
        if self.kind == "given":
            return f"${self.usd_per_gpu_hour:,.2f}/GPU-hour ({self.source})"
        when = f", as of {self.as_of.isoformat()}" if self.as_of else ""
        return f"${self.usd_per_gpu_hour:,.2f}/GPU-hour ({self.kind}: {self.offer or self.source}{when})"


@record(slots=True)
class Speculation:
    """K tokens drafted per decode step, a mean fraction A of them accepted."""

    tokens: int
    acceptance: float

    @property
    def queries(self) -> int:
        """Tokens each sequence runs through the target model per verification step (K + 1)."""
        return self.tokens + 1

    @property
    def tokens_per_step(self) -> float:
        """Output tokens per sequence per step, ``1 + K·A``."""
        return 1.0 + self.tokens * self.acceptance

    def per_token_acceptance(self) -> float:
        """α of Leviathan et al.: the per-token acceptance probability whose truncated geometric series
        gives the mean accepted fraction A, ``A = (α + α² + … + α^K) / K`` (bisection; increasing in α)."""
        k, a = self.tokens, self.acceptance
        if k == 0 or a <= 0.0:
            return 0.0
        if a >= 1.0:
            return 1.0
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if sum(mid**i for i in range(1, k + 1)) / k < a:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2


class SpecInfo(Out):
    """Speculative decoding as the report priced it."""

    tokens: int  # K, drafted per step
    acceptance: float  # A, mean fraction of drafted tokens accepted
    tokens_per_step: float  # 1 + K·A
    per_token_acceptance: float  # α with (1 - α^(K+1)) / (1 - α) = 1 + K·A
    model: str = SPEC_MODEL

    @classmethod
    def of(cls, s: Speculation) -> "SpecInfo":
        return cls(tokens=s.tokens, acceptance=s.acceptance, tokens_per_step=s.tokens_per_step,
                   per_token_acceptance=s.per_token_acceptance())


@record(slots=True)
class Lengths:
    """Each request's lengths and how requests are served."""

    prompt: int  # tokens prefilled per request (0: decode only, no TTFT)
    output: int  # tokens generated per request
    decode_ctx: int  # tokens a sequence holds on average while it decodes (what a decode step reads)
    mode: str  # "continuous" | "sync"


@record(slots=True)
class ServePoint:
    """One concurrency of one scheme, every figure per replica (its ``gpus`` in tensor parallel)."""

    concurrency: int
    step_s: float  # one decode step (with speculation: verification + drafting)
    tokens_per_step: float  # per sequence
    itl_s: float  # mean inter-token latency a user sees
    ttft_s: float | None  # None: no prompt
    e2e_s: float
    tokens_per_s: float  # output tokens/s of the replica, prefill included (with a prompt)
    decode_tokens_per_s: float  # concurrency x tokens per step / step
    prefill_share: float | None  # share of GPU time in prefill (None: no prompt)
    bound: str  # memory | compute | communication: the decode step's (StepCost.bound)
    loop: "LoopSummary | None" = None  # the engine's serving loop (None: kernels alone)

    @property
    def tokens_per_s_per_user(self) -> float:
        return 1.0 / self.itl_s


def serve(sm: StepModel, lengths: Lengths, batch: int, spec: Speculation | None = None,
          loop: "EngineLoop | None" = None) -> ServePoint:
    """``sm`` serving ``batch`` concurrent requests of ``lengths`` (the module docstring has the model);
    with ``loop``, as the engine's serving loop runs them (:func:`serve_loop`)."""
    if loop is not None:
        return serve_loop(sm, lengths, batch, loop, spec)
    ctx = lengths.decode_ctx
    if spec is not None and spec.tokens:
        cost = sm.decode(batch, ctx, queries=spec.queries)
        step = cost.time_s + spec.tokens * sm.draft_time(batch, ctx)
        tau = spec.tokens_per_step
    else:
        cost = sm.decode(batch, ctx)
        step, tau = cost.time_s, 1.0
    decode_tps = batch * tau / step
    prompt, out = lengths.prompt, lengths.output
    share: float | None = None
    ttft: float | None = None
    if prompt and lengths.mode == "continuous":
        prefill_all = sm.prefill(batch, prompt).time_s
        decode_all = out / tau * step
        itl = (decode_all + prefill_all) / out
        share = prefill_all / (decode_all + prefill_all)
        ttft = queued_ttft(sm.prefill(1, prompt).time_s, share, batch)
    else:
        itl = step / tau
        if prompt:
            ttft = sm.prefill(batch, prompt).time_s
    e2e = (ttft or 0.0) + (out - 1) * itl
    if prompt and lengths.mode != "continuous":
        # synchronous: the batch's B·O output tokens take its E2E (prefill, then O - 1 decode steps)
        assert ttft is not None
        tps, share = batch * out / e2e, ttft / e2e
    else:
        tps = batch / itl
    return ServePoint(concurrency=batch, step_s=step, tokens_per_step=tau, itl_s=itl, ttft_s=ttft,
                      e2e_s=e2e, tokens_per_s=tps, decode_tokens_per_s=decode_tps,
                      prefill_share=share, bound=cost.bound)


def serve_loop(sm: StepModel, lengths: Lengths, batch: int, loop: "EngineLoop",
               spec: Speculation | None = None) -> ServePoint:
    """``batch`` closed-loop requests as the engine's serving loop runs them (:mod:`.loop`): continuous
    batching delivers R x O output tokens per cycle (R the requests in flight), ITL is the cycle over the
    O tokens, TTFT one prompt's prefill queued as :func:`queued_ttft` says plus, when more requests are
    in flight than run (``max_num_seqs``, the KV cache), their wait for a slot; synchronous batches are
    prefilled together and decoded in lockstep."""
    from .loop import cycle, prefill_s, running, summary

    ctx, prompt, out = lengths.decode_ctx, lengths.prompt, lengths.output
    queries, tau, draft = 1, 1.0, 0.0
    r, _ = running(batch, loop.facts, sm, loop.kv_room_bytes, prompt + out / 2)
    if spec is not None and spec.tokens:
        queries, tau = spec.queries, spec.tokens_per_step
        draft = spec.tokens * sm.draft_time(r, ctx)
    sync = lengths.mode != "continuous"
    cy = cycle(sm, loop, concurrency=batch, prompt=prompt, output=out, decode_ctx=ctx, queries=queries,
               tokens_per_step=tau, draft_s=draft, lockstep=sync)
    t = loop.terms
    step = cy.step_s(t)
    r = cy.running
    cyc = cy.seconds(t)
    share: float | None = None
    ttft: float | None = None
    itl = step / tau
    if not prompt:
        tps = r / itl
    elif sync:  # the batch is prefilled together (its first tokens), then decoded in lockstep
        ttft = prefill_s(sm, loop, r, prompt)
        tps, share = r * out / cyc, ttft / cyc
    else:
        itl = cyc / out
        share = max(0.0, cyc - cy.decode_steps * step) / cyc
        ttft = queued_ttft(prefill_s(sm, loop, 1, prompt), share, r) + cyc * max(0.0, batch / r - 1.0)
        tps = r * out / cyc
    e2e = (ttft or 0.0) + (out - 1) * itl
    cost = sm.decode(r, ctx, queries=queries)
    return ServePoint(concurrency=batch, step_s=step, tokens_per_step=tau, itl_s=itl, ttft_s=ttft, e2e_s=e2e,
                      tokens_per_s=tps, decode_tokens_per_s=r * tau / step, prefill_share=share, bound=cost.bound,
                      loop=summary(loop, cy, cyc))


def queued_ttft(prefill_one_s: float, share: float, batch: int) -> float:
    """TTFT under load: one prompt's prefill and, ahead of it, ``min(ρ/(2(1−ρ)), B−1)`` prefills
    (M/D/1 mean wait at utilization ρ = the prefill share, capped by the other requests in flight)."""
    rho = min(max(share, 0.0), 1.0 - 1e-12)
    return prefill_one_s * (1.0 + min(rho / (2.0 * (1.0 - rho)), float(batch - 1)))


def usd_per_mtok(usd_per_gpu_hour: float | None, gpus: int, tokens_per_s: float) -> float | None:
    """$ per million output tokens of ``gpus`` GPUs delivering ``tokens_per_s`` (None without a price)."""
    if usd_per_gpu_hour is None or tokens_per_s <= 0:
        return None
    return usd_per_gpu_hour * gpus / (tokens_per_s * 3600.0) * 1e6


# -------------------------------------------------------------------------------------------------
# Latency budgets and the concurrency search
# -------------------------------------------------------------------------------------------------

BUDGETS = ("itl", "ttft", "e2e")  # the order a report names a broken budget in


class Latencies(Protocol):
    """What a budget is weighed on: a serving point, or one under a load (perf.queueing.AtLoad)."""

    @property
    def itl_s(self) -> float: ...
    @property
    def ttft_s(self) -> float | None: ...
    @property
    def e2e_s(self) -> float: ...


@record(slots=True)
class Slo:
    """Latency budgets in seconds (None: no budget)."""

    ttft_s: float | None = None
    itl_s: float | None = None
    e2e_s: float | None = None

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.ttft_s, self.itl_s, self.e2e_s))

    def broken(self, p: "ServePoint | Latencies") -> str | None:
        """The first budget ``p`` misses ("itl", "ttft", "e2e"), or None when it meets them all."""
        if self.itl_s is not None and p.itl_s > self.itl_s:
            return "itl"
        if self.ttft_s is not None and p.ttft_s is not None and p.ttft_s > self.ttft_s:
            return "ttft"
        if self.e2e_s is not None and p.e2e_s > self.e2e_s:
            return "e2e"
        return None

    def label(self) -> str:
        parts = [f"{name} <= {v * 1e3:,.0f} ms" for name, v in (("ITL", self.itl_s), ("TTFT", self.ttft_s),
                                                                ("E2E", self.e2e_s)) if v is not None]
        return ", ".join(parts)


@record(slots=True)
class Search:
    """The largest concurrency in ``[1, hi]`` that meets the budgets, and what stopped it there."""

    point: ServePoint | None  # None: not even one sequence meets the budgets
    limit: str  # "itl" | "ttft" | "e2e" (a budget), or ``bound_name`` (the search's upper end)
    first_miss: ServePoint | None  # the point one past it (the budget it breaks), or the miss at 1


def largest_meeting(price: Callable[[int], ServePoint], hi: int, slo: Slo, bound_name: str) -> Search:
    """Bisection over the concurrency for the largest one whose point meets ``slo``. ITL, TTFT and E2E
    do not decrease with the concurrency in this model (a larger batch makes every step and every
    prefill at least as long), so the budgets hold on a prefix ``1..c*``."""
    top = price(hi)
    if slo.broken(top) is None:
        return Search(top, bound_name, None)
    first = price(1) if hi > 1 else top
    if slo.broken(first) is not None:
        return Search(None, slo.broken(first) or "itl", first)
    lo, lo_point, miss = 1, first, top  # lo meets, hi misses
    while hi - lo > 1:
        mid = (lo + hi) // 2
        p = price(mid)
        if slo.broken(p) is None:
            lo, lo_point = mid, p
        else:
            hi, miss = mid, p
    return Search(lo_point, slo.broken(miss) or "itl", miss)


# -------------------------------------------------------------------------------------------------
# The Pareto frontier
# -------------------------------------------------------------------------------------------------


class ParetoPoint(Out):
    """One (scheme, concurrency) on the tokens/s-per-GPU vs tokens/s-per-user plane."""

    scheme: str
    ctx: int  # decode context the step reads
    batch: int  # concurrent sequences per replica
    tokens_per_s: float  # output tokens/s of the replica
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float  # 1 / ITL
    itl_s: float
    ttft_s: float | None
    e2e_s: float
    prefill_share: float | None
    usd_per_mtok: float | None
    bound: str
    fits: bool  # weights + the KV cache of ``batch`` sequences fit the memory budget
    meets_slo: bool | None = None  # None: no latency budget given
    on_frontier: bool = False  # not dominated by another fitting point of the same scheme
    best: bool = False  # on the envelope of every scheme's frontier
    recommended: bool = False  # the point a recommendation runs at
    uncertainty: FigureBand | None = None  # low/high at the model's validated uncertainty (recommend --plot)


def pareto_point(scheme: str, p: ServePoint, *, ctx: int, gpus: int, fits: bool, price: float | None,
                 slo: Slo | None) -> ParetoPoint:
    return ParetoPoint(
        scheme=scheme, ctx=ctx, batch=p.concurrency, tokens_per_s=p.tokens_per_s,
        tokens_per_s_per_gpu=p.tokens_per_s / gpus, tokens_per_s_per_user=p.tokens_per_s_per_user, itl_s=p.itl_s,
        ttft_s=p.ttft_s, e2e_s=p.e2e_s, prefill_share=p.prefill_share,
        usd_per_mtok=usd_per_mtok(price, gpus, p.tokens_per_s), bound=p.bound, fits=fits,
        meets_slo=(slo.broken(p) is None) if slo is not None and slo.active else None)


def non_dominated(points: Sequence[ParetoPoint]) -> list[int]:
    """Indexes of the points no other point beats on both axes (at least as good on both, better on
    one): sorted by tokens/s per user, fastest first, a point is kept when its tokens/s per GPU exceeds
    that of every point faster for a user. Along the result, per-user speed falls as per-GPU
    throughput rises: the frontier is monotone."""
    order = sorted(range(len(points)), key=lambda i: (-points[i].tokens_per_s_per_user,
                                                       -points[i].tokens_per_s_per_gpu))
    kept: list[int] = []
    best = -math.inf
    for i in order:
        if points[i].tokens_per_s_per_gpu > best:
            kept.append(i)
            best = points[i].tokens_per_s_per_gpu
    return kept


def mark_frontier(points: list[ParetoPoint]) -> list[ParetoPoint]:
    """``points`` with ``on_frontier`` (per scheme and context, fitting points only) and ``best`` (the
    envelope over every scheme at each context) set."""
    out = list(points)
    groups: dict[tuple[str, int], list[int]] = {}
    for i, p in enumerate(out):
        if p.fits:
            groups.setdefault((p.scheme, p.ctx), []).append(i)
    for idx in groups.values():
        for j in non_dominated([out[i] for i in idx]):
            out[idx[j]] = out[idx[j]].model_copy(update={"on_frontier": True})
    by_ctx: dict[int, list[int]] = {}
    for i, p in enumerate(out):
        if p.on_frontier:
            by_ctx.setdefault(p.ctx, []).append(i)
    for idx in by_ctx.values():
        for j in non_dominated([out[i] for i in idx]):
            out[idx[j]] = out[idx[j]].model_copy(update={"best": True})
    return out


def pick(points: Sequence[ParetoPoint]) -> int | None:
    """The point to run at: the most tokens/s per GPU among the fitting points that meet the budgets
    (all fitting points without one), the faster one for a user on a tie; None when none qualifies."""
    ok = [i for i, p in enumerate(points) if p.fits and p.meets_slo is not False]
    if not ok:
        return None
    return max(ok, key=lambda i: (points[i].tokens_per_s_per_gpu, points[i].tokens_per_s_per_user))


class ParetoOut(Out):
    """``roofline --pareto``: every (scheme, context, batch) as a serving point under continuous
    batching, each scheme's frontier and the envelope marked, and the point to run at."""

    prompt: int  # prompt tokens per request (0: decode only, no TTFT)
    output: int  # output tokens per request
    mode: str = "continuous"
    serving_loop: str | None = None  # the engine's serving loop and terms that priced the points (None: kernels alone)
    itl_budget_s: float | None = None
    ttft_budget_s: float | None = None
    e2e_budget_s: float | None = None
    points: list[ParetoPoint]
    recommended: ParetoPoint | None  # the most tokens/s per GPU that fits and meets the budgets


def pareto_sweep(models: Sequence[tuple[str, StepModel]], contexts: Sequence[int], batches: Sequence[int], *,
                 prompt: int, output: int, gpus: int, fits: Callable[[str, int, int], bool],
                 price: float | None = None, slo: Slo | None = None, spec: Speculation | None = None,
                 loop: "EngineLoop | None" = None) -> ParetoOut:
    """Each scheme's serving points at every context and batch (``fits(scheme, batch, ctx)`` says whether
    weights + KV fit), frontiers marked, the recommended point picked (:func:`pick`)."""
    points: list[ParetoPoint] = []
    for ctx in contexts:
        lengths = Lengths(prompt=prompt, output=output, decode_ctx=ctx, mode="continuous")
        for sid, sm in models:
            for b in batches:
                p = serve(sm, lengths, b, spec, loop)
                points.append(pareto_point(sid, p, ctx=ctx, gpus=gpus, fits=fits(sid, b, ctx), price=price, slo=slo))
    points = mark_frontier(points)
    best = pick(points)
    if best is not None:
        points[best] = points[best].model_copy(update={"recommended": True})
    active = slo if slo is not None and slo.active else None
    return ParetoOut(prompt=prompt, output=output, serving_loop=loop.label() if loop is not None else None,
                     itl_budget_s=active.itl_s if active else None,
                     ttft_budget_s=active.ttft_s if active else None, e2e_budget_s=active.e2e_s if active else None,
                     points=points, recommended=points[best] if best is not None else None)
