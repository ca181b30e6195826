"""``quantadvise list``: what is bundled — models, GPUs, schemes, KV presets, engine releases."""

from typing import Annotated

import typer

from . import completion
from .common import Format, emit_report
from .options import FormatOpt, WideOpt


def list_cmd(
    kind: Annotated[str, typer.Argument(help="models | gpus | schemes | kv | engines.",
                                                autocompletion=completion.listings)],
    fmt: FormatOpt = Format.table,
    wide: WideOpt = False,
) -> None:
    """List what quantadvise bundles, with aliases and key figures: models (published parameter
    count, kind, context), GPUs (memory, bandwidth, dense peaks), scheme presets (bits, effective
    bits with scales), KV cache presets (each engine's --kv-cache-dtype value) and engine releases.
    Any of these names (or an alias) works wherever a command takes one. `quantadvise gpus` (models,
    schemes, kv) is short for `quantadvise list gpus`.

    Example: quantadvise list gpus
    """
    from ..api.listing import list_bundled

    emit_report("list", fmt, list_bundled(kind), wide=wide)
