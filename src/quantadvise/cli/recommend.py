"""``quantadvise recommend``: a workload walks the decision tree to a scheme."""

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from .. import defaults
from ..files import writing
from . import completion
from .common import (
    AcceptanceOpt,
    LayoutsOpt,
    MaxGpusOpt,
    NodeOpt,
    SpecTokensOpt,
    UsdPerGpuHourOpt,
    WideOpt,
    check_plot_target,
    color_enabled,
    emit_report,
    input_file,
    wrote,
)


class RecFormat(str, Enum):
    table = "table"
    json = "json"


RATE_HELP = (f"Load in requests/s, arriving at random: the GPUs each scheme needs (replicas x tensor parallel) with "
             f"at most {defaults.LOAD_WAIT_SHARE:.0%} of requests waiting for a slot, and ITL/TTFT at that load.")

BenchPlanOpt = Annotated[
    bool, typer.Option("--bench-plan", help="Print the server and benchmark commands (vllm bench serve / SGLang "
                       "bench_serving) that measure the winner and its closest rival at this workload; "
                       "`validate --bench` reads their results.")
]


def recommend_cmd(
    batch: Annotated[int | None, typer.Option("--batch", "-b", help="Max concurrent sequences [default: 1].")] = None,
    ctx: Annotated[int | None, typer.Option("--ctx", help="Tokens per sequence, prompt + output [default: 2048].")]
    = None,
    prompt: Annotated[int | None, typer.Option("--prompt", help="Prompt tokens per sequence.")] = None,
    output: Annotated[int | None, typer.Option("--output", help="Output tokens per sequence.")] = None,
    mode: Annotated[
        str | None,
        typer.Option("--mode", help="sync (low concurrency, latency) | continuous (async continuous batching, "
                     "throughput) | auto [default: auto: sync up to batch 4].", autocompletion=completion.modes),
    ] = None,
    task: Annotated[
        str | None,
        typer.Option("--task", help="general | reasoning | code | long-generation | retrieval [default: general].",
                     autocompletion=completion.tasks),
    ] = None,
    tolerance: Annotated[
        float | None,
        typer.Option("--accuracy-tolerance", help="Max accuracy drop you accept, %-points [default: 1.0]."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Bundled id, local config.json / folder, or Hub id "
                     "[default: meta-llama/Meta-Llama-3-8B].", envvar="QUANTADVISE_MODEL",
                     autocompletion=completion.models),
    ] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="GPU id or alias; several, comma-separated: a pool "
                                            "[default: h100-sxm].",
                                            envvar="QUANTADVISE_GPU", autocompletion=completion.gpus)] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", help="GPUs, tensor parallel [default: 1].",
                                             envvar="QUANTADVISE_GPUS")] = None,
    engine: Annotated[str | None, typer.Option("--engine", help="vllm | sglang [default: vllm].",
                                               envvar="QUANTADVISE_ENGINE", autocompletion=completion.engines)] = None,
    engine_version: Annotated[
        str | None, typer.Option("--engine-version", help="Engine release [default: newest bundled].")
    ] = None,
    kv_dtype: Annotated[
        str | None, typer.Option("--kv-dtype", help="Force the KV cache dtype (kv-bf16, kv-fp8 ...) instead of "
                                 "letting the tree decide.", envvar="QUANTADVISE_KV_DTYPE", autocompletion=completion.kv_presets)
    ] = None,
    headroom: Annotated[float | None, typer.Option("--headroom", help="Fraction of usable memory to keep free.")]
    = None,
    memory_utilization: Annotated[
        float | None, typer.Option("--memory-utilization", help="Engine share of GPU memory, written on the "
                                   "engine commands [default: the engine release's own].")
    ] = None,
    reserve_gb: Annotated[
        float | None, typer.Option("--reserve-gb", help="Runtime reserve per GPU in GiB, 2^30 bytes (reports print "
                                                      "decimal GB: 2 GiB = 2.15 GB) [default: 2 on vLLM, 0 on SGLang].")
    ] = None,
    candidates: Annotated[
        str | None, typer.Option("--candidates", help="Comma-separated schemes to weigh (default: the built-in set).",
                                 autocompletion=completion.scheme_list)
    ] = None,
    profile: Annotated[
        str | None, typer.Option("--profile", help="Efficiency profile YAML (measured with `quantadvise calibrate`).")
    ] = None,
    ideal: Annotated[bool, typer.Option("--ideal", help="Spec-sheet roofline: no efficiency losses.")] = False,
    ttft_ms: Annotated[float | None, typer.Option("--ttft-ms", help="Time-to-first-token budget, ms (under load): "
                                                  "each candidate runs at the largest concurrency that meets it.")] = None,
    itl_ms: Annotated[float | None, typer.Option("--itl-ms", help="Mean inter-token latency budget, ms.")] = None,
    e2e_ms: Annotated[float | None, typer.Option("--e2e-ms", help="End-to-end latency budget per request, ms.")] = None,
    rate: Annotated[float | None, typer.Option("--rate", help=RATE_HELP)] = None,
    users: Annotated[int | None, typer.Option("--users", help="Load in concurrent users (sequences in flight), "
                                              "instead of --rate.")] = None,
    max_gpus: MaxGpusOpt = None, node: NodeOpt = None, layouts: LayoutsOpt = False,
    usd_per_gpu_hour: UsdPerGpuHourOpt = None,
    spec_tokens: SpecTokensOpt = None,
    acceptance: AcceptanceOpt = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write the candidates' Pareto frontier (tokens/s per GPU vs per user) "
                                  "to FILE.png or FILE.svg (needs the [plot] extra).", dir_okay=False)
    ] = None,
    workload: Annotated[
        str | None, typer.Option("--workload", "-w", help="Workload YAML file (same keys as these flags); flags win.")
    ] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show the decision tree with the chosen path.")] = False,
    bench_plan: BenchPlanOpt = False,
    wide: WideOpt = False,
    fmt: Annotated[RecFormat, typer.Option("--format", "-f", help="Output format.", envvar="QUANTADVISE_FORMAT",
                                           case_sensitive=False)] = RecFormat.table,
) -> None:
    """Recommend a scheme for a workload: the checkpoint as shipped, fit, engine and accuracy
    filters, KV cache, speed at the sequences each candidate holds — every branch with its
    numbers — and how to deploy it on vLLM and SGLang.

    Example: quantadvise recommend --batch 64 --ctx 2048 --bench-plan
    """
    from ..api.recommend import recommend
    from ..catalog.resolve import load_workload
    from ..inputs import engine_spec, names

    engine, engine_version = engine_spec(engine, engine_version)  # NAME==VERSION, as every command reads it
    input_file(workload, "workload", "a workload YAML file")
    input_file(profile, "profile", "a profile YAML file (`quantadvise calibrate` writes one)")
    base = load_workload(workload) if workload else {}
    _known_keys(base, workload)
    mode, task = _choice("mode", mode), _choice("task", task)
    flags = {
        "batch": batch, "ctx": ctx, "prompt": prompt, "output": output, "mode": mode, "task": task,
        "accuracy_tolerance": tolerance, "model": model, "gpu": gpu, "gpus": gpus, "engine": engine,
        "engine_version": engine_version, "kv_dtype": kv_dtype, "headroom": headroom,
        "memory_utilization": memory_utilization, "reserve_gb": reserve_gb, "profile": profile, "ideal": ideal or None,
        "candidates": list(names("candidates", candidates, "w4a16,fp8-dynamic") or ()) if candidates else None,
        "ttft_ms": ttft_ms, "itl_ms": itl_ms, "e2e_ms": e2e_ms, "rate": rate, "users": users, "max_gpus": max_gpus,
        "usd_per_gpu_hour": usd_per_gpu_hour, "spec_tokens": spec_tokens, "acceptance": acceptance, "node": node,
        "layouts": layouts or None,
    }
    made = check_plot_target(plot) if plot is not None else None  # a bad --plot: one error line, before any work
    result = recommend(base, frontier=plot is not None, bench_plan=bench_plan, **flags)
    if plot is not None:
        from ..report.recommend import write_plot

        with writing(plot, "--plot"):
            write_plot(result, plot)
    kind = ("explain" if explain else "bench_plan" if bench_plan else "table") if fmt.value == "table" else fmt.value
    emit_report("recommend", kind, result, wide=wide, **({"color": color_enabled()} if kind == "explain" else {}))
    if plot is not None:
        wrote(plot, made)


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
