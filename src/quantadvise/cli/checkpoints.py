"""``quantadvise checkpoints``: the published quantized variants of a model and each engine's verdict."""

from typing import Annotated

import typer

from . import completion
from .common import Format, emit_report
from .options import FormatOpt, GpuOpt, WideOpt


def checkpoints_cmd(
    model: Annotated[
        str, typer.Argument(help="Bundled model id or alias (an -Instruct release is an alias of its model); any "
                            "Hub id with --hub.", envvar="QUANTADVISE_MODEL", autocompletion=completion.models)
    ],
    engine: Annotated[
        list[str] | None, typer.Option("--engine", "-e", help="vllm, sglang or NAME==VERSION; repeat for several "
                                       "[default: the newest release of each engine].", envvar="QUANTADVISE_ENGINE",
                                       autocompletion=completion.engines)
    ] = None,
    gpu: GpuOpt = None,
    hub: Annotated[
        bool, typer.Option("--hub", help="Ask the Hugging Face Hub's model tree (base_model:quantized:MODEL) live "
                           "instead of the bundled index, reading each variant's config.json (HF cache).")
    ] = False,
    fmt: FormatOpt = Format.table,
    wide: WideOpt = False,
) -> None:
    """List the published quantized checkpoints of a model (RedHatAI, NVIDIA, Qwen, AMD, hugging-quants
    ...): scheme, size on disk, each engine release's verdict on the GPU (the resolver `inspect` uses),
    the producer's published accuracy evidence, and downloads / likes where a Hub listing showed them.
    Offline from the bundled index (data/checkpoints.yaml); --hub asks the Hub. --gpu defaults to the H100.

    Example: quantadvise checkpoints meta-llama/Llama-3.1-8B-Instruct --gpu l40s
    """
    from ..api.checkpoints import checkpoints

    report = checkpoints(model, engines=engine or None, gpu=gpu, hub=hub)
    emit_report("checkpoints", fmt, report, wide=wide)
