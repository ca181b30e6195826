"""GPUs with no published tables of their own, priced with the tables of a GPU of the same architecture.

A GPU of the same compute capability runs the same kernels (the engines pick them by capability); where two
such GPUs differ in memory and clocks but not in kind (H100 PCIe / NVL against H100 SXM, A100 40GB against
80GB), each measured call of the one is moved to the other (:class:`SiblingGemm`): its streaming part scaled
by the two bandwidths, its compute part by the two peaks (:func:`~.kernel_tables.transferred`), the per-call
overhead kept. ``data/kernel_tables/siblings.yaml`` names the pairs and records how well the move predicts a
GPU's own tables where both have them (:class:`TransferCheck`, tools/fit_siblings.py).

Pure: no I/O.
"""

from datetime import date
from typing import TYPE_CHECKING, Literal

from ..results import Strict
from .attention_tables import AttentionTable, kv_token_bytes
from .kernel_tables import GemmTable, TableIndex, own_points, transferred

if TYPE_CHECKING:
    from ..hardware import GPU
    from .lookup import TableSet
    from .moe_tables import MoeTable


class TransferCheck(Strict):
    """How well one GPU's tables, moved to another of the same architecture (:class:`SiblingGemm`), predict
    that GPU's own: held-out decode-step errors |predicted / measured - 1| (written by tools/fit_siblings.py)."""

    pairs: tuple[str, ...]  # "h100-sxm -> h200": the source GPU's tables against the target's
    n: int
    median: float
    p68: float
    p90: float
    max: float
    method: str


class Sibling(Strict):
    """A GPU with no tables of its own priced with those of a GPU of the same architecture (same compute
    capability and kernels, compute within :data:`SIBLING_PEAK_RANGE`), moved to its bandwidth and peaks."""

    gpu: str
    tables_of: str
    why: str
    source: str
    as_of: date


SIBLING_PEAK_RANGE = (0.75, 1 / 0.75)  # the move is validated on bandwidth (one chip, two memories): compute stays near
MATHS = ("bf16", "fp16", "fp8", "int8", "fp4")  # the datapaths a table's math can be


def peak_ratios(source: "GPU", target: "GPU") -> dict[str, float]:
    """``source``'s dense peak over ``target``'s for every math both have: how much longer a compute-bound call of a
    table timed on ``source`` takes on ``target``."""
    return {m: a / b for m in MATHS if (a := source.peak(m)) and (b := target.peak(m))}


class Siblings(Strict):
    """``data/kernel_tables/siblings.yaml``."""

    schema_version: Literal[1]
    source: str
    as_of: date
    transfer: TransferCheck
    attention_transfer: TransferCheck
    siblings: tuple[Sibling, ...]


class SiblingGemm(GemmTable):
    """A GPU's stand-in for a table it has none of: the same kernel's table on a GPU of the same architecture
    (``sibling``: the same compute capability and kernels), each measured cell moved to this GPU — its
    streaming part times ``mem_ratio`` (the sibling's bandwidth over this GPU's), its compute part times
    ``comp_ratio`` (the sibling's peak of the table's math over this GPU's), the per-call overhead kept — and
    then read like any table (:meth:`GemmTable.series`). How well such a move predicts a GPU's own table is
    measured where both GPUs have one (``data/kernel_tables/siblings.yaml``, ``transfer``)."""

    __slots__ = ("base", "mem_ratio", "comp_ratio", "sibling")

    def __init__(self, base: GemmTable, mem_ratio: float, comp_ratio: float, sibling: str):
        super().__init__(base.meta, base.ms, by_k=base._by_k)
        self.base, self.mem_ratio, self.comp_ratio, self.sibling = base, mem_ratio, comp_ratio, sibling

    def cell(self, n: int, k: int) -> tuple[float | None, ...] | None:
        got = self._cells.get((n, k))
        if got is None:
            raw = self.base.cell(n, k)
            if raw is None:
                return None
            moved = iter(transferred(own_points(self.ms, raw), self.mem_ratio, self.comp_ratio,
                                     self.base.floor_s).ts)
            got = self._cells[(n, k)] = tuple(next(moved) if t is not None else None for t in raw)
        return got

    @property
    def cells(self) -> dict[tuple[int, int], tuple[float | None, ...]]:
        for k, ns in self._by_k.items():
            for n in ns:
                self.cell(n, k)
        return self._cells

    @property
    def floor_s(self) -> float:
        """The sibling's launch floor: a per-call overhead, which the move keeps."""
        return self.base.floor_s

    @property
    def stream_rate(self) -> float | None:
        """The sibling's sustained weight stream moved to this GPU's bandwidth."""
        r = self.base.stream_rate
        return None if r is None else r / self.mem_ratio


class SiblingAttention(AttentionTable):
    """A sibling's decode-attention table (grouped-query: one layer's K and V of every sequence) on this GPU: each
    measured time, but never less than reading the layer's KV cache at this GPU's bandwidth and the default
    streaming efficiency. Between H100 SXM and H200 the kernel's time does not follow the bandwidth (the tables are
    best matched unmoved, the faster memory unused at these sizes); where this GPU's memory is the slower, the
    cache read bounds it (``data/kernel_tables/siblings.yaml``, ``attention_transfer``)."""

    __slots__ = ("base", "bandwidth", "efficiency", "sibling")

    def __init__(self, base: AttentionTable, bandwidth: float, efficiency: float, sibling: str):
        super().__init__(base.meta, base.kvs, text="")
        self.floor_s = base.floor_s
        self.base, self.bandwidth, self.efficiency, self.sibling = base, bandwidth, efficiency, sibling

    def _config(self, key: tuple[int, int, int, str]) -> dict[int, tuple[float | None, ...]] | None:
        got = self._cells.get(key)
        if got is None:
            raw = self.base._config(key)
            if raw is None:
                return None
            _h, kv_heads, head_dim, dt = key
            per_token = kv_token_bytes(kv_heads, head_dim, dt)
            rate = self.efficiency * self.bandwidth
            got = self._cells[key] = {
                b: tuple(max(t, b * x * per_token / rate) if t is not None else None
                         for x, t in zip(self.kvs, row, strict=True)) for b, row in raw.items()}
        return got

    @property
    def stream_rate(self) -> float | None:
        """None: the KV read at this GPU's bandwidth already bounds every call (:meth:`_config`)."""
        return None

    @property
    def cells(self) -> dict[tuple[int, int, int, str], dict[int, tuple[float | None, ...]]]:
        for key in self.base.cells:
            self._config(key)
        return self._cells


class SiblingTables:
    """A GPU's stand-in table set (:class:`~.lookup.TableSet`): a GPU of the same architecture's GEMM and quantization
    tables, each moved to this GPU (:class:`SiblingGemm`: ``mem_ratio`` the sibling's bandwidth
    over this GPU's, ``comp_ratio(math)`` its peak over this GPU's), and its grouped-query decode-attention tables
    (:class:`SiblingAttention`: ``bandwidth`` this GPU's, ``efficiency`` the default streaming efficiency). Its MLA
    attention and fused-MoE tables are not moved (None: those parts are priced as on any GPU without tables)."""

    def __init__(self, base: "TableSet", sibling: str, mem_ratio: float, comp_ratio: dict[str, float],
                 bandwidth: float, efficiency: float):
        self.base, self.sibling, self.mem_ratio, self.comp_ratio = base, sibling, mem_ratio, comp_ratio
        self.bandwidth, self.efficiency = bandwidth, efficiency
        self._got: dict[str, GemmTable | None] = {}
        self._attn: dict[str, AttentionTable | None] = {}

    @property
    def index(self) -> TableIndex:
        return self.base.index

    def get(self, table_id: str) -> GemmTable | None:
        if table_id not in self._got:
            t = self.base.get(table_id)
            self._got[table_id] = None if t is None else SiblingGemm(
                t, self.mem_ratio, self.comp_ratio.get(t.meta.math, 1.0), self.sibling)
        return self._got[table_id]

    def attention(self, engine: str, kernel: str = "attention-decode") -> AttentionTable | None:
        if kernel != "attention-decode":
            return None
        if engine not in self._attn:
            a = self.base.attention(engine, kernel)
            self._attn[engine] = None if a is None else SiblingAttention(a, self.bandwidth, self.efficiency,
                                                                         self.sibling)
        return self._attn[engine]

    def moe(self, table_id: str) -> "MoeTable | None":
        return None
