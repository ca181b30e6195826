"""Engine releases (data/engines/<engine>-<version>.yaml: adding a release is adding a file),
checkpoint-format library releases, each release's kernel table (data/kernels/) and start-up memory
facts (data/engine_startup.yaml). A release file is parsed only when that release is asked for."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..engines.versions import nearest_version, version_key
from ..errors import DataError, UnknownNameError, format_validation_error
from . import loader

if TYPE_CHECKING:
    from ..engines.data import EngineData
    from ..engines.kv_checks import KvIssue
    from ..engines.library import FormatLibrary




_RELEASE = re.compile(r"(?P<name>.+?)-(?P<version>\d[\w.+]*)")


@cache
def _release_paths() -> dict[str, tuple[str, str, Path]]:
    """Every data/engines/*.yaml by id (``vllm-0.33.0``): (name, version, path), from the file names
    alone — a release file is parsed only when that release is asked for."""
    folder = loader.data_dir() / "engines"
    if not folder.is_dir():
        raise DataError("data/engines is missing from the installation")
    out: dict[str, tuple[str, str, Path]] = {}
    for path in sorted(folder.glob("*.yaml")):
        m = _RELEASE.fullmatch(path.stem)
        if m is None:
            raise DataError(f"data/engines/{path.name}: name it <engine>-<version>.yaml")
        out[path.stem] = (m["name"], m["version"], path)
    return out


def _is_engine(name: str) -> bool:
    from ..engines.flags import ENGINES  # an engine is a name with a flag table; the rest are libraries

    return name in ENGINES


@cache
def _release_doc(doc_id: str) -> dict[str, Any]:
    """One release file, parsed (not yet validated); its id must match its file name."""
    _, _, path = _release_paths()[doc_id]
    where = f"data/engines/{path.name}"
    doc = loader.data_yaml(path, where)
    if not isinstance(doc, dict) or "id" not in doc:
        raise DataError(f"{where}: expected a mapping with an id")
    if doc["id"] != doc_id:
        raise DataError(f"{where}: id '{doc['id']}' must match the file name")
    return doc


def engine_names() -> list[str]:
    """Engines with at least one release on file (vllm, sglang)."""
    return sorted({name for name, _, _ in _release_paths().values() if _is_engine(name)})


def engine_versions(engine: str) -> list[str]:
    """Releases on file for an engine, oldest first."""
    name = _engine_name(engine)
    return sorted((v for n, v, _ in _release_paths().values() if n == name), key=version_key)


def _engine_name(engine: str) -> str:
    """The engine's name (``sgl`` is sglang): one spelling table and one error for every caller
    (:func:`quantadvise.inputs.engine`), then a data release on file for it."""
    from ..inputs import engine as engine_input
    from ..inputs import engine_hint

    name = engine_input(engine) or ""
    if name not in engine_names():
        raise UnknownNameError("engine", engine, engine_names(), hint=engine_hint())
    return name


@cache
def get_engine(engine: str, version: str | None = None) -> EngineData:
    """One engine release (an :class:`quantadvise.engines.EngineData`); the newest when ``version``
    is None or 'latest'."""
    from ..engines.data import EngineData

    name = _engine_name(engine)
    versions = engine_versions(name)
    if version is None or version.strip().lower() in ("", "latest"):
        version = versions[-1]
    version = version.strip().removeprefix("v")
    if version not in versions:
        raise UnknownNameError(f"{name} version", version, versions,
                               hint=f"{name} releases on file: {', '.join(versions)} (add one: docs/data.md)")
    raw = _release_doc(f"{name}-{version}")
    try:
        return EngineData.model_validate(raw)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/engines/{name}-{version}.yaml")) from None


@cache
def format_library(library: str = "compressed-tensors", version: str | None = None) -> FormatLibrary:
    """A checkpoint-format library release (:class:`quantadvise.engines.FormatLibrary`)."""
    from ..engines.library import FormatLibrary

    libraries = sorted({n for n, _, _ in _release_paths().values() if not _is_engine(n)})
    versions = sorted((v for n, v, _ in _release_paths().values() if n == library), key=version_key)
    if not versions:
        raise UnknownNameError("format library", library, libraries)
    if version is not None and version not in versions:
        raise UnknownNameError(f"{library} version", version, versions)
    chosen = _release_doc(f"{library}-{version or versions[-1]}")
    try:
        return FormatLibrary.model_validate(chosen)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/engines/{chosen['id']}.yaml")) from None


def validate_engines() -> dict[str, int]:
    """Validate every engine and library file; returns rows per file."""
    counts = {}
    for doc_id, (name, version, _) in _release_paths().items():
        doc = _release_doc(doc_id)
        kind = "engine" if _is_engine(name) else "library"
        if doc.get("kind") != kind:
            raise DataError(f"data/engines/{doc_id}.yaml: kind '{doc.get('kind')}' but the file name says {kind}")
        if kind == "library":
            counts[doc_id] = len(format_library(name, version).presets)
        else:
            counts[doc_id] = len(get_engine(name, version).methods)
    return counts


@cache
def kernel_table(engine: str, version: str) -> Any:
    """Which GEMM kernel ``engine`` ``version`` runs per scheme (an ``engines.kernels.KernelTable``,
    data/kernels/<engine>-<version>.yaml): the release's own file (every release in data/engines/ has one),
    else the newest on file not newer than it (else the oldest), whose ``version`` says which release it
    was read for (callers that must not use a stand-in compare it); None when the engine has none."""
    from ..engines.kernels import KernelTable

    files = {p.stem[len(engine) + 1:]: p for p in (loader.data_dir() / "kernels").glob(f"{engine}-*.yaml")}
    if not files:
        return None
    path = files[nearest_version(files, version)]
    try:
        return KernelTable.model_validate(loader.data_yaml(path, f"data/kernels/{path.name}"))
    except (ValidationError, TypeError) as exc:
        raise DataError(f"data/kernels/{path.name}: {exc}") from None


@cache
def flag_vocabulary(engine: str, version: str) -> Any:
    """Every option ``engine`` ``version``'s server parser accepts (an ``engines.vocabulary.FlagVocabulary``,
    data/flags/<engine>-<version>.yaml), None when that exact release is not on file: a neighbouring
    release's options would call a flag added since "unrecognized"."""
    from ..engines.vocabulary import FlagVocabulary

    path = loader.data_dir() / "flags" / f"{engine}-{version}.yaml"
    if not path.is_file():
        return None
    where = f"data/flags/{path.name}"
    try:
        vocab = FlagVocabulary.model_validate(loader.data_yaml(path, where))
    except (ValidationError, TypeError) as exc:
        raise DataError(f"{where}: {exc}") from None
    if (vocab.engine, vocab.version) != (engine, version):
        raise DataError(f"{where}: engine {vocab.engine} {vocab.version} must match the file name")
    return vocab


@cache

def option_list(engine: str, version: str | None, exact: bool = False) -> Any:
    """The option list of ``engine`` ``version`` (None: the newest release on file, the one the gate
    assumes); a release not on file is None when ``exact``, else the newest's. What the deployment-file
    readers take as ``options`` (``artifacts.launch.OptionLists``)."""
    from ..errors import QuantAdviseError

    try:
        vocab = flag_vocabulary(engine, version) if version else None
        if vocab is not None or (exact and version):
            return vocab
        return flag_vocabulary(engine, engine_versions(engine)[-1])
    except (QuantAdviseError, IndexError):
        return None

def engine_startup(engine: str, version: str) -> Any:
    """The start-up memory facts (``engines.startup.StartupFacts``, data/engine_startup.yaml) of ``engine``
    ``version``, else of the closest older release on file (else the oldest)."""
    from ..engines.startup import pick_release

    return pick_release(_startup_table(), engine, version)


@cache
def _startup_table() -> Any:
    """data/engine_startup.yaml, validated once per process (``recommend`` asks it once per engine)."""
    from ..engines.startup import StartupTable

    try:
        return StartupTable.model_validate(loader.table("engine_startup.yaml"))
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, "data/engine_startup.yaml")) from None


@cache
def kv_issues() -> tuple[KvIssue, ...]:
    """The known KV-cache issues of data/known_issues.yaml, validated."""
    from ..engines.kv_checks import KvIssue

    doc = loader.table("known_issues.yaml")
    rows = doc.get("kv_issues") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise DataError("data/known_issues.yaml: expected a 'kv_issues' list")
    out = []
    for raw in rows:
        try:
            out.append(KvIssue.model_validate(raw))
        except ValidationError as exc:
            rid = raw.get("id", "?") if isinstance(raw, dict) else "?"
            raise DataError(format_validation_error(exc, f"data/known_issues.yaml issue '{rid}'")) from None
    return tuple(out)
