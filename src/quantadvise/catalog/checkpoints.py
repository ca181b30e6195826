"""Published checkpoints: the bundled index (``data/checkpoints.yaml``, refreshed by hand with
``tools/refresh_checkpoints.py``), validated into :class:`~quantadvise.checkpoint.published.Published`
rows. The same question asked of the Hub live (``--hub``) is ``catalog/hub.py`` (hub_published)."""

from __future__ import annotations

from datetime import date
from functools import cache
from typing import Any

from pydantic import ValidationError

from ..checkpoint.published import Published, Speculator
from ..errors import DataError, format_validation_error, norm_name
from . import loader
from .trusted import shipped

INDEX = "checkpoints.yaml"


def _documents() -> list[Any]:
    """The index's row documents, as read."""
    doc = loader.table(INDEX)
    rows = doc.get("checkpoints") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise DataError(f"data/{INDEX}: expected a 'checkpoints' list")
    return rows


def _row(raw: Any) -> Published:
    try:
        return shipped(Published, raw)
    except ValidationError as exc:
        rid = raw.get("id", "?") if isinstance(raw, dict) else "?"
        raise DataError(format_validation_error(exc, f"data/{INDEX} checkpoint '{rid}'")) from None


@cache
def published_rows() -> tuple[Published, ...]:
    """Every row of the bundled index, validated (unknown keys are errors)."""
    out: list[Published] = []
    seen: set[str] = set()
    for raw in _documents():
        row = _row(raw)
        if norm_name(row.id) in seen:
            raise DataError(f"data/{INDEX}: checkpoint '{row.id}' is listed twice")
        seen.add(norm_name(row.id))
        out.append(row)
    return tuple(out)


@cache
def published_for(model_id: str) -> tuple[Published, ...]:
    """The bundled index's rows for a bundled model (by its data/models.yaml id): only those rows are made (a
    ``recommend`` asks of one model; the index holds ~100 rows). A row whose ``model`` is not text is made to
    report it."""
    key = norm_name(model_id)
    return tuple(_row(raw) for raw in _documents()
                 if not isinstance(raw, dict) or not isinstance(raw.get("model"), str)
                 or norm_name(raw["model"]) == key)


def index_as_of() -> date | None:
    """The newest ``as_of`` of the bundled index."""
    rows = published_rows()
    return max((r.as_of for r in rows), default=None)


@cache
def speculators() -> tuple[Speculator, ...]:
    """Every row of data/speculators.yaml, validated."""
    doc = loader.table("speculators.yaml")
    rows = doc.get("speculators") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise DataError("data/speculators.yaml: expected a 'speculators' list")
    out = []
    for raw in rows:
        try:
            out.append(shipped(Speculator, raw))
        except ValidationError as exc:
            rid = raw.get("id", "?") if isinstance(raw, dict) else "?"
            raise DataError(format_validation_error(exc, f"data/speculators.yaml row '{rid}'")) from None
    return tuple(out)


def speculator_for(model_id: str, asked: str) -> Speculator | None:
    """The published draft of the model as asked (its base model is the name given, or the bundled id)."""
    want = {norm_name(asked), norm_name(model_id)}
    rows = [s for s in speculators() if norm_name(s.model) == norm_name(model_id)]
    exact = [s for s in rows if norm_name(s.base_model) == norm_name(asked)]
    hits = exact or [s for s in rows if norm_name(s.base_model) in want]
    return hits[0] if hits else None
