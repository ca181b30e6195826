"""Fitting the serving loop's terms (:class:`~quantadvise.perf.loop.LoopTerms`) to end-to-end measurements.

Each measurement is a :class:`Sample`: the cycle the loop predicts for its workload (a base — the kernels —
plus each term times its feature, :func:`quantadvise.perf.loop.cycle`) and the measured output tokens/s,
so the measured cycle is ``R x O / tokens/s`` and a term vector θ predicts ``base + θ · features``. The
fit minimises the sum of |relative error| of the cycle (iteratively reweighted least squares, each pass a
non-negative least squares on the normal equations: every term is a cost, never a credit). A cycle's
relative error is minus its tokens/s error to first order, so the fit aims at the figure reported: the
median |error| of output tokens/s. Pure Python (the base install has no numpy), a handful of terms.

Pure: no I/O, no printing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..perf.loop import TERMS, Cycle, LoopTerms
from ..results import record

FLOOR = 0.02  # IRLS: errors below 2% weigh as 2% (a perfectly fitted point must not take all the weight)


@record(slots=True)
class Sample:
    """One measured point as the fit sees it."""

    key: str  # the point (or file) it came from
    group: str  # the hold-out unit (a source, a file)
    band: str
    numerator: float  # requests in flight x output tokens: tokens/s = numerator / cycle seconds
    cycle: Cycle
    measured: float  # output tokens/s

    def predict(self, terms: LoopTerms | None) -> float:
        return self.numerator / self.cycle.seconds(terms)

    def error(self, terms: LoopTerms | None) -> float:
        return self.predict(terms) / self.measured - 1.0


def _nnls(a: list[list[float]], b: list[float], sweeps: int = 400) -> list[float]:
    """min |A^½x - ...|² over x >= 0 from the normal equations (A x = b): projected coordinate descent."""
    n = len(b)
    x = [0.0] * n
    for _ in range(sweeps):
        moved = 0.0
        for i in range(n):
            if a[i][i] <= 0:
                continue
            r = b[i] - sum(a[i][j] * x[j] for j in range(n) if j != i)
            new = max(0.0, r / a[i][i])
            moved = max(moved, abs(new - x[i]) / (abs(x[i]) + 1e-30))
            x[i] = new
        if moved < 1e-10:
            break
    return x


def fit_values(samples: Sequence[Sample], terms: Sequence[str] = TERMS, passes: int = 10) -> dict[str, float]:
    """The non-negative value of each of ``terms`` (the others 0) that fits ``samples`` best in median
    |relative error| (module docstring)."""
    idx = [TERMS.index(t) for t in terms]
    k = len(idx)
    if not samples or not k:
        return {t: 0.0 for t in terms}
    weights = [1.0] * len(samples)
    x = [0.0] * k
    for _ in range(passes):
        a = [[0.0] * k for _ in range(k)]
        b = [0.0] * k
        for s, w8 in zip(samples, weights, strict=True):
            meas = s.numerator / s.measured  # the measured cycle
            sq = meas * meas  # (meas ** 2 raises OverflowError past a float; the product is inf)
            if not 0 < sq < math.inf:  # a cycle of 0 s or past a float: no weight to give it (bench.measured_rate)
                continue
            f = [s.cycle.features[i] for i in idx]
            w = w8 / sq
            res = meas - s.cycle.base_s
            for i in range(k):
                b[i] += w * f[i] * res
                for j in range(k):
                    a[i][j] += w * f[i] * f[j]
        scale = [math.sqrt(a[i][i]) or 1.0 for i in range(k)]
        an = [[a[i][j] / (scale[i] * scale[j]) for j in range(k)] for i in range(k)]
        bn = [b[i] / scale[i] for i in range(k)]
        x = [v / scale[i] for i, v in enumerate(_nnls(an, bn))]
        full = [0.0] * len(TERMS)
        for i, v in zip(idx, x, strict=True):
            full[i] = v
        weights = []
        for s in samples:
            pred = s.cycle.base_s + sum(a_ * f_ for a_, f_ in zip(full, s.cycle.features, strict=True))
            err = abs(s.numerator / pred / s.measured - 1.0) if pred > 0 else 1.0
            weights.append(1.0 / max(FLOOR, err))
    return {t: _sig(v) for t, v in zip(terms, x, strict=True)}


def _sig(v: float, digits: int = 4) -> float:
    return float(f"{v:.{digits}g}") if v else 0.0


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    if not n:
        return math.nan
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
