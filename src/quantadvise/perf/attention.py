"""Decode attention from the engine's published attention table (:class:`~.kernel_tables.AttentionTable`).

One call per attention layer and step: the table's time at the step's batch and KV length for the
model's head configuration on one GPU (heads and KV heads split by tensor parallelism, head dim, a
bf16 or fp8 KV cache; an MLA model: the engine's MLA table at its heads per GPU and latent dimensions). A
configuration the tables do not hold (an int8 / fp4 KV cache, an unusual head count, MLA without a table)
keeps the roofline — KV bytes over bandwidth, FLOPs over peak — with the
table's per-layer launch floor under it: no layer's attention call is faster than the fastest call
the table measured (~12 us on an H100 under vLLM 0.24.0, where the roofline gives ~1 us at batch 1
and a 1k context).

Pure: no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..memory.kvcache import KVGeometry, geometry
from ..model.arch import ModelArch
from ..results import record
from ..scheme.axes import TensorQuant
from ..scheme.formats import get_format
from .attention_tables import AttentionGrid, kv_token_bytes

if TYPE_CHECKING:
    from .efficiency import Efficiency


@record(slots=True)
class AttentionCost:
    """How one model's decode attention is priced on one GPU: the table's grid for its head
    configuration (None: roofline with the floor), the floor per layer call, and the layers."""

    grid: AttentionGrid | None
    floor_s: float
    full_layers: int
    sliding_layers: int
    window: int | None
    source: str  # the table id
    # a grouped-query table's KV read from memory: one token's K and V in one layer on this GPU, and the rate the table
    # sustains (None: no bound; :func:`~.attention_tables.kv_stream_rate`)
    kv_token_bytes: float = 0.0
    stream_rate: float | None = None

    @property
    def layers(self) -> int:
        return self.full_layers + self.sliding_layers

    def decode(self, batch: float, kv_len: float) -> float | None:
        """Seconds of one decode step's attention at ``batch`` sequences of ``kv_len`` cached tokens, or
        None without a grid."""
        g = self.grid
        if g is None or batch <= 0:
            return None
        t = self.full_layers * self._layer(g, batch, kv_len)
        if self.sliding_layers and self.window:
            t += self.sliding_layers * self._layer(g, batch, min(kv_len, float(self.window)))
        return t

    def _layer(self, g: AttentionGrid, batch: float, kv: float) -> float:
        """One layer's call: the table's, never below reading the layer's cache at the rate the table sustains
        from memory (a decode step reads it from memory; the harness may have cached it in the L2)."""
        t = g.at(batch, kv)
        return t if self.stream_rate is None else max(t, batch * kv * self.kv_token_bytes / self.stream_rate)

    def floor(self) -> float:
        """The least a step's attention costs: one launch floor per attention layer."""
        return self.layers * self.floor_s

    def step(self, roofline_s: float, compute_s: float, decode: tuple[float, float, int] | None) -> float:
        """A step's attention: the table at (batch, KV length) for a decode step of one query per sequence
        with the model's head configuration (a speculative verification step of several: never below its
        FLOPs at peak), else ``roofline_s`` with the launch floor under it."""
        if decode is not None:
            batch, kv, queries = decode
            t = self.decode(batch, kv)
            if t is not None:
                return t if queries == 1 else max(t, compute_s)
        return max(roofline_s, self.floor())


def kv_len(g: KVGeometry, cached: float) -> float:
    """The context a sequence holds, from the layer-tokens it caches (``kvcache.cached_tokens`` inverted)."""
    layers = g.full_layers + g.sliding_layers
    if not layers:
        return 0.0
    if g.sliding_layers and g.window and cached > layers * g.window:
        return (cached - g.sliding_layers * g.window) / max(g.full_layers, 1)
    return cached / layers


def kv_dtype(kv: TensorQuant | None) -> str | None:
    """The table's name for a KV cache dtype: bf16 (16-bit), fp8 (8-bit float), None (not in the tables)."""
    if kv is None or not kv.is_quantized:
        return "bf16"
    f = get_format(kv.format)
    return "fp8" if f.is_float and kv.bits == 8 else None


def attention_cost(eff: Efficiency, arch: ModelArch, kv: TensorQuant | None, tp: int) -> AttentionCost | None:
    """The decode attention of ``arch`` with the KV cache ``kv`` on one of ``tp`` GPUs, from the engine's published
    table (``eff.attention``; an MLA model: the engine's MLA table where one is on file and holds its latent
    dimensions); with no attention table on this GPU, the roofline with the profile's attention launch floor
    (``eff.call_floor_s``: the published tables' median), or None where the profile has none (``--ideal``)."""
    table = eff.attention
    g = geometry(arch)
    if table is None:
        floor = eff.call_floor_s[2]
        return None if floor <= 0 else AttentionCost(
            grid=None, floor_s=floor, full_layers=g.full_layers, sliding_layers=g.sliding_layers, window=g.window,
            source="profile call_floor_s.attention")
    grid = None
    dt = kv_dtype(kv)
    per_token, rate = 0.0, None
    if dt is not None and arch.num_heads % tp == 0:
        heads = arch.num_heads // tp
        if arch.is_mla:
            mla = eff.mla_attention()
            grid = mla.grid(heads, 1, arch.kv_lora_rank + arch.qk_rope_head_dim, dt) if mla is not None else None
            if grid is not None and mla is not None:
                table = mla
        else:
            kv_heads = max(1, arch.num_kv_heads // tp)
            grid = table.grid(heads, kv_heads, arch.head_dim, dt)
            per_token, rate = kv_token_bytes(kv_heads, arch.head_dim, dt), table.stream_rate
    return AttentionCost(grid=grid, floor_s=table.floor_s, full_layers=g.full_layers, sliding_layers=g.sliding_layers,
                         window=g.window, source=table.meta.id, kv_token_bytes=per_token, stream_rate=rate)
