"""Layers the engines hold whole on every GPU of a tensor-parallel group (perf/ops.py REPLICATED_ROLES): MLA's
low-rank A projections and the MoE router, and MLA's q_a + kv_a run as one GEMM. Expected shapes come from
DeepSeek-V3's config.json (hidden 7,168, q_lora_rank 1,536, kv_lora_rank 512, qk_rope_head_dim 64, 256 routed
experts, 61 layers of which the first 3 dense) and the engines' lines cited in perf/ops.py."""

from __future__ import annotations

import pytest

from quantadvise.api.speed import efficiency
from quantadvise.catalog.resolve import get_gpu, load_model, load_profiles, resolve_scheme
from quantadvise.perf.step import StepModel


def _model(name: str, scheme: str, gpu: str, tp: int, engine: str = "vllm") -> StepModel:
    arch, _ = load_model(name)
    g, s = get_gpu(gpu), resolve_scheme(scheme)
    return StepModel(arch, s, g, gpus=tp, efficiency=efficiency(load_profiles(None), g, s, engine=engine))


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_mla_a_projections_and_the_router_are_whole_on_every_gpu(engine):
    sm = _model("deepseek-ai/DeepSeek-V3", "fp8-block", "h200", 8, engine)
    ops = {o.role: o for o in sm.linears}
    # q_a: 1,536 x 7,168 on each of the 61 layers, whole: ReplicatedLinear, not 1,536 / 8 = 192 rows
    assert (ops["q_a"].n, ops["q_a"].k) == (1536, 7168)
    assert ops["q_a"].elements == 1536 * 7168 * 61
    # kv_a_proj_with_mqa: (512 + 64) x 7,168, whole
    assert (ops["kv_a"].n, ops["kv_a"].k) == (576, 7168)
    # the router: 256 experts x 7,168 on the 58 MoE layers, whole (not 32 rows)
    assert (ops["router"].n, ops["router"].k, ops["router"].count) == (256, 7168, 58)
    # the layers tensor parallelism does split stay split: q_b's 128 heads x 192 over 8 GPUs
    assert ops["q_b"].n == 128 * 192 / 8


def test_q_a_and_kv_a_are_priced_as_one_gemm():
    # vLLM's fused_qkv_a_proj / SGLang's fused_qkv_a_proj_with_mqa: one GEMM of N = 1,536 + 576 = 2,112 (SGLang's
    # DeepGEMM table prices fp8-block on B200)
    sm = _model("deepseek-ai/DeepSeek-V3", "fp8-block", "b200", 8, "sglang")
    by_role = {o.role: k for o, k in zip(sm.linears, sm._kern, strict=True)}
    qa, kva = by_role["q_a"], by_role["kv_a"]
    assert qa is not None and kva is not None
    assert qa.n == kva.n == 1536 + 576
    assert qa.share == pytest.approx(1536 / 2112) and kva.share == pytest.approx(576 / 2112)


def test_a_dense_models_projections_are_still_split():
    # Llama-3-8B at TP2: q 4,096 / 2 = 2,048 rows, k and v 1,024 / 2 = 512 (no replicated role in a dense model)
    sm = _model("meta-llama/Meta-Llama-3-8B", "fp8-dynamic", "h100", 2)
    ops = {o.role: o for o in sm.linears}
    assert (ops["q"].n, ops["k"].n, ops["v"].n) == (2048, 512, 512)
    assert not {"q_a", "kv_a", "router"} & set(ops)
