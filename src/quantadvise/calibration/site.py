"""The user's own benchmarks against the model (``validate --bench``) and the deployment profile fitted to
them (``calibrate --from-bench``): per measured run the workload recovered, predicted vs measured and the
error; per GPU and engine release the serving loop's terms fitted to the runs of some files and checked
on the others (held out by file, never by point).

Pure: no I/O, no printing.
"""

from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from typing import Any

from ..perf.loop import TERMS, LoopTerms, SiteFile, SiteProfile
from ..results import Out, Result
from .bench import BenchRun
from .serving_fit import Sample, fit_values, median

SITE_TERMS = ("layer_s", "prefill_scale", "seq_s", "decode_scale", "pass_s")
"""The terms a site fit frees, in the order they are freed as runs allow (at least one run per term):
a few files cannot pin the eight the published points do."""

METRICS = ("output_tok_s", "ttft_s", "tpot_s", "e2e_s")


class Figures(Out):
    output_tok_s: float | None = None
    ttft_s: float | None = None
    tpot_s: float | None = None  # time per output token after the first
    e2e_s: float | None = None


class BenchPoint(Out):
    """One measured run against the model."""

    file: str
    index: int
    format: str
    workload: dict[str, Any]  # the recovered workload the prediction used
    recovered: dict[str, str]  # field -> where it came from (a key of the file, a flag, a default)
    measured: Figures
    predicted: Figures
    error: Figures  # predicted / measured - 1 (None where the file does not measure it)
    bound: str = ""  # the serving loop's largest cost at this point
    terms: str | None = None  # the terms that priced it
    notes: list[str] = []
    # the predicted output tokens/s's whole band (kernels and serving loop, perf.uncertainty; None: no bands) and
    # whether the measurement falls inside it
    band: float | None = None
    inside: bool | None = None


class BenchValidation(Result):
    """``validate --bench``: every run of the files, predicted vs measured."""

    files: list[str]
    points: list[BenchPoint]
    median_abs_error: float | None  # of output tokens/s over every point
    max_abs_error: float | None
    max_error: float  # the threshold (a fraction)
    profile: str | None = None  # the deployment profile that priced them (None: the shipped terms)
    passed: bool
    notes: list[str] = []  # e.g. a file named twice, read once

    def exit_code(self) -> int:
        return 0 if self.passed else 1


class SiteCalibration(Result):
    """``calibrate --from-bench``: the deployment profile and how well it reproduces the files."""

    profile_path: str | None = None
    profile: SiteProfile
    files: list[SiteFile]
    points: list[BenchPoint]  # every run priced by the fitted terms (in sample)
    median_abs_error: float | None  # in sample, output tokens/s
    heldout_median_abs_error: float | None  # leave one file out (None: a single file)
    notes: list[str] = []


def _err(pred: float | None, meas: float | None) -> float | None:
    if pred is None or meas is None or not meas:
        return None
    return pred / meas - 1.0


def compare(run: BenchRun, workload: dict[str, Any], predicted: Figures, *, bound: str,
            terms: str | None, notes: Sequence[str] = (), band: float | None = None) -> BenchPoint:
    from ..perf.uncertainty import rate_interval

    measured = Figures(output_tok_s=run.output_tok_s, ttft_s=run.ttft_s, tpot_s=run.tpot_s, e2e_s=run.e2e_s)
    error = Figures(**{m: _err(getattr(predicted, m), getattr(measured, m)) for m in METRICS})
    inside = None
    if band is not None and predicted.output_tok_s and measured.output_tok_s:
        iv = rate_interval(predicted.output_tok_s, band)
        inside = iv.low <= measured.output_tok_s <= iv.high
    return BenchPoint(file=run.file, index=run.index, format=run.format, workload=workload, recovered=run.recovered,
                      measured=measured, predicted=predicted, error=error, bound=bound, terms=terms,
                      notes=[*run.notes, *notes], band=round(band, 4) if band is not None else None, inside=inside)


def validation(files: Sequence[str], points: list[BenchPoint], *, max_error: float,
               profile: str | None) -> BenchValidation:
    errs = [abs(p.error.output_tok_s) for p in points if p.error.output_tok_s is not None]
    worst = max(errs) if errs else None
    return BenchValidation(files=list(files), points=points, median_abs_error=median(errs) if errs else None,
                           max_abs_error=worst, max_error=max_error, profile=profile,
                           passed=worst is None or worst <= max_error)


def site_terms(samples: Sequence[Sample], *, base: LoopTerms | None, key: dict[str, Any], ident: str,
               source: str, today: date, files: Sequence[str]) -> LoopTerms:
    """The terms of one (GPU, engine, release) fitted to ``samples``: as many of :data:`SITE_TERMS` as there
    are runs, the rest kept at ``base``'s (the shipped terms) — a term a fit does not free keeps the
    published points' value, not zero."""
    n = len(samples)
    free = SITE_TERMS[:max(1, min(n, len(SITE_TERMS)))]
    fixed = {t: (getattr(base, t) if base is not None else 0.0) for t in TERMS if t not in free}
    # the fixed terms' cost moves into the base of each sample, so the fit frees only ``free``
    shifted = [replace(s, cycle=replace(s.cycle, base_s=s.cycle.base_s + sum(
        fixed[t] * f for t, f in zip(TERMS, s.cycle.features, strict=True) if t in fixed))) for s in samples]
    values: dict[str, Any] = {**fixed, **fit_values(shifted, free)}
    return LoopTerms(id=ident, **key, **values, points=n, fitted_on=tuple(files), source=source, as_of=today,
                     note=f"fitted to {n} run{'s' if n != 1 else ''} of {len(files)} file{'s' if len(files) != 1 else ''}; "
                          f"free terms {', '.join(free)}; the others kept at "
                          + (f"the shipped '{base.id}' terms" if base is not None else "0"))
