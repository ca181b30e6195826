"""Efficiency profiles for the roofline: how far below the spec sheet a GPU really runs.

A pure roofline divides bytes by peak bandwidth and FLOPs by peak FLOP/s. Real kernels reach a
fraction of both, and weight-only kernels pay for dequantising every weight they load. A profile
holds those fractions, per GPU and per math format, optionally varying with batch, optionally per
scheme. The shipped default is ``data/perf_profile.yaml``; ``--profile FILE`` replaces it; ``--ideal``
uses :data:`IDEAL` (the spec sheet: every efficiency 1, no dequantisation cost, no latency).

The format (docs/roofline.md documents every key)::

    schema_version: 1
    id: my-cluster
    source: where the numbers come from
    as_of: 2026-11-29
    defaults:                       # any GPU without its own entry
      memory_efficiency: 0.80       # fraction of peak HBM bandwidth
      compute_efficiency: {bf16: 0.70, fp8: 0.65, int8: 0.65, fp4: 0.60}
      dequant: {flops_per_weight: 2.0, m_tile: 64, efficiency: 1.0}
      allreduce: {latency_s: 1.0e-5, efficiency: 0.7}
      step_overhead_s: 0.0
      call_floor_s: {bf16: 2.1e-6, quantized: 5.7e-6, attention: 1.2e-5, moe: 2.0e-5, quant: 2.2e-6}  # launch floors
    gpus:
      - gpu: h100-sxm               # id or alias
        memory_efficiency: {batch: [1, 64, 512], value: [0.72, 0.80, 0.84]}   # a curve
        schemes:                    # per-scheme overrides (measured curves plug in here)
          w4a16: {compute_efficiency: {bf16: 0.55}}

A value is a number or a curve ``{batch: [...], value: [...]}``: piecewise linear in log2(batch),
flat beyond both ends. "batch" is the M dimension of the step's GEMMs: sequences in a decode step,
prompt tokens in a prefill. Lookups layer ``defaults`` < the GPU's entry < that entry's scheme.

A profile written by ``quantadvise calibrate`` adds, on its GPU entry, a ``calibration`` block (what
was measured, where, with which driver / CUDA / torch: :class:`Calibration`) and, per measured
scheme, a ``linear`` fit (:class:`LinearFit`) that replaces the roofline of that scheme's linear
layers (docs/calibration.md)::

    gpus:
      - gpu: h100-sxm
        memory_efficiency: 0.91          # measured read bandwidth / spec sheet
        compute_efficiency: {bf16: 0.74, fp8: 0.66, int8: 0.70}   # measured GEMM / spec sheet
        schemes:
          w4a16:
            linear: {kernel: ..., applies_to: [awq, gptq], memory_efficiency: 0.62,
                     compute_efficiency: 0.035, blend: 3.1, correction: {batch: [...], value: [...]}}
        calibration: {provenance: {...}, model: ..., shapes: [...], ceilings: {...}, measurements: [...]}

Pure: parses dicts, no I/O (``catalog`` reads the files).
"""

import math
from bisect import bisect_right
from datetime import date
from typing import Annotated, Any

from pydantic import (
    BeforeValidator,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import ConfigError, format_validation_error, norm_name
from ..hardware import MATH_FORMATS
from ..results import Strict, plain_numbers
from .kernel_curves import KernelCurve, QuantCurve

# The format version of a profile file (its own ``schema_version`` key), not of a JSON report
# (``results.SCHEMA_VERSION``): a change that renames or removes a profile key bumps it.
PROFILE_SCHEMA_VERSION = 1
MAX_CALL_S = 60.0  # one timed call of a calibration's decode linears: a minute is past any GPU's
MIN_CALL_S = 1e-6  # and a microsecond is under any: a kernel launch alone takes longer (1e-300 s: errors of 1e297 %)
MATH_KEYS = MATH_FORMATS
# The least fraction of a peak a GPU-wide efficiency may claim (memory_efficiency, compute_efficiency,
# dequant.efficiency, allreduce.efficiency, and each point of their curves). The lowest in the shipped
# profiles is 0.45 (MI300X fp8 / int8 GEMMs, data/perf_profile.yaml), the lowest a shipped per-kernel
# curve reaches 0.005: a whole GPU streaming or multiplying at under 1% of its spec sheet is a broken
# measurement or a typo, and a fraction near 0 divides every time by it (1e-320: an infinite step).
MIN_EFFICIENCY = 0.01
# A calibrated scheme's fitted efficiencies (:class:`LinearFit`): calibrate's fit searches the memory
# term's in [0.01, 4] and the compute term's in [1e-4, 4] (calibration/fit.py), so it never writes less;
# the correction, measured over fitted time, is bounded both ways alike: a fit 100x off is no fit.
MIN_FIT_MEMORY_EFFICIENCY = 0.01
MIN_FIT_COMPUTE_EFFICIENCY = 1e-4
MIN_CORRECTION, MAX_CORRECTION = 0.01, 100.0
MAX_DEQUANT_FLOPS = 1000.0  # vector FLOP per stored weight: 500x an unpack-and-scale (2); codebooks cost tens


class Curve(Strict):
    """A quantity that varies with batch: points ``(batch[i], value[i])``, batch strictly rising."""

    batch: tuple[float, ...]
    value: tuple[float, ...]

    @model_validator(mode="after")
    def _check(self) -> "Curve":
        if not self.batch:
            raise ValueError("a curve needs at least one point")
        if len(self.batch) != len(self.value):
            raise ValueError(f"batch has {len(self.batch)} points but value has {len(self.value)}")
        if any(b < 1 for b in self.batch):
            raise ValueError("curve batches must be >= 1")
        if any(b2 <= b1 for b1, b2 in zip(self.batch, self.batch[1:], strict=False)):
            raise ValueError("curve batches must be strictly increasing")
        return self

    def at(self, batch: float) -> float:
        """Piecewise linear in log2(batch); constant outside the measured range."""
        xs, ys = self.batch, self.value
        if batch <= xs[0]:
            return ys[0]
        if batch >= xs[-1]:
            return ys[-1]
        i = bisect_right(xs, batch)
        x0, x1 = math.log2(xs[i - 1]), math.log2(xs[i])
        t = (math.log2(batch) - x0) / (x1 - x0)
        return ys[i - 1] + t * (ys[i] - ys[i - 1])


def _to_value(v: Any) -> Any:
    """A mapping is a curve; report its own error rather than "not a valid number"."""
    if isinstance(v, dict):
        try:
            return Curve.model_validate(v)
        except ValidationError as exc:
            errs = exc.errors()
            msg = str(errs[0].get("msg", exc)).removeprefix("Value error, ") if errs else str(exc)
            raise ValueError(f"curve: {msg}") from None
    return v


Value = Annotated[float | Curve, BeforeValidator(_to_value)]


def _check_fraction(v: Value | None, what: str, upper: float = 1.0) -> Value | None:
    """``v`` (a number or each point of a curve) if it is a fraction of a peak in [:data:`MIN_EFFICIENCY`,
    ``upper``], else one ValueError naming ``what``."""
    vals = [] if v is None else (v.value if isinstance(v, Curve) else (v,))
    for x in vals:
        if not MIN_EFFICIENCY <= x <= upper:
            raise ValueError(f"{what} must be >= {MIN_EFFICIENCY:g} and <= {upper:g} (a fraction of a peak "
                             f"bandwidth or FLOP/s: under {MIN_EFFICIENCY:.0%} is no credible measurement), got {x!r}")
    return v


class DequantCost(Strict):
    """Work a weight-only kernel spends turning stored weights into the math format.

    Every stored weight costs ``flops_per_weight`` FLOP on the GPU's vector (CUDA-core / SIMD)
    units, at ``efficiency`` of the vector fp32 peak, once per ``m_tile`` rows of the batch (Marlin-
    style kernels re-dequantise each weight tile for every slice of M they process; the model
    amortises this smoothly as max(1, M / m_tile) passes). The time adds to the GEMM's compute time
    (it competes with the tensor cores, not with the memory stream)."""

    flops_per_weight: float = Field(default=2.0, ge=0, le=MAX_DEQUANT_FLOPS)
    m_tile: int = Field(default=64, ge=1)
    efficiency: float = 1.0

    @field_validator("efficiency")
    @classmethod
    def _eff(cls, v: float) -> float:
        _check_fraction(v, "dequant.efficiency")
        return v


class AllReduceCost(Strict):
    """Tensor-parallel collectives: a fixed ``latency_s`` per collective plus the ring volume over
    ``efficiency`` x the interconnect's per-direction bandwidth."""

    latency_s: float = Field(default=1.0e-5, ge=0, le=1.0)  # a second per collective: no interconnect is slower
    efficiency: float = 0.7

    @field_validator("efficiency")
    @classmethod
    def _eff(cls, v: float) -> float:
        _check_fraction(v, "allreduce.efficiency")
        return v


class CallFloor(Strict):
    """Seconds every GEMM call the roofline prices costs beyond streaming its weights and doing its math (the
    kernel's launch, ramp and tail): ``bf16`` a 16-bit weight's call, ``quantized`` a quantized one's (which also
    reads scales and unpacks or quantizes). The shipped figures are the median launch floors of the published
    GEMM tables (data/kernel_tables/, ``GemmTable.floor_s``: the smallest shape's first call); a call priced by
    a table or a measured curve carries its own. A key left out falls through to the layer below, as every knob's."""

    bf16: float | None = Field(default=None, ge=0, le=1.0e-3)  # a millisecond a call: no kernel launch is slower
    quantized: float | None = Field(default=None, ge=0, le=1.0e-3)
    # the least one layer's decode-attention call costs where no attention table prices it (the published attention
    # tables' median launch floor, ``AttentionTable.floor_s``)
    attention: float | None = Field(default=None, ge=0, le=1.0e-3)
    # a layer's fused-MoE call (the routed experts' gate, up and down: the published fused-MoE tables' median floor)
    moe: float | None = Field(default=None, ge=0, le=1.0e-3)
    # the separate activation-quantization call an engine runs before a quantized GEMM whose kernel does not fuse it
    # (``activation_quant: unfused``, data/kernels/): the median floor of the engines' published quantization tables
    quant: float | None = Field(default=None, ge=0, le=1.0e-3)


FLOOR_KEYS = ("bf16", "quantized", "attention", "moe", "quant")  # the order a resolved tuple of launch floors holds them in
NO_FLOORS = (0.0, 0.0, 0.0, 0.0, 0.0)  # --ideal


def merged_floors(below: tuple[float, ...], floor: CallFloor | None) -> tuple[float, ...]:
    """The launch floors ``below`` (:data:`FLOOR_KEYS`) with each key ``floor`` gives over them (a layer of a
    profile: the keys it leaves out fall through)."""
    if floor is None:
        return below
    return tuple(b if (v := getattr(floor, k)) is None else v for k, b in zip(FLOOR_KEYS, below, strict=True))


class Knobs(Strict):
    """One layer of settings; any key left out falls through to the layer below."""

    memory_efficiency: Value | None = None
    compute_efficiency: dict[str, Value] = Field(default_factory=dict)
    dequant: DequantCost | None = None
    allreduce: AllReduceCost | None = None
    step_overhead_s: float | None = Field(default=None, ge=0, le=1.0)  # a second a step: past any engine's
    call_floor_s: CallFloor | None = None

    @field_validator("memory_efficiency")
    @classmethod
    def _mem(cls, v: Value | None) -> Value | None:
        return _check_fraction(v, "memory_efficiency")

    @field_validator("compute_efficiency")
    @classmethod
    def _comp(cls, v: dict[str, Value]) -> dict[str, Value]:
        for key, val in v.items():
            if key not in MATH_KEYS:
                raise ValueError(f"unknown math format '{key}' (use {', '.join(MATH_KEYS)})")
            _check_fraction(val, f"compute_efficiency.{key}")
        return v


def _fitted(v: float, name: str, low: float) -> float:
    """A fitted efficiency ``v`` of :class:`LinearFit` if within what calibrate's fit searches, else the ValueError."""
    if not low <= v <= 4.0:
        raise ValueError(f"linear.{name} must be >= {low:g} and <= 4 (calibrate's fit never writes less), got {v!r}")
    return v


class LinearFit(Strict):
    """A scheme's measured linear layers on one GPU, as ``calibrate`` fits them.

    Each linear operator of the scheme then takes

        t = (mem^p + comp^p)^(1/p) x correction(M)
        mem  = stored bytes / (memory_efficiency x peak bandwidth)
        comp = FLOPs at max(M, m_tile) rows / (compute_efficiency x the datapath's peak)

    instead of the roofline ``max(bytes / bandwidth, FLOPs / peak) + dequant``: p = ``blend``
    (1: memory and compute times add, as an unfused pre-pass does; large: the roofline's max),
    ``m_tile`` the fewest rows the kernel computes (one M tile: below it, time does not shrink), and
    ``correction`` the measured time over the fitted curve at each measured GEMM height M (1 at
    every point the fit hits exactly; piecewise linear in log2(M) between them, flat beyond the
    measured range, where the fitted curve alone carries on). At every measured batch the model
    therefore reproduces the measurement for the calibrated model's shapes; other models reuse the
    fitted efficiencies. The dequantisation term is not added: the measurement contains it.
    """

    kernel: str = ""
    kernel_id: str | None = None  # the kernel timed (data/kernels ids); used only where the engine runs it
    applies_to: tuple[str, ...] = ()  # other scheme ids (or aliases) that run the same kernel class
    memory_efficiency: float
    compute_efficiency: float
    blend: float = Field(default=64.0, ge=1.0, le=64.0)
    m_tile: float = Field(default=1.0, ge=1.0)
    correction: Value = 1.0

    @field_validator("memory_efficiency")
    @classmethod
    def _mem(cls, v: float) -> float:
        return _fitted(v, "memory_efficiency", MIN_FIT_MEMORY_EFFICIENCY)

    @field_validator("compute_efficiency")
    @classmethod
    def _comp(cls, v: float) -> float:
        return _fitted(v, "compute_efficiency", MIN_FIT_COMPUTE_EFFICIENCY)

    @field_validator("correction")
    @classmethod
    def _corr(cls, v: Value) -> Value:
        for x in v.value if isinstance(v, Curve) else (v,):
            if not MIN_CORRECTION <= x <= MAX_CORRECTION:
                raise ValueError(f"linear.correction must be >= {MIN_CORRECTION:g} and <= {MAX_CORRECTION:g} "
                                 f"(measured over fitted time: a fit 100x off is no fit), got {x!r}")
        return v

    def correction_at(self, m: float) -> float:
        c = self.correction
        return c.at(m) if isinstance(c, Curve) else c

    def time(self, mem_s: float, comp_s: float, m: float) -> float:
        """One operator's seconds from its memory and compute terms (already divided by this fit's
        efficiencies; ``comp_s`` for ``m`` rows) at GEMM height ``m``."""
        if m < self.m_tile and m > 0:
            comp_s *= self.m_tile / m
        return blend(mem_s, comp_s, self.blend) * self.correction_at(m)


def blend(a: float, b: float, p: float) -> float:
    """``(a^p + b^p)^(1/p)``: a + b at p = 1, max(a, b) as p grows (exactly max at p >= 64)."""
    hi = a if a > b else b
    if hi <= 0.0:
        return 0.0
    if p >= 64.0:
        return hi
    lo = b if a > b else a
    return hi * (1.0 + (lo / hi) ** p) ** (1.0 / p)


class SchemeKnobs(Knobs):
    linear: LinearFit | None = None


class Provenance(Strict):
    """Where a calibration was measured: the GPU as its driver names it, the software stack, when."""

    tool: str
    command: str = ""
    backend: str  # torch | simulated
    simulated: bool = False
    gpu_name: str
    driver_version: str | None = None
    cuda_version: str | None = None
    torch_version: str | None = None
    # the engine whose own kernels were timed (vllm) and its release; None: torch's kernels for every scheme
    engine: str | None = None
    engine_version: str | None = None
    measured_on: date
    seconds: float = Field(default=0.0, ge=0)

    @model_validator(mode="after")
    def _label(self) -> "Provenance":
        if self.simulated != (self.backend == "simulated"):
            raise ValueError("simulated must be true exactly when backend is 'simulated'")
        return self


class Ceilings(Strict):
    """What the GPU really reaches: read bandwidth of a large buffer, and dense GEMM throughput per
    math format on one large GEMM (keys: bf16, fp8 per-tensor, fp8-rowwise, int8)."""

    read_bandwidth_bytes_per_s: float = Field(gt=0)
    read_buffer_bytes: int = Field(ge=0)
    gemm_shape: tuple[int, int, int]  # M, N, K
    gemm_flops_per_s: dict[str, float] = Field(default_factory=dict)

    @field_validator("gemm_flops_per_s")
    @classmethod
    def _positive(cls, v: dict[str, float]) -> dict[str, float]:
        for key, x in v.items():
            if x <= 0:
                raise ValueError(f"gemm_flops_per_s.{key} must be > 0, got {x}")
        return v


class LinearShape(Strict):
    """``count`` GEMMs of a weight (N, K) per decode step (engines fuse q/k/v and gate/up)."""

    name: str
    n: int = Field(ge=1)
    k: int = Field(ge=1)
    count: int = Field(ge=1)


class Measurement(Strict):
    """One scheme's decode-step linear layers (every shape x count), median seconds per batch."""

    scheme: str
    kernel: str
    batch: tuple[int, ...]
    time_s: tuple[float, ...]
    spread: tuple[float, ...] = ()  # (p90 - p10) / median of the timing samples, per batch

    @model_validator(mode="after")
    def _check(self) -> "Measurement":
        if not self.batch:
            raise ValueError("a measurement needs at least one batch")
        if len(self.time_s) != len(self.batch) or (self.spread and len(self.spread) != len(self.batch)):
            raise ValueError(f"{self.scheme}: batch, time_s (and spread) must have the same length")
        if any(b < 1 for b in self.batch) or any(b2 <= b1 for b1, b2 in zip(self.batch, self.batch[1:], strict=False)):
            raise ValueError(f"{self.scheme}: batches must be >= 1 and strictly increasing")
        if any(not MIN_CALL_S <= t <= MAX_CALL_S for t in self.time_s):
            raise ValueError(f"{self.scheme}: every time_s must be >= {MIN_CALL_S:g} and <= {MAX_CALL_S:g} s "
                             "(one call)")
        return self


class Calibration(Strict):
    """The raw record of a ``calibrate`` run on one GPU (``validate`` recomputes everything from it)."""

    provenance: Provenance
    model: str
    shapes: tuple[LinearShape, ...]
    l2_rotation: int = Field(default=1, ge=1)  # copies of each layer's weights cycled to defeat the L2
    ceilings: Ceilings
    measurements: tuple[Measurement, ...] = ()

    def measurement(self, scheme: str) -> Measurement | None:
        return next((m for m in self.measurements if norm_name(m.scheme) == norm_name(scheme)), None)


# the keys a stand-in curve takes from the curve it stands in for unless it states them
PROXY_SHARED = ("math", "act_bytes", "includes_quant", "overhead_s", "blend", "nk_knots", "memory_efficiency",
                "compute_efficiency", "m_knots", "m_factor", "m_tile")


class GpuKnobs(Knobs):
    gpu: str
    schemes: dict[str, SchemeKnobs] = Field(default_factory=dict)
    source: str | None = None
    calibration: Calibration | None = None
    # measured per-kernel cost curves ("<engine>/<kernel id>", data/kernels/*.yaml names the kernels)
    kernels: dict[str, KernelCurve] = Field(default_factory=dict)
    quant_kernels: dict[str, QuantCurve] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _expand_proxies(cls, data: Any) -> Any:
        """A stand-in curve is written as its ``proxy_of`` plus what differs (the file stays compact);
        the keys it leaves out are the source curve's."""
        if not isinstance(data, dict) or not isinstance(data.get("kernels"), dict):
            return data
        raw = data["kernels"]
        out = {}
        for key, c in raw.items():
            src = raw.get(c.get("proxy_of")) if isinstance(c, dict) and c.get("basis") == "proxy" else None
            if isinstance(src, dict) and "nk_knots" not in c:
                c = {**{k: v for k, v in src.items() if k in PROXY_SHARED}, **c}
            out[key] = c
        return {**data, "kernels": out}

    @model_validator(mode="after")
    def _keys(self) -> "GpuKnobs":
        pairs = [(k, c.key) for k, c in self.kernels.items()] + [(k, q.key) for k, q in self.quant_kernels.items()]
        for key, want in pairs:
            if key != want:
                raise ValueError(f"kernel curve '{key}' must be keyed '{want}' (<engine>/<kernel>)")
        return self


class PerfProfile(Strict):
    schema_version: int = PROFILE_SCHEMA_VERSION
    id: str
    description: str = ""
    source: str
    as_of: date
    ideal: bool = False
    defaults: Knobs = Knobs.model_construct()  # Knobs(): its validators check given values, not defaults
    gpus: tuple[GpuKnobs, ...] = ()

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != PROFILE_SCHEMA_VERSION:
            raise ValueError(f"this quantadvise reads profile schema_version {PROFILE_SCHEMA_VERSION}, got {v}")
        return v

    @model_validator(mode="after")
    def _unique(self) -> "PerfProfile":
        seen: set[str] = set()
        for entry in self.gpus:
            key = norm_name(entry.gpu)
            if key in seen:
                raise ValueError(f"gpu '{entry.gpu}' has two entries; merge them")
            seen.add(key)
        return self

    # -- lookup -----------------------------------------------------------------------------------
    def entry_for(self, names: tuple[str, ...]) -> GpuKnobs | None:
        """The entry naming any of ``names`` (a GPU's id, name and aliases)."""
        wanted = {norm_name(n) for n in names}
        for entry in self.gpus:
            if norm_name(entry.gpu) in wanted:
                return entry
        return None

    def layers(self, gpu_names: tuple[str, ...], scheme_names: tuple[str, ...] = ()) -> list[Knobs]:
        """This profile's settings for one GPU and scheme (its id and aliases), lowest precedence first."""
        out: list[Knobs] = [self.defaults]
        entry = self.entry_for(gpu_names)
        if entry is not None:
            out.append(entry)
            wanted = {norm_name(n) for n in scheme_names}
            out.extend(k for key, k in entry.schemes.items() if norm_name(key) in wanted)
        return out

    def to_dict(self) -> dict[str, Any]:
        """The YAML-ready form (``parse_profile(p.to_dict())`` round-trips)."""
        return self.model_dump(mode="json", exclude_defaults=False)


def _ideal() -> PerfProfile:
    return PerfProfile(
        id="ideal",
        description="spec-sheet roofline: peak bandwidth and peak FLOP/s, no dequantisation cost, no latency",
        source="the GPU rows of data/hardware.yaml",
        as_of=date(2026, 11, 29),
        ideal=True,
        defaults=Knobs(
            memory_efficiency=1.0,
            compute_efficiency={},
            allreduce=AllReduceCost(latency_s=0.0, efficiency=1.0),
            step_overhead_s=0.0,
        ),
    )


def __getattr__(name: str) -> Any:
    """``IDEAL``, the spec-sheet profile, validated on first use (building PerfProfile's validator at import cost
    every command ~5 ms; only ``--ideal`` and calibration read it)."""
    if name == "IDEAL":
        globals()["IDEAL"] = ideal = _ideal()
        return ideal
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def profile_document(doc: Any, where: str = "profile") -> dict[str, Any]:
    """A profile file's document with what it may leave out filled in (its id from the file name, its source,
    today's date); ConfigError when it is not a mapping or claims to be the spec sheet."""
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: expected a mapping with schema_version, id, source, as_of, defaults, gpus")
    doc = dict(doc)
    if doc.get("ideal"):
        raise ConfigError(f"{where}: field 'ideal' is reserved for the built-in spec-sheet profile (use --ideal)")
    doc.setdefault("id", where.rsplit("/", 1)[-1].rsplit(".", 1)[0])
    doc.setdefault("source", where)
    doc.setdefault("as_of", date.today())
    return doc


def parse_profile(doc: Any, where: str = "profile") -> PerfProfile:
    """Validate a profile document; a bad key or value is one ConfigError line naming the field."""
    doc = profile_document(doc, where)
    try:
        return PerfProfile.model_validate(plain_numbers(PerfProfile, doc))
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, where)) from None
