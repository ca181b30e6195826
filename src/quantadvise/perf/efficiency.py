"""Resolving a profile into the efficiencies one prediction uses: for a GPU and a scheme, the
layered lookup ``defaults`` < the GPU's entry < the scheme's entry, the measured linear-layer fit
where a calibrated profile has one, and which performance model that amounts to (:data:`MODELS`).
Pure: the profiles (``profiles.py``) are values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from typing import TYPE_CHECKING

from ..engines.kernels import KernelChoice, KernelTable, resolve_kernel, resolve_moe_kernel, resolve_route
from ..errors import norm_name
from ..results import record
from ..scheme.axes import Scheme
from .kernel_curves import KernelCurve, QuantCurve, lookup
from .profiles import (
    NO_FLOORS,
    AllReduceCost,
    Curve,
    DequantCost,
    GpuKnobs,
    LinearFit,
    PerfProfile,
    Provenance,
    Value,
    merged_floors,
)

if TYPE_CHECKING:
    from .attention_tables import AttentionTable
    from .lookup import TableChoice, TableSet
    from .moe_tables import MoeChoice, MoeTable

MODELS = ("ideal", "default-efficiency", "calibrated-ceilings", "calibrated", "measured-kernels")
"""Which performance model a prediction used, per scheme:

- ``ideal``: the spec sheet (``--ideal``);
- ``default-efficiency``: round achieved fractions of peak (data/perf_profile.yaml, and any
  hand-written ``--profile`` keys) with the dequantisation term;
- ``calibrated-ceilings``: a calibrated profile for this GPU, but no measured curve for this scheme:
  the roofline with the measured bandwidth and GEMM ceilings;
- ``calibrated``: the scheme's linear layers follow its measured curve (:class:`LinearFit`);
- ``measured-kernels``: each linear layer is priced by the cost curve of the kernel the engine runs
  for it (:class:`KernelPricing`; data/kernels/*.yaml, data/profiles/<gpu>.yaml)."""


@record(slots=True)
class KernelContext:
    """What decides the kernel of a scheme's linear layers: the engine release's kernel table, the
    GPU's compute capability, the scheme, and the ``--quantization`` method the engine is started with."""

    table: KernelTable
    capability: int | None
    scheme: Scheme
    quantization: str | None = None
    engine_version: str | None = None  # the release deployed, when its kernel table is another release's


@record(slots=True)
class KernelPricing:
    """The kernels one scheme's linear layers run (per layer shape: :meth:`choose`) and the measured
    curves on this GPU (``curves`` / ``quants`` keyed ``<engine>/<kernel>``)."""

    context: KernelContext
    choice: KernelChoice | None  # the quantized layers' kernel (shape-independent resolution)
    choice_bf16: KernelChoice | None  # the 16-bit layers' kernel
    curves: dict[str, KernelCurve]
    quants: dict[str, QuantCurve]
    profile_id: str
    tables: TableSet | None = None  # the GPU's published tables, read by lookup before any curve
    overrides: frozenset[str] = frozenset()  # curves of a user profile: they win over the tables, kernel by kernel
    _memo: dict[str, TableChoice | None] = field(default_factory=dict, compare=False, repr=False)
    _moe_memo: dict[str, MoeChoice | None] = field(default_factory=dict, compare=False, repr=False)
    _curve_memo: dict[str, KernelCurve | None] = field(default_factory=dict, compare=False, repr=False)
    # a quantized layer shape's kernel, resolved once: the kernel curves and the roofline's launch floors both ask
    _choose_memo: dict[tuple[int, int], KernelChoice | None] = field(default_factory=dict, compare=False, repr=False)

    @property
    def moved_from(self) -> str | None:
        """The GPU whose tables, moved here, price the layers (:class:`~.siblings.SiblingTables`); None: this GPU's own."""
        return getattr(self.tables, "sibling", None)

    @property
    def where(self) -> str:
        """Whose measurements price the layers, in words: ``"profile h100-sxm-measured"``, or for a GPU priced with
        another GPU's tables ``"the tables of h100-sxm, moved to this GPU"``."""
        if self.moved_from is not None:
            return f"the tables of {self.moved_from}, moved to this GPU" + (
                f"; profile {self.profile_id}" if self.profile_id else "")
        return f"profile {self.profile_id}" if self.profile_id else "the published tables"

    def choose(self, quantized: bool, n: int, k: int) -> KernelChoice | None:
        c = self.context
        if not quantized or not c.scheme.quantizes_weights:
            return self.choice_bf16
        if (n, k) not in self._choose_memo:
            self._choose_memo[(n, k)] = resolve_kernel(c.table, c.scheme, c.capability, shape=(n, k),
                                                       quantization=c.quantization)
        return self._choose_memo[(n, k)]

    def choose_moe(self, quantized: bool, architecture: str | None = None) -> KernelChoice | None:
        """The fused-MoE backend the engine runs for routed experts — never a dense Linear kernel's
        curve. When the release's table has no row for the experts' route, the measured fused-MoE
        curve of the same kind stands in (:func:`moe_stand_in`), so an expert format nobody measured
        is not priced on the spec-sheet roofline ahead of the measured ones; None only when no
        fused-MoE curve is on file for this GPU at all (the roofline then prices every scheme's experts
        alike). ``architecture``: the model's (some engines pick the backend of a model family by name)."""
        c = self.context
        if not quantized or not c.scheme.quantizes_weights:
            got = resolve_route(c.table, "bf16", c.capability, moe=True, architecture=architecture)
        else:
            got = resolve_moe_kernel(c.table, c.scheme, c.capability, architecture=architecture)
        if got is not None:
            return got
        # how the engine runs this scheme on this GPU: a W+A format without its tensor cores here runs
        # weight-only (NVFP4 below SM100, FP8 below SM89: the dense kernel says so)
        dense = self.layer_choice if quantized else self.choice_bf16
        return moe_stand_in(c, self.curves, quantized,
                            weight_only=dense is not None and dense.kernel.execution == "weight-only")

    def table(self, choice: KernelChoice | None) -> TableChoice | None:
        """The published table that prices ``choice``'s kernel on this GPU (its own, a same-math one or a
        composition, :func:`~quantadvise.perf.lookup.choose_table`), unless a user profile's curve of that
        kernel overrides it; None: no table (the curve or the roofline)."""
        if choice is None or self.tables is None or choice.moe:
            return None
        w = self.context.scheme.weight
        bits = w.bits if w is not None and self.context.scheme.quantizes_weights else None
        key = f"{choice.engine}/{choice.kernel.id}/{bits}"
        if key not in self._memo:
            from .lookup import choose_table

            base = "cublas-bf16" if choice.kernel.id == "awq-dequant-cublas" else choice.kernel.id
            self._memo[key] = (None if f"{choice.engine}/{base}" in self.overrides else
                               choose_table(self.tables, choice.engine, choice.kernel.id, bits))
        return self._memo[key]

    def moe_table(self, choice: KernelChoice | None) -> MoeChoice | None:
        """The published fused-MoE table that prices routed experts run by ``choice`` on this GPU (the kernel's
        own; for a kernel priced by a stand-in's curve or a labelled stand-in, that stand-in's table: ``proxy``),
        unless a user profile's curve of the kernel overrides it; None: the curve or the roofline."""
        if choice is None or self.tables is None or not choice.moe:
            return None
        key = f"{choice.engine}/{choice.kernel.id}/{choice.kernel.name}"
        if key not in self._moe_memo:
            from .lookup import choose_moe_table

            kid = choice.kernel.id
            curve = self.curve(choice)
            stand_in = is_stand_in(choice)
            got = None
            if f"{choice.engine}/{kid}" not in self.overrides:
                own = choose_moe_table(self.tables, choice.engine, kid, f"{kid} (stand-in)" if stand_in else None)
                if own is not None and not stand_in and (curve is None or curve.basis == "proxy"):
                    # no measured curve of the kernel: a configuration its tables lack reads the stand-in's
                    # (proxy) tables, then the stand-in's curve (:meth:`curve`), as a kernel not on file would
                    got = replace(own, stand_ins=self._moe_stand_in_tables(choice))
                elif own is None and curve is not None and curve.basis == "proxy" and curve.proxy_of:
                    got = choose_moe_table(self.tables, choice.engine, curve.proxy_of.split("/", 1)[1], kid)
                else:
                    got = own
            self._moe_memo[key] = got
        return self._moe_memo[key]

    def _moe_stand_in_tables(self, choice: KernelChoice) -> tuple[MoeTable, ...]:
        """The measured fused-MoE tables of the kernel that stands in for ``choice``'s kind of experts
        (:data:`MOE_STAND_INS`: the first kind with a table on this GPU)."""
        from .lookup import choose_moe_table

        assert self.tables is not None
        for kid in MOE_STAND_INS[_moe_kind(choice)]:
            got = choose_moe_table(self.tables, choice.engine, kid)
            if got is not None:
                return got.tables
        return ()

    def curve(self, choice: KernelChoice | None) -> KernelCurve | None:
        """The measured curve of ``choice``'s kernel on this GPU; a fused-MoE kernel on file without one (FlashInfer's
        TRT-LLM kernels: tables only) takes the measured curve of the kernel that stands in for its kind of
        experts, labelled ``proxy`` (as a kernel not on file does, :func:`moe_stand_in`); None: the roofline."""
        if choice is None:
            return None
        base = "cublas-bf16" if choice.kernel.id == "awq-dequant-cublas" else choice.kernel.id
        got = lookup(self.curves, choice.engine, base)
        if got is None and choice.moe and not is_stand_in(choice):
            key = f"{choice.engine}/{choice.kernel.id}"
            if key not in self._curve_memo:
                cv = next((c for k in MOE_STAND_INS[_moe_kind(choice)]
                           if (c := lookup(self.curves, choice.engine, k)) is not None), None)
                self._curve_memo[key] = None if cv is None else cv.model_copy(update={
                    "kernel": choice.kernel.id, "engine": choice.engine, "basis": "proxy", "proxy_of": cv.key,
                    "measured": None, "heldout": None,
                    "note": f"no curve of {choice.kernel.id}: the measured {cv.key} curve stands in"})
            got = self._curve_memo[key]
        return got

    def quant(self, engine: str, kid: str) -> QuantCurve | None:
        return lookup(self.quants, engine, kid)

    @property
    def layer_choice(self) -> KernelChoice | None:
        """The kernel of the scheme's own layers: the quantized ones', or the 16-bit kernel for bf16."""
        return self.choice if self.context.scheme.quantizes_weights else self.choice_bf16

    @property
    def measured(self) -> bool:
        """True when the quantized layers' kernel has a table or a curve on this GPU."""
        ch = self.layer_choice
        return self.table(ch) is not None or self.curve(ch) is not None

    @property
    def basis(self) -> str:
        """What prices the scheme's own layers: ``measured`` (its kernel's own published table, or a curve
        fitted to it), ``same-math`` (another library's table of the same math on this GPU), ``composed``
        (put together from the table or curve of another kernel), ``proxy`` (a similar kernel's curve stands
        in), or ``roofline`` (nothing on file)."""
        ch = self.layer_choice
        tc = self.table(ch)
        if tc is not None:
            return tc.basis
        c = self.curve(ch)
        if ch is None or c is None:
            return "roofline"
        return "composed" if ch.kernel.id == "awq-dequant-cublas" else str(c.basis)

    @property
    def source_key(self) -> str | None:
        """The table or curve that prices the scheme's own layers (``sglang/deepgemm-fp8-block``)."""
        ch = self.layer_choice
        tc = self.table(ch)
        if tc is not None:
            return tc.key
        c = self.curve(ch)
        return c.key if c is not None else None

    def label(self) -> str:
        """``"w4a16 via Machete, vLLM 0.33.0, sm90"`` and where its curve comes from."""
        sid = self.context.scheme.id
        ch = self.layer_choice
        if ch is None:
            return f"{sid}: no kernel on file for {self.context.table.label}"
        c = self.curve(ch)
        tc = self.table(ch)
        how = ("no measured curve (roofline)" if c is None else
               f"measured curve {c.key}" if c.basis == "measured" else f"{c.basis} curve ({c.proxy_of or c.key})")
        if ch.kernel.id == "awq-dequant-cublas" and c is not None:
            how = f"composed: dequantize + {c.key}"
        if tc is not None:
            how = tc.words()
        # the kernel's label names the table's release; a release priced with another's table says so once per
        # command (api.speed.kernel_note), not on every kernel line
        return f"{sid} via {ch.label}; {how}"


# the measured fused-MoE curves that stand in (first on file) for experts whose backend is not on file:
# weight-only formats by the fused-MoE Marlin kernel (the mixed-input MoE GEMM), W+A formats by the fused-MoE
# Triton kernel with fp8 weights and activations (else the same Triton kernel in bf16, on a GPU without fp8
# tensor cores, run on the format's own datapath), 16-bit experts by the bf16 fused-MoE Triton kernel
MOE_STAND_INS = {"weight-only": ("marlin-moe",), "w+a": ("triton-fp8-block-moe", "triton-moe"),
                 "bf16": ("triton-moe",)}


STAND_IN_NAME = "MoE kernel not on file"  # the name of a stand-in fused-MoE kernel (:func:`moe_stand_in`)


def is_stand_in(choice: KernelChoice) -> bool:
    """Whether ``choice`` is a stand-in fused-MoE kernel (the release's table has no row for the experts' route)."""
    return choice.kernel.name.startswith(STAND_IN_NAME)


def _moe_kind(choice: KernelChoice) -> str:
    """The :data:`MOE_STAND_INS` kind of a fused-MoE kernel: weight-only, bf16 or W+A."""
    k = choice.kernel
    return "weight-only" if k.execution == "weight-only" else "bf16" if k.math == "bf16" else "w+a"


def moe_stand_in(c: KernelContext, curves: dict[str, KernelCurve], quantized: bool, *,
                 weight_only: bool = False) -> KernelChoice | None:
    """A labelled stand-in for routed experts whose fused-MoE backend the kernel table does not
    name: the measured fused-MoE curve of the same kind (:data:`MOE_STAND_INS`), priced with the
    experts' own bytes per weight and, for a W+A format, on its own tensor-core datapath (the
    stand-in's ``math``; int8 experts on int8 tensor cores). ``weight_only``: the engine runs this
    W+A format weight-only on this GPU. None when that curve is not on file for this GPU."""
    from ..engines.kernels import KernelInfo, route

    s = c.scheme
    kind = ("bf16" if not quantized or not s.quantizes_weights else
            "weight-only" if weight_only or s.weight_only or s.activation is None else "w+a")
    found = next(((k, cv) for k in MOE_STAND_INS[kind] if (cv := lookup(curves, c.table.engine, k)) is not None),
                 None)
    if found is None:
        return None
    kid, curve = found
    why = (f"no fused-MoE row for these experts in the {c.table.label} kernel table: the measured {kid} curve "
           f"stands in, with the experts' own bytes per weight")
    info = KernelInfo(id=kid, name=f"{STAND_IN_NAME} ({kid} curve stands in)",
                      math=s.math_format if kind == "w+a" else curve.math,
                      execution="weight-only" if kind == "weight-only" else "native",
                      activation_quant="none" if kind != "w+a" else "fused", source=why)
    return KernelChoice(kernel=info, route=route(s) or "bf16", engine=c.table.engine, engine_version=c.table.version,
                        capability=c.capability, source=why, moe=True)


@record(slots=True)
class Efficiency:
    """Resolved settings for one (GPU, scheme): constants or curves over batch."""

    profile_id: str
    ideal: bool
    memory: Value
    compute: dict[str, Value]
    dequant: DequantCost | None
    allreduce: AllReduceCost
    step_overhead_s: float
    # launch floors of a roofline-priced call (perf.profiles.FLOOR_KEYS: 16-bit GEMM, quantized GEMM, decode-attention
    # layer, fused-MoE layer, separate activation quantization)
    call_floor_s: tuple[float, ...] = NO_FLOORS
    linear: LinearFit | None = None  # the scheme's measured linear layers
    linear_bf16: LinearFit | None = None  # bf16's, for the layers a scheme leaves unquantized
    calibration: Provenance | None = None  # the calibration that applies to this GPU, if any
    linear_source: str | None = None  # the scheme key the linear fit was measured as
    other_calibrations: tuple[str, ...] = ()  # GPUs the profiles hold calibrations for, not this one
    kernels: KernelPricing | None = None  # per-kernel curves (None: the format-level roofline prices the layers)
    attention: AttentionTable | None = None  # the engine's published decode attention table on this GPU
    bands: dict[str, float] | None = None  # basis -> relative half-width of its held-out error (perf.uncertainty)
    notes: tuple[str, ...] = ()  # what the resolution had to say (e.g. a calibrated fit of another kernel unused)

    def mla_attention(self) -> AttentionTable | None:
        """The engine's published MLA decode attention table on this GPU (read when an MLA model asks), or None."""
        k = self.kernels
        if self.attention is None or k is None or k.tables is None:
            return None
        return k.tables.attention(k.context.table.engine, "mla-decode")

    @property
    def constant(self) -> bool:
        """True when nothing varies with batch (the fast path precomputes everything)."""
        return (self.linear is None and self.linear_bf16 is None and self.kernels is None and self.attention is None
                and not isinstance(self.memory, Curve) and not any(isinstance(v, Curve) for v in self.compute.values()))

    @property
    def model(self) -> str:
        """Which of :data:`MODELS` this is."""
        if self.ideal:
            return "ideal"
        if self.linear is not None:
            return "calibrated"
        if self.kernels is not None and self.kernels.measured:
            return "measured-kernels"
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


# a free collective (no latency, the link's full bandwidth): where no profile sets one. Our own values, in range
# (latency_s >= 0, efficiency in [0.01, 1]): made without building AllReduceCost's validator at every start
IDEAL_ALLREDUCE = AllReduceCost.model_construct(latency_s=0.0, efficiency=1.0)


def resolve(
    profiles: list[PerfProfile] | tuple[PerfProfile, ...],
    gpu_names: tuple[str, ...],
    scheme_names: tuple[str, ...] = (),
    *,
    kernels: KernelContext | None = None,
    tables: TableSet | None = None,
    borrowed_quants: Mapping[str, QuantCurve] | None = None,
) -> Efficiency:
    """Flatten the profiles (later ones override earlier ones; inside each: defaults < the GPU's
    entry < that entry's scheme) into the settings one step model uses. A user ``--profile`` is
    layered over the shipped default, so it only needs the keys it changes.

    With ``kernels`` (the engine release, GPU and scheme) the linear layers are priced kernel by
    kernel: the kernel the engine runs for each layer (:mod:`quantadvise.engines.kernels`) with that
    kernel's curve from the profiles' GPU entries (later profiles win per kernel). A calibrated
    linear fit is used only for the kernel it timed (``LinearFit.kernel_id``). ``borrowed_quants``: the
    activation-quantization curves of the GPU whose tables ``tables`` moves here (a curve prices bytes at the
    bandwidth it is given), where the profiles hold none of this GPU's own."""
    if not profiles:
        raise ValueError("resolve() needs at least one profile")
    ideal = any(p.ideal for p in profiles)
    mem: Value = 1.0
    comp: dict[str, Value] = {}
    dequant: DequantCost | None = None
    allreduce = IDEAL_ALLREDUCE
    overhead = 0.0
    floor: tuple[float, ...] = NO_FLOORS
    linear: LinearFit | None = None
    linear_src: str | None = None
    linear_bf16: LinearFit | None = None
    calibration: Provenance | None = None
    others: list[str] = []
    curves: dict[str, KernelCurve] = {}
    quants: dict[str, QuantCurve] = {}
    curve_profile = ""
    overrides: set[str] = set()
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
            floor = merged_floors(floor, layer.call_floor_s)
        entry = profile.entry_for(gpu_names)
        if entry is not None:
            if entry.kernels:
                if curve_profile:  # a profile layered over the shipped curves: its curves win over the tables
                    overrides.update(entry.kernels)
                curves.update(entry.kernels)
                curve_profile = profile.id
            quants.update(entry.quant_kernels)
            if entry.calibration is not None:
                calibration = entry.calibration.provenance
            fit, src = _linear_for(entry, scheme_names)
            if fit is not None:
                linear, linear_src = fit, src
            bf = _linear_for(entry, ("bf16",))[0]
            if bf is not None:
                linear_bf16 = bf
        others.extend(e.gpu for e in profile.gpus if e.calibration is not None and e is not entry)
    pricing = None
    notes: list[str] = []
    quants = {**(borrowed_quants or {}), **quants}
    if kernels is not None and not ideal:
        pricing = _pricing(kernels, curves, quants, curve_profile, tables, frozenset(overrides))
        for name, fit in (("linear", linear), ("bf16", linear_bf16)):
            want = pricing.choice if name == "linear" else pricing.choice_bf16
            if fit is not None and fit.kernel_id is not None and (want is None or want.kernel.id != fit.kernel_id):
                notes.append(f"the calibrated curve of {fit.kernel_id} is not used: "
                             f"{pricing.context.table.label} runs {want.kernel.id if want else 'another kernel'} here")
                if name == "linear":
                    linear, linear_src = None, None
                else:
                    linear_bf16 = None
    return Efficiency(
        profile_id="+".join(p.id for p in profiles),
        ideal=ideal,
        memory=mem,
        compute=comp,
        dequant=None if ideal else dequant,
        allreduce=allreduce,
        step_overhead_s=overhead,
        call_floor_s=NO_FLOORS if ideal else tuple(floor),
        linear=None if ideal else linear,
        linear_bf16=None if ideal else linear_bf16,
        calibration=None if ideal else calibration,
        linear_source=None if ideal else linear_src,
        other_calibrations=() if (ideal or calibration is not None) else tuple(dict.fromkeys(others)),
        kernels=pricing,
        attention=(tables.attention(kernels.table.engine) if tables is not None and kernels is not None and not ideal
                   else None),
        notes=tuple(notes),
    )


def _pricing(ctx: KernelContext, curves: dict[str, KernelCurve], quants: dict[str, QuantCurve],
             profile_id: str, tables: TableSet | None = None, overrides: frozenset[str] = frozenset()) -> KernelPricing:
    choice = resolve_kernel(ctx.table, ctx.scheme, ctx.capability, quantization=ctx.quantization)
    bf16 = resolve_route(ctx.table, "bf16", ctx.capability)
    return KernelPricing(context=ctx, choice=choice, choice_bf16=bf16, curves=curves, quants=quants,
                         profile_id=profile_id, tables=tables, overrides=overrides)


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
    if "measured-kernels" in by_model:
        kp = next(e.kernels for e in effs.values() if e.model == "measured-kernels" and e.kernels is not None)
        parts.append(f"measured kernel curves ({kp.where}: the kernel {kp.context.table.label} runs for "
                     "each layer) for " + ", ".join(by_model["measured-kernels"]))
    if "calibrated-ceilings" in by_model:
        parts.append("roofline with the measured ceilings (no measured curve) for "
                     + ", ".join(by_model["calibrated-ceilings"]))
    if "default-efficiency" in by_model:
        parts.append(f"default-efficiency roofline (profile {first.profile_id}) for "
                     + ", ".join(by_model["default-efficiency"]))
    return "; ".join(parts)


