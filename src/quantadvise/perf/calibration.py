"""Calibration: measure the GPU, fold the measurement into the performance model, show its error.

``quantadvise calibrate`` times, on the local GPU (or on a simulated one), three things
(docs/calibration.md):

1. **ceilings** — achieved read bandwidth of a buffer far larger than the L2, and dense GEMM
   throughput per math format on one large GEMM (bf16; fp8 with per-tensor and with row-wise
   scales; int8);
2. **the linear part of a decode step** for a chosen model's shapes (every decoder GEMM, q/k/v and
   gate/up fused as engines run them, times the number of layers) at batches 1 ... 4096, for each
   scheme that has a kernel in torch (:data:`KERNELS`), activation quantization included where the
   scheme needs it (unfused, so its cost is measured);
3. from (2), per scheme, a :class:`~quantadvise.perfprofile.LinearFit`: the model
   ``(mem^p + comp^p)^(1/p) x correction(M)`` fitted to the measured times (:func:`fit_linear`).

The result is an efficiency profile (``perfprofile.PerfProfile``) whose GPU entry carries the
measured ceilings as efficiencies, the fits per scheme and the raw ``calibration`` record. Every
command that accepts ``--profile`` then uses it; :func:`validate` compares predicted and measured
times for the ideal, default-efficiency, measured-ceilings and calibrated models, leave-one-out.

Pure: the timing itself is a backend's job (``quantadvise.timing``: torch on CUDA, or simulated);
this module only orchestrates, fits and judges.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from ..errors import InputError
from ..hardware import GPU
from ..model import ModelArch
from ..scheme import Scheme
from .profiles import (
    IDEAL,
    Calibration,
    Ceilings,
    Curve,
    Efficiency,
    LinearFit,
    LinearShape,
    Measurement,
    PerfProfile,
    Provenance,
    blend,
    resolve,
)
from .step import StepModel, datapath

SCHEMA_VERSION = 1
DEFAULT_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
MIN_BATCHES = 4  # a fit has three parameters; leave-one-out needs one more point
DEFAULT_MAX_ERROR = 0.15
GEMM_SHAPE = (8192, 8192, 8192)  # the ceilings' GEMM (M, N, K): large enough to saturate any listed GPU
SIG_DIGITS = 5  # measured numbers are rounded to this many significant digits (timing noise is ~1%)


# -------------------------------------------------------------------------------------------------
# What can be measured: schemes with a kernel in torch
# -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Kernel:
    """How the torch backend runs one scheme's linear layers (the simulated backend mirrors it)."""

    scheme: str  # preset id
    kind: str  # bf16 | fp8-tensor | fp8-rowwise | int8-dynamic | int4-weight-only
    description: str
    min_capability: int  # SM (major*10 + minor) the torch kernel needs


KERNELS: dict[str, Kernel] = {k.scheme: k for k in (
    Kernel("bf16", "bf16", "torch.nn.functional.linear, bf16 (cuBLAS)", 80),
    Kernel("fp8-tensor", "fp8-tensor",
           "static per-tensor fp8 activation cast ((x * 1/s).clamp().to(e4m3), unfused) + torch._scaled_mm with "
           "per-tensor scales, bf16 out", 89),
    Kernel("fp8-dynamic", "fp8-rowwise",
           "dynamic per-token fp8 activation quantization in torch (abs().amax() / 448, divide, clamp, cast: "
           "unfused) + torch._scaled_mm with row-wise scales (per-token x per-channel), bf16 out", 90),
    Kernel("w8a8-int8", "int8-dynamic",
           "dynamic per-token int8 activation quantization in torch (unfused; batches <= 16 padded to 32 rows, "
           "torch._int_mm needs M > 16) + torch._int_mm (int32 out) + per-token x per-channel rescale to bf16", 80),
    Kernel("w4a16", "int4-weight-only",
           "torch._weight_int4pack_mm (tinygemm int4 weight-only, group 128, bf16 scales and zeros)", 80),
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
    if text is None:
        return DEFAULT_SCHEMES
    names = [s.strip() for s in (text.split(",") if isinstance(text, str) else text) if s.strip()]
    if not names:
        raise InputError("--schemes needs at least one scheme, e.g. bf16,w4a16", field="schemes")
    return tuple(names)


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
    for g in arch.inventory.serving_groups(False):
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


# -------------------------------------------------------------------------------------------------
# The timing backend contract (implemented in quantadvise.timing)
# -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    gpu_name: str  # as the driver reports it
    driver_version: str | None
    cuda_version: str | None
    torch_version: str | None
    capability: int | None  # major*10 + minor
    l2_cache_bytes: int | None
    memory_bytes: int | None


@dataclass(frozen=True, slots=True)
class Timing:
    seconds: float  # median
    spread: float  # (p90 - p10) / median over the samples
    note: str = ""  # how it was timed when not the normal way (e.g. eager because capture failed)


class Backend(Protocol):
    name: str
    simulated: bool

    def device(self) -> DeviceInfo: ...

    def read_bandwidth(self, budget_s: float) -> tuple[float, int]:
        """(bytes/s, buffer bytes) of a read-only pass over a buffer far larger than the L2."""
        ...

    def gemm_flops(self, fmt: str, shape: tuple[int, int, int], budget_s: float) -> float:
        """FLOP/s of one dense GEMM (fmt: bf16, fp8, fp8-rowwise, int8)."""
        ...

    def linear_step(self, kernel: Kernel, shapes: tuple[LinearShape, ...], batch: int, budget_s: float) -> Timing:
        """Seconds of every shape x count at GEMM height ``batch`` (weights rotated past the L2)."""
        ...

    def rotation(self, kernel: Kernel, shapes: tuple[LinearShape, ...]) -> int:
        """Copies of one layer's weights the backend cycles through (1 when it holds all layers)."""
        ...

    def close(self) -> None: ...


Progress = Callable[[str, int, int], None]  # (what is being measured, steps done, steps in all)

GEMM_FORMATS = ("bf16", "fp8", "fp8-rowwise", "int8")
_GEMM_NEEDS = {"bf16": 80, "fp8": 89, "fp8-rowwise": 90, "int8": 80}


# -------------------------------------------------------------------------------------------------
# Fitting
# -------------------------------------------------------------------------------------------------

_P_GRID = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 64.0)
_ETA_M = (0.01, 4.0)
_ETA_C = (1e-4, 4.0)


_TILES = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)


@dataclass(frozen=True, slots=True)
class FitParams:
    memory_efficiency: float
    compute_efficiency: float
    blend: float
    m_tile: float
    rms_log_error: float


def _lm(bs: Sequence[float], ys: Sequence[float], m0: float, c0: float, p: float,
        x: float, y: float) -> tuple[float, float, float]:
    """Levenberg-Marquardt on (x, y) = (ln 1/eta_m, ln 1/eta_c) for a fixed blend exponent p;
    returns (x, y, sse in log time). ``bs`` are the rows the kernel computes. Works in logs:
    ln t = ln v + softplus_p(ln u - ln v), u the memory and v the compute term."""
    lo_x, hi_x = -math.log(_ETA_M[1]), -math.log(_ETA_M[0])
    lo_y, hi_y = -math.log(_ETA_C[1]), -math.log(_ETA_C[0])
    lm0 = math.log(m0)
    lv0 = [math.log(c0 * b) for b in bs]
    exact_max = p >= 64.0
    exp, log1p = math.exp, math.log1p

    def resid(x: float, y: float) -> tuple[list[float], list[float], float]:
        lu = x + lm0
        es, ws, sse = [], [], 0.0
        for lv_b, yi in zip(lv0, ys, strict=True):
            lv = y + lv_b
            d = lu - lv
            if exact_max:
                lt, w = (lu, 1.0) if d >= 0 else (lv, 0.0)
            else:
                z = exp(-p * abs(d))
                lt = (lu if d >= 0 else lv) + log1p(z) / p
                w = 1.0 / (1.0 + z) if d >= 0 else z / (1.0 + z)
            e = yi - lt
            es.append(e)
            ws.append(w)
            sse += e * e
        return es, ws, sse

    lam = 1e-3
    es, ws, cur = resid(x, y)
    for _ in range(100):
        j11 = j12 = j22 = g1 = g2 = 0.0
        for e, w in zip(es, ws, strict=True):
            v = 1.0 - w
            j11 += w * w
            j12 += w * v
            j22 += v * v
            g1 += w * e
            g2 += v * e
        for _ in range(20):
            a11, a22 = j11 + lam * (j11 + 1e-9), j22 + lam * (j22 + 1e-9)
            det = a11 * a22 - j12 * j12
            dx = (g1 * a22 - g2 * j12) / det
            dy = (a11 * g2 - j12 * g1) / det
            nx, ny = min(max(x + dx, lo_x), hi_x), min(max(y + dy, lo_y), hi_y)
            nes, nws, new = resid(nx, ny)
            if new < cur:
                break
            lam *= 4
        else:
            return x, y, cur
        gain = cur - new
        x, y, es, ws, cur = nx, ny, nes, nws, new
        lam = max(lam / 3, 1e-9)
        if gain <= 1e-12 * (1.0 + cur):
            break
    return x, y, cur


def fit_params(batches: Sequence[float], times_s: Sequence[float], mem_s: float, comp_s: float) -> FitParams:
    """Least squares in log time of ``t(M) = ((mem/eta_m)^p + (comp*max(M, T)/eta_c)^p)^(1/p)`` to
    the measured ``times_s`` at GEMM heights ``batches``. ``mem_s`` = the shapes' bytes at peak
    bandwidth, ``comp_s`` = their FLOPs per row at the datapath's peak (the spec-sheet roofline's
    two terms), so eta_m and eta_c are achieved fractions of the spec sheet; p (blend) and T (the
    kernel's M tile) are chosen from grids, p then refined."""
    if len(batches) < 3:
        raise InputError(f"a fit needs at least 3 batches, got {len(batches)}", field="batches")
    if mem_s <= 0 or comp_s <= 0:
        raise InputError("the shapes have no bytes or FLOPs to fit", field="model")
    ys = [math.log(t) for t in times_s]
    x0 = min(max(math.log(times_s[0] / mem_s), -math.log(_ETA_M[1])), -math.log(_ETA_M[0]))
    results = []
    for tile in _TILES:
        if tile > 1 and tile > batches[-2]:  # a tile above all but the last batch explains nothing
            break
        rows = [max(b, tile) for b in batches]
        y0 = min(max(math.log(times_s[-1] / (comp_s * rows[-1])), -math.log(_ETA_C[1])), -math.log(_ETA_C[0]))
        for p in _P_GRID:
            x, y, sse = _lm(rows, ys, mem_s, comp_s, p, x0, y0)
            results.append((sse, tile, p, x, y))
    best = min(results, key=lambda r: (r[0] * (1 + 1e-9), r[1]))  # on a tie, the smaller tile
    sse, tile, p_best, x_b, y_b = best
    rows = [max(b, tile) for b in batches]
    # refine p between its grid neighbours (golden section on ln p)
    i = _P_GRID.index(p_best)
    lo, hi = math.log(_P_GRID[max(i - 1, 0)]), math.log(_P_GRID[min(i + 1, len(_P_GRID) - 1)])
    g = (math.sqrt(5) - 1) / 2
    cache: dict[float, tuple[float, float, float, float]] = {}

    def at(lp: float) -> tuple[float, float, float, float]:
        if lp not in cache:
            x, y, e = _lm(rows, ys, mem_s, comp_s, math.exp(lp), x_b, y_b)
            cache[lp] = (e, math.exp(lp), x, y)
        return cache[lp]

    a_, b_ = lo, hi
    for _ in range(14):
        c1, c2 = b_ - g * (b_ - a_), a_ + g * (b_ - a_)
        if at(c1)[0] <= at(c2)[0]:
            b_ = c2
        else:
            a_ = c1
    sse, p, x, y = min([(sse, p_best, x_b, y_b), *cache.values()])
    return FitParams(
        memory_efficiency=math.exp(-x),
        compute_efficiency=math.exp(-y),
        blend=p,
        m_tile=tile,
        rms_log_error=math.sqrt(sse / len(batches)),
    )


def _sig(v: float, digits: int = SIG_DIGITS) -> float:
    if v == 0 or not math.isfinite(v):
        return v
    return float(f"{v:.{digits - 1}e}")


def _ideal_model(arch: ModelArch, scheme: Scheme, gpu: GPU) -> StepModel:
    eff = resolve([IDEAL], (gpu.id,), (scheme.id,))
    return StepModel(arch, scheme, gpu, efficiency=eff, scope="decoder")


def fit_linear(
    arch: ModelArch,
    scheme: Scheme,
    gpu: GPU,
    batches: Sequence[int],
    times_s: Sequence[float],
    *,
    kernel: str = "",
    applies_to: tuple[str, ...] = (),
) -> LinearFit:
    """The :class:`LinearFit` of one scheme's measured decode linears: efficiencies and blend
    fitted in log time, then a correction curve (measured / fitted, per measured batch) so that the
    step model reproduces every measured point for ``arch``'s shapes."""
    ideal = _ideal_model(arch, scheme, gpu)
    mem_s, comp_s = ideal.linear_terms()
    fp = fit_params(batches, times_s, mem_s, comp_s)
    base = LinearFit(kernel=kernel, applies_to=applies_to, memory_efficiency=_sig(fp.memory_efficiency),
                     compute_efficiency=_sig(fp.compute_efficiency), blend=_sig(fp.blend, 4), m_tile=fp.m_tile)
    sm = StepModel(arch, scheme, gpu, efficiency=_with_fit(ideal.eff, base), scope="decoder", path=ideal.path)
    corr = [_sig(t / sm.linear_time(b)) for b, t in zip(batches, times_s, strict=True)]
    return base.model_copy(update={"correction": Curve(batch=tuple(float(b) for b in batches), value=tuple(corr))})


def _with_fit(eff: Efficiency, fit: LinearFit | None) -> Efficiency:
    """``eff`` with its measured fit replaced (the ideal profile has none; a fit turns it into a
    calibrated model of the linears only, which is all ``linear_time`` looks at)."""
    return replace(eff, ideal=False, linear=fit, linear_bf16=None, dequant=None if fit is not None else eff.dequant)


# -------------------------------------------------------------------------------------------------
# Running a calibration
# -------------------------------------------------------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)


class SchemeSummary(_Out):
    scheme: str
    kernel: str
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


class CalibrationResult(_Out):
    schema_version: int = SCHEMA_VERSION
    profile_path: str | None
    gpu: dict[str, Any]
    provenance: dict[str, Any]
    model: str
    shapes: list[dict[str, Any]]
    ceilings: dict[str, Any]
    schemes: list[SchemeSummary]
    skipped: dict[str, str] = {}
    notes: list[str] = []
    warnings: list[str] = []
    profile: dict[str, Any]


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
) -> tuple[PerfProfile, CalibrationResult]:
    """Measure ceilings and every scheme's decode linears at every batch with ``backend``; fit;
    return the profile and a summary. ``schemes`` = id -> Scheme (each must be in :data:`KERNELS`);
    ``presets`` = every known preset (for ``applies_to``: schemes of the same kernel class)."""
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
        flops[f] = _sig(backend.gemm_flops(f, GEMM_SHAPE, ceil_budget))
        tick(f"GEMM {f}")
    measurements: list[Measurement] = []
    notes: list[str] = []
    rotation = 1
    for sid in runnable:
        k = KERNELS[sid]
        rotation = max(rotation, backend.rotation(k, shapes))
        ts, spreads = [], []
        for b in batches:
            t = backend.linear_step(k, shapes, b, point_budget)
            ts.append(_sig(t.seconds))
            spreads.append(_sig(t.spread, 3))
            if t.note and t.note not in notes:
                notes.append(f"{sid}: {t.note}")
            tick(f"{sid} batch {b}")
        measurements.append(Measurement(scheme=sid, kernel=k.description, batch=batches, time_s=tuple(ts),
                                        spread=tuple(spreads)))

    ceilings = Ceilings(read_bandwidth_bytes_per_s=_sig(bw), read_buffer_bytes=buf, gemm_shape=GEMM_SHAPE,
                        gemm_flops_per_s=flops)
    prov = Provenance(
        tool=tool, command=command, backend=backend.name, simulated=backend.simulated, gpu_name=dev.gpu_name,
        driver_version=dev.driver_version, cuda_version=dev.cuda_version, torch_version=dev.torch_version,
        measured_on=today or date.today(), seconds=round(clock(), 1) if clock is not None else 0.0,
    )
    calib = Calibration(provenance=prov, model=model_id, shapes=shapes, l2_rotation=rotation, ceilings=ceilings,
                        measurements=tuple(measurements))
    profile = build_profile(calib, arch=arch, gpu=gpu, schemes=runnable, presets=presets, notes=notes)
    return profile, summarize(profile, arch=arch, gpu=gpu, schemes=runnable, skipped=skipped, notes=notes)


def build_profile(
    calib: Calibration,
    *,
    arch: ModelArch,
    gpu: GPU,
    schemes: dict[str, Scheme],
    presets: dict[str, Scheme],
    notes: Sequence[str] = (),
) -> PerfProfile:
    """A profile from a calibration record: measured ceilings as the GPU's efficiencies, and a
    :class:`LinearFit` per measured scheme (shared with presets of the same kernel class)."""
    c = calib.ceilings
    mem_eff = min(1.0, _sig(c.read_bandwidth_bytes_per_s / gpu.bandwidth_bytes_per_s, 4))
    comp: dict[str, float] = {}
    for fmt, key in (("bf16", "bf16"), ("fp8", "fp8"), ("int8", "int8")):
        peak = gpu.peak(key)
        got = c.gemm_flops_per_s.get(fmt)
        if got is not None and peak:
            comp[key] = min(1.0, _sig(got / peak, 4))
    if "bf16" in comp:
        comp["fp16"] = comp["bf16"]
    scheme_knobs: dict[str, Any] = {}
    for m in calib.measurements:
        s = schemes[m.scheme]
        cls = kernel_class(s)
        also = tuple(sorted(pid for pid, ps in presets.items()
                            if pid != m.scheme and cls is not None and kernel_class(ps) == cls))
        fit = fit_linear(arch, s, gpu, m.batch, m.time_s, kernel=m.kernel, applies_to=also)
        scheme_knobs[m.scheme] = {"linear": fit}
    prov = calib.provenance
    label = "SIMULATED " if prov.simulated else ""
    entry = {
        "gpu": gpu.id,
        "source": (f"{label}quantadvise calibrate ({prov.backend} backend) on '{prov.gpu_name}', "
                   f"{prov.measured_on.isoformat()}; shapes of {calib.model}"),
        "memory_efficiency": mem_eff,
        "compute_efficiency": comp,
        "schemes": scheme_knobs,
        "calibration": calib,
    }
    desc = (f"{label}calibration of {gpu.id} (the driver says '{prov.gpu_name}'): measured ceilings and per-scheme "
            f"decode linear curves for the shapes of {calib.model}")
    if notes:
        desc += "; " + "; ".join(notes)
    return PerfProfile(
        id=f"{'simulated-' if prov.simulated else ''}{gpu.id}-{prov.measured_on.isoformat()}",
        description=desc,
        source=f"{prov.tool} calibrate --backend {prov.backend}" + (f" ({prov.command})" if prov.command else ""),
        as_of=prov.measured_on,
        gpus=(entry,),  # type: ignore[arg-type]
    )


def summarize(profile: PerfProfile, *, arch: ModelArch, gpu: GPU, schemes: dict[str, Scheme],
              skipped: dict[str, str] | None = None, profile_path: str | None = None,
              notes: Sequence[str] = ()) -> CalibrationResult:
    entry = profile.gpus[0]
    calib = entry.calibration
    assert calib is not None
    out = []
    for m in calib.measurements:
        fit = entry.schemes[m.scheme].linear
        assert fit is not None
        s = schemes[m.scheme]
        ideal = _ideal_model(arch, s, gpu)
        mem_s, comp_s = ideal.linear_terms()
        ridge = max((fit.compute_efficiency * mem_s) / (fit.memory_efficiency * comp_s), fit.m_tile)
        resid = [math.log(t / blend(mem_s / fit.memory_efficiency, comp_s * max(b, fit.m_tile) / fit.compute_efficiency,
                                    fit.blend)) for b, t in zip(m.batch, m.time_s, strict=True)]
        out.append(SchemeSummary(
            scheme=m.scheme, kernel=m.kernel, applies_to=list(fit.applies_to), batch=list(m.batch),
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
        gpu={"id": gpu.id, "name": gpu.name, "driver_name": prov.gpu_name,
             "bandwidth_bytes_per_s": gpu.bandwidth_bytes_per_s,
             "peak_flops_per_s": {k: gpu.peak(k) for k in ("bf16", "fp8", "int8") if gpu.peak(k)}},
        provenance=prov.model_dump(mode="json"),
        model=calib.model,
        shapes=[s.model_dump(mode="json") for s in calib.shapes],
        ceilings={**c.model_dump(mode="json"), "memory_efficiency": entry.memory_efficiency,
                  "compute_efficiency": dict(entry.compute_efficiency)},
        schemes=out,
        skipped=dict(skipped or {}),
        notes=[f"each layer's weights cycled over {calib.l2_rotation} copies so no weight is re-read from the L2",
               "time_s = the decoder linear layers of one decode step (every shape x layers), median",
               *notes],
        warnings=warnings,
        profile=profile.to_dict(),
    )


# -------------------------------------------------------------------------------------------------
# Validation: predicted vs measured, leave-one-out
# -------------------------------------------------------------------------------------------------

VALIDATE_MODELS = ("ideal", "default-efficiency", "calibrated-ceilings", "calibrated")


class ValidationPoint(_Out):
    batch: int
    measured_s: float
    predicted_s: dict[str, float]  # model -> seconds
    error: dict[str, float]  # model -> (predicted - measured) / measured


class SchemeValidation(_Out):
    gpu: str
    scheme: str
    kernel: str
    points: list[ValidationPoint]
    max_abs_error: dict[str, float]
    mean_abs_error: dict[str, float]
    within: bool  # calibrated within max_error at every batch


class ValidationResult(_Out):
    schema_version: int = SCHEMA_VERSION
    profile: str
    max_error: float
    method: str
    calibrations: list[dict[str, Any]]
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
    max_error: float = DEFAULT_MAX_ERROR,
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
    cals: list[dict[str, Any]] = []
    warnings: list[str] = []
    for entry in entries:
        calib = entry.calibration
        assert calib is not None
        gpu = gpus[entry.gpu]
        arch = archs[calib.model]
        prov = calib.provenance
        cals.append({"gpu": gpu.id, "gpu_name": prov.gpu_name, "model": calib.model, "backend": prov.backend,
                     "simulated": prov.simulated, "measured_on": prov.measured_on.isoformat(),
                     "torch_version": prov.torch_version, "driver_version": prov.driver_version,
                     "cuda_version": prov.cuda_version})
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
            max_abs = {k: max(abs(p.error[k]) for p in points) for k in VALIDATE_MODELS}
            mean_abs = {k: sum(abs(p.error[k]) for p in points) / len(points) for k in VALIDATE_MODELS}
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
    ideal = _ideal_model(arch, scheme, gpu)
    out = []
    for i, b in enumerate(m.batch):
        bs = m.batch[:i] + m.batch[i + 1:]
        ts = m.time_s[:i] + m.time_s[i + 1:]
        fit = fit_linear(arch, scheme, gpu, bs, ts)
        sm = StepModel(arch, scheme, gpu, efficiency=_with_fit(ideal.eff, fit), scope="decoder", path=ideal.path)
        out.append(sm.linear_time(b))
    return out


# -------------------------------------------------------------------------------------------------
# The profile as YAML text (the api writes it to a file)
# -------------------------------------------------------------------------------------------------


def _yaml_float(v: float) -> str:
    """A float PyYAML (YAML 1.1) reads back as the same float: a dot, and a signed exponent when
    there is one (``1.5e+12``, ``4.7e-05``, ``0.82``)."""
    if not math.isfinite(v):
        return ".nan" if math.isnan(v) else (".inf" if v > 0 else "-.inf")
    r = repr(float(v))
    if "e" not in r and abs(v) >= 1e6:
        for n in range(1, 17):
            cand = f"{v:.{n}e}"
            if float(cand) == v:
                r = cand
                break
    if "e" in r:
        mant, ex = r.split("e")
        if "." not in mant:
            mant += ".0"
        sign = ex[0] if ex[0] in "+-" else "+"
        digits = ex.lstrip("+-").rjust(2, "0")
        r = f"{mant}e{sign}{digits}"
    return r


def profile_yaml(profile: PerfProfile) -> str:
    """The profile as a YAML document ``parse_profile(yaml.safe_load(text))`` reads back equal, with
    a header saying what it is (and, for the simulated backend, that it is not a measurement)."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    _Dumper.add_representer(float, lambda d, v: d.represent_scalar("tag:yaml.org,2002:float", _yaml_float(v)))
    doc = {"schema_version": profile.schema_version,
           **profile.model_dump(mode="json", exclude_defaults=True, exclude={"schema_version"})}
    doc["gpus"] = [{"gpu": e.pop("gpu"), **({"source": e.pop("source")} if "source" in e else {}), **e}
                   for e in doc.get("gpus", [])]
    body = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=110, allow_unicode=True)
    cals = [e.calibration for e in profile.gpus if e.calibration is not None]
    head = ["# quantadvise efficiency profile (validated by quantadvise.perfprofile.PerfProfile; docs/calibration.md)."]
    for c in cals:
        p = c.provenance
        if p.simulated:
            head.append("# SIMULATED TIMINGS: written by `calibrate --backend simulated` from a synthetic GPU. NOT A "
                        "MEASUREMENT;")
            head.append("# for demos and tests only.")
        else:
            head.append(f"# Measured on '{p.gpu_name}' on {p.measured_on.isoformat()} (driver {p.driver_version}, CUDA "
                        f"{p.cuda_version}, torch {p.torch_version}) with {p.tool}.")
    head.append("# Use it with --profile FILE (roofline, recommend, check); check it with `quantadvise validate FILE`.")
    return "\n".join(head) + "\n" + body
