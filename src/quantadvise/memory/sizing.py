"""Whole-model memory for a scheme: every parameter group, its bits, its bytes; KV cache; fit.

Arithmetic (docs/methodology.md works it through):
- a quantized linear ``N x K`` costs ``N*K*b + S*(b_s + b_z) + S2*b_s2`` bits, ``S`` the number of
  scales its group shape gives (exact, partial tiles rounded up), or — for checkpoint-format
  presets — the bytes of the tensors that format really stores (packed int32 words, scales,
  zero-points, g_idx, shape tensors);
- everything the policy leaves unquantized (embedding, lm_head, norms, biases, routers) is bf16;
- a static activation scale is one fp32 per linear in the checkpoint; dynamic ones are not stored.

Pure: no I/O.
"""

import math
from typing import TYPE_CHECKING

from .. import defaults
from ..errors import InputError
from ..model.arch import COMPONENTS, Inventory, ModelArch, ModelSource, ModelSummary, ParamGroup
from ..model.inventory import inventory_of
from ..results import Out as _Out
from ..results import Result, record

if TYPE_CHECKING:  # quoted where used: `size` without --gpu never loads the GPU table's types
    from ..hardware import GPU
from ..scheme.axes import Scheme, SchemeAxes, TensorQuant
from .kvcache import (
    bytes_per_token,
    bytes_per_token_layer,
    geometry,
    kv_copies,
    max_sequences,
    replication_note,
    sequence_bytes,
)

BASELINE_BYTES_PER_PARAM = defaults.BASELINE_BYTES_PER_PARAM
GiB = defaults.GiB


@record
class MemoryBudget:
    """What weights and KV cache may occupy on ``gpus`` GPUs: the one budget ``size``, ``recommend``
    and ``check`` all use. Per GPU the engine takes ``floor(memory x utilization x (1 - headroom))``
    (vLLM's --gpu-memory-utilization is a per-GPU fraction) and the runtime reserve (CUDA context,
    activation peak, CUDA graphs) comes out of that; tensor parallelism multiplies both."""

    gpus: int
    memory_bytes: int  # all GPUs
    usable_bytes: int  # the engine's share, all GPUs
    reserve_bytes: int  # the runtime reserve, all GPUs

    @property
    def budget_bytes(self) -> int:
        """Room for weights + KV cache."""
        return self.usable_bytes - self.reserve_bytes


def memory_budget(gpu_memory_bytes: int, *, gpus: int = 1, memory_utilization: float = defaults.MEMORY_UTILIZATION,
                  reserve_bytes: int = defaults.RESERVE_BYTES, headroom: float = 0.0) -> MemoryBudget:
    """The memory budget of ``gpus`` GPUs of ``gpu_memory_bytes`` each (``reserve_bytes`` per GPU;
    ``headroom`` a fraction of the engine's share kept free)."""
    if gpus < 1:
        raise InputError(f"--gpus must be >= 1, got {gpus}", field="gpus")
    if not 0 < memory_utilization <= 1:
        raise InputError(f"memory utilization must be in (0, 1], got {memory_utilization}", field="memory_utilization")
    if reserve_bytes < 0:
        raise InputError(f"the runtime reserve must be >= 0 GiB, got {reserve_bytes / GiB:g}", field="reserve_gb")
    per_gpu = math.floor(gpu_memory_bytes * memory_utilization * (1 - headroom))
    return MemoryBudget(gpus=gpus, memory_bytes=gpu_memory_bytes * gpus, usable_bytes=per_gpu * gpus,
                        reserve_bytes=reserve_bytes * gpus)


class ComponentSize(_Out):
    component: str
    params: int
    bytes: int
    bits_per_param: float
    baseline_bytes: int
    quantized: bool
    tensor_groups: int


class KVSize(_Out):
    dtype: str
    description: str
    ctx: int
    batch: int
    bytes_per_token: float
    bytes_per_token_per_layer: float
    layers_caching_every_token: int
    sliding_layers: int
    sliding_window: int | None
    bytes: int


class FitReport(_Out):
    gpu: str
    gpus: int
    memory_bytes: int
    memory_utilization: float
    usable_bytes: int
    reserve_bytes: int
    weights_bytes: int
    kv_bytes: int  # the batch's KV cache, one copy
    kv_copies: float  # how many times the GPUs hold it (kvcache.kv_copies: MLA / replicated KV heads)
    kv_held_bytes: int  # kv_bytes x kv_copies: what the GPUs really store
    kv_replication: str | None  # why kv_copies > 1, in words
    fits: bool
    free_for_kv_bytes: int
    kv_token_capacity: int
    max_sequences_at_ctx: int | None
    headroom_bytes: int


class SchemeRef(_Out):
    id: str
    description: str
    axes: SchemeAxes


class SizeReport(Result):
    model: ModelSummary
    scheme: SchemeRef
    total_params: int
    quantized_params: int
    total_bytes: int
    baseline_bytes: int
    compression_ratio: float
    effective_bits_per_weight: float | None
    bits_per_param: float
    components: list[ComponentSize]
    kv: KVSize | None = None
    fit: FitReport | None = None
    notes: list[str] = []
    warnings: list[str] = []

    @property
    def weights_bytes(self) -> int:
        return self.total_bytes


def _group_size_of(w: TensorQuant) -> int | None:
    return None if w.scale is None else w.scale.group.reduction_group


def check_groups(scheme: Scheme, groups: tuple[ParamGroup, ...]) -> None:
    """Every quantized layer's reduction dimension K must be a multiple of the group size."""
    w = scheme.weight
    if w is None or not scheme.quantizes_weights or w.scale is None:
        return
    g = w.scale.group
    if not g.is_per_group:
        return
    bad = [grp for grp in groups if grp.k % g.col]
    if bad:
        first = bad[0]
        ks = sorted({grp.k for grp in groups})
        ok = [c for c in (16, 32, 64, 128, 256) if all(k % c == 0 for k in ks)]
        raise InputError(
            f"group size {g.col} does not divide the reduction dimension K={first.k} of {first.name}",
            hint=f"use --group {128 if 128 in ok else ok[-1]}" + (f" (divisors: {', '.join(map(str, ok))})" if len(ok) > 1 else "")
            if ok
            else "use --group -1 (per-channel)",
            field="group",
        )


def linear_bytes(scheme: Scheme, n: int, k: int) -> int:
    """Bytes one quantized ``N x K`` linear layer stores under ``scheme`` (weights + metadata)."""
    w = scheme.weight
    assert w is not None
    if scheme.layout is not None:
        total = scheme.layout.stored_bytes(n, k, _group_size_of(w), w.bits, w.symmetric)
    else:
        total = math.ceil(w.stored_bits(n, k) / 8)
    a = scheme.activation
    if a is not None and a.is_quantized:
        for s in (a.scale, a.scale2):
            if s is not None and not s.dynamic and s.group.is_per_tensor:
                total += s.bits // 8  # one static input scale per layer (input_scale / input_global_scale)
    return total


def quantized_groups(inv: Inventory, scheme: Scheme, include_mtp: bool = False) -> list[ParamGroup]:
    if not scheme.quantizes_weights:
        return []
    return [g for g in inv.linear_groups(include_mtp) if scheme.policy.quantizes(g.component)]


def size_model(
    arch: ModelArch,
    scheme: Scheme,
    *,
    model_info: ModelSource | None = None,
    include_mtp: bool = False,
    kv: TensorQuant | None = None,
    kv_name: str | None = None,
    ctx: int | None = None,
    batch: int = 1,
    gpu: "GPU | None" = None,
    gpus: int = 1,
    memory_utilization: float = defaults.MEMORY_UTILIZATION,
    reserve_bytes: int = defaults.RESERVE_BYTES,
) -> SizeReport:
    inv = inventory_of(arch)
    groups = inv.serving_groups(include_mtp)
    qgroups = quantized_groups(inv, scheme, include_mtp)
    check_groups(scheme, tuple(qgroups))
    qset = {id(g) for g in qgroups}

    comp: dict[str, dict[str, int]] = {}
    q_params = 0
    q_bits = 0.0
    for g in groups:
        name = "mtp" if g.mtp else g.component
        c = comp.setdefault(name, {"params": 0, "bytes": 0, "baseline": 0, "q": 0, "n": 0})
        params = g.params
        base = params * BASELINE_BYTES_PER_PARAM
        if id(g) in qset:
            b = linear_bytes(scheme, g.n, g.k) * g.count
            c["q"] += params
            q_params += params
            q_bits += b * 8
        else:
            b = base
        c["params"] += params
        c["bytes"] += b
        c["baseline"] += base
        c["n"] += 1

    if arch.tie_word_embeddings and scheme.layout is not None and scheme.layout.stores_tied_lm_head:
        # The export writes the tied head again (engines tie it back at load): count it on disk.
        emb = next(g for g in groups if g.component == "embedding" and not g.mtp)
        c = comp.setdefault("lm_head", {"params": 0, "bytes": 0, "baseline": 0, "q": 0, "n": 0})
        c["bytes"] += emb.params * BASELINE_BYTES_PER_PARAM
        c["n"] += 1
    components = [
        ComponentSize(
            component=name,
            params=v["params"],
            bytes=v["bytes"],
            bits_per_param=v["bytes"] * 8 / v["params"] if v["params"] else 16.0,
            baseline_bytes=v["baseline"],
            quantized=v["q"] > 0,
            tensor_groups=v["n"],
        )
        for name in COMPONENTS
        if (v := comp.get(name))
    ]
    total_params = sum(c.params for c in components)
    total_bytes = sum(c.bytes for c in components)
    baseline = total_params * BASELINE_BYTES_PER_PARAM

    notes: list[str] = []
    if scheme.quantizes_weights:
        kept = [c.component for c in components
                if not c.quantized and c.component not in ("norm", "bias", "other", "vision")]
        if kept:
            notes.append("kept in bf16: " + ", ".join(kept))
    if "vision" in comp:
        notes.append(f"vision encoder and projector ({comp['vision']['params']:,} params) in 16 bits: vLLM loads "
                     "them unless --limit-mm-per-prompt sets every modality to 0")
    if arch.num_mtp_layers and not include_mtp:
        mtp_params = sum(g.params for g in inv.groups if g.mtp)
        notes.append(f"multi-token-prediction module ({mtp_params:,} params) excluded; include it with --mtp")
    if arch.tie_word_embeddings:
        if "lm_head" in comp:
            notes.append(f"embedding and lm_head are tied, but {scheme.layout.id if scheme.layout else 'this'} "
                         "checkpoints store lm_head.weight again (engines tie it back at load)")
        else:
            notes.append("embedding and lm_head are tied: one matrix, counted once")

    kv_report = None
    if ctx is not None:
        if ctx < 0:
            raise InputError(f"--ctx must be >= 0, got {ctx}", field="ctx")
        if batch < 1:
            raise InputError(f"--batch must be >= 1, got {batch}", field="batch")
        kv_report = kv_size(arch, kv, kv_name or "bf16", ctx, batch)

    fit = None
    if gpu is not None:
        fit = fit_report(
            arch, gpu, gpus, total_bytes, kv, ctx, kv_report.bytes if kv_report else 0, memory_utilization,
            reserve_bytes,
        )

    return SizeReport(
        model=ModelSummary(**(model_info or ModelSource(id=arch.architecture, source="object")).model_dump(),
                           kind=arch.kind, architecture=arch.architecture, model_type=arch.model_type),
        scheme=SchemeRef(id=scheme.id, description=scheme.description, axes=scheme.axes()),
        total_params=total_params,
        quantized_params=q_params,
        total_bytes=total_bytes,
        baseline_bytes=baseline,
        compression_ratio=baseline / total_bytes,
        effective_bits_per_weight=(q_bits / q_params) if q_params else None,
        bits_per_param=total_bytes * 8 / total_params,
        components=components,
        kv=kv_report,
        fit=fit,
        notes=notes,
        warnings=list(arch.warnings),
    )


def kv_size(arch: ModelArch, kv: TensorQuant | None, name: str, ctx: int, batch: int) -> KVSize:
    geo = geometry(arch)
    return KVSize(
        dtype=name,
        description=kv.describe("kv_cache") if kv is not None else "bf16",
        ctx=ctx,
        batch=batch,
        bytes_per_token=bytes_per_token(arch, kv),
        bytes_per_token_per_layer=bytes_per_token_layer(arch, kv),
        layers_caching_every_token=geo.full_layers,
        sliding_layers=geo.sliding_layers,
        sliding_window=geo.window,
        bytes=math.ceil(sequence_bytes(arch, kv, ctx) * batch),
    )


def fit_report(
    arch: ModelArch,
    gpu: "GPU",
    gpus: int,
    weights_bytes: int,
    kv: TensorQuant | None,
    ctx: int | None,
    kv_bytes: int,
    memory_utilization: float,
    reserve_bytes: int,
) -> FitReport:
    """Weights + the batch's KV cache against ``gpus`` GPUs. Each GPU holds ``weights / gpus`` and its
    share of the KV (:func:`quantadvise.memory.kvcache.kv_share_per_gpu`): with MLA or KV heads replicated over
    the GPUs the pooled free memory holds ``kv_copies`` copies of every sequence, not one."""
    b = memory_budget(gpu.memory_bytes, gpus=gpus, memory_utilization=memory_utilization, reserve_bytes=reserve_bytes)
    usable, reserve = b.usable_bytes, b.reserve_bytes
    free = b.budget_bytes - weights_bytes
    copies = kv_copies(arch, gpus)
    held = math.ceil(kv_bytes * copies)
    per_tok = (bytes_per_token(arch, kv) or 1.0) * copies
    max_seq = max_sequences(arch, kv, ctx, max(free, 0), tp=gpus) if ctx else None
    return FitReport(
        gpu=gpu.id,
        gpus=gpus,
        memory_bytes=gpu.memory_bytes * gpus,
        memory_utilization=memory_utilization,
        usable_bytes=usable,
        reserve_bytes=reserve,
        weights_bytes=weights_bytes,
        kv_bytes=kv_bytes,
        kv_copies=copies,
        kv_held_bytes=held,
        kv_replication=replication_note(arch, gpus),
        fits=free >= held and free > 0,
        free_for_kv_bytes=free,
        kv_token_capacity=max(0, math.floor(free / per_tok)),
        max_sequences_at_ctx=max_seq,
        headroom_bytes=free - held,
    )
