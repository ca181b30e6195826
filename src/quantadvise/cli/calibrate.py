"""``quantadvise calibrate``: measure the GPU and write an efficiency profile (docs/calibration.md)."""

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import defaults
from ..wording import install_forms
from . import completion
from .common import Format, check_output_path, emit_report, say
from .options import FormatOpt, ModelOpt, WideOpt


def calibrate_cmd(
    click_ctx: typer.Context,
    files: Annotated[
        list[Path] | None, typer.Argument(metavar="FILE", help="With --from-bench: the benchmark result files to "
                                          "fit (vllm bench serve / latency / throughput JSON, SGLang bench_serving "
                                          "JSONL, genai-perf, GuideLLM).", dir_okay=False)
    ] = None,
    from_bench: Annotated[
        bool, typer.Option("--from-bench", help="Fit a deployment profile (the serving loop's terms per GPU and "
                           "engine release) to FILE...; recommend, roofline, size and check take it with --profile.")
    ] = False,
    holdout: Annotated[
        list[Path] | None, typer.Option("--holdout", help="With --from-bench: a benchmark file priced by the fitted "
                                        "profile but not fitted (repeat for several).", dir_okay=False)
    ] = None,
    model: ModelOpt = defaults.MODEL,
    schemes: Annotated[
        str | None,
        typer.Option("--schemes", "-s", help="Comma-separated schemes to measure [default: bf16, fp8-tensor, "
                     "fp8-dynamic, w8a8-int8, w4a16 — every scheme with a torch kernel].")
    ] = None,
    batches: Annotated[
        str, typer.Option("--batches", "-b", help="Batches (GEMM heights) to time: 1..4096 (doubling), 1,8,64 "
                          "or 16..256:16; at least 4.")
    ] = defaults.CALIBRATION_BATCHES,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Profile YAML to write [default: <profile id>.yaml here].",
                                  dir_okay=False)
    ] = None,
    backend: Annotated[
        str, typer.Option("--backend", help=f"torch (the local CUDA GPU; {install_forms('gpu')}) or "
                          "simulated (a synthetic GPU for demos and tests: not a measurement).")
    ] = "torch",
    gpu: Annotated[
        str | None, typer.Option("--gpu", help="GPU row (id or alias) [default: the name the driver reports]; "
                                 "required with --backend simulated.", envvar="QUANTADVISE_GPU",
                                 autocompletion=completion.gpus)
    ] = None,
    seconds: Annotated[
        float, typer.Option("--seconds", min=1.0, help="Timing budget in seconds (setup comes on top).")
    ] = defaults.CALIBRATION_SECONDS,
    seed: Annotated[int, typer.Option("--seed", help="Noise seed of the simulated backend.")] = 0,
    from_tables: Annotated[
        str | None, typer.Option("--from", help="Instead of timing this GPU, fit kernel curves for --gpu to NVIDIA's "
                                 f"published per-kernel tables: 'aiconfigurator' ({install_forms('aiconfigurator')}) "
                                 "or 'aiconfigurator:DIR' (an unpacked wheel).")
    ] = None,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")
    ] = True,
    fmt: FormatOpt = Format.table,
    wide: WideOpt = False,
) -> None:
    """Measure this GPU: achieved read bandwidth, dense GEMM throughput per math format, and the
    linear layers of a decode step of --model's shapes at every batch for each scheme with a torch
    kernel. Writes an efficiency profile that roofline, recommend and check take with --profile;
    `quantadvise validate FILE` shows how well it predicts.

    With --from aiconfigurator it times nothing: it fits per-kernel curves for --gpu to the published
    tables of the aiconfigurator-core package (docs/calibration.md), the way the shipped
    data/profiles/ were made.

    With --from-bench FILE... it times nothing either: it fits the serving loop's end-to-end terms to
    your own benchmark results (vllm bench serve ... --save-result, SGLang bench_serving), per GPU and
    engine release, each file left out in turn (and --holdout files priced, not fitted), and writes a
    deployment profile (--out, default site.yaml).

    Example: quantadvise calibrate --model meta-llama/Llama-3.1-8B --out h100.yaml  # template: a CUDA GPU

    Example: quantadvise calibrate --backend simulated --gpu h100 --out sim.yaml  # no GPU: not a measurement

    Example: quantadvise calibrate --from-bench tests/fixtures/bench/vllm_bench_serve_0.33.0.json
    tests/fixtures/bench/sglang_bench_serving_0.5.23.jsonl --gpu h100 --out site.yaml
    """
    from ..api.calibrate import calibrate, import_tables

    if out is not None:  # an unwritable --out is one error line before any timing or fitting
        check_output_path(out, "--out")
    if from_bench:
        from ..api.bench import calibrate_from_bench

        typed = getattr(click_ctx.get_parameter_source("model"), "name", None) in ("COMMANDLINE", "ENVIRONMENT")
        given = {"model": model if typed else None, "gpu": gpu}
        site = calibrate_from_bench(list(files or []), out=out, holdout=list(holdout or []), **given)
        emit_report("calibrate_bench", fmt, site, wide=wide)
        sys.stderr.write(f"wrote {site.profile_path}\n")
        return
    if files:
        raise typer.BadParameter("files are read with --from-bench", param_hint="FILE")
    if from_tables is not None:
        kind, _, where = from_tables.partition(":")
        if kind.strip().lower() != "aiconfigurator":
            raise typer.BadParameter("use --from aiconfigurator (or aiconfigurator:DIR)", param_hint="--from")
        if gpu is None:
            raise typer.BadParameter("--from needs --gpu (the GPU whose tables to fit)", param_hint="--gpu")
        imported = import_tables(gpu, source=where or None, out=out)
        emit_report("calibrate_import", fmt, imported, wide=wide)
        say(f"wrote {imported.profile_path} and {imported.heldout_path}\n")
        return
    args = ["--model", model, "--batches", batches, "--backend", backend, "--seconds", f"{seconds:g}"]
    args += ["--schemes", schemes] if schemes else []
    args += ["--gpu", gpu] if gpu else []
    args += ["--seed", str(seed)] if backend == "simulated" else []
    command = "quantadvise calibrate " + " ".join(shlex.quote(a) for a in args)
    bar = _ProgressBar() if progress else None
    try:
        result = calibrate(model, schemes, batches=batches, backend=backend, gpu=gpu, seconds=seconds, seed=seed,
                           out=out, command=command, progress=bar)
    finally:
        if bar is not None:
            bar.stop()
    emit_report("calibrate", fmt, result, wide=wide)
    say(f"wrote {result.profile_path}\n")


class _ProgressBar:
    """A rich progress bar on stderr, started on the first update (rich is imported lazily); silent
    when stderr is not a terminal (CI logs get the summary, not a redrawn bar)."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._task: Any = None
        self._off = not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty())

    def __call__(self, what: str, done: int, total: int) -> None:
        if self._off:
            return
        if self._bar is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = Progress(TextColumn("calibrate"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.description}"), TimeElapsedColumn(),
                                 console=Console(file=sys.stderr), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(what, total=total)
        self._bar.update(self._task, completed=done, total=total, description=what)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
