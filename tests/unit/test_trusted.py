"""catalog/trusted.py: a shipped document built without validation is the model validation builds, or is validated."""

from __future__ import annotations

import datetime
import enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BeforeValidator, StrictInt, ValidationInfo, field_validator, model_validator

from quantadvise.catalog import trusted
from quantadvise.errors import DataError
from quantadvise.results import Strict, StrictModel


class Colour(str, enum.Enum):
    red = "red"
    blue = "blue"


class Inner(Strict):
    n: int
    w: float = 1.0


class Row(Strict):
    id: str
    bits: int | tuple[int, ...] | None = None
    share: float
    when: datetime.date
    colour: Colour = Colour.red
    inner: Inner | Literal["none"] = "none"
    rows: tuple[Inner, ...] = ()
    named: dict[str, Inner] = {}
    pair: tuple[float, float] = (0.0, 0.0)
    either: int | float = 0


class InnerModel(StrictModel):
    n: int
    w: float = 1.0


class RowModel(StrictModel):  # Row as a pydantic model: a row class with validators is one (results.StrictModel)
    id: str
    bits: int | tuple[int, ...] | None = None
    share: float
    when: datetime.date
    colour: Colour = Colour.red
    inner: InnerModel | Literal["none"] = "none"
    rows: tuple[InnerModel, ...] = ()
    named: dict[str, InnerModel] = {}
    pair: tuple[float, float] = (0.0, 0.0)
    either: int | float = 0


class Normalised(StrictModel):
    name: str

    @field_validator("name", mode="before")
    @classmethod
    def _lower(cls, v: str) -> str:
        return v.lower()


def _lower(v: Any) -> Any:
    return v.lower() if isinstance(v, str) else v


class Annotated_(StrictModel):
    name: Annotated[str, BeforeValidator(_lower)]


class Expanded(StrictModel):
    names: tuple[str, ...]

    @model_validator(mode="before")
    @classmethod
    def _split(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("names"), str):
            return {**data, "names": data["names"].split(",")}
        return data


class WithInfo(StrictModel):
    name: str

    @field_validator("name", mode="before")
    @classmethod
    def _lower(cls, v: str, info: ValidationInfo) -> str:
        return f"{v.lower()}:{info.field_name}"


class Lowered(StrictModel):  # an "after" validator is taken as a check of the shipped rows: this one is not
    name: str

    @field_validator("name")
    @classmethod
    def _lower(cls, v: str) -> str:
        return v.lower()


DOC = {"id": "a", "bits": [4, 8], "share": 1, "when": "2026-12-07", "colour": "blue", "inner": {"n": 2},
       "rows": [{"n": 1, "w": 2}], "named": {"x": {"n": 3, "w": 0.5}}, "pair": [1, 2.5], "either": 3}


@pytest.mark.parametrize("Row", [Row, RowModel])
def test_the_built_row_is_the_validated_row(Row):
    # every conversion validation makes: a list as a tuple, an int given to a float field as 1.0, the ISO date of
    # the compiled form as a date, the enum's value as the member, nested models, an int that int | float keeps
    built, valid = trusted._build(Row, DOC), Row.model_validate(DOC)
    assert trusted.identical(built, valid) and built.model_dump_json() == valid.model_dump_json()
    assert built.model_fields_set == valid.model_fields_set == set(DOC)
    assert built.bits == (4, 8) and type(built.share) is float and built.when == datetime.date(2026, 12, 7)
    assert built.colour is Colour.blue and built.rows[0].w == 2.0 and type(built.rows[0].w) is float
    assert type(built.either) is int and built.pair == (1.0, 2.5)
    with trusted.checking():  # the check passes on it
        assert trusted.shipped(Row, DOC) == valid


@pytest.mark.parametrize("Row", [Row, RowModel])
@pytest.mark.parametrize("change", [{"extra": 1}, {"share": True}, {"bits": "4"}, {"when": "tomorrow"},
                                    {"colour": "green"}, {"inner": "all"}, {"named": {"x": [1]}}])
def test_what_the_plan_cannot_build_exactly_is_validated(change, Row):
    # an unknown key, a boolean for a number, text for bits, a bad date, an unknown enum value or literal, a list
    # for a model: each is left to pydantic, which takes it or refuses it as it always did
    from pydantic import ValidationError

    doc = {**DOC, **change}
    with pytest.raises(trusted._Fallback):
        trusted._build(Row, doc)
    try:
        valid = Row.model_validate(doc)
    except ValidationError:
        with pytest.raises(ValidationError):
            trusted.shipped(Row, doc)
    else:
        assert trusted.identical(trusted.shipped(Row, doc), valid)


def test_before_validators_of_the_value_run_as_pydantic_runs_them():
    # a field's before-validator, a BeforeValidator in the annotation and a model's before-validator are plain
    # functions of the value: the plan runs them, then converts; the built model is the validated one
    for cls, doc in ((Normalised, {"name": "MiXed"}), (Annotated_, {"name": "MiXed"}),
                     (Expanded, {"names": "a,b"})):
        with trusted.checking():
            valid = trusted.shipped(cls, doc)
        assert trusted._plan(cls) is not None
        assert trusted.identical(trusted._build(cls, doc), valid), cls.__name__
    assert trusted._build(Normalised, {"name": "MiXed"}).name == "mixed"
    assert trusted._build(Expanded, {"names": "a,b"}).names == ("a", "b")


def test_a_validator_that_takes_pydantics_info_is_left_to_pydantic():
    got = trusted.shipped(WithInfo, {"name": "MiXed"})
    assert got.name == "mixed:name" and trusted._plan(WithInfo) is None


def test_checking_catches_an_after_validator_that_changes_the_value():
    assert trusted.shipped(Lowered, {"name": "MiXed"}).name == "MiXed"  # built as written: the check is skipped
    with trusted.checking(), pytest.raises(DataError, match="Lowered built without validation differs"):
        trusted.shipped(Lowered, {"name": "MiXed"})


def test_checking_catches_a_conversion_the_plan_gets_wrong(monkeypatch):
    # the plan with its float conversion removed keeps the int: equal by == (1 == 1.0), not by JSON -> DataError
    class Bare(Strict):
        x: float

    from quantadvise.results import convert

    monkeypatch.setitem(convert._SCALARS, float, convert._any)
    monkeypatch.setattr(trusted, "_PLANS", {})
    assert type(trusted.shipped(Bare, {"x": 1}).x) is int  # outside checking: built as planned
    with trusted.checking(), pytest.raises(DataError, match="Bare built without validation differs"):
        trusted.shipped(Bare, {"x": 1})


def test_identical_tells_types_apart():
    assert not trusted.identical(1, 1.0) and not trusted.identical((1,), [1]) and not trusted.identical(Colour.red, "red")
    assert trusted.identical(float("nan"), float("nan")) and trusted.identical({"a": (1.0,)}, {"a": (1.0,)})


class Extents(StrictModel):  # a layout's dims: an expression or a literal extent (StrictInt: not a bool, not text)
    dims: tuple[str | StrictInt, ...]


@pytest.mark.parametrize("dims", [["N", 128, "K/2"], [7], ["G"]])
def test_a_strict_int_in_a_union_is_built_for_its_exact_type(dims):
    # str | StrictInt: pydantic's smart union takes a str as the str and an int as the StrictInt, so the plan
    # builds it (data/layouts.yaml's tensors are such dims)
    assert trusted._plan(Extents) is not None
    built, valid = trusted._build(Extents, {"dims": dims}), Extents.model_validate({"dims": dims})
    assert trusted.identical(built, valid) and built.dims == tuple(dims)


@pytest.mark.parametrize("dims", [[True], [1.0], [None]])
def test_what_strict_int_or_str_refuses_is_left_to_pydantic(dims):
    # a bool (strict int refuses it, str does too), a float, None: not built; pydantic refuses them as it always did
    from pydantic import ValidationError

    with pytest.raises(trusted._Fallback):
        trusted._build(Extents, {"dims": dims})
    with pytest.raises(ValidationError):
        trusted.shipped(Extents, {"dims": dims})


class Series(Strict):
    xs: tuple[float, ...] = ()
    names: tuple[str, ...] = ()


@pytest.mark.parametrize("doc", [{"xs": [0.5, 2.0], "names": ["a", "b"]},  # every item of the field's exact type
                                 {"xs": [1, 2.5, 3]},  # ints given to floats: made floats, as validation does
                                 {"xs": []}])
def test_a_tuple_of_scalars_is_built_as_validation_builds_it(doc):
    # a tuple of floats or strings whose items all have that exact type is copied whole (one pass over their types);
    # any other item takes the item's own conversion
    built, valid = trusted._build(Series, doc), Series.model_validate(doc)
    assert trusted.identical(built, valid) and all(type(x) is float for x in built.xs)


@pytest.mark.parametrize("doc", [{"xs": [1.0, True]}, {"xs": [1.0, "2"]}, {"names": ["a", 1]}])
def test_a_tuple_with_an_item_of_another_type_is_left_to_validation(doc):
    # a boolean or text among floats, a number among strings: the plan does not build it (pydantic decides)
    with pytest.raises(trusted._Fallback):
        trusted._build(Series, doc)
