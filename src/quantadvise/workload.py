"""A serving workload: what the decision tree starts from.

Flags or a YAML file (``--workload FILE``) with the same keys; unknown keys and bad values are
rejected with the field named. Pure: validation only.
"""

from enum import Enum
from typing import Annotated, Any

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator

from . import defaults
from .errors import ConfigError, InputError, format_validation_error
from .inputs import LIMITS, lengths
from .results import Out, plain_numbers

SYNC_MAX_BATCH = defaults.SYNC_MAX_BATCH


class Task(str, Enum):
    general = "general"
    reasoning = "reasoning"
    code = "code"
    long_generation = "long-generation"
    retrieval = "retrieval"


class Mode(str, Enum):
    auto = "auto"
    sync = "sync"
    continuous = "continuous"


TASK_ALIASES = {"math": "reasoning", "reasoning/math": "reasoning", "long": "long-generation",
                "long-context": "retrieval", "rag": "retrieval", "chat": "general"}
MODE_ALIASES = {"async": "continuous", "continuous-batching": "continuous", "synchronous": "sync",
                "offline": "continuous", "online": "auto"}


def _choice(v: Any, aliases: dict[str, str], allowed: tuple[str, ...]) -> Any:
    """A mode / task name, its aliases resolved; anything else names the allowed values."""
    if not isinstance(v, str):
        return v
    name = aliases.get(v.strip().lower(), v.strip().lower())
    if name not in allowed:
        raise ValueError(f"must be one of {', '.join(allowed)} (got '{v}')")
    return name


class WorkloadSpec(Out):
    """The load itself: how many sequences at once, how long they are, how they are served, what
    for. The one schema for these keys: ``recommend``'s workload (flags or ``--workload FILE``)
    extends it, and ``check`` reads it as the ``workload:`` section of quantadvise.yaml, where an
    unset key (None) means "not declared". ``concurrency`` is accepted for ``batch``. A light piece
    (results.light): pydantic's settings below, its errors from the class's pydantic shadow; a command builds
    no validator for it (a pydantic model of these 34 fields cost a cold ``recommend`` ~4 ms to define and
    build)."""

    __light_config__ = {"extra": "forbid", "allow_inf_nan": False, "use_enum_values": True,  # noqa: RUF012
                        "validate_default": True, "populate_by_name": True}

    # max concurrent sequences
    batch: Annotated[int | None, LIMITS["batch"].interval()] = Field(
        default=None, validation_alias=AliasChoices("batch", "concurrency"))
    ctx: Annotated[int | None, LIMITS["ctx"].interval()] = None  # tokens per sequence, prompt + output
    prompt: Annotated[int | None, LIMITS["prompt"].interval()] = None
    output: Annotated[int | None, LIMITS["output"].interval()] = None
    mode: Mode | None = None
    task: Task | None = None

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {k.replace("-", "_") if isinstance(k, str) else k: v for k, v in data.items()}
            if "batch" in data and "concurrency" in data:
                raise ValueError("give batch or concurrency (the same thing), not both")
            if isinstance(data.get("engine"), str):
                data["engine"] = data["engine"].lower()
        return data

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, v: Any) -> Any:
        return _choice(v, MODE_ALIASES, ("sync", "continuous", "auto"))

    @field_validator("task", mode="before")
    @classmethod
    def _task(cls, v: Any) -> Any:
        return _choice(v, TASK_ALIASES, tuple(t.value for t in Task))

    @model_validator(mode="after")
    def _lengths(self) -> "WorkloadSpec":
        try:
            lengths(self.ctx, self.prompt, self.output)
        except InputError as exc:
            raise ValueError(exc.message) from None
        return self


class Workload(WorkloadSpec):
    """What is served, on what, and how it is used: the decision tree's input."""

    model: str = defaults.MODEL
    gpu: str = defaults.GPU
    gpus: Annotated[int, LIMITS["gpus"].interval()] = 1
    engine: str = defaults.ENGINE
    engine_version: str | None = None
    batch: Annotated[int, LIMITS["batch"].interval()] = Field(
        default=defaults.BATCH, validation_alias=AliasChoices("batch", "concurrency"))
    mode: Mode = Mode.auto
    task: Task = Task.general
    accuracy_tolerance: Annotated[float, LIMITS["accuracy_tolerance"].interval()] = defaults.ACCURACY_TOLERANCE  # %-points
    # the engine's share of each GPU; None: the engine release's own default, derived as `check` derives it
    # (gate.startup.default_fraction: vLLM's --gpu-memory-utilization default, SGLang's mem_fraction_static heuristic)
    memory_utilization: Annotated[float | None, LIMITS["memory_utilization"].interval()] = None
    headroom: Annotated[float, LIMITS["headroom"].interval()] = 0.0  # fraction of usable memory to keep free
    # runtime reserve per GPU, GiB; None: the engine's (gate.startup.default_reserve_gb: vLLM 2, SGLang 0)
    reserve_gb: Annotated[float | None, LIMITS["reserve_gb"].interval()] = None
    kv_dtype: str | None = None
    candidates: tuple[str, ...] | None = None
    profile: str | None = None
    ideal: bool = False
    # serving targets (docs/recommend.md "Serving targets"): latency budgets, a load, a price, speculation
    ttft_ms: Annotated[float | None, LIMITS["ttft_ms"].interval()] = None
    itl_ms: Annotated[float | None, LIMITS["itl_ms"].interval()] = None
    e2e_ms: Annotated[float | None, LIMITS["e2e_ms"].interval()] = None
    rate: Annotated[float | None, LIMITS["rate"].interval()] = None  # requests per second
    users: Annotated[int | None, LIMITS["users"].interval()] = None  # concurrent users
    usd_per_gpu_hour: Annotated[float | None, LIMITS["usd_per_gpu_hour"].interval()] = None
    spec_tokens: Annotated[int | None, LIMITS["spec_tokens"].interval()] = None
    acceptance: Annotated[float | None, LIMITS["acceptance"].interval()] = None
    # a pool (docs/recommend.md "Layouts"): GPU types in ``gpu`` (comma-separated), node shapes, the GPUs a layout may use
    max_gpus: Annotated[int | None, LIMITS["max_gpus"].interval()] = None
    node: str | None = None  # "8xh100" or "8xh100,8xb200": GPUs per node and their type
    layouts: bool = False  # weigh every layout (TP / PP / EP / replicas / P/D) even without a pool flag

    @field_validator("candidates", mode="before")
    @classmethod
    def _candidates(cls, v: Any) -> Any:
        """Each name once, at most inputs.MAX_NAMES (a workload file's list is the flag's list)."""
        from .inputs import names

        if not (isinstance(v, str) or (isinstance(v, list | tuple) and all(isinstance(x, str) for x in v))):
            return v  # None, or not names: pydantic says what it should be
        try:
            return names("candidates", v, "w4a16,fp8-dynamic")
        except InputError as exc:
            raise ValueError(exc.message.removeprefix("--candidates ")) from None

    @model_validator(mode="after")
    def _targets(self) -> "Workload":
        from .inputs import serving_pairs

        try:
            serving_pairs(self.model_dump(include={"rate", "users", "spec_tokens", "acceptance"}))
        except InputError as exc:
            raise ValueError(exc.message) from None
        return self

    @model_validator(mode="after")
    def _engine(self) -> "Workload":
        if self.engine not in defaults.ENGINES:
            raise ValueError(f"engine must be {' or '.join(defaults.ENGINES)}, got '{self.engine}'")
        return self

    # -- derived --------------------------------------------------------------------------------
    @property
    def context(self) -> int:
        """Tokens each sequence holds at its longest (what the KV cache must fit)."""
        if self.ctx is not None:
            return self.ctx
        if self.prompt is not None or self.output is not None:
            return (self.prompt or 0) + (self.output or defaults.OUTPUT_TOKENS)
        return defaults.CONTEXT

    @property
    def output_tokens(self) -> int:
        if self.output is not None:
            return self.output
        if self.prompt is not None and self.ctx is not None:
            return max(1, self.ctx - self.prompt)
        return max(1, min(defaults.OUTPUT_TOKENS, self.context // 2))

    @property
    def prompt_tokens(self) -> int:
        if self.prompt is not None:
            return self.prompt
        return max(0, self.context - self.output_tokens)

    @property
    def decode_context(self) -> int:
        """Tokens a sequence holds on average while it decodes: the prompt plus half the output.
        Decode steps are priced at this length."""
        return self.prompt_tokens + (self.output_tokens + 1) // 2

    @property
    def kv_tokens_per_sequence(self) -> int:
        """Tokens of KV cache each sequence needs at the requested concurrency. Continuous batching
        holds sequences at every stage of their generation, so the steady state is the average
        (prompt + output/2); synchronous batches grow in lockstep to the full context."""
        return self.decode_context if self.serving_mode == "continuous" else self.context

    @property
    def serving_mode(self) -> str:
        if self.mode != "auto":
            return str(self.mode)
        return "sync" if self.batch <= SYNC_MAX_BATCH else "continuous"


def parse_workload(data: dict[str, Any], where: str = "workload") -> Workload:
    try:
        return Workload.model_validate(plain_numbers(Workload, data))
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, where)) from None
