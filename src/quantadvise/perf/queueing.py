"""A load on replicas: how many replicas an open-loop request rate needs, and what a user sees at it.

A replica serves requests of fixed lengths with continuous batching, at most ``slots`` at once (the
concurrency it was priced at: ``--max-num-seqs``, the KV cache or a latency budget); requests arrive at
random (Poisson) at ``λ = rate / replicas`` per replica. With ``n`` requests running, the replica
finishes requests at ``μ(n) = X(n) / O`` per second (``X(n)`` its output tokens/s at concurrency ``n``,
the serving point; ``O`` output tokens per request): all of them advance together, as in a
processor-sharing server whose speed depends on how many it serves. Past ``slots`` the engine queues the
rest (vLLM's and SGLang's waiting queue) and finishes at ``μ(slots)``. The requests in flight are then a
birth-death process, arrivals at ``λ``, completions at ``μ(min(n, slots))``, whose stationary law is

    p(n) ∝ Π_{k=1..n} λ / μ(min(k, slots))        (stable while λ < μ(slots), i.e. utilization < 1)

From it: the share of requests that find every slot taken and wait (``P(N >= slots)``, arrivals see the
stationary law), the mean wait for a slot (``E[queue] / λ``, Little's law) and the mean concurrency the
replica runs (``E[min(N, slots)]``), whose serving point gives the ITL and TTFT at the load; TTFT and E2E
add the wait. Because ``X(n)`` flattens as the GPU saturates, a replica at 97% of its tokens/s holds
far more requests than one at 50% and queues often: the fewest replicas that carry the load
(``ceil(R x O / X(slots))``) are not a plan. The plan adds replicas until at most
:data:`~quantadvise.defaults.LOAD_WAIT_SHARE` of the requests wait for a slot and the TTFT and E2E
budgets (``--ttft-ms``, ``--e2e-ms``) hold at the load, wait included. ``X(n)`` is priced at ``slots``, its
halves down to a 32nd and one sequence, and interpolated between them.

A replica of several attention data-parallel groups (each its own scheduler and waiting queue) is taken as one
pool of slots: the engines route each request to a lightly loaded group — vLLM 0.34.0 to the engine with the
fewest waiting + running requests (``vllm/v1/engine/core_client.py:1836-1862``), SGLang 0.5.23 round-robin by
default (``sglang/srt/arg_groups/serving_hook.py:222-234``) — so no group queues while another has free slots,
as far as the mean goes. This is continuous batching's queue. Synchronous batches (``--mode sync``) make an arriving request wait for
the next batch, not for a slot: their plan stays the capacity count, and their figures those at full
concurrency. With ``--users N`` (a closed loop: N sequences in flight, think time not modelled) nothing queues:
``ceil(N / slots)`` replicas, each at ``ceil(N / replicas)`` sequences. Pure.
"""

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import defaults
from ..results import Out

if TYPE_CHECKING:
    from .serving import ServePoint

AT_LOAD_NOTE = ("at the load: the requests in flight per replica as arrivals and completions at its serving "
                "points (a birth-death process), ITL and TTFT at the concurrency it runs on average, TTFT with the "
                "mean wait for a free slot")
_HALVINGS = 5  # the rates are priced at slots, slots / 2 ... slots / 32 and the smallest concurrency
_MAX_STEPS = 1 << 20  # replicas added past the capacity count before the plan stops looking (never reached in practice)


class AtLoad(Out):
    """One layout under the load: replicas and what a user sees on each (module docstring)."""

    replicas: int
    slots: int  # requests a replica runs at once (the concurrency it was priced at)
    in_flight: float  # mean requests in flight per replica, queued ones included (users: users / replicas)
    concurrency: int  # the concurrency it runs on average (rounded): its ITL and TTFT are this point's
    tokens_per_s: float  # output tokens/s the load asks of one replica
    utilization: float  # that over the replica's tokens/s at ``slots``
    itl_s: float
    ttft_s: float | None  # None: no prompt
    e2e_s: float  # wait for a slot included
    wait_share: float  # share of requests that find every slot taken
    wait_s: float  # mean wait for a slot over all requests


def capacity_replicas(*, rate: float | None, users: int | None, output: int, tokens_per_s: float,
                      concurrency: int) -> int:
    """The fewest replicas whose capacity covers the load, before any wait is weighed: ``ceil(rate x output /
    tokens_per_s)`` or ``ceil(users / concurrency)`` (1 without a load). A lower bound of :func:`at_load`'s."""
    if rate is not None:
        return max(1, math.ceil(rate * output / tokens_per_s - 1e-9))
    if users is not None:
        return max(1, math.ceil(users / concurrency - 1e-9))
    return 1


def occupancy(rates: list[float], lam: float) -> tuple[float, float, float]:
    """(share of arrivals that wait, mean requests running, mean requests queued) of the birth-death
    process with arrivals at ``lam`` and completions at ``rates[n - 1]`` with ``n`` running (``n`` up to
    ``len(rates)``, the slots; past them at ``rates[-1]``). ``(1, slots, inf)`` when it is not stable."""
    slots = len(rates)
    if lam <= 0.0:
        return 0.0, 0.0, 0.0
    if min(rates) <= 0.0 or lam >= rates[-1]:  # a state that never completes, or arrivals past the capacity
        return 1.0, float(slots), math.inf
    rho = lam / rates[-1]
    logs = [0.0]  # log p(n) up to the normalisation, n = 0 .. slots
    for mu in rates:
        logs.append(logs[-1] + math.log(lam / mu))
    top = max(logs)
    w = [math.exp(x - top) for x in logs]
    tail = w[-1] * rho / (1.0 - rho)  # n > slots: geometric in rho
    z = sum(w) + tail
    wait = (w[-1] + tail) / z
    running = (sum(n * x for n, x in enumerate(w)) + slots * tail) / z
    queued = w[-1] * rho / (1.0 - rho) ** 2 / z
    return wait, running, queued


def _rates(tokens_per_s: Callable[[int], float], slots: int, unit: int, output: int) -> list[float]:
    """Completions per second with 1 .. ``slots`` requests running: ``tokens_per_s(n) / output`` at ``slots``,
    its halves down to a 32nd and the smallest concurrency (whole multiples of ``unit``), linear between them
    (proportional below the first). Coarse where the requests in flight are few: there nothing waits, the rates
    below the mean only scale every higher state's weight alike, and the ITL at the load is priced at its own
    concurrency, not read from here."""
    cs = sorted({unit, *(max(unit, (slots >> k) // unit * unit) for k in range(_HALVINGS + 1)), slots})
    xs = [tokens_per_s(c) / output for c in cs]
    out: list[float] = []
    j = 0  # cs[j] is the first point at or above n
    for n in range(1, slots + 1):
        while cs[j] < n:
            j += 1
        if cs[j] == n:
            out.append(xs[j])
        elif j == 0:
            out.append(xs[0] * n / cs[0])
        else:
            lo, hi = cs[j - 1], cs[j]
            out.append(xs[j - 1] + (xs[j] - xs[j - 1]) * (n - lo) / (hi - lo))
    return out


def at_load(price: "Callable[[int], ServePoint]", top: "ServePoint", *, rate: float | None, users: int | None,
            output: int, ttft_s: float | None = None, e2e_s: float | None = None, itl_s: float | None = None,
            unit: int = 1, max_wait_share: float = defaults.LOAD_WAIT_SHARE) -> AtLoad | None:
    """Replicas for ``rate`` requests/s (or ``users`` in flight) of ``output`` tokens each, a replica priced
    by ``price(concurrency)`` up to ``top`` (its point at the concurrency it runs), and each replica at the
    load; ``unit``: concurrency comes in whole multiples of it (pipeline micro-batches, attention groups).
    The budgets (``ttft_s``, ``e2e_s``, ``itl_s``) are weighed at the concurrency the load runs, not only at
    ``top``: a kernel's published time is not monotone in the rows it runs (a tile configuration, a spike in
    one M column), so fewer sequences in flight can make a step longer. None without a load."""
    slots = top.concurrency
    if rate is None:
        if users is None:
            return None
        n = capacity_replicas(rate=None, users=users, output=output, tokens_per_s=top.tokens_per_s, concurrency=slots)
        c = min(slots, -(-math.ceil(users / n) // unit) * unit)
        p = top if c == slots else price(c)
        return AtLoad(replicas=n, slots=slots, in_flight=users / n, concurrency=c, tokens_per_s=p.tokens_per_s,
                      utilization=p.tokens_per_s / top.tokens_per_s, itl_s=p.itl_s, ttft_s=p.ttft_s, e2e_s=p.e2e_s,
                      wait_share=0.0, wait_s=0.0)
    seen: dict[int, ServePoint] = {slots: top}

    def priced(c: int) -> "ServePoint":
        if c not in seen:
            seen[c] = price(c)
        return seen[c]

    rates = _rates(lambda c: priced(c).tokens_per_s, slots, unit, output)
    n0 = capacity_replicas(rate=rate, users=None, output=output, tokens_per_s=top.tokens_per_s, concurrency=slots)

    def at(replicas: int) -> AtLoad | None:
        lam = rate / replicas
        share, running, queued = occupancy(rates, lam)
        if math.isinf(queued):
            return None
        c = min(slots, max(unit, round(running / unit) * unit))
        p = priced(c)
        wait = queued / lam
        return AtLoad(replicas=replicas, slots=slots, in_flight=running + queued, concurrency=c,
                      tokens_per_s=lam * output, utilization=lam * output / top.tokens_per_s, itl_s=p.itl_s,
                      ttft_s=p.ttft_s + wait if p.ttft_s is not None else None, e2e_s=p.e2e_s + wait,
                      wait_share=share, wait_s=wait)

    def good(x: AtLoad | None) -> bool:
        return x is not None and x.wait_share <= max_wait_share and (
            ttft_s is None or x.ttft_s is None or x.ttft_s <= ttft_s) and (e2e_s is None or x.e2e_s <= e2e_s) and (
            itl_s is None or x.itl_s <= itl_s)

    # the wait and the latencies fall as replicas are added: step out by doubling, then bisect
    bad, step, last = n0 - 1, 1, at(n0)
    hi = n0
    while not good(last):
        if last is not None and last.concurrency <= unit and last.wait_share < 1e-9:
            return last  # one unit of sequences per replica and no wait: more replicas change nothing
        if step > _MAX_STEPS:
            return last
        bad, hi = hi, n0 + step
        step *= 2
        last = at(hi)
    while hi - bad > 1:
        mid = (bad + hi) // 2
        got = at(mid)
        if good(got):
            hi, last = mid, got
        else:
            bad = mid
    return last
