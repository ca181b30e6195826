"""Published per-kernel latency tables, read by lookup: what one call of a kernel costs, row by row.

A :class:`GemmTable` holds one kernel's measured calls on one GPU: seconds per call over a grid of M
(tokens) for each weight shape N x K it was timed at. :meth:`GemmTable.series` prices a shape by the
table's own rows — the exact (N, K) cell where the table has it, else linear interpolation between
the neighbouring cells in N, then in K (a GEMM's time is close to affine in N and in K at fixed M:
a per-call overhead plus work proportional to the weight), steadied by the next cells out where one
neighbour is irregular (:func:`_between`) — and returns an :class:`MSeries`: the
cell's times along the table's M grid. :meth:`MSeries.at` then reads M the way the kernel runs it:

- a grid point one past another (M = 129 after 128, 257 after 256: the tables time the first row of
  a new tile configuration on purpose) is a **step**: any M above 128 and up to 129 costs t(129);
- between other grid points, linear in M (a tile bucket is flat, a memory-bound call nearly so);
- past the largest M, affine from the last two points (the compute-bound slope); below the smallest,
  the smallest M's time (one row is never cheaper than the call's fixed cost).

Past the table's largest N or K the largest cell's work is scaled to the shape, its per-call overhead kept
(:func:`_past`; below the smallest, the smallest cell): the lookup never fits anything inside the table.
Nothing is dropped: every row of the table, the +1 rows included, is a point of the series.

Three transformations price kernels that have no table of their own from one that has (the kernel
being priced is named in the table index, ``data/kernel_tables/<gpu>.yaml``):

- :func:`bytes_adjusted` — **same math**, another weight layout (per-channel int4 pricing group-128
  int4): the memory-bound part of the time scales with the stored bytes, pinned at M = 1;
- :func:`composed` — **composition**: a kernel with no same-math table (W4A8 on Hopper, Marlin on
  Blackwell) streams its weight bytes at the measured streaming rate of the math table's kernel at
  M = 1 and computes at that table's rate once the math binds — the small-M factor is the weight
  bytes, never another kernel's fitted curve;
- :func:`minus` — a table whose calls include a quantization the engine fuses away: that kernel's
  time is taken off, never below half the call.

Pure: no I/O (``catalog`` reads the files).
"""

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping
from datetime import date
from typing import Literal

from pydantic import Field, model_validator

from ..errors import DataError
from ..results import Strict, record

TableBasis = Literal["measured", "same-math", "composed"]


class TableMeta(Strict):
    """Where a table comes from and what one of its calls contains (one row of the GPU's index)."""

    id: str  # "<engine>/<kernel>" for an engine's kernel; "trtllm/<name>" for TensorRT-LLM's
    file: str  # the table file under data/kernel_tables/<gpu>/
    engine: str  # the framework whose build was timed: vllm | sglang | trtllm
    engine_version: str
    kernel: str  # the kernel id (data/kernels ids for vLLM / SGLang kernels)
    kernel_source: str  # the kernel's name in the published table
    math: str  # the tensor cores it runs on
    weight_bytes: float = Field(gt=0)  # bytes per stored weight element in the timed call
    includes_quant: str | None = None  # the activation quantization inside each timed call (a quant kernel id)
    package: str
    package_version: str
    license: str
    table: str  # the file inside the package
    device: str
    collector: str = ""
    rows: int = Field(ge=0)
    note: str = ""
    # fused-MoE: the grain in which the timed kernel computes each GPU's expert intermediate size — the multiple
    # the release pads it to, or the kernel's tile along it (1: as given) — and the engine source lines that say
    # so (perf/moe_tables.py reads the sizes rounded up to it)
    inter_align: int = Field(default=1, ge=1)
    inter_align_source: str = ""
    # decode attention: the table's launch floor (:attr:`~quantadvise.perf.attention_tables.AttentionTable.floor_s`, microseconds), written with the
    # table so that a lookup reads only the head configuration it prices (tests/data/test_tables.py recomputes it)
    floor_us: float | None = Field(default=None, gt=0)
    # GEMM / grouped-query decode attention: the weight / KV stream the table sustains from memory, bytes per second
    # (:func:`dram_stream_rate`, :func:`.attention_tables.kv_stream_rate`; written with the table, recomputed by
    # tests/data/test_tables.py): no call of a decode step is priced below its bytes at this rate
    stream_bytes_per_s: float | None = Field(default=None, gt=0)
    source: str
    as_of: date


class SameMath(Strict):
    """A kernel with no table of its own, priced by a measured table of the same math on this GPU."""

    kernel: str  # the kernel id priced (data/kernels)
    weight_bits: int | None = None  # only for weights of these bits (None: any)
    table: str  # the id of the table that prices it
    why: str
    source: str
    as_of: date
    # the kernel streams its weights this many times slower than the table's kernel at small M (fitted to
    # published end-to-end runs of the kernel itself: data/kernel_tables/stream_factors.yaml; 1: as fast)
    stream_factor: float = 1.0
    stream_note: str = ""  # where the factor comes from (:meth:`StreamFactor.label`)


class StreamFactor(Strict):
    """One kernel's weight stream against its same-math table's, on one GPU (a row of
    data/kernel_tables/stream_factors.yaml, written by tools/fit_stream_factors.py)."""

    gpu: str
    kernel: str
    weight_bits: int | None = None
    factor: float = Field(ge=0.5, le=4.0)
    carried_from: str | None = None  # the kernel (and GPU) it was fitted for, where this one takes it as its class's
    fitted_to: Literal["end-to-end runs", "kernel benchmark"]  # published runs of a model, or of the kernel alone
    note: str  # what it was fitted on, and the fit's own error
    # what it was fitted on: end-to-end points (data/validation/e2e_points.yaml ids) or a published kernel benchmark
    # (data/validation/kernel_benchmarks.yaml ids)
    fitted_on: tuple[str, ...]
    source: str
    as_of: date

    def label(self) -> str:
        """How a prediction names the factor's evidence: ``"end-to-end fit"``, ``"its published benchmark"``, or
        ``"carried from machete (4-bit) on h100-sxm"``."""
        if self.carried_from is not None:
            return f"carried from {self.carried_from}"
        return "end-to-end fit" if self.fitted_to == "end-to-end runs" else "its published benchmark"


class StreamFactors(Strict):
    schema_version: Literal[1]
    as_of: date
    factors: tuple[StreamFactor, ...]


class BenchColumn(Strict):
    """One kernel's column of a published benchmark: the kernel it times (data/kernels id, weight bits), the same
    kernel's other weight formats of that width, and its TFLOPS at the benchmark's Ms."""

    column: str
    kernel: str
    weight_bits: int = Field(ge=1, le=8)
    also: tuple[str, ...] = ()
    tflops: tuple[float, ...]


class BenchBaseline(Strict):
    """The 16-bit GEMM timed in the same harness, and the shipped table of the same kernel."""

    column: str
    table: str
    tflops: tuple[float, ...]


class KernelBenchmark(Strict):
    """A published measurement of kernels no aiconfigurator table times, beside a 16-bit baseline timed in the same
    harness (a row of data/validation/kernel_benchmarks.yaml; tools/fit_stream_factors.py fits stream factors to it)."""

    id: str
    gpu: str
    source: str
    as_of: date
    n: int = Field(ge=1)
    k: int = Field(ge=1)
    m: tuple[float, ...]
    baseline: BenchBaseline
    kernels: tuple[BenchColumn, ...]

    @model_validator(mode="after")
    def _lengths(self) -> "KernelBenchmark":
        if not self.m or any(x <= 0 for x in self.m):
            raise ValueError(f"{self.id}: m must be positive")
        for name, vals in (("baseline", self.baseline.tflops), *((c.column, c.tflops) for c in self.kernels)):
            if len(vals) != len(self.m) or any(v <= 0 for v in vals):
                raise ValueError(f"{self.id}: {name} needs one positive TFLOPS per M ({len(self.m)})")
        return self


class KernelBenchmarks(Strict):
    schema_version: Literal[1]
    as_of: date
    benchmarks: tuple[KernelBenchmark, ...]


class Composed(Strict):
    """A kernel with neither its own table nor a same-math one: composed from the math table of the
    engine's kernel named here (the datapath it computes on), with its own weight bytes."""

    kernel: str
    math_kernel: str  # the kernel id whose table gives the streaming rate and the math (the engine's own first)
    why: str
    source: str
    as_of: date
    # as SameMath.stream_factor: the kernel streams its weights this many times slower than the math table's
    # kernel (data/kernel_tables/stream_factors.yaml; 1: as fast)
    stream_factor: float = 1.0
    stream_note: str = ""
    math: str | None = None  # the datapath the kernel computes on (hardware.MATH_FORMATS; None: the table's)
    compute_factor: float = 1.0  # this GPU's peak of the table's math over its peak of ``math`` (set at load)


class TableIndex(Strict):
    """One GPU's tables: ``data/kernel_tables/<gpu>.yaml``."""

    schema_version: int = 1
    gpu: str
    source: str
    license: str
    as_of: date
    note: str = ""
    tables: tuple[TableMeta, ...]
    same_math: tuple[SameMath, ...] = ()
    composed: tuple[Composed, ...] = ()
    quant: tuple[TableMeta, ...] = ()  # activation-quantization tables (one row per K, n = 1)
    attention: tuple[TableMeta, ...] = ()  # decode attention, one layer per call (:class:`~quantadvise.perf.attention_tables.AttentionTable`)
    moe: tuple[TableMeta, ...] = ()  # fused-MoE kernels, one call per MoE layer (:class:`.moe_tables.MoeTable`)

    def find(self, table_id: str) -> TableMeta | None:
        return next((t for t in (*self.tables, *self.quant, *self.attention, *self.moe) if t.id == table_id), None)


@record(slots=True)
class MSeries:
    """One shape's seconds per call along the table's M grid (:meth:`at` reads it)."""

    ms: tuple[float, ...]
    ts: tuple[float, ...]

    def at(self, m: float) -> float:
        ms, ts = self.ms, self.ts
        if m <= ms[0]:
            return ts[0]
        last = len(ms) - 1
        if m >= ms[last]:
            if last == 0:
                return ts[0]
            slope = max(0.0, (ts[last] - ts[last - 1]) / (ms[last] - ms[last - 1]))
            return ts[last] + slope * (m - ms[last])
        i = bisect_left(ms, m)  # ms[i - 1] < m <= ms[i]
        a, b = ms[i - 1], ms[i]
        if b - a <= 1.0:  # a +1 row: the first M of the next tile configuration, a step
            return ts[i]
        return ts[i - 1] + (ts[i] - ts[i - 1]) * (m - a) / (b - a)

    def map(self, fn: Callable[[float, float], float]) -> "MSeries":
        """The series with ``fn(m, t)`` at every grid point."""
        return MSeries(self.ms, tuple(fn(m, t) for m, t in zip(self.ms, self.ts, strict=True)))


class GemmTable:
    """One kernel's published table on one GPU: per (N, K) cell, seconds per call at each M of ``ms`` (None
    where the table has no row). A cell given as its text line (``raw``: the shipped form), or as where its
    line starts in ``text`` (``at``: a wheel's cell index), is parsed the first time it is read, so a lookup
    parses only the cells around the shapes it prices."""

    __slots__ = ("meta", "ms", "_cells", "_raw", "_text", "_at", "_by_k", "_ks", "_floor", "_filled", "derived")

    def __init__(self, meta: TableMeta, ms: tuple[float, ...],
                 cells: Mapping[tuple[int, int], tuple[float | None, ...]] | None = None,
                 raw: Mapping[tuple[int, int], str] | None = None, text: str = "",
                 at: Mapping[tuple[int, int], int] | None = None, by_k: Mapping[int, list[int]] | None = None):
        if not ms or list(ms) != sorted(set(ms)) or ms[0] <= 0:
            raise ValueError(f"{meta.id}: the M grid must be positive and strictly increasing")
        self.meta, self.ms = meta, tuple(float(m) for m in ms)
        self._cells: dict[tuple[int, int], tuple[float | None, ...]] = {}
        for key, row in (cells or {}).items():
            self._check(key, row)
            self._cells[key] = row
        self._raw = {k: v for k, v in (raw or {}).items() if k not in self._cells}
        self._text = text
        self._at = {k: v for k, v in (at or {}).items() if k not in self._cells and k not in self._raw}
        if by_k is None or self._cells or self._raw:  # ``by_k``: the Ns of each K, as a cell index gives them
            grid: dict[int, list[int]] = {}
            for n, k in (*self._cells, *self._raw, *self._at):
                grid.setdefault(k, []).append(n)
            by_k = grid
        self._by_k = {k: sorted(ns) for k, ns in by_k.items()}
        self._ks = sorted(self._by_k)
        self._floor: float | None = None
        self._filled: dict[tuple[int, int], MSeries] = {}  # _full per cell, once
        # series derived from this table by the speed model (``perf.lookup.op_series``), kept per shape and
        # adjustment: the same operator is priced again by every walk in a process
        self.derived: dict[tuple[object, ...], MSeries] = {}

    def _check(self, key: tuple[int, int], row: tuple[float | None, ...]) -> None:
        if len(row) != len(self.ms):
            raise ValueError(f"{self.meta.id}: cell {key} has {len(row)} values for {len(self.ms)} M points")
        if all(x is None for x in row):
            raise ValueError(f"{self.meta.id}: cell {key} has no value")

    def cell(self, n: int, k: int) -> tuple[float | None, ...] | None:
        """One cell's seconds along ``ms`` (None: not in the table)."""
        got = self._cells.get((n, k))
        if got is None:
            if (n, k) in self._raw:
                got = cell_values(self._raw.pop((n, k)).split(","))
            elif (n, k) in self._at:
                start = self._at.pop((n, k))
                end = self._text.find("\n", start)
                n_, k_, times = self._text[start:end if end >= 0 else len(self._text)].split(",", 2)
                if (n_, k_) != (str(n), str(k)):
                    raise DataError(f"{self.meta.id}: its cell index does not match its table at {n} x {k} "
                                    "(reinstall the package)")
                got = cell_values(times.split(","))
            else:
                return None
            self._check((n, k), got)
            self._cells[(n, k)] = got
        return got

    @property
    def cells(self) -> dict[tuple[int, int], tuple[float | None, ...]]:
        """Every cell, parsed (the held-out checks read them all)."""
        for key in [*self._raw, *self._at]:
            self.cell(*key)
        return self._cells

    @property
    def floor_s(self) -> float:
        """The launch floor: the smallest shape's call at its smallest M."""
        if self._floor is None:
            keys = [*self._cells, *self._raw, *self._at]
            if not keys:
                return 0.0
            got = self.cell(*min(keys, key=lambda c: (c[0] * c[1], c)))
            self._floor = first_call(got or ()) or 0.0
        return self._floor

    @property
    def id(self) -> str:
        return self.meta.id

    @property
    def stream_rate(self) -> float | None:
        """The weight stream the table sustains from memory (bytes/s, :attr:`TableMeta.stream_bytes_per_s`)."""
        return self.meta.stream_bytes_per_s

    def row(self, n: int, k: int) -> MSeries | None:
        """The table's own rows of one cell (None: not in the table)."""
        got = self.cell(n, k)
        return None if got is None else own_points(self.ms, got)

    def series(self, n: float, k: float, exclude: tuple[int, int] | None = None,
               along: Literal["n", "k"] = "n") -> MSeries:
        """Seconds per call of an ``n x k`` weight along the M grid: the cell itself, else the
        neighbouring cells interpolated in N, then in K. ``exclude``: a cell to leave out, for
        leave-one-shape-out validation, priced the way a shape missing from the table is: ``along="n"``
        as a shape whose N is off the table's grid (its K's other cells, interpolated in N), ``along="k"``
        as one whose K is off the grid (its K row left out: its N's cells at the neighbouring Ks)."""
        ks = self._ks
        if exclude is not None and (along == "k" or self._by_k.get(exclude[1]) == [exclude[0]]):
            ks = [k_ for k_ in ks if k_ != exclude[1]]  # the K row left out (or the left-out cell was its only one)
        k0, k1, _u = _bracket(ks, k)
        if k1 == k0:
            if k > ks[-1] and len(ks) > 1:
                return _past(self._along_n(k0, n, exclude), k0, k, self.floor_s)
            return self._along_n(k0, n, exclude)
        return _between(ks, k, lambda kk: self._along_n(kk, n, exclude))

    def neighbours(self, n: int, k: int, along: Literal["n", "k"]) -> tuple[MSeries, MSeries] | None:
        """The two cells a shape is read between with its own cell left out (:meth:`series`' ``exclude``): its
        nearest N on either side at its K (``along="n"``), or its N read at the nearest K on either side
        (``"k"``); None at the grid's edge (the shape is extended from one side there, not read between two)."""
        if along == "n":
            ns = [x for x in self._by_k.get(k, []) if x != n]
            lo, hi = max((x for x in ns if x < n), default=None), min((x for x in ns if x > n), default=None)
            return None if lo is None or hi is None else (self._full(lo, k), self._full(hi, k))
        ks = [x for x in self._ks if x != k]
        lo, hi = max((x for x in ks if x < k), default=None), min((x for x in ks if x > k), default=None)
        if lo is None or hi is None:
            return None
        return self._along_n(lo, n, (n, k)), self._along_n(hi, n, (n, k))

    def _along_n(self, k: int, n: float, exclude: tuple[int, int] | None) -> MSeries:
        ns = self._by_k[k]
        if exclude is not None and exclude[1] == k:
            ns = [x for x in ns if x != exclude[0]]
        n0, n1, _u = _bracket(ns, n)
        if n1 == n0:
            if n > ns[-1] and len(ns) > 1:
                return _past(self._full(n0, k), n0, n, self.floor_s)
            return self._full(n0, k)
        return _between(ns, n, lambda nn: self._full(nn, k))

    def _full(self, n: int, k: int) -> MSeries:
        """A cell's times at every M of the grid (a missing row read from the cell's own series)."""
        done = self._filled.get((n, k))
        if done is not None:
            return done
        got = self.cell(n, k)
        assert got is not None
        done = self._filled[(n, k)] = filled(self.ms, got)
        return done


def first_call(row: tuple[float | None, ...]) -> float | None:
    """A cell's call at the smallest M it was timed at (None: no value)."""
    return next((x for x in row if x is not None), None)


def own_points(ms: tuple[float, ...], got: tuple[float | None, ...]) -> MSeries:
    """A table row's own points (its blanks left out)."""
    pts = [(m, t) for m, t in zip(ms, got, strict=True) if t is not None]
    return MSeries(tuple(p[0] for p in pts), tuple(p[1] for p in pts))


def filled(ms: tuple[float, ...], got: tuple[float | None, ...]) -> MSeries:
    """A table row at every point of its grid ``ms``: a blank read from the row's own points."""
    if all(t is not None for t in got):
        return MSeries(ms, tuple(t for t in got if t is not None))
    own = own_points(ms, got)
    return MSeries(ms, tuple(t if t is not None else own.at(m) for m, t in zip(ms, got, strict=True)))


def _bracket(xs: list[int], x: float) -> tuple[int, int, float]:
    """(lower knot, upper knot, fraction) of ``x`` among ascending ``xs``; both knots the edge outside."""
    if x <= xs[0]:
        return xs[0], xs[0], 0.0
    if x >= xs[-1]:
        return xs[-1], xs[-1], 0.0
    i = bisect_right(xs, x)
    a, b = xs[i - 1], xs[i]
    if a == x:
        return a, a, 0.0
    return a, b, (x - a) / (b - a)


# the two neighbouring cells' interpolation stands unless the next cells out disagree with it by more than this:
# two collections of one kernel differ by 1.4-5% in the median cell (docs/calibration.md §11), so less is noise
STEADY = 0.05


def _between(xs: list[int], x: float, row: Callable[[int], MSeries]) -> MSeries:
    """The series at ``x`` strictly inside the ascending knots ``xs`` (``row``: a knot's series): the linear
    interpolation between the two neighbouring knots, unless one of them is irregular — a library that picks
    another tile or split-K configuration for one shape than for its neighbours. Up to two knots on each side
    give up to four interpolations (each pair of a knot below and one above); at every M their consensus is
    their mean (of three or four, the one farthest from their median dropped), and where the neighbours'
    interpolation differs from that consensus by more than :data:`STEADY` the consensus prices the point. Held out over the
    39 published GEMM tables (docs/calibration.md §11), against the two neighbours alone: the median step
    error falls in 26 (rises by at most 0.17 points in 12), every table's median is within 5% (35 were), and
    16 tables' worst step within 20% (13 were)."""
    i = bisect_right(xs, x)  # xs[i - 1] < x < xs[i]
    below = [xs[j] for j in (i - 1, i - 2) if j >= 0]
    above = [xs[j] for j in (i, i + 1) if j < len(xs)]
    ms = row(below[0]).ms
    cols = [[p + (q - p) * u for p, q in zip(row(a).ts, row(b).ts, strict=True)]
            for a in below for b in above for u in ((x - a) / (b - a),)]
    near = cols[0]  # the two neighbours' interpolation
    if len(cols) == 1:
        return MSeries(ms, tuple(near))
    ts = []
    for j, t in enumerate(near):
        vals = [c[j] for c in cols]
        low = min(vals)
        if max(vals) - low <= STEADY * low:  # they all agree within the noise: so does the consensus with t
            ts.append(t)
            continue
        vals.sort()
        if len(vals) > 2:
            h = len(vals) // 2
            mid = vals[h] if len(vals) % 2 else 0.5 * (vals[h - 1] + vals[h])
            vals.remove(max(vals, key=lambda v: abs(v - mid)))
        consensus = sum(vals) / len(vals)
        ts.append(consensus if abs(t - consensus) > STEADY * consensus else t)
    return MSeries(ms, tuple(ts))


def _extend(below: MSeries, top: MSeries, n0: float, n1: float, n: float) -> MSeries:
    """Past the largest knot ``n1``: affine from the cells at the two largest knots (never below the
    largest one's time): a fused-MoE table past its largest intermediate size (:mod:`.moe_tables`)."""
    if n1 <= n0:
        return top
    f = (n - n1) / (n1 - n0)
    return MSeries(top.ms, tuple(b + max(0.0, b - a) * f for a, b in zip(below.ts, top.ts, strict=True)))


def _past(top: MSeries, x1: float, x: float, overhead_s: float) -> MSeries:
    """Past the largest knot ``x1`` (N or K): the largest cell's work scaled to ``x``, its per-call overhead kept —
    ``t = o + (t_1 - o) x / x1`` at every M (the work of a GEMM is proportional to N and to K). Held out on the
    five GPUs' GEMM tables (N or K = 51,200 and 65,536 read from the cells at 16,384, at M <= 4,096): 6.3-6.8%
    median |error| (N, K) where the affine line through the two largest knots missed by 16.1 / 10.9%, at the 90th
    percentile 25-26% against 49-56% (docs/calibration.md §11)."""
    if x <= x1:
        return top
    o = min(overhead_s, 0.9 * top.ts[0])
    return top.map(lambda _m, t: o + (t - o) * x / x1)


def bytes_adjusted(s: MSeries, ratio: float, overhead_s: float = 0.0) -> MSeries:
    """The same math with ``ratio`` times the weight bytes: the streaming part of the call at M = 1
    (its time less the per-call overhead) scales with the bytes; at large M the math dominates and
    the difference fades (:func:`composed`)."""
    return composed(s, ratio, overhead_s)


def composed(s: MSeries, ratio: float, overhead_s: float = 0.0, knee: float = 4.0) -> MSeries:
    """A kernel that streams ``ratio`` times the math table's weight bytes and computes like it:
    ``t = o + ((ratio x mem)^p + comp(M)^p)^(1/p)`` where ``mem`` is the table's time at its smallest M
    less the overhead (a memory-bound call: the weight stream at the kernel's measured rate) and
    ``comp(M)`` what the table's time holds beyond that stream at M, read through the same blend
    (``((t - o)^p - mem^p)^(1/p)``, 0 while the call is memory-bound). At the smallest M the time is the
    stream of the kernel's own bytes; once the math binds, the table's time."""
    return transferred(s, ratio, 1.0, overhead_s, knee)


def transferred(s: MSeries, mem_ratio: float, comp_ratio: float, overhead_s: float = 0.0,
                knee: float = 4.0) -> MSeries:
    """``s`` with its streaming part (the time at the smallest M less the overhead) ``mem_ratio`` times as long
    and its compute part (what the time holds beyond that stream, read through the blend) ``comp_ratio`` times
    as long: :func:`composed` (``comp_ratio`` 1), and a table of another GPU of the same architecture moved to
    this one (:class:`~.siblings.SiblingGemm`: the two GPUs' bandwidth and peak ratios)."""
    if mem_ratio == 1.0 and comp_ratio == 1.0:
        return s
    o = min(overhead_s, 0.9 * s.ts[0])
    mem = s.ts[0] - o
    p = knee

    def one(_m: float, t: float) -> float:
        x = max(t - o, 0.0)
        comp = max(x ** p - mem ** p, 0.0) ** (1.0 / p)
        return o + ((mem_ratio * mem) ** p + (comp_ratio * comp) ** p) ** (1.0 / p)

    return s.map(one)


# a weight this many times the GPU's L2 cannot stay cached between a harness's repeated calls
L2_MARGIN = 2.0


def dram_stream_rate(t: GemmTable, l2_bytes: int | None) -> float | None:
    """The weight stream ``t`` sustains from memory (bytes/s): its fastest call at the smallest M among the cells
    whose weight is at least :data:`L2_MARGIN` times the GPU's L2 (``l2_bytes``). The collectors time a call
    repeated in a CUDA graph, so a weight that fits the L2 is read from it after the first call — on the L40S
    (96 MiB) cells under ~16 MB stream at up to 2.5 TB/s against 864 GB/s of memory — while a decode step
    streams every layer's weight from memory once (the other layers' weights evict it between steps). None: no
    cell that large."""
    floor = L2_MARGIN * (l2_bytes or 0)
    rates = [n * k * t.meta.weight_bytes / first for (n, k), row in t.cells.items()
             if n * k * t.meta.weight_bytes >= floor and (first := first_call(row))]
    return max(rates, default=None)


def from_dram(s: MSeries, weight_bytes: float, rate: float) -> MSeries:
    """``s`` never below streaming ``weight_bytes`` at ``rate`` (:func:`dram_stream_rate`): a call the table
    timed from the L2 priced as a serving step runs it."""
    bound = weight_bytes / rate
    return s if min(s.ts) >= bound else s.map(lambda _m, t: max(t, bound))


def minus(s: MSeries, q: Callable[[float], float]) -> MSeries:
    """``s`` less a quantization kernel's time ``q(M)`` the engine does not run (fused away), never
    below half of the measured call."""
    return s.map(lambda m, t: max(t - q(m), 0.5 * t))


@record(slots=True)
class CellIndex:
    """Where each cell's line starts in a GEMM table's text (``at``), and the Ns of each K (``by_k``, ascending)."""

    at: dict[tuple[int, int], int]
    by_k: dict[int, list[int]]


# -- the shipped text form (data/kernel_tables/<gpu>/*.csv.gz, decompressed by catalog) -----------------------
def cell_values(parts: list[str]) -> tuple[float | None, ...]:
    return tuple(float(x) * 1e-6 if x else None for x in parts)


def column_line(text: str) -> tuple[str, str]:
    """A shipped table's column line (its first line that is neither blank nor a ``#`` comment) and the text after
    it."""
    header, sep, rest = text.partition("\n")
    while sep and (not header or header.startswith("#")):
        header, sep, rest = rest.partition("\n")
    return header, rest


def parse_gemm(meta: TableMeta, text: str, index: CellIndex | None = None) -> GemmTable:
    """A GEMM (or activation-quantization) table from its text: ``n,k,<M...>`` then one line per cell,
    microseconds per call (each cell's times are read when the cell is). A line that is not a cell's, or a cell
    given twice, is an error naming it. ``index``: where each cell's line starts (a wheel's cell index,
    ``catalog.tables.read_cells_index``): only the column line is read now."""
    if index is not None:
        header, _rows = column_line(text)
        return GemmTable(meta, tuple(float(x) for x in header.split(",")[2:]), text=text, at=index.at,
                         by_k=index.by_k)
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    ms = tuple(float(x) for x in lines[0].split(",")[2:])
    raw = {}
    try:
        for ln in lines[1:]:
            n, k, rest = ln.split(",", 2)
            raw[(int(n), int(k))] = rest
    except ValueError:
        raise ValueError(f"{meta.id}: not a cell's line n,k,times: {ln[:80]!r}") from None
    if len(raw) != len(lines) - 1:
        seen: set[tuple[int, int]] = set()
        for ln in lines[1:]:
            n, k, _ = ln.split(",", 2)
            if (int(n), int(k)) in seen:
                raise ValueError(f"{meta.id}: a cell's line given twice: {ln[:80]!r}")
            seen.add((int(n), int(k)))
    return GemmTable(meta, ms, raw=raw)
