"""A parallel layout's step: one replica spread over GPUs by tensor, pipeline, expert and attention-data
parallelism, priced from the one-GPU-group step model plus its communication (``perf/comm.py``).

:class:`Parallel` is the shape of one replica: ``tp`` GPUs split attention and the dense layers (and the
routed experts, unless ``ep``), ``pp`` pipeline stages each hold ``layers / pp`` layers, ``dp`` attention
data-parallel groups (wide expert parallelism: each group of ``tp`` GPUs runs attention for its own
sequences) and ``ep`` shards the routed experts over ``tp x dp`` GPUs. Its GPUs are ``tp x pp x dp``.

:class:`LayoutStep` prices a step of that replica at ``B`` concurrent sequences from ``base``, the step
model of one ``tp``-GPU group (:class:`~.step.StepModel`, whose own tensor-parallel term is replaced):

- **decode**, ``b = B / (m x g)`` sequences per micro-batch and attention group (``m = min(pp, B)``
  micro-batches in flight, ``g = min(dp, B / m)`` attention groups with sequences):
  ``t(b) − comm_tp(b)`` (the group's step without its built-in all-reduce model);
  with ``ep`` over ``n = tp x dp`` GPUs, each GPU holds ``E / n`` whole experts and runs the tokens of all
  ``dp`` groups routed to them: the one-GPU model's routed-expert time for ``dp·b`` tokens over ``n``
  (the same expert shapes, 1/n of the experts touched and of the rows; routing taken as balanced) in place
  of the group's tensor-split experts: ``+ experts_1(dp·b) / n − experts_tp(b)``;
  plus the measured communication of the layout (``comm``): an all-reduce of ``b x hidden x 2`` bytes
  after attention and after every MLP that is tensor-parallel (``2L + 1`` with the embedding's; a
  routed MoE layer under ``ep`` exchanges its tokens instead: one dispatch + combine of ``b / tp``
  tokens per rank), and the logits gather;
  with ``pp`` stages, a token of each micro-batch comes back after one pass through every stage,
  ``T = t(b) + hops``, or, with the pipeline full, after ``m`` passes of the slowest stage,
  ``m x ((t(b) − f) / pp + f)``, ``f = head(b) + overhead`` (the last stage also runs the lm_head; each
  pays the step's fixed overhead): the step is the larger, and the pipeline's bubble is that imbalance;
  ``hop`` is the activation hand-off, ``b x hidden x 2`` bytes over NVLink or the network. ``B`` sequences
  then advance one token per such step.
- **prefill** of ``B`` prompts: attention groups prefill their share at once (one group for one
  prompt); ``pp`` stages pipeline ``m = min(pp, B)`` micro-batches: ``(m + pp − 1) / pp x T(B / m)``
  (the fill and drain of the pipeline) plus the hand-offs.

Everything else (the serving loop, the latency budgets) reads the step through
:func:`~.serving.serve` as it reads a one-group step. It is a model, not a measurement; its error
against published multi-GPU measurements is docs/calibration.md §8.

Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..model.arch import ModelArch
from ..results import record
from .comm import Comm
from .step import ACT_BYTES, StepCost, StepModel


@record(slots=True)
class Parallel:
    """How one replica spreads over GPUs."""

    tp: int = 1  # tensor parallel: attention and dense layers (and the routed experts unless ``ep``)
    pp: int = 1  # pipeline stages
    dp: int = 1  # attention data-parallel groups of ``tp`` GPUs inside the replica (wide expert parallelism)
    ep: bool = False  # routed experts sharded over tp x dp GPUs instead of split by tensor parallelism

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def expert_gpus(self) -> int:
        """GPUs each routed expert layer is spread over (each holds 1 / this of the experts)."""
        return self.tp * self.dp if self.ep else self.tp

    @property
    def family(self) -> str:
        """TP, TP+PP, TP+EP or DP+EP: how a report groups layouts (``--plot`` draws one frontier each)."""
        if self.dp > 1:
            return "DP+EP"
        if self.ep:
            return "TP+EP" if self.pp == 1 else "TP+EP+PP"
        return "TP" if self.pp == 1 else "TP+PP"

    @property
    def label(self) -> str:
        """``TP8``, ``TP4xPP2``, ``TP8+EP8``, ``DP16+EP16`` (attention TP 1 in each group)."""
        if self.dp > 1:
            head = f"DP{self.dp}" + (f"xTP{self.tp}" if self.tp > 1 else "")
            return f"{head}+EP{self.expert_gpus}" + (f"xPP{self.pp}" if self.pp > 1 else "")
        base = f"TP{self.tp}" + (f"+EP{self.tp}" if self.ep else "")
        return base + (f"xPP{self.pp}" if self.pp > 1 else "")

    def weights_per_gpu(self, total_bytes: float, expert_bytes: float) -> float:
        """Bytes of weights one GPU holds: the routed experts over ``expert_gpus x pp``, the rest over ``tp x pp``
        (replicated in each attention group)."""
        return (total_bytes - expert_bytes) / (self.tp * self.pp) + expert_bytes / (self.expert_gpus * self.pp)


class LayoutStep(StepModel):
    """The step of one replica laid out as ``par`` (the module docstring has the model). Built on ``base``
    (one ``tp``-GPU group's step model, its state shared, not copied) and ``experts`` (the one-GPU step model
    whose routed-expert term, over ``par.expert_gpus``, prices expert parallelism; None without ``ep``)."""

    def __init__(self, base: StepModel, par: Parallel, comm: Comm, *, experts: StepModel | None = None,
                 gpus_per_node: int | None = None, memo: dict | None = None):
        # share every batch-independent constant of the group's model; decode / prefill are replaced
        self.__dict__.update(base.__dict__)
        self.__dict__.pop("_step_memo", None)  # the base's own steps (perf.memo): not this layout's
        self.base, self.par, self.comm, self.experts = base, par, comm, experts
        # each data-parallel rank is an engine instance of its own (vLLM's DP engine cores, SGLang's DP workers):
        # each admits the release's max_num_seqs, so the replica runs up to dp x that many (perf.loop.running)
        self.schedulers = par.dp
        # the group models' other evaluations (experts, the head, communication), keyed by their arguments: shared
        # by every layout built on the same models (their decode / prefill steps they keep themselves, perf.memo);
        # this layout's own points
        self._memo: dict = memo if memo is not None else {}
        self._own: dict = {}
        arch: ModelArch = base.arch
        self.layers = arch.num_layers
        self.moe_layers = len(arch.moe_layers) if arch.is_moe else 0
        self.hidden = arch.hidden_size
        self.top_k = arch.experts_per_token
        node = gpus_per_node or comm.gpus_per_node
        # all-reduces per step over the tp group: after attention and after each tensor-parallel MLP, the embedding's
        self.n_allreduce = (self.layers + (self.layers - self.moe_layers) + (0 if par.ep else self.moe_layers) + 1
                            if par.tp > 1 else 0)
        self.n_exchange = self.moe_layers if par.ep and par.expert_gpus > 1 else 0
        # pipeline hand-offs: between stages of tp GPUs; those that cross a node boundary go over the network
        stages_per_node = max(1, node // par.tp) if par.tp <= node else 1
        self.hops_cross = (par.pp - 1) // stages_per_node if par.pp > 1 else 0
        self.hops_inside = (par.pp - 1) - self.hops_cross if par.pp > 1 else 0
        self.logits_bytes = arch.vocab_size * ACT_BYTES

    # -- the group models' evaluations, memoized ------------------------------------------------------
    def _experts_of(self, model: StepModel, tokens: float) -> float:
        key = ("e", id(model), tokens)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = model.expert_time(tokens)
        return hit

    def _head(self, tokens: float) -> float:
        key = ("h", id(self.base), tokens)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = max(0.0, self.base.linear_time(tokens, decoder_only=False)
                                        - self.base.linear_time(tokens))
        return hit

    # -- communication ------------------------------------------------------------------------------
    def communication(self, tokens: float, seqs: float) -> float:
        """Seconds of the layout's collectives in one pass of ``tokens`` tokens (``seqs`` sequences' logits)."""
        key = ("c", id(self.comm), self.par, tokens, seqs)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self._communication(tokens, seqs)
        return hit

    def _communication(self, tokens: float, seqs: float) -> float:
        p, c = self.par, self.comm
        t = 0.0
        if self.n_allreduce:
            t += self.n_allreduce * c.allreduce(tokens * self.hidden * ACT_BYTES, p.tp)
            # the vocab-parallel logits gathered to one GPU: (tp - 1) / tp of seqs x vocab x 2 bytes
            t += c.p2p(seqs * self.logits_bytes * (p.tp - 1) / p.tp, cross_node=False)
        if self.n_exchange:
            t += self.n_exchange * c.dispatch_combine(tokens / p.tp, hidden=self.hidden, top_k=self.top_k,
                                                      gpus=p.expert_gpus)
        return t

    def hops(self, tokens: float) -> float:
        """The activation hand-offs of one pass through the pipeline."""
        if self.par.pp <= 1:
            return 0.0
        nbytes = tokens * self.hidden * ACT_BYTES
        return (self.hops_inside * self.comm.p2p(nbytes, cross_node=False)
                + self.hops_cross * self.comm.p2p(nbytes, cross_node=True))

    def _group(self, c: StepCost, tokens: float, seqs: float, groups: float) -> tuple[float, float]:
        """(compute and memory seconds without the group model's own all-reduce term, the layout's comm)."""
        t = c.time_s - c.communication_s
        if self.experts is not None and self.par.ep:
            t += (self._experts_of(self.experts, tokens * groups) / self.par.expert_gpus
                  - self._experts_of(self.base, tokens))
        return t, self.communication(tokens, seqs)

    # -- the two steps --------------------------------------------------------------------------------
    def decode(self, batch: float, ctx: int | None = None, *, cached: float | None = None,
               queries: int = 1) -> StepCost:
        key = ("d", batch, ctx, cached, queries)
        hit = self._own.get(key)
        if hit is not None:
            return hit
        p = self.par
        # micro-batches in flight (at most one per stage) and attention groups with sequences (at most one each)
        m = min(float(p.pp), max(batch, 1.0))
        groups = min(float(p.dp), max(batch / m, 1.0))
        b = batch / (m * groups)
        c = self.base.decode(b, ctx, cached=cached, queries=queries)  # kept per base model (perf.memo)
        tokens = b * queries
        t, comm = self._group(c, tokens, b, groups)
        if p.pp > 1:
            # one pass through every stage and its hand-offs; with the pipeline full, ``m`` passes of the slowest
            # stage (the last one also runs the lm_head; each pays the step's overhead)
            hops = self.hops(tokens)
            fixed = self._head(tokens) + self.base.overhead_s
            full = m * ((t + comm - fixed) / p.pp + fixed)
            t = max(t + comm + hops, full) - comm - hops
            comm += hops
        out = self._own[key] = replace(c, time_s=t + comm, communication_s=comm)
        return out

    def prefill(self, batch: float, prompt: int) -> StepCost:
        key = ("p", batch, prompt)
        hit = self._own.get(key)
        if hit is not None:
            return hit
        p = self.par
        if p.dp > 1:
            groups = min(float(p.dp), max(batch, 1.0))
            b = batch / groups
            c = self.base.prefill(b, prompt)
            t, comm = self._group(c, b * prompt, b, groups)
            out = replace(c, time_s=t + comm, communication_s=comm)
        else:
            m = min(float(p.pp), max(batch, 1.0))
            b = batch / m
            c = self.base.prefill(b, prompt)
            t, comm = self._group(c, b * prompt, b, 1.0)
            hop = self.hops(b * prompt)
            out = replace(c, time_s=(t + comm) * (m + p.pp - 1) / p.pp + hop, communication_s=comm + hop)
        self._own[key] = out
        return out

    def draft_time(self, batch: float, ctx: int | None = None, *, cached: float | None = None) -> float:
        p = self.par
        return self.base.draft_time(batch / (p.pp * p.dp), ctx, cached=cached)


def nodes_of(gpus: int, gpus_per_node: int) -> int:
    return max(1, math.ceil(gpus / gpus_per_node))
