"""How messages count things: ``1 sequence``, ``2 sequences`` — one helper for every message the
core and the renderers write (never "1 sequences" or "GPU(s)")."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` with ``word``, plural unless ``n`` is 1 (``many`` for irregular plurals)."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def every(n: int, word: str, many: str | None = None, *, own: str = "its") -> str:
    """The whole of a count: ``its one sequence`` / ``all 64 sequences`` (never "all 1 sequences");
    ``own`` is the determiner of the single one (``the one sequence``)."""
    return f"{own} one {word}" if n == 1 else f"all {n:,} {many or word + 's'}"


def more_or_fewer(value: float, reference: float) -> str:
    """``value`` against ``reference`` as a share of the reference: ``4.2% more`` / ``63.2% fewer``.
    One phrasing for a gain and a loss alike, never "1.01x fewer" (a ratio reads as a multiple)."""
    d = value / reference - 1 if reference else 0.0
    return f"{abs(d):.1%} {'more' if d > 0 else 'fewer'}"


def install_hint(extra: str) -> str:
    """How to install an optional extra, from the package index and from a clone of the repository
    (where the package name does not resolve until it is published)."""
    return f"pip install 'quantadvise[{extra}]' (from a clone of the repository: pip install '.[{extra}]')"


def install_forms(extra: str) -> str:
    """The two ways to install an optional extra, for a help text or a doc line that is already in
    brackets: ``from an index: pip install 'quantadvise[gpu]', from a clone: pip install '.[gpu]'``."""
    return f"from an index: pip install 'quantadvise[{extra}]', from a clone: pip install '.[{extra}]'"


def ms(seconds: float | None) -> str:
    """A latency in milliseconds at three significant figures (whole ms from 100 ms): one precision
    for an ITL or TTFT in every line of every output, so a quantity never reads as two numbers."""
    if seconds is None:
        return "-"
    v = seconds * 1e3
    return f"{v:,.0f}" if v >= 99.95 else f"{v:,.1f}" if v >= 9.995 else f"{v:,.2f}"


def usd(value: float | None) -> str:
    """A $ figure (per million tokens, per hour): cents from $1, a tenth of a cent below it."""
    return "-" if value is None else f"{value:,.2f}" if value >= 1 else f"{value:,.3f}"
