"""Number formats: the storage dtypes of weights, activations, KV cache, scales and zero-points.

These are definitions (a bit width is what the format *is*), not measured data, so they live in code.
``math`` names the tensor-core datapath a format runs on when it is the *operand* of a GEMM; the
hardware table keys its dense peaks by these names (bf16, fp16, fp8, int8, int4, fp4, fp6, fp32).
"""

from __future__ import annotations

from ..errors import UnknownNameError
from ..results import record


@record(slots=True)
class NumberFormat:
    id: str
    bits: int
    kind: str  # "float" | "int" | "uint" | "scale" (exponent-only) | "lut" (lookup table, e.g. nf4)
    math: str | None  # tensor-core datapath when used as a GEMM operand; None: cannot be an operand
    aliases: tuple[str, ...] = ()
    description: str = ""

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_float(self) -> bool:
        return self.kind == "float"


_FORMATS: tuple[NumberFormat, ...] = (
    NumberFormat("fp32", 32, "float", "fp32", ("float32", "float", "f32"), "IEEE single"),
    NumberFormat("bf16", 16, "float", "bf16", ("bfloat16",), "bfloat16"),
    NumberFormat("fp16", 16, "float", "fp16", ("float16", "half", "f16"), "IEEE half"),
    NumberFormat("fp8_e4m3", 8, "float", "fp8", ("fp8", "e4m3", "float8_e4m3fn", "f8_e4m3"), "OCP FP8 E4M3"),
    NumberFormat("fp8_e5m2", 8, "float", "fp8", ("e5m2", "float8_e5m2", "f8_e5m2"), "OCP FP8 E5M2"),
    NumberFormat("fp6_e3m2", 6, "float", "fp6", ("fp6", "e3m2"), "OCP MX FP6 E3M2"),
    NumberFormat("fp6_e2m3", 6, "float", "fp6", ("e2m3",), "OCP MX FP6 E2M3"),
    NumberFormat("fp4_e2m1", 4, "float", "fp4", ("fp4", "e2m1", "float4_e2m1fn"), "OCP FP4 E2M1"),
    NumberFormat("int32", 32, "int", None, ("i32",), "packing word / accumulator"),
    NumberFormat("int64", 64, "int", None, ("i64",), "shape tensors"),
    NumberFormat("int8", 8, "int", "int8", ("i8", "s8"), "signed 8-bit integer"),
    NumberFormat("uint8", 8, "uint", "int8", ("u8",), "unsigned 8-bit integer (zero-point form)"),
    NumberFormat("int4", 4, "int", "int4", ("i4", "s4"), "signed 4-bit integer"),
    NumberFormat("uint4", 4, "uint", "int4", ("u4",), "unsigned 4-bit integer (zero-point form)"),
    NumberFormat("int3", 3, "int", None, ("i3",), "signed 3-bit integer"),
    NumberFormat("uint3", 3, "uint", None, ("u3",), "unsigned 3-bit integer"),
    NumberFormat("int2", 2, "int", None, ("i2",), "signed 2-bit integer"),
    NumberFormat("uint2", 2, "uint", None, ("u2",), "unsigned 2-bit integer"),
    NumberFormat("int5", 5, "int", None, (), "signed 5-bit integer"),
    NumberFormat("int6", 6, "int", None, (), "signed 6-bit integer"),
    NumberFormat("int7", 7, "int", None, (), "signed 7-bit integer"),
    NumberFormat("uint5", 5, "uint", None, (), "unsigned 5-bit integer"),
    NumberFormat("uint6", 6, "uint", None, (), "unsigned 6-bit integer"),
    NumberFormat("uint7", 7, "uint", None, (), "unsigned 7-bit integer"),
    NumberFormat("nf4", 4, "lut", None, ("normalfloat4",), "bitsandbytes NormalFloat4 (lookup table)"),
    NumberFormat("e8m0", 8, "scale", None, ("ue8m0", "f8_e8m0", "e8m0fnu"), "power-of-two scale (MX)"),
)

FORMATS: dict[str, NumberFormat] = {f.id: f for f in _FORMATS}
_BY_NAME: dict[str, NumberFormat] = {}
for _f in _FORMATS:
    _BY_NAME[_f.id] = _f
    for _a in _f.aliases:
        _BY_NAME[_a] = _f

# Formats whose values are already "16-bit": a tensor in one of these is unquantized.
UNQUANTIZED = frozenset({"bf16", "fp16", "fp32"})

# Math datapaths ordered from widest to narrowest; a GEMM runs on the narrower operand's path only
# when *both* operands are in it (weight-only schemes therefore run on the activation's bf16 path).
MATH_ORDER = ("fp32", "bf16", "fp16", "fp8", "int8", "fp6", "fp4", "int4")


def get_format(name: str) -> NumberFormat:
    """Look up a number format by id or alias (case-insensitive)."""
    fmt = _BY_NAME.get(name) or _BY_NAME.get(name.lower())
    if fmt is None:
        raise UnknownNameError("number format", name, FORMATS.keys())
    return fmt
