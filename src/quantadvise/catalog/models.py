"""Bundled models (data/models.yaml and their config.json files) and GPUs (data/hardware.yaml)."""

import json
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError, model_validator

from ..errors import AmbiguousNameError, DataError, UnknownNameError, format_validation_error
from ..results import record
from . import loader
from .loader import Index, Row
from .trusted import shipped

if TYPE_CHECKING:
    from ..hardware import GPU


class ModelRow(Row):
    config: str
    # keys of the model's own config.json that differ from the bundled file ``config`` points at
    # (an instruct release sharing its base's tensors but not its context length); sourced in
    # ``overrides_source``
    config_overrides: dict[str, Any] = Field(default_factory=dict)
    overrides_source: str = ""
    family: str
    published_params: int = Field(gt=0)
    params_source: str
    notes: str = ""

    @model_validator(mode="after")
    def _sourced_overrides(self) -> "ModelRow":
        if self.config_overrides and not self.overrides_source:
            raise ValueError("config_overrides needs overrides_source (where the differing values come from)")
        return self


@cache
def _model_index() -> Index:
    doc = loader.table("models.yaml")
    return Index("model", list(doc.get("models", [])), "data/models.yaml")


def find_bundled_model(name: str) -> ModelRow | None:
    raw = _model_index().get(name)
    if raw is None:
        return None
    try:
        return shipped(ModelRow, raw)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/models.yaml model '{raw['id']}'")) from None


@record
class FoundConfig:
    """Where a model's config.json was found (the report's :class:`~quantadvise.model.arch.ModelSource`
    is built from it): its id, how (bundled, local, cache, hub), the file, and the folder beside it."""

    id: str
    kind: str  # bundled | local | cache | hub
    location: str
    published_params: int | None = None
    params_source: str | None = None
    directory: str | None = None  # folder holding config.json (for sidecar files), when there is one


def bundled_source(name: str) -> tuple[FoundConfig, dict[str, Any]] | None:
    """(where, config.json dict) of a bundled model by id or alias; None when ``name`` is not one (the
    first place ``catalog.hub.resolve_model`` looks, here so a bundled name needs no Hub module)."""
    row = find_bundled_model(name.strip())
    if row is None:
        return None
    return FoundConfig(row.id, "bundled", f"data/{row.config}", row.published_params, row.params_source), \
        bundled_config(row)


def bundled_model_names() -> list[str]:
    return _model_index().names()


def bundled_model_ids() -> list[str]:
    return _model_index().ids()


def bundled_config(row: ModelRow) -> dict[str, Any]:
    path = loader.data_dir() / row.config
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"bundled config {row.config} is unreadable: {exc}") from None
    return {**cfg, **row.config_overrides} if row.config_overrides else cfg


# -------------------------------------------------------------------------------------------------
# GPUs
# -------------------------------------------------------------------------------------------------


@cache
def _gpu_index() -> Index:
    doc = loader.table("hardware.yaml")
    return Index("GPU", list(doc.get("gpus", [])), "data/hardware.yaml")


@cache
def get_gpu(name: str) -> "GPU":
    """A GPU row by id, alias or the name the driver prints (case-insensitive); an unknown name
    suggests the closest GPUs of the same family (``v100s`` -> v100, ``a5000`` -> rtx-a6000 ...)."""
    index = _gpu_index()
    raw = index.get(name)
    if raw is None:
        from ..hardware import family_suggestions, name_matches

        rows = [(r["id"], (r["id"], *r.get("aliases", ()), r.get("name") or r["id"]), r.get("vendor"))
                for r in index.rows]
        hint = "`quantadvise list gpus` lists them"
        matches = name_matches(name, rows)
        if len(matches) > 1:
            raise AmbiguousNameError("GPU", name, matches, hint=hint)
        raise UnknownNameError("GPU", name, index.names(), hint=hint, suggestions=family_suggestions(name, rows))
    from ..hardware import GPU

    try:
        return shipped(GPU, raw)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/hardware.yaml GPU '{raw['id']}'")) from None


def gpu_ids() -> list[str]:
    return _gpu_index().ids()


def gpu_names() -> list[str]:
    """Every GPU id and alias (for validating names without raising)."""
    return _gpu_index().names()


