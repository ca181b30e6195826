"""``quantadvise validate``: how well each performance model predicts a calibrated profile, the user's
benchmark files (``--bench``), or the published end-to-end points (``--e2e``)."""

from pathlib import Path
from typing import Annotated

import typer

from .. import defaults
from ..files import writing
from . import completion
from .common import Format, check_plot_target, emit_report, wrote
from .options import FormatOpt, WideOpt

BENCH = "Workload of --bench files (what a file does not record)"


def validate_cmd(
    files: Annotated[
        list[Path] | None, typer.Argument(
            metavar="PROFILE|FILE", help="A profile written by `quantadvise calibrate`, or a shipped one by GPU "
            "(h100, h100-sxm) or profile id (h100-sxm-measured); not with --census or --e2e; with --bench, benchmark "
            "result files (vllm bench serve / latency / throughput JSON, SGLang bench_serving JSONL, genai-perf, GuideLLM).", dir_okay=False)
    ] = None,
    bench: Annotated[
        bool, typer.Option("--bench", help="Read FILE... as benchmark results: per run the workload recovered, "
                           "predicted vs measured output tokens/s, TTFT, TPOT and E2E, and the error.")
    ] = False,
    e2e: Annotated[
        bool, typer.Option("--e2e", help="The serving-loop model on the bundled published end-to-end points: median "
                           "|error| per concurrency band, fitted and held-out sources, beside aiconfigurator.")
    ] = False,
    census: Annotated[
        bool, typer.Option("--census", help="Instead of a profile: what prices each decision scheme's own layers "
                           "(its kernel's published table, a same-math table, a composition, a stand-in's curve, "
                           "the roofline) on every GPU with published tables under each engine's newest release, "
                           "and the shares; exit 1 below the 70% bar.")
    ] = False,
    max_error: Annotated[
        float | None, typer.Option("--max-error", min=0.1, help="Largest error allowed, percent: the calibrated "
                                   "model's at any batch, a kernel curve's worst held-out decode step (fused-MoE: "
                                   "call); with --bench any run's output tokens/s; with --e2e the median per band; "
                                   "exit 1 above it [default: "
                                   f"{defaults.MAX_VALIDATION_ERROR * 100:g} for a calibration and --bench; a shipped "
                                   "profile's curves: the held-out error it records, docs/calibration.md §7; --e2e: "
                                   "10 per band, docs/calibration.md §9].", show_default=False)
    ] = None,
    project_bars: Annotated[
        bool, typer.Option("--project-bars", help="Also exit 1 when a kernel curve misses the project's bars for "
                           "its shipped profiles (8% median / 20% worst held-out step; plain bf16 5% / 12%); "
                           "without it they are a report line only.")
    ] = False,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write measured vs predicted (every model) per scheme to FILE.png "
                                  "or FILE.svg (needs the [plot] extra).", dir_okay=False)
    ] = None,
    profile: Annotated[
        Path | None, typer.Option("--profile", help="With --bench: a deployment profile (`calibrate --from-bench`) "
                                  "whose terms price the runs [default: the shipped terms].", dir_okay=False)
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model id or path.", rich_help_panel=BENCH,
                                              autocompletion=completion.models)] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="GPU row (id or alias).", rich_help_panel=BENCH,
                                            autocompletion=completion.gpus)] = None,
    tp: Annotated[int | None, typer.Option("--tp", min=1, help="Tensor-parallel degree.", rich_help_panel=BENCH)] = None,
    scheme: Annotated[str | None, typer.Option("--scheme", "-s", help="Quantization preset served.",
                                               rich_help_panel=BENCH)] = None,
    kv_cache_dtype: Annotated[str | None, typer.Option("--kv-cache-dtype", help="The server's --kv-cache-dtype "
                                                       "(fp8, auto).", rich_help_panel=BENCH)] = None,
    engine: Annotated[str | None, typer.Option("--engine", help="vllm or sglang.", rich_help_panel=BENCH)] = None,
    engine_version: Annotated[str | None, typer.Option("--engine-version", help="Engine release.",
                                                       rich_help_panel=BENCH)] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1, help="Requests in flight (vllm bench "
                                                    "latency: its --batch-size).", rich_help_panel=BENCH)] = None,
    prompt: Annotated[int | None, typer.Option("--prompt", min=1, help="Prompt tokens per request.",
                                               rich_help_panel=BENCH)] = None,
    output: Annotated[int | None, typer.Option("--output", min=1, help="Output tokens per request.",
                                               rich_help_panel=BENCH)] = None,
    fmt: FormatOpt = Format.table,
    wide: WideOpt = False,
) -> None:
    """Predicted vs measured decode-linear time per scheme and batch, with the error of the ideal
    (spec sheet), default-efficiency, measured-ceilings and calibrated models. The calibrated model
    is checked leave-one-out: its prediction at each batch is fitted without that batch. A kernel
    profile (the shipped ones) shows each curve's error on held-out measurements. Exit 1 when the
    calibrated model, or a kernel curve's worst held-out step, misses by more than --max-error (a
    shipped curve, without it: when it misses by more than the error its profile records).

    With --bench, the runs of benchmark result files against the serving-loop model (exit 1 when a
    run's output tokens/s misses by more than --max-error); with --e2e, the model on the bundled
    published end-to-end points, and the speed-up between two quantization choices (scheme or KV
    cache dtype) where a source ran both (docs/calibration.md §9). A partial or malformed file is one Error line (exit 2).

    Example: quantadvise validate h100

    Example: quantadvise validate h100-sxm --max-error 60 --project-bars  # exit 1: the bars

    Example: quantadvise validate --bench tests/fixtures/bench/vllm_bench_serve_0.33.0.json --gpu h100

    Example: quantadvise validate --e2e

    Example: quantadvise validate --census
    """
    from ..inputs import check

    for field, value in (("tp", tp), ("concurrency", concurrency), ("prompt", prompt), ("output", output)):
        check(field, value)  # the one input layer, with --bench or not: 400 digits are one error line
    paths = list(files or [])
    if sum((bench, e2e, census)) > 1:
        raise typer.BadParameter("give one of --bench FILE..., --e2e and --census", param_hint="--bench")
    if census or e2e:
        _bundled(census, paths, plot, max_error, fmt, wide)
    if bench:
        from ..api.bench import validate_bench

        given = {"model": model, "gpu": gpu, "tp": tp, "scheme": scheme, "kv_cache_dtype": kv_cache_dtype,
                 "engine": engine, "engine_version": engine_version, "concurrency": concurrency, "prompt": prompt,
                 "output": output}
        bar = defaults.MAX_VALIDATION_ERROR if max_error is None else max_error / 100
        res = validate_bench(list(paths), max_error=bar, profile=profile, **given)
        emit_report("validate_bench", fmt, res, wide=wide)
        raise typer.Exit(res.exit_code())
    if len(paths) != 1:
        raise typer.BadParameter("give one PROFILE (or --bench FILE..., --e2e or --census)", param_hint="PROFILE")
    from ..api.calibrate import validate

    made = check_plot_target(plot) if plot is not None else None  # a bad --plot: one error line, before any work
    result = validate(paths[0], max_error=None if max_error is None else max_error / 100, project_bars=project_bars)
    if plot is not None:
        from ..report.calibrate import write_validation_plot

        with writing(plot, "--plot"):
            write_validation_plot(result, plot)
    emit_report("validate", fmt, result, wide=wide)
    if plot is not None:
        wrote(plot, made)
    raise typer.Exit(result.exit_code())


def _bundled(census: bool, paths: list[Path], plot: Path | None, max_error: float | None, fmt: Format,
             wide: bool) -> None:
    """``--census`` or ``--e2e``: the bundled tables' report (no file); exits with its code."""
    if census:
        if paths or plot is not None:
            raise typer.BadParameter("--census takes no PROFILE and no --plot", param_hint="--census")
        from ..api.census import census as run_census

        found = run_census()
        emit_report("census", fmt, found, wide=wide)
        raise typer.Exit(found.exit_code())
    from ..api.e2e import validate_e2e

    if paths:
        raise typer.BadParameter("--e2e reads the bundled points; it takes no file", param_hint="--e2e")
    report = validate_e2e(bar=None if max_error is None else max_error / 100)
    emit_report("validate_e2e", fmt, report, wide=wide)
    raise typer.Exit(report.exit_code())
