"""``quantadvise size``: whole-model memory under a scheme."""

from typing import Annotated

import typer

from .. import defaults
from . import completion
from .common import Format, emit_report, warn
from .options import BatchOpt, CtxOpt, FormatOpt, GpuOpt, GpusOpt, KvOpt, ModelArg, WideOpt


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
    import os

    from ..api.size import size
    from ..inputs import check
    from ..inputs import engine as check_engine

    # `size` names no engine (its GPU share is the newest bundled vLLM's), but it reads its defaults from
    # the same QUANTADVISE_* variables as recommend, roofline and check: a bad QUANTADVISE_ENGINE is the
    # same error here, and a good one that size cannot follow is said, not silently dropped
    if scheme is not None and "," in scheme:  # QUANTADVISE_SCHEME=bf16,w4a16 is roofline's comma list
        from ..errors import InputError

        raise InputError(f"--scheme takes one scheme in `size`, got {scheme!r} (a comma list is for roofline and "
                         "recommend --candidates)", hint="give one, e.g. --scheme w4a16", field="scheme")
    if model_opt is not None:
        typed = getattr(click_ctx.get_parameter_source("model"), "name", None) == "COMMANDLINE"  # not a default
        if typed and model_opt != model:
            from ..errors import InputError

            raise InputError(f"two models given: the MODEL argument '{model}' and --model '{model_opt}'",
                             hint="give one of them", field="model")
        model = model_opt
    env_engine = check_engine(os.environ.get("QUANTADVISE_ENGINE") or None)
    if env_engine not in (None, defaults.ENGINE) and gpu is not None and memory_utilization is None:
        warn(f"QUANTADVISE_ENGINE={env_engine}: `size` names no engine and takes the newest bundled "
             f"{defaults.ENGINE}'s share of each GPU (--memory-utilization to give {env_engine}'s)")
    report = size(
        model,
        scheme,
        bits=bits,
        group=group,
        symmetric=sym,
        lm_head=lm_head,
        embedding=embedding,
        kv_dtype=kv_dtype,
        ctx=ctx,
        batch=batch,
        gpu=gpu,
        gpus=gpus,
        include_mtp=mtp,
        memory_utilization=memory_utilization,
        reserve_bytes=int(check("reserve_gb", reserve_gb) * defaults.GiB),  # checked before it becomes bytes
        profile=profile,
    )
    emit_report("size", fmt, report, wide=wide)
