"""The longest sequence each engine accepts for a model, derived from config.json the way the engine
derives it, with the message the engine refuses a longer ``--max-model-len`` / ``--context-length``
with. Pure: a config dict in, a :class:`ContextLimit` out.

vLLM 0.33.0 (``vllm/config/model.py:2545-2700`` ``_get_and_verify_max_len``;
``vllm/transformers_utils/model_arch_config_convertor.py:376`` ``possible_keys``): the smallest of
the length keys present in the text config; multiplied by the RoPE ``factor`` unless the rope type
already scales ``max_position_embeddings`` (su, longrope, llama3, yarn, deepseek_yarn,
deepseek_llama_scaling) or the model is a Gemma-3 (``model.py:2603-2630``); a longer
``max_model_len`` raises ``ValueError`` (``model.py:2664``) unless ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``.

SGLang 0.5.23 (``sglang/srt/utils/hf_transformers/common.py:668-694`` ``get_context_length``;
``sglang/srt/configs/model_config.py:1291-1316`` ``_derive_context_length``): the first of its length
keys present, times the RoPE ``factor`` unless ``rope_scaling`` carries
``original_max_position_embeddings`` or is ``llama3``; a longer ``--context-length`` raises
``ValueError`` unless ``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1``.

Neither engine's tokenizer_config ``model_max_length`` cap is read here (quantadvise reads config.json
only); it can only lower vLLM's limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

VLLM_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
             "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
VLLM_ROPE_PRESCALED = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")
SGLANG_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")


@dataclass(frozen=True)
class ContextLimit:
    """The longest sequence ``engine`` serves for a model, and why."""

    engine: str
    tokens: int | None  # None: the config names no length (the engine assumes a default)
    key: str | None
    rope_factor: float | None  # the RoPE factor the engine multiplied the key by (None: not scaled)
    source: str

    def refusal(self, requested: int) -> str:
        """The engine's own error for a longer sequence, with the numbers filled in."""
        if self.engine == "vllm":
            return (f"User-specified max_model_len ({requested}) is greater than the derived max_model_len "
                    f"({self.key}={self.tokens} or model_max_length=None in model's config.json). To allow overriding "
                    "this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.")
        return (f"Warning: User-specified context_length ({requested}) is greater than the derived context_length "
                f"({self.tokens}). This may lead to incorrect model outputs or CUDA errors. Note that the derived "
                "context_length may differ from max_position_embeddings in the model's config. To allow overriding "
                "this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")


def _text(cfg: dict[str, Any]) -> dict[str, Any]:
    tc = cfg.get("text_config")
    return tc if isinstance(tc, dict) else cfg


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None


def context_limit(config: dict[str, Any], engine: str) -> ContextLimit:
    """The context limit ``engine`` ("vllm" or "sglang") derives from ``config`` (config.json)."""
    tc = _text(config)
    rope = tc.get("rope_parameters") if isinstance(tc.get("rope_parameters"), dict) else tc.get("rope_scaling")
    rope = rope if isinstance(rope, dict) else None
    if engine == "vllm":
        best: tuple[float, str] | None = None
        for key in VLLM_KEYS:
            v = _num(tc.get(key))
            if v is not None and (best is None or v < best[0]):
                best = (v, key)
        src = "vllm 0.33.0 vllm/config/model.py:2545-2700 (_get_and_verify_max_len), model_arch_config_convertor.py:376"
        if best is None:
            return ContextLimit("vllm", None, None, None, src)
        tokens, key = best
        factor = None
        rtype = (rope.get("rope_type") or rope.get("type")) if rope else None
        if rope and rtype not in (None, "default") and rtype not in VLLM_ROPE_PRESCALED \
                and "gemma3" not in str(tc.get("model_type", "")) and _num(rope.get("factor")):
            factor = float(rope["factor"])
            tokens *= factor
        return ContextLimit("vllm", int(tokens), key, factor, src)
    src = "sglang 0.5.23 sglang/srt/utils/hf_transformers/common.py:668-694, configs/model_config.py:1291-1316"
    factor_s: float | None = None
    if rope and _num(rope.get("factor")) and "original_max_position_embeddings" not in rope \
            and rope.get("rope_type") != "llama3":
        factor_s = float(rope["factor"])
    for key in SGLANG_KEYS:
        v = _num(tc.get(key))
        if v is not None:
            return ContextLimit("sglang", int((factor_s or 1.0) * v), key, factor_s, src)
    return ContextLimit("sglang", 2048, None, None, src)  # get_context_length's fallback
