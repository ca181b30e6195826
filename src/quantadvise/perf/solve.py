"""Root finding for the performance model: where a continuous function of batch turns non-negative
(a ridge batch) and every batch where it changes sign (a crossover between two schemes).

Pure: no I/O, no printing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

Fn = Callable[[float], float]  # a continuous function of batch


def first_root(fn: Fn, lo: float, hi: float, *, grid: float = 1.25, rel: float = 1e-7) -> float | None:
    """The smallest x in [lo, hi] where fn(x) >= 0 (fn continuous), by a geometric scan and bisection."""
    if fn(lo) >= 0:
        return lo
    a = lo
    while a < hi:
        b = min(a * grid, hi)
        if fn(b) >= 0:
            return _bisect(fn, a, b, rel)
        a = b
    return None


def _bisect(fn: Fn, a: float, b: float, rel: float) -> float:
    """fn(a) < 0 <= fn(b): shrink to the crossing."""
    while b - a > rel * b:
        mid = 0.5 * (a + b)
        if fn(mid) >= 0:
            b = mid
        else:
            a = mid
    return b


def crossings(fn: Fn, lo: float, hi: float, steps: int = 400, rel: float = 1e-7, tie: float = 1e-9) -> list[float]:
    """Every x in [lo, hi] where continuous ``fn`` changes sign, found on a log grid and bisected.
    Values within ``tie`` of zero are ties, not sign changes (two schemes that converge on the
    same compute-bound time do not cross)."""
    return list(_sign_changes(fn, lo, hi, steps, rel, tie))


def first_crossing(fn: Fn, lo: float, hi: float, steps: int = 400, rel: float = 1e-7,
                   tie: float = 1e-9) -> float | None:
    """The first of :func:`crossings` (the same grid and bisection), without scanning past it."""
    return next(_sign_changes(fn, lo, hi, steps, rel, tie), None)


def iter_crossings(fn: Fn, lo: float, hi: float, steps: int = 400, rel: float = 1e-7,
                   tie: float = 1e-9) -> Iterator[float]:
    """:func:`crossings` one at a time, so a caller that wants a particular one stops scanning there."""
    return _sign_changes(fn, lo, hi, steps, rel, tie)


def _sign_changes(fn: Fn, lo: float, hi: float, steps: int, rel: float, tie: float) -> Iterator[float]:
    def sgn(x: float) -> int:
        v = fn(x)
        return 0 if abs(v) <= tie else (1 if v > 0 else -1)

    ratio = (hi / lo) ** (1.0 / steps)
    x0, s0 = lo, sgn(lo)
    for i in range(1, steps + 1):
        x1 = lo * ratio**i if i < steps else hi
        s1 = sgn(x1)
        if s1 == 0:
            continue
        if s0 != 0 and s1 != s0:
            yield _bisect(_shifted(fn, s1, tie), x0, x1, rel)
        x0, s0 = x1, s1


def _shifted(fn: Fn, sign: int, tie: float) -> Fn:
    """``sign * fn(x) - tie``: negative below the crossing, >= 0 from it on."""
    return lambda x: sign * fn(x) - tie
