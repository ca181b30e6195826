"""A checkpoint as its publisher ships it, as a candidate scheme.

A model that ships quantized (a ``quantization_config`` in config.json, ModelOpt's
``hf_quant_config.json`` beside it) is judged as shipped first: serving it costs no calibration,
carries no accuracy risk beyond the publisher's own, and needs no flag (the engines read the method
from the checkpoint). :func:`native_scheme` turns the parsed checkpoint into the scheme the tree
prices — the axes of its quantized config group and a layer policy read from the layers the
checkpoint really quantizes (gpt-oss: the MoE experts; the attention, router, embedding and lm_head
stay 16-bit) — so the native candidate is sized and priced exactly like every other candidate.
Re-quantizations must beat it by more than a tie (DESIGN.md §3b). Pure: values in, values out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..results import record
from ..scheme.axes import DeployHints, LayerPolicy, Scheme

if TYPE_CHECKING:
    from ..model.arch import ModelArch
    from ..scheme.layout import Layout
    from .quant import CheckpointQuant

NATIVE_PREFIX = "native-"
# decoder components a layer policy can name (the rest are 16-bit in every checkpoint)
_DECODER = ("attention", "mla", "mlp", "experts", "shared_experts", "router")


@record
class Native:
    """A shipped checkpoint as a candidate: its parsed quantization, the scheme the tree prices, the
    preset with the same axes (when one exists), the quantization_config as written, and notes."""

    checkpoint: CheckpointQuant
    scheme: Scheme
    preset: str | None
    quantization_config: dict[str, Any] | None
    quantized: tuple[str, ...]  # components the checkpoint quantizes
    kept: tuple[str, ...]  # linear components it keeps 16-bit
    notes: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.scheme.id

    @property
    def deploy(self) -> DeployHints:
        ck = self.checkpoint
        return DeployHints(checkpoint_format=ck.family, quant_method=ck.quant_method)


def native_scheme(arch: ModelArch, ck: CheckpointQuant, layouts: dict[str, Layout], *,
                  quantization_config: dict[str, Any] | None = None) -> Native | None:
    """The scheme a shipped checkpoint runs, or None when it quantizes no weights (a KV-only config,
    a dialect quantadvise cannot size)."""
    from .placement import place

    groups = [g for g in ck.groups if g.quantizes_weights and g.scheme_error is None]
    if not groups:
        return None
    weight: dict[str, int] = {}
    quantized: set[str] = set()
    linear: set[str] = set()
    for m, g, count in place(arch, ck, include_mtp=False).pairs:
        if m.group.mtp:
            continue
        linear.add(m.group.component)
        if g is not None:
            quantized.add(m.group.component)
            weight[g.name] = weight.get(g.name, 0) + m.group.n * m.group.k * count
    if not weight:
        return None
    notes: list[str] = []
    main = max(groups, key=lambda g: weight.get(g.name, 0))
    if len({g.preset or g.name for g in groups if weight.get(g.name)}) > 1:
        notes.append(f"the checkpoint has {len(groups)} quantized config groups; the largest ({main.name}) is priced "
                     "for every quantized layer")
    only = tuple(c for c in _DECODER if c in quantized)
    policy = LayerPolicy(quantize_lm_head="lm_head" in quantized, quantize_embedding="embedding" in quantized,
                         keep=(), only=only)
    base = main.scheme(layouts.get(main.layout) if main.layout else None)
    kept = tuple(c for c in (*_DECODER, "embedding", "lm_head") if c in linear and c not in quantized)
    label = main.preset or main.ct_preset or (main.weights.describe() if main.weights else main.name)
    desc = (f"the published checkpoint as shipped: {ck.quant_method} ({label}) on {', '.join(only) or 'no decoder layers'}"
            + (f"; 16-bit: {', '.join(kept)}" if kept else ""))
    scheme = Scheme.model_validate({
        "id": f"{NATIVE_PREFIX}{ck.quant_method}", "weight": base.weight, "activation": base.activation,
        "accumulation": base.accumulation, "policy": policy, "layout": base.layout, "description": desc,
    })
    return Native(checkpoint=ck, scheme=scheme, preset=main.preset, quantization_config=quantization_config,
                  quantized=tuple(sorted(quantized)), kept=kept, notes=tuple(notes))


def requantization(scheme: Scheme, native: Native) -> Scheme:
    """``scheme`` as a re-quantization of the shipped checkpoint: the layers the checkpoint keeps 16-bit
    (its ``modules_to_not_convert`` / ``ignore`` patterns as placed on the model, :attr:`Native.kept` —
    gpt-oss: attention, router, embedding, lm_head) stay 16-bit too, so the re-quantization is sized,
    priced and produced (the recipe's ``ignore`` list comes from the same policy) with the layer policy
    the publisher chose; only the format of the quantized layers differs. A 16-bit scheme, or one that
    already keeps those layers, is returned as it is."""
    if not scheme.quantizes_weights:
        return scheme
    pol = scheme.policy
    keep = tuple(c for c in native.kept if c in _DECODER and pol.quantizes(c))
    lm_head = pol.quantize_lm_head and "lm_head" in native.kept
    embedding = pol.quantize_embedding and "embedding" in native.kept
    if not keep and not lm_head and not embedding:
        return scheme
    policy = pol.model_copy(update={"keep": (*pol.keep, *keep),
                                    "quantize_lm_head": pol.quantize_lm_head and not lm_head,
                                    "quantize_embedding": pol.quantize_embedding and not embedding})
    kept = [*keep, *(["embedding"] if embedding else []), *(["lm_head"] if lm_head else [])]
    note = (f"{', '.join(kept)} kept 16-bit, as the shipped {native.checkpoint.quant_method} checkpoint keeps "
            f"{'it' if len(kept) == 1 else 'them'}")
    return scheme.model_copy(update={"policy": policy,
                                     "description": f"{scheme.description}; {note}" if scheme.description else note})
