"""Options shared by several commands, defined once; output helpers (stdout = report only)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, TextIO

import typer

from ..files import check_output_path
from ..wording import printable
from . import completion


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


FormatOpt = Annotated[
    Format,
    typer.Option("--format", "-f", help="Output format; json puts only the report on stdout.",
                 envvar="QUANTADVISE_FORMAT", case_sensitive=False),
]
ModelArg = Annotated[
    str,
    typer.Argument(help="Bundled id or alias, local folder / config.json, or a Hub id (cache first).",
                   envvar="QUANTADVISE_MODEL", show_default=True, autocompletion=completion.models),
]
ModelOpt = Annotated[
    str,
    typer.Option("--model", "-m", help="Bundled id or alias, local folder / config.json, or a Hub id.",
                 envvar="QUANTADVISE_MODEL", autocompletion=completion.models),
]
GpuOpt = Annotated[
    str | None,
    typer.Option("--gpu", help="GPU id or alias (h100, a100-80gb, mi300x ...; `quantadvise list gpus`).",
                 envvar="QUANTADVISE_GPU", autocompletion=completion.gpus),
]
GpusOpt = Annotated[
    int, typer.Option("--gpus", help="GPUs (tensor parallel).", envvar="QUANTADVISE_GPUS")
]
KvOpt = Annotated[
    str | None,
    typer.Option("--kv-dtype", help="KV cache dtype preset (kv-fp8, kv-int8-token-head, ... or auto).",
                 envvar="QUANTADVISE_KV_DTYPE", autocompletion=completion.kv_presets),
]
CtxOpt = Annotated[int | None, typer.Option("--ctx", help="Context length per sequence (tokens).")]
WideOpt = Annotated[bool, typer.Option("--wide", help="Human output at full width (no clipping or dropped columns).")]
BatchOpt = Annotated[int, typer.Option("--batch", "-b", help="Concurrent sequences.")]
# serving-target options that recommend and roofline share: one declaration, one env var, one help text
UsdPerGpuHourOpt = Annotated[
    float | None, typer.Option("--usd-per-gpu-hour", help="$ per GPU-hour for $/Mtok [default: the GPU's list price "
                               "in data/pricing.yaml, if any].", envvar="QUANTADVISE_USD_PER_GPU_HOUR")]
MaxGpusOpt = Annotated[int | None, typer.Option("--max-gpus", help="A pool: the GPUs a layout may use; weighs every "
                                                "layout (TP / PP / EP / replicas / P/D) and shows the table.")]
NodeOpt = Annotated[str | None, typer.Option("--node", help="Node shapes of the pool, GPUs x type (8xh100, or "
                                             "8xh100,8xb200).")]
LayoutsOpt = Annotated[bool, typer.Option("--layouts", help="Weigh every layout of --gpu (comma-separated types) and "
                                          "show the layout table.")]
SpecTokensOpt = Annotated[int | None, typer.Option("--spec-tokens", help="Speculative decoding: tokens drafted per "
                                                   "step (EAGLE / MTP head); needs --acceptance.")]
AcceptanceOpt = Annotated[float | None, typer.Option("--acceptance", help="Mean fraction of drafted tokens accepted, "
                                                     "0..1.")]


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
    import os
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
    import os

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


