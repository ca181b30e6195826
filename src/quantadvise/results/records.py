"""``record``: the value classes the computation passes around (frozen dataclasses, made in one step)."""

import copy
import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Any, TypeVar, overload

from typing_extensions import dataclass_transform

from .convert import is_classvar

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
    ``replace`` / ``asdict`` — made in ~0.05 ms instead of ~0.6: nothing is compiled until the class is built
    often (its first ``__init__`` binds the fields' signature itself; the compiled one takes over after
    :data:`COMPILE_AFTER` instances), the other methods are closures over the field names, and the fields are set
    up without ``dataclass``'s pass over the class (CPython 3.11's ``dataclass`` compiles six sources a frozen
    class and three a plain one, which a command defining fifty classes pays at every start). Fields
    honour ``default``, ``default_factory``, ``repr=False`` and ``compare=False``; no ``InitVar``,
    ``init=False``, ``hash=``, ``kw_only``, ``__post_init__`` or dataclass bases (a class that needs them
    uses ``dataclass``)."""

    def wrap(c: type[Any]) -> type[Any]:
        undocumented = not c.__dict__.get("__doc__")
        if undocumented:  # else dataclass writes one from inspect.signature: the tokenizer's regex, 5 ms at first use
            c.__doc__ = c.__name__
        c = _as_dataclass(c, slots, frozen)
        _record_methods(c, slots, frozen)
        if undocumented:
            c.__doc__ = f"{c.__name__}({', '.join(f.name for f in dataclasses.fields(c))})"
        return c

    return wrap if cls is None else wrap(cls)


def _params(frozen: bool) -> Any:
    """The ``__dataclass_params__`` ``dataclass`` gives a class (init, repr, eq; frozen or not): made directly
    where the interpreter's ``_DataclassParams`` takes CPython 3.11's six settings (making a class for it cost
    ~0.3 ms each at every start), else from a class ``dataclass`` makes (``tests/unit/test_record.py`` holds the
    two equal)."""
    try:
        return dataclasses._DataclassParams(  # type: ignore[attr-defined]
            init=True, repr=True, eq=True, order=False, unsafe_hash=False, frozen=frozen)
    except (AttributeError, TypeError):
        return _made_params(frozen)


def _made_params(frozen: bool) -> Any:
    made: Any = dataclasses.dataclass(frozen=frozen)(type("_Params", (), {"__doc__": "-"}))
    return made.__dataclass_params__


_PARAMS = {True: _params(True), False: _params(False)}


def _as_dataclass(c: type[Any], slots: bool, frozen: bool) -> type[Any]:
    """``c`` with the fields ``dataclass`` would give it (``dataclasses.fields`` / ``replace`` / ``asdict`` /
    ``is_dataclass`` read them), its ``__dataclass_params__`` and ``__match_args__``, and with ``slots`` the
    slotted class ``dataclass(slots=True)`` makes — without ``dataclass``'s own pass over the class (~0.25 ms
    a class: a cold ``recommend`` defines about a hundred). The methods are :func:`_record_methods`'."""
    fields: dict[str, dataclasses.Field[Any]] = {}
    for name, annotation in c.__dict__.get("__annotations__", {}).items():
        if is_classvar(annotation):
            continue
        if isinstance(annotation, dataclasses.InitVar) or annotation is dataclasses.InitVar:
            raise TypeError(f"{c.__qualname__}: record has no InitVar fields")
        value = c.__dict__.get(name, dataclasses.MISSING)
        f: Any = value if isinstance(value, dataclasses.Field) else dataclasses.field(default=value)
        f.name, f.type = name, annotation
        f._field_type = dataclasses._FIELD  # type: ignore[attr-defined]  # the kind dataclasses.fields() keeps
        if f.kw_only is dataclasses.MISSING:
            f.kw_only = False
        if f.default is not dataclasses.MISSING and f.default.__class__.__hash__ is None:
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
        if isinstance(value, dataclasses.Field):  # the class attribute is the default, as dataclass leaves it
            if f.default is dataclasses.MISSING:
                delattr(c, name)
            else:
                setattr(c, name, f.default)
        fields[name] = f
    if slots:
        ns = dict(c.__dict__)
        for name in (*fields, "__dict__", "__weakref__"):
            ns.pop(name, None)
        ns["__slots__"] = tuple(fields)
        qualname = c.__qualname__
        meta: Any = type(c)
        c = meta(c.__name__, c.__bases__, ns)
        c.__qualname__ = qualname
    made: Any = c
    made.__dataclass_fields__ = fields
    made.__dataclass_params__ = copy.copy(_PARAMS[frozen])
    setattr(made, "__match_args__", tuple(fields))  # noqa: B010 - mypy will not let a class attribute be set
    return c


def _record_methods(c: type[Any], slots: bool, frozen: bool = True) -> None:
    """Give ``c`` its methods (see :func:`record`): ``__init__`` binding the fields' signature (compiled once the
    class is built often: :func:`_first_init`), the rest closures over the field names."""
    fields = dataclasses.fields(c)
    if any(f.kw_only is True or not f.init or f.hash is not None for f in fields) or any(
            dataclasses.is_dataclass(b) for b in c.__mro__[1:]) or hasattr(c, "__post_init__"):
        raise TypeError(f"{c.__qualname__}: record has no kw_only, init=False or hash= fields, __post_init__ "
                        "or dataclass bases")
    exact = functools.cache(lambda: _compiled_init(c, fields, frozen))
    methods = _record_closures(c, tuple(f.name for f in fields), tuple(f.name for f in fields if f.repr),
                               tuple(f.name for f in fields if f.compare))
    if not frozen:  # a plain dataclass: mutable, and so unhashable (eq without frozen sets __hash__ to None)
        methods = {k: v for k, v in methods.items() if k in ("__repr__", "__eq__")}
        c.__hash__ = None  # type: ignore[assignment]
    methods["__init__"] = _first_init(c, fields, frozen, exact)
    for name, fn in methods.items():
        fn.__qualname__ = f"{c.__qualname__}.{name}"
        setattr(c, name, fn)
    if slots and frozen:  # copy / pickle of a frozen slotted instance (dataclass adds the same pair)
        setattr(c, "__getstate__", _record_getstate)  # noqa: B010 - a method the class is given
        setattr(c, "__setstate__", _record_setstate)  # noqa: B010


# Constructions of a record class its first ``__init__`` serves before the compiled one takes its place. Compiling
# an ``__init__`` costs ~0.2 ms a class in a cold process (~10 ms of a ``recommend``, which defines fifty and builds
# ~1,400 instances, most classes a few times); a loop that builds one class thousands of times gets the compiled
# one after this many.
COMPILE_AFTER = 256
_UNSET: Any = object()


def _first_init(c: type[Any], fields: tuple[dataclasses.Field[Any], ...], frozen: bool,
                exact: Callable[[], Callable[..., None]]) -> Callable[..., None]:
    """The ``__init__`` a record starts with: the compiled one's binding (positional, then keywords, then each
    field's default or factory) without compiling it; anything it does not bind (an unknown keyword, a field given
    twice or missing, too many arguments) is handed to the compiled one, which raises Python's own TypeError.
    After :data:`COMPILE_AFTER` constructions the class gets the compiled one."""
    names = tuple(f.name for f in fields)
    n = len(names)
    index = {name: i for i, name in enumerate(names)}
    fill: list[tuple[Any, Any]] = [(f.default, f.default_factory if f.default_factory is not dataclasses.MISSING
                                    else None) for f in fields]
    set_ = object.__setattr__ if frozen else setattr
    # a slotted record's fields set through their slots' descriptors (what object.__setattr__ ends in, ~25% faster)
    slotted = all(isinstance(c.__dict__.get(name), types.MemberDescriptorType) for name in names)
    slots: tuple[Callable[[Any, Any], None], ...] = tuple(c.__dict__[name].__set__ for name in names) if slotted else ()
    made = [0]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        made[0] += 1
        if made[0] > COMPILE_AFTER and c.__dict__.get("__init__") is __init__:
            c.__init__ = exact()
        given = len(args)
        if given == n and not kwargs:  # every field, in order (two thirds of a recommend's instances)
            if slotted:
                for put, value in zip(slots, args):  # noqa: B905 - the same length
                    put(self, value)
                return None
            for name, value in zip(names, args):  # noqa: B905 - the same length
                set_(self, name, value)
            return None
        if given > n:
            return exact()(self, *args, **kwargs)
        values = [*args, *(_UNSET,) * (n - given)]
        for key, value in kwargs.items():
            i = index.get(key, -1)
            if i < given:  # unknown, or given positionally too
                return exact()(self, *args, **kwargs)
            values[i] = value
        for i in range(given, n):
            if values[i] is _UNSET:
                default, factory = fill[i]
                if default is not dataclasses.MISSING:
                    values[i] = default
                elif factory is not None:
                    values[i] = factory()
                else:  # a required field left out
                    return exact()(self, *args, **kwargs)
        if slotted:
            for put, value in zip(slots, values):  # noqa: B905 - the same length
                put(self, value)
            return None
        for name, value in zip(names, values, strict=True):
            set_(self, name, value)
        return None

    __init__.__name__ = "__init__"
    return __init__


def _compiled_init(c: type[Any], fields: tuple[dataclasses.Field[Any], ...], frozen: bool) -> Callable[..., None]:
    """``c``'s ``__init__`` as ``dataclass`` writes it: compiled, its signature the fields'."""
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
    init: Callable[..., None] = made["__init__"]
    init.__qualname__ = f"{c.__qualname__}.__init__"
    return init


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


_F = TypeVar("_F", bound=Callable[..., Any])


def by_identity(size: int = 256) -> Callable[[_F], _F]:
    """A pure function of immutable values (records, shipped rows, result pieces) memoized by the identity of its
    positional arguments: a walk asks the same question of the same objects many times (a scan re-walks one
    resolved workload). The arguments are held with the answer, so an id is never read for another object;
    at ``size`` entries the memo starts over; a call with keywords is not memoized."""

    def wrap(fn: _F) -> _F:
        memo: dict[tuple[int, ...], tuple[tuple[Any, ...], Any]] = {}

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            if kwargs or not args:
                return fn(*args, **kwargs)
            key = tuple(map(id, args))
            got = memo.get(key)
            if got is not None:
                held = got[0]
                if held[0] is args[0] and (len(args) == 1 or all(a is b for a, b in zip(held, args, strict=True))):
                    return got[1]
            out = fn(*args)
            if len(memo) >= size:
                memo.clear()
            memo[key] = (args, out)
            return out

        return call  # type: ignore[return-value]

    return wrap
