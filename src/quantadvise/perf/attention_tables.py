"""Published decode-attention tables (``data/kernel_tables/<gpu>/*-attention-decode.csv.gz``, MLA: ``*-mla-decode``):
one layer's decode attention per head configuration over a grid of batch x KV length, read from the shipped text
(``catalog.lookup_tables``) and priced by ``perf.attention``. Pure: text in, seconds out."""

from __future__ import annotations

from bisect import bisect_left

from ..results import record
from .kernel_tables import L2_MARGIN, MSeries, TableMeta, cell_values, column_line


def kv_token_bytes(kv_heads: int, head_dim: int, kv_dtype: str) -> int:
    """Bytes of one token's K and V in one layer of a grouped-query cache (``kv_dtype``: the tables' bf16 / fp8)."""
    return 2 * kv_heads * head_dim * (1 if kv_dtype == "fp8" else 2)


def kv_stream_rate(t: AttentionTable, l2_bytes: int | None) -> float | None:
    """The KV read a grouped-query decode-attention table sustains from memory (bytes/s): its fastest call among those
    whose cache (batch x KV length x :func:`kv_token_bytes`) is at least :data:`~.kernel_tables.L2_MARGIN` times the
    GPU's L2 (``l2_bytes``). The collectors repeat the call, so a cache that fits the L2 is read from it (on the L40S,
    caches up to ~64 MB at a median 1.6-1.8 TB/s against 864 GB/s of memory); a decode step reads each layer's cache
    from memory, the weights of the other layers evicting it. None: no call that large."""
    floor = L2_MARGIN * (l2_bytes or 0)
    rates = [b * x * per / tt for (_h, kvh, d, dt), rows in t.cells.items() for per in (kv_token_bytes(kvh, d, dt),)
             for b, row in rows.items() for x, tt in zip(t.kvs, row, strict=True) if tt and b * x * per >= floor]
    return max(rates, default=None)


class AttentionTable:
    """Decode attention of one layer (one call per layer and step) on one GPU, per head configuration
    (heads, KV heads, head dim, KV dtype — one GPU's share under tensor parallelism): seconds over a grid of
    batch x KV length. :meth:`grid` gives one configuration's grid, or None when the table has no row for it
    (the step model then keeps the roofline with the table's launch floor, :attr:`floor_s`). Given its text with
    the floor on file (``TableMeta.floor_us``: every shipped table), only the configurations read are split
    out of it; otherwise every row is read at once."""

    __slots__ = ("meta", "kvs", "_cells", "_raw", "_text", "floor_s", "_grids")

    def __init__(self, meta: TableMeta, kvs: tuple[float, ...], text: str):
        self.meta, self.kvs = meta, tuple(float(x) for x in kvs)
        self._cells: dict[tuple[int, int, int, str], dict[int, tuple[float | None, ...]]] = {}  # parsed
        # a configuration split out as its text lines, parsed the first time it is read
        self._raw: dict[tuple[int, int, int, str], dict[int, str]] = {}
        self._text = text  # the rows not yet split into ``_raw`` ("\n" first: each row follows one)
        self._grids: dict[tuple[int, int, int, str], AttentionGrid | None] = {}  # grid() per configuration, once
        if text and meta.floor_us is not None:
            self.floor_s = meta.floor_us * 1e-6
            return
        if text:
            self._split_all()
        self.floor_s = self.measured_floor()

    @property
    def stream_rate(self) -> float | None:
        """The KV read the table sustains from memory (bytes/s, :attr:`TableMeta.stream_bytes_per_s`; None: no bound
        on file)."""
        return self.meta.stream_bytes_per_s

    def measured_floor(self) -> float:
        """The launch floor from the rows (seconds): the median over head configurations of one sequence at the
        shortest KV length (the upper median of an even count); what ``floor_us`` records."""
        if self._text:
            self._split_all()
        firsts = [by_b[min(by_b)][0] for by_b in self._cells.values()]
        firsts += [float(first) * 1e-6 if (first := by_b[min(by_b)].split(",", 1)[0]) else None
                   for by_b in self._raw.values()]
        smallest: list[float] = sorted(x for x in firsts if x)
        return smallest[len(smallest) // 2] if smallest else 0.0

    def _split_all(self) -> None:
        """Every row of the text, split into its configuration's lines (a bad row is an error naming it)."""
        text, self._text = self._text, ""
        by_text: dict[tuple[str, ...], dict[int, str]] = {}
        for ln in text.split("\n"):
            if not ln:
                continue
            parts = ln.split(",", 5)
            if len(parts) != 6 or not parts[4].isdecimal():
                raise ValueError(f"{self.meta.id}: not a row of heads,kv_heads,head_dim,kv_dtype,batch,times: "
                                 f"{ln[:80]!r}")
            by_text.setdefault(tuple(parts[:4]), {})[int(parts[4])] = parts[5]
        for (h, kvh, d, dt), by_b in by_text.items():
            if not (h.isdecimal() and kvh.isdecimal() and d.isdecimal() and dt):
                raise ValueError(f"{self.meta.id}: not a configuration heads,kv_heads,head_dim,kv_dtype: "
                                 f"{h},{kvh},{d},{dt}")
            key = (int(h), int(kvh), int(d), dt)
            if key not in self._cells:
                self._raw.setdefault(key, {}).update(by_b)

    def _split(self, key: tuple[int, int, int, str]) -> dict[int, str] | None:
        """One configuration's rows from the text (its batch -> its times), found by their first four columns."""
        text = self._text
        head = "\n{},{},{},{},".format(*key)
        out: dict[int, str] = {}
        at = text.find(head)
        while at >= 0:
            start = at + len(head)
            end = text.find("\n", start)
            batch, sep, times = text[start:end if end >= 0 else len(text)].partition(",")
            if not (sep and batch.isdecimal()):
                raise ValueError(f"{self.meta.id}: not a row of heads,kv_heads,head_dim,kv_dtype,batch,times: "
                                 f"{text[at + 1:at + 81]!r}")
            out[int(batch)] = times
            at = text.find(head, start) if end >= 0 else -1
        return out or None

    def _config(self, key: tuple[int, int, int, str]) -> dict[int, tuple[float | None, ...]] | None:
        got = self._cells.get(key)
        if got is None:
            rows = self._raw.pop(key, None)
            if rows is None and self._text:
                rows = self._split(key)
            if rows is not None:
                got = self._cells[key] = {b: cell_values(text.split(",")) for b, text in rows.items()}
        return got

    @property
    def cells(self) -> dict[tuple[int, int, int, str], dict[int, tuple[float | None, ...]]]:
        """Every configuration, parsed (the held-out checks read them all)."""
        if self._text:
            self._split_all()
        for key in list(self._raw):
            self._config(key)
        return self._cells

    def grid(self, heads: int, kv_heads: int, head_dim: int, kv_dtype: str) -> AttentionGrid | None:
        key = (heads, kv_heads, head_dim, kv_dtype)
        if key not in self._grids:
            self._grids[key] = self._grid(key)
        return self._grids[key]

    def _grid(self, key: tuple[int, int, int, str]) -> AttentionGrid | None:
        got = self._config(key)
        if not got:
            return None
        bs = sorted(got)
        rows = []
        for b in bs:
            pts = [(x, t) for x, t in zip(self.kvs, got[b], strict=True) if t is not None]
            if len(pts) < 2:
                continue
            s = MSeries(tuple(p[0] for p in pts), tuple(p[1] for p in pts))
            rows.append((float(b), MSeries(self.kvs, tuple(s.at(x) for x in self.kvs))))
        if not rows:
            return None
        return AttentionGrid(tuple(r[0] for r in rows), tuple(r[1] for r in rows))


@record(slots=True)
class AttentionGrid:
    """One head configuration's decode attention: seconds per layer at (batch, KV length), linear in each
    between grid points (attention is a fixed launch cost plus work proportional to batch x KV length),
    affine past the largest batch or KV length."""

    batches: tuple[float, ...]
    rows: tuple[MSeries, ...]  # one per batch, over KV length

    def at(self, batch: float, kv: float) -> float:
        bs = self.batches
        if len(bs) == 1 or batch <= bs[0]:
            return self.rows[0].at(kv)
        last = len(bs) - 1
        if batch >= bs[last]:
            hi, lo = self.rows[last].at(kv), self.rows[last - 1].at(kv)
            return hi + max(0.0, (hi - lo) / (bs[last] - bs[last - 1])) * (batch - bs[last])
        i = bisect_left(bs, batch)
        a, b = self.rows[i - 1].at(kv), self.rows[i].at(kv)
        return a + (b - a) * (batch - bs[i - 1]) / (bs[i] - bs[i - 1])


def parse_attention(meta: TableMeta, text: str) -> AttentionTable:
    """A decode attention table from its text: ``heads,kv_heads,head_dim,kv_dtype,batch,<KV lengths...>``. With the
    table's launch floor on file (``meta.floor_us``) a configuration's rows are split out of the text when it is
    first read (a shipped table holds ~2,500 rows and a command prices one or two configurations: splitting every
    row cost ~5 ms of a ``recommend``); without it every row is split at once, grouped by configuration, whose
    numbers are read once. A row or configuration it reads and cannot is an error naming it."""
    header, body = column_line(text)
    kvs = tuple(float(x) for x in header.split(",")[5:])
    rows = "\n" + "\n".join(ln for ln in body.split("\n") if not ln.startswith("#")) if "\n#" in body else "\n" + body
    return AttentionTable(meta, kvs, text=rows)
