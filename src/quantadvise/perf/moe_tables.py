"""Published fused-MoE tables, read by lookup: what one MoE layer's expert call costs, row by row.

A :class:`MoeTable` holds one fused-MoE kernel's measured calls on one GPU (NVIDIA's
``aiconfigurator-core`` tables, ``data/kernel_tables/<gpu>/<engine>-<kernel>.csv.gz``): seconds per MoE
layer (the gate/up and down GEMMs of the experts the tokens reach, the activation between them and the
routing bookkeeping the collector times) over a grid of token counts, per model configuration
``(hidden, inter, top-k, experts, tp)``. What one GPU computes is the configuration's **per-GPU**
intermediate size ``inter / tp``: rows of different ``tp`` with the same per-GPU size are the same call, and
the smallest ``tp`` (the most direct measurement) is the one read.

:meth:`MoeTable.series` prices one GPU's experts ``(hidden, inter per GPU, top-k, experts)``:

- the configuration's own row where the table has it (every token count, as published);
- else, among the table's configurations of the same hidden size, top-k and expert count, linear
  interpolation in the per-GPU intermediate size between the two neighbours (an expert GEMM's time at a
  fixed token count is close to affine in its weight: a launch cost plus work proportional to it); past
  the largest, affine from the two largest; below the smallest, affine from the two smallest but never
  under the proportional share of the smallest (``t x inter / inter_min``: a smaller weight cannot save
  more than its bytes) nor above it;
- a group with one size only: that row, half of it scaled with the weight;
- None where the table has no configuration of that hidden size, top-k and expert count (the kernel's
  fitted curve, §7 of docs/calibration.md, then prices it).

Along the token grid :class:`~.kernel_tables.MSeries` reads it (linear between grid points, affine past
the largest, the smallest row's time below it). Pure: no I/O (``catalog`` reads the files).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping

from ..results import record
from .kernel_tables import MSeries, TableMeta, _extend, cell_values, filled, first_call, own_points
from .ops import expected_experts

MoeKey = tuple[int, int, int, int, int]  # hidden, inter (whole model), top-k, experts, tp
GroupKey = tuple[int, int, int]  # hidden, top-k, experts


class MoeTable:
    """One fused-MoE kernel's published table on one GPU (the module docstring has the reading)."""

    __slots__ = ("meta", "ms", "_raw", "_cells", "_groups", "_series", "_floor", "derived")

    def __init__(self, meta: TableMeta, ms: tuple[float, ...],
                 cells: Mapping[MoeKey, tuple[float | None, ...]] | None = None,
                 raw: Mapping[MoeKey, str] | None = None):
        if not ms or list(ms) != sorted(set(ms)) or ms[0] <= 0:
            raise ValueError(f"{meta.id}: the token grid must be positive and strictly increasing")
        self.meta, self.ms = meta, tuple(float(m) for m in ms)
        self._cells: dict[MoeKey, tuple[float | None, ...]] = {}
        for key, row in (cells or {}).items():
            self._check(key, row)
            self._cells[key] = row
        self._raw = {k: v for k, v in (raw or {}).items() if k not in self._cells}
        # per (hidden, top-k, experts): per-GPU inter -> the configuration read for it (the smallest tp)
        groups: dict[GroupKey, dict[int, MoeKey]] = {}
        for key in sorted({*self._cells, *self._raw}, key=lambda c: (c[4], c)):
            h, inter, k, e, tp = key
            if tp >= 1 and inter % tp == 0:
                groups.setdefault((h, k, e), {}).setdefault(inter // tp, key)
        self._groups = groups
        self._series: dict[MoeKey, MSeries] = {}  # full series per configuration, once
        self._floor: float | None = None
        # series derived by the speed model, kept per configuration (every walk in a process prices it again)
        self.derived: dict[tuple[object, ...], MSeries | None] = {}

    def _check(self, key: MoeKey, row: tuple[float | None, ...]) -> None:
        if len(row) != len(self.ms):
            raise ValueError(f"{self.meta.id}: configuration {key} has {len(row)} values for {len(self.ms)} token counts")
        if all(x is None for x in row):
            raise ValueError(f"{self.meta.id}: configuration {key} has no value")

    @property
    def id(self) -> str:
        return self.meta.id

    @property
    def floor_s(self) -> float:
        """The launch floor: the smallest configuration's layer at one token (the fixed part of a call)."""
        if self._floor is None:
            keys = [*self._cells, *self._raw]
            got = self.cell(min(keys, key=lambda c: (c[0] * c[1] // max(c[4], 1) * c[2], c))) if keys else None
            self._floor = first_call(got or ()) or 0.0
        return self._floor

    def cell(self, key: MoeKey) -> tuple[float | None, ...] | None:
        got = self._cells.get(key)
        if got is None and key in self._raw:
            got = cell_values(self._raw.pop(key).split(","))
            self._check(key, got)
            self._cells[key] = got
        return got

    def groups(self) -> dict[GroupKey, dict[int, MoeKey]]:
        """Per (hidden, top-k, experts): per-GPU intermediate size -> the configuration read for it."""
        return self._groups

    def row(self, key: MoeKey) -> MSeries | None:
        """One configuration's own rows (None: not in the table)."""
        got = self.cell(key)
        return None if got is None else own_points(self.ms, got)

    def _full(self, key: MoeKey) -> MSeries:
        """A configuration's series at every token count: its own rows; past the last token count it was
        measured at (a row the collector stopped early), the proportional share of the next larger per-GPU size
        of its group measured that far (a smaller expert slice does a proportional part of the work), never
        below its own last measurement; with no such size, the row extended affinely (:func:`filled`)."""
        done = self._series.get(key)
        if done is None:
            got = self.cell(key)
            assert got is not None
            done = filled(self.ms, got)
            last = max(m for m, t in zip(self.ms, got, strict=True) if t is not None)
            donor = self._donor(key, last) if last < self.ms[-1] else None
            if donor is not None:
                d, ratio = donor
                floor = done.at(last)
                done = MSeries(self.ms, tuple(t if m <= last else max(floor, d.at(m) * ratio)
                                              for m, t in zip(self.ms, done.ts, strict=True)))
            self._series[key] = done
        return done

    def _donor(self, key: MoeKey, last: float) -> tuple[MSeries, float] | None:
        """The series of the nearest larger per-GPU size of ``key``'s group measured past ``last`` tokens, and
        ``key``'s size over it."""
        h, inter, k, e, tp = key
        if tp < 1 or inter % tp:
            return None
        x = self.padded(inter // tp)
        for y, other in self._coords((h, k, e)).items():  # ascending
            if y <= x:
                continue
            row = self.cell(other)
            if row is not None and any(t is not None for m, t in zip(self.ms, row, strict=True) if m > last):
                return self._full(other), x / y
        return None

    def padded(self, inter: float) -> float:
        """A per-GPU intermediate size as the timed kernel computes it: rounded up to the table's ``inter_align``
        (the multiple the release pads the experts to, or the kernel's tile along them; the index row cites which)."""
        a = self.meta.inter_align
        return inter if a <= 1 else -(-inter // a) * a

    def _coords(self, g: GroupKey, exclude: int | None = None) -> dict[float, MoeKey]:
        """A group's configurations by the size the kernel computes (:meth:`padded`; of two sizes padded alike,
        the larger: the smaller tp, as of two rows of one per-GPU size), ``exclude`` (a per-GPU size as the
        table lists it) left out."""
        out: dict[float, MoeKey] = {}
        for x, key in sorted(self._groups.get(g, {}).items(), reverse=True):
            if x != exclude:
                out.setdefault(self.padded(x), key)
        return dict(sorted(out.items()))

    def series(self, hidden: int, inter: float, top_k: int, experts: int, exclude: int | None = None) -> MSeries | None:
        """Seconds per MoE layer of one GPU's experts (``inter``: its per-GPU intermediate size) along the
        token grid, or None (no configuration of this hidden size, top-k and expert count). ``exclude``: a
        per-GPU intermediate size left out (leave-one-configuration-out validation)."""
        own = self._groups.get((hidden, top_k, experts), {}).get(inter) if inter != exclude else None  # type: ignore[call-overload]
        if own is not None:
            return self._full(own)
        by_inter = self._coords((hidden, top_k, experts), exclude)
        if not by_inter:
            return None
        inter = self.padded(inter)
        xs = sorted(by_inter)
        if len(xs) == 1 or inter <= xs[0] or inter > xs[-1]:
            return self._edge(by_inter, xs, inter)
        i = bisect_left(xs, inter)
        if xs[i] == inter:
            return self._full(by_inter[xs[i]])
        a, b = xs[i - 1], xs[i]
        u = (inter - a) / (b - a)
        lo, hi = self._full(by_inter[a]), self._full(by_inter[b])
        return MSeries(self.ms, tuple(x + (y - x) * u for x, y in zip(lo.ts, hi.ts, strict=True)))

    def _edge(self, by_inter: dict[float, MoeKey], xs: list[float], inter: float) -> MSeries:
        if len(xs) == 1:
            one = self._full(by_inter[xs[0]])
            return one if inter == xs[0] else _scaled(one, inter / xs[0])
        if inter > xs[-1]:  # affine from the two largest (one size past them held out: 3.2% median |error|; scaled 3.9%)
            a, b = xs[-2], xs[-1]
            return _extend(self._full(by_inter[a]), self._full(by_inter[b]), a, b, inter)
        a, b = xs[0], xs[1]
        lo, hi = self._full(by_inter[a]), self._full(by_inter[b])
        if inter == a:
            return lo
        f = (a - inter) / (b - a)
        share = inter / a
        return MSeries(self.ms, tuple(min(x, max(x - max(0.0, y - x) * f, x * share))
                                      for x, y in zip(lo.ts, hi.ts, strict=True)))


def _scaled(one: MSeries, ratio: float) -> MSeries:
    """Another per-GPU size than the only one its group has (``ratio`` times it): half of the call taken as
    work that scales with the weight, half as fixed (between "all fixed" and "all proportional")."""
    return one.map(lambda _m, t: t * (0.5 + 0.5 * max(ratio, 0.0)))


def restreamed(s: MSeries, ratio: float, floor_s: float, experts: int, top_k: int) -> MSeries:
    """A fused-MoE series for experts stored at ``ratio`` times the timed bytes per weight: the weight stream
    of the experts ``M`` tokens reach, ``E·(1−(1−k/E)^M)`` of them, each streamed at the rate the table's
    one-token call measured (its time above the launch floor ``floor_s`` over its ``k`` experts), is scaled
    by ``ratio``; the rest of the call (launch, routing, the math) is the table's. Never below the floor."""
    o = min(floor_s, 0.9 * s.ts[0])
    per_expert = (s.ts[0] - o) / max(top_k, 1)

    def one(m: float, t: float) -> float:
        stream = min(per_expert * expected_experts(experts, top_k, m), t - o)
        return max(o, t + (ratio - 1.0) * stream)

    return s.map(one)


def parse_moe(meta: TableMeta, text: str) -> MoeTable:
    """A fused-MoE table from its text: ``hidden,inter,topk,experts,tp,<token counts...>`` then one line per
    configuration, microseconds per MoE layer."""
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    ms = tuple(float(x) for x in lines[0].split(",")[5:])
    raw: dict[MoeKey, str] = {}
    for ln in lines[1:]:
        p = ln.split(",", 5)
        raw[(int(p[0]), int(p[1]), int(p[2]), int(p[3]), int(p[4]))] = p[5]
    return MoeTable(meta, ms, raw=raw)


def leave_one_out(table: MoeTable) -> dict[tuple[GroupKey, int], list[tuple[float, float, float]]]:
    """Leave-one-configuration-out: for every per-GPU intermediate size with a neighbour on each side in
    its (hidden, top-k, experts) group, the (tokens, predicted, measured) of every row, predicted from the
    table with that size left out (interpolated between its neighbours)."""
    out: dict[tuple[GroupKey, int], list[tuple[float, float, float]]] = {}
    for g, by_inter in table.groups().items():
        xs = sorted(by_inter)
        for x in xs[1:-1]:
            own = table.row(by_inter[x])
            pred = table.series(g[0], x, g[1], g[2], exclude=x)
            if own is None or pred is None:
                continue
            out[(g, x)] = [(m, pred.at(m), t) for m, t in zip(own.ms, own.ts, strict=True)]
    return out


@record(slots=True)
class MoeChoice:
    """The fused-MoE tables that may price one engine's routed experts on one GPU, in order (the engine's
    own timing of the kernel first, then the other engine's), and how: ``measured`` (the kernel's own
    tables) or ``proxy`` (the kernel has none; the measured tables of the kernel that stands in for it, as
    its curve does). ``stand_ins``: another kernel's tables read after the kernel's own for a configuration
    they lack (a kernel with tables but no curve; basis ``proxy`` for those rows). The first table holding
    the model's configuration prices it."""

    basis: str
    tables: tuple[MoeTable, ...]
    kernel: str  # the kernel the engine runs
    stand_ins: tuple[MoeTable, ...] = ()

    def basis_of(self, table: MoeTable) -> str:
        """``measured`` where ``table`` is the kernel's own, else ``proxy``."""
        return self.basis if table.meta.kernel == self.kernel or self.basis == "proxy" else "proxy"

    def words(self, table: MoeTable) -> str:
        """``"measured table vllm/triton-fp8-block-moe (vllm 0.24.0)"``; a stand-in names the kernel it prices."""
        m = table.meta
        own = f"measured table {m.id} ({m.engine} {m.engine_version})"
        return own if self.basis_of(table) == "measured" else f"{self.kernel} by {own} (proxy)"

    def series(self, hidden: int, inter: float, top_k: int, experts: int,
               stored_bytes: float) -> tuple[MSeries, MoeTable] | None:
        """Seconds per MoE layer of one GPU's experts (:meth:`MoeTable.series`) from the first table holding the
        configuration; experts stored at other bytes per weight than the timed ones (``stored_bytes``: W4A8
        experts on the fp8 table) stream their own bytes at the table's rate (:func:`restreamed`)."""
        for t in (*self.tables, *self.stand_ins):
            ratio = stored_bytes / t.meta.weight_bytes
            key = (hidden, inter, top_k, experts, round(ratio, 6))
            if key not in t.derived:
                got = t.series(hidden, inter, top_k, experts)
                if got is not None and abs(ratio - 1.0) > 1e-9:
                    got = restreamed(got, ratio, t.floor_s, experts, top_k)
                t.derived[key] = got
            found = t.derived[key]
            if found is not None:
                return found, t
        return None
