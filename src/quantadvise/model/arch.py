"""Model architecture (parsed from a Hugging Face config.json dict) and its parameter inventory.

The inventory lists every parameter group the checkpoint holds, with its component, role, shape
and multiplicity. Sizing, the roofline and checkpoint matching all consume this one inventory.
Which tensors exist per architecture follows the Hugging Face ``transformers`` modeling files
(LlamaForCausalLM, MistralForCausalLM, Qwen2/Qwen3(-MoE), Gemma2, Phi3, Mixtral, DeepseekV3,
GptOss); the numbers all come from the config.

Pure: takes dicts, returns frozen objects; no I/O.
"""

from dataclasses import field
from functools import cached_property
from typing import Any, ClassVar

from ..results import OmitNone, record

# Components shown in the size table, in display order.
COMPONENTS = (
    "embedding",
    "attention",
    "mla",
    "mamba",
    "mlp",
    "shared_experts",
    "experts",
    "router",
    "norm",
    "bias",
    "other",
    "lm_head",
    "vision",
    "mtp",
)


class ModelSource(OmitNone):
    """Where a model's config came from, as reports show it: its id, how it was found (bundled,
    local, cache, hub, dict, object), the path or URL, and the published parameter count when
    the bundled table has one."""

    omit_if_none: ClassVar[tuple[str, ...]] = ("location", "published_params")

    id: str
    source: str
    location: str | None = None
    published_params: int | None = None


class ModelSummary(ModelSource):
    """A model as a report names it: where it came from, and what kind of model it is."""

    omit_if_none: ClassVar[tuple[str, ...]] = ("location", "published_params")

    kind: str
    architecture: str
    model_type: str


@record(slots=True)
class ParamGroup:
    """``count`` identical tensors of ``shape``. Linear weights are ``(N, K)`` = (out, in)."""

    name: str
    component: str
    role: str
    shape: tuple[int, ...]
    count: int = 1
    linear: bool = False
    experts: int | None = None  # for routed-expert groups: experts per MoE layer (E)
    mtp: bool = False  # part of a multi-token-prediction module (not loaded for plain serving)

    @property
    def params(self) -> int:
        n = self.count
        for d in self.shape:
            n *= d
        return n

    @property
    def n(self) -> int:
        return self.shape[0]

    @property
    def k(self) -> int:
        return self.shape[1] if len(self.shape) > 1 else 1


@record(slots=True)
class AttentionLayers:
    full: int
    sliding: int
    linear: int
    window: int | None


@record
class ModelArch:
    """The parts of a config.json that decide parameter shapes, KV geometry and MoE routing."""

    model_type: str
    architecture: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int
    tie_word_embeddings: bool
    # attention details
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    norms_per_layer: int = 2
    fused_qkv: bool = False
    fused_gate_up: bool = False
    mlp_bias: bool = False
    attention_sinks: bool = False
    layer_types: tuple[str, ...] = ()
    sliding_window: int | None = None
    # MoE
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    num_shared_experts: int = 0
    shared_expert_intermediate_size: int = 0
    shared_expert_gate: bool = False
    moe_layers: tuple[int, ...] = ()
    router_bias: bool = False
    expert_bias: bool = False
    score_correction_bias: bool = False
    # MLA
    q_lora_rank: int | None = None
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # hybrid stacks (Nemotron-H): one mixer per layer, "attention" | "mamba" | "mlp" | "moe"
    block_kinds: tuple[str, ...] = ()
    gated_mlp: bool = True  # gate_proj + up_proj; False: up_proj only (squared-ReLU MLPs)
    mamba_heads: int = 0
    mamba_head_dim: int = 0
    ssm_state_size: int = 0
    mamba_groups: int = 0
    conv_kernel: int = 0
    # multi-token prediction
    num_mtp_layers: int = 0
    torch_dtype: str = "bfloat16"
    max_position_embeddings: int | None = None
    raw_quantization_config: dict[str, Any] | None = field(default=None, compare=False)
    warnings: tuple[str, ...] = field(default=(), compare=False)
    # a multimodal checkpoint's encoders and projector (quantadvise.model.towers): 16-bit, outside the decode step
    encoders: tuple[ParamGroup, ...] = ()

    # -- kinds ----------------------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def kind(self) -> str:
        parts = []
        parts.append("MoE" if self.is_moe else "dense")
        if self.is_mla:
            parts.append("MLA")
        elif self.num_kv_heads < self.num_heads:
            parts.append("GQA" if self.num_kv_heads > 1 else "MQA")
        else:
            parts.append("MHA")
        if self.attention_layers.sliding:
            parts.append("sliding-window")
        if self.attention_layers.linear:
            parts.append("linear-attention")
        return " ".join(parts)

    @cached_property
    def attention_layers(self) -> AttentionLayers:
        types = self.layer_types or ("full_attention",) * self.num_layers
        sliding = sum(1 for t in types if t in ("sliding_attention", "sliding_window", "local"))
        linear = sum(1 for t in types if t in ("linear_attention", "mamba", "recurrent", "conv"))
        none = sum(1 for t in types if t in _NO_MIXER)  # a hybrid's MLP / MoE blocks hold no KV
        full = len(types) - sliding - linear - none
        return AttentionLayers(full, sliding, linear, self.sliding_window if sliding else None)

    def component_layers(self, component: str) -> tuple[int, ...]:
        """The decoder layers (0-based) that hold ``component``'s tensors, from the one layer pattern
        the inventory counts: a hybrid stack (Nemotron-H ``block_kinds``) has attention only on its
        attention blocks, Mamba-2 on its Mamba blocks and the dense MLP on its MLP blocks; a plain
        transformer has attention on every layer and the dense MLP on every non-MoE layer. Routed and
        shared experts and the router sit on ``moe_layers`` either way; norms on every layer."""
        if component in _MOE_COMPONENTS:
            return self.moe_layers
        if self.block_kinds:
            kind = _COMPONENT_BLOCK.get(component)
            return tuple(i for i, b in enumerate(self.block_kinds) if kind is None or b == kind)
        if component == "mamba":
            return ()
        if component == "mlp":
            moe = set(self.moe_layers)
            return tuple(i for i in range(self.num_layers) if i not in moe)
        return tuple(range(self.num_layers))



@record
class Inventory:
    arch: ModelArch
    groups: tuple[ParamGroup, ...]

    def serving_groups(self, include_mtp: bool = False) -> tuple[ParamGroup, ...]:
        return self.groups if include_mtp else tuple(g for g in self.groups if not g.mtp)

    def total_params(self, include_mtp: bool = False) -> int:
        return sum(g.params for g in self.serving_groups(include_mtp))

    def params_by_component(self, include_mtp: bool = False) -> dict[str, int]:
        out: dict[str, int] = {}
        for g in self.serving_groups(include_mtp):
            comp = "mtp" if g.mtp else g.component
            out[comp] = out.get(comp, 0) + g.params
        return {c: out[c] for c in COMPONENTS if c in out}

    def linear_groups(self, include_mtp: bool = False) -> tuple[ParamGroup, ...]:
        return tuple(g for g in self.serving_groups(include_mtp) if g.linear)

    def decoder_linear_params(self) -> int:
        """Parameters in the decoder's linear matrices (not embedding, not lm_head, not MTP)."""
        return sum(
            g.params for g in self.groups if g.linear and not g.mtp and g.component not in ("embedding", "lm_head")
        )

    def decoder_linear_matrices(self) -> int:
        return sum(
            g.count for g in self.groups if g.linear and not g.mtp and g.component not in ("embedding", "lm_head")
        )


_NO_MIXER = ("mlp", "moe")  # hybrid blocks that hold no attention (no KV)
# Which block kind of a hybrid stack holds each inventory component (the rest, norms, are on every block).
_MOE_COMPONENTS = ("experts", "shared_experts", "router")
_COMPONENT_BLOCK = {"attention": "attention", "mla": "attention", "mamba": "mamba", "mlp": "mlp"}
