"""The schema of the engine-release data files: ``data/engines/<engine>-<version>.yaml``.

One file per engine release (:class:`EngineData`), every row a :class:`quantadvise.results.Strict`
model (``extra="forbid"``) with a stable lowercase ``id``, ``source`` and ``as_of``: methods (the
``--quantization`` names) with their config class, minimum compute capability, activation dtypes and
"optimized" flag; KV cache dtypes; online shorthands; the override probe order and what each override
fires on; SGLang's compatible-methods and requantization tables; the compressed-tensors dispatch
table; and the exact messages the engine prints. The checkpoint-format library (compressed-tensors:
its vocabulary and named presets) is a file of its own, :class:`FormatLibrary`.

Pure: :mod:`quantadvise.catalog` reads the YAML and validates it against these models.
"""

from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from ..results import Strict
from .kernel_refusals import KernelRefusal

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..checkpoint.quant import QArgs

# The format version of the engine-release and format-library data files (their top-level
# ``schema_version``). Not the JSON report version (:data:`quantadvise.results.SCHEMA_VERSION`).
DATA_FORMAT_VERSION = 1
Severity = Literal["error", "warning", "info"]


class _Row(Strict):
    """A data row: stable id, aliases, where the fact was read and when."""

    id: str
    aliases: tuple[str, ...] = ()
    source: str
    as_of: date


class PackageSource(Strict):
    """The published artifact the facts were read from."""

    package: str
    version: str
    artifact: str
    sha256: str
    commit: str | None = None
    commit_note: str | None = None
    pins: dict[str, str] = Field(default_factory=dict)
    files: tuple[str, ...] = ()
    read_by: str


class SchemeGate(Strict):
    """A per-scheme minimum capability inside one method (quark, inc, compressed-tensors)."""

    scheme: str
    min_capability: int


class WithoutConfig(Strict):
    """What the engine's ``get_quant_config`` does when ``--quantization`` names the method and the
    checkpoint carries no quantization config: it looks for ``get_config_filenames()`` and finds none
    (``raises: config_file_missing``), or, with no file names, calls the config class with no
    arguments, which raises TypeError because ``init`` takes the required parameters ``missing``
    (``raises: config_class_needs_arguments``). A method the engine builds some other way there (an
    online shorthand, a name it special-cases, a class that needs no arguments) has none."""

    raises: Literal["config_file_missing", "config_class_needs_arguments"]
    init: str | None = None  # the __init__ Python names in the TypeError ("QuarkConfig.__init__")
    missing: tuple[str, ...] = ()  # its required parameters, in order
    keyword_only: bool = False  # ``missing`` are keyword-only (no positional one is required)

    @model_validator(mode="after")
    def _args(self) -> "WithoutConfig":
        if (self.raises == "config_class_needs_arguments") != bool(self.init and self.missing):
            raise ValueError("config_class_needs_arguments names the __init__ and its missing parameters")
        return self

    def type_error(self) -> dict[str, str]:
        """The values of CPython's "missing required argument" TypeError (``format_missing``):
        ``'a'``, ``'a' and 'b'``, ``'a', 'b', and 'c'``."""
        names = [repr(n) for n in self.missing]
        joined = names[0] if len(names) == 1 else (
            f"{names[0]} and {names[1]}" if len(names) == 2 else ", ".join(names[:-1]) + f", and {names[-1]}")
        kind = "keyword-only" if self.keyword_only else "positional"
        return {"init": self.init or "", "count": str(len(names)),
                "arguments": f"{kind} argument" + ("s" if len(names) > 1 else ""), "names": joined}


class Method(_Row):
    """One ``--quantization`` name (or a registry-only name detected from checkpoints)."""

    config_class: str | None
    canonical: str | None = None  # get_name() when it differs from id (aliases collapsing to one class)
    kind: Literal[
        "checkpoint", "online", "online_shorthand", "checkpoint_or_online", "kernel_override",
        "online_requant", "escape_hatch",
    ] = "checkpoint"
    min_capability: int | None
    effective_min_capability: int | None = None  # when kernels need more than the config-level gate
    supported_act_dtypes: tuple[str, ...] | None
    weight_bits: int | tuple[int, ...] | None = None
    act_bits: int | tuple[int, ...] | None = None
    weight_type: str | None = None
    optimized: bool | None = None  # SGLang's allow-list; None where the concept does not exist
    deprecated: bool = False
    cli_choice: bool = True  # offered on --quantization
    registered: bool = True  # in the CUDA registry (SGLang's gptq / mlx_q* are CLI choices only)
    registered_on: tuple[str, ...] = ()
    rocm_allowed: bool | None = None
    kv_scales_on_attention: Literal["always", "with_kv_scheme", "never"] | None = None
    scheme_gates: tuple[SchemeGate, ...] = ()
    # get_config_filenames(): files the engine looks for when --quantization names this method and
    # the checkpoint has no quantization_config; none found -> "Cannot find the config file"
    config_filenames: tuple[str, ...] = ()
    # get_quant_config without a checkpoint quantization config (None: the engine builds one anyway)
    without_config: WithoutConfig | None = None
    # below this capability the weights run weight-only (Marlin) and the engine prints this message
    # (None: quantadvise's own warning, the engine logs nothing)
    weight_only_below: int | None = None
    weight_only_message: str | None = None
    # block-quantized weights reach Marlin below this capability instead (vLLM: its native block-FP8
    # kernels need SM90 and its block list tries Marlin before Triton)
    weight_only_block_below: int | None = None
    # groups with 16-bit activations run Marlin on every capability but these (vLLM NVFP4 W4A16 forces
    # FP4 Marlin outside SM100/103); None: like the other groups
    weight_only_a16_except: tuple[int, ...] | None = None
    notes: str = ""

    @property
    def name(self) -> str:
        return self.id


class KvCacheDtype(_Row):
    """One ``--kv-cache-dtype`` choice and its constraints."""

    mode: str
    storage: str | None = None  # quantadvise number format of the stored KV, None = model dtype
    alias_of: str | None = None
    min_capability: int | None = None
    capability_majors: tuple[int, ...] = ()  # only these GPU generations (e.g. SGLang nvfp4: SM100/SM120)
    not_on: tuple[str, ...] = ()  # platforms that refuse it (cpu)
    requires: str = ""
    error: str | None = None  # message id: a choice the flag still offers but the engine refuses
    notes: str = ""


class ShorthandSpec(Strict):
    weight: str
    activation: str | None = None
    scheme: str | None = None  # the quantadvise preset id it amounts to


class Shorthand(_Row):
    """An online ``--quantization`` shorthand and what it expands to."""

    linear: ShorthandSpec | None
    moe: ShorthandSpec | None
    deferred: bool = False  # the checkpoint's own quantization metadata wins when present
    effective_min_capability: int | None = None
    notes: str = ""


class QuantAlgoMatch(Strict):
    """How the engine tests a ModelOpt ``quant_algo``: ``==`` one of ``equals``, or one of
    ``contains`` is a substring (``"FP4" in quant_algo``); upper-cased first unless the engine compares
    the raw string (``case_sensitive``: SGLang's ``_parse_modelopt_quant_config``)."""

    equals: tuple[str, ...] = ()
    contains: tuple[str, ...] = ()
    case_sensitive: bool = False

    def matches(self, algo: str | None) -> bool:
        a = algo or ""
        if not self.case_sensitive:
            a = a.upper()
        if self.equals and a in self.equals:
            return True
        return bool(self.contains) and any(c in a for c in self.contains)


class Override(_Row):
    """``override_quantization_method``: a config class claiming a checkpoint (the probe loop).

    ``id`` is what the override returns (``checkpoint`` = keep the checkpoint's own method);
    ``probed_as`` lists the probe-order names whose class carries this override."""

    returns: str
    probed_as: tuple[str, ...]
    checkpoint_methods: tuple[str, ...] = ()
    checkpoint_method_prefix: str | None = None
    quant_algo: QuantAlgoMatch | None = None
    model_types: tuple[str, ...] = ()
    user_in: tuple[str | None, ...] | None = None  # None = any user value
    requires_marlin: Literal["gptq", "awq"] | None = None
    platforms: tuple[str, ...] = ()  # empty = every platform
    not_platforms: tuple[str, ...] = ()
    notes: str = ""


class Rewrite(_Row):
    """How the engine reads a checkpoint's method before probing (SGLang's ModelOpt parsing)."""

    checkpoint_method_prefix: str
    quant_algo: QuantAlgoMatch
    has_nvfp4_layers: bool | None = None
    becomes: str
    notes: str = ""


class MethodSpelling(_Row):
    """How the engine spells a checkpoint's ``quant_method`` before it reads it: ``old`` replaced by ``new``
    wherever it occurs, after lower-casing (vLLM's library-name normalization reads ``compressed_tensors`` as
    ``compressed-tensors``; SGLang has none, so there the underscore spelling is an unknown method)."""

    old: str
    new: str
    notes: str = ""


class ConfigReading(_Row):
    """How the engine reads a quantization_config of one shape before any method is probed. ``id``
    ``no-quant-method``: a config that names no ``quant_method`` (an MLX ``{group_size, bits}``, a flat
    ModelOpt export): ``unquantized`` — the method is read as "" and the model is built 16-bit, so the
    checkpoint's quantized tensors have nothing to load into (vLLM); ``modelopt-else-empty`` — parsed as
    ModelOpt when it has a ``quant_algo``, else the method is "" and refused as unknown (SGLang)."""

    reads_as: Literal["unquantized", "modelopt-else-empty"]
    message: str | None = None  # message id the load fails with, where one is on file
    notes: str = ""


class Compatible(_Row):
    """SGLang's compatible_quantization_methods: CLI ``id`` may run on these checkpoint methods."""

    checkpoint_methods: tuple[str, ...]


class PlatformList(_Row):
    """A platform allow-list (``supported_quantization``); anything else is refused there."""

    allowed: tuple[str, ...]


class DtypeCheck(_Row):
    """What the engine does at startup with a model dtype the GPU cannot run (vLLM's
    ``check_if_supports_dtype`` and ``_resolve_auto_dtype``, SGLang's ``maybe_downgrade_dtype_for_legacy_gpu``).

    Applies to the model dtypes ``dtypes`` (empty: any) asked for as ``requested`` (``explicit``: ``--dtype``
    names it; ``auto``: ``--dtype auto`` and the checkpoint's ``torch_dtype`` is it; ``any``: either) on a GPU
    of compute capability below ``below`` on ``platforms`` (empty: any): ``refuse`` raises ``message``;
    ``fallback`` runs the model in ``becomes`` and logs ``message``."""

    dtypes: tuple[str, ...] = ()
    requested: Literal["explicit", "auto", "any"] = "any"
    below: int
    platforms: tuple[str, ...] = ()
    action: Literal["refuse", "fallback"]
    becomes: str | None = None
    message: str
    notes: str = ""

    @model_validator(mode="after")
    def _becomes(self) -> "DtypeCheck":
        if (self.action == "fallback") != (self.becomes is not None):
            raise ValueError(f"dtype check '{self.id}': a fallback names what it becomes, a refusal does not")
        return self


class ArgsMatch(Strict):
    """A predicate over one role's quantization args (compressed-tensors QuantizationArgs)."""

    type: Literal["int", "float"] | None = None
    num_bits: tuple[int, ...] = ()
    strategy: tuple[str, ...] = ()
    group_size: tuple[int, ...] = ()
    symmetric: bool | None = None
    dynamic: tuple[bool | str, ...] = ()
    scale_dtype: tuple[str, ...] = ()

    def matches(self, a: "QArgs | None") -> bool:
        if a is None:
            return False
        if self.type is not None and a.type != self.type:
            return False
        if self.num_bits and a.num_bits not in self.num_bits:
            return False
        if self.strategy and a.strategy not in self.strategy:
            return False
        if self.group_size and a.group_size not in self.group_size:
            return False
        if self.symmetric is not None and a.symmetric != self.symmetric:
            return False
        if self.dynamic and a.dynamic not in self.dynamic:
            return False
        if self.scale_dtype:
            from ..checkpoint.args import SCALE_DTYPES

            # the data writes torch dtype names (uint8 = MX e8m0 scales); QArgs holds normalized formats
            wanted = {SCALE_DTYPES.get(d.lower(), d) for d in self.scale_dtype}
            return (a.scale_dtype or "") in wanted
        return True


class Dispatch(_Row):
    """One row of the compressed-tensors scheme dispatch (first match wins, ``order``)."""

    order: int
    scheme: str | None  # None: the row raises (``error`` names the message)
    weights: ArgsMatch
    activations: ArgsMatch | Literal["none", "any"] = "any"
    output_activations: ArgsMatch | None = None
    formats: tuple[str, ...] = ()  # empty = any format
    min_capability: int | None = None
    exact_capability: int | None = None  # only this GPU generation can take the row
    fallback: str | None = None  # scheme used below ``fallback_below`` (W8A8Fp8 -> W8A16Fp8)
    fallback_below: int | None = None
    fallback_min_capability: int | None = None
    fallback_message: str | None = None  # message id the engine logs when it takes the fallback
    fallback_platforms: tuple[str, ...] = ()  # where the fallback exists (empty: wherever the row dispatches)
    message: str | None = None  # message id the engine logs whenever this row's scheme runs (see message_*)
    # the scheme's kernel selection reaches the Marlin kernel that logs ``message`` only below this
    # capability (block-quantized weights: below ``message_block_below``) and not on ``message_except``;
    # with any of them set, ``message`` is not claimed without a GPU capability
    message_below: int | None = None
    message_block_below: int | None = None
    message_except: tuple[int, ...] = ()
    below_message: str | None = None  # message id raised below min_capability (default: the scheme check's)
    error: str | None = None  # finding kind when the row refuses (its message, if recorded, has that id)
    label: str = ""  # short human label (W4A16, W8A8-FP8 ...)
    notes: str = ""


class KvSchemeRule(Strict):
    """What a compressed-tensors ``kv_cache_scheme`` must be for the engine to use it."""

    types: tuple[str, ...]
    num_bits: tuple[int, ...]
    type_and_bits: Literal["either_must_match", "both_must_match"]
    strategies: tuple[str, ...]
    symmetric: bool = True
    dynamic: tuple[bool, ...] = ()
    on_violation: Literal["error", "ignore"]
    auto_dtype: str | None = None  # what --kv-cache-dtype auto becomes when the scheme is present
    source: str
    as_of: date
    notes: str = ""


class CompressedTensors(Strict):
    pinned_version: str | None = None
    kv_cache_scheme: KvSchemeRule
    rejects_actorder: tuple[str, ...] = ()  # weight actorder values the engine refuses
    rejects_sparsity: bool = False  # any sparsity_config is refused while the config is read (vLLM)
    # 2:4 sparsity the Cutlass 2:4 kernel would take (dense / sparse-24-bitmask, unquantized or 8-bit W8A8
    # per tensor|channel x tensor|token) is refused at layer construction (SGLang ``supports_cutlass_24``)
    rejects_cutlass_24: bool = False
    # MoE experts in OCP MXFP4 (float 4-bit, group 32, symmetric weights; or a format naming mxfp4) are
    # served by the engine's own MoE method, bypassing the linear scheme dispatch (SGLang Mxfp4MoEMethod)
    mxfp4_moe_method: str | None = None
    attention_only_groups: Literal["skipped", "used"] = "used"
    reads_transform_config: bool = True  # False: transform_config (SpinQuant/QuIP rotations) is never read
    activation_formats: tuple[str, ...] = ()  # formats under which activation args are read
    dispatch: tuple[Dispatch, ...] = ()
    source: str
    as_of: date


ConfigValue = int | bool | str | None


class ConfigRule(_Row):
    """A check a config class makes on the checkpoint's quantization_config when it is built
    (``AutoGPTQConfig.TYPE_MAP``, ModelOpt's ``QUANT_ALGOS`` ...): the values of ``fields`` (as the
    dialect parser records them in ``CheckpointQuant.details``) must be one of ``allowed``, else the
    engine raises ``message``. Applies to checkpoints of ``family`` (None: any) read from
    ``found_in`` (empty: anywhere) whose details hold ``only_if`` (ModelOpt's {producer, quantization}
    layout: ``legacy_layout: true``) that resolve to one of ``methods`` (empty: any method)."""

    methods: tuple[str, ...] = ()
    family: str | None = None
    found_in: tuple[str, ...] = ()
    only_if: dict[str, ConfigValue] = Field(default_factory=dict)  # details the layout it checks has
    fields: tuple[str, ...]
    allowed: tuple[tuple[ConfigValue, ...], ...]
    case_insensitive: bool = False  # strings compared upper-cased (the engine upper-cases them)
    message: str
    notes: str = ""

    @model_validator(mode="after")
    def _shape(self) -> "ConfigRule":
        if not self.fields or any(len(a) != len(self.fields) for a in self.allowed):
            raise ValueError(f"config rule '{self.id}': every allowed tuple needs one value per field")
        return self

    def _norm(self, v: ConfigValue) -> ConfigValue:
        return v.upper() if self.case_insensitive and isinstance(v, str) else v

    def values(self, details: dict[str, Any]) -> tuple[ConfigValue, ...]:
        return tuple(self._norm(details.get(f)) for f in self.fields)

    def violated(self, details: dict[str, Any]) -> bool:
        got = self.values(details)
        return not any(got == tuple(self._norm(v) for v in a) for a in self.allowed)


class MarlinCompat(_Row):
    """Which checkpoints an override that needs Marlin may claim (SGLang's ``is_awq_marlin_compatible``
    / ``is_gptq_marlin_compatible``): the values of ``fields`` (as ``CheckpointQuant.details`` records
    them) must be one of ``allowed`` (the config class's ``TYPE_MAP`` keys whose scalar type the
    Marlin kernels take, with or without zero points). ``id`` is the override's ``requires_marlin``."""

    fields: tuple[str, ...]
    allowed: tuple[tuple[ConfigValue, ...], ...]
    notes: str = ""

    def accepts(self, details: dict[str, Any]) -> bool:
        return tuple(details.get(f) for f in self.fields) in {tuple(a) for a in self.allowed}


class Message(_Row):
    """An exact message the engine prints. ``text`` is a str.format template; ``parts`` is used
    instead when the engine passes several arguments to the exception (Python then prints the
    argument tuple, not a sentence)."""

    severity: Severity
    exception: str  # ValueError, NotImplementedError, RuntimeError, logger.warning, logger.info
    text: str | None = None
    parts: tuple[str, ...] = ()
    notes: str = ""

    @model_validator(mode="after")
    def _one_form(self) -> "Message":
        if (self.text is None) == (not self.parts):
            raise ValueError("a message has either 'text' or 'parts'")
        return self

    def render(self, **values: Any) -> str:
        fmt = _SafeFormat(values)
        if self.text is not None:
            return self.text.format_map(fmt)
        return repr(tuple(p.format_map(fmt) for p in self.parts))


class _SafeFormat(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


class AutoKv(_Row):
    """What ``--kv-cache-dtype auto`` becomes for a checkpoint that declares a KV algorithm."""

    checkpoint_kv: str  # fp8 | nvfp4 (ModelOpt kv_cache_quant_algo, lowercased) or kv_cache_scheme
    becomes: str


class NotOptimizedExempt(Strict):
    methods: tuple[str, ...]
    min_capability: int
    max_capability: int | None = None


class EngineData(Strict):
    """One engine release: everything quantadvise knows about it, from one YAML file."""

    schema_version: int = DATA_FORMAT_VERSION
    id: str
    engine: str
    version: str
    kind: Literal["engine"] = "engine"
    display_name: str
    source: PackageSource
    as_of: date
    quantization_flag: str
    kv_cache_dtype_flag: str
    methods: tuple[Method, ...]
    optimized_allow_list: tuple[str, ...] | None = None
    not_optimized_exempt: NotOptimizedExempt | None = None
    overrides: tuple[Override, ...] = ()
    override_order: tuple[str, ...] = ()
    override_order_note: str = ""
    rewrites: tuple[Rewrite, ...] = ()
    compatible: tuple[Compatible, ...] = ()
    config_readings: tuple[ConfigReading, ...] = ()
    method_spellings: tuple[MethodSpelling, ...] = ()
    requantization_methods: tuple[str, ...] = ()
    marlin_group_sizes: tuple[int, ...] = ()
    marlin_min_capability: int | None = None
    marlin_compatible: tuple[MarlinCompat, ...] = ()
    # capabilities where the engine moves Humming ahead of Marlin in its linear-kernel lists (vLLM's
    # prioritize_humming): a layer that would run Marlin runs Humming there, which logs no warning
    humming_preferred: tuple[int, ...] = ()
    platform_lists: tuple[PlatformList, ...] = ()
    dtype_checks: tuple[DtypeCheck, ...] = ()
    shorthands: tuple[Shorthand, ...] = ()
    kv_cache_dtypes: tuple[KvCacheDtype, ...]
    auto_kv: tuple[AutoKv, ...] = ()
    compressed_tensors: CompressedTensors | None = None
    config_rules: tuple[ConfigRule, ...] = ()
    messages: tuple[Message, ...]
    kernel_refusals: tuple[KernelRefusal, ...] = ()  # kernels that raise at start-up on some GPUs
    history: dict[str, dict[str, int]] = Field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> "EngineData":
        if self.id != f"{self.engine}-{self.version}":
            raise ValueError(f"id must be '<engine>-<version>', got '{self.id}'")
        names = [m.id for m in self.methods]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate method ids: {dup}")
        known = set(names)
        for o in self.override_order:
            if o not in known:
                raise ValueError(f"override_order names unknown method '{o}'")
        for ov in self.overrides:
            if ov.returns not in known and ov.returns != "checkpoint":
                raise ValueError(f"override '{ov.id}' returns unknown method '{ov.returns}'")
        if self.optimized_allow_list is not None:
            allow = set(self.optimized_allow_list)
            for m in self.methods:
                if m.kind == "escape_hatch":
                    continue
                if m.optimized is None or m.optimized != (m.id in allow):
                    raise ValueError(f"method '{m.id}': optimized={m.optimized} disagrees with the allow-list")
        else:
            bad = [m.id for m in self.methods if m.optimized is not None]
            if bad:
                raise ValueError(f"no optimized allow-list in this engine, but {bad} set optimized")
        kv = [k.id for k in self.kv_cache_dtypes]
        if len(set(kv)) != len(kv):
            raise ValueError("duplicate kv cache dtype ids")
        msg_ids = [m.id for m in self.messages]
        if len(set(msg_ids)) != len(msg_ids):
            raise ValueError("duplicate message ids")
        said = [(f"config rule '{r.id}'", r.message) for r in self.config_rules]
        said += [(f"method '{m.id}'", m.weight_only_message) for m in self.methods if m.weight_only_message]
        if self.compressed_tensors is not None:
            for d in self.compressed_tensors.dispatch:
                said += [(f"dispatch row '{d.id}'", x) for x in (d.fallback_message, d.message, d.below_message) if x]
        said += [(f"dtype check '{d.id}'", d.message) for d in self.dtype_checks]
        said += [(f"kv cache dtype '{k.id}'", k.error) for k in self.kv_cache_dtypes if k.error]
        said += [(f"method '{m.id}' without_config", m.without_config.raises) for m in self.methods
                 if m.without_config is not None]
        for who, mid in said:
            if mid not in msg_ids:
                raise ValueError(f"{who} names unknown message '{mid}'")
        return self

    # -- lookups ----------------------------------------------------------------------------------
    @property
    def label(self) -> str:
        return f"{self.display_name} {self.version}"

    def method(self, name: str | None) -> Method | None:
        if name is None:
            return None
        for m in self.methods:
            if m.id == name:
                return m
        return None

    def message(self, kind: str) -> Message | None:
        for m in self.messages:
            if m.id == kind:
                return m
        return None

    def reading(self, rid: str) -> ConfigReading | None:
        return next((r for r in self.config_readings if r.id == rid), None)

    def kv_dtype(self, name: str) -> KvCacheDtype | None:
        for k in self.kv_cache_dtypes:
            if k.id == name:
                return k
        return None

    def platform_list(self, platform: str) -> PlatformList | None:
        for p in self.platform_lists:
            if p.id == platform:
                return p
        return None

    def shorthand(self, name: str | None) -> Shorthand | None:
        for s in self.shorthands:
            if s.id == name:
                return s
        return None

    @property
    def registered_names(self) -> list[str]:
        """The names the engine's registry accepts on CUDA (its 'Must be one of' list)."""
        return [m.id for m in self.methods if m.registered and m.kind != "escape_hatch"]

    @property
    def real_cli_methods(self) -> list[Method]:
        return [m for m in self.methods if m.cli_choice and m.kind != "escape_hatch"]
