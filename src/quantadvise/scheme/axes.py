"""The six-axis scheme model: storage dtype, granularity, static/dynamic, symmetry, second-level
scale and accumulation, applied per tensor role (weights, activations, KV cache).

Orientation. A weight matrix is viewed as stored on disk, ``[N, K]`` = output channels x the
reduction (input) dimension; an activation as ``[M, K]`` = tokens x reduction; a KV row as
``[tokens, head_dim]`` per head. A :class:`GroupShape` ``(row, col)`` is the tile that shares one
scale in that view, ``-1`` meaning the whole extent. So one scale per output channel (weights) and
one per token (activations) are the same shape, ``(1, -1)`` — the symmetry that makes W8A8 with
per-channel weights and per-token activations factor out of the dot product. (vLLM writes its
weight PER_CHANNEL as ``(-1, 1)`` because its kernels see the transposed ``[K, N]`` operand; the
meaning is the same.) Per-group is ``(1, g)``, a block is ``(r, c)``.

Everything here is pure: no I/O, no printing.
"""

import math
import re
from typing import Any

from pydantic import field_validator, model_validator

from ..errors import SchemeError
from ..results import Out
from .formats import UNQUANTIZED, get_format
from .layout import Layout


class _Frozen(Out):
    """The scheme's pieces: frozen, unknown keys refused (``results/light.py``: no pydantic class until one is
    validated from a user's input)."""

    __light_config__ = {"extra": "forbid"}


_GROUP_RE = r"^(?:g|group[:=]?)\s*(\d+)$"  # patterns compiled on first use (re's cache): most shapes are named
_BLOCK_RE = r"^(?:block[:=]?)?\s*(\d+)\s*[x×]\s*(\d+)$"
_NAMED_SHAPES = {
    "per-tensor": (-1, -1),
    "tensor": (-1, -1),
    "per-channel": (1, -1),
    "channel": (1, -1),
    "per-token": (1, -1),
    "token": (1, -1),
    "per-row": (1, -1),
}


class GroupShape(_Frozen):
    """The tile of a matrix that shares one scale; -1 = the whole extent of that dimension."""

    row: int
    col: int

    @model_validator(mode="before")
    @classmethod
    def _parse(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            if len(value) != 2:
                raise ValueError("a group shape is two integers [row, col]")
            return {"row": value[0], "col": value[1]}
        if isinstance(value, str):
            text = value.strip().lower()
            if text in _NAMED_SHAPES:
                r, c = _NAMED_SHAPES[text]
                return {"row": r, "col": c}
            if m := re.match(_GROUP_RE, text):
                return {"row": 1, "col": int(m.group(1))}
            if m := re.match(_BLOCK_RE, text):
                return {"row": int(m.group(1)), "col": int(m.group(2))}
            raise ValueError(
                f"unknown group shape '{value}' (use per-tensor, per-channel, per-token, g128, "
                "128x128 or [row, col])"
            )
        if isinstance(value, int):
            return {"row": 1, "col": value}
        return value

    @model_validator(mode="after")
    def _check(self) -> "GroupShape":
        for name, v in (("row", self.row), ("col", self.col)):
            if v == 0 or v < -1:
                raise ValueError(f"group shape {name} must be -1 (whole extent) or >= 1, got {v}")
        return self

    # -- classification -------------------------------------------------------------------------
    @property
    def is_per_tensor(self) -> bool:
        return self.row == -1 and self.col == -1

    @property
    def is_per_row(self) -> bool:
        """One scale per row: per-channel for weights, per-token for activations."""
        return self.row == 1 and self.col == -1

    @property
    def is_per_group(self) -> bool:
        return self.row == 1 and self.col >= 1

    @property
    def is_block(self) -> bool:
        return self.row > 1 and self.col > 1

    def kind(self, role: str = "weight") -> str:
        if self.is_per_tensor:
            return "per-tensor"
        if self.is_per_row:
            return {"weight": "per-channel", "activation": "per-token", "kv_cache": "per-token-head"}.get(
                role, "per-row"
            )
        if self.is_per_group:
            return f"per-group {self.col}"
        if self.is_block:
            return f"block {self.row}x{self.col}"
        return f"{self.row}x{self.col}"

    def label(self, role: str = "weight") -> str:
        return self.kind(role)

    @property
    def reduction_group(self) -> int | None:
        """Elements along K that share a scale (None = the whole K)."""
        return None if self.col == -1 else self.col

    # -- counting -------------------------------------------------------------------------------
    def count(self, rows: int, cols: int) -> int:
        """How many scales an ``rows x cols`` matrix carries (exact, with partial tiles)."""
        r = rows if self.row == -1 else self.row
        c = cols if self.col == -1 else self.col
        return math.ceil(rows / r) * math.ceil(cols / c)

    def with_col(self, col: int) -> "GroupShape":
        return GroupShape(row=self.row if col != -1 else 1, col=col)


# made without validation (its validators pass these two; building GroupShape's validator at import cost every
# command ~2-3 ms); tests/unit/test_light.py holds them identical to the validated ones
PER_TENSOR = GroupShape.model_construct(row=-1, col=-1)
PER_CHANNEL = GroupShape.model_construct(row=1, col=-1)
PER_TOKEN = PER_CHANNEL


class ScaleSpec(_Frozen):
    """A scale: its storage dtype, static (frozen in the checkpoint) or dynamic (computed per
    forward pass), and the group shape it covers."""

    format: str = "fp32"
    dynamic: bool = False
    group: GroupShape = PER_TENSOR
    per_head: bool = False  # KV cache only: one scale per attention head (compressed-tensors attn_head)

    @field_validator("format")
    @classmethod
    def _fmt(cls, v: str) -> str:
        return get_format(v).id

    @property
    def bits(self) -> int:
        return get_format(self.format).bits


class TensorQuant(_Frozen):
    """How one tensor role is quantized (vLLM's QuantKey): element dtype, scale, optional
    second-level scale, and symmetric or a zero-point stored in ``zero_format``."""

    format: str
    scale: ScaleSpec | None = None
    scale2: ScaleSpec | None = None
    symmetric: bool = True
    zero_format: str | None = None

    @field_validator("format")
    @classmethod
    def _fmt(cls, v: str) -> str:
        return get_format(v).id

    @field_validator("zero_format")
    @classmethod
    def _zfmt(cls, v: str | None) -> str | None:
        return None if v is None else get_format(v).id

    @model_validator(mode="before")
    @classmethod
    def _zero_shorthand(cls, data: Any) -> Any:
        # `zero: uint4` in YAML means asymmetric with that zero-point dtype.
        if isinstance(data, dict) and "zero" in data:
            data = dict(data)
            z = data.pop("zero")
            if z:
                data.setdefault("symmetric", False)
                data.setdefault("zero_format", z)
        return data

    @model_validator(mode="after")
    def _check(self) -> "TensorQuant":
        fmt = get_format(self.format)
        if fmt.kind == "scale":
            raise ValueError(f"{fmt.id} is a scale-only format; it cannot hold tensor values")
        if self.format not in UNQUANTIZED and self.scale is None and fmt.kind != "lut":
            raise ValueError(f"a {fmt.id} tensor needs a scale (format, dynamic, group)")
        if self.symmetric and self.zero_format is not None:
            raise ValueError("symmetric quantization has no zero-point; drop zero_format or set symmetric: false")
        if not self.symmetric and self.zero_format is None:
            raise ValueError("asymmetric quantization needs zero_format (the zero-point dtype)")
        if self.scale2 is not None:
            if self.scale is None:
                raise ValueError("a second-level scale needs a first-level scale")
            sfmt = get_format(self.scale.format)
            # Two-tier scaling exists because a narrow scale cannot span a tensor's range alone: NVFP4's
            # fp8 e4m3 group scales under one fp32, bitsandbytes' double quantization (its absmax stored as
            # 8-bit codes, blocks of 256 of them under one fp32). Power-of-two (e8m0, MX formats) and wide
            # (fp16, bf16, fp32) scales span it already, so a second level is not part of those formats.
            if not (sfmt.kind in ("float", "int", "uint") and sfmt.bits <= 8):
                raise ValueError(
                    f"a second-level scale only exists over narrow 8-bit-or-less group scales (NVFP4: fp8 "
                    f"scales under one fp32; bitsandbytes double quantization: 8-bit absmax codes); {fmt.id} "
                    f"with {sfmt.id} scales has none"
                )
        return self

    # -- derived ------------------------------------------------------------------------------
    @property
    def bits(self) -> int:
        return get_format(self.format).bits

    @property
    def is_quantized(self) -> bool:
        return self.format not in UNQUANTIZED

    @property
    def math(self) -> str | None:
        return get_format(self.format).math

    def stored_bits(self, rows: int, cols: int) -> float:
        """Total bits to store a ``rows x cols`` matrix in this format, metadata included:
        elements x b + scales x b_s + zero-points x b_z + second-level scales x b_s2."""
        total = rows * cols * self.bits
        if self.scale is not None:
            n_scales = self.scale.group.count(rows, cols)
            total += n_scales * self.scale.bits
            if not self.symmetric and self.zero_format is not None:
                total += n_scales * get_format(self.zero_format).bits
        if self.scale2 is not None:
            total += self.scale2.group.count(rows, cols) * self.scale2.bits
        return float(total)

    def effective_bits(self, rows: int, cols: int) -> float:
        """Bits per element including metadata: b + b_s/g + b_z/g + b_s2/g2, counted exactly."""
        return self.stored_bits(rows, cols) / (rows * cols)

    def granularity(self, role: str = "weight") -> str | None:
        if self.scale is None:
            return None
        kind = self.scale.group.kind(role)
        if self.scale.per_head and kind == "per-tensor":
            return "per-head"
        return kind

    def describe(self, role: str = "weight") -> str:
        parts = [self.format]
        if self.scale is not None:
            parts.append(
                f"{self.granularity(role)} {'dynamic' if self.scale.dynamic else 'static'} "
                f"{self.scale.format} scale"
            )
        if self.scale2 is not None:
            parts.append(f"+ {self.scale2.group.kind(role)} {self.scale2.format} scale2")
        parts.append("symmetric" if self.symmetric else f"asymmetric ({self.zero_format} zero-point)")
        return ", ".join(parts)

    def axes(self, role: str = "weight") -> "TensorAxes":
        """The axes of this tensor role, flat (what reports show)."""
        return TensorAxes(
            dtype=self.format,
            bits=self.bits,
            granularity=self.granularity(role),
            group_shape=[self.scale.group.row, self.scale.group.col] if self.scale else None,
            scale_dtype=self.scale.format if self.scale else None,
            dynamic=self.scale.dynamic if self.scale else None,
            symmetric=self.symmetric,
            zero_point_dtype=self.zero_format,
            scale2=(Scale2Axes(dtype=self.scale2.format, group_shape=[self.scale2.group.row, self.scale2.group.col])
                    if self.scale2 else None),
        )


class Scale2Axes(Out):
    """The second-level scale (NVFP4's per-tensor fp32 over fp8 group scales)."""

    dtype: str
    group_shape: list[int]


class TensorAxes(Out):
    """One tensor role's six axes, flat: what ``recommend``, ``size`` and ``inspect`` report."""

    dtype: str
    bits: int
    granularity: str | None = None
    group_shape: list[int] | None = None
    scale_dtype: str | None = None
    dynamic: bool | None = None
    symmetric: bool
    zero_point_dtype: str | None = None
    scale2: Scale2Axes | None = None


# Roles of the inventory that a scheme can leave in 16-bit.
POLICY_ROLES = frozenset(
    {"embedding", "lm_head", "attention", "mlp", "experts", "shared_experts", "router", "mla", "mtp"}
)


class LayerPolicy(_Frozen):
    """Which layers a scheme quantizes. Decoder linear layers are quantized unless their component
    is in ``keep``; lm_head and the embedding stay 16-bit unless switched on (as published
    checkpoints do); ``only`` restricts quantization to the listed components (e.g. MoE experts)."""

    quantize_lm_head: bool = False
    quantize_embedding: bool = False
    keep: tuple[str, ...] = ("router",)
    only: tuple[str, ...] | None = None

    @field_validator("keep", "only")
    @classmethod
    def _roles(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if v is None:
            return v
        bad = [r for r in v if r not in POLICY_ROLES]
        if bad:
            raise ValueError(f"unknown {'component' if len(bad) == 1 else 'components'} {bad}; choose from {sorted(POLICY_ROLES)}")
        return tuple(v)

    def quantizes(self, component: str) -> bool:
        if component == "lm_head":
            return self.quantize_lm_head
        if component == "embedding":
            return self.quantize_embedding
        if component in ("norm", "bias", "other"):
            return False
        if self.only is not None and component not in self.only:
            return False
        return component not in self.keep


class Scheme(_Frozen):
    """A point of the design space: per-role quantization, accumulation and layer policy."""

    id: str
    weight: TensorQuant | None = None
    activation: TensorQuant | None = None
    kv_cache: TensorQuant | None = None
    accumulation: str | None = None
    policy: LayerPolicy = LayerPolicy.model_construct()  # LayerPolicy(): its validator checks given values
    layout: Layout | None = None
    description: str = ""

    @model_validator(mode="after")
    def _validate(self) -> "Scheme":
        w, a = self.weight, self.activation
        if w is not None and w.scale is not None and w.scale.dynamic:
            raise ValueError(
                "weights are known at load time, so a dynamic weight scale is meaningless; "
                "use a static weight scale"
            )
        if w is not None and w.scale2 is not None and w.scale2.dynamic:
            raise ValueError("a dynamic second-level weight scale is meaningless; make it static")
        if a is not None and a.is_quantized:
            if w is None or not w.is_quantized:
                raise _invalid(
                    "activation-only quantization has no GEMM that consumes it; quantize the weights too"
                )
            if w.scale is not None and w.scale.group.is_block and a.scale is not None and not a.scale.dynamic:
                raise _invalid(
                    "block-quantized weights pair only with dynamic 1xblock activation groups; a static "
                    "activation scale over a block slice is not calibrated by anyone (vLLM's fp8 "
                    "config rejects it too): make the activations dynamic"
                )
            if w.bits == 8 and a.bits == 8 and get_format(w.format).is_integer and not w.symmetric:
                raise _invalid(
                    "W8A8 needs symmetric weights: the int8 tensor-core GEMM takes signed integers and a "
                    "weight zero-point adds a cross-term (engines only support symmetric W8A8 weights)"
                )
            if w.bits > a.bits:
                raise _invalid(
                    f"weights ({w.bits}-bit) wider than activations ({a.bits}-bit) have no GEMM: the "
                    "narrower operand is converted up, so quantize the activations at >= the weight width"
                )
            if a.math is None:
                raise _invalid(f"{a.format} activations have no tensor-core datapath")
        if self.kv_cache is not None and self.kv_cache.is_quantized and self.kv_cache.scale is not None:
            g = self.kv_cache.scale.group
            if not (g.is_per_tensor or g.is_per_row or g.is_per_group):
                raise _invalid("KV cache scales are per-tensor, per-head/per-token-head or per-group")
        acc = self.accumulation
        if acc is not None:
            acc_fmt = get_format(acc).id
            math_fmt = self.math_format
            if math_fmt in ("int8", "int4"):
                if acc_fmt != "int32":
                    raise _invalid(
                        f"integer {math_fmt} GEMMs accumulate in int32 (got {acc_fmt}): a float "
                        "accumulator does not exist on the integer tensor-core path"
                    )
            elif acc_fmt not in ("fp32", "fp16"):
                raise _invalid(
                    f"{math_fmt} GEMMs accumulate in fp32 (fp16 at most); {acc_fmt} does not fit the "
                    "float tensor-core path"
                )
            elif acc_fmt == "fp16" and math_fmt not in ("fp16",):
                raise _invalid(f"fp16 accumulation is only an option for fp16 math, not {math_fmt}")
        return self

    # -- derived ------------------------------------------------------------------------------
    @property
    def math_format(self) -> str:
        """The tensor-core datapath the scheme's linear layers run on.

        Weight-only schemes dequantize to the 16-bit activation dtype (bf16 tensor cores); W+A
        schemes run on the activation's datapath (the narrower of the two operands is converted up
        to it, so W4A8-FP8 runs on fp8 and NVFP4 W4A4 on fp4)."""
        a = self.activation
        if a is None or not a.is_quantized:
            return "bf16"
        return a.math or "bf16"

    @property
    def accumulation_format(self) -> str:
        if self.accumulation:
            return get_format(self.accumulation).id
        return "int32" if self.math_format in ("int8", "int4") else "fp32"

    @property
    def weight_only(self) -> bool:
        return self.weight is not None and self.weight.is_quantized and (
            self.activation is None or not self.activation.is_quantized
        )

    @property
    def quantizes_weights(self) -> bool:
        return self.weight is not None and self.weight.is_quantized

    @property
    def needs_dequant(self) -> bool:
        """Weights stored in a format other than the math datapath must be converted in the kernel."""
        if not self.quantizes_weights:
            return False
        assert self.weight is not None
        return self.weight.math != self.math_format

    def with_weight_group(self, group: int) -> "Scheme":
        """This scheme with the weight group size overridden (-1 = per-channel)."""
        if not self.quantizes_weights or self.weight is None or self.weight.scale is None:
            raise SchemeError(f"scheme '{self.id}' has no weight scale to regroup", field="group")
        if group == 0 or group < -1:
            raise SchemeError(
                f"--group must be -1 (per-channel) or a positive integer, got {group}", field="group"
            )
        w = self.weight
        assert w is not None and w.scale is not None  # quantizes_weights with a scale, checked above
        new_scale = w.scale.model_copy(update={"group": w.scale.group.with_col(group)})
        suffix = "ch" if group == -1 else str(group)
        new_id = self.id if self.id.endswith(f"-g{suffix}") else f"{self.id}-g{suffix}"
        return _copy_scheme(self, id=new_id, weight=w.model_copy(update={"scale": new_scale}))

    def with_policy(self, **changes: Any) -> "Scheme":
        return _copy_scheme(self, policy=self.policy.model_copy(update=changes))

    def with_kv(self, kv: TensorQuant | None) -> "Scheme":
        return _copy_scheme(self, kv_cache=kv)

    def axes(self) -> "SchemeAxes":
        return SchemeAxes(
            weights=self.weight.axes("weight") if self.weight else None,
            activations=self.activation.axes("activation") if self.activation else None,
            kv_cache=self.kv_cache.axes("kv_cache") if self.kv_cache else None,
            accumulation=self.accumulation_format,
            math=self.math_format,
            lm_head_quantized=self.policy.quantize_lm_head,
            embedding_quantized=self.policy.quantize_embedding,
            layout=self.layout.id if self.layout else None,
        )


class SchemeAxes(Out):
    """A whole scheme's axes per role, plus accumulation, math datapath and layer policy."""

    weights: TensorAxes | None = None
    activations: TensorAxes | None = None
    kv_cache: TensorAxes | None = None
    accumulation: str
    math: str
    lm_head_quantized: bool
    embedding_quantized: bool
    layout: str | None = None


class DeployHints(_Frozen):
    """How a scheme preset is deployed: the checkpoint format that carries it, the engines' flags, the
    llm-compressor preset that writes it (a row of data/schemes.yaml)."""

    checkpoint_format: str | None = None  # awq | gptq | compressed-tensors | modelopt | fp8
    quant_method: str | None = None
    compressed_tensors_preset: str | None = None
    llmcompressor_scheme: str | None = None
    online: str | None = None  # vLLM --quantization online shorthand producing it from bf16
    vllm_kv_cache_dtype: str | None = None
    sglang_kv_cache_dtype: str | None = None
    alternatives: tuple[str, ...] = ()  # other checkpoint formats that carry the same scheme


def _invalid(message: str) -> ValueError:
    """Validation failures inside pydantic validators must be ValueErrors; keep one spelling."""
    return ValueError(message)


def _copy_scheme(scheme: Scheme, **changes: Any) -> Scheme:
    """Copy and re-validate (model_copy alone would skip the combination checks)."""
    data = {
        "id": scheme.id,
        "weight": scheme.weight,
        "activation": scheme.activation,
        "kv_cache": scheme.kv_cache,
        "accumulation": scheme.accumulation,
        "policy": scheme.policy,
        "layout": scheme.layout,
        "description": scheme.description,
    }
    data.update(changes)
    try:
        return Scheme.model_validate(data)
    except ValueError as exc:  # pydantic.ValidationError subclasses ValueError
        raise SchemeError(_first_reason(exc)) from None


def _first_reason(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        errs = errors()
        if errs:
            return str(errs[0].get("msg", exc)).removeprefix("Value error, ")
    return str(exc)


def build_scheme(data: dict[str, Any], where: str = "scheme") -> Scheme:
    """Validate a scheme dict, turning pydantic's report into one SchemeError line."""
    try:
        return Scheme.model_validate(data)
    except ValueError as exc:
        from ..errors import format_validation_error

        if hasattr(exc, "errors"):
            raise SchemeError(format_validation_error(exc, where)) from None
        raise SchemeError(f"{where}: {exc}") from None


def custom_weight_scheme(
    bits: int,
    group: int = 128,
    symmetric: bool = False,
    scale_format: str = "fp16",
) -> Scheme:
    """Weight-only integer quantization at ``bits`` with one scale per ``group`` input channels
    (-1 = per-channel) and, unless symmetric, a zero-point of the same width — the form AWQ and GPTQ
    checkpoints store. ``bits == 16`` means unquantized."""
    if bits == 16:
        return Scheme(id="bf16", description="unquantized bf16")
    if not 2 <= bits <= 8:
        raise SchemeError(f"--bits must be between 2 and 8 (or 16 for unquantized), got {bits}", field="bits")
    if group == 0 or group < -1:
        raise SchemeError(f"--group must be -1 (per-channel) or a positive integer, got {group}", field="group")
    wfmt = f"{'int' if symmetric else 'uint'}{bits}"
    shape = [1, -1] if group == -1 else [1, group]
    weight: dict[str, Any] = {"format": wfmt, "scale": {"format": scale_format, "group": shape}}
    if not symmetric:
        weight.update(symmetric=False, zero_format=wfmt)
    gname = "ch" if group == -1 else str(group)
    return build_scheme(
        {
            "id": f"w{bits}a16-g{gname}{'' if symmetric else '-asym'}",
            "weight": weight,
            "description": f"int{bits} weight-only, {'per-channel' if group == -1 else f'group {group}'}, "
            f"{scale_format} scale{'' if symmetric else f' + {bits}-bit zero-point'}",
        }
    )

