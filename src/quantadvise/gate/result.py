"""What ``check`` returns: findings, per-deployment reports (memory fit, speed check), rule
statuses, accuracy evidence, and the result's exit code."""

import math
from typing import Any, Literal

from pydantic import Field

from ..results import OmitNone, Out, Result
from .rules import SEVERITY_RANK, FailOn, Severity


class GateFinding(Out):
    rule_id: str
    rule: str  # the rule's name
    family: str
    severity: Severity
    title: str
    message: str
    file: str | None = None
    line: int | None = None
    subject: str
    fingerprint: str
    target: str | None = None  # the deployment it concerns (None: the whole repo, e.g. accuracy evidence)
    engine_message: str | None = None  # the engine's own words, where on file
    help_uri: str

    @property
    def location(self) -> str:
        if self.file is None:
            return "-"
        return f"{self.file}:{self.line}" if self.line else self.file


class MemoryFit(OmitNone):
    """The engine's start-up memory arithmetic for one deployment (engines/startup.py, docs/ci.md): the
    KV cache it allocates, whether it starts, and the declared workload against it. Byte counts are
    totals over the GPUs unless named ``_per_gpu`` (the engines compare and log per GPU).

    ``starts`` is the deployment's verdict, not only the memory's: False when any rule that means
    "the engine refuses to start" fired (``refused_by``, rules.REFUSES_START), whichever found it."""

    omit_if_none = ("refused_by",)

    engine: str = "vllm"
    gpu: str
    gpus: int
    memory_bytes: int  # all GPUs
    memory_utilization: float  # the fraction in force: vLLM --gpu-memory-utilization, SGLang --mem-fraction-static
    memory_utilization_flag: str = "--gpu-memory-utilization"
    memory_utilization_from: str = ""
    reserve_bytes: int  # all GPUs: activation peak + non-torch memory + CUDA graphs (SGLang: inside its fraction, 0)
    reserve_from: str = ""
    budget_bytes: int  # weights + KV cache, all GPUs: memory x fraction - reserve
    weights_bytes: int
    weights_source: str
    kv_cache_bytes: int = 0  # what the engine gives the KV cache, all GPUs (budget - weights; <= 0: none)
    kv_cache_bytes_per_gpu: int = 0
    kv_dtype: str
    kv_bytes_per_token: float  # all GPUs, layers that cache every token
    kv_capacity_tokens: int | None = None  # tokens the KV cache holds (every GPU holds its share of each)
    max_model_len: int | None = None
    max_model_len_source: str | None = None
    max_model_len_kv_bytes: int | None = None  # one sequence of max_model_len, per GPU (as the engine compares it)
    max_model_len_that_fits: int | None = None
    sequences_at_max_model_len: int | None = None  # sequences of max_model_len the KV cache holds at once
    max_num_seqs: int | None = None  # the engine's running-sequence cap in force
    max_num_seqs_flag: str = "--max-num-seqs"
    max_num_seqs_source: str | None = None
    starts: bool = True
    refusal: str | None = None  # the engine's own message when it refuses to start (the first refusal found)
    refused_by: list[str] | None = None  # the rules that found it refusing (QA306, QA102 ...); absent when it starts
    # the declared workload (None: nothing declared)
    concurrency: int | None = None
    kv_tokens_per_sequence: int | None = None
    kv_tokens_basis: str = ""
    kv_bytes: int | None = None  # concurrency x one sequence, all GPUs
    free_bytes: int | None = None  # KV cache - kv_bytes (negative: the rest queue)
    headroom: float | None = None  # free / budget
    max_concurrency: int | None = None  # sequences of kv_tokens_per_sequence the KV cache holds at once

    @property
    def weights_fit(self) -> bool:
        return self.kv_cache_bytes > 0

    @property
    def usable_bytes_per_gpu(self) -> float:
        """What weights, KV cache and the runtime reserve share on each GPU (the budget plus the reserve)."""
        return (self.budget_bytes + self.reserve_bytes) / max(self.gpus, 1)

    @property
    def kept_free_bytes_per_gpu(self) -> float:
        """The part of each GPU's share (fraction x memory) the release keeps free after warmup, outside the
        usable bytes: vLLM 0.34.0's extensible KV cache margin (0 where the share is usable whole)."""
        return math.floor(self.memory_bytes / max(self.gpus, 1) * self.memory_utilization) - self.usable_bytes_per_gpu

    @property
    def fits(self) -> bool:
        """The declared workload runs at once (True when none is declared and the engine starts)."""
        return self.starts and (self.free_bytes is None or self.free_bytes >= 0)


class PerfCheck(Out):
    """The deployed scheme priced at the deployed workload, next to bf16 and the recommendation."""

    scheme: str
    kv_dtype: str
    tokens_per_s: float
    step_time_s: float
    bf16_tokens_per_s: float
    speedup_vs_bf16: float
    recommended: str | None = None
    recommended_kv_dtype: str | None = None
    recommended_tokens_per_s: float | None = None
    slowdown_vs_recommended: float | None = None  # recommended / deployed - 1 (0.25 = 25% slower)
    profile: str
    mode: str
    batch: int
    model_note: str = "roofline prediction with the efficiency profile, not a measurement"
    # what priced the deployed scheme's own layers: measured | same-math | composed | proxy | roofline | calibrated |
    # ideal (advisor.speed.curve_basis); roofline / ideal: no measurement of its kernel, so QA201 is a warning
    speed_model: str | None = None
    serving_loop: str | None = None  # the engine's serving loop and the terms that priced it (a site profile's)
    # what the comparisons may assume: bf16's weights (None: not known) and whether the recommendation fits
    bf16_weights_bytes: int | None = None
    bf16_does_not_fit: bool = False  # the recommendation found bf16 cannot hold one sequence
    recommended_native: bool = False  # the recommendation is the checkpoint as shipped
    recommended_fits: bool | None = None
    bf16_unservable: str | None = None  # why bf16 cannot be served on these GPUs: no bf16 comparison (QA201)
    moe_tiles: str | None = None  # the routed experts run the engine's default fused-MoE tiles (QA205), its words


class TargetReport(Out):
    """One deployment checked: an engine command found in a file (or the declaration alone)."""

    label: str
    file: str | None = None
    line: int | None = None
    source: str  # kubernetes, compose, shell, dockerfile, helm-values, yaml, config, flags
    context: str | None = None
    engine: str
    engine_version: str
    engine_version_from: str
    model: str
    model_from: str
    checkpoint: str
    resolved_method: str | None = None
    engine_status: str
    scheme: str | None = None
    scheme_from: str
    declared_scheme: str | None = None
    kv_cache_dtype: str | None = None
    declared_kv_cache_dtype: str | None = None
    gpu: str
    gpus: int
    concurrency: int | None = None  # the sequences priced (None: not priced: the model could not be read, or the
    # engine refuses to start and no workload is declared)
    ctx: int | None = None
    mode: str
    memory: MemoryFit | None = None
    performance: PerfCheck | None = None
    assumptions: list[str] = []
    notes: list[str] = []
    # "group: kernel" for the GEMM kernel the engine runs on each config group (engines/kernels); None where
    # the release has no kernel table on file (or the model was not read). Compared by `check --upgrade-to`
    # (QA112); not in the JSON.
    kernels: list[str] | None = Field(default=None, exclude=True)


class RuleStatus(Out):
    rule_id: str
    rule: str
    severity: Severity
    status: Literal["fail", "pass", "skipped", "off"]
    findings: int = 0
    baselined: int = 0
    reason: str = ""


class TaskEvidence(Out):
    task: str
    n: int
    base_accuracy: float
    quant_accuracy: float
    delta: float
    delta_ci_low: float
    delta_ci_high: float
    flip_rate: float
    kl_mean_nats: float | None = None
    failed: list[str] = []


class GateResult(Result):
    passed: bool
    fail_on: FailOn
    config_file: str | None = None
    paths: list[str] = []
    files_scanned: list[str] = []
    files_skipped: list[str] = []  # "FILE: why" for candidate files no reader took (check -v lists them)
    targets: list[TargetReport] = []
    findings: list[GateFinding] = []
    suppressed: list[GateFinding] = []  # in the baseline
    rules: list[RuleStatus] = []
    accuracy: list[TaskEvidence] = []
    baseline_file: str | None = None
    baseline_written: str | None = None
    notes: list[str] = []
    warnings: list[str] = []

    def counted(self, fail_on: str | None = None) -> list[GateFinding]:
        """Findings at or above ``fail_on`` (default: the result's own)."""
        floor = SEVERITY_RANK[fail_on or self.fail_on]
        return [f for f in self.findings if SEVERITY_RANK[f.severity] >= floor]

    def exit_code(self, fail_on: str | None = None, exit_zero: bool = False) -> int:
        """0 pass, 1 findings at or above ``fail_on``. ``exit_zero`` makes no finding count; it never
        changes what the codes mean (2, could not run, is raised as an error before a result exists)."""
        if exit_zero:
            return 0
        return 1 if self.counted(fail_on) else 0

    def counts(self) -> dict[str, int]:
        out = {"error": 0, "warning": 0, "note": 0}
        for f in self.findings:
            out[f.severity] += 1
        return out


class InitResult(Result):
    path: str
    overwritten: bool
    prefilled: dict[str, Any] = {}
    text: str


