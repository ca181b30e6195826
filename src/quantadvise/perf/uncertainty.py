"""The uncertainty band of a predicted figure, derived from held-out validation (never guessed).

Each part of a step carries the error band of what priced it (``data/kernel_tables/<gpu>.yaml``,
``checks.bands``, computed by :mod:`quantadvise.calibration.lookup_checks` from the tables themselves):
the 68th percentile of |predicted / measured - 1| over held-out decode steps of that basis on that GPU
(a one-sigma error bar: about two held-out steps in three fall inside it) —

- ``measured``: the kernel's own table, read for a shape it does not hold (leave-one-shape-out);
- ``same-math``: another library's table of the same math, where the true kernel is measured;
- ``composed``: the composition rule, where the true kernel is measured;
- ``roofline``: the default-efficiency roofline on the measured tables;
- ``attention`` / ``attention-roofline``: the decode attention table read between its grid points /
  the roofline with its launch floor, on the attention tables;
- ``moe``: a fused-MoE table read for a per-GPU expert size it does not hold (leave-one-size-out), the
  routed experts its own table prices.

A step's relative half-width is the time-weighted mean of its parts' bands (errors of the parts are
taken as fully correlated: the widest the parts allow). A throughput interval is the step interval
inverted: ``[x / (1 + u), x / (1 - u)]``.

An absolute figure the engine's serving loop priced (delivered tokens/s, ITL, TTFT, E2E, $ per Mtok, the
step under load) also carries the loop's own band: the 68th percentile of the held-out |error| of output
tokens/s of the loop terms that priced it (``data/serving_terms.yaml``, ``uncertainty``; tools/fit_serving.py),
added in quadrature (kernel timing and the loop's overheads are independent sources of error):
``u = sqrt(u_kernels^2 + u_loop^2)`` (``FigureBand.absolute``). Two candidates priced by the same loop share its
error, so the intervals that compare them — ``FigureBand``'s own, what ties and "slower" read — are the
kernels' alone.

Pure: no I/O.
"""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..results import Out

if TYPE_CHECKING:
    from .step import StepModel

# a basis a GPU has no check for takes this one's band (a curve standing in is no better than a composition)
FALLBACK = {"proxy": "composed", "calibrated": "measured", "other": "roofline", "ideal": "roofline", "moe": "measured"}
MAX_REL = 0.9  # a band is never wider than this (a throughput interval stays finite)


class Interval(Out):
    """The range a predicted figure lies in at the model's validated uncertainty."""

    low: float
    high: float


def band_of(basis: str, bands: Mapping[str, float]) -> float:
    """The relative half-width of one basis (its fallback's when the GPU has no check of it)."""
    b = bands.get(basis)
    if b is None:
        b = bands.get(FALLBACK.get(basis, "roofline"), bands.get("roofline", 0.0))
    return min(MAX_REL, float(b))


def relative(parts: Mapping[str, float], bands: Mapping[str, float]) -> float:
    """A step's relative half-width: its parts' bands weighted by their seconds (``StepModel.parts``)."""
    total = sum(parts.values())
    if total <= 0:
        return 0.0
    return min(MAX_REL, sum(t * band_of(b.removeprefix("own:"), bands) for b, t in parts.items()) / total)


def mix(u_decode: float, u_prefill: float | None, prefill_share: float | None) -> float:
    """The delivered tokens/s half-width: the decode and prefill bands mixed by their shares of GPU time."""
    rho = prefill_share or 0.0
    return (1 - rho) * u_decode + rho * (u_prefill if u_prefill is not None else u_decode)


def step_bands(sm: "StepModel", bands: Mapping[str, float], concurrency: int, decode_ctx: int, prompt: int | None,
               prefill_share: float | None) -> tuple[float, float | None, float]:
    """(decode step, prefill, delivered tokens/s) relative half-widths of ``sm`` at ``concurrency`` sequences of
    ``decode_ctx`` tokens (prefill: one ``prompt``): each part of the step weighted by its basis's band."""
    u_d = relative(sm.parts(max(concurrency, 1), decode_ctx), bands)
    u_p = relative(sm.parts(1, prompt=prompt), bands) if prompt else None
    return u_d, u_p, mix(u_d, u_p, prefill_share)


def own_relative(parts: Mapping[str, float], bands: Mapping[str, float], as_basis: str | None = None) -> float:
    """The part of a step's relative half-width that comes from the scheme's own layers (``own:`` parts): what
    tells two schemes apart — the attention, the shared 16-bit layers and the rest are priced alike for every
    scheme at the same KV cache and move their predictions together. ``as_basis``: price the own layers with
    that basis's band instead (two schemes whose own layers come from the same library's tables)."""
    total = sum(parts.values())
    if total <= 0:
        return 0.0
    own = sum(t * band_of(as_basis or b.removeprefix("own:"), bands) for b, t in parts.items() if b.startswith("own:"))
    return min(MAX_REL, own / total)


def time_interval(x: float, rel: float) -> Interval:
    # model_construct: two floats this module computed (the ranking builds ~100 intervals a walk)
    return Interval.model_construct(low=float(x * (1 - rel)), high=float(x * (1 + rel)))


def rate_interval(x: float, rel: float) -> Interval:
    """A rate (tokens/s) whose time has relative half-width ``rel``."""
    return Interval.model_construct(low=float(x / (1 + rel)), high=float(x / (1 - rel)) if rel < 1 else float("inf"))


def overlap(a: float, ua: float, b: float, ub: float) -> bool:
    """Whether two rates' intervals overlap (neither is faster beyond the combined uncertainty)."""
    # rate_interval's bounds, without building the two intervals (the ranking asks this thousands of times)
    a_low, b_low = a / (1 + ua), b / (1 + ub)
    a_high = a / (1 - ua) if ua < 1 else float("inf")
    b_high = b / (1 - ub) if ub < 1 else float("inf")
    return a_low <= b_high and b_low <= a_high


class Band(Out):
    """Each figure's ``{low, high}`` at one relative half-width of the delivered tokens/s (``relative``; None:
    the figure is not predicted)."""

    relative: float
    step_time_s: Interval | None = None
    tokens_per_s: Interval | None = None
    itl_s: Interval | None = None
    ttft_s: Interval | None = None
    e2e_s: Interval | None = None
    usd_per_mtok: Interval | None = None


class FigureBand(Band):
    """Where each figure of one prediction lies at the model's validated uncertainty: ``relative`` is the
    half-width of the delivered tokens/s (its time per token) from the kernels that priced it, each figure's
    ``{low, high}`` at it — what two candidates are compared with; ``absolute``: the same figures with the
    serving loop's held-out band ``loop`` added (what a measurement of this one deployment should fall in)."""

    loop: float | None = None  # the serving loop terms' band (68th percentile of their held-out |error|)
    absolute: Band | None = None  # the figures at the kernels' and the loop's bands together (None: no loop)


def with_loop(u: float, u_loop: float | None) -> float:
    """A kernels' half-width with the serving loop's band added in quadrature (never wider than MAX_REL)."""
    return min(MAX_REL, (u * u + u_loop * u_loop) ** 0.5) if u_loop else u


def figure_band(*, u_step: float | None, u_rate: float | None, u_ttft: float | None = None,
                step: float | None = None, tokens_per_s: float | None = None, itl: float | None = None,
                ttft: float | None = None, e2e: float | None = None, cost: float | None = None,
                u_loop: float | None = None, cls: type[FigureBand] | None = None, **extra: Any) -> FigureBand | None:
    """The figures' intervals: times widen by their half-width (the decode step by the decode band, TTFT by the
    prefill band, ITL / E2E / $ per Mtok by the delivered band: they are GPU time per token), tokens/s by the
    inverse; each with the serving loop's band ``u_loop`` added in quadrature (:func:`with_loop`; None: no
    loop priced the figures). ``cls``: a subclass of FigureBand to build (its ``extra`` fields given). None without
    bands (the spec sheet)."""
    if u_step is None or u_rate is None:
        return None
    figures = _band(u_step, u_rate, u_ttft, step, tokens_per_s, itl, ttft, e2e, cost)
    absolute = None
    if u_loop:
        absolute = _band(with_loop(u_step, u_loop), with_loop(u_rate, u_loop),
                         with_loop(u_ttft, u_loop) if u_ttft is not None else None, step, tokens_per_s, itl, ttft, e2e,
                         cost)
    return (cls or FigureBand)(**dict(figures), loop=round(u_loop, 4) if u_loop else None, absolute=absolute,
                               **extra)


def _band(u_step: float, u_rate: float, u_ttft: float | None, step: float | None, tokens_per_s: float | None,
          itl: float | None, ttft: float | None, e2e: float | None, cost: float | None) -> Band:
    ut = u_ttft if u_ttft is not None else u_step
    return Band(relative=round(u_rate, 4),
                step_time_s=time_interval(step, u_step) if step is not None else None,
                tokens_per_s=rate_interval(tokens_per_s, u_rate) if tokens_per_s is not None else None,
                itl_s=time_interval(itl, u_rate) if itl is not None else None,
                ttft_s=time_interval(ttft, ut) if ttft is not None else None,
                e2e_s=time_interval(e2e, u_rate) if e2e is not None else None,
                usd_per_mtok=time_interval(cost, u_rate) if cost is not None else None)
