"""The CI gate: rules with stable ids, findings with file and line, and the exit code.

A deployment (the engine command a repo commits, the ``quantadvise.yaml`` that declares what it
should be) is held to five families of rules:

- QA1xx the engine refuses the deployment or misbehaves with it (what ``inspect`` predicts);
- QA2xx performance: slower than bf16 at the deployed concurrency, much slower than the recommended
  scheme, a method the engine runs unoptimized;
- QA3xx memory: weights + KV cache for the declared concurrency x context against the GPUs;
- QA4xx accuracy: per-sample evidence missing for a scheme below 8 bits, or failing its thresholds;
- QA5xx drift: the checkpoint, the engine flags and the declaration disagree.

Every rule is a :class:`Rule` row in :data:`RULES` (id, name, family, default severity, title,
rationale); docs/ci.md documents each one under an anchor named after its id. A finding is
fingerprinted by rule id + subject — what it is about, never its line — so a baseline survives
edits that move lines.

Pure: the functions here take resolved objects (an engine resolution, a memory fit, predictions,
an accuracy report) and return findings; ``api.check`` does the resolving and the reading.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 1
Severity = Literal["error", "warning", "note"]
FailOn = Literal["error", "warning"]
SEVERITY_RANK: dict[str, int] = {"note": 0, "warning": 1, "error": 2}
DOCS_PAGE = "docs/ci.md"
FINGERPRINT_KEY = "quantadvise/v1"


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)


# -------------------------------------------------------------------------------------------------
# The rules
# -------------------------------------------------------------------------------------------------


class Rule(_Out):
    id: str
    name: str
    family: Literal["engine", "performance", "memory", "accuracy", "drift"]
    severity: Severity
    title: str
    rationale: str

    @property
    def anchor(self) -> str:
        return self.id.lower()

    @property
    def help_uri(self) -> str:
        """The rule's section of docs/ci.md (relative to the repository root)."""
        return f"{DOCS_PAGE}#{self.anchor}"


def _r(id: str, name: str, family: str, severity: str, title: str, rationale: str) -> Rule:
    return Rule(id=id, name=name, family=family, severity=severity, title=title,  # type: ignore[arg-type]
                rationale=" ".join(rationale.split()))


RULES: tuple[Rule, ...] = (
    _r("QA100", "engine-version-not-on-file", "engine", "warning",
       "The engine version in the deployment is not on file",
       "The image tag or pinned package names an engine release quantadvise has no registry for; the "
       "deployment is checked against the closest release on file, whose methods, dispatch and messages "
       "may differ. Add the release (docs/data.md) or pin a release on file."),
    _r("QA101", "engine-refuses-method", "engine", "error",
       "The engine refuses the quantization method",
       "The method the engine resolves (from the checkpoint's quantization_config or --quantization) is not "
       "registered in this release, not allowed on the platform, deprecated, or its parameters sit in a side "
       "file the engine does not read: the server exits at start-up."),
    _r("QA102", "quantization-flag-mismatch", "engine", "error",
       "--quantization contradicts the checkpoint",
       "The checkpoint declares one method and --quantization names another that is neither compatible nor a "
       "requantization: vLLM and SGLang raise at start-up. Drop the flag (the checkpoint is auto-detected) or "
       "pass the checkpoint's method."),
    _r("QA103", "gpu-capability-too-low", "engine", "error",
       "The GPU is too old for the method, a scheme or the KV cache dtype",
       "A method, a compressed-tensors scheme or a KV cache dtype needs a higher compute capability than the "
       "GPU has; the engine refuses it (or, for schemes, finds no kernel)."),
    _r("QA104", "checkpoint-config-rejected", "engine", "error",
       "The engine rejects the checkpoint's quantization_config",
       "A config group matches no kernel scheme, uses an actorder, sparsity or activation combination the "
       "engine refuses, or the model dtype is one the method cannot run: loading fails."),
    _r("QA105", "kv-cache-dtype-refused", "engine", "error",
       "The engine refuses the KV cache dtype",
       "--kv-cache-dtype is not a choice of this release or platform, conflicts with the e4m3 KV scales the "
       "checkpoint carries, or the checkpoint's kv_cache_scheme is one the engine cannot load."),
    _r("QA106", "engine-misbehaves", "engine", "warning",
       "The engine loads the deployment but not as written",
       "The engine starts but does something other than the flags say: a deprecated flag rewritten, an "
       "attention-only config group skipped, a kv_cache_scheme ignored, kernels that need a newer GPU."),
    _r("QA107", "parallelism-mismatch", "engine", "error",
       "Tensor/pipeline parallelism does not match the GPUs or the model",
       "--tensor-parallel-size x --pipeline-parallel-size exceeds the GPUs the container is given, or the "
       "attention heads do not split over the tensor-parallel degree: the engine fails to start."),
    _r("QA108", "invalid-engine-argument", "engine", "error",
       "An engine argument has a value the engine refuses",
       "A flag that matters has a value the engine's argument parser rejects (not an integer, not a number), "
       "so the server does not start."),
    _r("QA109", "deployment-artifact-warning", "engine", "warning",
       "The artifact does not launch what it appears to",
       "A flag given twice, a build ARG used at run time, $VAR in an exec-form CMD, a shell-form CMD appended to "
       "the image's entrypoint, flags in a --config file that is not read: what runs is not what is written."),
    _r("QA110", "unresolved-engine-argument", "engine", "warning",
       "A flag that matters comes from a variable the gate cannot resolve",
       "The value of --quantization, --kv-cache-dtype, the model or a size flag is set at run time (an "
       "environment variable without a default, a command substitution); the gate checks the rest. Give the "
       "variable a default or declare the value in quantadvise.yaml."),
    _r("QA201", "slower-than-bf16", "performance", "error",
       "Predicted slower than bf16 at the deployed concurrency",
       "At this concurrency the quantized scheme is predicted to serve fewer tokens per second than the bf16 "
       "model with the same KV cache: you pay the accuracy cost and lose speed. Typical for weight-only "
       "schemes at large batches, where dequantization sits on a compute-bound path (a roofline model with "
       "the efficiency profile, not a measurement; calibrate with --profile)."),
    _r("QA202", "slower-than-recommended", "performance", "warning",
       "Predicted much slower than the recommended scheme",
       "`quantadvise recommend` for the same model, GPU, engine and workload picks another scheme that is "
       "predicted faster by more than thresholds.max_slowdown_vs_recommended (default 25%)."),
    _r("QA203", "not-optimized", "performance", "warning",
       "The engine runs the method on a not-fully-optimized path",
       "SGLang marks methods outside its optimized list 'not fully optimized'; they load but may run slower "
       "than bf16."),
    _r("QA204", "slow-kernel-forced", "performance", "warning",
       "--quantization forces slower kernels than the checkpoint supports",
       "The checkpoint fits the Marlin kernels, but --quantization awq/gptq forces the plain kernels; drop the "
       "flag or pass the marlin variant."),
    _r("QA301", "weights-do-not-fit", "memory", "error",
       "The weights do not fit in the memory the engine may use",
       "Weights plus the runtime reserve exceed gpu-memory-utilization x GPU memory x GPUs: the engine fails "
       "while loading or has no memory left for the KV cache."),
    _r("QA302", "max-model-len-exceeds-kv-cache", "memory", "error",
       "One sequence of max-model-len tokens does not fit in the KV cache",
       "vLLM refuses to start when the KV cache cannot hold a single sequence of max_model_len tokens "
       "('To serve at least one request with the model's max seq len ...'); without --max-model-len it is the "
       "model's max_position_embeddings (131,072 for Llama 3.1)."),
    _r("QA303", "concurrency-does-not-fit", "memory", "error",
       "The declared concurrency x context does not fit",
       "Weights plus the KV cache for the declared concurrent sequences at their context exceed the budget: "
       "the engine runs fewer at a time, queuing or preempting the rest."),
    _r("QA304", "low-memory-headroom", "memory", "warning",
       "It fits, with less headroom than configured",
       "The share of the memory budget left free after weights and KV cache is below "
       "thresholds.min_memory_headroom; bursts, longer prompts or an engine upgrade will not fit."),
    _r("QA401", "accuracy-evidence-missing", "accuracy", "error",
       "No accuracy evidence for a scheme below 8 bits",
       "Weights, activations or the KV cache are quantized below thresholds.evidence_below_bits (default 8) "
       "and quantadvise.yaml names no per-sample evidence (accuracy.baseline / accuracy.quantized). Below "
       "8 bits accuracy depends on the model, the method and the task; aggregate scores hide flips."),
    _r("QA402", "accuracy-threshold-failed", "accuracy", "error",
       "The accuracy evidence fails a threshold",
       "Per task, the accuracy drop, the flip rate (answers that changed correctness, arXiv:2407.09141), the "
       "mean KL divergence or the sample count exceeds the limit set in quantadvise.yaml, or a task the "
       "thresholds name is missing from the evidence."),
    _r("QA403", "accuracy-check-skipped", "accuracy", "warning",
       "An accuracy threshold could not be checked",
       "A limit is set (max_kl) but the evidence cannot answer it (no log-probs on both sides)."),
    _r("QA501", "scheme-drift", "drift", "error",
       "The served scheme is not the declared one",
       "quantadvise.yaml declares one scheme, but the checkpoint (or --quantization) serves weights or "
       "activations of another number format or bit width. The evidence and the sizing behind the "
       "declaration do not describe what runs."),
    _r("QA502", "scheme-variant-drift", "drift", "warning",
       "The served scheme is a variant of the declared one",
       "Same number formats and bit widths, different details (group size, symmetry, static/dynamic scales, "
       "checkpoint layout): accuracy evidence for one does not strictly cover the other."),
    _r("QA503", "kv-cache-drift", "drift", "error",
       "The KV cache dtype served is not the declared one",
       "The KV cache dtype the engine will use (--kv-cache-dtype, or what 'auto' becomes with this "
       "checkpoint) differs from quantadvise.yaml's kv_cache_dtype: memory, speed and accuracy differ."),
    _r("QA504", "model-drift", "drift", "warning",
       "The engine serves a different model than declared",
       "The model in the engine command is not the model quantadvise.yaml names; the gate checks the "
       "declared one."),
    _r("QA505", "workload-drift", "drift", "warning",
       "The engine limits contradict the declared workload",
       "The declared concurrency exceeds --max-num-seqs (the rest queue), the declared context exceeds "
       "--max-model-len (longer requests are rejected), or the declared GPU count is not the "
       "tensor x pipeline parallel degree the command sets."),
    _r("QA506", "engine-drift", "drift", "warning",
       "The engine or its version differs from the declaration",
       "quantadvise.yaml declares one engine or release and the image tag / pinned package says another."),
)
RULE_BY_ID: dict[str, Rule] = {r.id: r for r in RULES}
FAMILY_PREFIX = {"engine": "QA1", "performance": "QA2", "memory": "QA3", "accuracy": "QA4", "drift": "QA5"}

# engine.Finding.kind -> rule id ("info" kinds that change nothing are notes on the target, no rule)
KIND_RULES: dict[str, str] = {
    "unknown_method": "QA101", "platform_unsupported": "QA101", "deprecated_method": "QA101",
    "config_in_side_file": "QA101",
    "method_mismatch": "QA102",
    "capability_too_low": "QA103", "scheme_capability_too_low": "QA103", "kv_dtype_capability": "QA103",
    "block_static_activations": "QA104", "act_dtype_unsupported": "QA104", "ct_no_scheme": "QA104",
    "ct_sparsity_rejected": "QA104", "ct_actorder_rejected": "QA104", "ct_nvfp4_activation_mismatch": "QA104",
    "kv_dtype_unknown": "QA105", "kv_dtype_platform": "QA105", "fp8_e5m2_with_fp8_checkpoint": "QA105",
    "kv_cache_scheme_unsupported": "QA105", "kv_cache_scheme_strategy": "QA105",
    "kv_cache_scheme_symmetric": "QA105", "kv_cache_scheme_dynamic": "QA105",
    "fp8_online_deprecated": "QA106", "deprecated_method_allowed": "QA106", "ct_attention_group_skipped": "QA106",
    "kv_cache_scheme_ignored": "QA106", "kernel_capability": "QA106",
    "not_optimized": "QA203",
    "marlin_forced_off": "QA204",
}
# the engine flag a finding is about (its line is the annotation's line)
_KIND_FLAG: dict[str, tuple[str, ...]] = {
    "method_mismatch": ("quantization",), "unknown_method": ("quantization", "model"),
    "deprecated_method": ("quantization", "model"), "platform_unsupported": ("quantization", "model"),
    "capability_too_low": ("quantization", "model"), "fp8_online_deprecated": ("quantization",),
    "marlin_forced_off": ("quantization",), "not_optimized": ("quantization", "model"),
    "act_dtype_unsupported": ("dtype", "model"),
    "kv_dtype_unknown": ("kv_cache_dtype",), "kv_dtype_platform": ("kv_cache_dtype",),
    "kv_dtype_capability": ("kv_cache_dtype",), "fp8_e5m2_with_fp8_checkpoint": ("kv_cache_dtype",),
}


def rule_for_kind(kind: str, severity: str) -> str | None:
    """The gate rule an engine finding maps to; unknown kinds by severity (error QA104, warning
    QA106); informational kinds map to none."""
    if kind in KIND_RULES:
        return KIND_RULES[kind]
    return {"error": "QA104", "warning": "QA106"}.get(severity)


def fingerprint(rule_id: str, subject: str) -> str:
    """Stable id of a finding: rule + subject (what it is about), never the line it is on."""
    return hashlib.sha256(f"{rule_id}\x00{subject}".encode()).hexdigest()[:24]


# -------------------------------------------------------------------------------------------------
# Results
# -------------------------------------------------------------------------------------------------


class GateFinding(_Out):
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


class MemoryFit(_Out):
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


class PerfCheck(_Out):
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


class TargetReport(_Out):
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


class RuleStatus(_Out):
    rule_id: str
    rule: str
    severity: Severity
    status: Literal["fail", "pass", "skipped", "off"]
    findings: int = 0
    baselined: int = 0
    reason: str = ""


class TaskEvidence(_Out):
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


class GateResult(_Out):
    schema_version: int = SCHEMA_VERSION
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


class InitResult(_Out):
    schema_version: int = SCHEMA_VERSION
    path: str
    overwritten: bool
    prefilled: dict[str, Any] = {}
    text: str


# -------------------------------------------------------------------------------------------------
# Collecting findings
# -------------------------------------------------------------------------------------------------


# engine field -> the declaration key that states the same thing
_DECLARED = {"quantization": "quantization", "kv_cache_dtype": "kv_cache_dtype", "model": "model",
             "max_num_seqs": "workload.concurrency", "max_model_len": "workload.ctx", "gpu": "gpu",
             "tensor_parallel_size": "gpus", "engine_version": "engine_version", "engine": "engine",
             "concurrency": "workload.concurrency", "ctx": "workload.ctx", "gpus": "gpus",
             "gpu_memory_utilization": "gpu_memory_utilization", "accuracy": "accuracy"}


@dataclass(frozen=True)
class Site:
    """Where a target's findings point: the engine command's flag lines, else the declaration's."""

    key: str  # stable part of every subject: "k8s/deploy.yaml#Deployment/x container vllm" (no line)
    label: str
    file: str | None = None
    line: int | None = None
    flag_lines: Mapping[str, int] = field(default_factory=dict)
    config_file: str | None = None
    config_lines: Mapping[str, int] = field(default_factory=dict)

    def at(self, *fields: str, declared: bool = False) -> tuple[str | None, int | None]:
        """(file, line) of the first of ``fields`` found: an engine flag's line, else (or first, with
        ``declared``) the config key's line, else the command's line / the config file."""
        order = ("config", "flags") if declared else ("flags", "config")
        for where in order:
            for f in fields:
                if where == "flags" and f in self.flag_lines and self.file is not None:
                    return self.file, self.flag_lines[f]
                key = _DECLARED.get(f, f)
                if where == "config" and key in self.config_lines and self.config_file is not None:
                    return self.config_file, self.config_lines[key]
        if self.file is not None:
            return self.file, self.line
        if self.config_file is not None:
            return self.config_file, self.config_lines.get("model") or None
        return None, None


class Findings:
    """Accumulates findings and which rules ran, applying severity overrides (``off`` drops a rule)."""

    def __init__(self, overrides: Mapping[str, str] | None = None):
        self.overrides = dict(overrides or {})
        self.items: list[GateFinding] = []
        self.ran: set[str] = set()
        self.skipped: dict[str, str] = {}
        self._seen: set[str] = set()

    def ran_rules(self, *rule_ids: str) -> None:
        self.ran.update(rule_ids)

    def skip(self, rule_id: str, reason: str) -> None:
        self.skipped.setdefault(rule_id, reason)

    def add(self, rule_id: str, message: str, *, subject: str, file: str | None = None, line: int | None = None,
            target: str | None = None, engine_message: str | None = None) -> None:
        rule = RULE_BY_ID[rule_id]
        self.ran.add(rule_id)
        sev = self.overrides.get(rule_id, rule.severity)
        if sev == "off":
            return
        fp = fingerprint(rule_id, subject)
        if fp in self._seen:  # the same thing reported twice (two flags on one line): once is enough
            return
        self._seen.add(fp)
        self.items.append(GateFinding(
            rule_id=rule_id, rule=rule.name, family=rule.family, severity=sev, title=rule.title,  # type: ignore[arg-type]
            message=" ".join(message.split()), file=file, line=line, subject=subject, fingerprint=fp, target=target,
            engine_message=engine_message, help_uri=rule.help_uri,
        ))

    def statuses(self, suppressed: Iterable[GateFinding] = ()) -> list[RuleStatus]:
        active: dict[str, int] = {}
        for f in self.items:
            active[f.rule_id] = active.get(f.rule_id, 0) + 1
        base: dict[str, int] = {}
        for f in suppressed:
            base[f.rule_id] = base.get(f.rule_id, 0) + 1
        out = []
        for r in RULES:
            sev = self.overrides.get(r.id, r.severity)
            if sev == "off":
                out.append(RuleStatus(rule_id=r.id, rule=r.name, severity=r.severity, status="off",
                                      reason="turned off in quantadvise.yaml (rules:)"))
                continue
            n, b = active.get(r.id, 0), base.get(r.id, 0)
            if n:
                status, reason = "fail", ""
            elif r.id in self.ran or b:
                status, reason = "pass", (f"{b} finding(s) in the baseline" if b else "")
            else:
                status, reason = "skipped", self.skipped.get(r.id, "not applicable to this deployment")
            out.append(RuleStatus(rule_id=r.id, rule=r.name, severity=sev, status=status,  # type: ignore[arg-type]
                                  findings=n, baselined=b, reason=reason))
        return out


def split_baseline(findings: list[GateFinding], known: set[str]) -> tuple[list[GateFinding], list[GateFinding]]:
    """(new findings, findings whose fingerprint is in the baseline)."""
    new = [f for f in findings if f.fingerprint not in known]
    old = [f for f in findings if f.fingerprint in known]
    return new, old


def sort_findings(findings: list[GateFinding]) -> list[GateFinding]:
    return sorted(findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.rule_id, f.file or "", f.line or 0,
                                           f.subject))


# -------------------------------------------------------------------------------------------------
# QA1xx: the engine
# -------------------------------------------------------------------------------------------------


def engine_findings(out: Findings, site: Site, findings: Iterable[Any], engine_label: str) -> list[str]:
    """Map an engine resolution's findings (``engines.Finding``) to rules; returns the notes for
    informational ones."""
    out.ran_rules("QA101", "QA102", "QA103", "QA104", "QA105", "QA106", "QA203", "QA204")
    notes = []
    for f in findings:
        rid = rule_for_kind(f.kind, f.severity)
        if rid is None:
            notes.append(f"{engine_label}: {f.message}")
            continue
        file, line = site.at(*_KIND_FLAG.get(f.kind, ("quantization", "kv_cache_dtype", "model")))
        out.add(rid, f"{engine_label}: {f.message}", subject=f"{site.key}|{f.kind}|{f.subject or ''}", file=file,
                line=line, target=site.label, engine_message=f.engine_message)
    return notes


def parallelism_findings(out: Findings, site: Site, *, tp: int, pp: int, gpus_given: int | None,
                         split_error: str | None) -> None:
    out.ran_rules("QA107")
    if gpus_given is not None and tp * pp > gpus_given:
        file, line = site.at("tensor_parallel_size", "pipeline_parallel_size", "gpu_count")
        given_at = f" (line {site.flag_lines['gpu_count']})" if "gpu_count" in site.flag_lines else ""
        out.add("QA107", f"tensor-parallel-size {tp} x pipeline-parallel-size {pp} = {tp * pp} GPUs, but the "
                f"container is given {gpus_given}{given_at}: the engine cannot place its workers",
                subject=f"{site.key}|gpus", file=file, line=line, target=site.label)
    if split_error:
        file, line = site.at("tensor_parallel_size", "gpus")
        out.add("QA107", split_error, subject=f"{site.key}|tp-split", file=file, line=line, target=site.label)


_REFUSE = "the engine would refuse it"


def artifact_findings(out: Findings, site: Site, warnings: Iterable[str], unresolved: Mapping[str, str]) -> None:
    """An invocation's parse warnings (QA108 when the engine would refuse the value, else QA109) and
    flags that matter whose value is unresolved (QA110)."""
    import re

    out.ran_rules("QA108", "QA109", "QA110")
    for w in warnings:
        m = re.search(r"line (\d+)", w)
        line = int(m.group(1)) if m else site.line
        text = re.sub(r"^.*?: line \d+: ", "", w)
        rid = "QA108" if _REFUSE in w else "QA109"
        out.add(rid, text, subject=f"{site.key}|{text}", file=site.file, line=line, target=site.label)
    for name, raw in unresolved.items():
        file, line = site.at(name)
        out.add("QA110", f"{name.replace('_', '-')} is '{raw}', set at run time: not checked (give the variable a "
                "default in the artifact or declare the value in quantadvise.yaml)",
                subject=f"{site.key}|unresolved|{name}", file=file, line=line, target=site.label)


# -------------------------------------------------------------------------------------------------
# QA2xx: performance
# -------------------------------------------------------------------------------------------------

TIE = 0.005  # predictions within 0.5% are a tie (the advisor's TIE)


def performance_findings(out: Findings, site: Site, perf: PerfCheck, *, max_slowdown: float | None) -> None:
    out.ran_rules("QA201")
    where = site.at("quantization", "model")
    note = perf.model_note
    if perf.speedup_vs_bf16 < 1 - TIE:
        out.add("QA201", f"{perf.scheme} is predicted at {perf.tokens_per_s:,.0f} tokens/s vs "
                f"{perf.bf16_tokens_per_s:,.0f} for bf16 weights ({perf.speedup_vs_bf16:.2f}x) at {perf.batch} "
                f"concurrent sequences, KV {perf.kv_dtype}, {perf.mode} batching ({note})"
                + (f"; {perf.recommended} is the recommended scheme here" if perf.recommended else ""),
                subject=f"{site.key}|slower-than-bf16", file=where[0], line=where[1], target=site.label)
    if max_slowdown is None:
        out.skip("QA202", "thresholds.max_slowdown_vs_recommended is off")
        return
    if perf.slowdown_vs_recommended is None or perf.recommended is None:
        out.skip("QA202", "no recommendation for this workload")
        return
    out.ran_rules("QA202")
    if perf.slowdown_vs_recommended > max_slowdown + 1e-12:
        out.add("QA202", f"{perf.scheme} ({perf.kv_dtype}) is predicted {perf.slowdown_vs_recommended + 1:.2f}x "
                f"slower than the recommended {perf.recommended} ({perf.recommended_kv_dtype}): "
                f"{perf.tokens_per_s:,.0f} vs {perf.recommended_tokens_per_s:,.0f} tokens/s at {perf.batch} "
                f"concurrent sequences (limit {max_slowdown:.0%} slower; {note}; `quantadvise recommend` shows "
                "the tree)",
                subject=f"{site.key}|slower-than-recommended", file=where[0], line=where[1], target=site.label)


# -------------------------------------------------------------------------------------------------
# QA3xx: memory
# -------------------------------------------------------------------------------------------------


def memory_fit(
    *,
    gpu: str,
    gpus: int,
    gpu_memory_bytes: int,
    memory_utilization: float,
    reserve_bytes_per_gpu: int,
    weights_bytes: int,
    weights_source: str,
    kv_dtype: str,
    kv_bytes_per_token: float,
    sequence_bytes: Any,  # tokens -> KV bytes of one sequence (sliding windows included)
    concurrency: int,
    kv_tokens_per_sequence: int,
    max_model_len: int | None = None,
    max_model_len_source: str | None = None,
    kv_tokens_basis: str = "",
) -> MemoryFit:
    """The advisor's fit arithmetic for a deployed configuration: budget = memory x utilization x GPUs
    - reserve x GPUs; need = weights + concurrency x one sequence's KV."""
    memory = gpu_memory_bytes * gpus
    budget = gpu_memory_bytes * memory_utilization * gpus - reserve_bytes_per_gpu * gpus
    per_seq = sequence_bytes(kv_tokens_per_sequence)
    kv = per_seq * concurrency
    free = budget - weights_bytes - kv
    room = budget - weights_bytes
    max_conc = max(0, math.floor(room / per_seq)) if per_seq > 0 else concurrency
    mml_bytes = fits_len = None
    if max_model_len is not None:
        mml_bytes = math.ceil(sequence_bytes(max_model_len))
        if mml_bytes > room:
            lo, hi = 0, max_model_len  # largest length whose one sequence fits (sequence_bytes grows with it)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if sequence_bytes(mid) <= room:
                    lo = mid
                else:
                    hi = mid - 1
            fits_len = lo
    return MemoryFit(
        gpu=gpu, gpus=gpus, memory_bytes=memory, memory_utilization=memory_utilization,
        reserve_bytes=reserve_bytes_per_gpu * gpus, budget_bytes=math.floor(budget), weights_bytes=weights_bytes,
        weights_source=weights_source, kv_dtype=kv_dtype, kv_bytes_per_token=kv_bytes_per_token,
        concurrency=concurrency, kv_tokens_per_sequence=kv_tokens_per_sequence, kv_tokens_basis=kv_tokens_basis,
        kv_bytes=math.ceil(kv),
        free_bytes=math.floor(free), headroom=free / budget if budget > 0 else -math.inf, max_concurrency=max_conc,
        max_model_len=max_model_len, max_model_len_source=max_model_len_source, max_model_len_kv_bytes=mml_bytes,
        max_model_len_that_fits=fits_len,
    )


def _gb(n: float) -> str:
    return f"{n / 1e9:,.2f} GB"


def memory_findings(out: Findings, site: Site, m: MemoryFit, *, engine: str, min_headroom: float | None) -> None:
    out.ran_rules("QA301")
    budget = (f"{_gb(m.budget_bytes)} budget ({m.gpus} x {m.gpu}, gpu-memory-utilization {m.memory_utilization:g}, "
              f"{_gb(m.reserve_bytes)} runtime reserve)")
    if not m.weights_fit:
        file, line = site.at("gpu_memory_utilization", "tensor_parallel_size", "model")
        out.add("QA301", f"the weights alone ({_gb(m.weights_bytes)}, {m.weights_source}) exceed the {budget}: more "
                "GPUs (--tensor-parallel-size), a smaller scheme, or a higher gpu-memory-utilization",
                subject=f"{site.key}|weights", file=file, line=line, target=site.label)
        for rid in ("QA302", "QA303", "QA304"):
            out.skip(rid, "the weights alone do not fit (QA301)")
        return  # nothing else fits either; one finding says it
    out.ran_rules("QA303")
    if m.max_model_len is not None and engine == "vllm":
        out.ran_rules("QA302")
        if m.max_model_len_kv_bytes is not None and m.max_model_len_kv_bytes > m.budget_bytes - m.weights_bytes:
            file, line = site.at("max_model_len", "model")
            out.add("QA302", f"one sequence of max-model-len {m.max_model_len:,} tokens ({m.max_model_len_source}) "
                    f"needs {_gb(m.max_model_len_kv_bytes)} of {m.kv_dtype} KV cache, but only "
                    f"{_gb(m.budget_bytes - m.weights_bytes)} is left after {_gb(m.weights_bytes)} of weights in the "
                    f"{budget}: vLLM refuses to start; the longest that fits is about "
                    f"{m.max_model_len_that_fits or 0:,} tokens (set --max-model-len)",
                    subject=f"{site.key}|max-model-len", file=file, line=line, target=site.label)
    elif engine != "vllm":
        out.skip("QA302", "the max-model-len start-up check is vLLM's")
    else:
        out.skip("QA302", "no engine command (max-model-len unknown)")
    if not m.fits:
        file, line = site.at("max_num_seqs", "concurrency", "model")
        basis = f" ({m.kv_tokens_basis})" if m.kv_tokens_basis else ""
        out.add("QA303", f"{m.concurrency} sequences x {m.kv_tokens_per_sequence:,} tokens{basis} need "
                f"{_gb(m.kv_bytes)} of {m.kv_dtype} KV cache next to {_gb(m.weights_bytes)} of weights: "
                f"{_gb(m.weights_bytes + m.kv_bytes)} in a {budget}; {m.max_concurrency} fit at a time",
                subject=f"{site.key}|concurrency", file=file, line=line, target=site.label)
        out.skip("QA304", "the declared concurrency does not fit at all (QA303)")
        return
    if min_headroom is None:
        out.skip("QA304", "thresholds.min_memory_headroom is not set")
        return
    out.ran_rules("QA304")
    if m.headroom < min_headroom - 1e-12:
        file, line = site.at("gpu_memory_utilization", "max_num_seqs", "concurrency", "model")
        out.add("QA304", f"{_gb(m.weights_bytes)} weights + {_gb(m.kv_bytes)} KV ({m.concurrency} x "
                f"{m.kv_tokens_per_sequence:,} tokens, {m.kv_dtype}) leave {_gb(m.free_bytes)} free of the {budget}: "
                f"{m.headroom:.1%} headroom < {min_headroom:.0%} required",
                subject=f"{site.key}|headroom", file=file, line=line, target=site.label)


# -------------------------------------------------------------------------------------------------
# QA4xx: accuracy
# -------------------------------------------------------------------------------------------------


def evidence_required(out: Findings, site: Site, *, scheme: str, bits: float | None, below: int,
                      evidence: bool) -> None:
    out.ran_rules("QA401")
    if bits is None or bits >= below or evidence:
        return
    file, line = site.at("quantization", "model", declared=True)
    out.add("QA401", f"{scheme} quantizes to {bits:g} bits (< {below}) and quantadvise.yaml names no accuracy "
            "evidence: add accuracy.baseline and accuracy.quantized (per-sample results, e.g. lm-eval "
            "--log_samples) with thresholds", subject=f"{site.key}|evidence|{scheme}", file=file, line=line,
            target=site.label)


def accuracy_findings(out: Findings, checks: Iterable[Any], files: Mapping[str, str], config_file: str | None,
                      config_lines: Mapping[str, int]) -> None:
    """``AccuracyCheck`` rows -> QA402 (fail) / QA403 (skipped); ``files`` maps task -> evidence file."""
    out.ran_rules("QA402", "QA403")
    for c in checks:
        if c.status == "pass":
            continue
        task_key = f"accuracy.tasks.{c.task}"
        file = files.get(c.task)
        line = None
        if file is None and config_file is not None:
            file = config_file
            line = config_lines.get(task_key) or config_lines.get("accuracy")
        rid = "QA402" if c.status == "fail" else "QA403"
        out.add(rid, f"task {c.task}: {c.message}", subject=f"accuracy|{c.task}|{c.check}", file=file, line=line)


# -------------------------------------------------------------------------------------------------
# QA5xx: drift
# -------------------------------------------------------------------------------------------------


def scheme_key(scheme: Any) -> tuple[Any, ...]:
    """What a scheme is at the level drift cares about: the kind of number (integer, float, lookup
    table) and the bits of the weights and of the activations (None = 16-bit). Signed and
    zero-point integers are one kind: W4A16 and AWQ differ in detail, not in kind."""
    from ..formats import get_format

    def one(t: Any) -> tuple[str, int] | None:
        if t is None or not t.is_quantized:
            return None
        f = get_format(t.format)
        return ("integer" if f.is_integer else "float" if f.is_float else f.kind, f.bits)

    return one(scheme.weight), one(scheme.activation)


def describe_key(key: tuple[Any, ...]) -> str:
    w, a = key
    if w is None:
        return "16-bit weights"
    text = f"{w[1]}-bit {w[0]} weights"
    return text + (f", {a[1]}-bit {a[0]} activations" if a else ", 16-bit activations")


def scheme_drift(out: Findings, site: Site, *, declared_id: str, declared: Any, served_id: str, served: Any,
                 served_from: str) -> None:
    out.ran_rules("QA501", "QA502")
    if declared_id == served_id:
        return
    dk, sk = scheme_key(declared), scheme_key(served)
    file, line = site.at("quantization", "model")
    decl_at = f" (quantadvise.yaml line {site.config_lines['quantization']})" if "quantization" in site.config_lines \
        else ""
    if dk != sk:
        out.add("QA501", f"declared quantization {declared_id}{decl_at} ({describe_key(dk)}) but {served_from} serves "
                f"{served_id} ({describe_key(sk)})", subject=f"{site.key}|scheme", file=file, line=line,
                target=site.label)
    else:
        out.add("QA502", f"declared quantization {declared_id}{decl_at} but {served_from} serves {served_id}: same "
                f"{describe_key(sk)}, different details ({served.description or served_id})",
                subject=f"{site.key}|scheme-variant", file=file, line=line, target=site.label)


def kv_drift(out: Findings, site: Site, *, declared: str, served: str, served_from: str,
             declared_as: str | None = None) -> None:
    """``declared`` and ``served`` are KV preset ids; ``declared_as`` is the value as written."""
    out.ran_rules("QA503")
    if declared == served:
        return
    if declared_as and declared_as != declared:
        declared = f"{declared_as} ({declared})"
    file, line = site.at("kv_cache_dtype", "model")
    decl_at = f" (quantadvise.yaml line {site.config_lines['kv_cache_dtype']})" if "kv_cache_dtype" in \
        site.config_lines else ""
    out.add("QA503", f"declared kv_cache_dtype {declared}{decl_at} but the engine will use {served} ({served_from})",
            subject=f"{site.key}|kv", file=file, line=line, target=site.label)


def model_drift(out: Findings, site: Site, *, declared: str, served: str) -> None:
    out.ran_rules("QA504")
    if declared.strip().strip("/").lower() == served.strip().strip("/").lower():
        return
    file, line = site.at("model")
    out.add("QA504", f"the command serves '{served}' but quantadvise.yaml declares model '{declared}' (checked)",
            subject=f"{site.key}|model", file=file, line=line, target=site.label)


def workload_drift(out: Findings, site: Site, *, concurrency: int | None, max_num_seqs: int | None,
                   ctx: int | None, max_model_len: int | None, max_model_len_source: str | None,
                   gpus: int | None, parallel: int | None) -> None:
    out.ran_rules("QA505")
    if concurrency is not None and max_num_seqs is not None and concurrency > max_num_seqs:
        file, line = site.at("max_num_seqs")
        out.add("QA505", f"declared concurrency {concurrency} exceeds --max-num-seqs {max_num_seqs}: "
                f"{concurrency - max_num_seqs} requests queue", subject=f"{site.key}|max-num-seqs", file=file,
                line=line, target=site.label)
    if ctx is not None and max_model_len is not None and ctx > max_model_len:
        file, line = site.at("max_model_len", "model")
        out.add("QA505", f"declared context {ctx:,} tokens exceeds max-model-len {max_model_len:,} "
                f"({max_model_len_source}): longer requests are rejected", subject=f"{site.key}|max-model-len",
                file=file, line=line, target=site.label)
    if gpus is not None and parallel is not None and gpus != parallel:
        file, line = site.at("tensor_parallel_size", "model")
        out.add("QA505", f"quantadvise.yaml declares {gpus} GPU(s) but the command runs tensor x pipeline parallel "
                f"degree {parallel}", subject=f"{site.key}|gpus", file=file, line=line, target=site.label)


def engine_drift(out: Findings, site: Site, *, declared_engine: str | None, served_engine: str,
                 declared_version: str | None, served_version: str | None, version_from: str) -> None:
    out.ran_rules("QA506")
    file, line = site.at("engine_version", "model")
    if declared_engine is not None and declared_engine != served_engine:
        out.add("QA506", f"quantadvise.yaml declares engine {declared_engine} but the command runs {served_engine}",
                subject=f"{site.key}|engine", file=file, line=line, target=site.label)
    if declared_version is not None and served_version is not None and \
            declared_version.removeprefix("v") != served_version.removeprefix("v"):
        out.add("QA506", f"quantadvise.yaml declares {served_engine} {declared_version} but {version_from} says "
                f"{served_version}", subject=f"{site.key}|engine-version", file=file, line=line, target=site.label)


__all__ = [
    "RULES",
    "RULE_BY_ID",
    "Findings",
    "GateFinding",
    "GateResult",
    "InitResult",
    "MemoryFit",
    "PerfCheck",
    "Rule",
    "RuleStatus",
    "Site",
    "TargetReport",
    "TaskEvidence",
    "fingerprint",
    "memory_fit",
    "rule_for_kind",
    "sort_findings",
    "split_baseline",
]
