"""A shipped table's document built into its model without validating it again.

Every shipped table is validated by the test suite (``tests/data/test_tables.py``) and by the wheel build that
compiles it, so at run time a command can skip pydantic's validation of it: the validator of each model class is
built on first use (~1 ms a class, 50-60 ms of a cold ``recommend``) and then walks every row. :func:`shipped`
builds the same objects directly: each field's value converted as its annotation says (a nested model, a tuple
of them, an enum, a date from the compiled form's ISO text, an int given to a float field as a float), defaults
filled in, the fields set the keys given. A model whose fields transform their input (a ``before``, ``wrap`` or
``plain`` validator), a key that is not a field, a value whose type the plan does not know or a union of several
models falls back to ``model_validate`` for that model, so the result is never a guess; ``after`` validators,
of a model or a field, are checks of the shipped rows and are not run again (one that changed a value would
make the built row differ from the validated one, which ``validate_all`` refuses). ``tests/data/test_tables.py`` builds every shipped table both
ways and holds them equal (``==`` and the same JSON).
"""

from __future__ import annotations

import contextlib
import functools
import typing
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

from pydantic import BaseModel, BeforeValidator, ValidationError

from ..results.convert import Conv as _Conv
from ..results.convert import Fallback as _Fallback
from ..results.convert import converter, one_argument
from ..results.light import Out, field_hints, identical

M = TypeVar("M", bound=BaseModel | Out)


_CHECKING = False


def shipped(cls: type[M], doc: Any) -> M:
    """``cls.model_validate(doc)`` for a shipped (already validated) document, built without validation. Inside
    :func:`checking`: validated, and the model built without validation must equal it."""
    if _CHECKING:
        return _checked(cls, doc)
    try:
        return _build(cls, doc)
    except _Fallback:
        return cast(M, cls.model_validate(doc))


@contextlib.contextmanager
def checking() -> Iterator[None]:
    """Every :func:`shipped` document validated (pydantic's errors, as without this module) and the model built
    without validation held to it: the same values of the same types at every depth (:func:`identical`: an int
    where the validated model holds a float is a difference). ``catalog.validate_all`` runs inside it."""
    global _CHECKING
    before, _CHECKING = _CHECKING, True
    try:
        yield
    finally:
        _CHECKING = before


def _checked(cls: type[M], doc: Any) -> M:
    from ..errors import DataError

    valid = cast(M, cls.model_validate(doc))
    try:
        built = _build(cls, doc)
    except _Fallback:
        return valid
    if not identical(built, valid):
        raise DataError(f"a shipped {cls.__name__} built without validation differs from the validated one "
                        "(quantadvise/catalog/trusted.py needs the conversion its fields make)")
    return valid


_PLANS: dict[type, _Plan | None] = {}
_MODELS: set[type] = set()  # the planned classes that are pydantic models (a built one gets pydantic's slots set)


# (name, required, default maker, the default itself where it is one immutable value, else _MADE)
_Fields = tuple[tuple[str, bool, Callable[[dict[str, Any]], Any], Any], ...]
_MADE: Any = object()  # a default made per row (a factory, a mutable value)
_CONSTANT = (type(None), str, int, float, bool)  # defaults pydantic and a light row hand out as they are
_Plan = tuple[dict[str, tuple[str, _Conv]], _Fields, Callable[[Any], Any] | None]  # ..., the model's before-validator


def _plan(cls: type[Any]) -> _Plan | None:
    """(key -> (field name, converter), (field name, required, default) in declaration order); None: validate."""
    if cls in _PLANS:
        return _PLANS[cls]
    plan: _Plan | None = None
    try:
        plan = _light_plan(cls) if issubclass(cls, Out) else _model_plan(cls)
    except _Fallback:
        plan = None
    if issubclass(cls, BaseModel):
        _MODELS.add(cls)
    _PLANS[cls] = plan
    return plan


def _model_plan(cls: type[BaseModel]) -> _Plan | None:
    """A pydantic model's plan. Validators run as pydantic runs them where they are plain functions of the value:
    a ``before`` model validator on the document, a field's ``before`` validator (in the decorator or a
    ``BeforeValidator`` in the annotation) on its value, then the conversion; ``after`` validators, of a model or
    a field, check the validated value: the shipped rows passed them (one that changed the value is caught
    where validate_all holds the built model to the validated one). ``wrap`` / ``plain`` validators, one taking
    pydantic's info argument, or settings that transform, validate."""
    decorators = cls.__pydantic_decorators__
    modes = [d.info.mode for d in decorators.field_validators.values()]
    modes += [d.info.mode for d in decorators.model_validators.values()]
    befores = [d.func for d in decorators.model_validators.values() if d.info.mode == "before"]
    if (decorators.root_validators or decorators.validators or any(m not in ("before", "after") for m in modes)
            or len(befores) > 1 or not all(one_argument(f) for f in befores)
            or any(cls.model_config.get(k) for k in _TRANSFORMING_CONFIG)
            or cls.model_config.get("extra") == "allow" or cls.__pydantic_root_model__):
        return None
    field_before: dict[str, list[Callable[[Any], Any]]] = {}
    for d in decorators.field_validators.values():
        if d.info.mode == "before":
            if not one_argument(d.func):
                return None
            for name in d.info.fields:
                field_before.setdefault(name, []).append(d.func)
    keys: dict[str, tuple[str, _Conv]] = {}
    for name, f in cls.model_fields.items():
        pre = [*field_before.get(name, ()), *(b for b in map(_before, f.metadata) if b is not None)]
        if (any(_transforms(m) and _before(m) is None for m in f.metadata) or f.discriminator is not None
                or len(pre) > 1):
            raise _Fallback
        conv = _converter(f.annotation)
        if pre:
            conv = _then(pre[0], conv)
        for spelling in _spellings(name, f):
            keys[spelling] = (name, conv)
    fields = tuple((name, f.is_required(), functools.partial(_default, f), _constant(f.default, f.default_factory))
                   for name, f in cls.model_fields.items())
    return keys, fields, befores[0] if befores else None


def _then(first: Callable[[Any], Any], conv: _Conv) -> _Conv:
    return lambda v: conv(first(v))


def _before(meta: Any) -> Callable[[Any], Any] | None:
    """An annotation's ``BeforeValidator`` of the value alone: run before the conversion, as pydantic runs it."""
    if isinstance(meta, BeforeValidator) and one_argument(meta.func):
        return typing.cast(Callable[[Any], Any], meta.func)
    return None


def _light_plan(cls: type[Out]) -> _Plan | None:
    """A row of ``results.Strict`` (or any result piece): its fields as ``results/light.py`` records them, its
    ``before`` validators run as for a pydantic model, its ``after`` validators checks of the shipped rows."""
    hints = field_hints(cls)
    keys: dict[str, tuple[str, _Conv]] = {}
    fields = []
    validators: Any = cls
    for name, f in cls.__light_fields__.items():
        info = f.info
        if info is not None and (any(_transforms(m) for m in info.metadata) or info.discriminator is not None):
            raise _Fallback
        conv = _converter(hints[name])
        before = validators.__light_field_validators__.get(name, (None, None))[0]
        if before is not None:
            conv = _then(getattr(cls, before), conv)
        for spelling in _spellings(name, info) if info is not None else (name,):
            keys[spelling] = (name, conv)
        fields.append((name, f.required, _light_default(f), _constant(f.default, f.factory)))
    model_before = validators.__light_before__
    return keys, tuple(fields), getattr(cls, model_before) if model_before is not None else None


def _spellings(name: str, f: Any) -> list[str]:
    """The keys a field is read from: its name, alias and validation aliases (a path alias: validate)."""
    spellings = [name]
    if f.alias:
        spellings.append(f.alias)
    va = f.validation_alias
    if va is not None:
        choices = getattr(va, "choices", None) or (va,)
        if not all(isinstance(c, str) for c in choices):
            raise _Fallback
        spellings += [c for c in choices if isinstance(c, str)]
    return spellings


def _default(f: Any, values: dict[str, Any]) -> Any:
    return f.get_default(call_default_factory=True, validated_data=values)


def _constant(default: Any, factory: Any) -> Any:
    """A field's default where every row gets that one value (no factory, an immutable scalar), else _MADE."""
    return default if factory is None and type(default) in _CONSTANT else _MADE


def _light_default(f: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda values: f.fill()


# model settings under which validation changes a value (enum values stored as values, stripped text ...)
_TRANSFORMING_CONFIG = ("use_enum_values", "str_strip_whitespace", "str_to_lower", "str_to_upper",
                        "coerce_numbers_to_str")


def _transforms(meta: Any) -> bool:
    """An annotation's metadata that can change a value (a validator, a custom schema), not a constraint."""
    return (callable(getattr(meta, "__get_pydantic_core_schema__", None))
            or type(meta).__module__.startswith("pydantic.functional"))


def _build(cls: type[M], doc: Any) -> M:
    plan = _PLANS[cls] if cls in _PLANS else _plan(cls)
    if plan is None:
        return cast(M, cls.model_validate(doc))
    if type(doc) is not dict and isinstance(doc, cls):  # a document is a dict: an instance passes as it is
        return doc
    keys, fields, before = plan
    if before is not None:  # pydantic runs it on the input, before reading it as the model's fields
        doc = before(doc)
        if not isinstance(doc, dict):
            raise _Fallback
    elif type(doc) is not dict:
        raise _Fallback
    given: dict[str, Any] = {}
    for k, v in doc.items():
        hit = keys.get(k)
        if hit is None or hit[0] in given:
            raise _Fallback
        given[hit[0]] = hit[1](v)
    values: dict[str, Any] = {}
    for name, required, default, constant in fields:
        if name in given:
            values[name] = given[name]
        elif required:
            raise _Fallback
        else:
            values[name] = default(values) if constant is _MADE else constant
    m = cls.__new__(cls)
    object.__setattr__(m, "__dict__", values)
    object.__setattr__(m, "__pydantic_fields_set__", set(given))
    if cls in _MODELS:
        object.__setattr__(m, "__pydantic_extra__", None)
        object.__setattr__(m, "__pydantic_private__", None)
        if getattr(cls, "__pydantic_post_init__", None):
            cast(BaseModel, m).model_post_init(None)
    return m


def _model(tp: type) -> _Conv:
    """A nested model or row: built from its document (an instance passes as it is); a document the plan
    cannot build is validated on its own, as pydantic validates a nested model, and the row around it is
    still built directly."""
    def conv(v: Any) -> Any:
        if isinstance(v, tp):
            return v
        try:
            return _build(tp, v)
        except _Fallback:
            try:
                return typing.cast(Any, tp).model_validate(v)
            except ValidationError:  # refused: the whole document is validated, for pydantic's error at its place
                raise _Fallback from None
    return conv


def _converter(tp: Any) -> _Conv:
    """A field's converter: a constraint in the annotation was checked when the table was validated, a
    validator transforms, so only the latter validates again."""
    return converter(tp, _model, _transforms, before=_before)
