"""``inspect``: one checkpoint read back into the six axes, sized on disk, and run past each engine.

Composes the pure pieces: :mod:`quantadvise.checkpoint` (quantization_config -> groups of axes),
:mod:`quantadvise.checkpoint.placement` (which layers each group takes; bytes on disk through the
sizing code and the checkpoint's layout) and :func:`quantadvise.engines.resolution.resolve` (what
each engine release does with it). Pure: the caller supplies the parsed files and the data rows.
"""

from typing import Any, ClassVar

from ..checkpoint.placement import DiskSize, disk_size
from ..checkpoint.presets import with_presets
from ..checkpoint.published import PublishedAccuracy
from ..checkpoint.quant import CheckpointQuant, GroupAxes, QArgs
from ..model.arch import ModelArch, ModelSource
from ..results import Out, Result
from ..scheme.axes import Scheme
from ..scheme.layout import Layout
from .data import EngineData
from .kernels import GroupKernel, KernelTable, checkpoint_kernels
from .library import FormatLibrary
from .resolution import EngineResolution, resolve


class InspectedModel(ModelSource):
    """Which model was inspected and where it came from. ``location`` is absent for a config dict;
    the architecture fields are absent when the config has none (a bare quantization_config):
    left out of the JSON, not null."""

    omit_if_none: ClassVar[tuple[str, ...]] = ("location", "published_params", "model_type", "architecture", "kind",
                                               "torch_dtype")

    model_type: str | None = None
    architecture: str | None = None
    kind: str | None = None  # "dense GQA", "MoE MLA" ...
    torch_dtype: str | None = None

    @property
    def where(self) -> str:
        """The location, else the id (for messages)."""
        return self.location if self.location is not None else self.id


class GpuTarget(Out):
    """The ``--gpu`` the engines are judged on: a GPU row, or a bare compute capability (``sm75``).

    A bare capability names no GPU: ``name`` and ``compute_capability`` are then left out of the JSON
    (for a GPU row they are always there, ``compute_capability`` null where the row has none)."""

    id: str
    name: str | None = None  # None: a bare capability
    capability: int | None  # as the engines compare it: "9.0" -> 90
    platform: str = "cuda"
    compute_capability: str | None = None

    def _dumped(self, data: dict[str, Any]) -> dict[str, Any]:
        if self.name is None:
            data.pop("name", None)
            data.pop("compute_capability", None)
        return data


class GroupRow(Out):
    """The chapter's one-line-per-group print, done properly: one config group's six axes and the
    layers it takes."""

    group: str
    targets: list[str]
    format: str | None
    weights: str | None
    activations: str | None
    output_activations: str | None = None
    accumulation: str | None = None
    preset: str | None = None
    ct_preset: str | None = None
    labels: list[str] = []
    modules: int | None = None  # linear modules the group quantizes in this model (None: no architecture)
    params: int | None = None
    bytes: int | None = None
    example: str | None = None
    scheme_error: str | None = None
    axes: GroupAxes = GroupAxes()


class InspectReport(Result):
    model: InspectedModel
    checkpoint: CheckpointQuant | None
    summary: str
    groups: list[GroupRow]
    left_unquantized: list[str]  # example linear modules left 16-bit (besides embedding / lm_head)
    left_unquantized_modules: int | None
    ignore: list[str]
    kv_cache: str | None
    size: DiskSize | None
    gpu: GpuTarget | None
    engines: list[EngineResolution]
    kernels: list[GroupKernel] = []  # with --gpu: the GEMM kernel per engine and group
    notes: list[str] = []
    warnings: list[str] = []


def _actorder(a: QArgs | None) -> str:
    """What the weights' activation ordering adds to their description: GPTQ ``desc_act`` /
    compressed-tensors ``actorder: group`` keep a ``g_idx`` (the groups follow it, not contiguous
    columns); ``weight`` / ``static`` reorder the columns once, at export."""
    if a is None or a.actorder is None:
        return ""
    return " (act-order, g_idx)" if a.actorder in ("group", "dynamic") else f" (act-order: {a.actorder})"


def _acc(s: Scheme | None) -> str | None:
    return s.accumulation_format if s is not None else None


def inspect_checkpoint(
    ck: CheckpointQuant | None,
    arch: ModelArch | None,
    *,
    model_info: InspectedModel,
    engines: list[EngineData],
    layouts: dict[str, Layout],
    presets: list[Scheme],
    library: FormatLibrary | None = None,
    gpu: GpuTarget | None = None,
    quantization: str | None = None,
    kv_cache_dtype: str | None = None,
    allow_deprecated: bool = False,
    stored_dtype: str = "bf16",
    kernel_tables: tuple[KernelTable, ...] = (),
    carried: tuple[tuple[str, str, KernelTable, str], ...] = (),
) -> InspectReport:
    """``kernel_tables``: the releases' own kernel tables; ``carried``: (engine, version, table, caveat) for a
    release priced with another release's table (data/kernels/carried/), used with its caveat said."""
    if ck is not None:
        ck = with_presets(ck, presets, library)
    notes: list[str] = []
    warnings: list[str] = list(ck.warnings) if ck else []
    size = None
    per_group: dict[str, tuple[int, int, int, str | None]] = {}
    kinds: dict[str, tuple[str, ...]] = {}  # group -> the layer kinds its modules are ("dense", "experts")
    unq: list[str] = []
    unq_n: int | None = None
    gguf_weights = ck is not None and ck.family == "gguf"
    if arch is not None:
        warnings.extend(arch.warnings)
    if arch is not None and not gguf_weights:  # GGUF: the type per tensor is in the .gguf files (ck.warnings)
        size = disk_size(arch, ck, layouts, stored_dtype=stored_dtype,
                         tied_lm_head_stored=bool(ck and ck.tied_lm_head_stored))
        for a in size.groups:
            per_group[a.group] = (a.modules, a.params, a.bytes, a.example)
            kinds[a.group] = tuple(k for k, hit in (("dense", any(c != "experts" for c in a.components)),
                                                   ("experts", "experts" in a.components)) if hit)
        unq, unq_n = size.unquantized_linear, size.unquantized_linear_modules
        if ck is not None and ck.is_quantized and not size.quantized_params:
            warnings.append("no layer of this model matches the checkpoint's targets: check the targets and ignore "
                            "patterns against the module names")
    elif ck is not None and not gguf_weights:
        notes.append("no architecture (config.json without model_type): layers and size on disk are not computed")
    rows: list[GroupRow] = []
    for g in (ck.groups if ck else ()):
        s = None
        if g.weight is not None and g.scheme_error is None:
            try:
                s = g.scheme()
            except ValueError:
                s = None
        m = per_group.get(g.name)
        rows.append(GroupRow(
            group=g.name, targets=list(g.targets), format=g.format,
            weights=(g.weight.describe("weight") + _actorder(g.weights)) if g.weight else None,
            activations=g.activation.describe("activation") if g.activation else None,
            output_activations=g.output_activations.describe() if g.output_activations else None,
            accumulation=_acc(s), preset=g.preset, ct_preset=g.ct_preset, labels=list(g.labels),
            modules=m[0] if m else (0 if arch is not None and not gguf_weights else None), params=m[1] if m else None,
            bytes=m[2] if m else None, example=m[3] if m else None, scheme_error=g.scheme_error, axes=g.axes(),
        ))
    resolutions = [
        resolve(e, ck, capability=gpu.capability if gpu else None, platform=gpu.platform if gpu else "cuda",
                quantization=quantization, kv_cache_dtype=kv_cache_dtype,
                model_type=arch.model_type if arch else model_info.model_type,
                model_dtype=arch.torch_dtype if arch else model_info.torch_dtype,
                allow_deprecated=allow_deprecated)
        for e in engines
    ]
    kv = ck.kv_cache_quant.describe("kv_cache") if ck is not None and ck.kv_cache_quant is not None else (
        f"ModelOpt kv_cache_quant_algo {ck.kv_cache_algo}" if ck is not None and ck.kv_cache_algo else None)
    summary = ck.summary() if ck is not None else "unquantized (no quantization_config)"
    kernels: list[GroupKernel] = []
    if gpu is not None and gpu.capability:
        resolutions, kernels, kernel_notes = _kernels(ck, resolutions, kernel_tables, gpu.capability, quantization,
                                                      kinds, carried, arch.architecture if arch is not None else None)
        notes += kernel_notes
    return InspectReport(
        model=model_info, checkpoint=ck, summary=summary, groups=rows, left_unquantized=unq,
        left_unquantized_modules=unq_n, ignore=list(ck.ignore) if ck else [], kv_cache=kv, size=size, gpu=gpu,
        engines=resolutions, notes=notes + (size.notes if size else []), warnings=warnings, kernels=kernels,
    )


def _kernels(ck: CheckpointQuant | None, resolutions: list[EngineResolution], tables: tuple[KernelTable, ...],
             capability: int, quantization: str | None, kinds: dict[str, tuple[str, ...]] | None = None,
             carried: tuple[tuple[str, str, KernelTable, str], ...] = (), architecture: str | None = None
             ) -> tuple[list[EngineResolution], list[GroupKernel], list[str]]:
    """The GEMM kernel each release runs for each config group, from that release's own kernel table (a
    table is one release's selection logic, read from its wheel), else the table its carried record names,
    with the record's caveat in the notes; a release with neither gets a row per group with no kernel and a
    note saying so. Routed experts (``kinds``: the layer kinds each group's modules are) get the fused-MoE
    backend."""
    groups = [(g.name, _scheme_of(g), g.format, (kinds or {}).get(g.name) or ("dense",))
              for g in (ck.groups if ck else ())]
    out: list[GroupKernel] = []
    notes: list[str] = []
    done: list[EngineResolution] = []
    for r in resolutions:
        table = next((t for t in tables if (t.engine, t.version) == (r.engine, r.version)), None)
        stand_in = next(((t, why) for e, v, t, why in carried if (e, v) == (r.engine, r.version)), None)
        if table is None and stand_in is not None and groups:
            rows = [k.model_copy(update={"engine_version": r.version})
                    for k in checkpoint_kernels(groups, [stand_in[0]], capability, quantization, r.resolved_method,
                                                architecture)]
            notes.append(f"{r.label} kernels from {stand_in[0].label}'s table: {stand_in[1]}")
            done.append(r.model_copy(update={"kernels": rows}))
        elif table is None:
            rows = [GroupKernel(engine=r.engine, engine_version=r.version, group=name, scheme=s.id if s else None,
                                kernel=None, name=None, activation_quant=None, capability=capability, source=None)
                    for name, s, _, _ in groups]
            if groups:
                on_file = sorted({t.label for t in tables if t.engine == r.engine})
                notes.append(f"no kernel table on file for {r.label}: the GEMM kernel it runs is not shown"
                             + (f" (kernel tables on file: {', '.join(on_file)})" if on_file else ""))
            done.append(r)
        else:
            rows = checkpoint_kernels(groups, [table], capability, quantization, r.resolved_method, architecture)
            done.append(r.model_copy(update={"kernels": rows}))
        out += rows
    return done, out, notes


def _scheme_of(g: Any) -> Scheme | None:
    try:
        return g.scheme() if g.weight is not None and g.scheme_error is None else None
    except ValueError:
        return None


# -- `checkpoints`: the published variants of a model, judged the same way ----------------------------

class CheckpointVerdict(Out):
    """One engine release's verdict on a published checkpoint, on the report's GPU."""

    engine: str
    version: str
    label: str
    status: str  # loads | warns | refused | unknown (nothing to judge)
    method: str | None  # what the engine resolves the checkpoint to (None: 16-bit, or refused first)
    message: str | None = None  # the first refusal (else warning), in the engine's words where on file
    basis: str  # read (the config read whole) | assumed (the config its method writes) | 16-bit | none


class PublishedEntry(Out):
    """One published checkpoint as ``checkpoints`` lists it."""

    id: str
    producer: str
    base_model: str
    method: str | None
    scheme: str | None
    kv: str | None = None
    scheme_note: str | None = None
    scheme_basis: str
    config_status: str
    size_bytes: int | None = None  # tensor bytes on disk, predicted from its config (None: not sized)
    verdicts: list[CheckpointVerdict]
    accuracy: PublishedAccuracy | None = None
    accuracy_drop_pct: tuple[float, float] | None = None  # the drop in points its evaluation supports
    downloads: int | None = None
    likes: int | None = None
    popularity_seen: str | None = None
    inferred_from: list[str] = []
    source: str
    as_of: str


class CheckpointsReport(Result):
    model: str  # as asked
    bundled_model: str | None  # the bundled model it resolves to (None: not bundled)
    origin: str  # the bundled index (as of) or the Hub's model tree
    gpu: GpuTarget
    engines: list[str]
    checkpoints: list[PublishedEntry]
    notes: list[str] = []
    warnings: list[str] = []
