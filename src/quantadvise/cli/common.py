"""Options shared by several commands, defined once; output helpers (stdout = report only)."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer

from . import completion


class Format(str, Enum):
    table = "table"
    json = "json"


class TableJsonCsv(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


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
SpecTokensOpt = Annotated[int | None, typer.Option("--spec-tokens", help="Speculative decoding: tokens drafted per "
                                                   "step (EAGLE / MTP head); needs --acceptance.")]
AcceptanceOpt = Annotated[float | None, typer.Option("--acceptance", help="Mean fraction of drafted tokens accepted, "
                                                     "0..1.")]


def emit(text: str) -> None:
    """Write the report to stdout (and nothing else goes there)."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def warn(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


def terminal_width(wide: bool = False) -> int | None:
    """The columns human output must fit: ``COLUMNS`` when set, else the terminal's width when
    stdout is a terminal, else 80; None with ``--wide``."""
    import os
    import shutil

    if wide:
        return None
    env = os.environ.get("COLUMNS", "")
    if env.strip().isdigit() and int(env) >= 20:
        return int(env)
    if sys.stdout.isatty():
        return max(shutil.get_terminal_size((80, 24)).columns, 20)
    return 80


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
    from ..report import render

    for w in getattr(result, "warnings", ()) or ():
        warn(w)
    name = fmt.value if isinstance(fmt, Enum) else fmt
    if name in ("table", "explain"):
        options.setdefault("width", terminal_width(wide))
    emit(render(kind, name, result, **options))


