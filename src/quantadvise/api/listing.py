"""``list``: what is bundled — models, GPUs, scheme presets, KV cache presets, engine releases."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import catalog
from ..errors import UnknownNameError

if TYPE_CHECKING:
    from ..catalog.listing import Listing


def list_bundled(kind: str) -> Listing:
    """The bundled ``kind`` (models, gpus, schemes, kv, engines), each row with its aliases and key
    figures; ``quantadvise list KIND`` prints it."""
    from ..catalog import listing as L

    key = kind.strip().lower()
    key = {"model": "models", "gpu": "gpus", "scheme": "schemes", "kv-presets": "kv", "kv_presets": "kv",
           "engine": "engines"}.get(key, key)
    if key == "models":
        from ..model.parse import parse_config

        models = []
        for mid in catalog.bundled_model_ids():
            row = catalog.find_bundled_model(mid)
            assert row is not None
            arch = parse_config(catalog.bundled_config(row), row.config)
            models.append(L.ModelItem(id=row.id, aliases=list(row.aliases), family=row.family, kind=arch.kind,
                                      params=row.published_params, max_context=arch.max_position_embeddings,
                                      source=row.source))
        return L.ModelList(models=models)
    if key == "gpus":
        gpus = []
        for gid in catalog.gpu_ids():
            g = catalog.get_gpu(gid)
            gpus.append(L.GpuItem(id=g.id, aliases=list(g.aliases), name=g.name, vendor=g.vendor,
                                  memory_bytes=g.memory_bytes, bandwidth_bytes_per_s=g.bandwidth_bytes_per_s,
                                  peak_flops_bf16=g.native_peak("bf16"), peak_flops_fp8=g.peak("fp8"),
                                  peak_flops_fp4=g.peak("fp4"), compute_capability=g.compute_capability,
                                  source=g.source))
        return L.GpuList(gpus=gpus)
    if key == "schemes":
        n, k = L.EFFECTIVE_BITS_SHAPE
        schemes = []
        for sid in catalog.scheme_ids():
            p = catalog.scheme_preset(sid)
            w = p.weight if p.weight is not None and p.weight.is_quantized else None
            a = p.activation if p.activation is not None and p.activation.is_quantized else None
            schemes.append(L.SchemeItem(id=p.id, aliases=list(p.aliases), description=p.description,
                                        weight_bits=w.bits if w else None,
                                        effective_bits_per_weight=w.effective_bits(n, k) if w else None,
                                        activation_bits=a.bits if a else None,
                                        checkpoint_format=p.deploy.checkpoint_format))
        return L.SchemeList(schemes=schemes)
    if key == "kv":
        items = []
        for kid in catalog.kv_ids():
            kv = catalog.kv_preset(kid)
            items.append(L.KvItem(id=kv.id, aliases=list(kv.aliases), description=kv.description, bits=kv.kv_cache.bits,
                                  vllm_kv_cache_dtype=kv.deploy.vllm_kv_cache_dtype,
                                  sglang_kv_cache_dtype=kv.deploy.sglang_kv_cache_dtype))
        return L.KvList(kv_presets=items)
    if key == "engines":
        engines = []
        for name in catalog.engine_names():
            versions = catalog.engine_versions(name)
            engines.append(L.EngineItem(engine=name, versions=versions, newest=versions[-1]))
        return L.EngineList(engines=engines)
    raise UnknownNameError("listing", kind, L.KINDS, hint="quantadvise list models|gpus|schemes|kv|engines")
