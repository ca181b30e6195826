"""Held-out validation of kernel curves: the data the fits never saw, and the error on it.

The importer (:mod:`.aiconfigurator`) keeps, per kernel, the measured calls of the shape sets in
:data:`HELD_OUT_SETS` at every other batch size (neither the shapes nor the batches are fitted) and,
for the fused-MoE Marlin tables, every other (tensor-parallel, expert-parallel) configuration at every
other token count. ``validate`` and the tests recompute the error from the shipped curves on that
data with :func:`heldout_errors` / :func:`moe_errors`.

Pure: no I/O.
"""

from __future__ import annotations

import math
from typing import Any

from ..perf.kernel_curves import HeldOut, KernelCurve, QuantCurve, blend

# Held-out shape sets: the decode-step GEMMs (q/k/v fused, o, gate/up fused, down) of real models at a
# tensor-parallel split where every shape is on the tables' grid; never used for fitting.
HELD_OUT_SETS: dict[str, tuple[tuple[int, int], ...]] = {
    "Llama-3-8B tp4": ((1536, 4096), (4096, 1024), (7168, 4096), (4096, 3584)),
    "Llama-3.2-1B": ((3072, 2048), (2048, 2048), (16384, 2048), (2048, 8192)),
    "Llama-3.2-1B tp2": ((1536, 2048), (2048, 1024), (8192, 2048), (2048, 4096)),
    "Qwen3-8B tp2": ((3072, 4096), (4096, 2048), (12288, 4096), (4096, 6144)),
    "Qwen3-8B tp4": ((1536, 4096), (4096, 1024), (6144, 4096), (4096, 3072)),
    "Qwen3-8B tp8": ((768, 4096), (4096, 512), (3072, 4096), (4096, 1536)),
    "gemma-2-9b tp4": ((2048, 3584), (3584, 1024), (7168, 3584), (3584, 3584)),
    "70B-class layer tp4": ((2560, 8192), (8192, 2048), (16384, 8192), (8192, 8192)),
}
HELD_OUT_CELLS = frozenset(c for s in HELD_OUT_SETS.values() for c in s)


def heldout_errors(curve: KernelCurve, doc: dict[str, Any], bandwidth: float, peak: float,
                   quant: QuantCurve | None) -> HeldOut:
    """Errors of ``curve`` (plus ``quant``'s time when the measured calls include it) on a held-out
    document: every held-out call, and every held-out set's decode step (the sum of its GEMMs)."""
    wbytes = doc["weight_bytes"]

    def pred(m: int, n: int, k: int) -> float:
        q = quant.time(m, k, bandwidth) if quant is not None else 0.0
        return curve.time(m, n, k, wbytes, bandwidth, peak) + q

    return errors_of(pred, doc)


def roofline_errors(doc: dict[str, Any], bandwidth: float, peak: float, memory_efficiency: float,
                    compute_efficiency: float, act_bytes: float = 2.0) -> HeldOut:
    """The same errors for the format-level roofline (one efficiency per format: what priced every
    scheme before kernel curves), ``max(bytes / (eta_m BW), FLOPs / (eta_c peak))`` per call."""
    wbytes = doc["weight_bytes"]

    def pred(m: int, n: int, k: int) -> float:
        mem = (n * k * wbytes + m * k * act_bytes + m * n * 2.0) / (memory_efficiency * bandwidth)
        return max(mem, 2.0 * m * n * k / (compute_efficiency * peak))

    return errors_of(pred, doc)


def errors_of(pred: Any, doc: dict[str, Any]) -> HeldOut:
    """|predicted / measured - 1| for every held-out call and held-out decode step of ``doc``."""
    ms, cells, seconds = doc["batches"], [tuple(c) for c in doc["cells"]], doc["seconds"]

    idx = {(n, k, m): t for (n, k), row in zip(cells, seconds, strict=True) for m, t in zip(ms, row, strict=True)
           if t is not None}
    errs = [abs(pred(m, n, k) / t - 1) for (n, k, m), t in idx.items()]
    steps = []
    for cells_set in HELD_OUT_SETS.values():
        for m in ms:
            meas = [idx[(n, k, m)] for n, k in cells_set if (n, k, m) in idx]
            if len(meas) == len(cells_set):
                steps.append(abs(sum(pred(m, n, k) for n, k in cells_set) / sum(meas) - 1))
    return HeldOut(gemm_points=len(errs), gemm_median=_median(errs), gemm_max=max(errs, default=math.nan),
                   step_points=len(steps), step_median=_median(steps) if steps else 0.0,
                   step_max=max(steps, default=0.0),
                   method="shapes of the held-out sets (never fitted) at every other batch size (never fitted)")


def monotone_floor(seconds: list[float]) -> float:
    """The smallest worst-case relative error any prediction that never gets faster as M grows can
    reach on ``seconds`` (measured times in ascending M): the least ``e`` for which a non-decreasing
    ``p`` with ``|p_i / t_i - 1| <= e`` exists. More rows are never less work, so a curve (any compact
    model of one kernel) is non-decreasing in M; a measured time that falls as M grows — another
    kernel configuration picked by the library's heuristics, or a noisy single batch — costs at least
    this much on the held-out data, whatever the model. Checked greedily (the lowest feasible ``p_i``
    at each step), bisected on ``e``."""
    ts = [t for t in seconds if t and t > 0]
    if len(ts) < 2:
        return 0.0

    def feasible(e: float) -> bool:
        p = 0.0
        for t in ts:
            p = max(p, t * (1.0 - e))
            if p > t * (1.0 + e):
                return False
        return True

    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if feasible(mid) else (mid, hi)
    return hi


def step_floor(doc: dict[str, Any]) -> float:
    """:func:`monotone_floor` of every held-out decode step sequence of ``doc`` (each set of
    :data:`HELD_OUT_SETS` along the held-out batches), the largest: no curve monotone in M misses
    the held-out steps by less than this."""
    ms, cells, seconds = doc["batches"], [tuple(c) for c in doc["cells"]], doc["seconds"]
    idx = {(n, k, m): t for (n, k), row in zip(cells, seconds, strict=True) for m, t in zip(ms, row, strict=True)
           if t is not None}
    worst = 0.0
    for cells_set in HELD_OUT_SETS.values():
        seq = [sum(idx[(n, k, m)] for n, k in cells_set) for m in ms
               if all((n, k, m) in idx for n, k in cells_set)]
        worst = max(worst, monotone_floor(seq))
    return worst


def _median(xs: list[float]) -> float:
    if not xs:
        return math.nan
    s = sorted(xs)
    h = len(s) // 2
    return s[h] if len(s) % 2 else 0.5 * (s[h - 1] + s[h])


def moe_config(hidden: int, inter: int, topk: int, experts: int, tp: int, ep: int) -> dict[str, int]:
    return {"hidden": hidden, "inter": inter, "topk": topk, "experts": experts, "tp": tp, "ep": ep}


def moe_time(curve: KernelCurve, cfg: dict[str, int], tokens: float, weight_bytes: float, bandwidth: float,
             peak: float) -> float:
    """One fused-MoE layer (gate/up and down GEMMs of every expert the tokens reach) on one GPU:
    ``tokens`` tokens pick ``topk`` of ``experts`` experts, spread evenly (the tables' balanced
    distribution); the GPU holds experts/ep experts, each with inter/tp of the intermediate size."""
    h, top, e_l = cfg["hidden"], cfg["topk"], cfg["experts"] / cfg["ep"]
    i_l = cfg["inter"] / cfg["tp"]
    routed = tokens * top / cfg["ep"]
    touched = min(e_l, routed)
    if touched <= 0:
        return curve.overhead_s
    rows = routed / touched
    mem = comp = 0.0
    for n, k in ((2 * i_l, h), (h, i_l)):
        em, ec = curve.efficiencies(rows, n, k)
        mem += touched * (n * k * weight_bytes + rows * k * curve.act_bytes + rows * n * 2.0) / (em * bandwidth)
        comp += touched * 2.0 * curve.rows(rows) * n * k / (ec * peak)
    return curve.overhead_s + blend(mem, comp, curve.blend)


def moe_errors(curve: KernelCurve, doc: dict[str, Any], bandwidth: float, peak: float) -> HeldOut:
    """Errors of a fused-MoE curve on its held-out document (configs x token counts, seconds)."""
    curve = curve.as_fused_moe()
    errs = []
    for cfg, row in zip(doc["configs"], doc["seconds"], strict=True):
        for t, meas in zip(doc["tokens"], row, strict=True):
            if meas is not None:
                errs.append(abs(moe_time(curve, cfg, t, doc["weight_bytes"], bandwidth, peak) / meas - 1))
    return HeldOut(gemm_points=len(errs), gemm_median=_median(errs), gemm_max=max(errs, default=math.nan),
                   method="fused-MoE layers of held-out (tensor, expert)-parallel configurations at held-out token "
                          "counts (neither fitted)")
