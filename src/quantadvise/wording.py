"""How messages count things: ``1 sequence``, ``2 sequences`` — one helper for every message the
core and the renderers write (never "1 sequences" or "GPU(s)")."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` with ``word``, plural unless ``n`` is 1 (``many`` for irregular plurals)."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def install_hint(extra: str) -> str:
    """How to install an optional extra, from the package index and from a clone of the repository
    (where the package name does not resolve until it is published)."""
    return f"pip install 'quantadvise[{extra}]' (from a clone of the repository: pip install '.[{extra}]')"
