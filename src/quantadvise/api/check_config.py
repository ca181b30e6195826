"""Reading the gate's files: the deployment description (``quantadvise.yaml`` or
``[tool.quantadvise]`` in pyproject.toml) with the line of every key, and the baseline.

Found, in order: ``--config FILE``; else walking up from the working directory, in each folder
``.quantadvise.yaml``, ``quantadvise.yaml`` (``.yml`` too) or a ``pyproject.toml`` with a
``[tool.quantadvise]`` table, stopping after the repository root (the folder holding ``.git``).
The schema and its validation live in ``config.py``; this module is the I/O around it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..files import MAX_CONFIG_BYTES, read_text, resolved
from ..gate.config import DeploymentConfig, LoadedConfig, validate

CONFIG_NAMES = (".quantadvise.yaml", "quantadvise.yaml", ".quantadvise.yml", "quantadvise.yml")


def _norm(key: Any) -> str:
    return str(key).replace("-", "_")


def _yaml_lines(node: Any, file: str) -> dict[str, int]:
    """Dotted key path -> 1-based line of every mapping key (list items as ``key.0``); a key given
    twice in one mapping is an error (PyYAML would silently keep the last)."""
    lines: dict[str, int] = {}

    def walk(n: Any, path: str, free_keys: bool) -> None:
        kind = type(n).__name__
        if kind == "MappingNode":
            seen: dict[str, int] = {}
            for k, v in n.value:
                raw = str(k.value)
                name = raw if free_keys else _norm(raw)
                line = k.start_mark.line + 1
                if name in seen:
                    where = f"{path}.{raw}" if path else raw
                    raise ConfigError(f"{file}: line {line}: key '{where}' is given twice (first at line {seen[name]})")
                seen[name] = line
                child = f"{path}.{name}" if path else name
                lines[child] = line
                # task names and rule ids are data, not field names: kept as written
                walk(v, child, free_keys=child in ("accuracy.tasks", "rules"))
        elif kind == "SequenceNode":
            for i, item in enumerate(n.value):
                child = f"{path}.{i}"
                lines[child] = item.start_mark.line + 1
                walk(item, child, False)

    walk(node, "", False)
    return lines




def parse_yaml_config(text: str, file: str) -> tuple[DeploymentConfig, dict[str, int]]:
    """A ``quantadvise.yaml`` text -> (config, key path -> line)."""
    import yaml

    from ..files import check_yaml_nodes, yaml_errors

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with yaml_errors(file):
        nodes = list(yaml.compose_all(text, Loader=loader))
        check_yaml_nodes(nodes, file)  # before anything walks the constructed values (alias bombs)
        docs = list(yaml.load_all(text, Loader=loader))
    nodes = [n for n in nodes if n is not None]
    docs = [d for d in docs if d is not None]
    if len(docs) > 1:
        raise ConfigError(f"{file}: holds {len(docs)} YAML documents; a deployment description is one")
    lines = _yaml_lines(nodes[0], file) if nodes else {}
    return validate(docs[0] if docs else {}, file, lines), lines


_TOML_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_TOML_PART = r"""(?:"[^"]*"|'[^']*'|[A-Za-z0-9_\-]+)"""
_TOML_KEY = re.compile(rf"^\s*({_TOML_PART}(?:\s*\.\s*{_TOML_PART})*)\s*=")


def _toml_lines(text: str, table: str = "tool.quantadvise") -> dict[str, int]:
    """Key path (below ``table``) -> line, for the key/value lines and sub-table headers of a TOML text."""
    lines: dict[str, int] = {}
    current: list[str] | None = None

    def parts(dotted: str) -> list[str]:
        return [p.strip().strip("\"'") for p in re.findall(r"""(?:"[^"]*"|'[^']*'|[^.]+)""", dotted)]

    prefix = parts(table)
    for i, raw in enumerate(text.splitlines(), start=1):
        h = _TOML_HEADER.match(raw)
        if h and not raw.lstrip().startswith("[["):
            p = parts(h.group(1))
            current = p[len(prefix):] if p[:len(prefix)] == prefix else None
            if current:
                lines.setdefault(".".join(_norm(x) for x in current), i)
            continue
        if current is None:
            continue
        k = _TOML_KEY.match(raw)
        if k:
            path = [*current, *parts(k.group(1))]
            free = (len(path) > 2 and path[:2] == ["accuracy", "tasks"]) or path[:1] == ["rules"]
            lines.setdefault(".".join(x if free else _norm(x) for x in path), i)
    return lines


def parse_pyproject(text: str, file: str) -> tuple[DeploymentConfig, dict[str, int]] | None:
    """``[tool.quantadvise]`` of a pyproject.toml text, or None when it has no such table."""
    import tomllib

    try:
        doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as exc:  # ValueError: an integer of more than 4,300 digits
        raise ConfigError(f"{file}: invalid TOML: {str(exc).split(';')[0]}") from None
    table = doc.get("tool", {}).get("quantadvise") if isinstance(doc.get("tool"), dict) else None
    if table is None:
        return None
    lines = _toml_lines(text)
    return validate(table, f"{file} [tool.quantadvise]", lines), lines


# -------------------------------------------------------------------------------------------------
# Files
# -------------------------------------------------------------------------------------------------


def find_config(start: Path) -> Path | None:
    """The nearest configuration walking up from ``start``: a quantadvise.yaml (any of
    :data:`CONFIG_NAMES`) or a pyproject.toml with ``[tool.quantadvise]``; stops after the folder
    holding ``.git``."""
    here = resolved(start)
    for folder in (here, *here.parents):
        for name in CONFIG_NAMES:
            p = folder / name
            if p.is_file():
                return p
        py = folder / "pyproject.toml"
        if py.is_file() and re.search(r"^\s*\[\s*tool\.quantadvise[\].]", read_text(py, MAX_CONFIG_BYTES), re.M):
            return py
        if (folder / ".git").exists():
            return None
    return None




def load_config(path: str | Path, display: str | None = None) -> LoadedConfig:
    """Read and validate one configuration file (YAML, or pyproject.toml's ``[tool.quantadvise]``)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"no such configuration file: {p}", hint="`quantadvise check --init` writes a starter")
    text = read_text(p, MAX_CONFIG_BYTES)
    name = display or str(p)
    if p.name == "pyproject.toml" or p.suffix == ".toml":
        parsed = parse_pyproject(text, name)
        if parsed is None:
            raise ConfigError(f"{name}: has no [tool.quantadvise] table")
    else:
        parsed = parse_yaml_config(text, name)
    cfg, lines = parsed
    return LoadedConfig(cfg, name, lines, str(p.parent))




def read_baseline(path: Path) -> set[str]:
    """The fingerprints a baseline file accepts."""
    from ..files import json_loads, special

    if special(path) is None and not path.exists():
        raise ConfigError(f"cannot read the baseline {path}: No such file or directory",
                          hint="create it with `quantadvise check --write-baseline FILE`")
    doc = json_loads(read_text(path, MAX_CONFIG_BYTES), str(path))
    items = doc.get("findings") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("fingerprint"), str)
                                              for i in items):
        raise ConfigError(f"{path}: key 'findings': expected a list of objects with a 'fingerprint' "
                          "(written by `quantadvise check --write-baseline`)")
    return {i["fingerprint"] for i in items}


def write_text(path: Path, text: str, *, field: str) -> None:
    """Write a file the gate produces (a baseline, a starter config); a failure is one InputError
    (a FIFO no program reads, a socket: never a hang; :func:`~quantadvise.files.write_file`)."""
    from ..files import write_file

    write_file(path, text, "--" + field.replace("_", "-"))


def baseline_text(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2) + "\n"
