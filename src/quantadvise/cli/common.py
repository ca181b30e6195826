"""What every command shares without typer: the output formats, output helpers (stdout = report only), the
one ``Error:`` line and the checks of file options. The typer declarations of the shared options are in
``options.py``: a command that parses its options without typer (``fastpath.py``) imports none of it."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any, TextIO

from ..files import check_output_path
from ..wording import printable


class Format(str, Enum):
    table = "table"
    json = "json"


class TableJsonCsv(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


class CheckFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    github = "github"
    sarif = "sarif"
    junit = "junit"


FORMAT_ENV = "QUANTADVISE_FORMAT"
# every --format value some command has: QUANTADVISE_FORMAT set to one of them is ignored, with a note,
# by a command that lacks it (csv for roofline, sarif for check); a value no command has is an error
ALL_FORMATS = tuple(dict.fromkeys(f.value for e in (Format, TableJsonCsv, CheckFormat) for f in e))


def emit(text: str) -> None:
    """Write the report to stdout (and nothing else goes there); a name that is not UTF-8 is written as
    its printable ``\\xNN`` form, never as a write error (the renderers escape in their own syntax first)."""
    text = printable(text, controls=False)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def say(text: str) -> None:
    """One message line to stderr (an error, ``wrote FILE``, ``read FILE``), the user text in it made
    :func:`~quantadvise.wording.printable`: an ESC in a file or model name cannot drive the terminal. A
    stderr that cannot take it (a full disk, closed by the caller) loses the message, never the exit status."""
    try:
        sys.stderr.write(printable(text))
    except (OSError, ValueError, AttributeError):
        pass


WARNING = "warning: "


def warn(message: str, *, wide: bool = False) -> None:
    """A warning on stderr, wrapped to the terminal width with a hanging indent (continuation lines
    line up under the message, so they read as part of it); one line with ``--wide``."""
    say(stderr_text(message, WARNING, " " * len(WARNING), terminal_width(wide, sys.stderr)))


def stderr_text(message: str, prefix: str, hang: str, width: int | None) -> str:
    """``prefix`` + ``message`` as lines of at most ``width`` characters (``None``: unwrapped), every
    line after the first starting with ``hang``; a newline in the message starts a new paragraph.
    Error lines never come here (an error is one line), nor ``wrote FILE`` (a path stays whole, to
    copy)."""
    from ..report.text import wrap

    lines: list[str] = []
    for i, para in enumerate(message.split("\n")):
        lines += wrap(para, width, indent=prefix if i == 0 else hang, subsequent=hang)
    return "\n".join(lines) + "\n"


MAX_COLUMNS = 1_000  # COLUMNS beyond this is taken as this (no report is wider; a huge value pads nothing)


def terminal_width(wide: bool = False, stream: TextIO | None = None) -> int | None:
    """The columns human output on ``stream`` (default stdout) must fit: ``COLUMNS`` when set, else
    the terminal's width when the stream is a terminal, else 80; None with ``--wide``. Reports on
    stdout and warnings on stderr use this one rule."""
    import shutil

    if wide:
        return None
    env = os.environ.get("COLUMNS", "").strip()
    if env.isascii() and env.isdigit() and len(env) <= 6 and int(env) >= 20:  # digits only: no 4,300-digit int()
        return min(int(env), MAX_COLUMNS)
    out = sys.stdout if stream is None else stream
    if not _isatty(out):
        return 80
    columns = 0
    if out is not sys.stdout:  # shutil measures stdout only
        try:
            columns = os.get_terminal_size(out.fileno()).columns
        except (OSError, ValueError):
            columns = 0
    if columns <= 0:
        columns = shutil.get_terminal_size((80, 24)).columns
    return max(columns, 20)


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def input_file(path: str | Path | None, field: str, what: str, *, exists: str | None = None) -> None:
    """A file option (--workload, --config, --profile) checked before any work: a folder is one error
    naming the flag (and, through ``field``, the variable that set it); with ``exists`` (the hint) so is
    a missing path."""
    from ..errors import InputError
    from ..files import not_regular, special
    from ..inputs import flag

    if path is None or str(path) == "-":
        return
    p = Path(path)
    kind = special(p)
    if kind is not None:  # a FIFO blocks the read, /dev/zero never ends it
        raise InputError(f"{flag(field)} {not_regular(path, kind)}", field=field)
    if p.is_dir():
        raise InputError(f"{flag(field)} {path} is a directory; give {what}", field=field)
    if exists and not p.exists():
        raise InputError(f"{flag(field)} {path}: no such file", hint=exists, field=field)


def check_plot_target(path: Path) -> Path | None:
    """A ``--plot FILE`` checked before any work: a .png / .svg name where a file can be written
    (:func:`check_output_path`); returns the folder the write will create, if any."""
    from ..report.pareto import check_plot_path

    check_plot_path(path)
    return check_output_path(path, "--plot")


def wrote(path: Path, made: Path | None) -> None:
    """``wrote FILE`` on stderr, one line and not wrapped (the path stays whole, to copy)."""
    say(f"wrote {path}" + (f" (created the folder {path.parent})" if made else "") + "\n")


def color_enabled() -> bool:
    """Colour follows NO_COLOR / FORCE_COLOR (https://no-color.org), else only on a terminal."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty()


def emit_report(kind: str, fmt: str | Enum, result: object, *, wide: bool = False, **options: object) -> None:
    """Warnings to stderr, then the rendered report alone on stdout (human output fitted to the
    terminal width)."""
    from ..report import TEXT_LAYOUTS, render

    for w in getattr(result, "warnings", ()) or ():
        warn(w, wide=wide)
    name = fmt.value if isinstance(fmt, Enum) else fmt
    if name in TEXT_LAYOUTS:
        options.setdefault("width", terminal_width(wide))
    emit(render(kind, name, result, **options))


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


# the short spellings of the flags an environment variable can set
_SHORT = {"--model": "-m", "--format": "-f", "--engine": "-e", "--scheme": "-s", "--config": "-c"}


def from_env(args: Sequence[str], field: str | None = None, message: str = "") -> str:
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
