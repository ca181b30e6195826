"""A shipped table's document built into its model without validating it again.

Every shipped table is validated by the test suite (``tests/data/test_tables.py``) and by the wheel build that
compiles it, so at run time a command can skip pydantic's validation of it: the validator of each model class is
built on first use (~1 ms a class, 50-60 ms of a cold ``recommend``) and then walks every row. :func:`shipped`
builds the same objects directly: each field's value converted as its annotation says (a nested model, a tuple
of them, an enum, a date from the compiled form's ISO text, an int given to a float field as a float), defaults
filled in, the fields set the keys given. A model whose fields transform their input (a field or ``before``
validator), a key that is not a field, a value whose type the plan does not know or a union of several models
falls back to ``model_validate`` for that model, so the result is never a guess; ``after`` model validators are
checks of the shipped rows and are not run again. ``tests/data/test_tables.py`` builds every shipped table both
ways and holds them equal (``==`` and the same JSON).
"""

from __future__ import annotations

import contextlib
import datetime
import enum
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
_Conv = Callable[[Any], Any]


class _Fallback(Exception):
    """The plan cannot build this value exactly: validate it instead."""


_CHECKING = False


def shipped(cls: type[M], doc: Any) -> M:
    """``cls.model_validate(doc)`` for a shipped (already validated) document, built without validation. Inside
    :func:`checking`: validated, and the model built without validation must equal it."""
    if _CHECKING:
        return _checked(cls, doc)
    try:
        return _build(cls, doc)
    except _Fallback:
        return cls.model_validate(doc)


@contextlib.contextmanager
def checking() -> Iterator[None]:
    """Every :func:`shipped` document validated (pydantic's errors, as without this module) and the model built
    without validation held to it: the same values of the same types at every depth (:func:`_identical`: an int
    where the validated model holds a float is a difference). ``catalog.validate_all`` runs inside it."""
    global _CHECKING
    before, _CHECKING = _CHECKING, True
    try:
        yield
    finally:
        _CHECKING = before


def _checked(cls: type[M], doc: Any) -> M:
    from ..errors import DataError

    valid = cls.model_validate(doc)
    try:
        built = _build(cls, doc)
    except _Fallback:
        return valid
    if not _identical(built, valid):
        raise DataError(f"a shipped {cls.__name__} built without validation differs from the validated one "
                        "(quantadvise/catalog/trusted.py needs the conversion its fields make)")
    return valid


_PLANS: dict[type, tuple[dict[str, tuple[str, _Conv]], tuple[tuple[str, Any], ...]] | None] = {}


def _identical(a: Any, b: Any) -> bool:
    """The same value of the same types all the way down (``1 == 1.0`` and ``Enum.x == "x"`` are not enough):
    models of one class with the same fields set, tuples / lists / dicts item by item."""
    if type(a) is not type(b):
        return False
    if isinstance(a, BaseModel):
        return (a.model_fields_set == b.model_fields_set and a.__dict__.keys() == b.__dict__.keys()
                and all(_identical(v, b.__dict__[k]) for k, v in a.__dict__.items())
                and a.__pydantic_private__ == b.__pydantic_private__)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_identical(v, b[k]) for k, v in a.items())
    return bool(a == b) or (a != a and b != b)  # nan is nan


def _plan(cls: type[BaseModel]) -> tuple[dict[str, tuple[str, _Conv]], tuple[tuple[str, Any], ...]] | None:
    """(key -> (field name, converter), (field name, FieldInfo) in declaration order); None: validate."""
    if cls in _PLANS:
        return _PLANS[cls]
    plan: tuple[dict[str, tuple[str, _Conv]], tuple[tuple[str, Any], ...]] | None = None
    decorators = cls.__pydantic_decorators__
    transforms = (decorators.field_validators or decorators.root_validators or decorators.validators
                  or any(d.info.mode != "after" for d in decorators.model_validators.values()))
    transforms = transforms or any(cls.model_config.get(k) for k in _TRANSFORMING_CONFIG)
    if not transforms and cls.model_config.get("extra") != "allow" and not cls.__pydantic_root_model__:
        keys: dict[str, tuple[str, _Conv]] = {}
        try:
            for name, f in cls.model_fields.items():
                if any(_transforms(m) for m in f.metadata) or f.discriminator is not None:
                    raise _Fallback
                conv = _converter(f.annotation)
                spellings = [name]
                if f.alias:
                    spellings.append(f.alias)
                va = f.validation_alias
                if va is not None:
                    choices = getattr(va, "choices", None) or (va,)
                    if not all(isinstance(c, str) for c in choices):
                        raise _Fallback
                    spellings += [c for c in choices if isinstance(c, str)]
                for s in spellings:
                    keys[s] = (name, conv)
            plan = (keys, tuple(cls.model_fields.items()))
        except _Fallback:
            plan = None
    _PLANS[cls] = plan
    return plan


# model settings under which validation changes a value (enum values stored as values, stripped text ...)
_TRANSFORMING_CONFIG = ("use_enum_values", "str_strip_whitespace", "str_to_lower", "str_to_upper",
                        "coerce_numbers_to_str")


def _transforms(meta: Any) -> bool:
    """An annotation's metadata that can change a value (a validator, a custom schema), not a constraint."""
    return (callable(getattr(meta, "__get_pydantic_core_schema__", None))
            or type(meta).__module__.startswith("pydantic.functional"))


def _build(cls: type[M], doc: Any) -> M:
    plan = _plan(cls)
    if plan is None:
        return cls.model_validate(doc)
    if isinstance(doc, cls):
        return doc
    if not isinstance(doc, dict):
        raise _Fallback
    keys, fields = plan
    given: dict[str, Any] = {}
    for k, v in doc.items():
        hit = keys.get(k)
        if hit is None or hit[0] in given:
            raise _Fallback
        given[hit[0]] = hit[1](v)
    values: dict[str, Any] = {}
    for name, f in fields:
        if name in given:
            values[name] = given[name]
        elif f.is_required():
            raise _Fallback
        else:
            values[name] = f.get_default(call_default_factory=True, validated_data=values)
    m = cls.__new__(cls)
    object.__setattr__(m, "__dict__", values)
    object.__setattr__(m, "__pydantic_fields_set__", set(given))
    object.__setattr__(m, "__pydantic_extra__", None)
    object.__setattr__(m, "__pydantic_private__", None)
    if cls.__pydantic_post_init__:
        m.model_post_init(None)
    return m


def _same(kind: type) -> _Conv:
    def conv(v: Any) -> Any:
        if type(v) is not kind:
            raise _Fallback
        return v
    return conv


def _float(v: Any) -> Any:
    if type(v) is float:
        return v
    if type(v) is int:
        return float(v)
    raise _Fallback


def _date(v: Any) -> Any:
    if type(v) is datetime.date:
        return v
    if isinstance(v, str):
        try:
            return datetime.date.fromisoformat(v)
        except ValueError:
            raise _Fallback from None
    raise _Fallback


def _any(v: Any) -> Any:
    return v


_SCALARS: dict[Any, _Conv] = {str: _same(str), int: _same(int), bool: _same(bool), float: _float,
                              datetime.date: _date, Any: _any, object: _any}


def _converter(tp: Any) -> _Conv:  # noqa: C901 - one branch per kind of annotation
    """How to turn a document's value into the field's value for annotation ``tp``; _Fallback when unsure."""
    if tp in _SCALARS:
        return _SCALARS[tp]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        if any(_transforms(m) for m in args[1:]):
            raise _Fallback  # a validator or a custom schema in the annotation transforms the value
        return _converter(args[0])
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return lambda v: _build(tp, v)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        def to_enum(v: Any) -> Any:
            try:
                return tp(v)
            except ValueError:
                raise _Fallback from None
        return to_enum
    if tp is Path:
        return lambda v: Path(v) if isinstance(v, str) else _fail()
    if origin is typing.Literal:
        allowed = set(args)
        kinds = {type(a) for a in args}

        def literal(v: Any) -> Any:
            if type(v) not in kinds or v not in allowed:
                raise _Fallback
            return v
        return literal
    if origin in (typing.Union, types.UnionType):
        return _union(args)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = _converter(args[0])
            return lambda v: tuple(item(x) for x in v) if isinstance(v, list | tuple) else _fail()
        if args == ((),) or not args:
            return lambda v: tuple(v) if isinstance(v, list | tuple) and not v else _fail()
        items = [_converter(a) for a in args]

        def fixed(v: Any) -> Any:
            if not isinstance(v, list | tuple) or len(v) != len(items):
                raise _Fallback
            return tuple(c(x) for c, x in zip(items, v, strict=True))
        return fixed
    if origin in (list, set, frozenset):
        item = _converter(args[0]) if args else _any
        kind = origin

        def seq(v: Any) -> Any:
            if not isinstance(v, list | tuple):
                raise _Fallback
            return kind(item(x) for x in v)
        return seq
    if origin is dict:
        if len(args) != 2 or args[0] is not str:
            raise _Fallback
        val = _converter(args[1])

        def mapping(v: Any) -> Any:
            if not isinstance(v, dict) or not all(type(k) is str for k in v):
                raise _Fallback
            return {k: val(x) for k, x in v.items()}
        return mapping
    raise _Fallback


def _fail() -> Any:
    raise _Fallback


def _union(args: tuple[Any, ...]) -> _Conv:
    """A union, member chosen by the value's own kind as pydantic's smart mode chooses it: None for a nullable
    union, a dict for its one model member, a list for its one tuple / list member, a scalar that one scalar or
    Literal member takes exactly (``int | float`` keeps an int). A value two members could take in lax mode, or
    none exactly, is validated."""
    members = [a for a in args if a is not type(None)]
    nullable = len(members) < len(args)
    if len(members) == 1:
        inner = _converter(members[0])
        return (lambda v: None if v is None else inner(v)) if nullable else inner
    models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    seqs = [m for m in members if typing.get_origin(m) in (tuple, list)]
    scalars = {m for m in members if m in (str, int, float, bool)}
    literals = {(type(a), a) for m in members if typing.get_origin(m) is typing.Literal for a in typing.get_args(m)}
    known = len(models) + len(seqs) + len(scalars) + sum(typing.get_origin(m) is typing.Literal for m in members)
    if known != len(members) or len(models) > 1 or len(seqs) > 1:
        raise _Fallback
    model = _converter(models[0]) if models else None
    seq = _converter(seqs[0]) if seqs else None

    def pick(v: Any) -> Any:
        if v is None:
            if nullable:
                return None
            raise _Fallback
        if isinstance(v, dict):
            if model is None:
                raise _Fallback
            return model(v)
        if isinstance(v, list | tuple):
            if seq is None:
                raise _Fallback
            return seq(v)
        if type(v) in scalars or (type(v), v) in literals:
            return v
        raise _Fallback
    return pick
