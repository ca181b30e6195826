"""A plain command line, parsed without typer.

Importing typer (and the parser it carries) and building its adapters costs a cold ``recommend`` a fifth of
its wall time, more than the command's own work beyond its imports. A command listed in :data:`BODIES` runs
without typer when its line is *plain*: every word a declared option of the command, given once (``--name
VALUE``, ``--name=VALUE``, a short ``-x VALUE``, a flag), or an argument in its place, each value unambiguous to
every parser — a decimal integer (``64``), a decimal number (``0.5``), one of a choice's values as declared, or
text of letters, digits and ``_ . / : , + @ = -`` that does not start with ``-`` — and none of the command's
environment variables set. Such a line has one reading, the one typer gives it: the command's values (its
declaration's defaults for the rest) and the names the line gave go straight to the command's typer-free
body. Anything else (``--help``, a short option joined to its value, a value typer would have to interpret,
an option given twice, an extra argument, a variable set, a path option, shell completion) declines, and the
line goes through typer as before (``typer_app.py``): same errors, same words.

The options come from ``fast_spec.py``, written from the typer declaration itself
(``python tools/fast_spec.py``; tests/cli/test_fastpath.py fails when it is stale and holds every line
this module accepts to typer's own parse of it)."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .fast_spec import SPEC

# command -> (module under quantadvise.cli, function): the command's body, its options by parameter name
BODIES: dict[str, tuple[str, str]] = {
    "recommend": ("recommend_run", "run_recommend"),
    "size": ("size_run", "run_size"),
}

_INT = re.compile(r"(?:0|[1-9][0-9]{0,17})", re.ASCII)
_FLOAT = re.compile(r"(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,17})?", re.ASCII)
_TEXT = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./:,+@=-]{0,1023}", re.ASCII)
_NO: Any = object()  # a value the fast path leaves to typer


def fast_command(args: Sequence[str], env: Mapping[str, str]) -> Callable[[], int] | None:
    """The command ``args`` names, bound to its options, when the line is plain (module docstring); else None."""
    if not args or args[0] not in BODIES:
        return None
    spec = SPEC.get(args[0])
    if spec is None:
        return None
    parsed = parse(spec, args[1:], env)
    if parsed is None:
        return None
    module, func = BODIES[args[0]]
    body = getattr(importlib.import_module(f"quantadvise.cli.{module}"), func)
    return lambda: _call(body, *parsed)


def _call(body: Callable[..., Any], values: dict[str, Any], given: frozenset[str]) -> int:
    """The body run as typer runs a command: an end of input while it reads is ``Aborted.`` (exit 1)."""
    try:
        body(given=given, **values)
    except EOFError:
        sys.stderr.write("\nAborted.\n")
        return 1
    return 0


def parse(spec: Mapping[str, Any], words: Sequence[str],
          env: Mapping[str, str]) -> tuple[dict[str, Any], frozenset[str]] | None:
    """Every parameter of the command by name (defaults where not given) and the names the line gave, for a
    plain line; None otherwise. Options and arguments may come in any order, as typer reads them."""
    params = spec["params"]
    if any(var in env for p in params for var in p["envvars"]):
        return None  # a variable's value is typer's to read and report
    by_opt: dict[str, tuple[dict[str, Any], bool]] = {}
    for p in params:
        for o in p["opts"]:
            by_opt[o] = (p, True)
        for o in p.get("off", ()):
            by_opt[o] = (p, False)
    slots = [p for p in params if p.get("positional")]
    values = {p["name"]: _default(p) for p in params}
    given: set[str] = set()
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("-"):  # the next argument
            if not slots:
                return None  # an extra argument: typer's error
            p = slots.pop(0)
            got = _value(p, word)
            if got is _NO:
                return None
            values[p["name"]] = got
            given.add(p["name"])
            i += 1
            continue
        name, joined, value = word.partition("=") if word.startswith("--") else (word, "", "")
        hit = by_opt.get(name)
        if hit is None or hit[0]["name"] in given:
            return None
        p, on = hit
        given.add(p["name"])
        if p["kind"] == "flag":
            if joined:
                return None
            values[p["name"]] = on
            i += 1
            continue
        if not joined:
            if i + 1 >= len(words):
                return None
            value = words[i + 1]
        i += 1 if joined else 2
        got = _value(p, value)
        if got is _NO:
            return None
        values[p["name"]] = got
    return values, frozenset(given)


def _value(p: Mapping[str, Any], text: str) -> Any:
    kind = p["kind"]
    if kind == "int":
        return int(text) if _INT.fullmatch(text) else _NO
    if kind == "float":
        return float(text) if _FLOAT.fullmatch(text) else _NO
    if kind == "str":
        return text if _TEXT.fullmatch(text) else _NO
    if kind == "enum" and text in p["choices"]:
        return _enum(p["enum"])(text)
    return _NO  # a path, a choice spelled otherwise, a kind typer alone reads


def _default(p: Mapping[str, Any]) -> Any:
    d = p["default"]
    return _enum(p["enum"])(d) if p["kind"] == "enum" and d is not None else d


def _enum(where: str) -> Any:
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)
