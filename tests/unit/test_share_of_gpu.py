"""The share of each GPU an engine release's KV cache sizing reaches (``engines.startup.share_of_gpu``), the one
derivation ``recommend``, ``size --gpu`` / ``roofline`` and ``validate --e2e`` share."""

import pytest

from quantadvise import catalog
from quantadvise.engines.startup import share_of_gpu

GiB = 2**30


def test_vllm_0_34_0_takes_the_whole_gpu_less_its_one_gib_margin():
    # vLLM 0.34.0: --gpu-memory-utilization defaults to 1.0 with the extensible KV cache on
    # (vllm/config/cache.py:216, 494-501) and the cache keeps at least 1 GiB free on CUDA
    # (vllm/v1/worker/extensible_kv_cache.py:64-65): usable = (memory - 1 GiB) / memory
    facts = catalog.engine_startup("vllm", "0.34.0")
    g = catalog.get_gpu("h100")
    frac, why = share_of_gpu(facts, g.memory_bytes, g.vendor, tp=1, mla=False, model_path="meta-llama/Meta-Llama-3-8B")
    assert frac == pytest.approx((g.memory_bytes - GiB) / g.memory_bytes)
    assert "1 GiB vLLM 0.34.0 keeps free after warmup" in why
    # a flag the user gave is capped the same way and keeps its own words
    frac, why = share_of_gpu(facts, g.memory_bytes, g.vendor, tp=1, mla=False, model_path="m", fraction=0.5,
                             fraction_from="given")
    assert (frac, why) == (0.5, "given")  # 0.5 is below the cap: nothing to say


def test_vllm_0_33_0_keeps_its_flag_default():
    # vLLM 0.33.0: --gpu-memory-utilization defaults to 0.92 and no margin is kept (data/engine_startup.yaml)
    facts = catalog.engine_startup("vllm", "0.33.0")
    g = catalog.get_gpu("h100")
    frac, why = share_of_gpu(facts, g.memory_bytes, g.vendor, tp=1, mla=False, model_path="m")
    assert frac == pytest.approx(0.92) and "keeps free" not in why
