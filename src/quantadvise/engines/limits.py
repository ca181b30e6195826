"""The longest sequence each engine accepts for a model, derived from config.json the way the engine
derives it, with the message the engine refuses a longer ``--max-model-len`` / ``--context-length``
with. Pure: a config dict and the release's start-up facts in, a :class:`ContextLimit` out.

The derivation is ``gate.startup.derived_max_len`` — the one `check` uses — on the release's rules in
data/engine_startup.yaml (which length keys, smallest or first, which RoPE types already scale the
length, the fallback): vLLM 0.33.0 ``vllm/config/model.py:2545-2700`` ``_get_and_verify_max_len`` (a
longer ``max_model_len`` raises ``ValueError`` unless ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``); SGLang 0.5.23
``sglang/srt/utils/hf_transformers/common.py:668-694`` ``get_context_length`` and
``configs/model_config.py:1291-1316`` (a longer ``--context-length`` raises unless
``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1``). The refusal is the release's own message from the same
file.

Neither engine's tokenizer_config ``model_max_length`` cap is read here (quantadvise reads config.json
only); it can only lower vLLM's limit.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..results import record
from .startup import StartupFacts, derived_max_len


@record
class ContextLimit:
    """The longest sequence ``engine`` serves for a model, and why."""

    engine: str
    tokens: int | None  # None: the config names no length (the engine assumes a default)
    key: str | None
    rope_factor: float | None  # the RoPE factor the engine multiplied the key by (None: not scaled)
    source: str
    model_max_length: int | None = None
    facts: StartupFacts | None = field(default=None, compare=False, repr=False)

    def refusal(self, requested: int) -> str:
        """The engine's own error for a longer sequence, with the numbers filled in."""
        assert self.facts is not None
        if self.engine == "vllm":
            return self.facts.message("max_len_exceeds_model", max_model_len=requested, key=self.key,
                                      derived=self.tokens, model_max_length=self.model_max_length)
        return self.facts.message("context_exceeds_model", context=requested, derived=self.tokens)


def context_limit(config: dict[str, Any], facts: StartupFacts) -> ContextLimit:
    """The context limit the release ``facts`` describes (vLLM or SGLang) derives from ``config``."""
    d = derived_max_len(config, facts)
    where = facts.lines.get("max_len_keys", "")
    return ContextLimit(facts.engine, d.value, d.key, d.rope_factor, f"{facts.engine} {facts.version} {where}".strip(),
                        model_max_length=d.model_max_length, facts=facts)
