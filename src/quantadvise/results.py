"""One base for every result quantadvise returns, and the one JSON schema version.

Every command's result is a :class:`Result`: a frozen pydantic model whose
``model_dump(mode="json")`` is exactly what ``--format json`` prints, stamped with
:data:`SCHEMA_VERSION`. Nested pieces derive from :class:`Out`. Data rows and user files
validated on the way in derive from :class:`Strict` (unknown keys rejected). Values the
computation passes around (not validated, not printed as JSON) are :func:`record` classes.
"""

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar, overload

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer
from typing_extensions import dataclass_transform

# The version of every JSON report (size, roofline, recommend, inspect, engines, check, accuracy,
# calibrate, validate). A change that renames or removes a field bumps it, with a CHANGELOG entry.
SCHEMA_VERSION = 1


class Out(BaseModel):
    """A piece of a result: frozen, built lazily (no schema cost until first used)."""

    model_config = ConfigDict(frozen=True, defer_build=True)


class OmitNone(Out):
    """A piece whose optional keys are absent from the JSON, not null, when unset (e.g. a deploy
    hint an engine does not have). ``omit_if_none`` names them."""

    omit_if_none: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _omit(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for key in self.omit_if_none:
                if data.get(key) is None:
                    data.pop(key, None)
        return data


class Result(Out):
    """A command's whole result."""

    schema_version: int = SCHEMA_VERSION


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
        if isinstance(t, type) and issubclass(t, BaseModel):
            return t
        origin, args = typing.get_origin(t), typing.get_args(t)
        if origin in (list, tuple, set, frozenset) and args and (got := _inner(args[0])) is not None:
            return ("seq", got)
        if origin is dict and len(args) == 2 and (got := _inner(args[1])) is not None:
            return ("map", got)
    return None


def _keys(cls: type[BaseModel]) -> tuple[frozenset[str], dict[str, Any]]:
    """(the keys of ``cls``'s number fields, every spelling; the keys of its nested models -> what they hold)."""
    got = _NUMBER_KEYS.get(cls)
    if got is None:
        numbers: set[str] = set()
        nested: dict[str, Any] = {}
        for name, f in cls.model_fields.items():
            va = f.validation_alias
            spellings = {name, name.replace("_", "-"), *(c for c in (getattr(va, "choices", None) or (va,))
                                                         if isinstance(c, str)), *((f.alias,) if f.alias else ())}
            kinds = _flatten(f.annotation)
            if kinds & {int, float} and bool not in kinds:
                numbers |= spellings
            inner = _inner(f.annotation)
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


class Strict(BaseModel):
    """Validated input: a data row, a config file, a profile. Unknown keys are errors, and so is a
    number that is not finite (nan, inf: a profile's curve through nan prices nothing); a user's file is
    passed through :func:`plain_numbers` first."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)


_T = TypeVar("_T")
_HAS_FACTORY = object()  # a parameter left out whose field has a default_factory


@overload
def record(cls: type[_T], /) -> type[_T]: ...
@overload
def record(*, slots: bool = ..., frozen: bool = ...) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: type[Any] | None = None, /, *, slots: bool = False, frozen: bool = True) -> Any:
    """A dataclass, made in one step: ``@record`` is ``@dataclass(frozen=True)``, ``@record(slots=True)``
    ``@dataclass(frozen=True, slots=True)`` and ``@record(frozen=False)`` a plain ``@dataclass`` — the
    same ``__init__``, ``__repr__``, ``__eq__`` and, frozen, ``__hash__`` and the frozen ``__setattr__`` /
    ``__delattr__`` (not frozen: unhashable, as ``dataclass`` makes it), the same ``dataclasses.fields`` /
    ``replace`` / ``asdict`` — made in ~0.2 ms instead of ~0.6: only ``__init__`` is compiled, the other
    methods are closures over the field names (CPython 3.11's ``dataclass`` compiles six sources a frozen
    class and three a plain one, which a command defining fifty classes pays at every start). Fields
    honour ``default``, ``default_factory``, ``repr=False`` and ``compare=False``; no ``InitVar``,
    ``init=False``, ``hash=``, ``kw_only``, ``__post_init__`` or dataclass bases (a class that needs them
    uses ``dataclass``)."""

    def wrap(c: type[Any]) -> type[Any]:
        undocumented = not c.__dict__.get("__doc__")
        if undocumented:  # else dataclass writes one from inspect.signature: the tokenizer's regex, 5 ms at first use
            c.__doc__ = c.__name__
        c = dataclasses.dataclass(init=False, repr=False, eq=False, slots=slots)(c)
        _record_methods(c, slots, frozen)
        if undocumented:
            c.__doc__ = f"{c.__name__}({', '.join(f.name for f in dataclasses.fields(c))})"
        params = c.__dataclass_params__
        params.init = params.repr = params.eq = True  # what the class now is
        params.frozen = frozen
        return c

    return wrap if cls is None else wrap(cls)


def _record_methods(c: type[Any], slots: bool, frozen: bool = True) -> None:
    """Give ``c`` its methods (see :func:`record`): ``__init__`` compiled (its signature is the
    fields'), the rest closures over the field names."""
    fields = dataclasses.fields(c)
    if any(f.kw_only is True or not f.init or f.hash is not None for f in fields) or any(
            dataclasses.is_dataclass(b) for b in c.__mro__[1:]) or hasattr(c, "__post_init__"):
        raise TypeError(f"{c.__qualname__}: record has no kw_only, init=False or hash= fields, __post_init__ "
                        "or dataclass bases")
    env: dict[str, Any] = {"__set": object.__setattr__, "__FACTORY": _HAS_FACTORY}
    params, body = [], []
    for f in fields:
        if f.default is not dataclasses.MISSING:
            env[f"__d_{f.name}"] = f.default
            params.append(f"{f.name}=__d_{f.name}")
            value = f.name
        elif f.default_factory is not dataclasses.MISSING:
            env[f"__f_{f.name}"] = f.default_factory
            params.append(f"{f.name}=__FACTORY")
            value = f"__f_{f.name}() if {f.name} is __FACTORY else {f.name}"
        else:
            params.append(f.name)
            value = f.name
        body.append(f" __set(self, {f.name!r}, {value})" if frozen else f" self.{f.name} = {value}")
    made: dict[str, Any] = {}
    src = "\n".join([f"def __init__(self, {', '.join(params)}):", *(body or [" pass"])])
    exec(compile(src, f"<record {c.__qualname__}>", "exec"), env, made)  # noqa: S102 - our own generated source
    methods = _record_closures(c, tuple(f.name for f in fields), tuple(f.name for f in fields if f.repr),
                               tuple(f.name for f in fields if f.compare))
    if not frozen:  # a plain dataclass: mutable, and so unhashable (eq without frozen sets __hash__ to None)
        methods = {k: v for k, v in methods.items() if k in ("__repr__", "__eq__")}
        c.__hash__ = None  # type: ignore[assignment]
    methods["__init__"] = made["__init__"]
    for name, fn in methods.items():
        fn.__qualname__ = f"{c.__qualname__}.{name}"
        setattr(c, name, fn)
    if slots and frozen:  # copy / pickle of a frozen slotted instance (dataclass adds the same pair)
        setattr(c, "__getstate__", _record_getstate)  # noqa: B010 - a method the class is given
        setattr(c, "__setstate__", _record_setstate)  # noqa: B010


def _record_closures(c: type[Any], names: tuple[str, ...], shown: tuple[str, ...],
                     compared: tuple[str, ...]) -> dict[str, Callable[..., Any]]:
    """``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__`` as dataclass writes them."""
    from operator import attrgetter

    key = attrgetter(*compared) if len(compared) > 1 else (
        (lambda self: (getattr(self, compared[0]),)) if compared else (lambda self: ()))
    frozen = frozenset(names)

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
        return f"{self.__class__.__qualname__}({inner})"

    def __eq__(self: Any, other: object) -> Any:
        return key(self) == key(other) if other.__class__ is self.__class__ else NotImplemented

    def __hash__(self: Any) -> int:
        return hash(key(self))

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is c or name in frozen:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(c, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is c or name in frozen:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(c, self).__delattr__(name)

    return {"__repr__": __repr__, "__eq__": __eq__, "__hash__": __hash__, "__setattr__": __setattr__,
            "__delattr__": __delattr__}


def _record_getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _record_setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=True):
        object.__setattr__(self, f.name, value)
