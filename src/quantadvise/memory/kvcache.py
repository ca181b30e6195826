"""KV-cache geometry and bytes.

Per layer and token, a GQA/MHA layer caches K and V: ``2 x kv_heads x head_dim`` elements; an MLA
layer caches one compressed latent plus the decoupled RoPE key: ``kv_lora_rank + qk_rope_head_dim``
elements (what vLLM's MLA backends store). Linear-attention / recurrent layers keep a fixed state and
no per-token KV. Sliding-window layers hold at most ``window`` tokens per sequence: vLLM's hybrid KV
cache manager allocates sliding-window layers in their own group and frees blocks that fall out of
the window, so a sequence of length C costs ``min(C, window)`` tokens there (partial pages ignored).

Scales: a per-tensor or per-head scale is a constant per layer (not per token) and is ignored; a
per-token(-head) or per-group scale is stored with every token and counted.

Tensor parallelism (one home for this fact, :func:`kv_share_per_gpu`): each of ``tp`` GPUs holds
``max(1, kv_heads // tp)`` KV heads (vLLM ``get_num_kv_heads``, ``vllm/config/model.py:1673-1683``),
so KV heads are replicated once ``tp`` exceeds them, and an MLA latent (one "head") is whole on every
GPU. The cluster then holds each sequence's KV :func:`kv_copies` times: pooling the GPUs' free memory
and dividing by one copy's bytes overstates capacity by that factor.
"""

from __future__ import annotations

import math

from ..model.arch import ModelArch
from ..results import by_identity, record
from ..scheme.axes import TensorQuant
from ..scheme.formats import get_format
from ..wording import plural

BF16_BITS = 16


@record(slots=True)
class KVGeometry:
    tensors: int  # 2 for K and V, 1 for an MLA latent
    heads: int  # KV heads (1 for MLA)
    width: int  # elements per head per token
    full_layers: int
    sliding_layers: int
    window: int | None
    linear_layers: int


@by_identity()  # a walk asks ~300 times for each of its candidates' one (immutable) model
def geometry(arch: ModelArch) -> KVGeometry:
    al = arch.attention_layers
    if arch.is_mla:
        return KVGeometry(1, 1, arch.kv_lora_rank + arch.qk_rope_head_dim, al.full, al.sliding, al.window, al.linear)
    return KVGeometry(2, arch.num_kv_heads, arch.head_dim, al.full, al.sliding, al.window, al.linear)


def bits_per_row(kv: TensorQuant | None, width: int) -> float:
    """Bits to store one head's ``width`` elements for one token, token-wise metadata included."""
    if kv is None or not kv.is_quantized:
        return float(width * (kv.bits if kv is not None else BF16_BITS))
    bits = width * kv.bits
    for scale in (kv.scale, kv.scale2):
        if scale is None or scale.group.row == -1:
            continue  # per-tensor / per-head: a constant per layer, not per token
        per_row = scale.group.count(1, width)
        bits += per_row * scale.bits
        if scale is kv.scale and not kv.symmetric and kv.zero_format:
            bits += per_row * get_format(kv.zero_format).bits
    return float(bits)


def bytes_per_token_layer(arch: ModelArch, kv: TensorQuant | None) -> float:
    g = geometry(arch)
    return g.tensors * g.heads * bits_per_row(kv, g.width) / 8


def cached_tokens(arch: ModelArch, ctx: int) -> float:
    """Layer-tokens one sequence of length ``ctx`` keeps: full layers x ctx + sliding x min(ctx, W)."""
    g = geometry(arch)
    sliding = g.sliding_layers * min(ctx, g.window) if g.window else 0
    return g.full_layers * ctx + sliding


def sequence_bytes(arch: ModelArch, kv: TensorQuant | None, ctx: int) -> float:
    """KV bytes held by one sequence of ``ctx`` tokens."""
    return cached_tokens(arch, ctx) * bytes_per_token_layer(arch, kv)


def bytes_per_token(arch: ModelArch, kv: TensorQuant | None) -> float:
    """KV bytes per token across all layers that cache every token (sliding layers excluded once
    the window is full; this is the marginal cost of one more token of a long sequence)."""
    g = geometry(arch)
    return g.full_layers * bytes_per_token_layer(arch, kv)


def bytes_per_token_short(arch: ModelArch, kv: TensorQuant | None) -> float:
    """KV bytes per token while the sequence is shorter than every window (all attention layers)."""
    g = geometry(arch)
    return (g.full_layers + g.sliding_layers) * bytes_per_token_layer(arch, kv)


def kv_share_per_gpu(*, kv_heads: int, mla: bool, tp: int, pp: int = 1) -> float:
    """The fraction of one sequence's KV cache (all layers, all KV heads) one GPU holds: its
    pipeline stage's layers, and ``max(1, kv_heads // tp)`` of the heads (an MLA latent is whole on
    every GPU), ``vllm/config/model.py:1673-1683``."""
    stage = 1 / max(pp, 1)
    if mla or kv_heads <= 0:
        return stage
    return stage * max(1, kv_heads // max(tp, 1)) / kv_heads


def kv_copies(arch: ModelArch, tp: int) -> float:
    """How many times ``tp`` tensor-parallel GPUs together hold each KV byte of a sequence: 1 while
    the KV heads split evenly, ``tp`` for an MLA latent, ``tp / kv_heads`` when heads replicate
    (the pipeline degree does not change it: each stage holds its own layers once)."""
    return kv_share_per_gpu(kv_heads=arch.num_kv_heads, mla=arch.is_mla, tp=tp) * max(tp, 1)


def replication_note(arch: ModelArch, tp: int) -> str | None:
    """Why ``tp`` GPUs hold more than one copy of the KV cache, in words; None when they split it."""
    copies = kv_copies(arch, tp)
    if tp <= 1 or copies <= 1:
        return None
    where = "vllm/config/model.py:1673-1683"
    if arch.is_mla:
        return (f"the MLA latent is stored whole on each of the {tp} GPUs ({where}): every sequence's KV cache is "
                f"held {tp} times, so the sequences that fit are one GPU's free memory over one sequence's KV")
    per = max(1, arch.num_kv_heads // tp)
    return (f"{plural(arch.num_kv_heads, 'KV head')} {'does' if arch.num_kv_heads == 1 else 'do'} not split over {tp} GPUs: each GPU holds "
            f"{plural(per, 'head')} (max(1, kv_heads // tp), {where}), so every sequence's KV cache is held "
            f"{copies:g} times")


def held_sequence_bytes(arch: ModelArch, kv: TensorQuant | None, ctx: int, tp: int = 1) -> float:
    """KV bytes one sequence of ``ctx`` tokens occupies over all ``tp`` GPUs, replicated copies included."""
    return sequence_bytes(arch, kv, ctx) * kv_copies(arch, tp)


def max_sequences(arch: ModelArch, kv: TensorQuant | None, ctx: int, budget_bytes: float, tp: int = 1) -> int:
    """Sequences of ``ctx`` tokens whose KV fits in ``budget_bytes`` pooled over ``tp`` GPUs (each GPU
    holds its share: ``budget / tp`` against ``sequence_bytes x kv_share_per_gpu``)."""
    per_seq = held_sequence_bytes(arch, kv, ctx, tp)
    if per_seq <= 0:
        return 0
    return max(0, math.floor(budget_bytes / per_seq))
