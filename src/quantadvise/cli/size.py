"""``quantadvise size``: whole-model memory under a scheme."""

from typing import Annotated

import typer

from .. import defaults
from . import completion, size_run
from .common import Format
from .options import BatchOpt, CtxOpt, FormatOpt, GpuOpt, GpusOpt, KvOpt, ModelArg, WideOpt, line_given


def size_cmd(
    click_ctx: typer.Context,
    model: ModelArg = defaults.MODEL,
    model_opt: Annotated[
        str | None,
        typer.Option("--model", "-m", help="The model, as an option (as in recommend, roofline and calibrate); "
                     "the same as the MODEL argument.", autocompletion=completion.models),
    ] = None,
    scheme: Annotated[
        str | None,
        typer.Option("--scheme", "-s", help="Preset id/alias (w4a16, awq, gptq, fp8-dynamic, nvfp4 ...) or a "
                     "scheme YAML file. Default: the checkpoint as shipped (its quantization_config), bf16 for a "
                     "16-bit checkpoint.", envvar="QUANTADVISE_SCHEME", autocompletion=completion.schemes),
    ] = None,
    bits: Annotated[int | None, typer.Option("--bits", help="Integer weight bits (2-8; 16 = unquantized).")] = None,
    group: Annotated[
        int | None, typer.Option("--group", help="Weight group size along K (-1 = per-channel); default 128.")
    ] = None,
    sym: Annotated[
        bool | None,
        typer.Option("--sym/--asym", help="With --bits: symmetric (no zero-point) or asymmetric [default: asym, "
                     "a scale and a zero-point per group as AWQ/GPTQ store them]."),
    ] = None,
    lm_head: Annotated[
        bool | None, typer.Option("--lm-head/--no-lm-head", help="Quantize lm_head too [default: no].")
    ] = None,
    embedding: Annotated[
        bool | None, typer.Option("--embedding/--no-embedding", help="Quantize the embedding [default: no].")
    ] = None,
    kv_dtype: KvOpt = None,
    ctx: CtxOpt = None,
    batch: BatchOpt = 1,
    gpu: GpuOpt = None,
    gpus: GpusOpt = 1,
    mtp: Annotated[bool, typer.Option("--mtp", help="Include a multi-token-prediction module (DeepSeek-V3).")] = False,
    memory_utilization: Annotated[
        float | None, typer.Option("--memory-utilization", help="Fraction of GPU memory the engine may use (vLLM's "
                                   "--gpu-memory-utilization) [default: the newest bundled vLLM's default].")
    ] = None,
    reserve_gb: Annotated[
        float, typer.Option("--reserve-gb", help="Runtime reserve per GPU in GiB, 2^30 bytes (CUDA context, "
                            "activations, CUDA graphs); reports print decimal GB: 2 GiB = 2.15 GB.")
    ] = defaults.RESERVE_GB,
    profile: Annotated[
        str | None, typer.Option("--profile", help="A deployment profile (`calibrate --from-bench`) or an efficiency "
                                 "profile: read and reported; memory does not depend on it.")
    ] = None,
    fmt: FormatOpt = Format.table,
    wide: WideOpt = False,
) -> None:
    """Whole-model memory for a scheme: every component's params, bits per param and bytes, the
    ratio against bf16, effective bits per quantized weight (scales and zero-points included),
    the KV cache for --batch x --ctx, and whether it fits --gpu.

    Example: quantadvise size meta-llama/Llama-3-8B --bits 4 --group 128
    """
    options = dict(locals())
    size_run.run_size(given=line_given(options.pop("click_ctx")), **options)
