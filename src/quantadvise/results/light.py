"""``Out``: a piece of a result, made without pydantic's class machinery.

A command defines fifty-odd result classes before it prints a line; as pydantic models each cost ~0.45 ms to
define and ~0.5 ms more to build its validator at first use (a cold ``recommend`` paid ~40 ms for pieces it
builds from values it already holds). An :class:`Out` class is a plain class with pydantic's surface: keyword
``__init__`` that converts what pydantic's lax mode converts for the values our code passes (an int given to a
float field, a list to a tuple field, a value to its enum, a dict to a nested piece), frozen, ``==`` and hash
by value, ``model_dump`` (``mode="json"`` is exactly what pydantic writes: enums as values, tuples and sets as
lists, dict keys as text, dates as ISO text, nested pydantic models through their own ``model_dump``),
``model_copy``, ``model_construct``, ``model_fields_set`` and ``repr``. Anything the conversion does not know
— a missing field, a value of another type — is validated by a pydantic model of the same fields (the class's
*shadow*, made on first need), so pydantic's errors and conversions still decide every case the fast path
does not; the same shadow answers ``model_validate`` / ``model_fields`` and lets a pydantic model hold a piece.

Numeric limits (``Field(ge=0)``, ``Annotated[int, Interval(...)]``) are checked after the conversion, validation
aliases of names (``AliasChoices``) read, ``use_enum_values`` / ``validate_default`` / ``populate_by_name``
(``__light_config__``) honoured; a field with any other constraint is always validated by the shadow.
Validators that are functions of the value alone run as pydantic runs them: a ``model_validator(mode="before")``
on the input, a field's ``before`` and ``after`` validators around its conversion, ``model_validator(mode=
"after")`` checks on the made piece (a ValueError sends the input to the shadow, for pydantic's error). A class
whose validators wrap, serialize or take pydantic's info argument, or with private attributes or its own
``model_config``, is refused at definition: it derives from a pydantic base (``StrictModel``, ``Validated``).
``results.Strict`` is this class with pydantic's ``extra="forbid"`` and ``allow_inf_nan=False``
(``__light_config__``): a data row or a user's file. ``omit_if_none`` names keys left out of the dump when
None; ``_dumped`` may edit a dump.
"""

import copy
import enum
import functools
import sys
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Self

from pydantic import BaseModel, Field
from pydantic._internal._decorators import PydanticDescriptorProxy
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined, ValidationError
from typing_extensions import dataclass_transform

from ..wording import finite_doc
from .convert import LIMIT_OPS, bounds, converter, enum_inside, fail, is_classvar, one_argument
from .convert import Conv as _Conv
from .convert import Fallback as _Fallback
from .dump import Opts, dump_value

_MISSING: Any = object()


class _Field:
    """One field: its annotation as written, default / factory, alias, and whether the dump leaves it out."""

    __slots__ = ("alias", "annotation", "checked", "choices", "default", "exclude", "factory", "info", "name", "shown")

    def __init__(self, name: str, annotation: Any, value: Any, owner: str):
        self.name, self.annotation, self.info = name, annotation, None
        self.default, self.factory, self.alias, self.exclude, self.shown = _MISSING, None, None, False, True
        self.checked = False  # an alias path, a discriminator ...: every value of the field is validated by the shadow
        self.choices: tuple[str, ...] = ()  # the keys of a validation alias (AliasChoices of names)
        if isinstance(value, FieldInfo):
            va = value.validation_alias
            self.choices = (va,) if isinstance(va, str) else tuple(getattr(va, "choices", None) or ())
            odd_alias = va is not None and not (self.choices and all(isinstance(c, str) for c in self.choices))
            self.checked = bool(odd_alias or value.serialization_alias or value.discriminator
                                or any(bounds(m) is None for m in value.metadata))
            self.info = value
            if value.default is not PydanticUndefined:
                self.default = value.default
            self.factory = value.default_factory
            self.alias, self.exclude, self.shown = value.alias, bool(value.exclude), value.repr
        elif value is not _MISSING:
            self.default = value

    @property
    def required(self) -> bool:
        return self.default is _MISSING and self.factory is None

    def fill(self) -> Any:
        """The value of a field left out (pydantic copies a mutable default; a factory makes a new one)."""
        if self.factory is not None:
            return typing.cast(Callable[[], Any], self.factory)()
        d = self.default
        return d if type(d) in _IMMUTABLE else copy.deepcopy(d)


_IMMUTABLE = {type(None), str, int, float, bool, tuple, frozenset, bytes, complex}


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(Field, FieldInfo))
class Out:
    """A piece of a result (see the module): frozen, dumped as pydantic dumps it, defined in microseconds."""

    __slots__ = ("__dict__", "__pydantic_fields_set__")
    __light_fields__: ClassVar[dict[str, _Field]] = {}
    # pydantic settings of the family, for the shadow and the fast path: {"extra": "forbid"} refuses an unknown
    # key, {"allow_inf_nan": False} a float that is not finite (results.Strict sets both)
    __light_config__: ClassVar[dict[str, Any]] = {}
    omit_if_none: ClassVar[tuple[str, ...]] = ()  # keys left out of the dump when None (not written as null)
    model_config: ClassVar[dict[str, Any]] = {"frozen": True}
    model_fields: ClassVar[dict[str, FieldInfo]]  # the shadow's (below): pydantic's FieldInfo per field

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        ns = cls.__dict__
        for bad in ("model_config", "__pydantic_decorators__"):
            if bad in ns:
                raise TypeError(f"{cls.__qualname__}: an Out class has no {bad} (a class that needs its own "
                                "settings derives from StrictModel or Validated)")
        validators: dict[str, Any] = {}
        for base in reversed(cls.__mro__[1:]):
            validators.update(base.__dict__.get("__light_validators__", {}))
        for name, v in ns.items():
            if type(v) is not PydanticDescriptorProxy:
                continue
            kind, mode = type(v.decorator_info).__name__, getattr(v.decorator_info, "mode", None)
            if (kind not in ("ModelValidatorDecoratorInfo", "FieldValidatorDecoratorInfo")
                    or mode not in ("before", "after") or not one_argument(getattr(cls, name))):
                raise TypeError(f"{cls.__qualname__}.{name}: an Out class takes before / after validators of the "
                                "value alone (override _dumped to edit its dump; a class whose validators wrap, "
                                "serialize or read pydantic's info derives from StrictModel)")
            validators[name] = v
        cls.__light_validators__ = validators  # type: ignore[attr-defined]  # the shadow gets them all
        model_before: str | None = None
        checks: list[str] = []
        field_before: dict[str, list[str]] = {}
        field_after: dict[str, list[str]] = {}
        for name, v in validators.items():
            info = v.decorator_info
            if type(info).__name__ == "ModelValidatorDecoratorInfo":
                if info.mode == "after":
                    checks.append(name)
                elif model_before is not None:
                    raise TypeError(f"{cls.__qualname__}: an Out class takes one model_validator(mode='before')")
                else:
                    model_before = name
            else:
                for field in info.fields:
                    (field_before if info.mode == "before" else field_after).setdefault(field, []).append(name)
        if any(len(v) > 1 for v in (*field_before.values(), *field_after.values())):
            raise TypeError(f"{cls.__qualname__}: an Out class takes one before and one after validator a field")
        cls.__light_checks__ = tuple(checks)  # type: ignore[attr-defined]
        cls.__light_before__ = model_before  # type: ignore[attr-defined]
        cls.__light_field_validators__ = {  # type: ignore[attr-defined]
            f: (field_before.get(f, [None])[0], field_after.get(f, [None])[0]) for f in {*field_before, *field_after}}
        fields: dict[str, _Field] = {}
        for base in reversed(cls.__mro__[1:]):
            fields.update(base.__dict__.get("__light_fields__", {}))
        for name, annotation in ns.get("__annotations__", {}).items():
            if is_classvar(annotation):
                continue
            if name.startswith("_"):
                raise TypeError(f"{cls.__qualname__}.{name}: an Out class has no private fields")
            value = ns.get(name, _MISSING)
            fields[name] = _Field(name, annotation, value, cls.__qualname__)
            if isinstance(value, FieldInfo):
                delattr(cls, name)
        cls.__light_fields__ = fields
        cls.model_config = {"frozen": True, **cls.__light_config__}
        cls.__light_plan__ = None  # type: ignore[attr-defined]
        cls.__light_shadow__ = None  # type: ignore[attr-defined]

    # --- making one ------------------------------------------------------------------------------------
    def __init__(self, /, **data: Any):
        self._init(data)

    def _init(self, raw: Any) -> None:
        """Make the piece from ``raw`` (keyword arguments, or what ``model_validate`` was given)."""
        cls = type(self)
        plan = cls.__dict__["__light_plan__"] or _plan(cls)
        values: dict[str, Any] = {}
        given: set[str] = set()
        data = raw
        try:
            if cls.__light_before__ is not None:  # type: ignore[attr-defined]
                try:  # pydantic runs it on the input, then reads the fields
                    data = getattr(cls, cls.__light_before__)(data)  # type: ignore[attr-defined]
                except (ValueError, AssertionError):
                    raise _Fallback from None
                if type(data) is not dict or not all(type(k) is str for k in data):
                    raise _Fallback
            defaults = cls.__light_config__.get("validate_default")
            for name, key, conv, f in plan:
                if type(key) is tuple:  # alias choices: the first given
                    key = next((k for k in key if k in data), key[0])
                if key in data:
                    values[name] = conv(data[key])
                    given.add(name)
                elif f.required:
                    raise _Fallback  # pydantic's "Field required"
                else:
                    values[name] = conv(f.fill()) if defaults else f.fill()
            if len(given) != len(data) and cls.__light_config__.get("extra") == "forbid":
                raise _Fallback  # an unknown key: pydantic's error names it
            checks = cls.__light_checks__  # type: ignore[attr-defined]
            if checks:
                object.__setattr__(self, "__dict__", values)
                object.__setattr__(self, "__pydantic_fields_set__", given)
                try:
                    for name in checks:  # model_validator(mode="after"): pydantic runs them on the made model
                        getattr(self, name)()
                except (ValueError, AssertionError):
                    raise _Fallback from None  # pydantic's error, from the shadow
        except _Fallback:
            done = _from_shadow(cls, _shadow(cls).model_validate(raw))
            values, given = done.__dict__, _given(done)
        else:
            if CHECKING:
                _check(cls, raw, values, given)
        object.__setattr__(self, "__dict__", values)
        object.__setattr__(self, "__pydantic_fields_set__", given)

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Self:
        """A piece from values taken as they are (pydantic's ``model_construct``)."""
        m = cls.__new__(cls)
        fields = cls.__light_fields__
        d = {n: values[n] if n in values else f.fill() for n, f in fields.items()}
        object.__setattr__(m, "__dict__", d)
        object.__setattr__(m, "__pydantic_fields_set__",
                           set(_fields_set) if _fields_set is not None else {n for n in values if n in fields})
        return m

    @classmethod
    def model_validate(cls, obj: Any) -> Self:
        """``obj`` as pydantic validates it: a dict (or anything the class's before-validator reads) by the fast
        path, which hands the shadow what it cannot take; anything else by the shadow."""
        if isinstance(obj, cls):
            return obj
        if _fast(cls, obj):
            m = cls.__new__(cls)
            m._init(obj)
            return m
        return _from_shadow(cls, _shadow(cls).model_validate(obj))

    @classmethod
    def model_validate_json(cls, text: str | bytes) -> Self:
        """JSON text validated by the class's shadow pydantic model."""
        return _from_shadow(cls, _shadow(cls).model_validate_json(text))

    @classmethod
    def model_json_schema(cls, **kwargs: Any) -> dict[str, Any]:
        """The JSON schema of the class's fields, as pydantic writes it for a model of them."""
        return _shadow(cls).model_json_schema(**kwargs)

    # --- reading one -----------------------------------------------------------------------------------
    @property
    def model_fields_set(self) -> set[str]:
        return _given(self)

    def model_dump(self, *, mode: str = "python", include: Any = None, exclude: Any = None, by_alias: bool = False,
                   exclude_unset: bool = False, exclude_defaults: bool = False, exclude_none: bool = False,
                   **_ignored: Any) -> dict[str, Any]:
        """The fields as pydantic's ``model_dump`` writes them (``mode="json"``: what ``--format json`` prints)."""
        opts = Opts(mode == "json", by_alias, exclude_unset, exclude_defaults, exclude_none)
        return self._dump(opts, _names(include), _names(exclude))

    def model_dump_json(self, *, indent: int | None = None, **kwargs: Any) -> str:
        import json

        return json.dumps(finite_doc(self.model_dump(mode="json", **kwargs)), indent=indent, ensure_ascii=False,
                          separators=None if indent is not None else (",", ":"))

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update``'s values as given (not converted: pydantic's ``model_copy``)."""
        m = type(self).__new__(type(self))
        d = copy.deepcopy(_values(self)) if deep else dict(_values(self))
        fs = set(_given(self))
        if update:
            d.update(update)
            fs.update(k for k in update if k in type(self).__light_fields__)
        object.__setattr__(m, "__dict__", d)
        object.__setattr__(m, "__pydantic_fields_set__", fs)
        return m

    def _dump(self, o: Opts, include: set[str] | None, exclude: set[str] | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        d = self.__dict__
        for name, f in type(self).__light_fields__.items():
            if f.exclude or (include is not None and name not in include) or (exclude is not None and name in exclude):
                continue
            v = d[name]
            if (o.unset and name not in _given(self)) or (o.none and v is None):
                continue
            if o.defaults and (f.factory is not None or f.default is not _MISSING) and bool(v == f.fill()):
                continue
            out[f.alias if o.by_alias and f.alias else name] = dump_value(v, o)
        return self._dumped(out)

    def _dumped(self, data: dict[str, Any]) -> dict[str, Any]:
        """The dump, edited: ``omit_if_none``'s keys left out when None. A class may override it."""
        for key in self.omit_if_none:
            if key in data and data[key] is None:
                del data[key]
        return data

    # --- what pydantic's models also answer ------------------------------------------------------------
    @classmethod
    def _fields(cls) -> dict[str, FieldInfo]:
        return _shadow(cls).model_fields

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Out):
            return type(other) is type(self) and _values(other) == _values(self)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((type(self), *_values(self).values()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(self._shown())})"

    def __str__(self) -> str:
        return " ".join(self._shown())

    def _shown(self) -> list[str]:
        fields = type(self).__light_fields__
        return [f"{k}={v!r}" for k, v in self.__dict__.items() if k not in fields or fields[k].shown]

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        yield from _values(self).items()

    def __setattr__(self, name: str, value: Any) -> None:
        raise _frozen(type(self), name, value)

    def __delattr__(self, name: str) -> None:
        raise _frozen(type(self), name, None)

    def __copy__(self) -> Self:
        return self.model_copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        m = type(self).__new__(type(self))
        object.__setattr__(m, "__dict__", copy.deepcopy(_values(self), memo))
        object.__setattr__(m, "__pydantic_fields_set__", set(_given(self)))
        return m

    def __getstate__(self) -> dict[str, Any]:
        return {"__dict__": _values(self), "__pydantic_fields_set__": _given(self)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "__dict__", state["__dict__"])
        object.__setattr__(self, "__pydantic_fields_set__", state["__pydantic_fields_set__"])

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """A pydantic model (or the shadow of another piece) holding this piece: an instance passes as it is,
        anything else is validated by the shadow; the dump is :meth:`model_dump`'s."""
        from pydantic_core import core_schema as cs

        def to_piece(value: Any, validate: Any) -> Any:
            return value if isinstance(value, cls) else _from_shadow(cls, validate(value))

        def dumped(value: Any, info: Any) -> Any:
            return value.model_dump(mode=info.mode, by_alias=bool(info.by_alias), exclude_unset=info.exclude_unset,
                                    exclude_defaults=info.exclude_defaults, exclude_none=info.exclude_none)

        return cs.no_info_wrap_validator_function(  # the shadow's errors, at the field's own place
            to_piece, handler(_shadow(cls)),
            serialization=cs.plain_serializer_function_ser_schema(dumped, info_arg=True))


class _FieldsOf:
    """``Cls.model_fields``: the shadow's fields (pydantic's ``FieldInfo``s), made on first use."""

    def __get__(self, obj: Any, owner: type[Out]) -> dict[str, FieldInfo]:
        return owner._fields()


Out.model_fields = _FieldsOf()  # type: ignore[assignment]


class OmitNone(Out):
    """A piece whose optional keys are absent from the JSON, not null, when unset (e.g. a deploy
    hint an engine does not have). ``omit_if_none`` names them."""


# Inside the test suite (tests/conftest.py): every piece made by the fast path is also validated by its shadow
# and must be identical to it, types included — the conversion the fast path skips is then proven absent.
CHECKING = False


def _check(cls: type[Out], data: dict[str, Any], values: dict[str, Any], given: set[str]) -> None:
    valid = _shadow(cls).model_validate(data)
    if given != valid.model_fields_set or not identical(values, dict(valid.__dict__)):
        raise AssertionError(f"{cls.__qualname__} made without validation differs from the validated one: "
                             f"{values!r} != {dict(valid.__dict__)!r}")


def identical(a: Any, b: Any) -> bool:
    """The same value of the same types all the way down (``1 == 1.0`` and ``Enum.x == "x"`` are not enough):
    pieces / models of one class with the same fields set, tuples / lists / dicts item by item (a child passed
    through validation as it is is the same object: already proven when it was made)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, Out | BaseModel):
        return (a.model_fields_set == b.model_fields_set and a.__dict__.keys() == b.__dict__.keys()
                and all(identical(v, b.__dict__[k]) for k, v in a.__dict__.items())
                and getattr(a, "__pydantic_private__", None) == getattr(b, "__pydantic_private__", None))
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(identical(v, b[k]) for k, v in a.items())
    return bool(a == b) or (a != a and b != b)  # nan is nan


def _values(m: Any) -> dict[str, Any]:
    """Its field values: ``__dict__`` less a ``cached_property``'s (as pydantic's ``==`` / copies leave them out)."""
    d, fields = m.__dict__, type(m).__light_fields__
    return d if len(d) == len(fields) else {n: d[n] for n in fields}


def _given(m: Any) -> set[str]:
    """The fields set when ``m`` was made (pydantic's ``model_fields_set``)."""
    return typing.cast(set[str], m.__pydantic_fields_set__)


def _frozen(cls: type, name: str, value: Any) -> Exception:
    return ValidationError.from_exception_data(cls.__name__, [
        {"type": "frozen_instance", "loc": (name,), "input": value}])


def _names(spec: Any) -> set[str] | None:
    if spec is None or isinstance(spec, set | frozenset):
        return set(spec) if spec is not None else None
    if isinstance(spec, dict) and all(v is True for v in spec.values()):
        return set(spec)
    raise TypeError("Out.model_dump takes include / exclude as a set of field names")


# --- the fast path: a converter per field --------------------------------------------------------------

def _plan(cls: type[Out]) -> tuple[tuple[str, str | tuple[str, ...], _Conv, _Field], ...]:
    """(field name, the key ``__init__`` takes (or the keys, the first given read), converter, field) per field,
    made on first use."""
    hints = field_hints(cls)
    config = cls.__light_config__
    plan = []
    for name, f in cls.__light_fields__.items():
        keys = f.choices if f.choices else (f.alias,) if f.alias else (name,)  # a validation alias replaces the alias
        if config.get("populate_by_name") and name not in keys:
            keys += (name,)
        meta = f.info.metadata if f.info is not None else ()
        conv = fail if f.checked else _field_converter(hints[name], config, [b for m in meta for b in bounds(m) or ()])
        plan.append((name, keys[0] if len(keys) == 1 else keys, _validated(cls, name, conv), f))
    made = cls.__light_plan__ = tuple(plan)  # type: ignore[attr-defined]
    return made


def field_hints(cls: type[Out]) -> dict[str, Any]:
    """Each field's annotation, a forward reference (``"LoopSummary | None"``) resolved where its class was
    written (its module's names, then the package's lazily imported ones the shadow would need)."""
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        own = klass.__dict__.get("__annotations__", {})
        if not own or "__light_fields__" not in klass.__dict__:
            continue
        module, own_name = vars(sys.modules[klass.__module__]), {klass.__name__: klass}
        for name, ann in own.items():
            if name in cls.__light_fields__:
                out[name] = _hint(ann, module, own_name) if isinstance(ann, str) else ann
    return out


_HINTS: dict[tuple[str, str], Any] = {}  # (module, annotation) -> what it names there: ``str``, ``float | None`` ...


def _hint(ann: str, module: dict[str, Any], own: dict[str, type]) -> Any:
    """An annotation written as text, read in its class's module (the class itself by its name); one naming no
    class of its own read once per module (a command reads ~600 annotations, most of them alike)."""
    if next(iter(own)) in ann:
        return eval(ann, module, own)  # noqa: S307 - our own annotation
    key = (module["__name__"], ann)
    got = _HINTS.get(key, _MISSING)
    if got is _MISSING:
        got = _HINTS[key] = eval(ann, module)  # noqa: S307 - our own annotation
    return got


def _validated(cls: type[Out], name: str, conv: _Conv) -> _Conv:
    """The field's converter between its ``before`` and ``after`` validators, as pydantic runs them (a refusal:
    the shadow's error)."""
    before, after = cls.__light_field_validators__.get(name, (None, None))  # type: ignore[attr-defined]
    if before is None and after is None:
        return conv
    first, last = (getattr(cls, before) if before else None), (getattr(cls, after) if after else None)

    def run(v: Any) -> Any:
        try:
            if first is not None:
                v = first(v)
            v = conv(v)
            return last(v) if last is not None else v
        except (ValueError, AssertionError):
            raise _Fallback from None
    return run


def _field_converter(tp: Any, config: dict[str, Any], limits: list[tuple[str, Any]]) -> _Conv:
    """A field's conversion: its annotation's (numeric limits in its ``Annotated`` checked after it), values of
    enums under ``use_enum_values``; what the fast path does not know: every value of it is validated."""
    if typing.get_origin(tp) is typing.Annotated:
        inner, *meta = typing.get_args(tp)
        found = [bounds(m) for m in meta]
        if all(b is not None for b in found):
            tp, limits = inner, [*limits, *(b for got in found for b in got or ())]
    enums = config.get("use_enum_values")
    if enums and enum_inside(tp, top=True):
        return fail  # an enum in a container: its values are the shadow's to write
    try:
        conv = converter(tp, _model, _any_metadata, finite=config.get("allow_inf_nan") is False)
    except _Fallback:
        return fail
    if not limits and not enums:
        return conv

    def run(v: Any) -> Any:
        x = conv(v)
        if x is not None:
            for op, bound in limits:
                if not LIMIT_OPS[op](x, bound):
                    raise _Fallback  # pydantic's error names the limit
        return x.value if enums and isinstance(x, enum.Enum) else x
    return run


def _shadow(cls: type[Out]) -> type[BaseModel]:
    """A pydantic model with ``cls``'s fields (nested pieces validate through their own shadows)."""
    shadow: type[BaseModel] | None = cls.__dict__.get("__light_shadow__")
    if shadow is None:
        from pydantic import ConfigDict

        hints = field_hints(cls)
        ns: dict[str, Any] = {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                              "__annotations__": dict(hints),
                              "model_config": typing.cast(ConfigDict, {"frozen": True, "arbitrary_types_allowed": True,
                                                                       "defer_build": True, **cls.__light_config__})}
        for klass in reversed(cls.__mro__):  # the methods its after-validators may call
            if "__light_fields__" in klass.__dict__ and klass.__module__ not in _BASES:
                ns.update({k: v for k, v in klass.__dict__.items() if not k.startswith("__")
                           and k not in cls.__light_fields__ and isinstance(v, _METHODS)})
        ns.update(cls.__light_validators__)  # type: ignore[attr-defined]  # its validators run on the shadow
        for name, f in cls.__light_fields__.items():
            if f.info is not None:
                ns[name] = f.info
            elif f.default is not _MISSING:
                ns[name] = f.default
        shadow = typing.cast(type[BaseModel], type(cls.__name__, (BaseModel,), ns))
        cls.__light_shadow__ = shadow  # type: ignore[attr-defined]
    return shadow


_BASES = ("quantadvise.results", "quantadvise.results.light")  # Out, OmitNone, Result, Strict: pydantic's own
_METHODS = (types.FunctionType, property, classmethod, staticmethod, functools.cached_property)


def _from_shadow(cls: type[Out], valid: Any) -> Any:
    if isinstance(valid, cls):
        return valid
    m = cls.__new__(cls)
    object.__setattr__(m, "__dict__", dict(valid.__dict__))
    object.__setattr__(m, "__pydantic_fields_set__", set(valid.model_fields_set))
    return m


def _model(tp: type) -> _Conv:
    """A nested piece or pydantic model: an instance as it is; a dict builds a piece (a model validates)."""
    def conv(v: Any) -> Any:
        if isinstance(v, tp):
            return v
        if issubclass(tp, Out) and _fast(tp, v):
            try:  # its before-validator reads the value (GroupShape: "g128", [1, 128])
                return tp.model_validate(v)
            except ValidationError:  # refused: the whole input goes to the shadow, for the error at its place
                raise _Fallback from None
        raise _Fallback
    return conv


def _fast(cls: type[Out], v: Any) -> bool:
    """Whether the fast path reads ``v`` for ``cls``: a dict of text keys, or any value its before-validator reads."""
    return (type(v) is dict and all(type(k) is str for k in v)) or cls.__light_before__ is not None  # type: ignore[attr-defined]


def _any_metadata(meta: Any) -> bool:  # noqa: ARG001 - every Annotated item (a constraint too) is validated
    return True
