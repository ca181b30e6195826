"""The CI gate's rules: stable ids, families, default severities, and the map from an engine
finding to the rule it breaks.

A deployment (the engine command a repo commits, the ``quantadvise.yaml`` that declares what it
should be) is held to five families of rules, each judged in its own module here:

- QA1xx ``engine.py``   the engine refuses the deployment or misbehaves with it (what ``inspect`` predicts);
- QA2xx ``speed.py``    slower than bf16 at the deployed concurrency, much slower than the recommended
                         scheme, a method the engine runs unoptimized;
- QA3xx ``memory.py``   the engine's start-up memory arithmetic (``startup.py``): refuses to start, or the
                         declared workload queues;
- QA4xx ``accuracy.py`` per-sample evidence missing for a scheme below 8 bits, or failing its thresholds;
- QA5xx ``drift.py``    the checkpoint, the engine flags and the declaration disagree.

Every rule is a :class:`Rule` row in :data:`RULES` (id, name, family, default severity, title,
rationale); docs/ci.md documents each one under an anchor named after its id. A finding is
fingerprinted by rule id + subject — what it is about, never its line — so a baseline survives
edits that move lines. Adding a rule: a row here, a function in its family's module, a call in
``target.py``, a section in docs/ci.md.
"""

import hashlib
from typing import Literal

from ..results import Out

Severity = Literal["error", "warning", "note"]
Family = Literal["engine", "performance", "memory", "accuracy", "drift"]
FailOn = Literal["error", "warning"]
SEVERITY_RANK: dict[str, int] = {"note": 0, "warning": 1, "error": 2}
DOCS_PAGE = "docs/ci.md"
FINGERPRINT_KEY = "quantadvise/v1"


# -------------------------------------------------------------------------------------------------
# The rules
# -------------------------------------------------------------------------------------------------


class Rule(Out):
    id: str
    name: str
    family: Family
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


def _r(id: str, name: str, family: Family, severity: Severity, title: str, rationale: str) -> Rule:
    return Rule(id=id, name=name, family=family, severity=severity, title=title,
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
       "The GPU cannot run the method, a scheme or the KV cache dtype",
       "A method, a compressed-tensors scheme or a KV cache dtype needs a higher compute capability than the "
       "GPU has; the engine refuses it (or, for schemes, finds no kernel). Or the kernel the release picks has no "
       "build for this GPU and stops the server at its first forward pass (vLLM's and SGLang's int8 W8A8 GEMMs on "
       "SM100 and up)."),
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
       "The engine's argument parser refuses the command",
       "A flag that matters has a value the engine's argument parser rejects (not an integer, not a number), "
       "the command spells an option the release does not register (misspelt, removed, or a prefix of "
       "several), or it runs a server module the release does not ship: argparse or Python exits at start-up."),
    _r("QA109", "deployment-artifact-warning", "engine", "warning",
       "The artifact does not launch what it appears to",
       "A flag given twice, a build ARG used at run time, $VAR in an exec-form CMD, a shell-form CMD appended to "
       "the image's entrypoint, flags in a --config file that is not read: what runs is not what is written."),
    _r("QA110", "unresolved-engine-argument", "engine", "warning",
       "A flag that matters comes from a variable the gate cannot resolve",
       "The value of --quantization, --kv-cache-dtype, the model or a size flag is set at run time (an "
       "environment variable without a default, a command substitution); the gate checks the rest. Give the "
       "variable a default or declare the value in quantadvise.yaml."),
    _r("QA111", "model-not-resolved", "engine", "warning",
       "The model's config.json could not be read: only the engine-level rules ran",
       "The launch names no model (an image entrypoint whose arguments come from elsewhere), or the model is "
       "not bundled, not a local copy and not in the Hugging Face cache, and the Hub could not be reached "
       "(offline, gated, or unknown): the rules that need no model config (a method or KV cache dtype the "
       "engine refuses, SGLang's not-optimized list) ran; memory, speed and drift did not. Vendor the "
       "config.json (model: in quantadvise.yaml) or fetch it once (hf download ID config.json)."),
    _r("QA112", "engine-upgrade-changes", "engine", "warning",
       "Upgrading the engine changes what it does with this deployment",
       "With --upgrade-to ENGINE@VERSION (or upgrade_to: in quantadvise.yaml) every deployment of that engine is "
       "judged again on the target release: a verdict that turns (loads -> refuses, or back), a different "
       "method or weight-only fallback, another served scheme or KV cache dtype, or a refusal or warning the "
       "engine starts or stops printing is reported here, so an upgrade PR shows what it changes before it ships. "
       "A deployment its release starts and the target refuses to start is an error, at the line the target's "
       "refusal names: the upgrade would not start."),
    _r("QA201", "slower-than-bf16", "performance", "error",
       "Predicted slower than bf16 at the deployed concurrency",
       "At this concurrency the quantized scheme is predicted to serve fewer tokens per second than the bf16 "
       "model with the same KV cache: you pay the accuracy cost and lose speed (not judged when bf16 weights "
       "do not fit the deployment's GPUs). Typical for weight-only "
       "schemes at large batches, where dequantization sits on a compute-bound path (a roofline model with "
       "the efficiency profile, not a measurement; calibrate with --profile). A warning where no measured table "
       "prices the scheme's kernel on this engine and GPU."),
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
    _r("QA205", "default-moe-tiles", "performance", "warning",
       "The engine runs the model's routed experts on its default fused-MoE tiles",
       "vLLM and SGLang read their Triton fused-MoE kernel's tiles from a file the release ships for the experts "
       "per GPU, their intermediate size per GPU, the GPU and the quantization (data/moe_configs/); without one the "
       "kernel runs its default tiles and the engine logs that performance might be sub-optimal. Tune the "
       "configuration with the engine's fused-MoE benchmark, or deploy at a tensor-parallel size or on a GPU the "
       "release ships one for."),
    _r("QA301", "weights-do-not-fit", "memory", "error",
       "The weights leave no memory for the KV cache: the engine refuses to start",
       "Per GPU, the weights plus the runtime the engine reserves fill the memory it may use: vLLM "
       "(gpu-memory-utilization x memory, less the activation peak, non-torch memory and CUDA graphs) stops "
       "with 'No available memory for the cache blocks'; SGLang (mem-fraction-static x memory) with 'Loaded "
       "weights leave no GPU memory for the KV cache'. Weights larger than the GPU run out of memory while "
       "loading (CUDA out of memory in the model loader, before any KV cache is planned). More GPUs (tensor parallel), a smaller scheme, or a larger memory fraction."),
    _r("QA302", "max-model-len-exceeds-kv-cache", "memory", "error",
       "One sequence of max-model-len tokens does not fit in vLLM's KV cache",
       "vLLM refuses to start when the KV cache of one GPU cannot hold a single sequence of max_model_len "
       "tokens ('To serve at least one request with the model's max seq len ...', "
       "vllm/v1/core/kv_cache_planning.py); without --max-model-len it is the length the model's config.json "
       "allows (131,072 for Llama 3.1). The finding gives the longest length that fits."),
    _r("QA303", "workload-queues", "memory", "warning",
       "The declared workload does not fit at once: requests queue",
       "The KV cache the engine allocates holds fewer sequences of the declared context than the declared "
       "concurrency: the engine starts, runs as many as fit and queues the rest (vLLM preempts running "
       "sequences that outgrow it). Only a declared workload (quantadvise.yaml workload:, --concurrency, --ctx) "
       "is judged: --max-num-seqs and --max-model-len are caps, not a workload."),
    _r("QA304", "low-memory-headroom", "memory", "warning",
       "The declared workload fits, with less headroom than configured",
       "The share of the memory budget (weights + KV cache) left free with the declared workload running is "
       "below thresholds.min_memory_headroom; bursts, longer prompts or an engine upgrade will not fit."),
    _r("QA305", "context-exceeds-kv-pool", "memory", "warning",
       "SGLang's KV pool holds fewer tokens than one full-length request",
       "SGLang starts but warns 'KV pool holds N tokens, fewer than --context-length': requests longer than "
       "the pool are refused or truncated at serving time (sglang/srt/managers/tp_worker.py)."),
    _r("QA306", "context-exceeds-model", "memory", "error",
       "--max-model-len / --context-length is longer than the model allows",
       "Both engines refuse a maximum length above the one they derive from the model's config.json "
       "(max_position_embeddings and the RoPE scaling factor) unless an environment variable overrides the "
       "check (VLLM_ALLOW_LONG_MAX_MODEL_LEN, SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN)."),
    _r("QA401", "accuracy-evidence-missing", "accuracy", "error",
       "No accuracy evidence for a scheme below 8 bits",
       "Weights, activations or the KV cache are quantized below thresholds.evidence_below_bits (default 8) "
       "and quantadvise.yaml names no per-sample evidence (accuracy.baseline / accuracy.quantized). Below "
       "8 bits accuracy depends on the model, the method and the task; aggregate scores hide flips. A note "
       "when quantadvise.yaml declares no accuracy policy (accuracy:, thresholds.evidence_below_bits, rules:); "
       "not applied to the weights of a model whose only release is the quantized checkpoint served as shipped."),
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
# Rules whose finding means "the engine refuses to start": the server exits before it serves a request
# (argument parsing, model config, quantization method, parallel layout, weight loading, KV cache
# planning). Whichever of them fires, the deployment is refused: no speed verdict (QA201/QA202), no
# workload verdict (QA303/QA304), no "SGLang starts" (QA305). A rule turned ``off`` does not count (the
# user says the engine starts, e.g. QA306 with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1); a lowered severity does.
REFUSES_START = frozenset({"QA101", "QA102", "QA103", "QA104", "QA105", "QA107", "QA108", "QA301", "QA302", "QA306"})
FAMILY_PREFIX = {"engine": "QA1", "performance": "QA2", "memory": "QA3", "accuracy": "QA4", "drift": "QA5"}

# engine.Finding.kind -> rule id ("info" kinds that change nothing are notes on the target, no rule)
KIND_RULES: dict[str, str] = {
    "unknown_method": "QA101", "platform_unsupported": "QA101", "deprecated_method": "QA101",
    "config_in_side_file": "QA101", "no_quant_method": "QA101",
    "method_mismatch": "QA102",
    "capability_too_low": "QA103", "scheme_capability_too_low": "QA103", "kv_dtype_capability": "QA103",
    # a kernel the release picks but has no build of for the GPU (data/engines kernel_refusals: their message ids)
    "cutlass_int8_unsupported": "QA103", "cutlass_int8_arch": "QA103", "cutlass_int8_blackwell": "QA103",
    "sgl_int8_scaled_mm_unsupported": "QA103",
    "block_static_activations": "QA104", "act_dtype_unsupported": "QA104", "ct_no_scheme": "QA104",
    "ct_sparsity_rejected": "QA104", "ct_sparsity_24": "QA104", "ct_actorder_rejected": "QA104", "ct_nvfp4_activation_mismatch": "QA104",
    "kv_dtype_unknown": "QA105", "kv_dtype_platform": "QA105", "fp8_e5m2_with_fp8_checkpoint": "QA105",
    "kv_cache_scheme_unsupported": "QA105", "kv_cache_scheme_strategy": "QA105",
    "kv_cache_scheme_symmetric": "QA105", "kv_cache_scheme_dynamic": "QA105",
    "fp8_online_deprecated": "QA106", "deprecated_method_allowed": "QA106", "ct_attention_group_skipped": "QA106",
    "kv_cache_scheme_ignored": "QA106", "kernel_capability": "QA106",
    "not_optimized": "QA203",
    "marlin_forced_off": "QA204",
}
# engine findings that depend on the flags alone, not on the checkpoint: what the gate can still report
# when the model's config.json cannot be read (QA111)
CHECKPOINT_FREE_KINDS = frozenset({
    "unknown_method", "platform_unsupported", "deprecated_method", "capability_too_low", "deprecated_method_allowed", "kv_dtype_unknown", "kv_dtype_platform", "kv_dtype_capability", "not_optimized",
})
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
    # surrogatepass: a subject naming a file whose name is not UTF-8 hashes as any other
    return hashlib.sha256(f"{rule_id}\x00{subject}".encode("utf-8", "surrogatepass")).hexdigest()[:24]


