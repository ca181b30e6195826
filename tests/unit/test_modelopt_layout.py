"""ModelOpt's {producer, quantization} layout as config.json's quantization_config is read like
hf_quant_config.json, because both engines read it that way (vLLM 0.33.0, SGLang 0.5.23 wheels on file)."""

from __future__ import annotations

import json

import pytest

from quantadvise import catalog
from quantadvise.checkpoint.parse import parse_checkpoint
from quantadvise.engines.resolution import resolve

VLLM = catalog.get_engine("vllm", "0.33.0")
SGL = catalog.get_engine("sglang", "0.5.23")
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
         "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
         "vocab_size": 128256, "max_position_embeddings": 8192, "torch_dtype": "bfloat16", "rms_norm_eps": 1e-05,
         "tie_word_embeddings": False}


def block(algo: str, **extra) -> dict:
    return {"producer": {"name": "modelopt", "version": "0.29.0"},
            "quantization": {"quant_algo": algo, "kv_cache_quant_algo": "FP8", "group_size": 16,
                             "exclude_modules": ["lm_head"], **extra}}


def kinds(r) -> dict[str, object]:
    return {f.kind: f for f in r.findings}


@pytest.mark.parametrize("algo", ["FP8", "NVFP4"])
def test_the_block_in_config_json_reads_as_the_same_side_file(algo):
    # vllm/transformers_utils/config.py:955-966: config.json's quantization_config, else hf_quant_config.json,
    # becomes config.quantization_config; the convertor then tests that one object
    # (model_arch_config_convertor.py:249-256: producer name "modelopt" or a legacy modelopt_quant_config)
    inline = parse_checkpoint({**LLAMA, "quantization_config": block(algo)})
    side = parse_checkpoint(LLAMA, {"hf_quant_config.json": block(algo)})
    assert inline is not None and side is not None
    assert inline.family == side.family == "modelopt" and inline.found_in == "quantization_config"
    assert inline.groups == side.groups and inline.kv_cache_algo == side.kv_cache_algo == "FP8"
    assert inline.ignore == side.ignore == ("lm_head",)
    for engine in (VLLM, SGL):
        a, b = resolve(engine, inline, capability=100), resolve(engine, side, capability=100)
        assert (a.status, a.resolved_method) == (b.status, b.resolved_method) and not a.refused


def test_vllm_refuses_an_algorithm_its_convertor_does_not_normalize_sglang_serves_it():
    # model_arch_config_convertor.py:259-270: only FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, NVFP4 and
    # MIXED_PRECISION get a quant_method, else `raise ValueError(f"Unknown ModelOpt quant algo: {quant_algo}")`
    ck = parse_checkpoint({**LLAMA, "quantization_config": block("W4A16_NVFP4")})
    r = resolve(VLLM, ck, capability=100)
    assert r.refused and kinds(r)["modelopt_unknown_algo"].engine_message == \
        "Unknown ModelOpt quant algo: W4A16_NVFP4"
    # SGLang: no quant_method, so _parse_modelopt_quant_config({"quantization": quant_cfg}) (model_config.py:1733-1738)
    # unwraps the nested block (unwrap_modelopt_quantization_config, :116-121) and "FP4" in quant_algo gives
    # modelopt_fp4 (:1866)
    s = resolve(SGL, ck, capability=100)
    assert not s.refused and s.resolved_method == "modelopt_fp4"


def test_the_legacy_modelopt_quant_config_key_marks_the_layout_too():
    # model_arch_config_convertor.py:251-254: is_legacy_modelopt = "modelopt_quant_config" in quantization
    qc = {"quantization": {"quant_algo": "W4A8_AWQ", "modelopt_quant_config": {}, "group_size": 128}}
    r = resolve(VLLM, parse_checkpoint({**LLAMA, "quantization_config": qc}), capability=90)
    assert r.refused and "modelopt_unknown_algo" in kinds(r)


def test_a_flat_modelopt_config_is_not_normalized_by_the_convertor():
    # a flat quantization_config with quant_method "modelopt" has no producer block: the convertor's test
    # (:249-256) is false, the algorithm is checked later by QUANT_ALGOS (modelopt.py:396-401), which takes
    # W4A16_NVFP4
    ck = parse_checkpoint({**LLAMA, "quantization_config": {"quant_method": "modelopt", "quant_algo": "W4A16_NVFP4",
                                                             "group_size": 16}})
    assert "modelopt_unknown_algo" not in kinds(resolve(VLLM, ck, capability=100))


def test_inspect_no_longer_exits_2(tmp_path, cli):
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA, "quantization_config": block("FP8")}))
    r = cli("inspect", str(tmp_path), "--gpu", "h100", "-e", "vllm")
    assert r.code == 0, r.stderr
    assert "from quantization_config" in r.stdout and "method modelopt" in r.stdout


def test_fp8_pb_wo_is_w8a8_with_dynamic_128_group_activations():
    # Despite "WO" in its name, both engines serve FP8_PB_WO with activations quantized at run time:
    # vllm 0.33.0 modelopt.py:2733-2744 ("PbWo: 128x128 block-static weight, dynamic per-block activation
    # (W8A8)": QuantSpec(weight=kFp8Static128BlockSym, activation=kFp8Dynamic128Sym)); sglang 0.5.23
    # modelopt_quant.py:934-941 (Fp8Config(activation_scheme="dynamic", weight_block_size=[128, 128]))
    ck = parse_checkpoint(dict(LLAMA, quantization_config={"quant_method": "modelopt", "quant_algo": "FP8_PB_WO"}), {})
    assert ck is not None
    (g,) = ck.groups
    w, a = g.weights, g.input_activations
    assert w is not None and w.num_bits == 8 and w.type == "float"
    assert a is not None and a.num_bits == 8 and a.type == "float" and a.dynamic and a.group_size == 128
