"""Layouts: scheme x GPU type x tensor / pipeline / expert / attention-data parallelism x replicas (and
prefill/decode disaggregation), for a workload, a pool of GPUs and a load, ranked by $ per million tokens.

For each GPU type of the pool (``PoolGpu``: the tree's context on that GPU, its candidates after the
engine and accuracy nodes, its communication figures and node size), every deployable scheme is laid out
every way the model and the engine allow (:func:`shapes`), up to the pool's GPUs:

1. **memory first** (no step model is built for a layout that cannot hold its weights and one sequence):
   each GPU holds its share of the weights (:meth:`~quantadvise.perf.parallel.Parallel.weights_per_gpu`) and
   of every sequence's KV cache (its stage's layers, its KV heads; an MLA latent whole), against the
   engine's budget per GPU (the fit node's); the replica holds ``dp x`` what one group of GPUs holds;
2. **priced** by :class:`~quantadvise.perf.parallel.LayoutStep` (the speed model of one ``tp``-GPU group
   plus the layout's measured communication) through :func:`~quantadvise.perf.serving.serve`: the
   largest concurrency per replica that meets ``--itl-ms`` / ``--ttft-ms`` / ``--e2e-ms`` (or what
   memory holds); the step models are built once per (scheme, KV dtype, GPU count) and shared;
3. **sized for the load**: ``--rate R`` needs ``ceil(R x output / tokens_per_s)`` replicas, ``--users N``
   ``ceil(N / concurrency)``; a layout whose replicas exceed the pool is dropped;
4. **ranked** by $/hour over the load's tokens ($/Mtok at the load; without a load, $/Mtok at each
   layout's capacity), then more tokens/s per GPU; the checkpoint as shipped is credited the tree's 15%
   margin, and a re-quantization whose published accuracy range reaches the tolerance ranks after it
   (``options.rank``'s precedence).

With ``--rate`` and an engine that serves disaggregated (both do: vLLM's KV connector, SGLang's
--disaggregation-mode), :mod:`.disagg` adds P/D rows: a decode pool priced decode-only, a prefill pool
sized so that the queued prefills meet the TTFT budget, the KV cache sent between them over the network.

Pure: the pool comes in resolved (``api/recommend.py``); returns typed rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING

from .. import defaults
from ..errors import QuantAdviseError
from ..memory.kvcache import kv_share_per_gpu, sequence_bytes
from ..memory.sizing import size_model
from ..perf.comm import Comm
from ..perf.parallel import LayoutStep, Parallel, nodes_of
from ..perf.serving import Lengths, Search, ServePoint, Slo, serve, usd_per_mtok
from ..perf.step import StepModel, check_tensor_parallel
from ..perf.uncertainty import FigureBand
from ..scheme.axes import TensorQuant
from .fit import UNBOUNDED, budget_for
from .layout_result import LayoutRow
from .options import BF16_KV, Context, Option

if TYPE_CHECKING:
    from ..perf.loop import EngineLoop
    from ..perf.queueing import AtLoad
    from ..workload import Workload
from ..results import record
from .speed import lengths_of, load_point

POWERS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


@record(frozen=False)
class PoolGpu:
    """One GPU type of the pool, resolved: the tree's context on it, its candidates with the engine and
    accuracy nodes applied, how it communicates, how many GPUs a node holds, and the pool's bound."""

    ctx: Context
    options: list[Option]
    comm: Comm | None  # None: no communication figures on file (one node, the step model's own TP term)
    gpus_per_node: int
    kv: list[tuple[str, TensorQuant | None]]  # the KV dtypes a layout may take (engine- and accuracy-checked)
    price: float | None  # $/GPU-hour
    prefill_chunk: int  # tokens one prefill step batches (the engine's default)
    disaggregation: bool  # the engine serves prefill and decode in separate pools
    expert_parallel: bool  # the engine shards routed experts (EP)
    memo: dict = field(default_factory=dict)
    loop_at: Callable[[int], EngineLoop | None] | None = None  # the engine's serving loop at a TP degree

    def loop(self, tp: int) -> EngineLoop | None:
        """The serving loop a replica of ``tp`` GPUs runs (the tree prices with the same one): None with
        ``--ideal`` or when no loop is on file; each TP degree's is resolved once."""
        if self.loop_at is None:
            return None
        key = ("loop", tp)
        if key not in self.memo:
            self.memo[key] = self.loop_at(tp)
        return self.memo[key]


@record(frozen=False)
class Priced:
    """A layout priced (internal): the row's numbers before the load sizes it."""

    option: Option
    gpu: PoolGpu
    par: Parallel
    kv_name: str
    point: ServePoint
    limit: str
    comm_share: float
    model: StepModel


def kv_choices(ctx: Context) -> list[tuple[str, TensorQuant | None]]:
    """The KV dtypes a layout may take: the one ``--kv-dtype`` forces, else a bf16 cache and the quantized one
    when the engine accepts it for this model and GPU and no accuracy finding vetoes it (node e's checks)."""
    from .fit import _kv_accuracy
    from .verdict import engine_verdict

    if ctx.forced_kv:
        return [(ctx.kv_name, ctx.kv_options[ctx.kv_name].kv)]
    out: list[tuple[str, TensorQuant | None]] = [(BF16_KV, None)]
    q = ctx.quant_kv
    qkv = ctx.kv_options[q].kv
    if engine_verdict(ctx, ctx.engine, None, q).supported and not _kv_accuracy(ctx, qkv):
        out.append((q, qkv))
    return out


def prepare(ctx: Context, options: list[Option], *, comm: Comm | None, gpus_per_node: int,
            price: float | None, loop_at: Callable[[int], EngineLoop | None] | None = None) -> PoolGpu:
    """One GPU type of the pool: the tree's engine and accuracy nodes applied to ``options`` (their statuses,
    cautions and priors set as the tree sets them), the KV dtypes allowed, the engine's layout facts."""
    from ..engines.flags import PARALLEL, prefill_chunk_tokens
    from .veto import node_accuracy, node_engine

    live = [o for o in options if o.status == "candidate"]
    node_engine(ctx, live)
    node_accuracy(ctx, [o for o in live if o.status == "candidate"])
    facts = PARALLEL.get(ctx.engine.engine)
    chunk = prefill_chunk_tokens(ctx.engine.engine, ctx.gpu.memory_bytes) if facts is not None else 0
    return PoolGpu(ctx=ctx, options=options, comm=comm, gpus_per_node=gpus_per_node, kv=kv_choices(ctx), price=price,
                   prefill_chunk=chunk, disaggregation=facts is not None, expert_parallel=facts is not None,
                   loop_at=loop_at)


def shapes(pg: PoolGpu, max_gpus: int) -> list[Parallel]:
    """Every replica layout of the model on this GPU type within ``max_gpus``: TP within a node (the heads
    split), PP stages of the widest such TP group (stages across nodes where network figures are on file: PP
    adds memory where TP runs out, as the stacks lay it out), TP+EP and DP+EP (wide expert parallelism: one
    attention group per GPU) for an MoE model on an engine with expert parallelism."""
    arch, gpu = pg.ctx.arch, pg.ctx.gpu
    node = pg.gpus_per_node
    multi = pg.comm is not None
    out: list[Parallel] = []
    tps = []
    for t in POWERS:
        if t > node or t > max_gpus:
            break
        try:
            check_tensor_parallel(arch, gpu, t)
        except QuantAdviseError:
            continue
        tps.append(t)
    cap = max_gpus if multi else min(max_gpus, node)
    moe = arch.is_moe and pg.expert_parallel and multi
    widest = max(tps) if tps else 1
    for t in tps:
        for p in POWERS:
            if t * p > cap or p > arch.num_layers or (p > 1 and (not multi or t != widest)):
                break
            out.append(Parallel(tp=t, pp=p))
            if moe and t > 1:
                out.append(Parallel(tp=t, pp=p, ep=True))
    if moe:
        for n in POWERS[1:]:
            if n > cap or n > arch.num_experts:
                break
            out.append(Parallel(tp=1, dp=n, ep=True))
    return out


def _bound(ctx: Context, par: Parallel) -> tuple[int, str]:
    """The per-replica concurrency the search may reach and its name: ``--batch`` when given, else the
    tree's search bound per attention group / micro-batch; ``--users`` caps it."""
    w = ctx.workload
    if not ctx.batch_bound:
        return w.batch, "batch"
    groups = par.pp * par.dp
    hi = defaults.MAX_CONCURRENCY_SEARCH * groups
    if w.users is not None and w.users < hi:
        return w.users, "users"
    return hi, "batch"


def budget_per_gpu(pg: PoolGpu, tp: int) -> float:
    key = ("budget", tp)
    if key not in pg.memo:
        pg.memo[key] = budget_for(pg.ctx, tp) / tp
    return pg.memo[key]


def expert_bytes(pg: PoolGpu, o: Option) -> float:
    key = ("experts", id(o.scheme))
    if key not in pg.memo:
        sized = size_model(pg.ctx.arch, o.scheme)
        pg.memo[key] = float(sum(c.bytes for c in sized.components if c.component == "experts"))
    return pg.memo[key]


def capacity(pg: PoolGpu, o: Option, par: Parallel, kv: TensorQuant | None) -> int:
    """Sequences one replica holds: what one GPU's free memory holds of its share of each sequence, times
    the attention groups (0: its weights alone do not fit)."""
    arch, w = pg.ctx.arch, pg.ctx.workload
    free = budget_per_gpu(pg, par.tp) - par.weights_per_gpu(o.weights_bytes, expert_bytes(pg, o))
    if free <= 0:
        return 0
    share = kv_share_per_gpu(kv_heads=arch.num_kv_heads, mla=arch.is_mla, tp=par.tp, pp=par.pp)
    per_seq = sequence_bytes(arch, kv, w.kv_tokens_per_sequence) * share
    if per_seq <= 0:
        return UNBOUNDED
    return math.floor(free / per_seq) * par.dp


def step_model(pg: PoolGpu, o: Option, par: Parallel, kv_name: str, kv: TensorQuant | None) -> StepModel:
    """The layout's step model: the ``tp``-GPU group's (built once per scheme, KV dtype and degree), wrapped
    with the layout's communication where figures are on file."""
    def group(t: int) -> StepModel:
        key = ("sm", id(o.scheme), kv_name, t)
        if key not in pg.memo:
            assert o.model is not None and o.model_kv is not None
            if t == 1 and o.model.tp == 1:  # the tree's own one-GPU models (build_options)
                pg.memo[key] = o.model if kv is None else o.model.with_kv(kv)
            else:
                pg.memo[key] = StepModel(pg.ctx.arch, o.scheme, pg.ctx.gpu, kv=kv, gpus=t, efficiency=o.efficiency,
                                         path=o.model.path)
        return pg.memo[key]

    base = group(par.tp)
    if pg.comm is None:
        return base
    experts = group(1) if par.ep else None
    evals = pg.memo.setdefault("evaluations", {})
    return LayoutStep(base, par, pg.comm, experts=experts, gpus_per_node=pg.gpus_per_node, memo=evals)


def _excess(p: ServePoint, slo: Slo) -> float:
    """How far ``p`` is past its tightest budget (<= 0: it meets them all)."""
    worst = -math.inf
    for value, budget in ((p.itl_s, slo.itl_s), (p.ttft_s, slo.ttft_s), (p.e2e_s, slo.e2e_s)):
        if budget is not None and value is not None:
            worst = max(worst, value / budget - 1.0)
    return worst


def search_concurrency(at: Callable[[int], ServePoint], hi: int, slo: Slo, bound_name: str, unit: int = 1) -> Search:
    """The largest concurrency in ``unit`` steps up to ``hi`` that meets ``slo`` (ITL, TTFT and E2E grow with
    the concurrency, so the budgets hold on a prefix): the top first, then the root of the tightest budget's
    excess interpolated between the ends of the bracket (regula falsi, Illinois: an end kept twice has its
    excess halved), from an empty replica (excess −1) up; a guess that meets the budgets is checked one step
    up when the root lies within that step. Exactly the answer of
    :func:`~quantadvise.perf.serving.largest_meeting` on those multiples, in a few evaluations."""
    top = max(1, hi // unit)
    pts: dict[int, ServePoint] = {}

    def ev(u: int) -> ServePoint:
        if u not in pts:
            pts[u] = at(u * unit)
        return pts[u]

    def ok(u: int) -> bool:
        return slo.broken(ev(u)) is None

    if ok(top):
        return Search(ev(top), bound_name, None)
    # from an empty replica (no sequence: every budget met, excess -1) to the top; one sequence per group is
    # evaluated only if the search comes down to it
    lo, up = 0, top
    g_lo, g_up = -1.0, _excess(ev(up), slo)
    side = 0  # which end the last guess replaced (Illinois: an end kept twice has its excess halved)
    while up - lo > 1:
        x = lo + (up - lo) * (-g_lo) / (g_up - g_lo) if g_up > g_lo else (lo + up) / 2
        m = min(up - 1, max(lo + 1, int(x)))
        if ok(m):
            lo, g_lo = m, _excess(ev(m), slo)
            if side == 1:
                g_up /= 2
            side = 1
            if x - m < 1 and m + 1 < up and not ok(m + 1):  # the root lies between m and m + 1
                up = m + 1
        else:
            up, g_up = m, _excess(ev(m), slo)
            if side == -1:
                g_lo /= 2
            side = -1
    if lo == 0:
        return Search(None, slo.broken(ev(1)) or "itl", ev(1))
    return Search(ev(lo), slo.broken(ev(up)) or "itl", ev(up))


@record(frozen=False)
class Pending:
    """A layout that holds its weights and one sequence, priced at the top of its concurrency range (the
    most it may run): every figure it can reach under a latency budget is at most this point's tokens/s,
    so the cost there is a lower bound on its cost (internal)."""

    option: Option
    gpu: PoolGpu
    par: Parallel
    kv_name: str
    model: StepModel
    hi: int
    unit: int
    limit: str
    top: ServePoint
    lengths: Lengths
    loop: EngineLoop | None = None
    lower: float = 0.0  # $/hour (or GPU-hours) the load needs at ``top``: no layout priced at ``hi`` costs less


def pending(pg: PoolGpu, o: Option, par: Parallel, kv_name: str, kv: TensorQuant | None,
            lengths: Lengths | None = None) -> Pending | None:
    """``o`` laid out as ``par`` at the top of its range: what memory holds, capped by the search bound (None:
    not even one sequence fits next to its weights)."""
    ctx = pg.ctx
    held = capacity(pg, o, par, kv)
    if held < 1:
        return None
    bound, bound_name = _bound(ctx, par)
    hi = min(held, bound)
    limit = "memory" if held < bound else bound_name
    unit = par.pp * par.dp if hi >= par.pp * par.dp else 1  # each micro-batch / attention group runs whole sequences
    hi = hi // unit * unit
    sm = step_model(pg, o, par, kv_name, kv)
    lengths = lengths or lengths_of(ctx.workload)
    loop = pg.loop(par.tp)
    return Pending(o, pg, par, kv_name, sm, hi, unit, limit, serve(sm, lengths, hi, ctx.spec, loop), lengths, loop)


def settle(c: Pending) -> Priced | None:
    """The layout at the largest concurrency its latency budgets allow (None: it misses one even at one
    sequence per group)."""
    ctx = c.gpu.ctx
    slo: Slo | None = ctx.slo if ctx.slo is not None and ctx.slo.active else None
    point, limit = c.top, c.limit
    if slo is not None and slo.broken(point) is not None:
        found = search_concurrency(lambda n: c.top if n == c.hi else serve(c.model, c.lengths, n, ctx.spec, c.loop),
                                   c.hi, slo, c.limit, c.unit)
        if found.point is None:
            return None
        point, limit = found.point, found.limit
    cost = c.model.decode(point.concurrency, c.lengths.decode_ctx)
    share = cost.communication_s / cost.time_s if cost.time_s > 0 else 0.0
    return Priced(c.option, c.gpu, c.par, c.kv_name, point, limit, share, c.model)


def price_layout(pg: PoolGpu, o: Option, par: Parallel, kv_name: str, kv: TensorQuant | None,
                 lengths: Lengths | None = None) -> Priced | None:
    """``o`` laid out as ``par`` at the largest concurrency its budgets and memory allow (None: it does not
    fit, or misses a budget even at one sequence)."""
    c = pending(pg, o, par, kv_name, kv, lengths)
    return settle(c) if c is not None else None


def size_for_load(point: ServePoint, *, rate: float | None, users: int | None, output_tokens: int) -> int:
    """Replicas the load needs at ``point`` before any wait is weighed (1 without a load): the lower bound the
    search prunes with (:func:`load_of` gives the plan's)."""
    from ..perf.queueing import capacity_replicas

    return capacity_replicas(rate=rate, users=users, output=output_tokens, tokens_per_s=point.tokens_per_s,
                             concurrency=point.concurrency)


def load_of(c: Pending, p: Priced) -> AtLoad | None:
    """The replicas ``p`` needs for the workload's ``--rate`` / ``--users`` and each at the load, the wait for a
    slot and the TTFT / E2E budgets weighed (advisor.speed.load_point; None without a load)."""
    ctx = c.gpu.ctx  # at_load prices every concurrency but the top, which it is given
    return load_point(ctx, lambda n: serve(c.model, c.lengths, n, ctx.spec, c.loop), p.point, mode=c.lengths.mode,
                      unit=c.unit)


def row_of(p: Priced, replicas: int, *, rate: float | None, output_tokens: int,
           at_load: AtLoad | None = None) -> LayoutRow:
    par, pg = p.par, p.gpu
    n = par.gpus
    gpus = n * replicas
    load = rate * output_tokens if rate is not None else None
    hour = pg.price * gpus if pg.price is not None else None
    return LayoutRow(
        scheme=p.option.id, native=p.option.native, gpu=pg.ctx.gpu.id, gpu_name=pg.ctx.gpu.name, family=par.family,
        layout=par.label, tp=par.tp, pp=par.pp, ep=par.expert_gpus if par.ep else 1, dp=par.dp, gpus_per_replica=n,
        gpus_per_node=pg.gpus_per_node, nodes_per_replica=nodes_of(n, pg.gpus_per_node), replicas=replicas, gpus=gpus,
        nodes=nodes_of(gpus, pg.gpus_per_node), kv_dtype=p.kv_name, concurrency=p.point.concurrency, limit=p.limit,
        tokens_per_s=p.point.tokens_per_s, tokens_per_s_per_gpu=p.point.tokens_per_s / n, itl_s=p.point.itl_s,
        ttft_s=p.point.ttft_s, e2e_s=p.point.e2e_s, step_s=p.point.step_s,
        decode_tokens_per_s=p.point.decode_tokens_per_s, prefill_share=p.point.prefill_share, bound=p.point.bound,
        comm_share=p.comm_share, usd_per_hour=hour,
        usd_per_mtok=usd_per_mtok(pg.price, n, p.point.tokens_per_s),
        usd_per_mtok_at_load=usd_per_mtok(pg.price, gpus, load) if load is not None else None,
        utilization=load / (replicas * p.point.tokens_per_s) if load is not None else None,
        uncertainty=row_band(p.model, p.option, p.point, usd_per_mtok(pg.price, n, p.point.tokens_per_s), pg.ctx),
        at_load=at_load)


def row_band(sm: StepModel, o: Option, point: ServePoint, cost: float | None, ctx: Context,
             ttft: float | None = None, e2e: float | None = None) -> FigureBand | None:
    """A layout's figures at the model's validated uncertainty (issue 25): the replica's step parts weighted by
    the held-out band of what priced each (advisor.speed.bands); None without bands (the spec sheet)."""
    from ..perf.uncertainty import figure_band
    from .speed import bands

    u_step, u_ttft, u_rate = bands(sm, o.efficiency, ctx.workload, point.concurrency, point.prefill_share)
    return figure_band(u_step=u_step, u_rate=u_rate, u_ttft=u_ttft, step=point.step_s,
                       tokens_per_s=point.tokens_per_s, itl=point.itl_s,
                       ttft=ttft if ttft is not None else point.ttft_s, e2e=e2e if e2e is not None else point.e2e_s,
                       cost=cost, u_loop=point.loop.uncertainty if point.loop is not None else None)


def candidates(pg: PoolGpu, max_gpus: int) -> tuple[list[Pending], int]:
    """Every deployable option of one GPU type in every shape that holds its weights and one sequence,
    priced at the top of its range, and how many were pruned by memory first. A quantized KV cache is
    weighed only where memory caps the layout with a bf16 one (node e's rule: never a bf16 cache holding
    fewer sequences where the quantized one holds more)."""
    out: list[Pending] = []
    pruned = 0
    live = [o for o in pg.options if o.status == "candidate" and o.model is not None]
    for par in shapes(pg, max_gpus):
        for o in live:
            capped = True
            for kv_name, kv in pg.kv:
                if not capped:
                    break
                c = pending(pg, o, par, kv_name, kv)
                if c is None:
                    pruned += 1
                    continue
                out.append(c)
                capped = c.limit == "memory"
    return out, pruned


def cost_of(point: ServePoint, pg: PoolGpu, par: Parallel, w: Workload, replicas: int | None = None) -> float:
    """What the load costs at ``point`` ($/hour; GPU-hours where no price is known) on ``replicas`` (None: the
    capacity count, :func:`size_for_load`); without a load, $ (GPU-hours) per output token at the point. At the top
    of a layout's range with the capacity count: a lower bound on its cost."""
    if w.rate is None and w.users is None:
        return (pg.price or 1.0) * par.gpus / max(point.tokens_per_s, 1e-12)
    n = replicas if replicas is not None else size_for_load(point, rate=w.rate, users=w.users,
                                                             output_tokens=w.output_tokens)
    return (pg.price or 1.0) * par.gpus * n
