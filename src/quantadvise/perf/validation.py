"""Validation of a calibrated profile: predicted vs measured decode-linear time per scheme and batch,
for every performance model (:data:`~.efficiency.MODELS`), the calibrated one leave-one-out
(docs/calibration.md §3).

Pure: no I/O, no printing.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import date

from .. import defaults
from ..errors import InputError
from ..hardware import GPU
from ..model import ModelArch
from ..results import Out, Result
from ..scheme import Scheme
from .calibration import MIN_BATCHES, decode_shapes
from .efficiency import MODELS, resolve
from .fit import fit_linear, ideal_model, with_fit
from .profiles import IDEAL, Measurement, PerfProfile
from .step import StepModel


class ValidationPoint(Out):
    batch: int
    measured_s: float
    predicted_s: dict[str, float]  # model -> seconds
    error: dict[str, float]  # model -> (predicted - measured) / measured


class SchemeValidation(Out):
    gpu: str
    scheme: str
    kernel: str
    points: list[ValidationPoint]
    max_abs_error: dict[str, float]  # model -> largest |error|
    mean_abs_error: dict[str, float]
    within: bool  # calibrated within max_error at every batch


class CalibrationRecord(Out):
    """Where one GPU entry's calibration was measured (from its provenance)."""

    gpu: str
    gpu_name: str  # as the driver reports it
    model: str  # whose shapes were measured
    backend: str
    simulated: bool
    measured_on: date
    torch_version: str | None
    driver_version: str | None
    cuda_version: str | None


class ValidationResult(Result):
    profile: str
    max_error: float
    method: str
    calibrations: list[CalibrationRecord]
    schemes: list[SchemeValidation]
    passed: bool
    notes: list[str] = []
    warnings: list[str] = []

    def exit_code(self) -> int:
        """0 when the calibrated model is within ``max_error`` everywhere, 1 otherwise."""
        return 0 if self.passed else 1


def validate(
    profile: PerfProfile,
    default_profile: PerfProfile,
    *,
    archs: dict[str, ModelArch],
    gpus: dict[str, GPU],
    schemes: dict[str, Scheme],
    max_error: float = defaults.MAX_VALIDATION_ERROR,
) -> ValidationResult:
    """For every calibrated GPU entry of ``profile`` and every measured scheme: the decode-linear
    time each model predicts at each measured batch against the measurement.

    - ideal: the spec-sheet roofline;
    - default-efficiency: ``default_profile`` (the shipped round efficiencies, dequant term on);
    - calibrated-ceilings: the roofline with this profile's measured bandwidth / GEMM ceilings;
    - calibrated: the fitted curve and its correction, **leave-one-out**: the prediction at batch b
      is fitted on the other batches only (the measurement at b is never used to predict b).

    ``archs`` maps each calibration's model id to its architecture, ``gpus`` each entry's gpu
    name to its row, ``schemes`` each measured scheme id to its Scheme."""
    if not 0 < max_error:
        raise InputError(f"--max-error must be > 0 (percent), got {max_error * 100:g}", field="max_error")
    entries = [e for e in profile.gpus if e.calibration is not None]
    if not entries:
        raise InputError(f"profile {profile.id} has no calibration block (write one with `quantadvise calibrate`)",
                         field="profile")
    out: list[SchemeValidation] = []
    cals: list[CalibrationRecord] = []
    warnings: list[str] = []
    for entry in entries:
        calib = entry.calibration
        assert calib is not None
        gpu = gpus[entry.gpu]
        arch = archs[calib.model]
        prov = calib.provenance
        cals.append(CalibrationRecord(gpu=gpu.id, gpu_name=prov.gpu_name, model=calib.model, backend=prov.backend,
                                      simulated=prov.simulated, measured_on=prov.measured_on,
                                      torch_version=prov.torch_version, driver_version=prov.driver_version,
                                      cuda_version=prov.cuda_version))
        if prov.simulated:
            warnings.append(f"{gpu.id}: SIMULATED timings (calibrate --backend simulated), not a measurement")
        got = decode_shapes(arch)
        if tuple((s.n, s.k, s.count) for s in got) != tuple((s.n, s.k, s.count) for s in calib.shapes):
            raise InputError(f"profile {profile.id}: the shapes recorded for {calib.model} do not match its "
                             "architecture; the calibration was made for a different model config", field="profile")
        names = (gpu.id, gpu.name, *gpu.aliases)
        for m in calib.measurements:
            s = schemes[m.scheme]
            scheme_names = (s.id,)
            effs = {
                "ideal": resolve([IDEAL], names, scheme_names),
                "default-efficiency": resolve([default_profile], names, scheme_names),
                "calibrated-ceilings": replace(resolve([default_profile, profile], names, scheme_names),
                                               linear=None, linear_bf16=None),
            }
            models = {k: StepModel(arch, s, gpu, efficiency=e, scope="decoder") for k, e in effs.items()}
            fixed = {k: [sm.linear_time(b) for b in m.batch] for k, sm in models.items()}
            loo = _leave_one_out(arch, s, gpu, m) if len(m.batch) >= MIN_BATCHES else [math.nan] * len(m.batch)
            points = []
            for i, (b, t) in enumerate(zip(m.batch, m.time_s, strict=True)):
                pred = {k: fixed[k][i] for k in fixed}
                pred["calibrated"] = loo[i]
                points.append(ValidationPoint(batch=b, measured_s=t, predicted_s=pred,
                                              error={k: (v - t) / t for k, v in pred.items()}))
            max_abs = {k: max(abs(p.error[k]) for p in points) for k in MODELS}
            mean_abs = {k: sum(abs(p.error[k]) for p in points) / len(points) for k in MODELS}
            cal_ok = all(math.isfinite(p.error["calibrated"]) and abs(p.error["calibrated"]) <= max_error
                         for p in points)
            out.append(SchemeValidation(gpu=gpu.id, scheme=m.scheme, kernel=m.kernel, points=points,
                                        max_abs_error=max_abs, mean_abs_error=mean_abs, within=cal_ok))
            if len(m.batch) < MIN_BATCHES:
                warnings.append(f"{gpu.id} {m.scheme}: {len(m.batch)} batches are too few to leave one out "
                                f"(needs {MIN_BATCHES})")
    return ValidationResult(
        profile=profile.id,
        max_error=max_error,
        method=("decode-step linear layers of the calibrated model's shapes, seconds; calibrated = fitted curve "
                "x correction, refitted without the batch it predicts (leave-one-out)"),
        calibrations=cals,
        schemes=out,
        passed=all(s.within for s in out),
        notes=["error = (predicted - measured) / measured",
               "ideal: spec-sheet roofline; default-efficiency: data/perf_profile.yaml; calibrated-ceilings: the "
               "roofline with this profile's measured bandwidth and GEMM ceilings; calibrated: the measured curve"],
        warnings=warnings,
    )


def _leave_one_out(arch: ModelArch, scheme: Scheme, gpu: GPU, m: Measurement) -> list[float]:
    """The calibrated prediction at each measured batch, fitted without that batch."""
    ideal = ideal_model(arch, scheme, gpu)
    out = []
    for i, b in enumerate(m.batch):
        bs = m.batch[:i] + m.batch[i + 1:]
        ts = m.time_s[:i] + m.time_s[i + 1:]
        fit = fit_linear(arch, scheme, gpu, bs, ts)
        sm = StepModel(arch, scheme, gpu, efficiency=with_fit(ideal.eff, fit), scope="decoder", path=ideal.path)
        out.append(sm.linear_time(b))
    return out
