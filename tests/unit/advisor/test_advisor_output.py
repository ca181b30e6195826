"""Issue 11, group 6: one number per quantity — every figure says its KV dtype and what it
includes, the trace agrees with the headline, labels and descriptions say what is true; recipes
come from the same layer policy as the sizing."""

from __future__ import annotations

import math

import pytest

import quantadvise as api


def node(rec, name):
    return next(t for t in rec.trace if t.node == name)


def alt(rec, scheme):
    return next(a for a in rec.alternatives if a.scheme == scheme)


@pytest.mark.parametrize("kw", [dict(batch=64, ctx=2048), dict(model="meta-llama/Llama-3.1-8B", batch=16, ctx=32768),
                                dict(batch=2, ctx=2048)])
def test_the_same_quantity_is_the_same_number_everywhere(kw):
    # The old tree priced the roofline node with a bf16 KV cache and the "Predicted" line with fp8
    # (9.02 ms vs 6.01 ms for fp8-dynamic): now both use the one KV dtype the tree chose.
    r = api.recommend(**kw)
    roof = node(r, "roofline").numbers
    p, win = r.performance, alt(r, r.scheme.id)
    assert roof["kv_dtype"] == p.kv_dtype == r.kv.dtype == win.kv_dtype
    assert roof["tokens_per_s"][r.scheme.id] == p.tokens_per_s == win.tokens_per_s
    assert roof["step_time_s"][r.scheme.id] == p.step_time_s == win.step_time_s
    assert roof["decode_tokens_per_s"][r.scheme.id] == p.decode_tokens_per_s == win.decode_tokens_per_s
    if r.workload.serving_mode == "continuous":
        # tokens/s = decode tokens/s x (1 - prefill share): the split adds up
        assert math.isclose(p.tokens_per_s, p.decode_tokens_per_s * (1 - p.prefill_share), rel_tol=1e-12)
        assert "prefill included" in p.includes
    else:
        # synchronous: the batch is prefilled, then decoded; its B x O output tokens take its E2E
        from quantadvise.workload import Workload

        out = Workload(**kw).output_tokens  # 256 by default (defaults.OUTPUT_TOKENS)
        assert math.isclose(p.tokens_per_s, p.concurrency * out / p.e2e_s, rel_tol=1e-12)
        assert p.tokens_per_s < p.decode_tokens_per_s and "prefill included" in p.includes
    # the same number from `predict` (what the CI gate prices a deployment with)
    pred = api.predict(kw, r.scheme.id, kv_dtype=r.kv.dtype)
    assert pred.kv_dtype == r.kv.dtype
    assert math.isclose(pred.tokens_per_s, p.tokens_per_s, rel_tol=1e-12)
    assert math.isclose(pred.decode_tokens_per_s, p.decode_tokens_per_s, rel_tol=1e-12)


def test_bf16_is_1x_itself_and_absent_when_it_cannot_load():
    # bf16's own row used to read "1.17x vs bf16" (priced with fp8 KV against a bf16-KV baseline)
    r = api.recommend(batch=64, ctx=2048)
    assert alt(r, "bf16").speedup_vs_bf16 == 1.0
    assert r.kv.dtype in r.performance.baseline
    # 70B on one H100: bf16 (141 GB) cannot load, so no candidate gets a "vs bf16" figure
    r = api.recommend(model="meta-llama/Llama-3.1-70B", batch=8, ctx=4096)
    assert all(a.speedup_vs_bf16 is None for a in r.alternatives)
    assert r.performance.speedup_vs_bf16 is None and "cannot serve" in r.performance.baseline


def test_headline_names_a_deployable_candidate():
    # the old roofline headline named schemes later vetoed or refused (26 of 60 runs)
    for kw in (dict(batch=1, ctx=2048), dict(model="Qwen/Qwen2.5-32B", gpu="b200", batch=256, ctx=4096,
                                             task="reasoning"), dict(batch=8, ctx=4096, gpu="l40s", engine="sglang")):
        r = api.recommend(**kw)
        assert node(r, "roofline").decision.split(": ", 1)[-1].startswith(r.scheme.id)
        removed = {a.scheme for a in r.alternatives if a.status in ("vetoed", "not-supported")}
        assert not removed & set(node(r, "roofline").numbers["tokens_per_s"])


def test_fit_bound_is_stated_for_both_kv_dtypes_and_agrees_with_the_pick():
    # 70B at 64 x 8k on one H100: no candidate holds the batch; the fit node states the bits/param a
    # full batch would need with each KV dtype instead of one bound the pick then contradicts
    r = api.recommend(model="meta-llama/Llama-3.1-70B", gpu="h100", batch=64, ctx=8192)
    fit = node(r, "fit")
    assert "bits/param with a bf16 KV cache" in fit.decision or fit.numbers["max_bits_per_param_kv_bf16"] is None
    assert r.scheme.id in fit.numbers["holds_part_of_batch"] and "priced at the concurrency" in fit.decision


def test_regrouped_description_says_its_group():
    # gpt-oss: K = 2880 is not divisible by 128, so the W4 presets run group 64; the description said
    # "group 128"
    r = api.recommend(model="openai/gpt-oss-120b", gpu="h100", batch=16, ctx=4096)
    a = alt(r, "w4a16-g64")
    assert "group 64" in a.description and "group 128" not in a.description


@pytest.mark.parametrize("model, router", [
    # transformers modeling_mixtral: MixtralSparseMoeBlock.gate; modeling_qwen3_moe: Qwen3MoeSparseMoeBlock.gate
    ("mistralai/Mixtral-8x7B-v0.1", r"re:.*block_sparse_moe\.gate$"),
    ("Qwen/Qwen3-30B-A3B", r"re:.*mlp\.gate$"),
])
def test_moe_recipe_keeps_the_router_16bit(model, router):
    # the MoE llm-compressor recipe ignored only lm_head, so routers would be quantized; the sizing
    # (LayerPolicy keep=("router",)) never counted them as quantized
    r = api.recommend(model=model, gpu="h100", gpus=2, batch=8, ctx=4096, candidates=["bf16", "w4a16"])
    assert r.scheme.id == "w4a16"
    assert router in r.checkpoint.quantization_config["ignore"] and "lm_head" in r.checkpoint.quantization_config["ignore"]
    assert router.replace("\\", "\\\\") in r.checkpoint.recipe or router in r.checkpoint.recipe


def _recipe_kwargs(recipe: str) -> dict:
    """The keyword arguments of the recipe's modifier call, parsed as Python (the recipe must be
    code a user can paste: SyntaxWarnings are errors here)."""
    import ast
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tree = ast.parse(recipe, mode="eval")
    call = tree.body
    recipe_kw = next(k.value for k in call.keywords if k.arg == "recipe")
    mod = recipe_kw[-1] if isinstance(recipe_kw, ast.List) else recipe_kw
    return {k.arg: ast.literal_eval(k.value) for k in mod.keywords}


def _gpt_oss_16bit(tmp_path):
    import json
    from pathlib import Path

    cfg = json.loads((Path(__file__).resolve().parents[3] / "data" / "models" / "openai" / "gpt-oss-120b.json")
                     .read_text())
    cfg.pop("quantization_config", None)
    folder = tmp_path / "gpt-oss-120b-bf16"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    return str(folder)


def test_a_regrouped_w4a16_is_produced_and_described_with_its_own_group(tmp_path):
    # gpt-oss-120b's linears have K = 2880 = 2^6 x 45: group 128 does not divide it (2880 / 128 =
    # 22.5), group 64 does (45). compressed-tensors' W4A16 preset is group 128
    # (compressed_tensors/quantization/quant_scheme.py, W4A16: group_size=128), so neither the
    # preset name nor "scheme=W4A16" may describe the checkpoint: the recipe writes the config
    # group out, and the GPTQ alternative says g64.
    # the 16-bit gpt-oss-120b (its config without the shipped MXFP4 quantization_config): the shipped
    # checkpoint would otherwise be weighed too, and the recipe is written for the recommendation only
    r = api.recommend(model=_gpt_oss_16bit(tmp_path), gpu="h200", accuracy_tolerance=4, candidates=["w4a16"])
    assert r.scheme.id == "w4a16-g64"
    # the note names the regroup; recommend has no --group option to point at (roofline and size do)
    assert any("uses group 64" in a for a in r.assumptions) and not any("--group" in a for a in r.assumptions)
    ck = r.checkpoint
    assert "preset W4A16" not in ck.summary and "groups of 64" in ck.summary
    assert ck.compressed_tensors_preset is None
    assert not any("g128" in a for a in ck.alternatives) and any("g64" in a for a in ck.alternatives)
    kw = _recipe_kwargs(ck.recipe)
    assert "scheme" not in kw
    weights = kw["config_groups"]["group_0"]["weights"]
    assert (weights["num_bits"], weights["strategy"], weights["group_size"]) == (4, "group", 64)
    # the recipe writes what the checkpoint declares
    assert weights == ck.quantization_config["config_groups"]["group_0"]["weights"]
    # gpt-oss's router stays 16-bit (transformers modeling_gpt_oss: GptOssMLP.router)
    assert r"re:.*mlp\.router$" in kw["ignore"]


def test_every_recipe_is_valid_python(tmp_path):
    # the ignore regexes hold backslashes ("re:.*mlp\.router$"): written into a plain string
    # literal they are invalid escapes (SyntaxWarning on Python 3.12+)
    for kw in (dict(model=_gpt_oss_16bit(tmp_path), gpu="h200", accuracy_tolerance=4, candidates=["w4a16"]),
               dict(model="mistralai/Mixtral-8x7B-v0.1", gpu="h100", gpus=2, batch=8, ctx=4096,
                    candidates=["bf16", "w4a16"]),
               dict(batch=64, ctx=2048, candidates=["fp8-dynamic"])):
        r = api.recommend(**kw)
        assert r.checkpoint.recipe is not None
        assert _recipe_kwargs(r.checkpoint.recipe)["ignore"] == r.checkpoint.quantization_config["ignore"]
