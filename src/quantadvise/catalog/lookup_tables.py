"""The published per-kernel lookup tables (``data/kernel_tables/<gpu>.yaml`` and ``<gpu>/*.csv.gz``).

Loaded lazily: the index of a GPU when a prediction for that GPU first asks for it, each table file
the first time a kernel it prices is priced (a ``recommend`` on one GPU reads that GPU's tables only,
and only those of the kernels its candidates run)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import DataError, format_validation_error
from . import loader
from .tables import CELLS_SUFFIX, inflated_name, read_cells_index
from .trusted import M, shipped

if TYPE_CHECKING:
    from ..perf.attention_tables import AttentionTable
    from ..perf.kernel_tables import (
        CellIndex,
        GemmTable,
        KernelBenchmark,
        StreamFactor,
        TableIndex,
        TableMeta,
    )
    from ..perf.lookup import TableSet
    from ..perf.moe_tables import MoeTable
    from ..perf.siblings import Sibling, Siblings


class ShippedTables:
    """One GPU's shipped tables (:class:`~quantadvise.perf.lookup.TableSet`): the index, and each
    table parsed on first use."""

    def __init__(self, index: TableIndex):
        self._index = index
        self._gemm: dict[str, GemmTable | None] = {}
        self._attn: dict[str, AttentionTable | None] = {}
        self._moe: dict[str, MoeTable | None] = {}

    @property
    def index(self) -> TableIndex:
        return self._index

    def get(self, table_id: str) -> GemmTable | None:
        if table_id not in self._gemm:
            from ..perf.kernel_tables import parse_gemm

            meta = next((t for t in (*self._index.tables, *self._index.quant) if t.id == table_id), None)
            if meta is None:
                self._gemm[table_id] = None
            else:
                text = self._text(meta)
                self._gemm[table_id] = parse_gemm(meta, text, self._cells(meta, text))
        return self._gemm[table_id]

    def _cells(self, meta: TableMeta, text: str) -> CellIndex | None:
        """A wheel's cell index of a GEMM table (catalog/tables.py), when it was written for ``text``."""
        inflated = inflated_name(meta.file)
        if inflated is None:
            return None
        try:
            raw = (loader.data_dir() / "kernel_tables" / self._index.gpu / (inflated + CELLS_SUFFIX)).read_bytes()
        except OSError:
            return None  # a checkout: no index
        got = read_cells_index(raw, text)
        if got is None:
            return None
        from ..perf.kernel_tables import CellIndex

        return CellIndex(*got)

    def attention(self, engine: str, kernel: str = "attention-decode") -> AttentionTable | None:
        """The engine's decode attention table (``kernel="mla-decode"``: its MLA one)."""
        key = f"{engine}/{kernel}"
        if key not in self._attn:
            from ..perf.attention_tables import parse_attention

            meta = next((t for t in self._index.attention if t.engine == engine and t.kernel == kernel), None)
            self._attn[key] = None if meta is None else parse_attention(meta, self._text(meta))
        return self._attn[key]

    def moe(self, table_id: str) -> MoeTable | None:
        if table_id not in self._moe:
            from ..perf.moe_tables import parse_moe

            meta = next((t for t in self._index.moe if t.id == table_id), None)
            self._moe[table_id] = None if meta is None else parse_moe(meta, self._text(meta))
        return self._moe[table_id]

    def _text(self, meta: TableMeta) -> str:
        folder = loader.data_dir() / "kernel_tables" / self._index.gpu
        path = folder / meta.file
        where = f"data/kernel_tables/{self._index.gpu}/{meta.file}"
        inflated = inflated_name(meta.file)
        try:
            if inflated is not None:  # a wheel ships the table inflated (catalog/tables.py)
                with contextlib.suppress(FileNotFoundError):
                    return (folder / inflated).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"{where} is missing or unreadable ({exc})") from None
        import gzip  # a checkout's tables: gzipped

        try:
            return gzip.decompress(path.read_bytes()).decode("utf-8")
        except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
            raise DataError(f"{where} is missing or unreadable ({exc})") from None


@cache
def kernel_tables(gpu_id: str) -> TableSet | None:
    """The lookup tables shipped for a bundled GPU; for a GPU with none, its sibling's moved to it
    (data/kernel_tables/siblings.yaml: :class:`~quantadvise.perf.siblings.SiblingTables`); else None."""
    from ..perf.kernel_tables import TableIndex

    index = _data_file(f"kernel_tables/{gpu_id}.yaml", TableIndex)
    if index is None:
        return _sibling_tables(gpu_id)
    factors = {(f.kernel, f.weight_bits): f for f in stream_factors() if f.gpu == gpu_id}
    if factors:
        def streamed(rows: tuple[Any, ...]) -> tuple[Any, ...]:  # same-math rows and compositions alike
            return tuple(r.model_copy(update={"stream_factor": f.factor, "stream_note": f.label()})
                         if (f := factors.get((r.kernel, getattr(r, "weight_bits", None)))) else r for r in rows)
        index = index.model_copy(update={"same_math": streamed(index.same_math), "composed": streamed(index.composed)})
    return ShippedTables(_computing(index, gpu_id))


def _computing(index: Any, gpu_id: str) -> Any:
    """``index`` with each composition's compute factor: the GPU's peak of its math table's math over its peak of
    the math the kernel computes on (data/hardware.yaml); 1 where either is unknown."""
    from .models import get_gpu

    gpu = get_gpu(gpu_id)
    maths = {t.kernel: t.math for t in index.tables}
    rows = []
    for c in index.composed:
        have, need = gpu.peak(maths.get(c.math_kernel, "")), gpu.peak(c.math) if c.math else None
        factor = have / need if have and need else 1.0
        rows.append(c.model_copy(update={"compute_factor": factor}) if abs(factor - 1.0) > 1e-9 else c)
    return index.model_copy(update={"composed": tuple(rows)})


def sibling_of(gpu_id: str) -> Sibling | None:
    """The row that prices ``gpu_id`` with another GPU's tables (data/kernel_tables/siblings.yaml), or None."""
    got = siblings()
    return next((r for r in got.siblings if r.gpu == gpu_id), None) if got is not None else None


@cache
def siblings() -> Siblings | None:
    from ..perf.siblings import Siblings

    return _data_file("kernel_tables/siblings.yaml", Siblings)


def _sibling_tables(gpu_id: str) -> TableSet | None:
    from ..perf.siblings import SiblingTables, peak_ratios
    from .models import get_gpu

    row = sibling_of(gpu_id)
    base = kernel_tables(row.tables_of) if row is not None else None
    if row is None or base is None:
        return None
    mine, theirs = get_gpu(gpu_id), get_gpu(row.tables_of)
    return SiblingTables(base, row.tables_of, theirs.bandwidth_bytes_per_s / mine.bandwidth_bytes_per_s,
                         peak_ratios(theirs, mine), mine.bandwidth_bytes_per_s, default_memory_efficiency())


def default_memory_efficiency() -> float:
    """The default profile's streaming efficiency (data/perf_profile.yaml: what the roofline reads bytes at)."""
    from .profiles import default_perf_profile

    d = default_perf_profile().defaults.memory_efficiency
    return d if isinstance(d, float) else 0.8


_OVERRIDE: tuple[StreamFactor, ...] | None = None  # set by stream_factors_as


@contextmanager
def stream_factors_as(factors: tuple[StreamFactor, ...]) -> Iterator[None]:
    """Price with ``factors`` instead of the shipped stream factors while the block runs (the shipped ones after):
    how tools/fit_stream_factors.py fits them against the tables without them and tries its candidates."""
    global _OVERRIDE
    _OVERRIDE = factors
    stream_factors.cache_clear()
    kernel_tables.cache_clear()
    try:
        yield
    finally:
        _OVERRIDE = None
        stream_factors.cache_clear()
        kernel_tables.cache_clear()


@cache
def stream_factors() -> tuple[StreamFactor, ...]:
    """How much more slowly a kernel priced by a same-math table streams its weights than the table's kernel
    (data/kernel_tables/stream_factors.yaml: fitted to published end-to-end runs of the kernel itself, or to its own
    published benchmark)."""
    from ..perf.kernel_tables import StreamFactors

    if _OVERRIDE is not None:
        return _OVERRIDE
    got = _data_file("kernel_tables/stream_factors.yaml", StreamFactors)
    return got.factors if got is not None else ()


KERNEL_BENCHMARKS = "data/validation/kernel_benchmarks.yaml"


def kernel_benchmarks() -> tuple[KernelBenchmark, ...]:
    """Published benchmarks of kernels no table times, beside a 16-bit baseline of the same harness
    (data/validation/kernel_benchmarks.yaml: what tools/fit_stream_factors.py fits Marlin's and Humming's factors to)."""
    from ..perf.kernel_tables import KernelBenchmarks

    got = _data_file("validation/kernel_benchmarks.yaml", KernelBenchmarks)
    return got.benchmarks if got is not None else ()


def _data_file(rel: str, model: type[M]) -> M | None:
    """``data/<rel>`` read through ``model`` (None: not in this install); a row that does not validate is an error
    naming the file."""
    path = loader.data_dir() / rel
    if not path.is_file():
        return None
    try:
        return shipped(model, loader.data_yaml(path, f"data/{rel}"))
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/{rel}")) from None


@cache
def uncertainty_bands(gpu_id: str) -> dict[str, float]:
    """The bands that price a prediction's uncertainty on ``gpu_id`` (basis -> relative half-width, the 68th
    percentile of held-out step errors: data/kernel_tables/bands.yaml): the GPU's own, and for a basis it has
    no check of (or a GPU without tables) the median of the bands the GPUs with checks record for it (the
    typical error of that basis where it was measured)."""
    path = loader.data_dir() / "kernel_tables" / "bands.yaml"
    if not path.is_file():
        return {}
    doc = loader.data_yaml(path, "data/kernel_tables/bands.yaml")
    per_gpu = {g: {b: float(v["p68"]) for b, v in bands.items() if v.get("n")} for g, bands in doc["gpus"].items()}
    seen: dict[str, list[float]] = {}
    for bands in per_gpu.values():
        for b, v in bands.items():
            seen.setdefault(b, []).append(v)
    typical = {b: sorted(v)[len(v) // 2] for b, v in seen.items()}
    row = sibling_of(gpu_id) if gpu_id not in per_gpu else None
    got = siblings() if row is not None else None
    if row is not None and got is not None and row.tables_of in per_gpu:
        # a sibling's tables, moved: their own band and the move's (held out where both GPUs have tables), in
        # quadrature; the parts no moved table prices keep the typical bands
        move = {**dict.fromkeys(MOVED_BASES, got.transfer.p68), "attention": got.attention_transfer.p68}
        moved = {b: (v * v + move[b] ** 2) ** 0.5 for b, v in per_gpu[row.tables_of].items() if b in move}
        return {**typical, **moved}
    return {**typical, **per_gpu.get(gpu_id, {})}


MOVED_BASES = ("measured", "same-math", "composed")  # the bases a sibling's GEMM tables price


def kernel_table_checks(gpu_id: str) -> dict[str, Any] | None:
    """The recorded held-out checks of a GPU's tables (data/kernel_tables/checks/<gpu>.yaml), or None."""
    path = loader.data_dir() / "kernel_tables" / "checks" / f"{gpu_id}.yaml"
    return loader.data_yaml(path, f"data/kernel_tables/checks/{path.name}") if path.is_file() else None


def kernel_table_gpus() -> tuple[str, ...]:
    """The GPUs with shipped lookup tables: each index ``<gpu>.yaml`` beside its folder of tables (the folder's other
    files — bands, stream factors, siblings — have none)."""
    folder = loader.data_dir() / "kernel_tables"
    if not folder.is_dir():
        return ()
    return tuple(sorted(p.stem for p in folder.glob("*.yaml") if (folder / p.stem).is_dir()))


def validate_kernel_tables() -> int:
    """Every index row validated, every file it names present, with its source and as_of lines."""
    n = 0
    for gid in kernel_table_gpus():
        tabs = kernel_tables(gid)
        assert isinstance(tabs, ShippedTables)
        idx = tabs.index
        if idx.gpu != gid:
            raise DataError(f"data/kernel_tables/{gid}.yaml: gpu is '{idx.gpu}'")
        ids = {t.id for t in (*idx.tables, *idx.quant)}
        for s in idx.same_math:
            if s.table not in ids:
                raise DataError(f"data/kernel_tables/{gid}.yaml: same_math {s.kernel} names no table '{s.table}'")
        for meta in (*idx.tables, *idx.quant, *idx.attention, *idx.moe):
            head = tabs._text(meta).split("\n", 4)[:4]
            if not any(h.startswith("# source: ") for h in head) or not any(h.startswith("# as_of: ") for h in head):
                raise DataError(f"data/kernel_tables/{gid}/{meta.file}: needs '# source:' and '# as_of:' lines")
            n += 1
        checks = kernel_table_checks(gid)
        if checks is None or not checks.get("source") or not checks.get("as_of"):
            raise DataError(f"data/kernel_tables/checks/{gid}.yaml is missing or has no source / as_of")
    _validate_siblings()
    for b in kernel_benchmarks():  # each names a GPU with tables and its baseline's table there
        tabs = kernel_tables(b.gpu)
        if tabs is None or tabs.get(b.baseline.table) is None:
            raise DataError(f"{KERNEL_BENCHMARKS}: {b.id} names no table '{b.baseline.table}' on {b.gpu}")
    bands = uncertainty_bands(kernel_table_gpus()[0]) if kernel_table_gpus() else {}
    if kernel_table_gpus() and "measured" not in bands:
        raise DataError("data/kernel_tables/bands.yaml holds no band of the measured tables")
    return n


def _validate_siblings() -> None:
    """Each sibling row: a GPU on file with no tables of its own, priced with those of a GPU that has tables, of
    the same compute capability, whose peak of every math both have is within ``SIBLING_PEAK_RANGE`` of its own
    (the move is validated on bandwidth: compute stays near)."""
    from ..perf.siblings import SIBLING_PEAK_RANGE, peak_ratios
    from .models import get_gpu

    got = siblings()
    where = "data/kernel_tables/siblings.yaml"
    own = set(kernel_table_gpus())
    lo, hi = SIBLING_PEAK_RANGE
    for r in got.siblings if got is not None else ():
        if r.gpu in own or r.tables_of not in own:
            raise DataError(f"{where}: {r.gpu} must have no tables of its own and {r.tables_of} must have some")
        mine, theirs = get_gpu(r.gpu), get_gpu(r.tables_of)
        if mine.capability != theirs.capability:
            raise DataError(f"{where}: {r.gpu} (sm{mine.capability}) and {r.tables_of} (sm{theirs.capability}) are not "
                            "one architecture")
        for m, x in peak_ratios(theirs, mine).items():
            if not lo <= x <= hi:
                raise DataError(f"{where}: {r.tables_of}'s {m} peak is {x:.2f}x {r.gpu}'s (the move needs "
                                f"{lo:.2f}-{hi:.2f}x)")

