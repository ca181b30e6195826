"""Human tables for ``quantadvise list``."""

from __future__ import annotations

from ..catalog.listing import EngineList, GpuList, KvList, Listing, ModelList, SchemeList
from .text import Table, count_h, wrap


def aliases_cell(names: list[str], room: int | None) -> str:
    """Every alias, comma-separated, when ``room`` (characters; None: no limit) allows; else, in the
    data's order, the whole aliases that fit (a long one is skipped for shorter ones after it, never cut)
    followed by how many more there are: "h100, h100-sxm5 (+4)" (``--wide`` and the JSON carry them all)."""
    full = ", ".join(names)
    if room is None or len(full) <= room:
        return full
    shown: list[str] = []
    for name in names:
        trial = [*shown, name]
        rest = len(names) - len(trial)
        if len(", ".join(trial) + (f" (+{rest})" if rest else "")) <= room:
            shown = trial
    rest = len(names) - len(shown)
    return ", ".join(shown) + (" " if shown else "") + f"(+{rest})"


def _fit_aliases(t: Table, names: list[list[str]], width: int | None) -> bool:
    """The aliases column's cells abbreviated to the room ``width`` leaves it (whole aliases and a
    count, not an ellipsis mid-name); whether any cell lost an alias."""
    room = t.widths(width).get("aliases")
    if room is None:
        return any(names)
    cells = [aliases_cell(n, room if width is not None else None) for n in names]
    t.set_column("aliases", cells)
    return any(c != ", ".join(n) for c, n in zip(cells, names, strict=True))


def _tf(flops: float | None) -> str:
    return "-" if flops is None else f"{flops / 1e12:,.0f}"


def table(r: Listing, width: int | None = None) -> str:
    if isinstance(r, ModelList):
        # narrow, the kind goes before the aliases do (any alias works wherever a model id does)
        t = Table(["model", "params", "kind", "max ctx", "aliases"], align="lrlrl", flex=("aliases",),
                  drop=("kind", "aliases"))
        names = [m.aliases for m in r.models]
        for m in r.models:
            t.add(m.id, count_h(m.params), m.kind, "-" if m.max_context is None else f"{m.max_context:,}",
                  ", ".join(m.aliases))
        note = "params: the published count; max ctx: the config's max_position_embeddings"
    elif isinstance(r, GpuList):
        # narrow, the aliases keep room for a whole alias or two: fp4 TF (a figure only Blackwell rows
        # have) goes first
        t = Table(["gpu", "memory GiB", "TB/s", "bf16 TF", "fp8 TF", "fp4 TF", "cc", "aliases"], align="lrrrrrll",
                  flex=("aliases",), drop=("fp4 TF", "aliases"), flex_min={"aliases": 20})
        for g in r.gpus:
            t.add(g.id, f"{g.memory_bytes / 1024**3:,.0f}", f"{g.bandwidth_bytes_per_s / 1e12:,.2f}",
                  _tf(g.peak_flops_bf16), _tf(g.peak_flops_fp8), _tf(g.peak_flops_fp4), g.compute_capability or "-",
                  ", ".join(g.aliases))
        names = [g.aliases for g in r.gpus]
        note = "TF: dense tensor-core TFLOP/s from the spec sheet (no 2:4 sparsity); cc: compute capability"
    elif isinstance(r, SchemeList):
        t = Table(["scheme", "W bits", "eff. bits", "A bits", "checkpoint", "aliases"], align="lrrrll", flex=("aliases",),
                  drop=("aliases",))
        for s in r.schemes:
            t.add(s.id, "-" if s.weight_bits is None else s.weight_bits,
                  "-" if s.effective_bits_per_weight is None else f"{s.effective_bits_per_weight:.3f}",
                  "-" if s.activation_bits is None else s.activation_bits, s.checkpoint_format or "-",
                  ", ".join(s.aliases))
        names = [s.aliases for s in r.schemes]
        n, k = r.effective_bits_shape
        note = f"eff. bits: bits per weight with scales and zero-points, for a {n} x {k} linear"
    elif isinstance(r, KvList):
        t = Table(["kv preset", "bits", "vLLM flag", "SGLang flag", "aliases"], align="lrlll", flex=("aliases",),
                  drop=("aliases",))
        for k_ in r.kv_presets:
            t.add(k_.id, k_.bits, k_.vllm_kv_cache_dtype or "-", k_.sglang_kv_cache_dtype or "-", ", ".join(k_.aliases))
        names = [k_.aliases for k_ in r.kv_presets]
        note = "flag: the --kv-cache-dtype value each engine takes (-: it has none for this preset)"
    else:
        assert isinstance(r, EngineList)
        t = Table(["engine", "releases on file", "newest"], align="lll", flex=("releases on file",))
        for e in r.engines:
            t.add(e.engine, ", ".join(e.versions), e.newest)
        note = "pick one with --engine NAME --engine-version X (or NAME==X where a command takes one flag)"
        names = []
    if names and _fit_aliases(t, names, width):
        note += "; (+N): N more aliases, all shown with --wide or --format json"
    return "\n".join([t.render(width), "", *wrap(note, width)])
