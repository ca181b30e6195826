"""One base for every result quantadvise returns, and the one JSON schema version.

Every command's result is a :class:`Result`: a frozen :class:`Out` (``results/light.py``: pydantic's
surface without its class machinery) whose ``model_dump(mode="json")`` is exactly what ``--format json``
prints, stamped with :data:`SCHEMA_VERSION`. Nested pieces derive from :class:`Out` too; a piece read from a
user's file whose fields validate derives from :class:`Validated`. Data rows and user files validated on
the way in derive from :class:`Strict` (unknown keys rejected). Values the computation passes around (not
validated, not printed as JSON) are :func:`record` classes (``results/records.py``).
"""

from typing import Any

from pydantic import BaseModel, ConfigDict

from .light import OmitNone, Out, field_hints
from .records import by_identity, record

__all__ = ["SCHEMA_VERSION", "OmitNone", "Out", "Result", "Strict", "StrictModel", "Validated", "by_identity", "plain_numbers",
           "record"]

# The version of every JSON report (size, roofline, recommend, inspect, engines, check, accuracy,
# calibrate, validate). A change that renames or removes a field bumps it, with a CHANGELOG entry.
SCHEMA_VERSION = 1


class Result(Out):
    """A command's whole result."""

    schema_version: int = SCHEMA_VERSION


class Validated(BaseModel):
    """A piece of a result read from a user's file whose fields validate (limits, field validators): a frozen
    pydantic model, built lazily. (A piece made from values the computation holds is an :class:`Out`.)"""

    model_config = ConfigDict(frozen=True, defer_build=True)


class _NotANumber:
    """What a number field was given that pydantic's lax mode would read as one although it is not written as
    one — a YAML / JSON boolean (true as 1, false as 0) or text with non-ASCII digits ('١٢' as 12; the
    command line refuses both): no number validates it, so the field's own error names it."""

    __slots__ = ("value",)

    def __init__(self, value: object):
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


def _not_a_number(v: object) -> bool:
    return v is True or v is False or (isinstance(v, str) and not v.isascii())


_NUMBER_KEYS: dict[type, tuple[frozenset[str], dict[str, Any]]] = {}


def _flatten(tp: Any) -> set[Any]:
    """The types ``tp`` admits: Optional / Union / Annotated unwrapped, ``Literal[1]`` as its values' types."""
    import types
    import typing

    seen: set[Any] = set()
    todo = [tp]
    while todo:
        t = todo.pop()
        origin = typing.get_origin(t)
        if origin in (typing.Union, types.UnionType, typing.Annotated):
            todo.extend(typing.get_args(t)[:1] if origin is typing.Annotated else typing.get_args(t))
        elif origin is typing.Literal:  # Literal[1] holds True too (True == 1)
            seen |= {type(a) for a in typing.get_args(t)}
        else:
            seen.add(t)
    return seen


def _inner(tp: Any) -> Any:
    """What ``plain_numbers`` descends into for a field of type ``tp``: a model class, ("seq", inner) for a
    list / tuple of it, ("map", inner) for a dict of it, else None."""
    import typing

    for t in _flatten(tp):
        if isinstance(t, type) and issubclass(t, BaseModel | Out):
            return t
        origin, args = typing.get_origin(t), typing.get_args(t)
        if origin in (list, tuple, set, frozenset) and args and (got := _inner(args[0])) is not None:
            return ("seq", got)
        if origin is dict and len(args) == 2 and (got := _inner(args[1])) is not None:
            return ("map", got)
    return None


def field_keys(cls: Any) -> dict[str, tuple[Any, tuple[str, ...]]]:
    """Each field of model or piece ``cls``: its annotation and the keys a document gives it by (its alias,
    its validation alias's names) besides its name. A piece (results.light) answers from its own fields, without
    building its pydantic shadow."""
    if isinstance(cls, type) and issubclass(cls, Out):
        hints = field_hints(cls)
        return {name: (hints[name], f.choices or ((f.alias,) if f.alias else ()))
                for name, f in cls.__light_fields__.items()}
    out = {}
    for name, f in cls.model_fields.items():
        va = f.validation_alias
        choices = tuple(c for c in (getattr(va, "choices", None) or (va,)) if isinstance(c, str))
        out[name] = (f.annotation, (*choices, *((f.alias,) if f.alias else ())))
    return out


def _keys(cls: Any) -> tuple[frozenset[str], dict[str, Any]]:
    """(the keys of ``cls``'s number fields, every spelling; the keys of its nested models -> what they hold)."""
    got = _NUMBER_KEYS.get(cls)
    if got is None:
        numbers: set[str] = set()
        nested: dict[str, Any] = {}
        for name, (annotation, keys) in field_keys(cls).items():
            spellings = {name, name.replace("_", "-"), *keys}
            kinds = _flatten(annotation)
            if kinds & {int, float} and bool not in kinds:
                numbers |= spellings
            inner = _inner(annotation)
            if inner is not None:
                nested.update(dict.fromkeys(spellings, inner))
        got = _NUMBER_KEYS[cls] = (frozenset(numbers), nested)
    return got


def plain_numbers(cls: Any, data: Any) -> Any:
    """A user's document for model ``cls`` (a workload, quantadvise.yaml, a profile, a scheme file) with every
    boolean, and every text with non-ASCII characters, given to a number field (int / float, not bool) — at
    any depth of its nested models — replaced by a value no number validates: `ctx: true` is an error naming
    ``ctx``, not a context of 1 token. Applied where a user's file is read, not to the shipped tables (the test
    suite validates those)."""
    if isinstance(cls, tuple):  # ("seq", inner) or ("map", inner)
        kind, inner = cls
        if kind == "seq" and isinstance(data, list | tuple):
            items = [plain_numbers(inner, v) for v in data]
            return data if all(a is b for a, b in zip(items, data, strict=True)) else items
        if kind == "map" and isinstance(data, dict):
            got = {k: plain_numbers(inner, v) for k, v in data.items()}
            return data if all(got[k] is v for k, v in data.items()) else got
        return data
    if not isinstance(data, dict):
        return data
    numbers, nested = _keys(cls)
    out = None
    for k, v in data.items():
        if k in numbers and _not_a_number(v):
            new: Any = _NotANumber(v)
        elif k in nested and isinstance(v, dict | list | tuple):
            new = plain_numbers(nested[k], v)
        else:
            continue
        if new is not v:
            if out is None:
                out = dict(data)
            out[k] = new
    return data if out is None else out


class Strict(Out):
    """Validated input: a data row, a config file, a profile. Unknown keys are errors, and so is a
    number that is not finite (nan, inf: a profile's curve through nan prices nothing); a user's file is
    passed through :func:`plain_numbers` first. A row class costs what an :class:`Out` costs to define
    (``results/light.py``): ``model_validate`` runs a pydantic shadow of it, made on first use, and a shipped
    table is built without validation (``catalog/trusted.py``). A row class with validators or its own
    settings derives from :class:`StrictModel`."""

    __light_config__ = {"extra": "forbid", "allow_inf_nan": False}


class StrictModel(BaseModel):
    """:class:`Strict` as a pydantic model: for a row or a file whose fields carry validators a light class does
    not run (wrap / plain validators, pydantic's ``info``), private attributes (a kernel curve's caches) or
    settings of their own."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)
