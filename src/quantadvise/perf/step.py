"""The performance model: what one decode step (and one prefill) costs, operator by operator.

A step is a list of operators; each costs ``max(bytes / bandwidth, FLOPs / peak + dequant)`` on one GPU plus its
GEMM calls' launch floor (a roofline per operator, summed), plus tensor-parallel communication and a fixed overhead.

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
- **activations**: the residual-stream hidden state every decoder layer reads, B·H at 2 bytes, the bf16 logits
  B·V, and a separate activation quantization's 3 bytes per input element. Other intra-layer intermediates (q/k/v,
  attention output, the MLP intermediate) are taken as fused / cache-resident and not counted: the accounting that
  gives the chapter's 0.002% at batch 1 (docs/roofline.md shows the alternatives and their shares).
Scopes: ``full`` (everything above, what a server runs) and ``decoder`` (the chapter's accounting: the decoder
linear matrices — 224 for Llama-3-8B — the KV cache and the residual stream; no embedding, lm_head, norms or logits).
Tensor parallel over N GPUs splits linears, experts, the embedding and lm_head N ways, attention
heads N ways (KV heads are replicated when N exceeds them; an MLA latent cache is replicated on
every GPU), and adds two all-reduces of B·H·2 bytes per decoder layer (plus the vocab-parallel
embedding's all-reduce and the logits gather): ``latency + 2(N−1)/N · bytes / (efficiency · link
bandwidth)`` each, not overlapped with compute. It is a model, not a measurement.

The sweep over batches and contexts and the report built from it are :mod:`.roofline`; which
tensor cores a scheme runs on is :mod:`.datapath`. Pure: no I/O, no printing.
"""

from __future__ import annotations

import copy

from ..errors import DataError, InputError
from ..hardware import GPU
from ..memory.kvcache import bytes_per_token_layer, cached_tokens, geometry, kv_share_per_gpu
from ..memory.sizing import check_groups, linear_bytes, quantized_groups
from ..model.arch import ModelArch
from ..model.inventory import inventory_of
from ..results import record
from ..scheme.axes import Scheme, TensorQuant
from .attention import AttentionCost, attention_cost, kv_len
from .datapath import Datapath, datapath
from .efficiency import Efficiency
from .kernel_step import KernelOp, kernel_ops, kernel_time, roofline_floors
from .memo import per_model
from .ops import REPLICATED_ROLES, LinearOp, expected_experts
from .profiles import LinearFit
from .solve import first_root

ACT_BYTES = 2  # the residual stream and logits stay 16-bit under every scheme
SCOPES = ("full", "decoder")
SEARCH_MAX_BATCH = 1 << 20


@record(slots=True)
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
        self.eff, self.scope, self.schedulers = efficiency, scope, 1  # schedulers: engine instances (DP ranks)
        self.path = path or datapath(scheme, gpu)
        if self.path.dequant and efficiency.dequant is not None and gpu.peak("fp32") is None:
            raise DataError(f"GPU '{gpu.id}' has no vector fp32 peak (peak_flops.fp32), needed for the dequant term")
        tp = float(gpus)
        inv = inventory_of(arch)
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
                per_weight: float, experts: int = 0, role: str = "") -> None:
            split, active = (1.0 if role in REPLICATED_ROLES else tp), top_k / experts if experts else 1.0
            elements, row_parallel = n * k * count / split, role in ("o", "down")
            ops.append(LinearOp(
                name=name, component=component, decoder=decoder, quantized=quant, bytes=elements * per_weight,
                elements=elements, flops_per_token=2.0 * elements * active,
                math=self.path.math if quant else "bf16", dequant=quant and self.path.dequant,
                experts=experts, top_k=top_k if experts else 0,
                n=n if row_parallel else n / split, k=k / tp if row_parallel else k, count=count, role=role,
            ))

        for g in inv.serving_groups(False):
            quant = id(g) in qset
            per_weight = (linear_bytes(scheme, g.n, g.k) / (g.n * g.k)) if quant else 2.0
            if g.component == "embedding":
                if full:
                    self.embed_row_bytes = per_weight * h / tp
                    if arch.tie_word_embeddings:  # the same matrix is the output head, read in full
                        add("lm_head (tied to the embedding)", "lm_head", False, quant, g.n, g.k, g.count,
                            per_weight, role="lm_head")
                continue
            if not g.linear:
                if full:
                    self.fixed_weight_bytes += g.params * 2.0
                continue
            decoder = g.component != "lm_head"
            if decoder or full:
                add(g.name, g.component, decoder, quant, g.n, g.k, g.count, per_weight, g.experts or 0, g.role)
        self.linears = tuple(ops)
        self.decoder_ops = tuple(o for o in ops if o.decoder)

        # attention
        geo = geometry(arch)
        self.kv_bytes_per_token_layer = bytes_per_token_layer(arch, kv)
        # one GPU's share of the KV cache: max(1, kv_heads // tp) heads, an MLA latent whole on every GPU
        kv_share = kv_share_per_gpu(kv_heads=arch.num_kv_heads, mla=arch.is_mla, tp=gpus)
        if arch.is_mla:
            self.attn_flops_decode = 2.0 * arch.num_heads * (2 * arch.kv_lora_rank + arch.qk_rope_head_dim) / tp
            self.attn_flops_prefill = 2.0 * arch.num_heads * (
                arch.qk_nope_head_dim + arch.qk_rope_head_dim + arch.v_head_dim) / tp
        else:
            self.attn_flops_decode = 4.0 * arch.num_heads * arch.head_dim / tp
            self.attn_flops_prefill = self.attn_flops_decode
        self.kv_share = kv_share
        self.kv_per_cached_token = self.kv_bytes_per_token_layer * kv_share
        self.geo = geo
        # decode attention from the engine's published table (else the roofline over the profile's launch floor)
        self._attn: AttentionCost | None = attention_cost(efficiency, arch, kv, gpus)

        layers = arch.num_layers
        self.residual_bytes_per_token = float(layers * h * ACT_BYTES)
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
        # measured kernels: each operator the kernel the engine runs for it prices (a calibrated fit
        # of the same kernel wins; operators whose kernel has no curve keep the roofline)
        self._kern: tuple[KernelOp | None, ...] = (tuple(None for _ in ops) if efficiency.kernels is None else
                                                   kernel_ops(ops, self._fits, efficiency.kernels, gpu, arch.architecture))
        self.kernel_priced = any(x is not None for x in self._kern)
        # what priced each operator (the basis of its uncertainty band, perf.uncertainty); "own:" marks the
        # scheme's own layers (its quantized ones; every one of a 16-bit scheme), the rest every scheme shares
        mine = tuple(o.quantized or not scheme.quantizes_weights for o in ops)
        self._labels = tuple(("own:" if m else "") + ((ko.band or ko.basis) if ko is not None else "calibrated"
                                                      if f is not None else "ideal" if efficiency.ideal else "roofline")
                             for ko, f, m in zip(self._kern, self._fits, mine, strict=True))
        # a roofline-priced operator's launch floors a pass (a table or a fit has its own) and the bytes a token of the
        # separate activation quantization the engine runs before it moves: activation traffic
        self._floors, quant_bytes = roofline_floors(ops, self._kern, self._fits, efficiency)
        self.residual_bytes_per_token += quant_bytes
        # every operator on a kernel curve: no per-step roofline coefficients to evaluate
        self._no_coefs = (tuple((0.0, 0.0, 0.0, 0, 0) for _ in ops)
                          if all(x is not None for x in self._kern) else None)
        self._prep_fast()

    def with_kv(self, kv: TensorQuant | None) -> StepModel:
        """The same model, GPU, scheme and kernels with another KV-cache dtype: only the bytes a cached
        token costs change (the linear layers, their kernels and the attention FLOPs do not), so they
        are shared instead of resolved again."""
        other = copy.copy(self)
        other.__dict__.pop("_step_memo", None)  # its steps cost other bytes per cached token
        other.kv = kv
        other.kv_bytes_per_token_layer = bytes_per_token_layer(self.arch, kv)
        other.kv_per_cached_token = other.kv_bytes_per_token_layer * self.kv_share
        other._attn = attention_cost(self.eff, self.arch, kv, self.tp)
        return other

    def peak_flops_per_s(self, math_fmt: str) -> float:
        """The spec-sheet peak of a datapath on this GPU (DataError when the GPU has none)."""
        return self._peaks[math_fmt] if math_fmt in self._peaks else self._peak(math_fmt)

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
        if self._no_coefs is not None:
            return self._no_coefs
        return tuple((0.0, 0.0, 0.0, 0, 0) if ko is not None else self._coefs(o, m, fit)
                     for o, fit, ko in zip(self.linears, self._fits, self._kern, strict=True))

    @property
    def calibrated(self) -> bool:
        """True when some linear operator follows a measured curve."""
        return any(f is not None for f in self._fits)

    # -- the two steps ----------------------------------------------------------------------------
    def cached_tokens(self, ctx: int) -> float:
        """Layer-tokens of KV one sequence of ``ctx`` tokens reads (kvcache.cached_tokens)."""
        return cached_tokens(self.arch, ctx)

    def _linear_time(self, tokens: float, coefs: tuple, logits_tokens: float, decoder_only: bool = False,
                     by_basis: dict[str, float] | None = None, experts: bool | None = None) -> tuple[float, ...]:
        """(time, bytes, flops, dequant s, memory-bound s, compute-bound s) of all linears for
        ``tokens`` tokens (lm_head sees ``logits_tokens``: only the last token of a prompt); ``experts``
        True / False: only the routed-expert operators / only the others."""
        t = b = f = dq_total = mem_s = comp_s = 0.0
        inv_tile = 1.0 / self._dq_tile
        factors: dict[tuple[int, float], float] = {}
        for i, (o, (mem_t, comp_per_tok, dq, e, k), fit, ko) in enumerate(zip(self.linears, coefs, self._fits, self._kern,
                                                                              strict=True)):
            if (decoder_only and not o.decoder) or (experts is not None and bool(o.experts) != experts):
                continue
            n_tok = logits_tokens if o.component == "lm_head" else tokens
            # each operator's time, whether its compute side binds, and its bytes: from the kernel's
            # measured curve, a calibrated fit, or the roofline; accumulated once below
            if ko is not None:
                op_t, mem_part, comp_part, bytes_ = kernel_time(ko, o, n_tok, self._bw, factors)
                compute = comp_part > mem_part
            else:
                if e:
                    frac = expected_experts(e, k, n_tok) / e
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
                    compute = comp_t > mem_t
                else:
                    if dq:
                        dq *= rows * inv_tile if rows > self._dq_tile else 1.0
                    comp_t = comp_per_tok * n_tok + dq
                    compute = comp_t > mem_t
                    op_t = (comp_t if compute else mem_t) + (self._floors[i] if n_tok > 0 else 0.0)
                    dq_total += dq
            t += op_t
            if by_basis is not None:
                lab = self._labels[i]
                by_basis[lab] = by_basis.get(lab, 0.0) + op_t
            if compute:
                comp_s += op_t
            else:
                mem_s += op_t
            b += bytes_
            f += o.flops_per_token * n_tok
        return t, b, f, dq_total, mem_s, comp_s

    @per_model
    def decode(self, batch: float, ctx: int | None = None, *, cached: float | None = None,
               queries: int = 1) -> StepCost:
        """One decode step: ``batch`` sequences each attending ``ctx`` cached tokens. ``queries`` > 1 is a
        speculative-decoding verification step: each sequence runs ``queries`` tokens (the last accepted one
        and the K drafted ones) through every linear layer, attends its cache with each of them (the KV is
        read once per sequence, the attention FLOPs scale with the queries), and gets logits for all of them."""
        ct = self.cached_tokens(ctx or 0) if cached is None else cached
        tokens = batch * queries
        return self._step(tokens, tokens, batch * ct, batch * ct * self.attn_flops_decode * queries, tokens,
                          decode=(batch, kv_len(self.geo, ct), queries))

    def draft_time(self, batch: float, ctx: int | None = None, *, cached: float | None = None) -> float:
        """Seconds of one drafting pass of an EAGLE / MTP-style head at ``batch`` sequences: one decoder
        layer (the mean of this model's layers: linears, attention over the cache, activations,
        all-reduces) and the target's lm_head, plus the step overhead (a pass of its own)."""
        c = self.decode(batch, ctx, cached=cached)
        decoder = self.linear_time(batch, decoder_only=True)
        head = max(0.0, c.linear_s - decoder)  # lm_head (and the embedding row) the head shares with the target
        per_layer = (decoder + c.attention_s + c.activations_s + c.communication_s) / max(1, self.arch.num_layers)
        return per_layer + head + c.overhead_s

    @per_model
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

    def _step(self, tokens: float, m: float, kv_token_layers: float, attn_flops: float, seqs: float,
              decode: tuple[float, float, int] | None = None) -> StepCost:
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
        roof = a_comp if a_comp > a_mem else a_mem
        attn_t = roof if self._attn is None else self._attn.step(roof, a_comp, decode)
        if a_comp > a_mem:
            comp_s += attn_t
        else:
            mem_s += attn_t
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

    @per_model
    def parts(self, batch: float, ctx: int | None = None, *, prompt: int | None = None) -> dict[str, float]:
        """Seconds of one decode step at ``batch`` sequences of ``ctx`` tokens (with ``prompt``: the prefill of
        ``batch`` prompts of that length; read-only, kept per model) by what priced them: each linear operator's
        basis (measured, same-math, composed, proxy, calibrated, roofline; ``own:`` for the scheme's own layers),
        the attention (``attention``: the published table; ``attention-roofline``: the roofline with its floor)
        and ``other`` (embedding rows, activations, communication, overhead: the roofline)."""
        out: dict[str, float] = {}
        if prompt is not None:
            tokens, logits = batch * prompt, batch
            cost = self.prefill(batch, prompt)
            attn = "attention-roofline" if self._attn is not None else "roofline"
        else:
            tokens = logits = batch
            cost = self.decode(batch, ctx)
            grid = self._attn is not None and self._attn.grid is not None
            attn = "attention" if grid else "attention-roofline" if self._attn is not None else "roofline"
        coefs = self._coef if self._constant else self._all_coefs(tokens)
        lin = self._linear_time(tokens, coefs, logits, by_basis=out)[0]
        out[attn] = out.get(attn, 0.0) + cost.attention_s
        out["other"] = out.get("other", 0.0) + max(0.0, cost.time_s - lin - cost.attention_s)
        return out

    def decode_time(self, batch: float, cached: float) -> float:
        """Step time only: ``cached`` = :meth:`cached_tokens` of the context."""
        return self.decode_times((batch,), cached)[0]

    def linear_time(self, batch: float, *, decoder_only: bool = True) -> float:
        """Seconds the (decoder) linear layers of one decode step at ``batch`` take — the part of
        the step ``calibrate`` measures (no attention, embedding rows, norms or activations)."""
        coefs = self._coef if self._constant else self._all_coefs(batch)
        return self._linear_time(batch, coefs, batch, decoder_only=decoder_only)[0]

    def expert_time(self, tokens: float) -> float:
        """Seconds the routed-expert linears take for ``tokens`` tokens on one GPU of this model's
        tensor-parallel group (a layout that shards the experts another way swaps this term:
        ``perf/parallel.py``)."""
        if tokens <= 0:
            return 0.0
        coefs = self._coef if self._constant else self._all_coefs(tokens)
        return self._linear_time(tokens, coefs, tokens, experts=True)[0]

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
        coefs, tile = self._coef, self._dq_tile
        kv_mem = cached * self.kv_per_cached_token * self._inv_bw
        kv_comp = cached * self.attn_flops_decode * self._attn_inv_peak
        attn = kv_comp if kv_comp > kv_mem else kv_mem
        a_floor = self._attn.floor() if self._attn is not None else 0.0  # no table: the constant path
        per_tok = self._stream_per_token + (self.comm_per_token_s + self.comm_per_seq_s if self.tp > 1 else 0.0)
        fixed = self._stream_fixed + self.overhead_s + sum(self._floors) + (self.comm_fixed_s if self.tp > 1 else 0.)
        out = []
        for b in batches:
            t = fixed + per_tok * b + (attn * b if attn * b > a_floor else a_floor)
            for mem_t, comp_tok, dq, e, k in coefs:
                if e:
                    frac = expected_experts(e, k, b) / e
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
        for o, fit, ko in zip(self.linears, self._fits, self._kern, strict=True):
            if decoder_only and not o.decoder:
                continue
            if ko is not None:
                _, mem_part, comp_part, _ = kernel_time(ko, o, batch, self._bw)
                total += comp_part - mem_part
                continue
            mem_t, comp_per_tok, dq, e, k = self._coefs(o, batch, fit)
            if e:
                frac = expected_experts(e, k, batch) / e
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

    @per_model
    def ridge_batch(self, hi: float = SEARCH_MAX_BATCH) -> float | None:
        """The batch at which the decoder's linear layers turn compute-bound (None: never below ``hi``).
        With the ideal profile and a dense model this is ``ridge · bytes_per_weight / 2``."""
        if not self.decoder_ops:
            return None
        return first_root(lambda b: self.linear_balance(b), 1.0, hi)

    def ridge_flop_per_byte(self, batch: float = 1.0) -> float:
        """Achieved peak of the scheme's datapath over achieved bandwidth (the chapter's π/β)."""
        m = self.path.math
        return (self.eff.compute_at(m, batch) * self._peaks.get(m, self._peak(m))) / (
            self.eff.memory_at(batch) * self._bw)

    def kernel_efficiencies(self, batch: float) -> tuple[float, float]:
        """(streaming, compute) efficiency of the measured kernel that prices the largest decoder
        linear operator at GEMM height ``batch`` (for a report's summary line)."""
        best = max(((o, ko) for o, ko in zip(self.linears, self._kern, strict=True) if ko is not None and o.decoder
                    and not (o.experts and ko.series is not None)), key=lambda x: x[0].bytes, default=None)
        if best is None:
            return self.eff.memory_at(batch), self.eff.compute_at(self.path.math, batch)
        ko = best[1]
        if ko.curve is None or ko.series is not None:  # a published table: the efficiencies its times imply
            assert ko.series is not None
            mem = ko.n * ko.k * ko.weight_bytes / self._bw
            return (min(1.0, mem / ko.series.at(1.0)),
                    min(1.0, 2.0 * batch * ko.n * ko.k / ko.peak / ko.series.at(batch)))
        return ko.curve.efficiencies(batch, ko.n, ko.k)

    def experts_label(self) -> str | None:
        """``"experts: fused-MoE measured table vllm/triton-moe (vllm 0.24.0)"`` (a curve: ``"... vllm/marlin-moe
        (measured)"``): what prices the routed experts (None: no routed experts, or the roofline prices them)."""
        got = next((ko for o, ko in zip(self.linears, self._kern, strict=True) if o.experts and ko is not None), None)
        c = got.curve if got is not None else None
        if got is None or (got.series is None and c is None):
            return None
        if got.series is not None or c is None:
            return f"experts: fused-MoE {got.label}"
        return f"experts: fused-MoE {c.key} ({c.basis}{f', {c.proxy_of}' if c.proxy_of else ''})"

    def bytes_per_weight(self) -> float:
        """Stored bytes per decoder linear weight (scales and zero-points included)."""
        el = sum(o.elements for o in self.decoder_ops)
        return sum(o.bytes for o in self.decoder_ops) / el if el else 0.0


def check_tensor_parallel(arch: ModelArch, gpu: GPU, gpus: int) -> None:
    """InputError unless ``arch``'s attention heads (and KV heads) split evenly over ``gpus``."""
    if gpus < 1:
        raise InputError(f"--gpus must be >= 1, got {gpus}", field="gpus")
    if gpus == 1:
        return
    if arch.num_heads % gpus:
        raise InputError(f"--gpus {gpus}: the model's {arch.num_heads} attention heads do not split over {gpus} GPUs "
                         "(engines require num_attention_heads % tensor_parallel_size == 0)", field="gpus")
    kvh = arch.num_kv_heads
    if not arch.is_mla and (kvh % gpus if gpus <= kvh else gpus % kvh):
        raise InputError(f"--gpus {gpus}: {kvh} KV heads neither split over nor replicate evenly onto {gpus} GPUs",
                         field="gpus")
