"""Checkpoint verdicts found wrong on new real configs (issue 27), each following the engine line it
quotes (vLLM 0.33.0 and SGLang 0.5.23 wheels, read with the research notes of that issue). Every test
here failed on the code before the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantadvise import catalog
from quantadvise.checkpoint.parse import parse_checkpoint, parse_quantization_config
from quantadvise.engines.resolution import resolve

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
VLLM = catalog.get_engine("vllm", "0.33.0")
SGL = catalog.get_engine("sglang", "0.5.23")
SGLANG_RELEASES = [catalog.get_engine("sglang", v) for v in ("0.5.20", "0.5.21", "0.5.22", "0.5.23")]
VLLM_RELEASES = [catalog.get_engine("vllm", v) for v in ("0.30.0", "0.31.0", "0.32.0", "0.33.0")]


def fixture(name: str):
    d = json.loads((FIXTURES / name).read_text())
    side = {"hf_quant_config.json": d["hf_quant_config"]} if "hf_quant_config" in d else {}
    return parse_checkpoint(d["config"], side)


def kinds(r) -> dict:
    return {f.kind: f for f in r.findings}


# ---------------------------------------------------------------------------------------------------
# 1. Flat ModelOpt NVFP4 with config_groups
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["nvidia-gemma-4-31b-it-nvfp4-modelopt-flat.json",
                                  "nvidia-qwen3.5-122b-a10b-nvfp4-modelopt-flat.json",
                                  "nvidia-glm-5.1-nvfp4-modelopt-flat.json"])
def test_flat_modelopt_nvfp4_with_config_groups_loads_in_both_engines(name):
    ck = fixture(name)
    assert ck.family == "modelopt" and ck.quant_algo == "NVFP4" and ck.details["quant_algo"] == "NVFP4"
    # vLLM modelopt.py:343-346, the flat branch:
    #     # Compressed-tensors style format (config.json quantization_config):
    #     quant_method = config.get("quant_algo")
    # then modelopt.py:396 `if quant_method not in QUANT_ALGOS:` (NVFP4 is in it): no refusal
    v = resolve(VLLM, ck, capability=100)
    assert not v.refused, [f.message for f in v.findings]
    assert v.resolved_method == "modelopt_fp4"
    # SGLang modelopt_quant.py:1616 `quant_method = config.get("quant_algo")` and :1673
    # `if quant_method not in ["FP8", "NVFP4", "NVFP4_AWQ", "W4A16_NVFP4"]:` -> NVFP4 passes
    s = resolve(SGL, ck, capability=100)
    assert not s.refused, [f.message for f in s.findings]
    assert s.resolved_method == "modelopt_fp4"
    # the kv_cache_scheme object {type: float, num_bits: 8} is FP8 in both flat readers (vLLM modelopt.py:349-354)
    assert ck.kv_cache_algo == "FP8"


# ---------------------------------------------------------------------------------------------------
# 2. ModelOpt FP8 without quant_method, config_groups without targets, string kv_cache_scheme
# ---------------------------------------------------------------------------------------------------

def test_modelopt_fp8_without_quant_method_reads_and_each_engine_reads_it_its_way():
    ck = fixture("qwen-qwen3-32b-fp8-static-pertensor-modelopt-no-quant-method.json")
    # no 'targets' in its config_groups: not an error (the engines never read ModelOpt's groups' targets)
    assert ck.family == "modelopt" and ck.quant_algo == "FP8" and not ck.method_declared
    # the string kv_cache_scheme "FP8" is read by neither FP8 reader: SGLang modelopt_quant.py:481-490 takes a dict
    # only, then `kv_cache_quant_method = config.get("kv_cache_quant_algo")` (None here)
    assert ck.kv_cache_algo is None and ck.kv_cache_quant is None
    # SGLang configs/model_config.py:1733-1738: `if ("quant_method" not in quant_cfg or ...): parsed_cfg =
    # self._parse_modelopt_quant_config({"quantization": quant_cfg})`, and :1868-1869
    # `elif quant_algo == "FP8": return {"quant_method": "modelopt_fp8", "quant_algo": quant_algo}`
    s = resolve(SGL, ck, capability=90)
    assert not s.refused and s.resolved_method == "modelopt_fp8"
    # vLLM model_arch_config_convertor.py:274 `quant_method = quant_cfg.get("quant_method", "").lower()` (no
    # producer block, so nothing set one) and config/model.py:1452 `quant_method = quant_method if quant_method
    # != "" else None`: the model is built unquantized and the fp8 tensors have nowhere to load
    v = resolve(VLLM, ck, capability=90)
    assert v.resolved_method is None and v.refused and "no_quant_method" in kinds(v)


def test_inspect_of_the_modelopt_config_without_targets_no_longer_exits_2(tmp_path, cli):
    d = json.loads((FIXTURES / "qwen-qwen3-32b-fp8-static-pertensor-modelopt-no-quant-method.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(d["config"]))
    r = cli("inspect", str(tmp_path), "--gpu", "h100")
    assert r.code == 0, r.stderr
    assert "modelopt_fp8" in r.stdout


# ---------------------------------------------------------------------------------------------------
# 3. 2:4-sparse FP8 (compressed-tensors sparse-24-bitmask)
# ---------------------------------------------------------------------------------------------------

def _sparse_fp8() -> dict:
    # the config groups of nm-testing/SparseLlama-3.1-8B-gsm8k-pruned.2of4-tensor_wts_tensor_act_fp8-BitM (its
    # sparsity block was not read); the sparsity_config is llm-compressor's own 2:4 export
    # (nm-testing/llama2.c-stories42M-pruned2.4-compressed, fixture nm-testing-llama2c-stories42m-...)
    w = {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True, "dynamic": False}
    sparsity = json.loads((FIXTURES / "nm-testing-llama2c-stories42m-pruned2of4-compressed-sparsity-only.json")
                          .read_text())["config"]["quantization_config"]["sparsity_config"]
    return {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": w, "input_activations": w}},
            "sparsity_config": sparsity}


@pytest.mark.parametrize("engine", SGLANG_RELEASES, ids=lambda e: e.label)
def test_sglang_refuses_2_4_sparse_fp8(engine):
    ck = parse_quantization_config(_sparse_fp8())
    # compressed_tensors.py:1058-1062 (0.5.23): `if self.supports_cutlass_24(...): raise ImportError(
    # "CompressedTensors24 is not supported now")`; supports_cutlass_24 (:1201-1263) holds for structure 2:4 in
    # format sparse-24-bitmask with 8-bit weights per tensor and 8-bit activations per tensor
    r = resolve(engine, ck, capability=90)
    f = kinds(r).get("ct_sparsity_24")
    assert r.refused and f is not None
    assert f.engine_message == "CompressedTensors24 is not supported now" and f.engine_exception == "ImportError"


@pytest.mark.parametrize("engine", VLLM_RELEASES, ids=lambda e: e.label)
def test_vllm_refuses_any_sparsity_config_in_its_own_words(engine):
    # compressed_tensors.py:296-300 (0.33.0): `raise DeprecationWarning("Sparsity support has been removed from
    # compressed-tensors. " "Please use a model without sparsity configuration.")`
    r = resolve(engine, parse_quantization_config(_sparse_fp8()), capability=90)
    f = kinds(r)["ct_sparsity_rejected"]
    assert f.engine_message == ("Sparsity support has been removed from compressed-tensors. Please use a model "
                                "without sparsity configuration.")
    assert f.engine_exception == "DeprecationWarning"


def test_sglang_weight_only_2_4_is_not_the_cutlass_path():
    # supports_cutlass_24: "Weight only quantization is not-supported" -> returns False (:1240-1242): the layer
    # goes on to the scheme dispatch, so the 2:4 refusal is not claimed there
    qc = _sparse_fp8()
    qc["config_groups"]["group_0"]["input_activations"] = None
    r = resolve(SGL, parse_quantization_config(qc), capability=90)
    assert "ct_sparsity_24" not in kinds(r)


# ---------------------------------------------------------------------------------------------------
# 4. Experts-only MXFP4 MoE under SGLang
# ---------------------------------------------------------------------------------------------------

def _experts_mxfp4() -> dict:
    # an llm-compressor MXFP4 export that quantizes only the routed experts (attention, router, lm_head 16-bit)
    w = {"num_bits": 4, "type": "float", "strategy": "group", "group_size": 32, "symmetric": True, "dynamic": False}
    return {"quant_method": "compressed-tensors", "format": "mxfp4-pack-quantized",
            "ignore": ["lm_head", "re:.*self_attn.*", "re:.*mlp.gate$"],
            "config_groups": {"group_0": {"targets": ["re:.*mlp\\.experts.*"], "weights": w}}}


@pytest.mark.parametrize("engine", SGLANG_RELEASES, ids=lambda e: e.label)
def test_sglang_serves_experts_only_mxfp4_through_its_moe_method(engine):
    # compressed_tensors.py:236-242 (0.5.23): `if self._is_mxfp4_moe(layer_name=prefix) and not _is_npu:` ...
    # `logger.info_once("Using Mxfp4MoEMethod for MXFP4 compressed-tensors MoE")` / `return Mxfp4MoEMethod(...)`;
    # _is_mxfp4_moe (:676-696): `if "mxfp4" in (self.quant_format or ""): return True`
    r = resolve(engine, parse_quantization_config(_experts_mxfp4()), capability=90)
    assert not r.refused, [f.message for f in r.findings]
    assert r.groups[0].scheme_class == "Mxfp4MoEMethod"
    assert kinds(r)["mxfp4_moe"].engine_message == "Using Mxfp4MoEMethod for MXFP4 compressed-tensors MoE"


def test_mxfp4_on_every_linear_still_meets_the_dense_dispatch():
    # dense linears go through _get_scheme_from_parts: mxfp4-pack-quantized is no activation format
    # (utils.py:13-21) and float4 weights without activations are no WNA16 group -> :862 `raise
    # NotImplementedError("No compressed-tensors compatible scheme was found.")`
    qc = _experts_mxfp4()
    qc["config_groups"]["group_0"]["targets"] = ["Linear"]
    r = resolve(SGL, parse_quantization_config(qc), capability=90)
    assert r.refused and "ct_no_scheme" in kinds(r)


# ---------------------------------------------------------------------------------------------------
# 5. MLX (no quant_method)
# ---------------------------------------------------------------------------------------------------

def _mlx():
    d = json.loads((FIXTURES / "alexgusevski-lucie-7b-instruct-mlx-q8.json").read_text())
    return parse_checkpoint(d["config"], {})


@pytest.mark.parametrize("engine", SGLANG_RELEASES, ids=lambda e: e.label)
def test_sglang_names_the_empty_method_for_mlx(engine):
    ck = _mlx()
    assert ck.family == "mlx" and not ck.method_declared
    # model_config.py:2077-2079 `quant_method = quant_cfg.get("quant_method", "" if not self.quantization else
    # self.quantization).lower()`, then :2151-2155 `raise ValueError(f"Unknown quantization method:
    # {self.quantization}. Must " f"be one of {supported_quantization}.")` with self.quantization == ""
    r = resolve(engine, ck, capability=90)
    msg = kinds(r)["unknown_method"].engine_message
    assert msg.startswith("Unknown quantization method: . Must be one of [") and "mlx" not in msg.split(".")[0]


@pytest.mark.parametrize("engine", VLLM_RELEASES, ids=lambda e: e.label)
def test_vllm_builds_mlx_unquantized_and_never_prints_unknown_method(engine):
    # the "Unknown quantization method" error (config/model.py:1464-1469) fires only for a non-None name; ""
    # becomes None at config/model.py:1452
    r = resolve(engine, _mlx(), capability=90)
    assert "unknown_method" not in kinds(r) and "no_quant_method" in kinds(r)
    assert r.resolved_method is None


# ---------------------------------------------------------------------------------------------------
# 6. SGLang's activation formats include pack-quantized
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", SGLANG_RELEASES, ids=lambda e: e.label)
def test_sglang_reads_pack_quantized_as_an_activation_format(engine):
    # sglang/srt/layers/quantization/compressed_tensors/utils.py:13-21: _ACTIVATION_QUANTIZATION_FORMATS = [...,
    # CompressionFormat.nvfp4_pack_quantized.value, CompressionFormat.pack_quantized.value] (line 19), so a
    # pack-quantized W8A8 int8 group reaches `if self._is_dynamic_token_w8a8(...)` (compressed_tensors.py:847)
    assert "pack-quantized" in engine.compressed_tensors.activation_formats
    w = {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True, "dynamic": False}
    a = {"num_bits": 8, "type": "int", "strategy": "token", "symmetric": True, "dynamic": True}
    qc = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
          "config_groups": {"group_0": {"targets": ["Linear"], "weights": w, "input_activations": a}}}
    r = resolve(engine, parse_quantization_config(qc), capability=90)
    assert not r.refused and r.groups[0].scheme_class == "CompressedTensorsW8A8Int8"


def test_vllm_activation_formats_lack_pack_quantized():
    # vllm .../compressed_tensors/utils.py:43-50 lists naive-, int-, float- and nvfp4-pack-quantized only
    assert "pack-quantized" not in VLLM.compressed_tensors.activation_formats


# ---------------------------------------------------------------------------------------------------
# The underscore spelling of compressed-tensors
# ---------------------------------------------------------------------------------------------------

def _ct_underscore(method: str = "compressed_tensors"):
    return parse_quantization_config({
        "quant_method": method, "format": "float-quantized", "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"],
                                      "weights": {"num_bits": 8, "type": "float", "symmetric": True,
                                                  "strategy": "channel"},
                                      "input_activations": {"num_bits": 8, "type": "float", "symmetric": True,
                                                            "strategy": "token", "dynamic": True}}},
        "ignore": ["lm_head"]})


@pytest.mark.parametrize("version", ["0.8.5.post1", "0.21.0", "0.34.0"])
@pytest.mark.parametrize("method", ["compressed_tensors", "COMPRESSED_TENSORS"])
def test_vllm_reads_the_underscore_spelling_as_compressed_tensors(version, method):
    # vLLM lower-cases quant_method and normalizes the library name before probing:
    #     quant_method = quant_method.replace("compressed_tensors", "compressed-tensors")
    # (0.8.5.post1 vllm/config.py:767-768; 0.34.0 vllm/transformers_utils/model_arch_config_convertor.py:277-278),
    # so the checkpoint loads as compressed-tensors (FP8 per-channel weights, dynamic per-token activations)
    r = resolve(catalog.get_engine("vllm", version), _ct_underscore(method), capability=90)
    assert not r.refused, [f.message for f in r.findings]
    assert r.resolved_method == "compressed-tensors" and r.config_class == "CompressedTensorsConfig"


def test_sglang_refuses_the_underscore_spelling():
    # SGLang 0.5.23 only lower-cases it (configs/model_config.py:2077-2079) and registers "compressed-tensors"
    # alone (layers/quantization/__init__.py:81), so :2151-2155 raises "Unknown quantization method:
    # compressed_tensors"
    r = resolve(SGL, _ct_underscore(), capability=90)
    assert r.refused
    assert kinds(r)["unknown_method"].engine_message.startswith("Unknown quantization method: compressed_tensors.")
