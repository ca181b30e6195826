"""The fit of a scheme's measured decode linears (docs/calibration.md §2): least squares in log
time of ``t(M) = ((mem/eta_m)^p + (comp*max(M, T)/eta_c)^p)^(1/p)``, then a measured correction
curve, as a :class:`~.profiles.LinearFit` the step model prices linear layers with.

Pure: no I/O, no printing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from ..errors import InputError
from ..hardware import GPU
from ..model.arch import ModelArch
from ..perf.efficiency import Efficiency, resolve
from ..perf.profiles import IDEAL, Curve, LinearFit
from ..perf.step import StepModel
from ..results import record
from ..scheme.axes import Scheme

SIG_DIGITS = 5  # measured numbers are rounded to this many significant digits (timing noise is ~1%)

_P_GRID = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 64.0)
_ETA_M = (0.01, 4.0)
_ETA_C = (1e-4, 4.0)
_TILES = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)


@record(slots=True)
class FitParams:
    """The smooth fit alone (before the correction curve): efficiencies, blend, M tile, error."""

    memory_efficiency: float
    compute_efficiency: float
    blend: float
    m_tile: float
    rms_log_error: float


def _lm(bs: Sequence[float], ys: Sequence[float], m0: float, c0: float, p: float,
        x: float, y: float) -> tuple[float, float, float]:
    """Levenberg-Marquardt on (x, y) = (ln 1/eta_m, ln 1/eta_c) for a fixed blend exponent p;
    returns (x, y, sse in log time). ``bs`` are the rows the kernel computes. Works in logs:
    ln t = ln v + softplus_p(ln u - ln v), u the memory and v the compute term."""
    lo_x, hi_x = -math.log(_ETA_M[1]), -math.log(_ETA_M[0])
    lo_y, hi_y = -math.log(_ETA_C[1]), -math.log(_ETA_C[0])
    lm0 = math.log(m0)
    lv0 = [math.log(c0 * b) for b in bs]
    exact_max = p >= 64.0
    exp, log1p = math.exp, math.log1p

    def resid(x: float, y: float) -> tuple[list[float], list[float], float]:
        lu = x + lm0
        es, ws, sse = [], [], 0.0
        for lv_b, yi in zip(lv0, ys, strict=True):
            lv = y + lv_b
            d = lu - lv
            if exact_max:
                lt, w = (lu, 1.0) if d >= 0 else (lv, 0.0)
            else:
                z = exp(-p * abs(d))
                lt = (lu if d >= 0 else lv) + log1p(z) / p
                w = 1.0 / (1.0 + z) if d >= 0 else z / (1.0 + z)
            e = yi - lt
            es.append(e)
            ws.append(w)
            sse += e * e
        return es, ws, sse

    lam = 1e-3
    es, ws, cur = resid(x, y)
    for _ in range(100):
        j11 = j12 = j22 = g1 = g2 = 0.0
        for e, w in zip(es, ws, strict=True):
            v = 1.0 - w
            j11 += w * w
            j12 += w * v
            j22 += v * v
            g1 += w * e
            g2 += v * e
        for _ in range(20):
            a11, a22 = j11 + lam * (j11 + 1e-9), j22 + lam * (j22 + 1e-9)
            det = a11 * a22 - j12 * j12
            dx = (g1 * a22 - g2 * j12) / det
            dy = (a11 * g2 - j12 * g1) / det
            nx, ny = min(max(x + dx, lo_x), hi_x), min(max(y + dy, lo_y), hi_y)
            nes, nws, new = resid(nx, ny)
            if new < cur:
                break
            lam *= 4
        else:
            return x, y, cur
        gain = cur - new
        x, y, es, ws, cur = nx, ny, nes, nws, new
        lam = max(lam / 3, 1e-9)
        if gain <= 1e-12 * (1.0 + cur):
            break
    return x, y, cur


def fit_params(batches: Sequence[float], times_s: Sequence[float], mem_s: float, comp_s: float) -> FitParams:
    """Least squares in log time of ``t(M) = ((mem/eta_m)^p + (comp*max(M, T)/eta_c)^p)^(1/p)`` to
    the measured ``times_s`` at GEMM heights ``batches``. ``mem_s`` = the shapes' bytes at peak
    bandwidth, ``comp_s`` = their FLOPs per row at the datapath's peak (the spec-sheet roofline's
    two terms), so eta_m and eta_c are achieved fractions of the spec sheet; p (blend) and T (the
    kernel's M tile) are chosen from grids, p then refined."""
    if len(batches) < 3:
        raise InputError(f"a fit needs at least 3 batches, got {len(batches)}", field="batches")
    if mem_s <= 0 or comp_s <= 0:
        raise InputError("the shapes have no bytes or FLOPs to fit", field="model")
    ys = [math.log(t) for t in times_s]
    x0 = min(max(math.log(times_s[0] / mem_s), -math.log(_ETA_M[1])), -math.log(_ETA_M[0]))
    results = []
    for tile in _TILES:
        if tile > 1 and tile > batches[-2]:  # a tile above all but the last batch explains nothing
            break
        rows = [max(b, tile) for b in batches]
        y0 = min(max(math.log(times_s[-1] / (comp_s * rows[-1])), -math.log(_ETA_C[1])), -math.log(_ETA_C[0]))
        for p in _P_GRID:
            x, y, sse = _lm(rows, ys, mem_s, comp_s, p, x0, y0)
            results.append((sse, tile, p, x, y))
    best = min(results, key=lambda r: (r[0] * (1 + 1e-9), r[1]))  # on a tie, the smaller tile
    sse, tile, p_best, x_b, y_b = best
    rows = [max(b, tile) for b in batches]
    # refine p between its grid neighbours (golden section on ln p)
    i = _P_GRID.index(p_best)
    lo, hi = math.log(_P_GRID[max(i - 1, 0)]), math.log(_P_GRID[min(i + 1, len(_P_GRID) - 1)])
    g = (math.sqrt(5) - 1) / 2
    cache: dict[float, tuple[float, float, float, float]] = {}

    def at(lp: float) -> tuple[float, float, float, float]:
        if lp not in cache:
            x, y, e = _lm(rows, ys, mem_s, comp_s, math.exp(lp), x_b, y_b)
            cache[lp] = (e, math.exp(lp), x, y)
        return cache[lp]

    a_, b_ = lo, hi
    for _ in range(14):
        c1, c2 = b_ - g * (b_ - a_), a_ + g * (b_ - a_)
        if at(c1)[0] <= at(c2)[0]:
            b_ = c2
        else:
            a_ = c1
    sse, p, x, y = min([(sse, p_best, x_b, y_b), *cache.values()])
    return FitParams(
        memory_efficiency=math.exp(-x),
        compute_efficiency=math.exp(-y),
        blend=p,
        m_tile=tile,
        rms_log_error=math.sqrt(sse / len(batches)),
    )


def significant(v: float, digits: int = SIG_DIGITS) -> float:
    """``v`` rounded to ``digits`` significant digits (0, inf and nan unchanged)."""
    if v == 0 or not math.isfinite(v):
        return v
    return float(f"{v:.{digits - 1}e}")


def ideal_model(arch: ModelArch, scheme: Scheme, gpu: GPU) -> StepModel:
    """The spec-sheet step model of ``arch``'s decoder (the roofline a fit's efficiencies scale)."""
    eff = resolve([IDEAL], (gpu.id,), (scheme.id,))
    return StepModel(arch, scheme, gpu, efficiency=eff, scope="decoder")


def fit_linear(
    arch: ModelArch,
    scheme: Scheme,
    gpu: GPU,
    batches: Sequence[int],
    times_s: Sequence[float],
    *,
    kernel: str = "",
    applies_to: tuple[str, ...] = (),
) -> LinearFit:
    """The :class:`LinearFit` of one scheme's measured decode linears: efficiencies and blend
    fitted in log time, then a correction curve (measured / fitted, per measured batch) so that the
    step model reproduces every measured point for ``arch``'s shapes."""
    ideal = ideal_model(arch, scheme, gpu)
    mem_s, comp_s = ideal.linear_terms()
    fp = fit_params(batches, times_s, mem_s, comp_s)
    base = LinearFit(kernel=kernel, applies_to=applies_to, memory_efficiency=significant(fp.memory_efficiency),
                     compute_efficiency=significant(fp.compute_efficiency), blend=significant(fp.blend, 4),
                     m_tile=fp.m_tile)
    sm = StepModel(arch, scheme, gpu, efficiency=with_fit(ideal.eff, base), scope="decoder", path=ideal.path)
    corr = [significant(t / sm.linear_time(b)) for b, t in zip(batches, times_s, strict=True)]
    return base.model_copy(update={"correction": Curve(batch=tuple(float(b) for b in batches), value=tuple(corr))})


def with_fit(eff: Efficiency, fit: LinearFit | None) -> Efficiency:
    """``eff`` with its measured fit replaced (the ideal profile has none; a fit turns it into a
    calibrated model of the linears only, which is all ``linear_time`` looks at)."""
    return replace(eff, ideal=False, linear=fit, linear_bf16=None, dequant=None if fit is not None else eff.dequant)
