"""Engine launches in Makefiles and Python launchers.

- A **Makefile**'s recipe lines (tab-indented under a target, ``\\`` continuations joined, the
  ``@ - +`` prefixes dropped) are shell commands once make has expanded its variables: ``$(NAME)``
  and ``${NAME}`` from ``NAME = / := / ?= / += value`` lines (``$$`` is a literal ``$``); a variable
  make does not define here stays a run-time reference (QA110).
- A **Python launcher** starts the engine with ``subprocess.run / Popen / call / check_call /
  check_output``, ``os.execvp / execv / execl ...`` or ``asyncio.create_subprocess_exec``: an argv of
  literal strings (a list, a tuple or positional arguments; ``sys.executable`` is ``python``), or one
  literal command string (``shell=True``, or ``shlex.split("...")``). The source is parsed with
  :mod:`ast`, never run; a part that is not a literal is a run-time value (QA110).

Pure over text; the words keep their file lines.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

from .invocation import EngineInvocation
from .launch import LaunchContext, invocation_from_words, pip_versions, with_version
from .shell import Word, split_shell

# -------------------------------------------------------------------------------------------------
# Makefiles
# -------------------------------------------------------------------------------------------------

_MAKE_ASSIGN = re.compile(r"^(?:export\s+|override\s+)*([A-Za-z_][A-Za-z0-9_.-]*)\s*(::?=|\?=|\+=|=)\s*(.*)$")
_MAKE_RULE = re.compile(r"^[^\s#=][^=]*?:(?!=)")
_MAKE_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)|\$\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
MAX_MAKE_DEPTH = 8  # variables referring to variables: deeper than this is left unexpanded


def _make_expand(text: str, vars_: Mapping[str, str], depth: int = 0) -> str:
    """Make's expansion of ``$(NAME)`` / ``${NAME}`` / ``$$``; an unknown name stays ``$(NAME)`` (a
    command substitution to the shell: unresolved)."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "\x00"  # a literal $ for the shell, restored after expansion
        name = m.group(1) or m.group(2)
        if name in vars_ and depth < MAX_MAKE_DEPTH:
            return _make_expand(vars_[name], vars_, depth + 1)
        return f"$({name})"

    return _MAKE_REF.sub(sub, text) if depth else _MAKE_REF.sub(sub, text).replace("\x00", "$")


def parse_makefile(text: str, file: str, *, env: Mapping[str, str] | None = None) -> list[EngineInvocation]:
    """Engine launches in a Makefile's recipes."""
    lines = text.splitlines()
    vars_: dict[str, str] = {}
    recipes: list[tuple[str, list[int]]] = []  # (joined recipe line, the physical lines it spans)
    in_rule = False
    i = 0
    while i < len(lines):
        start = i
        raw = lines[i]
        joined = raw
        while joined.endswith("\\") and i + 1 < len(lines):
            i += 1
            joined = joined[:-1] + " \\\n" + lines[i].lstrip("\t")
        i += 1
        span = list(range(start + 1, i + 1))
        if raw.startswith("\t") and in_rule:
            body = joined.lstrip("\t").lstrip("@-+ ")
            recipes.append((body, span))
            continue
        stripped = joined.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _MAKE_ASSIGN.match(stripped)
        if m and not _MAKE_RULE.match(stripped.split("=", 1)[0] + "="):
            name, op, value = m.groups()
            value = value.split(" #", 1)[0].replace("\\\n", " ").strip()
            if op == "?=" and name in vars_:
                continue
            vars_[name] = (vars_.get(name, "") + " " + value).strip() if op == "+=" else value
            in_rule = False
            continue
        in_rule = bool(_MAKE_RULE.match(stripped))
    out: list[EngineInvocation] = []
    ctx = LaunchContext(file=file, source="makefile")
    known = {k: v for k, v in (env or {}).items()}
    for body, span in recipes:
        expanded = _make_expand(body, vars_)
        for words in split_shell(expanded, file, env=known, line_map=span):
            inv = invocation_from_words(words, ctx)
            if inv is not None:
                out.append(inv)
    versions = pip_versions(text)
    return [with_version(inv, versions) for inv in out]


# -------------------------------------------------------------------------------------------------
# Python launchers
# -------------------------------------------------------------------------------------------------

_ARGV_CALLS = frozenset({"run", "call", "check_call", "check_output", "Popen"})  # subprocess.*(argv, ...)
_EXEC_ARGV = frozenset({"execv", "execvp", "execve", "execvpe", "spawnv", "spawnvp", "spawnve", "spawnvpe"})
_EXEC_VARARGS = frozenset({"execl", "execlp", "execle", "execlpe", "create_subprocess_exec"})


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _word(node: ast.AST) -> Word | None:
    """One argv element: a literal string, ``sys.executable`` (python), else a run-time value."""
    line = getattr(node, "lineno", 1)
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int | float) \
            and not isinstance(node.value, bool):
        return Word(str(node.value), line)
    if isinstance(node, ast.Attribute) and node.attr == "executable" and _name(node.value) == "sys":
        return Word("python", line)
    if isinstance(node, ast.Starred):
        return None
    return Word("${PY_VALUE}", line, ("a Python expression",))


def _argv(node: ast.AST) -> list[Word] | None:
    """The words of an argv literal (a list / tuple, or ``shlex.split("...")`` / a command string)."""
    if isinstance(node, ast.List | ast.Tuple):
        words = []
        for el in node.elts:
            w = _word(el)
            if w is None:
                break  # *args: the rest is unknown
            words.append(w)
        return words
    if isinstance(node, ast.Call) and _name(node.func) == "split" and node.args \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        node = node.args[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        cmds = split_shell(node.value, "<python>", first_line=node.lineno, expand=False)
        return [w for c in cmds for w in c]
    return None


def parse_python(text: str, file: str) -> list[EngineInvocation]:
    """Engine launches in a Python launcher (subprocess / os.exec* with a literal argv)."""
    from ..errors import ConfigError

    try:
        tree = ast.parse(text, filename=file)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None)
        raise ConfigError(f"{file}:{f' line {line}:' if line else ''} not valid Python ({getattr(exc, 'msg', exc)})") \
            from None
    ctx = LaunchContext(file=file, source="python")
    out: list[EngineInvocation] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = _name(node.func)
        words: list[Word] | None = None
        if fn in _ARGV_CALLS and node.args:
            words = _argv(node.args[0])
        elif fn in _EXEC_ARGV and len(node.args) >= 2:
            words = _argv(node.args[1])
        elif fn in _EXEC_VARARGS and node.args:
            args = node.args[1:] if fn.startswith("exec") else node.args
            words = [w for w in (_word(a) for a in args) if w is not None]
        if not words:
            continue
        inv = invocation_from_words(words, ctx)
        if inv is not None:
            out.append(inv)
    versions = pip_versions(text)
    return sorted((with_version(i, versions) for i in out), key=lambda i: i.line)
