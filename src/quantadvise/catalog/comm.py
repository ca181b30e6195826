"""Communication figures per GPU system (data/comm.yaml, written by tools/import_comm.py): node facts and
measured collectives, each row validated as :class:`~quantadvise.perf.comm.CommSystem` when first used."""

from __future__ import annotations

from functools import cache

from pydantic import ValidationError

from ..errors import DataError, format_validation_error
from ..perf.comm import CommSystem, PublishedMeasurement
from . import loader
from .trusted import shipped


@cache
def _rows() -> dict[str, dict]:
    doc = loader.table("comm.yaml")
    return {str(r["gpu"]): r for r in doc.get("systems", [])}


@cache
def comm_system(gpu_id: str) -> CommSystem | None:
    """The communication row of a bundled GPU (by its id), or None when the table has none."""
    raw = _rows().get(gpu_id)
    if raw is None:
        return None
    try:
        return shipped(CommSystem, raw)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/comm.yaml system '{gpu_id}'")) from None


def comm_ids() -> list[str]:
    """The GPU ids data/comm.yaml has a row for."""
    return list(_rows())


@cache
def layout_measurements() -> tuple[PublishedMeasurement, ...]:
    """The published multi-GPU measurements the layout model is checked against (data/layout_validation.yaml)."""
    doc = loader.table("layout_validation.yaml")
    out = []
    for raw in doc.get("measurements", []):
        try:
            out.append(shipped(PublishedMeasurement, raw))
        except ValidationError as exc:
            raise DataError(format_validation_error(exc, f"data/layout_validation.yaml '{raw.get('id')}'")) from None
    return tuple(out)
