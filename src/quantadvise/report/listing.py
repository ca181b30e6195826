"""Human tables for ``quantadvise list``."""

from __future__ import annotations

from ..listings import EngineList, GpuList, KvList, Listing, ModelList, SchemeList
from .text import Table, count_h, wrap


def _aliases(names: list[str], limit: int = 2) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" (+{len(names) - limit})" if len(names) > limit else "")


def _tf(flops: float | None) -> str:
    return "-" if flops is None else f"{flops / 1e12:,.0f}"


def table(r: Listing, width: int | None = None) -> str:
    if isinstance(r, ModelList):
        t = Table(["model", "params", "kind", "max ctx", "aliases"], align="lrlrl", flex=("aliases",),
                  drop=("aliases", "kind"))
        for m in r.models:
            t.add(m.id, count_h(m.params), m.kind, "-" if m.max_context is None else f"{m.max_context:,}",
                  _aliases(m.aliases))
        note = "params: the published count; max ctx: the config's max_position_embeddings"
    elif isinstance(r, GpuList):
        t = Table(["gpu", "memory GiB", "TB/s", "bf16 TF", "fp8 TF", "fp4 TF", "cc", "aliases"], align="lrrrrrll",
                  flex=("aliases",), drop=("aliases", "fp4 TF"))
        for g in r.gpus:
            t.add(g.id, f"{g.memory_bytes / 1024**3:,.0f}", f"{g.bandwidth_bytes_per_s / 1e12:,.2f}",
                  _tf(g.peak_flops_bf16), _tf(g.peak_flops_fp8), _tf(g.peak_flops_fp4), g.compute_capability or "-",
                  _aliases(g.aliases))
        note = "TF: dense tensor-core TFLOP/s from the spec sheet (no 2:4 sparsity); cc: compute capability"
    elif isinstance(r, SchemeList):
        t = Table(["scheme", "W bits", "eff. bits", "A bits", "checkpoint", "aliases"], align="lrrrll", flex=("aliases",),
                  drop=("aliases",))
        for s in r.schemes:
            t.add(s.id, "-" if s.weight_bits is None else s.weight_bits,
                  "-" if s.effective_bits_per_weight is None else f"{s.effective_bits_per_weight:.3f}",
                  "-" if s.activation_bits is None else s.activation_bits, s.checkpoint_format or "-",
                  _aliases(s.aliases))
        n, k = r.effective_bits_shape
        note = f"eff. bits: bits per weight with scales and zero-points, for a {n} x {k} linear"
    elif isinstance(r, KvList):
        t = Table(["kv preset", "bits", "vLLM flag", "SGLang flag", "aliases"], align="lrlll", flex=("aliases",),
                  drop=("aliases",))
        for k_ in r.kv_presets:
            t.add(k_.id, k_.bits, k_.vllm_kv_cache_dtype or "-", k_.sglang_kv_cache_dtype or "-", _aliases(k_.aliases))
        note = "flag: the --kv-cache-dtype value each engine takes (-: it has none for this preset)"
    else:
        assert isinstance(r, EngineList)
        t = Table(["engine", "releases on file", "newest"], align="lll", flex=("releases on file",))
        for e in r.engines:
            t.add(e.engine, ", ".join(e.versions), e.newest)
        note = "pick one with --engine NAME --engine-version X (or NAME==X where a command takes one flag)"
    return "\n".join([t.render(width), "", *wrap(note, width)])
