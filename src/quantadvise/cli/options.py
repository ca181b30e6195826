"""The typer declarations of options several commands share: one declaration, one environment variable, one
help text each (the formats they take are in ``common.py``)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from . import completion
from .common import Format

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


def line_given(ctx: Any) -> frozenset[str]:
    """The parameters the command line gave (not a default, not an environment variable): what a command's
    typer-free body is told, as ``fastpath.py`` tells it for a line it parses."""
    return frozenset(name for name in ctx.params
                     if getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE")
