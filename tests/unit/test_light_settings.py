"""A piece with pydantic's settings a workload uses — numeric limits in ``Annotated`` and ``Field``, alias choices,
``use_enum_values``, ``validate_default``, ``populate_by_name``, ``extra="forbid"`` — made by the fast path
(results/light.py) as its pydantic twin validates it: the same values of the same types, the same fields set,
the same errors at the same places; and no pydantic class built for an input the fast path reads."""

import enum
from typing import Annotated, Any

import annotated_types
import pytest
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from quantadvise.results import Out, field_keys, light, plain_numbers


class Speed(str, enum.Enum):
    slow = "slow"
    fast = "fast"


SETTINGS: dict[str, Any] = {"extra": "forbid", "allow_inf_nan": False, "use_enum_values": True,
                            "validate_default": True, "populate_by_name": True}


def _lower(v: Any) -> Any:
    return v.strip().lower() if isinstance(v, str) else v


class Piece(Out):
    __light_config__ = SETTINGS  # noqa: RUF012

    batch: Annotated[int, annotated_types.Interval(ge=1, le=100)] = Field(
        default=1, validation_alias=AliasChoices("batch", "concurrency"))
    share: Annotated[float | None, annotated_types.Interval(gt=0, le=1)] = None
    floor: float = Field(default=0.5, ge=0, lt=1)
    speed: Speed = Speed.slow
    maybe: Speed | None = None
    tags: tuple[str, ...] = ()

    @field_validator("speed", "maybe", mode="before")
    @classmethod
    def _speed(cls, v: Any) -> Any:
        return _lower(v)


class Twin(BaseModel):
    model_config = ConfigDict(frozen=True, **SETTINGS)

    batch: Annotated[int, annotated_types.Interval(ge=1, le=100)] = Field(
        default=1, validation_alias=AliasChoices("batch", "concurrency"))
    share: Annotated[float | None, annotated_types.Interval(gt=0, le=1)] = None
    floor: float = Field(default=0.5, ge=0, lt=1)
    speed: Speed = Speed.slow
    maybe: Speed | None = None
    tags: tuple[str, ...] = ()

    @field_validator("speed", "maybe", mode="before")
    @classmethod
    def _speed(cls, v: Any) -> Any:
        return _lower(v)


GOOD = [
    {},
    {"batch": 7},
    {"concurrency": 7},  # the second alias choice
    {"batch": 100, "share": 1, "floor": 0},  # the limits themselves (le, le, ge): an int for a float field, as a float
    {"share": 0.25, "speed": " FAST ", "maybe": "slow", "tags": ["a", "b"]},
    {"speed": Speed.fast, "maybe": None},
    {"batch": 5.0},  # pydantic's lax mode: a whole float for an int
]
BAD = [
    {"batch": 0}, {"batch": 101}, {"concurrency": -3},  # past ge / le, by either key
    {"share": 0}, {"share": 1.5},  # gt, le
    {"floor": 1}, {"floor": -0.1},  # lt, ge (Field's limits)
    {"share": float("nan")}, {"floor": float("inf")},  # allow_inf_nan=False
    {"speed": "medium"}, {"batch": "many"}, {"batch": 2.5},
    {"batch": 3, "extra_key": 1},  # extra="forbid"
    {"batch": 3, "concurrency": 4},  # both spellings: the second is an extra key to pydantic
]


def _strip(e: ValidationError) -> list[tuple[Any, ...]]:
    return [(x["loc"], x["msg"], x["type"]) for x in e.errors()]


@pytest.mark.parametrize("given", GOOD)
def test_the_fast_path_makes_what_pydantic_validates(given):
    got, want = Piece(**given), Twin(**given)
    assert light.identical(dict(got.__dict__), dict(want.__dict__)), (got, want)
    assert got.model_fields_set == want.model_fields_set
    assert got.model_dump(mode="json") == want.model_dump(mode="json")
    assert type(got.speed) is str and got.speed == want.speed  # use_enum_values, the default too (validate_default)


@pytest.mark.parametrize("given", BAD)
def test_a_value_the_settings_refuse_is_pydantics_error(given):
    with pytest.raises(ValidationError) as got:
        Piece(**given)
    with pytest.raises(ValidationError) as want:
        Twin(**given)
    assert _strip(got.value) == _strip(want.value)


def test_an_input_the_fast_path_reads_builds_no_pydantic_class(pydantic_classes):
    made = pydantic_classes

    class Fresh(Out):
        __light_config__ = SETTINGS  # noqa: RUF012
        n: Annotated[int | None, annotated_types.Interval(ge=1)] = Field(
            default=None, validation_alias=AliasChoices("n", "count"))
        speed: Speed = Speed.fast

    assert Fresh(count=3).n == 3 and Fresh().speed == "fast" and made == []
    # the keys a document may use, read without the shadow (plain_numbers / a workload file's key check use them)
    assert field_keys(Fresh)["n"][1] == ("n", "count") and made == []
    assert plain_numbers(Fresh, {"count": True})["count"] is not True and made == []
    with pytest.raises(ValidationError):
        Fresh(n=0)
    assert made == ["Fresh"]


def test_an_enum_inside_a_container_under_use_enum_values_is_left_to_pydantic():
    class Many(Out):
        __light_config__ = {"use_enum_values": True}  # noqa: RUF012
        speeds: tuple[Speed, ...] = ()

    class ManyTwin(BaseModel):
        model_config = ConfigDict(use_enum_values=True)
        speeds: tuple[Speed, ...] = ()

    got = Many(speeds=["fast", Speed.slow])
    assert got.speeds == ManyTwin(speeds=["fast", Speed.slow]).speeds == ("fast", "slow")
    assert all(type(s) is str for s in got.speeds)


def test_a_workload_from_flags_builds_no_pydantic_class(pydantic_classes, monkeypatch):
    # the workload (workload.py) is such a piece: a recommend's flags make it without pydantic; a refused value
    # is pydantic's error naming the field (inputs.LIMITS: batch >= 1)
    from quantadvise.errors import ConfigError
    from quantadvise.workload import Workload, parse_workload

    made = pydantic_classes
    monkeypatch.setattr(Workload, "__light_shadow__", None)  # as in a fresh process
    w = parse_workload({"batch": 64, "ctx": 2048, "mode": "async", "engine": "SGLang"})
    assert (w.batch, w.ctx, w.mode, w.engine, w.task) == (64, 2048, "continuous", "sglang", "general")
    assert w.model_fields_set == {"batch", "ctx", "mode", "engine"} and made == []
    with pytest.raises(ConfigError, match="batch.*greater than or equal to 1"):
        parse_workload({"batch": 0})
    assert made == ["Workload"]


def _f0() -> None: ...
def _f1(v): ...  # noqa: ANN001, ANN202
def _f2(v, info): ...  # noqa: ANN001, ANN202
def _f2d(v, info=None): ...  # noqa: ANN001, ANN202
def _fpos(v, /): ...  # noqa: ANN001, ANN202
def _fstar(v, *rest, key): ...  # noqa: ANN001, ANN002, ANN202
def _fall(v=1): ...  # noqa: ANN001, ANN202


class _Holder:
    def method(self, v): ...  # noqa: ANN001, ANN201

    @classmethod
    def cls_method(cls, v, info): ...  # noqa: ANN001, ANN206

    @staticmethod
    def static(v): ...  # noqa: ANN001, ANN205


def test_one_argument_counts_as_inspect_signature_does():
    # a validator of the value alone: one positional parameter without a default, a bound method's first left out
    # (the count inspect.signature gives, which one_argument reads from the code of a plain function or method)
    import functools
    import inspect

    from quantadvise.results.convert import one_argument

    def by_signature(fn: Any) -> bool:
        ps = inspect.signature(fn).parameters.values()
        return len([p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]) == 1

    @functools.wraps(_f2)
    def wrapper(v):  # noqa: ANN001, ANN202 - signature() follows __wrapped__ to _f2's two parameters
        return v

    cases = [_f0, _f1, _f2, _f2d, _fpos, _fstar, _fall, _Holder().method, _Holder.method, _Holder.cls_method,
             _Holder.static, functools.partial(_f2, 1), wrapper, lambda v: v, print]
    want = [False, True, False, True, True, True, False, True, False, False, True, True, False, True, False]
    assert [by_signature(c) if c is not print else False for c in cases] == want
    assert [one_argument(c) for c in cases] == want
