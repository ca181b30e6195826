"""``quantadvise validate``: how well each performance model predicts a calibrated profile."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import defaults
from ..files import writing
from .common import Format, FormatOpt, WideOpt, check_plot_target, emit_report, wrote


def validate_cmd(
    profile: Annotated[
        Path | None, typer.Argument(metavar="PROFILE", help="A profile written by `quantadvise calibrate`, or a "
                                    "shipped one by GPU id (h100-sxm) or profile id (h100-sxm-measured); not with "
                                    "--census.", dir_okay=False)
    ] = None,
    census: Annotated[
        bool, typer.Option("--census", help="Instead of a profile: what prices each decision scheme's own layers "
                           "(its kernel's published table, a same-math table, a composition, a stand-in's curve, "
                           "the roofline) on every GPU with published tables under each engine's newest release, "
                           "and the shares; exit 1 below the 70% bar.")
    ] = False,
    max_error: Annotated[
        float, typer.Option("--max-error", min=0.1, help="Largest error allowed, percent: the calibrated model's at "
                            "any batch, a kernel curve's worst held-out decode step (fused-MoE: call); exit 1 "
                            "above it.")
    ] = round(defaults.MAX_VALIDATION_ERROR * 100, 6),
    project_bars: Annotated[
        bool, typer.Option("--project-bars", help="Also exit 1 when a kernel curve misses the project's bars for "
                           "its shipped profiles (8% median / 20% worst held-out step; plain bf16 5% / 12%); "
                           "without it they are a report line only.")
    ] = False,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write measured vs predicted (every model) per scheme to FILE.png "
                                  "or FILE.svg (needs the [plot] extra).", dir_okay=False)
    ] = None,
    fmt: FormatOpt = Format.table,
    wide: WideOpt = False,
) -> None:
    """Predicted vs measured decode-linear time per scheme and batch, with the error of the ideal
    (spec sheet), default-efficiency, measured-ceilings and calibrated models. The calibrated model
    is checked leave-one-out: its prediction at each batch is fitted without that batch. A kernel
    profile (the shipped ones) shows each curve's error on held-out measurements. Exit 1 when the
    calibrated model, or a kernel curve's worst held-out step, misses by more than --max-error.

    Example: quantadvise validate h100-sxm-2026-11-29.yaml --plot validate.png

    Example: quantadvise validate h100-sxm --max-error 60 --project-bars

    Example: quantadvise validate --census
    """
    from ..api.calibrate import validate
    from ..errors import InputError

    if census:
        if profile is not None or plot is not None:
            raise InputError("--census takes no PROFILE and no --plot", field="census")
        from ..api.census import census as run_census

        found = run_census()
        emit_report("census", fmt, found, wide=wide)
        raise typer.Exit(found.exit_code())
    if profile is None:
        raise InputError("give a PROFILE (a file, a GPU id or a profile id), or --census", field="profile")

    made = check_plot_target(plot) if plot is not None else None  # a bad --plot: one error line, before any work
    result = validate(profile, max_error=max_error / 100, project_bars=project_bars)
    if plot is not None:
        from ..report.calibrate import write_validation_plot

        with writing(plot, "--plot"):
            write_validation_plot(result, plot)
    emit_report("validate", fmt, result, wide=wide)
    if plot is not None:
        wrote(plot, made)
    raise typer.Exit(result.exit_code())
