"""QA3xx: memory — weights + KV cache for the declared workload against the GPUs."""

from __future__ import annotations

import math
from typing import Any

from .findings import Findings, Site
from .result import MemoryFit


def memory_fit(
    *,
    gpu: str,
    gpus: int,
    gpu_memory_bytes: int,
    memory_utilization: float,
    reserve_bytes_per_gpu: int,
    weights_bytes: int,
    weights_source: str,
    kv_dtype: str,
    kv_bytes_per_token: float,
    sequence_bytes: Any,  # tokens -> KV bytes of one sequence (sliding windows included)
    concurrency: int,
    kv_tokens_per_sequence: int,
    max_model_len: int | None = None,
    max_model_len_source: str | None = None,
    kv_tokens_basis: str = "",
) -> MemoryFit:
    """The advisor's fit arithmetic for a deployed configuration: budget = memory x utilization x GPUs
    - reserve x GPUs; need = weights + concurrency x one sequence's KV."""
    memory = gpu_memory_bytes * gpus
    budget = gpu_memory_bytes * memory_utilization * gpus - reserve_bytes_per_gpu * gpus
    per_seq = sequence_bytes(kv_tokens_per_sequence)
    kv = per_seq * concurrency
    free = budget - weights_bytes - kv
    room = budget - weights_bytes
    max_conc = max(0, math.floor(room / per_seq)) if per_seq > 0 else concurrency
    mml_bytes = fits_len = None
    if max_model_len is not None:
        mml_bytes = math.ceil(sequence_bytes(max_model_len))
        if mml_bytes > room:
            lo, hi = 0, max_model_len  # largest length whose one sequence fits (sequence_bytes grows with it)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if sequence_bytes(mid) <= room:
                    lo = mid
                else:
                    hi = mid - 1
            fits_len = lo
    return MemoryFit(
        gpu=gpu, gpus=gpus, memory_bytes=memory, memory_utilization=memory_utilization,
        reserve_bytes=reserve_bytes_per_gpu * gpus, budget_bytes=math.floor(budget), weights_bytes=weights_bytes,
        weights_source=weights_source, kv_dtype=kv_dtype, kv_bytes_per_token=kv_bytes_per_token,
        concurrency=concurrency, kv_tokens_per_sequence=kv_tokens_per_sequence, kv_tokens_basis=kv_tokens_basis,
        kv_bytes=math.ceil(kv),
        free_bytes=math.floor(free), headroom=free / budget if budget > 0 else -math.inf, max_concurrency=max_conc,
        max_model_len=max_model_len, max_model_len_source=max_model_len_source, max_model_len_kv_bytes=mml_bytes,
        max_model_len_that_fits=fits_len,
    )


def _gb(n: float) -> str:
    return f"{n / 1e9:,.2f} GB"


def memory_findings(out: Findings, site: Site, m: MemoryFit, *, engine: str, min_headroom: float | None) -> None:
    out.ran_rules("QA301")
    budget = (f"{_gb(m.budget_bytes)} budget ({m.gpus} x {m.gpu}, gpu-memory-utilization {m.memory_utilization:g}, "
              f"{_gb(m.reserve_bytes)} runtime reserve)")
    if not m.weights_fit:
        file, line = site.at("gpu_memory_utilization", "tensor_parallel_size", "model")
        out.add("QA301", f"the weights alone ({_gb(m.weights_bytes)}, {m.weights_source}) exceed the {budget}: more "
                "GPUs (--tensor-parallel-size), a smaller scheme, or a higher gpu-memory-utilization",
                subject=f"{site.key}|weights", file=file, line=line, target=site.label)
        for rid in ("QA302", "QA303", "QA304"):
            out.skip(rid, "the weights alone do not fit (QA301)")
        return  # nothing else fits either; one finding says it
    out.ran_rules("QA303")
    if m.max_model_len is not None and engine == "vllm":
        out.ran_rules("QA302")
        if m.max_model_len_kv_bytes is not None and m.max_model_len_kv_bytes > m.budget_bytes - m.weights_bytes:
            file, line = site.at("max_model_len", "model")
            out.add("QA302", f"one sequence of max-model-len {m.max_model_len:,} tokens ({m.max_model_len_source}) "
                    f"needs {_gb(m.max_model_len_kv_bytes)} of {m.kv_dtype} KV cache, but only "
                    f"{_gb(m.budget_bytes - m.weights_bytes)} is left after {_gb(m.weights_bytes)} of weights in the "
                    f"{budget}: vLLM refuses to start; the longest that fits is about "
                    f"{m.max_model_len_that_fits or 0:,} tokens (set --max-model-len)",
                    subject=f"{site.key}|max-model-len", file=file, line=line, target=site.label)
    elif engine != "vllm":
        out.skip("QA302", "the max-model-len start-up check is vLLM's")
    else:
        out.skip("QA302", "no engine command (max-model-len unknown)")
    if not m.fits:
        file, line = site.at("max_num_seqs", "concurrency", "model")
        basis = f" ({m.kv_tokens_basis})" if m.kv_tokens_basis else ""
        out.add("QA303", f"{m.concurrency} sequences x {m.kv_tokens_per_sequence:,} tokens{basis} need "
                f"{_gb(m.kv_bytes)} of {m.kv_dtype} KV cache next to {_gb(m.weights_bytes)} of weights: "
                f"{_gb(m.weights_bytes + m.kv_bytes)} in a {budget}; {m.max_concurrency} fit at a time",
                subject=f"{site.key}|concurrency", file=file, line=line, target=site.label)
        out.skip("QA304", "the declared concurrency does not fit at all (QA303)")
        return
    if min_headroom is None:
        out.skip("QA304", "thresholds.min_memory_headroom is not set")
        return
    out.ran_rules("QA304")
    if m.headroom < min_headroom - 1e-12:
        file, line = site.at("gpu_memory_utilization", "max_num_seqs", "concurrency", "model")
        out.add("QA304", f"{_gb(m.weights_bytes)} weights + {_gb(m.kv_bytes)} KV ({m.concurrency} x "
                f"{m.kv_tokens_per_sequence:,} tokens, {m.kv_dtype}) leave {_gb(m.free_bytes)} free of the {budget}: "
                f"{m.headroom:.1%} headroom < {min_headroom:.0%} required",
                subject=f"{site.key}|headroom", file=file, line=line, target=site.label)


