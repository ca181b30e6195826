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

from ..engines.invocation import EngineInvocation
from .budget import Budget, current, reading
from .launch import LaunchContext, OptionLists, invocation_from_words, pip_versions, with_version
from .shell import Word, split_shell

# -------------------------------------------------------------------------------------------------
# Makefiles
# -------------------------------------------------------------------------------------------------

_MAKE_ASSIGN = re.compile(r"^(?:export\s+|override\s+)*([A-Za-z_][A-Za-z0-9_.-]*)\s*(::?=|\?=|\+=|=)\s*(.*)$")
_MAKE_RULE = re.compile(r"^[^\s#=][^=]*?:(?!=)")
_MAKE_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)|\$\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
MAX_MAKE_DEPTH = 8  # variables referring to variables: deeper than this is left unexpanded


def _make_expand(text: str, vars_: Mapping[str, str], depth: int = 0, line: int | None = None,
                 budget: Budget | None = None) -> str:
    """Make's expansion of ``$(NAME)`` / ``${NAME}`` / ``$$``; an unknown name stays ``$(NAME)`` (a
    command substitution to the shell: unresolved), and so does a known one past the file's budget (a
    value growing past its characters, more references than it allows: ten variables of ten references
    each, ten deep, are ten billion) or :data:`MAX_MAKE_DEPTH`."""
    budget = budget if budget is not None else current()
    out: list[str] = []
    size = 0  # characters this value has so far
    pos = 0
    for m in _MAKE_REF.finditer(text):
        out.append(text[pos:m.start()])
        size += m.start() - pos
        pos = m.end()
        if m.group(0) == "$$":
            out.append("\x00")  # a literal $ for the shell, restored after expansion
            size += 1
            continue
        name = m.group(1) or m.group(2)
        value = f"$({name})"
        if name in vars_ and depth < MAX_MAKE_DEPTH and budget.expand(f"$({name})", size + len(vars_[name]), depth, line):
            value = _make_expand(vars_[name], vars_, depth + 1, line, budget)
            if not budget.expand(f"$({name})", size + len(value), depth, line):
                value = f"$({name})"
        out.append(value)
        size += len(value)
    out.append(text[pos:])
    joined = "".join(out)
    return joined if depth else joined.replace("\x00", "$")


def parse_makefile(text: str, file: str, *, env: Mapping[str, str] | None = None,
                   options: OptionLists | None = None) -> list[EngineInvocation]:
    """Engine launches in a Makefile's recipes."""
    with reading(file):
        return _parse_makefile(text, file, env=env, options=options)


def _parse_makefile(text: str, file: str, *, env: Mapping[str, str] | None = None,
                    options: OptionLists | None = None) -> list[EngineInvocation]:
    lines = text.splitlines()
    values: dict[str, list[str]] = {}
    recipes: list[tuple[str, list[int]]] = []  # (joined recipe line, the physical lines it spans)
    in_rule = False
    i = 0
    while i < len(lines):
        start = i
        raw = lines[i]
        pieces = [raw]
        while pieces[-1].endswith("\\") and i + 1 < len(lines):  # joined once: no copy per continuation line
            i += 1
            pieces[-1] = pieces[-1][:-1] + " \\\n"
            pieces.append(lines[i].lstrip("\t"))
        joined = "".join(pieces)
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
            if op == "?=" and name in values:
                continue
            if op == "+=":
                values.setdefault(name, []).append(value)  # joined once below: no copy per +=
            else:
                values[name] = [value]
            in_rule = False
            continue
        in_rule = bool(_MAKE_RULE.match(stripped))
    vars_ = {k: " ".join(v for v in vs if v) for k, vs in values.items()}
    out: list[EngineInvocation] = []
    ctx = LaunchContext(file=file, source="makefile", options=options)
    known = {k: v for k, v in (env or {}).items()}
    for body, span in recipes:
        expanded = _make_expand(body, vars_, line=span[0])
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
MAX_NAME_DEPTH = 8  # a name bound to a name bound to ...: deeper than this is a run-time value


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _environ(node: ast.AST) -> tuple[str, ast.AST | None] | None:
    """``os.environ["X"]`` / ``os.environ.get("X"[, default])`` / ``os.getenv("X"[, default])``:
    (the variable, its default expression or None)."""
    if isinstance(node, ast.Subscript) and _name(node.value) == "environ":
        key = _str(node.slice)
        return (key, None) if key is not None else None
    if isinstance(node, ast.Call) and node.args and (
            (_name(node.func) == "get" and isinstance(node.func, ast.Attribute) and _name(node.func.value) == "environ")
            or _name(node.func) == "getenv"):
        key = _str(node.args[0])
        default = node.args[1] if len(node.args) > 1 else next(
            (k.value for k in node.keywords if k.arg == "default"), None)
        return (key, default) if key is not None else None
    return None


class _Names:
    """A module's names bound once to a value (``MODEL = "org/m"``, ``cmd = [...]``) — the only
    bindings followed; a name bound twice, or bound in a loop / by a parameter, is a run-time value.
    ``cmd += [...]`` / ``cmd.extend([...])`` / ``cmd.append(x)`` extend a bound list, in line order."""

    def __init__(self, tree: ast.AST):
        self.bound: dict[str, list[ast.AST]] = {}
        self.runtime: set[str] = set()  # names whose value is only known when the launcher runs
        self.grown: dict[str, list[tuple[int, list[ast.AST]]]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.bound.setdefault(t.id, []).append(node.value)
                    else:  # a, b = ...: every name in it is a run-time value
                        for n in ast.walk(t):
                            if isinstance(n, ast.Name):
                                self.runtime.add(n.id)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                self.bound.setdefault(node.target.id, []).append(node.value)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                if isinstance(node.op, ast.Add) and isinstance(node.value, ast.List | ast.Tuple):
                    self.grown.setdefault(node.target.id, []).append((node.lineno, list(node.value.elts)))
                else:
                    self.runtime.add(node.target.id)
            elif isinstance(node, ast.NamedExpr):
                self.bound.setdefault(node.target.id, []).append(node.value)
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension | ast.withitem | ast.arguments):
                scope = node if isinstance(node, ast.arguments) else \
                    node.optional_vars if isinstance(node, ast.withitem) else node.target
                for n in ast.walk(scope) if scope is not None else ():
                    if isinstance(n, ast.Name | ast.arg):  # a loop variable, a parameter: a run-time value
                        self.runtime.add(n.id if isinstance(n, ast.Name) else n.arg)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.args:
                verb, target = node.func.attr, node.func.value.id
                if verb == "append":
                    self.grown.setdefault(target, []).append((node.lineno, [node.args[0]]))
                elif verb == "extend" and isinstance(node.args[0], ast.List | ast.Tuple):
                    self.grown.setdefault(target, []).append((node.lineno, list(node.args[0].elts)))
                elif verb in ("extend", "insert", "pop", "remove", "clear"):
                    self.runtime.add(target)  # changed in a way not followed

    def value(self, name: str) -> ast.AST | None:
        """The one value a name is bound to, else None (bound twice, or a run-time value)."""
        values = self.bound.get(name, [])
        return values[0] if len(values) == 1 and name not in self.runtime else None

    def extra(self, name: str) -> list[ast.AST]:
        return [el for _, els in sorted(self.grown.get(name, []), key=lambda g: g[0]) for el in els]


def _shown(node: ast.AST) -> str:
    """A run-time value as the report shows it: ``${MODEL}`` for an environment variable or a name,
    ``${args.model}`` for another expression."""
    env = _environ(node)
    text = env[0] if env is not None else ast.unparse(node)
    text = " ".join(text.split())
    return "${" + (text if len(text) <= 60 else text[:57] + "...") + "}"


def _word(node: ast.AST, names: _Names, at: int | None = None, depth: int = 0) -> Word | None:
    """One argv element: a literal string, ``sys.executable`` (python), a name bound once to one of
    these, an environment variable's literal default (``os.environ.get("X", "org/m")``); else a
    run-time value, shown as ``${...}``."""
    line: int = at or int(getattr(node, "lineno", 1))
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int | float) \
            and not isinstance(node.value, bool):
        return Word(str(node.value), line)
    if isinstance(node, ast.Attribute) and node.attr == "executable" and _name(node.value) == "sys":
        return Word("python", line)
    if isinstance(node, ast.Starred):
        return None
    if depth < MAX_NAME_DEPTH:
        if isinstance(node, ast.Name) and (bound := names.value(node.id)) is not None \
                and not isinstance(bound, ast.List | ast.Tuple):
            w = _word(bound, names, line, depth + 1)
            if w is not None and not w.unresolved:
                return w
        env = _environ(node)
        if env is not None and env[1] is not None:
            w = _word(env[1], names, line, depth + 1)
            if w is not None and not w.unresolved:
                return w  # the default: what runs where the variable is not set
    bound = names.value(node.id) if isinstance(node, ast.Name) else None
    text = _shown(bound if bound is not None and _environ(bound) is not None else node)  # MODEL = os.environ[...]
    return Word(text, line, (text[2:-1],))


def _argv(node: ast.AST, names: _Names, depth: int = 0) -> list[Word] | None:
    """The words of an argv literal (a list / tuple, a name bound to one, or ``shlex.split("...")`` /
    a command string)."""
    if isinstance(node, ast.Name) and depth < MAX_NAME_DEPTH:
        bound = names.value(node.id)
        if bound is None:
            return None
        words = _argv(bound, names, depth + 1)
        if words is not None and isinstance(bound, ast.List | ast.Tuple):
            for el in names.extra(node.id):
                w = _word(el, names)
                if w is None:
                    break
                words.append(w)
        return words
    if isinstance(node, ast.List | ast.Tuple):
        words = []
        for el in node.elts:
            w = _word(el, names)
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


def parse_python(text: str, file: str, *, options: OptionLists | None = None) -> list[EngineInvocation]:
    """Engine launches in a Python launcher (subprocess / os.exec* with a literal argv, or a name
    bound once to one)."""
    from ..errors import ConfigError

    try:
        tree = ast.parse(text, filename=file)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None)
        raise ConfigError(f"{file}:{f' line {line}:' if line else ''} not valid Python 3 "
                          f"({getattr(exc, 'msg', exc)})") from None
    names = _Names(tree)
    ctx = LaunchContext(file=file, source="python", options=options)
    out: list[EngineInvocation] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = _name(node.func)
        words: list[Word] | None = None
        if fn in _ARGV_CALLS and node.args:
            words = _argv(node.args[0], names)
        elif fn in _EXEC_ARGV and len(node.args) >= 2:
            words = _argv(node.args[1], names)
        elif fn in _EXEC_VARARGS and node.args:
            args = node.args[1:] if fn.startswith("exec") else node.args
            words = [w for w in (_word(a, names) for a in args) if w is not None]
        if not words:
            continue
        inv = invocation_from_words(words, ctx)
        if inv is not None:
            out.append(inv)
    versions = pip_versions(text)
    return sorted((with_version(i, versions) for i in out), key=lambda i: i.line)
