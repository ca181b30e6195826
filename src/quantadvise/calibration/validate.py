"""Validation of a calibrated profile: predicted vs measured decode-linear time per scheme and batch,
for every performance model (:data:`~.efficiency.MODELS`), the calibrated one leave-one-out
(docs/calibration.md §3).

Pure: no I/O, no printing.
"""

import math
from dataclasses import replace
from datetime import date

from .. import defaults
from ..errors import InputError
from ..hardware import GPU
from ..model.arch import ModelArch
from ..perf.efficiency import MODELS, Efficiency, resolve
from ..perf.kernel_curves import HeldOut, lookup
from ..perf.profiles import IDEAL, GpuKnobs, Measurement, PerfProfile
from ..perf.step import StepModel
from ..results import Out, Result
from ..scheme.axes import Scheme
from .fit import fit_linear, ideal_model, with_fit
from .heldout import heldout_errors, moe_errors, roofline_errors, step_floor
from .lookup_checks import BenchmarkCheck, ErrorStats, SubstituteCheck, TableCheck
from .run import MIN_BATCHES, decode_shapes

CALIB_MODELS = tuple(m for m in MODELS if m != "measured-kernels")  # what a calibration is checked against
# issue 12's higher bar for plain bf16 decode (cuBLAS), held-out steps across batch 1..4096
BF16_MEDIAN_ERROR, BF16_MAX_ERROR = 0.05, 0.12


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


class KernelValidation(Out):
    """One kernel curve's error on its held-out measurements (never used to fit it)."""

    gpu: str
    curve: str  # <engine>/<kernel>
    basis: str
    table: str | None  # the published table it was fitted to
    engine_version: str | None  # the engine release that was measured
    calls: HeldOut  # recomputed now from the shipped curve and the held-out data
    recorded: HeldOut | None  # what the importer recorded in the profile
    roofline: HeldOut | None = None  # the format-level default-efficiency roofline on the same data
    # the least held-out step max any curve that never gets faster as M grows can reach on these data
    # (heldout.monotone_floor): above the bar, the data, not the curve, decide the worst case
    step_floor: float | None = None
    within: bool  # the project's bars: step median and max (fused-MoE: call median and max) within the
    # thresholds (plain bf16 / cuBLAS: the higher bar, BF16_MEDIAN_ERROR / BF16_MAX_ERROR)
    # `validate`: the worst held-out error (decode steps; fused-MoE: calls) within --max-error
    within_max_error: bool | None = None


def worst_error(h: HeldOut) -> float:
    """A kernel curve's worst held-out error, the number ``--max-error`` is compared with: the worst
    decode step (what a prediction adds up), or for a fused-MoE curve (no step sets) the worst call."""
    return h.step_max if h.step_points else h.gemm_max


class TableImportResult(Result):
    """``calibrate --from aiconfigurator``: a kernel profile fitted to published tables, and its
    held-out error."""

    gpu: str
    source: str  # package, version, folder
    profile_path: str
    heldout_path: str
    profile: PerfProfile
    kernels: list[KernelValidation]
    notes: list[str] = []
    warnings: list[str] = []


class ValidationResult(Result):
    profile: str
    max_error: float  # the bar for a calibration (and, when ``kernels_judged`` is "max_error", for kernel curves)
    method: str
    calibrations: list[CalibrationRecord]
    schemes: list[SchemeValidation]
    passed: bool  # every error within max_error (and, with project_bars, every curve within the bars)
    kernels: list[KernelValidation] = []
    kernel_thresholds: dict[str, float] = {}  # the project's bars for its shipped kernel curves
    bars_passed: bool | None = None  # every kernel curve within kernel_thresholds (None: no kernel curves)
    project_bars: bool = False  # whether the bars decide `passed` (``validate --project-bars``)
    # what a kernel curve's worst held-out error is held to: "max_error" (--max-error given), or "recorded":
    # the figure the profile records (and docs/calibration.md §7 lists) — recomputed, it must not be worse
    kernels_judged: str = "max_error"
    # the published tables read by lookup on these GPUs (issue 25): each table's own rows and its
    # leave-one-shape-out error, the stand-ins where the true kernel is measured, and the bands per basis
    lookup: list[TableCheck] = []
    substitutes: list[SubstituteCheck] = []
    bands: dict[str, dict[str, ErrorStats]] = {}  # gpu -> basis -> held-out step errors
    benchmarks: list[BenchmarkCheck] = []  # published benchmarks of kernels no table times, against the lookup
    notes: list[str] = []
    warnings: list[str] = []

    def exit_code(self) -> int:
        """0 when every error is within ``max_error`` (with ``project_bars``: and every kernel curve within
        the project's bars), 1 otherwise."""
        return 0 if self.passed else 1


def validate(
    profile: PerfProfile,
    default_profile: PerfProfile,
    *,
    archs: dict[str, ModelArch],
    gpus: dict[str, GPU],
    schemes: dict[str, Scheme],
    max_error: float | None = None,
    heldout: dict[str, dict] | None = None,
    project_bars: bool = False,
) -> ValidationResult:
    """For every calibrated GPU entry of ``profile`` and every measured scheme: the decode-linear
    time each model predicts at each measured batch against the measurement.

    - ideal: the spec-sheet roofline;
    - default-efficiency: ``default_profile`` (the shipped round efficiencies, dequant term on);
    - calibrated-ceilings: the roofline with this profile's measured bandwidth / GEMM ceilings;
    - calibrated: the fitted curve and its correction, **leave-one-out**: the prediction at batch b
      is fitted on the other batches only (the measurement at b is never used to predict b).

    ``archs`` maps each calibration's model id to its architecture, ``gpus`` each entry's gpu
    name to its row, ``schemes`` each measured scheme id to its Scheme.

    Kernel curves (profiles fitted to published tables) are checked against their held-out data
    (``heldout``: GPU id -> the held-out document) by :func:`validate_kernels`: each curve's worst
    held-out error (:func:`worst_error`) against ``max_error`` — or, when it is None, against the error
    the profile records for the curve (the shipped curves' documented limit: recomputed from the shipped
    data, it must be no worse) — and against the project's bars (``.within``, ``.bars_passed``), which
    decide ``.passed`` only with ``project_bars``. ``max_error`` None holds a calibration to
    :data:`defaults.MAX_VALIDATION_ERROR`."""
    given = max_error
    max_error = defaults.MAX_VALIDATION_ERROR if max_error is None else max_error
    if not (math.isfinite(max_error) and 0 < max_error):
        raise InputError(f"--max-error must be a finite number > 0 (percent), got {max_error * 100:g}",
                         field="max_error")
    entries = [e for e in profile.gpus if e.calibration is not None]
    if not entries and not any(e.kernels for e in profile.gpus):
        raise InputError(f"profile {profile.id} has no calibration block and no kernel curves (write one with "
                         "`quantadvise calibrate`)", field="profile")
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
            max_abs = {k: max(abs(p.error[k]) for p in points) for k in CALIB_MODELS}
            mean_abs = {k: sum(abs(p.error[k]) for p in points) / len(points) for k in CALIB_MODELS}
            cal_ok = all(math.isfinite(p.error["calibrated"]) and abs(p.error["calibrated"]) <= max_error
                         for p in points)
            out.append(SchemeValidation(gpu=gpu.id, scheme=m.scheme, kernel=m.kernel, points=points,
                                        max_abs_error=max_abs, mean_abs_error=mean_abs, within=cal_ok))
            if len(m.batch) < MIN_BATCHES:
                warnings.append(f"{gpu.id} {m.scheme}: {len(m.batch)} batches are too few to leave one out "
                                f"(needs {MIN_BATCHES})")
    kern: list[KernelValidation] = []
    for entry in profile.gpus:
        if entry.kernels:
            doc = (heldout or {}).get(entry.gpu)
            if doc is None:
                warnings.append(f"{entry.gpu}: no held-out data for the kernel curves of profile {profile.id}")
            g = gpus[entry.gpu]
            base = resolve([default_profile], (g.id, g.name, *g.aliases))
            kern += [k.model_copy(update={"within_max_error": _within(k, given)})
                     for k in validate_kernels(entry, doc, g, baseline=base)]
    bars = all(k.within for k in kern) if kern else None
    return ValidationResult(
        kernels=kern,
        kernel_thresholds={"step_median": defaults.KERNEL_MEDIAN_ERROR, "step_max": defaults.KERNEL_MAX_ERROR,
                           "bf16_step_median": BF16_MEDIAN_ERROR, "bf16_step_max": BF16_MAX_ERROR},
        profile=profile.id,
        max_error=max_error,
        method=("decode-step linear layers of the calibrated model's shapes, seconds; calibrated = fitted curve "
                "x correction, refitted without the batch it predicts (leave-one-out)"),
        calibrations=cals,
        schemes=out,
        passed=(all(s.within for s in out) and all(k.within_max_error for k in kern)
                and (bars is not False or not project_bars)),
        bars_passed=bars,
        project_bars=project_bars,
        kernels_judged="recorded" if given is None and kern and all(k.recorded for k in kern) else "max_error",
        notes=["error = (predicted - measured) / measured",
               f"kernel curves: cublas-bf16 (plain bf16 decode) is held to {BF16_MEDIAN_ERROR:.0%} median / "
               f"{BF16_MAX_ERROR:.0%} worst; step_floor: the least worst-case error any curve monotone in M can reach "
               "on the held-out steps (docs/calibration.md §7)",
               "ideal: spec-sheet roofline; default-efficiency: data/perf_profile.yaml; calibrated-ceilings: the "
               "roofline with this profile's measured bandwidth and GEMM ceilings; calibrated: the measured curve"],
        warnings=warnings,
    )


RECORDED_SLACK = 1e-6  # relative: a recomputed error equal to the recorded one, up to float rounding


def _within(k: KernelValidation, max_error: float | None) -> bool:
    """A curve's worst held-out error within ``max_error``; without one (None), no worse than the error the
    profile records for it (no recorded figure: :data:`defaults.MAX_VALIDATION_ERROR`)."""
    if max_error is None and k.recorded is not None:
        return worst_error(k.calls) <= worst_error(k.recorded) * (1 + RECORDED_SLACK)
    return worst_error(k.calls) <= (defaults.MAX_VALIDATION_ERROR if max_error is None else max_error)


def validate_kernels(entry: GpuKnobs, heldout: dict | None, gpu: GPU, *,
                     median: float = defaults.KERNEL_MEDIAN_ERROR, worst: float = defaults.KERNEL_MAX_ERROR,
                     baseline: Efficiency | None = None) -> list[KernelValidation]:
    """Every measured curve of a profile entry against its held-out data (``heldout``: the document
    data/profiles/heldout/<gpu>.yaml holds): the decode steps of the held-out shape sets (fused-MoE
    curves: the held-out layers) must be within ``median`` / ``worst`` relative error. ``baseline``
    (the shipped default profile resolved for the GPU) adds the format-level roofline's error on the
    same data, for comparison. Plain bf16 (``cublas-bf16``) curves are held to the higher bar
    (:data:`BF16_MEDIAN_ERROR` / :data:`BF16_MAX_ERROR`, never looser than ``median`` / ``worst``);
    each dense curve reports the data's own floor (:func:`.heldout.step_floor`)."""
    out: list[KernelValidation] = []
    docs = (heldout or {}).get("kernels", {})
    for key, curve in entry.kernels.items():
        doc = docs.get(key)
        if curve.basis != "measured" or doc is None:
            continue
        peak = gpu.peak(curve.math)
        if peak is None:
            continue
        roof = floor = None
        if doc.get("kind") == "moe":
            h = moe_errors(curve, doc, gpu.bandwidth_bytes_per_s, peak)
            ok = h.gemm_median <= median and h.gemm_max <= worst
        else:
            q = doc.get("quant")
            quant = lookup(entry.quant_kernels, *q.split("/", 1)) if q else None
            h = heldout_errors(curve, doc, gpu.bandwidth_bytes_per_s, peak, quant)
            med, top = ((min(median, BF16_MEDIAN_ERROR), min(worst, BF16_MAX_ERROR)) if curve.kernel == "cublas-bf16"
                        else (median, worst))
            ok = h.step_median <= med and h.step_max <= top
            floor = step_floor(doc)
            if baseline is not None:
                roof = roofline_errors(doc, gpu.bandwidth_bytes_per_s, peak, baseline.memory_at(1.0),
                                       baseline.compute_at(curve.math, 1.0), curve.act_bytes)
        m = curve.measured
        out.append(KernelValidation(gpu=gpu.id, curve=key, basis=curve.basis, table=m.table if m else None,
                                    engine_version=m.engine_version if m else None, calls=h, recorded=curve.heldout,
                                    roofline=roof, step_floor=floor, within=ok))
    return out


_LOO: dict[tuple[ModelArch, str, str, str], list[float]] = {}
_LOO_KEEP = 32


def _leave_one_out(arch: ModelArch, scheme: Scheme, gpu: GPU, m: Measurement) -> list[float]:
    """The calibrated prediction at each measured batch, fitted without that batch. A fit per batch is
    the cost of ``validate`` (about 0.15 s per scheme): kept by value for the process, so validating a
    profile again (another format or width) refits nothing."""
    key = (arch, scheme.model_dump_json(), gpu.model_dump_json(), m.model_dump_json())
    if key not in _LOO:
        if len(_LOO) >= _LOO_KEEP:
            _LOO.pop(next(iter(_LOO)))
        _LOO[key] = _fit_each_left_out(arch, scheme, gpu, m)
    return list(_LOO[key])


def _fit_each_left_out(arch: ModelArch, scheme: Scheme, gpu: GPU, m: Measurement) -> list[float]:
    ideal = ideal_model(arch, scheme, gpu)
    out = []
    for i, b in enumerate(m.batch):
        bs = m.batch[:i] + m.batch[i + 1:]
        ts = m.time_s[:i] + m.time_s[i + 1:]
        fit = fit_linear(arch, scheme, gpu, bs, ts)
        sm = StepModel(arch, scheme, gpu, efficiency=with_fit(ideal.eff, fit), scope="decoder", path=ideal.path)
        out.append(sm.linear_time(b))
    return out
