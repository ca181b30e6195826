"""Resolving a profile into the efficiencies one prediction uses: for a GPU and a scheme, the
layered lookup ``defaults`` < the GPU's entry < the scheme's entry, the measured linear-layer fit
where a calibrated profile has one, and which performance model that amounts to (:data:`MODELS`).
Pure: the profiles (``profiles.py``) are values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import norm_name
from .profiles import AllReduceCost, Curve, DequantCost, GpuKnobs, LinearFit, PerfProfile, Provenance, Value

MODELS = ("ideal", "default-efficiency", "calibrated-ceilings", "calibrated")
"""Which performance model a prediction used, per scheme:

- ``ideal``: the spec sheet (``--ideal``);
- ``default-efficiency``: round achieved fractions of peak (data/perf_profile.yaml, and any
  hand-written ``--profile`` keys) with the dequantisation term;
- ``calibrated-ceilings``: a calibrated profile for this GPU, but no measured curve for this scheme:
  the roofline with the measured bandwidth and GEMM ceilings;
- ``calibrated``: the scheme's linear layers follow its measured curve (:class:`LinearFit`)."""


@dataclass(frozen=True, slots=True)
class Efficiency:
    """Resolved settings for one (GPU, scheme): constants or curves over batch."""

    profile_id: str
    ideal: bool
    memory: Value
    compute: dict[str, Value]
    dequant: DequantCost | None
    allreduce: AllReduceCost
    step_overhead_s: float
    linear: LinearFit | None = None  # the scheme's measured linear layers
    linear_bf16: LinearFit | None = None  # bf16's, for the layers a scheme leaves unquantized
    calibration: Provenance | None = None  # the calibration that applies to this GPU, if any
    linear_source: str | None = None  # the scheme key the linear fit was measured as
    other_calibrations: tuple[str, ...] = ()  # GPUs the profiles hold calibrations for, not this one

    @property
    def constant(self) -> bool:
        """True when nothing varies with batch (the fast path precomputes everything)."""
        return (self.linear is None and self.linear_bf16 is None and not isinstance(self.memory, Curve)
                and not any(isinstance(v, Curve) for v in self.compute.values()))

    @property
    def model(self) -> str:
        """Which of :data:`MODELS` this is."""
        if self.ideal:
            return "ideal"
        if self.linear is not None:
            return "calibrated"
        if self.calibration is not None:
            return "calibrated-ceilings"
        return "default-efficiency"

    def memory_at(self, batch: float) -> float:
        m = self.memory
        return m.at(batch) if isinstance(m, Curve) else m

    def compute_at(self, math_format: str, batch: float) -> float:
        v = self.compute.get(math_format)
        if v is None and math_format in ("bf16", "fp16"):
            v = self.compute.get("fp16" if math_format == "bf16" else "bf16")
        if v is None:
            return 1.0 if self.ideal or not self.compute else _fallback(self.compute, batch)
        return v.at(batch) if isinstance(v, Curve) else v


def _fallback(compute: dict[str, Value], batch: float) -> float:
    """A math format the profile does not list runs at the profile's lowest listed efficiency."""
    vals = [v.at(batch) if isinstance(v, Curve) else v for v in compute.values()]
    return min(vals)


def resolve(
    profiles: list[PerfProfile] | tuple[PerfProfile, ...],
    gpu_names: tuple[str, ...],
    scheme_names: tuple[str, ...] = (),
) -> Efficiency:
    """Flatten the profiles (later ones override earlier ones; inside each: defaults < the GPU's
    entry < that entry's scheme) into the settings one step model uses. A user ``--profile`` is
    layered over the shipped default, so it only needs the keys it changes."""
    if not profiles:
        raise ValueError("resolve() needs at least one profile")
    ideal = any(p.ideal for p in profiles)
    mem: Value = 1.0
    comp: dict[str, Value] = {}
    dequant: DequantCost | None = None
    allreduce = AllReduceCost(latency_s=0.0, efficiency=1.0)
    overhead = 0.0
    linear: LinearFit | None = None
    linear_src: str | None = None
    linear_bf16: LinearFit | None = None
    calibration: Provenance | None = None
    others: list[str] = []
    for profile in profiles:
        for layer in profile.layers(gpu_names, scheme_names):
            if layer.memory_efficiency is not None:
                mem = layer.memory_efficiency
            comp.update(layer.compute_efficiency)
            if layer.dequant is not None:
                dequant = layer.dequant
            if layer.allreduce is not None:
                allreduce = layer.allreduce
            if layer.step_overhead_s is not None:
                overhead = layer.step_overhead_s
        entry = profile.entry_for(gpu_names)
        if entry is not None:
            if entry.calibration is not None:
                calibration = entry.calibration.provenance
            fit, src = _linear_for(entry, scheme_names)
            if fit is not None:
                linear, linear_src = fit, src
            bf = _linear_for(entry, ("bf16",))[0]
            if bf is not None:
                linear_bf16 = bf
        others.extend(e.gpu for e in profile.gpus if e.calibration is not None and e is not entry)
    return Efficiency(
        profile_id="+".join(p.id for p in profiles),
        ideal=ideal,
        memory=mem,
        compute=comp,
        dequant=None if ideal else dequant,
        allreduce=allreduce,
        step_overhead_s=overhead,
        linear=None if ideal else linear,
        linear_bf16=None if ideal else linear_bf16,
        calibration=None if ideal else calibration,
        linear_source=None if ideal else linear_src,
        other_calibrations=() if (ideal or calibration is not None) else tuple(dict.fromkeys(others)),
    )


def _linear_for(entry: GpuKnobs, scheme_names: tuple[str, ...]) -> tuple[LinearFit | None, str | None]:
    """The measured fit for a scheme: its own entry first, else an entry whose ``applies_to``
    names it (a scheme of the same kernel class: AWQ and GPTQ run what W4A16 runs)."""
    wanted = {norm_name(n) for n in scheme_names}
    for key, knobs in entry.schemes.items():
        if knobs.linear is not None and norm_name(key) in wanted:
            return knobs.linear, key
    for key, knobs in entry.schemes.items():
        if knobs.linear is not None and wanted & {norm_name(a) for a in knobs.linear.applies_to}:
            return knobs.linear, key
    return None, None


def profile_warnings(efficiencies: Sequence[Efficiency], gpu_id: str) -> list[str]:
    """What a prediction must say about its profile: simulated timings, or measurements of other
    GPUs than this one (the default efficiencies apply then)."""
    out: list[str] = []
    if not efficiencies:
        return out
    profile_id = efficiencies[0].profile_id
    calib = next((e.calibration for e in efficiencies if e.calibration is not None), None)
    if calib is not None and calib.simulated:
        out.append(f"profile {profile_id} holds SIMULATED timings (calibrate --backend simulated), not a "
                   "measurement of a GPU")
    others = next((e.other_calibrations for e in efficiencies if e.other_calibrations), ())
    if others:
        out.append(f"profile {profile_id} holds measurements for {', '.join(others)}, not for {gpu_id}: the default "
                   "efficiencies apply")
    return out


def describe_models(effs: dict[str, Efficiency]) -> str:
    """One line saying which performance model each scheme's prediction used (for a report's
    assumptions / notes; ``check`` and ``recommend`` use it too)."""
    if not effs:
        return "no scheme"
    by_model: dict[str, list[str]] = {}
    for sid, eff in effs.items():
        by_model.setdefault(eff.model, []).append(sid)
    first = next(iter(effs.values()))
    parts = []
    if "ideal" in by_model:
        parts.append("ideal (spec-sheet roofline) for " + ", ".join(by_model["ideal"]))
    if "calibrated" in by_model:
        prov = first.calibration
        where = f" on {prov.gpu_name}, {prov.measured_on.isoformat()}" if prov is not None else ""
        sim = " — SIMULATED timings, not a measurement" if prov is not None and prov.simulated else ""
        parts.append(f"calibrated (measured curves{where}{sim}) for " + ", ".join(by_model["calibrated"]))
    if "calibrated-ceilings" in by_model:
        parts.append("roofline with the measured ceilings (no measured curve) for "
                     + ", ".join(by_model["calibrated-ceilings"]))
    if "default-efficiency" in by_model:
        parts.append(f"default-efficiency roofline (profile {first.profile_id}) for "
                     + ", ".join(by_model["default-efficiency"]))
    return "; ".join(parts)


