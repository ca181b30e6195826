"""Pricing a step's linear operators with measured kernel curves (the ``measured-kernels`` model).

:func:`kernel_ops` decides, once per step model, which kernel each operator runs (the engine's choice
for its fused shape: q/k/v and gate/up are one GEMM in every engine) and which curve prices it;
:func:`kernel_time` is then the per-step arithmetic: ``calls x (overhead + blend(memory, compute))``
plus a separate activation quantization where the engine runs one, and for a routed-expert group one
fused-MoE call per layer over the experts the tokens reach.

Pure: no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..hardware import GPU
from ..results import record
from .kernel_curves import KernelCurve, QuantCurve, blend
from .kernel_tables import MSeries
from .lookup import op_series, quant_plan
from .ops import expected_experts

if TYPE_CHECKING:
    from ..engines.kernels import KernelChoice
    from .efficiency import Efficiency, KernelPricing
    from .ops import LinearOp
    from .profiles import LinearFit


@record(slots=True)
class KernelOp:
    """How one linear operator is priced by a measured kernel curve: ``calls`` GEMM calls per step of
    the fused shape ``n x k`` (q/k/v and gate/up run as one GEMM, as engines fuse them), of which this
    operator is the ``share`` n_op / n_fused; plus the separate activation quantization and, for a
    dequantize-then-GEMM kernel, the per-call dequantization."""

    curve: KernelCurve | None  # None: a published table prices the operator (``series``)
    peak: float
    n: float
    k: float
    calls: float
    share: float
    weight_bytes: float  # bytes per weight element the GEMM streams
    quant: QuantCurve | None
    dequant_bytes: float = 0.0  # bytes per element a separate dequantization pass moves (0: none)
    dequant: QuantCurve | None = None
    eta_m: float = 1.0  # the curve's efficiencies at this fused shape (before the M factor): fixed per op
    eta_c: float = 1.0
    overhead_share: float = 1.0  # the part of the kernel's per-call overhead this operator carries
    series: MSeries | None = None  # the published table's seconds per call along M (lookup before any curve)
    basis: str = ""  # measured | same-math | composed | proxy (the table's) or the curve's basis
    label: str = ""  # the published table that prices the operator, in words (a fused-MoE table's)
    band: str = ""  # the uncertainty band it carries (perf.uncertainty) when not its basis's: "moe"

# q/k/v and gate/up run as one GEMM in every engine; so do MLA's q_a and kv_a (vLLM 0.34.0 fused_qkv_a_proj,
# SGLang 0.5.23 fused_qkv_a_proj_with_mqa: perf/ops.py REPLICATED_ROLES cites the lines)
# the expert operators one fused-MoE call runs (gated experts: gate and up fused, then down)
_MOE_ROLES = frozenset({"gate", "up", "down"})
_FUSED_ROLES = {"q": "qkv", "k": "qkv", "v": "qkv", "gate": "gate_up", "up": "gate_up", "q_a": "qkv_a", "kv_a": "qkv_a"}


def fused_n(ops: list[LinearOp] | tuple[LinearOp, ...]) -> tuple[float, ...]:
    """Per operator, the N of the GEMM call it runs in: the engines fuse q/k/v and gate/up into one call."""
    fused: dict[tuple[str, str, float, int, bool, int], float] = {}
    keys = [(o.component, _FUSED_ROLES.get(o.role, o.name), o.k, o.count, o.quantized, o.experts) for o in ops]
    for o, key in zip(ops, keys, strict=True):
        fused[key] = fused.get(key, 0.0) + o.n
    return tuple(fused[key] for key in keys)


def _moe_elems(ops: list[LinearOp] | tuple[LinearOp, ...]) -> dict[int, float]:
    """Routed experts: one fused-MoE call per layer covers gate, up and down (its per-call cost is shared by the
    operators in proportion to their weights): the layer's expert weight elements, by operator count."""
    got: dict[int, float] = {}
    for o in ops:
        if o.experts:
            got[o.count] = got.get(o.count, 0.0) + o.n * o.k
    return got


def calls_per_pass(ops: list[LinearOp] | tuple[LinearOp, ...]) -> tuple[float, ...]:
    """Per operator, its share of the GEMM calls a forward pass makes (:func:`fused_n`: a fused member counts
    its share of the call; routed experts, their share of one fused-MoE call per layer)."""
    moe = _moe_elems(ops)
    return tuple(o.count / o.experts * o.n * o.k / moe[o.count] if o.experts else
                 o.count * (o.n / n_f if n_f else 1.0) for o, n_f in zip(ops, fused_n(ops), strict=True))


# bytes a separate activation quantization moves per element of its input: read in 16 bits, written in 8
QUANT_BYTES = 3.0


def roofline_floors(ops: list[LinearOp], kern: tuple[KernelOp | None, ...], fits: tuple[LinearFit | None, ...],
                    eff: Efficiency) -> tuple[tuple[float, ...], float]:
    """(per operator the roofline prices — no table, curve or fit, which price their own — the launch floors a forward
    pass of it pays, and the bytes a token its separate activation quantizations read and write). Its GEMM calls
    (:func:`calls_per_pass`; a layer's routed experts, one fused-MoE call) pay the GEMM floors; where the kernel the
    engine runs for its fused shape quantizes its input in a kernel of its own (``activation_quant: unfused``,
    data/kernels/), its share of those calls (the members of a fused call share its one input) pays the quantization
    floor and moves :data:`QUANT_BYTES` per input element."""
    fl, pricing = eff.call_floor_s, eff.kernels
    floors: list[float] = []
    quant_bytes = 0.0
    for o, ko, fit, n_f, c in zip(ops, kern, fits, fused_n(ops), calls_per_pass(ops), strict=True):
        if ko is not None or fit is not None:
            floors.append(0.0)
            continue
        choice = (pricing.choose(True, max(int(n_f), 1), max(int(o.k), 1))
                  if pricing is not None and o.quantized and not o.experts else None)
        kin = None if choice is None else choice.kernel
        q = c if kin is not None and kin.activation_quant == "unfused" and kin.quant_kernel else 0.0
        floors.append((fl[3] if o.experts else fl[o.quantized]) * c + fl[4] * q)
        quant_bytes += QUANT_BYTES * q * o.k
    return tuple(floors), quant_bytes


def kernel_ops(ops: list[LinearOp], fits: tuple[LinearFit | None, ...], pricing: KernelPricing,
                gpu: GPU, architecture: str | None = None) -> tuple[KernelOp | None, ...]:
    """Per operator: the kernel the engine runs for its fused shape and that kernel's curve, or None
    (a calibrated fit prices it, or the kernel has no curve on this GPU). ``architecture``: the model's
    (the fused-MoE backend of some engines follows it)."""
    widths, moe_elems = fused_n(ops), _moe_elems(ops)
    out: list[KernelOp | None] = []
    for o, fit, n_f in zip(ops, fits, widths, strict=True):
        if o.experts:  # the fused-MoE backend the engine runs, never a dense Linear kernel
            choice = pricing.choose_moe(o.quantized, architecture)
        else:
            choice = pricing.choose(o.quantized, max(int(n_f), 1), max(int(o.k), 1))
        curve = pricing.curve(choice)
        if fit is None and choice is not None and choice.moe and o.elements > 0 and o.role in _MOE_ROLES:
            got = _moe_table_op(o, choice, pricing, gpu, moe_elems[o.count], curve)
            if got is not None:
                out.append(got)
                continue
        if fit is None and choice is not None and not choice.moe and o.elements > 0:
            got = _table_op(o, choice, pricing, gpu, n_f, curve)
            if got is not None:
                out.append(got)
                continue
        if curve is not None and choice is not None and choice.moe:
            if choice.kernel.math != curve.math:  # a stand-in on the experts' own datapath
                curve = curve.model_copy(update={"math": choice.kernel.math})
            curve = curve.as_fused_moe()
        if fit is not None or curve is None or choice is None or o.elements <= 0:
            out.append(None)
            continue
        peak = gpu.peak(curve.math)
        if peak is None:
            out.append(None)
            continue
        kin = choice.kernel
        quant = None
        if kin.activation_quant == "unfused" and kin.quant_kernel and not curve.includes_quant:
            quant = pricing.quant(choice.engine, kin.quant_kernel)
        stored = o.bytes / o.elements
        dq, dq_bytes, w_bytes = None, 0.0, stored
        if kin.id == "awq-dequant-cublas":  # the whole weight dequantized to 16 bits, then a bf16 GEMM
            dq, dq_bytes, w_bytes = pricing.quant(choice.engine, "static-quant"), stored + 2.0, 2.0
        calls = o.count / (o.experts or 1) / 1.0
        em, ec = curve.shape_efficiencies(n_f, o.k)
        share = (n_f * o.k / moe_elems[o.count]) if o.experts else 1.0
        out.append(KernelOp(curve=curve, peak=peak, n=n_f, k=o.k, calls=calls, share=o.n / n_f if n_f else 1.0,
                            weight_bytes=w_bytes, quant=quant, dequant_bytes=dq_bytes, dequant=dq, eta_m=em, eta_c=ec,
                            overhead_share=share, basis=str(curve.basis)))
    return tuple(out)


def _moe_table_op(o: LinearOp, choice: KernelChoice, pricing: KernelPricing, gpu: GPU, layer_elems: float,
                  curve: KernelCurve | None) -> KernelOp | None:
    """One routed-expert operator priced by the published fused-MoE table of the kernel the engine runs
    (:mod:`.moe_tables`): the layer's call at the step's tokens, shared by the layer's expert operators in
    proportion to their weights; None (the curve prices it) when the GPU has no table of the kernel or of
    the model's configuration."""
    mc = pricing.moe_table(choice)
    peak = gpu.peak(choice.kernel.math)
    if mc is None or peak is None:
        return None
    hidden, inter = (o.k, o.n) if o.role in ("gate", "up") else (o.n, o.k)
    got = mc.series(int(round(hidden)), inter, o.top_k, o.experts, o.bytes / o.elements)
    if got is None:
        return None
    return KernelOp(curve=curve, peak=peak, n=o.n, k=o.k, calls=o.count / o.experts, share=o.n * o.k / layer_elems,
                    weight_bytes=o.bytes / o.elements, quant=None, series=got[0], basis=mc.basis_of(got[1]),
                    label=mc.words(got[1]), band="moe" if mc.basis_of(got[1]) == "measured" else "")


def _table_op(o: LinearOp, choice: KernelChoice, pricing: KernelPricing, gpu: GPU, n_f: float,
              curve: KernelCurve | None) -> KernelOp | None:
    """A dense operator priced by the published table of its kernel (:mod:`.lookup`), or None."""
    tc = pricing.table(choice)
    tables = pricing.tables
    kin = choice.kernel
    peak = gpu.peak(kin.math)
    if tc is None or tables is None or peak is None:
        return None
    stored = o.bytes / o.elements
    take_off, add = quant_plan(tc.table.meta.includes_quant, kin.activation_quant, kin.quant_kernel)
    dq, dq_bytes, w_bytes = None, 0.0, stored
    if kin.id == "awq-dequant-cublas":  # the whole weight dequantized to 16 bits, then a bf16 GEMM
        dq, dq_bytes, w_bytes = pricing.quant(choice.engine, "static-quant"), stored + 2.0, 2.0
    series = op_series(tc, tables, n_f, o.k, w_bytes, subtract=take_off)
    quant = pricing.quant(choice.engine, kin.quant_kernel) if add and kin.quant_kernel else None
    return KernelOp(curve=curve, peak=peak, n=n_f, k=o.k, calls=float(o.count), share=o.n / n_f if n_f else 1.0,
                    weight_bytes=w_bytes, quant=quant, dequant_bytes=dq_bytes, dequant=dq, series=series, basis=tc.basis)


def kernel_time(ko: KernelOp, o: LinearOp, tokens: float, bw: float,
                factors: dict[tuple[int, float], float] | None = None) -> tuple[float, float, float, float]:
    """(seconds, memory term, compute term, weight bytes read) of one operator for ``tokens`` rows
    (``factors``: the curves' M factors already computed for this step, shared by its operators)."""
    if tokens <= 0:
        return 0.0, 0.0, 0.0, 0.0
    c = ko.curve
    n, k = ko.n, ko.k
    if ko.series is not None:  # a published table: the call's time is the table's
        per_call = ko.series.at(tokens)
        # its two terms, read through the blend the curves use (p = 4): the streaming floor (the call at its
        # smallest M) and what the time holds beyond it, so the call is compute-bound once it is 2^(1/4) = 1.19x
        # its floor
        mem = ko.series.ts[0]
        comp = max(per_call ** 4 - mem ** 4, 0.0) ** 0.25
        if o.experts:  # a fused-MoE table: this operator's share of the layer's call; the experts the tokens reach
            scale = ko.calls * ko.share
            return (per_call * scale, mem * scale, comp * scale,
                    o.bytes * expected_experts(o.experts, o.top_k, tokens) / o.experts)
        read = n * k * (o.bytes / o.elements)
    elif o.experts:
        assert c is not None  # one fused-MoE call per layer over the experts the tokens reach
        e = o.experts
        touched = expected_experts(e, o.top_k, tokens)
        rows = tokens * o.top_k / touched
        em, ec = ko.eta_m, ko.eta_c * _factor(c, rows, factors)
        mem = touched * (n * k * ko.weight_bytes + rows * k * c.act_bytes + rows * n * 2.0) / (em * bw)
        comp = touched * 2.0 * expert_rows(c, rows) * n * k / (ec * ko.peak)
        per_call = c.overhead_s * ko.overhead_share + blend(mem, comp, c.blend)
        read = touched * n * k * (o.bytes / o.elements)
    else:
        assert c is not None
        em, ec = ko.eta_m, ko.eta_c * _factor(c, tokens, factors)
        mem = (n * k * ko.weight_bytes + tokens * k * c.act_bytes + tokens * n * 2.0) / (em * bw)
        comp = 2.0 * c.rows(tokens) * n * k / (ec * ko.peak)
        per_call = c.overhead_s + blend(mem, comp, c.blend)
        read = n * k * (o.bytes / o.elements)
    if ko.quant is not None:
        per_call += ko.quant.time(tokens, k, bw)
    if ko.dequant is not None:
        per_call += ko.dequant.overhead_s + n * k * ko.dequant_bytes / (ko.dequant.efficiency * bw)
    scale = ko.calls * ko.share
    return per_call * scale, mem * scale, comp * scale, read * ko.calls * ko.share


def expert_rows(c: KernelCurve, rows: float) -> float:
    """The rows one touched expert computes when it gets ``rows`` tokens on average, its count padded
    to whole M tiles. Serving traffic is not routed evenly (the published tables time balanced
    routing): per-expert counts spread around the mean, so once they span a few tiles the padding
    averages half a tile, ``(tile - 1) / 2``; an expert that gets at most a tile's worth computes one
    tile. ``max(tile, rows + (tile - 1) / 2)`` joins the two and grows smoothly with the batch —
    rounding the mean up to a whole tile would make one more sequence cost a whole tile per expert
    at every multiple (a step that real, unevenly routed traffic averages out)."""
    t = c.m_tile
    if t <= 1:
        return rows
    return max(float(t), rows + (t - 1) / 2.0)


def _factor(c: KernelCurve, m: float, cache: dict[tuple[int, float], float] | None) -> float:
    if cache is None:
        return c.m_factor_at(m)
    key = (id(c), m)
    f = cache.get(key)
    if f is None:
        f = cache[key] = c.m_factor_at(m)
    return f
