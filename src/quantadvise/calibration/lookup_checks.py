"""Held-out checks of the lookup tables, and the uncertainty bands derived from them.

Everything here is recomputed from the shipped tables themselves (``quantadvise validate <gpu>``; the
importer records the result in ``data/kernel_tables/<gpu>.yaml`` under ``checks``):

- **rows**: each table's lookup against its own rows (the exact cell: 0 up to the four significant
  digits stored);
- **leave-one-shape-out** (``loso``): for each decode-step shape set of :data:`~.heldout.HELD_OUT_SETS`
  the table has, each of its shapes priced from the table with that shape's cell left out, both ways a
  model's shape misses the table — its N off the grid (the neighbouring cells in N at its K) and its K
  off the grid (its K row left out: its N's cells at the neighbouring Ks) — at every M of the table; the
  error of the step (the sum of the set's GEMMs) and of each call, both ways pooled;
- **substitutes**: where the true kernel *is* measured, how a stand-in of each kind fares against it —
  ``same-math`` (another library's table of the same math: TRT-LLM's cuBLASLt fp8 for vLLM's CUTLASS fp8
  and SGLang's fp8 scaled_mm, each with its quantization handled as the step model handles it),
  ``composed`` (the composition rule of :func:`~quantadvise.perf.kernel_tables.composed` rebuilding
  TRT-LLM's measured int4 weight-only GEMM from its int8 weight-only GEMM, and from the engine's cuBLAS
  GEMM), ``roofline`` (the default-efficiency roofline, data/perf_profile.yaml, on the measured tables);
- **attention**: the decode attention grid (and the MLA one, where the engine's is published) with every
  other KV length and batch held out, and the roofline with the launch floor on the GQA grid's rows;
- **fused MoE** (``moe``): each fused-MoE table at its own rows, and leave-one-size-out — every per-GPU
  intermediate size with a neighbour on each side in its (hidden, top-k, experts) group priced from the
  table with that size left out (:func:`~quantadvise.perf.moe_tables.leave_one_out`), at every token count;
  one call is one MoE layer's experts, so a call is the step's expert part.

A **band** is the distribution of step errors |predicted / measured - 1| of one basis on one GPU (its
median, 68th and 90th percentiles); a prediction's ± is the 68th percentile (a one-sigma error bar: about
two predictions in three fall inside it) of the basis that priced each part of the step, weighted by the
part's time (:mod:`quantadvise.perf.uncertainty`).

Pure: no I/O.
"""

import math
from collections.abc import Callable
from typing import Any, Literal

from ..hardware import GPU
from ..perf.kernel_tables import GemmTable, MSeries, composed, first_call, minus
from ..perf.lookup import QUANT_TABLES, TableSet, choose_table, op_series
from ..perf.moe_tables import MoeTable
from ..perf.moe_tables import leave_one_out as moe_leave_one_out
from ..perf.profiles import NO_FLOORS, merged_floors
from ..results import Out, Result
from .heldout import HELD_OUT_SETS

MAX_M = 16384.0
# the bars of issue 25 for a lookup's held-out decode steps, per kernel with a published table
LOOKUP_MEDIAN_BAR, LOOKUP_MAX_BAR = 0.05, 0.20
CENSUS_BAR = 0.70  # the share of served cells priced by their kernel's own table or a same-math table


class ErrorStats(Out):
    """n, median, 68th / 90th percentile and max of |predicted / measured - 1| over a set of held-out calls."""

    n: int
    median: float
    p68: float
    p90: float
    max: float
    method: str = ""


class TableCheck(Out):
    """One published table's lookup: its own rows, and its leave-one-shape-out held-out errors."""

    gpu: str
    table: str  # the table id (data/kernel_tables/<gpu>.yaml)
    kernel: str
    engine: str
    engine_version: str
    rows: ErrorStats
    steps: ErrorStats
    calls: ErrorStats
    worst: str  # the held-out step with the largest error: shape set and M
    within: bool  # steps median <= LOOKUP_MEDIAN_BAR and max <= LOOKUP_MAX_BAR
    kind: str = "gemm"  # gemm | fused-moe (steps: one MoE layer's experts at a held-out per-GPU size)
    # the largest held-out step error that no reading between a shape's two neighbouring cells can avoid (each
    # shape's time kept between its neighbours' at that M: :func:`reach_floor`); None: not computed (fused MoE)
    floor: float | None = None
    # the cells whose call at the smallest M streams the weight faster than the table sustains from memory: timed
    # from the L2, priced at that stream (:func:`~quantadvise.perf.kernel_tables.from_dram`); None: no rate on file
    from_l2: int | None = None


class SubstituteCheck(Out):
    """A stand-in of one kind priced where the true kernel is measured on the same GPU."""

    gpu: str
    basis: str  # same-math | composed
    what: str
    steps: ErrorStats


class BenchmarkPoint(Out):
    m: float
    predicted_s: float  # the lookup, the kernel's stream factor in force
    benchmark_s: float  # the benchmark's time over its baseline's, times the shipped table of that baseline
    error: float  # predicted / benchmark - 1


class BenchmarkCheck(Out):
    """A published benchmark of a kernel no table times (data/validation/kernel_benchmarks.yaml) against the lookup
    that prices the kernel on that GPU."""

    gpu: str
    benchmark: str
    column: str
    kernel: str
    weight_bits: int
    n: int
    k: int
    stream: float  # the stream factor the lookup applies (1: none)
    points: list[BenchmarkPoint]


def benchmark_times(b: Any, col: Any, baseline: MSeries) -> list[float]:
    """What a benchmark's column takes on the tables' harness at each of its Ms: its time over the baseline's in its
    own harness (the baseline's TFLOPS over the column's, at the same FLOPs) times the shipped baseline table."""
    return [tb / tc * baseline.at(m) for m, tb, tc in zip(b.m, b.baseline.tflops, col.tflops, strict=True)]


def benchmark_checks(tables: TableSet, gpu_id: str, benchmarks: tuple[Any, ...]) -> list[BenchmarkCheck]:
    """Each published benchmark column on ``gpu_id`` against the lookup that prices its kernel there."""
    out: list[BenchmarkCheck] = []
    for b in benchmarks:
        base = tables.get(b.baseline.table) if b.gpu == gpu_id else None
        if base is None:
            continue
        for col in b.kernels:
            choice = choose_table(tables, "vllm", col.kernel, col.weight_bits)
            if choice is None:
                continue
            pred = op_series(choice, tables, b.n, b.k, col.weight_bits / 8)
            points = [BenchmarkPoint(m=m, predicted_s=pred.at(m), benchmark_s=t, error=pred.at(m) / t - 1)
                      for m, t in zip(b.m, benchmark_times(b, col, base.series(b.n, b.k)), strict=True)]
            out.append(BenchmarkCheck(gpu=gpu_id, benchmark=b.id, column=col.column, kernel=col.kernel,
                                      weight_bits=col.weight_bits, n=b.n, k=b.k, stream=choice.stream, points=points))
    return out


class CensusRow(Out):
    """What prices one (GPU, engine, scheme) cell's own layers."""

    gpu: str
    engine: str
    engine_version: str
    scheme: str
    kernel: str | None  # None: the engine does not serve the scheme on this GPU
    basis: str  # measured | same-math | composed | proxy | roofline | n/a
    source: str | None  # the table or curve (None: the roofline)


class CensusResult(Result):
    """``quantadvise validate --census``: the basis of every served cell, its shares, and the bar."""

    gpus: list[str]
    engines: list[str]
    schemes: list[str]
    rows: list[CensusRow]
    shares: dict[str, dict[str, float]]  # "<gpu> <engine>" and "all" -> basis -> share of the served cells
    measured_or_same_math: float  # share of served cells priced by their kernel's own table or a same-math one
    bar: float
    roofline_with_table: list[str]  # served cells on the roofline while a table of their math exists on the GPU
    passed: bool

    def exit_code(self) -> int:
        return 0 if self.passed else 1


def stats(errs: list[float], method: str = "", *, digits: int | None = 4) -> dict[str, Any]:
    """n, median, 68th and 90th percentile and max of ``errs``, to ``digits`` decimals (None: as computed,
    for a report whose other figures are not rounded either)."""
    s = sorted(errs)
    if not s:
        return {"n": 0, "median": 0.0, "p68": 0.0, "p90": 0.0, "max": 0.0, "method": method}
    h = len(s) // 2

    def r(x: float) -> float:
        return x if digits is None else round(x, digits)

    def q(f: float) -> float:
        return r(s[min(len(s) - 1, math.ceil(f * len(s)) - 1)])

    return {"n": len(s), "median": r(s[h] if len(s) % 2 else 0.5 * (s[h - 1] + s[h])), "p68": q(0.68), "p90": q(0.9),
            "max": r(s[-1]), "method": method}


def step_errors(pred: Callable[[int, int], MSeries], truth: Callable[[int, int], MSeries | None],
                cells: set[tuple[int, int]], where: list[str] | None = None) -> tuple[list[float], list[float]]:
    """(step errors, call errors) of ``pred`` against ``truth`` on every shape set of HELD_OUT_SETS whose
    shapes are all in ``cells``, at every M the truth has (up to :data:`MAX_M`); ``where`` collects each
    step's shape set and M."""
    steps: list[float] = []
    calls: list[float] = []
    for name, shapes in HELD_OUT_SETS.items():
        if not all(c in cells for c in shapes):
            continue
        rows = [truth(*c) for c in shapes]
        if any(r is None for r in rows):
            continue
        preds = [pred(*c) for c in shapes]
        ms = set.intersection(*(set(r.ms) for r in rows if r is not None))
        for m in sorted(ms):
            if m > MAX_M:
                continue
            meas = [r.at(m) for r in rows if r is not None]
            got = [p.at(m) for p in preds]
            calls.extend(abs(g / t - 1) for g, t in zip(got, meas, strict=True))
            steps.append(abs(sum(got) / sum(meas) - 1))
            if where is not None:
                where.append(f"{name}, M = {m:g}")
    return steps, calls


def _held_out(t: GemmTable, along: Literal["n", "k"]) -> Callable[[int, int], MSeries]:
    """A shape priced from ``t`` with its own cell left out, as a shape off the grid in ``along`` is."""
    return lambda n, k: t.series(n, k, exclude=(n, k), along=along)


def table_checks(t: GemmTable) -> tuple[dict[str, Any], list[float]]:
    """A table's own-row reproduction and its leave-one-shape-out errors (the summaries, and every held-out
    step error)."""
    own = [abs(s.at(m) / v - 1) for (n, k), row in t.cells.items() for s in (t.series(n, k),)
           for m, v in zip(t.ms, row, strict=True) if v is not None and m <= MAX_M]
    steps: list[float] = []
    calls: list[float] = []
    where: list[str] = []
    floor = 0.0
    ways: tuple[tuple[Literal["n", "k"], str], ...] = (("n", "N"), ("k", "K"))
    for along, missing in ways:  # a model's shape misses the table by its N or by its K
        here: list[str] = []
        s, c = step_errors(_held_out(t, along), t.row, set(t.cells), here)
        steps += s
        calls += c
        where += [f"{w} ({missing} held out)" for w in here]
        floor = max(floor, reach_floor(t, along))
    worst = where[max(range(len(steps)), key=steps.__getitem__)] if steps else ""
    rate = t.stream_rate  # on file to four significant digits: a cell within that rounding is the rate's own
    fast = None if rate is None else sum(1 for (n, k), row in t.cells.items() if n * k * t.meta.weight_bytes
                                         > rate * (1 + 5e-4) * (first_call(row) or 0.0))
    return ({"rows": stats(own, "the lookup at the table's own rows"),
             "steps": stats(steps, "leave-one-shape-out: decode-step shape sets, each shape from its neighbours in N "
                                   "at its K, and in K at its N"),
             "calls": stats(calls, "leave-one-shape-out: every call of those shapes"), "worst": worst,
             "floor": round(floor, 4), **({} if fast is None else {"from_l2": fast})}, steps)


def reach_floor(t: GemmTable, along: Literal["n", "k"]) -> float:
    """The largest held-out step error (the steps of :func:`step_errors`, each shape missing the table ``along``)
    that no reading between each shape's two neighbouring cells can avoid: per shape, the time closest to its own
    that lies between its neighbours' at that M (:meth:`~quantadvise.perf.kernel_tables.GemmTable.neighbours`);
    a step whose shape sits at the grid's edge is left out (read from one side, not between two). Where this
    exceeds the bar, the cell is slower or faster than both neighbours: the library ran another configuration
    for it, which interpolation cannot know."""
    worst = 0.0
    for shapes in HELD_OUT_SETS.values():
        if not all(c in t.cells for c in shapes):
            continue
        rows = [t.row(*c) for c in shapes]
        near = [t.neighbours(*c, along) for c in shapes]
        if any(r is None for r in rows) or any(x is None for x in near):
            continue
        ms = set.intersection(*(set(r.ms) for r in rows if r is not None))
        for m in ms:
            if m > MAX_M:
                continue
            meas = best = 0.0
            for r, nb in zip(rows, near, strict=True):
                assert r is not None and nb is not None
                v, a, b = r.at(m), nb[0].at(m), nb[1].at(m)
                meas += v
                best += min(max(v, min(a, b)), max(a, b))
            worst = max(worst, abs(best / meas - 1))
    return worst


def moe_checks(t: MoeTable) -> tuple[dict[str, Any], list[float]]:
    """A fused-MoE table's own-row reproduction and its leave-one-size-out errors (the summaries, and every
    held-out call error: one call is one MoE layer's experts)."""
    own: list[float] = []
    for (h, k, e), by_inter in t.groups().items():
        for x, key in by_inter.items():
            row, got = t.row(key), t.series(h, x, k, e)
            if row is not None and got is not None:
                own += [abs(got.at(m) / v - 1) for m, v in zip(row.ms, row.ts, strict=True) if m <= MAX_M]
    errs: list[float] = []
    where: list[str] = []
    for ((h, k, e), x), rows in sorted(moe_leave_one_out(t).items()):
        for m, pred, meas in rows:
            if m <= MAX_M:
                errs.append(abs(pred / meas - 1))
                where.append(f"hidden {h}, {x} per GPU, top-{k} of {e}, {m:g} tokens")
    worst = where[max(range(len(errs)), key=errs.__getitem__)] if errs else ""
    held = stats(errs, "leave-one-size-out: each per-GPU intermediate size from its neighbours, every token count")
    return {"rows": stats(own, "the lookup at the table's own rows"), "steps": held, "calls": held, "worst": worst}, errs


def _net(tables: TableSet, t: GemmTable, quant: str | None) -> Callable[[int, int], MSeries | None]:
    """A table's cells with the quantization ``quant`` inside its calls taken off (the GEMM alone)."""
    q = tables.get(QUANT_TABLES[quant]) if quant in QUANT_TABLES else None

    def row(n: int, k: int) -> MSeries | None:
        r = t.row(n, k)
        if r is None or q is None:
            return r
        return minus(r, q.series(1, k).at)

    return row


def substitutes(tables: TableSet) -> tuple[list[dict[str, Any]], dict[str, list[float]]]:
    """Where the true kernel is measured on this GPU: the step errors of each kind of stand-in (a summary
    per check, and every step error per basis)."""
    out: list[dict[str, Any]] = []
    pooled: dict[str, list[float]] = {}

    def add(basis: str, what: str, pred: Callable[[int, int], MSeries], truth: Callable[[int, int], MSeries | None],
            cells: set[tuple[int, int]]) -> None:
        steps, _ = step_errors(pred, truth, cells)
        if steps:
            out.append({"basis": basis, "what": what, "steps": stats(steps)})
            pooled.setdefault(basis, []).extend(steps)

    get = tables.get
    trt, i4, i8 = get("trtllm/fp8-cublaslt"), get("trtllm/int4-wo"), get("trtllm/int8-wo")
    vfp8, sfp8 = get("vllm/cutlass-fp8"), get("sglang/sgl-fp8-scaled-mm")
    if trt is not None:
        trt_net = _net(tables, trt, "per-tensor-quant")
        if vfp8 is not None:
            add("same-math", "TRT-LLM cuBLASLt fp8 (its quantization off) for vLLM's CUTLASS fp8 GEMM",
                lambda n, k: _must(trt_net(n, k)), _net(tables, vfp8, "static-quant"), set(vfp8.cells) & set(trt.cells))
        ptq = get("vllm/per-token-quant")
        if sfp8 is not None and ptq is not None:
            add("same-math", "TRT-LLM cuBLASLt fp8 (+ the per-token quantization) for SGLang's fp8 scaled_mm",
                lambda n, k: _plus(_must(trt_net(n, k)), ptq.series(1, k)), sfp8.row, set(sfp8.cells) & set(trt.cells))
    if vfp8 is not None and sfp8 is not None:
        add("same-math", "SGLang's fp8 scaled_mm (its quantization off) for vLLM's CUTLASS fp8 GEMM",
            lambda n, k: _must(_net(tables, sfp8, "per-token-quant")(n, k)), _net(tables, vfp8, "static-quant"),
            set(vfp8.cells) & set(sfp8.cells))
    if i4 is not None and i8 is not None:
        add("composed", "TRT-LLM int4 weight-only rebuilt from its int8 weight-only GEMM (half the bytes)",
            lambda n, k: composed(i8.series(n, k), 0.5, i8.floor_s), i4.row, set(i4.cells) & set(i8.cells))
    blas = get("vllm/cublas-bf16")
    if i4 is not None and blas is not None:
        add("composed", "TRT-LLM int4 weight-only rebuilt from vLLM's cuBLAS bf16 GEMM (a quarter of the bytes)",
            lambda n, k: composed(blas.series(n, k), 0.25, blas.floor_s), i4.row, set(i4.cells) & set(blas.cells))
    return out, pooled


def _must(s: MSeries | None) -> MSeries:
    assert s is not None
    return s


def _plus(s: MSeries, q: MSeries) -> MSeries:
    return s.map(lambda m, t: t + q.at(m))


def roofline_steps(t: GemmTable, gpu: GPU, memory_efficiency: float, compute_efficiency: float,
                   floor_s: float = 0.0) -> list[float]:
    """Step errors of the format-level roofline (one efficiency per format, ``floor_s`` a call: the profile's
    launch floor, perf.profiles.CallFloor) on a table's shape sets."""
    peak = gpu.peak(t.meta.math) or 0.0
    bw = gpu.bandwidth_bytes_per_s
    wb = t.meta.weight_bytes
    act = 1.0 if t.meta.math in ("fp8", "int8") else (0.5 if t.meta.math == "fp4" else 2.0)

    def pred(n: int, k: int) -> MSeries:
        ms = t.ms
        return MSeries(ms, tuple(max((n * k * wb + m * k * act + m * n * 2.0) / (memory_efficiency * bw),
                                     2.0 * m * n * k / (compute_efficiency * peak)) + floor_s for m in ms))

    steps, _ = step_errors(pred, t.row, set(t.cells))
    return steps


def attention_checks(tables: TableSet, engine: str, kernel: str = "attention-decode") -> tuple[dict[str, Any],
                                                                                                list[float]] | None:
    """The decode attention table (``kernel="mla-decode"``: the MLA one): every other KV length and every other
    batch held out and interpolated from the rest (``grid``)."""
    a = tables.attention(engine, kernel)
    if a is None:
        return None
    grid_err: list[float] = []
    for by_b in a.cells.values():
        bs = sorted(by_b)
        for i, b in enumerate(bs):
            row = by_b[b]
            pts = [(x, v) for x, v in zip(a.kvs, row, strict=True) if v is not None]
            for j in range(1, len(pts) - 1, 2):  # a held-out KV length, from its two neighbours
                (x0, v0), (x1, v1), (x2, v2) = pts[j - 1], pts[j], pts[j + 1]
                grid_err.append(abs((v0 + (v2 - v0) * (x1 - x0) / (x2 - x0)) / v1 - 1))
            if 0 < i < len(bs) - 1 and i % 2:  # a held-out batch, from its two neighbours
                lo, hi = by_b[bs[i - 1]], by_b[bs[i + 1]]
                f = (b - bs[i - 1]) / (bs[i + 1] - bs[i - 1])
                for y0, y1, y2 in zip(lo, row, hi, strict=True):
                    if y0 is not None and y1 is not None and y2 is not None:
                        grid_err.append(abs((y0 + (y2 - y0) * f) / y1 - 1))
    return ({"table": a.meta.id, "floor_s": a.floor_s,
             "grid": stats(grid_err, "every other KV length, and every other batch, from their neighbours")}, grid_err)


def attention_roofline(tables: TableSet, engine: str, gpu: GPU, memory_efficiency: float) -> list[float] | None:
    """The roofline (KV bytes over bandwidth) with the table's launch floor under it, on the table's rows."""
    a = tables.attention(engine)
    if a is None:
        return None
    bw = gpu.bandwidth_bytes_per_s * memory_efficiency
    errs = []
    for (_h, kvh, hd, dt), by_b in a.cells.items():
        per_tok = 2 * kvh * hd * (1 if dt == "fp8" else 2)
        for b, row in by_b.items():
            for x, v in zip(a.kvs, row, strict=True):
                if v is not None:
                    errs.append(abs(max(a.floor_s, b * x * per_tok / bw) / v - 1))
    return errs


def gpu_checks(tables: TableSet, gpu: GPU, default_profile: Any, measured_profile: Any | None = None) -> dict[str, Any]:
    """Every check of one GPU's tables and the bands per basis (the ``checks`` block of the index)."""
    idx = tables.index
    kernels: dict[str, Any] = {}
    measured: list[float] = []
    roof: list[float] = []
    d = default_profile.defaults
    mem_eff = d.memory_efficiency if isinstance(d.memory_efficiency, float) else 0.8
    floors: tuple[float, ...] = NO_FLOORS  # the launch floors the roofline prices here (the profile's layers, in order)
    for layer in default_profile.layers((gpu.id,)):
        floors = merged_floors(floors, layer.call_floor_s)
    for meta in idx.tables:
        t = tables.get(meta.id)
        if t is None:
            continue
        c, steps = table_checks(t)
        kernels[meta.id] = c
        if meta.engine != "trtllm":
            measured.extend(steps)
        ce = d.compute_efficiency.get(meta.math, 0.65)
        floor = floors[0] if meta.weight_bytes >= 2 else floors[1]
        roof.extend(roofline_steps(t, gpu, mem_eff, ce if isinstance(ce, float) else 0.65, floor))
    moe: list[float] = []
    for meta in idx.moe:
        mt = tables.moe(meta.id)
        if mt is not None:
            kernels[meta.id], errs = moe_checks(mt)
            moe.extend(errs)
    subs, pooled = substitutes(tables)
    for sub in subs:
        sub["gpu"] = idx.gpu
    attn = {e: a for e in ("vllm", "sglang") if (a := attention_checks(tables, e)) is not None}
    attn |= {f"{e}/mla": a for e in ("vllm", "sglang") if (a := attention_checks(tables, e, "mla-decode")) is not None}
    attn_roof = [x for e in ("vllm", "sglang") for x in (attention_roofline(tables, e, gpu, mem_eff) or [])]
    bands = {"measured": stats(measured, "leave-one-shape-out decode steps of the engines' own tables")}
    for basis in ("same-math", "composed"):
        if pooled.get(basis):
            bands[basis] = stats(pooled[basis], f"{basis} stand-ins where the true kernel is measured on this GPU")
    bands["roofline"] = stats(roof, "default-efficiency roofline on the measured tables' decode steps")
    if moe:
        bands["moe"] = stats(moe, "fused-MoE tables: held-out per-GPU expert sizes from their neighbours")
    if attn:
        bands["attention"] = stats([x for _, errs in attn.values() for x in errs],
                                   "decode attention tables: held-out KV lengths and batches from their neighbours")
    if attn_roof:
        bands["attention-roofline"] = stats(attn_roof, "roofline + launch floor on the attention tables' rows")
    return {"kernels": kernels, "substitutes": subs, "attention": {e: a for e, (a, _) in attn.items()}, "bands": bands}


def table_check(gpu: str, meta_engine_version: str, table: GemmTable | MoeTable,
                checks: dict[str, Any] | None = None) -> TableCheck:
    """A table's lookup checks as a result row (:func:`table_checks`; a fused-MoE table: :func:`moe_checks`);
    ``checks``: those summaries already computed (:func:`gpu_checks`' ``kernels`` entry for the table)."""
    moe = isinstance(table, MoeTable)
    if checks is None:
        checks, _ = moe_checks(table) if isinstance(table, MoeTable) else table_checks(table)
    st = checks["steps"]
    return TableCheck(gpu=gpu, table=table.id, kernel=table.meta.kernel, engine=table.meta.engine,
                      engine_version=meta_engine_version, rows=ErrorStats(**checks["rows"]), steps=ErrorStats(**st),
                      calls=ErrorStats(**checks["calls"]), worst=checks["worst"], kind="fused-moe" if moe else "gemm",
                      floor=checks.get("floor"), from_l2=checks.get("from_l2"),
                      within=st["n"] > 0 and st["median"] <= LOOKUP_MEDIAN_BAR and st["max"] <= LOOKUP_MAX_BAR)


def sibling_steps(source: TableSet, target: TableSet, mem_ratio: float, comp_ratio: dict[str, float],
                  where: list[str] | None = None) -> list[float]:
    """How well ``source``'s tables, moved to another GPU of the same architecture
    (:class:`~quantadvise.perf.siblings.SiblingGemm`: ``mem_ratio`` the source's bandwidth over the target's,
    ``comp_ratio`` its peak over the target's per math, :func:`~quantadvise.perf.siblings.peak_ratios`), predict
    the target's own tables: the error of
    every decode step of :data:`~.heldout.HELD_OUT_SETS` both GPUs' tables of one kernel hold, at every M the
    target's table has (``where`` collects each step's table, set and M)."""
    from ..perf.siblings import SiblingGemm

    steps: list[float] = []
    for meta in source.index.tables:
        a, b = source.get(meta.id), target.get(meta.id)
        if a is None or b is None:
            continue
        moved = SiblingGemm(a, mem_ratio, comp_ratio.get(meta.math, 1.0), "")
        here: list[str] = []
        got, _ = step_errors(moved.series, b.row, set(a.cells) & set(b.cells), here)
        steps += got
        if where is not None:
            where += [f"{meta.id}: {w}" for w in here]
    return steps


def sibling_attention_errors(source: TableSet, target: TableSet, bandwidth: float, efficiency: float) -> list[float]:
    """The same move for the grouped-query decode-attention tables (:class:`~quantadvise.perf.siblings.SiblingAttention`:
    ``bandwidth`` the target's, ``efficiency`` the default streaming efficiency): every (configuration, batch, KV
    length) both GPUs' tables of one engine hold."""
    from ..perf.siblings import SiblingAttention

    errs: list[float] = []
    for engine in sorted({t.engine for t in source.index.attention}):
        a, b = source.attention(engine), target.attention(engine)
        if a is None or b is None or a.kvs != b.kvs:
            continue
        moved = SiblingAttention(a, bandwidth, efficiency, "").cells
        for key, by_b in b.cells.items():
            mine = moved.get(key, {})
            for batch, row in by_b.items():
                errs += [abs(p / t - 1) for p, t in zip(mine.get(batch, ()), row, strict=False) if p is not None and t]
    return errs
