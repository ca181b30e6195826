"""Parsing a Hugging Face config.json dict into a :class:`~.arch.ModelArch`: which tensors exist per
architecture (the ``transformers`` modeling files), every number from the config, and the field that
is wrong when one is. Pure: takes dicts, returns frozen objects.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..inputs import shown
from .arch import ModelArch
from .towers import encoder_groups, text_defaults

# -------------------------------------------------------------------------------------------------
# Parsing config.json
# -------------------------------------------------------------------------------------------------

# Hybrid layer patterns: Nemotron-H's hybrid_override_pattern letters and layers_block_type words.
_BLOCK_LETTERS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
_BLOCK_WORDS = {"mamba": "mamba", "attention": "attention", "mlp": "mlp", "moe": "moe"}

# model_type -> structural traits of the transformers modeling code (which tensors exist).
_TRAITS: dict[str, dict[str, Any]] = {
    "llama": {},
    "mistral": {},
    "mixtral": {},
    "qwen2": {"qkv_bias": True},
    "qwen2_moe": {"qkv_bias": True, "shared_expert_gate": True},
    "qwen2_5_vl": {"qkv_bias": True},  # its text model is Qwen2's (modeling_qwen2_5_vl.py:625-628)
    "qwen3": {"qk_norm": True},
    "qwen3_moe": {"qk_norm": True},
    "gemma": {},
    "gemma2": {"norms_per_layer": 4},
    "gemma3_text": {"norms_per_layer": 4, "qk_norm": True},
    "phi3": {"fused_qkv": True, "fused_gate_up": True},
    "deepseek_v2": {},
    "deepseek_v3": {"score_correction_bias": True},
    "gpt_oss": {"qkv_bias": True, "o_bias": True, "attention_sinks": True, "router_bias": True, "expert_bias": True},
    # Nemotron-H: one mixer per block (Mamba-2, attention, MLP or MoE), one norm per block, squared-ReLU
    # (non-gated) MLPs and experts, a sigmoid router with a score-correction bias
    # vLLM 0.33.0 nemotron_h.py:167: NemotronHMoE.gate.e_score_correction_bias, n_routed_experts per MoE layer
    "nemotron_h": {"norms_per_layer": 1, "score_correction_bias": True},
}


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Multimodal wrappers keep the language model under text_config."""
    tc = cfg.get("text_config")
    if isinstance(tc, dict) and "hidden_size" in tc:
        merged = dict(tc)
        for key in ("quantization_config", "compression_config", "tie_word_embeddings"):
            if key in cfg and key not in merged:
                merged[key] = cfg[key]
        return merged
    return cfg


def _hybrid_blocks(cfg: dict[str, Any], layers: int, where: str) -> tuple[str, ...]:
    """The mixer of each layer of a hybrid stack (Nemotron-H ``hybrid_override_pattern`` "M*-E" or
    ``layers_block_type`` words), empty for a plain transformer."""
    pattern = cfg.get("hybrid_override_pattern")
    words = cfg.get("layers_block_type")
    if isinstance(words, list) and words:
        kinds = [_BLOCK_WORDS.get(str(w).lower()) for w in words]
        key = "layers_block_type"
    elif isinstance(pattern, str) and pattern:
        kinds = [_BLOCK_LETTERS.get(c) for c in pattern]
        key = "hybrid_override_pattern"
    else:
        return ()
    if None in kinds:
        raise ConfigError(f"{where}: field '{key}' has a layer kind quantadvise does not know (M, *, -, E / mamba, "
                          "attention, mlp, moe)", field=key)
    if len(kinds) != layers:
        raise ConfigError(f"{where}: field '{key}' names {len(kinds)} layers, num_hidden_layers is {layers}", field=key)
    return tuple(k for k in kinds if k is not None)


MAX_CONFIG_INT = 2**31 - 1  # no dimension of a real model passes int32; larger is junk, not a model
MAX_LAYERS = 100_000  # the deepest published models have a few hundred layers


def _req_int(cfg: dict[str, Any], *keys: str, where: str, minimum: int = 1, maximum: int = MAX_CONFIG_INT) -> int:
    for key in keys:
        if key in cfg and cfg[key] is not None:
            v = cfg[key]
            if isinstance(v, bool) or not isinstance(v, int):
                raise ConfigError(f"{where}: field '{key}' must be an integer, got {v!r:.60}", field=key)
            if v < minimum:
                raise ConfigError(f"{where}: field '{key}' must be >= {minimum}, got {v}", field=key)
            if v > maximum:
                raise ConfigError(f"{where}: field '{key}' is {shown(v)}, more than any model has (at most {maximum:,})",
                                  field=key)
            return v
    raise ConfigError(
        f"{where}: required field '{keys[0]}' is missing",
        hint="pass the model's config.json from its Hugging Face repository",
        field=keys[0],
    )


def _opt_int(cfg: dict[str, Any], *keys: str, default: int = 0, where: str) -> int:
    for key in keys:
        if key in cfg and cfg[key] is not None:
            v = cfg[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError(f"{where}: field '{key}' must be a non-negative integer, got {v!r:.60}", field=key)
            if v > MAX_CONFIG_INT:
                raise ConfigError(f"{where}: field '{key}' is {shown(v)}, more than any model has", field=key)
            return v
    return default


def _layer_list(cfg: dict[str, Any], key: str, where: str) -> set[int]:
    """A list of 0-based layer indices (Qwen's ``mlp_only_layers``); ConfigError otherwise."""
    v = cfg.get(key)
    if v is None:
        return set()
    if not isinstance(v, list) or not all(type(i) is int and 0 <= i <= MAX_CONFIG_INT for i in v):
        raise ConfigError(f"{where}: field '{key}' must be a list of layer indices, got {shown(v)}", field=key)
    return set(v)


def parse_config(cfg: Any, where: str = "config.json") -> ModelArch:
    """Build a :class:`ModelArch` from a config.json dict; ConfigError names the bad field."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"{where}: expected a JSON object, got {type(cfg).__name__}")
    top = cfg
    cfg = text_defaults(top, _text_config(cfg))
    model_type = cfg.get("model_type")
    if not isinstance(model_type, str):
        raise ConfigError(f"{where}: field 'model_type' is missing or not a string", field="model_type")
    archs = cfg.get("architectures") or [model_type]
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise ConfigError(f"{where}: field 'architectures' must be a list of class names, got {archs!r:.60}",
                          field="architectures")
    traits = dict(_TRAITS.get(model_type, {}))
    warnings: list[str] = []
    if model_type not in _TRAITS:
        warnings.append(
            f"model_type '{model_type}' is not one quantadvise knows tensor by tensor; assuming a Llama-like "
            "decoder (q/k/v/o, gated MLP, 2 norms per layer) — check the parameter total against the checkpoint"
        )

    hidden = _req_int(cfg, "hidden_size", "d_model", "n_embd", where=where)
    encoders, encoder_warnings = encoder_groups(top, hidden, where)
    warnings += encoder_warnings
    layers = _req_int(cfg, "num_hidden_layers", "n_layer", "num_layers", where=where, maximum=MAX_LAYERS)
    heads = _req_int(cfg, "num_attention_heads", "n_head", where=where)
    kv_heads = _opt_int(cfg, "num_key_value_heads", default=heads, where=where) or heads
    head_dim = _opt_int(cfg, "head_dim", default=0, where=where)
    if not head_dim and _opt_int(cfg, "kv_lora_rank", default=0, where=where):
        # MLA: a head is qk_nope + qk_rope wide (the checks below ask for both); hidden_size need not divide
        head_dim = (_opt_int(cfg, "qk_nope_head_dim", default=0, where=where)
                    + _opt_int(cfg, "qk_rope_head_dim", default=0, where=where))
    if not head_dim:
        if hidden % heads:
            raise ConfigError(f"{where}: hidden_size {hidden} is not divisible by num_attention_heads {heads}; "
                              "set head_dim", field="head_dim")
        head_dim = hidden // heads
    if heads % kv_heads:
        raise ConfigError(
            f"{where}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}",
            field="num_key_value_heads",
        )
    vocab = _req_int(cfg, "vocab_size", where=where)
    inter = _opt_int(cfg, "intermediate_size", "ffn_dim", "n_inner", default=0, where=where)

    tie = cfg.get("tie_word_embeddings")
    if tie is None:
        # transformers' PretrainedConfig default is True; gemma-family configs rely on it.
        tie = True
    if not isinstance(tie, bool):
        raise ConfigError(f"{where}: field 'tie_word_embeddings' must be true or false", field="tie_word_embeddings")

    attention_bias = bool(cfg.get("attention_bias", False))
    if attention_bias and model_type not in ("qwen2", "qwen2_moe"):
        traits["qkv_bias"] = True
        traits["o_bias"] = True
    mlp_bias = bool(cfg.get("mlp_bias", False))

    # sliding window / layer types
    layer_types = cfg.get("layer_types")
    sliding = cfg.get("sliding_window")
    if layer_types is not None:
        if not isinstance(layer_types, list) or len(layer_types) != layers:
            raise ConfigError(f"{where}: field 'layer_types' must list one type per layer ({layers})",
                              field="layer_types")
        lt = tuple(str(t) for t in layer_types)
    elif isinstance(cfg.get("full_attention_interval"), int) and not isinstance(cfg.get("full_attention_interval"), bool) \
            and cfg["full_attention_interval"] > 0:
        # Qwen3-Next / Qwen3.5 without layer_types: transformers 5.25 configuration_qwen3_next.py:126-131
        # `layer_types = ["linear_attention" if bool((i + 1) % interval) else "full_attention" ...]`; vLLM builds
        # each layer from config.layer_types (models/qwen3_next.py:665-669) and only full_attention layers own a
        # KV cache (config/model.py:1727-1795, _ATTENTION_LAYER_TYPES)
        interval = cfg["full_attention_interval"]
        lt = tuple("linear_attention" if (i + 1) % interval else "full_attention" for i in range(layers))
    elif model_type == "gemma2" and sliding:
        # Gemma-2 alternates local (sliding) and global attention, starting with local (layer 0).
        lt = tuple("sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers))
    elif model_type == "gemma3_text" and sliding:
        pattern = _opt_int(cfg, "sliding_window_pattern", default=6, where=where) or 6
        lt = tuple("full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(layers))
    elif sliding and cfg.get("use_sliding_window", model_type in ("mistral", "mixtral")) and model_type in (
        "mistral",
        "mixtral",
    ):
        lt = ("sliding_attention",) * layers
    else:
        lt = ()
    if sliding is not None and (isinstance(sliding, bool) or not isinstance(sliding, int) or sliding < 1):
        raise ConfigError(f"{where}: field 'sliding_window' must be a positive integer", field="sliding_window")
    _opt_int(cfg, "sliding_window", where=where)  # within what a model has

    blocks = _hybrid_blocks(cfg, layers, where)
    if blocks:
        lt = tuple("full_attention" if b == "attention" else b for b in blocks)

    # MoE
    n_experts = _opt_int(cfg, "num_local_experts", "num_experts", "n_routed_experts", default=0, where=where)
    k_experts = _opt_int(cfg, "num_experts_per_tok", "experts_per_token", "num_experts_per_token", "top_k_experts",
                         default=0, where=where)
    moe_inter = _opt_int(cfg, "moe_intermediate_size", default=0, where=where) or inter
    n_shared = _opt_int(cfg, "n_shared_experts", "num_shared_experts", default=0, where=where)
    shared_inter = _opt_int(cfg, "shared_expert_intermediate_size", "moe_shared_expert_intermediate_size", default=0,
                            where=where)
    if shared_inter and not n_shared:
        n_shared = 1
    if n_shared and not shared_inter:
        shared_inter = moe_inter * n_shared
        n_shared_count = 1  # DeepSeek fuses n shared experts into one MLP of n x moe_intermediate
    else:
        n_shared_count = n_shared
    moe_layers: tuple[int, ...] = ()
    if n_experts:
        if not k_experts or k_experts > n_experts:
            raise ConfigError(
                f"{where}: MoE config needs num_experts_per_tok between 1 and {n_experts}",
                field="num_experts_per_tok",
            )
        first_dense = _opt_int(cfg, "first_k_dense_replace", default=0, where=where)
        freq = _opt_int(cfg, "moe_layer_freq", "decoder_sparse_step", default=1, where=where) or 1
        mlp_only = _layer_list(cfg, "mlp_only_layers", where)
        moe_layers = tuple(
            i for i in range(layers) if i >= first_dense and (i % freq == 0 if model_type.startswith("deepseek")
                                                              else (i + 1) % freq == 0) and i not in mlp_only
        )
        if blocks:
            moe_layers = tuple(i for i, b in enumerate(blocks) if b == "moe")
        if not inter and not blocks and len(moe_layers) < layers:
            raise ConfigError(f"{where}: dense layers need 'intermediate_size'", field="intermediate_size")
        if not moe_inter and moe_layers:
            raise ConfigError(f"{where}: MoE layers need 'moe_intermediate_size' (or 'intermediate_size')",
                              field="moe_intermediate_size")
    elif not inter and not (blocks and "mlp" not in blocks):
        raise ConfigError(f"{where}: required field 'intermediate_size' is missing", field="intermediate_size")
    act = str(cfg.get("mlp_hidden_act") or cfg.get("hidden_act") or "silu").lower()
    gated = act not in ("relu2", "relu_squared", "squared_relu")

    # MLA
    kv_lora = _opt_int(cfg, "kv_lora_rank", default=0, where=where)
    q_lora = cfg.get("q_lora_rank")
    if q_lora is not None and (isinstance(q_lora, bool) or not isinstance(q_lora, int) or q_lora < 1):
        raise ConfigError(f"{where}: field 'q_lora_rank' must be a positive integer or null", field="q_lora_rank")
    q_lora = _opt_int(cfg, "q_lora_rank", default=0, where=where) or None
    qk_nope = _opt_int(cfg, "qk_nope_head_dim", default=0, where=where)
    qk_rope = _opt_int(cfg, "qk_rope_head_dim", default=0, where=where)
    v_head = _opt_int(cfg, "v_head_dim", default=0, where=where)
    if kv_lora and not (qk_nope and qk_rope and v_head):
        raise ConfigError(f"{where}: MLA config (kv_lora_rank) needs qk_nope_head_dim, qk_rope_head_dim and "
                          "v_head_dim", field="qk_nope_head_dim")

    if n_experts and model_type == "deepseek_v3" or cfg.get("topk_method") == "noaux_tc":
        traits["score_correction_bias"] = True
    traits.setdefault("qkv_bias", False)

    qc = cfg.get("quantization_config") or cfg.get("compression_config")
    dtype = cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"

    return ModelArch(
        model_type=model_type,
        architecture=str(archs[0]),
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=vocab,
        intermediate_size=inter,
        tie_word_embeddings=tie,
        qkv_bias=traits.get("qkv_bias", False),
        o_bias=traits.get("o_bias", False),
        qk_norm=traits.get("qk_norm", False),
        norms_per_layer=traits.get("norms_per_layer", 2),
        fused_qkv=traits.get("fused_qkv", False),
        fused_gate_up=traits.get("fused_gate_up", False),
        mlp_bias=mlp_bias,
        attention_sinks=traits.get("attention_sinks", False),
        layer_types=lt,
        sliding_window=sliding if lt and any(t.startswith("sliding") for t in lt) else None,
        num_experts=n_experts,
        experts_per_token=k_experts,
        moe_intermediate_size=moe_inter if n_experts else 0,
        num_shared_experts=n_shared_count,
        shared_expert_intermediate_size=shared_inter,
        shared_expert_gate=traits.get("shared_expert_gate", False) and bool(shared_inter),
        moe_layers=moe_layers,
        router_bias=traits.get("router_bias", False),
        expert_bias=traits.get("expert_bias", False),
        score_correction_bias=traits.get("score_correction_bias", False) and bool(n_experts),
        q_lora_rank=q_lora,
        kv_lora_rank=kv_lora,
        qk_nope_head_dim=qk_nope,
        qk_rope_head_dim=qk_rope,
        v_head_dim=v_head,
        block_kinds=blocks,
        gated_mlp=gated,
        mamba_heads=_opt_int(cfg, "mamba_num_heads", default=0, where=where) if blocks else 0,
        mamba_head_dim=_opt_int(cfg, "mamba_head_dim", default=0, where=where) if blocks else 0,
        ssm_state_size=_opt_int(cfg, "ssm_state_size", default=0, where=where) if blocks else 0,
        mamba_groups=_opt_int(cfg, "n_groups", default=1, where=where) if blocks else 0,
        conv_kernel=_opt_int(cfg, "conv_kernel", default=4, where=where) if blocks else 0,
        num_mtp_layers=_opt_int(cfg, "num_nextn_predict_layers", default=0, where=where),
        torch_dtype=str(dtype),
        max_position_embeddings=_opt_int(cfg, "max_position_embeddings", where=where) or None,
        raw_quantization_config=qc if isinstance(qc, dict) else None,
        warnings=tuple(warnings),
        encoders=encoders,
    )
