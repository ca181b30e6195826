"""The parameter inventory of a :class:`~quantadvise.model.arch.ModelArch`: every tensor group the
checkpoint holds, with its component, role, shape and multiplicity (which tensors exist follows the
transformers modeling files; the numbers all come from the config). Sizing, the roofline and
checkpoint matching all consume this one inventory. Pure.
"""

from __future__ import annotations

from ..errors import ConfigError
from .arch import Inventory, ModelArch, ParamGroup


def _decoder_layer_groups(a: ModelArch, n_dense: int, n_moe: int, *, prefix: str, mtp: bool,
                          n_attn: int | None = None, n_norm: int | None = None) -> list[ParamGroup]:
    """Parameter groups of ``n_dense`` dense + ``n_moe`` MoE decoder layers (a hybrid stack gives its
    attention and norm counts apart: ``n_attn`` attention blocks, ``n_norm`` blocks with a norm)."""
    h = a.hidden_size
    n_layers = n_dense + n_moe if n_attn is None else n_attn
    out: list[ParamGroup] = []

    def add(name: str, comp: str, role: str, shape: tuple[int, ...], count: int, linear: bool = False,
            experts: int | None = None) -> None:
        if count > 0:
            out.append(ParamGroup(f"{prefix}.{name}", comp, role, shape, count, linear, experts, mtp))

    # attention
    if a.is_mla:
        qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim
        if a.q_lora_rank:
            add("self_attn.q_a_proj.weight", "mla", "q_a", (a.q_lora_rank, h), n_layers, True)
            add("self_attn.q_a_layernorm.weight", "norm", "norm", (a.q_lora_rank,), n_layers)
            add("self_attn.q_b_proj.weight", "mla", "q_b", (a.num_heads * qk_head, a.q_lora_rank), n_layers, True)
        else:
            add("self_attn.q_proj.weight", "mla", "q", (a.num_heads * qk_head, h), n_layers, True)
        add("self_attn.kv_a_proj_with_mqa.weight", "mla", "kv_a", (a.kv_lora_rank + a.qk_rope_head_dim, h),
            n_layers, True)
        add("self_attn.kv_a_layernorm.weight", "norm", "norm", (a.kv_lora_rank,), n_layers)
        add("self_attn.kv_b_proj.weight", "mla", "kv_b",
            (a.num_heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank), n_layers, True)
        add("self_attn.o_proj.weight", "mla", "o", (h, a.num_heads * a.v_head_dim), n_layers, True)
    else:
        q_out = a.num_heads * a.head_dim
        kv_out = a.num_kv_heads * a.head_dim
        if a.fused_qkv:
            add("self_attn.qkv_proj.weight", "attention", "qkv", (q_out + 2 * kv_out, h), n_layers, True)
        else:
            add("self_attn.q_proj.weight", "attention", "q", (q_out, h), n_layers, True)
            add("self_attn.k_proj.weight", "attention", "k", (kv_out, h), n_layers, True)
            add("self_attn.v_proj.weight", "attention", "v", (kv_out, h), n_layers, True)
        add("self_attn.o_proj.weight", "attention", "o", (h, q_out), n_layers, True)
        if a.qkv_bias:
            add("self_attn.qkv_bias", "bias", "bias", (q_out + 2 * kv_out,), n_layers)
        if a.o_bias:
            add("self_attn.o_proj.bias", "bias", "bias", (h,), n_layers)
        if a.qk_norm:
            add("self_attn.q_norm.weight", "norm", "norm", (a.head_dim,), n_layers)
            add("self_attn.k_norm.weight", "norm", "norm", (a.head_dim,), n_layers)
        if a.attention_sinks:
            add("self_attn.sinks", "other", "sink", (a.num_heads,), n_layers)
    add("norms", "norm", "norm", (h,), (n_layers if n_norm is None else n_norm) * a.norms_per_layer)

    # dense MLP
    def mlp(name: str, comp: str, inter: int, count: int, experts: int | None = None) -> None:
        if not a.gated_mlp:  # squared-ReLU MLP: up_proj and down_proj only
            add(f"{name}.up_proj.weight", comp, "up", (inter, h), count, True, experts)
        elif a.fused_gate_up:
            add(f"{name}.gate_up_proj.weight", comp, "gate_up", (2 * inter, h), count, True, experts)
        else:
            add(f"{name}.gate_proj.weight", comp, "gate", (inter, h), count, True, experts)
            add(f"{name}.up_proj.weight", comp, "up", (inter, h), count, True, experts)
        add(f"{name}.down_proj.weight", comp, "down", (h, inter), count, True, experts)
        if a.mlp_bias or (experts and a.expert_bias):
            add(f"{name}.gate_up_proj.bias", "bias", "bias", (2 * inter,), count, experts=experts)
            add(f"{name}.down_proj.bias", "bias", "bias", (h,), count, experts=experts)

    mlp("mlp", "mlp", a.intermediate_size, n_dense)
    if n_moe:
        e = a.num_experts
        add("mlp.gate.weight", "router", "router", (e, h), n_moe, True)
        if a.router_bias:
            add("mlp.gate.bias", "bias", "bias", (e,), n_moe)
        if a.score_correction_bias:
            add("mlp.gate.e_score_correction_bias", "other", "router_bias", (e,), n_moe)
        mlp("mlp.experts", "experts", a.moe_intermediate_size, n_moe * e, experts=e)
        if a.shared_expert_intermediate_size:
            mlp("mlp.shared_experts", "shared_experts", a.shared_expert_intermediate_size,
                n_moe * max(1, a.num_shared_experts))
            if a.shared_expert_gate:
                add("mlp.shared_expert_gate.weight", "router", "router", (1, h), n_moe, True)
    return out


def _mamba_groups(a: ModelArch, n: int) -> list[ParamGroup]:
    """The Mamba-2 mixer of ``n`` hybrid blocks: in_proj (x, z, B, C, dt), the causal conv1d over x/B/C,
    dt_bias / A_log / D per head, the gated RMSNorm and out_proj."""
    if not n:
        return []
    if not (a.mamba_heads and a.mamba_head_dim and a.ssm_state_size):
        raise ConfigError("config.json: a Mamba block needs mamba_num_heads, mamba_head_dim and ssm_state_size",
                          field="mamba_num_heads")
    h = a.hidden_size
    d_inner = a.mamba_heads * a.mamba_head_dim
    bc = 2 * a.mamba_groups * a.ssm_state_size
    p = "model.layers.*.mixer"
    return [
        ParamGroup(f"{p}.in_proj.weight", "mamba", "in_proj", (2 * d_inner + bc + a.mamba_heads, h), n, True),
        ParamGroup(f"{p}.conv1d.weight", "mamba", "conv1d", (d_inner + bc, 1, a.conv_kernel), n),
        ParamGroup(f"{p}.conv1d.bias", "bias", "bias", (d_inner + bc,), n),
        ParamGroup(f"{p}.dt_bias+A_log+D", "other", "ssm", (3 * a.mamba_heads,), n),
        ParamGroup(f"{p}.norm.weight", "norm", "norm", (d_inner,), n),
        ParamGroup(f"{p}.out_proj.weight", "mamba", "out_proj", (h, d_inner), n, True),
    ]


def build_inventory(a: ModelArch) -> Inventory:
    h, v = a.hidden_size, a.vocab_size
    groups: list[ParamGroup] = [ParamGroup("model.embed_tokens.weight", "embedding", "embedding", (v, h), 1, True)]
    n_moe = len(a.moe_layers)
    if a.block_kinds:
        kinds = a.block_kinds
        groups += _decoder_layer_groups(a, kinds.count("mlp"), n_moe, prefix="model.layers.*", mtp=False,
                                        n_attn=kinds.count("attention"), n_norm=len(kinds))
        groups += _mamba_groups(a, kinds.count("mamba"))
    else:
        groups += _decoder_layer_groups(a, a.num_layers - n_moe, n_moe, prefix="model.layers.*", mtp=False)
    groups.append(ParamGroup("model.norm.weight", "norm", "norm", (h,), 1))
    if not a.tie_word_embeddings:
        groups.append(ParamGroup("lm_head.weight", "lm_head", "lm_head", (v, h), 1, True))
    groups += a.encoders
    if a.num_mtp_layers:
        m = a.num_mtp_layers
        # DeepSeek-V3's MTP module (HF checkpoint layer index num_hidden_layers): its own embedding
        # and output head copies, enorm/hnorm, the 2H->H projection, one full MoE decoder layer and
        # the shared head's norm.
        groups.append(ParamGroup("model.layers.mtp.embed_tokens.weight", "embedding", "embedding", (v, h), m,
                                 True, mtp=True))
        groups.append(ParamGroup("model.layers.mtp.norms", "norm", "norm", (h,), 3 * m, mtp=True))
        groups.append(ParamGroup("model.layers.mtp.eh_proj.weight", "other", "eh_proj", (h, 2 * h), m, True,
                                 mtp=True))
        groups += _decoder_layer_groups(a, 0 if n_moe else m, m if n_moe else 0, prefix="model.layers.mtp",
                                        mtp=True)
        groups.append(ParamGroup("model.layers.mtp.shared_head.head.weight", "lm_head", "lm_head", (v, h), m,
                                 True, mtp=True))
    return Inventory(a, tuple(groups))


def inventory_of(a: ModelArch) -> Inventory:
    """The parameter :class:`Inventory` of ``a``, built once per architecture object (kept on it, the
    way ``functools.cached_property`` keeps a value)."""
    memo = a.__dict__.get("_inventory")
    if memo is None:
        memo = a.__dict__["_inventory"] = build_inventory(a)
    return memo
