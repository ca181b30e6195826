"""The layout search (advisor/layouts.py, layout_search.py, disagg.py) and a layout's step (perf/parallel.py).

Expected figures are derived from the step model's own terms (the arithmetic of the layout model in the
comments), or are the issue's acceptance cases."""

from __future__ import annotations

import math
from functools import cache

import pytest

from quantadvise import catalog
from quantadvise.api.speed import efficiency
from quantadvise.catalog.resolve import get_gpu, load_model, load_profiles
from quantadvise.engines.flags import PARALLEL, layout_args
from quantadvise.perf.comm import Comm
from quantadvise.perf.parallel import LayoutStep, Parallel
from quantadvise.perf.serving import Slo, largest_meeting
from quantadvise.perf.step import StepModel


@cache
def _models(model: str, gpu: str, scheme: str, tp: int):
    arch, _ = load_model(model)
    g = get_gpu(gpu)
    s = catalog.scheme_from_preset(catalog.scheme_preset(scheme))
    eff = efficiency(load_profiles(False, None, g), g, s)
    return arch, g, StepModel(arch, s, g, gpus=tp, efficiency=eff), StepModel(arch, s, g, gpus=1, efficiency=eff)


def test_parallel_shapes_and_weights_per_gpu():
    p = Parallel(tp=1, dp=16, ep=True)
    assert (p.gpus, p.expert_gpus, p.family, p.label) == (16, 16, "DP+EP", "DP16+EP16")
    # 100 B of weights, 80 of them routed experts: 20 dense on each GPU (attention TP 1) + 80 / 16
    assert p.weights_per_gpu(100, 80) == pytest.approx(20 + 5)
    q = Parallel(tp=8, pp=2)
    assert (q.gpus, q.family, q.label) == (16, "TP+PP", "TP8xPP2")
    assert q.weights_per_gpu(160, 0) == pytest.approx(10)


def test_a_tp_layout_is_the_groups_step_with_the_measured_collectives():
    """TP8 of Llama-3.1-70B on H100: the group's step without its own all-reduce term, plus 2 x 80 + 1
    all-reduces of b x 8192 x 2 B (and the logits gather) priced from the measured table."""
    arch, g, sm, _ = _models("meta-llama/Llama-3.1-70B", "h100", "fp8-dynamic", 8)
    comm = Comm(catalog.comm_system(g.id), "vllm")
    ls = LayoutStep(sm, Parallel(tp=8), comm)
    c, base = ls.decode(32, 2000), sm.decode(32, 2000)
    ar = comm.allreduce(32 * 8192 * 2, 8)
    gather = comm.p2p(32 * arch.vocab_size * 2 * 7 / 8, cross_node=False)
    assert c.communication_s == pytest.approx((2 * 80 + 1) * ar + gather)
    assert c.time_s == pytest.approx(base.time_s - base.communication_s + c.communication_s)


def test_a_pipeline_of_two_runs_two_micro_batches_of_half_the_sequences():
    """TP8 x PP2: B = 64 sequences in 2 micro-batches of 32; a step is the larger of one pass through both
    stages (the group's step at 32 plus one hand-off) and two passes of the slowest stage."""
    arch, g, sm, _ = _models("meta-llama/Llama-3.1-70B", "h100", "fp8-dynamic", 8)
    comm = Comm(catalog.comm_system(g.id), "vllm")
    pp = LayoutStep(sm, Parallel(tp=8, pp=2), comm)
    tp = LayoutStep(sm, Parallel(tp=8), comm)
    one = tp.decode(32, 2000).time_s
    hop = comm.p2p(32 * 8192 * 2, cross_node=True)  # 8 GPUs per node: the stage boundary is the node's
    head = sm.linear_time(32, decoder_only=False) - sm.linear_time(32)
    full = 2 * ((one - head - sm.overhead_s) / 2 + head + sm.overhead_s)
    assert pp.decode(64, 2000).time_s == pytest.approx(max(one + hop, full))
    # one sequence: one micro-batch, no bubble, the latency of the whole model
    assert pp.decode(1, 2000).time_s == pytest.approx(tp.decode(1, 2000).time_s + comm.p2p(8192 * 2, cross_node=True))


def test_expert_parallel_prices_the_experts_on_one_gpu_over_the_ranks():
    """DP8 + EP8 of DeepSeek-V3 at 64 sequences: 8 per attention group; each GPU runs 1/8 of the experts for the
    tokens of all groups: the one-GPU model's expert time at 64 tokens / 8 in place of the group's."""
    arch, g, sm1, _ = _models("deepseek-ai/DeepSeek-V3", "h200", "fp8-block", 1)
    comm = Comm(catalog.comm_system(g.id), "vllm")
    ls = LayoutStep(sm1, Parallel(tp=1, dp=8, ep=True), comm, experts=sm1)
    c = ls.decode(64, 1100)
    base = sm1.decode(8, 1100)
    swap = sm1.expert_time(64) / 8 - sm1.expert_time(8)
    a2a = len(arch.moe_layers) * comm.dispatch_combine(8, hidden=arch.hidden_size, top_k=arch.experts_per_token, gpus=8)
    assert c.communication_s == pytest.approx(a2a)  # attention TP 1: no all-reduce
    assert c.time_s == pytest.approx(base.time_s - base.communication_s + swap + a2a)


def test_each_data_parallel_rank_admits_the_releases_max_num_seqs():
    """vLLM runs one engine core per data-parallel rank (vllm 0.33.0 vllm/v1/engine/core.py:121 EngineCore builds
    its own Scheduler at :180, DPEngineCoreProc :2281 per rank), each admitting max_num_seqs requests
    (vllm/v1/core/sched/scheduler.py:131 max_num_running_reqs = scheduler_config.max_num_seqs). A DP8 replica
    therefore runs 8 x max_num_seqs at once. Before: the loop capped the whole replica at one rank's 1,024, so
    at 2,048 sequences half of them queued and TTFT was 42.7 s (the queue), not the prefill."""
    from quantadvise.perf.loop import running

    arch, g, sm1, _ = _models("deepseek-ai/DeepSeek-V3", "h200", "fp8-block", 1)
    facts = catalog.engine_loop(g, "vllm", "0.34.0", tp=1).facts
    ls = LayoutStep(sm1, Parallel(tp=1, dp=8, ep=True), Comm(catalog.comm_system(g.id), "vllm"), experts=sm1)
    cap = facts.max_seqs
    assert running(2 * cap, facts, sm1, None, 1920) == (cap, "max_num_seqs")  # one engine: its own cap
    assert running(2 * cap, facts, ls, None, 1920) == (2 * cap, "concurrency")  # eight engines: 8 x cap
    assert running(9 * cap, facts, ls, None, 1920) == (8 * cap, "max_num_seqs")


@pytest.mark.parametrize("hi,unit", [(256, 1), (1024, 4), (2048, 8)])
@pytest.mark.parametrize("budget", [0.02, 0.05, 0.2, 2.0])
def test_the_fast_concurrency_search_finds_what_bisection_finds(hi, unit, budget):
    """Regula falsi over the concurrency (advisor.layouts.search_concurrency) against the plain bisection of
    perf.serving.largest_meeting, on a convex latency curve (a step that grows past a knee)."""
    from quantadvise.advisor.layouts import search_concurrency
    from quantadvise.perf.serving import ServePoint

    def at(c: int) -> ServePoint:
        itl = 0.01 + 1e-4 * c + (max(0, c - 300) * 4e-4) ** 1.5
        return ServePoint(concurrency=c, step_s=itl, tokens_per_step=1, itl_s=itl, ttft_s=0.1, e2e_s=itl * 100,
                          tokens_per_s=c / itl, decode_tokens_per_s=c / itl, prefill_share=0.0, bound="memory")

    slo = Slo(itl_s=budget)
    fast = search_concurrency(at, hi, slo, "batch", unit)
    slow = largest_meeting(lambda u: at(u * unit), hi // unit, slo, "batch")
    assert (fast.point.concurrency if fast.point else None) == (slow.point.concurrency if slow.point else None)


@cache
def _acceptance():
    from quantadvise.api.recommend import recommend

    return recommend(model="deepseek-ai/DeepSeek-V3", gpu="h100,h200,b200", max_gpus=64, rate=20, prompt=1000,
                     output=200, itl_ms=50)


def test_the_itl_budget_holds_at_the_concurrency_the_load_runs():
    """A published kernel time is not monotone in M: B200 vLLM CUTLASS fp8 times 7168 x 16384 at 87.8 us at M = 48
    between 29.8 us at 33 and 29.7 at 49 (aiconfigurator-core 0.12.0, vllm 0.24.0), so a decode pool sized at the
    top of its range (DP8+EP8: 256 sequences, 32 per GPU) can run a longer step at the load (104 in flight, 13 per
    GPU). Every row's ITL at the load stays within the 30 ms budget; before, a B200 P/D row printed 31.1 ms."""
    from quantadvise.api.recommend import recommend

    r = recommend(model="deepseek-ai/DeepSeek-V3", gpu="h100,h200,b200", max_gpus=64, rate=20, prompt=1000,
                  output=200, itl_ms=30)
    assert r.layouts is not None and r.layouts.rows
    for x in r.layouts.rows:
        assert x.itl_s <= 0.030 * (1 + 1e-9), x.layout
        assert x.at_load is not None and x.at_load.itl_s <= 0.030 * (1 + 1e-9), (x.layout, x.at_load.itl_s)


def test_deepseek_at_20_requests_per_s_on_h100_h200_b200_is_a_ranked_table():
    """The issue's acceptance: a ranked table of scheme x GPU x layout with costs, every GPU type weighed, every
    row meeting the ITL budget and serving the load within the pool."""
    r = _acceptance()
    found = r.layouts
    assert found is not None and found.rows
    assert {x.gpu for x in found.rows} == {"h100-sxm", "h200", "b200"}
    assert {x.family for x in found.rows} >= {"TP", "TP+EP", "DP+EP", "P/D"}
    need = 20 * 200  # output tokens/s
    for x in found.rows:
        assert x.itl_s <= 0.050 + 1e-9 and x.gpus <= 64
        assert x.replicas * x.tokens_per_s >= need - 1e-6  # the replicas carry the load
        # $/Mtok at the load: GPUs x $/GPU-hour over the load's tokens
        price = catalog.gpu_price(x.gpu).usd_per_gpu_hour
        assert x.usd_per_mtok_at_load == pytest.approx(price * x.gpus / (need * 3600) * 1e6)
    assert [x.rank for x in found.rows] == list(range(1, len(found.rows) + 1))
    assert found.rows[0].recommended and r.scheme.id == found.rows[0].scheme
    assert r.performance.tokens_per_s == pytest.approx(found.rows[0].tokens_per_s)


def test_the_winners_commands_are_options_the_release_registers():
    r = _acceptance()
    plan = r.layouts.plan
    assert plan is not None and plan.engines["vllm"]
    vocab = catalog.flag_vocabulary("vllm", r.workload.engine_version)
    for node in plan.engines["vllm"]:
        for word in node.command.split():
            if word.startswith("--"):
                assert vocab.lookup(word, suggest=False).verdict == "known", word


@pytest.mark.parametrize("release", ["vllm-0.33.0", "sglang-0.5.23"])
@pytest.mark.parametrize("shape", [dict(tp=8), dict(tp=8, pp=2), dict(tp=4, ep=True), dict(tp=1, dp=16, ep=True),
                                   dict(tp=8, pp=4, ep=True)])
@pytest.mark.parametrize("rank", [0, 1])
def test_every_layout_option_is_registered_by_the_release(release, shape, rank):
    """engines.flags.layout_args writes only options each release's parser registers (data/flags/), on every
    node and in both disaggregated roles, in the canonical spellings (SGLang --tp-size, not the --tp prefix)."""
    engine, _, version = release.partition("-")
    vocab = catalog.flag_vocabulary(engine, version)
    for role in (None, "prefill", "decode"):
        args = layout_args(engine, gpus_per_node=8, node_rank=rank, role=role, cross_node_a2a=True, **shape)
        for a in args:
            if a.startswith("--"):
                assert vocab.lookup(a, suggest=False).verdict == "known", (release, a)
    assert "--tp" not in layout_args("sglang", tp=8, gpus_per_node=8)


def test_an_8b_model_at_a_high_rate_on_4_h100s_is_served_as_replicas():
    """The issue's acceptance: Llama-3.1-8B at 60 requests/s of 1,000 + 200 tokens within 30 ms ITL on a pool
    of 4 H100: one GPU holds the model, so more GPUs in one tensor-parallel group only add all-reduces; the
    search picks replicas of TP1, and TP4 ranks below them."""
    from quantadvise.api.recommend import recommend

    r = recommend(model="meta-llama/Llama-3.1-8B", gpu="h100", gpus=4, rate=60, prompt=1000, output=200, itl_ms=30,
                  layouts=True)
    win = r.layouts.rows[0]
    assert win.tp == 1 and win.replicas >= 1 and win.family in ("TP", "P/D")
    tp4 = [x for x in r.layouts.rows if x.family == "TP" and x.tp == 4 and x.scheme == win.scheme]
    assert all(x.rank > win.rank for x in tp4)
    same = next(x for x in r.layouts.rows if x.family == "TP" and x.tp == 1 and x.scheme == win.scheme)
    if tp4:
        assert tp4[0].tokens_per_s_per_gpu < same.tokens_per_s_per_gpu  # the stated reason: less per GPU


def test_memory_prunes_before_pricing():
    """DeepSeek-V3 in bf16 (1.34 TB) fits no layout of one H100 node: every bf16 layout is left out by memory,
    none is priced."""
    from quantadvise.api.recommend import recommend

    r = recommend(model="deepseek-ai/DeepSeek-V3", gpu="h100", max_gpus=8, candidates=["bf16", "w4a16"],
                  prompt=1000, output=200)
    assert r.layouts.pruned > 0
    assert all(x.scheme != "bf16" for x in r.layouts.rows)


def test_disaggregated_rows_size_both_pools_for_the_load():
    r = _acceptance()
    pd = [x for x in r.layouts.rows if x.family == "P/D"]
    assert pd
    for x in pd:
        p = x.prefill
        assert p is not None and p.utilization < 1  # the prefill pool keeps up with 20 prompts/s
        assert p.replicas * p.prompts_per_s > 20
        assert x.gpus == p.gpus + x.replicas * x.gpus_per_replica
        assert math.isclose(x.utilization, 20 * 200 / (x.replicas * x.tokens_per_s), rel_tol=1e-9)


def test_seqs_cap_is_per_rank_where_the_engine_counts_it_per_rank():
    assert PARALLEL["vllm"].seqs_per_rank and not PARALLEL["sglang"].seqs_per_rank


def test_the_layout_headline_is_the_number_the_alternatives_table_prints():
    """One quantity, one number: the pool's winner is priced by the same serving loop as the tree that prices
    its alternatives row (the engine's loop at the replica's TP degree), so the headline (the layout's figures)
    and the winner's row agree. Before, the layout search priced without the loop (no per-step host time, no
    CUDA-graph padding): 65 tok/s in the headline, 59 in the row, for one configuration."""
    from quantadvise import recommend

    r = recommend(model="meta-llama/Llama-3.1-70B", gpu="h100", max_gpus=8)
    win = next(a for a in r.alternatives if a.scheme == r.scheme_id)
    assert r.layouts is not None and r.layouts.rows[0].scheme == r.scheme_id
    assert r.performance.tokens_per_s == pytest.approx(win.tokens_per_s, rel=1e-9)
    assert r.performance.decode_tokens_per_s == pytest.approx(win.decode_tokens_per_s, rel=1e-9)
    assert r.performance.itl_s == pytest.approx(win.itl_s, rel=1e-9)
    # and the layout priced with the loop is the one the loop's facts name: ideal prices without it
    ideal = recommend(model="meta-llama/Llama-3.1-70B", gpu="h100", max_gpus=8, ideal=True)
    assert ideal.performance.tokens_per_s > r.performance.tokens_per_s


def test_every_pool_row_is_planned_for_the_wait_at_the_load():
    """A --rate row is sized so few requests wait for a slot (perf.queueing): at most 5% wait, the replicas are
    never fewer than the capacity count, and what a user sees at the load is the row's own serving point at a
    concurrency no higher than the one priced, TTFT plus the wait."""
    r = _acceptance()
    found = r.layouts
    assert found is not None
    for x in found.rows:
        a = x.at_load
        assert a is not None, x.layout
        assert a.replicas == x.replicas
        assert x.replicas >= math.ceil(20 * 200 / x.tokens_per_s - 1e-9)  # the capacity count
        assert a.wait_share <= 0.05 + 1e-12
        assert 1 <= a.concurrency <= x.concurrency
        assert a.itl_s <= x.itl_s * (1 + 1e-9)  # fewer sequences in flight, each step no longer
        assert a.ttft_s is not None and a.ttft_s >= a.wait_s
        assert a.tokens_per_s == pytest.approx(20 * 200 / x.replicas)
        if x.prefill is not None:  # P/D: the first token comes from the prefill pool, then waits for a decode slot
            assert a.ttft_s == pytest.approx(x.ttft_s + a.wait_s)
