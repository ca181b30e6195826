"""The operators a step is priced from: one linear layer group as the speed model sees it per GPU
(:class:`LinearOp`), and how many distinct experts a batch of tokens reaches in one MoE layer. Pure."""

from __future__ import annotations

from ..results import record

# Linear layers every GPU of a tensor-parallel group holds whole (never split): MLA's low-rank A projections and
# the MoE router. vLLM 0.8.5.post1 builds q_a_proj, kv_a_proj_with_mqa and the gate as ReplicatedLinear
# (vllm/model_executor/models/deepseek_v2.py:379,400,112); vLLM 0.34.0 fuses the two A projections into
# fused_qkv_a_proj with disable_tp=True (deepseek_v2.py:1051-1057, 966) and its gate is GateLinear(ReplicatedLinear)
# (fused_moe/router/gate_linear.py:26); SGLang 0.5.23 builds fused_qkv_a_proj_with_mqa as ReplicatedLinear
# (sglang/srt/models/deepseek_v2.py:2069-2075) and MoEGate as a whole weight
REPLICATED_ROLES = frozenset({"q_a", "kv_a", "router"})


def expected_experts(num_experts: int, k: int, tokens: float) -> float:
    """Distinct experts ``tokens`` tokens touch in one MoE layer when each picks ``k`` of ``E``
    uniformly: ``E·(1−(1−k/E)^tokens)`` — k at one token, all E as tokens grow."""
    if tokens <= 0:
        return 0.0
    return num_experts * (1.0 - (1.0 - k / num_experts) ** tokens)


@record(slots=True)
class LinearOp:
    """``count`` identical matrices of one inventory group, per GPU."""

    name: str
    component: str
    decoder: bool  # a decoder linear matrix (not embedding / lm_head)
    quantized: bool
    bytes: float  # stored bytes per GPU (all E experts for a routed group)
    elements: float  # weight elements per GPU (all experts)
    flops_per_token: float  # 2·params per GPU, times k/E for routed experts
    math: str
    dequant: bool
    experts: int = 0  # E for routed experts
    top_k: int = 0
    n: float = 0.0  # per-GPU weight shape (tensor parallel splits N, or K for o / down; REPLICATED_ROLES whole)
    k: float = 0.0
    count: int = 0  # matrices of this shape per GPU (layers x experts for routed experts)
    role: str = ""
