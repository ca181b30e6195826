"""A recommended fp8 KV cache with static scales is calibrated by the recipe printed (audit rec #12).

The KV preset kv-fp8 is "fp8 e4m3, one static fp32 scale per tensor" (data/schemes.yaml). vLLM reads
k/v scales from the checkpoint and, when there are none, uses 1.0 and warns "Using KV cache scaling factor
1.0 for fp8_e4m3" (vllm 0.33.0 model_executor/layers/quantization/kv_cache.py:125-129, :164-169). The
recipe therefore needs llm-compressor's kv_cache_scheme, in its documented form
(vllm-project/llm-compressor examples/quantization_kv_cache/llama3_fp8_kv_example.py): num_bits 8, type
float, strategy tensor, dynamic false, symmetric true — and calibration data (a static observer).
"""

from __future__ import annotations

import ast

import quantadvise as api
from quantadvise import catalog
from quantadvise.checkpoint.write import kv_cache_scheme, llmcompressor_recipe

DOCUMENTED = {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False, "symmetric": True}


def _call_kwargs(recipe: str, name: str) -> dict:
    """The keyword arguments of the first call to ``name`` in the recipe line, as Python values."""
    tree = ast.parse(recipe.split("  #")[0])
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == name)
    return {k.arg: k.value for k in call.keywords}


def test_the_audit_workload_recipe_calibrates_the_fp8_kv_cache():
    # candidates no published checkpoint carries (with all of them the winner fp8-block is served as Qwen's own
    # FP8 checkpoint, whose config is its producer's): the checkpoint written here is the recipe's
    r = api.recommend(model="Qwen/Qwen3-30B-A3B", batch=64, ctx=8192, candidates=["w4a8-fp8", "fp8-dynamic"])
    assert r.checkpoint.published is None
    assert r.kv.dtype == "kv-fp8"
    assert r.scheme.axes.kv_cache is not None and r.scheme.axes.kv_cache.dynamic is False  # "static" in the table
    recipe = r.checkpoint.recipe
    assert recipe is not None
    tree = ast.parse(recipe.split("  #")[0])
    kvs = next(k.value for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords
               if k.arg == "kv_cache_scheme")
    assert ast.literal_eval(kvs) == DOCUMENTED
    top = _call_kwargs(recipe, "oneshot")
    assert "dataset" in top and "num_calibration_samples" in top  # the static scales need data
    # the checkpoint's quantization_config declares the same scheme the engines read
    assert r.checkpoint.quantization_config is not None
    assert r.checkpoint.quantization_config["kv_cache_scheme"] == DOCUMENTED


def test_data_free_weights_still_calibrate_the_kv_scales():
    preset = catalog.scheme_preset("fp8-dynamic")
    scheme = catalog.get_scheme("fp8-dynamic")
    kv = catalog.get_kv("kv-fp8")
    plain = llmcompressor_recipe(scheme, preset.deploy, "m/x")
    with_kv = llmcompressor_recipe(scheme, preset.deploy, "m/x", kv=kv)
    assert plain is not None and "data-free" in plain and "kv_cache_scheme" not in plain
    assert with_kv is not None and "kv_cache_scheme" in with_kv and "dataset=" in with_kv


def test_only_static_e4m3_scales_get_a_kv_cache_scheme():
    assert kv_cache_scheme(catalog.get_kv("kv-fp8")) == DOCUMENTED
    # one static scale per KV head: compressed-tensors strategy attn_head (data/schemes.yaml kv-fp8-head)
    assert kv_cache_scheme(catalog.get_kv("kv-fp8-head")) == {**DOCUMENTED, "strategy": "attn_head"}
    # dynamic per-token scales are computed by the engine; e5m2 runs without scales; bf16 has none
    for kid in ("kv-int8-token-head", "kv-fp8-token-head", "kv-fp8-e5m2", "kv-bf16"):
        assert kv_cache_scheme(catalog.get_kv(kid)) is None, kid


def test_bf16_weights_with_an_fp8_kv_cache_say_scale_one_and_offer_a_kv_only_recipe():
    r = api.recommend(batch=64, candidates=["bf16"], kv_dtype="kv-fp8")
    assert r.scheme.id == "bf16" and r.kv.dtype == "kv-fp8"
    assert any("scale 1.0" in n for n in r.checkpoint.notes)
    recipe = r.checkpoint.recipe
    assert recipe is not None and "kv_cache_scheme" in recipe and "dataset=" in recipe
    assert "config_groups" not in recipe and "scheme=" not in recipe.replace("kv_cache_scheme=", "")
