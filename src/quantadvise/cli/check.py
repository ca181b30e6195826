"""``quantadvise check``: the CI gate for a deployment repository."""

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from ..wording import plural
from . import completion
from .common import CheckFormat, emit, input_file, say, terminal_width, warn
from .options import WideOpt


class FailOn(str, Enum):
    error = "error"
    warning = "warning"


def check_cmd(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(metavar="PATHS", help="Files or folders with the engine commands: shell scripts, "
                       "Dockerfiles, Kubernetes manifests, Helm values, compose files [default: the config's "
                       "deployment: list, else its folder, else .].", show_default=False),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="quantadvise.yaml or pyproject.toml [default: the nearest "
                                  "quantadvise.yaml / [tool.quantadvise] up to the repository root].",
                                  envvar="QUANTADVISE_CONFIG")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="The checkpoint served: Hub id or local "
                                              "folder / config.json.", envvar="QUANTADVISE_MODEL",
                                              autocompletion=completion.models)] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="GPU id or alias (h100, l4, a100-80gb ...).",
                                            envvar="QUANTADVISE_GPU", autocompletion=completion.gpus)] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", help="GPUs per replica, as declared.",
                                             envvar="QUANTADVISE_GPUS")] = None,
    engine: Annotated[str | None, typer.Option("--engine", help="vllm | sglang, when no command says.",
                                               envvar="QUANTADVISE_ENGINE", autocompletion=completion.engines)] = None,
    engine_version: Annotated[
        str | None, typer.Option("--engine-version", help="Engine release to check against (wins over the image "
                                 "tag) [default: the image tag, else the config, else the newest on file].")
    ] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", help="Concurrent sequences at peak, "
                                                    "the declared workload [default: workload.concurrency; the "
                                                    "engine's --max-num-seqs is a cap, not a workload].")] = None,
    ctx: Annotated[int | None, typer.Option("--ctx", help="Tokens per sequence, prompt + output.")] = None,
    quantization: Annotated[
        str | None, typer.Option("--quantization", "-q", help="The scheme the deployment should run (a preset: "
                                 "w4a16, awq, fp8-dynamic ...), checked for drift.",
                                 autocompletion=completion.schemes)
    ] = None,
    kv_cache_dtype: Annotated[
        str | None, typer.Option("--kv-cache-dtype", help="The KV cache dtype it should run (auto, fp8 ...).",
                                 autocompletion=completion.kv_cache_dtypes)
    ] = None,
    task: Annotated[str | None, typer.Option("--task", help="general | reasoning | code | long-generation | "
                                             "retrieval.", autocompletion=completion.tasks)] = None,
    profile: Annotated[
        Path | None, typer.Option("--profile", help="Efficiency profile YAML for the speed rules (measured with "
                                  "`quantadvise calibrate`).")
    ] = None,
    fmt: Annotated[CheckFormat, typer.Option("--format", "-f", help="Output format.", envvar="QUANTADVISE_FORMAT",
                                             case_sensitive=False)] = CheckFormat.table,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the report to FILE instead of "
                                                "stdout (a one-line summary goes to stderr).")] = None,
    fail_on: Annotated[FailOn | None, typer.Option("--fail-on", help="Lowest severity that fails the build "
                                                   "[default: the config's fail_on, else error].",
                                                   case_sensitive=False)] = None,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 whatever the findings (2 still means "
                                            "the check could not run).")] = False,
    baseline: Annotated[Path | None, typer.Option("--baseline", help="Ignore findings recorded in FILE "
                                                  "(fingerprints: rule + subject, not line numbers).")] = None,
    write_baseline: Annotated[Path | None, typer.Option("--write-baseline", help="Record every current finding "
                                                        "in FILE (they then pass).")] = None,
    upgrade_to: Annotated[
        str | None, typer.Option("--upgrade-to", help="ENGINE@VERSION (vllm@0.33.0): also judge every deployment "
                                 "on that release and report what the upgrade changes (QA112) [default: the "
                                 "config's upgrade_to].", show_default=False)
    ] = None,
    init: Annotated[bool, typer.Option("--init", help="Write a commented starter quantadvise.yaml (at --config, "
                                       "else ./quantadvise.yaml), filled in from PATHS (default: the working directory).")] = False,
    force: Annotated[bool, typer.Option("--force", help="With --init: overwrite an existing file.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also list, on stderr, every candidate file no "
                                          "reader took (and why).")] = False,
    wide: WideOpt = False,
) -> None:
    """Check a deployment in CI: the engine commands in PATHS and quantadvise.yaml against rules
    QA1xx (the engine refuses or misbehaves), QA2xx (speed), QA3xx (memory), QA4xx (accuracy
    evidence) and QA5xx (drift between checkpoint, flags and declaration). Findings name file and
    line. Exit 0 pass, 1 findings at or above --fail-on, 2 the check could not run.

    Example: quantadvise check examples/failing-repo/k8s/ --gpu h100 --format github  # exit 1
    """
    from ..api.check import check, check_init
    from ..inputs import engine as check_engine
    from ..inputs import engine_spec
    from ..report import render

    # the one engine check (and message) of every command; NAME==VERSION as engines and inspect read it
    engine, engine_version = engine_spec(engine, engine_version)
    if not init:
        input_file(config, "config", "the configuration file (quantadvise.yaml or pyproject.toml)",
                   exists="`quantadvise check --init` writes a starter")
    if upgrade_to is not None:
        from ..engines.versions import parse_target

        check_engine(parse_target(upgrade_to)[0], "upgrade_to")
    if init:
        result = check_init(config, paths or None, force=force)
        human = fmt.value != "json"
        emit(render("check_init", "table" if human else "json", result,
                    **({"width": terminal_width(wide)} if human else {})))
        return
    report = check(
        paths or None, config=config, model=model, gpu=gpu, gpus=gpus, engine=engine, engine_version=engine_version,
        concurrency=concurrency, ctx=ctx, quantization=quantization, kv_cache_dtype=kv_cache_dtype, task=task,
        profile=profile, fail_on=fail_on.value if fail_on else None, baseline=baseline, write_baseline=write_baseline,
        upgrade_to=upgrade_to,
    )
    for w in report.warnings:
        warn(w, wide=wide)
    if verbose:

        for f in report.files_scanned:
            say(f"read {f}\n")
        for s in report.files_skipped:
            say(f"skipped {s}\n")
    # the human table fits the terminal; a report written to a file (--output) or a machine format does not
    width = terminal_width(wide) if fmt.value == "table" and output is None else None
    text = render("check", fmt.value, report, **({"width": width} if fmt.value == "table" else {}))
    if output is not None:
        from ..files import write_file

        write_file(output, text if text.endswith("\n") else text + "\n", "--output")
        c = report.counts()
        warn_line = (f"quantadvise check: {'PASS' if report.passed else 'FAIL'} — {plural(c['error'], 'error')}, "
                     f"{plural(c['warning'], 'warning')}; {fmt.value} report written to {output}")

        say(warn_line + "\n")
    else:
        emit(text)
    raise typer.Exit(report.exit_code(exit_zero=exit_zero))
