"""Which GEMM kernel an engine release runs for a linear layer: the kernel as a resolved fact.

An engine picks the kernel of a quantized linear layer by walking a priority list and taking the
first kernel that is supported on the GPU and can implement the layer (vLLM's
``choose_mp_linear_kernel`` / ``choose_scaled_mm_linear_kernel``, SGLang's backend dispatchers). The
data file ``data/kernels/<engine>-<version>.yaml`` (:class:`KernelTable`) transcribes those lists,
row by row with the engine source line each follows; :func:`resolve_kernel` walks them the same way
for a scheme (its :func:`route`), a compute capability and, optionally, a layer shape.

Pure: the tables are values (``catalog.kernel_table`` reads them).
"""

from datetime import date
from typing import Literal

from pydantic import Field, model_validator

from ..results import Out, Strict
from ..scheme.axes import Scheme
from ..scheme.formats import get_format
from .flags import engine_label

KERNEL_DATA_VERSION = 1
ROUTES = (
    "bf16", "wna16", "awq", "gptq", "fp8-tensor", "fp8-channel", "fp8-block", "int8", "fp8-weight-only",
    "w4a8-fp8", "nvfp4", "nvfp4-a16", "mxfp4", "mxfp4-a16", "mxfp8",
)
ActivationQuant = Literal["none", "fused", "unfused", "in-kernel"]


class WheelSource(Strict):
    """The published wheel a release's table was read from (its kernel selection, its server options)."""

    package: str
    version: str
    artifact: str
    sha256: str
    read_by: str


class KernelInfo(Strict):
    """One kernel the release runs for linear layers."""

    id: str
    name: str  # the engine's own name for it
    math: str  # the tensor-core datapath whose peak bounds its math (bf16 for weight-only kernels)
    execution: Literal["native", "weight-only"] = "native"
    activation_quant: ActivationQuant = "none"
    quant_kernel: str | None = None  # the separate activation-quantization kernel when unfused
    source: str
    note: str = ""
    requires: str | None = None  # the optional package the kernel needs (and where the release gets it)
    # the message (an id of the release's engine data) the kernel logs when a layer is set up on it
    # (vLLM's Marlin weight-only kernels); the engine data's Marlin warnings follow the same selection
    warns: str | None = None
    otherwise: str | None = None  # the kernel id the release runs instead when ``requires`` is not importable
    # the release's whole condition for running it, as a phrase, where more than the package importing
    # ("deep_gemm imports and an nvcc of CUDA 12.9+ is found": vLLM 0.34.0's DeepGEMM)
    available_when: str | None = None

    @model_validator(mode="after")
    def _quant(self) -> "KernelInfo":
        if (self.activation_quant == "unfused") != (self.quant_kernel is not None):
            raise ValueError(f"kernel {self.id}: quant_kernel is set exactly when activation_quant is 'unfused'")
        if self.available_when is not None and not (self.requires and self.otherwise):
            raise ValueError(f"kernel {self.id}: available_when needs requires and otherwise (what runs instead)")
        return self


class KernelRoute(Strict):
    """One row of the engine's priority list for a route: the kernel, and when it applies."""

    route: str
    kernel: str
    min_capability: int | None = None
    max_capability: int | None = None
    capabilities: tuple[int, ...] = ()  # exactly these (e.g. Machete: SM90 only)
    weight_bits: tuple[int, ...] = ()
    group_sizes: tuple[int, ...] = ()  # -1 = per channel
    k_multiple: int = Field(default=1, ge=1)
    n_multiple: int = Field(default=1, ge=1)
    quantization: str | None = None  # only when the engine is started with this --quantization method
    # only for checkpoints that resolve to one of these methods (the linear method decides the kernel
    # list: vLLM's compressed-tensors W8A16-FP8 scheme vs Fp8Config / ModelOpt); empty: any
    methods: tuple[str, ...] = ()
    # only for models of these architectures (config.json ``architectures[0]``: SGLang picks the fused-MoE
    # backend of some model families on SM100 by name); empty: any model
    architectures: tuple[str, ...] = ()
    source: str

    @model_validator(mode="after")
    def _route(self) -> "KernelRoute":
        if self.route not in ROUTES:
            raise ValueError(f"unknown route '{self.route}' (use one of {', '.join(ROUTES)})")
        return self


class KernelDifference(Strict):
    """A release priced with another release's table (``data/kernels/carried/``) that runs one route's kernel
    differently, read from its own source: another kernel of the table (``runs``), or the same one with its
    activation quantized in a separate kernel where the table's release fuses it. Applied where the route
    picks ``kernel`` (and, with ``activation_scales``, only for schemes whose activation scales are so)."""

    route: str
    kernel: str  # the table's kernel on that route
    runs: str | None = None  # the kernel this release runs there instead (an id of the same table)
    activation_scales: Literal["static", "dynamic"] | None = None
    activation_quant: ActivationQuant | None = None
    quant_kernel: str | None = None
    source: str  # the release's own lines
    note: str = ""

    @model_validator(mode="after")
    def _difference(self) -> "KernelDifference":
        if self.route not in ROUTES:
            raise ValueError(f"unknown route '{self.route}' (use one of {', '.join(ROUTES)})")
        if self.activation_quant is not None and (self.activation_quant == "unfused") != (self.quant_kernel is not None):
            raise ValueError(f"{self.route} / {self.kernel}: quant_kernel is set exactly when activation_quant is "
                             "'unfused'")
        if self.runs is None and self.activation_quant is None:
            raise ValueError(f"{self.route} / {self.kernel}: a difference names the kernel it runs or its "
                             "activation quantization")
        return self

    def applies(self, route: str, kernel: str, scheme: Scheme | None) -> bool:
        if (self.route, self.kernel) != (route, kernel):
            return False
        if self.activation_scales is None:
            return True
        a = scheme.activation if scheme is not None else None
        dynamic = bool(a is not None and a.scale is not None and a.scale.dynamic)
        return dynamic == (self.activation_scales == "dynamic")


class KernelTable(Strict):
    """``data/kernels/<engine>-<version>.yaml``."""

    schema_version: int = KERNEL_DATA_VERSION
    engine: str
    version: str
    source: WheelSource
    as_of: date
    notes: tuple[str, ...] = ()
    kernels: tuple[KernelInfo, ...]
    routes: tuple[KernelRoute, ...]
    # routed experts (FusedMoE layers) never run the Linear kernels above: the quantization method's
    # fused-MoE backend, walked the same way (first row whose conditions hold)
    moe_kernels: tuple[KernelInfo, ...] = ()
    moe_routes: tuple[KernelRoute, ...] = ()
    # set by ``catalog.kernel_table`` for a release priced with this table (its carried record's differences)
    differences: tuple[KernelDifference, ...] = ()

    @model_validator(mode="after")
    def _refs(self) -> "KernelTable":
        if self.schema_version != KERNEL_DATA_VERSION:
            raise ValueError(f"this quantadvise reads kernel tables version {KERNEL_DATA_VERSION}")
        for what, infos, rows in (("kernels", self.kernels, self.routes),
                                  ("moe_kernels", self.moe_kernels, self.moe_routes)):
            ids = [k.id for k in infos]
            dup = sorted({i for i in ids if ids.count(i) > 1})
            if dup:
                raise ValueError(f"kernel '{dup[0]}' is listed twice in {what}")
            for r in rows:
                if r.kernel not in ids:
                    raise ValueError(f"route {r.route} names kernel '{r.kernel}', which is not in {what}")
            for k in infos:
                if k.otherwise is not None and k.otherwise not in ids:
                    raise ValueError(f"kernel {k.id}: otherwise names '{k.otherwise}', which is not in {what}")
        ids = [k.id for k in self.kernels]
        for d in self.differences:
            for kid in (d.kernel, d.runs):
                if kid is not None and kid not in ids:
                    raise ValueError(f"difference {d.route} / {d.kernel}: kernel '{kid}' is not in kernels")
        return self

    def kernel(self, kid: str) -> KernelInfo:
        return next(k for k in (*self.kernels, *self.moe_kernels) if k.id == kid)

    @property
    def label(self) -> str:
        return f"{'vLLM' if self.engine == 'vllm' else 'SGLang' if self.engine == 'sglang' else self.engine} " \
               f"{self.version}"


class KernelChoice(Out):
    """The kernel one linear layer runs: what, why (the row's source) and where."""

    kernel: KernelInfo
    route: str
    engine: str
    engine_version: str
    capability: int | None
    source: str  # the route row's citation

    moe: bool = False  # a fused-MoE backend (routed experts), not a Linear kernel
    otherwise: str | None = None  # the short name of the kernel run when ``kernel.requires`` is missing

    @property
    def short(self) -> str:
        """The kernel's short name, with its condition when it needs an optional package."""
        name = self.kernel.name.split(" (")[0]
        if self.kernel.requires and self.otherwise:
            when = self.kernel.available_when or f"{self.kernel.requires.split(' (')[0]} imports"
            return f"{name} when {when}, else {self.otherwise}"
        return name

    @property
    def label(self) -> str:
        """``"w4a16 via Machete, vLLM 0.33.0, sm90"``-style words (without the scheme)."""
        eng = engine_label(self.engine)
        sm = f", sm{self.capability}" if self.capability is not None else ""
        return f"{self.short}, {eng} {self.engine_version}{sm}"


def route(scheme: Scheme, layout: str | None = None) -> str | None:
    """The kind of linear layer an engine sees for ``scheme`` (one of :data:`ROUTES`), or None when
    no route covers it (bitsandbytes, GGUF, MLX ... run outside these kernel lists)."""
    if not scheme.quantizes_weights:
        return "bf16"
    w, a = scheme.weight, scheme.activation
    if w is None or w.scale is None:
        return None
    fmt = get_format(w.format)
    g = w.scale.group
    layout = layout or (scheme.layout.id if scheme.layout is not None else None)
    if scheme.weight_only or a is None:
        if fmt.kind in ("int", "uint"):
            if layout == "awq-gemm":
                return "awq"
            if layout in ("gptq", "gptq-autogptq"):
                return "gptq"
            return "wna16"
        if w.format.startswith("fp8"):
            return "fp8-weight-only"
        if w.format == "fp4_e2m1":
            return "mxfp4-a16" if w.scale.format == "e8m0" else "nvfp4-a16"
        return None
    ag = a.scale.group if a.scale is not None else None
    if ag is None:
        return None
    if w.format.startswith("fp8") and a.format.startswith("fp8"):
        if w.scale.format == "e8m0":
            return "mxfp8"
        if g.is_block:
            return "fp8-block"
        if g.is_per_tensor and ag.is_per_tensor:
            return "fp8-tensor"
        return "fp8-channel"
    if fmt.kind in ("int", "uint") and w.bits == 8 and a.format == "int8":
        return "int8"
    if fmt.kind in ("int", "uint") and w.bits == 4 and a.format.startswith("fp8"):
        return "w4a8-fp8"
    if w.format == "fp4_e2m1" and a.format == "fp4_e2m1":
        return "mxfp4" if w.scale.format == "e8m0" else "nvfp4"
    return None


def _group(scheme: Scheme | None) -> int | None:
    w = scheme.weight if scheme is not None else None
    if w is None or w.scale is None:
        return None
    g = w.scale.group
    return g.col if g.is_per_group else (-1 if g.is_per_row else None)


def _matches(row: KernelRoute, scheme: Scheme | None, capability: int | None, shape: tuple[int, int] | None,
             quantization: str | None, method: str | None = None, architecture: str | None = None) -> bool:
    if row.quantization is not None and row.quantization != quantization:
        return False
    if row.architectures and architecture not in row.architectures:
        return False
    if row.methods and method is not None and method not in row.methods:
        return False
    if capability is not None:
        if row.capabilities and capability not in row.capabilities:
            return False
        if row.min_capability is not None and capability < row.min_capability:
            return False
        if row.max_capability is not None and capability > row.max_capability:
            return False
    w = scheme.weight if scheme is not None else None
    if row.weight_bits and (w is None or w.bits not in row.weight_bits):
        return False
    if row.group_sizes and _group(scheme) not in row.group_sizes:
        return False
    if shape is not None:
        n, k = shape
        if n % row.n_multiple or k % row.k_multiple:
            return False
    return True


def resolve_kernel(table: KernelTable, scheme: Scheme, capability: int | None, *,
                   shape: tuple[int, int] | None = None, quantization: str | None = None,
                   layout: str | None = None, method: str | None = None) -> KernelChoice | None:
    """The kernel ``table``'s engine runs for ``scheme`` on a GPU of ``capability`` (major*10+minor;
    None: the first row regardless of the GPU), for a layer of ``shape`` (N, K) when given, started
    with ``--quantization quantization`` when given (``layout``: the checkpoint's on-disk layout when
    the scheme does not carry it), for a checkpoint the engine resolves to ``method`` (None: the first
    row regardless of the method). None when the table has no row for it."""
    r = route(scheme, layout)
    if r is None:
        return None
    return _walk(table, r, scheme, capability, shape, quantization, method=method)


def resolve_route(table: KernelTable, name: str, capability: int | None, *, moe: bool = False,
                  architecture: str | None = None) -> KernelChoice | None:
    """The kernel of a route without scheme conditions (``"bf16"``: the 16-bit layers; ``moe``: the
    fused-MoE backend of routed experts instead of the Linear kernel, for a model of ``architecture``)."""
    return _walk(table, name, None, capability, None, None, moe=moe, architecture=architecture)


def resolve_moe_kernel(table: KernelTable, scheme: Scheme, capability: int | None, *,
                       layout: str | None = None, architecture: str | None = None) -> KernelChoice | None:
    """The fused-MoE backend ``table``'s engine runs for routed experts quantized as ``scheme``
    (unquantized experts: ``scheme`` bf16) on a GPU of ``capability`` for a model of ``architecture`` (None:
    rows kept for named architectures do not apply); None when the table has no row for it ("MoE kernel
    not on file" — never a Linear kernel)."""
    r = route(scheme, layout)
    if r is None:
        return None
    return _walk(table, r, scheme, capability, None, None, moe=True, architecture=architecture)


def _walk(table: KernelTable, r: str, scheme: Scheme | None, capability: int | None,
          shape: tuple[int, int] | None, quantization: str | None, *, moe: bool = False,
          method: str | None = None, architecture: str | None = None) -> KernelChoice | None:
    for row in (table.moe_routes if moe else table.routes):
        if row.route == r and _matches(row, scheme, capability, shape, quantization, method, architecture):
            info = table.kernel(row.kernel)
            source = row.source
            d = None if moe else next((d for d in table.differences if d.applies(r, info.id, scheme)), None)
            if d is not None:  # this release runs the route's kernel otherwise (its own source says how)
                info = table.kernel(d.runs) if d.runs is not None else info
                if d.activation_quant is not None:
                    info = info.model_copy(update={"activation_quant": d.activation_quant,
                                                   "quant_kernel": d.quant_kernel})
                source = f"{row.source}; in this release: {d.source}"
            other = table.kernel(info.otherwise).name.split(" (")[0] if info.otherwise else None
            return KernelChoice(kernel=info, route=r, engine=table.engine, engine_version=table.version,
                                capability=capability, source=source, moe=moe, otherwise=other)
    return None


class GroupKernel(Strict):
    """``inspect``: the kernel one engine release runs for one config group on the chosen GPU."""

    engine: str
    engine_version: str
    group: str
    scheme: str | None
    kernel: str | None  # None: no row of the release's table covers the group's scheme
    name: str | None
    activation_quant: str | None
    capability: int | None
    source: str | None


def checkpoint_kernels(groups: list[tuple[str, Scheme | None, str | None]]
                       | list[tuple[str, Scheme | None, str | None, tuple[str, ...]]],
                       tables: list[KernelTable], capability: int | None,
                       quantization: str | None = None, method: str | None = None,
                       architecture: str | None = None) -> list[GroupKernel]:
    """For each (group name, its scheme, its on-disk layout[, the layer kinds it covers: "dense",
    "experts"]) and each release's table: the kernel the release runs — the Linear kernel for dense
    layers, the fused-MoE backend for routed experts (a group covering both gets one row per kind,
    named "<group> (experts)" / "<group> (dense)"). A group without kinds is taken as dense.
    ``method``: what the checkpoint resolves to in the release (its linear method's kernel list);
    ``architecture``: the model's (config.json ``architectures[0]``: some releases pick the fused-MoE backend of
    a model family by name)."""
    out: list[GroupKernel] = []
    for table in tables:
        for g in groups:
            name, s, layout = g[0], g[1], g[2]
            kinds = tuple(g[3]) if len(g) > 3 else ("dense",)
            for kind in kinds:
                label = name if len(kinds) == 1 else f"{name} ({kind})"
                if s is None:
                    c = None
                elif kind == "experts":
                    c = resolve_moe_kernel(table, s, capability, layout=layout, architecture=architecture)
                else:
                    c = resolve_kernel(table, s, capability, quantization=quantization, layout=layout,
                                       method=method)
                words = None
                if c is not None:
                    words = c.kernel.name + (f"; needs {c.kernel.requires}, else {c.otherwise}"
                                             if c.kernel.requires and c.otherwise else "")
                elif s is not None and kind == "experts":
                    words = "MoE kernel not on file"
                out.append(GroupKernel(
                    engine=table.engine, engine_version=table.version, group=label, scheme=s.id if s else None,
                    kernel=c.kernel.id if c else None, name=words,
                    activation_quant=c.kernel.activation_quant if c else None, capability=capability,
                    source=c.source if c else None))
    return out
