"""What each engine does with the model dtype on a GPU below compute capability 8.0
(``EngineData.dtype_checks``; :func:`quantadvise.engines.config_checks.dtype_refusal` /
:func:`dtype_fallback`). Expected messages are quoted from the wheels on file."""

from __future__ import annotations

import pytest

from quantadvise import catalog
from quantadvise.catalog.models import get_gpu
from quantadvise.engines.config_checks import dtype_fallback, dtype_refusal

VLLM_RELEASES = ("0.30.0", "0.31.0", "0.32.0", "0.33.0")
SGL_RELEASES = ("0.5.20", "0.5.21", "0.5.22", "0.5.23")

# vllm/platforms/cuda.py:650-656 (0.33.0; the same text at 0.32.0:648, 0.31.0:668, 0.30.0:680), with
# gpu_name = "Tesla T4" and DeviceCapability(7, 5).as_version_str() = "7.5" (interface.py:125-126)
T4_BF16 = ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has "
           "compute capability 7.5. You can use float16 instead by explicitly setting the `dtype` flag in CLI, "
           "for example: --dtype=half.")


@pytest.mark.parametrize("version", VLLM_RELEASES)
@pytest.mark.parametrize("dtype", ["bfloat16", "bf16", "torch.bfloat16"])
def test_vllm_refuses_explicit_bfloat16_below_sm80(version, dtype):
    # cuda.py check_if_supports_dtype: `if dtype == torch.bfloat16: if not cls.has_device_capability(80): raise`
    engine = catalog.get_engine("vllm", version)
    assert dtype_refusal(engine, 75, dtype, gpu_name="Tesla T4") == T4_BF16


def test_vllm_message_names_the_gpu_from_the_hardware_table():
    # V100: DeviceCapability(7, 0) -> "7.0"; the name nvidia-smi prints for the 32 GB SXM2 board
    g = get_gpu("v100")
    assert g.device_name == "Tesla V100-SXM2-32GB"
    msg = dtype_refusal(catalog.get_engine("vllm", "0.33.0"), g.capability, "bfloat16", gpu_name=g.device_name)
    assert msg is not None and "Your Tesla V100-SXM2-32GB GPU has compute capability 7.0." in msg


@pytest.mark.parametrize(("capability", "dtype"), [(80, "bfloat16"), (90, "bf16"), (75, "float16"), (75, "half"),
                                                    (70, "float32"), (75, "auto")])
def test_vllm_starts_otherwise(capability, dtype):
    # has_device_capability(80) is capability >= 80; only torch.bfloat16 is checked
    assert dtype_refusal(catalog.get_engine("vllm", "0.33.0"), capability, dtype,
                         config_dtype="bfloat16") is None


def test_vllm_auto_falls_back_to_float16_with_a_warning():
    # vllm/config/model.py:2423-2462 _resolve_auto_dtype: CudaPlatform.supported_dtypes below 80 is
    # [float16, float32] (cuda.py:257-265), so a bfloat16 config dtype falls back to float16 with
    # "Your device %s doesn't support %s. Falling back to %s for compatibility." and
    # device_str = f"{device_name!r} (with compute capability {version_str})"
    got = dtype_fallback(catalog.get_engine("vllm", "0.33.0"), 75, "auto", config_dtype="bfloat16",
                         gpu_name="Tesla T4")
    assert got == ("float16", "Your device 'Tesla T4' (with compute capability 7.5) doesn't support "
                              "torch.bfloat16. Falling back to torch.float16 for compatibility.")
    # explicit bfloat16 is refused, not replaced; an Ampere GPU keeps bfloat16
    assert dtype_fallback(catalog.get_engine("vllm", "0.33.0"), 75, "bfloat16") is None
    assert dtype_fallback(catalog.get_engine("vllm", "0.33.0"), 80, "auto", config_dtype="bfloat16") is None


@pytest.mark.parametrize("version", SGL_RELEASES)
def test_sglang_downgrades_to_float16_and_refuses_below_sm75(version):
    # sglang/srt/model_executor/model_runner_components/load_model_utils.py:80-91 (0.5.23; 75-86 in 0.5.20/21):
    #   if torch.cuda.get_device_capability()[0] < 8:
    #       logger.info("Compute capability below sm80. Use float16 due to lack of bfloat16 support.")
    #       model_config.dtype = torch.float16
    #       if torch.cuda.get_device_capability()[1] < 5: raise RuntimeError("SGLang only supports sm75 and above.")
    engine = catalog.get_engine("sglang", version)
    assert dtype_refusal(engine, 75, "bfloat16") is None  # T4: 7.5, minor 5 is not < 5
    assert dtype_fallback(engine, 75, "bfloat16") == (
        "float16", "Compute capability below sm80. Use float16 due to lack of bfloat16 support.")
    assert dtype_fallback(engine, 75, "float16") is None  # already float16
    assert dtype_refusal(engine, 70, "float16") == "SGLang only supports sm75 and above."  # V100: 7.0
    assert dtype_refusal(engine, 80, "bfloat16") is None and dtype_fallback(engine, 80, "bfloat16") is None


@pytest.mark.parametrize("gpu", ["t4", "v100", "v100-16gb"])
def test_pre_ampere_gpus_have_no_native_bf16_peak(gpu):
    # T4 datasheet: FP16 mixed precision 65 TFLOPS, no BF16; V100 datasheet: 125 TFLOPS FP16 tensor, no BF16
    g = get_gpu(gpu)
    assert g.native_peak("bf16") is None
    assert g.native_peak("fp16") == g.peak("bf16")  # the roofline's fp16 stand-in stays
