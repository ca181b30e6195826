"""The kernel an engine release runs for a linear layer (quantadvise.engines.kernels), each resolution
pinned to the engine source line the data row transcribes (read in the published wheels named in
data/kernels/*.yaml; the file:line is quoted next to every case)."""

from __future__ import annotations

import pytest

from quantadvise import catalog
from quantadvise.engines.kernels import KernelTable, resolve_kernel, resolve_route, route


def scheme(sid: str):
    return catalog.scheme_from_preset(catalog.scheme_preset(sid))


@pytest.fixture(scope="module")
def vllm() -> KernelTable:
    return catalog.kernel_table("vllm", "0.33.0")


@pytest.fixture(scope="module")
def sglang() -> KernelTable:
    return catalog.kernel_table("sglang", "0.5.23")


# (scheme, capability, kernel id, a piece of the row's citation)
VLLM_CASES = [
    # choose_mp_linear_kernel tries CutlassW4A8, then Machete (kernels/linear/__init__.py:539-548); Machete
    # is SM90-only (mixed_precision/machete.py:33-34) and takes uint4b8 with group 128 (machete_utils.py:12-34)
    ("w4a16", 90, "machete", "mixed_precision/machete.py:24-54"),
    # below SM90 Machete cannot; Humming is not moved ahead of Marlin off SM90 (humming/priority.py:11-12)
    ("w4a16", 80, "marlin", "mixed_precision/marlin.py:32-55"),
    ("w4a16", 89, "marlin", "marlin_utils.py:37"),
    # 'awq' is overridden to auto_awq (auto_awq.py:263-286), which hands Marlin-capable layers to
    # choose_mp_linear_kernel with zero points (auto_awq.py:436-448): Machete on SM90
    ("awq", 90, "machete", "auto_awq.py:263-286"),
    ("awq", 80, "marlin", "auto_awq.py:300-330"),
    ("gptq", 90, "machete", "auto_gptq.py:301-349"),
    # int3 is neither a Machete nor a Marlin type: Humming (mixed_precision/humming.py:26-37)
    ("w3a16", 90, "humming", "humming/priority.py:11-12"),
    # per-tensor fp8: FlashInfer first, but only from SM100 (scaled_mm/flashinfer.py:41-65), else CUTLASS
    ("fp8-tensor", 90, "cutlass-fp8", "kernels/linear/__init__.py:461"),
    ("fp8-tensor", 100, "flashinfer-fp8", "scaled_mm/flashinfer.py:41-65"),
    # per-channel x per-token: FlashInfer needs per-tensor scales (flashinfer.py:56-65): CUTLASS everywhere
    ("fp8-dynamic", 90, "cutlass-fp8", "scaled_mm/flashinfer.py:56-65"),
    ("fp8-dynamic", 100, "cutlass-fp8", "scaled_mm/flashinfer.py:56-65"),
    # below SM89 fp8 checkpoints run weight-only; with no method given, the first row is compressed-tensors'
    # (compressed_tensors.py:895-912: CompressedTensorsW8A16Fp8, Humming first); the method decides, see below
    ("fp8-tensor", 80, "humming-fp8", "compressed_tensors.py:895-912"),
    ("w8a8-int8", 90, "cutlass-int8", "kernels/linear/__init__.py:446-452"),
    ("fp8-block", 90, "deepgemm-fp8-block", "scaled_mm/deep_gemm.py:47-67"),
    ("nvfp4", 100, "flashinfer-cutedsl-nvfp4", "nvfp4/flashinfer.py:118-124"),
    ("nvfp4", 120, "flashinfer-cutlass-nvfp4", "nvfp4/flashinfer.py:195-208"),
    ("nvfp4", 80, "marlin-nvfp4", "nvfp4/marlin.py:22-40"),
    ("w4a8-fp8", 90, "cutlass-w4a8", "mixed_precision/cutlass.py:28-54"),
]

SGLANG_CASES = [
    ("w4a16", 90, "marlin", "compressed_tensors_wNa16.py:63, :304-330"),
    # a Marlin-compatible AWQ checkpoint becomes awq_marlin (awq/awq.py:333-345)
    ("awq", 90, "marlin", "awq/awq.py:333-345"),
    # compressed-tensors FP8 requantizes to one weight scale (compressed_tensors_w8a8_fp8.py:147-150);
    # per-tensor weights and activations go to torch._scaled_mm (fp8_utils.py:2754-2766)
    ("fp8-tensor", 90, "torch-scaled-mm-fp8", "fp8_utils.py:2754-2766"),
    ("fp8-dynamic", 90, "sgl-fp8-scaled-mm", "fp8_utils.py:2542-2549"),
    ("w8a8-int8", 90, "sgl-int8-scaled-mm", "compressed_tensors_w8a8_int8.py:170-178"),
    ("fp8-block", 90, "deepgemm-fp8-block", "fp8_utils.py:1181-1182"),
    # the auto FP4 backend: Marlin for 8.0 <= capability < 10.0 (fp4_utils.py:157-158)
    ("nvfp4", 90, "marlin-nvfp4", "fp4_utils.py:157-158"),
    ("nvfp4", 100, "flashinfer-cutedsl-nvfp4", "fp4_utils.py:154-156"),
    # NVFP4 weight-only (CompressedTensorsW4A16Fp4): FlashInfer's bf16 x fp4 GEMM only with the CuTe-DSL backend,
    # which auto picks on SM100 (fp4_utils.py:154-156); every other backend keeps FP4 Marlin
    # (compressed_tensors_w4a16_nvfp4.py:74-82): auto's marlin on SM80-SM90, flashinfer_cutlass on SM120
    ("nvfp4-a16", 90, "marlin-nvfp4", "compressed_tensors_w4a16_nvfp4.py:74-82"),
    ("nvfp4-a16", 80, "marlin-nvfp4", "compressed_tensors_w4a16_nvfp4.py:74-82"),
    ("nvfp4-a16", 120, "marlin-nvfp4", "compressed_tensors_w4a16_nvfp4.py:74-82"),
    ("nvfp4-a16", 100, "flashinfer-cutedsl-nvfp4-a16", "fp4_utils.py:154-156"),
]


@pytest.mark.parametrize(("sid", "cap", "kernel", "cite"), VLLM_CASES)
def test_vllm_kernel(vllm: KernelTable, sid: str, cap: int, kernel: str, cite: str) -> None:
    c = resolve_kernel(vllm, scheme(sid), cap)
    assert c is not None and c.kernel.id == kernel
    assert cite in c.source


@pytest.mark.parametrize(("sid", "cap", "kernel", "cite"), SGLANG_CASES)
def test_sglang_kernel(sglang: KernelTable, sid: str, cap: int, kernel: str, cite: str) -> None:
    c = resolve_kernel(sglang, scheme(sid), cap)
    assert c is not None and c.kernel.id == kernel
    assert cite in c.source


@pytest.mark.parametrize(("sid", "cap", "method", "kernel", "cite"), [
    # compressed-tensors below SM89: CompressedTensorsW8A16Fp8 -> _POSSIBLE_WFP8A16_KERNELS, Humming first
    # (kernels/linear/__init__.py:522-526)
    ("fp8-tensor", 80, "compressed-tensors", "humming-fp8", "kernels/linear/__init__.py:522-526"),
    ("fp8-dynamic", 75, "compressed-tensors", "humming-fp8", "kernels/linear/__init__.py:522-526"),
    ("fp8-block", 80, "compressed-tensors", "humming-fp8", "kernels/linear/__init__.py:522-526"),
    # Fp8Config / ModelOpt keep init_fp8_linear_kernel: MarlinFP8ScaledMMLinearKernel (:465) before Humming (:466)
    ("fp8-tensor", 80, "fp8", "marlin-fp8", "kernels/linear/__init__.py:458-467"),
    ("fp8-dynamic", 80, "modelopt", "marlin-fp8", "kernels/linear/__init__.py:458-467"),
    # block FP8 below SM90: the block list reaches Marlin (:502) before Triton (:504), for every method on SM89
    ("fp8-block", 89, "compressed-tensors", "marlin-fp8", "kernels/linear/__init__.py:494-506"),
    ("fp8-block", 89, "fp8", "marlin-fp8", "kernels/linear/__init__.py:494-506"),
    ("fp8-block", 90, "fp8", "deepgemm-fp8-block", "scaled_mm/deep_gemm.py:47-67"),
])
def test_vllm_fp8_kernel_follows_the_linear_method(vllm: KernelTable, sid: str, cap: int, method: str, kernel: str,
                                                   cite: str) -> None:
    c = resolve_kernel(vllm, scheme(sid), cap, method=method)
    assert c is not None and c.kernel.id == kernel
    assert cite in c.source


def test_forced_awq_runs_the_dequantize_then_matmul_kernel_on_sglang(sglang: KernelTable) -> None:
    # awq/awq.py:346-352: "you specified quantization=awq explicitly, so forcing awq";
    # awq_kernels.py:85-102: awq_dequantize of the whole weight, then torch.matmul
    c = resolve_kernel(sglang, scheme("awq"), 90, quantization="awq")
    assert c is not None and c.kernel.id == "awq-dequant-cublas"
    assert "awq/awq.py:346-352" in c.source


def test_forcing_awq_does_not_change_vllm(vllm: KernelTable) -> None:
    # vLLM 0.33.0 overrides 'awq' to auto_awq (auto_awq.py:263-286): the kernel is the same
    assert resolve_kernel(vllm, scheme("awq"), 90, quantization="awq").kernel.id == "machete"


def test_machete_shape_rule_falls_through(vllm: KernelTable) -> None:
    # machete_utils.py:37-52: in_features % 64 and out_features % 128; an N of 4000 fails the second,
    # so the walk continues to Humming (moved ahead of Marlin on SM90)
    assert resolve_kernel(vllm, scheme("w4a16"), 90, shape=(4096, 4096)).kernel.id == "machete"
    assert resolve_kernel(vllm, scheme("w4a16"), 90, shape=(4000, 4096)).kernel.id == "humming"


def test_activation_quantization_is_a_fact_of_the_kernel(vllm: KernelTable, sglang: KernelTable) -> None:
    # vLLM fuses QuantFP8 under Inductor (config/vllm.py:1840-1845) but calls ops.scaled_int8_quant
    # inside the int8 kernel (scaled_mm/cutlass.py:122-142); SGLang quantizes in a separate kernel
    assert vllm.kernel("cutlass-fp8").activation_quant == "fused"
    assert vllm.kernel("cutlass-int8").activation_quant == "unfused"
    assert sglang.kernel("sgl-fp8-scaled-mm").activation_quant == "unfused"


def test_unquantized_layers_run_cublas(vllm: KernelTable, sglang: KernelTable) -> None:
    for table in (vllm, sglang):
        c = resolve_route(table, "bf16", 90)
        assert c is not None and c.kernel.id == "cublas-bf16"


def test_routes_of_the_presets() -> None:
    assert route(scheme("bf16")) == "bf16"
    assert route(scheme("awq")) == "awq"  # the AutoAWQ GEMM layout
    assert route(scheme("gptq")) == "gptq"
    assert route(scheme("w4a16")) == "wna16"
    assert route(scheme("fp8-tensor")) == "fp8-tensor"
    assert route(scheme("fp8-dynamic")) == "fp8-channel"
    assert route(scheme("fp8-block")) == "fp8-block"
    assert route(scheme("w8a8-int8")) == "int8"
    assert route(scheme("nvfp4")) == "nvfp4"
    assert route(scheme("mxfp4")) == "mxfp4"


def test_label_names_kernel_engine_and_capability(vllm: KernelTable) -> None:
    c = resolve_kernel(vllm, scheme("w4a16"), 90)
    assert c.label == "MacheteLinearKernel, vLLM 0.33.0, sm90"


def test_kernel_table_for_an_unlisted_release_is_the_newest_not_newer() -> None:
    assert catalog.kernel_table("vllm", "9.9.9").version == "0.34.0"


def test_every_route_row_names_a_known_kernel_and_a_source() -> None:
    for engine, version in (("vllm", "0.33.0"), ("sglang", "0.5.23")):
        t = catalog.kernel_table(engine, version)
        assert t.source.sha256 == catalog.get_engine(engine, version).source.sha256  # the same wheel
        for r in t.routes:
            assert ".py:" in r.source


def test_deepgemm_label_names_the_release_whole_condition() -> None:
    # vLLM 0.34.0 runs DeepGEMM only where deep_gemm imports *and* an nvcc of CUDA 12.9+ is found for its JIT
    # (vllm/utils/deep_gemm.py:150-177 and :118-135 of the 0.34.0 wheel; 0.33.0 has no nvcc check): else
    # it warns 'DeepGEMM kernels are disabled' and runs CUTLASS block FP8
    new = resolve_kernel(catalog.kernel_table("vllm", "0.34.0"), scheme("fp8-block"), 90)
    old = resolve_kernel(catalog.kernel_table("vllm", "0.33.0"), scheme("fp8-block"), 90)
    assert new is not None and old is not None
    assert new.short == ("DeepGemmFp8BlockScaledMMKernel when deep_gemm imports and an nvcc of CUDA 12.9+ is found, "
                         "else CutlassFp8BlockScaledMMKernel")
    assert old.short == "DeepGemmFp8BlockScaledMMKernel when deep_gemm imports, else CutlassFp8BlockScaledMMKernel"


def test_a_condition_without_a_fallback_is_refused() -> None:
    from pydantic import ValidationError

    from quantadvise.engines.kernels import KernelInfo

    with pytest.raises(ValidationError, match="available_when needs requires and otherwise"):
        KernelInfo(id="x", name="X", math="fp8", source="s", available_when="nvcc is found")


# Releases priced with vLLM 0.30.0's table (data/kernels/carried/) whose own source runs a route otherwise: the
# differences read there (each row's lines quoted in tests/fixtures/kernel_quotes/carried/). (release, scheme,
# capability, kernel id, activation quantization, its kernel, a piece of the citation)
OLD_VLLM_CASES = [
    # 0.9.2 Fp8LinearOp.apply quantizes the input with ops.scaled_fp8_quant, then cutlass_scaled_mm
    # (w8a8_utils.py:351-355): a kernel of its own, per token when dynamic; 0.30.0 fuses QuantFP8 into its producer
    ("0.9.2", "fp8-dynamic", 90, "cutlass-fp8", "unfused", "per-token-quant", "w8a8_utils.py:351-355"),
    ("0.8.5.post1", "fp8-dynamic", 90, "cutlass-fp8", "unfused", "per-token-quant", "w8a8_utils.py:350-354"),
    ("0.9.2", "fp8-tensor", 90, "cutlass-fp8", "unfused", "static-quant", "w8a8_utils.py:351-355"),
    # no FlashInfer FP8 GEMM in 0.9.2: dispatch_w8a8_scaled_mm returns CUTLASS wherever it is supported (:272-278)
    ("0.9.2", "fp8-tensor", 100, "cutlass-fp8", "unfused", "static-quant", ":272-278"),
    # 0.10.1 quantizes through QuantFP8 (w8a8_utils.py:355-360, the fused form) but has no FlashInfer FP8 GEMM yet
    ("0.10.1", "fp8-dynamic", 90, "cutlass-fp8", "fused", None, "scaled_mm/cutlass.py:156-173"),
    ("0.10.1", "fp8-tensor", 100, "cutlass-fp8", "fused", None, "w8a8_utils.py:355-360"),
    # DeepGEMM only with VLLM_USE_DEEP_GEMM, which defaults to 0 up to 0.10.2 (envs.py:974-975); the CUTLASS block
    # kernel after per_token_group_quant_fp8 (fp8_utils.py:159-174); 0.11.2 defaults it to 1 (no difference)
    ("0.10.2", "fp8-block", 90, "cutlass-fp8-block", "unfused", "per-token-quant", "envs.py:974-975"),
    ("0.8.5.post1", "fp8-block", 90, "cutlass-fp8-block", "unfused", "per-token-quant", "fp8_utils.py:60-68"),
    ("0.11.2", "fp8-block", 90, "deepgemm-fp8-block", "fused", None, "scaled_mm/deep_gemm.py:47-67"),
    # AWQ: up to 0.18.1 AWQMarlinLinearMethod.apply returns apply_awq_marlin_linear, Marlin on every GPU
    # (awq_marlin.py:419, :425 in 0.18.1); 0.19.1 asks choose_mp_linear_kernel, Machete first on SM90 (no difference)
    ("0.18.1", "awq", 90, "marlin", "none", None, "awq_marlin.py:419, :425"),
    ("0.9.2", "awq", 90, "marlin", "none", None, "awq_marlin.py:302, :308"),
    ("0.19.1", "awq", 90, "machete", "none", None, "auto_awq.py:260-283"),
    # the int8 and weight-only routes are as 0.30.0's table says (no difference read)
    ("0.9.2", "w8a8-int8", 90, "cutlass-int8", "unfused", "per-token-quant", "scaled_mm/cutlass.py:33-44"),
]


@pytest.mark.parametrize(("release", "sid", "cap", "kernel", "aq", "qk", "cite"), OLD_VLLM_CASES)
def test_an_old_vllm_release_runs_what_its_own_source_says(release, sid, cap, kernel, aq, qk, cite) -> None:
    table = catalog.kernel_table("vllm", release)
    assert table.version == "0.30.0"  # priced with 0.30.0's table ...
    c = resolve_kernel(table, scheme(sid), cap)
    assert c is not None and c.kernel.id == kernel  # ... but what this release runs
    assert (c.kernel.activation_quant, c.kernel.quant_kernel) == (aq, qk)
    assert cite in c.source


def test_a_dynamic_per_tensor_scale_is_quantized_apart_too() -> None:
    # ops.scaled_fp8_quant with no scale computes one (a max reduction, then the quantization) in the same call
    # (vllm 0.9.2 w8a8_utils.py:351-355): priced with the per-token quantization's table, the same bytes
    s = scheme("fp8-tensor")
    a = s.activation
    dyn = s.model_copy(update={"activation": a.model_copy(update={"scale": a.scale.model_copy(update={"dynamic": True})})})
    c = resolve_kernel(catalog.kernel_table("vllm", "0.9.2"), dyn, 90)
    assert c is not None and (c.kernel.id, c.kernel.quant_kernel) == ("cutlass-fp8", "per-token-quant")


def test_the_carried_caveat_names_what_was_read_in_the_release() -> None:
    words = catalog.kernel_caveat("vllm", "0.9.2")
    assert "priced with data/kernels/vllm-0.30.0.yaml" in words
    assert "fp8-block runs CutlassFp8BlockScaledMMKernel where that table runs DeepGemmFp8BlockScaledMMKernel" in words
    assert "fp8-channel, fp8-tensor, fp8-block layers are quantized by a separate kernel" in words
    assert "quantized by a separate kernel" not in (catalog.kernel_caveat("vllm", "0.11.2") or "")


@pytest.mark.parametrize(("release", "kernel", "cite"), [
    # SGLang 0.4.2.post4: apply_w8a8_block_fp8_linear calls its Triton w8a8_block_fp8_matmul (fp8_utils.py:39, :53);
    # 0.4.3.post4 the same unless SUPPORT_CUTLASS_BLOCK_FP8 is set (fp8_utils.py:46-48, :98); 0.4.4.post4 runs
    # DeepGEMM on SM90 (SGL_ENABLE_JIT_DEEPGEMM defaults to true): as the 0.5.20 table it is priced with says
    ("0.4.2.post4", "triton-fp8-block", "fp8_utils.py:39, :53"),
    ("0.4.3.post4", "triton-fp8-block", "fp8_utils.py:46-48"),
    ("0.4.4.post4", "deepgemm-fp8-block", "fp8_utils.py:809-810"),
])
def test_an_old_sglang_release_runs_its_own_block_fp8_gemm(release, kernel, cite) -> None:
    c = resolve_kernel(catalog.kernel_table("sglang", release), scheme("fp8-block"), 90)
    assert c is not None and c.kernel.id == kernel and cite in c.source
