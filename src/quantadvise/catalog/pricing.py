"""Default $ per GPU-hour per GPU (data/pricing.yaml): list prices of one on-demand offer, each row
with the offer it divides, its source and the day it was read. A user's figure (``--usd-per-gpu-hour``,
``usd_per_gpu_hour:`` in a workload file) always wins; a GPU without a row has no default price."""

from functools import cache
from typing import Literal

from pydantic import Field, ValidationError

from ..errors import DataError, format_validation_error, norm_name
from . import loader
from .loader import Index, Row
from .trusted import shipped


class PriceRow(Row):
    """One GPU's default price: ``id`` is the GPU id of data/hardware.yaml."""

    usd_per_gpu_hour: float = Field(gt=0, allow_inf_nan=False)
    kind: Literal["list price"]
    offer: str  # the instance the figure divides, in words


@cache
def _price_index() -> Index:
    doc = loader.table("pricing.yaml")
    return Index("GPU price", list(doc.get("gpus", [])), "data/pricing.yaml")


@cache
def gpu_price(gpu_id: str) -> PriceRow | None:
    """The default price row of a bundled GPU (by its id), or None when the table has none."""
    raw = _price_index().get(norm_name(gpu_id))
    if raw is None:
        return None
    try:
        return shipped(PriceRow, raw)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/pricing.yaml GPU '{raw['id']}'")) from None


def price_ids() -> list[str]:
    """The GPU ids the pricing table has a row for."""
    return _price_index().ids()
