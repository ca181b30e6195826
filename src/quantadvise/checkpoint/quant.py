"""A checkpoint's quantization, normalized: what every dialect parser returns.

:class:`CheckpointQuant` holds one :class:`QuantGroup` per config group, each with its per-role
arguments in compressed-tensors' vocabulary (:class:`QArgs` — what the engines' dispatch tables
test), the same roles as quantadvise :class:`~quantadvise.scheme.axes.TensorQuant` (the six axes), the
layers it targets, and the layers left unquantized. :func:`make_group` builds a group the same way
for every dialect. Pure: no I/O.
"""

from typing import Any, Literal

from pydantic import Field

from ..results import Out, Result
from ..scheme.axes import GroupShape, ScaleSpec, Scheme, TensorAxes, TensorQuant
from ..scheme.layout import Layout

# The files beside config.json a quantization config is read from, in the engines' order: ModelOpt's
# (vLLM and SGLang read it), then the ones only the producers' own loaders read.
SIDECARS = ("hf_quant_config.json", "quantization_config.json", "quantize_config.json", "quant_config.json")

# Which layers a group takes: those its targets name ("patterns"), or, for a dialect that names none,
# every decoder linear (AWQ, GPTQ, fp8 ...), every linear (bitsandbytes, MLX), the MoE experts (gpt-oss),
# or layers the config does not say (GGUF).
Scope = Literal["patterns", "decoder_linears", "all_linears", "experts", "unknown"]


class QArgs(Out):
    """One role's quantization arguments in compressed-tensors' vocabulary (``QuantizationArgs``)."""

    num_bits: int
    type: Literal["int", "float"]
    strategy: str
    group_size: int | None = None
    block_structure: tuple[int, int] | None = None
    symmetric: bool = True
    dynamic: bool | Literal["local"] = False
    actorder: str | None = None
    scale_dtype: str | None = None  # quantadvise format id of the stored scale
    element: str | None = None  # explicit element format (nf4, fp8_e5m2 ...) when type/bits do not say it
    # a second-level fp32 scale over this many consecutive weights (bitsandbytes double quantization: the
    # 8-bit absmax of 256 blocks of 64 weights share one fp32 scale, 16,384 weights); None: per tensor for
    # tensor_group (NVFP4), else no second level
    scale2_group: int | None = None

    @property
    def element_format(self) -> str:
        if self.element:
            return self.element
        if self.type == "float":
            return {8: "fp8_e4m3", 6: "fp6_e3m2", 4: "fp4_e2m1"}[self.num_bits]
        return f"{'int' if self.symmetric else 'uint'}{self.num_bits}"

    @property
    def group_shape(self) -> GroupShape:
        s = self.strategy
        if s in ("tensor", "attn_head"):
            return GroupShape(row=-1, col=-1)
        if s in ("channel", "token"):
            return GroupShape(row=1, col=-1)
        if s in ("group", "tensor_group"):
            assert self.group_size is not None
            return GroupShape(row=1, col=self.group_size)
        assert self.block_structure is not None
        return GroupShape(row=self.block_structure[0], col=self.block_structure[1])

    def describe(self) -> str:
        if self.strategy == "block" and self.block_structure:
            gran = f"block {self.block_structure[0]}x{self.block_structure[1]}"
        elif self.strategy in ("group", "tensor_group"):
            gran = f"{self.strategy} {self.group_size}"
        else:
            gran = self.strategy
        dyn = {True: "dynamic", False: "static", "local": "dynamic (local)"}[self.dynamic]
        name = self.element or f"{self.type}{self.num_bits}"  # nf4 is not int4
        return f"{name} {gran} {'sym' if self.symmetric else 'asym'} {dyn}"

    def tensor_quant(self, role: str, default_scale: str) -> TensorQuant:
        """The six-axis :class:`TensorQuant` of this role."""
        fmt = self.element_format
        sfmt = self.scale_dtype or _default_scale(self, role, default_scale)
        scale = ScaleSpec(format=sfmt, dynamic=bool(self.dynamic), group=self.group_shape,
                          per_head=self.strategy == "attn_head")
        scale2 = (ScaleSpec(format="fp32", group=GroupShape(row=1, col=self.scale2_group)) if self.scale2_group else
                  ScaleSpec(format="fp32", group=GroupShape(row=-1, col=-1)) if self.strategy == "tensor_group" else None)
        zero = None if self.symmetric else fmt
        if fmt == "nf4":
            return TensorQuant(format=fmt, scale=scale, scale2=scale2, symmetric=True)
        return TensorQuant(format=fmt, scale=scale, scale2=scale2, symmetric=self.symmetric, zero_format=zero)


def _default_scale(a: QArgs, role: str, default_scale: str) -> str:
    if a.type == "float" and a.num_bits == 4 and a.group_size == 16:
        return "fp8_e4m3"  # NVFP4
    if a.type == "float" and a.group_size == 32 and a.strategy == "group":
        return "e8m0"  # OCP MX
    if role != "weight" and a.dynamic:
        return "fp32"
    return default_scale


class QuantGroup(Out):
    """One config group: what it targets and how each role is quantized (the six axes)."""

    name: str
    targets: tuple[str, ...]
    scope: Scope = "patterns"
    format: str | None = None
    layout: str | None = None  # data/schemes.yaml layout id of the on-disk tensors
    weights: QArgs | None = None
    input_activations: QArgs | None = None
    output_activations: QArgs | None = None
    weight: TensorQuant | None = None
    activation: TensorQuant | None = None
    labels: tuple[str, ...] = ()
    preset: str | None = None  # quantadvise scheme preset with the same axes
    ct_preset: str | None = None  # compressed-tensors preset name with the same arguments
    scheme_error: str | None = None  # why these axes are not a valid quantadvise Scheme (engines refuse it too)
    notes: tuple[str, ...] = ()

    @property
    def quantizes_weights(self) -> bool:
        return self.weight is not None and self.weight.is_quantized

    def scheme(self, layout: Layout | None = None) -> Scheme:
        """The group as a :class:`Scheme` for sizing (activations dropped when the pair is invalid)."""
        data: dict[str, Any] = {"id": self.preset or self.name, "weight": self.weight, "layout": layout}
        if self.scheme_error is None:
            data["activation"] = self.activation
        return Scheme.model_validate(data)

    def axes(self) -> "GroupAxes":
        return GroupAxes(weights=self.weight.axes("weight") if self.weight else None,
                         activations=self.activation.axes("activation") if self.activation else None)


class GroupAxes(Out):
    """One config group's weight and activation axes, flat (``inspect`` shows them per group)."""

    weights: TensorAxes | None = None
    activations: TensorAxes | None = None


class CheckpointQuant(Result):
    """A checkpoint's quantization, normalized (``schema_version`` first, as in every result)."""

    quant_method: str  # what the engines read (lowercase, as written)
    family: str
    # False: the config names no quant_method and the family was inferred from its keys (an MLX
    # {group_size, bits}, a ModelOpt export with quant_algo but no quant_method ...): each engine reads
    # such a config its own way (engines/data ConfigReading ``no-quant-method``)
    method_declared: bool = True
    found_in: str  # quantization_config | compression_config | text_config.quantization_config | hf_quant_config.json
    format: str | None = None
    producer: str | None = None
    groups: tuple[QuantGroup, ...] = ()
    ignore: tuple[str, ...] = ()
    ignore_style: Literal["ct", "glob", "substring", "regex"] = "ct"
    quantize_lm_head: bool | None = None
    kv_cache: QArgs | None = None
    kv_cache_quant: TensorQuant | None = None
    kv_cache_algo: str | None = None  # ModelOpt kv_cache_quant_algo (FP8, NVFP4)
    kv_cache_raw: dict[str, Any] | None = None  # the kv_cache_scheme object as written
    sparsity: dict[str, Any] | None = None  # the sparsity_config object as written
    quant_algo: str | None = None
    activation_scheme: str | None = None
    weight_block_size: tuple[int, ...] | None = None
    has_nvfp4_layers: bool | None = None
    tied_lm_head_stored: bool = False  # the producer writes a tied lm_head as a second tensor
    transforms: tuple[str, ...] = ()  # compressed-tensors transform_config schemes (SpinQuant / QuIP rotations)
    details: dict[str, Any] = Field(default_factory=dict)  # the dialect's own fields, as written
    warnings: tuple[str, ...] = ()

    @property
    def engines_read_it(self) -> bool:
        """Whether vLLM/SGLang find this config on their own (a side file other than ModelOpt's
        hf_quant_config.json is read only when --quantization names the method)."""
        return self.found_in not in SIDECARS[1:]

    @property
    def is_quantized(self) -> bool:
        return any(g.quantizes_weights for g in self.groups)

    def summary(self) -> str:
        if self.family == "gguf" and self.details.get("quant_type"):
            return f"{self.quant_method}: {self.details['quant_type']} (per-tensor types in the .gguf files)"
        parts = [g.preset or g.ct_preset or (g.weights.describe() if g.weights else "unknown") for g in self.groups]
        return f"{self.quant_method}: " + (", ".join(dict.fromkeys(parts)) if parts else "no quantized groups")


def _labels(w: QArgs | None, a: QArgs | None) -> tuple[str, ...]:
    """Short scheme labels the engines' per-scheme gates use (W8A8-FP8, WNA16, MXFP4 ...)."""
    if w is None:
        return ()
    out: list[str] = []
    wf, af = w.element_format, a.element_format if a is not None else None
    if wf.startswith("fp4") and w.group_size == 16:
        out += ["NVFP4", "W4A4-NVFP4" if af and af.startswith("fp4") else "W4A16-NVFP4"]
    elif w.type == "float" and w.group_size == 32 and w.strategy == "group":
        mx = {4: "MXFP4", 6: "MXFP6", 8: "MXFP8"}[w.num_bits]
        out += [mx, "OCP-MX"]
        if w.num_bits == 4 and af and af.startswith("fp8"):
            out.append("W4A8-MXFP4-FP8")
    elif wf.startswith("fp8"):
        out += ["FP8", "W8A8-FP8" if af and af.startswith("fp8") else "W8A16-FP8"]
    elif w.type == "int" or wf == "nf4":
        if a is None:
            out += ["WNA16", f"W{w.num_bits}A16-INT{w.num_bits}"]
        elif af and af.startswith("fp8"):
            out.append(f"W{w.num_bits}A8-FP8")
        else:
            out.append(f"W{w.num_bits}A{a.num_bits}-INT{a.num_bits}" if a.num_bits != w.num_bits or w.num_bits != 8
                       else "W8A8-INT8")
    return tuple(out)


def make_group(name: str, targets: tuple[str, ...], weights: QArgs | None, acts: QArgs | None, *,
               scale_format: str, scope: Scope = "patterns", fmt: str | None = None, layout: str | None = None,
               outputs: QArgs | None = None, notes: tuple[str, ...] = (), where: str = "") -> QuantGroup:
    w_tq = weights.tensor_quant("weight", scale_format) if weights is not None else None
    a_tq = acts.tensor_quant("activation", scale_format) if acts is not None else None
    err = None
    if w_tq is not None:
        try:
            Scheme(id=name, weight=w_tq, activation=a_tq)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            from ..scheme.axes import _first_reason

            err = _first_reason(exc)
    return QuantGroup(
        name=name, targets=targets, scope=scope, format=fmt, layout=layout, weights=weights,
        input_activations=acts, output_activations=outputs, weight=w_tq, activation=a_tq,
        labels=_labels(weights, acts), scheme_error=err, notes=notes,
    )
