"""Routed experts run the quantization method's fused-MoE backend, never a dense Linear kernel
(quantadvise.engines.kernels.resolve_moe_kernel / checkpoint_kernels), and the step model prices them
with that backend's measured fused-MoE curve (perf.kernel_step). Every expected kernel is the engine
source line quoted next to it (vLLM 0.33.0 / SGLang 0.5.23 wheels); every expected time is derived
from the published aiconfigurator-core 0.12.0 MoE table named next to it."""

from __future__ import annotations

import pytest

from quantadvise import catalog
from quantadvise.api.speed import efficiency
from quantadvise.catalog.resolve import load_model, load_profiles
from quantadvise.engines.kernels import checkpoint_kernels, resolve_kernel, resolve_moe_kernel
from quantadvise.perf.step import StepModel


def scheme(sid: str):
    return catalog.scheme_from_preset(catalog.scheme_preset(sid))


@pytest.fixture(scope="module")
def vllm():
    return catalog.kernel_table("vllm", "0.33.0")


@pytest.mark.parametrize(("sid", "cap", "kernel"), [
    # fused_moe/oracle/fp8.py:122-132: on SM90, block FP8 under tensor parallelism moves Triton first
    ("fp8-block", 90, "triton-fp8-block-moe"),
    # oracle/int_wna16.py:126-142 + humming/priority.py:26-48: Humming ahead of Marlin on SM90
    ("w4a16", 90, "humming-moe"),
    ("w8a16", 90, "humming-moe"),
    # below SM90 Marlin MoE is first (int_wna16.py:126-142)
    ("w4a16", 80, "marlin-moe"),
    # oracle/mxfp8.py:20-32, :133: TRT-LLM / DeepGEMM MXFP8 are SM100 kernels; Humming next on SM90
    ("mxfp8", 90, "humming-fp8-moe"),
])
def test_experts_resolve_to_the_moe_backend(vllm, sid: str, cap: int, kernel: str) -> None:
    c = resolve_moe_kernel(vllm, scheme(sid), cap)
    assert c is not None and c.kernel.id == kernel and c.moe
    assert c.kernel.id != resolve_kernel(vllm, scheme(sid), cap).kernel.id  # not the dense Linear kernel


def test_expert_group_is_never_given_a_linear_kernel(vllm) -> None:
    # a group covering attention and experts (Qwen3-MoE FP8): one row per layer kind
    rows = checkpoint_kernels([("group_0", scheme("fp8-block"), None, ("dense", "experts"))], [vllm], 90)
    by = {r.group: r for r in rows}
    assert by["group_0 (experts)"].kernel == "triton-fp8-block-moe"
    assert by["group_0 (dense)"].kernel == "deepgemm-fp8-block"
    # no MoE row on file for this GPU (sm75 fp8-block): said so, never a dense kernel
    row = checkpoint_kernels([("g", scheme("fp8-block"), None, ("experts",))], [vllm], 75)[0]
    assert row.kernel is None and row.name == "MoE kernel not on file"


def test_deepgemm_names_its_condition_and_fallback(vllm) -> None:
    # vllm/utils/deep_gemm.py:113-118 (needs has_deep_gemm()); linear/__init__.py:494-506 lists CUTLASS
    # block FP8 next
    c = resolve_kernel(vllm, scheme("fp8-block"), 90, shape=(4096, 4096))
    assert c.kernel.id == "deepgemm-fp8-block"
    assert "when deep_gemm imports, else CutlassFp8BlockScaledMMKernel" in c.label
    assert "vllm/third_party/deep_gemm" in (c.kernel.requires or "")


def test_deepseek_v3_fp8_block_experts_beat_bf16_on_h200() -> None:
    """Measured (aiconfigurator-core 0.12.0, h200_sxm/moe/vllm/0.24.0/moe_perf.parquet, DeepSeek-V3 shape
    hidden 7168, inter 2048, 256 experts, top 8, moe_tp 8, balanced, 32 tokens): fp8_block Triton
    0.2605 ms per layer; h200_sxm/moe/vllm/0.19.0: bf16 fused_moe 0.7356 ms. So fp8-block's experts must
    cost clearly less than bf16's (0.2605 / 0.7356 = 0.35), not more — the defect priced fp8-block
    slower than bf16 and than w8a16."""
    gpu = catalog.get_gpu("h200")
    arch, _ = load_model("deepseek-ai/DeepSeek-V3")
    profs = load_profiles(gpu=gpu)
    t = {}
    for sid in ("bf16", "fp8-block", "w8a16"):
        sm = StepModel(arch, scheme(sid), gpu, gpus=8, efficiency=efficiency(profs, gpu, scheme(sid)))
        t[sid] = sm.decode(32, 8192).time_s
    assert t["fp8-block"] < 0.75 * t["bf16"]
    # w8a16 experts run Humming MoE, priced by the measured int4 Marlin MoE (h200_sxm/moe/vllm/0.19.0:
    # 0.8096 ms per layer at the same point, 3.1x the fp8_block Triton layer): not faster than fp8-block
    assert t["w8a16"] > t["fp8-block"]


def test_fp8_per_channel_experts_run_cutlass_moe_on_hopper(vllm) -> None:
    # fp8-dynamic experts (per-channel static weights, per-token dynamic activations) on SM90: the fp8 MoE
    # oracle's list (fused_moe/oracle/fp8.py:88-99) skips FlashInfer CUTLASS (per-tensor static or 128-block
    # fp8 only, experts/flashinfer_cutlass_moe.py:146-175) and DeepGEMM (128-block only) and takes vLLM's
    # CUTLASS grouped GEMM, CutlassExpertsFp8 (experts/cutlass_moe.py:321-330: (channel, token) supported)
    c = resolve_moe_kernel(vllm, scheme("fp8-dynamic"), 90)
    assert c is not None and c.kernel.id == "cutlass-fp8-moe" and c.moe


def test_experts_without_a_moe_row_are_priced_by_a_measured_stand_in_not_the_roofline() -> None:
    """No published MoE table and no MoE row exist for W4A8-fp8 experts on Hopper. Pricing them on the
    spec-sheet roofline ranked them ahead of every measured format (Qwen3-30B-A3B on an H100 at batch 64:
    w4a8-fp8 2.28x bf16). They take the measured fused-MoE curve of their kind (W+A: the fp8 Triton MoE
    kernel) with their own bytes, so at batch 1 (memory-bound: each token reaches 8 of 128 experts) their
    4.125-bit experts cost no more than the 8-bit fp8-block experts on the same curve."""
    from quantadvise.perf.efficiency import moe_stand_in

    gpu = catalog.get_gpu("h100")
    profs = load_profiles(gpu=gpu)
    eff = efficiency(profs, gpu, scheme("w4a8-fp8"))
    pricing = eff.kernels
    assert pricing is not None
    assert resolve_moe_kernel(pricing.context.table, scheme("w4a8-fp8"), 90) is None  # no row on file
    got = pricing.choose_moe(True)
    assert got is not None and got.kernel.id == "triton-fp8-block-moe" and "not on file" in got.kernel.name
    assert moe_stand_in(pricing.context, pricing.curves, True) == got
    arch, _ = load_model("Qwen/Qwen3-30B-A3B")
    w4a8 = StepModel(arch, scheme("w4a8-fp8"), gpu, efficiency=eff).decode(1, 4096)
    fp8 = StepModel(arch, scheme("fp8-block"), gpu, efficiency=efficiency(profs, gpu, scheme("fp8-block"))
                    ).decode(1, 4096)
    assert w4a8.time_s <= fp8.time_s
