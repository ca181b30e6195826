"""What the recommendation says about the layout search: the headline figures of the winning layout, the
``layouts`` trace node, and each layout family's frontier for ``--plot``. Pure."""

from __future__ import annotations

from ..perf.parallel import Parallel
from ..perf.serving import Lengths, ParetoPoint, mark_frontier, pareto_point, serve
from ..wording import plural
from .layout_result import LayoutRow, LayoutSearch
from .layouts import PoolGpu, step_model
from .result import Performance, TraceNode
from .speed import lengths_of


def performance_of(perf: Performance, win: LayoutRow) -> Performance:
    """The tree's performance block with the winning layout's figures (per replica; per GPU over its GPUs)."""
    return perf.model_copy(update={
        "step_time_s": win.step_s, "tokens_per_s": win.tokens_per_s, "decode_tokens_per_s": win.decode_tokens_per_s,
        "prefill_share": win.prefill_share, "concurrency": win.concurrency, "kv_dtype": win.kv_dtype,
        "ttft_s": win.ttft_s, "tokens_per_s_per_gpu": win.tokens_per_s_per_gpu, "itl_s": win.itl_s, "e2e_s": win.e2e_s,
        "decode_share": 1.0 - win.prefill_share if win.prefill_share is not None else None, "limit": win.limit,
        "bound": win.bound, "usd_per_mtok": win.usd_per_mtok, "speedup_vs_bf16": None, "vs_runner_up": None,
        "runner_up": None, "gpus_for_batch": None})


def describe(r: LayoutRow) -> str:
    """``w4a8-fp8 on 2 x (DP8+EP8 of H200) = 16 GPUs, 2 nodes``."""
    return (f"{r.scheme} on {r.replicas} x {r.layout} of {r.gpu_name} = {plural(r.gpus, 'GPU')} "
            f"({plural(r.nodes, 'node')})")


def layouts_node(found: LayoutSearch) -> TraceNode:
    """g. layouts: the winner, why, and the runners-up of the other families and GPU types."""
    rows = found.rows
    win = rows[0]
    demand = (f"{found.rate_per_s:g} requests/s" if found.rate_per_s is not None else
              plural(found.users, "concurrent user") if found.users is not None else "capacity")
    cost = win.usd_per_mtok_at_load if win.usd_per_mtok_at_load is not None else win.usd_per_mtok
    decision = f"{demand}: {describe(win)}" + (f", ${cost:,.3f}/Mtok" if cost is not None else "")
    reasons = [f"{found.weighed:,} layouts priced over {', '.join(found.pool)} (up to {found.max_gpus} GPUs); "
               f"{found.pruned:,} could not hold their weights and one sequence; {found.over_pool:,} need more GPUs "
               f"than the pool for the load; ranked by {found.ranked_by}"]
    seen = {(win.family, win.gpu)}
    for r in rows[1:]:
        if (r.family, r.gpu) in seen:
            continue
        seen.add((r.family, r.gpu))
        c = r.usd_per_mtok_at_load if r.usd_per_mtok_at_load is not None else r.usd_per_mtok
        reasons.append(f"best {r.family} on {r.gpu}: {describe(r)}, {r.tokens_per_s_per_gpu:,.0f} tokens/s per GPU"
                       + (f", ${c:,.3f}/Mtok" if c is not None else "") + f" (rank {r.rank})")
        if len(reasons) >= 8:
            break
    numbers = {"winner": win.model_dump(mode="json"), "weighed": found.weighed, "pruned": found.pruned,
               "over_pool": found.over_pool, "max_gpus": found.max_gpus}
    return TraceNode(node="layouts", decision=decision, numbers=numbers, reasons=reasons + found.notes)


def family_frontier(pool: list[PoolGpu], found: LayoutSearch) -> list[ParetoPoint]:
    """For ``--plot``: the cheapest layout of each family (TP, TP+PP, TP+EP, DP+EP; a P/D row by its decode
    pool) sampled across concurrency per replica (doubling up to what it runs), labelled by family."""
    best: dict[str, LayoutRow] = {}
    for r in found.rows:
        best.setdefault(r.family, r)
    points: list[ParetoPoint] = []
    by_gpu = {pg.ctx.gpu.id: pg for pg in pool}
    for fam, r in best.items():
        pg = by_gpu[r.gpu]
        o = next(o for o in pg.options if o.id == r.scheme)
        kv = next(kv for name, kv in pg.kv if name == r.kv_dtype)
        par = Parallel(tp=r.tp, pp=r.pp, dp=r.dp, ep=r.ep > 1)
        sm = step_model(pg, o, par, r.kv_dtype, kv)
        lengths = lengths_of(pg.ctx.workload)
        if fam == "P/D":  # its decode pool: no prefill joins the decode steps
            lengths = Lengths(prompt=0, output=lengths.output, decode_ctx=lengths.decode_ctx, mode="continuous")
        label = f"{fam}: {r.scheme} {r.layout if fam != 'P/D' else par.label} on {r.gpu}"
        c = 1
        while True:
            p = serve(sm, lengths, min(c, r.concurrency), pg.ctx.spec)
            points.append(pareto_point(label, p, ctx=lengths.decode_ctx, gpus=par.gpus, fits=True, price=pg.price,
                                       slo=pg.ctx.slo))
            if c >= r.concurrency:
                break
            c *= 2
    return mark_frontier(points)
