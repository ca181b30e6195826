"""The serving loop's tables: each release's loop facts (data/serving.yaml), the fitted end-to-end terms
(data/serving_terms.yaml), the published end-to-end points they are validated on (data/validation/), and
the benchmark CLIs' option lists (data/flags/bench/). Each is read only when asked for."""

from __future__ import annotations

import json
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import DataError, format_validation_error
from . import loader
from .trusted import shipped

if TYPE_CHECKING:
    from ..engines.loop import LoopRelease
    from ..hardware import GPU
    from ..perf.loop import EngineLoop, LoopTerms


@cache
def _loop_table() -> Any:
    from ..engines.loop import LoopTable

    try:
        return shipped(LoopTable, loader.table("serving.yaml"))
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, "data/serving.yaml")) from None


def loop_release(engine: str, version: str) -> LoopRelease:
    """``engine`` ``version``'s serving-loop facts, else the closest older release's on file (else the
    oldest): compare ``.version`` with ``version`` to know which."""
    from ..engines.loop import pick_loop_release

    return pick_loop_release(_loop_table(), engine, version)


@cache
def shipped_terms() -> tuple[LoopTerms, ...]:
    """The fitted end-to-end terms shipped in data/serving_terms.yaml."""
    from ..perf.loop import LoopTerms

    doc = loader.table("serving_terms.yaml")
    try:
        return tuple(shipped(LoopTerms, r) for r in doc.get("terms", ()))
    except (ValidationError, AttributeError) as exc:
        raise DataError(f"data/serving_terms.yaml: {exc}") from None


def pick_terms(engine: str, gpu: GPU, version: str, site: tuple[LoopTerms, ...] = ()) -> LoopTerms | None:
    """The terms that price ``engine`` ``version`` on ``gpu``: a site profile's for this GPU, engine and
    release, else its for this GPU and engine; else the shipped terms of this engine on this GPU's vendor,
    else the vendor's for any engine; None when nothing applies."""
    from ..errors import norm_name

    names = {norm_name(n) for n in (gpu.id, gpu.name, *gpu.aliases)}
    mine = [t for t in site if t.gpu is not None and norm_name(t.gpu) in names and t.engine in (None, engine)]
    for t in mine:
        if t.version == version:
            return t
    if mine:
        return mine[0]
    vendor = gpu.vendor.lower()
    rows = shipped_terms()
    for want in ((engine, vendor), (None, vendor)):
        for t in rows:
            if (t.engine, (t.vendor or "").lower()) == want:
                return t
    return None


def engine_loop(gpu: GPU, engine: str, version: str, *, tp: int, site: tuple[LoopTerms, ...] = (),
                kv_room_bytes: float | None = None) -> EngineLoop:
    """``engine`` ``version``'s serving loop on ``gpu`` at tensor-parallel degree ``tp``, with its terms."""
    from ..engines.loop import loop_facts
    from ..perf.loop import EngineLoop
    from .engines import engine_startup

    release = loop_release(engine, version)
    facts = loop_facts(release, engine_startup(engine, version), gpu_memory_bytes=gpu.memory_bytes,
                       gpu_names=(gpu.id, gpu.name, *gpu.aliases), capability=gpu.capability, tp=tp,
                       version=version)
    return EngineLoop(facts=facts, terms=pick_terms(engine, gpu, version, site), kv_room_bytes=kv_room_bytes)


@cache
def e2e_points() -> dict[str, Any]:
    """The published end-to-end points (data/validation/e2e_points.yaml), parsed."""
    doc = loader.table("validation/e2e_points.yaml")
    if not isinstance(doc, dict) or "points" not in doc:
        raise DataError("data/validation/e2e_points.yaml: expected a mapping with points")
    return doc


def validation_config(model_id: str) -> dict[str, Any] | None:
    """A model config shipped for the validation points only (data/validation/models/<org>--<name>.json)."""
    path = loader.data_dir() / "validation" / "models" / (model_id.replace("/", "--") + ".json")
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"data/validation/models/{path.name}: {exc}") from None
    return doc if isinstance(doc, dict) else None


@cache
def bench_options(engine: str, version: str) -> Any:
    """The benchmark CLI's options of ``engine`` ``version`` (an ``engines.bench.BenchOptions``,
    data/flags/bench/<engine>-<version>.yaml; in a wheel, a member of the flags bundle), else the closest
    older release's on file; None without one."""
    from ..engines.bench import BenchOptions
    from ..engines.versions import nearest_version

    stems = {s[len(engine) + 1:]: s for s in loader.family("flags").stems("bench") if s.startswith(engine + "-")}
    if not stems:
        return None
    stem = stems[nearest_version(stems, version)]
    where = loader.family("flags").where(stem, "bench")
    try:
        return shipped(BenchOptions, loader.family_table("flags", stem, "bench"))
    except (ValidationError, TypeError) as exc:
        raise DataError(f"{where}: {exc}") from None
