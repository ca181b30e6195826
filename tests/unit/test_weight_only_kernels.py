"""vLLM's weight-only Marlin warnings follow the kernel vLLM picks, not the GPU generation alone.

vLLM logs "Your GPU does not have native support for FP8 / FP4 computation ..." only from the Marlin
kernels' setup (vllm/model_executor/layers/quantization/utils/marlin_utils_fp8.py:108-113, called from
kernels/linear/scaled_mm/marlin.py:77; kernels/linear/nvfp4/marlin.py:34-39). Which kernel a layer gets
is the linear method's kernel list (kernels/linear/__init__.py), so the warning depends on the method,
the block layout, weight-only vs W8A8/W4A4, and on SM90 where prioritize_humming puts Humming ahead of
Marlin (layers/quantization/utils/humming/priority.py:11). Every line cited is in the vLLM 0.33.0 wheel
named in data/engines/vllm-0.33.0.yaml unless another release is named.
"""

from __future__ import annotations

import pytest

from quantadvise import catalog
from quantadvise.checkpoint.parse import parse_checkpoint, parse_quantization_config
from quantadvise.engines.kernels import checkpoint_kernels
from quantadvise.engines.resolution import resolve

VLLM = catalog.get_engine("vllm", "0.33.0")
TABLE = catalog.kernel_table("vllm", "0.33.0")
MARLIN_KINDS = ("fp8_marlin_weight_only", "nvfp4_marlin_weight_only")


def kinds(r) -> dict[str, object]:
    return {f.kind: f for f in r.findings}


def ct(weights: dict, acts: dict | None, fmt: str) -> dict:
    group: dict = {"targets": ["Linear"], "weights": weights}
    if acts is not None:
        group["input_activations"] = acts
    return {"quant_method": "compressed-tensors", "format": fmt, "config_groups": {"group_0": group}}


FP8_W = {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True}
FP8_BLOCK_W = {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128], "symmetric": True}
FP8_TOKEN_A = {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True, "symmetric": True}
FP8_GROUP_A = {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 128, "dynamic": True,
               "symmetric": True}
NVFP4_W = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True}
NVFP4_A = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True,
           "dynamic": "local"}

CHECKPOINTS = {
    "fp8": {"quant_method": "fp8", "activation_scheme": "dynamic"},
    "fp8-block": {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
    "modelopt-fp8": {"quant_method": "modelopt", "quant_algo": "FP8"},
    "modelopt-fp8-pb-wo": {"quant_method": "modelopt", "quant_algo": "FP8_PB_WO"},
    "modelopt-nvfp4": {"quant_method": "modelopt", "quant_algo": "NVFP4"},
    "ct-fp8": ct(FP8_W, FP8_TOKEN_A, "float-quantized"),
    "ct-fp8-block": ct(FP8_BLOCK_W, FP8_GROUP_A, "float-quantized"),
    "ct-w8a16-fp8": ct(FP8_W, None, "float-quantized"),
    "ct-nvfp4": ct(NVFP4_W, NVFP4_A, "nvfp4-pack-quantized"),
    "ct-nvfp4a16": ct(NVFP4_W, None, "nvfp4-pack-quantized"),
}


def parse(name: str):
    return parse_quantization_config(CHECKPOINTS[name])


def kernel_of(ck, r, capability: int):
    groups = [(g.name, g.scheme(), g.format) for g in ck.groups]
    (row,) = checkpoint_kernels(groups, [TABLE], capability, None, r.resolved_method)
    return TABLE.kernel(row.kernel) if row.kernel else None


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
@pytest.mark.parametrize("capability", [75, 80, 86, 89, 90, 100, 120])
def test_the_marlin_warning_is_shown_exactly_where_the_kernel_table_picks_a_marlin_kernel(name, capability):
    # the engine data (data/engines/vllm-0.33.0.yaml) decides the warning, the kernel table
    # (data/kernels/vllm-0.33.0.yaml) the kernel; a kernel row's `warns` is the message its setup logs
    # (marlin-fp8: scaled_mm/marlin.py:77 -> marlin_utils_fp8.py:108-113; marlin-nvfp4: nvfp4/marlin.py:34-39)
    ck = parse(name)
    r = resolve(VLLM, ck, capability=capability)
    if r.refused:
        return
    k = kernel_of(ck, r, capability)
    assert k is not None, (name, capability)
    said = {kind for kind in kinds(r) if kind in MARLIN_KINDS}
    assert said == ({k.warns} if k.warns else set()), (name, capability, k.id, said)


@pytest.mark.parametrize(("name", "kernel"), [
    # CompressedTensorsW8A16Fp8 (compressed_tensors.py:909-912) -> init_wfp8_a16_linear_kernel
    # (compressed_tensors_w8a16_fp8.py:112) -> [HummingFP8ScaledMMLinearKernel, MarlinFP8ScaledMMLinearKernel]
    # (kernels/linear/__init__.py:522-526)
    ("ct-fp8", "humming-fp8"),
    ("ct-w8a16-fp8", "humming-fp8"),
    # Fp8LinearMethod (fp8.py:347) and ModelOptLinearMethod (modelopt.py:2445) -> init_fp8_linear_kernel ->
    # _POSSIBLE_FP8_KERNELS[CUDA] (:458-467): FlashInfer needs 100, CUTLASS / torch._scaled_mm need fp8 hardware,
    # MarlinFP8ScaledMMLinearKernel (:465) is supported from SM75 (marlin_utils_fp8.py:30-31) and comes first
    ("fp8", "marlin-fp8"),
    ("modelopt-fp8", "marlin-fp8"),
])
def test_fp8_on_an_a100_runs_the_kernel_of_its_linear_method(name, kernel):
    ck = parse(name)
    r = resolve(VLLM, ck, capability=80)
    assert kernel_of(ck, r, 80).id == kernel
    assert ("fp8_marlin_weight_only" in kinds(r)) == (kernel == "marlin-fp8")


@pytest.mark.parametrize("name", ["fp8-block", "ct-fp8-block"])
def test_block_fp8_on_sm89_reaches_marlin(name):
    # _POSSIBLE_FP8_BLOCK_KERNELS[CUDA] (kernels/linear/__init__.py:494-506): FlashInfer/DeepGEMM need
    # support_deep_gemm (platforms/cuda.py:691-697: SM90, SM10x, SM12x), the CUTLASS block kernel the compiled
    # cutlass_scaled_mm_supports_block_fp8 (w8a8_utils.py:21-28; SM90 and up in the kernel table), B12x an SM12x
    # device (scaled_mm/b12x.py:60-61); MarlinFP8ScaledMMLinearKernel (:502) comes before Triton (:504).
    # Compressed-tensors block FP8 on SM89 is CompressedTensorsW8A8Fp8 (min capability 89,
    # compressed_tensors_w8a8_fp8.py:83-85), which calls init_fp8_linear_kernel (:137) with 1x128 activations
    ck = parse(name)
    r = resolve(VLLM, ck, capability=89)
    assert kernel_of(ck, r, 89).id == "marlin-fp8"
    assert kinds(r)["fp8_marlin_weight_only"].severity == "warning"
    # per-channel FP8 on SM89 runs CUTLASS (cutlass_fp8_supported) and says nothing
    flat = "fp8" if name == "fp8-block" else "ct-fp8"
    assert "fp8_marlin_weight_only" not in kinds(resolve(VLLM, parse(flat), capability=89))


@pytest.mark.parametrize(("capability", "warns"), [(80, True), (89, True), (90, False), (100, False), (120, True)])
def test_nvfp4a16_warns_wherever_vllm_forces_marlin(capability, warns):
    # init_nvfp4_linear_kernel(use_a16=True) (kernels/linear/__init__.py:1236-1248): FlashInfer CuTe-DSL W4A16 on
    # SM100/103, `elif not prefers_humming(compute_capability): force_kernel = MarlinNvFp4LinearKernel`; on SM90 the
    # a16 kernels (:1264-1266) go through _resolve_backend_kernels (:1269), which puts Humming ahead of Marlin. MarlinNvFp4LinearKernel logs in
    # process_weights_after_loading (nvfp4/marlin.py:34-39), W4A4 or not. SM120 is neither: Marlin.
    r = resolve(VLLM, parse("ct-nvfp4a16"), capability=capability)
    assert not r.refused
    assert ("nvfp4_marlin_weight_only" in kinds(r)) == warns
    assert "weight_only_silent" not in kinds(r)  # a weight-only checkpoint loses nothing


def test_nvfp4_w4a4_on_sm120_is_native():
    # FlashInferCutlassNvFp4LinearKernel (kernels/linear/__init__.py:595) needs has_device_capability(100) and
    # FlashInfer (nvfp4/flashinfer.py:204-208): SM120 has both
    r = resolve(VLLM, parse("ct-nvfp4"), capability=120)
    assert r.status == "ok" and not kinds(r)


@pytest.mark.parametrize("version", ["0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_every_release_on_file_runs_compressed_tensors_w8a16_fp8_on_humming(version):
    # _POSSIBLE_WFP8A16_KERNELS[CUDA] lists HummingFP8ScaledMMLinearKernel before MarlinFP8ScaledMMLinearKernel in
    # each wheel on file (kernels/linear/__init__.py:482-485 in 0.30.0, :483-486 in 0.31.0, :506-509 in 0.32.0,
    # :522-526 in 0.33.0), and each requires humming-kernels (METADATA Requires-Dist): no Marlin message
    e = catalog.get_engine("vllm", version)
    r = resolve(e, parse("ct-fp8"), capability=80)
    assert "fp8_marlin_weight_only" not in kinds(r) and r.status == "ok"
    # native fp8 (Fp8Config -> init_fp8_linear_kernel): from 0.31.0 CutlassFP8ScaledMMLinearKernel.is_supported
    # needs cutlass_fp8_supported() (SM89+), so an A100 falls through to Marlin (kernels/linear/__init__.py:465 in
    # 0.33.0), which logs the message; 0.30.0's is_supported checks only is_cuda() (scaled_mm/cutlass.py:163-169) and
    # CUTLASS, ahead of Marlin in the list, is picked: no message
    f8 = resolve(e, parse("fp8"), capability=80)
    assert ("fp8_marlin_weight_only" in kinds(f8)) is (version != "0.30.0")


@pytest.mark.parametrize(("version", "preferred"), [("0.30.0", ()), ("0.31.0", ()), ("0.32.0", (90,)),
                                                    ("0.33.0", (90,))])
def test_humming_preference_per_release(version, preferred):
    # layers/quantization/utils/humming/priority.py:11 `_HUMMING_PREFERRED_CAPABILITIES = frozenset({90})` in 0.32.0
    # and 0.33.0; 0.30.0 and 0.31.0 have no such module (their kernel lists keep Humming after Marlin)
    assert catalog.get_engine("vllm", version).humming_preferred == preferred


def test_modelopt_nvfp4_is_read_like_compressed_tensors():
    ck = parse_checkpoint({"model_type": "llama"}, {"hf_quant_config.json": {
        "producer": {"name": "modelopt", "version": "0.29.0"},
        "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}}})
    for cap, warns in ((80, True), (89, True), (90, False), (100, False), (120, False)):
        assert ("nvfp4_marlin_weight_only" in kinds(resolve(VLLM, ck, capability=cap))) == warns, cap
