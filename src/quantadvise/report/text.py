"""A small, dependency-free text table, line wrapping and number formatting for human output.

Deterministic: renderers receive the width to fit (the CLI measures the terminal; ``None`` means
no limit, ``--wide``), so golden files are stable; units always shown.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..wording import plural, printable

if TYPE_CHECKING:
    from ..perf.uncertainty import FigureBand

ELLIPSIS = "…"
MIN_FLEX = 10  # a shrunk column keeps at least this many characters
__all__ = ["ELLIPSIS", "MIN_FLEX", "Table", "bytes_h", "clip", "count_h", "csv_cell", "csv_text", "gb", "gib", "plural",
           "seconds_h", "wrap", "wrap_code", "wrap_command"]


# A spreadsheet reads a cell that starts with one of these as a formula (=HYPERLINK(...), +cmd|...);
# OWASP's CSV-injection advice: such a text cell gets a leading apostrophe, which shows it as text.
CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_CSV_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan"  # compiled on first use (re's cache)


def csv_cell(value: object) -> object:
    """One CSV cell: a number as it is; text made printable (control characters, the bytes of a name that
    is not UTF-8: ``\\xNN``) and, when it starts like a formula (:data:`CSV_FORMULA_START`) and is not a
    number, prefixed with ``'`` so a spreadsheet shows it instead of running it."""
    if not isinstance(value, str):
        return value
    if value.startswith(CSV_FORMULA_START) and not re.fullmatch(_CSV_NUMBER, value):
        value = "'" + value
    return printable(value)


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """The one CSV writer of every CSV renderer: a header and rows, every cell through :func:`csv_cell`."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([csv_cell(c) for c in header])
    for row in rows:
        w.writerow([csv_cell(c) for c in row])
    return buf.getvalue().rstrip("\n")


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


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the cut marked with an ellipsis."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + ELLIPSIS


def wrap(text: str, width: int | None, indent: str = "", subsequent: str | None = None) -> list[str]:
    """A paragraph as lines of at most ``width`` characters (``None``: one line), broken at spaces;
    a word longer than the line is broken too, so no line is longer than ``width`` — except a URL
    (``huggingface.co/...``, ``https://...``), which stays whole on a line of its own, to copy."""
    first = indent + text
    if width is None or len(first) <= width:
        return [first]
    rest = indent if subsequent is None else subsequent
    room = width - max(len(indent), len(rest))
    url = any(len(w) > room and re.search(_URL, w, re.I) for w in text.split())
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=rest,
                         break_on_hyphens=False, break_long_words=not url) or [indent]


# a word that is a web address: a scheme, or a host name with a dot followed by a path
_URL = r"^\(?(?:[a-z]+://|[\w-]+(?:\.[\w-]+)+/)"  # compiled on first use: only a word too long for the line asks


def wrap_command(argv: str, width: int | None, indent: str = "") -> list[str]:
    """A shell command as copy-pasteable lines: broken between arguments with `` \\`` continuations
    (a flag stays with its value); ``None`` keeps one line."""
    first = indent + argv
    if width is None or len(first) <= width:
        return [first]
    import shlex

    try:
        words = shlex.split(argv)
    except ValueError:
        return wrap(argv, width, indent)
    tokens: list[str] = []
    for w in words:
        q = shlex.quote(w)
        if tokens and tokens[-1].startswith("-") and not q.startswith("-") and " " not in tokens[-1]:
            tokens[-1] += " " + q  # --flag value
        else:
            tokens.append(q)
    cont = " " * len(indent) + "    "
    lines: list[str] = []
    cur = indent + tokens[0]
    for tok in tokens[1:]:
        if len(cur) + 1 + len(tok) + 2 > width:  # room for " \\"
            lines.append(cur + " \\")
            cur = cont + tok
        else:
            cur += " " + tok
    lines.append(cur)
    return lines


def wrap_code(code: str, width: int | None, indent: str = "", subsequent: str | None = None) -> list[str]:
    """A one-line Python call as lines that still run when pasted: broken only inside its brackets
    (implicit line continuation; at a space or after an opening bracket, never inside a string
    literal); a trailing ``  # comment`` goes on lines of its own, each starting with ``#``. ``None``
    (or a line that fits) keeps one line; a piece with no break allowed in it stays whole."""
    first = indent + code
    if width is None or len(first) <= width:
        return [first]
    rest = indent if subsequent is None else subsequent
    pieces: list[tuple[str, str]] = []  # (separator before it, text)
    comment, sep, cur = "", "", ""
    depth, quote = 0, ""
    for i, ch in enumerate(code):
        if quote:
            cur += ch
            if ch == quote and code[i - 1] != "\\":
                quote = ""
        elif ch == "#" and depth == 0:
            comment = code[i + 1:].strip()
            cur = cur.rstrip()
            break
        elif ch == " " and depth > 0:
            pieces.append((sep, cur))
            sep, cur = " ", ""
        else:
            cur += ch
            if ch in "\"'":
                quote = ch
            elif ch in ")]}":
                depth -= 1
            elif ch in "([{":
                depth += 1
                pieces.append((sep, cur))
                sep, cur = "", ""
    pieces.append((sep, cur))
    pieces = [(s, p) for s, p in pieces if p]
    lines: list[str] = []
    line = indent + pieces[0][1]
    for s, piece in pieces[1:]:
        if len(line) + len(s) + len(piece) > width and line.strip():
            lines.append(line)
            line = rest + piece
        else:
            line += s + piece
    lines.append(line)
    if comment:
        if len(lines[-1]) + 4 + len(comment) <= width:
            lines[-1] += "  # " + comment
        else:
            lines += wrap(comment, width, indent=rest + "# ", subsequent=rest + "# ")
    return lines


class Table:
    """Columns with alignment; ``render(width)`` draws a header rule and optional footer rows, fitted
    to ``width``: first the ``flex`` columns shrink (their cells clipped with an ellipsis, down to
    :data:`MIN_FLEX`, or the column's own minimum in ``flex_min``), then the ``drop`` columns are left
    out, in the order given."""

    def __init__(self, columns: Sequence[str], align: str | None = None, title: str | None = None,
                 *, flex: Sequence[str] = (), drop: Sequence[str] = (), flex_min: Mapping[str, int] | None = None):
        self.columns = list(columns)
        self.align = align or ("l" + "r" * (len(columns) - 1))
        self.title = title
        self.flex = [self.columns.index(c) for c in flex]
        self.drop = [self.columns.index(c) for c in drop]
        self.flex_min = {self.columns.index(c): n for c, n in (flex_min or {}).items()}
        self.rows: list[list[str]] = []
        self.footer: list[list[str]] = []

    def add(self, *cells: object) -> None:
        self.rows.append([str(c) for c in cells])

    def add_footer(self, *cells: object) -> None:
        self.footer.append([str(c) for c in cells])

    def natural_width(self) -> int:
        """The columns the table needs to show every column with no cell clipped."""
        _, widths = self._fit(None)
        return sum(widths) + 2 * (len(widths) - 1)

    def shown(self, width: int | None) -> list[str]:
        """The columns :meth:`render` keeps at ``width`` (the others are dropped to fit)."""
        return [self.columns[i] for i in self._fit(width)[0]]

    def widths(self, width: int | None) -> dict[str, int]:
        """Each column :meth:`render` keeps at ``width``, with the characters it gets (a cell longer
        than that is clipped): lets a caller abbreviate a cell its own way before rendering."""
        keep, widths = self._fit(width)
        return {self.columns[i]: w for i, w in zip(keep, widths, strict=True)}

    def set_column(self, column: str, cells: Sequence[str]) -> None:
        """Replace every row's cell in ``column`` (one cell per row, in order)."""
        i = self.columns.index(column)
        if len(cells) != len(self.rows):
            raise ValueError(f"{len(cells)} cells for {len(self.rows)} rows")
        for row, cell in zip(self.rows, cells, strict=True):
            row[i] = cell

    def _fit(self, width: int | None) -> tuple[list[int], list[int]]:
        """(kept column indexes, their widths)."""
        allrows = [self.columns, *self.rows, *self.footer]
        natural = [max(len(r[i]) for r in allrows) for i in range(len(self.columns))]
        keep = list(range(len(self.columns)))
        widths = dict(enumerate(natural))

        def total() -> int:
            return sum(widths[i] for i in keep) + 2 * (len(keep) - 1)

        if width is None:
            return keep, [widths[i] for i in keep]
        for i in self.flex:  # shrink the flexible columns, widest first
            over = total() - width
            if over <= 0:
                break
            widths[i] = max(min(self.flex_min.get(i, MIN_FLEX), natural[i]), len(self.columns[i]),
                            widths[i] - over)
        for i in self.drop:
            if total() <= width:
                break
            keep.remove(i)
            for j in self.flex:  # a dropped column gives its room back to the flexible ones
                widths[j] = min(natural[j], widths[j] + max(0, width - total()))
        return keep, [widths[i] for i in keep]

    def render(self, width: int | None = None) -> str:
        keep, widths = self._fit(width)
        align = [self.align[i] for i in keep]

        def fmt(row: list[str]) -> str:
            cells = [clip(row[i], w) for i, w in zip(keep, widths, strict=True)]
            padded = [(c.ljust(w) if a == "l" else c.rjust(w)) for c, w, a in zip(cells, widths, align, strict=True)]
            return "  ".join(padded).rstrip()

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


def plus_minus(relative: float | None) -> str:
    """`` ±9%``: a figure's validated relative half-width (perf.uncertainty), or nothing without one."""
    return "" if relative is None else f" ±{relative:.0%}"


def deployment_pm(band: FigureBand | None) -> str:
    """`` ±20%``: the half-width of one deployment's figure (a ``perf.uncertainty.FigureBand``): the kernels'
    band with the serving loop's where a loop priced it (``absolute``), else the kernels' alone."""
    if band is None:
        return ""
    return plus_minus(band.absolute.relative if band.absolute is not None else band.relative)
