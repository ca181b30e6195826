"""The tree's inputs as values: each candidate scheme (:class:`Option`) and everything the nodes
read (:class:`Context`: the model, the GPU, the workload, the KV options, the accuracy rules, the
engine releases and the shipped checkpoint as data). No callbacks: the nodes compute engine
verdicts from the engine data.

:func:`rank` is the one ordering of candidates: what each delivers (output tokens/s at the
concurrency it holds), near-ties broken by evidence — the native format, the sequences held, the
published accuracy prior, the engine's maturity, the weight bytes — never by list order; a
re-quantization whose accuracy range reaches the tolerance ranks after the shipped checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
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
    from ..perf.serving import Slo, Speculation

BF16_KV = "kv-bf16"


@dataclass(frozen=True)
class KvOption:
    """A KV cache dtype the tree may choose: its quantization (None: the model's 16-bit) and the
    engines' flags for it."""

    kv: TensorQuant | None
    hints: DeployHints


@dataclass(frozen=True)
class Candidate:
    """A scheme to weigh, with how it deploys and the efficiency curves that price it; ``checkpoint``
    is set for the shipped checkpoint served as is (the native candidate)."""

    scheme: Scheme
    deploy: DeployHints
    efficiency: Efficiency
    checkpoint: CheckpointQuant | None = None


@dataclass
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
    published: Published | None = None  # a published checkpoint that carries it (advisor.published)
    drop_sources: list[str] = field(default_factory=list)  # the findings behind expected_drop: "rule (source)"

    @property
    def id(self) -> str:
        return self.scheme.id

    @property
    def native(self) -> bool:
        return self.checkpoint is not None

    @property
    def priced(self) -> bool:
        return self.model is not None and self.throughput > 0


@dataclass
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


def evidence_key(o: Option) -> tuple[int, int, int, float, float, int, int, str]:
    """How two candidates that deliver the same (within the tie) are ordered: the native format
    first, then more sequences held, a published checkpoint that carries it (served as is, with its
    producer's evaluation), the smaller published accuracy drop (worst case, then best case), the
    engine's maturity (SGLang's optimized list), the fewer weight bytes — the scheme id only when
    every piece of evidence is equal."""
    maturity = _MATURITY.get(o.engine.optimized if o.engine is not None else None, 1)
    return (0 if o.native else 1, -o.concurrency, 0 if o.published is not None else 1, o.expected_drop[1],
            o.expected_drop[0], maturity, o.weights_bytes, o.id)


_WHY = ("it is the checkpoint as shipped", "it holds more sequences",
        "a published checkpoint carries it (served as is)", "its published accuracy drop is smaller",
        "its published accuracy drop is smaller", "the engine's optimized list has it", "its weights are smaller",
        "its id sorts first (every piece of evidence is equal)")


def tie_reason(winner: Option, other: Option) -> str:
    """The first piece of evidence that puts ``winner`` ahead of ``other``."""
    a, b = evidence_key(winner), evidence_key(other)
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y), len(a) - 1)
    return _WHY[i]


def ranking_throughput(o: Option) -> float:
    """What a candidate is ranked on: its delivered output tokens/s; the checkpoint as shipped is
    credited ``defaults.NATIVE_MARGIN`` (a re-quantization must be predicted faster by more than the
    speed model's validated error to displace it)."""
    return o.throughput * (1 + defaults.NATIVE_MARGIN) if o.native else o.throughput


def rank(options: list[Option]) -> list[Option]:
    """Most delivered output tokens/s first (:func:`ranking_throughput`). Candidates within
    ``defaults.TIE`` of the fastest one still unplaced form a tie, ordered by :func:`evidence_key`:
    evidence breaks ties, never a speed gap. One precedence on top: a re-quantization of a shipped
    checkpoint whose published accuracy range reaches the tolerance (``behind_native``) ranks after the
    checkpoint as shipped, whatever its speed — and only after it: among the other candidates it keeps
    its place by speed. A pure function of the candidates' numbers: the input order never matters."""
    rest = sorted(options, key=lambda o: (-ranking_throughput(o), evidence_key(o)))
    out: list[Option] = []
    while rest:
        lead = ranking_throughput(rest[0])
        tied = [o for o in rest if ranking_throughput(o) * (1 + defaults.TIE) >= lead]
        out.extend(sorted(tied, key=evidence_key))
        rest = [o for o in rest if o not in tied]
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
    return (native is not None and o.behind_native
            and ranking_throughput(o) > ranking_throughput(native) * (1 + defaults.TIE))


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
                   checkpoint=c.checkpoint)
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
