"""What ``check`` returns: findings, per-deployment reports (memory fit, speed check), rule
statuses, accuracy evidence, and the result's exit code."""

from __future__ import annotations

from typing import Any, Literal

from ..results import Out, Result
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


class MemoryFit(Out):
    """Weights + KV cache against the memory the engine may use (advisor's accounting)."""

    gpu: str
    gpus: int
    memory_bytes: int  # all GPUs
    memory_utilization: float
    reserve_bytes: int  # all GPUs
    budget_bytes: int  # memory x utilization - reserve
    weights_bytes: int
    weights_source: str
    kv_dtype: str
    kv_bytes_per_token: float  # all layers that cache every token
    concurrency: int
    kv_tokens_per_sequence: int
    kv_bytes: int  # concurrency x one sequence
    free_bytes: int  # budget - weights - KV (negative: does not fit)
    headroom: float  # free / budget
    kv_tokens_basis: str = ""  # why that many tokens per sequence
    max_concurrency: int  # sequences of kv_tokens_per_sequence that fit next to the weights
    max_model_len: int | None = None
    max_model_len_source: str | None = None
    max_model_len_kv_bytes: int | None = None
    max_model_len_that_fits: int | None = None

    @property
    def weights_fit(self) -> bool:
        return self.weights_bytes <= self.budget_bytes

    @property
    def fits(self) -> bool:
        return self.free_bytes >= 0


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
    concurrency: int
    ctx: int
    mode: str
    memory: MemoryFit | None = None
    performance: PerfCheck | None = None
    assumptions: list[str] = []
    notes: list[str] = []


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


