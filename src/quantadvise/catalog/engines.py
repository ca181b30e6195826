"""Engine releases (data/engines/<engine>-<version>.yaml: adding a release is adding a file),
checkpoint-format library releases, each release's kernel table (data/kernels/) and start-up memory
facts (data/engine_startup.yaml). A release file is parsed only when that release is asked for."""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..engines.flags import ENGINES, engine_label  # an engine is a name with a flag table; the rest are libraries
from ..engines.versions import ReleaseChoice, choose_release, nearest_version, version_key
from ..errors import DataError, UnknownNameError, format_validation_error
from . import loader
from .trusted import shipped

if TYPE_CHECKING:
    from datetime import date

    from ..engines.data import EngineData
    from ..engines.kv_checks import KvIssue
    from ..engines.library import FormatLibrary




_RELEASE = re.compile(r"(?P<name>.+?)-(?P<version>\d[\w.+]*)")


@cache
def _release_paths() -> dict[str, tuple[str, str]]:
    """Every release on file by id (``vllm-0.33.0``): (name, version), from the table names alone (the
    files of data/engines/ in a checkout, the members of data/engines-compiled/ in a wheel) — a release is parsed
    only when it is asked for."""
    out: dict[str, tuple[str, str]] = {}
    for stem in loader.family("engines").stems():
        m = _RELEASE.fullmatch(stem)
        if m is None:
            raise DataError(f"data/engines/{stem}.yaml: name it <engine>-<version>.yaml")
        out[stem] = (m["name"], m["version"])
    return out


def _is_engine(name: str) -> bool:
    return name in ENGINES


@cache
def _release_doc(doc_id: str) -> dict[str, Any]:
    """One release file, parsed (not yet validated); its id must match its file name."""
    where = f"data/engines/{doc_id}.yaml"
    doc = loader.family_table("engines", doc_id)
    if not isinstance(doc, dict) or "id" not in doc:
        raise DataError(f"{where}: expected a mapping with an id")
    if doc["id"] != doc_id:
        raise DataError(f"{where}: id '{doc['id']}' must match the file name")
    return doc


def engine_names() -> list[str]:
    """Engines with at least one release on file (vllm, sglang)."""
    return sorted({name for name, _ in _release_paths().values() if _is_engine(name)})


@cache
def release_dates(engine: str) -> dict[str, date]:
    """When each release on file of ``engine`` was published (data/engine_releases.yaml, the package index's
    first upload); {} for an engine without dates."""
    from datetime import date as _date

    doc = loader.table("engine_releases.yaml")
    rows = (doc.get("released") or {}).get(_engine_name(engine)) or {}
    try:
        return {str(v): _date.fromisoformat(str(d)) for v, d in rows.items()}
    except ValueError as exc:
        raise DataError(f"data/engine_releases.yaml: {engine}: {exc} (dates are YYYY-MM-DD)") from None


def engine_versions(engine: str) -> list[str]:
    """Releases on file for an engine, oldest first."""
    name = _engine_name(engine)
    return sorted((v for n, v in _release_paths().values() if n == name), key=version_key)


def _engine_name(engine: str) -> str:
    """The engine's name (``sgl`` is sglang): one spelling table and one error for every caller
    (:func:`quantadvise.inputs.engine`), then a data release on file for it."""
    from ..inputs import engine as engine_input
    from ..inputs import engine_hint

    name = engine_input(engine) or ""
    if name not in engine_names():
        raise UnknownNameError("engine", engine, engine_names(), hint=engine_hint())
    return name


def release(engine: str, version: str | None = None) -> ReleaseChoice:
    """The release on file that ``engine`` ``version`` is judged as (``engines.versions.ReleaseChoice``): that
    release; the newest for None / ``latest``; for one not on file (older, newer, a patch or post-release, an
    image tag's, ``nightly``) the closest on file, with the one warning that names both (``.warning``)."""
    name = _engine_name(engine)
    return choose_release(engine_label(name), engine_versions(name), version)


@cache
def get_engine(engine: str, version: str | None = None) -> EngineData:
    """One engine release (an :class:`quantadvise.engines.EngineData`); the newest when ``version``
    is None or 'latest'; a release not on file is the closest on file (:func:`release`, whose ``warning``
    the command shows)."""
    from ..engines.data import EngineData

    choice = release(engine, version)
    name = _engine_name(engine)
    raw = _release_doc(f"{name}-{choice.version}")
    try:
        return shipped(EngineData, raw)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/engines/{name}-{choice.version}.yaml")) from None


@cache
def format_library(library: str = "compressed-tensors", version: str | None = None) -> FormatLibrary:
    """A checkpoint-format library release (:class:`quantadvise.engines.FormatLibrary`)."""
    from ..engines.library import FormatLibrary

    libraries = sorted({n for n, _ in _release_paths().values() if not _is_engine(n)})
    versions = sorted((v for n, v in _release_paths().values() if n == library), key=version_key)
    if not versions:
        raise UnknownNameError("format library", library, libraries)
    if version is not None and version not in versions:
        raise UnknownNameError(f"{library} version", version, versions)
    chosen = _release_doc(f"{library}-{version or versions[-1]}")
    try:
        return shipped(FormatLibrary, chosen)
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, f"data/engines/{chosen['id']}.yaml")) from None


def validate_engines() -> dict[str, int]:
    """Validate every engine and library file; returns rows per file."""
    counts = {}
    for doc_id, (name, version) in _release_paths().items():
        doc = _release_doc(doc_id)
        kind = "engine" if _is_engine(name) else "library"
        if doc.get("kind") != kind:
            raise DataError(f"data/engines/{doc_id}.yaml: kind '{doc.get('kind')}' but the file name says {kind}")
        if kind == "library":
            counts[doc_id] = len(format_library(name, version).presets)
        else:
            counts[doc_id] = len(get_engine(name, version).methods)
            kernel_table(name, version)
            kernel_caveat(name, version)
    return counts


@cache
def _carried(engine: str, version: str) -> dict[str, Any] | None:
    """data/kernels/carried/<engine>-<version>.yaml: the release whose kernel table stands in, and why that is a
    stand-in (written by tools/carry_kernel_tables.py); None when the release has a table of its own."""
    doc = loader.family_table("kernels", f"{engine}-{version}", "carried")
    if doc is None:
        return None
    where = f"data/kernels/carried/{engine}-{version}.yaml"
    if not isinstance(doc, dict) or not isinstance(doc.get("carried_from"), str) or not isinstance(doc.get("caveat"), str):
        raise DataError(f"{where}: expected carried_from and caveat")
    if (doc.get("engine"), doc.get("version")) != (engine, version):
        raise DataError(f"{where}: engine {doc.get('engine')} {doc.get('version')} must match the file name")
    return doc


@cache
def kernel_table(engine: str, version: str) -> Any:
    """Which GEMM kernel ``engine`` ``version`` runs per scheme (an ``engines.kernels.KernelTable``,
    data/kernels/<engine>-<version>.yaml): the release's own table; else the one its carried record names
    (data/kernels/carried/, with a caveat: :func:`kernel_caveat`); else the newest on file not newer than it
    (else the oldest). The table's ``version`` says which release it was read for (callers that must not use
    a stand-in compare it); None when the engine has none."""
    from ..engines.kernels import KernelTable

    fam = loader.family("kernels")
    files = {stem[len(engine) + 1:]: stem for stem in fam.stems() if stem.startswith(f"{engine}-")}
    if not files:
        return None
    differences: list[Any] = []
    if version in files:
        stem = files[version]
    else:
        carried = _carried(engine, version)
        stem = carried["carried_from"] if carried is not None and carried["carried_from"] in files.values() else \
            files[nearest_version(files, version)]
        differences = list(carried.get("differences") or []) if carried is not None else []
    where = f"data/kernels/{stem}.yaml" + (f" with data/kernels/carried/{engine}-{version}.yaml's differences"
                                           if differences else "")
    doc = loader.family_table("kernels", stem)
    try:
        return shipped(KernelTable, {**doc, "differences": differences} if differences else doc)
    except (ValidationError, TypeError) as exc:
        raise DataError(f"{where}: {exc}") from None


def moe_configs(engine: str, version: str) -> Any:
    """The tuned fused-MoE Triton configurations ``engine`` ``version`` ships (an ``engines.moe_configs.MoeConfigs``,
    data/moe_configs/<engine>-<version>.yaml); None when none is on file for exactly this release (another
    release's list would judge the wrong files)."""
    from ..engines.moe_configs import MoeConfigs

    doc = loader.family_table("moe_configs", f"{engine}-{version}")
    if doc is None:
        return None
    try:
        return shipped(MoeConfigs, doc)
    except (ValidationError, TypeError) as exc:
        raise DataError(f"data/moe_configs/{engine}-{version}.yaml: {exc}") from None


def kernel_caveat(engine: str, version: str) -> str | None:
    """Why ``engine`` ``version`` is priced with another release's kernel table (its carried record's caveat:
    which cited selection files changed), None when the release has its own table."""
    table = kernel_table(engine, version)
    if table is None or table.version == version:
        return None
    carried = _carried(engine, version)
    if carried is not None:
        return str(carried["caveat"]) + _differences_words(table)
    return (f"Kernel selection not read for {engine} {version}: priced with data/kernels/{engine}-{table.version}.yaml "
            f"(no record says how its selection code differs)")


def _differences_words(table: Any) -> str:
    """The differences read from the release's own source, as one sentence ('' when none)."""
    def short(kid: str) -> str:
        return str(table.kernel(kid).name.split(" (")[0])

    runs = dict.fromkeys(f"{d.route} runs {short(d.runs)} where that table runs {short(d.kernel)}"
                         for d in table.differences if d.runs is not None)
    unfused = dict.fromkeys(d.route for d in table.differences if d.activation_quant == "unfused")
    parts = list(runs)
    if unfused:
        parts.append(f"the activations of {', '.join(unfused)} layers are quantized by a separate kernel")
    return f" Read in this release's own source, and priced so: {'; '.join(parts)}." if parts else ""


@cache
def flag_vocabulary(engine: str, version: str) -> Any:
    """Every option ``engine`` ``version``'s server parser accepts (an ``engines.vocabulary.FlagVocabulary``,
    data/flags/<engine>-<version>.yaml, joined with its parser sidecar data/flags/parser/<engine>-<version>.yaml:
    the dotted JSON shorthand, -O, --config, env vars), None when that exact release is not on file: a
    neighbouring release's options would call a flag added since "unrecognized"."""
    from ..engines.vocabulary import FlagVocabulary

    stem = f"{engine}-{version}"
    doc = loader.family_table("flags", stem)
    if doc is None:
        return None
    where = f"data/flags/{stem}.yaml"
    side = loader.family_table("flags", stem, "parser")
    try:
        vocab = shipped(FlagVocabulary, {**doc, "launcher": side} if side is not None else doc)
    except (ValidationError, TypeError) as exc:
        raise DataError(f"{where}{' or data/flags/parser/' + stem + '.yaml' if side else ''}: {exc}") from None
    if (vocab.engine, vocab.version) != (engine, version):
        raise DataError(f"{where}: engine {vocab.engine} {vocab.version} must match the file name")
    if vocab.launcher is not None and (vocab.launcher.engine, vocab.launcher.version) != (engine, version):
        raise DataError(f"data/flags/parser/{stem}.yaml: engine {vocab.launcher.engine} {vocab.launcher.version} "
                        "must match the file name")
    return vocab


@cache
def option_names(engine: str, version: str) -> Any:
    """What a command writer needs of ``engine`` ``version``'s option list (``engines.vocabulary.OptionNames``:
    every option string its parser registers, as :func:`flag_vocabulary`'s ``registered``), read from
    data/flags/<engine>-<version>.yaml without making its rows (~430 a release; ``recommend`` spells a few flags
    of two engines' commands); None when that exact release is not on file (or, as :func:`option_list`, its
    file cannot be read). The suite holds it to the vocabulary of every release on file
    (tests/data/test_flag_sources.py)."""
    from ..engines.vocabulary import OptionNames, registered_names

    stem = f"{engine}-{version}"
    doc = loader.family_table("flags", stem)
    if doc is None:
        return None
    try:
        if (doc["engine"], doc["version"]) != (engine, version):
            return None
        rows = ((tuple(r["names"]), r["kind"], r.get("launcher")) for r in doc["options"])
        names = registered_names(rows, bool(doc["parser"].get("enable_disable", False)))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # as option_list: a list it cannot read spells the commands as the flag table does
    return OptionNames(version, frozenset(names))


@cache
def option_list(engine: str, version: str | None, exact: bool = False) -> Any:
    """The option list of ``engine`` ``version`` (None: the newest release on file, the one the gate
    assumes); a release not on file is None when ``exact``, else the closest release's on file (the one
    the gate judges it as: :func:`release`). What the deployment-file readers take as ``options``
    (``artifacts.launch.OptionLists``)."""
    from ..errors import QuantAdviseError

    try:
        vocab = flag_vocabulary(engine, version) if version else None
        if vocab is not None or (exact and version):
            return vocab
        return flag_vocabulary(engine, release(engine, version).version)
    except (QuantAdviseError, IndexError, ValueError):
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
        return shipped(StartupTable, loader.table("engine_startup.yaml"))
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
            out.append(shipped(KvIssue, raw))
        except ValidationError as exc:
            rid = raw.get("id", "?") if isinstance(raw, dict) else "?"
            raise DataError(format_validation_error(exc, f"data/known_issues.yaml issue '{rid}'")) from None
    return tuple(out)


@cache
def stack_release(stack: str, version: str | None = None) -> Any:
    """A serving stack's release whose workers start an engine (an ``engines.launchers.StackRelease``,
    data/flags/launchers/<stack>-<version>.yaml: Dynamo's ``python -m dynamo.vllm`` options and the engine its
    runtime images run); ``version`` None: the newest on file. None when no release of ``stack`` is on file, or
    ``version`` is given and not on file."""
    from ..engines.launchers import STACK_DATA_VERSION, StackRelease

    fam = loader.family("flags")
    stems = [s for s in fam.stems("launchers") if s.startswith(stack + "-")]
    if version is not None:
        stems = [s for s in stems if s == f"{stack}-{version}"]
    if not stems:
        return None
    stem = max(stems, key=lambda s: version_key(s[len(stack) + 1:]))
    where = fam.where(stem, "launchers")
    try:
        rel = shipped(StackRelease, loader.family_table("flags", stem, "launchers"))
    except (ValidationError, TypeError) as exc:
        raise DataError(f"{where}: {exc}") from None
    if (rel.stack, rel.version) != (stack, stem[len(stack) + 1:]) or rel.schema_version != STACK_DATA_VERSION:
        raise DataError(f"{where}: stack {rel.stack} {rel.version} (schema {rel.schema_version}) must match the "
                        f"file name and schema {STACK_DATA_VERSION}")
    return rel
