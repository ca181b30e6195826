"""``recommend`` over a pool of GPUs: the layout search (``advisor/layouts.py``) with its inputs resolved.

A pool question is asked by ``--max-gpus N``, ``--node 8xh100`` (GPUs per node and their type; several,
comma-separated), several ``--gpu`` types (``--gpu h100,h200,b200``) or ``--layouts``. The model, the shipped
checkpoint and the candidates are resolved once; each GPU type gets its efficiencies, engine verdicts,
prices and communication figures (data/comm.yaml); the search ranks every layout; the tree is then walked on
the winner's GPU type at its replica's GPU count for the winner's scheme (the scheme's axes, its checkpoint
and recipe, the engine commands), and the headline figures are the winning layout's.

``api/recommend.py`` calls :func:`recommend_pool` with its own resolvers (``hooks``), so this module imports
nothing of it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .. import catalog, defaults
from ..errors import InputError, NoSchemeError
from ..results import record
from ..wording import pattern

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..advisor.layout_result import LayoutRow, LayoutSearch
    from ..advisor.layouts import PoolGpu
    from ..advisor.result import Recommendation
    from ..hardware import GPU
    from ..workload import Workload


def pool_question(w: Workload) -> bool:
    """Whether the workload asks a pool question (the layout search runs)."""
    return "," in w.gpu or w.max_gpus is not None or w.node is not None or w.layouts


@record
class PoolSpec:
    gpus: tuple[tuple[GPU, int | None], ...]  # GPU type, GPUs per node (None: the comm table's)
    max_gpus: int


_NODE = r"^\s*(\d+)\s*[x*X]\s*([^,]+?)\s*$"  # compiled on first need (wording.pattern)


def parse_pool(w: Workload, explicit: set[str]) -> PoolSpec:
    """The GPU types of the pool, each with the node size ``--node`` gives, and the GPUs a layout may use:
    ``--max-gpus``, else ``--gpus``, else one node of the first type."""
    from ..catalog.resolve import get_gpu
    from ..inputs import LIMITS, check, names, parse, shown

    pairs: list[tuple[GPU, int | None]] = []
    if w.node:
        for part in names("node", w.node, "8xh100,8xb200") or ():  # each once, at most 64
            m = pattern(_NODE).match(part)
            if m is None:
                raise InputError(f"--node {shown(part)} is not GPUsxGPU (8xh100)", hint="write --node 8xh100 or "
                                 "--node 8xh100,8xb200", field="node")
            per_node = check("node", parse("node", m.group(1), limit=LIMITS["gpus"]), LIMITS["gpus"])
            pairs.append((get_gpu(m.group(2)), per_node))
    else:
        pairs = [(get_gpu(name), None) for name in names("gpu", w.gpu, "h100,h200") or ()]
    seen: dict[str, tuple[GPU, int | None]] = {}
    for g, n in pairs:
        seen.setdefault(g.id, (g, n))
    if w.max_gpus is not None:
        top = w.max_gpus
    elif "gpus" in explicit:
        top = w.gpus
    else:
        first, n = next(iter(seen.values()))
        comm = catalog.comm_system(first.id)
        top = n or (comm.gpus_per_node if comm is not None else max(defaults.TP_DEGREES))
    return PoolSpec(gpus=tuple(seen.values()), max_gpus=top)


def _pool_gpu(inputs: Any, w: Workload, g: GPU, node: int | None, *, hooks: dict[str, Callable[..., Any]],
              explicit: set[str], alive: list[Any]) -> PoolGpu:
    """One GPU type: its candidates (the same schemes, this GPU's efficiencies), context, options, prepared."""
    from ..advisor.layouts import prepare
    from ..advisor.options import BF16_KV, Candidate, Context, build_options
    from ..catalog.resolve import load_profiles
    from ..model.inventory import inventory_of
    from ..perf.comm import Comm
    from .speed import efficiency

    wg = w.model_copy(update={"gpu": g.id, "gpus": 1})
    if g.id != inputs.gpu.id:
        profiles = load_profiles(w.ideal, w.profile, g)
        cands = [Candidate(c.scheme, c.deploy, efficiency(profiles, g, c.scheme, engine=w.engine,
                                                          version=w.engine_version), checkpoint=c.checkpoint)
                 for c in inputs.candidates]
        fp16, refused = hooks["dtypes"](inputs.arch, g, inputs.engine, inputs.other)
        # the same memo (engine verdicts by capability, written checkpoints): the candidates stay alive with the
        # pool, so no key made of their ids can be reused by another object
        inputs = replace(inputs, gpu=g, candidates=cands, fp16=fp16, gpu_refused=refused)
        alive.append(cands)
    price = hooks["price"](wg, g, "usd_per_gpu_hour" in explicit)
    ctx = Context(arch=inputs.arch, gpu=g, workload=wg, kv_options=inputs.kv_options, quant_kv=inputs.quant_kv,
                  rules=catalog.accuracy_rules(), engine=inputs.engine, other_engine=inputs.other,
                  model_id=inputs.model_id, kv_name=inputs.forced or BF16_KV, forced_kv=inputs.forced is not None,
                  native=inputs.native, limits=inputs.limits, model_params=inventory_of(inputs.arch).total_params(),
                  memo=inputs.cache, slo=hooks["slo"](w), spec=hooks["spec"](w),
                  usd_per_gpu_hour=price.usd_per_gpu_hour if price else None, batch_bound=inputs.batch_bound,
                  startup=inputs.startup, fp16=inputs.fp16, gpu_refused=inputs.gpu_refused)
    options = build_options(inputs.arch, g, wg, inputs.candidates, inputs.kv_options, inputs.quant_kv, inputs.cache)
    row = catalog.comm_system(g.id)
    comm = Comm(row, inputs.engine.engine) if row is not None else None
    per_node = node or (row.gpus_per_node if row is not None else max(defaults.TP_DEGREES))
    eng = inputs.engine

    def loop_at(tp: int) -> Any:  # the engine's serving loop on this GPU type at a TP degree (the tree's own)
        return None if w.ideal else catalog.engine_loop(g, eng.engine, eng.version, tp=tp, site=inputs.site)

    return prepare(ctx, options, comm=comm, gpus_per_node=per_node,
                   price=price.usd_per_gpu_hour if price is not None else None, loop_at=loop_at)


def _pool_notes(pool: list[PoolGpu], spec: PoolSpec) -> list[str]:
    notes = []
    for pg in pool:
        g = pg.ctx.gpu
        if pg.comm is None:
            notes.append(f"{g.id}: no communication figures on file (data/comm.yaml): one node of {pg.gpus_per_node} "
                         "GPUs, tensor parallel priced by the efficiency profile's all-reduce (--node NxGPU sets the node)")
        if pg.price is None:
            notes.append(f"{g.id}: no price on file: ranked by GPU-hours per million tokens (--usd-per-gpu-hour)")
    return notes


def recommend_pool(w: Workload, data: dict[str, Any], *, searched: bool, frontier: bool,
                   hooks: dict[str, Callable[..., Any]]) -> Recommendation:
    """The layout search over the pool the workload names, and the tree's answer for the winner."""
    from ..advisor.layout_search import search

    explicit = set(data)
    spec = parse_pool(w, explicit)
    first = spec.gpus[0][0]
    w0 = w.model_copy(update={"gpu": first.id, "gpus": 1})
    inputs = hooks["resolve"](w0, explicit)
    inputs.batch_bound, inputs.frontier = searched, False
    alive: list[Any] = []  # every candidate built for the pool, kept until the end
    pool = [_pool_gpu(inputs, w, g, n, hooks=hooks, explicit=explicit, alive=alive) for g, n in spec.gpus]
    found = search(pool, spec.max_gpus, notes=_pool_notes(pool, spec))
    if not found.rows:
        raise NoSchemeError(_nothing_fits(found, pool, spec), hint="raise --max-gpus, relax the latency budgets or "
                            "lower --rate / --users")
    win = found.rows[0]
    pg = next(p for p in pool if p.ctx.gpu.id == win.gpu)
    rec = _walk_winner(inputs, w, pg, win, hooks)
    return finish(rec, found, pool, win, frontier=frontier)


def _nothing_fits(found: LayoutSearch, pool: list[PoolGpu], spec: PoolSpec) -> str:
    live = sorted({o.id for pg in pool for o in pg.options if o.status == "candidate"})
    return (f"no layout of {', '.join(pg.ctx.gpu.id for pg in pool)} within {spec.max_gpus} GPUs serves this "
            f"workload: {found.weighed} layouts priced ({found.pruned} could not hold their weights and one sequence, "
            f"{found.over_pool} need more GPUs than the pool for the load); deployable schemes: "
            f"{', '.join(live) or 'none'}")


def _walk_winner(inputs: Any, w: Workload, pg: PoolGpu, win: LayoutRow, hooks: dict[str, Any]) -> Recommendation:
    """The tree on the winner's GPU type at its replica's GPU count with the winner's KV dtype, weighing the
    winner's scheme (and bf16, the baseline the tree always weighs): the scheme's axes, its checkpoint and
    recipe, and the engine commands the layout's are written from."""
    from ..advisor.options import Candidate

    winner = next(o for o in pg.options if o.id == win.scheme)
    chosen = [Candidate(o.scheme, o.deploy, o.efficiency, checkpoint=o.checkpoint) for o in pg.options
              if o is winner or (o.family == "bf16" and not o.native)]
    narrowed = replace(inputs, gpu=pg.ctx.gpu, candidates=chosen, native=inputs.native if winner.native else None,
                       fp16=pg.ctx.fp16, gpu_refused=pg.ctx.gpu_refused, forced=win.kv_dtype)
    wt = w.model_copy(update={"gpu": pg.ctx.gpu.id, "gpus": win.gpus_per_replica, "kv_dtype": win.kv_dtype})
    return hooks["walk"](narrowed, wt)


def finish(rec: Recommendation, found: LayoutSearch, pool: list[PoolGpu], win: LayoutRow, *,
           frontier: bool) -> Recommendation:
    """The recommendation with the layout table, the winner's per-node commands, its figures in the headline
    and a ``layouts`` trace node."""
    from ..advisor.layout_plan import layout_plan
    from ..advisor.layout_view import family_frontier, layouts_node, performance_of

    pg = next(p for p in pool if p.ctx.gpu.id == win.gpu)

    vocabs = {e.engine: catalog.flag_vocabulary(e.engine, e.version)
              for e in (pg.ctx.engine, *([pg.ctx.other_engine] if pg.ctx.other_engine is not None else []))}
    labels = {e.engine: e.label for e in (pg.ctx.engine, *([pg.ctx.other_engine] if pg.ctx.other_engine else []))}
    plan = layout_plan(rec.engine_args, win, pg.gpus_per_node, vocabs, labels)
    engine_args = {e: (cmds[0].command if cmds else None) for e, cmds in plan.engines.items()}
    fr = family_frontier(pool, found) if frontier else []
    found = found.model_copy(update={"plan": plan})
    perf = performance_of(rec.performance, win)
    pool_line = (f"pool: {', '.join(found.pool)}, up to {found.max_gpus} GPUs: every layout weighed (the layout "
                 f"table, docs/recommend.md \"Layouts\"); the tree above prices {win.scheme} at its replica's "
                 f"{win.gpus_per_replica} GPUs, the headline figures are the layout's ({win.layout})")
    return rec.model_copy(update={"layouts": found, "engine_args": engine_args, "performance": perf,
                                  "trace": [*rec.trace, layouts_node(found)], "frontier": fr,
                                  "notes": [*rec.notes, *plan.notes],
                                  "assumptions": [*rec.assumptions, pool_line]})


