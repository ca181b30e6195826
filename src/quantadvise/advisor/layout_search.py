"""The layout search over a pool: branch and bound over every layout that fits (``layouts.py`` prices them,
``disagg.py`` adds prefill/decode pools), ranked by what the load costs. Pure."""

from __future__ import annotations

import math

from .. import defaults
from .disagg import disaggregated
from .layout_result import LayoutRow, LayoutSearch
from .layouts import Pending, PoolGpu, Priced, candidates, cost_of, load_of, row_of, settle


def rank_key(r: LayoutRow, margin: float) -> tuple[float, float, int, str, str, str]:
    """Cheapest first ($/Mtok at the load, else at capacity; the shipped checkpoint credited ``margin``),
    then more tokens/s per GPU, fewer GPUs; ids last so the order never depends on the input's."""
    cost = r.usd_per_mtok_at_load if r.usd_per_mtok_at_load is not None else r.usd_per_mtok
    if cost is None:  # no price known for this GPU: GPU-hours per million tokens stand in
        per = r.tokens_per_s * r.replicas if r.utilization is None else r.tokens_per_s * r.replicas * r.utilization
        cost = r.gpus / (per * 3600.0) * 1e6 * 1e3 if per > 0 else math.inf
    if r.native:
        cost /= 1 + margin
    return (cost, -r.tokens_per_s_per_gpu, r.gpus, r.scheme, r.gpu, r.layout)


def rank_rows(rows: list[LayoutRow], behind_native: set[str]) -> list[LayoutRow]:
    """Rows ranked (:func:`rank_key`); a re-quantization whose accuracy range reaches the tolerance ranks
    after the best layout of the checkpoint as shipped (the tree's precedence)."""
    margin = defaults.NATIVE_MARGIN
    ordered = sorted(rows, key=lambda r: rank_key(r, margin))
    first_native = next((i for i, r in enumerate(ordered) if r.native), None)
    if first_native is not None and behind_native:
        ahead = [r for r in ordered[:first_native] if r.scheme in behind_native]
        if ahead:
            kept = [r for r in ordered[:first_native] if r.scheme not in behind_native]
            ordered = [*kept, ordered[first_native], *ahead, *ordered[first_native + 1:]]
    return [r.model_copy(update={"rank": i + 1, "recommended": i == 0}) for i, r in enumerate(ordered)]


KEEP = 40  # rows kept exact beyond each (family, GPU type)'s best: the table's depth


def search(pool: list[PoolGpu], max_gpus: int, *, notes: list[str] | None = None) -> LayoutSearch:
    """Every layout of every GPU type of ``pool`` within ``max_gpus`` GPUs, ranked (the module docstring).

    Branch and bound over the layouts that fit: each is first priced at the top of its range, a lower bound
    on what the load costs on it; in that order, a layout is searched for its latency budgets only while
    its bound could still place it among the ``KEEP`` cheapest or beat the best of its family on its GPU
    type — the rest could not change the table and are counted (``bounded``)."""
    if not pool:
        raise ValueError("an empty pool")
    w = pool[0].ctx.workload
    pend: list[Pending] = []
    pruned = 0
    for pg in pool:
        got, cut = candidates(pg, max_gpus)
        pend += got
        pruned += cut
    for c in pend:
        c.lower = cost_of(c.top, c.gpu, c.par, w)
    pend.sort(key=lambda c: (c.lower, c.option.id, c.par.label, c.gpu.ctx.gpu.id, c.kv_name))
    best: dict[tuple[str, str], float] = {}
    kept: list[float] = []  # exact costs of the rows so far, ascending
    priced: list[Priced] = []
    rows: list[LayoutRow] = []
    weighed = over = bounded = 0
    for c in pend:
        group = (c.par.family, c.gpu.ctx.gpu.id)
        if len(kept) >= KEEP and c.lower > kept[KEEP - 1] and c.lower > best.get(group, math.inf):
            bounded += 1
            continue
        p = settle(c)
        weighed += 1
        if p is None:
            continue
        at = load_of(c, p)
        slo = c.gpu.ctx.slo
        if at is not None and slo is not None and slo.broken(at) is not None:
            continue  # a budget the layout meets at the top of its range, missed at the concurrency the load runs
        n = at.replicas if at is not None else 1
        if n * p.par.gpus > max_gpus:
            over += 1
            continue
        priced.append(p)
        row = row_of(p, n, rate=w.rate, output_tokens=w.output_tokens, at_load=at)
        rows.append(row)
        cost = cost_of(p.point, c.gpu, c.par, w, at.replicas if at is not None else None)
        best[group] = min(best.get(group, math.inf), cost)
        kept.append(cost)
        kept.sort()
    rows = _one_kv_per_layout(rows)
    out_notes = list(notes or [])
    if w.rate is not None:
        rows += disaggregated(pool, priced, max_gpus)
    elif any(pg.disaggregation for pg in pool):
        out_notes.append("prefill/decode disaggregation is weighed with --rate (the prefill pool is sized for "
                         "the requests/s)")
    behind = {o.id for pg in pool for o in pg.options if o.behind_native}
    ranked = rank_rows(rows, behind)
    if (tie := _tie_note(ranked)) is not None:
        out_notes.append(tie)
    load = w.rate * w.output_tokens if w.rate is not None else None
    by = ("$ per million output tokens at the load (GPUs x $/GPU-hour over the load's tokens)" if load is not None
          else "$ per million output tokens at each layout's capacity")
    sources = sorted({s for pg in pool if pg.comm is not None for s in pg.comm.sources()})
    return LayoutSearch(pool=[f"{pg.ctx.gpu.id}: {pg.gpus_per_node} GPUs per node" for pg in pool], max_gpus=max_gpus,
                        rate_per_s=w.rate, users=w.users, output_tokens_per_s=load, ranked_by=by, rows=ranked,
                        weighed=weighed, pruned=pruned, over_pool=over, bounded=bounded, notes=out_notes,
                        sources=sources)


def _tie_note(rows: list[LayoutRow]) -> str | None:
    """Issue 25: the first two layouts tie when their $ per million tokens overlap at the model's validated
    uncertainty (each row's band); the table then says so instead of ranking inside the noise."""
    from ..perf.uncertainty import overlap

    if len(rows) < 2:
        return None
    a, b = rows[0], rows[1]
    ca, cb = a.usd_per_mtok_at_load or a.usd_per_mtok, b.usd_per_mtok_at_load or b.usd_per_mtok
    if ca is None or cb is None or a.uncertainty is None or b.uncertainty is None:
        return None
    # a cost is GPU time per token: its interval is a rate's, inverted
    # the kernels' band (``relative``): two layouts of one engine's loop share its error (perf.uncertainty)
    ua, ub = a.uncertainty.relative, b.uncertainty.relative
    if not overlap(1 / ca, ua, 1 / cb, ub):
        return None
    return (f"{a.scheme} {a.layout} and {b.scheme} {b.layout} on {b.gpu} tie within the model's uncertainty "
            f"(${ca:.3f} ±{ua:.0%} against ${cb:.3f} ±{ub:.0%} per "
            "million tokens): their order is not a speed verdict; a benchmark of both settles it "
            "(recommend --bench-plan)")


def _one_kv_per_layout(rows: list[LayoutRow]) -> list[LayoutRow]:
    """Of a layout priced with both KV dtypes, the one that delivers more (beyond the tie), else bf16's."""
    by: dict[tuple[str, str, str], LayoutRow] = {}
    for r in rows:
        key = (r.gpu, r.scheme, r.layout)
        old = by.get(key)
        if old is None or r.tokens_per_s_per_gpu > old.tokens_per_s_per_gpu * (1 + defaults.TIE):
            by[key] = r
    return list(by.values())
