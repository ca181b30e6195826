"""Fitting a :class:`~.kernel_curves.KernelCurve` to measured GEMM calls (least squares in log time).

Used by the maintainer importer (``tools/import_aiconfigurator.py``) and by ``quantadvise calibrate
--from aiconfigurator``; needs numpy and scipy (both come with the ``aiconfigurator`` extra, which
the published tables need anyway), imported here only when a fit runs: nothing on the path of a
prediction imports this module.

The parameters are the curve's log efficiencies at the (N, K) knots, its log M factors (the last
fixed at 0; every efficiency and factor at most 1, the spec sheet), log overhead and log(blend - 1); the residuals are log(predicted / measured) per call
plus a smoothness penalty between neighbouring knots (so knots no measurement pins stay near their
neighbours instead of drifting). The Jacobian is analytic.

Pure: no I/O.
"""

from __future__ import annotations

import math
from typing import Any

from ..results import record

NK_KNOTS = (512, 1024, 2048, 4096, 8192, 16384, 65536)
M_KNOTS = (1, 16, 64, 128, 256, 512, 1024, 4096, 16384)
SMOOTHNESS = 0.05  # weight of a log-efficiency step between neighbouring knots, against log-time residuals


@record
class Calls:
    """Measured calls of one kernel: rows M, weight N x K, seconds, and seconds of any measured
    extra work inside each call that the curve must not absorb (e.g. an eager activation-quant kernel
    the engine fuses away)."""

    m: Any  # numpy arrays, float64
    n: Any
    k: Any
    seconds: Any
    extra_s: Any | None = None


@record
class FitResult:
    overhead_s: float
    blend: float
    memory_efficiency: tuple[tuple[float, ...], ...]
    compute_efficiency: tuple[tuple[float, ...], ...]
    m_factor: tuple[float, ...]
    nk_knots: tuple[int, ...]
    m_knots: tuple[int, ...]
    rms_log_error: float


def _weights(x: Any, knots: Any) -> tuple[Any, Any]:
    import numpy as np

    x = np.clip(x, knots[0], knots[-1])
    i = np.clip(np.searchsorted(knots, x, side="right") - 1, 0, len(knots) - 2)
    t = (x - knots[i]) / (knots[i + 1] - knots[i])
    return i, t


def fit_calls(calls: Calls, *, weight_bytes: float, act_bytes: float, bandwidth: float, peak: float,
              nk_knots: tuple[int, ...] = NK_KNOTS, m_knots: tuple[int, ...] = M_KNOTS,
              smoothness: float = SMOOTHNESS, max_nfev: int = 200, m_tile: int = 1,
              tile_m_factor: bool = False) -> FitResult:
    """Fit the curve's parameters to ``calls`` (module docstring). ``m_tile`` is fixed, not fitted: the
    compute term counts M rounded up to whole ``m_tile``-row tiles (:meth:`.KernelCurve.rows`), and
    with ``tile_m_factor`` the M factor is read at those rows too."""
    import numpy as np
    from scipy.optimize import least_squares

    m = np.asarray(calls.m, float)
    n = np.asarray(calls.n, float)
    k = np.asarray(calls.k, float)
    y = np.asarray(calls.seconds, float)
    extra = np.zeros_like(y) if calls.extra_s is None else np.asarray(calls.extra_s, float)
    nk = len(nk_knots)
    kn = np.log2(np.asarray(nk_knots, float))
    km = np.log2(np.asarray(m_knots, float))
    nm = len(m_knots)
    i, t = _weights(np.log2(n), kn)
    j, u = _weights(np.log2(k), kn)
    rows_m = m if m_tile <= 1 else np.ceil(m / m_tile - 1e-9) * m_tile  # the rows the kernel computes
    at = rows_m if tile_m_factor else m
    q, v = _weights(np.log2(at), km) if nm > 1 else (np.zeros(len(m), int), np.zeros(len(m)))
    rows = np.arange(len(m))
    # bilinear weights as a dense (calls x nk*nk) matrix: 4 non-zeros per row
    W = np.zeros((len(m), nk * nk))
    for di, dj, w in ((0, 0, (1 - t) * (1 - u)), (1, 0, t * (1 - u)), (0, 1, (1 - t) * u), (1, 1, t * u)):
        np.add.at(W, (rows, (i + di) * nk + (j + dj)), w)
    Fm = np.zeros((len(m), nm))
    if nm > 1:
        np.add.at(Fm, (rows, q), 1 - v)
        np.add.at(Fm, (rows, q + 1), v)
    Fm = Fm[:, :-1]  # the M factor at the largest knot is fixed at 1 (the compute efficiency the tables give)
    mem0 = (n * k * weight_bytes + m * k * act_bytes + m * n * 2.0) / bandwidth
    comp0 = 2.0 * rows_m * n * k / peak
    n_t = nk * nk
    n_f = nm - 1

    # smoothness rows: differences between neighbouring knots of both tables
    pairs = [(a * nk + b, (a + 1) * nk + b) for a in range(nk - 1) for b in range(nk)]
    pairs += [(a * nk + b, a * nk + b + 1) for a in range(nk) for b in range(nk - 1)]
    D = np.zeros((len(pairs), n_t))
    for r, (a, b) in enumerate(pairs):
        D[r, a], D[r, b] = -1.0, 1.0
    n_par = 2 * n_t + n_f + 2
    R = np.zeros((2 * len(pairs) + max(n_f - 1, 0), n_par))
    R[: len(pairs), :n_t] = smoothness * D
    R[len(pairs): 2 * len(pairs), n_t: 2 * n_t] = smoothness * D
    for r in range(max(n_f - 1, 0)):
        R[2 * len(pairs) + r, 2 * n_t + r] = -smoothness
        R[2 * len(pairs) + r, 2 * n_t + r + 1] = smoothness

    def parts(th: Any) -> tuple[Any, ...]:
        lm = W @ th[:n_t]
        lc = W @ th[n_t: 2 * n_t] + (Fm @ th[2 * n_t: 2 * n_t + n_f] if n_f else 0.0)
        c0 = math.exp(th[-2])
        p = 1.0 + math.exp(th[-1])
        a = mem0 * np.exp(-lm)
        b = comp0 * np.exp(-lc)
        hi, lo = np.maximum(a, b), np.minimum(a, b)
        r = lo / hi
        rp = r ** p
        s = hi * (1.0 + rp) ** (1.0 / p)
        pred = c0 + s + extra
        return a, b, s, r, rp, p, c0, pred

    def resid(th: Any) -> Any:
        *_, pred = parts(th)
        return np.concatenate([np.log(pred / y), R @ th])

    def jac(th: Any) -> Any:
        a, b, s, r, rp, p, c0, pred = parts(th)
        da = -(a * (a / s) ** (p - 1)) / pred  # d log pred / d (log eta_m)
        db = -(b * (b / s) ** (p - 1)) / pred
        with np.errstate(divide="ignore", invalid="ignore"):
            dlogs_dp = -np.log1p(rp) / p**2 + np.where(r > 0, rp * np.log(np.where(r > 0, r, 1.0)), 0.0) / (p * (1 + rp))
        J = np.empty((len(m), n_par))
        J[:, :n_t] = W * da[:, None]
        J[:, n_t: 2 * n_t] = W * db[:, None]
        if n_f:
            J[:, 2 * n_t: 2 * n_t + n_f] = Fm * db[:, None]
        J[:, -2] = c0 / pred
        J[:, -1] = (s / pred) * dlogs_dp * (p - 1.0)
        return np.vstack([J, R])

    x0 = np.concatenate([np.full(n_t, math.log(0.7)), np.full(n_t, math.log(0.6)), np.full(n_f, -0.1),
                         [math.log(max(float(np.min(y)) * 0.3, 1e-7)), math.log(2.0)]])
    # efficiencies and M factors at most 1: the spec sheet bounds what HBM and the tensor cores deliver
    # (the tables time 6 copies of a weight in a loop, so a weight under a sixth of the L2 is partly read
    # from the L2 there; in a decode step every weight comes from HBM)
    lo_b = np.concatenate([np.full(2 * n_t, math.log(0.005)), np.full(n_f, -5.0), [math.log(1e-8), math.log(1e-3)]])
    hi_b = np.concatenate([np.zeros(2 * n_t), np.zeros(n_f), [math.log(1e-2), math.log(63.0)]])
    res = least_squares(resid, x0, jac=jac, bounds=(lo_b, hi_b), max_nfev=max_nfev, x_scale="jac", tr_solver="lsmr",
                        loss="soft_l1", f_scale=0.1)
    th = res.x
    fit_r = resid(th)[: len(y)]

    def table(block: Any) -> tuple[tuple[float, ...], ...]:
        vals = np.exp(block).reshape(nk, nk)
        return tuple(tuple(_sig(float(x)) for x in row) for row in vals)

    factors = (*(_sig(float(math.exp(x))) for x in th[2 * n_t: 2 * n_t + n_f]), 1.0)
    return FitResult(
        overhead_s=_sig(math.exp(th[-2])),
        blend=_sig(1.0 + math.exp(th[-1])),
        memory_efficiency=table(th[:n_t]),
        compute_efficiency=table(th[n_t: 2 * n_t]),
        m_factor=factors[:nm],
        nk_knots=tuple(nk_knots),
        m_knots=tuple(m_knots),
        rms_log_error=float(math.sqrt(float(np.mean(fit_r**2)))),
    )


def fit_quant(m: Any, k: Any, seconds: Any, *, bytes_per_element: float, bandwidth: float) -> tuple[float, float, float]:
    """(overhead s, streaming efficiency, rms log error) of a quantization kernel's measured calls:
    ``t = overhead + M*K*bytes / (eff * bandwidth)``, least squares in log time."""
    import numpy as np
    from scipy.optimize import least_squares

    m, k, y = (np.asarray(x, float) for x in (m, k, seconds))
    work = m * k * bytes_per_element / bandwidth

    def resid(th: Any) -> Any:
        return np.log((math.exp(th[0]) + work / math.exp(th[1])) / y)

    res = least_squares(resid, [math.log(max(float(np.min(y)), 1e-7)), math.log(0.5)],
                        bounds=([math.log(1e-8), math.log(0.01)], [math.log(1e-3), math.log(4.0)]))
    return _sig(math.exp(res.x[0])), _sig(math.exp(res.x[1])), float(np.sqrt(np.mean(resid(res.x) ** 2)))


def _sig(v: float, digits: int = 4) -> float:
    return float(f"{v:.{digits - 1}e}") if v and math.isfinite(v) else v


def fit_moe(configs: list[dict[str, int]], tokens: Any, seconds: Any, *, weight_bytes: float, act_bytes: float,
            bandwidth: float, peak: float, m_knots: tuple[int, ...] = M_KNOTS, m_tile: int = 1,
            nk_knots: tuple[int, ...] = (512, 16384)) -> FitResult:
    """A fused-MoE kernel's curve fitted to measured layers: ``configs[i]`` is the
    :func:`.heldout.moe_config` of call i, ``tokens[i]`` its token count. Efficiencies on a coarse
    (N, K) grid (``nk_knots``), the M factors over rows per expert, overhead, blend."""
    import numpy as np
    from scipy.optimize import least_squares

    from ..perf.kernel_curves import KernelCurve
    from .heldout import moe_time

    y = np.asarray(seconds, float)
    # M factors only where the data reach (rows per expert); flat beyond the largest measured
    most = max(t * c["topk"] / c["ep"] / max(min(c["experts"] / c["ep"], t * c["topk"] / c["ep"]), 1e-9)
               for c, t in zip(configs, tokens, strict=True))
    m_knots = tuple(m for m in m_knots if m <= most) or tuple(m_knots[:1])
    if len(m_knots) < 2:
        m_knots = (1, max(2, int(most)))
    nm, nk = len(m_knots), len(nk_knots)
    nt = nk * nk

    def tab(v: Any) -> tuple[tuple[float, ...], ...]:
        return tuple(tuple(math.exp(float(v[i * nk + j])) for j in range(nk)) for i in range(nk))

    def curve(th: Any) -> KernelCurve:
        return KernelCurve(kernel="fit", engine="fit", basis="composed", math="bf16", act_bytes=act_bytes,
                           overhead_s=math.exp(th[-2]), blend=1.0 + math.exp(th[-1]), nk_knots=nk_knots,
                           memory_efficiency=tab(th[:nt]), compute_efficiency=tab(th[nt: 2 * nt]), m_knots=m_knots,
                           m_factor=(1.0, *(math.exp(x) for x in th[2 * nt: 2 * nt + nm - 1])), m_tile=m_tile)

    def resid(th: Any) -> Any:
        c = curve(th)
        pred = [moe_time(c, cfg, t, weight_bytes, bandwidth, peak) for cfg, t in zip(configs, tokens, strict=True)]
        return np.concatenate([np.log(np.asarray(pred) / y), SMOOTHNESS * np.diff(th[2 * nt: 2 * nt + nm - 1])])

    x0 = np.concatenate([np.full(nt, math.log(0.6)), np.full(nt, math.log(0.3)), np.zeros(nm - 1),
                         [math.log(max(float(y.min()) * 0.3, 1e-7)), math.log(2.0)]])
    lo = np.concatenate([np.full(2 * nt, math.log(0.005)), np.full(nm - 1, -5.0), [math.log(1e-8), math.log(1e-3)]])
    hi = np.concatenate([np.full(2 * nt, 0.0), np.full(nm - 1, 5.0), [math.log(1e-2), math.log(63.0)]])
    x0 = np.minimum(x0, hi - 1e-9)
    res = least_squares(resid, x0, bounds=(lo, hi), max_nfev=400, x_scale="jac")
    c = curve(res.x)
    r = resid(res.x)[: len(y)]
    return FitResult(overhead_s=_sig(c.overhead_s), blend=_sig(c.blend),
                     memory_efficiency=tuple(tuple(_sig(v) for v in row) for row in c.memory_efficiency),
                     compute_efficiency=tuple(tuple(_sig(v) for v in row) for row in c.compute_efficiency),
                     m_factor=tuple(_sig(v) for v in c.m_factor), nk_knots=tuple(nk_knots), m_knots=tuple(m_knots),
                     rms_log_error=float(np.sqrt(np.mean(r**2))))
