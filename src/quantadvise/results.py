"""One base for every result quantadvise returns, and the one JSON schema version.

Every command's result is a :class:`Result`: a frozen pydantic model whose
``model_dump(mode="json")`` is exactly what ``--format json`` prints, stamped with
:data:`SCHEMA_VERSION`. Nested pieces derive from :class:`Out`. Data rows and user files
validated on the way in derive from :class:`Strict` (unknown keys rejected).
"""

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

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


class Strict(BaseModel):
    """Validated input: a data row, a config file, a profile. Unknown keys are errors, and so is a
    number that is not finite (nan, inf: a profile's curve through nan prices nothing)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)
