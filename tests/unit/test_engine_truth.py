"""Verdicts that follow the engines' own source (issue 13).

Each test reproduces one case where quantadvise used to say "loads" where the engine raises, or
"refuses" where it serves, and quotes the line of the wheel on file (vLLM 0.33.0, sha256 4b6bdec4...;
SGLang 0.5.23, sha256 00b3cd5b...) the expected verdict follows. The configs are the smallest
quantization_config that shows the case.
"""

from __future__ import annotations

import pytest

from quantadvise import catalog
from quantadvise.checkpoint.parse import parse_checkpoint, parse_quantization_config
from quantadvise.engines.resolution import resolve

VLLM = catalog.get_engine("vllm", "0.33.0")
SGL = catalog.get_engine("sglang", "0.5.23")


def kinds(r) -> dict[str, object]:
    return {f.kind: f for f in r.findings}


def gptq(bits: int, sym: bool) -> dict:
    return {"quant_method": "gptq", "bits": bits, "group_size": 128, "sym": sym, "desc_act": False}


# ---------------------------------------------------------------------------------------------
# vLLM AutoGPTQConfig / AutoAWQConfig validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("bits", "sym"), [(4, False), (3, True), (8, False), (2, True)])
def test_vllm_refuses_gptq_outside_its_type_map(bits, sym):
    # vllm/model_executor/layers/quantization/auto_gptq.py:99-102
    #     TYPE_MAP = {(4, True): scalar_types.uint4b8, (8, True): scalar_types.uint8b128}
    # auto_gptq.py:152-155
    #     if (weight_bits, is_sym) not in self.TYPE_MAP:
    #         raise ValueError(f"Unsupported quantization config: bits={weight_bits}, sym={is_sym}")
    r = resolve(VLLM, parse_quantization_config(gptq(bits, sym)), capability=90)
    f = kinds(r)["gptq_unsupported_config"]
    assert r.refused and r.resolved_method == "auto_gptq"
    assert f.engine_message == f"Unsupported quantization config: bits={bits}, sym={sym}"
    assert f.engine_exception == "ValueError" and f.source.endswith("auto_gptq.py:153-155")


@pytest.mark.parametrize(("bits", "sym"), [(4, True), (8, True)])
def test_vllm_loads_symmetric_4_and_8_bit_gptq(bits, sym):
    r = resolve(VLLM, parse_quantization_config(gptq(bits, sym)), capability=90)
    assert not r.refused and "gptq_unsupported_config" not in kinds(r)


def test_vllm_refuses_8_bit_awq():
    # vllm/model_executor/layers/quantization/auto_awq.py:182-184  TYPE_MAP = {4: scalar_types.uint4}
    # auto_awq.py:204-211
    #     if self.weight_bits not in self.TYPE_MAP: ... raise ValueError(f"Unsupported num_bits = ...
    awq8 = {"quant_method": "awq", "w_bit": 8, "q_group_size": 128, "zero_point": True, "version": "gemm"}
    r = resolve(VLLM, parse_quantization_config(awq8), capability=90)
    f = kinds(r)["awq_unsupported_bits"]
    assert r.refused
    assert f.engine_message == ("Unsupported num_bits = 8. Supported: 4. For 8-bit AWQ, use Marlin backend by "
                                "setting backend='awq:marlin' or backend='marlin'.")
    # 4-bit AWQ still loads (SGLang's 8-bit AWQ: test_sglang_refuses_8_bit_awq)
    awq4 = {**awq8, "w_bit": 4}
    assert not resolve(VLLM, parse_quantization_config(awq4), capability=90).refused


# ---------------------------------------------------------------------------------------------
# SGLang compressed-tensors NVFP4 below SM100; FP8 on Ampere: weight-only Marlin with the warning
# ---------------------------------------------------------------------------------------------

NVFP4 = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {"group_0": {
    "targets": ["Linear"],
    "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True},
    "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
                          "symmetric": True, "dynamic": "local"}}}, "ignore": ["lm_head"]}


def test_sglang_serves_nvfp4_w4a4_weight_only_below_sm100():
    # sglang/srt/layers/quantization/compressed_tensors/compressed_tensors.py:757-783
    #     if self._is_fp4a4_nvfp4(weight_quant, input_quant):
    #         is_fp4a4_nvfp4_supported = self._check_scheme_supported(..., error=False)
    #         ...
    #         logger.warning_once("NVFP4 w4a4 requires compute capability >= 10.0; serving "
    #                             "this checkpoint weight-only via FP4 Marlin instead. " ...)
    #         return CompressedTensorsW4A16Fp4(has_input_global_scale=True)
    r = resolve(SGL, parse_quantization_config(NVFP4), capability=90)
    assert not r.refused
    assert [g.scheme_class for g in r.groups] == ["CompressedTensorsW4A16Fp4"]
    f = kinds(r)["nvfp4_w4a4_marlin_fallback"]
    assert f.severity == "warning"
    assert f.engine_message == ("NVFP4 w4a4 requires compute capability >= 10.0; serving this checkpoint "
                                "weight-only via FP4 Marlin instead. Activation quantization is ignored.")
    # on Blackwell the W4A4 kernel runs and nothing is printed
    b = resolve(SGL, parse_quantization_config(NVFP4), capability=100)
    assert [g.scheme_class for g in b.groups] == ["CompressedTensorsW4A4Fp4"] and not b.findings


FP8_CT = {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"group_0": {
    "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
    "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True}}}}
MARLIN_FP8 = ("Your GPU does not have native support for FP8 computation but FP8 quantization is being used. "
              "Weight-only FP8 compression will be used leveraging the Marlin kernel. This may degrade performance "
              "for compute-heavy workloads.")


def test_fp8_on_ampere_prints_the_marlin_weight_only_warning_in_sglang():
    # sglang/srt/layers/quantization/marlin_utils_fp8.py:104-110 (prepare_fp8_layer_for_marlin):
    #     logger.warning_once("Your GPU does not have native support for FP8 computation but " ...)
    # compressed-tensors W8A8-FP8 below SM89 dispatches to CompressedTensorsW8A16Fp8, which prepares
    # the layer for Marlin (sglang compressed_tensors.py:819-824)
    r = resolve(SGL, parse_quantization_config(FP8_CT), capability=80)
    assert r.groups[0].scheme_class == "CompressedTensorsW8A16Fp8" and not r.refused
    assert kinds(r)["fp8_marlin_weight_only"].engine_message == MARLIN_FP8
    # a serialized fp8 checkpoint on an A100: SGLang auto-enables Marlin for 80 <= sm < 89 (sglang fp8_utils.py:2798)
    f8 = resolve(SGL, parse_quantization_config({"quant_method": "fp8", "activation_scheme": "dynamic"}),
                 capability=80)
    assert kinds(f8)["fp8_marlin_weight_only"].engine_message == MARLIN_FP8 and not f8.refused
    # on an H100 nothing is printed
    assert "fp8_marlin_weight_only" not in kinds(resolve(SGL, parse_quantization_config(FP8_CT), capability=90))


def test_vllm_fp8_on_ampere_warns_only_where_it_runs_marlin():
    # compressed-tensors W8A8-FP8 below SM89 dispatches to CompressedTensorsW8A16Fp8
    # (vllm compressed_tensors.py:909-912), which calls init_wfp8_a16_linear_kernel
    # (schemes/compressed_tensors_w8a16_fp8.py:112); its CUDA list is
    #     _POSSIBLE_WFP8A16_KERNELS = {PlatformEnum.CUDA: [HummingFP8ScaledMMLinearKernel, MarlinFP8ScaledMMLinearKernel]}
    # (kernels/linear/__init__.py:522-526), and Humming is supported from SM75 (scaled_mm/humming.py:40-41) with
    # humming-kernels a Requires-Dist of the wheel: Humming runs, and the Marlin message (logged only by
    # prepare_fp8_layer_for_marlin, marlin_utils_fp8.py:108-113) is never printed
    r = resolve(VLLM, parse_quantization_config(FP8_CT), capability=80)
    assert r.groups[0].scheme_class == "CompressedTensorsW8A16Fp8" and not r.refused
    assert "fp8_marlin_weight_only" not in kinds(r) and r.status == "ok"
    assert kinds(r)["weight_only_silent"].severity == "info"
    # a serialized fp8 checkpoint: Fp8LinearMethod calls init_fp8_linear_kernel (fp8.py:347); below SM89 the
    # first kernel of _POSSIBLE_FP8_KERNELS[CUDA] it can run is MarlinFP8ScaledMMLinearKernel (:465, before Humming
    # at :466), whose process_weights_after_loading (scaled_mm/marlin.py:77) logs the message
    f8 = resolve(VLLM, parse_quantization_config({"quant_method": "fp8", "activation_scheme": "dynamic"}),
                 capability=80)
    assert kinds(f8)["fp8_marlin_weight_only"].engine_message == MARLIN_FP8 and not f8.refused
    assert "fp8_marlin_weight_only" not in kinds(resolve(VLLM, parse_quantization_config(FP8_CT), capability=90))


# ---------------------------------------------------------------------------------------------
# SGLang compressed-tensors WNA16 takes 4 and 8 bits only
# ---------------------------------------------------------------------------------------------


def wna16(bits: int) -> dict:
    return {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": bits, "type": "int", "strategy": "group", "group_size": 128,
                                           "symmetric": True}}}}


@pytest.mark.parametrize("bits", [2, 3])
def test_sglang_refuses_2_and_3_bit_wna16(bits):
    # sglang/srt/layers/quantization/compressed_tensors/schemes/compressed_tensors_wNa16.py:55-60
    #     WNA16_SUPPORTED_TYPES_MAP = {4: scalar_types.uint4b8, 8: scalar_types.uint8b128}
    # compressed_tensors.py:733-751: anything else raises
    #     ImportError("Other method (CompressedTensorsW4A16Sparse24) is not supported now")
    r = resolve(SGL, parse_quantization_config(wna16(bits)), capability=90)
    f = kinds(r)["ct_wna16_unsupported"]
    assert r.refused and f.engine_exception == "ImportError"
    assert f.engine_message == "Other method (CompressedTensorsW4A16Sparse24) is not supported now"
    # vLLM's WNA16 takes 2-8 bits (its dispatch row), so it loads there
    assert not resolve(VLLM, parse_quantization_config(wna16(bits)), capability=90).refused


def test_sglang_loads_4_bit_wna16():
    r = resolve(SGL, parse_quantization_config(wna16(4)), capability=90)
    assert not r.refused and r.groups[0].scheme_class == "CompressedTensorsWNA16"


# ---------------------------------------------------------------------------------------------
# vLLM compressed-tensors kv_cache_scheme: float AND 8 bits
# ---------------------------------------------------------------------------------------------


def test_vllm_refuses_an_int8_kv_cache_scheme():
    # vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py:1117-1122
    #     if type_ != "float" or num_bits != 8:
    #         raise NotImplementedError("Currently supported kv cache quantization is "
    #                                   "num_bits=8, type=float, however " ...)
    ck = parse_quantization_config({**FP8_CT, "kv_cache_scheme": {"num_bits": 8, "type": "int", "strategy": "tensor",
                                                                  "symmetric": True}})
    r = resolve(VLLM, ck, capability=90)
    f = kinds(r)["kv_cache_scheme_unsupported"]
    assert r.refused and f.engine_exception == "NotImplementedError"
    assert f.engine_message == ("Currently supported kv cache quantization is num_bits=8, type=float, however "
                                "received num_bits=8, type=int")
    assert r.kv_cache_dtype_resolved == "auto"  # not "fp8": the scheme is not used
    # a 4-bit float scheme is refused too (float, but not 8 bits)
    fp4 = parse_quantization_config({**FP8_CT, "kv_cache_scheme": {"num_bits": 4, "type": "float",
                                                                   "strategy": "tensor", "symmetric": True}})
    assert "kv_cache_scheme_unsupported" in kinds(resolve(VLLM, fp4, capability=90))


# ---------------------------------------------------------------------------------------------
# A checkpoint-format method asked for on an unquantized checkpoint
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", [VLLM, SGL], ids=["vllm", "sglang"])
def test_awq_on_an_unquantized_checkpoint_cannot_find_its_config_file(engine):
    # vllm/model_executor/model_loader/weight_utils.py:370-380 (sglang srt/model_loader/weight_utils.py:389):
    #     quant_config_files = [f for f in config_files if any(f.endswith(x) for x in possible_config_filenames)]
    #     if len(quant_config_files) == 0: ... raise ValueError(f"Cannot find the config file for {...}")
    # AutoAWQConfig.get_config_filenames() -> ["quantize_config.json", "quant_config.json"] (auto_awq.py:238)
    r = resolve(engine, None, capability=90, quantization="awq", model_dtype="float16")
    f = kinds(r)["config_file_missing"]
    assert r.refused and f.engine_message == "Cannot find the config file for awq"
    # an online method reads no file: vLLM's fp8_per_tensor / SGLang's fp8 load an unquantized checkpoint
    online = "fp8_per_tensor" if engine is VLLM else "fp8"
    assert "config_file_missing" not in kinds(resolve(engine, None, capability=90, quantization=online))


def test_awq_side_file_is_found_when_asked_for():
    # quantize_config.json is one of AutoAWQ's config files, so --quantization awq finds it
    ck = parse_checkpoint({"model_type": "llama"}, {"quant_config.json": {"w_bit": 4, "q_group_size": 128,
                                                                         "zero_point": True, "version": "gemm"}})
    r = resolve(VLLM, ck, capability=90, quantization="awq")
    assert "config_file_missing" not in kinds(r) and not r.refused


# ---------------------------------------------------------------------------------------------
# ModelOpt quant_algo validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("algo", ["W4A16_NVFP4", "MXFP8", "W4A8_AWQ"])
def test_vllm_refuses_hf_quant_config_algorithms_it_cannot_normalize(algo):
    # vllm/transformers_utils/model_arch_config_convertor.py:259-270
    #     if quant_algo_upper in {"FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO"}: ...
    #     elif quant_algo_upper == "NVFP4": ...  elif quant_algo_upper == "MIXED_PRECISION": ...
    #     else: raise ValueError(f"Unknown ModelOpt quant algo: {quant_algo}")
    hf = {"producer": {"name": "modelopt", "version": "0.29.0"},
          "quantization": {"quant_algo": algo, "kv_cache_quant_algo": None, "group_size": 16, "exclude_modules": []}}
    ck = parse_checkpoint({"model_type": "llama"}, {"hf_quant_config.json": hf})
    r = resolve(VLLM, ck, capability=100)
    f = kinds(r)["modelopt_unknown_algo"]
    assert r.refused and f.engine_message == f"Unknown ModelOpt quant algo: {algo}"


def test_vllm_refuses_a_modelopt_algorithm_outside_quant_algos():
    # vllm/model_executor/layers/quantization/modelopt.py:396-401
    #     if quant_method not in QUANT_ALGOS:
    #         raise ValueError(f"ModelOpt currently only supports: {QUANT_ALGOS} quantizations in vLLM. ...")
    ck = parse_quantization_config({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ", "group_size": 128})
    r = resolve(VLLM, ck, capability=90)
    f = kinds(r)["modelopt_unsupported_algo"]
    assert r.refused and r.resolved_method == "modelopt"
    assert f.engine_message.startswith("ModelOpt currently only supports: ['FP8', 'FP8_PER_CHANNEL_PER_TOKEN', ")
    # the same algorithms the convertor accepts load from hf_quant_config.json
    hf = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None,
                                                             "group_size": 16, "exclude_modules": []}}
    ok = resolve(VLLM, parse_checkpoint({"model_type": "llama"}, {"hf_quant_config.json": hf}), capability=100)
    assert not ok.refused and ok.resolved_method == "modelopt_fp4"


# ---------------------------------------------------------------------------------------------
# A checkpoint-format method with no config file names, forced on an unquantized checkpoint
# ---------------------------------------------------------------------------------------------


def test_compressed_tensors_and_quark_forced_on_an_unquantized_checkpoint_raise_type_error():
    # vllm/model_executor/model_loader/weight_utils.py:350-368
    #     possible_config_filenames = quant_cls.get_config_filenames()
    #     if not possible_config_filenames:
    #         if model_config.quantization == "fp8": ...            (online fp8_per_tensor)
    #         if model_config.quantization in _ONLINE_SHORTHANDS: ... (online)
    #         return maybe_compose_online_quantization(quant_cls())
    # compressed_tensors/compressed_tensors.py:388-389  get_config_filenames -> []
    # compressed_tensors/compressed_tensors.py:90-94
    #     def __init__(self, target_scheme_map: dict[str, Any], ignore: list[str], quant_format: str, ...
    # quark/quark.py:347-348  get_config_filenames -> [];  quark/quark.py:97-99  def __init__(self, quant_config, ...
    # Python (CPython's format_missing) then raises:
    #     TypeError: CompressedTensorsConfig.__init__() missing 3 required positional arguments: ...
    r = resolve(VLLM, None, capability=90, quantization="compressed-tensors")
    f = kinds(r)["config_class_needs_arguments"]
    assert r.refused and f.engine_exception == "TypeError"
    assert f.engine_message == ("CompressedTensorsConfig.__init__() missing 3 required positional arguments: "
                                "'target_scheme_map', 'ignore', and 'quant_format'")
    assert "model_loader/weight_utils.py:368 " in f.source
    q = kinds(resolve(VLLM, None, capability=90, quantization="quark"))["config_class_needs_arguments"]
    assert q.engine_message == "QuarkConfig.__init__() missing 1 required positional argument: 'quant_config'"
    # sglang/srt/model_loader/weight_utils.py:353-375  the same branch ends in `return quant_cls()`;
    # compressed_tensors/compressed_tensors.py:118-124 (SGLang) needs five: ... sparsity_scheme_map, sparsity_ignore_list
    s = kinds(resolve(SGL, None, capability=90, quantization="compressed-tensors"))["config_class_needs_arguments"]
    assert s.engine_message == ("CompressedTensorsConfig.__init__() missing 5 required positional arguments: "
                                "'target_scheme_map', 'ignore', 'quant_format', 'sparsity_scheme_map', and "
                                "'sparsity_ignore_list'")


def test_a_forced_method_loads_where_get_quant_config_builds_it_without_a_config():
    # SGLang quark/quark.py:322  QuarkConfig.__init__ has defaults for every parameter: quant_cls() works
    assert not resolve(SGL, None, capability=90, quantization="quark").refused
    # vLLM weight_utils.py:374-380: no hf_quant_config.json, but
    #     if model_config.quantization in _ONLINE_SHORTHANDS: ... return OnlineQuantizationConfig(args=args)
    # and config/quantization.py:195-237 lists "mxfp8" in _ONLINE_SHORTHANDS: online MXFP8, not "Cannot find"
    r = resolve(VLLM, None, capability=100, quantization="mxfp8")
    assert not r.refused and "config_file_missing" not in kinds(r)
    # SGLang weight_utils.py:381-388: no hf_quant_config.json, but
    #     if model_config.quantization == "modelopt_fp4": ... return quant_cls.for_online_weight_quantization(...)
    r = resolve(SGL, None, capability=100, quantization="modelopt_fp4")
    assert not r.refused and "config_file_missing" not in kinds(r)
    # the checkpoint's own quantization_config: get_quant_config never reaches quant_cls()
    ct = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"], "config_groups": {
        "group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                                       "group_size": 128, "symmetric": True}}}}
    ok = resolve(VLLM, parse_quantization_config(ct), capability=90, quantization="compressed-tensors")
    assert "config_class_needs_arguments" not in kinds(ok)


# ---------------------------------------------------------------------------------------------
# SGLang 8-bit AWQ: Marlin takes uint4 with zero points only, AWQConfig 4-bit only
# ---------------------------------------------------------------------------------------------


def test_sglang_refuses_8_bit_awq():
    # sglang/srt/layers/quantization/awq/awq.py:249-252  AWQMarlinConfig.TYPE_MAP = {4: uint4, 8: uint8}
    # awq/awq.py:419-424 (is_awq_marlin_compatible)
    #     if num_bits not in cls.TYPE_MAP: return False
    #     return check_marlin_supported(quant_type=cls.TYPE_MAP[num_bits], group_size=group_size, has_zp=zero_point)
    # marlin_utils.py:93-95
    #     if has_zp:
    #         # AWQ style, unsigned + runtime zero-point
    #         return [scalar_types.uint4]
    # so 8-bit AWQ is not claimed by awq_marlin and stays 'awq' -> AWQConfig, whose awq/awq.py:84-88 says
    #     if self.weight_bits != 4:
    #         raise ValueError("Currently, only 4-bit weight quantization is supported for "
    #                          f"AWQ, but got {self.weight_bits} bits.")
    awq8 = {"quant_method": "awq", "w_bit": 8, "q_group_size": 128, "zero_point": True, "version": "gemm"}
    r = resolve(SGL, parse_quantization_config(awq8), capability=90, model_dtype="float16")
    f = kinds(r)["awq_unsupported_bits"]
    assert r.refused and r.resolved_method == "awq" and not any(s.startswith("override awq_marlin") for s in r.steps)
    assert f.engine_message == "Currently, only 4-bit weight quantization is supported for AWQ, but got 8 bits."
    assert f.engine_exception == "ValueError" and f.source.endswith("awq/awq.py:85-88")
    # 4-bit AWQ with zero points is uint4 with has_zp: Marlin takes it
    r4 = resolve(SGL, parse_quantization_config({**awq8, "w_bit": 4}), capability=90, model_dtype="float16")
    assert not r4.refused and r4.resolved_method == "awq_marlin"


# ---------------------------------------------------------------------------------------------
# SGLang ModelOpt quant_algo: equality where the source tests equality
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("algo", ["FP8_PB_WO", "W4A8_AWQ", "FP8_PER_CHANNEL_PER_TOKEN"])
def test_sglang_refuses_modelopt_algorithms_its_fp8_config_does_not_take(algo):
    # sglang/srt/configs/model_config.py:1866-1870 (_parse_modelopt_quant_config)
    #     elif quant_algo and ("FP4" in quant_algo or "NVFP4" in quant_algo): ... "modelopt_fp4"
    #     elif quant_algo == "FP8": ... "modelopt_fp8"
    #     elif quant_algo == "MXFP8": ...
    #     else: return None          (quant_method stays 'modelopt')
    # __init__.py:68  "modelopt": ModelOptFp8Config;  modelopt_quant.py:510-515
    #     if quant_method != "FP8":
    #         raise ValueError("ModelOptFp8Config only supports regular FP8 quantization, "
    #                          f"but found {quant_method!r}. Use the native 'mxfp8' ...")
    ck = parse_quantization_config({"quant_method": "modelopt", "quant_algo": algo})
    r = resolve(SGL, ck, capability=90)
    f = kinds(r)["modelopt_fp8_algo"]
    assert r.refused and r.checkpoint_method == "modelopt" and r.resolved_method == "modelopt"
    assert f.engine_message == (f"ModelOptFp8Config only supports regular FP8 quantization, but found {algo!r}. Use "
                                "the native 'mxfp8' quantization method for MXFP8 or ModelOptFp4Config for FP4.")
    # FP8 itself is parsed as modelopt_fp8 and loads; NVFP4 contains "FP4": modelopt_fp4
    fp8 = resolve(SGL, parse_quantization_config({"quant_method": "modelopt", "quant_algo": "FP8"}), capability=90)
    assert not fp8.refused and fp8.resolved_method == "modelopt_fp8"
    nv = resolve(SGL, parse_quantization_config({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16}),
                 capability=100)
    assert nv.checkpoint_method == "modelopt_fp4"


def test_sglang_parses_quant_algo_case_sensitively():
    # model_config.py:1853  quant_algo = json_quant_configs.get("quant_algo", None)   (not upper-cased)
    # so "fp8" is not == "FP8": quant_method stays 'modelopt' and ModelOptFp8Config raises for 'fp8'
    r = resolve(SGL, parse_quantization_config({"quant_method": "modelopt", "quant_algo": "fp8"}), capability=90)
    assert r.checkpoint_method == "modelopt" and "modelopt_fp8_algo" in kinds(r)
    # vLLM upper-cases it (modelopt.py:288-305 _extract_modelopt_quant_algo ... .upper()): "fp8" is FP8 there
    v = resolve(VLLM, parse_quantization_config({"quant_method": "modelopt", "quant_algo": "fp8"}), capability=90)
    assert not v.refused


# ---------------------------------------------------------------------------------------------
# The engine stops at its first refusal: nothing it would check later is reported
# ---------------------------------------------------------------------------------------------


def test_sglang_awq_on_an_unquantized_checkpoint_stops_at_the_missing_config_file():
    # sglang/srt/model_loader/loader.py:214-217: get_quant_config(...) first, which raises
    #     ValueError(f"Cannot find the config file for {model_config.quantization}")  (weight_utils.py:389)
    # before the capability check (:253-265) and the activation-dtype check (:266-272) that would refuse a
    # bfloat16 model (awq/awq.py:105-106: AWQConfig.get_supported_act_dtypes is [torch.float16])
    r = resolve(SGL, None, capability=90, quantization="awq", model_dtype="bfloat16")
    errors = [f.kind for f in r.findings if f.severity == "error"]
    assert errors == ["config_file_missing"]
    assert kinds(r)["config_file_missing"].engine_message == "Cannot find the config file for awq"


def test_vllm_checks_the_capability_before_the_activation_dtype():
    # vllm/config/vllm.py:928-936 raises "... is not supported for the current GPU" before :937-943 checks the
    # dtype; ModelOptMxFp8Config needs 80 and bfloat16 activations (data/engines/vllm-0.33.0.yaml methods)
    ck = parse_quantization_config({"quant_method": "modelopt", "quant_algo": "MXFP8"})
    low = resolve(VLLM, ck, capability=75, model_dtype="float16")
    assert [f.kind for f in low.findings if f.severity == "error"] == ["capability_too_low"]
    ok_gpu = resolve(VLLM, ck, capability=90, model_dtype="float16")
    assert [f.kind for f in ok_gpu.findings if f.severity == "error"] == ["act_dtype_unsupported"]


def test_a_deprecated_method_stops_before_its_config_is_read():
    # vllm/config/model.py:1472-1485: ModelConfig._verify_quantization raises for a deprecated method (without
    # --allow-deprecated-quantization) before VllmConfig._get_quantization_config calls get_quant_config
    # (config/vllm.py:922-925), so FBGEMMFp8Config's missing arguments (the TypeError) are never reached
    r = resolve(VLLM, None, capability=90, quantization="fbgemm_fp8")
    assert [f.kind for f in r.findings if f.severity == "error"] == ["deprecated_method"]
    allowed = resolve(VLLM, None, capability=90, quantization="fbgemm_fp8", allow_deprecated=True)
    assert [f.kind for f in allowed.findings if f.severity == "error"] == ["config_class_needs_arguments"]
