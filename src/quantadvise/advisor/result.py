"""What ``recommend`` returns: the typed :class:`Recommendation` and its parts, and the
:class:`Prediction` of one scheme at a workload (what the CI gate prices a deployment with).

Every piece is a frozen pydantic model; ``Recommendation.model_dump(mode="json")`` is exactly what
``recommend --format json`` prints. ``TraceNode.numbers`` stays a mapping on purpose: each node
records the quantities behind its decision under their own names (documented in docs/recommend.md)
and no renderer reads them; everything a renderer shows is a typed field.
"""

from typing import Any, ClassVar

from pydantic import Field

from ..perf.loop import LoopSummary
from ..perf.queueing import AtLoad
from ..perf.serving import ParetoPoint, Price, SpecInfo
from ..perf.uncertainty import FigureBand
from ..results import OmitNone, Out, Result
from ..scheme.axes import SchemeAxes
from ..workload import Workload
from .layout_result import LayoutSearch

# the statuses of the candidates that were ranked (priced and deployable), best first
RANKED = ("recommended", "runner-up", "ranked-after", "slower")

class TraceNode(Out):
    """One node of the decision tree: its decision in words, the numbers behind it, the reasons."""

    node: str  # native | fit | engine | accuracy | kv | roofline
    decision: str
    numbers: dict[str, Any]
    reasons: list[str] = []


class Uncertainty(FigureBand):
    """Where each predicted figure lies at the model's validated uncertainty (perf.uncertainty): the
    68th percentile of held-out errors of what priced each part of the step, weighted by its time."""

    basis: str = ""  # what priced the scheme's own layers: measured | same-math | composed | proxy | roofline ...


class Tie(Out):
    """Candidates the model cannot tell apart (their tokens/s intervals overlap the winner's), the evidence
    that ordered them, and the benchmark commands that would settle it on the user's GPU."""

    schemes: list[str]  # the winner first
    evidence: str
    commands: dict[str, str]  # scheme -> the engine's benchmark client command at this workload


class Alternative(Out):
    """A candidate as the tree left it: the ranked ones first (in rank order), then the ones a node
    removed. Its speed figures are at ``concurrency`` (the sequences it holds, at most the batch)
    with the ``kv_dtype`` cache."""

    scheme: str
    description: str
    status: str  # recommended | runner-up | ranked-after (as fast as the winner within the tie, or faster, ranked after it by evidence) | slower | vetoed | not-supported | does-not-fit | misses-slo | cannot-run
    reason: str
    native: bool = False  # the checkpoint as shipped
    step_time_s: float | None = None
    tokens_per_s: float | None = None  # output tokens/s, prefill included (perf.serving.serve)
    tokens_per_s_per_gpu: float | None = None
    decode_tokens_per_s: float | None = None  # concurrency x tokens per step / decode step
    prefill_share: float | None = None  # share of GPU time in prefill (None: no prompt)
    itl_s: float | None = None  # mean inter-token latency at ``concurrency`` (perf.serving)
    ttft_s: float | None = None  # continuous batching: under load (queued prefills); sync: the batch's prefill
    e2e_s: float | None = None  # ttft + (output - 1) x itl
    usd_per_mtok: float | None = None  # $ per million output tokens (None: no price known)
    limit: str | None = None  # what stops its concurrency: batch | memory | itl | ttft | e2e
    speedup_vs_bf16: float | None = None  # tokens/s over bf16's at the concurrency bf16 holds (None: bf16 cannot serve)
    weights_bytes: int | None = None
    fits: bool | None = None  # holds the whole batch
    concurrency: int | None = None
    max_concurrency: int | None = None
    kv_dtype: str | None = None
    expected_drop_pct: tuple[float, float] | None = None  # the published accuracy prior
    serving_bound: str | None = None  # the serving loop's largest cost at ``concurrency`` (perf.loop.bound_by)
    cautions: list[str] = []
    uncertainty: Uncertainty | None = None  # low/high of its figures (None: not priced, or the spec sheet)
    # --rate / --users: its replicas and figures at the load at this walk's degree (carried to LoadPlan's layouts,
    # which print it; not part of the alternative's own JSON)
    at_load: AtLoad | None = Field(default=None, exclude=True)


class EngineVerdict(Out):
    """What one engine release does with a candidate's checkpoint (the engine node's finding)."""

    supported: bool
    method: str | None = None  # what the checkpoint declares / the flag to pass
    resolved_method: str | None = None
    scheme_class: str | None = None
    optimized: bool | None = None
    quantization_flag: str | None = None  # value for --quantization (None: auto-detected)
    kv_cache_dtype_flag: str | None = None
    messages: list[str] = []
    why: list[str] = []  # quantadvise's explanation of a refusal, where it says more than the engine's words


class ServedWorkload(OmitNone):
    """The workload as the tree read it (the output side of :class:`~quantadvise.workload.Workload`):
    its keys, then what they imply (the context each sequence holds, the serving mode ``auto``
    resolved to) and the model's resolved id. The serving-target keys are absent unless given."""

    omit_if_none: ClassVar[tuple[str, ...]] = ("ttft_ms", "itl_ms", "e2e_ms", "rate", "users", "usd_per_gpu_hour",
                                               "spec_tokens", "acceptance", "max_gpus", "node")

    model: str
    gpu: str
    gpus: int
    engine: str
    engine_version: str | None
    batch: int
    ctx: int | None
    prompt: int | None
    output: int | None
    mode: str
    task: str
    accuracy_tolerance: float
    memory_utilization: float
    headroom: float
    reserve_gb: float
    kv_dtype: str | None
    candidates: list[str] | None
    profile: str | None
    ideal: bool
    context: int
    serving_mode: str
    model_id: str | None
    # serving targets, present only when given
    ttft_ms: float | None = None
    itl_ms: float | None = None
    e2e_ms: float | None = None
    rate: float | None = None
    users: int | None = None
    usd_per_gpu_hour: float | None = None
    spec_tokens: int | None = None
    acceptance: float | None = None
    max_gpus: int | None = None
    node: str | None = None

    @classmethod
    def of(cls, w: Workload, *, model_id: str | None, engine_version: str | None = None,
           memory_utilization: float | None = None, reserve_gb: float | None = None) -> "ServedWorkload":
        """``memory_utilization`` / ``reserve_gb``: the figures the tree sized with (the engine's own
        when the workload gave none)."""
        data = w.model_dump(mode="json")
        if engine_version is not None:
            data["engine_version"] = engine_version
        for key, value in (("memory_utilization", memory_utilization), ("reserve_gb", reserve_gb)):
            if value is not None:
                data[key] = value
        return cls(**data, context=w.context, serving_mode=w.serving_mode, model_id=model_id)


class SchemeChoice(Out):
    id: str
    description: str
    family: str  # bf16 | weight-only N-bit | WxAy <math>
    axes: SchemeAxes
    native: bool = False  # the published checkpoint served as shipped


class KvChoice(OmitNone):
    """The KV cache dtype the tree chose, what it holds, and the engines' flags for it."""

    omit_if_none: ClassVar[tuple[str, ...]] = ("vllm_kv_cache_dtype", "sglang_kv_cache_dtype")

    dtype: str
    max_concurrency: int
    fits_requested_concurrency: bool
    description: str
    tokens_per_sequence: int
    bytes_per_sequence: int
    bytes_total: int
    vllm_kv_cache_dtype: str | None = None
    sglang_kv_cache_dtype: str | None = None
    alternatives: list[str] = []


class PublishedChoice(Out):
    """The published checkpoint the deploy commands serve (it carries the winning scheme), and where its
    accuracy figure comes from."""

    id: str
    producer: str
    method: str | None
    scheme: str | None
    config_status: str  # full | partial | inferred | not_read (data/checkpoints.yaml)
    accuracy: str  # "99.7% recovery on OpenLLM v1 (source)", or why the generic prior stands
    accuracy_short: str  # the same in a few words, for one line of output
    accuracy_source: str | None  # the card the figure is read from (None: the generic prior)
    expected_drop_pct: tuple[float, float]  # the accuracy drop the tree judged it by
    source: str
    as_of: str


class CheckpointPlan(OmitNone):
    """The checkpoint that carries the scheme and how to produce it."""

    omit_if_none: ClassVar[tuple[str, ...]] = ("online", "published")

    format: str | None
    compressed_tensors_preset: str | None
    summary: str
    alternatives: list[str]
    recipe: str | None
    # the quantization_config that checkpoint's config.json declares: a free-form JSON document by nature
    quantization_config: dict[str, Any] | None
    suggested_path: str
    notes: list[str]
    online: str | None = None  # vLLM's online quantization from the bf16 checkpoint, when it has one
    published: PublishedChoice | None = None  # a published checkpoint that carries it: the commands serve it


class Performance(Out):
    """The winner's predicted speed at the concurrency it holds, with the KV cache dtype it runs, and
    what the prediction rests on. ``tokens_per_s`` includes the prefill in both serving modes:
    ``decode_tokens_per_s x (1 - prefill_share)`` under continuous batching, ``concurrency x output
    tokens / e2e_s`` in synchronous serving (a batch is prefilled, then decoded); ``includes`` says which."""

    step_time_s: float
    tokens_per_s: float
    decode_tokens_per_s: float
    prefill_share: float | None
    includes: str  # what tokens_per_s includes, in words
    concurrency: int
    kv_dtype: str
    ttft_s: float | None
    speedup_vs_bf16: float | None
    tokens_per_s_per_gpu: float
    itl_s: float  # mean inter-token latency at ``concurrency``
    e2e_s: float
    decode_share: float | None  # 1 - prefill_share (None: no prompt)
    limit: str  # what stops the concurrency: batch | memory | itl | ttft | e2e
    bound: str  # the decode step's bound there: memory | compute | communication
    tokens_per_step: float  # per sequence: 1, or 1 + K x A with speculative decoding
    usd_per_mtok: float | None  # $ per million output tokens at ``concurrency`` (None: no price known)
    baseline: str
    vs_runner_up: float | None
    runner_up: str | None
    profile: str
    model_note: str
    speed_model: str
    kernel: str | None = None  # the kernel that runs the scheme's layers and the curve that priced it
    gpus_for_batch: int | None = None  # tensor-parallel degree that holds the whole batch (None: beyond the search)
    uncertainty: Uncertainty | None = None  # low/high of every figure above (None: the spec sheet)
    tie: Tie | None = None  # the candidates within the model's uncertainty of the winner (None: a clear winner)
    serving_loop: LoopSummary | None = None  # the engine's serving loop at ``concurrency``: its terms' shares, the bound


class Target(Out):
    """The serving target the recommendation was asked to meet (docs/recommend.md "Serving targets")."""

    ttft_s: float | None = None
    itl_s: float | None = None
    e2e_s: float | None = None
    max_concurrency: int  # the upper end of each candidate's concurrency (--batch, or the search bound)
    batch_is_bound: bool  # True: --batch was not given; the bound is defaults.MAX_CONCURRENCY_SEARCH


class Layout(Out):
    """One way to serve a load with one scheme: ``replicas`` copies of a ``tp``-GPU tensor-parallel group."""

    scheme: str
    tp: int
    replicas: int
    gpus: int  # tp x replicas
    concurrency: int  # sequences per replica
    tokens_per_s: float  # output tokens/s per replica, at ``concurrency``
    tokens_per_s_per_gpu: float
    requests_per_s: float  # per replica: tokens_per_s / output tokens per request
    itl_s: float
    ttft_s: float | None
    limit: str  # what stops the replica's concurrency
    usd_per_hour: float | None  # gpus x $/GPU-hour
    usd_per_mtok: float | None  # at ``concurrency`` (every GPU busy)
    uncertainty: Uncertainty | None = None  # the candidate's figures at this degree, at the model's uncertainty
    recommended: bool = False
    # --rate only (the load's output tokens/s is known): the share of the replicas' output tokens/s the load
    # uses, and the $ per million output tokens at that load (the GPUs are paid for whether busy or not)
    utilization: float | None = None
    usd_per_mtok_at_load: float | None = None
    # --rate / --users: the replicas above under the load, each at the concurrency the load keeps in flight, its
    # TTFT with the wait for a free slot (perf.queueing)
    at_load: AtLoad | None = None


class LoadPlan(Out):
    """GPUs each scheme needs for a load: the fewest-GPU layout per scheme, fewest first (``options``),
    and every (scheme, tensor-parallel degree) weighed (``layouts``)."""

    rate_per_s: float | None  # requests per second
    users: int | None  # concurrent users (sequences in flight)
    output_tokens_per_s: float | None  # rate x output tokens per request
    tp_degrees: list[int]
    options: list[Layout]
    layouts: list[Layout]


class BenchRunPlan(Out):
    """One candidate's measurement: the server that serves it and the benchmark that measures it."""

    scheme: str
    role: str  # recommended | rival
    concurrency: int
    num_prompts: int
    prompt: int
    output: int
    predicted_tokens_per_s: float
    predicted_ttft_s: float | None = None
    predicted_itl_s: float | None = None
    uncertainty: Uncertainty | None = None  # the predictions' low/high at the model's validated uncertainty (issue 25)
    server: dict[str, str | None]  # engine -> the serve command (None: that engine refuses it)
    bench: dict[str, str | None]  # engine -> the benchmark command against that server
    why_prompts: str = ""


class BenchPlan(Out):
    """``recommend --bench-plan``: the measurements that settle the recommendation on the user's GPU."""

    runs: list[BenchRunPlan]
    checked_against: list[str]  # the benchmark option lists every command was checked against
    validate_commands: dict[str, str]  # engine -> the `quantadvise validate --bench` command that reads the results
    notes: list[str] = []


class Recommendation(Result):
    omit_if_none: ClassVar[tuple[str, ...]] = ("layouts",)
    workload: ServedWorkload
    assumptions: list[str]
    scheme: SchemeChoice
    kv: KvChoice
    trace: list[TraceNode]
    alternatives: list[Alternative]
    engine_args: dict[str, str | None]  # engine -> the command that serves it (None: that engine refuses it)
    checkpoint: CheckpointPlan
    performance: Performance
    target: Target | None = None  # latency budgets / load, when given
    price: Price | None = None  # the $/GPU-hour behind usd_per_mtok (None: no price known)
    speculation: SpecInfo | None = None
    load: LoadPlan | None = None  # with --rate / --users
    frontier: list[ParetoPoint] = []  # with recommend --plot: each ranked candidate across concurrency
    bench_plan: BenchPlan | None = None  # with --bench-plan: the benchmark runs that settle it
    notes: list[str] = []
    warnings: list[str] = []
    layouts: LayoutSearch | None = None  # with a pool (--max-gpus, --node, several --gpu, --layouts); absent without

    @property
    def scheme_id(self) -> str:
        return self.scheme.id


class Prediction(Result):
    """One scheme priced at a workload exactly as the tree prices its candidates."""

    scheme: str
    kv_dtype: str
    gpu: str
    gpus: int
    batch: int
    decode_ctx: int
    mode: str
    step_time_s: float
    seconds_per_token: float  # per output token as the workload experiences it (1 / tokens_per_s, prefill included)
    tokens_per_s: float
    ttft_s: float | None = None
    itl_s: float | None = None  # mean inter-token latency (perf.serving)
    decode_tokens_per_s: float | None = None  # batch / decode step
    prefill_share: float | None = None  # share of GPU time in prefill (None: no prompt)
    profile: str
    model_note: str = "roofline prediction with the efficiency profile, not a measurement"
    speed_model: str = "roofline"  # measured | same-math | composed | proxy | roofline | calibrated | ideal
    kernel: str | None = None  # "w4a16 via MacheteLinearKernel, vLLM 0.33.0, sm90; <curve>" (None: not resolved)
    uncertainty: Uncertainty | None = None  # low/high of the figures (None: the spec sheet)
    serving_loop: LoopSummary | None = None  # the engine's serving loop (perf.loop): what bounds the figures
