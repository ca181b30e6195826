"""Multimodal configs: the text model's unwritten fields, and the encoders beside the text model.

A vision-language config.json is short: transformers fills every field it leaves out from its config
class's defaults (google/gemma-3-4b-it names 7 of its text model's fields and none of its head
counts), and the checkpoint holds a vision encoder and a projector besides the language model, which
vLLM loads and keeps in memory (``vllm/model_executor/models/gemma3_mm.py:552-558``) unless
``--limit-mm-per-prompt`` sets every modality to 0 (``interfaces.py:357-358``). Both are read here:

- :func:`text_defaults`: the defaults of a text model's config class, for the fields a config.json
  leaves out (cited per model type);
- :func:`encoder_groups`: the parameter groups of the encoders a config describes (SigLIP, the Gemma 3
  projector and Qwen2.5-VL's vision transformer, counted tensor by tensor following transformers'
  modeling files), and one
  warning for each encoder it cannot count, so a total is never silently the text model's alone.

Encoders are kept in 16 bits (published quantized checkpoints leave them out of the quantized
modules) and are not part of a decode step. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from .arch import ParamGroup

# Text model type -> transformers' config-class defaults for the fields the inventory reads.
_TEXT_DEFAULTS: dict[str, dict[str, Any]] = {
    # transformers 5.24.0 models/gemma3/configuration_gemma3.py:73-93 (Gemma3TextConfig)
    "gemma3_text": {
        "vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131_072,
        "sliding_window": 4096, "hidden_activation": "gelu_pytorch_tanh",
    },
}
# A multimodal wrapper's model type -> the model type of the text config it builds by default
# (configuration_gemma3.py:200-202: Gemma3Config's text_config defaults to a Gemma3TextConfig).
_WRAPPED_TEXT = {"gemma3": "gemma3_text"}

# transformers 5.24.0 models/siglip/configuration_siglip.py:93-103 (SiglipVisionConfig)
_SIGLIP_DEFAULTS: dict[str, Any] = {
    "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
    "num_channels": 3, "image_size": 224, "patch_size": 16, "vision_use_head": True,
}
_SIGLIP_TYPES = ("siglip_vision_model", "siglip")
# transformers 5.24.0 models/qwen2_5_vl/configuration_qwen2_5_vl.py:51-64 (Qwen2_5_VLVisionConfig; published
# configs spell in_channels "in_chans")
_QWEN25_VISION_DEFAULTS: dict[str, Any] = {
    "depth": 32, "hidden_size": 3584, "intermediate_size": 3420, "in_channels": 3, "patch_size": 14,
    "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": 3584,
}


def text_defaults(top: dict[str, Any], text: dict[str, Any]) -> dict[str, Any]:
    """``text`` (a config or its ``text_config``) with transformers' defaults for the fields it leaves
    out, for the model types in :data:`_TEXT_DEFAULTS`; unchanged otherwise."""
    model_type = text.get("model_type") or _WRAPPED_TEXT.get(str(top.get("model_type")))
    defaults = _TEXT_DEFAULTS.get(str(model_type))
    if defaults is None:
        return text
    return {**text, **{k: v for k, v in defaults.items() if text.get(k) is None}, "model_type": model_type}


def _pos_int(cfg: dict[str, Any], key: str, where: str) -> int:
    v = cfg.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1 or v > 2**31 - 1:
        raise ConfigError(f"{where}: field 'vision_config.{key}' must be a positive integer, got {v!r:.60}",
                          field=f"vision_config.{key}")
    return v


def _filled(defaults: dict[str, Any], cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` over its config class's ``defaults`` (a null counts as left out, as transformers reads it)."""
    return {**defaults, **{k: v for k, v in cfg.items() if v is not None}}


def _g(name: str, shape: tuple[int, ...], count: int = 1) -> ParamGroup:
    """An encoder's parameter group: component and role ``vision``."""
    return ParamGroup(name, "vision", "vision", shape, count)


def _pair(cfg: dict[str, Any], key: str, where: str) -> tuple[int, int]:
    """An image-size field given as one number or as [height, width]."""
    v = cfg.get(key)
    if isinstance(v, (list, tuple)):
        if len(v) != 2:
            raise ConfigError(f"{where}: field 'vision_config.{key}' must be a number or [height, width], got {v!r:.60}",
                              field=f"vision_config.{key}")
        return _pos_int({key: v[0]}, key, where), _pos_int({key: v[1]}, key, where)
    n = _pos_int(cfg, key, where)
    return n, n


def _siglip(cfg: dict[str, Any], where: str, prefix: str) -> list[ParamGroup]:
    """SigLIP's vision transformer (transformers models/siglip/modeling_siglip.py: the embeddings'
    patch Conv2d and position table, :124-134; per layer q/k/v/out projections with bias, :268-271, a
    fc1/fc2 MLP with bias, :315-316, two LayerNorms, :329-331; the post LayerNorm, :566; the attention
    pooling head when ``vision_use_head``, :627-630)."""
    c = _filled(_SIGLIP_DEFAULTS, cfg)
    h, i = _pos_int(c, "hidden_size", where), _pos_int(c, "intermediate_size", where)
    layers, ch = _pos_int(c, "num_hidden_layers", where), _pos_int(c, "num_channels", where)
    ph, pw = _pair(c, "patch_size", where)
    ih, iw = _pair(c, "image_size", where)
    e, L = f"{prefix}.embeddings", f"{prefix}.encoder.layers.*"

    out = [
        _g(f"{e}.patch_embedding.weight", (h, ch, ph, pw)), _g(f"{e}.patch_embedding.bias", (h,)),
        _g(f"{e}.position_embedding.weight", ((ih // ph) * (iw // pw), h)),
        _g(f"{L}.self_attn.q/k/v/out_proj.weight", (h, h), 4 * layers),
        _g(f"{L}.self_attn.q/k/v/out_proj.bias", (h,), 4 * layers),
        _g(f"{L}.mlp.fc1.weight", (i, h), layers), _g(f"{L}.mlp.fc1.bias", (i,), layers),
        _g(f"{L}.mlp.fc2.weight", (h, i), layers), _g(f"{L}.mlp.fc2.bias", (h,), layers),
        _g(f"{L}.layer_norm1/2.weight+bias", (h,), 4 * layers),
        _g(f"{prefix}.post_layernorm.weight+bias", (h,), 2),
    ]
    if c.get("vision_use_head"):
        hd = f"{prefix}.head"
        out += [_g(f"{hd}.probe", (h,)), _g(f"{hd}.attention.in_proj_weight", (3 * h, h)),
                _g(f"{hd}.attention.in_proj_bias", (3 * h,)), _g(f"{hd}.attention.out_proj.weight", (h, h)),
                _g(f"{hd}.attention.out_proj.bias", (h,)), _g(f"{hd}.layernorm.weight+bias", (h,), 2),
                _g(f"{hd}.mlp.fc1.weight", (i, h)), _g(f"{hd}.mlp.fc1.bias", (i,)),
                _g(f"{hd}.mlp.fc2.weight", (h, i)), _g(f"{hd}.mlp.fc2.bias", (h,))]
    return out


def _qwen25_vision(cfg: dict[str, Any], where: str, prefix: str) -> list[ParamGroup]:
    """Qwen2.5-VL's vision transformer (transformers models/qwen2_5_vl/modeling_qwen2_5_vl.py: a Conv3d
    patch embedding without bias, :114; per block two RMSNorms, :345-346, a fused qkv and a proj with bias,
    :266-267, a gated MLP with bias, :90-92, :348; the patch merger, an RMSNorm and two Linears over
    spatial_merge_size^2 patches, :189-194, :413-416)."""
    c = _filled(_QWEN25_VISION_DEFAULTS, cfg)
    if "in_chans" in cfg and "in_channels" not in cfg:
        c["in_channels"] = cfg["in_chans"]
    h, i = _pos_int(c, "hidden_size", where), _pos_int(c, "intermediate_size", where)
    depth, ch = _pos_int(c, "depth", where), _pos_int(c, "in_channels", where)
    p, t = _pos_int(c, "patch_size", where), _pos_int(c, "temporal_patch_size", where)
    merged = h * _pos_int(c, "spatial_merge_size", where) ** 2
    out_h = _pos_int(c, "out_hidden_size", where)
    b = f"{prefix}.blocks.*"

    return [
        _g(f"{prefix}.patch_embed.proj.weight", (h, ch, t, p, p)),
        _g(f"{b}.norm1/norm2.weight", (h,), 2 * depth),
        _g(f"{b}.attn.qkv.weight", (3 * h, h), depth), _g(f"{b}.attn.qkv.bias", (3 * h,), depth),
        _g(f"{b}.attn.proj.weight", (h, h), depth), _g(f"{b}.attn.proj.bias", (h,), depth),
        _g(f"{b}.mlp.gate_proj/up_proj.weight", (i, h), 2 * depth), _g(f"{b}.mlp.gate_proj/up_proj.bias", (i,), 2 * depth),
        _g(f"{b}.mlp.down_proj.weight", (h, i), depth), _g(f"{b}.mlp.down_proj.bias", (h,), depth),
        _g(f"{prefix}.merger.ln_q.weight", (h,)),
        _g(f"{prefix}.merger.mlp.0.weight", (merged, merged)), _g(f"{prefix}.merger.mlp.0.bias", (merged,)),
        _g(f"{prefix}.merger.mlp.2.weight", (out_h, merged)), _g(f"{prefix}.merger.mlp.2.bias", (out_h,)),
    ]


def encoder_groups(top: dict[str, Any], text_hidden: int, where: str) -> tuple[tuple[ParamGroup, ...],
                                                                               tuple[str, ...]]:
    """The encoders' parameter groups of a multimodal config ``top`` (empty for a text-only one) and a
    warning for every encoder block it holds but cannot count."""
    groups: list[ParamGroup] = []
    warnings: list[str] = []
    vision = top.get("vision_config")
    model_type = str(top.get("model_type") or "")
    if isinstance(vision, dict):
        vtype = str(vision.get("model_type") or "")
        if vtype in ("qwen2_5_vl", "qwen2_5_vl_vision") or (not vtype and model_type == "qwen2_5_vl"):
            groups += _qwen25_vision(vision, where, "visual")  # the merger is its projector
        elif vtype in _SIGLIP_TYPES or (not vtype and model_type == "gemma3"):
            groups += _siglip(vision, where, "vision_tower.vision_model")
            if model_type == "gemma3":
                # modeling_gemma3.py:639-645: a vision_hidden x text_hidden projection and an RMSNorm
                vh = _pos_int(_filled(_SIGLIP_DEFAULTS, vision), "hidden_size", where)
                groups += [_g("multi_modal_projector.mm_input_projection_weight", (vh, text_hidden)),
                           _g("multi_modal_projector.mm_soft_emb_norm.weight", (vh,))]
            else:
                warnings.append(f"the projector between the vision encoder and the text model of model_type "
                                f"'{model_type}' is not counted: the checkpoint is a little larger than shown")
        else:
            warnings.append(f"the vision encoder (vision_config model_type '{vtype or '?'}') is not counted: the "
                            "sizes are the text model's, and the checkpoint is larger by the encoder's weights")
    for key in ("audio_config", "speech_config"):
        if isinstance(top.get(key), dict):
            warnings.append(f"the audio encoder ({key}) is not counted: the sizes are the text model's, and the "
                            "checkpoint is larger by the encoder's weights")
    return tuple(groups), tuple(warnings)
