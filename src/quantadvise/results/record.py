"""``record``: the value classes the computation passes around (frozen dataclasses, made in one step)."""

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar, overload

from typing_extensions import dataclass_transform

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
