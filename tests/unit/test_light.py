"""results/light.py: a result piece behaves as the pydantic model of the same fields would — its dump, its
conversions, its errors — without pydantic building a class or a validator for it. Every expectation below is
pydantic's own answer for a twin model with the same fields (an independent implementation), or Python's."""

import copy
import datetime
import enum
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from quantadvise.results import SCHEMA_VERSION, OmitNone, Out, Result, Strict, convert, light


class Colour(str, enum.Enum):
    red = "red"
    blue = "blue"


class Level(enum.Enum):
    low = 1
    high = 2


class Inner(Out):
    name: str
    share: float = 0.5


class Piece(Out):
    count: int
    rate: float
    ratio: float | None = None
    colour: Colour = Colour.red
    level: Level | None = None
    tags: tuple[str, ...] = ()
    pair: tuple[int, float] = (1, 2.0)
    names: list[str] = Field(default_factory=list)
    seen: frozenset[int] = frozenset()
    by_level: dict[Level, int] = Field(default_factory=dict)
    by_id: dict[int, str] = Field(default_factory=dict)
    when: datetime.date | None = None
    where: Path | None = None
    inner: Inner | None = None
    inners: tuple[Inner, ...] = ()
    kind: Literal["a", "b"] = "a"
    either: int | float = 0
    anything: Any = None
    hidden: int = Field(default=7, exclude=True)


# The twin: the same fields as a pydantic model (nested piece as a pydantic model too)
class InnerTwin(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    share: float = 0.5


class PieceTwin(BaseModel):
    model_config = ConfigDict(frozen=True)
    count: int
    rate: float
    ratio: float | None = None
    colour: Colour = Colour.red
    level: Level | None = None
    tags: tuple[str, ...] = ()
    pair: tuple[int, float] = (1, 2.0)
    names: list[str] = Field(default_factory=list)
    seen: frozenset[int] = frozenset()
    by_level: dict[Level, int] = Field(default_factory=dict)
    by_id: dict[int, str] = Field(default_factory=dict)
    when: datetime.date | None = None
    where: Path | None = None
    inner: InnerTwin | None = None
    inners: tuple[InnerTwin, ...] = ()
    kind: Literal["a", "b"] = "a"
    either: int | float = 0
    anything: Any = None
    hidden: int = Field(default=7, exclude=True)


GIVEN: dict[str, Any] = dict(
    count=3, rate=2, ratio=1, colour="blue", level=2, tags=["x", "y"], pair=[4, 5], names=("n",), seen=[3],
    by_level={Level.high: 1}, by_id={5: "five"}, when=datetime.date(2026, 12, 7), where="a/b",
    kind="b", either=3, anything=(1, Colour.red, {Level.low: 2}), hidden=9)


def _pair(**extra: Any) -> tuple[Piece, PieceTwin]:
    data = {**GIVEN, **extra}
    inner = data.pop("inner", None)
    twin_data = dict(data, inner=InnerTwin(**inner) if inner else None)
    return Piece(**data, inner=Inner(**inner) if inner else None), PieceTwin(**twin_data)


@pytest.mark.parametrize("mode", ["json", "python"])
def test_the_dump_is_pydantics(mode):
    piece, twin = _pair(inner={"name": "i", "share": 1})
    assert piece.model_dump(mode=mode) == twin.model_dump(mode=mode)
    if mode == "json":  # types too: 1.0 is not 1 in a JSON report
        dumped, expected = piece.model_dump(mode="json"), twin.model_dump(mode="json")
        assert {k: type(v) for k, v in dumped.items()} == {k: type(v) for k, v in expected.items()}


def test_conversions_are_pydantics_lax_mode():
    piece, twin = _pair()
    for name in PieceTwin.model_fields:
        got, want = getattr(piece, name), getattr(twin, name)
        assert light.identical(got, want), name  # rate 2 -> 2.0, tags list -> tuple, "blue" -> Colour.blue ...
    assert piece.model_fields_set == twin.model_fields_set


def test_a_dict_for_a_nested_piece_builds_it():
    assert Piece(count=1, rate=1.0, inner={"name": "i"}).inner == Inner(name="i")


# 10**400: an int past the largest float (float() overflows: the shadow says so, not an OverflowError)
@pytest.mark.parametrize("bad", [dict(count="3x"), dict(rate="fast"), dict(kind="c"), dict(colour="green"),
                                 dict(rate=10**400), dict(ratio=10**400)])
def test_a_value_the_fast_path_cannot_take_is_validated_with_pydantics_error(bad):
    field = next(iter(bad))
    with pytest.raises(ValidationError) as got:
        Piece(**{**GIVEN, **bad})
    with pytest.raises(ValidationError) as want:
        PieceTwin(**{**GIVEN, **bad})
    assert [e["loc"] for e in got.value.errors()] == [e["loc"] for e in want.value.errors()] == [(field,)]
    assert [e["type"] for e in got.value.errors()] == [e["type"] for e in want.value.errors()]


def test_a_missing_field_is_pydantics_error():
    with pytest.raises(ValidationError, match="count\n  Field required"):
        Piece(rate=1.0)


def test_text_that_pydantic_reads_as_a_number_is_read_the_same():
    # the fast path does not convert "3" for an int field: the shadow model does, as pydantic's lax mode does
    assert Piece(count="3", rate="2.5").count == PieceTwin(count="3", rate="2.5").count == 3


def test_frozen_equal_hashable_and_copied_as_pydantic_models_are():
    a = Inner(name="x", share=1)
    with pytest.raises(ValidationError, match="frozen"):
        a.name = "y"  # type: ignore[misc]
    assert a == Inner(name="x", share=1.0) and a != Inner(name="x") and a != InnerTwin(name="x", share=1.0)
    assert hash(a) == hash(Inner(name="x", share=1.0))
    assert repr(a) == "Inner(name='x', share=1.0)" == repr(InnerTwin(name="x", share=1)).replace("InnerTwin", "Inner")
    b = a.model_copy(update={"share": 2.0})
    assert (b.share, a.share, b.model_fields_set) == (2.0, 1.0, {"name", "share"})
    assert copy.copy(a) == a and copy.deepcopy(a) == a and copy.deepcopy(a) is not a
    assert Inner.model_construct(name="z").model_fields_set == {"name"}
    assert dict(a) == {"name": "x", "share": 1.0}


def test_dump_options_match_pydantics():
    piece, twin = _pair()
    for opts in (dict(exclude_none=True), dict(include={"count", "rate"}), dict(exclude={"tags"}),
                 dict(exclude_unset=True), dict(exclude_defaults=True)):
        assert piece.model_dump(mode="json", **opts) == twin.model_dump(mode="json", **opts), opts


class Hint(OmitNone):
    omit_if_none: ClassVar[tuple[str, ...]] = ("note",)
    flag: str
    note: str | None = None


def test_omit_if_none_leaves_the_key_out_only_when_none():
    assert Hint(flag="--x").model_dump(mode="json") == {"flag": "--x"}
    assert Hint(flag="--x", note="n").model_dump(mode="json") == {"flag": "--x", "note": "n"}


class Report(Result):
    hint: Hint


def test_a_result_carries_the_schema_version_and_nests_its_pieces():
    assert Report(hint=Hint(flag="f")).model_dump(mode="json") == {"schema_version": SCHEMA_VERSION,
                                                                  "hint": {"flag": "f"}}


class Holder(BaseModel):
    model_config = ConfigDict(frozen=True)
    inner: Inner
    inners: list[Inner] = []


def test_a_pydantic_model_holds_a_piece():
    h = Holder(inner=Inner(name="a"), inners=[{"name": "b", "share": 1}])
    assert type(h.inners[0]) is Inner and h.inners[0].share == 1.0
    assert h.model_dump(mode="json") == {"inner": {"name": "a", "share": 0.5}, "inners": [{"name": "b", "share": 1.0}]}
    with pytest.raises(ValidationError):
        Holder(inner={"share": 1})


def test_a_piece_is_made_without_pydantic_building_a_class(pydantic_classes):
    made = pydantic_classes

    class Fresh(Out):
        a: int
        b: tuple[float, ...] = ()

    f = Fresh(a=1, b=[1, 2.5])
    assert f.model_dump(mode="json") == {"a": 1, "b": [1.0, 2.5]}
    assert made == []  # no pydantic class (and so no validator) for the definition, the value or the dump
    Fresh(a="1")  # text for an int: the shadow model validates it
    assert made == ["Fresh"]


def test_a_piece_with_an_info_validator_or_its_own_config_is_refused_at_definition():
    with pytest.raises(TypeError, match="of the value alone"):
        class WithValidator(Out):
            a: int

            @field_validator("a")
            @classmethod
            def _a(cls, v: int, info: ValidationInfo) -> int:  # pydantic's info: left to pydantic
                return v
    with pytest.raises(TypeError, match="model_config"):
        class WithConfig(Out):
            model_config = ConfigDict(extra="forbid")  # type: ignore[assignment]
            a: int


def test_a_numeric_limit_is_checked_without_pydantic_and_a_value_past_it_gets_pydantics_error(pydantic_classes):
    made = pydantic_classes

    class Bounded(Out):
        n: int = Field(ge=1)
        pattern: str = Field(default="", pattern="^a")  # not a numeric limit: every value validated

    assert Bounded(n=2).n == 2 and made == []  # no shadow for a value within its limit (pattern's default unread)
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        Bounded(n=0)
    assert made == ["Bounded"]
    with pytest.raises(ValidationError, match="should match pattern"):
        Bounded(n=2, pattern="b")


def test_checking_catches_a_conversion_the_fast_path_gets_wrong(monkeypatch):
    # the float conversion removed, the fast path keeps an int where pydantic stores a float: == cannot tell
    # them apart (1 == 1.0); CHECKING (on in the CLI and golden tests) does
    class Loose(Out):
        x: float

    monkeypatch.setitem(convert._SCALARS, float, convert._any)
    assert type(Loose(x=1).x) is int
    monkeypatch.setattr(light, "CHECKING", True)
    with pytest.raises(AssertionError, match="Loose made without validation differs"):
        Loose(x=1)


class Row(Strict):
    lo: float
    hi: float
    name: str = ""

    @model_validator(mode="after")
    def _ordered(self) -> "Row":
        if self.lo > self.hi:
            raise ValueError("lo above hi")
        return self


class RowTwin(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    lo: float
    hi: float
    name: str = ""

    @model_validator(mode="after")
    def _ordered(self) -> "RowTwin":
        if self.lo > self.hi:
            raise ValueError("lo above hi")
        return self


@pytest.mark.parametrize("bad", [dict(lo=2, hi=1), dict(lo=1, hi=2, extra=3), dict(lo=float("nan"), hi=1),
                                 dict(lo=1, hi=float("inf"))])
def test_a_strict_row_refuses_what_pydantic_refuses_with_its_error(bad):
    # an after-validator's check (run on the made row), an unknown key (extra="forbid"), nan and inf
    # (allow_inf_nan=False): the same errors at the same places as the pydantic twin's
    with pytest.raises(ValidationError) as got:
        Row(**bad)
    with pytest.raises(ValidationError) as want:
        RowTwin(**bad)
    strip = lambda e: [(x["loc"], x["msg"], x["type"]) for x in e.errors()]  # noqa: E731
    assert strip(got.value) == strip(want.value)


def test_a_strict_row_that_passes_is_made_without_pydantic(pydantic_classes):
    made = pydantic_classes

    class Fresh(Strict):
        lo: float

        @model_validator(mode="after")
        def _positive(self) -> "Fresh":
            if self.lo < 0:
                raise ValueError("negative")
            return self

    assert Fresh(lo=1).lo == 1.0 and made == []
    with pytest.raises(ValidationError, match="Value error, negative"):
        Fresh(lo=-1)
    assert made == ["Fresh"]  # the refusal's error came from the shadow model


def test_defaults_made_without_validation_are_the_validated_ones():
    # class defaults made by model_construct (their validators would only check given values) equal the
    # validated defaults, types and fields set included
    from quantadvise.catalog.schemes import SchemePreset
    from quantadvise.perf.profiles import Knobs, PerfProfile
    from quantadvise.scheme.axes import DeployHints, LayerPolicy, Scheme

    pairs = [(PerfProfile.model_fields["defaults"].default, Knobs()),
             (Scheme.model_fields["policy"].default, LayerPolicy()),
             (SchemePreset.model_fields["policy"].default, LayerPolicy()),
             (SchemePreset.model_fields["deploy"].default, DeployHints())]
    for made, validated in pairs:
        assert light.identical(made, validated), type(validated).__name__


def test_the_ideal_profile_is_made_on_first_use():
    import quantadvise.perf.profiles as profiles

    ideal = profiles.IDEAL
    assert ideal is profiles.IDEAL and ideal.ideal and ideal.defaults.memory_efficiency == 1.0
    with pytest.raises(AttributeError):
        profiles.NOT_A_PROFILE  # noqa: B018 - the module's __getattr__ answers only IDEAL


def test_json_round_trip_and_schema_are_pydantics():
    report = Report(hint=Hint(flag="f", note="n"))
    assert Report.model_validate_json(report.model_dump_json()) == report
    assert report.model_dump_json() == f'{{"schema_version":{SCHEMA_VERSION},"hint":{{"flag":"f","note":"n"}}}}'
    schema, want = Inner.model_json_schema(), InnerTwin.model_json_schema()
    assert schema["properties"] == want["properties"] and schema["required"] == want["required"] == ["name"]


def test_the_group_shape_constants_are_the_validated_ones():
    from quantadvise.scheme.axes import PER_CHANNEL, PER_TENSOR, GroupShape

    assert light.identical(PER_TENSOR, GroupShape(row=-1, col=-1))
    assert light.identical(PER_CHANNEL, GroupShape(row=1, col=-1))


def test_the_ideal_allreduce_is_the_validated_one():
    from quantadvise.perf.efficiency import IDEAL_ALLREDUCE
    from quantadvise.perf.profiles import AllReduceCost

    valid = AllReduceCost(latency_s=0.0, efficiency=1.0)  # validated: in range (latency >= 0, efficiency <= 1)
    assert IDEAL_ALLREDUCE == valid and IDEAL_ALLREDUCE.model_fields_set == valid.model_fields_set
    assert type(IDEAL_ALLREDUCE.latency_s) is float and type(IDEAL_ALLREDUCE.efficiency) is float


def _shape_fields(ns: dict[str, Any]) -> dict[str, Any]:
    """The body of a class whose validators transform: a before model validator (text -> fields), a field's
    before validator (text -> lower case) and after validator (a list -> a sorted tuple), an after check."""
    def parse(cls: Any, data: Any) -> Any:
        return {"name": data.split(":")[0], "tags": data.split(":")[1].split(",")} if isinstance(data, str) else data

    def lower(cls: Any, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v

    def ordered(cls: Any, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(v))

    def nonempty(self: Any) -> Any:
        if not self.name:
            raise ValueError("a name is needed")
        return self

    return {**ns, "__annotations__": {"name": str, "tags": tuple[str, ...]}, "tags": (),
            "_parse": model_validator(mode="before")(classmethod(parse)),
            "_lower": field_validator("name", mode="before")(classmethod(lower)),
            "_ordered": field_validator("tags")(classmethod(ordered)),
            "_nonempty": model_validator(mode="after")(nonempty)}


Shaped = type("Shaped", (Strict,), _shape_fields({"__module__": __name__}))
ShapedTwin = type("ShapedTwin", (BaseModel,), _shape_fields({
    "__module__": __name__, "model_config": ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)}))


@pytest.mark.parametrize("given", [dict(name="AbC", tags=["b", "a"]), dict(name="x")])
def test_validators_of_the_value_run_as_pydantic_runs_them(given):
    made, want = Shaped(**given), ShapedTwin(**given)
    assert light.identical(dict(made), dict(want)) and made.model_fields_set == want.model_fields_set
    assert light.identical(dict(Shaped.model_validate("Q:z,y")), dict(ShapedTwin.model_validate("Q:z,y")))
    with pytest.raises(ValidationError, match="a name is needed"):
        Shaped(name="")


def test_a_cached_property_is_not_a_field():
    # functools.cached_property keeps its value in the instance's __dict__ (a flag vocabulary's `registered`, its
    # lookups): equality, hashing, iteration, dumps and copies see the fields only, as pydantic's do
    import functools

    class Cached(Out):
        name: str

        @functools.cached_property
        def table(self) -> dict[str, int]:
            return {self.name: 1}

    a, b = Cached(name="x"), Cached(name="x")
    h = hash(a)
    assert a.table == {"x": 1} and "table" in a.__dict__  # cached on the instance
    assert a == b and b == a and hash(a) == hash(b) == h
    assert dict(a) == {"name": "x"} and a.model_dump() == {"name": "x"}
    other = a.model_copy(update={"name": "y"})
    assert other.table == {"y": 1}  # a copy with other values computes its own, not the original's
    assert copy.deepcopy(a) == a and "table" not in copy.deepcopy(a).__dict__
