"""The typer side of the CLI: the app (every command's typer declaration, ``--help`` grouped), its run, and its
usage errors as the house's one ``Error:`` line. Imported only when a command line goes through typer: a plain
``recommend`` or ``size`` line is parsed without it (``fastpath.py``)."""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Sequence
from enum import Enum
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from .common import COMMANDS, GROUPS, HELP, from_env, say, say_error


class GroupedCommands(TyperGroup):
    """The command list of ``--help``, in the groups of :data:`GROUPS`."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        listed = set()
        for title, names in GROUPS:
            rows = []
            for name in names:
                cmd = self.get_command(ctx, name)
                if cmd is not None and not cmd.hidden:
                    rows.append((name, cmd.get_short_help_str(formatter.width - 16)))
                    listed.add(name)
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        rest = [(n, c.get_short_help_str(formatter.width - 16)) for n in self.list_commands(ctx)
                if n not in listed and (c := self.get_command(ctx, n)) is not None and not c.hidden]
        if rest:
            with formatter.section("Other"):
                formatter.write_dl(rest)


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        sys.stdout.write(f"quantadvise {__version__}\n")
        raise typer.Exit(0)


def _root(
    version: Annotated[bool, typer.Option("--version", "-V", help="Show the version and exit.", is_eager=True,
                                          callback=_print_version)] = False,
) -> None:
    """Which quantization scheme to deploy (the app's own options; each command has its --help)."""


def build_app(only: str | None = None) -> typer.Typer:
    app = typer.Typer(
        name="quantadvise",
        help=HELP,
        cls=GroupedCommands,
        add_completion=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    )
    app.callback(help=HELP)(_root)
    names = [only] if only in COMMANDS else list(COMMANDS)
    for name in names:
        module, func, short = COMMANDS[name]
        fn = getattr(importlib.import_module(f"quantadvise.cli.{module}"), func)
        app.command(name, short_help=short)(fn)
    return app


@functools.cache
def _command(only: str | None) -> Any:
    """The click command of :func:`build_app`, built once per process for each command (an API user or a
    test suite calling :func:`main` many times pays typer's conversion once)."""
    return typer.main.get_command(build_app(only))


def invoke(args: Sequence[str], completing: bool, hidden: dict[str, str]) -> int:
    """Run ``args`` through typer: the command's exit code; a value or usage the parser refuses is one
    ``Error:`` line and exit 2 (errors of the command itself propagate to ``app.py``). A QUANTADVISE_FORMAT
    set aside for this run is put in ``hidden``, for the caller to restore after its own error line."""
    group = _command(None if completing or args[0] not in COMMANDS else args[0])
    if not completing:
        hidden.update(_env_format(group, args))
    try:
        code = group.main(args=list(args), prog_name="quantadvise", standalone_mode=False)
    except typer.Abort:
        sys.stderr.write("Aborted.\n")
        code = 1
    except typer.BadParameter as exc:  # a value a flag or its variable cannot take: the house wording
        line = _bad_value(exc, args)
        say_error(line or _usage_line(exc, args))
        code = 2
    except typer.TyperException as exc:  # usage errors: bad option, missing argument
        say_error(_usage_line(exc, args))
        code = getattr(exc, "exit_code", 2)
    return code if isinstance(code, int) else 0


def _usage_line(exc: Exception, args: Sequence[str]) -> str:
    """A usage error (unknown option, missing argument) as one ``Error:`` line pointing to the help."""
    fmt = getattr(exc, "format_message", None)
    msg = fmt() if callable(fmt) else str(exc)
    cmd = args[0] if args and args[0] in COMMANDS else None
    where = f"quantadvise {cmd} --help" if cmd else "quantadvise --help"
    msg = _with_value(" ".join(msg.split()), args)
    return f"Error: {msg}{from_env(args, None, msg)} (see `{where}`)\n"


def _given(opts: Sequence[str], args: Sequence[str]) -> str | None:
    """The value the command line gives an option (its last occurrence, as the parser takes it):
    ``--gpus abc``, ``--gpus=abc``, ``-f xml`` or ``-fxml``."""
    value = None
    for i, a in enumerate(args):
        for o in opts:
            if a == o and i + 1 < len(args):
                value = args[i + 1]
            elif o.startswith("--") and a.startswith(o + "="):
                value = a.split("=", 1)[1]
            elif len(o) == 2 and not o.startswith("--") and a.startswith(o) and len(a) > 2 and not a.startswith("--"):
                value = a[2:]
    return value


def _bad_value(exc: Exception, args: Sequence[str]) -> str | None:
    """The ``Error:`` line of a value the parser refused (not a number, not a choice), in the words every
    command uses for the same flag (``inputs.bad_value``, ``inputs.format_error``), naming the environment
    variable only when it gave the value. None when the refusal is not about a typed option's value."""
    from ..inputs import bad_value, env_suffix, field_of, format_error
    from .common import ALL_FORMATS

    param, ctx = getattr(exc, "param", None), getattr(exc, "ctx", None)
    opts = [o for o in getattr(param, "opts", ()) if o.startswith("-")]
    if param is None or ctx is None or not opts:
        return None
    source = getattr(ctx.get_parameter_source(param.name), "name", None)
    env = getattr(param, "envvar", None) if source == "ENVIRONMENT" else None
    value = os.environ.get(env) if isinstance(env, str) else _given(opts, args)
    kind = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    message = " ".join(str(getattr(exc, "message", exc)).split()).removeprefix("Value error, ")
    option = max(opts, key=len)  # the long spelling
    field = field_of(option)
    if isinstance(kind, type) and issubclass(kind, Enum):
        choices = [str(c.value) for c in kind]
        err = format_error(value or "", args[0], choices, list(ALL_FORMATS)) if field == "format" else \
            bad_value(field, value, choices=choices, option=option)
    elif kind in (int, float) and any(message.startswith(w) for w in _PARSER_WORDS):
        err = bad_value(field, value, integer=kind is int, option=option)
    else:  # a check of the command's own: its words, with the flag it is about
        text = message if message.startswith(option) else f"{option}: {message}"
        return f"Error: {text}{env_suffix(env) if isinstance(env, str) else ''}\n"
    return f"Error: {err}{env_suffix(env) if isinstance(env, str) else ''}\n"


_PARSER_WORDS = {  # the parser's wording of a bad value -> the house's
    "Input should be a valid integer, unable to parse string as an integer": "not an integer",
    "Input should be a valid number, unable to parse string as a number": "not a number",
    "Input should be a valid integer": "not an integer",
    "Input should be a valid number": "not a number",
}


def _with_value(msg: str, args: Sequence[str]) -> str:
    """A usage error about a bad value, with the value it was given (from the command line, else the
    environment variable the parser names) and without the parser's wording: ``Invalid value for
    '--gpus' (env var: 'QUANTADVISE_GPUS'): 'abc' is not an integer``."""
    import re

    m = re.match(r"Invalid value for '(--[\w-]+)'(?: / '-\w')?( \(env var: '(\w+)'\))?: (.*)$", msg)
    if not m:
        return msg.replace("Value error, ", "")
    flag, env_part, env, detail = m.groups()
    detail = detail.removeprefix("Value error, ")
    for words, ours in _PARSER_WORDS.items():
        if detail.startswith(words):
            value = None
            for i, a in enumerate(args):
                if a == flag and i + 1 < len(args):
                    value = args[i + 1]
                elif a.startswith(flag + "="):
                    value = a.split("=", 1)[1]
            if value is None and env:
                value = os.environ.get(env)
            detail = f"{value!r} is {ours}" if value is not None else ours
            break
    return f"Invalid value for '{flag}'{env_part or ''}: {detail}"


def _env_format(group: Any, args: Sequence[str]) -> dict[str, str]:
    """QUANTADVISE_FORMAT for the command in ``args``: one of its formats is its default; a format only
    other commands have (csv, sarif ...) is set aside for this run with a note on stderr (so one CI-wide
    variable does not break the other commands); a value no command has is one error naming the
    variable. Returns what was set aside, to restore."""
    from ..inputs import format_error
    from .common import ALL_FORMATS, FORMAT_ENV

    value = os.environ.get(FORMAT_ENV)
    if value is None or not args or args[0] not in COMMANDS:
        return {}
    if any(a in ("--format", "-f") or a.startswith("--format=") or (a.startswith("-f") and not a.startswith("--"))
           for a in args[1:]):
        return {}  # the flag wins over the variable
    cmd = group.commands.get(args[0]) if hasattr(group, "commands") else None
    param = next((p for p in getattr(cmd, "params", ()) if "--format" in getattr(p, "opts", ())), None)
    kind = getattr(getattr(param, "type_descriptor", None), "annotation", None)  # the command's format Enum
    choices = [str(f.value) for f in kind] if isinstance(kind, type) and issubclass(kind, Enum) else []
    key = value.strip().lower()
    if not choices or key in choices:
        return {}
    if key not in ALL_FORMATS:
        raise format_error(value, args[0], choices, list(ALL_FORMATS))
    say(f"note: {FORMAT_ENV}={value} is not a format of `quantadvise {args[0]}` "
                     f"({', '.join(choices)}); using {choices[0]}\n")
    return {FORMAT_ENV: os.environ.pop(FORMAT_ENV)}


def fast_spec() -> dict[str, Any]:
    """The declarations ``fastpath.py`` parses with, read from each fast command's typer declaration (what
    ``tools/fast_spec.py`` writes to ``cli/fast_spec.py``). A parameter typer would do more with than convert
    a value (a callback, a prompt, a range, a repeated or counted option, a required one) is refused here:
    its command cannot take the fast path."""
    from pathlib import Path

    from .fastpath import BODIES

    out: dict[str, Any] = {}
    for name in BODIES:
        command = _command(name).commands[name]
        params = []
        for p in command.params:
            kind_of = p.type_descriptor.annotation
            if (p.callback is not None or getattr(p, "prompt", None) or p.multiple or p.nargs != 1
                    or getattr(p, "count", False) or p.required or getattr(p, "min", None) is not None
                    or getattr(p, "max", None) is not None or p.is_eager or not p.expose_value):
                raise ValueError(f"{name} {p.opts[0]}: typer does more with it than convert its value")
            positional = p.param_type_name == "argument"
            row: dict[str, Any] = {"name": p.name, "opts": [] if positional else list(p.opts), "default": p.default,
                                   "envvars": [p.envvar] if isinstance(p.envvar, str) else list(p.envvar or ())}
            if positional:
                row["positional"] = True
            if getattr(p, "is_flag", False):
                row.update(kind="flag", off=list(p.secondary_opts))
            elif isinstance(kind_of, type) and issubclass(kind_of, Enum):
                row.update(kind="enum", enum=f"{kind_of.__module__}:{kind_of.__qualname__}",
                           choices=[str(m.value) for m in kind_of],
                           default=None if p.default is None else str(p.default.value))
            elif kind_of in (int, float, str):
                row["kind"] = kind_of.__name__
            elif kind_of is Path and p.default is None:
                row["kind"] = "path"
            else:
                raise ValueError(f"{name} {p.opts[0]}: a {kind_of} option the fast path does not read")
            if not isinstance(row["default"], (type(None), bool, int, float, str)):
                raise ValueError(f"{name} {p.opts[0]}: its default {p.default!r} is not plain data")
            params.append(row)
        out[name] = {"params": params}
    return out
