"""Serving targets (issue 15): the serving point, the SLO search, speculative decoding, $/Mtok, the
Pareto frontier and GPUs for a load. Every expected figure is derived by hand in the comments: from a
synthetic step model whose costs are round numbers, or from the spec sheet (``ideal``) of a bundled
model, never copied from the program's output."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from quantadvise.perf.queueing import capacity_replicas
from quantadvise.perf.serving import (
    Lengths,
    ParetoPoint,
    Slo,
    Speculation,
    largest_meeting,
    mark_frontier,
    non_dominated,
    pick,
    queued_ttft,
    serve,
    usd_per_mtok,
)

# -------------------------------------------------------------------------------------------------
# A synthetic step model with round costs (serve() reads decode / prefill / draft_time only)
# -------------------------------------------------------------------------------------------------


@dataclass
class _Cost:
    time_s: float
    bound: str = "memory"


class LinearStep:
    """decode step = 10 ms + 0.5 ms per token the step runs (B sequences x q queries);
    prefill = 0.01 ms per prompt token (B prompts of P tokens: B x P x 1e-5 s);
    one drafting pass = 1 ms."""

    def decode(self, batch, ctx=None, *, queries=1):
        return _Cost(0.010 + 0.0005 * batch * queries)

    def prefill(self, batch, prompt):
        return _Cost(batch * prompt * 1e-5, "compute")

    def draft_time(self, batch, ctx=None):
        return 0.001


class FreeVerification(LinearStep):
    """Verification of K+1 tokens costs what one token does and drafting is free: the algebra of
    speculation with no cost, so that only tokens per step can differ."""

    def decode(self, batch, ctx=None, *, queries=1):
        return _Cost(0.010 + 0.0005 * batch)

    def draft_time(self, batch, ctx=None):
        return 0.0


SYNC = Lengths(prompt=0, output=100, decode_ctx=1000, mode="sync")
CONT = Lengths(prompt=1000, output=100, decode_ctx=1050, mode="continuous")


def test_sync_itl_is_the_decode_step():
    # B = 4: t = 10 + 0.5 x 4 = 12 ms; synchronous, no prompt: ITL = t, tokens/s = 4 / 0.012 = 333.33
    p = serve(LinearStep(), SYNC, 4)
    assert p.step_s == pytest.approx(0.012)
    assert p.itl_s == pytest.approx(0.012)
    assert p.tokens_per_s == pytest.approx(333.333333, rel=1e-6)
    assert p.ttft_s is None and p.prefill_share is None
    # E2E = TTFT (none) + (O - 1) x ITL = 99 x 12 ms = 1.188 s
    assert p.e2e_s == pytest.approx(1.188)


def test_continuous_itl_prefill_share_and_ttft_under_load():
    # B = 8, prompt 1000, output 100. Decode step t = 10 + 0.5 x 8 = 14 ms.
    # Prefill of the 8 prompts that join while one request generates: P_8 = 8 x 1000 x 1e-5 = 80 ms.
    # ITL = (O x t + P_8) / O = (1400 + 80) / 100 = 14.8 ms; tokens/s = 8 / 0.0148 = 540.54
    # prefill share rho = 80 / 1480 = 2/37 = 0.054054; decode tokens/s = 8 / 0.014 = 571.43
    # TTFT under load (M/D/1): P_1 x (1 + rho / (2 (1 - rho))) = 10 ms x (1 + (2/37) / (2 x 35/37))
    #                        = 10 ms x (1 + 1/35) = 10.285714 ms
    # E2E = TTFT + 99 x ITL = 10.285714 + 1465.2 = 1475.485714 ms
    p = serve(LinearStep(), CONT, 8)
    assert p.itl_s == pytest.approx(0.0148)
    assert p.tokens_per_s == pytest.approx(540.540541, rel=1e-6)
    assert p.prefill_share == pytest.approx(2 / 37)
    assert p.decode_tokens_per_s == pytest.approx(571.428571, rel=1e-6)
    assert p.ttft_s == pytest.approx(0.010285714, rel=1e-6)
    assert p.e2e_s == pytest.approx(1.475485714, rel=1e-6)


def test_ttft_under_load_formula_and_its_cap():
    # rho = 0.5: M/D/1 waits 0.5 / (2 x 0.5) = 0.5 prefills -> TTFT = 1.5 x P_1
    assert queued_ttft(0.2, 0.5, 64) == pytest.approx(0.3)
    # rho = 0.9: 0.9 / 0.2 = 4.5 prefills ahead, but only B - 1 = 2 other requests are in flight -> 3 x P_1
    assert queued_ttft(0.2, 0.9, 3) == pytest.approx(0.6)
    # one request in flight: nothing queued ahead of it, TTFT = its own prefill
    assert queued_ttft(0.2, 0.9, 1) == pytest.approx(0.2)
    # rho = 0: no queue
    assert queued_ttft(0.2, 0.0, 64) == pytest.approx(0.2)


def test_slo_search_largest_concurrency_meeting_the_itl():
    # sync ITL = 10 + 0.5 B ms <= 20 ms  <=>  B <= 20: the search stops at 20, B = 21 breaks it (20.5 ms)
    sm = LinearStep()
    found = largest_meeting(lambda c: serve(sm, SYNC, c), 256, Slo(itl_s=0.020), "batch")
    assert found.point is not None and found.point.concurrency == 20
    assert found.point.itl_s == pytest.approx(0.020)
    assert found.limit == "itl"
    assert found.first_miss is not None and found.first_miss.concurrency == 21
    assert found.first_miss.itl_s == pytest.approx(0.0205)


def test_slo_search_bound_and_impossible_budget():
    sm = LinearStep()
    # the bound (16 sequences: 18 ms) meets 20 ms: the search bound is what limits it
    found = largest_meeting(lambda c: serve(sm, SYNC, c), 16, Slo(itl_s=0.020), "memory")
    assert found.point is not None and found.point.concurrency == 16 and found.limit == "memory"
    # 10 ms: one sequence already takes 10.5 ms -> nothing meets it, the miss is at 1
    found = largest_meeting(lambda c: serve(sm, SYNC, c), 256, Slo(itl_s=0.010), "batch")
    assert found.point is None and found.limit == "itl"
    assert found.first_miss is not None and found.first_miss.concurrency == 1


def test_slo_search_on_ttft_budget():
    # continuous, prompt 1000: TTFT(B) = 10 ms x (1 + min(rho/(2(1-rho)), B-1)), rho = P_B / (O t + P_B),
    # P_B = 10 B ms, t = 10 + 0.5 B ms, O = 100.
    # B = 40: P = 400, O t = 3000, rho = 400/3400 = 0.117647, wait = 0.117647 / 1.764706 = 0.066667
    #         -> TTFT = 10.6667 ms
    # B = 41: P = 410, O t = 3050, rho = 410/3460 = 0.118497, wait = 0.118497 / 1.763006 = 0.067213
    #         -> TTFT = 10.6721 ms
    # a 10.67 ms budget is met at 40 and broken at 41
    sm = LinearStep()
    found = largest_meeting(lambda c: serve(sm, CONT, c), 256, Slo(ttft_s=0.01067), "batch")
    assert found.point is not None and found.point.concurrency == 40
    assert found.point.ttft_s == pytest.approx(0.0106667, rel=1e-5)
    assert found.limit == "ttft"


# -------------------------------------------------------------------------------------------------
# Speculative decoding (Leviathan, Kalman & Matias, arXiv:2211.17192)
# -------------------------------------------------------------------------------------------------


def test_tokens_per_step_is_one_plus_k_times_a():
    assert Speculation(3, 0.0).tokens_per_step == 1.0
    assert Speculation(3, 0.5).tokens_per_step == pytest.approx(2.5)  # 1 + 3 x 0.5
    assert Speculation(4, 1.0).tokens_per_step == 5.0  # every draft accepted: K + 1 tokens


def test_per_token_acceptance_solves_leviathan_eq1():
    # Leviathan et al. eq. (1): E[tokens per step] = (1 - a^(K+1)) / (1 - a). With a = 0.8, K = 4:
    # (1 - 0.8^5) / 0.2 = (1 - 0.32768) / 0.2 = 3.3616 = 1 + 4 A  ->  A = 0.5904
    s = Speculation(4, 0.5904)
    assert s.tokens_per_step == pytest.approx(3.3616)
    assert s.per_token_acceptance() == pytest.approx(0.8, abs=1e-9)
    assert Speculation(4, 0.0).per_token_acceptance() == 0.0


def test_speculation_at_acceptance_zero_prices_as_no_speculation():
    # with free drafting and verification, A = 0 gives one token per step of the same length: exactly
    # the point without speculation
    sm = FreeVerification()
    base = serve(sm, CONT, 8)
    spec0 = serve(sm, CONT, 8, Speculation(3, 0.0))
    assert spec0 == base
    # K = 0 drafts nothing, whatever A: the same point as no speculation on any step model
    assert serve(LinearStep(), CONT, 8, Speculation(0, 0.7)) == serve(LinearStep(), CONT, 8)


def test_speculation_costs_and_gains():
    sm = LinearStep()
    # K = 3, A = 0.5, B = 4, synchronous: the verification step runs 4 x 4 = 16 tokens:
    # 10 + 0.5 x 16 = 18 ms, plus 3 drafting passes of 1 ms = 21 ms; tau = 2.5 tokens per step
    # ITL = 21 / 2.5 = 8.4 ms (12 ms without); decode tokens/s = 4 x 2.5 / 0.021 = 476.19
    p = serve(sm, SYNC, 4, Speculation(3, 0.5))
    assert p.step_s == pytest.approx(0.021)
    assert p.tokens_per_step == pytest.approx(2.5)
    assert p.itl_s == pytest.approx(0.0084)
    assert p.decode_tokens_per_s == pytest.approx(476.190476, rel=1e-6)
    # A = 0: the same 21 ms step yields one token -> ITL 21 ms, slower than 12 ms without speculation
    p0 = serve(sm, SYNC, 4, Speculation(3, 0.0))
    assert p0.itl_s == pytest.approx(0.021)
    assert p0.itl_s > serve(sm, SYNC, 4).itl_s


# -------------------------------------------------------------------------------------------------
# $ per million output tokens
# -------------------------------------------------------------------------------------------------


def test_usd_per_mtok():
    # $3.99/GPU-hour, 1 GPU, 450 tokens/s: 3.99 / (450 x 3600) x 1e6 = 3.99 / 1.62 = 2.462963
    assert usd_per_mtok(3.99, 1, 450.0) == pytest.approx(2.462963, rel=1e-6)
    # 2 GPUs at the same tokens/s cost twice as much per token
    assert usd_per_mtok(3.99, 2, 450.0) == pytest.approx(4.925926, rel=1e-6)
    # $2/GPU-hour, 1,000 tokens/s: 2 / 3.6e6 x 1e6 = 0.555556
    assert usd_per_mtok(2.0, 1, 1000.0) == pytest.approx(0.555556, rel=1e-6)
    assert usd_per_mtok(None, 1, 450.0) is None
    assert usd_per_mtok(3.99, 1, 0.0) is None


# -------------------------------------------------------------------------------------------------
# The Pareto frontier
# -------------------------------------------------------------------------------------------------


def _pt(scheme: str, batch: int, per_user: float, per_gpu: float, *, fits: bool = True,
        meets: bool | None = None) -> ParetoPoint:
    return ParetoPoint(scheme=scheme, ctx=1000, batch=batch, tokens_per_s=per_gpu, tokens_per_s_per_gpu=per_gpu,
                       tokens_per_s_per_user=per_user, itl_s=1 / per_user, ttft_s=None, e2e_s=1.0,
                       prefill_share=None, usd_per_mtok=None, bound="memory", fits=fits, meets_slo=meets)


def test_non_dominated_by_hand():
    # (per user, per GPU): A (100, 10), B (50, 30), C (40, 20), D (20, 50), E (20, 40)
    # C is beaten by B on both axes; E by D (same per-user speed, less per GPU). Frontier: A, B, D.
    pts = [_pt("x", 1, 100, 10), _pt("x", 2, 50, 30), _pt("x", 3, 40, 20), _pt("x", 4, 20, 50),
           _pt("x", 5, 20, 40)]
    assert sorted(non_dominated(pts)) == [0, 1, 3]


def test_mark_frontier_per_scheme_envelope_and_pick():
    # scheme a: (100, 10), (50, 30); scheme b: (80, 20), (30, 25), and (60, 60) that does not fit.
    # a's frontier: both; b's frontier: both fitting points (unfit points never count).
    # envelope over both: a(100,10) fastest per user; b(80,20) more per GPU; a(50,30) more again;
    # b(30,25) is beaten by a(50,30) -> not on the envelope.
    pts = mark_frontier([_pt("a", 1, 100, 10), _pt("a", 8, 50, 30), _pt("b", 1, 80, 20), _pt("b", 8, 30, 25),
                         _pt("b", 16, 60, 60, fits=False)])
    assert [p.on_frontier for p in pts] == [True, True, True, True, False]
    assert [p.best for p in pts] == [True, True, True, False, False]
    # the point to run at: the most per GPU that fits -> a at 8 (30)
    assert pick(pts) == 1
    # with a budget that a at 8 breaks, the most per GPU among those that meet it -> b at 8 (25)
    met = [p.model_copy(update={"meets_slo": p.batch != 8 or p.scheme != "a"}) for p in pts]
    assert pick(met) == 3


def test_pareto_frontier_is_monotone_on_a_real_model():
    # each scheme's frontier, walked from the fastest point for a user to the slowest, never loses
    # tokens/s per GPU (and strictly gains: a point that gains nothing is dominated)
    from quantadvise.api.roofline import roofline

    r = roofline("meta-llama/Llama-3.1-8B", "bf16,w4a16,fp8-dynamic", gpu="h100", pareto=True, prompt=1000,
                 output=200, ctx=1100, batches="1..1024", itl_ms=30)
    assert r.pareto is not None
    schemes = {p.scheme for p in r.pareto.points}
    assert schemes == {"bf16", "w4a16", "fp8-dynamic"}
    for s in schemes:
        front = sorted((p for p in r.pareto.points if p.scheme == s and p.on_frontier),
                       key=lambda p: -p.tokens_per_s_per_user)
        assert len(front) >= 3
        for a, b in zip(front, front[1:], strict=False):
            assert b.tokens_per_s_per_user <= a.tokens_per_s_per_user
            assert b.tokens_per_s_per_gpu > a.tokens_per_s_per_gpu
        # and no fitting point of the scheme beats a frontier point on both axes
        pts = [p for p in r.pareto.points if p.scheme == s and p.fits]
        for f in front:
            assert not any(q.tokens_per_s_per_user >= f.tokens_per_s_per_user
                           and q.tokens_per_s_per_gpu > f.tokens_per_s_per_gpu for q in pts)
    rec = r.pareto.recommended
    assert rec is not None and rec.fits and rec.meets_slo and rec.itl_s <= 0.030


# -------------------------------------------------------------------------------------------------
# GPUs for a load
# -------------------------------------------------------------------------------------------------


def test_replicas_for_a_rate_and_for_users():
    # 12 requests/s x 200 output tokens = 2,400 tokens/s; one replica delivers 450 -> ceil(5.33) = 6
    assert capacity_replicas(rate=12, users=None, output=200, tokens_per_s=450, concurrency=9) == 6
    # exactly 2 replicas' worth (900 / 450 = 2.0) needs 2, not 3
    assert capacity_replicas(rate=4.5, users=None, output=200, tokens_per_s=450, concurrency=9) == 2
    # 40 users in flight, 9 sequences per replica -> ceil(4.44) = 5
    assert capacity_replicas(rate=None, users=40, output=200, tokens_per_s=450, concurrency=9) == 5


# -------------------------------------------------------------------------------------------------
# recommend with latency budgets, on the spec sheet (ideal) of Llama-3-8B on one H100 SXM
# -------------------------------------------------------------------------------------------------
#
# Hand arithmetic (ideal: peak bandwidth 3.35 TB/s, no efficiency loss). Llama-3-8B has 8,030,261,248
# parameters of which the embedding is 128,256 x 4,096 = 525,336,576; a decode step reads one embedding
# row per token, so the bf16 weights it streams are (8,030,261,248 - 525,336,576) x 2 B = 15,009,849,344 B
# -> 15.0098e9 / 3.35e12 = 4.4806 ms. A bf16 KV cache is 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 B =
# 131,072 B per token; prompt 7,808 + output 384 -> a decode step reads prompt + output/2 = 8,000 tokens
# per sequence: 8,000 x 131,072 = 1.0486e9 B -> 0.3130 ms per sequence. Below the ridge (~295 for bf16)
# the step is memory-bound, so in synchronous serving ITL(B) = 4.4806 + 0.3130 B ms:
#   ITL <= 10 ms -> B <= (10 - 4.4806) / 0.3130 = 17.6 -> 17 (ITL 9.80 ms; 18 gives 10.11 ms)
#   ITL <= 20 ms -> B <= 49.6 -> 49
#   ITL <= 30 ms -> B <= 81 but memory holds fewer: vLLM 0.34.0's default share, 1.0 less the 1 GiB it keeps free
#                   after warmup: 85,520,809,984 - 1,073,741,824 = 84,447,068,160 B, less 2 GiB = 82,299,584,512 B,
#                   minus 16,060,522,496 B of weights = 66,239,062,016 B; a synchronous batch holds the full 8,192
#                   tokens x 131,072 B = 1,073,741,824 B per sequence -> 61.7 -> 61 sequences: memory binds.

IDEAL_8B = dict(model="meta-llama/Meta-Llama-3-8B", gpu="h100", ideal=True, mode="sync", candidates=["bf16"],
                kv_dtype="kv-bf16", prompt=7808, output=384)


@pytest.mark.parametrize(("itl_ms", "concurrency", "limit"), [(10, 17, "itl"), (20, 49, "itl"), (30, 61, "memory")])
def test_recommend_slo_search_at_a_known_itl(itl_ms, concurrency, limit):
    from quantadvise.api.recommend import recommend

    r = recommend(**IDEAL_8B, itl_ms=itl_ms)
    p = r.performance
    assert p.concurrency == concurrency
    assert p.limit == limit
    assert p.itl_s == pytest.approx((4.4806 + 0.3130 * concurrency) * 1e-3, rel=2e-3)
    assert p.itl_s <= itl_ms / 1e3
    # synchronous: a decode step emits B tokens per ITL; delivered tokens/s is B x output over the whole request
    # (prefill, then 384 tokens; the first comes with the prefill: E2E = TTFT + 383 x ITL)
    assert p.decode_tokens_per_s == pytest.approx(concurrency / p.itl_s)
    assert p.tokens_per_s == pytest.approx(concurrency * 384 / p.e2e_s)
    assert r.target is not None and r.target.itl_s == itl_ms / 1e3 and r.target.batch_is_bound
    assert r.target.max_concurrency == 256  # the search bound, also what workload.batch then says
    a = r.alternatives[0]
    assert (a.scheme, a.concurrency, a.limit, a.itl_s) == ("bf16", concurrency, limit, p.itl_s)


def test_recommend_gpus_for_a_rate():
    # At ITL <= 10 ms one replica (1 GPU) runs 17 sequences at 9.80 ms. Synchronous serving prefills the 17
    # prompts first (tests/cli/test_serving_cli.py test_rate_gives_the_gpu_count: P_17 ~ 2.147 s), so a request
    # takes E2E = 2.147 + 383 x 9.80 ms = 5.901 s and a replica delivers 17 x 384 / 5.901 = 1,106 tokens/s.
    # 10 requests/s x 384 output tokens = 3,840 tokens/s -> ceil(3,840 / 1,106) = ceil(3.47) = 4 replicas.
    from quantadvise.api.recommend import recommend

    r = recommend(**IDEAL_8B, itl_ms=10, rate=10, gpus=1)
    assert r.load is not None
    opt = r.load.options[0]
    assert (opt.scheme, opt.tp, opt.replicas, opt.gpus, opt.concurrency) == ("bf16", 1, 4, 4, 17)
    assert r.load.output_tokens_per_s == pytest.approx(3840)
    # 40 concurrent users at 17 per replica -> ceil(2.35) = 3 replicas
    r = recommend(**IDEAL_8B, itl_ms=10, users=40, gpus=1)
    assert r.load is not None and r.load.options[0].replicas == 3


def test_recommend_tensor_parallel_beats_replicas_for_a_rate():
    # Without --gpus every tensor-parallel degree is weighed. TP2 halves each GPU's bytes: ITL(B) =
    # 4.4806/2 + 0.3130/2 x B = 2.2403 + 0.1565 B ms (ideal: no communication latency), so ITL <= 10 ms
    # holds (10 - 2.2403) / 0.1565 = 49.6 -> 49 sequences at 9.909 ms. Their prefill on two GPUs' tensor cores:
    # 49 x 7,808 tokens x 13.959e9 FLOPs (linears) = 5.341e15 + attention 49 x 32 x 7,808 x 7,809 / 2 x 4 x 32 x
    # 128 = 7.83e14 -> 6.124e15 / (2 x 989.4e12) = 3.095 s; E2E = 3.095 + 383 x 9.909 ms = 6.890 s ->
    # 49 x 384 / 6.890 = 2,731 tokens/s per TP2 replica -> ceil(3,840 / 2,731) = 2 replicas, 4 GPUs; TP1
    # needs 4 replicas of 1 GPU (test above): the same 4 GPUs, and TP2 serves each user faster.
    from quantadvise.api.recommend import recommend

    r = recommend(**IDEAL_8B, itl_ms=10, rate=10)
    assert r.load is not None
    opt = r.load.options[0]
    assert (opt.tp, opt.replicas, opt.gpus, opt.concurrency) == (2, 2, 4, 49)
    tp1 = next(x for x in r.load.layouts if x.tp == 1)
    assert (tp1.replicas, tp1.gpus) == (4, 4)
    assert r.workload.gpus == 2  # the recommendation is the walk at the chosen degree
    # how busy the load keeps it: 3,840 tokens/s over the 2 replicas' output tokens/s X each. Two replicas are
    # needed, so 3,840 / 2 <= X < 3,840 and the share is in (0.5, 1]; docs/recommend.md works X out by hand with
    # the all-reduce traffic and a 3.6 s prefill: 49 x 384 / (3.6 + 383 x 9.99 ms) ~ 2,540 -> 3,840 / 5,080 = 0.756.
    # The load's tokens cost the 4 GPUs' $/hour whatever they do: 4 x $3.99 (data/pricing.yaml's H100 list price,
    # $31.92 / 8) / (3,840 x 3,600 tokens) x 1e6 = 15.96 / 13.824 = $1.1545 per million.
    assert opt.utilization == pytest.approx(3840 / (2 * opt.tokens_per_s))
    assert 0.5 < opt.utilization <= 1 and opt.utilization == pytest.approx(0.756, abs=0.01)
    assert opt.usd_per_mtok_at_load == pytest.approx(4 * 3.99 / (3840 * 3600) * 1e6, rel=1e-9)
    assert opt.usd_per_mtok_at_load == pytest.approx(1.1545, abs=1e-4)
    assert (tp1.utilization, tp1.usd_per_mtok_at_load) == (pytest.approx(3840 / (4 * tp1.tokens_per_s)),
                                                           pytest.approx(opt.usd_per_mtok_at_load))
    # --users: the load's tokens/s is not known (think time is not modelled), so neither figure is given
    u = recommend(**IDEAL_8B, itl_ms=10, users=40, gpus=1)
    assert u.load is not None and (u.load.options[0].utilization, u.load.options[0].usd_per_mtok_at_load) == (None, None)


def test_recommend_without_budgets_is_as_before():
    # no latency budget: the batch is the concurrency (the candidate holds it), nothing is searched
    from quantadvise.api.recommend import recommend

    r = recommend(**{**IDEAL_8B, "batch": 17})
    assert r.target is None
    assert r.workload.batch == 17 and r.performance.concurrency == 17 and r.performance.limit == "batch"
    # a budget that never binds, with the batch given, changes nothing: same scheme, concurrency, figures
    r2 = recommend(**{**IDEAL_8B, "batch": 17}, itl_ms=100)
    assert r2.target is not None and not r2.target.batch_is_bound and r2.target.max_concurrency == 17
    assert r2.scheme.id == r.scheme.id
    assert r2.performance.concurrency == 17 and r2.performance.limit == "batch"
    assert r2.performance.itl_s == r.performance.itl_s and r2.performance.tokens_per_s == r.performance.tokens_per_s
    # and the step it runs is the hand figure: 4.4806 + 17 x 0.3130 = 9.80 ms
    assert r.performance.step_time_s == pytest.approx(9.8016e-3, rel=2e-3)


def test_workload_file_keys_with_dashes_reach_the_targets():
    # a workload file may spell keys with dashes and say ``concurrency`` for ``batch``: the price given
    # there wins over the list price, and the concurrency is the bound the budgets search under
    from quantadvise.api.recommend import recommend

    r = recommend({**IDEAL_8B, "usd-per-gpu-hour": 2.0, "concurrency": 17, "itl-ms": 100})
    assert r.price is not None and r.price.kind == "given" and r.price.usd_per_gpu_hour == 2.0
    assert r.target is not None and r.target.max_concurrency == 17 and not r.target.batch_is_bound
    # $2/GPU-hour at tokens_per_s: 2 x 1 / (tokens/s x 3600) x 1e6
    tps = r.performance.tokens_per_s
    assert r.performance.usd_per_mtok == pytest.approx(2.0 / (tps * 3600) * 1e6)
    assert math.isclose(r.performance.concurrency, 17)


def test_users_bound_the_concurrency_each_replica_runs():
    # 200 concurrent users put at most 200 sequences in flight: no candidate may be priced at the
    # 256-sequence search bound (the audit found replicas "at concurrency 256" for 200 users)
    import quantadvise as api

    r = api.recommend(users=200)
    ranked = [a for a in r.alternatives if a.status in ("recommended", "runner-up", "slower")]
    assert ranked and all(a.concurrency <= 200 for a in ranked)
    assert all(o.concurrency <= 200 for o in r.load.options)


def test_a_gpu_count_weighs_replicas_against_tensor_parallel():
    # issue 15 item 2: "for the GPU count given, tensor parallel vs replicas vs quantizing". Four GPUs
    # hold 4 x TP1, 2 x TP2 or 1 x TP4 (each degree dividing 4); the 70B's 141 GB of bf16 weights need
    # more than one 80 GB GPU while its 39.5 GB W4A8 checkpoint fits on one, so the best layouts
    # differ in degree and the table compares them.
    import quantadvise as api

    r = api.recommend(model="meta-llama/Llama-3.1-70B", gpu="h100", rate=5, gpus=4)
    assert r.load.tp_degrees == [1, 2, 4]
    by = {o.scheme: o for o in r.load.options}
    assert by["bf16"].tp >= 2 and by["w4a8-fp8"].tp < by["bf16"].tp
    # W4A8 fits one GPU: its TP1 layout is weighed (which degree is best follows the kernel tables, issue 25)
    assert any(o.scheme == "w4a8-fp8" and o.tp == 1 for o in r.load.layouts)
    assert not any(o.scheme == "bf16" and o.tp == 1 for o in r.load.layouts)
    assert all(o.gpus == o.replicas * o.tp for o in r.load.options)


def test_a_rate_at_97_percent_of_one_replica_gets_a_second():
    # Llama-3-8B on one H100 (vLLM, continuous batching), 44 requests/s of 1,000 + 200 tokens: 8,800 output
    # tokens/s. The winner delivers about 9,000 at its 256 slots, so the capacity count is 1 replica at ~97% busy.
    # Tokens/s flattens as the GPU saturates: at 97% the replica holds most of its slots and arrivals often find
    # them all taken (asserted below with the wait unbounded); two replicas at ~49% each hold a few dozen
    # requests of 256 slots and none wait.
    from quantadvise.api.recommend import recommend
    from quantadvise.perf.queueing import at_load

    r = recommend(model="meta-llama/Meta-Llama-3-8B", gpu="h100", rate=44, prompt=1000, output=200)
    assert r.load is not None
    opt = r.load.options[0]
    assert opt.recommended and 8800 / opt.tokens_per_s > 0.95  # one replica's capacity would carry it, barely
    assert opt.replicas == 2 and opt.utilization == pytest.approx(8800 / (2 * opt.tokens_per_s))
    a = opt.at_load
    assert a is not None and a.wait_share < 1e-6 and a.in_flight < 64
    # its ITL at the load is the serving point of the concurrency it keeps, below the full-concurrency one
    assert a.itl_s < opt.itl_s
    for x in r.load.options:
        assert x.at_load is not None and x.at_load.wait_share <= 0.05
    # the capacity count (one replica) with the wait unbounded, on a stand-in replica with the winner's capacity
    # whose tokens/s saturates as c / (c + 40) (the shape of a decode step that grows with the batch): at 97% busy
    # more than 5% of arrivals find every slot taken
    from quantadvise.perf.serving import ServePoint

    top = ServePoint(concurrency=opt.concurrency, step_s=0.0, tokens_per_step=1.0, itl_s=opt.itl_s,
                     ttft_s=opt.ttft_s, e2e_s=opt.itl_s * 199 + (opt.ttft_s or 0.0), tokens_per_s=opt.tokens_per_s,
                     decode_tokens_per_s=opt.tokens_per_s, prefill_share=0.0, bound="memory")

    def scaled(c: int) -> ServePoint:
        x = opt.tokens_per_s * (c / (c + 40)) / (top.concurrency / (top.concurrency + 40))
        return ServePoint(concurrency=c, step_s=0.0, tokens_per_step=1.0, itl_s=c / x, ttft_s=0.0,
                          e2e_s=200 * c / x, tokens_per_s=x, decode_tokens_per_s=x, prefill_share=0.0,
                          bound="memory")

    one = at_load(scaled, top, rate=44, users=None, output=200, max_wait_share=1.0)
    assert one is not None and one.replicas == 1 and one.wait_share > 0.05
