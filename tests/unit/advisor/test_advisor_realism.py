"""Issue 11, group 4 (engine realism: context limits, tensor-parallel divisibility) and issue 14
item 7 (when nothing fits, the smallest GPU count that works, computed)."""

from __future__ import annotations

import pytest

import quantadvise as api
from quantadvise.engines.limits import context_limit as limit_of
from quantadvise.errors import QuantAdviseError
from tests.conftest import run_cli


@pytest.mark.parametrize("model, ctx, limit", [
    # max_position_embeddings in each bundled config.json; none has a rope type that rescales it
    ("meta-llama/Meta-Llama-3-8B", 32768, 8192),
    ("microsoft/Phi-3-mini-4k-instruct", 16384, 4096),
    ("google/gemma-2-9b", 32768, 8192),
    # an instruct release whose config differs from its base: Qwen2.5-7B-Instruct's config.json sets
    # max_position_embeddings 32768 (its model card: "The current config.json is set for context
    # length up to 32,768 tokens"), the base Qwen2.5-7B 131072; it used to be an alias of the base
    ("Qwen/Qwen2.5-7B-Instruct", 65536, 32768),
    ("Qwen/Qwen2.5-32B-Instruct", 65536, 32768),
])
def test_a_context_past_the_models_limit_is_exit_2_with_the_engines_message(model, ctx, limit):
    # vLLM 0.33.0 vllm/config/model.py:2664 raises "User-specified max_model_len (...) is greater than
    # the derived max_model_len (...)": the tool used to print --max-model-len 32768 for these.
    r = run_cli("recommend", "-m", model, "--ctx", str(ctx))
    assert r.code == 2 and r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1, r.stderr
    assert f"User-specified max_model_len ({ctx}) is greater than the derived max_model_len " \
           f"(max_position_embeddings={limit}" in r.stderr
    assert f"lower --ctx to {limit:,}" in r.stderr
    r = run_cli("recommend", "-m", model, "--ctx", str(limit), "-f", "json")
    assert r.code == 0 and f"--max-model-len {limit}" in r.json()["engine_args"]["vllm"]


def test_the_long_context_sibling_is_suggested():
    # Llama-3.1-8B has Meta-Llama-3-8B's shapes (data/models.yaml notes) and max_position_embeddings
    # 131072 with llama3 rope scaling (which vLLM does not multiply again, model.py:2613-2620).
    with pytest.raises(QuantAdviseError) as e:
        api.recommend(model="meta-llama/Meta-Llama-3-8B", ctx=32768)
    assert e.value.field == "ctx" and "serve meta-llama/Llama-3.1-8B" in e.value.hint
    r = api.recommend(model="meta-llama/Llama-3.1-8B", ctx=32768)
    assert "--max-model-len 32768" in r.engine_args["vllm"]


def test_an_instruct_release_is_served_and_quantized_under_its_own_name():
    # the recipe and the command line name the model the user asked for, not its base: quantizing
    # Qwen/Qwen2.5-7B when Qwen/Qwen2.5-7B-Instruct was asked for produces a different model
    r = api.recommend(model="Qwen/Qwen2.5-7B-Instruct", ctx=4096, candidates=["w4a16"])
    assert r.workload.model == "Qwen/Qwen2.5-7B-Instruct"
    assert 'model="Qwen/Qwen2.5-7B-Instruct"' in r.checkpoint.recipe
    # the long-context sibling is the base release (the same shapes, 131072 tokens)
    with pytest.raises(QuantAdviseError) as e:
        api.recommend(model="Qwen/Qwen2.5-7B-Instruct", ctx=65536)
    assert "serve Qwen/Qwen2.5-7B" in e.value.hint


def test_sglang_message_is_sglangs():
    # sglang 0.5.23 srt/configs/model_config.py:1299-1316
    with pytest.raises(QuantAdviseError, match=r"User-specified context_length \(16384\) is greater than the derived "
                                               r"context_length \(4096\)"):
        api.recommend(model="microsoft/Phi-3-mini-4k-instruct", ctx=16384, engine="sglang")


def test_limit_derivation_follows_each_engine():
    from quantadvise import catalog

    facts = {"vllm": catalog.engine_startup("vllm", "0.33.0"), "sglang": catalog.engine_startup("sglang", "0.5.23")}

    def context_limit(cfg, engine):
        return limit_of(cfg, facts[engine])

    base = {"model_type": "llama", "max_position_embeddings": 4096}
    # a linear rope factor multiplies in both engines (vLLM model.py:2613; SGLang common.py:681-686)
    lin = dict(base, rope_scaling={"type": "linear", "factor": 2.0})
    assert context_limit(lin, "vllm").tokens == 8192 and context_limit(lin, "sglang").tokens == 8192
    # YaRN: vLLM 0.33.0 treats max_position_embeddings as already scaled; SGLang multiplies unless
    # rope_scaling carries original_max_position_embeddings
    yarn = dict(base, rope_scaling={"type": "yarn", "factor": 4.0})
    assert context_limit(yarn, "vllm").tokens == 4096 and context_limit(yarn, "sglang").tokens == 16384
    yarn_o = dict(base, rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024})
    assert context_limit(yarn_o, "sglang").tokens == 4096
    # vLLM takes the smallest of its length keys; SGLang the first in its own order
    both = dict(base, seq_length=2048)
    assert context_limit(both, "vllm").tokens == 2048 and context_limit(both, "vllm").key == "seq_length"
    assert context_limit(both, "sglang").tokens == 2048


def test_tensor_parallel_must_divide_the_heads():
    # Meta-Llama-3-8B: 32 attention heads, 8 KV heads; vLLM and SGLang refuse a TP degree that
    # does not divide num_attention_heads.
    r = run_cli("recommend", "--gpus", "3")
    assert r.code == 2 and "32 attention heads do not split over 3 GPUs" in r.stderr


@pytest.mark.parametrize("kw, works, fails", [
    # DeepSeek-V3 on H100 at batch 8: the old hint said --gpus 4, which fails too. The smallest
    # non-vetoed weights are 4-bit (~349 GB); one H100 budget is 85,520,809,984 - 1 GiB - 2 GiB = 82.3 GB
    # (vLLM 0.34.0's default share, less the margin it keeps free), so 5 GPUs hold them, but 5, 6 and 7 do not
    # divide 128 heads: 8.
    (dict(model="deepseek-ai/DeepSeek-V3", gpu="h100", batch=8, ctx=2048), 8, 4),
    # Llama-3.1-70B on L4 (24,152,899,584 B) at vLLM 0.33.0's default share, given (at 0.34.0's two L4s hold
    # it): 4-bit weights are 39,500,407,552 B; two L4 budgets, 2 x
    # (floor(0.92 x 24,152,899,584) - 2 GiB) = 2 x 20,073,183,969 = 40,146,367,938 B, hold them but leave
    # 645,960,386 B, less than one synchronous 4,096-token sequence of fp8 KV (4,096 x 163,840 B =
    # 671,088,640 B); 3 does not divide 64 heads: 4.
    (dict(model="meta-llama/Llama-3.1-70B", gpu="l4", batch=1, ctx=4096, memory_utilization=0.92), 4, 2),
])
def test_nothing_fits_suggests_the_smallest_gpu_count_that_works(kw, works, fails):
    with pytest.raises(QuantAdviseError) as e:
        api.recommend(**kw)
    assert f"try --gpus {works}:" in e.value.hint
    api.recommend(**kw, gpus=works)  # it works there
    with pytest.raises(QuantAdviseError):
        api.recommend(**kw, gpus=fails)
