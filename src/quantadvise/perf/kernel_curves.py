"""Per-kernel cost curves: what one GEMM call of a given kernel costs on one GPU.

A curve prices a call of ``M`` rows (the tokens of the step) against an ``N x K`` weight as

    t = overhead + ((mem)^p + (comp)^p)^(1/p)
    mem  = (N*K*weight_bytes + M*K*act_bytes + M*N*2) / (eta_m(N, K) * bandwidth)
    comp = 2*R(M)*N*K / (eta_c(N, K) * f(M) * peak),   R(M) = ceil(M / m_tile) * m_tile

``eta_m`` is the streaming efficiency the kernel reaches at small M, ``eta_c`` its compute
efficiency at large M, both tables over (log2 N, log2 K) interpolated bilinearly in log space (a
small matrix cannot keep every SM busy, a large one can); ``f(M)`` is the kernel's tile behaviour in
M (piecewise linear in log2 M; with ``tile_m_factor`` read at R(M), so every M within one tile costs
the same and the time never falls as M grows); ``p`` (blend) the knee between the two regimes (the
measured curve bends smoothly where a roofline has a sharp corner); ``overhead`` the fixed per-call cost; ``m_tile``
the rows the kernel computes per pass (Marlin: 64; a Hopper / Blackwell tensor-core GEMM fitted with
the importer's ``--gemm-m-tile``: 64, the M of one warpgroup MMA), so the compute term steps at tile
boundaries.
``includes_quant`` says the curve was fitted on calls that quantize their own activations (the engine
runs them that way); otherwise an engine that quantizes activations in a separate kernel pays a
:class:`QuantCurve` on top.

Each curve records where it came from (:class:`TableSource`: the published table, the kernel name in
it, the engine release that was measured), its ``basis`` (``measured``: fitted to that kernel's
rows; ``proxy``: another kernel's measured curve stands in, named by ``proxy_of``; ``composed``: a
sum of measured pieces, see ``note``) and its held-out error (:class:`HeldOut`).

Pure: no I/O.
"""

import math
from bisect import bisect_left
from collections.abc import Mapping
from datetime import date
from typing import Literal, TypeVar

from pydantic import Field, PrivateAttr, model_validator

from ..results import Strict, StrictModel

Basis = Literal["measured", "proxy", "composed", "published"]
# The least efficiency, or M factor, a kernel curve may hold: the importer's fit (calibration/kernel_fit.py)
# searches efficiencies from 0.005 and M factors from e^-5 = 0.0067, the shipped curves' least are 0.005 and
# 0.016; 5x below that is no kernel, and 1e-320 made every step time infinite.
MIN_KERNEL_EFFICIENCY = 0.001


class TableSource(Strict):
    """The published measured table a curve was fitted to."""

    package: str  # e.g. aiconfigurator-core
    version: str
    license: str = ""
    table: str  # path inside the package
    kernel_source: str  # the kernel's name in the table
    engine: str  # the engine whose build was measured
    engine_version: str
    device: str  # as the table names the GPU
    collector: str = ""  # what one measured call contains
    rows_fit: int = Field(default=0, ge=0)
    as_of: date


class HeldOut(Strict):
    """Error on measurements the fit never saw (predicted / measured - 1)."""

    gemm_points: int = Field(ge=0)
    gemm_median: float
    gemm_max: float
    step_points: int = Field(default=0, ge=0)  # decode steps of the held-out shape sets
    step_median: float = 0.0
    step_max: float = 0.0
    method: str = ""


def _locate(x: float, knots: tuple[float, ...]) -> tuple[int, float]:
    """(segment, fraction) of ``x`` among ascending ``knots``; clamped at both ends."""
    if x <= knots[0]:
        return 0, 0.0
    last = len(knots) - 1
    if x >= knots[last]:
        return max(last - 1, 0), 1.0 if last else 0.0
    i = bisect_left(knots, x) - 1  # knots[i] < x <= knots[i + 1]
    return i, (x - knots[i]) / (knots[i + 1] - knots[i])


def monotone_m_factor(factors: tuple[float, ...]) -> tuple[float, ...]:
    """The largest non-decreasing sequence at or below ``factors`` (a running minimum from the largest M
    down): the M factor a curve is priced with.

    A call of more rows never has a higher compute cost per row than a call of fewer: the extra rows
    fill tiles the smaller call leaves partly idle. A fitted factor can say otherwise at small M, where
    the call is memory-bound and the compute term is not pinned by any measurement (the A100 cuBLAS fit
    gives 1.0 at M = 16 and 0.37 at M = 64); borrowed by a composed 4-bit curve, whose memory term is
    four times smaller, that artefact priced 38 rows cheaper per token than 64 and made delivered
    tokens/s fall as the batch grew. Priced through this envelope, a decode step's time per token never
    rises with the batch (the weights and fixed costs are shared, the compute per row never rises, the
    KV cache is per sequence), so neither does a scheme's throughput (docs/calibration.md)."""
    out = list(factors)
    for i in range(len(out) - 2, -1, -1):
        out[i] = min(out[i], out[i + 1])
    return tuple(out)


def blend(a: float, b: float, p: float) -> float:
    """``(a^p + b^p)^(1/p)``: a + b at p = 1, max(a, b) as p grows."""
    hi = a if a > b else b
    if hi <= 0.0:
        return 0.0
    lo = b if a > b else a
    return hi * (1.0 + (lo / hi) ** p) ** (1.0 / p)


class KernelCurve(StrictModel):
    """One kernel's measured cost curve on one GPU (module docstring)."""

    kernel: str  # the kernel id (data/kernels/*.yaml)
    engine: str
    basis: Basis
    measured: TableSource | None = None
    proxy_of: str | None = None  # "<engine>/<kernel>" whose measurement stands in
    note: str = ""
    math: str  # the datapath peak the compute term is scaled by
    act_bytes: float = Field(default=2.0, ge=0.25, le=8.0)  # bytes per activation element read: 2-bit to 2x fp32
    includes_quant: bool = False
    overhead_s: float = Field(ge=0, le=1.0)  # a second of fixed cost per call: past any kernel's launch
    blend: float = Field(ge=1.0, le=64.0)
    nk_knots: tuple[int, ...]
    memory_efficiency: tuple[tuple[float, ...], ...]  # [N knot][K knot]
    compute_efficiency: tuple[tuple[float, ...], ...]
    m_knots: tuple[int, ...]
    m_factor: tuple[float, ...]
    m_tile: int = Field(default=1, ge=1)  # rows the kernel computes per pass: M is rounded up to a multiple
    tile_m_factor: bool = False  # f is read at the rows computed (rows(M)): every M in one tile costs the same
    heldout: HeldOut | None = None
    _logs: tuple | None = PrivateAttr(default=None)  # the tables in log space, built on first use
    _fused_moe: bool = PrivateAttr(default=False)  # read per expert: the M factor as fitted (:meth:`as_fused_moe`)
    _shapes: dict | None = PrivateAttr(default=None)  # shape_efficiencies per (n, k), on first use

    @model_validator(mode="after")
    def _shape(self) -> "KernelCurve":
        n = len(self.nk_knots)
        if n < 2 or list(self.nk_knots) != sorted(set(self.nk_knots)) or self.nk_knots[0] < 1:
            raise ValueError("nk_knots must hold at least 2 strictly increasing sizes >= 1")
        for name in ("memory_efficiency", "compute_efficiency"):
            tab = getattr(self, name)
            if len(tab) != n or any(len(r) != n for r in tab):
                raise ValueError(f"{name} must be a {n}x{n} table (one row per N knot, one column per K knot)")
            if any(not MIN_KERNEL_EFFICIENCY <= v <= 4.0 for r in tab for v in r):
                raise ValueError(f"{name} values must be >= {MIN_KERNEL_EFFICIENCY:g} and <= 4")
        if len(self.m_knots) != len(self.m_factor) or len(self.m_knots) < 1:
            raise ValueError("m_knots and m_factor must have the same length (at least 1)")
        if list(self.m_knots) != sorted(set(self.m_knots)) or self.m_knots[0] < 1:
            raise ValueError("m_knots must be strictly increasing and >= 1")
        if any(not MIN_KERNEL_EFFICIENCY <= v < math.inf for v in self.m_factor):
            raise ValueError(f"m_factor values must be >= {MIN_KERNEL_EFFICIENCY:g}")
        if self.basis == "proxy" and not self.proxy_of:
            raise ValueError("a proxy curve names the curve it stands in for (proxy_of)")
        if self.basis == "measured" and self.measured is None:
            raise ValueError("a measured curve names its table (measured)")
        return self

    @property
    def key(self) -> str:
        return f"{self.engine}/{self.kernel}"

    def model_copy(self, *, update: Mapping[str, object] | None = None, deep: bool = False) -> "KernelCurve":
        """A copy; with ``update`` the tables built from the fields (``_logs``, ``_shapes``) start afresh (a
        copy with other efficiencies must not read this curve's)."""
        out = super().model_copy(update=update, deep=deep)
        if update:
            out._logs, out._shapes = None, None
        return out

    def as_fused_moe(self) -> "KernelCurve":
        """This curve pricing a fused-MoE layer: its M factor is read as fitted, not through
        :func:`monotone_m_factor`. A fused-MoE call's rows are the tokens routed to each expert and the
        experts it touches grow with the tokens, which the fit folds into the factor; the dense-GEMM
        argument for the envelope does not hold there."""
        if (self.__pydantic_private__ or {}).get("_fused_moe"):
            return self
        out = self.model_copy()
        out._fused_moe, out._logs, out._shapes = True, None, None
        return out

    def _tables(self) -> tuple[tuple[float, ...], tuple[tuple[float, ...], ...], tuple[tuple[float, ...], ...],
                               tuple[float, ...], tuple[float, ...]]:
        private = self.__pydantic_private__ or {}
        cached = private.get("_logs")  # not self._logs: pydantic's __getattr__ is slow
        if cached is None:
            cached = (
                tuple(math.log2(v) for v in self.nk_knots),
                tuple(tuple(math.log(v) for v in r) for r in self.memory_efficiency),
                tuple(tuple(math.log(v) for v in r) for r in self.compute_efficiency),
                tuple(math.log2(v) for v in self.m_knots),
                tuple(math.log(v) for v in (self.m_factor if private.get("_fused_moe") else
                                            monotone_m_factor(self.m_factor))),
            )
            self._logs = cached
        return cached

    def shape_efficiencies(self, n: float, k: float) -> tuple[float, float]:
        """(streaming, compute) efficiency of an ``n x k`` weight before the M factor (a model prices a few
        shapes at every batch: each is interpolated once per curve)."""
        private = self.__pydantic_private__
        shapes = private.get("_shapes") if private is not None else None
        if shapes is not None and (got := shapes.get((n, k))) is not None:
            return got
        knots, lm, lc, _, _ = self._tables()
        i, t = _locate(math.log2(max(n, 1.0)), knots)
        j, u = _locate(math.log2(max(k, 1.0)), knots)
        w00, w10, w01, w11 = (1 - t) * (1 - u), t * (1 - u), (1 - t) * u, t * u
        em = w00 * lm[i][j] + w10 * lm[i + 1][j] + w01 * lm[i][j + 1] + w11 * lm[i + 1][j + 1]
        ec = w00 * lc[i][j] + w10 * lc[i + 1][j] + w01 * lc[i][j + 1] + w11 * lc[i + 1][j + 1]
        got = (math.exp(em), math.exp(ec))
        if shapes is None:
            shapes = self._shapes = {}
        if len(shapes) < 4096:  # a sweep over arbitrary shapes stays bounded
            shapes[(n, k)] = got
        return got

    def m_factor_at(self, m: float) -> float:
        """The compute-efficiency factor at ``m`` rows (piecewise linear in log2 M, flat outside), read
        through :func:`monotone_m_factor`: more rows never compute at a lower rate."""
        _, _, _, mk, mf = self._tables()
        if len(mk) == 1:
            return math.exp(mf[0])
        q, v = _locate(math.log2(max(self.rows(m) if self.tile_m_factor else m, 1.0)), mk)
        return math.exp((1 - v) * mf[q] + v * mf[q + 1])

    def efficiencies(self, m: float, n: float, k: float) -> tuple[float, float]:
        """(streaming efficiency, compute efficiency incl. the M factor) for one call."""
        em, ec = self.shape_efficiencies(n, k)
        return em, ec * self.m_factor_at(m)

    def time(self, m: float, n: float, k: float, weight_bytes: float, bandwidth: float, peak: float) -> float:
        """Seconds of one call: ``m`` rows against an ``n x k`` weight stored at ``weight_bytes``
        bytes per element, on a GPU of ``bandwidth`` bytes/s and ``peak`` FLOP/s on :attr:`math`."""
        if m <= 0:
            return 0.0
        em, ec = self.efficiencies(m, n, k)
        mem = (n * k * weight_bytes + m * k * self.act_bytes + m * n * 2.0) / (em * bandwidth)
        comp = 2.0 * self.rows(m) * n * k / (ec * peak)
        return self.overhead_s + blend(mem, comp, self.blend)

    def rows(self, m: float) -> float:
        """The rows the kernel computes for ``m``: ``m`` rounded up to a whole number of M tiles."""
        t = self.m_tile
        return m if t <= 1 else math.ceil(m / t - 1e-9) * t


class QuantCurve(Strict):
    """A separate activation-quantization kernel: ``overhead + M*K*bytes_per_element / (eff*BW)``."""

    kernel: str  # per-token-quant | static-quant | fp4-quant
    engine: str
    basis: Basis
    measured: TableSource | None = None
    proxy_of: str | None = None
    note: str = ""
    overhead_s: float = Field(ge=0, le=1.0)  # a second of fixed cost per call: past any kernel's launch
    bytes_per_element: float = Field(ge=0.25, le=16.0)  # read + written per element: 3 (bf16 -> fp8) to 5 shipped
    efficiency: float = Field(ge=MIN_KERNEL_EFFICIENCY, le=4.0)
    heldout: HeldOut | None = None

    @property
    def key(self) -> str:
        return f"{self.engine}/{self.kernel}"

    def time(self, m: float, k: float, bandwidth: float) -> float:
        if m <= 0:
            return 0.0
        return self.overhead_s + m * k * self.bytes_per_element / (self.efficiency * bandwidth)


C = TypeVar("C", "KernelCurve", "QuantCurve")


def lookup(curves: Mapping[str, C], engine: str, kernel: str) -> C | None:
    """The curve for ``kernel`` as ``engine`` runs it: the engine's own measurement, else the same
    kernel measured under another engine (returned with its own ``engine``), else None."""
    own = curves.get(f"{engine}/{kernel}")
    if own is not None:
        return own
    return next((c for key, c in sorted(curves.items()) if key.split("/", 1)[1] == kernel), None)
