"""``calibrate`` and ``validate``: measure the GPU, fold it into the model, show the model's error."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import catalog, defaults
from ..errors import InputError
from ..hardware import GPU
from ..model import ModelArch
from ..scheme import Scheme
from .common import get_gpu, load_model

if TYPE_CHECKING:
    from ..perf.calibration import CalibrationResult, Progress
    from ..perf.profiles import PerfProfile
    from ..perf.validation import ValidationResult


def calibrate(
    model: str | dict[str, Any] | ModelArch = defaults.MODEL,
    schemes: str | list[str] | None = None,
    *,
    batches: str | int | list[int] = defaults.CALIBRATION_BATCHES,
    backend: str = "torch",
    gpu: str | GPU | None = None,
    seconds: float = defaults.CALIBRATION_SECONDS,
    seed: int = 0,
    out: str | Path | None = None,
    command: str = "",
    progress: Progress | None = None,
) -> CalibrationResult:
    """Measure the local GPU (``backend="torch"``, needs ``pip install 'quantadvise[gpu]'`` and
    CUDA) or a synthetic one (``backend="simulated"``, with ``gpu``): read bandwidth, GEMM
    throughput per math format, and the decode-step linear layers of ``model``'s shapes at each
    batch for each scheme with a torch kernel (bf16, fp8-tensor, fp8-dynamic, w8a8-int8, w4a16).
    Writes the resulting efficiency profile to ``out`` (default ``<profile id>.yaml`` in the
    current directory) and returns a summary (``.profile_path`` says where it went).
    ``seconds`` is the timing budget; ``progress(what, done, total)`` is called as it goes."""
    import time

    from .. import __version__
    from ..errors import UnknownNameError
    from ..perf.backends import get_backend
    from ..perf.calibration import parse_schemes, run_calibration
    from ..perf.inputs import parse_batches
    from ..perf.profile_file import write_profile

    arch, info = load_model(model)
    resolved: dict[str, Scheme] = {}
    for name in parse_schemes(schemes):
        preset = catalog.scheme_preset(name)
        resolved[preset.id] = catalog.scheme_from_preset(preset)
    bs = parse_batches(batches, field="batches")
    row = get_gpu(gpu) if gpu is not None else None
    be = get_backend(backend, row, seed=seed)
    started = time.perf_counter()
    try:
        if row is None:
            reported = be.device().gpu_name
            try:
                row = catalog.get_gpu(reported)
            except UnknownNameError:
                raise InputError(f"this GPU reports itself as '{reported}', which data/hardware.yaml does not list",
                                 hint="pass --gpu with its row id, or add the GPU (docs/data.md)",
                                 field="gpu") from None
        presets = {sid: catalog.get_scheme(sid) for sid in catalog.scheme_ids()}
        profile, result = run_calibration(
            be, arch=arch, model_id=info.id, gpu=row, schemes=resolved, presets=presets, batches=bs,
            seconds=seconds, tool=f"quantadvise {__version__}", command=command, progress=progress,
            clock=lambda: time.perf_counter() - started,
        )
    finally:
        be.close()
    path = Path(out) if out is not None else Path(f"{profile.id}.yaml")
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise InputError(f"--out {path}: the profile is YAML; name the file .yaml", field="out")
    try:
        write_profile(profile, path)
    except OSError as exc:
        raise InputError(f"--out {path}: cannot write it ({exc.strerror or exc})", field="out") from None
    return result.model_copy(update={"profile_path": str(path)})


def validate(
    profile: str | Path | PerfProfile, *, max_error: float = defaults.MAX_VALIDATION_ERROR
) -> ValidationResult:
    """Predicted vs measured decode-linear time per scheme and batch for a calibrated profile, with
    the error of the ideal, default-efficiency, measured-ceilings and calibrated models (the last
    leave-one-out over batches). ``max_error`` is a fraction; ``.passed`` / ``.exit_code()`` say
    whether the calibrated model is within it at every measured batch."""
    from ..perf.profiles import PerfProfile
    from ..perf.validation import validate as run

    prof = profile if isinstance(profile, PerfProfile) else catalog.load_perf_profile(Path(profile))
    archs: dict[str, ModelArch] = {}
    gpus: dict[str, GPU] = {}
    schemes: dict[str, Scheme] = {}
    for entry in prof.gpus:
        if entry.calibration is None:
            continue
        gpus[entry.gpu] = catalog.get_gpu(entry.gpu)
        if entry.calibration.model not in archs:
            archs[entry.calibration.model] = load_model(entry.calibration.model)[0]
        for m in entry.calibration.measurements:
            schemes[m.scheme] = catalog.get_scheme(m.scheme)
    return run(prof, catalog.default_perf_profile(), archs=archs, gpus=gpus, schemes=schemes, max_error=max_error)


