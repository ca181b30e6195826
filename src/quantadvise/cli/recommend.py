"""``quantadvise recommend``: a workload walks the decision tree to a scheme."""

from pathlib import Path
from typing import Annotated

import typer

from .. import defaults
from . import completion, recommend_run
from .options import (
    AcceptanceOpt,
    LayoutsOpt,
    MaxGpusOpt,
    NodeOpt,
    SpecTokensOpt,
    UsdPerGpuHourOpt,
    WideOpt,
    line_given,
)
from .recommend_run import RecFormat

RATE_HELP = (f"Load in requests/s, arriving at random: the GPUs each scheme needs (replicas x tensor parallel) with "
             f"at most {defaults.LOAD_WAIT_SHARE:.0%} of requests waiting for a slot, and ITL/TTFT at that load.")

BenchPlanOpt = Annotated[
    bool, typer.Option("--bench-plan", help="Print the server and benchmark commands (vllm bench serve / SGLang "
                       "bench_serving) that measure the winner and its closest rival at this workload; "
                       "`validate --bench` reads their results.")
]


def recommend_cmd(
    click_ctx: typer.Context,
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
    options = dict(locals())
    recommend_run.run_recommend(given=line_given(options.pop("click_ctx")), **options)
