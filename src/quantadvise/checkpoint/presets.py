"""Naming a checkpoint's config groups: the quantadvise scheme preset and the compressed-tensors
preset with the same axes. The presets are passed in; this module reads no data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from ..scheme.axes import Scheme, TensorQuant
from .quant import CheckpointQuant, QArgs, QuantGroup


class CtArgsLike(Protocol):
    """One role of a compressed-tensors preset, as the engines' library data holds it (read-only)."""

    @property
    def num_bits(self) -> int: ...
    @property
    def type(self) -> Literal["int", "float"]: ...
    @property
    def strategy(self) -> str: ...
    @property
    def symmetric(self) -> bool: ...
    @property
    def dynamic(self) -> bool | Literal["local"]: ...
    @property
    def group_size(self) -> int | None: ...
    @property
    def block_structure(self) -> tuple[int, int] | None: ...


class CtPresetLike(Protocol):
    """A named compressed-tensors preset (W4A16, FP8_DYNAMIC ...), or an alias of one."""

    @property
    def name(self) -> str: ...
    @property
    def alias_of(self) -> str | None: ...
    @property
    def weights(self) -> CtArgsLike | None: ...
    @property
    def input_activations(self) -> CtArgsLike | None: ...


class CtLibraryLike(Protocol):
    """A checkpoint-format library release with its presets (the engines' FormatLibrary)."""

    @property
    def presets(self) -> Sequence[CtPresetLike]: ...


def axes_key(w: TensorQuant | None, a: TensorQuant | None) -> tuple[Any, ...]:
    """The six axes of weights and activations that make two schemes the same quantization (format,
    scale granularity, static/dynamic, symmetry, second-level scale, MX scales), the layout left out."""
    def one(t: TensorQuant | None) -> tuple[Any, ...] | None:
        if t is None or not t.is_quantized:
            return None
        s = t.scale
        return (t.format, (s.group.row, s.group.col) if s else None, bool(s.dynamic) if s else None, t.symmetric,
                t.scale2 is not None, s.format == "e8m0" if s else None)

    return one(w), one(a)


def match_preset(group: QuantGroup, presets: list[Scheme]) -> str | None:
    """The quantadvise preset whose axes (dtype, granularity, static/dynamic, symmetry, second-level
    scale per role) equal this group's; the layout breaks ties (AWQ vs W4A16_ASYM)."""
    if group.weight is None:
        return None
    key = axes_key(group.weight, group.activation)
    hits = [p for p in presets if axes_key(p.weight, p.activation) == key]
    if not hits:
        return None
    for p in hits:
        if (p.layout.id if p.layout else None) == group.layout:
            return p.id
    return hits[0].id


def match_ct_preset(group: QuantGroup, library: CtLibraryLike) -> str | None:
    """The compressed-tensors preset (W4A16, FP8_DYNAMIC ...) with this group's arguments."""
    if group.weights is None:
        return None

    def same(p: CtArgsLike | None, q: QArgs | None) -> bool:
        if p is None or q is None:
            return p is None and q is None
        if (p.num_bits, p.type, p.strategy, p.symmetric) != (q.num_bits, q.type, q.strategy, q.symmetric):
            return False
        if bool(p.dynamic) != bool(q.dynamic):
            return False
        if p.strategy in ("group", "tensor_group") and p.group_size != q.group_size:
            return False
        return not (p.strategy == "block" and tuple(p.block_structure or ()) != tuple(q.block_structure or ()))

    for p in library.presets:
        if p.alias_of is None and same(p.weights, group.weights) and same(p.input_activations, group.input_activations):
            return p.name
    return None


def with_presets(ck: CheckpointQuant, presets: list[Scheme], library: CtLibraryLike | None) -> CheckpointQuant:
    """The checkpoint with each group's quantadvise and compressed-tensors preset names filled in."""
    groups = tuple(
        g.model_copy(update={"preset": match_preset(g, presets),
                             "ct_preset": match_ct_preset(g, library) if library is not None else None})
        for g in ck.groups
    )
    return ck.model_copy(update={"groups": groups})
