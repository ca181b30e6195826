"""How a result piece (``results.light.Out``) writes its values: what pydantic's serializer writes for the same
value in python or JSON mode — enums as values, tuples and sets as lists, dict keys as text, dates as ISO text,
nested pydantic models through their own ``model_dump``."""

import dataclasses
import datetime
import enum
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel


class Opts:
    """The options of one ``model_dump`` (a plain class: a dataclass costs every command ~0.5 ms to define)."""

    __slots__ = ("by_alias", "defaults", "json", "none", "unset")

    def __init__(self, json: bool, by_alias: bool, unset: bool, defaults: bool, none: bool):
        self.json, self.by_alias, self.unset, self.defaults, self.none = json, by_alias, unset, defaults, none


def dump_value(v: Any, o: Opts) -> Any:  # noqa: C901 - one branch per kind of value
    """A value as pydantic's serializer writes it in python or JSON mode (a piece through its own fields)."""
    t = type(v)
    if t is str or t is int or t is float or t is bool or v is None:
        return v
    if getattr(t, "__light_fields__", None) is not None:  # a result piece (results.light.Out)
        return v._dump(o, None, None)
    if isinstance(v, BaseModel):
        return v.model_dump(mode="json" if o.json else "python", by_alias=o.by_alias, exclude_unset=o.unset,
                            exclude_defaults=o.defaults, exclude_none=o.none)
    if isinstance(v, enum.Enum):
        return dump_value(v.value, o) if o.json else v
    if isinstance(v, list | tuple):
        items = [dump_value(x, o) for x in v]
        return items if o.json or t is list else (tuple(items) if t is tuple else t(*items))
    if isinstance(v, set | frozenset):
        items = [dump_value(x, o) for x in v]
        return items if o.json else t(items)
    if isinstance(v, dict):
        if o.json:
            return {json_key(k): dump_value(x, o) for k, x in v.items()}
        return {k: dump_value(x, o) for k, x in v.items()}
    if o.json and isinstance(v, datetime.date | datetime.time):
        return v.isoformat()
    if o.json and isinstance(v, PurePath):
        return str(v)
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: dump_value(getattr(v, f.name), o) for f in dataclasses.fields(v)}
    if o.json and isinstance(v, str | int | float):  # a subclass (an IntEnum is an Enum above)
        return t.__mro__[-2](v) if t.__mro__[-2] in (str, int, float) else v
    return v


def json_key(k: Any) -> str:
    """A dict key in pydantic's JSON: text as it is, an enum by its value, a number as its text."""
    if isinstance(k, enum.Enum):
        k = k.value
    if isinstance(k, str):
        return str(k)
    if isinstance(k, bool):
        return "true" if k else "false"
    if k is None:
        return "None"
    return str(k)
