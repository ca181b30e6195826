"""How messages count things: ``1 sequence``, ``2 sequences`` — one helper for every message the
core and the renderers write (never "1 sequences" or "GPU(s)") — and how they show text that came from
the user (:func:`printable`)."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

# what a terminal would act on rather than show: C0 controls but tab and newline, DEL, C1 controls, the
# bidirectional overrides ("Trojan source"), and lone surrogates (a name that is not UTF-8, as Python
# carries it: surrogate escapes; a JSON "\udcff")
_UNPRINTABLE = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
_SURROGATE = "[\ud800-\udfff]"


@cache
def pattern(source: str) -> re.Pattern[str]:
    """A pattern compiled on first need (the controls' one costs ~0.8 ms: a command's start-up)."""
    return re.compile(source)


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group(0))
    if 0xDC80 <= c <= 0xDCFF:  # the byte a surrogate escape stands for: a file name's own byte
        return f"\\x{c - 0xDC00:02x}"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: str, *, controls: bool = True) -> str:
    """``text`` as it can be shown and written as UTF-8: every byte of a name that is not UTF-8 as
    ``\\xNN`` (``d\\xff/serve.sh``), and with ``controls`` every control character (ESC, CR, NUL ...)
    but tab and newline as ``\\xNN`` (a file or model name cannot colour, move or clear the terminal).
    The one escape of every output: human reports, warnings and errors, JSON, SARIF, JUnit, CSV."""
    if text.replace("\n", "").replace("\t", "").isprintable():
        return text  # every character one str.isprintable shows (all those escaped are not): nothing to escape
    found = pattern(_UNPRINTABLE if controls else _SURROGATE)
    return found.sub(_escape, text) if found.search(text) else text


def printable_doc(doc: Any, *, controls: bool = True) -> Any:
    """A JSON-ready document (dicts, lists, strings ...) with every string, keys too, made
    :func:`printable`."""
    if isinstance(doc, str):
        return printable(doc, controls=controls)
    if isinstance(doc, dict):
        return {printable(k, controls=controls) if isinstance(k, str) else k: printable_doc(v, controls=controls)
                for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [printable_doc(v, controls=controls) for v in doc]
    return doc


# a lone surrogate as json.dumps writes it (ensure_ascii): a name that is not UTF-8 in a JSON document
_JSON_SURROGATE = r"\\ud[89a-f][0-9a-f]{2}"


def json_text(doc: Any, **kw: Any) -> str:
    """``json.dumps(doc)`` (ASCII: control characters are JSON escapes), with a name that is not UTF-8
    as its printable ``\\xNN`` form rather than a lone ``\\udcNN`` a strict reader refuses, and a number that
    is not finite (an infinite KL) as null: JSON has no Infinity or NaN, and strict readers refuse them."""
    import json

    try:
        text = json.dumps(doc, allow_nan=False, **kw)
    except ValueError:
        doc = finite_doc(doc)
        text = json.dumps(doc, **kw)
    return json.dumps(printable_doc(doc, controls=False), **kw) if "\\ud" in text and pattern(_JSON_SURROGATE).search(text) else text


def finite_doc(doc: Any) -> Any:
    """``doc`` with every float that is not finite replaced by None."""
    import math

    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {k: finite_doc(v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [finite_doc(v) for v in doc]
    return doc


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


MOVED = "moved to this GPU's bandwidth and peaks"  # what a model note says of a sibling's tables (perf.siblings)
