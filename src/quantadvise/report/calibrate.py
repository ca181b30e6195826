"""Renderers for ``quantadvise calibrate`` and ``quantadvise validate`` (tables fitted to the
terminal width: the least important columns drop first, ``--wide`` shows them all; and the validate
plot through the optional ``[plot]`` extra, imported only when a plot is asked for)."""

from __future__ import annotations

import math
import shlex
from pathlib import Path

from ..calibration.lookup_checks import CensusResult
from ..calibration.run import CalibrationResult
from ..calibration.validate import CALIB_MODELS as MODELS
from ..calibration.validate import TableImportResult, ValidationResult, worst_error
from ..errors import InputError
from ..wording import install_hint, plural
from .text import Table, wrap, wrap_command

MODEL_LABELS = {"ideal": "ideal", "default-efficiency": "default", "calibrated-ceilings": "ceilings",
                "calibrated": "calibrated (LOO)"}


def _ms(s: float) -> str:
    if not math.isfinite(s):
        return "n/a"
    v = s * 1e3
    return f"{v:,.3f}" if v < 100 else f"{v:,.1f}"


def _pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x * 100:+.1f}%"


def _tflops(x: float) -> str:
    return f"{x / 1e12:,.1f} TFLOP/s"


def _profile_lines(path: str, width: int | None, extra: str = "") -> list[str]:
    """Where the profile was written, and the command that checks it (on lines of its own, never cut)."""
    return [*wrap(f"profile: {path} (use it with --profile{extra}); check it with:", width, subsequent="  "),
            *wrap_command(f"quantadvise validate {shlex.quote(path)}", width, indent="  ")]


def calibrate_table(r: CalibrationResult, width: int | None = None) -> str:
    p, g = r.provenance, r.gpu
    sim = " — SIMULATED, not a measurement" if p.simulated else ""
    stack = ", ".join(f"{k} {v}" for k, v in (("driver", p.driver_version), ("CUDA", p.cuda_version),
                                              ("torch", p.torch_version)) if v)
    lines = [
        *wrap(f"calibration of {g.id} (the driver says '{g.driver_name}'){sim}", width, subsequent="  "),
        *wrap(f"{p.backend} backend, {p.measured_on.isoformat()}" + (f", {stack}" if stack else "")
              + (f", {p.seconds:,.0f} s" if p.seconds else ""), width, subsequent="  "),
        *wrap("shapes of " + r.model + ": " + ", ".join(f"{s.name} {s.n}x{s.k}" for s in r.shapes)
              + (f", x {r.shapes[0].count} layers" if r.shapes else ""), width, subsequent="  "),
        "",
    ]
    if r.schemes:  # whose kernels were timed, said plainly before any number
        t = Table(["scheme", "kernel timed", "whose"], align="lll")
        for s in r.schemes:
            t.add(s.scheme, s.kernel_id or "-",
                  "torch's own (not an engine's)" if s.torch_kernel else f"{s.engine} {s.engine_version} custom ops")
        lines += [t.render(width)]
        if r.kernels_timed:
            lines += wrap(r.kernels_timed, width, subsequent="  ")
        lines.append("")
    c = r.ceilings
    t = Table(["ceiling", "measured", "spec sheet", "achieved"], align="lrrr", drop=("spec sheet",))
    bw = c.read_bandwidth_bytes_per_s
    t.add("read bandwidth", f"{bw / 1e12:,.2f} TB/s", f"{g.bandwidth_bytes_per_s / 1e12:,.2f} TB/s",
          f"{bw / g.bandwidth_bytes_per_s:.1%}")
    peaks = g.peak_flops_per_s
    for fmt, v in c.gemm_flops_per_s.items():
        peak = peaks.get("fp8" if fmt == "fp8-rowwise" else fmt)
        t.add(f"GEMM {fmt} {'x'.join(str(d) for d in c.gemm_shape)}", _tflops(v),
              _tflops(peak) if peak else "-", f"{v / peak:.1%}" if peak else "-")
    lines += [t.render(width), ""]
    if r.schemes:
        batches = r.schemes[0].batch
        t = Table(["batch", *(s.scheme for s in r.schemes)], align="r" * (1 + len(r.schemes)))
        for i, b in enumerate(batches):
            row_t = [s.time_s[i] if i < len(s.time_s) else math.inf for s in r.schemes]
            best = min(row_t)
            t.add(f"{b:,}", *(_ms(x) + ("*" if x == best and len(r.schemes) > 1 else "") for x in row_t))
        lines += [*wrap("decode-step linear layers, ms (median; * = fastest at that batch)", width), t.render(width), ""]
        t = Table(["scheme", "mem eff", "compute eff", "blend p", "M tile", "ridge M", "fit rms", "also applies to"],
                  align="lrrrrrrl", drop=("M tile", "blend p", "ridge M"))
        for s in r.schemes:
            t.add(s.scheme, f"{s.memory_efficiency:.3f}", f"{s.compute_efficiency:.4f}", f"{s.blend:.2f}",
                  f"{s.m_tile:g}", "-" if s.fitted_ridge_batch is None else f"{s.fitted_ridge_batch:,.0f}",
                  f"{s.rms_fit_error:.1%}", ", ".join(s.applies_to) or "-")
        fitted = t.render(width)  # the fit's parameters drop before the schemes a curve also prices are cut
        if width is not None and max(map(len, fitted.splitlines())) > width:
            t.flex = [t.columns.index("also applies to")]
            fitted = t.render(width)
        lines += [*wrap("fitted curve per scheme (t = ((mem/eff)^p + (compute/eff)^p)^(1/p) x measured correction)",
                        width, subsequent="  "), fitted]
    for sid, why in r.skipped.items():
        lines += wrap(f"skipped {sid}: {why}", width, subsequent="  ")
    for n in r.notes:
        lines += wrap(f"note: {n}", width, subsequent="  ")
    if r.profile_path:
        lines += _profile_lines(r.profile_path, width)
    return "\n".join(lines)


def _para(lines: list[str], texts: list[str], width: int | None) -> None:
    for text in texts:
        lines += wrap(text, width, subsequent="  ")


def validate_table(r: ValidationResult, width: int | None = None) -> str:
    lines: list[str] = []
    if r.lookup:
        lines += [lookup_table(r, width), ""]
    if r.kernels:
        lines += [kernel_table(r, width), ""]
    if not r.calibrations:
        _para(lines, _kernel_verdict(r), width)
        _para(lines, [f"note: {n}" for n in r.notes if "calibrated" not in n], width)
        _para(lines, [f"warning: {w}" for w in r.warnings], width)
        return "\n".join(lines)
    for c in r.calibrations:
        sim = " — SIMULATED timings, not a measurement" if c.simulated else ""
        _para(lines, [f"validate {r.profile}: decode-step linear layers of {c.model} on {c.gpu} "
                      f"('{c.gpu_name}', {c.backend} backend, {c.measured_on.isoformat()}){sim}"], width)
    lines.append("")
    # the models' columns drop from the least informative (the spec-sheet roofline) at narrow widths
    t = Table(["scheme", "batch", "measured", *(MODEL_LABELS[m] for m in MODELS)],
              align="lr" + "r" * (1 + len(MODELS)),
              drop=[MODEL_LABELS[m] for m in ("ideal", "calibrated-ceilings", "default-efficiency") if m in MODELS])
    multi = len({s.gpu for s in r.schemes}) > 1
    for s in r.schemes:
        name = f"{s.gpu}/{s.scheme}" if multi else s.scheme
        for i, p in enumerate(s.points):
            t.add(name if i == 0 else "", f"{p.batch:,}", _ms(p.measured_s),
                  *(f"{_ms(p.predicted_s[m])} ({_pct(p.error[m])})" for m in MODELS))
    _para(lines, ["decode-step linear layers: ms, and each model's prediction in ms (error vs measured)"], width)
    lines += [t.render(width), ""]
    t = Table(["scheme", *(f"{MODEL_LABELS[m]} max|err|" for m in MODELS), "calibrated mean|err|",
               f"within {r.max_error:.0%}"], align="l" + "r" * (len(MODELS) + 2),
              drop=[f"{MODEL_LABELS[m]} max|err|" for m in ("ideal", "calibrated-ceilings", "default-efficiency")
                    if m in MODELS])
    for s in r.schemes:
        name = f"{s.gpu}/{s.scheme}" if multi else s.scheme
        t.add(name, *(_pct(s.max_abs_error[m]).lstrip("+") for m in MODELS),
              _pct(s.mean_abs_error["calibrated"]).lstrip("+"), "yes" if s.within else "NO")
    _para(lines, ["largest error per model (over every measured batch)"], width)
    lines += [t.render(width), ""]
    cal_ok = all(s.within for s in r.schemes)
    _para(lines, [f"{'PASS' if cal_ok else 'FAIL'}: the calibrated model is {'within' if cal_ok else 'NOT within'} "
                  f"{r.max_error:.0%} (--max-error) of the measurement at every batch of every scheme"
                  + ("" if cal_ok else " (exit 1)")], width)
    if r.kernels:
        _para(lines, _kernel_verdict(r), width)
    _para(lines, [f"method: {r.method}", *(f"note: {n}" for n in r.notes)], width)
    return "\n".join(lines)


def _kernel_verdict(r: ValidationResult) -> list[str]:
    """The verdict on the kernel curves (--max-error), and the project's bars on its own labelled line:
    part of the exit code only with --project-bars."""
    th = r.kernel_thresholds
    ok = all(k.within_max_error for k in r.kernels)
    n_bars = sum(k.within for k in r.kernels)
    bars = (f"project bars ({th.get('step_median', 0):.0%} median / {th.get('step_max', 0):.0%} worst held-out step, "
            f"plain bf16 {th.get('bf16_step_median', 0):.0%} / {th.get('bf16_step_max', 0):.0%}): {n_bars} of "
            f"{plural(len(r.kernels), 'curve')} within")
    if r.project_bars:
        bars = f"{'PASS' if r.bars_passed else 'FAIL'}: {bars}" + ("" if r.bars_passed else " (exit 1)")
    else:
        bars += " (a report line; --project-bars makes it part of the exit code)"
    worst = [worst_error(k.calls) for k in r.kernels]
    above = sum(w > r.max_error for w in worst)
    limit = (f"the worst held-out error of {above} of {plural(len(worst), 'curve')} is above {r.max_error:.0%} "
             f"({min(w for w in worst if w > r.max_error):.1%}-{max(worst):.1%}): a documented limit of the shipped "
             "curves (compact fits to published tables; docs/calibration.md §7 lists each, and step_floor: the part "
             "no curve that never gets faster with more rows can avoid)") if above else ""
    if r.kernels_judged == "recorded":
        verdict = (f"{'PASS' if ok else 'FAIL'}: every measured kernel curve's held-out error is "
                   + ("the one this profile records (docs/calibration.md §7)" if ok else
                      "NOT the one this profile records: worse than documented (exit 1)"))
        if limit:
            verdict += f"; {limit}; --max-error N holds them to N"
        return [verdict, bars]
    return [f"{'PASS' if ok else 'FAIL'}: every measured kernel curve's worst held-out error is "
            f"{'within' if ok else 'NOT within'} {r.max_error:.0%} (--max-error)" + ("" if ok else " (exit 1)")
            + (f"; {limit}" if limit and not ok else ""), bars]



def lookup_table(r: ValidationResult, width: int | None = None) -> str:
    """Per published table read by lookup: its own rows, and its leave-one-shape-out held-out decode steps
    (median / max against the bars of 5% / 20%), the worst one named; then the stand-ins where the true
    kernel is measured, and the bands per basis."""
    t = Table(["gpu", "table", "measured with", "rows med", "steps", "step med", "step p68", "step max", "floor",
               "bars", "worst step"], align="lllrrrrrrll",
              drop=("gpu", "measured with", "rows med", "steps", "step p68", "floor", "worst step"))
    for c in r.lookup:
        t.add(c.gpu, c.table, f"{c.engine} {c.engine_version}", f"{c.rows.median:.1%}", str(c.steps.n),
              f"{c.steps.median:.1%}", f"{c.steps.p68:.1%}", f"{c.steps.max:.1%}",
              f"{c.floor:.1%}" if c.floor is not None else "-", "yes" if c.within else "NO", c.worst)
    lines = [*wrap("published tables read by lookup (data/kernel_tables/): each table at its own rows, and "
                   "leave-one-shape-out — every shape of a decode step's shape set priced with its own cell left "
                   "out, both ways a model's shape misses a table (from its neighbours in N at its K, and in K at "
                   "its N), at every M (a fused-MoE table: every per-GPU expert size "
                   "from its neighbours, one MoE layer's call at every token count); bars: step median <= 5%, "
                   "max <= 20%; floor: the largest step error no reading between each shape's two neighbouring "
                   "cells can avoid (above 20%: the table's own irregularity, beyond any interpolation)", width,
                   subsequent="  "), t.render(width)]
    fast = [c for c in r.lookup if c.from_l2]
    if fast:
        lines += wrap("cells timed from the L2, per table (their call at the smallest M streams the weight faster than "
                      "the table sustains from memory; a decode step reads it from memory, so predictions price them "
                      "at that stream, docs/calibration.md §11): " + ", ".join(f"{c.table} {c.from_l2}" for c in fast),
                      width, subsequent="  ")
    if r.substitutes:
        lines += ["", *wrap("stand-ins where the true kernel is measured (held-out steps: median / p68 / max):", width)]
        for x in r.substitutes:
            lines += wrap(f"{x.gpu} {x.basis}: {x.what}: {x.steps.median:.1%} / {x.steps.p68:.1%} / {x.steps.max:.1%} "
                          f"({x.steps.n} steps)", width, indent="  ", subsequent="    ")
    if r.benchmarks:
        lines += ["", *wrap("published benchmarks of kernels no table times (data/validation/kernel_benchmarks.yaml), "
                            "the lookup with its stream factor against the benchmark read on the shipped table of its "
                            "16-bit baseline:", width)]
        for bc in r.benchmarks:
            errs = ", ".join(f"M = {p.m:g} {p.error:+.0%}" for p in bc.points)
            lines += wrap(f"{bc.gpu} {bc.column} ({bc.kernel}, {bc.n} x {bc.k}, {bc.benchmark}; weight stream "
                          f"x{bc.stream:.2f}): {errs}", width, indent="  ", subsequent="    ")
    for gid, bands in r.bands.items():
        lines += wrap(f"{gid} bands (68th percentile of held-out step errors, the ± a prediction carries per part): "
                      + ", ".join(f"{b} ±{v.p68:.0%}" for b, v in bands.items()), width, subsequent="  ")
    return "\n".join(lines)


def census_table(r: CensusResult, width: int | None = None) -> str:
    """``validate --census``: the basis of each (GPU, engine, scheme) cell, then the shares and the bar."""
    engines = {e.split()[0]: e for e in r.engines}
    out: list[str] = []
    for gid in r.gpus:
        cols = [engines[e] for e in engines]
        t = Table(["scheme", *cols], align="l" + "l" * len(engines), flex=cols, flex_min={c: 20 for c in cols})
        for sid in r.schemes:
            cells = []
            for e in engines:
                row = next((x for x in r.rows if x.gpu == gid and x.engine == e and x.scheme == sid), None)
                cells.append("-" if row is None or row.basis == "n/a" else f"{row.basis} ({row.kernel})")
            t.add(sid, *cells)
        out += [gid, t.render(width), ""]
    share = r.shares.get("all", {})
    out += wrap("served cells by basis: " + ", ".join(f"{b} {v:.0%}" for b, v in sorted(share.items(),
                                                                                        key=lambda kv: -kv[1])),
                width, subsequent="  ")
    verdict = "PASS" if r.passed else "FAIL"
    out += wrap(f"{verdict}: {r.measured_or_same_math:.1%} of the served cells are priced by their kernel's own "
                f"published table or a same-math table on the same GPU (bar {r.bar:.0%})"
                + (f"; on the roofline although a table of their math exists: {', '.join(r.roofline_with_table)}"
                   if r.roofline_with_table else ""), width, subsequent="  ")
    return "\n".join(out)


def import_table(r: TableImportResult, width: int | None = None) -> str:
    lines = [*wrap(f"{r.gpu}: kernel curves fitted to {r.source}", width, subsequent="  "), ""]
    lines.append(kernel_table(r, width))
    proxies = [c for c in r.profile.gpus[0].kernels.values() if c.basis != "measured"]
    if proxies:
        lines += ["", *wrap("kernels the engines run with no table of their own on this GPU (labelled in every "
                            "prediction):", width)]
        for c in proxies:
            lines += wrap(f"{c.key}: {c.basis} of {c.proxy_of}", width, indent="  ", subsequent="    ")
    lines += ["", *_profile_lines(r.profile_path, width, f"; held-out data: {r.heldout_path}")]
    _para(lines, [f"note: {n}" for n in r.notes], width)
    return "\n".join(lines)


def kernel_table(r: ValidationResult | TableImportResult, width: int | None = None) -> str:
    """Per kernel curve: held-out error of single calls and of decode steps (shape sets), and the
    format-level roofline's error on the same decode steps. Narrow: the GPU, the engine release and
    the counts drop first, then the roofline's median; the decode-step errors stay."""
    limit = getattr(r, "max_error", None)  # validate: the --max-error column; calibrate --from: only the bars
    judged = ("as recorded" if getattr(r, "kernels_judged", None) == "recorded" else f"<={limit:.0%}"
              if limit is not None else None)
    t = Table(["gpu", "curve", "measured with", "calls", "call med", "call max", "steps", "step med", "step max",
               "roof med", "roof max", "bars", *([judged] if judged is not None else [])],
              align="lllrrrrrrrrll" if limit is not None else "lllrrrrrrrrl",
              drop=("gpu", "measured with", "calls", "steps", "roof med", "call med", "roof max", "call max"))
    for k in r.kernels:
        h, rf = k.calls, k.roofline
        steps = ("-", "-", "-") if not h.step_points else (str(h.step_points), f"{h.step_median:.1%}",
                                                            f"{h.step_max:.1%}")
        roof = ("-", "-") if rf is None or not rf.step_points else (f"{rf.step_median:.1%}", f"{rf.step_max:.1%}")
        t.add(k.gpu, k.curve, f"{k.curve.split('/')[0]} {k.engine_version}", str(h.gemm_points),
              f"{h.gemm_median:.1%}", f"{h.gemm_max:.1%}", *steps, *roof, "yes" if k.within else "NO",
              *([] if limit is None else ["yes" if k.within_max_error else "NO"]))
    title = (f"{getattr(r.profile, 'id', r.profile)}: error on held-out measurements (shapes and batches never "
             "fitted); call = one kernel call, step = a decode step's shape set; roof = the format-level default "
             "profile on the same steps; bars = the project's bars for its shipped curves")
    return "\n".join([*wrap(title, width, subsequent="  "), t.render(width)])


PLOT_SUFFIXES = (".png", ".svg")
_STYLES = {"ideal": ":", "default-efficiency": "-.", "calibrated-ceilings": "--", "calibrated": "-"}


def write_validation_plot(r: ValidationResult, path: Path) -> Path:
    """One panel per scheme: measured time vs batch as dots, each model's prediction as a line
    (log-log), the calibrated one leave-one-out."""
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise InputError(f"--plot {path}: the file must end in .png or .svg", field="plot")
    try:
        import matplotlib
    except ImportError:
        raise InputError(f"--plot needs matplotlib: {install_hint('plot')}", field="plot") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "quantadvise"
    n = len(r.schemes)
    if n == 0:
        raise InputError(f"--plot {path}: profile '{r.profile}' holds no per-scheme timings to plot (a profile of "
                         "measured kernel curves: its held-out errors are in the table)", field="plot")
    cols = min(3, max(1, n))
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.2 * rows), squeeze=False, constrained_layout=True)
    from matplotlib.ticker import FuncFormatter, LogLocator

    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    plain = FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v >= 10 else f"{v:g}")
    for idx, s in enumerate(r.schemes):
        ax = axes[idx // cols][idx % cols]
        bs = [p.batch for p in s.points]
        ax.plot(bs, [p.measured_s * 1e3 for p in s.points], "o", color="black", label="measured", markersize=5)
        for j, m in enumerate(MODELS):
            ys = [p.predicted_s[m] * 1e3 for p in s.points]
            ax.plot(bs, ys, _STYLES[m], color=colors[j % len(colors)],
                    label=f"{MODEL_LABELS[m]} (max {s.max_abs_error[m]:.0%})")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(plain)
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: ""))
        ax.set_title(f"{s.gpu} {s.scheme}", fontsize=10)
        ax.set_xlabel("batch (GEMM rows)")
        ax.set_ylabel("decode linear layers (ms)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    for idx in range(n, rows * cols):
        axes[idx // cols][idx % cols].axis("off")
    sim = any(c.simulated for c in r.calibrations)
    fig.suptitle(f"{r.profile}: measured vs predicted" + (" (SIMULATED timings)" if sim else ""), fontsize=11)
    from .pareto import save_figure

    return save_figure(fig, path, 110)


__all__ = ["calibrate_table", "validate_table", "write_validation_plot"]
