"""GPUs for a load: each scheme's replicas and tensor-parallel degree for ``--rate`` or ``--users``.

The tree is walked once per tensor-parallel degree t (``defaults.TP_DEGREES``, or the ``--gpus``
given); each ranked candidate of that walk runs one replica of t GPUs at the concurrency it holds
(or the largest its latency budgets allow) and delivers X output tokens/s there. A load needs

- ``--rate R`` requests/s of O output tokens each: at least ``ceil(R x O / X)`` replicas, and more until
  at most ``defaults.LOAD_WAIT_SHARE`` of the requests wait for a free slot and the TTFT / E2E budgets hold
  with that wait (:mod:`quantadvise.perf.queueing`: the requests in flight as a birth-death process) — each replica then runs below
  the concurrency it was priced at, and its ITL and TTFT at the load are said (``at_load``);
- ``--users N`` concurrent users (sequences in flight; think time not modelled):
  ``ceil(N / concurrency)`` replicas,

and ``gpus = t x replicas``. With ``--rate`` each layout also says how busy the load keeps it
(``utilization``: R x O over the replicas' output tokens/s) and what the load's tokens cost on it
(``usd_per_mtok_at_load``: the layout's $/hour over R x O x 3600 tokens; the GPUs are paid for whether
busy or not), beside ``usd_per_mtok`` at full concurrency. Per scheme the layout with the fewest GPUs
is kept (then the most output tokens/s per GPU, then the smaller t): "70B: 2 x H100 fp8 TP2, or 1 x H100
W4A16, or 4 x H100 bf16 TP4". The recommendation is the tree's own winner at the degree whose winner needs the fewest GPUs
(ties: more tokens/s per GPU, then the smaller degree), so the native-checkpoint margin and the
accuracy tiers of the tree still apply. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import defaults
from ..wording import plural
from .result import RANKED, Layout, LoadPlan, Recommendation, TraceNode

if TYPE_CHECKING:
    from ..hardware import GPU
    from ..model.arch import ModelArch
    from ..workload import Workload


def layouts(rec: Recommendation, tp: int, *, rate: float | None, users: int | None, output_tokens: int,
            usd_per_gpu_hour: float | None) -> list[Layout]:
    """One layout per ranked candidate of the walk at tensor-parallel degree ``tp``."""
    from ..perf.queueing import capacity_replicas
    from ..perf.serving import usd_per_mtok

    load = rate * output_tokens if rate is not None else None  # output tokens/s the load asks for
    out = []
    for a in rec.alternatives:
        if a.status not in RANKED or not a.tokens_per_s or not a.concurrency:
            continue
        n = a.at_load.replicas if a.at_load is not None else capacity_replicas(
            rate=rate, users=users, output=output_tokens, tokens_per_s=a.tokens_per_s, concurrency=a.concurrency)
        at_load: dict[str, Any] = {"at_load": a.at_load}
        if load is not None:
            at_load |= {"utilization": load / (n * a.tokens_per_s),
                        "usd_per_mtok_at_load": usd_per_mtok(usd_per_gpu_hour, n * tp, load)}
        out.append(Layout(
            scheme=a.scheme, tp=tp, replicas=n, gpus=n * tp, concurrency=a.concurrency, tokens_per_s=a.tokens_per_s,
            tokens_per_s_per_gpu=a.tokens_per_s / tp, requests_per_s=a.tokens_per_s / output_tokens,
            itl_s=a.itl_s or 0.0, ttft_s=a.ttft_s, limit=a.limit or "",
            usd_per_hour=usd_per_gpu_hour * n * tp if usd_per_gpu_hour is not None else None,
            usd_per_mtok=a.usd_per_mtok, uncertainty=a.uncertainty, **at_load))
    return out


def _key(x: Layout) -> tuple[int, float, int]:
    return (x.gpus, -x.tokens_per_s_per_gpu, x.tp)


def plan(recs: dict[int, Recommendation], *, rate: float | None, users: int | None, output_tokens: int,
         usd_per_gpu_hour: float | None) -> tuple[int, LoadPlan]:
    """(the chosen tensor-parallel degree, the plan) from the walk at each degree."""
    every: list[Layout] = []
    winners: dict[int, Layout] = {}
    for tp, rec in sorted(recs.items()):
        here = layouts(rec, tp, rate=rate, users=users, output_tokens=output_tokens,
                       usd_per_gpu_hour=usd_per_gpu_hour)
        every.extend(here)
        win = next((x for x in here if x.scheme == rec.scheme.id), None)
        if win is not None:
            winners[tp] = win
    chosen_tp = min(winners, key=lambda t: _key(winners[t]))
    chosen = winners[chosen_tp]
    best: dict[str, Layout] = {}
    for x in every:
        if x.scheme not in best or _key(x) < _key(best[x.scheme]):
            best[x.scheme] = x
    mark = {(chosen.scheme, chosen.tp)}
    every = [x.model_copy(update={"recommended": (x.scheme, x.tp) in mark}) for x in every]
    options = sorted((x.model_copy(update={"recommended": (x.scheme, x.tp) in mark}) for x in best.values()),
                     key=lambda x: (0 if (x.scheme, x.tp) in mark else 1, *_key(x), x.scheme))
    return chosen_tp, LoadPlan(rate_per_s=rate, users=users,
                               output_tokens_per_s=rate * output_tokens if rate is not None else None,
                               tp_degrees=sorted(recs), options=options, layouts=every)


def describe(p: LoadPlan, gpu_name: str, lead: int = 3) -> str:
    """``"12 req/s: w4a16 on 3 x H100 (3 replicas of TP1); or fp8-dynamic on 4 (2 x TP2) ..."``."""
    demand = (f"{p.rate_per_s:g} requests/s" if p.rate_per_s is not None else plural(p.users or 0, "concurrent user"))

    def one(x: Layout, first: bool) -> str:
        rep = f"{x.replicas} replica{'s' if x.replicas != 1 else ''} of TP{x.tp}"
        return (f"{x.scheme} on {x.gpus} x {gpu_name} ({rep})" if first else
                f"{x.scheme} on {plural(x.gpus, 'GPU')} ({rep})")

    head = p.options[0]
    rest = "; or ".join(one(x, False) for x in p.options[1:lead])
    return f"{demand}: {one(head, True)}" + (f"; or {rest}" if rest else "")


def walk_load(walk_at: Callable[[int], Recommendation], arch: ModelArch, gpu: GPU, w: Workload, *,
              fixed_gpus: bool, usd_per_gpu_hour: float | None) -> Recommendation:
    """The tree walked at each tensor-parallel degree (``walk_at(tp)``), then the GPUs each scheme needs
    for ``w.rate`` or ``w.users`` (:func:`plan`); the recommendation is the walk at the chosen degree,
    with a ``load`` trace node that says why."""
    from ..errors import InputError
    from ..perf.step import check_tensor_parallel

    # with --gpus N: every tensor-parallel degree that packs replicas into those N GPUs (N = 4 weighs
    # 4 x TP1, 2 x TP2 and TP4 against each other), else every degree on file
    degrees = ([t for t in defaults.TP_DEGREES if t <= w.gpus and w.gpus % t == 0] or [w.gpus]) if fixed_gpus \
        else list(defaults.TP_DEGREES)
    recs: dict[int, Recommendation] = {}
    first: InputError | None = None
    for t in degrees:
        try:
            check_tensor_parallel(arch, gpu, t)
            recs[t] = walk_at(t)
        except InputError as exc:
            first = first or exc
    if not recs:
        assert first is not None
        raise first
    tp, load_plan = plan(recs, rate=w.rate, users=w.users, output_tokens=w.output_tokens,
                         usd_per_gpu_hour=usd_per_gpu_hour)
    rec = recs[tp]
    skipped = [t for t in degrees if t not in recs]
    node = TraceNode(
        node="load",
        decision=describe(load_plan, gpu.name),
        numbers={"rate_per_s": w.rate, "users": w.users, "output_tokens": w.output_tokens, "tp_degrees": degrees,
                 "chosen_tp": tp, "gpus": {x.scheme: x.gpus for x in load_plan.options}},
        reasons=[f"{x.scheme}: {x.replicas} x TP{x.tp} = {x.gpus} GPU{'s' if x.gpus != 1 else ''}, each replica "
                 f"{x.tokens_per_s:,.0f} output tokens/s ({x.requests_per_s:,.2f} requests/s) at concurrency "
                 f"{x.concurrency:,}, {x.tokens_per_s_per_gpu:,.0f} tokens/s per GPU"
                 + (f", ${x.usd_per_hour:,.2f}/hour" if x.usd_per_hour is not None else "")
                 + (f"; at the load {x.at_load.in_flight:,.1f} requests in flight a replica, ITL "
                    f"{x.at_load.itl_s * 1e3:,.1f} ms, {x.at_load.wait_share:.1%} of requests wait for a slot"
                    if x.at_load is not None else "")
                 for x in load_plan.options]
        + ([f"tensor-parallel degree {', '.join(map(str, skipped))} cannot serve this model here (heads do not "
            "split, or nothing fits)"] if skipped else []))
    return rec.model_copy(update={"load": load_plan, "trace": [*rec.trace, node]})
