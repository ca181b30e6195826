"""The ``quantadvise`` command: a thin typer app over the Python API.

Errors are mapped here, once: a :class:`~quantadvise.errors.QuantAdviseError` or a usage error
becomes one ``Error: ...`` line on stderr and exit code 2. Commands never catch.

Start-up is kept near the floor of importing typer: only the invoked command's module is imported
and registered (``quantadvise --help`` registers them all).
"""

from __future__ import annotations

import functools
import gc
import importlib
import os
import sys
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from ..errors import QuantAdviseError
from ..wording import printable
from .plugins import skip_plugin_loader


def say(text: str) -> None:
    """A message to stderr, its user text printable (``cli.common.say``; here without importing it). A stderr
    that cannot take it (a full disk, closed by the caller) loses the message, never the exit status."""
    try:
        sys.stderr.write(printable(text))
    except (OSError, ValueError, AttributeError):
        pass


def say_error(line: str) -> None:
    """The one ``Error:`` line: a newline inside it (a name given with one) shown as ``\\n``, a word longer
    than :data:`LONG_WORD` characters (a 5,000-character path quoted by a reader) shortened to its ends."""
    line = line.rstrip("\n").replace("\n", "\\n")
    if len(line) > LONG_WORD:
        import re

        line = re.sub(r"\S{" + str(LONG_WORD + 1) + ",}", _shorten_word, line)
    say(line + "\n")


LONG_WORD = 200


def _shorten_word(m: Any) -> str:
    w = m.group(0)
    return f"{w[:60]}...{w[-12:]} ({len(w):,} characters)"


# what the reports print beyond ASCII, as a terminal or pipe that cannot encode it shows them
_PLAIN = {"\u2014": "-", "\u2013": "-", "\u2500": "-", "\u2501": "-", "\u2502": "|", "\u251c": "|", "\u2514": "`",
          "\u2192": "->", "\u2190": "<-", "\u00b1": "+/-", "\u00d7": "x", "\u2264": "<=", "\u2265": ">=",
          "\u2248": "~", "\u2026": "...", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2022": "*",
          "\u00b7": "-", "\u2713": "ok", "\u2717": "x", "\u00a0": " ", "\u2212": "-", "\u00b5": "u", "\u03bc": "u"}


def _plain(exc: UnicodeError) -> tuple[str, int]:
    """The codec error handler of an output that cannot encode a character (``PYTHONIOENCODING=ascii``, a
    latin-1 terminal): its ASCII spelling (``-`` for a dash, ``+/-`` for ``\u00b1``), else ``?`` — never an
    exception in the middle of a report."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    return "".join(_PLAIN.get(c, "?") for c in exc.object[exc.start:exc.end]), exc.end


def _closed_outputs() -> None:
    """A stdout or stderr the caller closed (``>&-``, ``2>&-``: Python sees None) writes nowhere, as
    /dev/null would: the command runs and exits with its own code instead of failing on the first write."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 - lives as long as the process


def _plain_outputs() -> None:
    """stdout and stderr that cannot encode the reports' characters write them through :func:`_plain`."""
    import codecs

    for stream in (sys.stdout, sys.stderr):
        enc = (getattr(stream, "encoding", None) or "").lower().replace("_", "-")
        if enc.startswith("utf") or not hasattr(stream, "reconfigure"):
            continue
        try:
            codecs.lookup_error("quantadvise-plain")
        except LookupError:
            codecs.register_error("quantadvise-plain", _plain)
        try:
            stream.reconfigure(errors="quantadvise-plain")
        except (ValueError, OSError):  # a detached or closed stream: leave it
            pass


def _quiet_stdout() -> None:
    """stdout after its reader went away: what is still buffered goes nowhere (no second error at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a file descriptor (a test's buffer)
        pass


def _os_error_line(exc: OSError, args: Sequence[str]) -> str:
    """A path the operating system refused where no reader asked first (a name longer than the system
    allows, a folder on the way that cannot be searched) as one ``Error:`` line naming the option that
    gave it."""
    from ..inputs import shown

    path = exc.filename if isinstance(exc.filename, str) else None
    reason = exc.strerror or str(exc)
    opt = ""
    if path is not None:
        for i, a in enumerate(args):
            if a == path and i > 0 and args[i - 1].startswith("-"):
                opt = args[i - 1] + " "
            elif a.startswith("--") and "=" in a and a.split("=", 1)[1] == path:
                opt = a.split("=", 1)[0] + " "
    if path is None:  # no file named: what failed is writing the output (a full disk under `> report.json`)
        return f"Error: cannot write the output: {reason} (free space there, or write it elsewhere)"
    return f"Error: {opt}{shown(path)}: {reason} (name a path this system can open)"

# command name -> (module under quantadvise.cli, function, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "recommend": ("recommend", "recommend_cmd", "Walk the decision tree from a workload to a scheme, with the numbers behind every branch."),
    "deploy": ("deploy", "deploy_cmd", "The recommended layout as manifests for vLLM's Helm chart, llm-d, KServe or Dynamo, with its quantadvise.yaml."),
    "size": ("size", "size_cmd", "Whole-model memory for a scheme, per component, with KV cache and GPU fit."),
    "roofline": ("roofline", "roofline_cmd", "Decode step time, tokens/s and bound per scheme as batch and context grow (a model)."),
    "accuracy": ("accuracy", "accuracy_cmd", "Accuracy evidence: delta with a CI, flips and KL between a baseline and a quantized run."),
    "engines": ("engines", "engines_cmd", "What vLLM / SGLang accept, version by version: methods, KV dtypes, diff."),
    "inspect": ("inspect", "inspect_cmd", "A checkpoint's quantization_config as six axes, its size on disk, each engine's verdict."),
    "checkpoints": ("checkpoints", "checkpoints_cmd", "Published quantized checkpoints of a model: scheme, size, each engine's verdict, accuracy."),
    "check": ("check", "check_cmd", "CI gate: engine commands + quantadvise.yaml against rules QA1xx-QA5xx; exit 1 on findings."),
    "calibrate": ("calibrate", "calibrate_cmd", "Measure this GPU (bandwidth, GEMMs, decode linears per scheme) into a --profile."),
    "validate": ("validate", "validate_cmd", "Predicted vs measured per scheme and batch for a calibrated profile, with each model's error."),
    "list": ("list", "list_cmd", "What is bundled: models, GPUs, schemes, KV presets, engine releases, with aliases (`quantadvise gpus` = `list gpus`)."),
}

# how bare `quantadvise` and `--help` group the commands
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Plan", ("recommend", "size", "roofline", "deploy")),
    ("Check", ("inspect", "checkpoints", "engines", "check", "accuracy")),
    ("Measure", ("calibrate", "validate")),
    ("List", ("list",)),
)
# `quantadvise gpus` (and models, schemes, kv) is `quantadvise list gpus`: what is bundled, by its own name
LIST_SHORTCUTS = ("models", "gpus", "schemes", "kv")
COMPLETE_VAR = "_QUANTADVISE_COMPLETE"  # set by the shell completion scripts typer installs

HELP = (
    "Which quantization scheme to deploy, what it costs in memory, how fast it runs on your GPU at "
    "your batch size, whether your engine accepts it — and a CI gate for all of it.\n\n"
    "Exit codes: 0 ok, 1 gate findings, 2 usage/config/input error."
)


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


_SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")  # the shells typer's completion scripts serve


def _completion_request_fault(env: Mapping[str, str]) -> str | None:
    """What is wrong with a shell-completion request in the environment (None: nothing): the instruction
    is ``source_<shell>`` or ``complete_<shell>``, and bash's completion reads COMP_WORDS and an integer
    COMP_CWORD (typer raised KeyError / ValueError without them)."""
    value = env.get(COMPLETE_VAR, "")
    action, _, shell = value.partition("_")
    if action not in ("source", "complete") or shell not in _SHELLS:
        return (f"{COMPLETE_VAR}={value[:40]!r} is not a completion instruction "
                f"(source_SHELL or complete_SHELL, SHELL one of {', '.join(_SHELLS)})")
    if value == "complete_bash":
        if "COMP_WORDS" not in env:
            return "bash completion needs COMP_WORDS"
        if not env.get("COMP_CWORD", "").strip().isdecimal():
            return f"bash completion needs COMP_CWORD to be a word index, got {env.get('COMP_CWORD', '')[:20]!r}"
    return None


def _version_requested(args: Sequence[str]) -> bool:
    return len(args) == 1 and args[0] in ("--version", "-V")


# the short spellings of the flags an environment variable can set
_SHORT = {"--model": "-m", "--format": "-f", "--engine": "-e", "--scheme": "-s", "--config": "-c"}


def _from_env(args: Sequence[str], field: str | None = None, message: str = "") -> str:
    """`` (from QUANTADVISE_X)`` when the value an error is about came from an environment variable:
    the variable is set and its flag is not on the command line."""
    import re

    from ..inputs import FLAGS, KIND_FIELDS

    flags = []
    if field:
        key = KIND_FIELDS.get(field.lower(), field.lower())
        if key in FLAGS:
            flags.append(FLAGS[key])
    if "env var:" not in message:  # typer names the variable itself when it read one
        flags += [fe for m in re.findall(r"'(--[\w-]+)'", message) for fe in FLAGS.values() if fe[0] == m]
    for flag, env in flags:
        given = any(a == flag or a.startswith(flag + "=") or a == _SHORT.get(flag) for a in args)
        if env and env in os.environ and not given:
            return f" (from the environment variable {env})"
    return ""


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: run the CLI and exit with its code (0 ok, 1 findings, 2 error)."""
    # A command is a one-shot process: the cyclic garbage collector would walk the ~10^5 objects that importing
    # the command, typer's adapters and pydantic's validators create, again and again, to free next to nothing
    # (a DeepSeek-V3 64-GPU pool search peaks at the same 83 MB without it; 15 ms of a 220 ms `size`). Off for
    # the command, back on after it: an API user or a test suite calling main() keeps its own setting.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _run(argv)
    finally:
        if collecting:
            gc.enable()


def run() -> NoReturn:
    """The ``quantadvise`` console script and ``python -m quantadvise``: :func:`main`, then the process ends
    at once, its output flushed, without the interpreter's teardown. Tearing down a command's ~10^5 objects
    (modules, classes, validators, parsed tables) costs more than a third of a short command's wall time
    (~150 ms of `recommend`) and frees memory the operating system takes back anyway. Nothing the command
    leaves is lost: files are written and closed inside it, it registers no exit handlers, and its only
    thread (the Hub fetch) is a daemon. An error that escapes :func:`main` (a bug) keeps Python's own
    traceback and exit."""
    try:
        main()
        status = 0
    except SystemExit as exc:
        status = _exit_status(exc.code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader went away after the last write: as inside the command
            if stream is sys.stdout:
                _quiet_stdout()
                status = status or 1
        except OSError as exc:  # the output could not be written (a full disk): as inside the command
            if stream is sys.stdout:
                _quiet_stdout()
                say_error(_os_error_line(exc, []))
                status = status or 2
        except (ValueError, AttributeError):  # a stream closed or replaced by the caller
            pass
    os._exit(status)


def _exit_status(code: object) -> int:
    """The process status ``SystemExit(code)`` ends with, as Python reports it (None: 0; a message: printed, 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except (OSError, ValueError, AttributeError):
        pass
    return 1


def _run(argv: Sequence[str] | None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    # Pydantic plugins (observability hooks found through package entry points) cost a scan of every
    # installed distribution's metadata on first model build; a one-shot CLI process does not need
    # them. Set PYDANTIC_DISABLE_PLUGINS yourself to override.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    skip_plugin_loader()
    _closed_outputs()
    _plain_outputs()
    hidden: dict[str, str] = {}
    try:
        if _version_requested(args):
            from .. import __version__

            sys.stdout.write(f"quantadvise {__version__}\n")
            raise SystemExit(0)
        if not args:
            args = ["--help"]  # bare `quantadvise`: the help, exit 0
        elif args[0] in LIST_SHORTCUTS:
            args = ["list", *args]  # `quantadvise gpus` is `quantadvise list gpus`
        # shell completion asks about every command; a normal run registers only the one it runs
        completing = COMPLETE_VAR in os.environ
        if completing and (why := _completion_request_fault(os.environ)):
            say_error(f"Error: {why} (the script `quantadvise --install-completion` installs sets it)\n")
            raise SystemExit(2)
        group = _command(None if completing or args[0] not in COMMANDS else args[0])
        if not completing:
            hidden = _env_format(group, args)
        code = group.main(args=args, prog_name="quantadvise", standalone_mode=False)
    except QuantAdviseError as exc:
        say_error(f"Error: {exc}{_from_env(args, exc.field, str(exc))}")
        code = exc.exit_code
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
    except BrokenPipeError:  # the reader of stdout stopped reading (`| head`): nothing more to say, not ok
        _quiet_stdout()
        code = 1
    except OSError as exc:  # a path the system refused before a reader could ask (too long, not searchable)
        say_error(_os_error_line(exc, args))
        code = 2
    except KeyboardInterrupt:
        code = 130
    finally:
        os.environ.update(hidden)
    raise SystemExit(code if isinstance(code, int) else 0)


def _usage_line(exc: Exception, args: Sequence[str]) -> str:
    """A usage error (unknown option, missing argument) as one ``Error:`` line pointing to the help."""
    fmt = getattr(exc, "format_message", None)
    msg = fmt() if callable(fmt) else str(exc)
    cmd = args[0] if args and args[0] in COMMANDS else None
    where = f"quantadvise {cmd} --help" if cmd else "quantadvise --help"
    msg = _with_value(" ".join(msg.split()), args)
    return f"Error: {msg}{_from_env(args, None, msg)} (see `{where}`)\n"


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
