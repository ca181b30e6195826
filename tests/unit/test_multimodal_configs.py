"""Multimodal configs (quantadvise.model.towers): a vision-language config.json that leaves its text model's
fields to transformers' defaults is read with those defaults, and its vision encoder and projector are
counted, so `size` neither fails nor reports the text model's total as the checkpoint's.

Expected numbers are derived by hand below, from transformers 5.24.0's config classes and modeling
files (file and line cited in quantadvise/towers.py), never from the program's output."""

from __future__ import annotations

import json

import pytest

import quantadvise as api
from quantadvise import catalog
from quantadvise.engines.startup import derived_max_len
from quantadvise.errors import ConfigError
from quantadvise.model.inventory import inventory_of
from quantadvise.model.parse import parse_config

# google/gemma-3-4b-it's config.json as published: the text model names 7 fields; transformers'
# Gemma3TextConfig supplies vocab_size 262208, 8 heads, 4 KV heads, head_dim 256 and
# max_position_embeddings 131072 (configuration_gemma3.py:73-81).
GEMMA3_4B = {
    "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
    "image_token_index": 262144, "mm_tokens_per_image": 256, "model_type": "gemma3", "torch_dtype": "bfloat16",
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024, "final_logit_softcapping": 30.0},
    "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                      "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
                      "patch_size": 14, "vision_use_head": False},
}

# Text model, by hand (h 2560, 34 layers, 8 x 256 query, 4 x 256 KV, tied embedding):
#   embedding 262208 x 2560                                   =   671,252,480
#   attention per layer: q 2048x2560 + k 1024x2560 + v 1024x2560 + o 2560x2048
#                        = 5,242,880 + 2,621,440 + 2,621,440 + 5,242,880 = 15,728,640; x 34 = 534,773,760
#   MLP per layer: 3 x 2560 x 10240 = 78,643,200; x 34       = 2,673,868,800
#   norms: 4 x 2560 + q_norm 256 + k_norm 256 = 10,752 per layer; x 34 = 365,568; + final 2560 = 368,128
#   text total                                                = 3,880,263,168
TEXT = 671_252_480 + 534_773_760 + 2_673_868_800 + 368_128
# SigLIP vision tower (h 1152, i 4304, 27 layers, 14-pixel patches of 896-pixel images, no head):
#   patch conv 1152 x 3 x 14 x 14 + bias 1152                 =       678,528
#   positions (896 / 14)^2 = 4096 x 1152                      =     4,718,592
#   per layer: 4 x (1152^2 + 1152) = 5,313,024; fc1 1152x4304 + 4304 + fc2 4304x1152 + 1152 = 9,921,872;
#              2 LayerNorms x (weight + bias) = 4,608; sum 15,239,504; x 27 = 411,466,608
#   post LayerNorm 2 x 1152                                   =         2,304
# Gemma 3 projector: 1152 x 2560 + RMSNorm 1152               =     2,950,272
VISION = 678_528 + 4_718_592 + 411_466_608 + 2_304 + 2_950_272  # 419,816,304


def test_the_published_gemma3_config_is_read_with_transformers_defaults():
    a = parse_config(GEMMA3_4B)
    assert (a.num_heads, a.num_kv_heads, a.head_dim, a.vocab_size) == (8, 4, 256, 262208)
    assert a.max_position_embeddings == 131072
    # sliding_window 1024 on 5 of every 6 layers (sliding_window_pattern default 6): 34 layers -> 5 full
    assert (a.attention_layers.full, a.attention_layers.sliding) == (5, 29)


def test_the_vision_encoder_and_projector_are_counted():
    a = parse_config(GEMMA3_4B)
    inv = inventory_of(a)
    # 4,300,079,472 = the "4.3B params" the Hub lists for google/gemma-3-4b-it
    assert inv.total_params() == TEXT + VISION == 4_300_079_472
    assert inv.params_by_component()["vision"] == VISION
    # the encoder is not part of a decode step: no vision group is a linear the step model prices
    assert not any(g.component == "vision" for g in inv.linear_groups())
    assert inv.decoder_linear_params() == 534_773_760 + 2_673_868_800


def test_size_of_the_published_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(GEMMA3_4B), encoding="utf-8")
    bf16 = api.size(str(tmp_path))
    assert bf16.total_bytes == 2 * (TEXT + VISION)  # 8,600,158,944 B: 16 bits for every parameter
    w4 = api.size(str(tmp_path), bits=4, group=128)
    vision = next(c for c in w4.components if c.component == "vision")
    assert not vision.quantized and vision.bytes == 2 * VISION  # the encoder stays in 16 bits
    assert any("--limit-mm-per-prompt" in n for n in w4.notes)


def test_the_engine_derives_the_context_of_the_defaulted_text_config():
    # vLLM reads max_position_embeddings from transformers' text config, where the class default is
    # 131072 (configuration_gemma3.py:81); Gemma 3's linear rope factor is not applied to it (the
    # existing rule, vllm/config/model.py). Before, the missing key fell back to 2048.
    assert derived_max_len(GEMMA3_4B, catalog.engine_startup("vllm", "0.33.0")).value == 131072


def test_an_encoder_quantadvise_cannot_count_is_said_not_silent():
    cfg = json.loads(json.dumps(GEMMA3_4B))
    cfg["vision_config"]["model_type"] = "pixtral"
    cfg["audio_config"] = {"hidden_size": 8}
    a = parse_config(cfg)
    assert inventory_of(a).total_params() == TEXT  # only what is known is sized ...
    assert any("vision encoder (vision_config model_type 'pixtral') is not counted" in w for w in a.warnings)
    assert any("audio encoder (audio_config) is not counted" in w for w in a.warnings)  # ... and said


def test_siglip_with_its_attention_pooling_head():
    cfg = json.loads(json.dumps(GEMMA3_4B))
    cfg["vision_config"]["vision_use_head"] = True
    # head: probe 1152 + in_proj 3 x 1152^2 + 3 x 1152 + out_proj 1152^2 + 1152 + LayerNorm 2 x 1152
    #       + MLP 1152x4304 + 4304 + 4304x1152 + 1152 (modeling_siglip.py:627-630)
    head = 1152 + 3 * 1152**2 + 3 * 1152 + 1152**2 + 1152 + 2 * 1152 + 9_921_872
    assert inventory_of(parse_config(cfg)).total_params() == TEXT + VISION + head


@pytest.mark.parametrize("field,value", [("hidden_size", "wide"), ("patch_size", [14]), ("image_size", -1)])
def test_a_bad_vision_field_names_itself(field, value):
    cfg = json.loads(json.dumps(GEMMA3_4B))
    cfg["vision_config"][field] = value
    with pytest.raises(ConfigError) as e:
        parse_config(cfg)
    assert e.value.field == f"vision_config.{field}"


# Qwen/Qwen2.5-VL-7B-Instruct's config.json (the fields that shape the weights): the text model's keys at
# the top level, the vision transformer's under vision_config (no model_type there; "in_chans").
QWEN25_VL_7B = {
    "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl", "hidden_size": 3584,
    "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
    "vocab_size": 152064, "tie_word_embeddings": False, "max_position_embeddings": 128000,
    "torch_dtype": "bfloat16",
    "vision_config": {"depth": 32, "hidden_act": "silu", "hidden_size": 1280, "intermediate_size": 3420,
                      "num_heads": 16, "in_chans": 3, "out_hidden_size": 3584, "patch_size": 14,
                      "spatial_merge_size": 2, "spatial_patch_size": 14, "window_size": 112,
                      "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2, "temporal_patch_size": 2},
}


def test_qwen25_vl_counts_its_vision_transformer_and_merger():
    # text (Qwen2: q/k/v with bias): embedding and lm_head 2 x 152064 x 3584 = 1,089,994,752;
    #   per layer q 3584^2 + 3584, k and v 512 x 3584 + 512, o 3584^2 = 29,364,736; MLP 3 x 3584 x 18944 =
    #   203,685,888; 2 norms 7,168 -> 233,057,792 x 28 = 6,525,618,176; final norm 3,584 -> 7,615,616,512
    text = 1_089_994_752 + 6_525_618_176 + 3_584
    # vision: Conv3d 1280 x 3 x 2 x 14 x 14 (no bias) = 1,505,280;
    #   per block: 2 RMSNorms 2,560; qkv 3 x 1280^2 + 3,840 = 4,919,040; proj 1280^2 + 1280 = 1,639,680;
    #   gate and up 2 x (3420 x 1280 + 3420) = 8,762,040; down 1280 x 3420 + 1280 = 4,378,880
    #   -> 19,702,200 x 32 = 630,470,400
    #   merger: RMSNorm 1280; 5120 x 5120 + 5120 (4 patches of 1280); 3584 x 5120 + 3584 -> 44,574,464
    vision = 1_505_280 + 630_470_400 + 44_574_464
    a = parse_config(QWEN25_VL_7B)
    assert not a.warnings  # a model type it knows, an encoder it counts
    assert inventory_of(a).params_by_component()["vision"] == vision
    # 8,292,166,656: the "8.29B params" the Hub lists for Qwen/Qwen2.5-VL-7B-Instruct
    assert inventory_of(a).total_params() == text + vision == 8_292_166_656


def test_the_recipe_leaves_the_encoders_out_as_sizing_prices_them():
    # llm-compressor quantizes every module its targets ("Linear") match unless ignored, and SigLIP's
    # projections are nn.Linear (modeling_siglip.py:268-271): the recipe must name the tower and the
    # projector, as RedHatAI's published Gemma 3 recipes do.
    from quantadvise.checkpoint.write import ignore_list

    ignore = ignore_list(catalog.get_scheme("w4a16"), parse_config(GEMMA3_4B))
    assert "re:.*vision_tower.*" in ignore and "re:.*multi_modal_projector.*" in ignore
    assert "re:.*visual.*" in ignore_list(catalog.get_scheme("w4a16"), parse_config(QWEN25_VL_7B))
