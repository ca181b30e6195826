"""The layout table of ``recommend`` over a pool (``--max-gpus``, ``--node``, several ``--gpu``, ``--layouts``):
the cheapest layouts, each family's best on each GPU type, and what each node of the chosen one runs."""

from __future__ import annotations

from .. import defaults
from ..advisor.layout_result import DeployResult, LayoutRow, LayoutSearch
from ..wording import ms, plural, usd
from .text import Table, wrap, wrap_command

TOP = 10  # rows of the table: the cheapest, then each (family, GPU type)'s best below them


def _cost(r: LayoutRow) -> float | None:
    return r.usd_per_mtok_at_load if r.usd_per_mtok_at_load is not None else r.usd_per_mtok


def shown_rows(found: LayoutSearch, top: int = TOP) -> list[LayoutRow]:
    """The ``top`` cheapest rows, then the best of every GPU type and of every layout family not among them."""
    rows = list(found.rows[:top])
    gpus, families = {r.gpu for r in rows}, {r.family for r in rows}
    for r in found.rows[top:]:
        if r.gpu not in gpus or r.family not in families:
            gpus.add(r.gpu)
            families.add(r.family)
            rows.append(r)
    return rows


def _layout_cell(r: LayoutRow) -> str:
    """``2xDP8+EP8``; a disaggregated row names both pools: ``P1xTP8,D2xDP8+EP8``."""
    if r.prefill is not None:
        return f"P{r.prefill.replicas}x{r.prefill.layout},D{r.replicas}x{r.layout.split(' + D ')[-1]}"
    return f"{r.replicas}x{r.layout}"


def layout_lines(found: LayoutSearch | None, width: int | None) -> list[str]:
    """The table and its legend (nothing without a layout search)."""
    if found is None or not found.rows:
        return []
    load = found.rate_per_s is not None
    demand = (f"{found.rate_per_s:g} requests/s" if found.rate_per_s is not None else
              plural(found.users, "concurrent user") if found.users is not None else "each layout's capacity")
    out = ["", *wrap(f"Layouts for {demand} (scheme x GPU x parallelism, up to {found.max_gpus} GPUs; ranked by "
                     f"{found.ranked_by}):", width)]
    cols = ["#", "scheme", "GPU", "layout", "GPUs", "nodes", "tok/s/GPU", "ITL ms", "TTFT ms", "comm",
            "$/Mtok"]
    t = Table(cols, align="rlllrrrrrrr", flex=("layout",), flex_min={"layout": 21},
              drop=("comm", "nodes", "TTFT ms", "ITL ms", "GPU"))
    for r in shown_rows(found):
        t.add(f"{r.rank}{'<' if r.recommended else ''}", r.scheme, r.gpu, _layout_cell(r), r.gpus, r.nodes,
              f"{r.tokens_per_s_per_gpu:,.0f}", ms(r.at_load.itl_s if r.at_load is not None else r.itl_s),
              ms(r.at_load.ttft_s if r.at_load is not None else r.ttft_s), f"{100 * r.comm_share:.0f}%",
              usd(_cost(r)))
    out.append(t.render(width))
    legend = (f"< the recommendation; {found.weighed:,} layouts priced, {found.pruned:,} left out by memory before "
              f"pricing, {found.bounded:,} bounded out (their cost at their largest concurrency could not place "
              f"them here), {found.over_pool:,} over the pool; per GPU: output tokens/s at the concurrency each "
              "replica runs; comm: communication's share of the decode step; "
              + ("ITL and TTFT at the load (TTFT with the mean wait for a free slot; replicas added until at most "
                 f"{defaults.LOAD_WAIT_SHARE:.0%} of requests wait; a P/D row's TTFT is its prefill pool's plus the wait for a "
                 "decode slot); "
                 "$/Mtok at the load: GPUs x $/GPU-hour over the load's tokens" if load else
                 "$/Mtok at each layout's capacity") + " (the checkpoint as shipped credited the tree's 15% margin; a "
              "re-quantization with an accuracy risk ranks after it); NxL: N replicas of layout L; TP/PP: tensor/pipeline parallel, EP: experts over that "
              "many GPUs, DPn: n attention groups, P/D: prefill and decode pools")
    out += wrap(legend, width)
    out += _node_lines(found, width)
    for n in found.notes:
        out += wrap(f"note: {n}", width, indent="  ", subsequent="    ")
    return out


def _node_lines(found: LayoutSearch, width: int | None) -> list[str]:
    """What each node of the chosen layout runs, when it spans more than one (the first two of a replica,
    the rest follow the second's pattern)."""
    plan = found.plan
    if plan is None:
        return []
    out: list[str] = []
    for engine, cmds in plan.engines.items():
        if not cmds or len(cmds) < 2:
            continue
        out += ["", f"Nodes ({engine}, one replica):"]
        for c in cmds:
            if c.node_rank > 1:
                continue
            out += wrap_command(c.command, width, indent=f"  {c.role} node {c.node_rank} ({c.gpus} GPUs): ")
        more = [c for c in cmds if c.node_rank > 1]
        if more:
            out += wrap(f"  nodes 2-{max(c.node_rank for c in more)} of each pool: as node 1, with their own rank",
                        width)
        break
    return out


def deploy_table(r: DeployResult, width: int | None = None) -> str:
    """``quantadvise deploy``: what was written, for which layout, and how to check it."""
    row = r.layout
    lines = [*wrap(f"Deploy: {r.scheme} on {row.gpus} x {row.gpu_name} ({row.replicas} x {row.layout}, "
                   f"{plural(row.nodes, 'node')}), {r.engine} {r.engine_version}, as {r.format}", width,
                   subsequent="  "),
             *wrap(f"model: {r.model}; per GPU {row.tokens_per_s_per_gpu:,.0f} output tokens/s, ITL {ms(row.itl_s)} ms"
                   + (f", ${_cost(row):,.3f}/Mtok" if _cost(row) is not None else ""), width, indent="  ",
                   subsequent="    "), "", "Wrote:"]
    lines += [f"  {name}" for name in r.files]
    lines += ["", *wrap(f"Check: {r.check}", width, subsequent="  ")]
    for n in r.notes:
        lines += wrap(f"note: {n}", width, indent="  ", subsequent="    ")
    return "\n".join(lines)
