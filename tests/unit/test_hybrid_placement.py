"""Hybrid stacks (Nemotron-H: Mamba-2, attention, MLP and MoE blocks by ``hybrid_override_pattern``):
``inspect`` places each module on the layers the pattern gives it, so it sizes the same parameters
as ``size``, and names the modules as the checkpoint does (one ``mixer`` per block).

Expected numbers are derived by hand from the configs below (arithmetic in the comments)."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

import quantadvise as api
from quantadvise import catalog
from quantadvise.checkpoint.parse import parse_checkpoint
from quantadvise.checkpoint.placement import disk_size, modules
from quantadvise.model.parse import parse_config

# NVIDIA-Nemotron-3-Nano-30B-A3B config.json, the fields that shape the weights (the audit's config)
NANO_PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
NANO = {
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "num_hidden_layers": 52,
    "hybrid_override_pattern": NANO_PATTERN, "hidden_size": 2688, "num_attention_heads": 32,
    "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 131072, "intermediate_size": 1856,
    "n_routed_experts": 128, "num_experts_per_tok": 6, "moe_intermediate_size": 1856,
    "moe_shared_expert_intermediate_size": 3712, "n_shared_experts": 1, "mamba_num_heads": 64,
    "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4, "mlp_hidden_act": "relu2",
    "tie_word_embeddings": False, "torch_dtype": "bfloat16"}

# A small dense hybrid (Nemotron-H-8B style: Mamba, attention and squared-ReLU MLP blocks)
TINY_PATTERN = "M*-M-"
TINY = {
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "num_hidden_layers": 5,
    "hybrid_override_pattern": TINY_PATTERN, "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 1000, "intermediate_size": 128,
    "mamba_num_heads": 8, "mamba_head_dim": 16, "ssm_state_size": 16, "n_groups": 2, "conv_kernel": 4,
    "mlp_hidden_act": "relu2", "tie_word_embeddings": False, "torch_dtype": "bfloat16"}

# Linear weights of the Nano, by hand (pattern: 23 M, 23 E, 6 *; h 2688):
#   embedding + lm_head          2 x 131072 x 2688                         =    704,643,072
#   attention (6 layers)         6 x (4096 + 256 + 256 + 4096) x 2688      =    140,378,112
#   Mamba in_proj (23)           23 x (2x4096 + 2x8x128 + 64) x 2688       =    637,034,496
#   Mamba out_proj (23)          23 x 2688 x 4096                          =    253,231,104
#   routed experts (23 x 128)    23 x 128 x (1856x2688 up + 2688x1856 down) = 29,374,808,064
#   shared experts (23)          23 x 2 x 2688 x 3712                      =    458,981,376
#   router (23)                  23 x 128 x 2688                           =      7,913,472
NANO_LINEAR = 704_643_072 + 140_378_112 + 637_034_496 + 253_231_104 + 29_374_808_064 + 458_981_376 + 7_913_472

# TINY by hand (h 64, d_inner 8 x 16 = 128, B/C 2 x 2 x 16 = 64):
#   embedding + lm_head    2 x 1000 x 64                               = 128,000
#   attention (layer 1)    (64 + 32 + 32 + 64) x 64                    =  12,288
#   MLP (layers 2, 4)      2 x (128x64 up + 64x128 down)               =  32,768
#   Mamba (layers 0, 3)    2 x [in_proj (2x128 + 64 + 8) x 64 = 20,992 + out_proj 64x128 = 8,192
#                          + conv1d (128+64) x 4 = 768 + conv bias 192 + dt_bias/A_log/D 3x8 = 24
#                          + gated norm 128]                          =  60,592
#   norms                  5 blocks x 64 + final 64                    =     384
TINY_LINEAR = 128_000 + 12_288 + 32_768 + 2 * (20_992 + 8_192)
TINY_TOTAL = 128_000 + 12_288 + 32_768 + 60_592 + 384


def _folder(tmp_path, cfg):
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return str(tmp_path)


def _by_layer(cfg):
    out: dict[int, list[str]] = defaultdict(list)
    for m in modules(parse_config(cfg)):
        if m.layer is not None:
            out[m.layer].append(m.name)
    return out


@pytest.mark.parametrize(("cfg", "linear", "total"), [(NANO, NANO_LINEAR, None), (TINY, TINY_LINEAR, TINY_TOTAL)],
                         ids=["nemotron-3-nano", "dense-hybrid"])
def test_inspect_and_size_agree_on_a_hybrid(tmp_path, cfg, linear, total):
    r = api.inspect(_folder(tmp_path, cfg))
    s = api.size(cfg)
    assert r.size is not None
    # inspect sized every layer as attention + Mamba before (33.78B params, 67.55 GB for the Nano)
    assert r.size.total_params == s.total_params
    assert r.size.total_bytes == s.total_bytes == 2 * s.total_params  # bf16, nothing quantized
    # the linear modules placed are exactly the linear weights counted by hand
    assert sum(m.group.n * m.group.k for m in modules(parse_config(cfg))) == linear
    if total is not None:
        assert r.size.total_params == total


def test_a_mamba_layer_has_no_attention_modules():
    layer0 = _by_layer(NANO)[0]
    assert NANO_PATTERN[0] == "M"
    assert sorted(layer0) == ["model.layers.0.mixer.in_proj", "model.layers.0.mixer.out_proj"]
    assert not any("self_attn" in n or "q_proj" in n for n in layer0)


def test_attention_sits_exactly_on_the_layers_the_pattern_marks():
    for cfg, pattern in ((NANO, NANO_PATTERN), (TINY, TINY_PATTERN)):
        by_layer = _by_layer(cfg)
        marked = {i for i, c in enumerate(pattern) if c == "*"}
        with_attention = {i for i, names in by_layer.items() if any(n.endswith(".mixer.q_proj") for n in names)}
        assert with_attention == marked
        for i in marked:
            assert sorted(n.rsplit(".", 1)[1] for n in by_layer[i]) == ["k_proj", "o_proj", "q_proj", "v_proj"]
    # the Nano's attention blocks, by position in its 52-letter pattern
    assert {i for i, c in enumerate(NANO_PATTERN) if c == "*"} == {5, 12, 19, 26, 33, 42}


def test_every_block_holds_its_own_mixer():
    for cfg, pattern in ((NANO, NANO_PATTERN), (TINY, TINY_PATTERN)):
        by_layer = _by_layer(cfg)
        assert set(by_layer) == set(range(len(pattern)))
        for i, kind in enumerate(pattern):
            leaves = {n.split(f"model.layers.{i}.", 1)[1] for n in by_layer[i]}
            assert all(leaf.startswith("mixer.") for leaf in leaves)
            if kind == "M":
                assert leaves == {"mixer.in_proj", "mixer.out_proj"}
            elif kind == "-":  # squared-ReLU MLP: up and down, no gate
                assert leaves == {"mixer.up_proj", "mixer.down_proj"}
            elif kind == "E":
                # router, 128 routed experts x (up, down), one shared expert (up, down)
                assert len(by_layer[i]) == 1 + 128 * 2 + 2
                assert {"mixer.gate", "mixer.experts.0.up_proj", "mixer.experts.127.down_proj",
                        "mixer.shared_experts.up_proj", "mixer.shared_experts.down_proj"} <= leaves


def test_unquantized_examples_name_real_modules(tmp_path):
    r = api.inspect(_folder(tmp_path, NANO))
    # layer 5 is the first attention block; no Mamba or MoE layer is listed with self_attn
    assert r.left_unquantized and not any("self_attn" in n for n in r.left_unquantized)
    # 6 x 4 attention + 23 x 2 Mamba + 23 x (router + 128 x 2 experts + 2 shared) decoder linears
    assert r.left_unquantized_modules == 6 * 4 + 23 * 2 + 23 * (1 + 256 + 2)


def test_a_per_layer_map_in_checkpoint_names_quantizes_those_modules():
    # ModelOpt MIXED_PRECISION names layers as the safetensors do (backbone.layers.<i>.mixer...):
    # FP8 on the Mamba in_proj / out_proj only
    mamba = [i for i, c in enumerate(NANO_PATTERN) if c == "M"]
    layers = {f"backbone.layers.{i}.mixer.{p}": {"quant_algo": "FP8"} for i in mamba for p in ("in_proj", "out_proj")}
    cfg = {**NANO, "quantization_config": {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
                                           "quantized_layers": layers}}
    ds = disk_size(parse_config(cfg), parse_checkpoint(cfg, {}), catalog.layouts())
    # 23 x (in_proj 10304 x 2688 + out_proj 2688 x 4096), as in the table above
    assert ds.quantized_params == 637_034_496 + 253_231_104
    assert [c.component for c in ds.components if c.quantized] == ["mamba"]


def test_a_plain_transformer_keeps_its_module_names():
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
           "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "intermediate_size": 128,
           "tie_word_embeddings": False}
    names = {m.name for m in modules(parse_config(cfg))}
    assert {"model.embed_tokens", "lm_head", "model.layers.1.self_attn.q_proj", "model.layers.0.mlp.gate_proj"} <= names
    assert not any("mixer" in n for n in names)
