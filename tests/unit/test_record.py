"""``results.record`` behaves as ``dataclass(frozen=True)`` does, and ``record(frozen=False)`` as a plain
``dataclass`` (it exists only to be cheaper to define)."""

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from quantadvise.results import record


def _pair(slots: bool) -> tuple[type, type]:
    def body() -> dict[str, object]:
        return {"__annotations__": {"a": int, "b": str, "c": tuple, "memo": dict},
                "b": "x", "c": (), "memo": field(default_factory=dict, compare=False, repr=False),
                "__module__": __name__, "__doc__": "doc", "__qualname__": "Rec"}

    ours = record(slots=slots)(type("Rec", (), body()))
    stdlib = dataclass(frozen=True, slots=slots)(type("Rec", (), body()))
    return ours, stdlib


@pytest.mark.parametrize("slots", [False, True])
def test_record_matches_a_frozen_dataclass(slots: bool) -> None:
    ours, stdlib = _pair(slots)
    for cls in (ours, stdlib):
        x, y = cls(1), cls(1, memo={"k": 1})
        # the same text, equality (memo is compare=False), hash and ordering of the fields
        assert repr(x) == "Rec(a=1, b='x', c=())"
        assert x == y and hash(x) == hash(y) == hash((1, "x", ()))
        assert x != cls(2) and (x == (1, "x", ())) is False
        assert [f.name for f in dataclasses.fields(cls)] == ["a", "b", "c", "memo"]
        assert cls.__match_args__ == ("a", "b", "c", "memo")
        assert dataclasses.replace(x, b="y") == cls(1, "y")
        assert dataclasses.asdict(y) == {"a": 1, "b": "x", "c": (), "memo": {"k": 1}}
        assert cls(1).memo is not cls(1).memo  # a fresh default per instance
        assert copy.deepcopy(y) == y and copy.copy(y).memo is y.memo
        with pytest.raises(dataclasses.FrozenInstanceError):
            x.a = 3  # type: ignore[misc]
        with pytest.raises(dataclasses.FrozenInstanceError):
            del x.b  # type: ignore[misc]
        with pytest.raises(TypeError):
            cls()  # a: no default
        p = cls.__dataclass_params__  # type: ignore[attr-defined]
        assert (p.init, p.repr, p.eq, p.frozen) == (True, True, True, True)
    assert (ours.__slots__ if slots else None) == (stdlib.__slots__ if slots else None)


@pytest.mark.parametrize("slots", [False, True])
def test_a_mutable_record_matches_a_plain_dataclass(slots: bool) -> None:
    def body() -> dict[str, object]:
        return {"__annotations__": {"a": int, "b": str, "memo": dict},
                "b": "x", "memo": field(default_factory=dict, compare=False, repr=False),
                "__module__": __name__, "__doc__": "doc", "__qualname__": "Mut"}

    ours = record(slots=slots, frozen=False)(type("Mut", (), body()))
    stdlib = dataclass(slots=slots)(type("Mut", (), body()))
    after_del = []
    for cls in (ours, stdlib):
        x, y = cls(1), cls(1, memo={"k": 1})
        assert repr(x) == "Mut(a=1, b='x')" and x == y and x != cls(2)
        assert cls.__hash__ is None  # eq without frozen: unhashable, as dataclass makes it
        with pytest.raises(TypeError):
            hash(x)
        x.a, x.b = 3, "z"  # mutable
        assert x == cls(3, "z") and dataclasses.astuple(x) == (3, "z", {})
        del x.b  # the class's default shows through, as a plain dataclass's does (none when slotted)
        after_del.append(getattr(x, "b", "<no attribute>"))
        assert cls(1).memo is not cls(1).memo and copy.deepcopy(y) == y
        assert dataclasses.replace(y, a=2) == cls(2, memo={"k": 1})
        p = cls.__dataclass_params__  # type: ignore[attr-defined]
        assert (p.init, p.repr, p.eq, p.frozen) == (True, True, True, False)
    assert after_del == (["<no attribute>"] * 2 if slots else ["x", "x"])
    if slots:
        assert ours.__slots__ == stdlib.__slots__
        with pytest.raises(AttributeError):
            ours(1).other = 1  # type: ignore[attr-defined]
        globals()["Mut"] = ours  # pickle finds the class by module and name
        try:
            assert pickle.loads(pickle.dumps(ours(5, "q"))) == ours(5, "q")
        finally:
            del globals()["Mut"]


def test_a_slotted_record_pickles() -> None:
    ours, _ = _pair(True)
    globals()["Rec"] = ours  # pickle finds the class by module and name
    try:
        x = ours(4, "z", (1,))
        assert pickle.loads(pickle.dumps(x)) == x
    finally:
        del globals()["Rec"]


def test_record_refuses_what_it_does_not_implement() -> None:
    with pytest.raises(TypeError, match="__post_init__"):
        @record
        class P:
            a: int

            def __post_init__(self) -> None:
                pass
    with pytest.raises(TypeError, match="init=False"):
        @record
        class Q:
            a: int = field(default=0, init=False)


@pytest.mark.parametrize("slots", [False, True])
def test_the_first_init_binds_as_the_compiled_one_and_hands_it_over(slots: bool, monkeypatch) -> None:
    # a record's __init__ binds arguments itself until the class has been built COMPILE_AFTER times (cold commands
    # compile nothing), then the compiled one takes its place; both bind as dataclass's __init__ does, and every
    # call the first one cannot bind gets Python's own TypeError from the compiled one
    from quantadvise.results import records

    monkeypatch.setattr(records, "COMPILE_AFTER", 5)
    ours, stdlib = _pair(slots)
    first = ours.__init__
    calls = [((1,), {}), ((1, "y"), {}), ((1,), {"c": (2,)}), ((), {"a": 3, "memo": {"k": 2}}), ((1, "y", (3,), {}), {})]
    for args, kwargs in calls:
        assert dataclasses.astuple(ours(*args, **kwargs)) == dataclasses.astuple(stdlib(*args, **kwargs))
    bad = [((), {}), ((1, "y", (), {}, 5), {}), ((1,), {"a": 2}), ((1,), {"zz": 0})]
    for args, kwargs in bad:
        with pytest.raises(TypeError) as got:
            ours(*args, **kwargs)
        with pytest.raises(TypeError) as want:
            stdlib(*args, **kwargs)
        # the same complaint (the compiled __init__ and dataclass's name the same argument)
        assert str(got.value).split("() ", 1)[1] == str(want.value).split("() ", 1)[1]
    assert ours.__init__ is not first  # built more than 5 times: the compiled one now
    assert dataclasses.astuple(ours(1, "z")) == dataclasses.astuple(stdlib(1, "z")) == (1, "z", (), {})
    assert ours(1).memo is not ours(1).memo  # a fresh factory value per instance, after the hand-over too


@pytest.mark.parametrize("frozen", [False, True])
def test_the_dataclass_params_are_the_ones_dataclass_gives(frozen: bool) -> None:
    # records._params builds __dataclass_params__ directly; it must hold what dataclass() itself writes
    from quantadvise.results import records

    made, want = records._params(frozen), records._made_params(frozen)
    assert type(made) is type(want)
    assert [getattr(made, s) for s in type(want).__slots__] == [getattr(want, s) for s in type(want).__slots__]
    assert repr(made) == repr(want)


def test_by_identity_answers_the_same_objects_once_and_equal_copies_afresh():
    from quantadvise.results import by_identity

    calls: list[tuple[int, ...]] = []

    @by_identity(size=2)
    def total(a: tuple[int, ...], b: tuple[int, ...] | None = None) -> int:
        calls.append(a)
        return sum(a) + (sum(b) if b else 0)

    x, y = (1, 2), (3,)
    assert total(x) == 3 and total(x) == 3 and len(calls) == 1  # the same object: asked once
    assert total(x, y) == 6 and total(x, y) == 6 and len(calls) == 2  # another argument list: its own entry
    copy = tuple([1, 2])  # equal, another object: never read from x's entry
    assert copy is not x and total(copy) == 3 and len(calls) == 3
    assert total(x, b=y) == 6 and total(x, b=y) == 6 and len(calls) == 5  # keywords: not memoized
    # the copy was the third entry past size 2: the memo started over there, so x is asked again
    assert total(x) == 3 and len(calls) == 6
