"""``checkpoints``: the published quantized variants of a model — from the bundled index, or the Hub's
model tree with ``hub=True`` — each with its scheme, size, each engine release's verdict on the GPU
(the resolver ``inspect`` uses), its producer's accuracy evidence and its popularity."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import catalog, defaults
from ..catalog.resolve import get_engine
from ..checkpoint.published import Published, checkpoint_of
from ..engines.inspection import CheckpointsReport, CheckpointVerdict, GpuTarget, PublishedEntry
from ..errors import SourceUnavailableError, norm_name

if TYPE_CHECKING:
    from ..checkpoint.quant import CheckpointQuant
    from ..engines.data import EngineData
    from ..model.arch import ModelArch


def checkpoints(model: str, *, engines: str | list[str] | None = None, gpu: str | None = None,
                hub: bool = False) -> CheckpointsReport:
    """The published quantized variants of ``model`` (a bundled id or alias; any Hub id with ``hub``),
    judged by each engine release (default: the newest of each) on ``gpu`` (default: the default GPU)."""
    from ..catalog.checkpoints import index_as_of, published_for
    from ..catalog.hub import hub_published
    from ..inputs import names
    from .inspect import gpu_target

    name = model.strip()
    row = catalog.find_bundled_model(name)
    warnings: list[str] = []
    if hub:
        try:
            published, origin = hub_published(name)
        except SourceUnavailableError as exc:
            if row is None:
                raise
            warnings.append(f"{exc.message}: showing the bundled index instead")
            published, origin = list(published_for(row.id)), f"the bundled index (data/checkpoints.yaml, as of " \
                                                            f"{index_as_of()})"
    elif row is None:
        raise SourceUnavailableError(f"no published checkpoints of '{name}' are on file: the bundled index covers the "
                                     "bundled models", hint="pass --hub to ask the Hugging Face Hub's model tree, or "
                                     "`quantadvise list models` for the bundled ones")
    else:
        published, origin = list(published_for(row.id)), f"the bundled index (data/checkpoints.yaml, as of " \
                                                         f"{index_as_of()})"
    # each named once, at most MAX_NAMES (as inspect takes them): 25,000 repeats of vllm were 25,000 verdicts
    specs = list(names("engine", engines, "vllm,sglang") or ()) if engines else catalog.engine_names()
    releases = [get_engine(s) for s in specs]
    target = gpu_target(gpu or defaults.GPU)
    assert target is not None
    arch = _arch(row.id if row is not None else name)
    asked = norm_name(name)
    order = sorted(range(len(published)), key=lambda i: (norm_name(published[i].base_model) != asked, i))
    entries = [_entry(published[i], releases, target, arch) for i in order]
    notes = [
        "verdict basis: 'read' judges the quantization_config read from the checkpoint; 'assumed' judges the config a "
        "<method> export of its scheme writes (its config was not read whole: see inferred_from)",
        "accuracy: the producer's own published evaluation; the drop in points is [baseline - score] when both "
        "averages are published, [0, 100 - recovery] when only a recovery is (a score is at most 100 points)",
    ]
    return CheckpointsReport(model=name, bundled_model=row.id if row is not None else None, origin=origin,
                             gpu=target, engines=[e.label for e in releases], checkpoints=entries, notes=notes,
                             warnings=warnings)


def _arch(name: str) -> ModelArch | None:
    """The model's architecture, for sizes: bundled, or from the local cache / Hub (None when unreadable)."""
    from ..catalog.hub import resolve_model
    from ..errors import QuantAdviseError
    from ..model.parse import parse_config

    try:
        _, cfg = resolve_model(name, allow_hub=False)
        return parse_config(cfg)
    except QuantAdviseError:
        return None


def _entry(p: Published, releases: list[EngineData], gpu: GpuTarget, arch: ModelArch | None) -> PublishedEntry:
    scheme = deploy = None
    if p.scheme is not None:
        preset = catalog.scheme_preset(p.scheme)
        scheme, deploy = catalog.get_scheme(p.scheme), preset.deploy
    ck, basis = checkpoint_of(p, scheme, deploy, arch)
    if p.method is None:
        basis = "16-bit"
    verdicts = [_verdict(e, ck, basis, gpu, arch) for e in releases]
    acc = p.accuracy
    pop = p.popularity
    return PublishedEntry(
        id=p.id, producer=p.producer, base_model=p.base_model, method=p.method, scheme=p.scheme, kv=p.kv,
        scheme_note=p.scheme_note, scheme_basis=p.scheme_basis, config_status=p.config_status,
        size_bytes=_size(arch, ck, p), verdicts=verdicts, accuracy=acc,
        accuracy_drop_pct=acc.drop_pct if acc is not None and acc.caveat is None else None,
        downloads=pop.downloads if pop else None, likes=pop.likes if pop else None,
        popularity_seen=pop.seen if pop else None, inferred_from=list(p.inferred_from), source=p.source,
        as_of=p.as_of.isoformat(),
    )


def _verdict(engine: EngineData, ck: CheckpointQuant | None, basis: str, gpu: GpuTarget,
             arch: ModelArch | None) -> CheckpointVerdict:
    from ..engines.resolution import resolve

    if ck is None and basis != "16-bit":
        return CheckpointVerdict(engine=engine.engine, version=engine.version, label=engine.label, status="unknown",
                                 method=None, message="nothing read to judge", basis="none")
    r = resolve(engine, ck, capability=gpu.capability, platform=gpu.platform,
                model_type=arch.model_type if arch else None, model_dtype=arch.torch_dtype if arch else None)
    worst = next((f for f in r.findings if f.severity == "error"), None) or \
        next((f for f in r.findings if f.severity == "warning"), None)
    status = {"refused": "refused", "warnings": "warns", "ok": "loads"}[r.status]
    return CheckpointVerdict(engine=engine.engine, version=engine.version, label=engine.label, status=status,
                             method=r.resolved_method, basis=basis,
                             message=(worst.engine_message or worst.message) if worst is not None else None)


def _size(arch: ModelArch | None, ck: CheckpointQuant | None, p: Published) -> int | None:
    from ..checkpoint.placement import disk_size
    from ..errors import QuantAdviseError

    if arch is None or (ck is None and p.method is not None) or (ck is not None and ck.family in ("gguf", "unknown")):
        return None
    try:
        return disk_size(arch, ck, catalog.layouts()).total_bytes
    except (QuantAdviseError, ValueError, KeyError):
        return None
