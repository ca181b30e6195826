"""``engines``: an engine release's quantization registry, one method, two releases side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import catalog
from .common import get_engine

if TYPE_CHECKING:
    from ..engines.listing import EngineDiff, EngineListing, MethodDetail


def engines_list(engine: str = "vllm", version: str | None = None) -> EngineListing:
    """Every method an engine release accepts, with config class, minimum capability, activation
    dtypes, optimized flag; its KV cache dtypes, online shorthands and override order."""
    from ..engines.listing import listing

    return listing(get_engine(engine, version))


def engines_show(method: str, engine: str = "vllm", version: str | None = None) -> MethodDetail:
    """One method in one engine release: its row, the names sharing its config class, the
    overrides that produce it, and the same name in the other engines on file."""
    from ..engines.listing import method_detail

    e = get_engine(engine, version)
    others = [catalog.get_engine(n) for n in catalog.engine_names() if n != e.engine]
    detail = method_detail(e, method, others)
    if detail is None:
        from ..errors import UnknownNameError

        raise UnknownNameError(f"{e.label} quantization method", method, [m.id for m in e.methods],
                               hint=f"`quantadvise engines list --engine {e.engine}` lists them")
    return detail


def engines_diff(a: str = "vllm", b: str = "sglang") -> EngineDiff:
    """Two engine registries side by side: methods only in one, KV cache dtypes, optimized flags."""
    from ..engines.listing import diff

    return diff(get_engine(a), get_engine(b))


