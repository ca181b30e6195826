"""Verdicts fixed after the checkpoint audit: each test quotes the line of the wheel on file
(vLLM 0.33.0, SGLang 0.5.23) that the expected verdict follows."""

from __future__ import annotations

import pytest

from quantadvise import catalog
from quantadvise.checkpoint.parse import parse_checkpoint, parse_quantization_config
from quantadvise.engines.resolution import resolve

VLLM = catalog.get_engine("vllm", "0.33.0")
SGL = catalog.get_engine("sglang", "0.5.23")


def kinds(r) -> dict[str, object]:
    return {f.kind: f for f in r.findings}


# ---------------------------------------------------------------------------------------------
# NVFP4 W4A4 below SM100: weight-only FP4 Marlin, with the engine's warning
# ---------------------------------------------------------------------------------------------

NVFP4_CT = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {"group_0": {
    "targets": ["Linear"],
    "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True},
    "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
                          "symmetric": True, "dynamic": "local"}}}, "ignore": ["lm_head"]}
NVFP4_MODELOPT = {"producer": {"name": "modelopt", "version": "0.29.0"},
                  "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
                                   "exclude_modules": ["lm_head"]}}
# vllm/model_executor/kernels/linear/nvfp4/marlin.py:34-39 (MarlinNvFp4LinearKernel.process_weights_after_loading)
MARLIN_FP4 = ("Your GPU does not have native support for FP4 computation but FP4 quantization is being used. "
              "Weight-only FP4 compression will be used leveraging the Marlin kernel. This may degrade performance "
              "for compute-heavy workloads.")


def nvfp4(form: str):
    if form == "compressed-tensors":
        return parse_quantization_config(NVFP4_CT)
    return parse_checkpoint({"model_type": "llama"}, {"hf_quant_config.json": NVFP4_MODELOPT})


@pytest.mark.parametrize("form", ["compressed-tensors", "modelopt"])
@pytest.mark.parametrize("capability", [75, 80, 89])
def test_vllm_nvfp4_w4a4_below_sm100_warns_weight_only_marlin(form, capability):
    # kernels/linear/__init__.py:592-609 _POSSIBLE_NVFP4_KERNELS[CUDA]: every W4A4 kernel ahead of
    # MarlinNvFp4LinearKernel (:600) needs sm_100+ (nvfp4/flashinfer.py:121 "requires sm_10x", :204
    # has_device_capability(100); cutlass_fp4_supported) and the CuTe-DSL W4A16 kernel (:599) sm_100/103 or sm_12x
    # (nvfp4/flashinfer.py:50-53); Marlin needs 75 (marlin_utils_fp4.py:34-35) and logs the warning in
    # process_weights_after_loading (nvfp4/marlin.py:34-39); both the compressed-tensors scheme
    # (compressed_tensors_w4a4_nvfp4.py:31) and ModelOpt (modelopt.py:2435) call init_nvfp4_linear_kernel
    r = resolve(VLLM, nvfp4(form), capability=capability)
    assert not r.refused
    f = kinds(r)["nvfp4_marlin_weight_only"]
    assert f.severity == "warning" and f.engine_message == MARLIN_FP4
    assert f.source.endswith("nvfp4/marlin.py:34-39")


@pytest.mark.parametrize("form", ["compressed-tensors", "modelopt"])
def test_vllm_nvfp4_w4a4_on_hopper_runs_humming_and_prints_nothing(form):
    # layers/quantization/utils/humming/priority.py:11 `_HUMMING_PREFERRED_CAPABILITIES = frozenset({90})`;
    # _resolve_backend_kernels (kernels/linear/__init__.py:426) calls prioritize_humming, which moves
    # HummingNvFp4LinearKernel (:608) directly ahead of MarlinNvFp4LinearKernel (:600) on SM90 (priority.py:26-48):
    # Humming runs, Marlin's warning (nvfp4/marlin.py:34-39) is never logged. The W4A4 activations are still
    # dropped (weight-only), which quantadvise says as a note of its own.
    r = resolve(VLLM, nvfp4(form), capability=90)
    assert not r.refused and r.status == "ok"
    assert "nvfp4_marlin_weight_only" not in kinds(r)
    f = kinds(r)["weight_only_silent"]
    assert f.severity == "info" and f.engine_message is None


@pytest.mark.parametrize("version", ["0.30.0", "0.31.0"])
@pytest.mark.parametrize("form", ["compressed-tensors", "modelopt"])
def test_vllm_before_humming_priority_warns_on_hopper_too(version, form):
    # vLLM 0.30.0 / 0.31.0 have no layers/quantization/utils/humming/priority.py and their
    # _resolve_backend_kernels (kernels/linear/__init__.py:375-392 in 0.30.0) only filters by --linear-backend:
    # _POSSIBLE_NVFP4_KERNELS keeps MarlinNvFp4LinearKernel (:559) ahead of HummingNvFp4LinearKernel (:566)
    r = resolve(catalog.get_engine("vllm", version), nvfp4(form), capability=90)
    assert kinds(r)["nvfp4_marlin_weight_only"].engine_message == MARLIN_FP4


@pytest.mark.parametrize("form", ["compressed-tensors", "modelopt"])
def test_vllm_nvfp4_w4a4_on_blackwell_prints_nothing(form):
    r = resolve(VLLM, nvfp4(form), capability=100)
    assert not r.refused and "nvfp4_marlin_weight_only" not in kinds(r)


def test_sglang_modelopt_nvfp4_below_sm100_is_weight_only_like_compressed_tensors():
    # sglang/srt/layers/quantization/fp4_utils.py:154-158: --fp4-gemm-backend auto is "marlin" on SM80-SM90, and
    # modelopt_quant.py:1919-1927 then prepares the dense linears for FP4 Marlin (weight-only). The ModelOpt path logs
    # nothing, so the finding is quantadvise's own (no engine message), as the compressed-tensors path warns.
    r = resolve(SGL, nvfp4("modelopt"), capability=90)
    assert not r.refused
    f = kinds(r)["weight_only_fallback"]
    assert f.severity == "warning" and f.engine_message is None
    ct = resolve(SGL, nvfp4("compressed-tensors"), capability=90)
    assert "nvfp4_w4a4_marlin_fallback" in kinds(ct)
    assert "weight_only_fallback" not in kinds(resolve(SGL, nvfp4("modelopt"), capability=100))


# ---------------------------------------------------------------------------------------------
# vLLM ModelOpt FP8: minimum capability 80 in the wheel (not 89), weight-only FP8 Marlin below 89
# ---------------------------------------------------------------------------------------------

FP8_MODELOPT = {"producer": {"name": "modelopt", "version": "0.29.0"},
                "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}
# vllm/model_executor/layers/quantization/utils/marlin_utils_fp8.py:108-113
MARLIN_FP8 = ("Your GPU does not have native support for FP8 computation but FP8 quantization is being used. "
              "Weight-only FP8 compression will be used leveraging the Marlin kernel. This may degrade performance "
              "for compute-heavy workloads.")


@pytest.mark.parametrize("version", ["0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_vllm_modelopt_fp8_min_capability_is_80_in_every_bundled_release(version):
    # ModelOptFp8Config.get_min_capability: `return 80` at modelopt.py:440 (0.30.0), :437 (0.31.0), :446 (0.32.0),
    # :450 (0.33.0) of the wheels on file (the audit's 89 came from a later `main`)
    assert catalog.get_engine("vllm", version).method("modelopt").min_capability == 80


def test_vllm_modelopt_fp8_on_a100_loads_weight_only_with_the_marlin_warning():
    # modelopt.py:2445 init_fp8_linear_kernel; kernels/linear/__init__.py:458-467: on SM80 the CUTLASS, FlashInfer
    # and torch._scaled_mm kernels are unsupported, MarlinFP8ScaledMMLinearKernel (capability 75+) is chosen and
    # prepare_fp8_layer_for_marlin logs the warning
    ck = parse_checkpoint({"model_type": "llama"}, {"hf_quant_config.json": FP8_MODELOPT})
    r = resolve(VLLM, ck, capability=80)
    assert not r.refused
    f = kinds(r)["fp8_marlin_weight_only"]
    assert f.severity == "warning" and f.engine_message == MARLIN_FP8
    assert "fp8_marlin_weight_only" not in kinds(resolve(VLLM, ck, capability=89))
    # below 80 the config-level gate refuses (vllm/config/vllm.py:931-936)
    assert kinds(resolve(VLLM, ck, capability=75))["capability_too_low"].severity == "error"


# ---------------------------------------------------------------------------------------------
# ROCm: the capability vLLM derives from the gfx target; no CUDA-only Marlin fallback there
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("gfx", "cap"), [("gfx90a", 90), ("gfx942", 94), ("gfx950", 95), ("gfx1100", 110),
                                          ("gfx1201", 120), ("sm90", None)])
def test_gcn_capability_mirrors_vllm(gfx, cap):
    # vllm/platforms/rocm.py:236-275 _capability_from_gcn_arch docstring examples:
    #   gfx90a -> (9, 0)  gfx942 -> (9, 4)  gfx950 -> (9, 5)  gfx1100 -> (11, 0)  gfx1200 -> (12, 0)
    from quantadvise.hardware import gcn_capability

    assert gcn_capability(gfx) == cap


def test_mi300x_is_judged_at_the_capability_vllm_reads_on_rocm():
    # MI300X is gfx942 (data/hardware.yaml), so vLLM's RocmPlatform.get_device_capability() is (9, 4)
    from quantadvise.api.inspect import gpu_target

    t = gpu_target("mi300x")
    assert t is not None and t.platform == "rocm" and t.capability == 94


def test_no_marlin_weight_only_warning_on_rocm():
    # Marlin kernels are CUDA-only: marlin_utils_fp4.py:34-35 is_fp4_marlin_supported() needs
    # current_platform.is_cuda(); vLLM's ROCm NVFP4 list is [EmulationNvFp4LinearKernel]
    # (kernels/linear/__init__.py:609-611)
    r = resolve(VLLM, nvfp4("compressed-tensors"), capability=94, platform="rocm")
    assert "nvfp4_marlin_weight_only" not in kinds(r)
    assert "nvfp4_marlin_weight_only" not in kinds(resolve(VLLM, nvfp4("modelopt"), capability=94, platform="rocm"))
    # and a method the ROCm platform does not list is refused with the engine's message
    # (vllm/platforms/rocm.py:669 supported_quantization; interface.py:1159-1161)
    rr = resolve(VLLM, None, capability=94, platform="rocm", quantization="experts_int8")
    f = kinds(rr)["platform_unsupported"]
    assert rr.refused and f.engine_message == "experts_int8 quantization is currently not supported in rocm."


# ---------------------------------------------------------------------------------------------
# GPTQ desc_act: act-order groups (g_idx) are kept on the weights' axes
# ---------------------------------------------------------------------------------------------


def test_gptq_desc_act_is_act_order_with_g_idx():
    # vllm auto_gptq.py: MPLinearLayerConfig(..., has_g_idx=self.quant_config.desc_act) — the groups follow
    # g_idx, the ordering compressed-tensors calls actorder "group"
    from quantadvise.engines.inspection import _actorder

    qc = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": True}
    w = parse_quantization_config(qc).groups[0].weights
    assert w is not None and w.actorder == "group" and _actorder(w) == " (act-order, g_idx)"
    # desc_act false, or one scale per channel (group_size -1): no act-order groups
    assert parse_quantization_config({**qc, "desc_act": False}).groups[0].weights.actorder is None
    assert parse_quantization_config({**qc, "group_size": -1}).groups[0].weights.actorder is None


def test_bitsandbytes_double_quant_is_a_second_level_scale_and_nf4_is_named():
    # bitsandbytes functional.py quantize_4bit: absmax per block of 64 weights; with compress_statistics
    # (bnb_4bit_use_double_quant) the absmax values are themselves quantized to 8-bit codes in blocks of 256,
    # each block keeping one fp32 absmax: a second-level fp32 scale per 64 x 256 = 16,384 weights.
    qc = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
          "bnb_4bit_use_double_quant": True}
    ck = parse_quantization_config(qc)
    w = ck.groups[0].weight
    assert w is not None and w.format == "nf4"
    assert w.scale is not None and w.scale.format == "uint8" and w.scale.group.col == 64
    assert w.scale2 is not None and w.scale2.format == "fp32" and w.scale2.group.col == 64 * 256
    assert "nf4" in ck.summary() and "int4" not in ck.summary()
    # without double quantization the absmax is fp32 and there is no second level
    plain = parse_quantization_config({**qc, "bnb_4bit_use_double_quant": False}).groups[0].weight
    assert plain is not None and plain.scale2 is None and plain.scale is not None and plain.scale.format == "fp32"
