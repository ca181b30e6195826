"""The engine's serving loop around the step model: what a closed loop of requests costs end to end.

The step model (:mod:`.step`) prices the kernels of one forward pass. An engine runs more than its
kernels, and runs them in a loop whose shape its release decides (:class:`~quantadvise.engines.loop.LoopFacts`,
each default cited to the engine source). In the steady state of R requests in flight, each of I prompt
and O output tokens, one *cycle* — the time for the running set to turn over once — holds O decode steps
and the prefill of R prompts:

    cycle = O/τ · step(R) + prefill(R) (+ the prefill passes' own overhead where prefill runs apart)
    step(R) = kernels at the padded batch · (1 + decode_scale)        decode kernels, CUDA-graph padding
            + L · (layer_s + eager_layer_s if past the largest graph)  small kernels per decoder layer
            + pass_s + R · seq_s                                       per pass; per sequence (sampling, host)
            + 2L · (allreduce_s + R · (tp−1)/tp · allreduce_token_s)   tensor-parallel all-reduces
    prefill(R) = kernels of R prompts · (1 + prefill_scale)

and the replica delivers R·O/cycle output tokens/s (Little's law). The engine facts enter as:

- **CUDA-graph padding**: a decode batch runs the graph of the smallest captured size >= R; the linear
  layers are priced at that size (padded rows cost weight reads and math), attention at R;
- **eager steps**: past the largest captured size the step runs without a full graph (``eager_layer_s``);
- **chunked prefill**: vLLM mixes prefill chunks into decode steps under one token budget, so prefill
  adds its kernels to steps that run anyway; SGLang runs each prefill batch of up to its
  ``chunked_prefill_size`` as its own pass, which pays the pass overheads again (and a mixed loop
  whose prefill needs more steps than the O decode steps adds prefill-only steps the same way);
- **KV exhaustion**: at most ``max_seqs`` requests run, and no more than the KV cache holds at the average
  length a running request has (I + O/2); the rest queue (their wait is in TTFT) and the throughput is the
  running set's. Both engines preempt by recomputing a request whose KV no longer fits; sized at the
  average length, the running set is taken to fit, so that recompute is not priced.

The terms (:class:`LoopTerms`) are few and fitted to published end-to-end measurements
(``tools/fit_serving.py``, ``data/serving_terms.yaml``; docs/calibration.md §9) or to the user's own
benchmark files (``calibrate --from-bench``). :func:`cycle` returns the cycle as a base plus each term
times its feature, so the fit and the prediction are the same arithmetic.

Pure: no I/O, no printing.
"""

import math
from dataclasses import field
from datetime import date
from typing import Literal

from pydantic import Field

from ..engines.loop import LoopFacts
from ..results import Out, Strict, record
from .step import StepModel

TERMS = ("layer_s", "pass_s", "seq_s", "eager_layer_s", "prefill_scale", "decode_scale", "allreduce_s",
         "allreduce_token_s")
"""The fitted terms, in the order :func:`cycle` returns their features."""

TERM_WORDS = {
    "decode_kernels": "decode kernels",
    "graph_padding": "CUDA-graph padding",
    "layer_s": "per-layer overhead",
    "pass_s": "per-pass overhead",
    "seq_s": "per-sequence host work",
    "eager_layer_s": "eager steps past the largest CUDA graph",
    "prefill": "prefill",
    "prefill_scale": "prefill beyond its kernels",
    "decode_scale": "decode beyond its kernels",
    "allreduce_s": "all-reduce latency",
    "allreduce_token_s": "all-reduce volume",
}


class LoopTerms(Strict):
    """The end-to-end terms of one engine (or one GPU vendor, or one site's GPU and release), fitted."""

    id: str
    engine: str | None = None  # None: any engine (a vendor's terms)
    vendor: str | None = None  # GPUs of this vendor (nvidia, amd); None: any
    gpu: str | None = None  # a site profile's GPU
    version: str | None = None  # a site profile's engine release
    # non-negative, and below any a serving loop has: a second per layer, pass, sequence or all-reduce, a
    # millisecond per token, 100x the kernels (a site profile is a file anyone can edit: 1e308 made every cycle inf)
    layer_s: float = Field(default=0.0, ge=0, le=1.0)
    pass_s: float = Field(default=0.0, ge=0, le=1.0)
    seq_s: float = Field(default=0.0, ge=0, le=1.0)
    eager_layer_s: float = Field(default=0.0, ge=0, le=1.0)
    prefill_scale: float = Field(default=0.0, ge=0, le=100.0)
    decode_scale: float = Field(default=0.0, ge=0, le=100.0)
    allreduce_s: float = Field(default=0.0, ge=0, le=1.0)
    allreduce_token_s: float = Field(default=0.0, ge=0, le=0.001)
    points: int = 0  # the measurements they were fitted to
    fitted_on: tuple[str, ...] = ()  # the sources (or files) fitted on
    heldout_median_error: float | None = None  # median |error| of output tokens/s on held-out sources (files)
    validated: bool = True  # False: fitted on too little to trust outside it (the label says so)
    uncertainty: float | None = None  # relative, ± around a figure these terms price
    note: str = ""
    source: str
    as_of: date

    def values(self) -> tuple[float, ...]:
        return tuple(float(getattr(self, t)) for t in TERMS)

    def label(self) -> str:
        what = f"{self.points:,} measurement{'s' if self.points != 1 else ''}" if self.points else "no measurement"
        err = (f", held-out median error {self.heldout_median_error:.1%}"
               if self.heldout_median_error is not None else "")
        tag = "" if self.validated else "UNVALIDATED, "
        unc = f", ±{self.uncertainty:.0%}" if self.uncertainty else ""
        return f"{self.id} ({tag}fitted to {what}{err}{unc})"


@record(slots=True)
class EngineLoop:
    """The loop a prediction runs: the release's facts on this GPU and the terms that price it."""

    facts: LoopFacts
    terms: LoopTerms | None  # None: the facts alone (padding, chunking, KV), no fitted overheads
    kv_room_bytes: float | None = None  # KV cache room of the replica, all GPUs (None: no limit applied)

    def label(self) -> str:
        t = self.terms.label() if self.terms is not None else "no fitted terms"
        return f"{self.facts.label()}; terms {t}"


@record(slots=True)
class Cycle:
    """One turnover of the running set (every figure per replica)."""

    running: int  # requests in flight
    limited_by: str  # concurrency | max_num_seqs | KV cache
    padded: int  # the decode batch the CUDA graph runs
    eager: bool
    base_s: float  # decode kernels (at the padded batch) and prefill kernels: the part no term scales
    features: tuple[float, ...]  # per term of TERMS: seconds per unit of that term in one cycle
    parts: dict[str, float] = field(default_factory=dict)  # base split: decode_kernels, graph_padding, prefill
    decode_steps: float = 0.0  # O / tau
    step_features: tuple[float, ...] = ()  # per term: seconds per unit in ONE decode step
    step_base_s: float = 0.0  # one decode step's kernels (padded)
    prefill_base_s: float = 0.0  # the cycle's prefill kernels

    def seconds(self, terms: LoopTerms | None) -> float:
        v = terms.values() if terms is not None else (0.0,) * len(TERMS)
        return self.base_s + sum(a * b for a, b in zip(v, self.features, strict=True))

    def step_s(self, terms: LoopTerms | None) -> float:
        v = terms.values() if terms is not None else (0.0,) * len(TERMS)
        return self.step_base_s + sum(a * b for a, b in zip(v, self.step_features, strict=True))

    def shares(self, terms: LoopTerms | None) -> dict[str, float]:
        """Seconds of one cycle per cause: the kernels (decode, padding, prefill) and each fitted term."""
        out = dict(self.parts)
        if terms is not None:
            for name, a, f in zip(TERMS, terms.values(), self.features, strict=True):
                if a * f > 0:
                    out[name] = a * f
        return out


def running(concurrency: int, facts: LoopFacts, sm: StepModel, kv_room_bytes: float | None,
            avg_len: float) -> tuple[int, str]:
    """(requests in flight, what limits them): the concurrency, the release's ``max_seqs`` per engine instance
    (a data-parallel replica runs ``sm.schedulers`` of them, each admitting that many), or the sequences of
    ``avg_len`` tokens whose KV fits in ``kv_room_bytes`` (pooled over the replica's GPUs)."""
    from ..memory.kvcache import max_sequences

    r, why = concurrency, "concurrency"
    cap = facts.max_seqs * max(1, sm.schedulers)
    if cap < r:
        r, why = cap, "max_num_seqs"
    if kv_room_bytes is not None and avg_len > 0:
        fit = max(1, max_sequences(sm.arch, sm.kv, math.ceil(avg_len), kv_room_bytes, tp=sm.tp))
        if fit < r:
            r, why = fit, "KV cache"
    return r, why


def cycle(sm: StepModel, loop: EngineLoop, *, concurrency: int, prompt: int, output: int, decode_ctx: int,
          queries: int = 1, tokens_per_step: float = 1.0, draft_s: float = 0.0, lockstep: bool = False) -> Cycle:
    """The cycle of ``concurrency`` closed-loop requests of ``prompt`` + ``output`` tokens (module docstring).
    With speculative decoding, ``queries`` tokens per sequence per verification step, ``tokens_per_step``
    accepted, ``draft_s`` the drafting passes of one step. ``lockstep``: synchronous batches — the running
    set is prefilled together (in passes of the token budget, the first tokens with it) and then decoded
    for ``output - 1`` steps; the cycle is then one request's end-to-end latency."""
    f = loop.facts
    r, why = running(concurrency, f, sm, loop.kv_room_bytes, prompt + output / 2)
    pad = f.padded(r)
    eager = f.eager(r)
    c_r = sm.decode(r, decode_ctx, queries=queries)
    kernels = c_r.time_s + draft_s
    padding = 0.0
    if pad > r:
        c_p = sm.decode(pad, decode_ctx, queries=queries)
        padding = max(0.0, c_p.linear_s - c_r.linear_s)
    step_base = kernels + padding
    layers = sm.arch.num_layers
    n_ar = 2 * layers if sm.tp > 1 else 0
    ring = (sm.tp - 1) / sm.tp if sm.tp > 1 else 0.0
    step_f = (layers, 1.0, float(r), layers if eager else 0.0, 0.0, step_base, n_ar, n_ar * r * queries * ring)
    steps = (max(output - 1, 0) if lockstep and prompt else output) / tokens_per_step
    pre = sm.prefill(r, prompt).time_s if prompt else 0.0
    # forward passes the prefill adds: SGLang's separate prefill batches, a synchronous batch's prefill; a
    # mixed loop's prefill-only steps when the prompts need more steps (at the budget left after the decode
    # tokens) than the decode gives
    tokens = r * prompt
    if not prompt:
        passes = 0.0
    elif f.mixed_prefill and not lockstep:
        room = max(1, f.token_budget - r)
        passes = max(0.0, math.ceil(tokens / room) - steps)
    else:
        passes = float(math.ceil(tokens / f.token_budget))
    pass_f = (layers * passes, passes, 0.0, 0.0, pre, 0.0, n_ar * passes, n_ar * tokens * ring)
    feats = tuple(steps * a + b for a, b in zip(step_f, pass_f, strict=True))
    base = steps * step_base + pre
    parts = {"decode_kernels": steps * kernels, "prefill": pre}
    if padding:
        parts["graph_padding"] = steps * padding
    return Cycle(running=r, limited_by=why, padded=pad, eager=eager, base_s=base, features=feats, parts=parts,
                 decode_steps=steps, step_features=step_f, step_base_s=step_base, prefill_base_s=pre)


def bound_by(shares: dict[str, float]) -> str:
    """The cause with the largest share of a cycle, in words."""
    if not shares:
        return ""
    key = max(shares, key=lambda k: shares[k])
    return TERM_WORDS.get(key, key)


def prefill_s(sm: StepModel, loop: EngineLoop, batch: int, prompt: int) -> float:
    """``batch`` prompts' prefill with the loop's terms: the kernels scaled, and the passes it takes
    (``batch x prompt`` tokens at the release's token budget) each paying the pass overheads."""
    if not prompt:
        return 0.0
    t = loop.terms
    pre = sm.prefill(batch, prompt).time_s
    if t is None:
        return pre
    passes = math.ceil(batch * prompt / loop.facts.token_budget)
    layers = sm.arch.num_layers
    n_ar = 2 * layers if sm.tp > 1 else 0
    ring = (sm.tp - 1) / sm.tp if sm.tp > 1 else 0.0
    over = (passes * (layers * t.layer_s + t.pass_s + n_ar * t.allreduce_s)
            + n_ar * batch * prompt * ring * t.allreduce_token_s)
    return pre * (1.0 + t.prefill_scale) + over


class LoopSummary(Out):
    """What the serving loop did to one serving point, for a report: the loop, the running set, and
    each cause's share of a cycle (``bound``: the largest)."""

    loop: str  # the release's loop on this GPU, in words
    terms: str | None  # the fitted terms, in words (None: no terms on file)
    running: int  # requests in flight
    limited_by: str  # concurrency | max_num_seqs | KV cache
    padded_batch: int  # the decode batch the CUDA graph runs
    eager: bool  # past the largest CUDA graph
    cycle_s: float  # one turnover of the running set
    shares: dict[str, float]  # cause -> fraction of the cycle
    bound: str  # the cause with the largest share, in words
    validated: bool = True  # False: the terms are labelled unvalidated
    uncertainty: float | None = None


def summary(loop: EngineLoop, cy: Cycle, cycle_s: float) -> LoopSummary:
    shares = cy.shares(loop.terms)
    total = sum(shares.values()) or 1.0
    t = loop.terms
    return LoopSummary(loop=loop.facts.label(), terms=t.label() if t is not None else None, running=cy.running,
                       limited_by=cy.limited_by, padded_batch=cy.padded, eager=cy.eager, cycle_s=cycle_s,
                       shares={k: round(v / total, 4) for k, v in sorted(shares.items(), key=lambda kv: -kv[1])
                               if v / total >= 5e-5},
                       bound=bound_by(shares), validated=t.validated if t is not None else False,
                       uncertainty=t.uncertainty if t is not None else None)


class SiteFile(Strict):
    """One benchmark file a deployment profile was fitted on or validated against."""

    file: str
    role: Literal["fitted", "held-out"]
    points: int
    median_abs_error: float | None = None  # of output tokens/s, this file's points


class SiteProfile(Strict):
    """A deployment profile (``calibrate --from-bench``): the serving terms of one site's GPUs and engine
    releases, fitted to its own benchmark files; ``--profile site.yaml`` prices with them."""

    kind: Literal["deployment"]
    schema_version: Literal[1] = 1
    id: str
    description: str = ""
    serving: tuple[LoopTerms, ...]
    files: tuple[SiteFile, ...] = ()
