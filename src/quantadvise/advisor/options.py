"""The tree's inputs as values: each candidate scheme (:class:`Option`) and everything the nodes
read (:class:`Context`: the model, the GPU, the workload, the KV options, the accuracy rules, the
engine releases and the shipped checkpoint as data). No callbacks: the nodes compute engine
verdicts from the engine data.

:func:`rank` is the one ordering of candidates: what each delivers (output tokens/s at the
concurrency it holds), a gap counting only beyond the model's uncertainty; ties broken by evidence — the
native format, a published checkpoint that carries it, the published accuracy prior, the better-measured
basis, the engine's maturity, the sequences held, the weight bytes — never by list order; a
re-quantization whose accuracy range reaches the tolerance ranks after the shipped checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from .. import defaults
from ..errors import QuantAdviseError
from ..evals.priors import AccuracyRule
from ..hardware import GPU
from ..memory.sizing import size_model
from ..model.arch import ModelArch
from ..perf.datapath import datapath
from ..perf.efficiency import Efficiency
from ..perf.step import StepModel
from ..perf.uncertainty import overlap
from ..results import record
from ..scheme.axes import DeployHints, Scheme, TensorQuant
from ..workload import Workload
from .result import EngineVerdict

if TYPE_CHECKING:
    from ..checkpoint.native import Native
    from ..checkpoint.published import Published, Speculator
    from ..checkpoint.quant import CheckpointQuant
    from ..engines.data import EngineData
    from ..engines.kv_checks import KvIssue
    from ..engines.limits import ContextLimit
    from ..engines.startup import StartupFacts
    from ..perf.loop import EngineLoop, LoopSummary
    from ..perf.queueing import AtLoad
    from ..perf.serving import Slo, Speculation

BF16_KV = "kv-bf16"


@record
class KvOption:
    """A KV cache dtype the tree may choose: its quantization (None: the model's 16-bit) and the
    engines' flags for it."""

    kv: TensorQuant | None
    hints: DeployHints


@record
class Candidate:
    """A scheme to weigh, with how it deploys and the efficiency curves that price it; ``checkpoint``
    is set for the shipped checkpoint served as is (the native candidate)."""

    scheme: Scheme
    deploy: DeployHints
    efficiency: Efficiency
    checkpoint: CheckpointQuant | None = None
    cautions: tuple[str, ...] = ()  # what the engine does with it that its figures do not show (default MoE tiles)


@record(frozen=False)
class Option:
    """A candidate scheme as the tree sees it (its state as the nodes judge it)."""

    scheme: Scheme
    deploy: DeployHints
    efficiency: Efficiency
    status: str = "candidate"
    reason: str = ""
    weights_bytes: int = 0
    model: StepModel | None = None
    model_kv: StepModel | None = None  # with the quantized KV cache option
    checkpoint: CheckpointQuant | None = None  # the shipped checkpoint (native candidate only)
    step_s: float = math.inf
    ttft_s: float | None = None
    throughput: float = 0.0  # output tokens/s at the concurrency it holds, prefill included (perf.serving.serve)
    decode_tps: float = 0.0  # decode tokens/s at that concurrency (concurrency / step)
    prefill_share: float | None = None  # share of GPU time spent on prefill (None: no prompt)
    kv_name: str = BF16_KV  # the KV cache dtype it is priced with
    concurrency: int = 0  # sequences it serves at once: min(batch, max_concurrency), or what an SLO allows
    itl_s: float | None = None  # mean inter-token latency at that concurrency (perf.serving.serve)
    e2e_s: float | None = None
    limit: str = ""  # what stops its concurrency: batch | memory | itl | ttft | e2e
    bound: str = ""  # the decode step's bound there: memory | compute | communication
    loop: LoopSummary | None = None  # the engine's serving loop at that concurrency (perf.loop)
    tokens_per_step: float = 1.0  # per sequence (speculative decoding: 1 + K x A)
    max_concurrency: int = 0  # sequences its KV cache holds next to its weights
    max_concurrency_bf16: int = 0
    max_concurrency_quantized: int = 0
    ridge: float | None = None
    cautions: list[str] = field(default_factory=list)
    engine: EngineVerdict | None = None
    family: str = ""
    expected_drop: tuple[float, float] = (0.0, 0.0)  # the published accuracy prior, %-points
    behind_native: bool = False  # a re-quantization whose published range reaches the tolerance
    # the model's validated uncertainty (perf.uncertainty): relative half-widths of the decode step, the
    # delivered tokens/s (decode and prefill by their shares) and the prefill; None: no band (the spec sheet)
    u_step: float | None = None
    u_rate: float | None = None
    u_ttft: float | None = None
    basis: str = ""  # what priced its own layers: measured | same-math | composed | proxy | roofline | calibrated
    source: str = ""  # the library whose table (or curve) priced them: vllm | sglang | trtllm | roofline
    u_own: float | None = None  # the tokens/s half-width from its own layers alone (what tells schemes apart)
    u_own_measured: float | None = None  # the same with its own layers at the measured band
    published: Published | None = None  # a published checkpoint that carries it (advisor.published)
    drop_sources: list[str] = field(default_factory=list)  # the findings behind expected_drop: "rule (source)"
    ties: list[str] = field(default_factory=list)  # ids it ties with within the model's uncertainty (the ranking's)
    at_load: AtLoad | None = None  # --rate / --users: its replicas and figures at the load (perf.queueing)

    @property
    def id(self) -> str:
        return self.scheme.id

    @property
    def native(self) -> bool:
        return self.checkpoint is not None

    @property
    def priced(self) -> bool:
        return self.model is not None and self.throughput > 0


@record(frozen=False)
class Context:
    """What every node reads. ``engine`` is the release the workload deploys on; ``other_engine``
    the other engine, for which the plan also writes a command; ``native`` the checkpoint as
    shipped (None: a 16-bit checkpoint); ``limits`` each engine's context limit for this model."""

    arch: ModelArch
    gpu: GPU
    workload: Workload
    kv_options: dict[str, KvOption]  # preset id -> option; always holds "kv-bf16" and ``quant_kv``
    quant_kv: str  # the quantized KV preset the tree weighs against bf16
    rules: tuple[AccuracyRule, ...]
    engine: EngineData
    other_engine: EngineData | None = None
    model_id: str = ""
    budget_bytes: float = 0.0
    kv_name: str = BF16_KV
    forced_kv: bool = False
    native: Native | None = None
    limits: dict[str, ContextLimit] = field(default_factory=dict)  # engine name -> limit
    model_params: int | None = None
    memo: dict[Any, Any] = field(default_factory=dict)  # engine verdicts, reused when a caller walks many workloads
    # serving targets (docs/recommend.md "Serving targets")
    slo: Slo | None = None  # latency budgets: each candidate runs at the largest concurrency that meets them
    spec: Speculation | None = None  # speculative decoding
    usd_per_gpu_hour: float | None = None  # the price the $/Mtok figures use (None: no price known)
    batch_bound: bool = False  # the batch is the upper end of a concurrency search, not a demand
    frontier: bool = False  # sample each ranked candidate's Pareto frontier (recommend --plot)
    # the engine release's start-up memory facts: its default memory fraction when the workload gives none
    startup: StartupFacts | None = None
    # the engine release's serving loop on this GPU and TP with its fitted terms (None: kernels alone)
    loop: EngineLoop | None = None
    # recommend --bench-plan: engine name -> its release's benchmark options (None: no plan asked for)
    bench_options: dict[str, Any] | None = None
    # engine name -> the message it logs when it runs the 16-bit model in float16 on this GPU (no bfloat16
    # below compute capability 8.0: engines.config_checks.dtype_fallback); the plan then passes --dtype half
    fp16: dict[str, str] = field(default_factory=dict)
    # engine name -> the message it refuses this GPU with whatever the scheme (it gets no command)
    gpu_refused: dict[str, str] = field(default_factory=dict)
    # the published checkpoints of the model as asked (data/checkpoints.yaml, one of
    # defaults.PUBLISHED_PRODUCERS), each with its scheme preset: the plan serves one that carries the winner
    published: tuple[tuple[Published, Scheme], ...] = ()
    draft: Speculator | None = None  # the model's published speculative-decoding draft (data/speculators.yaml)
    kv_issues: tuple[KvIssue, ...] = ()  # known quantized-KV issues of the engines (data/known_issues.yaml)
    # engine name -> its release's option list (``engines.flags.OptionSet``): the plan spells each flag as that
    # release registers it and writes no option it lacks (None / absent: the flag table's spellings)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def platform(self) -> str:
        return self.gpu.platform


_MATURITY = {True: 0, None: 1, False: 2}
# how well a prediction is measured: its own kernel's table first, a composition or a stand-in's curve after
BASIS_RANK = {"measured": 0, "calibrated": 0, "ideal": 0, "same-math": 1, "composed": 2, "proxy": 3, "roofline": 4}


def evidence_key(o: Option) -> tuple[int, int, int, float, float, int, int, int, float, int, str]:
    """How candidates that tie (their intervals overlap: :func:`ties`) are ordered: the native format
    first, then holding the whole batch (memory does not cap it: the rest would queue), a published checkpoint that carries it (served as is, with its producer's evaluation), the
    smaller published accuracy drop (worst case, then best case), the better-measured basis
    (its kernel's own table, then a same-math table, a composition, a stand-in's curve, the roofline), the
    engine's maturity (SGLang's optimized list), more sequences held; only when all of that is equal the
    central estimate of tokens/s, then the fewer weight bytes, the scheme id last. (The sequences held
    are already in the tokens/s each is priced at: they break a tie only after the evidence.)"""
    maturity = _MATURITY.get(o.engine.optimized if o.engine is not None else None, 1)
    return (0 if o.native else 1, 1 if o.limit == "memory" else 0, 0 if o.published is not None else 1,
            o.expected_drop[1], o.expected_drop[0],
            BASIS_RANK.get(o.basis, 4), maturity, -o.concurrency, -round(o.throughput, 6), o.weights_bytes, o.id)


_WHY = ("it is the checkpoint as shipped", "it holds the whole batch", "a published checkpoint carries it (served as is)",
        "its published accuracy drop is smaller", "its published accuracy drop is smaller", "its speed is better measured", "the engine's optimized list has it",
        "it holds more sequences", "every piece of evidence is equal and its central estimate is higher",
        "its weights are smaller", "its id sorts first (every piece of evidence is equal)")


def ties(a: Option, b: Option, *, credit: bool = True) -> bool:
    """Neither delivers more beyond the model's uncertainty of what tells them apart: their tokens/s
    intervals overlap when each is widened by the band of its own layers (:func:`comparison_bands`; less than
    ``defaults.TIE`` apart always tie). ``credit``: the shipped checkpoint counted with its margin (how they
    rank); without it, what each delivers (how a reason words it)."""
    x, y = (ranking_throughput(a), ranking_throughput(b)) if credit else (a.throughput, b.throughput)
    if abs(x - y) <= defaults.TIE * max(x, y):
        return True
    ua, ub = comparison_bands(a, b)
    return overlap(x, ua, y, ub)


def comparison_bands(a: Option, b: Option) -> tuple[float, float]:
    """The half-widths two candidates are compared with: the part of each one's band its own layers carry
    (the attention, the shared 16-bit layers and the rest are priced alike for both and move together);
    when both own layers are priced the same way from the same source (both by same-math tables of one
    library, both composed from one library's tables, both on the roofline with the same efficiencies),
    their errors move together too, and each counts only the lookup's own held-out error."""
    same = a.source == b.source and a.basis == b.basis and a.basis in ("same-math", "composed", "proxy", "roofline")
    if same:
        return a.u_own_measured or 0.0, b.u_own_measured or 0.0
    return a.u_own or 0.0, b.u_own or 0.0


def clearly_slower(o: Option, winner: Option) -> bool:
    """``o`` delivers less than ``winner`` beyond the model's uncertainty and their printed intervals (every
    part of the step) do not overlap either: what ``slower`` means."""
    if not beats(winner, o) or o.throughput >= winner.throughput:
        return False
    return not overlap(winner.throughput, winner.u_rate or 0.0, o.throughput, o.u_rate or 0.0)


def tie_reason(winner: Option, other: Option) -> str:
    """The first piece of evidence that puts ``winner`` ahead of ``other``; where the evidence favours ``other``, it
    ranks later because a candidate ahead of it delivers more beyond the uncertainty (ties are not transitive)."""
    a, b = evidence_key(winner), evidence_key(other)
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y), len(a) - 1)
    if b < a:  # they first differ at i: the evidence there favours `other`
        return f"a candidate ranked before {other.id} delivers more than it beyond the model's uncertainty"
    return _WHY[i]


def ranking_throughput(o: Option) -> float:
    """What a candidate is ranked on: its delivered output tokens/s; the checkpoint as shipped is
    credited ``defaults.NATIVE_MARGIN`` (a re-quantization must be predicted faster by more than the
    speed model's validated error to displace it)."""
    return o.throughput * (1 + defaults.NATIVE_MARGIN) if o.native else o.throughput


def beats(a: Option, b: Option) -> bool:
    """``a`` delivers more than ``b`` beyond the model's uncertainty (their intervals do not overlap)."""
    return ranking_throughput(a) > ranking_throughput(b) and not ties(a, b)


def rank(options: list[Option]) -> list[Option]:
    """Most delivered output tokens/s first (:func:`ranking_throughput`), a speed gap counting only beyond the
    model's uncertainty: each place goes to the best by :func:`evidence_key` of the candidates no remaining
    one :func:`beats` (their tokens/s intervals overlap the fastest one's) — evidence breaks ties, never a
    gap inside the noise. One precedence on top: a re-quantization of a shipped
    checkpoint whose published accuracy range reaches the tolerance (``behind_native``) ranks after the
    checkpoint as shipped, whatever its speed — and only after it: among the other candidates it keeps
    its place by speed. A pure function of the candidates' numbers: the input order never matters."""
    rest = sorted(options, key=lambda o: (-ranking_throughput(o), evidence_key(o)))
    # who beats whom, asked once per pair; a re-quantization that ranks after the shipped checkpoint whatever its speed
    # (``behind_native``) does not keep the checkpoint out of a place either
    beaten = {id(o): {id(x) for x in rest if beats(x, o) and not (o.native and x.behind_native)} for o in rest}
    keys = {id(o): evidence_key(o) for o in rest}
    out: list[Option] = []
    while rest:
        # the candidates no other remaining one beats beyond the uncertainty; evidence picks among them
        left = {id(x) for x in rest}
        top = [o for o in rest if not beaten[id(o)] & left]
        best = min(top, key=lambda o: keys[id(o)])
        out.append(best)
        rest = [o for o in rest if o is not best]
    native = next((o for o in out if o.native), None)
    if native is None:
        return out
    at = out.index(native)
    moved = [o for o in out[:at] if o.behind_native]
    if not moved:
        return out
    kept = [o for o in out[:at] if not o.behind_native]
    return [*kept, native, *moved, *out[at + 1:]]


def ranked_after_native(o: Option, ranked: list[Option]) -> bool:
    """Whether ``o`` sits after the shipped checkpoint because of the precedence in :func:`rank` alone:
    a re-quantization with an accuracy risk (``behind_native``) that its delivered tokens/s would have put
    ahead of the checkpoint as shipped (beyond the tie, the checkpoint's margin credited)."""
    native = next((x for x in ranked if x.native), None)
    return (native is not None and o.behind_native and ranking_throughput(o) > ranking_throughput(native)
            and not ties(o, native))


def family(s: Scheme) -> str:
    """bf16 | weight-only N-bit | WxAy <math>: how the trace and the result name a scheme's kind."""
    if not s.quantizes_weights or s.weight is None:
        return "bf16"
    if s.weight_only or s.activation is None:
        return f"weight-only {s.weight.bits}-bit"
    return f"W{s.weight.bits}A{s.activation.bits} {s.math_format}"


def family_kind(s: Scheme) -> str:
    if not s.quantizes_weights:
        return "bf16"
    return "weight-only" if s.weight_only else "w+a"


def build_options(arch: ModelArch, gpu: GPU, workload: Workload, candidates: Sequence[Candidate],
                  kv_options: dict[str, KvOption], quant_kv: str,
                  cache: dict[tuple[int, int], tuple[int, StepModel, StepModel, str | None]] | None = None,
                  ) -> list[Option]:
    """Size each candidate and build its step models (with a bf16 and with the quantized KV cache);
    a candidate the model cannot run on this GPU is kept, marked ``cannot-run`` with the reason.
    ``cache`` (keyed by candidate and GPU count) lets a caller that walks the tree many times over
    the same candidates reuse the immutable sizes and step models."""
    opts: list[Option] = []
    kv_bf16 = kv_options[BF16_KV].kv
    kv_q = kv_options[quant_kv].kv
    for c in candidates:
        o = Option(scheme=c.scheme, deploy=c.deploy, efficiency=c.efficiency, family=family(c.scheme),
                   checkpoint=c.checkpoint, cautions=list(c.cautions))
        key = (id(c), workload.gpus)
        try:
            hit = cache.get(key) if cache is not None else None
            if hit is None:
                path = datapath(c.scheme, gpu)
                plain = StepModel(arch, c.scheme, gpu, kv=kv_bf16, gpus=workload.gpus, efficiency=c.efficiency,
                                  path=path)
                hit = (size_model(arch, c.scheme).total_bytes, plain, plain.with_kv(kv_q), path.note)
                if cache is not None:
                    cache[key] = hit
            o.weights_bytes, o.model, o.model_kv, note = hit
            if note:
                o.cautions.append(note)
        except QuantAdviseError as exc:
            o.status = "cannot-run"
            o.reason = exc.message
        opts.append(o)
    return opts
