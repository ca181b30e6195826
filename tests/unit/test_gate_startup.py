"""QA3xx: the engines' start-up memory arithmetic (engines/startup.py, gate/memory.py), derived by hand
from the engines' source (the lines are cited in data/engine_startup.yaml) and the GPU rows.

Fixed inputs, each from its own source:
- H100 SXM: 85,520,809,984 B (nvidia-smi 81,559 MiB x 2**20, data/hardware.yaml); L4: 24,152,899,584 B
  (23,034 MiB); A100-80GB 85,899,345,920 B; B200 192,265,846,784 B (179.06 GiB).
- Llama-3-8B bf16 weights: 8,030,261,248 params x 2 B = 16,060,522,496 B.
- Llama-3/3.1-8B KV per token: 32 layers x 8 KV heads x 128 dims x (K, V) x 2 B = 131,072 B.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from quantadvise import catalog
from quantadvise.engines.startup import (
    derived_max_len,
    kv_share_per_gpu,
    prefill_bucket_count,
    sglang_fraction,
    sglang_max_running,
    vllm_max_num_seqs,
)
from quantadvise.gate.findings import Findings, Site
from quantadvise.gate.memory import Declared, MemoryInputs, memory_findings, startup_memory

GiB = 2**30
H100, L4, A100, B200 = 85_520_809_984, 24_152_899_584, 85_899_345_920, 192_265_846_784
W8B = 16_060_522_496
KV_TOK = 32 * 8 * 128 * 2 * 2  # 131,072


@pytest.fixture(scope="module")
def vllm():
    return catalog.engine_startup("vllm", "0.33.0")


@pytest.fixture(scope="module")
def sglang():
    return catalog.engine_startup("sglang", "0.5.23")


def site() -> Site:
    return Site(key="serve.sh#vllm", label="serve.sh:2", file="serve.sh", line=2,
                flag_lines={"max_model_len": 3, "max_num_seqs": 4, "gpu_memory_utilization": 5},
                config_file="quantadvise.yaml", config_lines={"workload.concurrency": 9})


def inputs(facts, *, memory=H100, fraction=0.9, reserve=2 * GiB, weights=W8B, mml=8192, tp=1, pp=1,
           declared=None, auto_fit=False, seqs=256, kv_heads=8):
    return MemoryInputs(
        facts=facts, gpu="g", gpu_memory_bytes=memory, tp=tp, pp=pp, fraction=fraction,
        fraction_flag="--gpu-memory-utilization" if facts.engine == "vllm" else "--mem-fraction-static",
        fraction_from="line 5", reserve_bytes_per_gpu=reserve, reserve_from="test", weights_bytes=weights,
        weights_source="bf16 weights", kv_dtype="kv-bf16", kv_bytes_per_token=KV_TOK,
        sequence_bytes=lambda n: n * KV_TOK, kv_heads=kv_heads, mla=False, max_model_len=mml,
        max_model_len_source="--max-model-len at line 3", auto_fit=auto_fit, max_num_seqs=seqs,
        max_num_seqs_source="line 4", declared=declared)


def rules(out: Findings) -> dict[str, str]:
    return {f.rule_id: f.severity for f in out.items}


def judge(fit, facts, **kw) -> Findings:
    out = Findings()
    memory_findings(out, site(), fit, min_headroom=kw.get("min_headroom"), derived=kw.get("derived"),
                    max_model_len_given=kw.get("given"), max_model_len_flag="--max-model-len", facts=facts)
    return out


# --- vLLM -------------------------------------------------------------------------------------------


def test_the_healthy_h100_deployment_starts_and_has_no_finding(vllm):
    """Issue 14's example: vllm serve Meta-Llama-3-8B-Instruct --max-num-seqs 256 --max-model-len 8192
    --gpu-memory-utilization 0.90 on one H100. --max-num-seqs is a cap, --max-model-len the longest request."""
    m = startup_memory(inputs(vllm))
    # requested = floor(85,520,809,984 x 0.9) = 76,968,728,985; - 2 GiB reserve = 74,821,245,337
    assert m.budget_bytes == 74_821_245_337
    # KV = 74,821,245,337 - 16,060,522,496 weights = 58,760,722,841 B (54.73 GiB)
    assert m.kv_cache_bytes_per_gpu == 58_760_722_841
    assert m.kv_capacity_tokens == 448_308  # 58,760,722,841 / 131,072 = 448,308.4
    # one sequence of 8192 tokens = 1 GiB; 54.73 GiB hold 54 of them
    assert m.max_model_len_kv_bytes == 8192 * KV_TOK and m.sequences_at_max_model_len == 54
    assert m.starts and m.refusal is None and m.concurrency is None
    out = judge(m, vllm)
    assert rules(out) == {}
    assert "no workload declared" in out.skipped["QA303"]


def test_vllm_refuses_a_max_model_len_one_gpu_cannot_hold_with_its_own_message(vllm):
    """Llama-3.1-8B on an L4 with the model's 131,072 tokens and vLLM 0.33.0's default utilization 0.92
    (vllm/config/cache.py:215)."""
    m = startup_memory(inputs(vllm, memory=L4, fraction=0.92, mml=131_072))
    # floor(24,152,899,584 x 0.92) = 22,220,667,617; - 2 GiB - 16,060,522,496 = 4,012,661,473 B (3.74 GiB)
    assert m.kv_cache_bytes_per_gpu == 4_012_661_473
    # 131,072 tokens x 131,072 B = 17,179,869,184 B = 16.0 GiB > 3.74 GiB: refused
    assert not m.starts
    # the longest that fits: floor(4,012,661,473 / 131,072) = 30,614 tokens (vLLM's estimate_max_model_len)
    assert m.max_model_len_that_fits == 30_614
    # vllm/v1/core/kv_cache_planning.py:77-86, format_gib rounds to 2 decimals
    assert m.refusal.startswith("To serve at least one request with the model's max seq len (131072), (16.0 GiB KV "
                                "cache is needed, which is larger than the available KV cache memory (3.74 GiB).")
    assert "the estimated maximum model length is 30614. Try increasing" in m.refusal
    out = judge(m, vllm)
    assert rules(out) == {"QA302": "error"}
    f = out.items[0]
    assert f.line == 3 and f.engine_message == m.refusal
    assert "the longest that fits is 30,614 tokens" in f.message and "set --max-model-len 30614" in f.message


def test_auto_fit_max_model_len_is_never_refused(vllm):
    """--max-model-len -1 fits the length to memory (kv_cache_planning.py:1337-1410)."""
    m = startup_memory(inputs(vllm, memory=L4, fraction=0.92, mml=131_072, auto_fit=True))
    assert m.starts and m.max_model_len == 30_614
    assert "reduced from 131072 to 30614" in (m.max_model_len_source or "")
    assert rules(judge(m, vllm)) == {}


def test_weights_that_leave_no_kv_cache(vllm):
    # 16 GB of weights at utilization 0.2 on 80 GB: floor(0.2 x 85,520,809,984) - 2 GiB = 14,956,678,348 < 16.06e9
    m = startup_memory(inputs(vllm, fraction=0.2))
    assert m.kv_cache_bytes_per_gpu < 0 and not m.starts
    assert m.refusal.startswith("No available memory for the cache blocks.")  # kv_cache_planning.py:56-63
    out = judge(m, vllm)
    assert rules(out) == {"QA301": "error"}
    assert "larger --gpu-memory-utilization" in out.items[0].message
    # 131.42 GiB of 70B weights on one L4: larger than the GPU, loading runs out of memory
    m = startup_memory(inputs(vllm, memory=L4, weights=141_107_412_992))
    out = judge(m, vllm)
    assert "are larger than the" in out.items[0].message and "gpu-memory-utilization" not in out.items[0].message


def test_a_declared_workload_that_does_not_fit_is_a_warning_with_the_numbers(vllm):
    # 64 sequences x 8,192 tokens (sync: the full context) = 64 GiB > the 54.73 GiB KV cache: 54 at once
    m = startup_memory(inputs(vllm, declared=Declared(64, 8192, "sync")))
    assert m.kv_bytes == 64 * GiB and m.max_concurrency == 54 and not m.fits
    out = judge(m, vllm)
    assert rules(out) == {"QA303": "warning"}
    f = out.items[0]
    assert f.file == "quantadvise.yaml" and f.line == 9  # the declaration's line
    assert "54 such sequences run at once, up to --max-num-seqs 256, the rest queue" in f.message
    # 32 x 8192 = 32 GiB fits: free = 58,760,722,841 - 34,359,738,368 = 24,400,984,473 of 74,821,245,337 (32.6%)
    m = startup_memory(inputs(vllm, declared=Declared(32, 8192)))
    assert m.free_bytes == 24_400_984_473 and m.headroom == pytest.approx(24_400_984_473 / 74_821_245_337)
    assert rules(judge(m, vllm, min_headroom=0.30)) == {}
    assert rules(judge(m, vllm, min_headroom=0.35)) == {"QA304": "warning"}


def test_vllm_default_max_num_seqs_by_gpu_memory(vllm):
    """vllm/engine/arg_utils.py:2973-3006 (OpenAI server): >= 160 GiB 1024; >= 70 GiB and not an A100 1024;
    else 256; x2 in throughput mode (3184-3188); never above max_num_batched_tokens (3232-3234)."""
    assert vllm_max_num_seqs(vllm, H100, ["h100-sxm", "NVIDIA H100 80GB HBM3"], 90)[0] == 1024  # 79.65 GiB
    assert vllm_max_num_seqs(vllm, A100, ["a100-80gb", "NVIDIA A100-SXM4-80GB"], 80)[0] == 256
    assert vllm_max_num_seqs(vllm, B200, ["b200"], 100)[0] == 1024  # 179.06 GiB
    assert vllm_max_num_seqs(vllm, L4, ["l4"], 89)[0] == 256
    assert vllm_max_num_seqs(vllm, H100, ["h100"], 90, throughput=True)[0] == 2048
    assert vllm_max_num_seqs(vllm, H100, ["h100"], 90, max_num_batched_tokens=512)[0] == 512


def test_kv_heads_are_replicated_when_tensor_parallel_exceeds_them():
    # vllm/config/model.py:1673-1683: max(1, kv_heads // tp) heads per GPU; an MLA latent is whole on every GPU
    assert kv_share_per_gpu(kv_heads=8, mla=False, tp=4, pp=1) == pytest.approx(2 / 8)
    assert kv_share_per_gpu(kv_heads=8, mla=False, tp=16, pp=1) == pytest.approx(1 / 8)  # not 1/16
    assert kv_share_per_gpu(kv_heads=1, mla=True, tp=8, pp=1) == 1
    assert kv_share_per_gpu(kv_heads=8, mla=False, tp=2, pp=2) == pytest.approx(4 / 8 / 2)


# --- vLLM 0.34.0: the extensible KV cache -----------------------------------------------------------
# Its default --gpu-memory-utilization is 1.0 (vllm/config/cache.py:494-501); the cache is checked against the capacity
# reserved before warmup (requested - weights - the activation peak and non-torch memory, vllm/v1/worker/
# gpu_worker.py:776-780) and again against the size measured after it, which keeps max(1 GiB, 0.75 x the peak) of
# the device free on CUDA (vllm/v1/worker/extensible_kv_cache.py:64-65, 613-618): the share is
# min(fraction x memory, memory - 1 GiB). Refusals carry _more_kv_cache_memory_hint (kv_cache_planning.py:64-96).


@pytest.fixture(scope="module")
def vllm34():
    return catalog.engine_startup("vllm", "0.34.0")


def test_vllm_034_default_takes_the_gpu_less_its_margin(vllm34):
    m = startup_memory(inputs(vllm34, fraction=1.0))
    # 85,520,809,984 - 1 GiB = 84,447,068,160; - 2 GiB reserve - 16,060,522,496 weights = 66,239,062,016 B
    assert m.budget_bytes == 82_299_584_512 and m.kv_cache_bytes_per_gpu == 66_239_062_016
    assert m.memory_utilization == 1.0 and m.starts
    # a fraction that leaves the margin free already is not reduced (the same 0.9 arithmetic as 0.33.0's)
    assert startup_memory(inputs(vllm34, fraction=0.9)).kv_cache_bytes_per_gpu == 58_760_722_841
    # 0.995 would be floor(0.995 x 85,520,809,984) = 85,093,205,934 B: capped at 84,447,068,160
    assert startup_memory(inputs(vllm34, fraction=0.995)).budget_bytes == 84_447_068_160 - 2 * GiB
    # on AMD GPUs the margin is 3 GiB (the same line: 3 if current_platform.is_rocm())
    m = startup_memory(replace(inputs(vllm34, fraction=1.0), vendor="amd"))
    assert m.kv_cache_bytes_per_gpu == H100 - 3 * GiB - 2 * GiB - W8B
    text = " ".join(f.message for f in judge(startup_memory(inputs(vllm34, fraction=1.0, mml=600_000)), vllm34).items)
    assert "x 79.65 GiB, at most 79.65 GiB - 1.0 GiB vLLM keeps free after warmup (vllm 0.34.0 vllm/v1/worker/" in text
    # 0.995 x 79.65 GiB is capped the same way: 79.65 - 1.0
    text = " ".join(f.message for f in judge(startup_memory(inputs(vllm34, fraction=0.995, mml=600_000)), vllm34).items)
    assert "--gpu-memory-utilization 0.995 (line 5) x 79.65 GiB, at most 79.65 GiB - 1.0 GiB vLLM keeps free" in text


def test_vllm_034_refuses_before_warmup_in_its_words(vllm34):
    """Llama-3.1-8B's 131,072 tokens on an L4 at the default 1.0: the capacity reserved before warmup is
    24,152,899,584 - 2 GiB - 16,060,522,496 = 5,944,893,440 B (5.54 GiB) < 16 GiB: refused there, with the
    hint for a share of 1.0 before warmup; what fits both checks is floor(4,871,151,616 / 131,072) = 37,163."""
    m = startup_memory(inputs(vllm34, memory=L4, fraction=1.0, mml=131_072))
    assert not m.starts and m.kv_cache_bytes_per_gpu == 4_871_151_616 and m.max_model_len_that_fits == 37_163
    assert m.refusal == (
        "To serve at least one request with the model's max seq len (131072), (16.0 GiB KV cache is needed, which "
        "is larger than the available KV cache memory (5.54 GiB). Based on the available memory, the estimated "
        "maximum model length is 45355. The extensible KV cache already takes all device memory left after the "
        "model and its activations; decrease `max_model_len` or `max_num_seqs`, or the model needs a device with "
        "more memory. Decreasing `max_model_len` also reduces what is needed. See "
        "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")
    f = judge(m, vllm34).items[0]
    assert f.rule_id == "QA302" and "(set --max-model-len 37163) (vllm 0.34.0 vllm/v1/core/kv_cache_planning.py:" \
        in f.message  # no "raise --gpu-memory-utilization": it is 1.0 already
    # a share below 1.0 is named in the hint: 0.9 -> floor(0.9 x 24,152,899,584) = 21,737,609,625 - 2 GiB - weights
    # = 3,529,603,481 B (3.29 GiB), 26,928 tokens; no margin binds, so the two checks agree and the first refuses
    m = startup_memory(inputs(vllm34, memory=L4, fraction=0.9, mml=131_072))
    assert "memory (3.29 GiB). Based on the available memory, the estimated maximum model length is 26928. The KV " \
           "cache gets what is left after the model and its activations within `gpu_memory_utilization`=0.9; " \
           "increase it (with the extensible KV cache it defaults to 1.0) or decrease `max_model_len` or " \
           "`max_num_seqs`. Decreasing" in m.refusal
    assert "raise --gpu-memory-utilization" in judge(m, vllm34).items[0].message


def test_vllm_034_refuses_after_warmup_in_its_words(vllm34):
    """510,000 tokens x 131,072 B = 66,846,720,000 B: within the 67,312,803,840 B reserved before warmup on an
    H100 at 1.0, above the 66,239,062,016 B (61.69 GiB) measured after it: the second check refuses
    (kv_cache_planning.py:1849-1860), with the after-warmup hint; 505,363 tokens fit."""
    m = startup_memory(inputs(vllm34, fraction=1.0, mml=510_000))
    assert not m.starts and m.max_model_len_that_fits == 505_363
    assert "(62.26 GiB KV cache is needed, which is larger than the available KV cache memory (61.69 GiB). Based " \
           "on the available memory, the estimated maximum model length is 505363. The extensible KV cache already " \
           "takes all device memory left after the model, its activations, CUDA graphs and warmup; decrease " \
           "`max_model_len` or `max_num_seqs`, or the model needs a device with more memory. CUDA graphs take " \
           "less with fewer or smaller capture sizes in the compilation config. Decreasing" in m.refusal


def test_vllm_034_weights_that_leave_no_kv_cache(vllm34):
    # at 0.2 the reserved capacity is already negative: the before-warmup hint, naming the share
    m = startup_memory(inputs(vllm34, fraction=0.2))
    assert m.refusal == ("No available memory for the cache blocks. The KV cache gets what is left after the model "
                         "and its activations within `gpu_memory_utilization`=0.2; increase it (with the extensible "
                         "KV cache it defaults to 1.0) or decrease `max_model_len` or `max_num_seqs`. See "
                         "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")
    assert "larger --gpu-memory-utilization" in judge(m, vllm34).items[0].message
    # weights of H100 - 2.5 GiB at 1.0: 0.5 GiB reserved before warmup, -0.5 GiB after it (the margin)
    m = startup_memory(inputs(vllm34, fraction=1.0, weights=H100 - 2 * GiB - GiB // 2))
    assert not m.starts and m.refusal == (
        "No available memory for the cache blocks. The extensible KV cache already takes all device memory left "
        "after the model, its activations, CUDA graphs and warmup; decrease `max_model_len` or `max_num_seqs`, or "
        "the model needs a device with more memory. CUDA graphs take less with fewer or smaller capture sizes in "
        "the compilation config. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more "
        "details.")
    assert "larger --gpu-memory-utilization" not in judge(m, vllm34).items[0].message
    # weights larger than the GPU: torch's OutOfMemoryError while loading, no vLLM message on file
    m = startup_memory(inputs(vllm34, memory=L4, weights=141_107_412_992, fraction=1.0))
    assert m.refusal is None and not m.starts
    assert "vllm/v1/worker/gpu/model_runner.py:410-419" in judge(m, vllm34).items[0].message


def test_vllm_034_auto_fit_fits_twice_and_says_the_last_word(vllm34):
    # L4 at 1.0: fitted to 45,355 tokens before warmup, to 37,163 after it (>= 8,192: an info line)
    m = startup_memory(inputs(vllm34, memory=L4, fraction=1.0, mml=131_072, auto_fit=True))
    assert m.starts and m.max_model_len == 37_163
    assert m.max_model_len_source == ("--max-model-len auto reduced max_model_len from 45355 to 37163 (4.54 GiB GPU "
                                      "left for the KV cache after CUDA graph capture and warmup).")
    # under 8,192 tokens (AUTO_FIT_SHORT_MAX_MODEL_LEN) the warning, with its hint for a share of 1.0: weights of
    # H100 - 3.5 GiB leave 1.5 GiB before warmup (12,288 tokens) and 0.5 GiB after it (4,096)
    m = startup_memory(inputs(vllm34, fraction=1.0, mml=131_072, auto_fit=True, weights=H100 - 3 * GiB - GiB // 2))
    assert m.max_model_len == 4096 and m.max_model_len_source == (
        "--max-model-len auto reduced max_model_len from 12288 to 4096 (0.5 GiB GPU left for the KV cache after "
        "CUDA graph capture and warmup). Requests longer than 4096 tokens will be rejected. Use more GPUs or set "
        "--max-model-len explicitly.")
    # at 0.9 no margin binds: the length fitted before warmup is kept
    m = startup_memory(inputs(vllm34, memory=L4, fraction=0.9, mml=131_072, auto_fit=True))
    assert m.max_model_len == 26_928 and m.max_model_len_source == (
        "Auto-fit max_model_len: using max_model_len=26928, which fits in the KV cache memory left after CUDA graph "
        "capture and warmup (3.29 GiB GPU).")
    # not one token after warmup: the after-warmup hint
    m = startup_memory(inputs(vllm34, fraction=1.0, mml=131_072, auto_fit=True, weights=H100 - 2 * GiB - GiB // 2))
    assert m.refusal == ("Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single "
                         "token. CUDA graph capture and warmup left no memory for the KV cache. Increase "
                         "`gpu_memory_utilization`, reduce the memory CUDA graphs take (fewer or smaller capture "
                         "sizes in the compilation config), or use more GPUs.")
    f = judge(m, vllm34).items[0]  # the weights leave no KV cache (QA301), in the auto-fit's words
    assert f.rule_id == "QA301" and f.engine_message == m.refusal


# --- the model's own limit (QA306) --------------------------------------------------------------------


def test_derived_max_len_follows_each_engines_rules(vllm, sglang):
    llama31 = {"model_type": "llama", "max_position_embeddings": 131072,
               "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}
    assert derived_max_len(llama31, vllm).value == 131072 and derived_max_len(llama31, sglang).value == 131072
    linear = {"model_type": "llama", "max_position_embeddings": 4096, "rope_scaling": {"type": "dynamic", "factor": 2}}
    assert derived_max_len(linear, vllm).value == 8192 and derived_max_len(linear, sglang).value == 8192
    yarn = {"model_type": "qwen2", "max_position_embeddings": 32768,
            "rope_scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": 32768}}
    assert derived_max_len(yarn, vllm).value == 32768 and derived_max_len(yarn, sglang).value == 32768
    # vLLM takes the smallest key present; SGLang the first of its list (max_sequence_length before the rest)
    two = {"model_type": "x", "max_position_embeddings": 4096, "max_sequence_length": 8192}
    assert derived_max_len(two, vllm).value == 4096 and derived_max_len(two, sglang).value == 8192
    assert derived_max_len({"model_type": "x"}, vllm).value == 2048  # no key: the engines assume 2048


def test_a_max_model_len_above_the_models_is_refused_by_both_engines(vllm, sglang):
    derived = derived_max_len({"max_position_embeddings": 131072}, vllm)
    m = startup_memory(inputs(vllm, mml=200_000, fraction=0.9, memory=2 * H100, weights=W8B))
    out = judge(m, vllm, derived=derived, given=200_000)
    assert out.items[0].rule_id == "QA306" and out.items[0].severity == "error"
    assert out.items[0].engine_message.startswith("User-specified max_model_len (200000) is greater than the derived "
                                                  "max_model_len (max_position_embeddings=131072")
    out = judge(startup_memory(inputs(sglang, mml=200_000, fraction=0.83, reserve=0)), sglang, derived=derived,
                given=200_000)
    assert "QA306" in rules(out)
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in out.items[0].engine_message
    assert "QA306" not in rules(judge(m, vllm, derived=derived, given=131_072))


# --- SGLang -------------------------------------------------------------------------------------------


def test_sglang_default_mem_fraction_static_on_an_h100(sglang):
    """memory_hook.py:132-145 (H100 tier: chunked prefill 8192, decode CUDA-graph batch 256 below tp 4) and
    281-327: reserved = 512 + max(8192, 2048) x 1.5 + 1 x 1/8 x 1024 + graphs; graphs = 256 x 2 (decode,
    357-368) + 58 prefill buckets up to 8192 tokens x 8 (cuda_graph_hook.py:480-497: 8 + 14 + 8 + 8 + 12 + 8)
    = 976; reserved = 512 + 12,288 + 128 + 976 = 13,904 MiB (above the 10,240 floor);
    fraction = round((81,559 - 13,904) / 81,559, 3) = round(0.82952, 3) = 0.83."""
    assert prefill_bucket_count(sglang, 8192) == 58
    f = sglang_fraction(sglang, H100, tp=1, pp=1, mla=False)
    assert f.reserved_mib == 13_904 and f.fraction == 0.83


def test_sglang_default_mem_fraction_static_on_an_l4(sglang):
    """L4 (23,034 MiB, below 35,840): chunked prefill 4096, decode batch 48; 50 prefill buckets up to 4096
    (8 + 14 + 8 + 8 + 12) x 8 = 400, decode 48 x 2 = 96; reserved = 512 + 6,144 + 128 + 496 = 7,280 (no floor
    below 61,440 MiB); fraction = round((23,034 - 7,280) / 23,034, 3) = round(0.68394, 3) = 0.684."""
    f = sglang_fraction(sglang, L4, tp=1, pp=1, mla=False)
    assert f.reserved_mib == 7_280 and f.fraction == 0.684
    # an MLA model reserves 1,536 MiB for its prefill graphs instead (memory_hook.py:387-389)
    assert sglang_fraction(sglang, L4, tp=1, pp=1, mla=True).reserved_mib == 512 + 6144 + 128 + 96 + 1536
    # --max-running-requests 16 caps the default decode graph batch (memory_hook.py:182-188): 48 -> 16
    assert sglang_fraction(sglang, L4, tp=1, pp=1, mla=False, max_running_requests=16).decode_max_bs == 16


def test_sglang_starts_with_a_pool_shorter_than_one_request_and_warns(sglang):
    """Llama-3.1-8B on an L4 at its heuristic 0.684: floor(24,152,899,584 x 0.684) = 16,520,583,315;
    - 16,060,522,496 = 460,060,819 B = 3,509 tokens (kv_cache_configurator.py:2990-3060), fewer than 131,072."""
    m = startup_memory(inputs(sglang, memory=L4, fraction=0.684, reserve=0, mml=131_072, seqs=None))
    assert m.kv_cache_bytes_per_gpu == 460_060_819 and m.kv_capacity_tokens == 3_509 and m.starts
    # --max-running-requests default: int(3,509 / 131,072 x 512) = 13 -> at least 2048, at most 3,509 // 2 = 1,754
    assert m.max_num_seqs == 1_754
    out = judge(m, sglang)
    assert rules(out) == {"QA305": "warning"}
    assert out.items[0].engine_message.startswith("KV pool holds 3509 tokens, fewer than --context-length 131072.")


def test_sglang_refuses_when_the_weights_leave_no_pool_with_its_own_message(sglang):
    # 16.06e9 weights in 0.5 x 24.15e9: none left; minimum viable fraction = weights / memory = 0.66496
    m = startup_memory(inputs(sglang, memory=L4, fraction=0.5, reserve=0))
    assert not m.starts
    assert m.refusal == ("Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5. Raise "
                         "--mem-fraction-static above 0.665 (minimum viable = 1 - available/pre = 0.6650).")
    out = judge(m, sglang)
    assert rules(out) == {"QA301": "error"} and out.items[0].engine_message == m.refusal


def test_sglang_max_running_requests(sglang):
    # kv_cache_configurator.py:3119-3132: int(419,019 / 8,192 x 512) = 26,188 -> clamped to 4,096
    assert sglang_max_running(sglang, 419_019, 8192, None) == 4096
    assert sglang_max_running(sglang, 419_019, 8192, 256) == 256  # as requested, below tokens // 2
    assert sglang_max_running(sglang, 100, 8192, 256) == 50  # reduced to tokens // 2
