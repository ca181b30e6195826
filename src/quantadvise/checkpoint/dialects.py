"""Reading a checkpoint's ``quantization_config`` back into the six axes.

Every producer writes its own dialect — compressed-tensors ``config_groups``, AutoAWQ's ``w_bit`` /
``q_group_size``, GPTQ's ``bits`` / ``sym`` / ``desc_act``, the serialized ``fp8`` config, NVIDIA
ModelOpt's ``quant_algo`` (in config.json or ``hf_quant_config.json``), gpt-oss ``mxfp4``,
bitsandbytes, GGUF, Intel AutoRound and AMD Quark. :func:`parse_quantization_config` normalizes each
into :class:`CheckpointQuant`: one :class:`QuantGroup` per config group, each with its per-role
arguments in compressed-tensors' vocabulary (:class:`QArgs` — what the engines' dispatch tables
test), the same roles as quantadvise :class:`~quantadvise.scheme.TensorQuant` (the six axes), the
layers it targets, and the layers left unquantized.

Malformed input raises :class:`~quantadvise.errors.ConfigError` naming the field and the fix —
never another exception. Pure: dicts in, frozen models out.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigError
from ..scheme import GroupShape, ScaleSpec, Scheme, TensorQuant

SCHEMA_VERSION = 1

STRATEGIES = ("tensor", "channel", "group", "block", "token", "tensor_group", "attn_head")
COMPRESSION_FORMATS = (
    "dense", "sparse-bitmask", "sparse-24-bitmask", "int-quantized", "float-quantized", "naive-quantized",
    "pack-quantized", "marlin-24", "mixed-precision", "nvfp4-pack-quantized", "mxfp4-pack-quantized",
    "mxfp6-pack-quantized", "mxfp8-quantized", "fakequant",
)
_ACTORDERS = ("weight", "static", "group", "dynamic")

# quant_method spellings -> family
_FAMILIES = {
    "compressed-tensors": "compressed-tensors",
    "compressed_tensors": "compressed-tensors",
    "sparseml": "compressed-tensors",
    "awq": "awq",
    "gptq": "gptq",
    "fp8": "fp8",
    "modelopt": "modelopt",
    "modelopt_fp8": "modelopt",
    "modelopt_fp4": "modelopt",
    "mxfp4": "mxfp4",
    "bitsandbytes": "bitsandbytes",
    "gguf": "gguf",
    "auto-round": "auto-round",
    "intel/auto-round": "auto-round",
    "auto_round": "auto-round",
    "quark": "quark",
    "mlx": "mlx",
}
METHODS = tuple(sorted(_FAMILIES))


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True, arbitrary_types_allowed=True)


class QArgs(_Out):
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
        return f"{self.type}{self.num_bits} {gran} {'sym' if self.symmetric else 'asym'} {dyn}"

    def tensor_quant(self, role: str, default_scale: str) -> TensorQuant:
        """The six-axis :class:`TensorQuant` of this role."""
        fmt = self.element_format
        sfmt = self.scale_dtype or _default_scale(self, role, default_scale)
        scale = ScaleSpec(format=sfmt, dynamic=bool(self.dynamic), group=self.group_shape,
                          per_head=self.strategy == "attn_head")
        scale2 = ScaleSpec(format="fp32", group=GroupShape(row=-1, col=-1)) if self.strategy == "tensor_group" else None
        zero = None if self.symmetric else fmt
        if fmt == "nf4":
            return TensorQuant(format=fmt, scale=scale, symmetric=True)
        return TensorQuant(format=fmt, scale=scale, scale2=scale2, symmetric=self.symmetric, zero_format=zero)


def _default_scale(a: QArgs, role: str, default_scale: str) -> str:
    if a.type == "float" and a.num_bits == 4 and a.group_size == 16:
        return "fp8_e4m3"  # NVFP4
    if a.type == "float" and a.group_size == 32 and a.strategy == "group":
        return "e8m0"  # OCP MX
    if role != "weight" and a.dynamic:
        return "fp32"
    return default_scale


class QuantGroup(_Out):
    """One config group: what it targets and how each role is quantized (the six axes)."""

    name: str
    targets: tuple[str, ...]
    scope: Literal["patterns", "decoder_linears", "all_linears", "experts", "unknown"] = "patterns"
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

    def scheme(self, layout: Any = None) -> Scheme:
        """The group as a :class:`Scheme` for sizing (activations dropped when the pair is invalid)."""
        data: dict[str, Any] = {"id": self.preset or self.name, "weight": self.weight, "layout": layout}
        if self.scheme_error is None:
            data["activation"] = self.activation
        return Scheme.model_validate(data)

    def axes(self) -> dict[str, Any]:
        return {
            "weights": self.weight.axes("weight") if self.weight else None,
            "activations": self.activation.axes("activation") if self.activation else None,
        }


class CheckpointQuant(_Out):
    """A checkpoint's quantization, normalized."""

    schema_version: int = SCHEMA_VERSION
    quant_method: str  # what the engines read (lowercase, as written)
    family: str
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
    kv_cache_raw: dict[str, Any] | None = None
    sparsity: dict[str, Any] | None = None
    quant_algo: str | None = None
    activation_scheme: str | None = None
    weight_block_size: tuple[int, ...] | None = None
    has_nvfp4_layers: bool | None = None
    tied_lm_head_stored: bool = False  # the producer writes a tied lm_head as a second tensor
    details: dict[str, Any] = Field(default_factory=dict)
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
        parts = [g.preset or g.ct_preset or (g.weights.describe() if g.weights else "unknown") for g in self.groups]
        return f"{self.quant_method}: " + (", ".join(dict.fromkeys(parts)) if parts else "no quantized groups")


# -------------------------------------------------------------------------------------------------
# Typed field access: every failure names the field and says what it should be
# -------------------------------------------------------------------------------------------------

_MISSING = object()


def _fail(where: str, msg: str, hint: str | None = None) -> ConfigError:
    return ConfigError(f"{where}: {msg}", hint=hint, field=where.rsplit(":", 1)[-1].strip())


def _get(d: dict[str, Any], key: str, where: str, kinds: tuple[type, ...] | type, *, default: Any = _MISSING,
         nullable: bool = True) -> Any:
    if key not in d or d[key] is None:
        if default is _MISSING:
            raise _fail(f"{where}.{key}", "required field is missing" if key not in d else "must not be null")
        return default
    v = d[key]
    kinds_t = kinds if isinstance(kinds, tuple) else (kinds,)
    if bool not in kinds_t and isinstance(v, bool) and int in kinds_t:
        raise _fail(f"{where}.{key}", f"must be {_kind_names(kinds_t)}, got {_short(v)}")
    if not isinstance(v, kinds_t):
        raise _fail(f"{where}.{key}", f"must be {_kind_names(kinds_t)}, got {_short(v)}")
    return v


def _kind_names(kinds: tuple[type, ...]) -> str:
    names = {int: "an integer", str: "a string", bool: "true or false", list: "a list", dict: "an object",
             float: "a number"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _str_list(d: dict[str, Any], key: str, where: str, default: Any = ()) -> tuple[str, ...]:
    v = _get(d, key, where, (list, str), default=default)
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    out = []
    for i, item in enumerate(v):
        if not isinstance(item, str):
            raise _fail(f"{where}.{key}[{i}]",
                        f"must be a string (a layer name, re:regex or class name), got {_short(item)}")
        out.append(item)
    return tuple(out)


def _int(d: dict[str, Any], key: str, where: str, *, default: Any = _MISSING, lo: int | None = None,
         hi: int | None = None) -> Any:
    v = _get(d, key, where, int, default=default)
    if v is None:
        return None
    if isinstance(v, int) and ((lo is not None and v < lo) or (hi is not None and v > hi)):
        if lo is not None and hi is not None:
            rng = f"between {lo} and {hi}"
        else:
            rng = f">= {lo}" if lo is not None else f"<= {hi}"
        raise _fail(f"{where}.{key}", f"must be {rng}, got {v}")
    return v


def _group_size(d: dict[str, Any], key: str, where: str, default: Any = _MISSING) -> int | None:
    g = _get(d, key, where, int, default=default)
    if g is None:
        return None
    if g == 0 or g < -1:
        raise _fail(f"{where}.{key}", f"must be -1 (per-channel) or a positive group size, got {g}",
                    hint="group_size 0 is not a granularity; use -1 for one scale per output channel")
    return g


def _req_group(d: dict[str, Any], key: str, where: str, default: Any = _MISSING) -> int:
    g = _group_size(d, key, where, default=default)
    if g is None:
        raise _fail(f"{where}.{key}", "required field is missing")
    return g


_SCALE_DTYPES = {
    "float8_e4m3fn": "fp8_e4m3", "torch.float8_e4m3fn": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "e4m3": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2", "torch.float8_e5m2": "fp8_e5m2",
    "uint8": "e8m0", "torch.uint8": "e8m0", "e8m0": "e8m0", "float8_e8m0fnu": "e8m0", "torch.float8_e8m0fnu": "e8m0",
    "ue8m0": "e8m0",
    "bfloat16": "bf16", "torch.bfloat16": "bf16", "float16": "fp16", "torch.float16": "fp16", "half": "fp16",
    "float32": "fp32", "torch.float32": "fp32", "float": "fp32",
}


def _scale_dtype(v: Any, where: str) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str) or v.strip().lower() not in _SCALE_DTYPES:
        raise _fail(where, f"unknown scale dtype {_short(v)}", hint="expected a torch dtype such as float8_e4m3fn, "
                    "uint8 (e8m0), bfloat16, float16 or float32")
    return _SCALE_DTYPES[v.strip().lower()]


def model_dtype_format(torch_dtype: str | None) -> str:
    """The 16-bit format unquantized tensors are stored in (bf16 unless the config says float16/32)."""
    t = (torch_dtype if isinstance(torch_dtype, str) else "bfloat16").lower().removeprefix("torch.")
    return {"float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}.get(t, "bf16")


# -------------------------------------------------------------------------------------------------
# compressed-tensors QuantizationArgs
# -------------------------------------------------------------------------------------------------


def parse_ct_args(raw: Any, where: str, role: str = "weights") -> QArgs | None:
    """Validate one compressed-tensors ``QuantizationArgs`` dict (the library's own rules)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _fail(where, f"must be an object of quantization arguments, got {_short(raw)}")
    bits = _int(raw, "num_bits", where, default=8, lo=1, hi=64)
    typ = _get(raw, "type", where, str, default="int")
    if typ not in ("int", "float"):
        raise _fail(f"{where}.type", f"unknown type {_short(typ)} (choose int or float)")
    if typ == "float" and bits not in (4, 6, 8):
        raise _fail(f"{where}.num_bits", f"float quantization stores 4, 6 or 8 bits, got {bits}")
    if typ == "int" and not 2 <= bits <= 8:
        raise _fail(f"{where}.num_bits", f"integer quantization stores 2 to 8 bits, got {bits}")
    gsize = _group_size(raw, "group_size", where, default=None)
    strategy = _get(raw, "strategy", where, str, default=None)
    if strategy is None:
        strategy = "tensor" if gsize is None else ("channel" if gsize == -1 else "group")
    strategy = strategy.lower()
    if strategy not in STRATEGIES:
        raise _fail(f"{where}.strategy", f"unknown strategy {_short(strategy)}",
                    hint="choose one of " + ", ".join(STRATEGIES))
    block = raw.get("block_structure")
    block_t: tuple[int, int] | None = None
    if block is not None:
        if isinstance(block, str) and re.fullmatch(r"\d+x\d+", block.strip()):
            r, c = block.strip().split("x")
            block_t = (int(r), int(c))
        elif isinstance(block, list) and len(block) == 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                                 and x > 0 for x in block):
            block_t = (block[0], block[1])
        else:
            raise _fail(f"{where}.block_structure", f"must be [rows, cols] of positive integers, got {_short(block)}")
    if strategy == "block" and block_t is None:
        raise _fail(f"{where}.block_structure", "strategy 'block' needs block_structure [rows, cols]")
    if strategy in ("group", "tensor_group") and (gsize is None or gsize <= 0):
        raise _fail(f"{where}.group_size", f"strategy '{strategy}' needs a positive group_size")
    if strategy == "channel" and gsize not in (None, -1):
        raise _fail(f"{where}.group_size", f"strategy 'channel' takes group_size -1 or none, got {gsize}")
    dyn = raw.get("dynamic", False)
    if dyn is None:
        dyn = False
    if isinstance(dyn, str):
        if dyn.lower() != "local":
            raise _fail(f"{where}.dynamic", f"must be true, false or 'local', got {_short(dyn)}")
        dyn = "local"
    elif not isinstance(dyn, bool):
        raise _fail(f"{where}.dynamic", f"must be true, false or 'local', got {_short(dyn)}")
    if dyn is True and strategy not in ("token", "tensor", "tensor_group", "group"):
        raise _fail(f"{where}.dynamic", f"dynamic scales exist only per token, tensor, tensor_group or group, "
                    f"not '{strategy}'")
    if dyn == "local" and strategy != "tensor_group":
        raise _fail(f"{where}.dynamic", "'local' dynamic scales need strategy 'tensor_group'")
    if strategy == "token" and dyn is False:
        raise _fail(f"{where}.strategy",
                    "strategy 'token' needs dynamic: true (a per-token scale is computed at run time)")
    if role == "weights" and dyn is not False:
        raise _fail(f"{where}.dynamic", "weights are known at load time, so their scales are static (dynamic: false)")
    sym = _get(raw, "symmetric", where, bool, default=True)
    actorder = raw.get("actorder")
    if actorder is True:
        actorder = "group"
    elif actorder is False:
        actorder = None
    if actorder is not None and (not isinstance(actorder, str) or actorder.lower() not in _ACTORDERS):
        raise _fail(f"{where}.actorder", f"unknown activation ordering {_short(actorder)}",
                    hint="choose weight, static, group or dynamic")
    return QArgs(
        num_bits=bits,
        type=typ,
        strategy=strategy,
        group_size=gsize if strategy in ("group", "tensor_group") else None,
        block_structure=block_t,
        symmetric=sym,
        dynamic=dyn,
        actorder=actorder.lower() if isinstance(actorder, str) else None,
        scale_dtype=_scale_dtype(raw.get("scale_dtype"), f"{where}.scale_dtype"),
    )


# -------------------------------------------------------------------------------------------------
# Group construction shared by every dialect
# -------------------------------------------------------------------------------------------------


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
               scale_format: str, scope: str = "patterns", fmt: str | None = None, layout: str | None = None,
               outputs: QArgs | None = None, notes: tuple[str, ...] = (), where: str = "") -> QuantGroup:
    w_tq = weights.tensor_quant("weight", scale_format) if weights is not None else None
    a_tq = acts.tensor_quant("activation", scale_format) if acts is not None else None
    err = None
    if w_tq is not None:
        try:
            Scheme(id=name, weight=w_tq, activation=a_tq)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            from ..scheme import _first_reason

            err = _first_reason(exc)
    return QuantGroup(
        name=name, targets=targets, scope=scope, format=fmt, layout=layout, weights=weights,  # type: ignore[arg-type]
        input_activations=acts, output_activations=outputs, weight=w_tq, activation=a_tq,
        labels=_labels(weights, acts), scheme_error=err, notes=notes,
    )


def _int_args(bits: int, group: int, sym: bool, where: str, scale: str | None = None) -> QArgs:
    if not 2 <= bits <= 8:
        raise _fail(where, f"weight bits must be between 2 and 8, got {bits}")
    return QArgs(num_bits=bits, type="int", strategy="channel" if group == -1 else "group",
                 group_size=None if group == -1 else group, symmetric=sym, scale_dtype=scale)


# -------------------------------------------------------------------------------------------------
# Entry points
# -------------------------------------------------------------------------------------------------


def find_quantization_config(config: Any) -> tuple[dict[str, Any] | None, str]:
    """Where the engines look, in order: ``quantization_config``, ``text_config.quantization_config``,
    then ``compression_config`` (vLLM's weight_utils fallback chain)."""
    if not isinstance(config, dict):
        raise ConfigError(f"config.json: expected a JSON object, got {type(config).__name__}")
    for key, label in (("quantization_config", "quantization_config"),):
        if config.get(key) is not None:
            return config[key], label
    tc = config.get("text_config")
    if isinstance(tc, dict) and tc.get("quantization_config") is not None:
        return tc["quantization_config"], "text_config.quantization_config"
    if config.get("compression_config") is not None:
        return config["compression_config"], "compression_config"
    return None, ""


SIDECARS = ("hf_quant_config.json", "quantization_config.json", "quantize_config.json", "quant_config.json")


def parse_checkpoint(config: Any, sidecars: dict[str, Any] | None = None) -> CheckpointQuant | None:
    """The checkpoint's quantization from its config.json and the side files beside it, or None for
    an unquantized checkpoint.

    Looked up in the engines' order: config.json (``quantization_config``, then
    ``text_config.quantization_config``, then ``compression_config``), then ModelOpt's
    ``hf_quant_config.json`` (vLLM and SGLang read it as the quantization config), then files only
    the producers' own loaders read: ``quantization_config.json`` (compressed-tensors / AutoRound
    exports), ``quantize_config.json`` (AutoGPTQ, some AutoAWQ) and ``quant_config.json`` (early
    AutoAWQ)."""
    sidecars = sidecars or {}
    qc, found = find_quantization_config(config)
    dtype = model_dtype_format(config.get("torch_dtype") or config.get("dtype")) if isinstance(config, dict) else "bf16"
    hf = sidecars.get("hf_quant_config.json")
    if qc is not None:
        return parse_quantization_config(qc, hf_quant_config=hf, found_in=found, model_dtype=dtype)
    if hf is not None:
        return parse_quantization_config(None, hf_quant_config=hf, model_dtype=dtype)
    for name in SIDECARS[1:]:
        raw = sidecars.get(name)
        if raw is None:
            continue
        if not isinstance(raw, dict):
            raise ConfigError(f"{name}: expected a JSON object, got {type(raw).__name__}", field=name)
        raw = dict(raw)
        if "quant_method" not in raw:
            if name == "quant_config.json" or any(k in raw for k in ("w_bit", "q_group_size", "zero_point")):
                raw["quant_method"] = "awq"
            elif "bits" in raw:
                raw["quant_method"] = "gptq"
        ck = parse_quantization_config(raw, found_in=name, model_dtype=dtype)
        if ck.family == "gptq" and name == "quantize_config.json":
            # AutoGPTQ's save_quantized: every QuantLinear carries an fp16 bias buffer, and a tied
            # lm_head is written as its own tensor.
            groups = tuple(g.model_copy(update={"layout": "gptq-autogptq" if g.layout == "gptq" else g.layout})
                           for g in ck.groups)
            ck = ck.model_copy(update={"groups": groups, "tied_lm_head_stored": True,
                                       "producer": "AutoGPTQ" if ck.producer == "AutoGPTQ / GPTQModel"
                                       else ck.producer})
        return ck
    return None


def parse_quantization_config(qc: Any, *, hf_quant_config: Any = None, found_in: str = "quantization_config",
                              model_dtype: str = "bf16") -> CheckpointQuant:
    """Normalize one ``quantization_config`` dict (or ModelOpt's hf_quant_config.json)."""
    where = found_in
    if qc is None:
        if not isinstance(hf_quant_config, dict):
            raise ConfigError("hf_quant_config.json: expected a JSON object", field="hf_quant_config")
        return _parse_modelopt({}, hf_quant_config, "hf_quant_config.json", model_dtype)
    if not isinstance(qc, dict):
        raise ConfigError(f"{where}: expected a JSON object, got {type(qc).__name__} {_short(qc)}",
                          hint="quantization_config is an object with a quant_method key", field=where)
    method = qc.get("quant_method")
    if method is None:
        if qc.get("load_in_4bit") or qc.get("load_in_8bit") or qc.get("_load_in_4bit") or qc.get("_load_in_8bit"):
            method = "bitsandbytes"
        elif "config_groups" in qc:
            method = "compressed-tensors"
        elif "global_quant_config" in qc:
            method = "quark"
        elif "bits" in qc and "group_size" in qc and set(qc) <= {"bits", "group_size", "mode"}:
            method = "mlx"  # mlx-lm writes a bare {group_size, bits} (SGLang's mlx override reads it)
        else:
            raise _fail(f"{where}.quant_method", "required field is missing",
                        hint="the engines pick the loader by quant_method (awq, gptq, fp8, compressed-tensors, "
                        "modelopt, mxfp4, bitsandbytes, gguf, auto-round, quark)")
    if not isinstance(method, str) or not method.strip():
        raise _fail(f"{where}.quant_method", f"must be a non-empty string, got {_short(method)}")
    key = method.strip().lower()
    family = _FAMILIES.get(key)
    if family is None and key.startswith("modelopt"):
        family = "modelopt"
    if family is None:
        # Not a dialect quantadvise reads (exl2, hqq, ...): keep it, so each engine can say whether
        # it knows the name; nothing is sized.
        return CheckpointQuant(
            quant_method=key, family="unknown", found_in=where,
            details={k: v for k, v in qc.items() if isinstance(v, (str, int, float, bool)) and k != "quant_method"},
            warnings=(f"quant_method '{method}' is not a format quantadvise reads (it reads "
                      + ", ".join(sorted(set(_FAMILIES.values()))) + "); its layers are not sized",),
        )
    parser = _PARSERS[family]
    return parser(qc, hf_quant_config, where, model_dtype, key)  # type: ignore[operator]


# -------------------------------------------------------------------------------------------------
# Dialects
# -------------------------------------------------------------------------------------------------


def _parse_ct(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    fmt = _get(qc, "format", where, str, default=None)
    warnings: list[str] = []
    if fmt is not None and fmt not in COMPRESSION_FORMATS:
        warnings.append(f"{where}.format '{fmt}' is not a compressed-tensors 0.20.1 CompressionFormat")
    groups_raw = _get(qc, "config_groups", where, dict, default={})
    groups: list[QuantGroup] = []
    for gname, g in groups_raw.items():
        gw = f"{where}.config_groups.{gname}"
        if not isinstance(g, dict):
            raise _fail(gw, f"must be an object with targets and weights, got {_short(g)}")
        targets = _str_list(g, "targets", gw, default=_MISSING)
        if not targets:
            raise _fail(f"{gw}.targets", "must list at least one target (a layer name, re:regex or class name)")
        gfmt = _get(g, "format", gw, str, default=None) or fmt
        weights = parse_ct_args(g.get("weights"), f"{gw}.weights", "weights")
        acts = parse_ct_args(g.get("input_activations"), f"{gw}.input_activations", "activations")
        outs = parse_ct_args(g.get("output_activations"), f"{gw}.output_activations", "activations")
        if weights is None and acts is None and outs is None:
            warnings.append(f"config group '{gname}' quantizes nothing (no weights or activations)")
        layout = None
        if weights is not None and weights.type == "int" and gfmt == "pack-quantized":
            layout = "ct-pack-quantized"
        groups.append(make_group(gname, targets, weights, acts, outputs=outs, scale_format=dtype, fmt=gfmt,
                                 layout=layout, where=gw))
    ignore = _str_list(qc, "ignore", where, default=())
    kv_raw = qc.get("kv_cache_scheme")
    kv_args = None
    kv_tq = None
    if kv_raw is not None:
        if not isinstance(kv_raw, dict):
            raise _fail(f"{where}.kv_cache_scheme",
                        f"must be an object of quantization arguments, got {_short(kv_raw)}")
        kv_args = _parse_kv_args(kv_raw, f"{where}.kv_cache_scheme")
        kv_tq = _kv_tensor_quant(kv_args)
    sparsity = qc.get("sparsity_config")
    if sparsity is not None and not isinstance(sparsity, dict):
        raise _fail(f"{where}.sparsity_config", f"must be an object, got {_short(sparsity)}")
    producer = None
    if isinstance(qc.get("version"), str):
        producer = f"compressed-tensors {qc['version']}"
    details = {k: qc[k] for k in ("quantization_status", "global_compression_ratio", "version") if k in qc}
    if qc.get("transform_config"):
        details["transform_config"] = True
    return CheckpointQuant(
        quant_method=key, family="compressed-tensors", found_in=where, format=fmt, producer=producer,
        groups=tuple(groups), ignore=ignore, ignore_style="ct", kv_cache=kv_args, kv_cache_quant=kv_tq,
        kv_cache_raw=kv_raw, sparsity=sparsity or None, details=details, warnings=tuple(warnings),
    )


def _parse_kv_args(raw: dict[str, Any], where: str) -> QArgs:
    """A kv_cache_scheme is read leniently (each engine decides whether it can use it, and says so),
    but its fields must still have the right types."""
    bits = _int(raw, "num_bits", where, default=8, lo=1, hi=64)
    typ = _get(raw, "type", where, str, default="int")
    strategy = _get(raw, "strategy", where, str, default="tensor")
    sym = _get(raw, "symmetric", where, bool, default=True)
    dyn = raw.get("dynamic", False)
    if typ not in ("int", "float"):
        raise _fail(f"{where}.type", f"unknown type {_short(typ)} (choose int or float)")
    if strategy not in STRATEGIES:
        raise _fail(f"{where}.strategy", f"unknown strategy {_short(strategy)}",
                    hint="choose one of " + ", ".join(STRATEGIES))
    if dyn is None:
        dyn = False
    if not isinstance(dyn, (bool, str)):
        raise _fail(f"{where}.dynamic", f"must be true, false or 'local', got {_short(dyn)}")
    gsize = _group_size(raw, "group_size", where, default=None)
    return QArgs(num_bits=bits, type=typ, strategy=strategy, group_size=gsize if gsize and gsize > 0 else None,
                 symmetric=sym, dynamic="local" if dyn == "local" else bool(dyn))


def _kv_tensor_quant(a: QArgs) -> TensorQuant | None:
    """The KV cache's six axes when they are a storable format (None for e.g. a 16-bit 'scheme')."""
    ok = (a.type == "float" and a.num_bits in (4, 6, 8)) or (a.type == "int" and 2 <= a.num_bits <= 8)
    if not ok or (a.strategy in ("group", "tensor_group") and a.group_size is None) or a.strategy == "block":
        return None
    return a.tensor_quant("kv_cache", "fp32")


def _parse_awq(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    bkey = "w_bit" if qc.get("w_bit") is not None or "bits" not in qc else "bits"
    gkey = "q_group_size" if qc.get("q_group_size") is not None or "group_size" not in qc else "group_size"
    bits = _int(qc, bkey, where)
    group = _req_group(qc, gkey, where)
    zero = _get(qc, "zero_point", where, bool, default=True)
    version = _get(qc, "version", where, str, default="gemm")
    wfield = f"{where}.{'w_bit' if 'w_bit' in qc else 'bits'}"
    weights = _int_args(bits, group, not zero, wfield, scale="fp16")
    skip = _str_list(qc, "modules_to_not_convert", where, default=())
    layout = "awq-gemm" if version.lower() in ("gemm", "gemv_fast", "gemv", "exllama", "ipex") else None
    g = make_group("awq", ("Linear",), weights, None, scale_format="fp16", scope="decoder_linears",
                   fmt=f"awq-{version.lower()}", layout=layout, where=where)
    notes = []
    if version.lower() != "gemm":
        notes.append(f"AWQ version '{version}': sized with the GEMM packing (same bytes, different tensor order)")
    return CheckpointQuant(
        quant_method=key, family="awq", found_in=where, format=f"awq-{version.lower()}", producer="AutoAWQ",
        groups=(g,), ignore=skip, ignore_style="substring", quantize_lm_head=False,
        details={"w_bit": bits, "q_group_size": group, "zero_point": zero, "version": version},
        warnings=tuple(notes),
    )


def _parse_gptq(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    bits = _int(qc, "bits", where)
    group = _req_group(qc, "group_size", where)
    sym = _get(qc, "sym", where, bool, default=True)
    desc_act = _get(qc, "desc_act", where, bool, default=False)
    lm_head = _get(qc, "lm_head", where, bool, default=False)
    ckpt_fmt = _get(qc, "checkpoint_format", where, str, default=None) or (
        "marlin" if _get(qc, "is_marlin_format", where, bool, default=False) else "gptq")
    weights = _int_args(bits, group, sym, f"{where}.bits", scale="fp16")
    if ckpt_fmt not in ("gptq", "gptq_v2", "marlin"):
        raise _fail(f"{where}.checkpoint_format", f"unknown GPTQ checkpoint_format {_short(ckpt_fmt)}",
                    hint="choose gptq, gptq_v2 or marlin")
    dynamic = _get(qc, "dynamic", where, dict, default={})
    ignore: list[str] = []
    groups = [make_group("gptq", ("Linear",), weights, None, scale_format="fp16", scope="decoder_linears",
                         fmt=ckpt_fmt, layout="gptq" if ckpt_fmt != "marlin" else None, where=where)]
    for pattern, override in dynamic.items():
        if not isinstance(pattern, str):
            raise _fail(f"{where}.dynamic", "keys must be module regexes (prefix '-:' excludes, '+:' overrides)")
        if pattern.startswith("-:"):
            ignore.append("re:" + pattern[2:])
            continue
        if not isinstance(override, dict):
            raise _fail(f"{where}.dynamic.{pattern}", f"must be an object of overrides, got {_short(override)}")
        dw = f"{where}.dynamic.{pattern}"
        ob = _int(override, "bits", dw, default=bits)
        og = _group_size(override, "group_size", dw, default=group)
        osym = _get(override, "sym", dw, bool, default=sym)
        patt = "re:" + pattern.removeprefix("+:")
        groups.insert(0, make_group(f"dynamic {pattern.removeprefix('+:')}", (patt,),
                                    _int_args(ob, og if og is not None else group, osym, f"{dw}.bits", scale="fp16"),
                                    None, scale_format="fp16", scope="patterns", fmt=ckpt_fmt,
                                    layout="gptq" if ckpt_fmt != "marlin" else None, where=dw))
    blocks = qc.get("modules_in_block_to_quantize")
    details: dict[str, Any] = {"bits": bits, "group_size": group, "sym": sym, "desc_act": desc_act,
                               "checkpoint_format": ckpt_fmt, "lm_head": lm_head}
    if blocks is not None:
        details["modules_in_block_to_quantize"] = blocks
    meta = qc.get("meta")
    producer = None
    if isinstance(meta, dict) and isinstance(meta.get("quantizer"), list) and meta["quantizer"]:
        producer = ", ".join(str(q) for q in meta["quantizer"])
    elif isinstance(meta, dict) and isinstance(meta.get("quantizer"), str):
        producer = meta["quantizer"]
    warnings = []
    if ckpt_fmt == "marlin":
        warnings.append("GPTQ checkpoint_format 'marlin': tensors are pre-repacked for Marlin; sized without "
                        "qzeros/g_idx")
    return CheckpointQuant(
        quant_method=key, family="gptq", found_in=where, format=ckpt_fmt, producer=producer or "AutoGPTQ / GPTQModel",
        groups=tuple(groups), ignore=tuple(ignore), ignore_style="regex", quantize_lm_head=lm_head,
        details=details, warnings=tuple(warnings),
    )


def _parse_fp8(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    scheme = _get(qc, "activation_scheme", where, str, default="dynamic")
    if scheme not in ("static", "dynamic"):
        raise _fail(f"{where}.activation_scheme", f"must be 'static' or 'dynamic', got {_short(scheme)}")
    fmt = _get(qc, "fmt", where, str, default="e4m3")
    if fmt not in ("e4m3", "e5m2"):
        raise _fail(f"{where}.fmt", f"must be 'e4m3' or 'e5m2', got {_short(fmt)}")
    block = _get(qc, "weight_block_size", where, list, default=None)
    block_t: tuple[int, ...] | None = None
    if block is not None:
        if not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block):
            raise _fail(f"{where}.weight_block_size", f"must be positive integers [rows, cols], got {_short(block)}")
        if len(block) != 2:
            raise _fail(f"{where}.weight_block_size",
                        f"must have 2 dimensions [rows, cols], got {len(block)}",
                        hint="the engines refuse it too: "
                        "'The quantization block size of weight must have 2 dimensions'")
        block_t = tuple(block)
    elem = "fp8_e4m3" if fmt == "e4m3" else "fp8_e5m2"
    if block_t is not None:
        w = QArgs(num_bits=8, type="float", strategy="block", block_structure=(block_t[0], block_t[1]),
                  scale_dtype="fp32", element=elem)
        a = QArgs(num_bits=8, type="float", strategy="group", group_size=block_t[1], dynamic=scheme == "dynamic",
                  scale_dtype="fp32", element=elem)
    else:
        w = QArgs(num_bits=8, type="float", strategy="tensor", scale_dtype="fp32", element=elem)
        a = (QArgs(num_bits=8, type="float", strategy="token", dynamic=True, scale_dtype="fp32", element=elem)
             if scheme == "dynamic" else
             QArgs(num_bits=8, type="float", strategy="tensor", scale_dtype="fp32", element=elem))
    ignore = _str_list(qc, "ignored_layers", where, default=()) + _str_list(qc, "modules_to_not_convert", where,
                                                                           default=())
    g = make_group("fp8", ("Linear",), w, a, scale_format="fp32", scope="decoder_linears", fmt="fp8", where=where)
    details = {"activation_scheme": scheme, "fmt": fmt, "weight_block_size": list(block_t) if block_t else None}
    kv_raw = qc.get("kv_cache_scheme")
    kv_args = kv_tq = None
    if isinstance(kv_raw, dict):
        kv_args = _parse_kv_args(kv_raw, f"{where}.kv_cache_scheme")
        kv_tq = _kv_tensor_quant(kv_args)
    elif kv_raw == "static":  # AMD Quark's fp8 export: per-tensor fp8 k_scale / v_scale in the checkpoint
        kv_args = QArgs(num_bits=8, type="float", strategy="tensor")
        kv_tq = _kv_tensor_quant(kv_args)
    elif kv_raw is not None:
        raise _fail(f"{where}.kv_cache_scheme", f"must be an object or 'static', got {_short(kv_raw)}")
    if "scale_fmt" in qc:
        details["scale_fmt"] = qc["scale_fmt"]
    return CheckpointQuant(
        quant_method=key, family="fp8", found_in=where, format="fp8", groups=(g,), ignore=ignore,
        ignore_style="glob", activation_scheme=scheme, weight_block_size=block_t, details=details,
        kv_cache=kv_args, kv_cache_quant=kv_tq, kv_cache_raw=kv_raw if isinstance(kv_raw, dict) else None,
    )


_MODELOPT_ALGOS = {
    "FP8": "fp8", "FP8_PER_CHANNEL_PER_TOKEN": "fp8-channel", "FP8_PB_WO": "fp8-block-wo",
    "FP8_BLOCK_SCALES": "fp8-block",
    "NVFP4": "nvfp4", "NVFP4_AWQ": "nvfp4", "W4A16_NVFP4": "nvfp4-a16", "NVFP4_W4A16": "nvfp4-a16",
    "MXFP8": "mxfp8", "W4A8_AWQ": "w4a8-awq", "INT4_AWQ": "int4-awq", "W4A16_AWQ": "int4-awq",
    "INT8_SQ": "int8-sq", "W8A8_SQ": "int8-sq", "W4A8_NVFP4_FP8": "nvfp4-fp8", "MIXED_PRECISION": "mixed",
}


def _modelopt_args(algo: str, group: int | None, where: str) -> tuple[QArgs | None, QArgs | None, str | None]:
    kind = _MODELOPT_ALGOS.get(algo.upper())
    if kind is None:
        return None, None, None
    g16 = group or 16
    nv_w = QArgs(num_bits=4, type="float", strategy="tensor_group", group_size=g16, scale_dtype="fp8_e4m3")
    if kind == "fp8":
        return (QArgs(num_bits=8, type="float", strategy="tensor", scale_dtype="fp32"),
                QArgs(num_bits=8, type="float", strategy="tensor", scale_dtype="fp32"), None)
    if kind == "fp8-channel":
        return (QArgs(num_bits=8, type="float", strategy="channel", scale_dtype="fp32"),
                QArgs(num_bits=8, type="float", strategy="token", dynamic=True, scale_dtype="fp32"), None)
    if kind in ("fp8-block-wo", "fp8-block"):
        w = QArgs(num_bits=8, type="float", strategy="block", block_structure=(128, 128), scale_dtype="fp32")
        a = None if kind == "fp8-block-wo" else QArgs(num_bits=8, type="float", strategy="group", group_size=128,
                                                       dynamic=True, scale_dtype="fp32")
        return w, a, None
    if kind == "nvfp4":
        return nv_w, QArgs(num_bits=4, type="float", strategy="tensor_group", group_size=g16, dynamic="local",
                           scale_dtype="fp8_e4m3"), None
    if kind == "nvfp4-a16":
        return nv_w, None, None
    if kind == "nvfp4-fp8":
        return nv_w, QArgs(num_bits=8, type="float", strategy="tensor", scale_dtype="fp32"), None
    if kind == "mxfp8":
        return (QArgs(num_bits=8, type="float", strategy="group", group_size=32, scale_dtype="e8m0"),
                QArgs(num_bits=8, type="float", strategy="group", group_size=32, dynamic=True, scale_dtype="e8m0"),
                None)
    if kind in ("int4-awq", "w4a8-awq"):
        w = QArgs(num_bits=4, type="int", strategy="group", group_size=group or 128, scale_dtype="fp16")
        a = QArgs(num_bits=8, type="float", strategy="tensor", scale_dtype="fp32") if kind == "w4a8-awq" else None
        return w, a, None
    if kind == "int8-sq":
        return (QArgs(num_bits=8, type="int", strategy="channel", scale_dtype="fp32"),
                QArgs(num_bits=8, type="int", strategy="tensor", scale_dtype="fp32"), None)
    return None, None, "mixed"


def _parse_modelopt(qc: dict[str, Any], hf: Any, where: str, dtype: str, key: str = "modelopt") -> CheckpointQuant:
    body = dict(qc)
    found = where
    producer = None
    if isinstance(hf, dict):
        q = hf.get("quantization")
        if q is not None and not isinstance(q, dict):
            raise _fail("hf_quant_config.json.quantization", f"must be an object, got {_short(q)}")
        if isinstance(q, dict):
            merged = dict(q)
            merged.update({k: v for k, v in body.items() if v is not None})
            body = merged
            if not qc:
                found = "hf_quant_config.json"
        prod = hf.get("producer")
        if isinstance(prod, dict):
            producer = f"{prod.get('name', 'modelopt')} {prod.get('version', '')}".strip()
    if "config_groups" in body and isinstance(body.get("config_groups"), dict) and body["config_groups"]:
        ct = _parse_ct({**body, "quant_method": "compressed-tensors"}, None, found, dtype, "compressed-tensors")
        algo = body.get("quant_algo") if isinstance(body.get("quant_algo"), str) else None
        kv_algo = body.get("kv_cache_quant_algo") if isinstance(body.get("kv_cache_quant_algo"), str) else None
        ignore = ct.ignore + _str_list(body, "exclude_modules", found, default=())
        return ct.model_copy(update={"quant_method": key, "family": "modelopt", "quant_algo": algo,
                                     "kv_cache_algo": kv_algo, "producer": producer or ct.producer,
                                     "ignore": ignore, "ignore_style": "glob"})
    algo = _get(body, "quant_algo", found, str, default=_MISSING)
    group = _group_size(body, "group_size", found, default=None)
    kv_algo = _get(body, "kv_cache_quant_algo", found, str, default=None)
    exclude = _str_list(body, "exclude_modules", found, default=()) + _str_list(body, "ignore", found, default=())
    warnings: list[str] = []
    groups: list[QuantGroup] = []
    has_nvfp4 = None
    w, a, kind = _modelopt_args(algo, group, found)
    if kind == "mixed":
        layers = _get(body, "quantized_layers", found, dict, default={})
        if not layers:
            raise _fail(f"{found}.quantized_layers", "MIXED_PRECISION needs a non-empty quantized_layers map")
        by_algo: dict[tuple[str, int | None], list[str]] = {}
        for lname, spec in layers.items():
            if not isinstance(spec, dict):
                raise _fail(f"{found}.quantized_layers.{lname}",
                            f"must be an object with quant_algo, got {_short(spec)}")
            la = _get(spec, "quant_algo", f"{found}.quantized_layers.{lname}", str)
            lg = _group_size(spec, "group_size", f"{found}.quantized_layers.{lname}", default=None)
            by_algo.setdefault((la.upper(), lg), []).append(lname)
        has_nvfp4 = any("FP4" in a_ for a_, _ in by_algo)
        for (la, lg), names in by_algo.items():
            lw, lact, lk = _modelopt_args(la, lg, found)
            if lw is None:
                warnings.append(f"ModelOpt layer algorithm '{la}' is not one quantadvise knows; those layers are "
                                "not sized")
                continue
            groups.append(make_group(la.lower(), tuple(names), lw, lact, scale_format="fp32", scope="patterns",
                                     fmt=f"modelopt-{la.lower()}", where=found))
    elif w is None:
        warnings.append(f"ModelOpt quant_algo '{algo}' is not one quantadvise knows; the layers are not sized")
        groups.append(QuantGroup(name=algo.lower(), targets=("Linear",), scope="unknown", format="modelopt"))
    else:
        groups.append(make_group(algo.lower(), ("Linear",), w, a, scale_format="fp32", scope="decoder_linears",
                                 fmt=f"modelopt-{algo.lower()}", where=found))
        has_nvfp4 = "FP4" in algo.upper()
    kv_tq = None
    if kv_algo:
        ka = kv_algo.upper()
        if ka in ("FP8",):
            kv_tq = TensorQuant(format="fp8_e4m3", scale=ScaleSpec(format="fp32"))
        elif "FP4" in ka:
            kv_tq = TensorQuant(format="fp4_e2m1", scale=ScaleSpec(format="fp8_e4m3", dynamic=True,
                                                                    group=GroupShape(row=1, col=16)),
                                scale2=ScaleSpec(format="fp32"))
    return CheckpointQuant(
        quant_method=key if key.startswith("modelopt") else "modelopt", family="modelopt", found_in=found,
        format="modelopt", producer=producer or "NVIDIA ModelOpt", groups=tuple(groups), ignore=exclude,
        ignore_style="glob", kv_cache_quant=kv_tq, kv_cache_algo=kv_algo, quant_algo=algo,
        has_nvfp4_layers=has_nvfp4, details={"quant_algo": algo, "kv_cache_quant_algo": kv_algo, "group_size": group},
        warnings=tuple(warnings),
    )


def _parse_mxfp4(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    skip = _str_list(qc, "modules_to_not_convert", where, default=())
    w = QArgs(num_bits=4, type="float", strategy="group", group_size=32, scale_dtype="e8m0")
    g = make_group("mxfp4", ("experts",), w, None, scale_format="e8m0", scope="experts", fmt="mxfp4", where=where,
                   notes=("MoE experts only: attention, router, embedding and lm_head stay 16-bit",))
    return CheckpointQuant(quant_method=key, family="mxfp4", found_in=where, format="mxfp4", groups=(g,),
                           ignore=skip, ignore_style="glob", details={"modules_to_not_convert": list(skip)})


def _bnb_flag(qc: dict[str, Any], name: str, where: str) -> bool:
    for k in (name, f"_{name}"):
        if k in qc and qc[k] is not None:
            if not isinstance(qc[k], bool):
                raise _fail(f"{where}.{k}", f"must be true or false, got {_short(qc[k])}")
            if qc[k]:
                return True
    return False


def _parse_bnb(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    four = _bnb_flag(qc, "load_in_4bit", where)
    eight = _bnb_flag(qc, "load_in_8bit", where)
    if four == eight:
        raise _fail(f"{where}.load_in_4bit", "exactly one of load_in_4bit and load_in_8bit must be true")
    skip = _str_list(qc, "llm_int8_skip_modules", where, default=())
    details: dict[str, Any] = {}
    if four:
        qtype = _get(qc, "bnb_4bit_quant_type", where, str, default="fp4")
        if qtype not in ("nf4", "fp4"):
            raise _fail(f"{where}.bnb_4bit_quant_type", f"must be 'nf4' or 'fp4', got {_short(qtype)}")
        dq = _get(qc, "bnb_4bit_use_double_quant", where, bool, default=False)
        w = QArgs(num_bits=4, type="float" if qtype == "fp4" else "int", strategy="group", group_size=64,
                  scale_dtype="uint8" if dq else "fp32", element="nf4" if qtype == "nf4" else "fp4_e2m1")
        layout = "bnb-4bit-dq" if dq else "bnb-4bit"
        name = f"bnb-{qtype}" + ("-dq" if dq else "")
        details = {"bnb_4bit_quant_type": qtype, "bnb_4bit_use_double_quant": dq,
                   "bnb_4bit_compute_dtype": qc.get("bnb_4bit_compute_dtype"),
                   "bnb_4bit_quant_storage": qc.get("bnb_4bit_quant_storage")}
    else:
        w = QArgs(num_bits=8, type="int", strategy="channel", scale_dtype="fp32")
        layout = None
        name = "bnb-int8"
        details = {"llm_int8_threshold": qc.get("llm_int8_threshold")}
    g = make_group(name, ("Linear",), w, None, scale_format="fp32", scope="all_linears", fmt=name, layout=layout,
                   where=where)
    return CheckpointQuant(quant_method=key, family="bitsandbytes", found_in=where, format=name,
                           producer="bitsandbytes (transformers)", groups=(g,), ignore=skip,
                           ignore_style="substring", quantize_lm_head=False, details=details)


def _parse_gguf(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    qtype = qc.get("quant_type") or qc.get("gguf_type") or qc.get("file_type") or (
        qc.get("bits") if isinstance(qc.get("bits"), str) else None)
    details = {k: v for k, v in qc.items() if k != "quant_method"}
    g = QuantGroup(name="gguf", targets=("all tensors",), scope="unknown", format="gguf",
                   notes=("GGUF stores a type per tensor (Q4_K, Q6_K, ...) inside the .gguf file, not in "
                          "quantization_config",))
    return CheckpointQuant(quant_method=key, family="gguf", found_in=where, format="gguf", groups=(g,),
                           producer="llama.cpp GGUF" + (f" {qtype}" if isinstance(qtype, str) else ""),
                           details=details,
                           warnings=("GGUF per-tensor quantization types live in the .gguf file; the size on disk is "
                                     "not predicted from config.json",))


def _parse_autoround(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    bits = _int(qc, "bits", where, default=4)
    group = _req_group(qc, "group_size", where, default=128)
    sym = _get(qc, "sym", where, bool, default=True)
    data_type = str(_get(qc, "data_type", where, str, default="int")).lower()
    packing = _get(qc, "packing_format", where, str, default=None) or _get(qc, "backend", where, str, default=None) \
        or "auto_round:auto_gptq"
    act_bits = _int(qc, "act_bits", where, default=16)
    if data_type in ("int", "int_sym", "int_asym"):
        w = _int_args(bits, group, sym, f"{where}.bits", scale="fp16")
    elif data_type in ("mx_fp", "mx_fp4", "mxfp4", "mx_fp8", "mxfp8"):
        w = QArgs(num_bits=bits, type="float", strategy="group", group_size=32, scale_dtype="e8m0")
    elif data_type in ("nv_fp", "nv_fp4", "nvfp4"):
        w = QArgs(num_bits=4, type="float", strategy="tensor_group", group_size=16, scale_dtype="fp8_e4m3")
    elif data_type in ("fp", "fp8", "fp8_e4m3"):
        w = QArgs(num_bits=8, type="float", strategy="channel" if group == -1 else "tensor", scale_dtype="fp32")
    else:
        raise _fail(f"{where}.data_type", f"unknown AutoRound data_type {_short(data_type)}",
                    hint="expected int, mx_fp, nv_fp or fp")
    a = None
    if act_bits < 16:
        adt = str(qc.get("act_data_type") or data_type).lower()
        if "fp" in adt and act_bits in (4, 8):
            a = QArgs(num_bits=act_bits, type="float", strategy="group" if act_bits == 4 else "token",
                      group_size=w.group_size if act_bits == 4 else None, dynamic=True,
                      scale_dtype="e8m0" if "mx" in adt else None)
        elif 2 <= act_bits <= 8:
            a = QArgs(num_bits=act_bits, type="int", strategy="token", dynamic=True)
    layout = None
    if w.type == "int":
        pk = packing.lower()
        layout = "awq-gemm" if "awq" in pk else "gptq"
    groups = [make_group("auto-round", ("Linear",), w, a, scale_format="fp16", scope="decoder_linears",
                         fmt=packing, layout=layout, where=where)]
    ignore: list[str] = []
    extra = _get(qc, "extra_config", where, dict, default={})
    for lname, spec in extra.items():
        if not isinstance(spec, dict):
            raise _fail(f"{where}.extra_config.{lname}", f"must be an object, got {_short(spec)}")
        eb = _int(spec, "bits", f"{where}.extra_config.{lname}", default=bits)
        if eb >= 16:
            ignore.append(lname)
        elif eb != bits or "group_size" in spec or "sym" in spec:
            eg = _group_size(spec, "group_size", f"{where}.extra_config.{lname}", default=group)
            es = _get(spec, "sym", f"{where}.extra_config.{lname}", bool, default=sym)
            groups.insert(0, make_group(lname, (lname,), _int_args(eb, eg if eg is not None else group, es,
                                                                  f"{where}.extra_config.{lname}.bits", scale="fp16"),
                                        None, scale_format="fp16", fmt=packing, layout=layout, where=where))
    skip = _str_list(qc, "modules_to_not_convert", where, default=())
    return CheckpointQuant(
        quant_method=key, family="auto-round", found_in=where, format=packing,
        producer="Intel AutoRound" + (f" {qc['autoround_version']}" if isinstance(qc.get("autoround_version"), str)
                                      else ""),
        groups=tuple(groups), ignore=tuple(ignore) + skip, ignore_style="substring",
        quantize_lm_head=bool(qc.get("quant_lm_head", False)),
        details={"bits": bits, "group_size": group, "sym": sym, "data_type": data_type, "packing_format": packing,
                 "act_bits": act_bits},
    )


_QUARK_DTYPES = {
    "fp8_e4m3": ("float", 8, "fp8_e4m3"), "fp8_e5m2": ("float", 8, "fp8_e5m2"), "int8": ("int", 8, None),
    "uint8": ("int", 8, None), "int4": ("int", 4, None), "uint4": ("int", 4, None), "fp4": ("float", 4, None),
    "fp6_e3m2": ("float", 6, "fp6_e3m2"), "fp6_e2m3": ("float", 6, "fp6_e2m3"), "mx": ("float", 4, None),
}


def _quark_args(raw: Any, where: str, role: str) -> QArgs | None:
    if raw is None:
        return None
    if isinstance(raw, list):
        if not raw:
            return None
        raw = raw[0]  # a list of specs applies them in sequence; the first decides the stored format
    if not isinstance(raw, dict):
        raise _fail(where, f"must be an object with dtype and qscheme, got {_short(raw)}")
    dt = _get(raw, "dtype", where, str).lower()
    if dt not in _QUARK_DTYPES:
        raise _fail(f"{where}.dtype", f"unknown Quark dtype {_short(dt)}", hint="expected one of " +
                    ", ".join(_QUARK_DTYPES))
    typ, bits, elem = _QUARK_DTYPES[dt]
    if dt == "mx":
        mx = str(raw.get("mx_element_dtype", "fp4")).lower()
        typ, bits, elem = _QUARK_DTYPES.get(mx, ("float", 4, None))
    qscheme = _get(raw, "qscheme", where, str, default="per_tensor").lower()
    gsize = _group_size(raw, "group_size", where, default=None)
    dyn = _get(raw, "is_dynamic", where, bool, default=False)
    sym = _get(raw, "symmetric", where, bool, default=not dt.startswith("uint"))
    if qscheme == "per_tensor":
        strategy, g = "tensor", None
    elif qscheme == "per_channel":
        strategy, g = ("token" if role != "weights" else "channel"), None
        if role != "weights":
            dyn = True
    elif qscheme == "per_group":
        strategy, g = "group", gsize or 32
    else:
        raise _fail(f"{where}.qscheme", f"unknown Quark qscheme {_short(qscheme)}",
                    hint="choose per_tensor, per_channel or per_group")
    scale = None
    if typ == "float" and g == 32:
        scale = "e8m0"
    if role == "weights":
        dyn = False
    if strategy == "token" and not dyn:
        strategy = "channel"
    return QArgs(num_bits=bits, type=typ, strategy=strategy, group_size=g, symmetric=sym, dynamic=dyn,
                 scale_dtype=scale, element=elem)


def _parse_quark(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    glob = _get(qc, "global_quant_config", where, dict)
    gw = f"{where}.global_quant_config"
    groups: list[QuantGroup] = []

    def one(name: str, spec: dict[str, Any], targets: tuple[str, ...], w_: str, scope: str) -> QuantGroup:
        w = _quark_args(spec.get("weight"), f"{w_}.weight", "weights")
        a = _quark_args(spec.get("input_tensors"), f"{w_}.input_tensors", "activations")
        o = _quark_args(spec.get("output_tensors"), f"{w_}.output_tensors", "activations")
        return make_group(name, targets, w, a, outputs=o, scale_format=dtype, scope=scope, fmt="quark", where=w_)

    for pattern, spec in (_get(qc, "layer_quant_config", where, dict, default={}) or {}).items():
        if not isinstance(spec, dict):
            raise _fail(f"{where}.layer_quant_config.{pattern}", f"must be an object, got {_short(spec)}")
        groups.append(one(pattern, spec, (pattern,), f"{where}.layer_quant_config.{pattern}", "patterns"))
    for cls, spec in (_get(qc, "layer_type_quant_config", where, dict, default={}) or {}).items():
        if not isinstance(spec, dict):
            raise _fail(f"{where}.layer_type_quant_config.{cls}", f"must be an object, got {_short(spec)}")
        groups.append(one(cls, spec, (cls,), f"{where}.layer_type_quant_config.{cls}", "patterns"))
    groups.append(one("global", glob, ("Linear",), gw, "all_linears"))
    exclude = _str_list(qc, "exclude", where, default=())
    export = qc.get("export") if isinstance(qc.get("export"), dict) else {}
    kv_group = _str_list(qc, "kv_cache_group", where, default=()) or tuple(
        k for k in (export.get("kv_cache_group") or []) if isinstance(k, str))
    kv_tq = None
    kv_args = None
    if kv_group and glob.get("output_tensors"):
        kv_args = _quark_args(glob.get("output_tensors"), f"{gw}.output_tensors", "kv")
        if kv_args is not None:
            kv_tq = _kv_tensor_quant(kv_args)
    return CheckpointQuant(
        quant_method=key, family="quark", found_in=where, format="quark", producer="AMD Quark",
        groups=tuple(groups), ignore=exclude, ignore_style="glob", kv_cache=kv_args, kv_cache_quant=kv_tq,
        details={"kv_cache_group": list(kv_group), "export": export or None},
    )


def _parse_mlx(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    bits = _int(qc, "bits", where, lo=2, hi=8)
    group = _req_group(qc, "group_size", where)
    w = QArgs(num_bits=bits, type="int", strategy="channel" if group == -1 else "group",
              group_size=None if group == -1 else group, symmetric=False, scale_dtype=dtype)
    g = make_group("mlx", ("Linear",), w, None, scale_format=dtype, scope="all_linears", fmt="mlx", layout="mlx",
                   where=where, notes=("affine: a 16-bit scale and a 16-bit bias per group",))
    return CheckpointQuant(quant_method="mlx", family="mlx", found_in=where, format="mlx", producer="mlx-lm",
                           groups=(g,), ignore_style="substring", quantize_lm_head=True,
                           details={"bits": bits, "group_size": group},
                           warnings=("an MLX (Apple) checkpoint without quant_method: SGLang reads it only on MPS "
                                     "(mlx_q4 / mlx_q8); vLLM does not read it",))


_PARSERS = {
    "compressed-tensors": _parse_ct,
    "awq": _parse_awq,
    "gptq": _parse_gptq,
    "fp8": _parse_fp8,
    "modelopt": _parse_modelopt,
    "mxfp4": _parse_mxfp4,
    "bitsandbytes": _parse_bnb,
    "gguf": _parse_gguf,
    "auto-round": _parse_autoround,
    "quark": _parse_quark,
    "mlx": _parse_mlx,
}


# -------------------------------------------------------------------------------------------------
# Preset matching (the presets are passed in; this module reads no data)
# -------------------------------------------------------------------------------------------------


def _axes_key(w: TensorQuant | None, a: TensorQuant | None) -> tuple[Any, ...]:
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
    key = _axes_key(group.weight, group.activation)
    hits = [p for p in presets if _axes_key(p.weight, p.activation) == key]
    if not hits:
        return None
    for p in hits:
        if (p.layout.id if p.layout else None) == group.layout:
            return p.id
    return hits[0].id


def match_ct_preset(group: QuantGroup, library: Any) -> str | None:
    """The compressed-tensors preset (W4A16, FP8_DYNAMIC ...) with this group's arguments."""
    if group.weights is None:
        return None

    def same(p: Any, q: QArgs | None) -> bool:
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


def with_presets(ck: CheckpointQuant, presets: list[Scheme], library: Any | None) -> CheckpointQuant:
    groups = tuple(
        g.model_copy(update={"preset": match_preset(g, presets),
                             "ct_preset": match_ct_preset(g, library) if library is not None else None})
        for g in ck.groups
    )
    return ck.model_copy(update={"groups": groups})


def effective_bits(group: QuantGroup, n: int = 4096, k: int = 4096) -> float | None:
    """Bits per weight of one n x k matrix under the group's axes (no layout padding)."""
    if group.weight is None or not group.weight.is_quantized:
        return None
    return group.weight.stored_bits(n, k) / (n * k)


__all__ = [
    "CheckpointQuant", "QArgs", "QuantGroup", "METHODS", "find_quantization_config", "parse_checkpoint",
    "parse_quantization_config", "parse_ct_args", "match_preset", "match_ct_preset", "with_presets",
    "model_dtype_format", "effective_bits",
]
