"""Prefill/decode disaggregation for the layout search: a decode pool and a prefill pool of the same GPU
type, each laid out its own way, the KV cache of every prompt sent from one to the other.

For each scheme and KV dtype a GPU type serves, with ``--rate R`` requests/s of P prompt and O output tokens:

- **prefill pool**: the layout with the fewest GPU-seconds per prompt, a replica batching the engine's
  default prefill chunk (``engines.flags.prefill_chunk_tokens``: ``b = max(1, chunk // P)`` prompts a step),
  ``b / T_prefill(b)`` prompts/s; ``r_p`` replicas, the fewest that keep the pool's utilization
  ``ρ = R / (r_p x prompts/s)`` below 1 and, with ``--ttft-ms``, the queued TTFT within it:
  ``TTFT = T_prefill(1) x (1 + ρ / (2(1 − ρ))) + KV transfer`` (an M/D/1 queue, as the aggregated serving
  loop's TTFT);
- **KV transfer**: one prompt's KV cache (``sequence_bytes``) from the prefill replica's GPUs that hold
  distinct shards (its TP x PP ranks; its PP stages for an MLA latent, whole on every TP rank) over the
  network, in parallel: ``latency + bytes / (shards x β_net)``;
- **decode pool**: the aggregated layouts of this scheme that deliver the most tokens/s per GPU (four), priced
  again decode-only (no prefill joins the decode steps: ITL is the step), at least ``ceil(R x O / tokens_per_s)``
  replicas and more until few requests wait for a decode slot (:mod:`quantadvise.perf.queueing`, as an
  aggregated layout under the load; the row's ``at_load``: TTFT the prefill pool's plus that wait).

A P/D row's GPUs are both pools'; its capacity the smaller of the decode pool's output tokens/s and the
prefill pool's prompts/s x O. Pure.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..engines.flags import prefill_chunk_tokens
from ..memory.kvcache import sequence_bytes
from ..perf.parallel import Parallel, nodes_of
from ..perf.serving import Lengths, serve, usd_per_mtok
from .layout_result import LayoutRow, PrefillPool
from .layouts import PoolGpu, Priced, capacity, price_layout, row_band, shapes, size_for_load, step_model

if TYPE_CHECKING:
    from ..perf.queueing import AtLoad

MAX_PREFILL_REPLICAS = 4096
DECODE_LAYOUTS = 4  # per scheme and GPU type: the aggregated layouts with the most tokens/s per GPU


def _decode_candidates(priced: list[Priced], pg: PoolGpu) -> list[Priced]:
    """The decode layouts weighed for P/D on ``pg``: per scheme, the ``DECODE_LAYOUTS`` aggregated layouts that
    deliver the most output tokens/s per GPU (a decode pool is their decode side)."""
    by: dict[str, list[Priced]] = {}
    for p in priced:
        if p.gpu is pg:
            by.setdefault(p.option.id, []).append(p)
    out: list[Priced] = []
    for ps in by.values():
        out += sorted(ps, key=lambda p: -p.point.tokens_per_s / p.par.gpus)[:DECODE_LAYOUTS]
    return out


def best_prefill(pg: PoolGpu, p: Priced, max_gpus: int) -> tuple[Parallel, float, float, float] | None:
    """(layout, prompts/s per replica, one prompt's prefill in s, KV transfer s) of the prefill layout with
    the fewest GPU-seconds per prompt."""
    w = pg.ctx.workload
    prompt = w.prompt_tokens
    b = max(1, prefill_chunk_tokens(pg.ctx.engine.engine, pg.ctx.gpu.memory_bytes) // max(prompt, 1))
    best: tuple[float, Parallel, float, float] | None = None
    kv = next(kv for name, kv in pg.kv if name == p.kv_name)
    for par in shapes(pg, max_gpus):
        if capacity(pg, p.option, par, kv) < b:
            continue
        sm = step_model(pg, p.option, par, p.kv_name, kv)
        t_b = sm.prefill(b, prompt).time_s
        cost = par.gpus * t_b / b
        if best is None or cost < best[0]:
            best = (cost, par, b / t_b, sm.prefill(1, prompt).time_s)
    if best is None or pg.comm is None:
        return None
    _, par, rate, one = best
    arch = pg.ctx.arch
    shards = par.pp if arch.is_mla else par.tp * par.pp
    kv_bytes = sequence_bytes(arch, kv, prompt)
    transfer = pg.comm.p2p(kv_bytes / shards, cross_node=True)
    return par, rate, one, transfer


def _prefill_replicas(rate: float, per_replica: float, one: float, transfer: float,
                      ttft_budget: float | None) -> tuple[int, float, float] | None:
    """(replicas, utilization, TTFT): the fewest replicas with utilization below 1 and the budget met."""
    r = max(1, math.floor(rate / per_replica) + 1)
    while r <= MAX_PREFILL_REPLICAS:
        rho = rate / (r * per_replica)
        ttft = one * (1.0 + rho / (2.0 * (1.0 - rho))) + transfer
        if ttft_budget is None or ttft <= ttft_budget:
            return r, rho, ttft
        if one + transfer > ttft_budget:
            return None
        r += 1
    return None


def disaggregated(pool: list[PoolGpu], priced: list[Priced], max_gpus: int) -> list[LayoutRow]:
    """P/D rows for every (scheme, KV dtype, decode layout) the aggregated search priced on a GPU type whose
    engine serves disaggregated (the module docstring has the model)."""
    rows: list[LayoutRow] = []
    for pg in pool:
        w = pg.ctx.workload
        if not pg.disaggregation or pg.comm is None or w.rate is None or w.prompt_tokens == 0:
            continue
        rate, out_tokens = w.rate, w.output_tokens
        decode_only = Lengths(prompt=0, output=out_tokens, decode_ctx=w.decode_context, mode="continuous")
        slo = pg.ctx.slo
        ttft_budget = slo.ttft_s if slo is not None else None
        prefills: dict[tuple[int, str], tuple[Parallel, float, float, float] | None] = {}
        for p in _decode_candidates(priced, pg):
            key = (id(p.option), p.kv_name)
            if key not in prefills:
                prefills[key] = best_prefill(pg, p, max_gpus)
            pre = prefills[key]
            if pre is None:
                continue
            ppar, per_replica, one, transfer = pre
            sized = _prefill_replicas(rate, per_replica, one, transfer, ttft_budget)
            if sized is None:
                continue
            r_p, rho, ttft = sized
            kv = next(kv for name, kv in pg.kv if name == p.kv_name)
            d = price_layout(pg, p.option, p.par, p.kv_name, kv, lengths=decode_only)
            if d is None:
                continue
            dec = _decode_load(pg, d, decode_only, ttft, slo.e2e_s if slo is not None else None,
                               slo.itl_s if slo is not None else None)
            if dec is not None and slo is not None and slo.broken(dec) is not None:
                continue  # the decode pool misses a budget at the concurrency the load runs
            r_d = dec.replicas if dec is not None else size_for_load(d.point, rate=rate, users=None,
                                                                     output_tokens=out_tokens)
            gpus = r_p * ppar.gpus + r_d * p.par.gpus
            if gpus > max_gpus:
                continue
            capacity_tps = min(r_d * d.point.tokens_per_s, r_p * per_replica * out_tokens)
            load = rate * out_tokens
            par = p.par
            rows.append(LayoutRow(
                scheme=p.option.id, native=p.option.native, gpu=pg.ctx.gpu.id, gpu_name=pg.ctx.gpu.name, family="P/D",
                layout=f"P {r_p}x{ppar.label} + D {par.label}", tp=par.tp, pp=par.pp,
                ep=par.expert_gpus if par.ep else 1, dp=par.dp, gpus_per_replica=par.gpus,
                gpus_per_node=pg.gpus_per_node, nodes_per_replica=nodes_of(par.gpus, pg.gpus_per_node), replicas=r_d, gpus=gpus,
                nodes=nodes_of(r_p * ppar.gpus, pg.gpus_per_node) + nodes_of(r_d * par.gpus, pg.gpus_per_node),
                kv_dtype=p.kv_name, concurrency=d.point.concurrency, limit=d.limit,
                tokens_per_s=d.point.tokens_per_s, tokens_per_s_per_gpu=capacity_tps / gpus, itl_s=d.point.itl_s,
                ttft_s=ttft, e2e_s=ttft + (out_tokens - 1) * d.point.itl_s, step_s=d.point.step_s,
                decode_tokens_per_s=d.point.decode_tokens_per_s, prefill_share=None, bound=d.point.bound,
                comm_share=d.comm_share,
                usd_per_hour=pg.price * gpus if pg.price is not None else None,
                usd_per_mtok=usd_per_mtok(pg.price, gpus, capacity_tps),
                usd_per_mtok_at_load=usd_per_mtok(pg.price, gpus, load),
                utilization=load / (r_d * d.point.tokens_per_s),
                uncertainty=row_band(d.model, p.option, d.point, usd_per_mtok(pg.price, gpus, capacity_tps), pg.ctx,
                                     ttft=ttft, e2e=ttft + (out_tokens - 1) * d.point.itl_s),
                prefill=PrefillPool(layout=ppar.label, tp=ppar.tp, pp=ppar.pp, ep=ppar.expert_gpus if ppar.ep else 1,
                                    dp=ppar.dp, replicas=r_p, gpus=r_p * ppar.gpus, prompts_per_s=per_replica,
                                    utilization=rho, kv_transfer_s=transfer),
                at_load=dec))
    return rows


def _decode_load(pg: PoolGpu, d: Priced, decode_only: Lengths, ttft: float, e2e_budget: float | None,
                 itl_budget: float | None = None) -> AtLoad | None:
    """The decode pool under the load (perf.queueing, as an aggregated layout): its replicas keep at most
    ``defaults.LOAD_WAIT_SHARE`` of the requests waiting for a decode slot and the E2E budget met; a user's TTFT is
    the prefill pool's plus that wait, the E2E the TTFT plus the decode."""
    from ..perf.queueing import at_load

    w, par, top = pg.ctx.workload, d.par, d.point
    loop = pg.loop(par.tp)
    got = at_load(lambda n: serve(d.model, decode_only, n, pg.ctx.spec, loop), top,
                  rate=w.rate, users=None, output=w.output_tokens, unit=par.pp * par.dp if top.concurrency >= par.pp
                  * par.dp else 1, e2e_s=e2e_budget - ttft if e2e_budget is not None else None, itl_s=itl_budget)
    if got is None:
        return None
    return got.model_copy(update={"ttft_s": ttft + got.wait_s, "e2e_s": ttft + got.e2e_s})
