"""Typed reads of a quantization_config's fields, shared by every dialect parser.

Every failure is a :class:`~quantadvise.errors.ConfigError` that names the field and says what it
should be (:func:`field_error`). Also the torch dtype spellings of scales (:data:`SCALE_DTYPES`) and
of the model's 16-bit tensors (:func:`model_dtype_format`). Pure: dicts in, values out.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..inputs import shown

# The ``default`` of a field that must be present (None is a valid default, so it cannot mean "required").
REQUIRED = object()


def field_error(where: str, msg: str, hint: str | None = None) -> ConfigError:
    """The error for the field at ``where`` (``quantization_config.config_groups.group_0.weights``)."""
    return ConfigError(f"{where}: {msg}", hint=hint, field=where.rsplit(":", 1)[-1].strip())


def get_field(d: dict[str, Any], key: str, where: str, kinds: tuple[type, ...] | type, *,
              default: Any = REQUIRED) -> Any:
    """``d[key]`` if it is one of ``kinds`` (true/false is not an integer); ``default`` when it is
    absent or null."""
    if key not in d or d[key] is None:
        if default is REQUIRED:
            raise field_error(f"{where}.{key}", "required field is missing" if key not in d else "must not be null")
        return default
    v = d[key]
    kinds_t = kinds if isinstance(kinds, tuple) else (kinds,)
    if bool not in kinds_t and isinstance(v, bool) and int in kinds_t:
        raise field_error(f"{where}.{key}", f"must be {_kind_names(kinds_t)}, got {short(v)}")
    if not isinstance(v, kinds_t):
        raise field_error(f"{where}.{key}", f"must be {_kind_names(kinds_t)}, got {short(v)}")
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_FIELD_INT:
        raise field_error(f"{where}.{key}", f"is {short(v)}, larger than any quantization_config field "
                          f"(at most {MAX_FIELD_INT:,})")
    return v


MAX_FIELD_INT = 2**31 - 1  # no integer of a quantization_config (bits, group size, ...) passes int32


def _kind_names(kinds: tuple[type, ...]) -> str:
    names = {int: "an integer", str: "a string", bool: "true or false", list: "a list", dict: "an object",
             float: "a number"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def short(v: Any) -> str:
    """A value as an error message quotes it (at most 60 characters)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return shown(v)
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def get_str_list(d: dict[str, Any], key: str, where: str, default: Any = ()) -> tuple[str, ...]:
    """A list of layer names / patterns (a single string is a list of one)."""
    v = get_field(d, key, where, (list, str), default=default)
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    out = []
    for i, item in enumerate(v):
        if not isinstance(item, str):
            raise field_error(f"{where}.{key}[{i}]",
                              f"must be a string (a layer name, re:regex or class name), got {short(item)}")
        out.append(item)
    return tuple(out)


def get_int(d: dict[str, Any], key: str, where: str, *, default: Any = REQUIRED, lo: int | None = None,
            hi: int | None = None) -> Any:
    """An integer field, within ``[lo, hi]`` when given."""
    v = get_field(d, key, where, int, default=default)
    if v is None:
        return None
    if isinstance(v, int) and ((lo is not None and v < lo) or (hi is not None and v > hi)):
        if lo is not None and hi is not None:
            rng = f"between {lo} and {hi}"
        else:
            rng = f">= {lo}" if lo is not None else f"<= {hi}"
        raise field_error(f"{where}.{key}", f"must be {rng}, got {v}")
    return v


def get_group_size(d: dict[str, Any], key: str, where: str, default: Any = REQUIRED) -> int | None:
    """A group size: -1 (per channel) or positive."""
    g = get_field(d, key, where, int, default=default)
    if g is None:
        return None
    if g == 0 or g < -1:
        raise field_error(f"{where}.{key}", f"must be -1 (per-channel) or a positive group size, got {g}",
                          hint="group_size 0 is not a granularity; use -1 for one scale per output channel")
    return g


def req_group_size(d: dict[str, Any], key: str, where: str, default: Any = REQUIRED) -> int:
    """A group size that must be there (or have a non-null default)."""
    g = get_group_size(d, key, where, default=default)
    if g is None:
        raise field_error(f"{where}.{key}", "required field is missing")
    return g


# torch dtype spellings of a stored scale -> quantadvise format id (uint8 scales are MX e8m0 exponents).
SCALE_DTYPES = {
    "float8_e4m3fn": "fp8_e4m3", "torch.float8_e4m3fn": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "e4m3": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2", "torch.float8_e5m2": "fp8_e5m2",
    "uint8": "e8m0", "torch.uint8": "e8m0", "e8m0": "e8m0", "float8_e8m0fnu": "e8m0", "torch.float8_e8m0fnu": "e8m0",
    "ue8m0": "e8m0",
    "bfloat16": "bf16", "torch.bfloat16": "bf16", "float16": "fp16", "torch.float16": "fp16", "half": "fp16",
    "float32": "fp32", "torch.float32": "fp32", "float": "fp32",
}


def scale_dtype_format(v: Any, where: str) -> str | None:
    """The format id of a ``scale_dtype`` field (None when absent)."""
    if v is None:
        return None
    if not isinstance(v, str) or v.strip().lower() not in SCALE_DTYPES:
        raise field_error(where, f"unknown scale dtype {short(v)}",
                          hint="expected a torch dtype such as float8_e4m3fn, uint8 (e8m0), bfloat16, float16 or "
                          "float32")
    return SCALE_DTYPES[v.strip().lower()]


def model_dtype_format(torch_dtype: str | None) -> str:
    """The 16-bit format unquantized tensors are stored in (bf16 unless the config says float16/32)."""
    t = (torch_dtype if isinstance(torch_dtype, str) else "bfloat16").lower().removeprefix("torch.")
    return {"float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}.get(t, "bf16")
