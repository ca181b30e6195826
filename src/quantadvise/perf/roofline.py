"""The roofline report: one :class:`~.step.StepModel` per scheme, swept over batches x contexts,
with each scheme's ridge batch, the pairwise crossovers, optional dense curves for plots, and the
notes and warnings a reader needs (docs/roofline.md).

Pure: no I/O, no printing.
"""

import math
from itertools import combinations

from .. import defaults
from ..errors import InputError
from ..hardware import GPU
from ..memory.kvcache import bytes_per_token_short
from ..memory.sizing import size_model
from ..model.arch import ModelArch, ModelSource
from ..results import Out, Result
from ..scheme.axes import Scheme, TensorQuant
from ..wording import plural
from .datapath import datapath
from .efficiency import Efficiency, describe_models, profile_warnings
from .inputs import parse_batches, parse_contexts
from .loop import EngineLoop
from .profiles import FLOOR_KEYS, AllReduceCost, Curve, DequantCost, Provenance
from .serving import ParetoOut, Price, Slo, SpecInfo, Speculation, pareto_sweep, usd_per_mtok
from .solve import Fn, crossings
from .step import StepModel, check_tensor_parallel
from .uncertainty import FigureBand, figure_band, relative

# -------------------------------------------------------------------------------------------------
# The result
# -------------------------------------------------------------------------------------------------


class ModelInfo(ModelSource):
    """The model the report is about: where it came from and what it is."""

    kind: str
    architecture: str


class GpuInfo(Out):
    id: str
    name: str
    bandwidth_bytes_per_s: float
    aggregate_bandwidth_bytes_per_s: float  # x the tensor-parallel size
    memory_bytes: int
    interconnect: str | None  # its kind
    interconnect_bytes_per_s: float | None  # per direction


class ProfileInfo(Out):
    """The efficiency profile the first scheme used (curves appear as ``{batch, value}``)."""

    id: str
    ideal: bool
    memory_efficiency: float | Curve
    compute_efficiency: dict[str, float | Curve]  # math format -> efficiency
    dequant: DequantCost | None
    allreduce: AllReduceCost
    step_overhead_s: float
    # the launch floors a roofline-priced call pays (perf.profiles.CallFloor): bf16, quantized, attention, moe
    call_floor_s: dict[str, float]
    models: dict[str, str]  # scheme -> the performance model that priced it (efficiency.MODELS)
    calibration: Provenance | None  # the measurement behind a calibrated profile, on this GPU


class ByteSplit(Out):
    weights: float
    kv: float
    activations: float


class TimeSplit(Out):
    linear_s: float
    attention_s: float
    activations_s: float
    dequant_s: float
    communication_s: float
    overhead_s: float


class Point(Out):
    scheme: str
    kernel: str | None  # the kernel that runs the scheme's quantized layers (None: not resolved)
    batch: int
    ctx: int
    step_time_s: float
    tokens_per_s: float
    bound: str
    bytes: ByteSplit
    byte_shares: ByteSplit
    flops: float
    intensity_flop_per_byte: float
    time: TimeSplit
    memory_per_gpu_bytes: int
    fits: bool
    ttft_s: float | None = None  # prefill of ``batch`` prompts arriving together (recommend's TTFT in sync serving)
    usd_per_mtok: float | None = None  # $ per million tokens at ``tokens_per_s`` (None: no price known)
    uncertainty: FigureBand | None = None  # low/high at the model's validated uncertainty (None: the spec sheet)


def point_band(sm: StepModel, b: int, ctx: int, step: float, cost: float | None, ttft: float | None,
               prompt: int | None) -> FigureBand | None:
    """The band of one roofline point: the decode step's parts weighted by the held-out band of what priced
    each (the prefill's for TTFT); None without bands (the spec sheet)."""
    bands = sm.eff.bands
    if bands is None:
        return None
    u = relative(sm.parts(b, ctx), bands)
    up = relative(sm.parts(b, prompt=prompt), bands) if prompt is not None and ttft is not None else None
    return figure_band(u_step=u, u_rate=u, u_ttft=up, step=step, tokens_per_s=b / step, ttft=ttft, cost=cost)


class SchemeSummary(Out):
    scheme: str
    description: str
    math: str
    execution: str
    dequant: bool
    bytes_per_weight: float
    weights_bytes_per_gpu: int
    peak_flops_per_s: float
    ridge_flop_per_byte: float
    memory_efficiency: float
    compute_efficiency: float
    model: str = "default-efficiency"  # efficiency.MODELS
    kernel: str | None = None  # the kernel id the engine runs for the quantized layers (data/kernels)
    kernel_label: str | None = None  # "w4a16 via Machete, vLLM 0.33.0, sm90; measured curve ..."
    kernel_source: str | None = None  # the engine source line the kernel choice follows
    curve: str | None = None  # "<engine>/<kernel>" of the curve that priced it, None: the roofline
    curve_basis: str | None = None  # measured | same-math | composed | proxy (None: the roofline)
    ridge_batch_speculative: float | None = None  # sequences where a K+1-token verification step turns compute-bound


class Crossover(Out):
    a: str
    b: str
    ctx: int
    batch: float
    faster_below: str
    faster_above: str


class CurveOut(Out):
    scheme: str
    ctx: int
    batch: list[float]
    step_time_s: list[float]
    tokens_per_s: list[float]


class RooflineResult(Result):
    """``quantadvise roofline``: per GPU of the tensor-parallel group; docs/roofline.md §9 lists the fields."""

    model: ModelInfo
    gpu: GpuInfo
    gpus: int
    scope: str
    kv_dtype: str
    kv_bytes_per_token: float
    profile: ProfileInfo
    prompt: int | None
    schemes: list[SchemeSummary]
    ridge_batch: dict[str, float | None]
    points: list[Point]
    crossovers: list[Crossover]
    crossover_search_max_batch: float
    curves: list[CurveOut] = []
    price: Price | None = None  # the $/GPU-hour behind usd_per_mtok
    speculation: SpecInfo | None = None
    pareto: ParetoOut | None = None  # --pareto: serving points, frontiers, the recommended point
    notes: list[str] = []
    warnings: list[str] = []


def roofline(
    arch: ModelArch,
    schemes: list[Scheme],
    gpu: GPU,
    efficiencies: list[Efficiency],
    *,
    model_info: ModelSource | None = None,
    kv: TensorQuant | None = None,
    kv_name: str = "bf16",
    batches: str | int | list[int] | tuple[int, ...] = defaults.ROOFLINE_BATCHES,
    contexts: str | int | list[int] | tuple[int, ...] = defaults.ROOFLINE_CONTEXTS,
    prompt: int | None = None,
    gpus: int = 1,
    nvlink_domain: int = 8,
    scope: str = "full",
    curve_points: int = 0,
    notes: list[str] | None = None,
    memory_utilization: float = defaults.MEMORY_UTILIZATION,
    reserve_bytes: int = defaults.RESERVE_BYTES,
    price: Price | None = None,
    spec: Speculation | None = None,
    pareto: tuple[int, Slo | None] | None = None,
    loop: EngineLoop | None = None,
) -> RooflineResult:
    """The whole report: one :class:`StepModel` per scheme, swept over batches x contexts, with
    ridge batches and pairwise crossovers. ``efficiencies[i]`` belongs to ``schemes[i]``;
    ``batches`` and ``contexts`` as :func:`.inputs.parse_batches` / :func:`.inputs.parse_contexts`
    read them; ``model_info`` = where the model came from (:class:`ModelInfo`'s keys). ``price`` adds
    $/Mtok per point; ``nvlink_domain``: the GPUs one NVLink domain joins (a warning past it); ``spec`` each
    scheme's ridge with a K+1-token verification step; ``pareto`` = (output tokens, latency budgets): the serving
    points of :func:`.serving.pareto_sweep`."""
    if not schemes:
        raise InputError("give at least one scheme", field="scheme")
    ids = [s.id for s in schemes]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise InputError(f"scheme '{dup[0]}' is listed twice (aliases name the same preset)", field="scheme")
    if prompt is not None and prompt < 1:
        raise InputError(f"--prompt must be >= 1 token, got {prompt}", field="prompt")
    if kv is not None and kv.is_quantized and kv.math == "fp4" and not gpu.has_math("fp4"):
        raise InputError(f"KV cache dtype '{kv_name}' needs fp4 hardware (Blackwell / CDNA4); {gpu.name} has none",
                         field="kv_dtype")
    batch_list = parse_batches(batches)
    context_list = parse_contexts(contexts)
    check_tensor_parallel(arch, gpu, gpus)

    warnings: list[str] = list(arch.warnings)
    models: list[StepModel] = []
    summaries: list[SchemeSummary] = []
    ridge: dict[str, float | None] = {}
    budget = gpu.memory_bytes * memory_utilization - reserve_bytes
    resident: dict[str, float] = {}
    for scheme, eff in zip(schemes, efficiencies, strict=True):
        path = datapath(scheme, gpu)
        if path.note:
            warnings.append(path.note)
        sm = StepModel(arch, scheme, gpu, kv=kv, gpus=gpus, efficiency=eff, scope=scope, path=path)
        models.append(sm)
        rb = sm.ridge_batch()
        ridge[scheme.id] = rb
        at = rb or 1.0
        resident[scheme.id] = size_model(arch, scheme).total_bytes / gpus
        fit = eff.linear
        peak = sm.peak_flops_per_s(path.math)
        kp = eff.kernels
        choice = kp.layer_choice if kp is not None else None
        kcurve = kp.curve(choice) if kp is not None else None
        kern_eff = sm.kernel_efficiencies(at) if sm.kernel_priced and fit is None else None
        summaries.append(SchemeSummary(
            scheme=scheme.id,
            description=scheme.description,
            math=path.math,
            execution=path.execution,
            dequant=path.dequant and eff.dequant is not None and fit is None and not sm.kernel_priced,
            bytes_per_weight=sm.bytes_per_weight(),
            weights_bytes_per_gpu=math.ceil(resident[scheme.id]),
            peak_flops_per_s=peak,
            ridge_flop_per_byte=(fit.compute_efficiency * peak) / (fit.memory_efficiency * gpu.bandwidth_bytes_per_s)
            if fit is not None else (kern_eff[1] * peak) / (kern_eff[0] * gpu.bandwidth_bytes_per_s)
            if kern_eff is not None else sm.ridge_flop_per_byte(at),
            memory_efficiency=fit.memory_efficiency if fit is not None else kern_eff[0] if kern_eff is not None
            else eff.memory_at(at),
            compute_efficiency=fit.compute_efficiency if fit is not None else kern_eff[1] if kern_eff is not None
            else eff.compute_at(path.math, at),
            model=eff.model,
            kernel=choice.kernel.id if choice is not None else None,
            kernel_label=(kp.label() + (f"; {moe}" if (moe := sm.experts_label()) else "")) if kp is not None else None,
            kernel_source=choice.source if choice is not None else None,
            curve=(kp.source_key if kp is not None and (kcurve is not None or kp.table(choice) is not None)
                   and fit is None else None),
            curve_basis=kp.basis if kp is not None and kp.basis != "roofline" and fit is None else None,
            ridge_batch_speculative=rb / spec.queries if rb is not None and spec is not None else None,
        ))
        warnings.extend(n for n in eff.notes if n not in warnings)

    points: list[Point] = []
    kernel_ids = {s.scheme: s.kernel for s in summaries}
    unfit = 0
    for ctx in context_list:
        ttfts = {}
        for b in batch_list:
            for scheme, sm in zip(schemes, models, strict=True):
                c = sm.decode(b, ctx)
                if prompt is not None:
                    key = (scheme.id, b)
                    ttfts[key] = sm.prefill(b, prompt).time_s
                mem_gpu = resident[scheme.id] + b * sm.cached_tokens(ctx) * sm.kv_per_cached_token
                fits = mem_gpu <= budget
                unfit += not fits
                total_b = c.bytes or 1.0
                points.append(Point(
                    scheme=scheme.id,
                    kernel=kernel_ids[scheme.id],
                    batch=b,
                    ctx=ctx,
                    step_time_s=c.time_s,
                    tokens_per_s=b / c.time_s,
                    bound=c.bound,
                    bytes=ByteSplit(weights=c.weights_bytes, kv=c.kv_bytes, activations=c.activation_bytes),
                    byte_shares=ByteSplit(weights=c.weights_bytes / total_b, kv=c.kv_bytes / total_b,
                                          activations=c.activation_bytes / total_b),
                    flops=c.flops,
                    intensity_flop_per_byte=c.flops / total_b,
                    time=TimeSplit(linear_s=c.linear_s, attention_s=c.attention_s, activations_s=c.activations_s,
                                   dequant_s=c.dequant_s, communication_s=c.communication_s,
                                   overhead_s=c.overhead_s),
                    memory_per_gpu_bytes=math.ceil(mem_gpu),
                    fits=fits,
                    ttft_s=ttfts.get((scheme.id, b)),
                    usd_per_mtok=(cost := usd_per_mtok(price.usd_per_gpu_hour if price else None, gpus, b / c.time_s)),
                    uncertainty=point_band(sm, b, ctx, c.time_s, cost, ttfts.get((scheme.id, b)), prompt),
                ))

    hi = float(max(max(batch_list), 1024))
    cross: list[Crossover] = []
    for ctx in context_list:
        for (sa, ma), (sb, mb) in combinations(list(zip(schemes, models, strict=True)), 2):
            cached = ma.cached_tokens(ctx)
            for x in crossings(_gap(ma, mb, cached), 1.0, hi):
                below = ma.decode_time(x * 0.99, cached) < mb.decode_time(x * 0.99, cached)
                cross.append(Crossover(a=sa.id, b=sb.id, ctx=ctx, batch=x,
                                       faster_below=sa.id if below else sb.id,
                                       faster_above=sb.id if below else sa.id))

    curves: list[CurveOut] = []
    lo_b, hi_b = float(min(batch_list)), float(max(batch_list))
    if curve_points > 1 and hi_b > lo_b:
        xs = [lo_b * (hi_b / lo_b) ** (i / (curve_points - 1)) for i in range(curve_points)]
        for ctx in context_list:
            for scheme, sm in zip(schemes, models, strict=True):
                ct = sm.cached_tokens(ctx)
                ts = [sm.decode_time(x, ct) for x in xs]
                curves.append(CurveOut(scheme=scheme.id, ctx=ctx, batch=xs, step_time_s=ts,
                                       tokens_per_s=[x / t for x, t in zip(xs, ts, strict=True)]))

    sweep = None
    if pareto is not None:
        output, slo = pareto

        def fits_at(sid: str, b: int, ctx: int) -> bool:
            sm = models[ids.index(sid)]
            return resident[sid] + b * sm.cached_tokens(ctx) * sm.kv_per_cached_token <= budget

        sweep = pareto_sweep(list(zip(ids, models, strict=True)), context_list, batch_list, prompt=prompt or 0,
                             output=output, gpus=gpus, fits=fits_at, price=price.usd_per_gpu_hour if price else None,
                             slo=slo, spec=spec, loop=loop)

    calibrated = [s.id for s, e in zip(schemes, efficiencies, strict=True) if e.linear is not None]
    kerneled = [s.scheme for s in summaries if s.curve is not None]
    notes = [
        ("a model fitted to measurements: the linear layers of " + ", ".join(calibrated) + " follow their measured "
         "curves (docs/calibration.md); every other operator is a roofline with the measured ceilings")
        if calibrated else
        ("linear layers priced by the published table (else the measured curve) of the kernel the engine runs for "
         f"them ({efficiencies[0].kernels.where if efficiencies[0].kernels else 'profile'}, "
         "docs/calibration.md); decode attention by the engine's published attention table where it holds the "
         "model's heads; embedding rows and activations: a roofline with the measured streaming efficiency")
        if kerneled else
        "a roofline model, not a measurement: per-operator max(bytes/bandwidth, FLOPs/peak), summed"
        + (f", plus launch floors (a GEMM call {fl[0] * 1e6:.2f} µs 16-bit, {fl[1] * 1e6:.2f} µs quantized; a fused-MoE "
           f"layer {fl[3] * 1e6:.1f} µs; an attention layer at least {fl[2] * 1e6:.1f} µs; a separate activation "
           f"quantization {fl[4] * 1e6:.2f} µs: the published tables' "
           "medians)" if any(fl := efficiencies[0].call_floor_s) else ""),
        *(notes or []),
        *(f"kernel: {s.kernel_label}" for s in summaries if s.kernel_label),
    ]
    eff0 = efficiencies[0]
    if eff0.ideal:
        notes.append("ideal: spec-sheet peaks, no dequantisation cost, no communication latency")
    by_id = {s.id: e for s, e in zip(schemes, efficiencies, strict=True)}
    calib = next((e.calibration for e in efficiencies if e.calibration is not None), None)
    if calib is not None or kerneled:
        notes.append("speed model: " + describe_models(by_id))
    warnings += profile_warnings(efficiencies, gpu.id)
    if gpus > 1:
        ic = gpu.interconnect
        notes.append(
            f"tensor parallel over {gpus} GPUs is a model: weights, experts and heads split {gpus} ways, "
            f"2 all-reduces per layer over {ic.kind if ic else '?'} at "
            f"{(ic.bandwidth_bytes_per_s if ic else 0) / 1e9:,.0f} GB/s per direction, not overlapped; bytes and "
            "FLOPs are per GPU"
        )
    if scope == "decoder":
        notes.append("decoder scope (the chapter's accounting): decoder linear matrices, KV cache and residual "
                     "stream only; no embedding, lm_head, norms or logits")
    if arch.attention_layers.linear:
        notes.append(f"{arch.attention_layers.linear} linear-attention layers cache no per-token KV; their "
                     "fixed recurrent state is not modelled")
    if unfit:
        warnings.append(
            f"{unfit} of {plural(len(points), 'point')} {'does' if unfit == 1 else 'do'} not fit in {gpus} x {gpu.name} memory (weights + KV > "
            f"{memory_utilization:.0%} of memory minus {reserve_bytes / 1024**3:.0f} GiB); their times assume "
            "they would"
        )
    if prompt is not None:
        notes.append(f"TTFT@{prompt:,} per point: the prefill of `batch` prompts arriving together (recommend's TTFT in "
                     "synchronous serving)" + ("; the Pareto points' TTFT is under load in continuous batching (one "
                                               "prompt's prefill plus the queued ones, as recommend's)"
                                               if sweep is not None else ""))
    if spec is not None:
        notes.append(f"speculative decoding (K = {spec.tokens}, A = {spec.acceptance:g}: {spec.tokens_per_step:.2f} "
                     "tokens per step) prices the ridge column" + (" and the Pareto points" if sweep is not None else "")
                     + "; the points table is one token per sequence per step")
    if gpus > nvlink_domain:  # 8 on most platforms; an NVL72 rack (GB200, GB300) spans 72 (data/comm.yaml)
        domain = ("the 8-GPU NVLink/Infinity Fabric domain of most platforms" if nvlink_domain == 8 else
                  f"this platform's {nvlink_domain}-GPU NVLink domain")
        warnings.append(f"tensor parallel over {gpus} GPUs crosses {domain}; the model still uses the per-GPU "
                        "interconnect bandwidth")

    ic = gpu.interconnect
    return RooflineResult(
        model=ModelInfo(**(model_info or ModelSource(id=arch.architecture, source="object")).model_dump(),
                        kind=arch.kind, architecture=arch.architecture),
        gpu=GpuInfo(
            id=gpu.id,
            name=gpu.name,
            bandwidth_bytes_per_s=gpu.bandwidth_bytes_per_s,
            aggregate_bandwidth_bytes_per_s=gpu.bandwidth_bytes_per_s * gpus,
            memory_bytes=gpu.memory_bytes,
            interconnect=ic.kind if ic else None,
            interconnect_bytes_per_s=ic.bandwidth_bytes_per_s if ic else None,
        ),
        gpus=gpus,
        scope=scope,
        kv_dtype=kv_name,
        kv_bytes_per_token=bytes_per_token_short(arch, kv),
        profile=ProfileInfo(
            id=eff0.profile_id,
            ideal=eff0.ideal,
            memory_efficiency=eff0.memory,
            compute_efficiency=dict(sorted(eff0.compute.items())),
            dequant=eff0.dequant,
            allreduce=eff0.allreduce,
            step_overhead_s=eff0.step_overhead_s,
            call_floor_s=dict(zip(FLOOR_KEYS, eff0.call_floor_s, strict=True)),
            models={sid: e.model for sid, e in by_id.items()},
            calibration=calib,
        ),
        prompt=prompt,
        schemes=summaries,
        ridge_batch=ridge,
        points=points,
        crossovers=cross,
        crossover_search_max_batch=hi,
        curves=curves,
        price=price,
        speculation=SpecInfo.of(spec) if spec is not None else None,
        pareto=sweep,
        notes=notes,
        warnings=warnings,
    )


def _gap(ma: StepModel, mb: StepModel, cached: float) -> Fn:
    """The relative difference of two schemes' decode step times as a function of batch."""
    return lambda batch: _rel_diff(ma.decode_time(batch, cached), mb.decode_time(batch, cached))


def _rel_diff(a: float, b: float) -> float:
    return (a - b) / max(a, b)
