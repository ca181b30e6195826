"""The only reader of the shipped ``data/`` tables.

Each table is read once per process (from its compiled JSON form in a wheel install, else parsed as
YAML with the safe loader; see ``tables.py``) and each row is validated by a
pydantic model with ``extra="forbid"`` when it is first used; ``validate_all()`` validates every
row (the data tests call it). Names resolve case-insensitively through ids and aliases, treating
``_`` and ``-`` alike, and an unknown name suggests the closest ones.
"""

from __future__ import annotations

import json
from datetime import date
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import (
    ConfigError,
    DataError,
    SchemeError,
    UnknownNameError,
    format_validation_error,
    norm_name,
)
from .layout import Layout
from .scheme import DeployHints, LayerPolicy, Scheme, TensorQuant

if TYPE_CHECKING:  # imported where used: `size` needs neither
    from .engines.data import EngineData, FormatLibrary
    from .evals.priors import AccuracyRule
    from .hardware import GPU
    from .perf.profiles import PerfProfile


def data_dir() -> Path:
    """``quantadvise/data`` inside an installed wheel, else the repository's ``data/``."""
    here = Path(__file__).resolve().parent
    packaged = here / "data"
    if packaged.is_dir():
        return packaged
    repo = here.parent.parent / "data"
    if repo.is_dir():
        return repo
    raise DataError("the quantadvise data tables are missing (reinstall the package)")


def _yaml_load(text: str, where: str) -> Any:
    import yaml

    from .tables import parse_yaml

    try:
        return parse_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where}:{line}: invalid YAML: {problem}") from None


def load_yaml_file(path: Path) -> Any:
    """Parse a user or data YAML file; errors name the file and line."""
    from .files import read_text

    return _yaml_load(read_text(path), str(path))


def data_yaml(path: Path, where: str) -> Any:
    """A shipped YAML table, parsed: from its compiled JSON form (written beside it when the wheel is
    built, see ``tables.py``) when that was compiled from exactly these bytes, else from the YAML.
    Neither path can run code; there is no cache outside the installation."""
    from .tables import SUFFIX, load_compiled

    try:
        raw = path.read_bytes()
    except OSError:
        raise DataError(f"{where} is missing from the installation") from None
    try:
        compiled = path.with_name(path.name + SUFFIX).read_bytes()
    except OSError:
        compiled = None
    if compiled is not None:
        ok, doc = load_compiled(raw, compiled)
        if ok:
            return doc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(f"{where} is not UTF-8 text") from None
    return _yaml_load(text, where)


@cache
def _table(name: str) -> Any:
    return data_yaml(data_dir() / name, f"data/{name}")


class Row(BaseModel):
    """Base of every data row: a stable id, aliases, and where the facts come from."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    id: str
    aliases: tuple[str, ...] = ()
    source: str
    as_of: date


class _Index:
    """id/alias -> raw row dict, built once per table section."""

    def __init__(self, kind: str, rows: list[dict[str, Any]], where: str):
        self.kind = kind
        self.rows = rows
        self.by_name: dict[str, dict[str, Any]] = {}
        for row in rows:
            if not isinstance(row, dict) or "id" not in row:
                raise DataError(f"{where}: every {kind} row needs an id")
            for n in (row["id"], *row.get("aliases", ())):
                key = norm_name(str(n))
                other = self.by_name.get(key)
                if other is not None and other is not row:
                    raise DataError(f"{where}: name '{n}' is used by both '{other['id']}' and '{row['id']}'")
                self.by_name[key] = row

    def ids(self) -> list[str]:
        return [r["id"] for r in self.rows]

    def names(self) -> list[str]:
        out = []
        for r in self.rows:
            out.append(r["id"])
            out.extend(r.get("aliases", ()))
        return out

    def get(self, name: str) -> dict[str, Any] | None:
        return self.by_name.get(norm_name(name))

    def require(self, name: str, hint: str | None = None) -> dict[str, Any]:
        row = self.get(name)
        if row is None:
            raise UnknownNameError(self.kind, name, self.names(), hint=hint)
        return row


# -------------------------------------------------------------------------------------------------
# Schemes
# -------------------------------------------------------------------------------------------------


class SchemePreset(Row):
    description: str = ""
    weight: TensorQuant | None = None
    activation: TensorQuant | None = None
    kv_cache: TensorQuant | None = None
    accumulation: str | None = None
    policy: LayerPolicy = LayerPolicy()
    layout: str | None = None
    deploy: DeployHints = DeployHints()


class KvPreset(Row):
    description: str = ""
    kv_cache: TensorQuant
    deploy: DeployHints = DeployHints()


@cache
def _schemes_doc() -> dict[str, Any]:
    doc = _table("schemes.yaml")
    if not isinstance(doc, dict):
        raise DataError("data/schemes.yaml: expected a mapping")
    return doc


@cache
def _scheme_index() -> _Index:
    return _Index("scheme", list(_schemes_doc().get("schemes", [])), "data/schemes.yaml")


@cache
def _kv_index() -> _Index:
    return _Index("KV cache dtype", list(_schemes_doc().get("kv_presets", [])), "data/schemes.yaml")


@cache
def layouts() -> dict[str, Layout]:
    out = {}
    for raw in _schemes_doc().get("layouts", []):
        try:
            lay = Layout.model_validate(raw)
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
    raw = _scheme_index().require(name, hint="`quantadvise size --help` lists the presets")
    try:
        return SchemePreset.model_validate(raw)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/schemes.yaml scheme '{raw['id']}'")) from None


def get_scheme(name: str) -> Scheme:
    """A named scheme preset (id or alias, case-insensitive)."""
    return scheme_from_preset(scheme_preset(name))


def scheme_ids() -> list[str]:
    return _scheme_index().ids()


@cache
def kv_preset(name: str) -> KvPreset:
    raw = _kv_index().require(name, hint="KV presets: " + ", ".join(_kv_index().ids()))
    try:
        return KvPreset.model_validate(raw)
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
    doc = load_yaml_file(path)
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
            lay = Layout.model_validate(lay_raw)
        except ValidationError as exc:
            raise ConfigError(format_validation_error(exc, f"{path} layout")) from None
        doc["layout"] = None
        preset = _validate_user_preset(doc, path)
        return scheme_from_preset(preset).model_copy(update={"layout": lay})
    return scheme_from_preset(_validate_user_preset(doc, path))


def _validate_user_preset(doc: dict[str, Any], path: Path) -> SchemePreset:
    try:
        return SchemePreset.model_validate(doc)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, str(path))) from None


# -------------------------------------------------------------------------------------------------
# Bundled models
# -------------------------------------------------------------------------------------------------


class ModelRow(Row):
    config: str
    family: str
    published_params: int = Field(gt=0)
    params_source: str
    notes: str = ""


@cache
def _model_index() -> _Index:
    doc = _table("models.yaml")
    return _Index("model", list(doc.get("models", [])), "data/models.yaml")


def find_bundled_model(name: str) -> ModelRow | None:
    raw = _model_index().get(name)
    if raw is None:
        return None
    try:
        return ModelRow.model_validate(raw)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/models.yaml model '{raw['id']}'")) from None


def bundled_model_names() -> list[str]:
    return _model_index().names()


def bundled_model_ids() -> list[str]:
    return _model_index().ids()


def bundled_config(row: ModelRow) -> dict[str, Any]:
    path = data_dir() / row.config
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"bundled config {row.config} is unreadable: {exc}") from None


# -------------------------------------------------------------------------------------------------
# GPUs
# -------------------------------------------------------------------------------------------------


@cache
def _gpu_index() -> _Index:
    doc = _table("hardware.yaml")
    return _Index("GPU", list(doc.get("gpus", [])), "data/hardware.yaml")


@cache
def get_gpu(name: str) -> GPU:
    """A GPU row by id, alias or the name the driver prints (case-insensitive)."""
    raw = _gpu_index().require(name, hint="`quantadvise roofline --help` lists the GPUs")
    from .hardware import GPU

    try:
        return GPU.model_validate(raw)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/hardware.yaml GPU '{raw['id']}'")) from None


def gpu_ids() -> list[str]:
    return _gpu_index().ids()


def gpu_names() -> list[str]:
    """Every GPU id and alias (for validating names without raising)."""
    return _gpu_index().names()


def scheme_names(name: str) -> tuple[str, ...]:
    """A preset's id and aliases (empty when ``name`` is not a preset: a user scheme file)."""
    raw = _scheme_index().get(name)
    if raw is None:
        return ()
    return (str(raw["id"]), *(str(a) for a in raw.get("aliases", ())))


# -------------------------------------------------------------------------------------------------
# Performance (efficiency) profiles for the roofline
# -------------------------------------------------------------------------------------------------


@cache
def default_perf_profile() -> PerfProfile:
    """The shipped efficiency profile, data/perf_profile.yaml."""
    from .perf.profiles import parse_profile

    try:
        return parse_profile(_table("perf_profile.yaml"), "data/perf_profile.yaml")
    except ConfigError as exc:
        raise DataError(str(exc)) from None


def load_perf_profile(path: Path) -> PerfProfile:
    """A user ``--profile FILE`` (same format as data/perf_profile.yaml), or the name of a profile
    measured on a real GPU and shipped under data/profiles/ (``h200-2026-11-29``) when no such
    file exists."""
    from .perf.profiles import parse_profile

    p = Path(path)
    if not p.exists() and p.parent == Path("."):
        shipped = shipped_profile_paths()
        key = norm_name(p.name.removesuffix(".yaml").removesuffix(".yml"))
        if key in shipped:
            return parse_profile(load_yaml_file(shipped[key]), f"data/profiles/{shipped[key].name}")
    return parse_profile(load_yaml_file(p), str(path))


def shipped_profile_paths(root: Path | None = None) -> dict[str, Path]:
    """Profiles measured by ``quantadvise calibrate`` on real GPUs and shipped as data
    (data/profiles/*.yaml), by file stem."""
    folder = (root or data_dir()) / "profiles"
    if not folder.is_dir():
        return {}
    return {norm_name(f.stem): f for f in sorted(folder.glob("*.yaml"))}


# -------------------------------------------------------------------------------------------------
# Accuracy priors
# -------------------------------------------------------------------------------------------------


@cache
def accuracy_rules() -> tuple[AccuracyRule, ...]:
    """Published accuracy evidence the recommender applies as a veto (data/accuracy.yaml)."""
    from .evals.priors import AccuracyRule

    doc = _table("accuracy.yaml")
    out = []
    for raw in doc.get("rules", []):
        try:
            out.append(AccuracyRule.model_validate(raw))
        except ValidationError as exc:
            raise DataError(format_validation_error(exc, f"data/accuracy.yaml rule '{raw.get('id')}'")) from None
    return tuple(out)


# -------------------------------------------------------------------------------------------------
# Validation of everything (tests, `quantadvise data check`)
# -------------------------------------------------------------------------------------------------


def validate_all() -> dict[str, int]:
    """Validate every row of every table; returns row counts per table."""
    counts = {"layouts": len(layouts())}
    for sid in scheme_ids():
        scheme_from_preset(scheme_preset(sid))
    counts["schemes"] = len(scheme_ids())
    for kid in kv_ids():
        kv_preset(kid)
    counts["kv_presets"] = len(kv_ids())
    for mid in bundled_model_ids():
        row = find_bundled_model(mid)
        assert row is not None
        bundled_config(row)
    counts["models"] = len(bundled_model_ids())
    for gid in gpu_ids():
        get_gpu(gid)
    counts["gpus"] = len(gpu_ids())
    default_perf_profile()
    counts["perf_profiles"] = 1
    for path in shipped_profile_paths().values():
        from .perf.profiles import parse_profile

        try:
            prof = parse_profile(load_yaml_file(path), f"data/profiles/{path.name}")
        except ConfigError as exc:
            raise DataError(str(exc)) from None
        for entry in prof.gpus:
            get_gpu(entry.gpu)
            if entry.calibration is None or entry.calibration.provenance.simulated:
                raise DataError(f"data/profiles/{path.name}: a shipped profile must hold a calibration measured "
                                "on a real GPU (simulated ones belong in tests/fixtures)")
        counts["perf_profiles"] += 1
    counts["accuracy_rules"] = len(accuracy_rules())
    return counts


# -------------------------------------------------------------------------------------------------
# Engines (data/engines/<engine>-<version>.yaml; adding a release is adding a file)
# -------------------------------------------------------------------------------------------------

_ENGINE_ALIASES = {"vllm": "vllm", "sglang": "sglang", "sgl": "sglang", "sgl-project": "sglang"}


def _version_key(version: str) -> tuple[int | str, ...]:
    return tuple(int(p) if p.isdigit() else p for p in version.replace("-", ".").split("."))


@cache
def _engine_files() -> dict[str, dict[str, Any]]:
    """Every data/engines/*.yaml, by id, parsed (not yet validated)."""
    folder = data_dir() / "engines"
    if not folder.is_dir():
        raise DataError("data/engines is missing from the installation")
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.yaml")):
        where = f"data/engines/{path.name}"
        doc = data_yaml(path, where)
        if not isinstance(doc, dict) or "id" not in doc:
            raise DataError(f"{where}: expected a mapping with an id")
        if f"{doc['id']}.yaml" != path.name:
            raise DataError(f"{where}: id '{doc['id']}' must match the file name")
        out[doc["id"]] = doc
    return out


def engine_names() -> list[str]:
    """Engines with at least one release on file (vllm, sglang)."""
    return sorted({d["engine"] for d in _engine_files().values() if d.get("kind") == "engine"})


def engine_versions(engine: str) -> list[str]:
    """Releases on file for an engine, oldest first."""
    name = _engine_name(engine)
    vs = [d["version"] for d in _engine_files().values() if d.get("kind") == "engine" and d["engine"] == name]
    return sorted(vs, key=_version_key)


def _engine_name(engine: str) -> str:
    key = engine.strip().lower()
    name = _ENGINE_ALIASES.get(key, key)
    if name not in engine_names():
        raise UnknownNameError("engine", engine, engine_names(), hint="engines on file: " + ", ".join(engine_names()))
    return name


@cache
def get_engine(engine: str, version: str | None = None) -> EngineData:
    """One engine release (an :class:`quantadvise.engines.EngineData`); the newest when ``version``
    is None or 'latest'."""
    from .engines.data import EngineData

    name = _engine_name(engine)
    versions = engine_versions(name)
    if version is None or version.strip().lower() in ("", "latest"):
        version = versions[-1]
    version = version.strip().removeprefix("v")
    if version not in versions:
        raise UnknownNameError(f"{name} version", version, versions,
                               hint=f"{name} releases on file: {', '.join(versions)} (add one: docs/data.md)")
    raw = _engine_files()[f"{name}-{version}"]
    try:
        return EngineData.model_validate(raw)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/engines/{name}-{version}.yaml")) from None


@cache
def format_library(library: str = "compressed-tensors", version: str | None = None) -> FormatLibrary:
    """A checkpoint-format library release (:class:`quantadvise.engines.FormatLibrary`)."""
    from .engines.data import FormatLibrary

    docs = [d for d in _engine_files().values() if d.get("kind") == "library" and d.get("library") == library]
    if not docs:
        raise UnknownNameError("format library", library, sorted({d.get("library", "") for d in
                                                                   _engine_files().values() if d.get("library")}))
    docs.sort(key=lambda d: _version_key(d["version"]))
    chosen = docs[-1] if version is None else next((d for d in docs if d["version"] == version), None)
    if chosen is None:
        raise UnknownNameError(f"{library} version", version or "", [d["version"] for d in docs])
    try:
        return FormatLibrary.model_validate(chosen)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/engines/{chosen['id']}.yaml")) from None


def validate_engines() -> dict[str, int]:
    """Validate every engine and library file; returns rows per file."""
    counts = {}
    for doc_id, doc in _engine_files().items():
        if doc.get("kind") == "library":
            lib = format_library(doc["library"], doc["version"])
            counts[doc_id] = len(lib.presets)
        else:
            eng = get_engine(doc["engine"], doc["version"])
            counts[doc_id] = len(eng.methods)
    return counts
