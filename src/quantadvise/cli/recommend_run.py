"""``quantadvise recommend`` without typer: what the command does with its options, given by name (the typer
declaration in ``recommend.py`` passes them on; ``fastpath.py`` parses a plain command line straight to here
without importing typer)."""

from collections.abc import Set
from enum import Enum
from typing import Any

from ..files import writing
from .common import check_plot_target, color_enabled, emit_report, input_file, wrote


class RecFormat(str, Enum):
    table = "table"
    json = "json"


def run_recommend(*, given: Set[str], **o: Any) -> None:
    """The command, given every option by its parameter name (``recommend.recommend_cmd``'s) and the names the
    line gave (recommend reads its options' values alone)."""
    from ..api.recommend import recommend
    from ..catalog.resolve import load_workload
    from ..inputs import engine_spec, names

    engine, engine_version = engine_spec(o["engine"], o["engine_version"])  # NAME==VERSION, as every command reads it
    workload, plot, fmt = o["workload"], o["plot"], o["fmt"]
    input_file(workload, "workload", "a workload YAML file")
    input_file(o["profile"], "profile", "a profile YAML file (`quantadvise calibrate` writes one)")
    base = load_workload(workload) if workload else {}
    _known_keys(base, workload)
    flags = {name: o[name] for name in SAME_NAME}
    flags.update(mode=_choice("mode", o["mode"]), task=_choice("task", o["task"]), accuracy_tolerance=o["tolerance"],
                 engine=engine, engine_version=engine_version, ideal=o["ideal"] or None, layouts=o["layouts"] or None,
                 candidates=list(names("candidates", o["candidates"], "w4a16,fp8-dynamic") or ())
                 if o["candidates"] else None)
    made = check_plot_target(plot) if plot is not None else None  # a bad --plot: one error line, before any work
    result = recommend(base, frontier=plot is not None, bench_plan=o["bench_plan"], **flags)
    if plot is not None:
        from ..report.recommend import write_plot

        with writing(plot, "--plot"):
            write_plot(result, plot)
    explain = o["explain"]
    kind = ("explain" if explain else "bench_plan" if o["bench_plan"] else "table") if fmt.value == "table" else fmt.value
    emit_report("recommend", kind, result, wide=o["wide"], **({"color": color_enabled()} if kind == "explain" else {}))
    if plot is not None:
        wrote(plot, made)


# the options the API takes under the command's own parameter names
SAME_NAME = ("batch", "ctx", "prompt", "output", "model", "gpu", "gpus", "kv_dtype", "headroom", "memory_utilization",
             "reserve_gb", "profile", "ttft_ms", "itl_ms", "e2e_ms", "rate", "users", "max_gpus", "usd_per_gpu_hour",
             "spec_tokens", "acceptance", "node")

def _choice(field: str, value: str | None) -> str | None:
    """--mode / --task: a value or alias the workload accepts, else one error naming the flag with the
    closest values (workload.py holds the values and aliases)."""
    if value is None:
        return None
    from ..errors import UnknownNameError
    from ..workload import MODE_ALIASES, TASK_ALIASES, Mode, Task

    kind, aliases = (Mode, MODE_ALIASES) if field == "mode" else (Task, TASK_ALIASES)
    allowed = [m.value for m in kind]
    key = value.strip().lower()
    if aliases.get(key, key) in allowed:
        return value
    err = UnknownNameError(f"--{field} value", value, [*allowed, *aliases], hint=f"one of {', '.join(allowed)}",
                           ids=aliases)
    err.field = field
    raise err


def _known_keys(doc: dict, path: str | None) -> None:
    """A workload file's keys: an unknown one is one error naming the file and the closest key."""
    from ..errors import ConfigError, UnknownNameError
    from ..results import field_keys
    from ..workload import Workload

    known: list[str] = []
    for name, (_, keys) in field_keys(Workload).items():
        known += [name, *(k for k in keys if k != name)]
    for key in doc:
        if str(key).replace("-", "_") not in known:
            err = UnknownNameError("key", str(key), known)
            raise ConfigError(f"{path}: {err.message}", hint="the keys are the flags' names with _ "
                              "(docs/recommend.md)")
