"""``size``: whole-model memory under a scheme."""

from __future__ import annotations

from typing import Any

from .. import defaults
from ..hardware import GPU
from ..model import ModelArch
from ..scheme import Scheme, TensorQuant
from ..sizing import SizeReport, size_model
from .common import engine_share, get_gpu, load_model, resolve_kv, resolve_scheme


def size(
    model: str | dict[str, Any] | ModelArch = defaults.MODEL,
    scheme: str | Scheme | None = None,
    *,
    bits: int | None = None,
    group: int | None = None,
    symmetric: bool | None = None,
    lm_head: bool | None = None,
    embedding: bool | None = None,
    kv_dtype: str | TensorQuant | None = None,
    ctx: int | None = None,
    batch: int = 1,
    gpu: str | GPU | None = None,
    gpus: int = 1,
    include_mtp: bool = False,
    memory_utilization: float | None = None,
    reserve_bytes: int = defaults.RESERVE_BYTES,
) -> SizeReport:
    """Whole-model memory of ``model`` under a scheme, per component, with optional KV and fit.

    ``size`` names no engine: with ``gpu`` and no ``memory_utilization`` the engine's share of each GPU
    is the newest bundled vLLM's default ``--gpu-memory-utilization`` (what ``recommend`` and ``check``
    assume for that release), and a note says so.

    >>> r = size("meta-llama/Llama-3-8B", bits=4, group=128)
    >>> round(r.total_bytes / 1e9, 2)
    5.73
    """
    from ..inputs import check

    gpus, batch, ctx = check("gpus", gpus), check("batch", batch), check("ctx", ctx)
    memory_utilization = check("memory_utilization", memory_utilization)
    check("reserve_gb", reserve_bytes / defaults.GiB)
    arch, info = load_model(model)
    s = resolve_scheme(scheme, bits=bits, group=group, symmetric=symmetric, lm_head=lm_head, embedding=embedding)
    kv, kv_name = resolve_kv(kv_dtype)
    g = get_gpu(gpu) if gpu is not None else None
    note = None
    if g is not None and memory_utilization is None:
        memory_utilization, _, why = engine_share(g, gpus)
        note = (f"usable memory: {round(memory_utilization * 100, 2):g}% of each GPU, {why} (`size` names no engine: "
                "the newest bundled vLLM's; --memory-utilization to change)")
    report = size_model(
        arch,
        s,
        model_info=info,
        include_mtp=include_mtp,
        kv=kv,
        kv_name=kv_name,
        ctx=ctx,
        batch=batch,
        gpu=g,
        gpus=gpus,
        memory_utilization=memory_utilization if memory_utilization is not None else defaults.MEMORY_UTILIZATION,
        reserve_bytes=reserve_bytes,
    )
    return report if note is None else report.model_copy(update={"notes": [*report.notes, note]})


