"""One input layer: every number a command or a workload file takes (batch, context, prompt and
output lengths, GPU count, memory share, reserve, headroom, tolerance) has its limits here, once,
and is checked by :func:`check` with one message wherever it enters — a flag of any command, a key
of a workload file, an argument of the Python API. The flag each field is spelled as on the command
line and the environment variable that sets its default (:data:`FLAGS`) live here too, so an error
caused by an environment variable can name it. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from annotated_types import Interval

from . import defaults
from .errors import InputError, UnknownNameError
from .results import record


def _num(x: float) -> str:
    if x == int(x):
        return f"{int(x):,}"
    return f"{x:.12f}".rstrip("0") if abs(x) < 0.001 else f"{x:g}"  # 0.000001, not 1e-06


@record
class Limit:
    """The range a number must fall in; ``integer`` numbers must be whole."""

    low: float
    high: float
    integer: bool = False
    low_open: bool = False  # True: low itself is refused
    high_open: bool = False

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        lo = f"> {_num(self.low)}" if self.low_open else f">= {_num(self.low)}"
        hi = f"< {_num(self.high)}" if self.high_open else f"<= {_num(self.high)}"
        return f"{kind} {lo} and {hi}"

    def interval(self) -> Interval:
        """The same limits as a pydantic constraint (``Annotated[int, limit.interval()]``) for the keys
        of a workload file."""
        return Interval(**{("gt" if self.low_open else "ge"): self.low, ("lt" if self.high_open else "le"): self.high})


LIMITS: dict[str, Limit] = {
    "batch": Limit(1, 1_000_000, integer=True),  # concurrent sequences (--batch, --concurrency)
    "ctx": Limit(1, 10_000_000, integer=True),  # tokens per sequence, prompt + output
    "prompt": Limit(0, 10_000_000, integer=True),
    "output": Limit(1, 10_000_000, integer=True),
    "gpus": Limit(1, 1024, integer=True),
    # a share of GPU memory and an accuracy tolerance cannot be 0: like the budgets below they have a floor
    # (1e-320 passed "> 0" and sized "0.00 GB usable"): 1% of the largest GPU on file (MI355X, 309 GB) is
    # 3.1 GB, less than a 1B-parameter model's bf16 weights beside vLLM's 2 GiB reserve; a thousandth of a
    # point is below one question of any benchmark on file (MMLU's 14,042: 0.007 points each)
    "memory_utilization": Limit(0.01, 1),
    "reserve_gb": Limit(0, 4096),
    "headroom": Limit(0, 1, high_open=True),
    "accuracy_tolerance": Limit(0.001, 100),
    # serving targets (issue 15): latency budgets in ms, a load, a price, speculative decoding
    # the lowest budgets, rate and price are far below any deployment's (a microsecond, a request in 11 days, a
    # millionth of a dollar) and far above the floats that underflow to 0 when divided or converted (5e-324)
    "ttft_ms": Limit(0.001, 10_000_000),
    "itl_ms": Limit(0.001, 10_000_000),
    "e2e_ms": Limit(0.001, 100_000_000),
    "rate": Limit(0.000001, 1_000_000),  # requests per second
    "users": Limit(1, 100_000_000, integer=True),  # concurrent users (sequences in flight)
    "max_gpus": Limit(1, 4096, integer=True),  # the pool a layout search may use (issue 31)
    "usd_per_gpu_hour": Limit(0.000001, 10_000),
    "spec_tokens": Limit(0, 64, integer=True),  # tokens drafted per step
    "acceptance": Limit(0, 1),  # mean fraction of drafted tokens accepted
    # accuracy gate (`accuracy`): percentage points / percent, the unit of --accuracy-tolerance
    "max_delta": Limit(0, 100),  # accuracy drop, percentage points
    "max_flips": Limit(0, 100),  # share of answers that changed correctness, percent
    "max_kl": Limit(0, 1_000),  # mean KL(base || quant), nats
    "min_samples": Limit(1, 1_000_000_000, integer=True),  # paired items an accuracy verdict needs
    # a custom weight scheme's group size (size/roofline --group): -1 (per channel) or a positive size is
    # checked where the scheme is built; this bounds it first
    "group": Limit(-1, 2**31 - 1, integer=True),
    # calibrate: the timing budget (a day is more than any GPU needs) and the simulated backend's seed
    "seconds": Limit(1, 86_400),
    "seed": Limit(-(2**63), 2**63 - 1, integer=True),
}
LIMITS["concurrency"] = LIMITS["batch"]
LIMITS["tp"] = LIMITS["gpus"]  # validate --bench --tp: the GPUs one server spans
# roofline --ctx is the context a decode step reads, not a workload's tokens per sequence: 0 is the
# documented "no KV cache read" (the chapter's accounting, docs/roofline.md §7); above, the ctx limit
DECODE_CTX = Limit(0, LIMITS["ctx"].high, integer=True)
BITS = Limit(2, 16, integer=True)  # size --bits: 2-8, or 16 (unquantized); the scheme says which, in its words

# field -> (the command-line flag, the environment variable that sets its default or None)
FLAGS: dict[str, tuple[str, str | None]] = {
    # positional arguments an error names as the command line shows them (`engines diff A B`)
    "engine_argument": ("the engine argument", None),
    "second_engine": ("the second engine argument", None),
    "model": ("--model", "QUANTADVISE_MODEL"),
    "gpu": ("--gpu", "QUANTADVISE_GPU"),
    "gpus": ("--gpus", "QUANTADVISE_GPUS"),
    "engine": ("--engine", "QUANTADVISE_ENGINE"),
    "scheme": ("--scheme", "QUANTADVISE_SCHEME"),
    "kv_dtype": ("--kv-dtype", "QUANTADVISE_KV_DTYPE"),
    "format": ("--format", "QUANTADVISE_FORMAT"),
    "config": ("--config", "QUANTADVISE_CONFIG"),
    "batch": ("--batch", None),
    "concurrency": ("--concurrency", None),
    "tp": ("--tp", None),
    "ctx": ("--ctx", None),
    "prompt": ("--prompt", None),
    "output": ("--output", None),
    "memory_utilization": ("--memory-utilization", None),
    "reserve_gb": ("--reserve-gb", None),
    "headroom": ("--headroom", None),
    "accuracy_tolerance": ("--accuracy-tolerance", None),
    "ttft_ms": ("--ttft-ms", None),
    "itl_ms": ("--itl-ms", None),
    "e2e_ms": ("--e2e-ms", None),
    "rate": ("--rate", None),
    "users": ("--users", None),
    "max_gpus": ("--max-gpus", None),
    "node": ("--node", None),
    "usd_per_gpu_hour": ("--usd-per-gpu-hour", "QUANTADVISE_USD_PER_GPU_HOUR"),
    "spec_tokens": ("--spec-tokens", None),
    "acceptance": ("--acceptance", None),
    "max_delta": ("--max-delta", None),
    "max_flips": ("--max-flips", None),
    "max_kl": ("--max-kl", None),
    "candidates": ("--candidates", None),
    "schemes": ("--schemes", None),
    "min_samples": ("--min-samples", None),
    "group": ("--group", None),
    "seconds": ("--seconds", None),
    "seed": ("--seed", None),
}
# what an unknown-name error's kind is a field of
KIND_FIELDS = {"gpu": "gpu", "model": "model", "engine": "engine", "scheme": "scheme", "kv cache dtype": "kv_dtype",
               "listing": "kind"}


def flag(field: str) -> str:
    return FLAGS.get(field, (f"--{field.replace('_', '-')}", None))[0]


def field_of(option: str) -> str:
    """The field a command-line flag spells (``--gpus`` -> ``gpus``, ``--format`` -> ``format``); a flag
    the table does not name -> its own words (``--fail-on`` -> ``fail_on``)."""
    for field, (name, _env) in FLAGS.items():
        if name == option:
            return field
    return option.lstrip("-").replace("-", "_")


def env_suffix(env: str) -> str:
    """What an error adds when the value it is about came from an environment variable."""
    return f" (from the environment variable {env})"


def format_error(value: str, command: str, choices: list[str], others: list[str]) -> InputError:
    """The one error for an output format a command does not take, from ``--format`` or QUANTADVISE_FORMAT
    (the CLI adds which, :func:`env_suffix`): the command's formats, and the other commands' too."""
    more = [f for f in others if f not in choices]
    return InputError(f"--format {value!r} is not an output format (`quantadvise {command}` takes "
                      f"{', '.join(choices)}" + (f"; other commands also {', '.join(more)}" if more else "") + ")",
                      field="format")


def bad_value(field: str, value: str | None, *, integer: bool = False, choices: list[str] | None = None,
              option: str | None = None, limit: Limit | None = None, forms: str | None = None) -> InputError:
    """The one error for a value a flag (or the environment variable behind it) cannot take at all — not
    a number, not one of its choices — worded as :func:`check` words a number out of range, so
    ``--gpus abc`` and ``--gpus 0`` read alike: "--gpus must be an integer >= 1 and <= 1,024, got 'abc'".
    ``option`` is the flag when the field table does not know it; ``limit`` where the flag means another
    quantity (:data:`DECODE_CTX`); ``forms`` the list forms a flag also takes (``1,8,64 or 1..512``)."""
    name = option or flag(field)
    got = "" if value is None else f", got {shown(value)}"
    lim = limit or LIMITS.get(field)
    if lim is not None:
        return InputError(f"{name} must be {lim.describe()}" + (f" (a list: {forms})" if forms else "") + got,
                          field=field)
    if choices:
        return InputError(f"{name} must be one of {', '.join(choices)}{got}", field=field)
    return InputError(f"{name} must be {'an integer' if integer else 'a number'}{got}", field=field)


def check(field: str, value: Any, limit: Limit | None = None) -> Any:
    """``value`` if it is a number in ``field``'s range (see :data:`LIMITS`; ``limit`` where one flag
    means a different quantity, :data:`DECODE_CTX`), else one InputError naming the flag, the range and
    what was given. None (not given) passes through."""
    if value is None:
        return None
    limit = limit or LIMITS[field]
    if not within(value, limit):
        raise InputError(f"{flag(field)} must be {limit.describe()}, got {shown(value)}", field=field)
    return int(value) if limit.integer else float(value) + 0.0  # -0.0 is 0


def within(value: Any, limit: Limit) -> bool:
    """Whether ``value`` is a number (not a bool) in ``limit``. An integer is compared as an integer —
    exactly, never converted to a float on the way (a 400-digit integer is simply out of range, not an
    OverflowError); a float must be finite."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, float) and (not math.isfinite(value) or (limit.integer and not value.is_integer())):
        return False
    low = value <= limit.low if limit.low_open else value < limit.low
    high = value >= limit.high if limit.high_open else value > limit.high
    return not (low or high)


# Text longer than this is no number any input takes (the widest limit has 9 digits); it is refused as
# text, before int() or float() sees it (Python's int() refuses 4,300 digits with a ValueError, float()
# turns 400 digits into inf).
MAX_NUMBER_CHARS = 64
SHOWN_CHARS = 40  # what an error quotes of a value, at most


def shown(value: Any) -> str:
    """A value as an error quotes it, at most about :data:`SHOWN_CHARS` characters: ``'abc'``, ``inf``,
    an integer of 400 digits as ``99999999999999999999... (400 digits)``. Never converts to float."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() <= 3 * SHOWN_CHARS:  # ~36 digits: quoted whole
            return str(value)
        digits = len(str(abs(value))) if value.bit_length() < 14_000 else None  # str() refuses > 4,300 digits
        return f"{str(value)[:20]}... ({digits:,} digits)" if digits else "an integer of over 4,000 digits"
    try:
        text = repr(value)
    except ValueError:  # a list or mapping holding an integer past the 4,300 digits str() converts
        return f"a {type(value).__name__} holding an integer of over 4,000 digits"
    size = len(value) if isinstance(value, str) else len(text)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS - 4]}...{text[-1]} ({size:,} characters)"


def parse(field: str, text: str, *, limit: Limit | None = None, option: str | None = None,
          forms: str | None = None) -> int | float:
    """A number written as text (a flag, an environment variable, a YAML or JSON string, a list item) ->
    the number, unchecked against the range (:func:`check` does that): an integer where ``limit`` (or
    ``field``'s) wants one, else a float; ``1_000``, ``1e3`` and surrounding spaces as Python reads
    them. Text longer than :data:`MAX_NUMBER_CHARS`, or not a number, is one InputError naming the flag
    (``option``, else ``field``'s) in the words of :func:`bad_value`."""
    lim = limit or LIMITS.get(field)
    t = text.strip()
    if len(t) <= MAX_NUMBER_CHARS:
        try:
            return int(t) if lim is not None and lim.integer else float(t)
        except ValueError:
            pass
        if lim is not None and lim.integer:  # "8.0": a whole number written as a float
            try:
                x = float(t)
            except ValueError:
                pass
            else:
                return int(x) if math.isfinite(x) and x.is_integer() and abs(x) <= 2**53 else x
    raise bad_value(field, text, integer=bool(lim and lim.integer), option=option, limit=lim, forms=forms)


def number(field: str, value: Any, limit: Limit | None = None, *, where: str | None = None) -> Any:
    """The one entry for a number read from a file (YAML, JSON, a workload or config file) or any other
    untyped source: int, float or numeric text -> :func:`check`. ``where`` names the place (``quantadvise.yaml:
    workload.concurrency``) in place of the flag. A bool, a list, a mapping: the same one error."""
    if value is None:
        return None
    try:
        if isinstance(value, str):
            value = parse(field, value, limit=limit)
        return check(field, value, limit)
    except InputError:
        if where is None:
            raise
        lim = limit or LIMITS[field]
        raise InputError(f"{where} must be {lim.describe()}, got {shown(value)}", field=field) from None


MAX_FLOAT = 1e300  # a number read from a file beyond this in size is junk (and near a float's end)


def finite(value: Any) -> float | None:
    """A number read from a file (JSON or YAML: an int or a float, never a bool) as a finite float of at
    most :data:`MAX_FLOAT` in size; None for anything else — text, nan, inf, and an integer too large
    for a float (compared as an integer: no OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int):
        return float(value) if abs(value) <= MAX_FLOAT else None
    return value if math.isfinite(value) and abs(value) <= MAX_FLOAT else None


def to_float(value: int | float, field: str, high: float = MAX_FLOAT) -> float:
    """An integer or float as a float, refused (one InputError naming ``field``) beyond ``high`` in
    size — where an integer that no limit bounds (a count in a config file) must become a float."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > high:
        raise InputError(f"{field} is too large: {shown(value)}", field=field)
    x = float(value)
    if not math.isfinite(x) or abs(x) > high:
        raise InputError(f"{field} must be a finite number, got {shown(value)}", field=field)
    return x


PERCENT_SUFFIXES = ("%", "pp")  # "1%" and "1pp" are the bare 1: one percentage point


def points(field: str, value: str | float | None) -> float | None:
    """A percentage (points) ``field`` as a number: ``1``, ``1%`` and ``1pp`` are all 1 point, the unit
    of ``--accuracy-tolerance``; then :func:`check` (nan, inf or out of range: one InputError naming
    the flag). A value that is not a number: the same error, with what was given."""
    if value is None or isinstance(value, int | float):
        return check(field, value)
    text = value.strip().lower()
    for suffix in PERCENT_SUFFIXES:
        text = text.removesuffix(suffix).strip()
    try:
        x = float(text)
    except ValueError:
        raise InputError(f"{flag(field)} must be a number of percentage points (1, 1% or 1pp = one point), "
                         f"got {value!r}", field=field) from None
    return check(field, x)


def check_all(values: dict[str, Any]) -> dict[str, Any]:
    """Every number in ``values`` that has a limit, checked (others pass through untouched)."""
    return {k: (check(k, v) if k in LIMITS else v) for k, v in values.items()}


def lengths(ctx: int | None, prompt: int | None, output: int | None, *, decode: bool = False) -> None:
    """A sequence's lengths must agree: the prompt leaves room for at least one output token, and
    prompt + output fit the context. ``decode=True`` (roofline): ``ctx`` is the context a decode step
    reads, which holds the prompt (``--ctx`` = the prompt is the first decode step), so only the prompt
    must fit it; ``output`` plays no part (under --pareto the decode context is prompt + output/2)."""
    if ctx is None or prompt is None:
        return
    if not all(type(v) is int for v in (ctx, prompt, output) if v is not None):
        return  # a value that is not a whole number yet (a workload file's, unvalidated): its schema says so
    if decode:
        if prompt > ctx:
            raise InputError(f"the prompt ({prompt:,}) is longer than --ctx {ctx:,}, the context a decode step reads",
                             hint="raise --ctx or shorten --prompt", field="ctx")
        return
    if prompt + (output or 1) > ctx:
        detail = f"prompt ({prompt:,}) + output ({output:,})" if output is not None else \
            f"the prompt ({prompt:,}) leaves no room for an output token in"
        raise InputError(f"{detail} exceed ctx ({ctx:,})" if output is not None else f"{detail} --ctx {ctx:,}",
                         hint="raise --ctx or shorten --prompt/--output", field="ctx")


def serving_pairs(values: dict[str, Any]) -> None:
    """Serving-target flags that go together: one load (--rate or --users, not both) and speculative
    decoding as a pair (--spec-tokens with --acceptance)."""
    if values.get("rate") is not None and values.get("users") is not None:
        raise InputError("give --rate (requests/s) or --users (concurrent users), not both", field="rate")
    spec, acc = values.get("spec_tokens"), values.get("acceptance")
    if (spec is None) != (acc is None):
        raise InputError("--spec-tokens K and --acceptance A go together (K tokens drafted per step, A the mean "
                         "fraction of them accepted)", hint="e.g. --spec-tokens 3 --acceptance 0.7",
                         field="spec_tokens" if spec is None else "acceptance")


MAX_NAMES = 64  # names in one list flag (schemes, candidates, engines): each is priced or judged on its own
MAX_LIST_VALUES = 512  # values in one batch or context list (1..4096 is 13; 16..8192:16 is 512)


def names(field: str, value: str | Sequence[str] | None, example: str) -> tuple[str, ...] | None:
    """A list flag's names (``bf16,w4a16`` or a list): stripped, each once in the order given, at most
    :data:`MAX_NAMES` (each costs a full computation: 100,000 repeats of one name were 100,000 before).
    None stays None; an empty list is one InputError with ``example``."""
    if value is None:
        return None
    parts = value.split(",") if isinstance(value, str) else list(value)
    out = tuple(dict.fromkeys(p.strip() for p in parts if isinstance(p, str) and p.strip()))
    if not out:
        raise InputError(f"{flag(field)} needs at least one name, e.g. {example}", field=field)
    if len(out) > MAX_NAMES:
        raise InputError(f"{flag(field)} names {len(out):,} different values; at most {MAX_NAMES} are taken at once",
                         field=field)
    return out


ENGINE_ALIASES = {"sgl": "sglang", "sgl-project": "sglang"}  # other spellings of an engine's name


def engine_hint() -> str:
    """What an unknown engine's error adds: the engines on file and the command that lists them."""
    return f"engines on file: {', '.join(sorted(defaults.ENGINES))}; `quantadvise list engines` lists their releases"


def engine(name: str | None, field: str = "engine") -> str | None:
    """An engine name as the flag table knows it (vllm, sglang; ``sgl`` is sglang), else one
    UnknownNameError — the same text from every command and argument — with the closest names, the
    engines on file and ``quantadvise list engines``. ``field`` is where the name came from (``engine``:
    --engine or QUANTADVISE_ENGINE, which the CLI then names; ``other``, ``name`` ...: an option or
    argument no variable sets)."""
    if name is None:
        return None
    key = name.strip().lower()
    key = ENGINE_ALIASES.get(key, key)
    if key not in defaults.ENGINES:
        err = UnknownNameError("engine", name, sorted(defaults.ENGINES), hint=engine_hint())
        err.field = field
        raise err
    return key


def split_engine(spec: str, field: str = "engine") -> tuple[str, str | None]:
    """(name as written, release or None) of ``NAME``, ``NAME==VERSION``, ``NAME@VERSION`` or
    ``NAME:VERSION`` (a leading ``v`` dropped); the name is not checked (:func:`engine_spec` checks it)."""
    import re

    m = re.fullmatch(r"\s*([A-Za-z][\w-]*?)\s*(?:(?:==|@|:)\s*v?([\w.+-]+))?\s*", spec or "")
    if not m:
        raise InputError(f"{flag(field)} expects NAME or NAME==VERSION (vllm, sglang==0.5.23), got {spec!r}",
                         field=field)
    return m.group(1), m.group(2)


def engine_spec(spec: str | None, version: str | None = None, field: str = "engine") -> tuple[str | None, str | None]:
    """(engine, release) from an engine spec as every command reads --engine and QUANTADVISE_ENGINE:
    ``NAME``, ``NAME==VERSION``, ``NAME@VERSION`` (``sglang==0.5.20``); the name passes :func:`engine`.
    ``version`` is a separate --engine-version: it fills a spec without one, and must agree with a spec
    that has one."""
    if spec is None:
        return None, version
    raw, release = split_engine(spec, field)
    name = engine(raw, field)
    if release is not None and version is not None and release != version.strip().removeprefix("v"):
        raise InputError(f"{flag(field)} {spec} and --engine-version {version} name two releases; give one",
                         field=field)
    return name, release or version


# Deeper than this a YAML or JSON document describes no model, workload, deployment or benchmark run. Every
# reader checks it after parsing, so a document is refused alike on every Python (3.11's json.loads stops
# near 1,000 levels with a RecursionError; 3.12+ parses 5,000 and more).
MAX_NESTING = 100


def json_depth(doc: Any) -> int:
    """How deeply a parsed JSON document nests (iteratively)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict):
            deepest = max(deepest, d)
            stack.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list):
            deepest = max(deepest, d)
            stack.extend((v, d + 1) for v in node)
    return deepest
