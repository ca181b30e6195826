"""Serving engines, version by version: what each accepts and how it treats a checkpoint.

Two halves, both pure (no I/O; ``registry`` loads the YAML):

1. The schema of ``data/engines/<engine>-<version>.yaml`` — one file per engine release, every row a
   pydantic model with ``extra="forbid"``, a stable lowercase ``id``, ``source`` and ``as_of``:
   methods (the ``--quantization`` names) with their config class, minimum compute capability,
   activation dtypes and "optimized" flag; KV cache dtypes; online shorthands; the override probe
   order and what each override fires on; SGLang's compatible-methods and requantization tables;
   the compressed-tensors dispatch table; and the exact messages the engine prints.
2. :func:`resolve` — given a parsed checkpoint (:mod:`quantadvise.checkpoint`), an engine release, a
   GPU's compute capability and the user's ``--quantization`` / ``--kv-cache-dtype``, predict the
   method the engine resolves to, the compressed-tensors scheme class each config group dispatches
   to, and every refusal or warning, quoting the engine's own message. Each refusal/warning is a
   :class:`Finding` with a stable ``kind`` (the CI gate maps kinds to rule ids).
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..checkpoint.dialects import CheckpointQuant, QArgs

SCHEMA_VERSION = 1
Severity = Literal["error", "warning", "info"]


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class _Row(_Data):
    """A data row: stable id, aliases, where the fact was read and when."""

    id: str
    aliases: tuple[str, ...] = ()
    source: str
    as_of: date


# -------------------------------------------------------------------------------------------------
# Engine data schema
# -------------------------------------------------------------------------------------------------


class PackageSource(_Data):
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


class SchemeGate(_Data):
    """A per-scheme minimum capability inside one method (quark, inc, compressed-tensors)."""

    scheme: str
    min_capability: int


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
    notes: str = ""

    @property
    def name(self) -> str:
        return self.id

    @property
    def class_name(self) -> str:
        return self.canonical or self.id


class KvCacheDtype(_Row):
    """One ``--kv-cache-dtype`` choice and its constraints."""

    mode: str
    storage: str | None = None  # quantadvise number format of the stored KV, None = model dtype
    alias_of: str | None = None
    min_capability: int | None = None
    capability_majors: tuple[int, ...] = ()  # only these GPU generations (e.g. SGLang nvfp4: SM100/SM120)
    not_on: tuple[str, ...] = ()  # platforms that refuse it (cpu)
    requires: str = ""
    notes: str = ""


class ShorthandSpec(_Data):
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


class QuantAlgoMatch(_Data):
    equals: tuple[str, ...] = ()
    contains: tuple[str, ...] = ()

    def matches(self, algo: str | None) -> bool:
        a = (algo or "").upper()
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


class Compatible(_Row):
    """SGLang's compatible_quantization_methods: CLI ``id`` may run on these checkpoint methods."""

    checkpoint_methods: tuple[str, ...]


class PlatformList(_Row):
    """A platform allow-list (``supported_quantization``); anything else is refused there."""

    allowed: tuple[str, ...]


class ArgsMatch(_Data):
    """A predicate over one role's quantization args (compressed-tensors QuantizationArgs)."""

    type: Literal["int", "float"] | None = None
    num_bits: tuple[int, ...] = ()
    strategy: tuple[str, ...] = ()
    group_size: tuple[int, ...] = ()
    symmetric: bool | None = None
    dynamic: tuple[bool | str, ...] = ()
    scale_dtype: tuple[str, ...] = ()

    def matches(self, a: QArgs | None) -> bool:
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
            from ..checkpoint.dialects import _SCALE_DTYPES

            # the data writes torch dtype names (uint8 = MX e8m0 scales); QArgs holds normalized formats
            wanted = {_SCALE_DTYPES.get(d.lower(), d) for d in self.scale_dtype}
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
    error: str | None = None  # finding kind when the row refuses (its message, if recorded, has that id)
    label: str = ""  # short human label (W4A16, W8A8-FP8 ...)
    notes: str = ""


class KvSchemeRule(_Data):
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


class CompressedTensors(_Data):
    pinned_version: str | None = None
    kv_cache_scheme: KvSchemeRule
    rejects_actorder: tuple[str, ...] = ()  # weight actorder values the engine refuses
    rejects_sparsity: bool = False
    attention_only_groups: Literal["skipped", "used"] = "used"
    activation_formats: tuple[str, ...] = ()  # formats under which activation args are read
    dispatch: tuple[Dispatch, ...] = ()
    source: str
    as_of: date


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
    def _one_form(self) -> Message:
        if (self.text is None) == (not self.parts):
            raise ValueError("a message has either 'text' or 'parts'")
        return self

    def render(self, **values: Any) -> str:
        fmt = _SafeFormat(values)
        if self.text is not None:
            return self.text.format_map(fmt)
        return repr(tuple(p.format_map(fmt) for p in self.parts))


class _SafeFormat(dict):  # type: ignore[type-arg]
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


class AutoKv(_Row):
    """What ``--kv-cache-dtype auto`` becomes for a checkpoint that declares a KV algorithm."""

    checkpoint_kv: str  # fp8 | nvfp4 (ModelOpt kv_cache_quant_algo, lowercased) or kv_cache_scheme
    becomes: str


class NotOptimizedExempt(_Data):
    methods: tuple[str, ...]
    min_capability: int
    max_capability: int | None = None


class EngineData(_Data):
    """One engine release: everything quantadvise knows about it, from one YAML file."""

    schema_version: int = SCHEMA_VERSION
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
    requantization_methods: tuple[str, ...] = ()
    marlin_group_sizes: tuple[int, ...] = ()
    marlin_min_capability: int | None = None
    platform_lists: tuple[PlatformList, ...] = ()
    shorthands: tuple[Shorthand, ...] = ()
    kv_cache_dtypes: tuple[KvCacheDtype, ...]
    auto_kv: tuple[AutoKv, ...] = ()
    compressed_tensors: CompressedTensors | None = None
    messages: tuple[Message, ...]
    history: dict[str, dict[str, int]] = Field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> EngineData:
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


# -------------------------------------------------------------------------------------------------
# compressed-tensors (the checkpoint-format library both engines read): presets and vocabulary
# -------------------------------------------------------------------------------------------------


class PresetArgs(_Data):
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


class FormatLibrary(_Data):
    """A checkpoint-format library release (compressed-tensors): vocabulary and presets."""

    schema_version: int = SCHEMA_VERSION
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
    def _consistent(self) -> FormatLibrary:
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


# -------------------------------------------------------------------------------------------------
# Resolution: what an engine release does with a checkpoint
# -------------------------------------------------------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)


class Finding(_Out):
    """One refusal, warning or note an engine gives, with the engine's own words.

    ``kind`` is stable (the CI gate maps kinds to rule ids such as QA1xx); ``message`` is
    quantadvise's one-line explanation with the fix; ``engine_message`` is what the engine prints
    (None where the text is not on file)."""

    kind: str
    rule_id: str | None = None
    severity: Severity
    engine: str
    version: str
    subject: str | None = None
    message: str
    engine_message: str | None = None
    engine_exception: str | None = None
    source: str | None = None


class GroupDispatch(_Out):
    """The kernel scheme one config group dispatches to (compressed-tensors and per-scheme gates)."""

    group: str
    scheme_class: str | None
    label: str = ""
    min_capability: int | None = None
    row: str | None = None
    note: str = ""


class EngineResolution(_Out):
    """What one engine release does with one checkpoint on one GPU."""

    engine: str
    version: str
    label: str
    platform: str
    capability: int | None
    user_quantization: str | None
    checkpoint_method: str | None  # quant_method as this engine reads it (after its own parsing)
    resolved_method: str | None  # None: loads unquantized (or refused before a method was chosen)
    config_class: str | None = None
    method_kind: str | None = None
    min_capability: int | None = None
    optimized: bool | None = None
    steps: list[str] = Field(default_factory=list)
    groups: list[GroupDispatch] = Field(default_factory=list)
    kv_cache_dtype: str = "auto"
    kv_cache_dtype_resolved: str | None = None
    findings: list[Finding] = Field(default_factory=list)

    @property
    def refused(self) -> bool:
        return any(f.severity == "error" for f in self.findings)

    @property
    def status(self) -> str:
        if self.refused:
            return "refused"
        return "warnings" if any(f.severity == "warning" for f in self.findings) else "ok"


_TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def serving_dtype(torch_dtype: str | None) -> str:
    """The activation dtype an engine runs with ``--dtype auto``: the config's 16-bit dtype; a
    float32 config runs in float16 (vLLM's and SGLang's auto rule)."""
    t = (torch_dtype or "bfloat16").lower().removeprefix("torch.")
    t = {"half": "float16", "float": "float32", "bf16": "bfloat16", "fp16": "float16"}.get(t, t)
    return "float16" if t == "float32" else t


def _marlin_ok(kind: str, ck: CheckpointQuant, engine: EngineData, capability: int | None) -> bool:
    d = ck.details
    if kind == "gptq":
        bits, group, sym = d.get("bits"), d.get("group_size"), d.get("sym")
        if bits is None or group is None or sym is None or "desc_act" not in d:
            return False
        if (bits, sym) not in ((4, True), (8, True)) or d.get("checkpoint_format") == "marlin":
            return False
    else:
        bits, group = d.get("w_bit"), d.get("q_group_size")
        if bits not in (4, 8) or group is None:
            return False
    if engine.marlin_group_sizes and group not in engine.marlin_group_sizes:
        return False
    return capability is None or engine.marlin_min_capability is None or capability >= engine.marlin_min_capability


def _fires(ov: Override, ck: CheckpointQuant, ck_method: str, user: str | None, model_type: str | None,
           platform: str, engine: EngineData, capability: int | None) -> bool:
    if ov.checkpoint_methods and ck_method not in ov.checkpoint_methods:
        return False
    if ov.checkpoint_method_prefix and not ck_method.startswith(ov.checkpoint_method_prefix):
        return False
    if ov.quant_algo is not None and not ov.quant_algo.matches(ck.quant_algo):
        return False
    if ov.model_types and model_type not in ov.model_types:
        return False
    if ov.user_in is not None and user not in ov.user_in:
        return False
    if ov.platforms and platform not in ov.platforms:
        return False
    if platform in ov.not_platforms:
        return False
    return not (ov.requires_marlin and not _marlin_ok(ov.requires_marlin, ck, engine, capability))


class _Ctx:
    def __init__(self, engine: EngineData):
        self.engine = engine
        self.findings: list[Finding] = []

    def add(self, kind: str, severity: Severity, message: str, subject: str | None = None, **values: Any) -> None:
        msg = self.engine.message(kind)
        self.findings.append(Finding(
            kind=kind, severity=severity, engine=self.engine.engine, version=self.engine.version, subject=subject,
            message=message, engine_message=msg.render(**values) if msg else None,
            engine_exception=msg.exception if msg else None, source=msg.source if msg else None,
        ))


def _pylist(names: list[str] | tuple[str, ...]) -> str:
    return "[" + ", ".join(repr(n) for n in names) + "]"


def resolve(
    engine: EngineData,
    ck: CheckpointQuant | None,
    *,
    capability: int | None = None,
    platform: str = "cuda",
    quantization: str | None = None,
    kv_cache_dtype: str | None = None,
    model_type: str | None = None,
    model_dtype: str | None = None,
    allow_deprecated: bool = False,
) -> EngineResolution:
    """Predict what ``engine`` does with checkpoint ``ck`` (None = unquantized): the method it
    resolves to, the scheme each config group dispatches to, and every refusal or warning."""
    ctx = _Ctx(engine)
    steps: list[str] = []
    user = quantization.strip().lower() if quantization else None
    dtype = serving_dtype(model_dtype)
    kv = (kv_cache_dtype or "auto").strip().lower()
    res: dict[str, Any] = {"checkpoint_method": None, "resolved": None}

    def done(method: Method | None = None, groups: list[GroupDispatch] | None = None,
             kv_resolved: str | None = None) -> EngineResolution:
        return EngineResolution(
            engine=engine.engine, version=engine.version, label=engine.label, platform=platform, capability=capability,
            user_quantization=user, checkpoint_method=res["checkpoint_method"], resolved_method=res["resolved"],
            config_class=method.config_class if method else None, method_kind=method.kind if method else None,
            min_capability=method.min_capability if method else None, optimized=method.optimized if method else None,
            steps=steps, groups=groups or [], kv_cache_dtype=kv, kv_cache_dtype_resolved=kv_resolved,
            findings=ctx.findings,
        )

    user_row = engine.method(user)
    if user_row is not None and user_row.kind == "escape_hatch":
        steps.append(f"--quantization {user}: explicit opt-out, checkpoint quantization auto-detection disabled")
        ctx.add("unquant_opt_out", "info", f"--quantization {user} tells {engine.label} to ignore the checkpoint's "
                "quantization_config" + (" (its quantized tensors will not load as 16-bit weights)" if ck and
                                        ck.is_quantized else ""), subject=user)
        kv_res = _check_kv(ctx, engine, ck, None, kv, capability, platform)
        return done(None, kv_resolved=kv_res)

    # 1. the checkpoint's method as this engine reads it
    ck_method: str | None = None
    if ck is not None:
        if ck.engines_read_it:
            ck_method = ck.quant_method
            steps.append(f"checkpoint {ck.found_in}: quant_method '{ck.quant_method}'"
                         + (f", quant_algo {ck.quant_algo}" if ck.quant_algo else ""))
        elif user is None:
            ctx.add("config_in_side_file", "error",
                    f"the quantization parameters are only in {ck.found_in}; {engine.label} reads config.json's "
                    f"quantization_config, treats the checkpoint as unquantized and cannot load its packed tensors: "
                    f"pass --quantization {ck.quant_method}", subject=ck.found_in)
        else:
            steps.append(f"{ck.found_in} is read because --quantization {user} asks for it")
        for rw in engine.rewrites:
            if ck_method and ck_method.startswith(rw.checkpoint_method_prefix) \
                    and rw.quant_algo.matches(ck.quant_algo) \
                    and (rw.has_nvfp4_layers is None or rw.has_nvfp4_layers == bool(ck.has_nvfp4_layers)):
                steps.append(f"{engine.display_name} parses quant_algo {ck.quant_algo} as '{rw.becomes}'")
                ck_method = rw.becomes
                break
    res["checkpoint_method"] = ck_method

    # 2. override probing
    if ck_method is not None and ck is not None and user not in engine.requantization_methods:
        order = list(engine.override_order) or list(dict.fromkeys(o.probed_as[0] for o in engine.overrides))
        if user == "humming" and "humming" in order:
            order.remove("humming")
            order.insert(0, "humming")
        seen: set[str] = set()
        for name in order:
            for ov in engine.overrides:
                if name not in ov.probed_as or ov.id in seen:
                    continue
                seen.add(ov.id)
                if _fires(ov, ck, ck_method, user, model_type, platform, engine, capability):
                    new = ck_method if ov.returns == "checkpoint" else ov.returns
                    steps.append(f"override {ov.id}: '{ck_method}'" + (f" with --quantization {user}" if user else "")
                                 + f" -> '{new}'")
                    ck_method = user = new
                    break
            else:
                continue
            break
        if user in ("awq", "gptq") and ck_method == user and engine.message("marlin_forced_off") and \
                _marlin_ok(user, ck, engine, capability):
            marlin = f"{user}_marlin"
            ctx.add("marlin_forced_off", "info", f"the checkpoint fits {marlin}, but --quantization {user} forces the "
                    f"slower kernels; drop the flag or pass {marlin}", subject=user, marlin=marlin, quantization=user)

    # 3. deferred online shorthands yield to checkpoint metadata
    sh = engine.shorthand(user)
    if sh is not None and sh.deferred and ck_method is not None:
        steps.append(f"--quantization {user} is deferred: the checkpoint's own '{ck_method}' metadata wins")
        user = None

    # 4. checkpoint vs --quantization
    if ck_method is None:
        resolved = user
    elif user is None:
        resolved = ck_method
    elif user == ck_method:
        resolved = user
    else:
        compat = next((c for c in engine.compatible if c.id == user), None)
        if compat is not None and ck_method in compat.checkpoint_methods:
            ctx.add("compatible_override", "info", f"--quantization {user} is on {engine.label}'s list of methods "
                    f"that may run a '{ck_method}' checkpoint", subject=user, quantization=user,
                    checkpoint_method=ck_method)
            resolved = user
        elif user in engine.requantization_methods:
            ctx.add("requantization", "info", f"{engine.label} requantizes the '{ck_method}' weights to {user} at "
                    "load: re-validate accuracy", subject=user, quantization=user, checkpoint_method=ck_method)
            resolved = user
        else:
            ctx.add("method_mismatch", "error", f"the checkpoint declares '{ck_method}' but --quantization is "
                    f"'{user}'; drop --quantization (or pass {ck_method})", subject=user, quantization=user,
                    checkpoint_method=ck_method)
            res["resolved"] = None
            return done(None, kv_resolved=_check_kv(ctx, engine, ck, None, kv, capability, platform))

    # 5. vLLM: --quantization fp8 on an unquantized checkpoint is the online shorthand now
    if ck_method is None and resolved == "fp8" and engine.message("fp8_online_deprecated") and \
            engine.shorthand("fp8_per_tensor") is not None:
        ctx.add("fp8_online_deprecated", "warning", "--quantization fp8 on an unquantized checkpoint is deprecated "
                "online quantization and becomes fp8_per_tensor; pass --quantization fp8_per_tensor",
                subject="fp8")
        steps.append("--quantization fp8 without checkpoint metadata -> fp8_per_tensor")
        resolved = "fp8_per_tensor"
    res["resolved"] = resolved
    if resolved is None:
        steps.append("no quantization: 16-bit weights")
        return done(None, kv_resolved=_check_kv(ctx, engine, ck, None, kv, capability, platform))

    # 6. is the name registered here?
    method = engine.method(resolved)
    if method is None or not method.registered:
        why = ("not in this engine's registry" if method is None else
               f"a CLI choice registered only on {', '.join(method.registered_on) or 'other platforms'}")
        ctx.add("unknown_method", "error", f"'{resolved}' is {why} in {engine.label}"
                + (f" ({ck.family} checkpoints do not load here)" if ck is not None and ck_method == resolved else ""),
                subject=resolved, quantization=resolved, supported=_pylist(engine.registered_names))
        return done(None, kv_resolved=_check_kv(ctx, engine, ck, None, kv, capability, platform))
    steps.append(f"'{resolved}' -> {method.config_class}"
                 + (f" (get_name {method.canonical})" if method.canonical else ""))

    # 7. platform allow-list
    plist = engine.platform_list(platform) if platform != "cuda" else None
    if plist is not None and resolved not in plist.allowed:
        ctx.add("platform_unsupported", "error", f"'{resolved}' is not on {engine.label}'s {platform} allow-list",
                subject=resolved, quantization=resolved, device=platform)

    # 8. deprecated
    if method.deprecated:
        if allow_deprecated:
            ctx.add("deprecated_method_allowed", "warning", f"'{resolved}' is deprecated in {engine.label} and will be "
                    "removed; re-export the checkpoint in a supported format", subject=resolved, quantization=resolved)
        else:
            ctx.add("deprecated_method", "error", f"'{resolved}' is deprecated in {engine.label}: it refuses to start "
                    "without --allow-deprecated-quantization", subject=resolved, quantization=resolved)

    # 9. SGLang's optimized allow-list
    if engine.optimized_allow_list is not None and method.optimized is False:
        ex = engine.not_optimized_exempt
        exempt = ex is not None and resolved in ex.methods and capability is not None and \
            capability >= ex.min_capability and (ex.max_capability is None or capability <= ex.max_capability)
        if not exempt:
            marlin = resolved in ("awq", "gptq") and ck is not None and _marlin_ok(resolved, ck, engine, capability)
            ctx.add("not_optimized", "warning", f"'{resolved}' is outside {engine.label}'s optimized list: it "
                    "loads but may run slower than bf16"
                    + ("; the checkpoint's Marlin path (drop --quantization) is optimized" if marlin else ""),
                    subject=resolved, quantization=resolved)

    # 10. compute capability
    if capability is not None and method.min_capability is not None and capability < method.min_capability:
        ctx.add("capability_too_low", "error", f"'{resolved}' needs compute capability {method.min_capability}; this "
                f"GPU has {capability}", subject=resolved, quantization=resolved,
                min_capability=method.min_capability, capability=capability)
    elif capability is not None and method.effective_min_capability and capability < method.effective_min_capability:
        ctx.add("kernel_capability", "warning", f"'{resolved}' passes the config-level gate but its kernels need "
                f"compute capability {method.effective_min_capability}", subject=resolved)

    # 11. activation dtype
    if method.supported_act_dtypes and dtype not in method.supported_act_dtypes:
        ctx.add("act_dtype_unsupported", "error", f"'{resolved}' runs with {', '.join(method.supported_act_dtypes)} "
                f"activations, the model's dtype is {dtype}: pass --dtype {method.supported_act_dtypes[0]}",
                subject=resolved, dtype=f"torch.{dtype}", quantization=resolved,
                supported="[" + ", ".join(f"torch.{d}" for d in method.supported_act_dtypes) + "]")

    # 12. fp8 config checks
    groups: list[GroupDispatch] = []
    if ck is not None and ck.family == "fp8" and method.config_class and "Fp8" in method.config_class \
            and ck.weight_block_size and ck.activation_scheme == "static":
        ctx.add("block_static_activations", "error", "block-quantized fp8 weights need dynamic activations "
                "(activation_scheme: dynamic)", subject="activation_scheme", activation_scheme="static")

    # 13. compressed-tensors checks and scheme dispatch
    if ck is not None and method.config_class == "CompressedTensorsConfig" and engine.compressed_tensors is not None:
        groups = _check_ct(ctx, engine, ck, capability)
    elif ck is not None and method.scheme_gates:
        groups = _check_gates(ctx, engine, ck, method, capability)

    kv_res = _check_kv(ctx, engine, ck, method, kv, capability, platform)
    return done(method, groups, kv_res)


def _check_ct(ctx: _Ctx, engine: EngineData, ck: CheckpointQuant, capability: int | None) -> list[GroupDispatch]:
    ct = engine.compressed_tensors
    assert ct is not None
    out: list[GroupDispatch] = []
    if ck.sparsity and ct.rejects_sparsity:
        ctx.add("ct_sparsity_rejected", "error", f"{engine.label} refuses compressed-tensors sparsity_config "
                f"({ck.sparsity.get('format', 'sparse')}); use a dense export", subject="sparsity_config")
    for g in ck.groups:
        if g.weights is None:
            continue
        if g.weights.actorder in ct.rejects_actorder:
            ctx.add("ct_actorder_rejected", "error", f"config group '{g.name}': weights.actorder "
                    f"'{g.weights.actorder}' is refused by {engine.label} (re-export with actorder 'weight')",
                    subject=g.name)
        if ct.attention_only_groups == "skipped" and g.targets and all(t.endswith("Attention") for t in g.targets):
            ctx.add("ct_attention_group_skipped", "warning", f"config group '{g.name}' targets only attention "
                    f"modules; {engine.label} skips it", subject=g.name)
            continue
        chosen = None
        for row in sorted(ct.dispatch, key=lambda r: r.order):
            if row.formats and (g.format or "") not in row.formats:
                continue
            if not row.weights.matches(g.weights):
                continue
            if row.activations == "none":
                if g.input_activations is not None:
                    continue
            elif row.activations != "any" and not row.activations.matches(g.input_activations):
                continue
            if row.output_activations is not None and not row.output_activations.matches(g.output_activations):
                continue
            if row.exact_capability is not None and capability is not None and capability != row.exact_capability:
                continue
            chosen = row
            break
        if chosen is None:
            ctx.add("ct_no_scheme", "error", f"config group '{g.name}' ({g.weights.describe()}"
                    + (f", activations {g.input_activations.describe()}" if g.input_activations else "")
                    + f", format {g.format}) matches no compressed-tensors scheme in {engine.label}", subject=g.name)
            out.append(GroupDispatch(group=g.name, scheme_class=None, note="no scheme"))
            continue
        if chosen.scheme is None:
            ctx.add(chosen.error or "ct_no_scheme", "error", f"config group '{g.name}': {chosen.label} is refused by "
                    f"{engine.label}", subject=g.name)
            out.append(GroupDispatch(group=g.name, scheme_class=None, label=chosen.label, row=chosen.id))
            continue
        scheme, min_cap, note = chosen.scheme, chosen.min_capability, ""
        if chosen.fallback and capability is not None and chosen.fallback_below and capability < chosen.fallback_below:
            scheme, min_cap = chosen.fallback, chosen.fallback_min_capability
            note = f"below compute capability {chosen.fallback_below}: weight-only fallback"
        out.append(GroupDispatch(group=g.name, scheme_class=scheme, label=chosen.label, min_capability=min_cap,
                                 row=chosen.id, note=note))
        if capability is not None and min_cap is not None and capability < min_cap:
            ctx.add("scheme_capability_too_low", "error", f"config group '{g.name}' dispatches to {scheme}, which "
                    f"needs compute capability {min_cap}; this GPU has {capability}", subject=g.name,
                    min_capability=min_cap, capability=capability)
    return out


def _check_gates(ctx: _Ctx, engine: EngineData, ck: CheckpointQuant, method: Method,
                 capability: int | None) -> list[GroupDispatch]:
    out = []
    for g in ck.groups:
        gate = next((sg for sg in method.scheme_gates if sg.scheme in g.labels), None)
        out.append(GroupDispatch(group=g.name, scheme_class=None, label=gate.scheme if gate else "",
                                 min_capability=gate.min_capability if gate else None,
                                 note="" if gate else "no per-scheme gate on file"))
        if gate and capability is not None and capability < gate.min_capability:
            ctx.add("scheme_capability_too_low", "error", f"config group '{g.name}' ({gate.scheme}) needs compute "
                    f"capability {gate.min_capability} in {method.id}; this GPU has {capability}", subject=g.name,
                    min_capability=gate.min_capability, capability=capability)
    return out


def _check_kv(ctx: _Ctx, engine: EngineData, ck: CheckpointQuant | None, method: Method | None, kv: str,
              capability: int | None, platform: str) -> str | None:
    row = engine.kv_dtype(kv)
    if row is None:
        ctx.add("kv_dtype_unknown", "error", f"--kv-cache-dtype {kv} is not one of {engine.label}'s "
                f"{len(engine.kv_cache_dtypes)} choices: {', '.join(k.id for k in engine.kv_cache_dtypes)}", subject=kv)
        return None
    if platform in row.not_on:
        ctx.add("kv_dtype_platform", "error", f"--kv-cache-dtype {kv} is not available on {platform} in "
                f"{engine.label}", subject=kv)
    if capability is not None and row.min_capability is not None and capability < row.min_capability:
        ctx.add("kv_dtype_capability", "error", f"--kv-cache-dtype {kv} needs compute capability {row.min_capability} "
                f"in {engine.label}; this GPU has {capability}", subject=kv)
    if capability is not None and row.capability_majors and capability // 10 not in row.capability_majors:
        ctx.add("kv_dtype_capability", "error", f"--kv-cache-dtype {kv} runs only on SM"
                + "/SM".join(f"{m}x" for m in row.capability_majors) + f" GPUs in {engine.label}; this GPU has "
                f"{capability}", subject=kv)
    # a KV-scale method on attention + fp8_e5m2
    if kv == "fp8_e5m2" and method is not None and ck is not None and engine.message("fp8_e5m2_with_fp8_checkpoint"):
        installs = method.kv_scales_on_attention == "always" or (
            method.kv_scales_on_attention == "with_kv_scheme" and ck.kv_cache_raw is not None)
        if installs:
            ctx.add("fp8_e5m2_with_fp8_checkpoint", "error", f"'{method.id}' loads e4m3 KV scales from the "
                    "checkpoint, which fp8_e5m2 cannot use: pass --kv-cache-dtype fp8 (e4m3) or auto", subject=kv)
    # a compressed-tensors kv_cache_scheme the engine cannot use
    ct = engine.compressed_tensors
    kv_ok = True
    if ck is not None and ck.kv_cache_raw is not None and ck.kv_cache is not None and ct is not None and \
            ck.family in ("compressed-tensors", "modelopt") and (method is None or method.config_class ==
                                                                  "CompressedTensorsConfig"):
        kv_ok = _check_kv_scheme(ctx, engine, ck)
    if kv != "auto":
        return kv
    if ck is None:
        return "auto"
    if ck.kv_cache_algo:
        key = "nvfp4" if "FP4" in ck.kv_cache_algo.upper() else "fp8"
        rule = next((a for a in engine.auto_kv if a.checkpoint_kv == key), None)
        if rule is not None:
            return rule.becomes
    if ck.kv_cache_raw is not None and kv_ok:
        rule = next((a for a in engine.auto_kv if a.checkpoint_kv == "kv_cache_scheme"), None)
        if rule is not None:
            return rule.becomes
    return "auto"


def _check_kv_scheme(ctx: _Ctx, engine: EngineData, ck: CheckpointQuant) -> bool:
    ct = engine.compressed_tensors
    assert ct is not None and ck.kv_cache is not None
    rule = ct.kv_cache_scheme
    a = ck.kv_cache
    type_ok, bits_ok = a.type in rule.types, a.num_bits in rule.num_bits
    bad_tb = (not type_ok and not bits_ok) if rule.type_and_bits == "either_must_match" else not (type_ok and bits_ok)
    problems: list[tuple[str, str, dict[str, Any]]] = []
    if bad_tb:
        problems.append(("kv_cache_scheme_unsupported", f"type {a.type}, {a.num_bits} bits",
                         {"num_bits": a.num_bits, "type": a.type}))
    elif a.strategy not in rule.strategies:
        problems.append(("kv_cache_scheme_strategy", f"strategy {a.strategy}", {"strategy": a.strategy}))
    elif rule.symmetric and not a.symmetric:
        problems.append(("kv_cache_scheme_symmetric", "asymmetric", {"symmetric": a.symmetric}))
    elif rule.dynamic and bool(a.dynamic) not in rule.dynamic:
        problems.append(("kv_cache_scheme_dynamic", "dynamic scales", {}))
    if not problems:
        return True
    kind, what, values = problems[0]
    accepted = (f"type {'/'.join(rule.types)}, {'/'.join(map(str, rule.num_bits))} bits, strategy "
                f"{' or '.join(rule.strategies)}, symmetric")
    if rule.on_violation == "error":
        ctx.add(kind, "error", f"kv_cache_scheme ({what}) cannot be loaded by {engine.label}, which accepts only "
                f"{accepted}", subject="kv_cache_scheme", **values)
    else:
        ctx.add("kv_cache_scheme_ignored", "warning", f"kv_cache_scheme ({what}) is ignored by {engine.label} (it uses "
                f"only {accepted}); the KV cache runs unquantized unless --kv-cache-dtype says otherwise",
                subject="kv_cache_scheme")
    return False


# -------------------------------------------------------------------------------------------------
# Listings for `quantadvise engines` (pure views over the data)
# -------------------------------------------------------------------------------------------------


class EngineListing(_Out):
    schema_version: int = SCHEMA_VERSION
    engine: str
    version: str
    label: str
    source: PackageSource
    as_of: date
    counts: dict[str, int]
    methods: list[Method]
    kv_cache_dtypes: list[KvCacheDtype]
    shorthands: list[Shorthand]
    override_order: list[str]
    optimized_allow_list: list[str] | None
    notes: list[str]
    warnings: list[str] = Field(default_factory=list)


class MethodDetail(_Out):
    schema_version: int = SCHEMA_VERSION
    engine: str
    version: str
    label: str
    method: Method
    same_class: list[str]  # other names that collapse onto this config class
    overrides: list[Override]  # overrides that return this method
    runs_on_checkpoints: list[str]  # SGLang compatible table: checkpoint methods this CLI name accepts
    platforms: dict[str, bool]
    shorthand: Shorthand | None = None
    elsewhere: dict[str, Method | None] = Field(default_factory=dict)  # the same name in other engines
    warnings: list[str] = Field(default_factory=list)


class DiffRow(_Out):
    name: str
    a: Method | None
    b: Method | None


class EngineDiff(_Out):
    schema_version: int = SCHEMA_VERSION
    a: str
    b: str
    counts: dict[str, dict[str, int]]
    only_a: list[str]
    only_b: list[str]
    both: list[DiffRow]
    kv_only_a: list[str]
    kv_only_b: list[str]
    kv_both: list[str]
    not_optimized: dict[str, list[str]]  # per engine: real CLI names outside its optimized list
    warnings: list[str] = Field(default_factory=list)


def counts(e: EngineData) -> dict[str, int]:
    real = e.real_cli_methods
    out = {
        "methods": len(e.methods),
        "cli_choices": sum(1 for m in e.methods if m.cli_choice),
        "real_cli_methods": len(real),
        "registered_cuda": len(e.registered_names),
        "kv_cache_dtypes": len(e.kv_cache_dtypes),
        "deprecated": sum(1 for m in e.methods if m.deprecated),
        "online_shorthands": len(e.shorthands),
        "override_order": len(e.override_order),
        "config_classes": len({m.config_class for m in e.methods if m.config_class}),
    }
    if e.optimized_allow_list is not None:
        out["optimized_allow_list"] = len(e.optimized_allow_list)
        out["real_cli_not_optimized"] = sum(1 for m in real if m.optimized is False)
    return out


def listing(e: EngineData) -> EngineListing:
    return EngineListing(
        engine=e.engine, version=e.version, label=e.label, source=e.source, as_of=e.as_of, counts=counts(e),
        methods=list(e.methods), kv_cache_dtypes=list(e.kv_cache_dtypes), shorthands=list(e.shorthands),
        override_order=list(e.override_order),
        optimized_allow_list=list(e.optimized_allow_list) if e.optimized_allow_list is not None else None,
        notes=list(e.notes),
    )


def method_detail(e: EngineData, name: str, others: list[EngineData]) -> MethodDetail | None:
    m = e.method(name.strip().lower())
    if m is None:
        return None
    same = [x.id for x in e.methods if x.id != m.id and x.config_class == m.config_class and m.config_class]
    plats = {"cuda": m.registered}
    for p in e.platform_lists:
        plats[p.id] = m.id in p.allowed
    compat = next((c.checkpoint_methods for c in e.compatible if c.id == m.id), ())
    return MethodDetail(
        engine=e.engine, version=e.version, label=e.label, method=m, same_class=same,
        overrides=[o for o in e.overrides if o.returns == m.id], runs_on_checkpoints=list(compat), platforms=plats,
        shorthand=e.shorthand(m.id), elsewhere={o.label: o.method(m.id) for o in others},
    )


def diff(a: EngineData, b: EngineData) -> EngineDiff:
    """The two registries side by side: the table the chapter asks readers to regenerate."""
    an = [m.id for m in a.methods if m.kind != "escape_hatch"]
    bn = [m.id for m in b.methods if m.kind != "escape_hatch"]
    both = [DiffRow(name=n, a=a.method(n), b=b.method(n)) for n in sorted(set(an) & set(bn))]
    ak, bk = [k.id for k in a.kv_cache_dtypes], [k.id for k in b.kv_cache_dtypes]
    return EngineDiff(
        a=a.label, b=b.label, counts={a.label: counts(a), b.label: counts(b)},
        only_a=sorted(set(an) - set(bn)), only_b=sorted(set(bn) - set(an)), both=both,
        kv_only_a=[k for k in ak if k not in bk], kv_only_b=[k for k in bk if k not in ak],
        kv_both=[k for k in ak if k in bk],
        not_optimized={e.label: [m.id for m in e.real_cli_methods if m.optimized is False] for e in (a, b)
                       if e.optimized_allow_list is not None},
    )
