"""The measurement that settles a recommendation (``recommend --bench-plan``): for the winner and its closest
rival, the server command and the engine's own benchmark command at the user's workload — fixed lengths,
the concurrency each was priced at, enough requests for a stable mean, the workload written into the
result — so ``quantadvise validate --bench`` reads the two files back and says which prediction held.
Every benchmark option is checked against the release's client (``data/flags/bench/``). Pure."""

from __future__ import annotations

from typing import Any

from ..engines.bench import BenchCommandError, prompts_note, serve_bench_command, stable_prompts
from .options import Context, Option
from .plan import deploy_plan
from .result import BenchPlan, BenchRunPlan
from .speed import uncertainty_of


def bench_plan(ctx: Context, ranked: list[Option], options: dict[str, Any]) -> BenchPlan:
    """The plan for ``ranked[0]`` and ``ranked[1]`` (the closest rival); ``options``: engine name -> the
    release's benchmark options (``engines.bench.BenchOptions``; None: not on file, the command is then
    not checked and says so)."""
    w = ctx.workload
    runs: list[BenchRunPlan] = []
    notes: list[str] = []
    checked: list[str] = []
    files: dict[str, list[str]] = {}
    for role, o in zip(("recommended", "rival"), ranked[:2], strict=False):
        servers, ck = deploy_plan(ctx, o)
        c = max(1, o.concurrency)
        n = stable_prompts(c)
        bench: dict[str, str | None] = {}
        for engine, server in servers.items():
            if server is None:
                bench[engine] = None
                continue
            opts = options.get(engine)
            kv = ctx.kv_options[ctx.kv_name].hints
            kv_flag = getattr(kv, f"{engine}_kv_cache_dtype", None) if kv is not None else None
            suffix = opts.result_suffix if opts is not None else ".json"
            result = f"{o.id}-{engine}-c{c}-{w.prompt_tokens}x{w.output_tokens}{suffix}"
            try:
                bench[engine] = serve_bench_command(
                    engine, ck.suggested_path or (ctx.model_id or w.model), input_len=w.prompt_tokens,
                    output_len=w.output_tokens, concurrency=c, num_prompts=n, kv_cache_dtype=kv_flag,
                    options=opts, gpu=ctx.gpu.id, tp=w.gpus, scheme=o.id, result_file=result,
                    model_id=ctx.model_id or w.model)
            except BenchCommandError as exc:
                bench[engine] = None
                notes.append(str(exc))
                continue
            files.setdefault(engine, []).append(result)
            label = (f"{opts.prog} ({engine} {opts.version}): every option checked against "
                     f"data/flags/bench/{engine}-{opts.version}.yaml" if opts is not None else
                     f"{engine}: no benchmark option list on file, the command is not checked")
            if label not in checked:
                checked.append(label)
        runs.append(BenchRunPlan(
            scheme=o.id, role=role, concurrency=c, num_prompts=n, prompt=w.prompt_tokens, output=w.output_tokens,
            predicted_tokens_per_s=o.throughput, predicted_ttft_s=o.ttft_s, predicted_itl_s=o.itl_s,
            uncertainty=uncertainty_of(o.step_s, o.throughput, o.itl_s, o.ttft_s, o.e2e_s, None, o.basis, o.u_step,
                                       o.u_ttft, o.u_rate, o.loop),
            server=servers, bench=bench, why_prompts=prompts_note(c)))
    validate = {e: f"quantadvise validate --bench {' '.join(fs)} --gpu {ctx.gpu.id}" for e, fs in files.items()}
    if len(runs) < 2:
        notes.append("one candidate is ranked: there is no rival to measure against")
    notes.append("start the server command, wait until it serves, run the benchmark command against it; then "
                 "`validate --bench` on the result files compares each run with its prediction")
    return BenchPlan(runs=runs, checked_against=checked, validate_commands=validate, notes=notes)
