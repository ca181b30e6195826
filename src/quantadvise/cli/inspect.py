"""``quantadvise inspect``: a checkpoint's quantization, its size on disk, and each engine's verdict."""

from typing import Annotated

import typer

from . import completion
from .common import Format, emit_report
from .options import FormatOpt, GpuOpt, WideOpt


def inspect_cmd(
    model: Annotated[
        str, typer.Argument(help="Bundled id, local folder or JSON file (config.json, quantization_config, "
                            "hf_quant_config.json), or a Hub id (local cache first).", envvar="QUANTADVISE_MODEL",
                            autocompletion=completion.models)
    ],
    engine: Annotated[
        list[str] | None, typer.Option("--engine", "-e", help="vllm, sglang or NAME==VERSION; repeat for several "
                                       "[default: every engine on file].", envvar="QUANTADVISE_ENGINE",
                                       autocompletion=completion.engines)
    ] = None,
    gpu: GpuOpt = None,
    quantization: Annotated[
        str | None, typer.Option("--quantization", "-q", help="The --quantization you would pass to the engine.")
    ] = None,
    kv_cache_dtype: Annotated[
        str | None, typer.Option("--kv-cache-dtype", help="The --kv-cache-dtype you would pass [default: auto].",
                                 autocompletion=completion.kv_cache_dtypes)
    ] = None,
    allow_deprecated: Annotated[
        bool, typer.Option("--allow-deprecated-quantization", help="As vLLM's flag: deprecated methods warn "
                           "instead of refusing.")
    ] = False,
    fmt: FormatOpt = Format.table,
    wide: WideOpt = False,
) -> None:
    """Read a checkpoint's quantization_config back into the six axes (one row per config group,
    with the layers it takes), predict its size on disk from the sizing code and its on-disk
    layout, and say what each engine does with it: the method it resolves to, the
    compressed-tensors scheme each group dispatches to, and every refusal or warning in the
    engine's own words. --gpu takes a GPU id or a compute capability (sm75, 8.9).

    Example: quantadvise inspect examples/passing-repo/checkpoint --gpu a10g --engine sglang
    """
    from ..api.inspect import inspect

    report = inspect(
        model, engines=engine or None, gpu=gpu, quantization=quantization, kv_cache_dtype=kv_cache_dtype,
        allow_deprecated=allow_deprecated,
    )
    emit_report("inspect", fmt, report, wide=wide)
