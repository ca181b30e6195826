"""The performance model: what one decode step (and one prefill) costs, operator by operator.

A step is a list of operators; each costs ``max(bytes / bandwidth, FLOPs / peak + dequant)`` on one
GPU (a roofline per operator, summed), plus tensor-parallel communication and a fixed overhead.

Operators of a decode step at batch B (sequences) and context C (tokens per sequence):

- one **linear** per inventory group (q/k/v/o, gate/up/down, MLA projections, routers, shared
  experts, lm_head): reads its stored bytes once (``sizing.linear_bytes`` for quantized groups —
  one bytes formula for the whole project — 2 bytes per weight otherwise) and does 2·B FLOP per
  weight. Routed experts read only the experts the batch touches, ``E·(1−(1−k/E)^B)`` per MoE layer
  (uniform independent routing), and do 2·B·k FLOP per expert weight row (active parameters
  only). Quantized groups run on the scheme's datapath (:func:`datapath`); unquantized ones on bf16.
  Weight-only kernels add the profile's dequantisation work to their compute time.
- the **embedding** gathers B rows; lm_head (or the tied embedding matrix) is read in full.
- **attention** reads B·(full_layers·C + sliding_layers·min(C, W)) cached token-layers at the KV
  scheme's bytes (``kvcache``: GQA heads, explicit head_dim, MLA latent, sliding windows; linear-
  attention layers cache nothing per token) and does 4·heads·head_dim FLOP per cached token-layer
  (MLA, absorbed as engines run decode: 2·heads·(2·kv_lora_rank + rope_dim)); it runs on bf16.
- **activations**: the residual-stream hidden state every decoder layer reads, B·H at 2 bytes, and
  the bf16 logits B·V. Intra-layer intermediates (q/k/v, attention output, the MLP intermediate)
  are taken as fused / cache-resident and not counted: this is the accounting that gives the
  chapter's 0.002% at batch 1 (docs/roofline.md shows the alternatives and their shares).

Scopes: ``full`` (everything above, what a server runs) and ``decoder`` (the chapter's accounting:
the decoder linear matrices — 224 for Llama-3-8B — the KV cache and the residual stream; no
embedding, lm_head, norms or logits).

Tensor parallel over N GPUs splits linears, experts, the embedding and lm_head N ways, attention
heads N ways (KV heads are replicated when N exceeds them; an MLA latent cache is replicated on
every GPU), and adds two all-reduces of B·H·2 bytes per decoder layer (plus the vocab-parallel
embedding's all-reduce and the logits gather): ``latency + 2(N−1)/N · bytes / (efficiency · link
bandwidth)`` each, not overlapped with compute. It is a model, not a measurement.

Pure: no I/O, no printing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import DataError, InputError, SchemeError
from ..formats import get_format
from ..hardware import GPU
from ..kvcache import (
    bytes_per_token_layer,
    bytes_per_token_short,
    cached_tokens,
    geometry,
)
from ..model import ModelArch
from ..scheme import Scheme, TensorQuant
from ..sizing import (
    DEFAULT_MEMORY_UTILIZATION,
    DEFAULT_RESERVE_BYTES,
    check_groups,
    linear_bytes,
    quantized_groups,
    size_model,
)
from .profiles import Curve, Efficiency, LinearFit, describe_models

SCHEMA_VERSION = 1
ACT_BYTES = 2  # the residual stream and logits stay 16-bit under every scheme
SCOPES = ("full", "decoder")
MAX_BATCH = 1 << 24
SEARCH_MAX_BATCH = 1 << 20


# -------------------------------------------------------------------------------------------------
# Inputs
# -------------------------------------------------------------------------------------------------


def expected_experts(num_experts: int, k: int, tokens: float) -> float:
    """Distinct experts ``tokens`` tokens touch in one MoE layer when each picks ``k`` of ``E``
    uniformly: ``E·(1−(1−k/E)^tokens)`` — k at one token, all E as tokens grow."""
    if tokens <= 0:
        return 0.0
    return num_experts * (1.0 - (1.0 - k / num_experts) ** tokens)


_RANGE = re.compile(r"^(\d+)\s*(?:\.\.|-)\s*(\d+)(?:\s*:\s*(\d+))?$")


def parse_batches(text: str | int | list[int] | tuple[int, ...], field: str = "batch") -> tuple[int, ...]:
    """``1,8,64,512``; ``1..512`` (doubling from 1 to 512, 512 included); ``16..256:16`` (step 16)."""
    if isinstance(text, int):
        values = [text]
    elif isinstance(text, (list, tuple)):
        values = [int(v) for v in text]
    else:
        values = []
        for part in str(text).split(","):
            part = part.strip()
            if not part:
                continue
            m = _RANGE.match(part)
            if m:
                lo, hi, step = int(m.group(1)), int(m.group(2)), m.group(3)
                if lo < 1 or hi < lo:
                    raise InputError(f"--{field} range '{part}' must go from >= 1 upwards", field=field)
                if step is not None:
                    if int(step) < 1:
                        raise InputError(f"--{field} range step must be >= 1, got {step}", field=field)
                    values.extend(range(lo, hi + 1, int(step)))
                else:
                    v = lo
                    while v < hi:
                        values.append(v)
                        v *= 2
                    values.append(hi)
                continue
            values.append(_int(part, field))
    if not values:
        raise InputError(f"--{field} needs at least one value, e.g. 1,8,64,512 or 1..512", field=field)
    for v in values:
        if v < 1:
            raise InputError(f"--{field} must be >= 1 (a decode step serves at least one sequence), got {v}",
                             field=field)
        if v > MAX_BATCH:
            raise InputError(f"--{field} {v} is beyond what the model covers (max {MAX_BATCH:,})", field=field)
    return tuple(sorted(set(values)))


def parse_contexts(text: str | int | list[int] | tuple[int, ...], field: str = "ctx") -> tuple[int, ...]:
    """``2048``, ``512,2k,32k`` (k = 1024 tokens); 0 is allowed (no KV cache read)."""
    if isinstance(text, int):
        values = [text]
    elif isinstance(text, (list, tuple)):
        values = [int(v) for v in text]
    else:
        values = [_int(p.strip(), field) for p in str(text).split(",") if p.strip()]
    if not values:
        raise InputError(f"--{field} needs at least one value, e.g. 2048 or 512,2k,32k", field=field)
    for v in values:
        if v < 0:
            raise InputError(f"--{field} must be >= 0 tokens, got {v}", field=field)
    return tuple(sorted(set(values)))


def _int(text: str, field: str) -> int:
    t = text.lower().replace("_", "")
    mult = 1
    if t.endswith("k"):
        t, mult = t[:-1], 1024
    try:
        return int(t) * mult
    except ValueError:
        raise InputError(f"--{field}: '{text}' is not a whole number (e.g. 1,8,64 or 1..512)", field=field) from None


def fit_weight_group(arch: ModelArch, scheme: Scheme) -> tuple[Scheme, str | None]:
    """``scheme`` with its per-group weight scale shrunk to the largest power-of-two group (>= 16)
    that divides every quantized layer's K, and a note saying so; unchanged when it already fits.
    Used for the default scheme list (an explicit scheme keeps its group and fails loudly)."""
    w = scheme.weight
    if w is None or w.scale is None or not w.scale.group.is_per_group or not scheme.quantizes_weights:
        return scheme, None
    g = w.scale.group.col
    ks = {grp.k for grp in quantized_groups(arch.inventory, scheme)}
    if all(k % g == 0 for k in ks):
        return scheme, None
    cand = g // 2
    while cand >= 16:
        if all(k % cand == 0 for k in ks):
            bad = min(k for k in ks if k % g)
            return (scheme.with_weight_group(cand),
                    f"{scheme.id} uses group {cand} here: {g} does not divide K = {bad} (--group to choose)")
        cand //= 2
    return scheme, None


# -------------------------------------------------------------------------------------------------
# Which tensor cores a scheme runs on, on this GPU
# -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Datapath:
    math: str  # the datapath the scheme's quantized GEMMs use on this GPU
    execution: str  # "native" | "weight-only" (a W+A scheme run with 16-bit activations)
    dequant: bool  # stored weights are converted inside the kernel
    note: str | None = None  # why it is not native (a warning)


def _microscaled(a: TensorQuant) -> bool:
    """Activation scales per 16/32 elements along K (NVFP4, MX formats) need block-scaled tensor
    cores; every chip in the table that has them also has the fp4 datapath (Blackwell, CDNA4)."""
    return a.scale is not None and a.scale.group.is_per_group and a.scale.group.col <= 32


def datapath(scheme: Scheme, gpu: GPU) -> Datapath:
    """How ``scheme``'s GEMMs run on ``gpu``; SchemeError when no engine can run it there.

    - unquantized and weight-only schemes: bf16 tensor cores (weight-only dequantises in-kernel);
    - W+A on a chip with that datapath: native (W4A8 still converts its int4 weights to fp8);
    - W+A with float weights (fp8, fp4, MX) on a chip without the datapath: engines run the weights
      weight-only — vLLM's FP8 runs as W8A16 through Marlin below SM89, NVFP4 and MXFP4 through
      Marlin below SM100, AMD parts through emulation — modelled as weight-only, with a warning;
    - W+A with integer weights on a chip without the datapath (W4A8-FP8 on A100, W8A8-INT8 on a
      chip without int8 tensor cores): no engine path, an error.
    """
    if not scheme.quantizes_weights:
        return Datapath("bf16", "native", False)
    if scheme.weight_only:
        return Datapath("bf16", "native", scheme.needs_dequant)
    a, w = scheme.activation, scheme.weight
    assert a is not None and w is not None
    math_fmt = scheme.math_format
    reason = None
    if not gpu.has_math(math_fmt):
        reason = f"{gpu.name} has no {math_fmt} tensor cores"
    elif _microscaled(a) and not gpu.has_math("fp4"):
        kind = a.scale.group.kind("activation") if a.scale else "group"
        reason = f"{gpu.name} has no block-scaled tensor cores for {kind} activation scales"
    if reason is None:
        return Datapath(math_fmt, "native", scheme.needs_dequant)
    if get_format(w.format).is_float:
        return Datapath(
            "bf16",
            "weight-only",
            True,
            f"{scheme.id}: {reason}; engines run its {w.format} weights weight-only (dequantised into bf16 "
            f"GEMMs: vLLM's Marlin kernels on NVIDIA, emulation on AMD), so it is modelled as "
            f"W{w.bits}A16 with 16-bit activations",
        )
    raise SchemeError(
        f"scheme '{scheme.id}' cannot run on {gpu.name}: {reason}, and no engine runs {w.format} weights "
        f"with {a.format} activations another way",
        hint="use a weight-only scheme such as w4a16 or w8a16",
        field="scheme",
    )


# -------------------------------------------------------------------------------------------------
# The step model
# -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LinearOp:
    """``count`` identical matrices of one inventory group, per GPU."""

    name: str
    component: str
    decoder: bool  # a decoder linear matrix (not embedding / lm_head)
    quantized: bool
    bytes: float  # stored bytes per GPU (all E experts for a routed group)
    elements: float  # weight elements per GPU (all experts)
    flops_per_token: float  # 2·params per GPU, times k/E for routed experts
    math: str
    dequant: bool
    experts: int = 0  # E for routed experts
    top_k: int = 0


@dataclass(frozen=True, slots=True)
class StepCost:
    """One step on one GPU of the tensor-parallel group (bytes and FLOPs per GPU)."""

    time_s: float
    weights_bytes: float
    kv_bytes: float
    activation_bytes: float
    flops: float
    linear_s: float
    attention_s: float
    activations_s: float
    dequant_s: float
    communication_s: float
    overhead_s: float
    memory_bound_s: float
    compute_bound_s: float

    @property
    def bytes(self) -> float:
        return self.weights_bytes + self.kv_bytes + self.activation_bytes

    @property
    def bound(self) -> str:
        """Where most of the step's time goes: memory-bound operators, compute-bound operators,
        or tensor-parallel communication."""
        m, c, x = self.memory_bound_s, self.compute_bound_s, self.communication_s
        if x > m and x > c:
            return "communication"
        return "compute" if c > m else "memory"


class StepModel:
    """Everything about (model, scheme, GPU, TP, KV, efficiency, scope) that does not depend on
    batch or context, precomputed once; :meth:`decode` and :meth:`prefill` are then arithmetic."""

    def __init__(
        self,
        arch: ModelArch,
        scheme: Scheme,
        gpu: GPU,
        *,
        kv: TensorQuant | None = None,
        gpus: int = 1,
        efficiency: Efficiency,
        scope: str = "full",
        path: Datapath | None = None,
    ):
        if scope not in SCOPES:
            raise InputError(f"scope must be one of {', '.join(SCOPES)}, got '{scope}'", field="scope")
        check_tensor_parallel(arch, gpu, gpus)
        self.arch, self.scheme, self.gpu, self.kv, self.tp = arch, scheme, gpu, kv, gpus
        self.eff, self.scope = efficiency, scope
        self.path = path or datapath(scheme, gpu)
        if self.path.dequant and efficiency.dequant is not None and gpu.peak("fp32") is None:
            raise DataError(f"GPU '{gpu.id}' has no vector fp32 peak (peak_flops.fp32), needed for the dequant term")
        tp = float(gpus)
        inv = arch.inventory
        qgroups = quantized_groups(inv, scheme)
        check_groups(scheme, tuple(qgroups))
        qset = {id(g) for g in qgroups}
        full = scope == "full"
        h, v = arch.hidden_size, arch.vocab_size
        top_k = arch.experts_per_token
        ops: list[LinearOp] = []
        self.embed_row_bytes = 0.0  # per gathered token, per GPU (vocab-parallel)
        self.fixed_weight_bytes = 0.0  # norms, biases, sinks: read every step, replicated on each GPU

        def add(name: str, component: str, decoder: bool, quant: bool, n: int, k: int, count: int,
                per_weight: float, experts: int = 0) -> None:
            elements = n * k * count / tp
            active = top_k / experts if experts else 1.0
            ops.append(LinearOp(
                name=name, component=component, decoder=decoder, quantized=quant, bytes=elements * per_weight,
                elements=elements, flops_per_token=2.0 * elements * active,
                math=self.path.math if quant else "bf16", dequant=quant and self.path.dequant,
                experts=experts, top_k=top_k if experts else 0,
            ))

        for g in inv.serving_groups(False):
            quant = id(g) in qset
            per_weight = (linear_bytes(scheme, g.n, g.k) / (g.n * g.k)) if quant else 2.0
            if g.component == "embedding":
                if full:
                    self.embed_row_bytes = per_weight * h / tp
                    if arch.tie_word_embeddings:  # the same matrix is the output head, read in full
                        add("lm_head (tied to the embedding)", "lm_head", False, quant, g.n, g.k, g.count,
                            per_weight)
                continue
            if not g.linear:
                if full:
                    self.fixed_weight_bytes += g.params * 2.0
                continue
            decoder = g.component != "lm_head"
            if decoder or full:
                add(g.name, g.component, decoder, quant, g.n, g.k, g.count, per_weight, g.experts or 0)
        self.linears = tuple(ops)
        self.decoder_ops = tuple(o for o in ops if o.decoder)

        # attention
        geo = geometry(arch)
        self.kv_bytes_per_token_layer = bytes_per_token_layer(arch, kv)
        if arch.is_mla:
            kv_share = 1.0  # the latent is not split by heads: every GPU holds all of it
            self.attn_flops_decode = 2.0 * arch.num_heads * (2 * arch.kv_lora_rank + arch.qk_rope_head_dim) / tp
            self.attn_flops_prefill = 2.0 * arch.num_heads * (
                arch.qk_nope_head_dim + arch.qk_rope_head_dim + arch.v_head_dim) / tp
        else:
            kvh = arch.num_kv_heads
            kv_share = (1.0 / tp) if gpus <= kvh else 1.0 / kvh
            self.attn_flops_decode = 4.0 * arch.num_heads * arch.head_dim / tp
            self.attn_flops_prefill = self.attn_flops_decode
        self.kv_share = kv_share
        self.kv_per_cached_token = self.kv_bytes_per_token_layer * kv_share
        self.geo = geo

        layers = arch.num_layers
        self.residual_bytes_per_token = layers * h * ACT_BYTES
        self.logit_bytes_per_seq = (v * ACT_BYTES / tp) if full else 0.0

        # tensor-parallel communication: c0 + c1·tokens (+ logits gather per sequence)
        self.comm_fixed_s = 0.0
        self.comm_per_token_s = 0.0
        self.comm_per_seq_s = 0.0
        if gpus > 1:
            ic = gpu.interconnect
            if ic is None:
                raise InputError(f"GPU '{gpu.id}' has no interconnect row; tensor parallel cannot be modelled",
                                 field="gpus")
            ar = efficiency.allreduce
            bw = ar.efficiency * ic.bandwidth_bytes_per_s
            n_ar = 2 * layers + (1 if full else 0)  # per layer after attention and MLP; + the embedding's
            n_gather = 1 if full else 0  # the logits gather
            ring = 2.0 * (gpus - 1) / gpus
            self.comm_fixed_s = (n_ar + n_gather) * ar.latency_s
            self.comm_per_token_s = n_ar * ring * h * ACT_BYTES / bw
            if full:
                self.comm_per_seq_s = (gpus - 1) / gpus * v * ACT_BYTES / bw

        # efficiencies (constants precomputed; curves evaluated per step)
        self._constant = efficiency.constant
        self._bw = gpu.bandwidth_bytes_per_s
        self._vec = gpu.peak("fp32") or 0.0
        self._peaks = {m: self._peak(m) for m in {o.math for o in ops} | {"bf16", self.path.math}}
        dq = efficiency.dequant
        self._dq_tile = float(dq.m_tile) if dq else 1.0
        self._dq_s_per_weight = (dq.flops_per_weight / (dq.efficiency * self._vec)) if (dq and self._vec) else 0.0
        self.overhead_s = efficiency.step_overhead_s
        # measured linear layers (a calibrated profile): the scheme's fit for its quantized
        # operators (every operator of an unquantized scheme), bf16's fit for the operators the
        # scheme leaves in 16-bit
        own = efficiency.linear
        self._fits: tuple[LinearFit | None, ...] = tuple(
            own if (o.quantized or not scheme.quantizes_weights) else efficiency.linear_bf16 for o in ops)
        for o, fit in zip(ops, self._fits, strict=True):
            if fit is not None:
                self._peaks.setdefault(o.math, self._peak(o.math))
        self._prep_fast()

    def _peak(self, math_fmt: str) -> float:
        p = self.gpu.peak(math_fmt)
        if p is None:  # datapath() guarantees the scheme's path exists; bf16 always does
            raise DataError(f"GPU '{self.gpu.id}' has no {math_fmt} peak")
        return p

    def _prep_fast(self) -> None:
        """Fold every constant of the constant-efficiency path (no curves in the profile)."""
        if self._constant:
            self._inv_bw = 1.0 / (self.eff.memory_at(1.0) * self._bw)
            self._coef = tuple(self._coefs(o, 1.0) for o in self.linears)
            self._attn_inv_peak = 1.0 / (self.eff.compute_at("bf16", 1.0) * self._peaks["bf16"])
            # streamed per token in a decode step: embedding row, residual stream, logits
            self._stream_per_token = (self.embed_row_bytes + self.residual_bytes_per_token
                                      + self.logit_bytes_per_seq) * self._inv_bw
            self._stream_fixed = self.fixed_weight_bytes * self._inv_bw

    def _coefs(self, o: LinearOp, m: float, fit: LinearFit | None = None) -> tuple[float, float, float, int, int]:
        """(seconds to stream the op's bytes, seconds per token of math, seconds of dequant per
        pass over all its weights, E, k) at efficiency for GEMM height ``m``. With a measured fit
        the fit's own efficiencies apply and there is no separate dequant term."""
        if fit is not None:
            return (o.bytes / (fit.memory_efficiency * self._bw),
                    o.flops_per_token / (fit.compute_efficiency * self._peaks[o.math]), 0.0, o.experts, o.top_k)
        bw = self.eff.memory_at(m) * self._bw
        peak = self.eff.compute_at(o.math, m) * self._peaks[o.math]
        dq = o.elements * self._dq_s_per_weight if o.dequant else 0.0
        return (o.bytes / bw, o.flops_per_token / peak, dq, o.experts, o.top_k)

    def _all_coefs(self, m: float) -> tuple[tuple[float, float, float, int, int], ...]:
        return tuple(self._coefs(o, m, fit) for o, fit in zip(self.linears, self._fits, strict=True))

    @property
    def calibrated(self) -> bool:
        """True when some linear operator follows a measured curve."""
        return any(f is not None for f in self._fits)

    # -- the two steps ----------------------------------------------------------------------------
    def cached_tokens(self, ctx: int) -> float:
        """Layer-tokens of KV one sequence of ``ctx`` tokens reads (kvcache.cached_tokens)."""
        return cached_tokens(self.arch, ctx)

    def _linear_time(self, tokens: float, coefs: tuple, logits_tokens: float, decoder_only: bool = False
                     ) -> tuple[float, float, float, float, float, float]:
        """(time, bytes, flops, dequant s, memory-bound s, compute-bound s) of all linears for
        ``tokens`` tokens (lm_head sees ``logits_tokens``: only the last token of a prompt)."""
        t = b = f = dq_total = mem_s = comp_s = 0.0
        inv_tile = 1.0 / self._dq_tile
        for o, (mem_t, comp_per_tok, dq, e, k), fit in zip(self.linears, coefs, self._fits, strict=True):
            if decoder_only and not o.decoder:
                continue
            n_tok = logits_tokens if o.component == "lm_head" else tokens
            if e:
                frac = 1.0 - (1.0 - k / e) ** n_tok
                mem_t *= frac
                rows = n_tok * k / (e * frac)
                dq *= frac
                bytes_ = o.bytes * frac
            else:
                rows = n_tok
                bytes_ = o.bytes
            if fit is not None:
                # measured: the fitted blend of the two terms, times the measured correction
                comp_t = comp_per_tok * n_tok
                op_t = fit.time(mem_t, comp_t, rows) if n_tok > 0 else 0.0
                t += op_t
                if comp_t > mem_t:
                    comp_s += op_t
                else:
                    mem_s += op_t
                b += bytes_
                f += o.flops_per_token * n_tok
                continue
            if dq:
                dq *= rows * inv_tile if rows > self._dq_tile else 1.0
            comp_t = comp_per_tok * n_tok + dq
            if comp_t > mem_t:
                t += comp_t
                comp_s += comp_t
            else:
                t += mem_t
                mem_s += mem_t
            b += bytes_
            f += o.flops_per_token * n_tok
            dq_total += dq
        return t, b, f, dq_total, mem_s, comp_s

    def decode(self, batch: float, ctx: int | None = None, *, cached: float | None = None) -> StepCost:
        """One decode step: ``batch`` sequences each attending ``ctx`` cached tokens."""
        ct = self.cached_tokens(ctx or 0) if cached is None else cached
        return self._step(batch, batch, batch * ct, batch * ct * self.attn_flops_decode, batch)

    def prefill(self, batch: float, prompt: int) -> StepCost:
        """Prefill of ``batch`` prompts of ``prompt`` tokens: every prompt token through the linears,
        causal attention over the prompt, the KV written once, logits for the last token only."""
        tokens = batch * prompt
        ct = self.cached_tokens(prompt)
        g = self.geo
        pairs = g.full_layers * prompt * (prompt + 1) / 2
        if g.sliding_layers and g.window:
            w = g.window
            per = prompt * (prompt + 1) / 2 if prompt <= w else w * (w + 1) / 2 + (prompt - w) * w
            pairs += g.sliding_layers * per
        return self._step(tokens, tokens, batch * ct, batch * pairs * self.attn_flops_prefill, batch)

    def _step(self, tokens: float, m: float, kv_token_layers: float, attn_flops: float, seqs: float) -> StepCost:
        if self._constant:
            coefs = self._coef
            inv_bw = self._inv_bw
            attn_inv_peak = self._attn_inv_peak
        else:
            coefs = self._all_coefs(m)
            inv_bw = 1.0 / (self.eff.memory_at(m) * self._bw)
            attn_inv_peak = 1.0 / (self.eff.compute_at("bf16", m) * self._peaks["bf16"])
        lin_t, w_bytes, flops, dq_s, mem_s, comp_s = self._linear_time(tokens, coefs, seqs)
        # embedding rows and replicated small tensors: pure streaming
        other_w = self.embed_row_bytes * tokens + self.fixed_weight_bytes
        other_t = other_w * inv_bw
        # attention
        kv_bytes = kv_token_layers * self.kv_per_cached_token
        a_mem, a_comp = kv_bytes * inv_bw, attn_flops * attn_inv_peak
        attn_t = a_comp if a_comp > a_mem else a_mem
        if a_comp > a_mem:
            comp_s += a_comp
        else:
            mem_s += a_mem
        # activations
        act_bytes = self.residual_bytes_per_token * tokens + self.logit_bytes_per_seq * seqs
        act_t = act_bytes * inv_bw
        mem_s += other_t + act_t
        comm = self.comm_fixed_s + self.comm_per_token_s * tokens + self.comm_per_seq_s * seqs if self.tp > 1 else 0.0
        total = lin_t + other_t + attn_t + act_t + comm + self.overhead_s
        return StepCost(
            time_s=total,
            weights_bytes=w_bytes + other_w,
            kv_bytes=kv_bytes,
            activation_bytes=act_bytes,
            flops=flops + attn_flops,
            linear_s=lin_t + other_t,
            attention_s=attn_t,
            activations_s=act_t,
            dequant_s=dq_s,
            communication_s=comm,
            overhead_s=self.overhead_s,
            memory_bound_s=mem_s,
            compute_bound_s=comp_s,
        )

    def decode_time(self, batch: float, cached: float) -> float:
        """Step time only: ``cached`` = :meth:`cached_tokens` of the context."""
        return self.decode_times((batch,), cached)[0]

    def linear_time(self, batch: float, *, decoder_only: bool = True) -> float:
        """Seconds the (decoder) linear layers of one decode step at ``batch`` take — the part of
        the step ``calibrate`` measures (no attention, embedding rows, norms or activations)."""
        coefs = self._coef if self._constant else self._all_coefs(batch)
        return self._linear_time(batch, coefs, batch, decoder_only=decoder_only)[0]

    def linear_terms(self, *, decoder_only: bool = True) -> tuple[float, float]:
        """The spec-sheet roofline's two terms for the (decoder) linear layers: (seconds to stream
        their stored bytes at peak bandwidth, seconds of math per row of M at each datapath's peak).
        A calibration fit's efficiencies are fractions of these."""
        ops = self.decoder_ops if decoder_only else self.linears
        mem = sum(o.bytes for o in ops) / self._bw
        comp = sum(o.flops_per_token / self._peaks[o.math] for o in ops)
        return mem, comp

    def decode_times(self, batches: tuple[float, ...] | list[float], cached: float) -> list[float]:
        """Step times for many batches at one context (the sweep's hot path: no objects built,
        every batch-independent constant folded in :meth:`_prep_fast`)."""
        if not self._constant:
            return [self.decode(b, cached=cached).time_s for b in batches]
        coefs = self._coef
        tile = self._dq_tile
        kv_mem = cached * self.kv_per_cached_token * self._inv_bw
        kv_comp = cached * self.attn_flops_decode * self._attn_inv_peak
        attn = kv_comp if kv_comp > kv_mem else kv_mem
        per_tok = attn + self._stream_per_token + (self.comm_per_token_s + self.comm_per_seq_s if self.tp > 1 else 0.0)
        fixed = self._stream_fixed + self.overhead_s + (self.comm_fixed_s if self.tp > 1 else 0.0)
        out = []
        for b in batches:
            t = fixed + per_tok * b
            for mem_t, comp_tok, dq, e, k in coefs:
                if e:
                    frac = 1.0 - (1.0 - k / e) ** b
                    mem_t *= frac
                    if dq:
                        dq *= frac
                        rows = b * k / (e * frac)
                        if rows > tile:
                            dq *= rows / tile
                elif dq and b > tile:
                    dq *= b / tile
                c = comp_tok * b + dq
                t += c if c > mem_t else mem_t
            out.append(t)
        return out

    # -- derived quantities -----------------------------------------------------------------------
    def linear_balance(self, batch: float, decoder_only: bool = True) -> float:
        """Compute time minus memory time of the (decoder) linear layers at ``batch``: negative
        while they are memory-bound."""
        total = 0.0
        for o, fit in zip(self.linears, self._fits, strict=True):
            if decoder_only and not o.decoder:
                continue
            mem_t, comp_per_tok, dq, e, k = self._coefs(o, batch, fit)
            if e:
                frac = 1.0 - (1.0 - k / e) ** batch
                mem_t *= frac
                dq *= frac
                rows = batch * k / (e * frac)
            else:
                rows = batch
            if dq and rows > self._dq_tile:
                dq *= rows / self._dq_tile
            tile = max(1.0, fit.m_tile / rows) if fit is not None and rows > 0 else 1.0
            total += comp_per_tok * batch * tile + dq - mem_t
        return total

    def ridge_batch(self, hi: float = SEARCH_MAX_BATCH) -> float | None:
        """The batch at which the decoder's linear layers turn compute-bound (None: never below
        ``hi``). With the ideal profile and a dense model this is ``ridge · bytes_per_weight / 2``."""
        if not self.decoder_ops:
            return None
        return first_root(lambda b: self.linear_balance(b), 1.0, hi)

    def ridge_flop_per_byte(self, batch: float = 1.0) -> float:
        """Achieved peak of the scheme's datapath over achieved bandwidth (the chapter's π/β)."""
        m = self.path.math
        return (self.eff.compute_at(m, batch) * self._peaks.get(m, self._peak(m))) / (
            self.eff.memory_at(batch) * self._bw)

    def bytes_per_weight(self) -> float:
        """Stored bytes per decoder linear weight (scales and zero-points included)."""
        el = sum(o.elements for o in self.decoder_ops)
        return sum(o.bytes for o in self.decoder_ops) / el if el else 0.0


def check_tensor_parallel(arch: ModelArch, gpu: GPU, gpus: int) -> None:
    if gpus < 1:
        raise InputError(f"--gpus must be >= 1, got {gpus}", field="gpus")
    if gpus == 1:
        return
    if arch.num_heads % gpus:
        raise InputError(
            f"--gpus {gpus}: the model's {arch.num_heads} attention heads do not split over {gpus} GPUs "
            "(engines require num_attention_heads % tensor_parallel_size == 0)",
            field="gpus",
        )
    kvh = arch.num_kv_heads
    if not arch.is_mla and (kvh % gpus if gpus <= kvh else gpus % kvh):
        raise InputError(
            f"--gpus {gpus}: {kvh} KV heads neither split over nor replicate evenly onto {gpus} GPUs",
            field="gpus",
        )


def first_root(fn: Any, lo: float, hi: float, *, grid: float = 1.25, rel: float = 1e-7) -> float | None:
    """The smallest x in [lo, hi] where fn(x) >= 0 (fn continuous), by a geometric scan and bisection."""
    if fn(lo) >= 0:
        return lo
    a = lo
    while a < hi:
        b = min(a * grid, hi)
        if fn(b) >= 0:
            return _bisect(fn, a, b, rel)
        a = b
    return None


def _bisect(fn: Any, a: float, b: float, rel: float) -> float:
    """fn(a) < 0 <= fn(b): shrink to the crossing."""
    while b - a > rel * b:
        mid = 0.5 * (a + b)
        if fn(mid) >= 0:
            b = mid
        else:
            a = mid
    return b


def crossings(fn: Any, lo: float, hi: float, steps: int = 400, rel: float = 1e-7, tie: float = 1e-9) -> list[float]:
    """Every x in [lo, hi] where continuous ``fn`` changes sign, found on a log grid and bisected.
    Values within ``tie`` of zero are ties, not sign changes (two schemes that converge on the
    same compute-bound time do not cross)."""

    def sgn(x: float) -> int:
        v = fn(x)
        return 0 if abs(v) <= tie else (1 if v > 0 else -1)

    out: list[float] = []
    ratio = (hi / lo) ** (1.0 / steps)
    x0, s0 = lo, sgn(lo)
    for i in range(1, steps + 1):
        x1 = lo * ratio**i if i < steps else hi
        s1 = sgn(x1)
        if s1 == 0:
            continue
        if s0 != 0 and s1 != s0:
            out.append(_bisect(lambda x, s=s1: s * fn(x) - tie, x0, x1, rel))
        x0, s0 = x1, s1
    return out


# -------------------------------------------------------------------------------------------------
# The result
# -------------------------------------------------------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)


class ByteSplit(_Out):
    weights: float
    kv: float
    activations: float


class TimeSplit(_Out):
    linear_s: float
    attention_s: float
    activations_s: float
    dequant_s: float
    communication_s: float
    overhead_s: float


class Point(_Out):
    scheme: str
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
    ttft_s: float | None = None


class SchemeSummary(_Out):
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
    model: str = "default-efficiency"  # ideal | default-efficiency | calibrated-ceilings | calibrated


class Crossover(_Out):
    a: str
    b: str
    ctx: int
    batch: float
    faster_below: str
    faster_above: str


class CurveOut(_Out):
    scheme: str
    ctx: int
    batch: list[float]
    step_time_s: list[float]
    tokens_per_s: list[float]


class RooflineResult(_Out):
    schema_version: int = SCHEMA_VERSION
    model: dict[str, Any]
    gpu: dict[str, Any]
    gpus: int
    scope: str
    kv_dtype: str
    kv_bytes_per_token: float
    profile: dict[str, Any]
    prompt: int | None
    schemes: list[SchemeSummary]
    ridge_batch: dict[str, float | None]
    points: list[Point]
    crossovers: list[Crossover]
    crossover_search_max_batch: float
    curves: list[CurveOut] = []
    notes: list[str] = []
    warnings: list[str] = []


def roofline(
    arch: ModelArch,
    schemes: list[Scheme],
    gpu: GPU,
    efficiencies: list[Efficiency],
    *,
    model_info: dict[str, Any] | None = None,
    kv: TensorQuant | None = None,
    kv_name: str = "bf16",
    batches: tuple[int, ...] = (1, 8, 64, 512),
    contexts: tuple[int, ...] = (2048,),
    prompt: int | None = None,
    gpus: int = 1,
    scope: str = "full",
    curve_points: int = 0,
    notes: list[str] | None = None,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
    reserve_bytes: int = DEFAULT_RESERVE_BYTES,
) -> RooflineResult:
    """The whole report: one :class:`StepModel` per scheme, swept over batches x contexts, with
    ridge batches and pairwise crossovers. ``efficiencies[i]`` belongs to ``schemes[i]``."""
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
    batches = parse_batches(batches)
    contexts = parse_contexts(contexts)
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
        summaries.append(SchemeSummary(
            scheme=scheme.id,
            description=scheme.description,
            math=path.math,
            execution=path.execution,
            dequant=path.dequant and eff.dequant is not None and fit is None,
            bytes_per_weight=sm.bytes_per_weight(),
            weights_bytes_per_gpu=math.ceil(resident[scheme.id]),
            peak_flops_per_s=sm._peaks[path.math],
            ridge_flop_per_byte=(fit.compute_efficiency * sm._peaks[path.math]) / (fit.memory_efficiency * sm._bw)
            if fit is not None else sm.ridge_flop_per_byte(at),
            memory_efficiency=fit.memory_efficiency if fit is not None else eff.memory_at(at),
            compute_efficiency=fit.compute_efficiency if fit is not None else eff.compute_at(path.math, at),
            model=eff.model,
        ))

    points: list[Point] = []
    unfit = 0
    for ctx in contexts:
        ttfts = {}
        for b in batches:
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
                ))

    hi = float(max(max(batches), 1024))
    cross: list[Crossover] = []
    for ctx in contexts:
        for (sa, ma), (sb, mb) in combinations(list(zip(schemes, models, strict=True)), 2):
            cached = ma.cached_tokens(ctx)
            for x in crossings(lambda bb, ma=ma, mb=mb, ct=cached: _rel_diff(ma.decode_time(bb, ct),
                                                                              mb.decode_time(bb, ct)), 1.0, hi):
                below = ma.decode_time(x * 0.99, cached) < mb.decode_time(x * 0.99, cached)
                cross.append(Crossover(a=sa.id, b=sb.id, ctx=ctx, batch=x,
                                       faster_below=sa.id if below else sb.id,
                                       faster_above=sb.id if below else sa.id))

    curves: list[CurveOut] = []
    lo_b, hi_b = float(min(batches)), float(max(batches))
    if curve_points > 1 and hi_b > lo_b:
        xs = [lo_b * (hi_b / lo_b) ** (i / (curve_points - 1)) for i in range(curve_points)]
        for ctx in contexts:
            for scheme, sm in zip(schemes, models, strict=True):
                ct = sm.cached_tokens(ctx)
                ts = [sm.decode_time(x, ct) for x in xs]
                curves.append(CurveOut(scheme=scheme.id, ctx=ctx, batch=xs, step_time_s=ts,
                                       tokens_per_s=[x / t for x, t in zip(xs, ts, strict=True)]))

    calibrated = [s.id for s, e in zip(schemes, efficiencies, strict=True) if e.linear is not None]
    notes = [
        ("a model fitted to measurements: the linear layers of " + ", ".join(calibrated) + " follow their measured "
         "curves (docs/calibration.md); every other operator is a roofline with the measured ceilings")
        if calibrated else
        "a roofline model, not a measurement: per-operator max(bytes/bandwidth, FLOPs/peak), summed",
        *(notes or []),
    ]
    eff0 = efficiencies[0]
    if eff0.ideal:
        notes.append("ideal: spec-sheet peaks, no dequantisation cost, no communication latency")
    by_id = {s.id: e for s, e in zip(schemes, efficiencies, strict=True)}
    calib = next((e.calibration for e in efficiencies if e.calibration is not None), None)
    if calib is not None:
        notes.append("speed model: " + describe_models(by_id))
        if calib.simulated:
            warnings.append(f"profile {eff0.profile_id} holds SIMULATED timings (calibrate --backend simulated), "
                            "not a measurement of a GPU")
    others = next((e.other_calibrations for e in efficiencies if e.other_calibrations), ())
    if others:
        warnings.append(f"profile {eff0.profile_id} holds measurements for {', '.join(others)}, not for {gpu.id}: "
                        "the default efficiencies apply")
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
            f"{unfit} of {len(points)} points do not fit in {gpus} x {gpu.name} memory (weights + KV > "
            f"{memory_utilization:.0%} of memory minus {reserve_bytes / 1024**3:.0f} GiB); their times assume "
            "they would"
        )
    if gpus > 8 and gpu.id != "gb200":
        warnings.append(f"tensor parallel over {gpus} GPUs crosses the 8-GPU NVLink/Infinity Fabric domain of most "
                        "platforms; the model still uses the per-GPU interconnect bandwidth")

    ic = gpu.interconnect
    return RooflineResult(
        model={**(model_info or {}), "kind": arch.kind, "architecture": arch.architecture},
        gpu={
            "id": gpu.id,
            "name": gpu.name,
            "bandwidth_bytes_per_s": gpu.bandwidth_bytes_per_s,
            "aggregate_bandwidth_bytes_per_s": gpu.bandwidth_bytes_per_s * gpus,
            "memory_bytes": gpu.memory_bytes,
            "interconnect": ic.kind if ic else None,
            "interconnect_bytes_per_s": ic.bandwidth_bytes_per_s if ic else None,
        },
        gpus=gpus,
        scope=scope,
        kv_dtype=kv_name,
        kv_bytes_per_token=bytes_per_token_short(arch, kv),
        profile={
            "id": eff0.profile_id,
            "ideal": eff0.ideal,
            "memory_efficiency": _value_json(eff0.memory),
            "compute_efficiency": {k: _value_json(v) for k, v in sorted(eff0.compute.items())},
            "dequant": eff0.dequant.model_dump(mode="json") if eff0.dequant else None,
            "allreduce": eff0.allreduce.model_dump(mode="json"),
            "step_overhead_s": eff0.step_overhead_s,
            "models": {sid: e.model for sid, e in by_id.items()},
            "calibration": calib.model_dump(mode="json") if calib is not None else None,
        },
        prompt=prompt,
        schemes=summaries,
        ridge_batch=ridge,
        points=points,
        crossovers=cross,
        crossover_search_max_batch=hi,
        curves=curves,
        notes=notes,
        warnings=warnings,
    )


def _rel_diff(a: float, b: float) -> float:
    return (a - b) / max(a, b)


def _value_json(v: float | Curve) -> Any:
    return v.model_dump(mode="json") if isinstance(v, Curve) else v
