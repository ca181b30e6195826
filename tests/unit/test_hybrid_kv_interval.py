"""Hybrid linear/full attention stacks (Qwen3-Next, Qwen3.5) are sized the way vLLM sizes them: only
``full_attention`` layers own a KV cache, and a config that gives ``full_attention_interval`` without
``layer_types`` gets transformers' own layer pattern (issue 27: such configs were charged KV on every layer)."""

from __future__ import annotations

from quantadvise.memory.kvcache import bytes_per_token, sequence_bytes
from quantadvise.model.parse import parse_config

# https://huggingface.co/ngxson/qwen3_next_tiny_test/blob/main/config.json (read 2026-12-06), in full
TINY = {"architectures": ["Qwen3NextForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "decoder_sparse_step": 1, "dtype": "float32", "full_attention_interval": 4, "head_dim": 128,
        "hidden_act": "silu", "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 2048,
        "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention",
                        "linear_attention", "linear_attention", "linear_attention", "full_attention",
                        "linear_attention", "linear_attention"],
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 8,
        "linear_num_value_heads": 16, "linear_value_head_dim": 128, "max_position_embeddings": 8192,
        "mlp_only_layers": [], "model_type": "qwen3_next", "moe_intermediate_size": 256, "norm_topk_prob": True,
        "num_attention_heads": 8, "num_experts": 4, "num_experts_per_tok": 2, "num_hidden_layers": 10,
        "num_key_value_heads": 2, "output_router_logits": False, "partial_rotary_factor": 0.25,
        "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 10000.0, "router_aux_loss_coef": 0.001,
        "shared_expert_intermediate_size": 256, "tie_word_embeddings": False,
        "transformers_version": "4.57.0.dev0", "use_cache": True, "vocab_size": 151936}


def test_full_attention_interval_without_layer_types_is_transformers_pattern():
    # transformers 5.25 configuration_qwen3_next.py:126-131: layer i is "linear_attention" if (i + 1) % interval
    # else "full_attention" -> with 10 layers and interval 4, layers 3 and 7 are full (as the tiny config lists)
    no_types = {k: v for k, v in TINY.items() if k != "layer_types"}
    a, b = parse_config(TINY), parse_config(no_types)
    assert a.layer_types == b.layer_types
    assert (b.attention_layers.full, b.attention_layers.linear) == (2, 8)


def test_kv_bytes_per_token_count_only_full_attention_layers():
    # vLLM config/model.py:1727-1795 get_num_layers_by_block_type counts the layer_types entries in
    # _ATTENTION_LAYER_TYPES (full_attention ...); linear_attention layers hold a constant MambaSpec state
    # (v1/kv_cache_interface.py:1135-1141), no per-token KV.
    # bf16 KV per token: 2 (K, V) x 2 KV heads x 128 head_dim x 2 B x 2 full layers = 2,048 B
    # (the old count, 10 layers, was 10,240 B: 5x)
    no_types = {k: v for k, v in TINY.items() if k != "layer_types"}
    arch = parse_config(no_types)
    assert bytes_per_token(arch, None) == 2 * 2 * 128 * 2 * 2
    assert sequence_bytes(arch, None, 4096) == 2048 * 4096


def test_qwen3_next_80b_shape_is_a_quarter_of_a_dense_count():
    # Qwen/Qwen3-Next-80B-A3B's shape: 48 layers, full_attention_interval 4, 2 KV heads of 256: 12 full layers
    # x 2 x 2 x 256 x 2 B = 24,576 B per token (48 layers would be 98,304 B: the "about 4x" of issue 27)
    cfg = {k: v for k, v in TINY.items() if k != "layer_types"}
    cfg.update(num_hidden_layers=48, head_dim=256, hidden_size=2048, num_attention_heads=16)
    arch = parse_config(cfg)
    assert arch.attention_layers.full == 12
    assert bytes_per_token(arch, None) == 12 * 2 * 2 * 256 * 2


def test_gemma4_moe_names_its_experts_per_token_top_k_experts():
    # google/gemma-4-26B-A4B text_config (aiconfigurator-core 0.12.0 model_configs copy of the Hub file): "num_experts":
    # 128, "top_k_experts": 8 -- read as the experts per token, not "MoE config needs num_experts_per_tok" (exit 2)
    cfg = {"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4_text", "hidden_size": 2816,
           "intermediate_size": 2112, "moe_intermediate_size": 704, "num_attention_heads": 16, "num_key_value_heads": 8,
           "head_dim": 256, "num_hidden_layers": 30, "num_experts": 128, "top_k_experts": 8, "vocab_size": 262144}
    arch = parse_config(cfg)
    assert (arch.num_experts, arch.experts_per_token) == (128, 8)
