"""``quantadvise roofline``: decode step time, tokens/s and bound per scheme x batch x context."""

from pathlib import Path
from typing import Annotated

import typer

from .. import defaults
from ..files import writing
from . import completion
from .common import TableJsonCsv, check_plot_target, emit_report, input_file, wrote
from .options import AcceptanceOpt, KvOpt, ModelOpt, SpecTokensOpt, UsdPerGpuHourOpt, WideOpt

CURVE_POINTS = 160


def roofline_cmd(
    model: ModelOpt = defaults.MODEL,
    gpu: Annotated[
        str, typer.Option("--gpu", help="GPU id or alias (h100, h200, a100-80gb, l40s, mi300x, b200 ...).",
                          envvar="QUANTADVISE_GPU")
    ] = defaults.GPU,
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs in tensor parallel (modelled).",
                                      envvar="QUANTADVISE_GPUS")] = 1,
    scheme: Annotated[
        str | None,
        typer.Option("--scheme", "-s", help="Comma-separated presets or scheme YAML files [default: bf16, w4a16 "
                     "and fp8-dynamic (alias w8a8-fp8), or w8a8-int8 on GPUs without fp8].", envvar="QUANTADVISE_SCHEME",
                     autocompletion=completion.scheme_list),
    ] = None,
    kv_dtype: KvOpt = None,
    batch: Annotated[
        str | None, typer.Option("--batch", "-b", help="Batches: 1,8,64,512 or a range 1..512 (doubling) or "
                                 f"16..256:16 [default: {defaults.ROOFLINE_BATCHES}; with --pareto "
                                 f"{defaults.PARETO_BATCHES}].", show_default=False)
    ] = None,
    ctx: Annotated[
        str, typer.Option("--ctx", help="Context tokens per sequence: 2048 or 512,2k,32k.")
    ] = defaults.ROOFLINE_CONTEXTS,
    prompt: Annotated[
        int | None, typer.Option("--prompt", help="Prompt tokens: adds the prefill time (TTFT) per point.")
    ] = None,
    group: Annotated[
        int | None, typer.Option("--group", help="Weight group size along K for every scheme with per-group "
                                 "weight scales [default: each preset's; the default list fits the model].")
    ] = None,
    ideal: Annotated[
        bool, typer.Option("--ideal", help="Spec-sheet peaks: efficiency 1, no dequantisation cost.")
    ] = False,
    profile: Annotated[
        Path | None, typer.Option("--profile", help="Efficiency profile YAML layered over the default "
                                  "(docs/roofline.md).", dir_okay=False)
    ] = None,
    engine: Annotated[
        str | None, typer.Option("--engine", help="Engine whose kernels price the linear layers: vllm or sglang "
                                 "[default: vllm].", envvar="QUANTADVISE_ENGINE",
                                 autocompletion=completion.engines)
    ] = None,
    engine_version: Annotated[
        str | None, typer.Option("--engine-version", help="Engine release [default: the newest on file].")
    ] = None,
    quantization: Annotated[
        str | None, typer.Option("--quantization", help="The --quantization method the engine is started with, "
                                 "where it changes the kernel (SGLang --quantization awq: dequantize + cuBLAS).")
    ] = None,
    decoder_only: Annotated[
        bool, typer.Option("--decoder-only", help="Count only decoder linear matrices, KV and the residual "
                           "stream (the chapter's accounting; no embedding, lm_head, norms, logits).")
    ] = False,
    pareto: Annotated[
        bool, typer.Option("--pareto", help="Serving points under continuous batching: tokens/s per GPU vs per user "
                           "for each scheme across batch, each scheme's frontier and the point to run at.")
    ] = False,
    output: Annotated[
        int | None, typer.Option("--output", help=f"With --pareto: output tokens per request [default: "
                                 f"{defaults.OUTPUT_TOKENS}]; --prompt is the prompt, --ctx what a decode step reads.")
    ] = None,
    ttft_ms: Annotated[float | None, typer.Option("--ttft-ms", help="With --pareto: TTFT budget, ms.")] = None,
    itl_ms: Annotated[float | None, typer.Option("--itl-ms", help="With --pareto: mean inter-token latency "
                                                 "budget, ms (drawn as a line).")] = None,
    e2e_ms: Annotated[float | None, typer.Option("--e2e-ms", help="With --pareto: end-to-end budget, ms.")] = None,
    usd_per_gpu_hour: UsdPerGpuHourOpt = None,
    spec_tokens: SpecTokensOpt = None,
    acceptance: AcceptanceOpt = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write step time and tokens/s vs batch (with --pareto: the frontier) "
                                  "to FILE.png or FILE.svg (needs the [plot] extra).", dir_okay=False)
    ] = None,
    chart: Annotated[
        bool, typer.Option("--chart/--no-chart", help="Terminal chart under the table when it is wide enough.")
    ] = True,
    wide: WideOpt = False,
    fmt: Annotated[
        TableJsonCsv,
        typer.Option("--format", "-f", help="table, json (the report only on stdout) or csv (one row per point; "
                     "with --pareto one row per serving point).",
                     envvar="QUANTADVISE_FORMAT", case_sensitive=False),
    ] = TableJsonCsv.table,
) -> None:
    """Predict what a decode step costs and why, per scheme, as batch and context grow: step time,
    tokens/s, memory- or compute-bound, bytes of weights / KV / activations, each scheme's ridge
    batch and where the fastest scheme changes. A model, not a measurement: on a GPU with published
    kernel tables (data/kernel_tables/) each linear layer is priced by the table of the kernel the engine
    runs for it (else a same-math table, a composition, or a measured curve, data/profiles/), every
    scheme line names it, and each point carries its uncertainty band; --ideal gives the spec-sheet bound.
    --pareto turns each batch into a serving point (tokens/s per GPU vs per user, ITL, TTFT under load,
    $/Mtok) and marks each scheme's frontier.

    Example: quantadvise roofline --model meta-llama/Llama-3-8B --gpu h100 --batch 1..1024

    Example: quantadvise roofline -m meta-llama/Llama-3.1-70B --pareto --prompt 2000 --ctx 2128 --itl-ms 50
    """
    from ..api.roofline import roofline
    from ..inputs import engine_spec

    engine, engine_version = engine_spec(engine, engine_version)  # NAME==VERSION, as every command reads it
    input_file(profile, "profile", "a profile YAML file (`quantadvise calibrate` writes one)")

    made = check_plot_target(plot) if plot is not None else None  # a bad --plot: one error line, before any work
    drawn = fmt == TableJsonCsv.table and chart and not pareto
    result = roofline(
        model,
        scheme,
        gpu=gpu,
        gpus=gpus,
        kv_dtype=kv_dtype,
        batches=batch,
        ctx=ctx,
        prompt=prompt,
        group=group,
        ideal=ideal,
        profile=profile,
        scope="decoder" if decoder_only else "full",
        curve_points=CURVE_POINTS if ((plot is not None and not pareto) or drawn) else 0,
        engine=engine,
        engine_version=engine_version,
        quantization=quantization,
        pareto=pareto,
        output=output,
        ttft_ms=ttft_ms,
        itl_ms=itl_ms,
        e2e_ms=e2e_ms,
        usd_per_gpu_hour=usd_per_gpu_hour,
        spec_tokens=spec_tokens,
        acceptance=acceptance,
    )
    if plot is not None:
        from ..report.roofline import write_pareto_plot, write_plot

        with writing(plot, "--plot"):
            (write_pareto_plot if pareto else write_plot)(result, plot)
    if fmt == TableJsonCsv.table:
        emit_report("roofline", fmt, result, wide=wide, show_chart=drawn)
    else:
        emit_report("roofline", fmt, result, wide=wide)
    if plot is not None:
        wrote(plot, made)
