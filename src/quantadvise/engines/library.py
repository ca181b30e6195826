"""The checkpoint-format library file (``data/engines/compressed-tensors-<version>.yaml``): the
vocabulary and the named preset schemes of compressed-tensors, the library both engines read
checkpoints with."""

from datetime import date
from typing import Literal

from pydantic import Field, model_validator

from ..results import Strict
from .data import DATA_FORMAT_VERSION, PackageSource, _Row


class PresetArgs(Strict):
    """compressed-tensors QuantizationArgs of one preset role."""

    num_bits: int
    type: Literal["int", "float"]
    strategy: str
    symmetric: bool = True
    dynamic: bool | Literal["local"] = False
    group_size: int | None = None
    block_structure: tuple[int, int] | None = None
    scale_dtype: str | None = None
    zp_dtype: str | None = None
    observer: str | None = None


class CtPreset(_Row):
    """A named preset scheme (``W4A16``, ``FP8_DYNAMIC`` ...); ``name`` is the library's spelling."""

    name: str
    weights: PresetArgs | None = None
    input_activations: PresetArgs | None = None
    alias_of: str | None = None


class FormatLibrary(Strict):
    """A checkpoint-format library release (compressed-tensors): vocabulary and presets."""

    schema_version: int = DATA_FORMAT_VERSION
    id: str
    library: str
    version: str
    kind: Literal["library"] = "library"
    source: PackageSource
    as_of: date
    strategies: tuple[str, ...]
    types: tuple[str, ...]
    activation_orderings: tuple[str, ...]
    compression_formats: tuple[str, ...]
    input_activation_strategies: tuple[str, ...]
    presets: tuple[CtPreset, ...]
    preset_history: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> "FormatLibrary":
        if self.id != f"{self.library}-{self.version}":
            raise ValueError(f"id must be '<library>-<version>', got '{self.id}'")
        names = {p.name for p in self.presets}
        for p in self.presets:
            if p.alias_of is not None and p.alias_of not in names:
                raise ValueError(f"preset '{p.name}' is an alias of unknown preset '{p.alias_of}'")
            for role in (p.weights, p.input_activations):
                if role is not None and role.strategy not in self.strategies:
                    raise ValueError(f"preset '{p.name}': unknown strategy '{role.strategy}'")
        return self

    def preset(self, name: str) -> CtPreset | None:
        for p in self.presets:
            if p.name == name:
                return self.preset(p.alias_of) if p.alias_of else p
        return None

