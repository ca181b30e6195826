"""Issue 11, group 1: a model that ships quantized is judged as shipped first."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import quantadvise as api
from quantadvise import catalog

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "checkpoints"


def node(rec, name):
    return next(t for t in rec.trace if t.node == name)


def alt(rec, scheme):
    return next(a for a in rec.alternatives if a.scheme == scheme)


def test_gpt_oss_native_mxfp4_is_a_candidate_of_65_gb():
    # openai/gpt-oss-120b config.json: quant_method mxfp4, modules_to_not_convert = self_attn, router,
    # embed_tokens, lm_head. The experts are 36 layers x 128 experts x 3 x 2880 x 2880 =
    # 114,661,785,600 weights; MXFP4 stores 4 bits + one 8-bit e8m0 scale per 32 = 4.25 bits:
    # 60,914,073,600 B. The other 116,829,156,672 - 114,661,785,600 = 2,167,371,072 params stay bf16:
    # 4,334,742,144 B. Total 65,248,815,744 B (the model card: "fits into a single 80GB GPU").
    r = api.recommend(model="openai/gpt-oss-120b", gpu="h100", batch=16, ctx=4096)
    nat = alt(r, "native-mxfp4")
    assert nat.native and nat.weights_bytes == 65_248_815_744
    n = node(r, "native")
    assert n.numbers["quant_method"] == "mxfp4" and n.numbers["quantized_components"] == ["experts"]
    assert set(n.numbers["kept_16bit"]) == {"attention", "router", "embedding", "lm_head"}


def test_gpt_oss_is_served_as_shipped_on_both_engines():
    # One H100: the 118 GB 8-bit re-quantizations cannot load; the 4-bit re-quantizations carry a
    # published 0-2.6 point range (RedHatAI 70B w4a16 card) that reaches the 1-point tolerance, so
    # they rank after the checkpoint whose accuracy is the publisher's own.
    r = api.recommend(model="openai/gpt-oss-120b", gpu="h100", batch=16, ctx=4096)
    assert r.scheme.id == "native-mxfp4" and r.scheme.native
    vllm = shlex.split(r.engine_args["vllm"])
    assert vllm[:3] == ["vllm", "serve", "openai/gpt-oss-120b"] and "--quantization" not in vllm
    # SGLang loads quant_method mxfp4 (Mxfp4Config) and warns it is "not fully optimized" off SM100
    # (sglang 0.5.23 srt/configs/model_config.py:2161-2171): a command and a caution, not a refusal
    assert r.engine_args["sglang"] is not None and "--quantization" not in r.engine_args["sglang"]
    assert r.checkpoint.recipe is None and r.checkpoint.quantization_config["quant_method"] == "mxfp4"
    for a in r.alternatives:
        if a.status in ("runner-up", "slower") and a.tokens_per_s > r.performance.tokens_per_s:
            assert "ranks after native-mxfp4" in a.reason  # a faster re-quantization says why it lost


def test_gpt_oss_native_survives_reasoning_and_sglang():
    # The native checkpoint is the publisher's model: arXiv:2504.04823's reasoning findings describe
    # re-quantizing a 16-bit model, so they are reported, not applied, to it.
    r = api.recommend(model="openai/gpt-oss-120b", gpu="h100", batch=16, ctx=4096, task="reasoning")
    assert r.scheme.id == "native-mxfp4"
    assert "native-mxfp4" not in node(r, "accuracy").numbers["vetoed"]
    r = api.recommend(model="openai/gpt-oss-120b", gpu="h100", batch=16, ctx=4096, engine="sglang")
    assert r.scheme.id == "native-mxfp4" and alt(r, "native-mxfp4").status == "recommended"


def test_deepseek_v3_keeps_its_fp8_checkpoint():
    # DeepSeek-V3 ships fp8 128x128 blocks (config.json quant_method fp8, weight_block_size [128,128]).
    # On 8 x H200 fp8-dynamic / fp8-block re-quantizations predict within the 0.5% tie: list order used
    # to pick fp8-dynamic; now the shipped checkpoint wins ties and every re-quantization says why.
    r = api.recommend(model="deepseek-ai/DeepSeek-V3", gpu="h200", gpus=8, batch=64, ctx=32768)
    assert r.scheme.id == "native-fp8"
    assert "--quantization" not in r.engine_args["vllm"]
    for a in r.alternatives:
        if a.reason.startswith("ties with"):
            assert "checkpoint as shipped" in a.reason


def test_local_awq_folder_is_judged_as_awq(tmp_path):
    # hugging-quants Meta-Llama-3.1-70B-Instruct-AWQ-INT4 (tests/fixtures/checkpoints): AutoAWQ GEMM,
    # 4-bit, group 128, zero point. Judged as that checkpoint, not as a bf16 70B to re-quantize.
    doc = json.loads((FIXTURES / "hugging-quants-meta-llama-3.1-70b-instruct-awq-int4.json").read_text())
    folder = tmp_path / "Llama-3.1-70B-Instruct-AWQ-INT4"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(doc["config"]))
    r = api.recommend(model=str(folder), gpu="h100", batch=8, ctx=4096)
    assert node(r, "native").numbers["quant_method"] == "awq"
    assert r.scheme.id == "native-awq"
    assert shlex.split(r.engine_args["vllm"])[2] == str(folder)
    # its weights are what an AWQ GEMM checkpoint stores, the same number `size --scheme awq` gives
    awq = catalog.get_scheme("awq")
    from quantadvise.catalog.resolve import load_model
    from quantadvise.memory.sizing import size_model

    arch, _ = load_model(str(folder))
    assert alt(r, "native-awq").weights_bytes == size_model(arch, awq).total_bytes


def test_a_16bit_checkpoint_has_no_native_candidate():
    r = api.recommend(batch=1, ctx=2048)
    n = node(r, "native")
    assert n.numbers["ships_quantized"] is False and not any(a.native for a in r.alternatives)


def _requantizations(model, **kw):
    """The candidates recommend weighs for ``model``, by id (the same resolution the tree walks)."""
    from quantadvise.api.recommend import _parse, _resolve

    inputs = _resolve(_parse(dict(model=model, **kw)), set())
    return inputs, {c.scheme.id: c for c in inputs.candidates}


def test_a_requantization_keeps_what_the_shipped_checkpoint_keeps_16bit():
    # gpt-oss-120b's quantization_config lists modules_to_not_convert = model.layers.*.self_attn,
    # model.layers.*.mlp.router, model.embed_tokens, lm_head: the publisher keeps attention, router,
    # embedding and lm_head in bf16. A re-quantization follows the same layer policy (issue 11: "recipes
    # from the same layer policy as the sizing ... whatever the model's own native checkpoint keeps in
    # 16-bit"): only the expert weights change format.
    from quantadvise.checkpoint.write import ignore_list, llmcompressor_recipe
    from quantadvise.memory.sizing import size_model

    inputs, c = _requantizations("openai/gpt-oss-120b", gpu="h100")
    w4 = c["w4a16-g64"].scheme
    assert not w4.policy.quantizes("attention") and not w4.policy.quantizes("router")
    assert not w4.policy.quantize_lm_head and not w4.policy.quantize_embedding
    assert w4.policy.quantizes("experts")
    # Sizing: int4 with a bf16 scale per 64 is 4 + 16/64 = 4.25 bits, as MXFP4's 4 + 8/32: the experts'
    # 114,661,785,600 weights take 60,914,073,600 B either way and the bf16 rest is the same
    # 4,334,742,144 B, so the re-quantization weighs what the shipped checkpoint does (65,248,815,744 B,
    # test_gpt_oss_native_mxfp4_is_a_candidate_of_65_gb) plus compressed-tensors' weight_shape record
    # (2 x int64 = 16 B) per packed matrix: 36 layers x 128 experts x 3 matrices x 16 B = 221,184 B.
    # Quantizing attention instead (the old recipe) made it 63.85 GB: 955,514,880 attention weights
    # at 4.25 instead of 16 bits.
    assert size_model(inputs.arch, w4).total_bytes == 65_248_815_744 + 36 * 128 * 3 * 16 == 65_249_036_928
    # Recipe: the ignore list covers every module the checkpoint keeps, and no expert
    ignore = ignore_list(w4, inputs.arch)
    import re

    def ignored(name):
        return any(name == p or (p.startswith("re:") and re.match(p[3:], name)) for p in ignore)

    for name in ("model.layers.0.self_attn.q_proj", "model.layers.35.self_attn.k_proj",
                 "model.layers.7.self_attn.v_proj", "model.layers.7.self_attn.o_proj",
                 "model.layers.3.mlp.router", "lm_head"):
        assert ignored(name), name
    for name in ("model.layers.0.mlp.experts.gate_proj", "model.layers.0.mlp.experts.up_proj",
                 "model.layers.0.mlp.experts.down_proj"):
        assert not ignored(name), name
    recipe = llmcompressor_recipe(w4, c["w4a16-g64"].deploy, "openai/gpt-oss-120b", inputs.arch)
    assert recipe is not None and "self_attn\\\\.q_proj" in recipe and "mlp\\\\.router" in recipe
    assert "attention kept 16-bit" in w4.description
    # every re-quantization of it follows the same policy (8-bit and FP4 ones alike)
    for sid in ("fp8-dynamic", "nvfp4", "w4a8-fp8-g64"):
        assert not c[sid].scheme.policy.quantizes("attention"), sid


def test_a_checkpoint_that_keeps_only_lm_head_changes_nothing(tmp_path):
    # The AWQ 70B checkpoint quantizes attention and MLP and keeps embedding and lm_head 16-bit, as every
    # default scheme does: the re-quantizations are the presets as they are.
    doc = json.loads((FIXTURES / "hugging-quants-meta-llama-3.1-70b-instruct-awq-int4.json").read_text())
    folder = tmp_path / "Llama-3.1-70B-Instruct-AWQ-INT4"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(doc["config"]))
    _, c = _requantizations(str(folder), gpu="h100")
    assert c["w4a16"].scheme == catalog.get_scheme("w4a16")
    assert c["fp8-dynamic"].scheme == catalog.get_scheme("fp8-dynamic")
