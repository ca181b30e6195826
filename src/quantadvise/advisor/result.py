"""What ``recommend`` returns: the typed :class:`Recommendation` and its parts, and the
:class:`Prediction` of one scheme at a workload (what the CI gate prices a deployment with).

Every piece is a frozen pydantic model; ``Recommendation.model_dump(mode="json")`` is exactly what
``recommend --format json`` prints. ``TraceNode.numbers`` stays a mapping on purpose: each node
records the quantities behind its decision under their own names (documented in docs/recommend.md)
and no renderer reads them; everything a renderer shows is a typed field.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..results import OmitNone, Out, Result
from ..scheme import SchemeAxes
from ..workload import Workload


class TraceNode(Out):
    """One node of the decision tree: its decision in words, the numbers behind it, the reasons."""

    node: str  # native | fit | engine | accuracy | kv | roofline
    decision: str
    numbers: dict[str, Any]
    reasons: list[str] = []


class Alternative(Out):
    """A candidate as the tree left it: the ranked ones first (in rank order), then the ones a node
    removed. Its speed figures are at ``concurrency`` (the sequences it holds, at most the batch)
    with the ``kv_dtype`` cache."""

    scheme: str
    description: str
    status: str  # recommended | runner-up | slower | vetoed | not-supported | does-not-fit | cannot-run
    reason: str
    native: bool = False  # the checkpoint as shipped
    step_time_s: float | None = None
    tokens_per_s: float | None = None  # output tokens/s (continuous batching: prefill included)
    decode_tokens_per_s: float | None = None  # concurrency / decode step
    prefill_share: float | None = None  # share of GPU time in prefill (continuous batching)
    ttft_s: float | None = None
    speedup_vs_bf16: float | None = None  # tokens/s over bf16's at the concurrency bf16 holds (None: bf16 cannot serve)
    weights_bytes: int | None = None
    fits: bool | None = None  # holds the whole batch
    concurrency: int | None = None
    max_concurrency: int | None = None
    kv_dtype: str | None = None
    expected_drop_pct: tuple[float, float] | None = None  # the published accuracy prior
    cautions: list[str] = []


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


class ServedWorkload(Out):
    """The workload as the tree read it (the output side of :class:`~quantadvise.workload.Workload`):
    its keys, then what they imply (the context each sequence holds, the serving mode ``auto``
    resolved to) and the model's resolved id."""

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

    @classmethod
    def of(cls, w: Workload, *, model_id: str | None, engine_version: str | None = None) -> ServedWorkload:
        data = w.model_dump(mode="json")
        if engine_version is not None:
            data["engine_version"] = engine_version
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


class CheckpointPlan(OmitNone):
    """The checkpoint that carries the scheme and how to produce it."""

    omit_if_none: ClassVar[tuple[str, ...]] = ("online",)

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


class Performance(Out):
    """The winner's predicted speed at the concurrency it holds, with the KV cache dtype it runs, and
    what the prediction rests on. ``tokens_per_s = decode_tokens_per_s x (1 - prefill_share)``
    under continuous batching; synchronous serving reports decode alone (TTFT apart)."""

    step_time_s: float
    tokens_per_s: float
    decode_tokens_per_s: float
    prefill_share: float | None
    includes: str  # what tokens_per_s includes, in words
    concurrency: int
    kv_dtype: str
    ttft_s: float | None
    speedup_vs_bf16: float | None
    baseline: str
    vs_runner_up: float | None
    runner_up: str | None
    profile: str
    model_note: str
    speed_model: str
    kernel: str | None = None  # the kernel that runs the scheme's layers and the curve that priced it
    gpus_for_batch: int | None = None  # tensor-parallel degree that holds the whole batch (None: beyond the search)


class Recommendation(Result):
    workload: ServedWorkload
    assumptions: list[str]
    scheme: SchemeChoice
    kv: KvChoice
    trace: list[TraceNode]
    alternatives: list[Alternative]
    engine_args: dict[str, str | None]  # engine -> the command that serves it (None: that engine refuses it)
    checkpoint: CheckpointPlan
    performance: Performance
    notes: list[str] = []
    warnings: list[str] = []

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
    seconds_per_token: float  # per output token as the workload experiences it (continuous: prefill included)
    tokens_per_s: float
    ttft_s: float | None = None
    decode_tokens_per_s: float | None = None  # batch / decode step
    prefill_share: float | None = None  # share of GPU time in prefill (continuous batching)
    profile: str
    model_note: str = "roofline prediction with the efficiency profile, not a measurement"
    speed_model: str = "default-efficiency"  # perf.efficiency.MODELS
    kernel: str | None = None  # "w4a16 via MacheteLinearKernel, vLLM 0.33.0, sm90; <curve>" (None: not resolved)
