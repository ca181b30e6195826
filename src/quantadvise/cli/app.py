"""The ``quantadvise`` command: a thin typer app over the Python API.

Errors are mapped here, once: a :class:`~quantadvise.errors.QuantAdviseError` or a usage error
becomes one ``Error: ...`` line on stderr and exit code 2. Commands never catch.

Start-up: a plain command line of ``recommend`` or ``size`` (declared options and arguments, plain values, none
of their environment variables set) is parsed without importing typer (``fastpath.py``, held to typer's own parse by
tests/cli/test_fastpath.py); every other line goes through typer (``typer_app.py``), which imports and
registers only the invoked command's module (``quantadvise --help`` registers them all).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Mapping, Sequence
from typing import NoReturn

from ..errors import QuantAdviseError
from .common import COMMANDS, COMPLETE_VAR, LIST_SHORTCUTS, from_env, say_error
from .fastpath import fast_command
from .plugins import skip_plugin_loader

__all__ = ["COMMANDS", "main", "run"]


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
        fast = None if completing else fast_command(args, os.environ)
        if fast is not None:  # a plain command line of a command that runs without typer: no typer imported
            code = fast()
        else:
            from .typer_app import invoke

            code = invoke(args, completing, hidden)
    except QuantAdviseError as exc:
        say_error(f"Error: {exc}{from_env(args, exc.field, str(exc))}")
        code = exc.exit_code
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


