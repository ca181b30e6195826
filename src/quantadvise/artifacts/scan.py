"""Which files a deployment is read from, and the reader each one gets.

:func:`read_paths` walks the named files and directories (the only function in this package that
reads files), :func:`classify` picks each file's reader, :func:`parse_text` runs it. A file that
cannot be parsed is a :class:`~quantadvise.errors.ConfigError` naming the file and line when it was
named explicitly or mentions an engine; otherwise (an unrelated script in a scanned folder) it is
skipped with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from ..errors import ConfigError, InputError
from ..files import exists, read_text
from ..wording import plural
from .dockerfile import parse_dockerfile
from .invocation import DeploymentScan, EngineInvocation
from .launch import ENGINE_MARKER, parse_shell
from .manifests import parse_yaml, yaml_nodes
from .programs import parse_makefile, parse_python

FileKind = Literal["shell", "dockerfile", "yaml", "makefile", "python"]
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache",
                        ".pytest_cache", "dist", "build"})
_DOT_DIRS_READ = frozenset({".github", ".gitlab", ".circleci", ".buildkite"})  # CI definitions launch engines too
MAX_FILE_BYTES = 2_000_000
MAX_SNIFF_BYTES = 200_000  # an extension-less or unknown file is read for a shebang / an engine mention up to this


def classify(path: str | Path, head: str = "") -> FileKind | None:
    """Which parser reads a file, from its name (and first line for extension-less scripts)."""
    name = Path(path).name
    low = name.lower()
    if is_dockerfile_name(low):  # Dockerfile, app.dockerfile: certain
        return "dockerfile"
    if low.endswith((".yaml", ".yml")):  # the extension wins over a name that starts like a Dockerfile's
        return "yaml"
    if low.endswith((".sh", ".bash", ".zsh", ".ksh")):
        return "shell"
    if low in ("makefile", "gnumakefile") or low.endswith(".mk"):
        return "makefile"
    if low.endswith(".py"):
        return "python"
    if low.startswith(("dockerfile", "containerfile")):  # Dockerfile.cuda, dockerfile-old: a guess by name
        return "dockerfile"
    first = head.splitlines()[0] if head else ""
    if first.startswith("#!") and re.search(r"\b(ba|da|k|z)?sh\b", first):
        return "shell"
    if first.startswith("#!") and re.search(r"\bpython[\d.]*\b", first):
        return "python"
    return None


def is_dockerfile_name(name: str) -> bool:
    """A name only a Dockerfile has (``Dockerfile``, ``Containerfile``, ``*.dockerfile``); a name that
    merely starts with one (``Dockerfile.cuda``) is a guess, and a guess that does not parse is skipped."""
    low = name.lower()
    return low in ("dockerfile", "containerfile") or low.endswith((".dockerfile", ".containerfile"))


def parse_text(text: str, file: str, kind: FileKind, *, env: Mapping[str, str] | None = None,
               dotenv: Mapping[str, str] | None = None) -> list[EngineInvocation]:
    if kind == "shell":
        return parse_shell(text, file, env=env)
    if kind == "dockerfile":
        return parse_dockerfile(text, file)
    if kind == "makefile":
        return parse_makefile(text, file, env=env)
    if kind == "python":
        return parse_python(text, file)
    return parse_yaml(text, file, dotenv=dotenv)


def parse_dotenv(text: str) -> dict[str, str]:
    """A compose ``.env`` file: KEY=VALUE lines, ``#`` comments, optional quotes and ``export``."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].strip()
        out[key.strip()] = value
    return out


def _relevant(text: str) -> bool:
    """Whether a file mentions an engine launch or an engine image (its parse errors then matter)."""
    return bool(ENGINE_MARKER.search(text) or re.search(
        r"vllm-openai|lmsysorg/sglang|sglang\.launch_server|vllm\.entrypoints\.|[\"']vllm[\"']\s*,\s*[\"']serve[\"']", text))


def _parses(text: str, file: str) -> bool:
    try:
        yaml_nodes(text, file)
    except ConfigError:
        return False
    return True


def _unreadable(f: Path, kind: FileKind, exc: ConfigError, guessed: bool) -> str:
    """``FILE: why`` for a candidate that did not parse and is skipped."""
    why = str(exc).removeprefix(f"{f}: ").removeprefix(f"{f}:").strip()
    if guessed:
        return f"{f}: named like a Dockerfile, but not one ({why})"
    if kind == "python":
        return f"{f}: {why}; a launch in it is not read (a Python 2 script?)"
    return f"{f}: could not be parsed as {'a ' + kind if kind != 'yaml' else 'YAML'} ({why})"


def _iter_files(root: Path) -> Iterable[Path]:
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).parts
        if any(part in _SKIP_DIRS or (part.startswith(".") and part not in (".", "..", *_DOT_DIRS_READ))
               for part in rel[:-1]):
            continue
        if p.is_file() and not p.is_symlink():
            yield p


def _sniff(f: Path, size: int) -> str | None:
    """A small text file's text (None: too large, binary or unreadable: not a candidate)."""
    if size > MAX_SNIFF_BYTES:
        return None
    try:
        return f.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def read_paths(paths: Sequence[str | Path], *, env: Mapping[str, str] | None = None) -> DeploymentScan:
    """Scan files and directories for engine launches (the only function here that reads files).

    A named file is parsed whatever its name (shell unless it looks like a Dockerfile, YAML, a
    Makefile or Python); a directory contributes its scripts (by extension or shebang),
    Dockerfiles, YAML files (``.github/workflows`` included), Makefiles and Python files. Helm
    chart templates (Go templates, not YAML until rendered) are skipped with a warning; every
    candidate file no reader took is listed in ``files_skipped``.
    """
    invocations: list[EngineInvocation] = []
    scanned: list[str] = []
    warnings: list[str] = []
    skipped: list[str] = []
    templates: list[Path] = []
    if not paths:
        raise InputError("no deployment paths given", field="paths")
    for given in paths:
        root = Path(given)
        if not exists(root):
            raise InputError(f"no such file or directory: {str(root)[:200]}", field="paths")
        explicit = root.is_file()
        files = [root] if explicit else list(_iter_files(root))
        for f in files:
            try:
                size = f.stat().st_size
            except OSError as exc:
                raise ConfigError(f"cannot read {f}: {exc.strerror or exc}") from None
            if size > MAX_FILE_BYTES:
                if explicit:
                    raise InputError(f"{f}: {size:,} bytes is too large for a deployment file", field="paths")
                skipped.append(f"{f}: {size:,} bytes, larger than a deployment file ({MAX_FILE_BYTES:,})")
                continue
            kind = classify(f)
            if kind is None:
                text = read_text(f) if explicit else _sniff(f, size)
                if text is None:
                    continue
                kind = classify(f, text[:200]) or ("shell" if explicit else None)
                if kind is None:
                    if _relevant(text):
                        skipped.append(f"{f}: mentions an engine launch, but no reader takes this kind of file "
                                       "(shell, Dockerfile, YAML, Makefile, Python); name it explicitly to read it as "
                                       "a shell script")
                    continue
            else:
                text = read_text(f)
            if kind == "yaml" and "{{" in text and ("templates" in f.parts or not _parses(text, str(f))):
                templates.append(f)
                skipped.append(f"{f}: a Helm template (not rendered): scan the output of `helm template`")
                continue
            dotenv: dict[str, str] = {}
            if kind == "yaml":
                envfile = f.parent / ".env"
                if envfile.is_file():
                    dotenv = parse_dotenv(read_text(envfile))
                dotenv = {**dotenv, **(env or {})}
            try:
                found = parse_text(text, str(f), kind, env=env, dotenv=dotenv)
            except ConfigError as exc:
                if kind == "yaml" and "{{" in text:  # YAML, but its values are Go template actions
                    templates.append(f)
                    skipped.append(f"{f}: a Helm template (not rendered): scan the output of `helm template`")
                    continue
                guessed = kind == "dockerfile" and not is_dockerfile_name(f.name)
                if not guessed and (explicit or (_relevant(text) and kind != "python")):
                    raise  # a deployment file that does not parse: the gate cannot check it
                why = _unreadable(f, kind, exc, guessed)
                skipped.append(why)
                if explicit or (_relevant(text) and not guessed):  # it may hold a launch: said without -v too
                    warnings.append(f"skipped {why}")
                continue
            scanned.append(str(f))
            invocations.extend(found)
            if not found and _relevant(text):
                skipped.append(f"{f}: mentions an engine, but no launch was found in it (prose, or a command built at "
                               "run time)")
    if templates:
        dirs = sorted({str(t.parent) for t in templates})
        warnings.append(f"skipped {plural(len(templates), 'Helm template')} (not rendered) in {', '.join(dirs)}: "
                        f"scan the chart's values.yaml or the output of `helm template`")
    for inv in invocations:
        warnings.extend(inv.warnings)
    return DeploymentScan(paths=[str(p) for p in paths], files_scanned=scanned, invocations=invocations,
                          warnings=list(dict.fromkeys(warnings)), files_skipped=list(dict.fromkeys(skipped)))
