"""A checkpoint format's on-disk tensor layout (AWQ GEMM, AutoGPTQ, compressed-tensors
pack-quantized, bitsandbytes, MLX): the tensors one quantized linear layer stores, with their
shapes written as small expressions over N, K, G and b. Sizing uses it to count what a checkpoint
really holds (packed int32 words, scales, zero-points, g_idx). Pure.

The shape expressions are a small grammar, checked when a layout is built (a shipped row or a user's
scheme file) and evaluated by a stack machine that raises nothing but :class:`SchemeError`::

    expr   := term   (("+" | "-") term)*
    term   := factor (("*" | "/") factor)*
    factor := NAME | INT | "(" expr ")"
    NAME   := "N" | "K" | "G" | "b"             case-sensitive; see SHAPE_NAMES
    INT    := ASCII digits, 1 to 2^40           no sign, no 0 (a dimension or divisor is >= 1)

``/`` is a ceiling division (packing rounds up: 3-bit words, bitsandbytes' last absmax block). Spaces and
tabs may separate tokens; nothing else (no unary minus, ``**``, ``//``, ``%``, no non-ASCII digit).
Expressions are at most :data:`MAX_EXPR_CHARS` long, brackets balanced and nested at most
:data:`MAX_DEPTH` deep. An evaluated dimension must be 1 to :data:`MAX_DIM`; a divisor must be >= 1.
"""

import re
from collections.abc import Callable
from datetime import date
from functools import lru_cache

from pydantic import Field, StrictInt, field_validator

from ..errors import SchemeError, UnknownNameError
from ..results import Strict
from .formats import get_format

SHAPE_NAMES = {"N": "output channels", "K": "input channels", "G": "scale groups along K, ceil(K/group)",
               "b": "weight bits"}
# No real checkpoint tensor has an extent anywhere near 2^40 (~1.1e12): the largest, a bitsandbytes weight
# flattened to N*K/2 for a 256k-vocabulary x 16k lm_head, is ~2^31. Larger is a typo, not a model.
MAX_DIM = 2**40
# A tensor's element count: N*K of two int32 extents (model/parse.py's MAX_CONFIG_INT) is the most any model
# the parser accepts reaches through an [N, K] tensor; more is an absurd layout.
MAX_TENSOR_ELEMENTS = 2**62
MAX_EXPR_CHARS = 200  # the shipped expressions are under 12 characters
MAX_DEPTH = 8  # brackets inside brackets; the shipped layouts use none
MAX_DIMS = 8  # dimensions of one tensor; real ones have 1 to 4
MAX_TENSORS = 64  # tensors of one linear layer; real formats store 1 to 6
MAX_QUOTE = 40  # characters of a hostile name or expression quoted in a message
ALLOWED = (f"allowed: names {', '.join(SHAPE_NAMES)}, integers 1 to 2^40, + - * and / (rounds up), "
           f"( ) nested at most {MAX_DEPTH} deep, at most {MAX_EXPR_CHARS} characters")

Dim = str | StrictInt  # an expression, or a literal extent (not a bool, not a float)


def _checked(v: dict[str, tuple[str, tuple[Dim, ...]]], required: bool) -> dict[str, tuple[str, tuple[Dim, ...]]]:
    """A layout's tensors if they parse (:func:`check_tensors`), else the ValueError pydantic reports."""
    try:
        check_tensors(v, required=required)
    except SchemeError as exc:
        raise ValueError(exc.message) from None
    return v


class Layout(Strict):
    """A checkpoint's on-disk tensor layout for one quantized linear layer.

    Each tensor is ``name: [dtype, [dim, dim, ...]]`` with dims written over N (output channels),
    K (input channels), G (scale groups along K: ceil(K/g), 1 when per-channel) and b (weight
    bits), in the grammar of this module's docstring. ``/`` is a ceiling division, as packing rounds up. A light
    row (results.Strict: a command builds no pydantic class for it; a user's scheme file is validated by its
    pydantic shadow where the fast path cannot take a value).
    """

    id: str
    description: str = ""
    tensors: dict[str, tuple[str, tuple[Dim, ...]]]
    asymmetric_only: dict[str, tuple[str, tuple[Dim, ...]]] = Field(default_factory=dict)
    stores_tied_lm_head: bool = False  # the export writes lm_head.weight even when it is tied
    source: str
    as_of: date

    @field_validator("tensors")
    @classmethod
    def _tensors(cls, v: dict[str, tuple[str, tuple[Dim, ...]]]) -> dict[str, tuple[str, tuple[Dim, ...]]]:
        return _checked(v, required=True)

    @field_validator("asymmetric_only")
    @classmethod
    def _asymmetric_only(cls, v: dict[str, tuple[str, tuple[Dim, ...]]]) -> dict[str, tuple[str, tuple[Dim, ...]]]:
        return _checked(v, required=False)

    def stored_bytes(self, n: int, k: int, group: int | None, bits: int, symmetric: bool) -> int:
        if group is not None and group < 1:
            raise SchemeError(f"layout '{_quote(self.id)}': group size {group} is not a positive integer")
        g = 1 if group is None else -(-k // group)
        tensors = dict(self.tensors)
        if not symmetric:
            tensors.update(self.asymmetric_only)
        if not tensors:
            raise SchemeError(f"layout '{_quote(self.id)}' lists no tensors", hint="list one under tensors:")
        total = 0
        for name, (dtype, dims) in tensors.items():
            try:
                elems = 1
                for d in dims:
                    elems *= _dim(d, n, k, g, bits)
                if elems > MAX_TENSOR_ELEMENTS:
                    raise SchemeError(f"holds {elems:,} elements at N={n}, K={k}, G={g}, b={bits}; "
                                      f"at most 2^62 (an absurd size for one linear layer)")
                total += elems * get_format(dtype).bits
            except SchemeError as exc:
                raise SchemeError(f"layout '{_quote(self.id)}' tensor '{_quote(name)}': {exc.message}",
                                  hint=exc.hint, field="layout") from None
        return -(-total // 8)


def _quote(text: str) -> str:
    """``text`` for a message: whole when short, else its start and its length."""
    return text if len(text) <= MAX_QUOTE else f"{text[:MAX_QUOTE]}... ({len(text):,} characters)"


def check_tensors(tensors: dict[str, tuple[str, tuple[Dim, ...]]], *, required: bool) -> None:
    """Every tensor's dtype is a known format and every dim a literal 1..2^40 or an expression of the
    grammar; ``required``: at least one tensor. Raises :class:`SchemeError` naming the tensor."""
    if required and not tensors:
        raise SchemeError("lists no tensors; give at least one as name: [dtype, [dim, ...]], "
                          "e.g. qweight: [int32, [K*b/32, N]]")
    if len(tensors) > MAX_TENSORS:
        raise SchemeError(f"lists {len(tensors):,} tensors; at most {MAX_TENSORS} per linear layer")
    for name, (dtype, dims) in tensors.items():
        where = f"tensor '{_quote(name)}'"
        try:
            get_format(dtype)
        except UnknownNameError as exc:
            raise SchemeError(f"{where}: {exc.message}", hint=exc.hint) from None
        if len(dims) > MAX_DIMS:
            raise SchemeError(f"{where} has {len(dims)} dimensions; at most {MAX_DIMS}")
        literal = 1
        for d in dims:
            try:
                if isinstance(d, int):
                    literal *= _in_range(d, "a dimension is")
                else:
                    _compile(d)
            except SchemeError as exc:
                raise SchemeError(f"{where}: {exc.message}") from None
        if literal > MAX_TENSOR_ELEMENTS:
            raise SchemeError(f"{where}: its literal dimensions alone hold {literal:,} elements; at most 2^62 "
                              "(an absurd size for one linear layer)")


def _in_range(v: int, what: str) -> int:
    """``v`` when it is a sane extent, 1 to 2^40; else :class:`SchemeError` starting with ``what``."""
    if not 1 <= v <= MAX_DIM:
        shown = f"{v:,}" if v.bit_length() <= 128 else f"{'-' if v < 0 else ''}a {v.bit_length():,}-bit number"
        raise SchemeError(f"{what} {shown}, outside 1 to 2^40 ({MAX_DIM:,})")
    return v


_LEX = re.compile(r"[ \t]+|([0-9]+)|([A-Za-z_][A-Za-z0-9_]*)|([-+*/()])", re.ASCII)
Code = tuple[int | str, ...]  # postfix: literals, names and operators
Bad = Callable[[str], SchemeError]  # builds the message for one expression


@lru_cache(maxsize=1024)
def _compile(expr: str) -> Code:
    """A checked shape expression in postfix form; :class:`SchemeError` saying what is wrong and allowed."""

    def bad(problem: str) -> SchemeError:
        return SchemeError(f"shape expression '{_quote(expr)}': {problem}; {ALLOWED}")

    if len(expr) > MAX_EXPR_CHARS:
        raise bad(f"{len(expr):,} characters")
    tokens: list[str] = []
    pos = 0
    while pos < len(expr):
        m = _LEX.match(expr, pos)
        if m is None:
            raise bad(f"character {expr[pos]!r} is not allowed")
        pos = m.end()
        if m.lastindex == 2 and m.group(2) not in SHAPE_NAMES:
            raise bad(f"unknown name '{_quote(m.group(2))}'")
        if m.lastindex:
            tokens.append(m.group(m.lastindex))
    if not tokens:
        raise bad("it is empty")
    out: list[int | str] = []
    i = _parse_sum(tokens, 0, 0, out, bad)
    if i < len(tokens):
        tail = tokens[i]
        raise bad("a ')' without its '('" if tail == ")" else f"'{tail}' follows a complete expression (an operator missing?)")
    return tuple(out)


_LEVELS = (("+", "-"), ("*", "/"))  # the grammar's expr and term: the operators of each, loosest first


def _parse_sum(tokens: list[str], i: int, depth: int, out: list[int | str], bad: Bad, level: int = 0) -> int:
    """An ``expr`` (``level`` 0) or a ``term`` (1) from ``tokens[i]`` on, in postfix onto ``out``."""
    def operand(j: int) -> int:
        return (_parse_sum(tokens, j, depth, out, bad, level + 1) if level + 1 < len(_LEVELS)
                else _parse_factor(tokens, j, depth, out, bad))

    i = operand(i)
    while i < len(tokens) and tokens[i] in _LEVELS[level]:
        op = tokens[i]
        i = operand(i + 1)
        out.append(op)
    return i


def _parse_factor(tokens: list[str], i: int, depth: int, out: list[int | str], bad: Bad) -> int:
    if i >= len(tokens):
        raise bad("it ends where a name, a number or '(' is expected")
    tok = tokens[i]
    if tok == "(":
        if depth >= MAX_DEPTH:
            raise bad(f"brackets nested more than {MAX_DEPTH} deep")
        i = _parse_sum(tokens, i + 1, depth + 1, out, bad)
        if i >= len(tokens) or tokens[i] != ")":
            raise bad("a '(' is never closed")
        return i + 1
    if tok[0].isdigit():
        if not tok.strip("0") and i > 0 and tokens[i - 1] == "/":
            raise bad("it divides by zero")
        if len(tok) > len(str(MAX_DIM)) or not 1 <= int(tok) <= MAX_DIM:
            raise bad(f"the integer '{_quote(tok)}' is outside 1 to 2^40")
        out.append(int(tok))
    elif tok in SHAPE_NAMES:
        out.append(tok)
    else:
        raise bad(f"'{tok}' where a name, a number or '(' is expected")
    return i + 1


@lru_cache(maxsize=4096)
def _dim(expr: str | int, n: int, k: int, g: int, b: int) -> int:
    """:func:`_eval_dim` over N, K, G, b, remembered: a model has a handful of distinct shapes, and
    sizing every candidate of a recommendation evaluates each of them hundreds of times."""
    return _eval_dim(expr, {"N": n, "K": k, "G": g, "b": b})


def _eval_dim(expr: str | int, env: dict[str, int]) -> int:
    """One dimension: a literal, or a shape expression (the module's grammar) over the names in ``env``.
    The result is 1 to 2^40; anything else, a malformed expression included, is a :class:`SchemeError`."""
    if isinstance(expr, bool) or not isinstance(expr, int | str):
        raise SchemeError(f"a dimension must be an integer or a shape expression, not {type(expr).__name__}")
    if isinstance(expr, int):
        return _in_range(expr, "the dimension")

    def at() -> str:
        return ", ".join(f"{name}={v}" for name, v in env.items())

    stack: list[int] = []
    for item in _compile(expr):
        if isinstance(item, int):
            stack.append(item)
        elif item in SHAPE_NAMES:
            if item not in env:
                raise SchemeError(f"shape expression '{_quote(expr)}' names {item}, which has no value here ({at()})")
            stack.append(env[item])
        else:
            rhs, lhs = stack.pop(), stack.pop()
            if item == "/" and rhs < 1:
                raise SchemeError(f"shape expression '{_quote(expr)}' divides by {rhs} at {at()}; a divisor must be >= 1")
            stack.append(lhs + rhs if item == "+" else lhs - rhs if item == "-" else lhs * rhs if item == "*"
                         else -(-lhs // rhs))
    return _in_range(stack[0], f"shape expression '{_quote(expr)}' at {at()} gives")
