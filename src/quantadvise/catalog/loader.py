"""Finding and reading the shipped tables: ``data_dir`` (the package's ``data/`` in a wheel, the
repository's in a checkout), a table parsed once per process (its compiled JSON form when it matches
the YAML, else the YAML with the safe loader), a release family (:class:`Family`: a folder of YAML in a
checkout, one compiled folder in a wheel), user YAML files, and the row and name index every table section uses."""

import os
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import DataError, UnknownNameError, norm_name
from ..results import Out


def data_dir() -> Path:
    """``quantadvise/data`` inside an installed wheel, else the repository's ``data/``."""
    return _data_dir()


@cache
def _data_dir() -> Path:  # found once per process: a command reads a dozen tables
    here = Path(__file__).resolve().parent.parent
    packaged = here / "data"
    if packaged.is_dir():
        return packaged
    repo = here.parent.parent / "data"
    if repo.is_dir():
        return repo
    raise DataError("the quantadvise data tables are missing (reinstall the package)")


def yaml_load(text: str, where: str) -> Any:
    from ..files import yaml_errors
    from .tables import parse_yaml

    with yaml_errors(where):
        return parse_yaml(text)


def load_yaml_file(path: Path) -> Any:
    """Parse a user or data YAML file; errors name the file and line. Alias bombs, recursive and
    absurdly nested documents are refused before anything is built from them."""
    from ..files import MAX_CONFIG_BYTES, check_yaml_text, read_text

    text = read_text(path, MAX_CONFIG_BYTES)
    check_yaml_text(text, str(path))
    return yaml_load(text, str(path))


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
    return yaml_load(text, where)


class Family:
    """A release family, ``data/<name>/`` (engines, flags, kernels; see ``tables.BUNDLES``): the folder of YAML
    tables in a checkout, else its compiled folder ``data/<name>-compiled/`` in a wheel (catalog/tables.py).
    Listing reads names only; a table is parsed (or its member read) only when asked for, once per process
    (:func:`family_table`)."""

    def __init__(self, name: str) -> None:
        from .tables import BUNDLE_SUFFIX

        root = data_dir()
        self.name = name
        self.folder = root / name
        self.compiled: Path | None = None
        if self.folder.is_dir():
            return
        self.compiled = root / (name + BUNDLE_SUFFIX)
        if not self.compiled.is_dir():
            raise DataError(f"data/{name} is missing from the installation (reinstall the package)")

    def where(self, stem: str, sub: str = "") -> str:
        return f"data/{self.name}/{sub + '/' if sub else ''}{stem}.yaml"

    def stems(self, sub: str = "") -> list[str]:
        """The table names (file stems: ``vllm-0.21.0``) directly in ``sub`` ('' or a subfolder), sorted."""
        if self.compiled is None:
            folder = self.folder / sub if sub else self.folder
            return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []
        try:
            names = os.listdir(self.compiled / sub if sub else self.compiled)
        except OSError:
            return []
        return sorted(n[:-5] for n in names if n.endswith(".json"))

    def read(self, stem: str, sub: str = "") -> Any:
        """One table's document; None when the family has no such table."""
        from .tables import BUNDLE_SUFFIX, member_name, read_member

        rel = f"{sub}/{stem}.yaml" if sub else f"{stem}.yaml"
        if self.compiled is None:
            path = self.folder / rel
            return data_yaml(path, self.where(stem, sub)) if path.is_file() else None
        member = member_name(rel)
        if any(part in ("", ".", "..") for part in member.split("/")) or "\\" in member:
            return None  # not a table's path inside the family (as a zip had no such member)
        try:
            raw = (self.compiled / member).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise DataError(f"{self.where(stem, sub)}: its compiled form is unreadable ({exc})") from None
        ok, doc = read_member(raw)
        if not ok:
            raise DataError(f"{self.where(stem, sub)}: its compiled form in data/{self.name}{BUNDLE_SUFFIX}/ is "
                            "corrupt (reinstall the package)")
        return doc


@cache
def family(name: str) -> Family:
    """The release family ``data/<name>`` (opened once per process)."""
    return Family(name)


@cache
def family_table(name: str, stem: str, sub: str = "") -> Any:
    """One table of a release family, parsed once per process (None when it is not on file)."""
    return family(name).read(stem, sub)


@cache
def table(name: str) -> Any:
    """A shipped table (``data/<name>``), read once per process."""
    return data_yaml(data_dir() / name, f"data/{name}")


class Row(Out):
    """Base of every data row: a stable id, aliases, and where the facts come from."""

    __light_config__ = {"extra": "forbid"}
    id: str
    aliases: tuple[str, ...] = ()
    source: str
    as_of: date


class Index:
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
            ids = {str(n): r["id"] for r in self.rows for n in (r["id"], *r.get("aliases", ()))}
            raise UnknownNameError(self.kind, name, self.names(), hint=hint, ids=ids)
        return row


