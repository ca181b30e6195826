"""Calibration: measure the GPU and fold the measurement into the performance model.

``quantadvise calibrate`` times, on the local GPU (or on a simulated one), three things
(docs/calibration.md):

1. **ceilings** — achieved read bandwidth of a buffer far larger than the L2, and dense GEMM
   throughput per math format on one large GEMM (bf16; fp8 with per-tensor and with row-wise
   scales; int8);
2. **the linear part of a decode step** for a chosen model's shapes (every decoder GEMM, q/k/v and
   gate/up fused as engines run them, times the number of layers) at batches 1 ... 4096, for each
   scheme that has a kernel in torch (:data:`KERNELS`), activation quantization included where the
   scheme needs it (unfused, so its cost is measured);
3. from (2), per scheme, a :class:`~.profiles.LinearFit` (:func:`.fit.fit_linear`).

The result is an efficiency profile (:class:`~.profiles.PerfProfile`) whose GPU entry carries the
measured ceilings as efficiencies, the fits per scheme and the raw ``calibration`` record. Every
command that accepts ``--profile`` then uses it; :func:`.validation.validate` shows its error.

Pure: the timing itself is a backend's job (:mod:`.backends`: torch on CUDA, or simulated) and
writing the profile is :mod:`.profile_file`'s; this module only orchestrates and fits.
"""

import math
from collections.abc import Callable, Sequence
from datetime import date
from typing import Any

from .. import defaults
from ..engines.flags import engine_label
from ..errors import InputError
from ..hardware import GPU
from ..model.arch import ModelArch
from ..model.inventory import inventory_of
from ..perf.datapath import datapath
from ..perf.inputs import parse_batches
from ..perf.profiles import (
    MIN_EFFICIENCY,
    Calibration,
    Ceilings,
    Curve,
    GpuKnobs,
    LinearShape,
    Measurement,
    PerfProfile,
    Provenance,
    SchemeKnobs,
    blend,
)
from ..results import Out, Result
from ..scheme.axes import Scheme
from .contract import Backend, Kernel, Progress
from .engine_ops import kernels_statement
from .fit import fit_linear, ideal_model, significant

DEFAULT_BATCHES = parse_batches(defaults.CALIBRATION_BATCHES)
MIN_BATCHES = 4  # a fit has three parameters; leave-one-out needs one more point
GEMM_SHAPE = (8192, 8192, 8192)  # the ceilings' GEMM (M, N, K): large enough to saturate any listed GPU


# -------------------------------------------------------------------------------------------------
# What can be measured: schemes with a kernel in torch
# -------------------------------------------------------------------------------------------------


KERNELS: dict[str, Kernel] = {k.scheme: k for k in (
    Kernel("bf16", "bf16", "torch.nn.functional.linear, bf16 (cuBLAS)", 80, "cublas-bf16"),
    Kernel("fp8-tensor", "fp8-tensor",
           "static per-tensor fp8 activation cast ((x * 1/s).clamp().to(e4m3), unfused) + torch._scaled_mm with "
           "per-tensor scales, bf16 out", 89, "torch-scaled-mm-fp8"),
    Kernel("fp8-dynamic", "fp8-rowwise",
           "dynamic per-token fp8 activation quantization in torch (abs().amax() / 448, divide, clamp, cast: "
           "unfused) + torch._scaled_mm with row-wise scales (per-token x per-channel), bf16 out", 90,
           "torch-scaled-mm-fp8-rowwise"),
    Kernel("w8a8-int8", "int8-dynamic",
           "dynamic per-token int8 activation quantization in torch (unfused; batches <= 16 padded to 32 rows, "
           "torch._int_mm needs M > 16) + torch._int_mm (int32 out) + per-token x per-channel rescale to bf16", 80,
           "torch-int-mm"),
    Kernel("w4a16", "int4-weight-only",
           "torch._weight_int4pack_mm (tinygemm int4 weight-only, group 128, bf16 scales and zeros)", 80,
           "torch-tinygemm-int4"),
)}
DEFAULT_SCHEMES = tuple(KERNELS)


def shape_problem(kernel: Kernel, shapes: tuple[LinearShape, ...]) -> str | None:
    """Why the torch kernel cannot run these shapes (its alignment rules), or None."""
    for s in shapes:
        if kernel.kind in ("fp8-tensor", "fp8-rowwise") and (s.k % 16 or s.n % 16):
            return f"torch._scaled_mm needs N and K divisible by 16; {s.name} is {s.n}x{s.k}"
        if kernel.kind == "int8-dynamic" and (s.k % 8 or s.n % 8):
            return f"torch._int_mm needs N and K divisible by 8; {s.name} is {s.n}x{s.k}"
        if kernel.kind == "int4-weight-only" and (s.k % 128 or s.n % 8):
            return f"the int4 kernel needs K divisible by the group (128) and N by 8; {s.name} is {s.n}x{s.k}"
    return None



def kernel_class(scheme: Scheme) -> str | None:
    """The kernel family a scheme runs on, for sharing one measurement between schemes that
    differ only in how their checkpoints are laid out (W4A16, AWQ, GPTQ, W4A16-asym all run a
    4-bit group-wise weight-only kernel). None for anything calibrate cannot stand in for."""
    if not scheme.quantizes_weights:
        return "bf16"
    w, a = scheme.weight, scheme.activation
    if w is None or w.scale is None:
        return None
    g = w.scale.group
    if scheme.weight_only:
        if w.format in ("int4", "uint4") and g.is_per_group:
            return f"int4-weight-only-g{g.col}"
        return None
    if a is None or a.scale is None:
        return None
    ag = a.scale.group
    if w.format == "fp8_e4m3" and a.format == "fp8_e4m3":
        if g.is_per_tensor and ag.is_per_tensor and not a.scale.dynamic:
            return "fp8-tensor"
        if g.is_per_row and ag.is_per_row and a.scale.dynamic:
            return "fp8-rowwise-dynamic"
    if w.format == "int8" and a.format == "int8" and g.is_per_row and ag.is_per_row and a.scale.dynamic:
        return "int8-dynamic"
    return None


def parse_schemes(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``bf16,w4a16`` or a list; each must be a scheme calibrate has a torch kernel for."""
    from ..inputs import names

    return names("schemes", text, "bf16,w4a16") or DEFAULT_SCHEMES


# -------------------------------------------------------------------------------------------------
# The shapes of a decode step's linear layers
# -------------------------------------------------------------------------------------------------

_FUSED = {"q": "qkv_proj", "k": "qkv_proj", "v": "qkv_proj", "gate": "gate_up_proj", "up": "gate_up_proj"}


def decode_shapes(arch: ModelArch) -> tuple[LinearShape, ...]:
    """The GEMMs of one decode step's decoder layers, as engines run them: q/k/v fused into one
    GEMM (same input), gate/up fused into one; ``count`` = layers. Dense models only."""
    if arch.is_moe or arch.is_mla:
        raise InputError(
            f"calibrate measures dense decoder layers; {arch.architecture} is "
            f"{'MoE' if arch.is_moe else 'MLA'} (grouped expert GEMMs are not measured)",
            hint="pick a dense model for the shapes, e.g. --model meta-llama/Llama-3.1-8B; the profile then "
                 "applies to any model",
            field="model",
        )
    shapes: dict[str, list[int]] = {}  # name -> [n, k, count]
    for g in inventory_of(arch).serving_groups(False):
        if not g.linear or g.component in ("embedding", "lm_head") or g.experts:
            continue
        name = _FUSED.get(g.role, f"{g.role}_proj" if not g.role.endswith("proj") else g.role)
        cur = shapes.get(name)
        if cur is not None and cur[1] == g.k and cur[2] == g.count:
            cur[0] += g.n
        else:
            if cur is not None:  # same fused name but a different K or count: keep them apart
                name = f"{name}.{g.role}"
            shapes[name] = [g.n, g.k, g.count]
    if not shapes:
        raise InputError(f"{arch.architecture} has no decoder linear layers to measure", field="model")
    counts = {c for _, _, c in shapes.values()}
    if len(counts) != 1:
        raise InputError(f"{arch.architecture}: decoder layers of different shapes per layer are not supported "
                         "by calibrate", field="model")
    return tuple(LinearShape(name=n, n=v[0], k=v[1], count=v[2]) for n, v in shapes.items())


GEMM_FORMATS = ("bf16", "fp8", "fp8-rowwise", "int8")
_GEMM_NEEDS = {"bf16": 80, "fp8": 89, "fp8-rowwise": 90, "int8": 80}

# -------------------------------------------------------------------------------------------------
# Running a calibration
# -------------------------------------------------------------------------------------------------


class CalibratedScheme(Out):
    """One scheme's measurement and its fit."""

    scheme: str
    kernel: str
    kernel_id: str = ""  # vllm/cutlass-fp8 for an engine's kernel; torch's own by its bare id
    engine: str | None = None  # whose kernel was timed: the engine's (vllm), or None: torch's own
    engine_version: str | None = None
    torch_kernel: bool = True
    fallback: str | None = None  # why torch's kernel was timed instead of the engine's
    applies_to: list[str]
    batch: list[int]
    time_s: list[float]
    tokens_per_s: list[float]
    spread: list[float]
    memory_efficiency: float
    compute_efficiency: float
    blend: float
    m_tile: float
    fitted_ridge_batch: float | None
    rms_fit_error: float  # of the smooth fit alone, before the correction curve, in log time


class CalibratedGpu(Out):
    id: str
    name: str
    driver_name: str  # as the driver reports it
    bandwidth_bytes_per_s: float  # spec sheet
    peak_flops_per_s: dict[str, float]  # spec sheet, math format -> FLOP/s


class MeasuredCeilings(Out):
    """The measured :class:`~.profiles.Ceilings` and the efficiencies the profile derives from them."""

    read_bandwidth_bytes_per_s: float
    read_buffer_bytes: int
    gemm_shape: tuple[int, int, int]  # M, N, K
    gemm_flops_per_s: dict[str, float]
    memory_efficiency: float | Curve | None
    compute_efficiency: dict[str, float | Curve]


class CalibrationResult(Result):
    profile_path: str | None
    gpu: CalibratedGpu
    provenance: Provenance
    model: str
    shapes: list[LinearShape]
    ceilings: MeasuredCeilings
    schemes: list[CalibratedScheme]
    skipped: dict[str, str] = {}  # scheme -> why it was not measured
    engine: str | None = None  # the engine whose own kernels were timed for at least one scheme (vllm)
    engine_version: str | None = None
    kernels_timed: str = ""  # which kernels were timed, in words: the engine's, or torch's own and why
    notes: list[str] = []
    warnings: list[str] = []
    profile: PerfProfile  # the document written to the file



def run_calibration(
    backend: Backend,
    *,
    arch: ModelArch,
    model_id: str,
    gpu: GPU,
    schemes: dict[str, Scheme],
    presets: dict[str, Scheme],
    batches: tuple[int, ...],
    seconds: float,
    tool: str,
    command: str = "",
    today: date | None = None,
    progress: Progress | None = None,
    clock: Callable[[], float] | None = None,
    engine_table: Any = None,
) -> tuple[PerfProfile, CalibrationResult]:
    """Measure ceilings and every scheme's decode linears at every batch with ``backend``; fit;
    return the profile and a summary. ``schemes`` = id -> Scheme (each must be in :data:`KERNELS`);
    ``presets`` = every known preset (for ``applies_to``: schemes of the same kernel class).
    ``engine_table``: the ``engines.kernels.KernelTable`` of the engine the backend found importable
    (``backend.engine``), which says which kernel the engine runs per scheme on this GPU; a backend
    with ``engine_kernel`` then times that kernel where it can and torch's own, with the reason,
    where it cannot (an engine op that raises mid-run included)."""
    if len(batches) < MIN_BATCHES:
        raise InputError(f"--batches needs at least {MIN_BATCHES} values to fit and validate a curve "
                         f"(e.g. 1..4096), got {len(batches)}", field="batches")
    if seconds <= 0:
        raise InputError(f"--seconds must be > 0, got {seconds:g}", field="seconds")
    for sid in schemes:
        if sid not in KERNELS:
            raise InputError(f"calibrate has no torch kernel for scheme '{sid}'",
                             hint=f"measurable: {', '.join(KERNELS)}", field="schemes")
    shapes = decode_shapes(arch)
    dev = backend.device()
    cap = dev.capability if dev.capability is not None else gpu.capability
    skipped: dict[str, str] = {}
    runnable: dict[str, Scheme] = {}
    for sid, s in schemes.items():
        k = KERNELS[sid]
        if cap is not None and cap < k.min_capability:
            skipped[sid] = (f"{k.kind} needs SM{k.min_capability // 10}.{k.min_capability % 10}+ for its torch "
                            f"kernel; this GPU is SM{cap // 10}.{cap % 10}")
            continue
        problem = shape_problem(k, shapes)
        if problem is not None:
            skipped[sid] = problem
            continue
        datapath(s, gpu)  # a SchemeError here is a bug in KERNELS' capabilities
        runnable[sid] = s
    if not runnable:
        raise InputError("none of the requested schemes has a torch kernel on this GPU: "
                         + "; ".join(f"{k}: {v}" for k, v in skipped.items()), field="schemes")
    formats = [f for f in GEMM_FORMATS if cap is None or cap >= _GEMM_NEEDS[f]]
    steps = 1 + len(formats) + len(runnable) * len(batches)
    done = 0

    def tick(label: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(label, done, steps)

    if progress is not None:
        progress("read bandwidth", 0, steps)
    # a tenth of the budget for the ceilings, the rest shared by the (scheme, batch) points
    ceil_budget = 0.1 * seconds / (1 + len(formats))
    point_budget = 0.9 * seconds / (len(runnable) * len(batches))
    bw, buf = backend.read_bandwidth(ceil_budget)
    tick("read bandwidth")
    flops: dict[str, float] = {}
    for f in formats:
        flops[f] = significant(backend.gemm_flops(f, GEMM_SHAPE, ceil_budget))
        tick(f"GEMM {f}")
    measurements: list[Measurement] = []
    notes: list[str] = []
    rotation = 1
    # a backend that can time an engine's own kernels (the torch backend, .engine_ops) picks them per scheme
    choose = getattr(backend, "engine_kernel", None)
    timed: dict[str, Kernel] = {}
    fallbacks: dict[str, str] = {}  # scheme -> why torch's kernel was timed instead of the engine's

    def measure(k: Kernel) -> tuple[list[float], list[float], list[str]]:
        ts, spreads, got = [], [], []
        for b in batches:
            t = backend.linear_step(k, shapes, b, point_budget)
            ts.append(significant(t.seconds))
            spreads.append(significant(t.spread, 3))
            if t.note:
                got.append(t.note)
            tick(f"{k.scheme} batch {b}")
        return ts, spreads, got

    for sid in runnable:
        k = KERNELS[sid]
        why = ""
        if choose is not None:
            k, why = choose(k, runnable[sid], shapes, cap, engine_table)
        before = done
        try:
            rotation_k = backend.rotation(k, shapes)
            ts, spreads, got = measure(k)
        except Exception as exc:  # noqa: BLE001 - an engine op that fails: torch's kernel instead, and why
            if not k.engine:
                raise
            why = (f"{k.key} ({engine_label(k.engine)} {k.engine_version}) raised "
                   f"{type(exc).__name__}: {str(exc)[:160]}")
            k, done = KERNELS[sid], before
            rotation_k = backend.rotation(k, shapes)
            ts, spreads, got = measure(k)
        rotation = max(rotation, rotation_k)
        for note in got:
            if f"{sid}: {note}" not in notes:
                notes.append(f"{sid}: {note}")
        timed[sid] = k
        if choose is not None and not k.engine:
            fallbacks[sid] = why or "no engine kernel"
        measurements.append(Measurement(scheme=sid, kernel=k.description, batch=batches, time_s=tuple(ts),
                                        spread=tuple(spreads)))

    ceilings = Ceilings(read_bandwidth_bytes_per_s=significant(bw), read_buffer_bytes=buf, gemm_shape=GEMM_SHAPE,
                        gemm_flops_per_s=flops)
    prov = Provenance(
        tool=tool, command=command, backend=backend.name, simulated=backend.simulated, gpu_name=dev.gpu_name,
        driver_version=dev.driver_version, cuda_version=dev.cuda_version, torch_version=dev.torch_version,
        engine=next((k.engine for k in timed.values() if k.engine), None),
        engine_version=next((k.engine_version for k in timed.values() if k.engine), None),
        measured_on=today or date.today(), seconds=round(clock(), 1) if clock is not None else 0.0,
    )
    calib = Calibration(provenance=prov, model=model_id, shapes=shapes, l2_rotation=rotation, ceilings=ceilings,
                        measurements=tuple(measurements))
    statement = kernels_statement(timed, fallbacks) if choose is not None else ""
    profile = build_profile(calib, arch=arch, gpu=gpu, schemes=runnable, presets=presets, notes=notes,
                            kernels=timed, statement=statement)
    return profile, summarize(profile, arch=arch, gpu=gpu, schemes=runnable, skipped=skipped, notes=notes,
                              kernels=timed, fallbacks=fallbacks, statement=statement)


def build_profile(
    calib: Calibration,
    *,
    arch: ModelArch,
    gpu: GPU,
    schemes: dict[str, Scheme],
    presets: dict[str, Scheme],
    notes: Sequence[str] = (),
    kernels: dict[str, Kernel] | None = None,
    statement: str = "",
) -> PerfProfile:
    """A profile from a calibration record: measured ceilings as the GPU's efficiencies, and a
    :class:`LinearFit` per measured scheme (shared with presets of the same kernel class), each
    recording the kernel it timed (``kernels``: scheme -> the :class:`Kernel` timed, default
    torch's; ``statement``: which kernels were timed, for the description and source)."""
    c = calib.ceilings
    mem_eff = min(1.0, significant(c.read_bandwidth_bytes_per_s / gpu.bandwidth_bytes_per_s, 4))
    comp: dict[str, float] = {}
    for fmt, key in (("bf16", "bf16"), ("fp8", "fp8"), ("int8", "int8")):
        peak = gpu.peak(key)
        got = c.gemm_flops_per_s.get(fmt)
        if got is not None and peak:
            comp[key] = min(1.0, significant(got / peak, 4))
    low = [f"{k} {v:.2%}" for k, v in (("read bandwidth", mem_eff), *comp.items()) if v < MIN_EFFICIENCY]
    if low:  # the profile would refuse it: say why here
        raise InputError(f"measured {', '.join(low)} of the {gpu.id} spec sheet: under {MIN_EFFICIENCY:.0%} is a broken "
                         "measurement or another GPU (check --gpu)", field="gpu")
    if "bf16" in comp:
        comp["fp16"] = comp["bf16"]
    scheme_knobs: dict[str, SchemeKnobs] = {}
    for m in calib.measurements:
        s = schemes[m.scheme]
        cls = kernel_class(s)
        also = tuple(sorted(pid for pid, ps in presets.items()
                            if pid != m.scheme and cls is not None and kernel_class(ps) == cls))
        fit = fit_linear(arch, s, gpu, m.batch, m.time_s, kernel=m.kernel, applies_to=also)
        timed = (kernels or {}).get(m.scheme) or KERNELS.get(m.scheme)
        kid = timed.kernel_id if timed is not None else None
        scheme_knobs[m.scheme] = SchemeKnobs(linear=fit.model_copy(update={"kernel_id": kid or None}))
    prov = calib.provenance
    label = "SIMULATED " if prov.simulated else ""
    entry = GpuKnobs(
        gpu=gpu.id,
        source=(f"{label}quantadvise calibrate ({prov.backend} backend) on '{prov.gpu_name}', "
                f"{prov.measured_on.isoformat()}; shapes of {calib.model}" + (f"; {statement}" if statement else "")),
        memory_efficiency=mem_eff,
        compute_efficiency=dict(comp),
        schemes=scheme_knobs,
        calibration=calib,
    )
    desc = (f"{label}calibration of {gpu.id} (the driver says '{prov.gpu_name}'): measured ceilings and per-scheme "
            f"decode linear curves for the shapes of {calib.model}")
    if statement:
        desc += f"; {statement}"
    if notes:
        desc += "; " + "; ".join(notes)
    return PerfProfile(
        id=f"{'simulated-' if prov.simulated else ''}{gpu.id}-{prov.measured_on.isoformat()}",
        description=desc,
        source=f"{prov.tool} calibrate --backend {prov.backend}" + (f" ({prov.command})" if prov.command else ""),
        as_of=prov.measured_on,
        gpus=(entry,),
    )


def summarize(profile: PerfProfile, *, arch: ModelArch, gpu: GPU, schemes: dict[str, Scheme],
              skipped: dict[str, str] | None = None, profile_path: str | None = None,
              notes: Sequence[str] = (), kernels: dict[str, Kernel] | None = None,
              fallbacks: dict[str, str] | None = None, statement: str = "") -> CalibrationResult:
    """The :class:`CalibrationResult` of a profile :func:`build_profile` made (its first GPU entry)."""
    entry = profile.gpus[0]
    calib = entry.calibration
    assert calib is not None
    timed = {m.scheme: (kernels or {}).get(m.scheme) or KERNELS[m.scheme] for m in calib.measurements}
    out = []
    for m in calib.measurements:
        k = timed[m.scheme]
        fit = entry.schemes[m.scheme].linear
        assert fit is not None
        s = schemes[m.scheme]
        ideal = ideal_model(arch, s, gpu)
        mem_s, comp_s = ideal.linear_terms()
        ridge = max((fit.compute_efficiency * mem_s) / (fit.memory_efficiency * comp_s), fit.m_tile)
        resid = [math.log(t / blend(mem_s / fit.memory_efficiency, comp_s * max(b, fit.m_tile) / fit.compute_efficiency,
                                    fit.blend)) for b, t in zip(m.batch, m.time_s, strict=True)]
        out.append(CalibratedScheme(
            scheme=m.scheme, kernel=m.kernel, kernel_id=k.key, engine=k.engine or None,
            engine_version=k.engine_version or None, torch_kernel=not k.engine,
            fallback=(fallbacks or {}).get(m.scheme), applies_to=list(fit.applies_to), batch=list(m.batch),
            time_s=list(m.time_s), tokens_per_s=[b / t for b, t in zip(m.batch, m.time_s, strict=True)],
            spread=list(m.spread), memory_efficiency=fit.memory_efficiency,
            compute_efficiency=fit.compute_efficiency, blend=fit.blend, m_tile=fit.m_tile, fitted_ridge_batch=ridge,
            rms_fit_error=math.sqrt(sum(r * r for r in resid) / len(resid)),
        ))
    prov = calib.provenance
    warnings = []
    if prov.simulated:
        warnings.append("SIMULATED timings (--backend simulated): a synthetic GPU for demos and tests, not a "
                        "measurement; do not use the profile for decisions")
    c = calib.ceilings
    return CalibrationResult(
        profile_path=profile_path,
        gpu=CalibratedGpu(id=gpu.id, name=gpu.name, driver_name=prov.gpu_name,
                          bandwidth_bytes_per_s=gpu.bandwidth_bytes_per_s,
                          peak_flops_per_s={k: p for k in ("bf16", "fp8", "int8") if (p := gpu.peak(k))}),
        provenance=prov,
        model=calib.model,
        shapes=list(calib.shapes),
        ceilings=MeasuredCeilings(read_bandwidth_bytes_per_s=c.read_bandwidth_bytes_per_s,
                                  read_buffer_bytes=c.read_buffer_bytes, gemm_shape=c.gemm_shape,
                                  gemm_flops_per_s=dict(c.gemm_flops_per_s),
                                  memory_efficiency=entry.memory_efficiency,
                                  compute_efficiency=dict(entry.compute_efficiency)),
        schemes=out,
        skipped=dict(skipped or {}),
        engine=next((k.engine for k in timed.values() if k.engine), None),
        engine_version=next((k.engine_version for k in timed.values() if k.engine), None),
        kernels_timed=statement,
        notes=[f"each layer's weights cycled over {calib.l2_rotation} copies so no weight is re-read from the L2",
               "time_s = the decoder linear layers of one decode step (every shape x layers), median",
               (statement or "timed torch's own kernels, not vLLM's or SGLang's custom ops")
               + ": a measured curve prices only the kernel it timed ("
               + ", ".join(f"{sid}: {k.key}" for sid, k in timed.items()) + "); a scheme an engine runs on "
               "another kernel keeps that kernel's curve (docs/calibration.md)",
               *notes],
        warnings=warnings,
        profile=profile,
    )
