"""Every default quantadvise assumes, defined once.

The CLI, the Python API, the advisor and the gate read these names; a default written anywhere
else is a bug. Where a default mirrors an engine's own, the comment names the source line.
"""

from __future__ import annotations

GiB = 1024**3

# -- what is served, on what (the bundled defaults that `recommend` starts from) -------------------
MODEL = "meta-llama/Meta-Llama-3-8B"
GPU = "h100-sxm"
ENGINE = "vllm"
ENGINES = ("vllm", "sglang")  # the serving engines on file, in display order (engines/flags.py holds their flags)

# -- the workload --------------------------------------------------------------------------------
BATCH = 1  # concurrent sequences
CONTEXT = 2048  # tokens per sequence (prompt + output) when neither --ctx nor --prompt/--output is given
OUTPUT_TOKENS = 256  # output tokens when only a context or a prompt is given (capped at half the context)
SYNC_MAX_BATCH = 4  # "auto" serving mode: at most this many concurrent sequences run as one synchronous batch
ACCURACY_TOLERANCE = 1.0  # max accuracy drop the user accepts, %-points

# -- memory ---------------------------------------------------------------------------------------
# The engine's share of each GPU is not a quantadvise default: every command sizes with the engine release's
# own (data/engine_startup.yaml memory_fraction_default, derived by gate.startup.default_fraction: vLLM's
# --gpu-memory-utilization default, SGLang's mem_fraction_static heuristic), unless the user gives one.
# This is only the keyword default of the pure sizing helpers (sizing.memory_budget, perf.roofline) for a
# library caller that names none: vLLM 0.34.0's default, 1.0 with its extensible KV cache
# (resolved_gpu_memory_utilization, vllm/config/cache.py:494-501; 0.33.0's was 0.92), held equal to the newest
# bundled vLLM row by tests/data/test_engine_startup.py. The 1 GiB that release keeps free after warmup is taken
# where a release is named (engines.startup.usable_fraction), not here.
MEMORY_UTILIZATION = 1.0
# per-GPU runtime reserve outside vLLM's weights + KV: CUDA context, activation peak, CUDA graphs (SGLang's
# fraction already leaves these out: gate.startup.default_reserve_gb)
RESERVE_GB = 2.0
RESERVE_BYTES = int(RESERVE_GB * GiB)
BASELINE_BYTES_PER_PARAM = 2  # the bf16 baseline every compression ratio divides

# -- the decision tree ----------------------------------------------------------------------------
# Schemes the recommender weighs unless the workload names its own (the order never decides a tie).
CANDIDATES = (
    "bf16", "w4a16", "awq", "fp8-dynamic", "w8a8-int8", "w8a16", "fp8-block", "w4a8-fp8",
    "nvfp4", "nvfp4-a16", "mxfp4", "mxfp8", "w3a16",
)
QUANTIZED_KV = "kv-fp8"  # the quantized KV cache the tree weighs against bf16 (both engines accept fp8)
TIE = 0.005  # predictions within 0.5% of each other are a tie, broken by evidence (advisor.options.evidence_key)
KV_SHARE_THRESHOLD = 0.25  # choose a quantized KV cache when KV is at least this share of step bytes
# A re-quantization displaces the checkpoint a model ships only when it is predicted faster by more than
# the error a calibrated speed profile may have and still pass `quantadvise validate` (MAX_VALIDATION_ERROR)
NATIVE_MARGIN = 0.15
MAX_GPUS_SEARCH = 64  # the KV node's search for the GPU count that fits

# -- serving targets (latency SLOs, load, cost, speculative decoding; docs/recommend.md "Serving targets") --------
# With an SLO, a --rate or --users and no --batch, concurrency is searched from 1 up to this many sequences (and
# never past what the KV cache holds); --batch sets another bound
MAX_CONCURRENCY_SEARCH = 256
# A --rate plan adds replicas until at most this share of requests waits for a free slot (the birth-death law of
# a replica's requests in flight; perf/queueing.py): the fewest replicas that carry the load can run each at 99%
# of its capacity, where requests queue for a slot most of the time (docs/recommend.md "Serving targets")
LOAD_WAIT_SHARE = 0.05
# Tensor-parallel degrees weighed for a --rate / --users target when --gpus is not given: one 8-GPU NVLink node
TP_DEGREES = (1, 2, 4, 8)
# A workload spends at least this share of GPU time in prefill -> "prefill-heavy" (the trace says when W8A8 then
# beats weight-only below the weight-only ridge)
PREFILL_HEAVY_SHARE = 0.5
# `roofline --pareto` without --batch: the concurrencies swept (doubling, end included)
PARETO_BATCHES = "1..1024"
# Concurrencies `recommend --plot` samples per candidate: doubling from 1 up to the sequences it holds
FRONTIER_MAX_POINTS = 16

# -- roofline --------------------------------------------------------------------------------------
ROOFLINE_BATCHES = "1,8,64,512"
ROOFLINE_CONTEXTS = "2048"

# -- the gate -------------------------------------------------------------------------------------
MAX_SLOWDOWN_VS_RECOMMENDED = 0.25  # QA202: slower than the recommendation by more than this fraction
EVIDENCE_BELOW_BITS = 8  # QA401: accuracy evidence required below this many bits per weight

# -- the Hugging Face Hub ------------------------------------------------------------------------
HUB_TIMEOUT_S = 1.5  # the one probe for a config.json before giving up (no retries): offline fails in < 3 s
HUB_DOWNLOAD_TIMEOUT_S = 20.0  # fetching a config.json once the probe answered

# -- calibration ----------------------------------------------------------------------------------
CALIBRATION_BATCHES = "1..4096"
CALIBRATION_SECONDS = 240.0
MAX_VALIDATION_ERROR = 0.15
# held-out error a shipped kernel curve must stay within (`validate <gpu>`; issue 12's acceptance bar):
# median and worst relative error of the held-out decode steps (fused-MoE curves: held-out layers)
KERNEL_MEDIAN_ERROR = 0.08
KERNEL_MAX_ERROR = 0.20
# The producers whose published checkpoints `recommend` serves when one carries the winning scheme (the
# checkpoints command lists every producer in data/checkpoints.yaml): the model's own publishers and the
# quantization teams that publish evaluated variants, in order of preference when two carry the same scheme
PUBLISHED_PRODUCERS = (
    "RedHatAI", "neuralmagic", "nvidia", "Qwen", "deepseek-ai", "openai", "meta-llama", "mistralai", "google",
    "microsoft", "hugging-quants", "amd", "Intel",
)
