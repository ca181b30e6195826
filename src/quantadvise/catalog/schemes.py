"""Scheme presets, KV cache presets and on-disk layouts (data/schemes.yaml); user scheme files."""

from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import ConfigError, DataError, QuantAdviseError, SchemeError, format_validation_error
from ..results import plain_numbers
from ..scheme.axes import DeployHints, LayerPolicy, Scheme, TensorQuant
from ..scheme.layout import Layout
from . import loader
from .loader import Index, Row
from .trusted import shipped


class SchemePreset(Row):
    description: str = ""
    weight: TensorQuant | None = None
    activation: TensorQuant | None = None
    kv_cache: TensorQuant | None = None
    accumulation: str | None = None
    policy: LayerPolicy = LayerPolicy.model_construct()  # LayerPolicy(): its validator checks given values
    layout: str | None = None
    deploy: DeployHints = DeployHints.model_construct()  # DeployHints() without building its validator


class KvPreset(Row):
    description: str = ""
    kv_cache: TensorQuant
    deploy: DeployHints = DeployHints.model_construct()  # DeployHints() without building its validator


@cache
def _schemes_doc() -> dict[str, Any]:
    doc = loader.table("schemes.yaml")
    if not isinstance(doc, dict):
        raise DataError("data/schemes.yaml: expected a mapping")
    return doc


@cache
def _scheme_index() -> Index:
    return Index("scheme", list(_schemes_doc().get("schemes", [])), "data/schemes.yaml")


@cache
def _kv_index() -> Index:
    return Index("KV cache dtype", list(_schemes_doc().get("kv_presets", [])), "data/schemes.yaml")


@cache
def layouts() -> dict[str, Layout]:
    out = {}
    for raw in _schemes_doc().get("layouts", []):
        try:
            lay = shipped(Layout, raw)
        except ValidationError as exc:
            raise DataError(format_validation_error(exc, "data/schemes.yaml layouts")) from None
        out[lay.id] = lay
    return out


def scheme_from_preset(p: SchemePreset) -> Scheme:
    lay = None
    if p.layout is not None:
        lay = layouts().get(p.layout)
        if lay is None:
            raise DataError(f"scheme '{p.id}' names unknown layout '{p.layout}'")
    try:
        return Scheme(
            id=p.id,
            weight=p.weight,
            activation=p.activation,
            kv_cache=p.kv_cache,
            accumulation=p.accumulation,
            policy=p.policy,
            layout=lay,
            description=p.description,
        )
    except ValidationError as exc:
        raise SchemeError(format_validation_error(exc, f"scheme '{p.id}'")) from None


@cache
def scheme_preset(name: str) -> SchemePreset:
    raw = _scheme_index().require(name, hint="`quantadvise list schemes` lists them")
    try:
        return shipped(SchemePreset, raw)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/schemes.yaml scheme '{raw['id']}'")) from None


def get_scheme(name: str) -> Scheme:
    """A named scheme preset (id or alias, case-insensitive)."""
    return scheme_from_preset(scheme_preset(name))


def scheme_ids() -> list[str]:
    return _scheme_index().ids()


@cache
def kv_preset(name: str) -> KvPreset:
    raw = _kv_index().require(name, hint="`quantadvise list kv` lists them: " + ", ".join(_kv_index().ids()))
    try:
        return shipped(KvPreset, raw)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/schemes.yaml kv preset '{raw['id']}'")) from None


def get_kv(name: str) -> TensorQuant:
    return kv_preset(name).kv_cache


def scheme_names_all() -> list[str]:
    """Every scheme preset id and alias (for shell completion)."""
    return _scheme_index().names()


def kv_names_all() -> list[str]:
    """Every KV cache preset id and alias (for shell completion)."""
    return _kv_index().names()


def kv_ids() -> list[str]:
    return _kv_index().ids()


def load_scheme_file(path: Path) -> Scheme:
    """A user scheme in YAML: the same keys as a row of data/schemes.yaml (source/as_of optional)."""
    doc = loader.load_yaml_file(path)
    if isinstance(doc, dict) and "schemes" in doc:
        rows = doc["schemes"]
        if not isinstance(rows, list) or len(rows) != 1:
            raise ConfigError(f"{path}: a scheme file holds one scheme (got {len(rows) if isinstance(rows, list) else 'no list'})")
        doc = rows[0]
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a mapping with the scheme's keys")
    doc = dict(doc)
    doc.setdefault("id", path.stem)
    doc.setdefault("source", str(path.name))
    doc.setdefault("as_of", date.today())
    if isinstance(doc.get("layout"), dict):
        lay_raw = dict(doc.pop("layout"))
        lay_raw.setdefault("source", path.name)
        lay_raw.setdefault("as_of", date.today())
        try:
            lay = Layout.model_validate(plain_numbers(Layout, lay_raw))
        except ValidationError as exc:
            raise ConfigError(format_validation_error(exc, f"{path} layout")) from None
        doc["layout"] = None
        return _user_scheme(_validate_user_preset(doc, path), path).model_copy(update={"layout": lay})
    return _user_scheme(_validate_user_preset(doc, path), path)


def _user_scheme(preset: SchemePreset, path: Path) -> Scheme:
    """The scheme a user's preset describes; an unknown format or an impossible combination names the file."""
    try:
        return scheme_from_preset(preset)
    except QuantAdviseError as exc:
        raise ConfigError(f"{path}: {exc.message}", hint=exc.hint) from None


def _validate_user_preset(doc: dict[str, Any], path: Path) -> SchemePreset:
    try:
        return SchemePreset.model_validate(plain_numbers(SchemePreset, doc))
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, str(path))) from None
    except QuantAdviseError as exc:  # a name no table holds (a number format), raised while validating
        raise ConfigError(f"{path}: {exc.message}", hint=exc.hint) from None


def scheme_names(name: str) -> tuple[str, ...]:
    """A preset's id and aliases (empty when ``name`` is not a preset: a user scheme file)."""
    raw = _scheme_index().get(name)
    if raw is None:
        return ()
    return (str(raw["id"]), *(str(a) for a in raw.get("aliases", ())))


