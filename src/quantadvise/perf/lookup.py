"""Which published table prices a kernel, and how (:class:`TableChoice`): the kernel's own table, a
same-math table of another library on the same GPU, or a composition from the engine's table of the
math the kernel runs — in that order (data/kernel_tables/<gpu>.yaml names the same-math tables and the
compositions; :mod:`.kernel_tables` holds the arithmetic).

Bases, as every prediction names them:

- ``measured``: the kernel's own measured table (the same kernel timed under the other engine counts:
  SGLang's DeepGEMM table prices vLLM's DeepGEMM kernel);
- ``same-math``: a table of the same math on the same GPU from another library (TRT-LLM's weight-only
  int4 GEMM for Marlin / Machete, its SmoothQuant int8 GEMM for the CUTLASS int8 kernels, its
  cuBLASLt fp8 GEMM for torch._scaled_mm), the stored bytes adjusted;
- ``composed``: neither exists; the kernel streams its own bytes at the measured streaming rate of
  the engine's table of its math and computes at that table's rate (:func:`.kernel_tables.composed`).

Pure: no I/O.
"""

from __future__ import annotations

from typing import Protocol

from ..results import record
from .attention_tables import AttentionTable
from .kernel_tables import GemmTable, MSeries, TableIndex, bytes_adjusted, composed, from_dram, minus
from .moe_tables import MoeChoice, MoeTable

# the quantization inside a table's calls -> the table that prices it (to take it off where the engine fuses it)
QUANT_TABLES = {"static-quant": "vllm/static-quant", "per-token-quant": "vllm/per-token-quant",
                "per-tensor-quant": "trtllm/per-tensor-quant"}


class TableSet(Protocol):
    """One GPU's tables as the speed model reads them (``catalog`` implements it, loading a table on
    first use): the index, and a table by id (None: not shipped): GEMM / quantization, attention, fused MoE."""

    @property
    def index(self) -> TableIndex: ...

    def get(self, table_id: str) -> GemmTable | None: ...

    def attention(self, engine: str, kernel: str = "attention-decode") -> AttentionTable | None: ...

    def moe(self, table_id: str) -> MoeTable | None: ...


@record(slots=True)
class TableChoice:
    """The table that prices one kernel of one engine on one GPU, and how."""

    basis: str  # measured | same-math | composed
    table: GemmTable
    why: str
    stream: float = 1.0  # the kernel's weight stream is this many times slower than the table's kernel
    stream_note: str = ""  # the factor's evidence (:meth:`~.kernel_tables.StreamFactor.label`)
    compute: float = 1.0  # a composition's math runs this many times slower than the table's (the GPU's peaks)

    @property
    def key(self) -> str:
        return self.table.id

    def words(self) -> str:
        """``"measured table sglang/deepgemm-fp8-block (sglang 0.5.14)"`` and, for a stand-in, why."""
        m = self.table.meta
        what = {"measured": "measured table", "same-math": "same-math table", "composed": "composed from table"}
        slower = (f", its weight stream {self.stream:.2f}x slower" + (f" ({self.stream_note})" if self.stream_note else "")
                  if self.stream != 1.0 else "")
        if self.compute != 1.0:
            slower += f", its math {self.compute:.3g}x slower (this GPU's peaks)"
        sibling = getattr(self.table, "sibling", None)  # a sibling GPU's table moved here (perf.siblings.SiblingGemm)
        moved = f", timed on {sibling} and moved to this GPU's bandwidth and peak" if sibling else ""
        return f"{what[self.basis]} {m.id} ({m.engine} {m.engine_version}{slower}{moved})"


def choose_table(tables: TableSet, engine: str, kernel: str, weight_bits: int | None = None) -> TableChoice | None:
    """The table that prices ``kernel`` as ``engine`` runs it: its own (this engine's, else the other
    engine's timing of the same kernel), else a same-math table, else a composition; None when the GPU has
    none of them (the kernel's curve, if any, or the roofline prices it)."""
    idx = tables.index
    if kernel == "awq-dequant-cublas":  # the whole weight dequantized to 16 bits, then cuBLAS
        base = choose_table(tables, engine, "cublas-bf16")
        if base is None:
            return None
        return TableChoice("composed", base.table, "a dequantization pass to 16 bits, then the measured cuBLAS GEMM")
    own = [t for t in idx.tables if t.kernel == kernel and t.engine != "trtllm"]
    own.sort(key=lambda t: t.engine != engine)
    for meta in own:
        got = tables.get(meta.id)
        if got is not None:
            why = "" if meta.engine == engine else f"the same kernel timed under {meta.engine}"
            return TableChoice("measured", got, why)
    for s in idx.same_math:
        if s.kernel == kernel and (s.weight_bits is None or s.weight_bits == weight_bits):
            got = tables.get(s.table)
            if got is not None:
                return TableChoice("same-math", got, s.why, s.stream_factor, s.stream_note)
    for c in idx.composed:
        if c.kernel == kernel:
            base = choose_table(tables, engine, c.math_kernel)
            if base is not None and base.basis == "measured":
                return TableChoice("composed", base.table, c.why, c.stream_factor, c.stream_note, c.compute_factor)
    return None


def op_series(choice: TableChoice, tables: TableSet, n: float, k: float, stored_bytes: float, *,
              subtract: str | None = None) -> MSeries:
    """Seconds per call of one ``n x k`` weight stored at ``stored_bytes`` per element, along the table's M
    grid: the table's rows for the shape (:meth:`GemmTable.series`), the bytes adjusted for a same-math
    table and composed for a composition, less the quantization ``subtract`` the table's calls contain
    and the engine does not run (fused away)."""
    t = choice.table
    q = tables.get(QUANT_TABLES.get(subtract, "")) if subtract is not None else None
    key = (n, k, stored_bytes, q, choice.basis, choice.stream, choice.compute)  # q: the table object itself (its GPU's table set)
    got = t.derived.get(key)
    if got is None:
        got = t.derived[key] = _op_series(choice, n, k, stored_bytes, q)
    return got


def _op_series(choice: TableChoice, n: float, k: float, stored_bytes: float, q: GemmTable | None) -> MSeries:
    t = choice.table
    s = t.series(n, k)
    if q is not None:
        qs = q.series(1, k)
        s = minus(s, qs.at)
    # other bytes than the timed call streamed (scales, another weight width), or streamed more slowly
    ratio = stored_bytes / t.meta.weight_bytes * choice.stream
    if choice.compute != 1.0:  # a composition whose math this GPU runs at another rate than the table's
        s = other_math(s, ratio, choice.compute, t.floor_s)
    elif abs(ratio - 1.0) > 1e-9:
        s = composed(s, ratio, t.floor_s) if choice.basis == "composed" else bytes_adjusted(s, ratio, t.floor_s)
    rate = t.stream_rate  # a decode step reads the weight from memory, however the harness cached it
    return s if rate is None else from_dram(s, n * k * stored_bytes * choice.stream, rate)


def other_math(s: MSeries, mem_ratio: float, compute: float, overhead_s: float = 0.0, knee: float = 4.0) -> MSeries:
    """A composition whose math runs ``compute`` times slower than the table's (int8 on Blackwell Ultra: 153.5 TOPS
    against 4.5 PFLOPS of fp8): its weight stream as :func:`.kernel_tables.composed` reads it, its math the table's
    fastest compute per row where the math binds (what a call holds beyond its stream, read through the blend, at
    least the stream itself) times ``compute``, linear in M — what the table's time holds beyond the stream at small
    M is the noise of two memory-bound calls, which a factor of ~30 would turn into time."""
    o = min(overhead_s, 0.9 * s.ts[0])
    mem = s.ts[0] - o
    comp = [(m, max((t - o) ** knee - mem ** knee, 0.0) ** (1.0 / knee)) for m, t in zip(s.ms, s.ts, strict=True)]
    per_row = min((c / m for m, c in comp if c >= mem), default=comp[-1][1] / s.ms[-1])
    return s.map(lambda m, _t: o + ((mem_ratio * mem) ** knee + (compute * per_row * m) ** knee) ** (1.0 / knee))


def quant_plan(table_quant: str | None, activation_quant: str, quant_kernel: str | None) -> tuple[str | None, bool]:
    """(the quantization to take off the table's calls, whether the engine's own quantization kernel is
    added): a table whose calls include the quantization the engine runs separately is used as is; one
    that includes another (or one the engine fuses away) has it taken off; an engine that quantizes in a
    separate kernel the table does not include pays that kernel on top."""
    runs = quant_kernel if activation_quant == "unfused" else None
    if table_quant is not None and table_quant == runs:
        return None, False
    take_off = table_quant if table_quant in QUANT_TABLES else None
    return take_off, runs is not None


def choose_moe_table(tables: TableSet, engine: str, kernel: str, stand_in_for: str | None = None) -> MoeChoice | None:
    """The fused-MoE tables that price ``kernel`` as ``engine`` runs it: that engine's table of it, then the
    other engine's; ``stand_in_for``: the kernel the engine really runs, which has no table (``kernel``'s
    measured tables stand in: basis ``proxy``). None: no table of ``kernel`` on this GPU."""
    metas = sorted((m for m in tables.index.moe if m.kernel == kernel), key=lambda m: m.engine != engine)
    got = tuple(t for m in metas if (t := tables.moe(m.id)) is not None)
    if not got:
        return None
    return MoeChoice("proxy" if stand_in_for else "measured", got, stand_in_for or kernel)
