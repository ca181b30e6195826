"""A checkpoint format's on-disk tensor layout (AWQ GEMM, AutoGPTQ, compressed-tensors
pack-quantized, bitsandbytes, MLX): the tensors one quantized linear layer stores, with their
shapes written as small expressions over N, K, G and b. Sizing uses it to count what a checkpoint
really holds (packed int32 words, scales, zero-points, g_idx). Pure."""

import math
import re
from datetime import date
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from .formats import get_format


class Layout(BaseModel):
    """A checkpoint's on-disk tensor layout for one quantized linear layer.

    Each tensor is ``name: [dtype, [dim, dim, ...]]`` with dims written over N (output channels),
    K (input channels), G (scale groups along K: ceil(K/g), 1 when per-channel) and b (weight
    bits). ``/`` is a ceiling division, as packing rounds up.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    id: str
    description: str = ""
    tensors: dict[str, tuple[str, tuple[str | int, ...]]]
    asymmetric_only: dict[str, tuple[str, tuple[str | int, ...]]] = Field(default_factory=dict)
    stores_tied_lm_head: bool = False  # the export writes lm_head.weight even when it is tied
    source: str
    as_of: date

    def stored_bytes(self, n: int, k: int, group: int | None, bits: int, symmetric: bool) -> int:
        g = 1 if group is None else math.ceil(k / group)
        tensors = dict(self.tensors)
        if not symmetric:
            tensors.update(self.asymmetric_only)
        total = 0
        for dtype, dims in tensors.values():
            elems = 1
            for d in dims:
                elems *= d if isinstance(d, int) else _dim(d, n, k, g, bits)
            total += elems * get_format(dtype).bits
        return math.ceil(total / 8)


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(.))")


@lru_cache(maxsize=4096)
def _dim(expr: str, n: int, k: int, g: int, b: int) -> int:
    """:func:`_eval_dim` over N, K, G, b, remembered: a model has a handful of distinct shapes, and
    sizing every candidate of a recommendation evaluates each of them hundreds of times."""
    return _eval_dim(expr, {"N": n, "K": k, "G": g, "b": b})


def _eval_dim(expr: str | int, env: dict[str, int]) -> int:
    """Evaluate a tiny shape expression: integers, names from ``env``, + - * and ceil-division /."""
    if isinstance(expr, int):
        return expr
    tokens: list[str | int] = []
    for num, name, op in _TOKEN.findall(expr):
        if num:
            tokens.append(int(num))
        elif name:
            if name not in env:
                raise ValueError(f"unknown name '{name}' in shape expression '{expr}'")
            tokens.append(env[name])
        elif op.strip():
            if op not in "+-*/()":
                raise ValueError(f"bad character '{op}' in shape expression '{expr}'")
            tokens.append(op)
    pos = 0

    def atom() -> int:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            v = add()
            pos += 1  # ')'
            return v
        assert isinstance(tok, int), f"bad shape expression '{expr}'"
        return tok

    def mul() -> int:
        nonlocal pos
        v = atom()
        while pos < len(tokens) and tokens[pos] in ("*", "/"):
            op = tokens[pos]
            pos += 1
            rhs = atom()
            v = v * rhs if op == "*" else -(-v // rhs)
        return v

    def add() -> int:
        nonlocal pos
        v = mul()
        while pos < len(tokens) and tokens[pos] in ("+", "-"):
            op = tokens[pos]
            pos += 1
            rhs = mul()
            v = v + rhs if op == "+" else v - rhs
        return v

    return add()


