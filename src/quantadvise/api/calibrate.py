"""``calibrate`` and ``validate``: measure the GPU, fold it into the model, show the model's error."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import catalog, defaults
from ..catalog.resolve import get_gpu, load_model
from ..errors import InputError
from ..files import writing
from ..hardware import GPU
from ..model.arch import ModelArch
from ..scheme.axes import Scheme

if TYPE_CHECKING:
    from ..calibration.contract import Progress
    from ..calibration.run import CalibrationResult
    from ..calibration.validate import TableImportResult, ValidationResult
    from ..perf.profiles import PerfProfile


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
    batch for each scheme with a torch kernel (bf16, fp8-tensor, fp8-dynamic, w8a8-int8, w4a16):
    where vLLM is importable, the kernel vLLM runs for the scheme on this GPU, through vLLM's own
    custom ops; else torch's own kernel (``.kernels_timed`` and each scheme's ``fallback`` say why).
    Writes the resulting efficiency profile to ``out`` (default ``<profile id>.yaml`` in the
    current directory) and returns a summary (``.profile_path`` says where it went).
    ``seconds`` is the timing budget; ``progress(what, done, total)`` is called as it goes."""
    import time

    from .. import __version__
    from ..calibration.backends import get_backend
    from ..calibration.profile_file import write_profile
    from ..calibration.run import parse_schemes, run_calibration
    from ..errors import UnknownNameError
    from ..inputs import check
    from ..perf.inputs import parse_batches

    seconds, seed = check("seconds", seconds), check("seed", seed)
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
        engine = getattr(be, "engine", None)  # an importable engine whose own kernels the backend can time
        table = catalog.kernel_table(engine.name, engine.version) if engine is not None else None
        profile, result = run_calibration(
            be, arch=arch, model_id=info.id, gpu=row, schemes=resolved, presets=presets, batches=bs,
            seconds=seconds, tool=f"quantadvise {__version__}", command=command, progress=progress,
            clock=lambda: time.perf_counter() - started, engine_table=table,
        )
    finally:
        be.close()
    path = Path(out) if out is not None else Path(f"{profile.id}.yaml")
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise InputError(f"--out {path}: the profile is YAML; name the file .yaml", field="out")
    with writing(path, "--out"):
        write_profile(profile, path)
    return result.model_copy(update={"profile_path": str(path)})


def validate(
    profile: str | Path | PerfProfile, *, max_error: float | None = None,
    project_bars: bool = False,
) -> ValidationResult:
    """Predicted vs measured decode-linear time per scheme and batch for a calibrated profile, with
    the error of the ideal, default-efficiency, measured-ceilings and calibrated models (the last
    leave-one-out over batches). ``max_error`` is a fraction; ``.passed`` / ``.exit_code()`` say
    whether the calibrated model is within it at every measured batch (None: within
    ``defaults.MAX_VALIDATION_ERROR``) and every kernel curve's worst held-out error is (None: no
    worse than the error the profile records for it, the shipped curves' documented limit,
    docs/calibration.md §7); ``project_bars`` adds the project's median / worst bars for its shipped kernel
    curves to the verdict (``.bars_passed`` reports them either way). ``profile`` is a file, a shipped
    profile's GPU id (``h100-sxm``) or its profile id (``h100-sxm-measured``)."""
    from ..calibration.validate import validate as run
    from ..perf.profiles import PerfProfile

    if not isinstance(profile, PerfProfile):
        profile = shipped_profile_name(profile)
    prof = profile if isinstance(profile, PerfProfile) else catalog.load_perf_profile(Path(profile))
    archs: dict[str, ModelArch] = {}
    gpus: dict[str, GPU] = {}
    schemes: dict[str, Scheme] = {}
    heldout: dict[str, Any] = {}
    for entry in prof.gpus:
        if entry.kernels:
            gpus[entry.gpu] = catalog.get_gpu(entry.gpu)
            doc = _heldout_for(profile, prof.id, gpus[entry.gpu].id)
            if doc is not None:
                heldout[entry.gpu] = doc
        if entry.calibration is None:
            continue
        gpus[entry.gpu] = catalog.get_gpu(entry.gpu)
        if entry.calibration.model not in archs:
            archs[entry.calibration.model] = load_model(entry.calibration.model)[0]
        for m in entry.calibration.measurements:
            schemes[m.scheme] = catalog.get_scheme(m.scheme)
    result = run(prof, catalog.default_perf_profile(), archs=archs, gpus=gpus, schemes=schemes, max_error=max_error,
                 heldout=heldout, project_bars=project_bars)
    return _with_lookup(result, [g for g, e in gpus.items() if any(x.gpu == g and x.kernels for x in prof.gpus)])


# One GPU's lookup checks (frozen results) per (kernel tables, GPU, default profile): each is an object the
# catalog caches for the process, so a caller validating again (an API user, the test suite) reuses the ~0.5 s of
# held-out pricing; new tables (a cleared cache, an override) are new objects and are checked afresh. The entry
# holds the three objects, so their ids cannot be reused while it lives.
_LOOKUP_MEMO: dict[tuple[int, int, int], tuple[tuple[Any, Any, Any], tuple[tuple[Any, ...], tuple[Any, ...],
                                                                          dict[str, Any]]]] = {}


def _with_lookup(result: ValidationResult, gpu_ids: list[str]) -> ValidationResult:
    """``result`` with the lookup tables' checks of ``gpu_ids`` (recomputed from the shipped tables)."""
    from ..calibration.lookup_checks import (
        BenchmarkCheck,
        ErrorStats,
        SubstituteCheck,
        TableCheck,
        benchmark_checks,
        gpu_checks,
        table_check,
    )

    lookup: list[TableCheck] = []
    subs: list[SubstituteCheck] = []
    benches: list[BenchmarkCheck] = []
    bands: dict[str, dict[str, ErrorStats]] = {}
    for gid in gpu_ids:
        g = catalog.get_gpu(gid)
        tabs = catalog.kernel_tables(g.id)
        if tabs is None:
            continue
        prof = catalog.default_perf_profile()
        key = (id(tabs), id(g), id(prof))
        memo = _LOOKUP_MEMO.get(key)
        if memo is None:  # the entry keeps its three objects alive: their ids name no other object
            checks = gpu_checks(tabs, g, prof)  # every table's checks, computed once
            gl: list[TableCheck] = []
            for meta in tabs.index.tables:
                t = tabs.get(meta.id)
                if t is not None:
                    gl.append(table_check(g.id, meta.engine_version, t, checks["kernels"].get(meta.id)))
            for meta in tabs.index.moe:
                mt = tabs.moe(meta.id)
                if mt is not None:
                    gl.append(table_check(g.id, meta.engine_version, mt, checks["kernels"].get(meta.id)))
            gs = tuple(SubstituteCheck(gpu=g.id, basis=x["basis"], what=x["what"], steps=ErrorStats(**x["steps"]))
                       for x in checks["substitutes"])
            gb = {b: ErrorStats(**v) for b, v in checks["bands"].items()}
            if len(_LOOKUP_MEMO) >= 16:
                _LOOKUP_MEMO.clear()
            memo = _LOOKUP_MEMO[key] = ((tabs, g, prof), (tuple(gl), gs, gb))
        gl_, gs_, gb_ = memo[1]
        benches += benchmark_checks(tabs, g.id, catalog.kernel_benchmarks())
        lookup += gl_
        subs += gs_
        bands[g.id] = dict(gb_)
    if not lookup:
        return result
    return result.model_copy(update={"lookup": lookup, "substitutes": subs, "bands": bands, "benchmarks": benches})


MEASURED_SUFFIX = "-measured"  # a shipped kernel profile's id is its GPU id and this (data/profiles/<gpu>.yaml)


def shipped_profile_name(profile: str | Path) -> str | Path:
    """``profile`` as ``catalog.load_perf_profile`` reads it: a path that exists, or a bare name of a
    shipped profile — its file stem (``h100-sxm``) or the profile id the reports print
    (``h100-sxm-measured``). A bare name that is neither: an error listing the shipped ones."""
    from ..catalog.profiles import shipped_profile_paths
    from ..errors import UnknownNameError, norm_name

    p = Path(profile)
    if p.exists() or p.parent != Path(".") or p.suffix.lower() in (".yaml", ".yml"):
        return profile
    shipped = shipped_profile_paths()
    key = norm_name(p.name)
    for k in (key, key.removesuffix(MEASURED_SUFFIX)):
        if k in shipped:
            return k
    ids = sorted(shipped)
    # a GPU name or alias, as every other command takes it (h100 -> h100-sxm)
    from ..errors import QuantAdviseError

    try:
        gpu = catalog.get_gpu(key.removesuffix(MEASURED_SUFFIX))
    except QuantAdviseError:
        gpu = None
    if gpu is not None:
        if gpu.id in shipped:
            return gpu.id
        from ..catalog.lookup_tables import sibling_of, siblings

        row = sibling_of(gpu.id)
        got = siblings() if row is not None else None
        moved = (f"; it is priced with {row.tables_of}'s published tables moved to its bandwidth and peaks (their check "
                 f"where both GPUs are measured: {got.transfer.median:.1%} median, {got.transfer.p68:.1%} at the 68th "
                 f"percentile, data/kernel_tables/siblings.yaml), which `quantadvise validate {row.tables_of}` checks"
                 if row is not None and got is not None else "")
        raise InputError(f"no shipped profile for {gpu.name} ({gpu.id}){moved}: profiles ship for {', '.join(ids)}",
                         hint="give a profile file written by `quantadvise calibrate` on that GPU", field="profile")
    raise UnknownNameError("profile", str(profile), [*ids, *(i + MEASURED_SUFFIX for i in ids)],
                           hint="no such file either; give a profile file written by `quantadvise calibrate` or "
                                f"a shipped one: {', '.join(ids)}")


def _heldout_for(given: Any, profile_id: str, gpu_id: str) -> Any:
    """The held-out data of a kernel profile: ``<file>.heldout.yaml`` beside a profile file, else the
    shipped data/profiles/heldout/<gpu>.yaml when the profile is the shipped one."""
    if isinstance(given, (str, Path)):
        p = Path(given)
        sib = p.with_name(p.name.removesuffix(".yaml").removesuffix(".yml") + ".heldout.yaml")
        if sib.is_file():
            return catalog.load_yaml_file(sib)
    return catalog.profile_heldout(gpu_id) if profile_id == f"{gpu_id}-measured" else None




def import_tables(gpu: str | GPU, *, source: str | Path | None = None, out: str | Path | None = None,
                  today: Any = None) -> TableImportResult:
    """Fit a kernel profile for ``gpu`` to NVIDIA's published per-kernel tables (the
    ``aiconfigurator-core`` package: ``pip install 'quantadvise[aiconfigurator]'``, or ``source``, its
    unpacked wheel), hold part of the shapes and batches out, write the profile to ``out`` (default
    ``<gpu>-measured.yaml``) and its held-out data beside it (``.heldout.yaml``), and return the
    held-out error per kernel. The same code writes the shipped data/profiles/ files."""
    from datetime import date

    from ..calibration import aiconfigurator as aic
    from ..calibration.profile_file import write_profile
    from ..calibration.validate import TableImportResult, validate_kernels

    g = get_gpu(gpu)
    system = next((s for s, gid in aic.SYSTEMS.items() if gid == g.id), None)
    if system is None:
        covered = ", ".join(aic.SYSTEMS.values())
        raise InputError(f"the published tables cover no GPU '{g.id}' (they cover {covered})", field="gpu")
    root = aic.data_root(source)
    if not (root / system).is_dir():
        raise InputError(f"{root} has no tables for {g.id} ({system})", field="source")
    version = aic.package_version(root)
    runs = {}
    for engine in catalog.engine_names():
        table = catalog.kernel_table(engine, catalog.get_engine(engine).version)
        runs[engine] = table.kernels if table is not None else ()
    as_of = today or date.today()
    parts, held = aic.import_gpu(root, system, g, pkg_version=version, as_of=as_of)
    parts["kernels"] = aic.add_proxies(parts["kernels"], parts["quant_kernels"], runs)
    src = f"{aic.PACKAGE} {version} ({aic.LICENSE}), systems/data/{system}"
    profile = aic.build_profile(g, parts, pkg_version=version, as_of=as_of, source=src)
    path = Path(out) if out is not None else Path(f"{profile.id}.yaml")
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise InputError(f"--out {path}: the profile is YAML; name the file .yaml", field="out")
    sib = path.with_name(path.name.removesuffix(path.suffix) + ".heldout.yaml")
    with writing(path, "--out"):
        write_profile(profile, path)
        sib.write_text(aic.heldout_yaml(g.id, src, as_of, held), encoding="utf-8")
    from ..perf.efficiency import resolve

    base = resolve([catalog.default_perf_profile()], (g.id, g.name, *g.aliases))
    kern = validate_kernels(profile.gpus[0], {"kernels": held}, g, baseline=base)
    return TableImportResult(gpu=g.id, source=src, profile_path=str(path), heldout_path=str(sib), profile=profile,
                             kernels=kern, notes=parts["notes"])
