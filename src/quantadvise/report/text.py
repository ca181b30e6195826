"""A small, dependency-free text table and number formatting for human output.

Deterministic (no terminal probing), so golden files are stable; units always shown.
"""

from __future__ import annotations

from collections.abc import Sequence


def gb(n_bytes: float) -> str:
    """Decimal gigabytes, as model cards and the chapter write them."""
    return f"{n_bytes / 1e9:,.2f} GB"


def gib(n_bytes: float) -> str:
    return f"{n_bytes / 1024**3:,.2f} GiB"


def bytes_h(n_bytes: float) -> str:
    """Human bytes with a decimal unit that fits."""
    for unit, div in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n_bytes) >= div:
            return f"{n_bytes / div:,.2f} {unit}"
    return f"{n_bytes:,.0f} B"


def count_h(n: float) -> str:
    for unit, div in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= div:
            return f"{n / div:,.2f}{unit}"
    return f"{n:,.0f}"


def seconds_h(s: float) -> str:
    if s >= 1:
        return f"{s:,.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:,.3f} ms"
    return f"{s * 1e6:,.1f} µs"


class Table:
    """Columns with alignment; ``render()`` draws a header rule and optional footer rows."""

    def __init__(self, columns: Sequence[str], align: str | None = None, title: str | None = None):
        self.columns = list(columns)
        self.align = align or ("l" + "r" * (len(columns) - 1))
        self.title = title
        self.rows: list[list[str]] = []
        self.footer: list[list[str]] = []

    def add(self, *cells: object) -> None:
        self.rows.append([str(c) for c in cells])

    def add_footer(self, *cells: object) -> None:
        self.footer.append([str(c) for c in cells])

    def render(self) -> str:
        allrows = [self.columns, *self.rows, *self.footer]
        widths = [max(len(r[i]) for r in allrows) for i in range(len(self.columns))]

        def fmt(row: list[str]) -> str:
            cells = [
                (c.ljust(w) if a == "l" else c.rjust(w)) for c, w, a in zip(row, widths, self.align, strict=True)
            ]
            return "  ".join(cells).rstrip()

        rule = "  ".join("─" * w for w in widths)
        out = []
        if self.title:
            out.append(self.title)
        out.append(fmt(self.columns))
        out.append(rule)
        out.extend(fmt(r) for r in self.rows)
        if self.footer:
            out.append(rule)
            out.extend(fmt(r) for r in self.footer)
        return "\n".join(out)
