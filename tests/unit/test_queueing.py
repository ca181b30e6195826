"""A load on replicas (perf/queueing.py): the requests in flight as a birth-death process, the wait for a
slot, and the replicas a --rate plan adds until few requests wait. Expected values come from the textbook
closed forms of M/M/1 and M/M/s (Erlang C written as its sum, not the recursion the code uses)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from quantadvise.perf.queueing import at_load, capacity_replicas, occupancy
from quantadvise.perf.serving import ServePoint


def erlang_c_sum(s: int, a: float) -> float:
    """Erlang C from its closed form, in exact rationals: (a^s / s! · s / (s − a)) / (Σ_{k<s} a^k / k! +
    a^s / s! · s / (s − a))."""
    q = Fraction(a).limit_denominator(10**6)
    top = q**s / math.factorial(s) * s / (s - q)
    return float(top / (sum(q**k / math.factorial(k) for k in range(s)) + top))


def test_one_slot_is_mm1():
    # M/M/1 at rho = 0.7: an arrival waits with probability rho; mean queue rho^2 / (1 - rho) = 0.49 / 0.3;
    # mean running (server busy) = rho
    share, running, queued = occupancy([1.0], 0.7)
    assert share == pytest.approx(0.7)
    assert running == pytest.approx(0.7)
    assert queued == pytest.approx(0.49 / 0.3)


@pytest.mark.parametrize(("s", "a"), [(2, 1.0), (4, 3.5), (10, 7.0), (64, 55.0), (256, 240.0)])
def test_linear_completions_are_mms(s, a):
    # completions n·mu with n running up to s slots, s·mu past them: the M/M/s queue. Share waiting = Erlang C;
    # mean queue Lq = C · a / (s − a); mean busy servers = a (mu = 1: offered load a Erlangs)
    share, running, queued = occupancy([float(n) for n in range(1, s + 1)], a)
    c = erlang_c_sum(s, a)
    assert share == pytest.approx(c, rel=1e-9)
    assert queued == pytest.approx(c * a / (s - a), rel=1e-9)
    assert running == pytest.approx(a, rel=1e-9)


def test_erlang_c_two_servers_by_hand():
    # s = 2, a = 1: B(2, 1) = (1/2) / (1 + 1 + 1/2) = 0.2; C = 2 x 0.2 / (2 - 1 x 0.8) = 1/3
    assert occupancy([1.0, 2.0], 1.0)[0] == pytest.approx(1 / 3)


def test_unstable_load_queues_without_bound():
    share, running, queued = occupancy([1.0, 2.0, 3.0], 3.0)  # arrivals at the full capacity
    assert (share, running, queued) == (1.0, 3.0, math.inf)
    # a state that never completes (no tokens/s) cannot drain either; no arrivals: nothing in flight
    assert occupancy([0.0, 2.0], 1.0) == (1.0, 2.0, math.inf)
    assert occupancy([1.0, 2.0], 0.0) == (0.0, 0.0, 0.0)


def _linear(c: int) -> ServePoint:
    # a replica whose tokens/s grows as 10 x c (ITL 0.1 s whatever the concurrency), 10-token outputs: each
    # request takes E2E = 0.05 s TTFT + 9 x 0.1 = 0.95 s... and completes at c requests/s with c running
    return ServePoint(concurrency=c, step_s=0.1, tokens_per_step=1.0, itl_s=0.1, ttft_s=0.05, e2e_s=0.95,
                      tokens_per_s=10.0 * c, decode_tokens_per_s=10.0 * c, prefill_share=0.0, bound="memory")


def test_rate_plan_adds_replicas_until_few_wait():
    # 4 slots, completions n req/s with n running: each replica is an M/M/4 queue with mu = 1. 7 requests/s
    # need ceil(7 x 10 / 40) = 2 replicas' capacity; Erlang C by hand with a = 7 / replicas:
    #   2 -> a = 3.5: 0.738; 3 -> 2.333: 0.266; 4 -> 1.75: 0.118; 5 -> 1.4: 0.0603; 6 -> 1.1667: 0.0338 <= 5%
    assert capacity_replicas(rate=7, users=None, output=10, tokens_per_s=40, concurrency=4) == 2
    got = at_load(_linear, _linear(4), rate=7, users=None, output=10)
    assert got is not None and got.replicas == 6
    a = 7 / 6
    assert got.wait_share == pytest.approx(erlang_c_sum(4, a), rel=1e-9)
    assert got.wait_share == pytest.approx(0.0338, abs=5e-4)
    # mean wait over all requests (Little): Lq / lambda = C / (s mu - lambda) = 0.0338 / (4 - 1.1667) = 0.01194 s
    assert got.wait_s == pytest.approx(erlang_c_sum(4, a) / (4 - a), rel=1e-9)
    assert got.ttft_s == pytest.approx(0.05 + got.wait_s)
    assert got.e2e_s == pytest.approx(0.95 + got.wait_s)
    # in flight = a + Lq; it runs round(a) = 1 sequence on average; busy = 70 / 6 tokens/s over 40
    assert got.in_flight == pytest.approx(a + erlang_c_sum(4, a) * a / (4 - a), rel=1e-9)
    assert got.concurrency == 1
    assert got.utilization == pytest.approx(70 / 6 / 40)


def test_the_wait_share_is_a_setting():
    # allowing half the requests to wait: 3 replicas (0.266) are enough, 2 (0.738) are not
    got = at_load(_linear, _linear(4), rate=7, users=None, output=10, max_wait_share=0.5)
    assert got is not None and got.replicas == 3


def test_a_ttft_budget_adds_replicas_for_the_wait():
    # with a TTFT budget of 0.06 s the wait may add 0.01 s at most: 6 replicas wait 0.01194 s, so 7:
    # a = 1: C(4, 1) = (1/24 x 4/3) / (1 + 1 + 1/2 + 1/6 + 1/18) = 0.05556 / 2.7222 = 0.0204; wait 0.0204 / 3 = 0.0068
    got = at_load(_linear, _linear(4), rate=7, users=None, output=10, ttft_s=0.06)
    assert got is not None and got.replicas == 7
    assert got.wait_s == pytest.approx(erlang_c_sum(4, 1.0) / 3, rel=1e-9)


def test_users_spread_over_the_replicas():
    # 10 users, 4 slots: ceil(10 / 4) = 3 replicas, each at ceil(10 / 3) = 4 sequences; nothing queues
    got = at_load(_linear, _linear(4), rate=None, users=10, output=10)
    assert got is not None
    assert (got.replicas, got.concurrency, got.wait_share, got.wait_s) == (3, 4, 0.0, 0.0)
    assert got.in_flight == pytest.approx(10 / 3)


def test_no_load_no_plan():
    assert at_load(_linear, _linear(4), rate=None, users=None, output=10) is None


def test_concurrency_in_whole_units():
    # a pipeline of 2 stages runs sequences in pairs: 8 slots, unit 2. 14 requests/s: completions are still c
    # requests/s with c running (the linear replica), so the wait is M/M/8's; the concurrency it runs is even
    got = at_load(_linear, _linear(8), rate=14, users=None, output=10, unit=2)
    assert got is not None and got.concurrency % 2 == 0
    a = 14 / got.replicas
    assert got.wait_share == pytest.approx(erlang_c_sum(8, a), rel=1e-9) and got.wait_share <= 0.05
    # and one replica fewer would leave more than 5% waiting (the plan is the fewest that do not)
    assert got.replicas == 1 or erlang_c_sum(8, 14 / (got.replicas - 1)) > 0.05 or 14 / (got.replicas - 1) >= 8


def test_a_huge_rate_is_planned_in_few_steps():
    # 1,000,000 requests/s on the 4-slot linear replica: the capacity count is 1e6 x 10 / 40 = 250,000 replicas,
    # the plan the fewest n with Erlang C(4, 1e6 / n) <= 5% — found by the closed form here, one n at a time
    # around the threshold offered load a* (C(4, 1.1667) = 0.034 < 5% < C(4, 1.4) = 0.060)
    got = at_load(_linear, _linear(4), rate=1e6, users=None, output=10)
    lo, hi = 1.1, 1.5
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if erlang_c_sum(4, mid) <= 0.05 else (lo, mid)
    n = math.ceil(1e6 / lo)
    while erlang_c_sum(4, 1e6 / (n - 1)) <= 0.05:
        n -= 1
    while erlang_c_sum(4, 1e6 / n) > 0.05:
        n += 1
    assert got is not None and got.replicas == n
