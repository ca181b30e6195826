"""What pydantic's lax mode makes of a value, for the values it keeps or converts without judgement.

One converter per annotation, shared by the two places that build models without validating them: a result
piece made from values the computation holds (``results/light.py``) and a shipped table's document
(``catalog/trusted.py``). A converter returns the value pydantic would store — an int given to a float field as a
float, a list given to a tuple field as a tuple, a value given to an enum field as its member, text given to a
date or path field as one — or raises :class:`Fallback` for anything else (a value of another type, a union
two members could take, a validator in the annotation), and the caller validates instead: the result is never
a guess.
"""

import datetime
import enum
import math
import operator
import types
import typing
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

Conv = Callable[[Any], Any]


class Fallback(Exception):
    """The converter cannot reproduce pydantic's result for this value exactly: validate it instead."""


def is_classvar(annotation: Any) -> bool:
    """``ClassVar`` / ``ClassVar[...]``, or a string that starts so (``dataclass``'s own test): not a field."""
    if isinstance(annotation, str):
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    # ClassVar[X] is a typing alias whose origin is ClassVar (what typing.get_origin reads, without its checks)
    return annotation is typing.ClassVar or getattr(annotation, "__origin__", None) is typing.ClassVar


def one_argument(func: Callable[..., Any]) -> bool:
    """A validator of the value alone (pydantic also calls some with an info argument: those it runs itself): one
    positional parameter without a default, as ``inspect.signature`` counts them (a bound method less its first).
    A plain function or method is counted from its code (``inspect.signature`` costs ~20 us: a cold command checks
    some seventy validators); anything else (a wrapper, a partial, a callable object) by ``inspect.signature``."""
    f, bound = (func.__func__, 1) if isinstance(func, types.MethodType) else (func, 0)
    if type(f) is types.FunctionType and not hasattr(f, "__wrapped__") and not hasattr(f, "__signature__"):
        return f.__code__.co_argcount - len(f.__defaults__ or ()) - bound == 1
    import inspect

    try:
        params = [p for p in inspect.signature(func).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    except (TypeError, ValueError):
        return False
    return len(params) == 1


def fail(*_: Any) -> Any:
    raise Fallback


def _exact(kind: type) -> Conv:
    def conv(v: Any) -> Any:
        if type(v) is not kind:
            raise Fallback
        return v
    return conv


def _float(v: Any) -> Any:
    t = type(v)
    if t is float:
        return v
    if t is int:
        try:
            return float(v)
        except OverflowError:  # an int past the largest float (10**400): pydantic's error says so
            raise Fallback from None
    raise Fallback


def _finite_float(v: Any) -> Any:
    got = _float(v)
    if not math.isfinite(got):
        raise Fallback
    return got


def _date(v: Any) -> Any:
    if type(v) is datetime.date:
        return v
    if isinstance(v, str):
        try:
            return datetime.date.fromisoformat(v)
        except ValueError:
            raise Fallback from None
    raise Fallback


def _any(v: Any) -> Any:
    return v


_HASHABLE = {str, int, float, bool, bytes, type(None)}  # the kinds of value a Literal holds
_SCALARS: dict[Any, Conv] = {str: _exact(str), int: _exact(int), bool: _exact(bool), float: _float,
                             datetime.date: _date, Any: _any, object: _any}


# the scalar converters that return a value of these exact types as it is (a tuple of them is copied whole)
_PASSING: dict[Conv, frozenset[type]] = {_SCALARS[str]: frozenset({str}), _SCALARS[int]: frozenset({int}),
                                         _SCALARS[bool]: frozenset({bool}), _float: frozenset({float})}

# converters made, by (annotation, model, metadata, finite, before): a command builds ~1,000 for ~300 annotations
# (``str``, ``tuple[str, ...]`` ... in every row class); a converter is a function of the value alone, so one
# serves every field of the same annotation
_MADE: dict[tuple[Any, ...], Conv] = {}


def converter(tp: Any, model: Callable[[type], Conv], metadata: Callable[[Any], bool], *,
              finite: bool = False, before: Callable[[Any], Callable[[Any], Any] | None] | None = None) -> Conv:
    """The converter of annotation ``tp`` (:func:`_converter`), made once per annotation and settings (a scalar's
    is read from ``_SCALARS`` each time)."""
    if tp in _SCALARS and not (finite and tp is float):
        return _SCALARS[tp]
    try:
        key = (tp, model, metadata, finite, before)
        made = _MADE.get(key)
    except TypeError:  # an annotation that cannot be a key (unhashable metadata)
        return _converter(tp, model, metadata, finite=finite, before=before)
    if made is None:
        made = _MADE[key] = _converter(tp, model, metadata, finite=finite, before=before)
    return made


def _converter(tp: Any, model: Callable[[type], Conv], metadata: Callable[[Any], bool], *,  # noqa: C901
               finite: bool = False, before: Callable[[Any], Callable[[Any], Any] | None] | None = None) -> Conv:
    """The converter of annotation ``tp``. ``model(cls)`` converts for a model class (a pydantic model or a result
    piece); ``metadata(m)`` says whether an ``Annotated`` item forces validation (a validator always does; a
    constraint does where the value was not validated before); ``finite``: a float that is not finite is
    validated (pydantic's ``allow_inf_nan=False`` refuses it); ``before(m)``: the function of an ``Annotated`` item
    to run on the value before its conversion, as pydantic runs a ``BeforeValidator`` (None: not one). Raises
    :class:`Fallback` for an annotation it does not know."""
    if finite and tp is float:
        return _finite_float
    if tp in _SCALARS:
        return _SCALARS[tp]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        pre = [f for f in (before(m) if before else None for m in args[1:]) if f is not None]
        if len(pre) > 1 or any(metadata(m) for m in args[1:] if not (before and before(m))):
            raise Fallback
        inner = converter(args[0], model, metadata, finite=finite, before=before)
        if pre:
            first = pre[0]
            return lambda v: inner(first(v))
        return inner
    if isinstance(tp, type) and hasattr(tp, "model_dump"):
        return model(tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        def to_enum(v: Any) -> Any:
            if isinstance(v, tp):
                return v
            try:
                return tp(v)
            except ValueError:
                raise Fallback from None
        return to_enum
    if origin is typing.Literal:
        allowed = {(type(a), a) for a in args}

        def literal(v: Any) -> Any:
            if type(v) not in _HASHABLE or (type(v), v) not in allowed:
                raise Fallback
            return v
        return literal
    if origin in (typing.Union, types.UnionType):
        return _union(args, model, metadata, finite, before)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = converter(args[0], model, metadata, finite=finite, before=before)
            kinds = _PASSING.get(item)
            if kinds is not None:  # items a scalar converter passes as they are: one pass over their types, in C
                return lambda v: (tuple(v) if kinds.issuperset(map(type, v)) else tuple([item(x) for x in v])) \
                    if type(v) in (list, tuple) else fail()
            return lambda v: tuple([item(x) for x in v]) if type(v) in (list, tuple) else fail()
        if args == ((),) or not args:
            return lambda v: tuple(v) if type(v) in (list, tuple) and not (args and v) else fail()
        items = [converter(a, model, metadata, finite=finite, before=before) for a in args]

        def fixed(v: Any) -> Any:
            if type(v) not in (list, tuple) or len(v) != len(items):
                raise Fallback
            return tuple([c(x) for c, x in zip(items, v, strict=True)])
        return fixed
    if origin in (list, set, frozenset):
        item = converter(args[0], model, metadata, finite=finite, before=before) if args else _any
        kind = origin
        return lambda v: kind([item(x) for x in v]) if type(v) in (list, tuple, set, frozenset) else fail()
    if origin is dict:
        key = converter(args[0], model, metadata, finite=finite, before=before) if args else _any
        val = converter(args[1], model, metadata, finite=finite, before=before) if len(args) == 2 else _any

        def mapping(v: Any) -> Any:
            if type(v) is not dict:
                raise Fallback
            return {key(k): val(x) for k, x in v.items()}
        return mapping
    if tp is type(None) or tp is None:
        return lambda v: None if v is None else fail()
    if isinstance(tp, type) and issubclass(tp, PurePath):
        return lambda v: v if type(v) is tp else (tp(v) if isinstance(v, str) else fail())
    if isinstance(tp, type) and tp not in (list, tuple, dict, set, frozenset, type) and origin is None:
        return lambda v: v if isinstance(v, tp) else fail()  # another class: its instances pass as they are
    raise Fallback


def _strict_scalar(tp: Any) -> Any:
    """``StrictInt`` and its kin (``Annotated[int, Strict()]``) as their scalar: a union member matched by the value's
    exact type, which is what strict mode accepts (an int, not a bool or a numeric text); any other annotation as
    it is."""
    if typing.get_origin(tp) is typing.Annotated:
        base, *meta = typing.get_args(tp)
        if base in (str, int, float, bool) and meta and all(
                type(m).__name__ == "Strict" and type(m).__module__ == "pydantic.types" and m.strict is True
                for m in meta):
            return base
    return tp


def _union(args: tuple[Any, ...], model: Callable[[type], Conv], metadata: Callable[[Any], bool],
           finite: bool, before: Callable[[Any], Callable[[Any], Any] | None] | None = None) -> Conv:
    """A union, its member chosen as pydantic's smart mode chooses it for the value's own type: None for a nullable
    union; an instance of a class member as it is, a dict for its one model member; a list / tuple for its one
    tuple / list member; a scalar its exact type's member (``int | float`` keeps an int; ``float | str`` takes an
    int as a float). A value two members could take, or none exactly, is validated."""
    members = [_strict_scalar(a) for a in args if a is not type(None)]
    nullable = len(members) < len(args)
    if len(members) == 1:
        inner = converter(members[0], model, metadata, finite=finite, before=before)
        return (lambda v: None if v is None else inner(v)) if nullable else inner
    classes = [m for m in members if isinstance(m, type) and hasattr(m, "model_dump")]
    seqs = [m for m in members if typing.get_origin(m) in (tuple, list)]
    scalars = {m for m in members if m in (str, int, float, bool)}
    literals = {(type(a), a) for m in members if typing.get_origin(m) is typing.Literal for a in typing.get_args(m)}
    known = len(classes) + len(seqs) + len(scalars) + sum(typing.get_origin(m) is typing.Literal for m in members)
    if known != len(members) or len(seqs) > 1:
        raise Fallback
    one_model = model(classes[0]) if len(classes) == 1 else None
    seq = converter(seqs[0], model, metadata, finite=finite, before=before) if seqs else None
    floats = float in scalars and int not in scalars

    def pick(v: Any) -> Any:
        if v is None:
            if nullable:
                return None
            raise Fallback
        t = type(v)
        if t is float and finite and not math.isfinite(v):
            raise Fallback
        if t in scalars or (t in _HASHABLE and (t, v) in literals):
            return v
        if t is int and floats:
            return _float(v)
        if t is dict:
            if one_model is None:
                raise Fallback
            return one_model(v)
        if seq is not None and t in (list, tuple):
            return seq(v)
        for c in classes:
            if isinstance(v, c):
                return v
        raise Fallback
    return pick


LIMIT_OPS = {"gt": operator.gt, "ge": operator.ge, "lt": operator.lt, "le": operator.le}


def bounds(meta: Any) -> list[tuple[str, Any]] | None:
    """A numeric limit of ``Annotated`` / ``Field`` (annotated_types' Interval, Gt, Ge, Lt, Le) as (operator,
    bound) pairs; None for any other metadata."""
    if type(meta).__module__ != "annotated_types" or type(meta).__name__ not in ("Interval", "Gt", "Ge", "Lt", "Le"):
        return None
    return [(op, b) for op in LIMIT_OPS if (b := getattr(meta, op, None)) is not None]


def enum_inside(tp: Any, top: bool) -> bool:
    """Whether an enum sits inside a container of ``tp`` (one at the top or in a top union is read as its value)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        args = typing.get_args(tp)
        return any(enum_inside(a, top) for a in (args[:1] if origin is typing.Annotated else args))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return not top
    return any(enum_inside(a, False) for a in typing.get_args(tp))
