"""The deployment description the CI gate checks against: ``quantadvise.yaml``.

Every key is schema-validated (unknown keys rejected); an error is one line naming the file, the
line and the key. Paths inside (deployment artifacts, accuracy evidence, profile, baseline) are
relative to the file.

This module is the schema and its validation (pure); ``files.py`` finds and reads the file.
:func:`starter_config` writes the commented starter that ``quantadvise check --init`` saves.
"""

import re
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from .. import defaults
from ..engines.flags import Engine
from ..errors import ConfigError
from ..results import plain_numbers, record
from ..workload import WorkloadSpec


def _fraction(value: Any) -> Any:
    """``0.25`` or ``"25%"`` -> 0.25 (a bare number above 1 stays, for the range check to refuse)."""
    if isinstance(value, str):
        text = value.strip()
        try:
            return float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            return value  # let pydantic name the type error
    return value


Fraction = Annotated[float, BeforeValidator(_fraction)]


def _share(value: Any) -> Any:
    """A share of the items (accuracy limits): ``0.02`` or ``"2%"``; a bare number above 1 is refused
    with the two spellings (``2`` would be 200 points; the CLI's ``--max-delta 2`` is ``2%`` here)."""
    from ..inputs import finite, shown

    got = _fraction(value)
    if isinstance(got, int | float) and not isinstance(got, bool) and not isinstance(value, str) and got > 1:
        pts = f"{value:g}" if (finite(value) or 101) <= 100 else None
        raise ValueError(f"a share of the items: a fraction (0.02 = 2 percentage points) or a percentage ('2%'), "
                         f"got {shown(value)}" + (f" — write '{pts}%' for {pts} points" if pts else ""))
    return got


Share = Annotated[float, BeforeValidator(_share)]


def _limited(field: str) -> BeforeValidator:
    """A number held to the one input layer's limits (``inputs.LIMITS[field]``) with its message: the
    key says what ``--reserve-gb`` says (``must be a number >= 0 and <= 4,096, got inf``). A numeric
    string counts as its number (YAML 1.1 reads ``1e308`` as a string); a whole number where the flag
    takes any number is read as the flag reads it (a float)."""

    def check_number(value: Any) -> Any:
        from ..errors import InputError
        from ..inputs import LIMITS, MAX_FLOAT, check, flag, parse

        if value is None:
            return None
        x = value
        try:
            if isinstance(value, str):
                x = parse(field, value)
            elif isinstance(value, int) and not isinstance(value, bool) and not LIMITS[field].integer \
                    and abs(value) <= MAX_FLOAT:
                x = float(value)  # as the flag reads it: `got -1.0`, the same words
            return check(field, x)
        except InputError as exc:
            raise ValueError(exc.message.removeprefix(f"{flag(field)} ")) from None

    return BeforeValidator(check_number)


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _snake(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k.replace("-", "_") if isinstance(k, str) else k: v for k, v in data.items()}
        return data


class Thresholds(_Cfg):
    max_slowdown_vs_recommended: Fraction | None = Field(default=defaults.MAX_SLOWDOWN_VS_RECOMMENDED, ge=0, le=100)
    min_memory_headroom: Fraction | None = Field(default=None, ge=0, lt=1)
    evidence_below_bits: int = Field(default=defaults.EVIDENCE_BELOW_BITS, ge=1, le=16)


class TaskLimits(_Cfg):
    """Accuracy limits (fractions: 0.01 = 1 percentage point; '1%' works too)."""

    max_delta_drop: Share | None = Field(default=None, ge=0, le=1)
    max_flip_rate: Share | None = Field(default=None, ge=0, le=1)
    max_kl: Annotated[float | None, _limited("max_kl")] = None  # nats, as --max-kl
    min_samples: Annotated[int | None, _limited("min_samples")] = None

    def limits(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("max_delta_drop", "max_flip_rate", "max_kl", "min_samples")
                if getattr(self, k) is not None}


class TaskConfig(TaskLimits):
    """One task's limits, and the lm-eval filter / metric to read for it (gsm8k: strict-match)."""

    metric: str | None = None
    filter: str | None = None


class AccuracyConfig(TaskLimits):
    baseline: str
    quantized: str
    metric: str | None = None  # for every task that logs it
    filter: str | None = None  # for every task that logs it; a task that logs only another uses that one
    confidence: float = Field(default=0.95, ge=0.5, lt=1)
    tasks: dict[str, TaskConfig] = {}


def _rule_id(v: str) -> str:
    from .rules import RULE_BY_ID

    rid = v.strip().upper()
    if rid not in RULE_BY_ID:
        raise ValueError(f"unknown rule id '{v}' (rules are QA100 ... QA506, see docs/ci.md)")
    return rid


def _setting(v: Any) -> Any:
    return "off" if v is False else v  # YAML 1.1 reads a bare `off` as false


RuleId = Annotated[str, AfterValidator(_rule_id)]
RuleSetting = Annotated[Literal["error", "warning", "note", "off"], BeforeValidator(_setting)]


class DeploymentConfig(_Cfg):
    """``quantadvise.yaml``: what is deployed, on what, for which workload, held to which limits."""

    version: Literal[1] = 1
    model: str | None = None
    engine: Engine | None = None
    engine_version: str | None = None
    gpu: str | None = None
    gpus: Annotated[int | None, _limited("gpus")] = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    gpu_memory_utilization: Annotated[float | None, _limited("memory_utilization")] = None
    reserve_gb: Annotated[float | None, _limited("reserve_gb")] = None  # GiB per GPU, as --reserve-gb
    workload: WorkloadSpec = WorkloadSpec()
    thresholds: Thresholds = Thresholds()
    accuracy: AccuracyConfig | None = None
    deployment: list[str] = []
    profile: str | None = None
    fail_on: Literal["error", "warning"] | None = None
    baseline: str | None = None
    upgrade_to: str | None = None  # ENGINE@VERSION: report what upgrading to that release changes (QA112)
    rules: dict[RuleId, RuleSetting] = {}

    @field_validator("engine", mode="before")
    @classmethod
    def _engine(cls, v: Any) -> Any:
        return v.strip().lower() if isinstance(v, str) else v

    @field_validator("engine_version", mode="before")
    @classmethod
    def _version(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v

    @field_validator("deployment", mode="before")
    @classmethod
    def _paths(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


# -------------------------------------------------------------------------------------------------
# Parsing with line numbers
# -------------------------------------------------------------------------------------------------


_PYDANTIC_TAG = re.compile(r"\[key\]|function-[\w-]+|int|float|str|bool|none"
                           r"|(?:literal|list|dict|union|tagged-union|json-or-python|lax-or-strict)\[.*\]")


def _validation_error(exc: ValidationError, file: str, lines: Mapping[str, int]) -> ConfigError:
    errors = exc.errors()
    first = errors[0]
    loc = [str(p) for p in first.get("loc", ()) if p != "__root__"]
    # pydantic adds the validator's name for Annotated / union branches; keep only real keys
    path = [p for p in loc if not _PYDANTIC_TAG.fullmatch(p)]
    key = ".".join(path) or "(top level)"
    line = None
    for n in range(len(path), 0, -1):
        line = lines.get(".".join(path[:n]))
        if line is not None:
            break
    kind = first.get("type", "")
    msg = first.get("msg", "invalid value").removeprefix("Value error, ")
    if kind == "extra_forbidden":
        msg = "unknown key (check spelling; docs/ci.md lists the keys)"
    elif kind == "missing":
        msg = "required key is missing"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    at = f" line {line}:" if line else ""
    return ConfigError(f"{file}:{at} key '{key}': {msg}{more}", field=key)


def validate(data: Any, file: str, lines: Mapping[str, int] | None = None) -> DeploymentConfig:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: expected a mapping of keys (model, gpu, workload ...), got {type(data).__name__}")
    try:
        return DeploymentConfig.model_validate(plain_numbers(DeploymentConfig, data))
    except ValidationError as exc:
        raise _validation_error(exc, file, lines or {}) from None



# -------------------------------------------------------------------------------------------------
# The loaded configuration and what the command line adds
# -------------------------------------------------------------------------------------------------


@record
class LoadedConfig:
    config: DeploymentConfig
    file: str | None = None  # None: no file (flags only)
    lines: Mapping[str, int] = field(default_factory=dict)
    base_dir: str = "."  # relative paths in the file resolve against it

    def path(self, value: str) -> str:
        """A path from the file, relative to the file's folder."""
        try:
            p = Path(value).expanduser()
        except RuntimeError:  # ~nosuchuser
            p = Path(value)
        return str(p if p.is_absolute() else Path(self.base_dir) / p)


# the keys a flag can set, by their dotted config path
FLAG_KEYS = {
    "model": "model", "engine": "engine", "engine_version": "engine_version", "gpu": "gpu", "gpus": "gpus",
    "quantization": "quantization", "kv_cache_dtype": "kv_cache_dtype", "concurrency": "workload.batch",
    "ctx": "workload.ctx", "task": "workload.task", "profile": "profile", "fail_on": "fail_on",
}


# the key a flag sets may be written under its alias in the file (workload.concurrency = workload.batch)
_ALSO_WRITTEN_AS = {"concurrency": ("workload.concurrency",)}


def with_flags(loaded: LoadedConfig, flags: Mapping[str, Any]) -> LoadedConfig:
    """The configuration with command-line values laid over it (validated by the same schema); a key
    a flag set has no line in the file any more."""
    given = {k: v for k, v in flags.items() if v is not None}
    if not given:
        return loaded
    data = loaded.config.model_dump(exclude_unset=True)
    lines = dict(loaded.lines)
    for name, value in given.items():
        path = FLAG_KEYS[name].split(".")
        target = data
        for p in path[:-1]:
            target = target.setdefault(p, {})
            if not isinstance(target, dict):  # pragma: no cover - the schema makes these mappings
                target = {}
        target[path[-1]] = value
        for key in (FLAG_KEYS[name], *_ALSO_WRITTEN_AS.get(name, ())):
            lines.pop(key, None)
    try:
        cfg = DeploymentConfig.model_validate(data)
    except ValidationError as exc:
        err = _validation_error(exc, "command line", {})
        raise ConfigError(err.message.replace("key '", "option for '"), field=err.field) from None
    return LoadedConfig(cfg, loaded.file, lines, loaded.base_dir)


# -------------------------------------------------------------------------------------------------
# The starter file
# -------------------------------------------------------------------------------------------------


def _yaml_scalar(v: Any) -> str:
    import json

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return str(v)
    s = str(v)
    # plain only where YAML 1.1 reads it back as this very string: a letter first (a digit, '.', '-' or '@' first
    # is a date, 1_0, 0x10, .inf, 1:30, a sequence or reserved), no ':' or '#', and none of its boolean / null words
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9_./-]*", s) and not _YAML_WORDS.fullmatch(s):
        return s
    return json.dumps(s)  # a JSON string is a YAML double-quoted scalar


_YAML_WORDS = re.compile(r"y|n|yes|no|on|off|true|false|null", re.I)  # YAML 1.1 booleans and null


def starter_values(inv: Any | None, deployment: list[str]) -> dict[str, Any]:
    """The keys ``check --init`` fills in from the first engine command found (an
    ``artifacts.invocation.EngineInvocation``), and the deployment paths it scanned."""
    values: dict[str, Any] = {"deployment": deployment}
    if inv is None:
        return values
    values["engine"] = inv.engine
    if inv.engine_version:
        values["engine_version"] = inv.engine_version
    if inv.model and "$" not in inv.model:
        values["model"] = inv.model
    # --max-num-seqs / --max-model-len are the engine's caps, not the workload: never filled in as one
    tp, pp = inv.tensor_parallel_size or 1, inv.pipeline_parallel_size or 1
    values["gpus"] = tp * pp
    if inv.kv_cache_dtype:
        values["kv_cache_dtype"] = inv.kv_cache_dtype
    return values


def starter_caps(inv: Any | None) -> dict[str, int]:
    """The engine's caps in the first command found (``--max-num-seqs``, ``--max-model-len``): shown
    beside the commented-out workload keys, never filled in as the workload."""
    if inv is None:
        return {}
    caps = {"concurrency": inv.max_num_seqs, "ctx": inv.max_model_len}
    return {k: v for k, v in caps.items() if v}


def starter_config(values: Mapping[str, Any] | None = None, caps: Mapping[str, int] | None = None) -> str:
    """The commented ``quantadvise.yaml`` that ``check --init`` writes. ``values`` (read from the
    deployment artifacts) fill in what is known; what is not stays commented out with an example,
    so the gate never checks a guess. ``caps`` (:func:`starter_caps`) become the workload examples."""
    v = dict(values or {})
    c = dict(caps or {})

    def line(key: str, example: Any, comment: str, indent: str = "") -> str:
        text = f"{key}: {_yaml_scalar(v[key.strip()])}" if v.get(key.strip()) is not None else \
            f"# {key}: {_yaml_scalar(example)}"
        return f"{indent}{text:<{39 - len(indent)}} # {comment}"  # the space: a long id is not `id# comment`

    paths = v.get("deployment") or ["."]
    dep = "\n".join(f"  - {_yaml_scalar(p)}" for p in paths)
    return f"""\
# quantadvise.yaml: the deployment `quantadvise check` holds to account in CI.
# Every key is documented in docs/ci.md; relative paths are relative to this file.
# Keys left commented out are not checked: fill them in.
version: 1

# The checkpoint the engine serves: a Hugging Face id, or a local folder / config.json. Vendor the
# checkpoint's config.json next to this file to run the gate without Hub access.
{line("model", "meta-llama/Llama-3.1-8B-Instruct", "Hub id or local path")}
{line("engine", "vllm", "vllm | sglang")}
{line("engine_version", "0.33.0", "a release on file (quantadvise engines list)")}
{line("gpu", "h100", "the GPU every replica runs on")}
{line("gpus", 1, "GPUs per replica (tensor x pipeline parallel)")}

# What the deployment is meant to run: a scheme preset (bf16, w4a16, awq, gptq, fp8-dynamic,
# fp8-block, nvfp4, mxfp4 ...) and a KV cache dtype (auto, fp8, fp8_e5m2 ...). The gate reports
# drift when the checkpoint or the engine flags say otherwise.
{line("quantization", "w4a16", "scheme preset")}
{line("kv_cache_dtype", "auto", "auto = the model dtype")}

workload:
{line("concurrency", c.get("concurrency", 32), "concurrent sequences at peak" + (
        f" (the command caps it at {c['concurrency']})" if "concurrency" in c else ""), "  ")}
{line("ctx", c.get("ctx", 4096), "tokens per sequence, prompt + output" + (
        f" (at most {c['ctx']})" if "ctx" in c else ""), "  ")}
  task: general                         # general | reasoning | code | long-generation | retrieval
  mode: auto                            # sync | continuous | auto (sync up to 4 sequences)

# Engine commands to check: shell scripts, Dockerfiles, Kubernetes manifests, Helm values, compose files,
# GitHub workflows, Makefiles, Python launchers.
deployment:
{dep}

thresholds:
  max_slowdown_vs_recommended: 25%      # QA202: slower than `quantadvise recommend`'s pick by more
  min_memory_headroom: 10%              # QA304: share of the memory budget left free at peak
  evidence_below_bits: 8                # QA401: schemes below this many bits need accuracy evidence

# Per-sample results of the same evaluation on the baseline and on the served checkpoint
# (lm-eval --log_samples samples_*.jsonl, or JSONL lines of id / correct / logprobs).
# accuracy:
#   baseline: evals/bf16/
#   quantized: evals/quantized/
#   max_delta_drop: 1%                  # accuracy lost, percentage points
#   max_flip_rate: 5%                   # answers that changed correctness (arXiv:2407.09141)
#   max_kl: 0.05                        # mean KL(base || quant) in nats (needs log-probs)
#   tasks:
#     gsm8k: {{max_delta_drop: 2%}}

# fail_on: error                        # or warning
# baseline: .quantadvise-baseline.json  # findings accepted earlier (quantadvise check --write-baseline)
# rules:
#   QA202: error                        # a rule's severity: error | warning | note | off
"""
