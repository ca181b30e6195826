"""Renderers: pure ``(result) -> str`` functions, one per (command, format).

``render(kind, fmt, result)`` looks the renderer up lazily, so a JSON run never imports the table
code. A test asserts every (command, format) the CLI offers has a renderer here.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..wording import json_text, printable

RENDERERS: dict[tuple[str, str], str] = {
    ("list", "table"): "quantadvise.report.listing:table",
    ("list", "json"): "quantadvise.report:to_json",
    ("recommend", "table"): "quantadvise.report.recommend:table",
    ("recommend", "explain"): "quantadvise.report.recommend:explain",
    ("recommend", "json"): "quantadvise.report:to_json",
    ("deploy", "table"): "quantadvise.report.layouts:deploy_table",
    ("deploy", "json"): "quantadvise.report:to_json",
    ("recommend", "bench_plan"): "quantadvise.report.bench:bench_plan_table",
    ("size", "table"): "quantadvise.report.size:table",
    ("size", "json"): "quantadvise.report:to_json",
    ("roofline", "table"): "quantadvise.report.roofline:table",
    ("roofline", "json"): "quantadvise.report:to_json",
    ("roofline", "csv"): "quantadvise.report.roofline:to_csv",
    ("accuracy", "table"): "quantadvise.report.accuracy:table",
    ("accuracy", "json"): "quantadvise.report:to_json",
    ("engines", "table"): "quantadvise.report.engines:listing",
    ("engines", "json"): "quantadvise.report:to_json",
    ("engine_method", "table"): "quantadvise.report.engines:method",
    ("engine_method", "json"): "quantadvise.report:to_json",
    ("engines_diff", "table"): "quantadvise.report.engines:diff",
    ("engines_diff", "json"): "quantadvise.report:to_json",
    ("inspect", "table"): "quantadvise.report.inspect:table",
    ("inspect", "json"): "quantadvise.report:to_json",
    ("checkpoints", "table"): "quantadvise.report.checkpoints:table",
    ("checkpoints", "json"): "quantadvise.report:to_json",
    ("check", "table"): "quantadvise.report.gate:table",
    ("check", "json"): "quantadvise.report:to_json",
    ("check", "markdown"): "quantadvise.report.gate:markdown",
    ("check", "github"): "quantadvise.report.gate:github",
    ("check", "sarif"): "quantadvise.report.gate:sarif",
    ("check", "junit"): "quantadvise.report.gate:junit",
    ("check_init", "table"): "quantadvise.report.gate:init_table",
    ("check_init", "json"): "quantadvise.report:to_json",
    ("calibrate", "table"): "quantadvise.report.calibrate:calibrate_table",
    ("calibrate", "json"): "quantadvise.report:to_json",
    ("calibrate_import", "table"): "quantadvise.report.calibrate:import_table",
    ("calibrate_import", "json"): "quantadvise.report:to_json",
    ("validate", "table"): "quantadvise.report.calibrate:validate_table",
    ("validate", "json"): "quantadvise.report:to_json",
    ("census", "table"): "quantadvise.report.calibrate:census_table",
    ("census", "json"): "quantadvise.report:to_json",
    ("validate_bench", "table"): "quantadvise.report.bench:bench_table",
    ("validate_bench", "json"): "quantadvise.report:to_json",
    ("validate_e2e", "table"): "quantadvise.report.bench:e2e_table",
    ("validate_e2e", "json"): "quantadvise.report:to_json",
    ("calibrate_bench", "table"): "quantadvise.report.bench:site_table",
    ("calibrate_bench", "json"): "quantadvise.report:to_json",
}


def to_json(result: Any) -> str:
    """JSON is the result model's own dump (it carries schema_version); never a hand-built dict. A name
    that is not UTF-8 is written as its printable ``\\xNN`` form (:func:`~quantadvise.wording.json_text`)."""
    return json_text(result.model_dump(mode="json"), indent=2)


# the text layouts, fitted to the terminal's width (``recommend --explain`` / ``--bench-plan`` are layouts of the
# table format); with markdown and github, what a person reads (its user text made printable)
TEXT_LAYOUTS = ("table", "explain", "bench_plan")
HUMAN = (*TEXT_LAYOUTS, "markdown", "github")


def render(kind: str, fmt: str, result: Any, **options: Any) -> str:
    """``result`` rendered as ``fmt``. ``width`` (the columns to fit; None: no limit) reaches the
    human renderers; machine formats (json, csv, sarif ...) ignore it."""
    target = RENDERERS.get((kind, fmt))
    if target is None:
        raise KeyError(f"no renderer for {kind} in {fmt}")
    module, func = target.split(":")
    fn = getattr(importlib.import_module(module), func)
    if "width" in options:
        import inspect

        if "width" not in inspect.signature(fn).parameters:
            options = {k: v for k, v in options.items() if k != "width"}
    text = fn(result, **options)
    # user text (a file, model or flag name) cannot drive the terminal: control characters and the bytes
    # of a name that is not UTF-8 are shown as \xNN (machine formats escape in their own syntax)
    return printable(text) if fmt in HUMAN else text
