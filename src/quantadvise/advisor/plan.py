"""The deployment plan for a chosen scheme: the checkpoint that carries it (its quantization_config and
llm-compressor recipe are written by ``checkpoint/write.py``) and the engine commands that serve it. Pure.
"""

from __future__ import annotations

from ..checkpoint.write import checkpoint_summary, kv_cache_scheme, llmcompressor_recipe, quantization_config
from .options import Context, Option
from .result import CheckpointPlan, EngineVerdict


def checkpoint_path(ctx: Context, o: Option) -> str:
    """The model a candidate is served from: the published checkpoint (the native candidate, or 16-bit
    weights), else the re-quantized copy's folder."""
    model_id = ctx.model_id or ctx.workload.model
    short = model_id.rsplit("/", 1)[-1]
    return model_id if o.native or not o.scheme.quantizes_weights else f"./{short}-{o.scheme.id}"


def bench_command(ctx: Context, o: Option) -> str | None:
    """The engine's own benchmark client measuring ``o`` at the workload (prompt and output lengths, the
    concurrency it runs), against a server started with the plan's command; None when the engine refuses it."""
    from ..engines.bench import serve_bench_command, stable_prompts
    from .verdict import engine_verdict

    w = ctx.workload
    v = engine_verdict(ctx, ctx.engine, o, ctx.kv_name)
    if not v.supported or o.concurrency < 1:
        return None
    return serve_bench_command(ctx.engine.engine, checkpoint_path(ctx, o), input_len=max(1, w.prompt_tokens),
                               output_len=max(1, w.output_tokens), concurrency=o.concurrency,
                               num_prompts=stable_prompts(o.concurrency), quantization=v.quantization_flag,
                               kv_cache_dtype=v.kv_cache_dtype_flag)


def deploy_plan(ctx: Context, winner: Option) -> tuple[dict[str, str | None], CheckpointPlan]:
    """How to serve the winner: one command per engine (the chosen engine first; None where that
    engine refuses it or the model's context limit, with the reason in the notes) and the checkpoint
    that carries it. The native candidate serves the published checkpoint as it is."""
    from ..engines.flags import engine_command
    from .verdict import engine_verdict, kv_flag

    w = ctx.workload
    model_id = ctx.model_id or w.model
    path = checkpoint_path(ctx, winner)
    # a latency budget or a searched concurrency is enforced by the engine's cap on running sequences
    searched = (ctx.slo is not None and ctx.slo.active) or ctx.batch_bound
    seqs = winner.concurrency if searched and winner.concurrency >= 1 else w.batch

    def command(engine: str, model: str, quantization: str | None, kv: str | None) -> str:
        # no bfloat16 on this GPU: the engine would run the 16-bit tensors in float16 anyway; say so
        return engine_command(engine, model, quantization=quantization, kv_cache_dtype=kv, max_num_seqs=seqs,
                              max_model_len=w.context, tensor_parallel_size=w.gpus,
                              gpu_memory_utilization=w.memory_utilization,
                              dtype="half" if engine in ctx.fp16 else None)

    commands: dict[str, str | None] = {}
    notes = []
    for eng in (ctx.engine, *([ctx.other_engine] if ctx.other_engine is not None else [])):
        if eng.engine in ctx.gpu_refused:
            commands[eng.engine] = None
            notes.append(f"{eng.label} does not start on {ctx.gpu.name}: {ctx.gpu_refused[eng.engine]}")
            continue
        limit = ctx.limits.get(eng.engine)
        if limit is not None and limit.tokens is not None and w.context > limit.tokens:
            commands[eng.engine] = None
            notes.append(f"{eng.label} refuses --ctx {w.context:,} for this model: {limit.refusal(w.context)}")
            continue
        v: EngineVerdict = engine_verdict(ctx, eng, winner, ctx.kv_name)
        if v.supported:
            commands[eng.engine] = command(eng.engine, path, v.quantization_flag, v.kv_cache_dtype_flag)
        else:
            commands[eng.engine] = None
            notes.append(f"{eng.label} refuses it: " + "; ".join(v.messages))
    for eng in (ctx.engine, *([ctx.other_engine] if ctx.other_engine is not None else [])):
        if eng.engine in ctx.fp16 and commands.get(eng.engine):
            notes.append(f"{ctx.gpu.name} (compute capability {ctx.gpu.compute_capability}) has no bfloat16: "
                         f"{eng.label} runs the 16-bit tensors in float16 (\"{ctx.fp16[eng.engine]}\"), so the "
                         "command passes --dtype half")
    nat = ctx.native
    if winner.native and nat is not None:
        ck = nat.checkpoint
        if kv_cache_scheme(ctx.kv_options[ctx.kv_name].kv) is not None and ck.kv_cache_raw is None \
                and not ck.kv_cache_algo:
            notes.append(f"{ctx.kv_name}: the shipped checkpoint has no calibrated KV scales, so the engine uses its "
                         "default k/v scale 1.0 (vllm/model_executor/layers/quantization/kv_cache.py)")
        plan = CheckpointPlan(
            format=ck.family, compressed_tensors_preset=None,
            summary=f"the published checkpoint as shipped ({ck.summary()}): nothing to produce",
            alternatives=[], recipe=None, quantization_config=nat.quantization_config, suggested_path=path,
            notes=notes + (["no --quantization flag: both engines read the method from the checkpoint"]
                           if ck.engines_read_it else
                           [f"the quantization parameters are only in {ck.found_in}: the engines need "
                            f"--quantization {ck.quant_method}"]),
        )
        return commands, plan
    if nat is not None and winner.scheme.quantizes_weights:
        notes.append(f"{model_id} ships {nat.checkpoint.quant_method}: this re-quantization starts from 16-bit weights "
                     "(the publisher's 16-bit release, or the shipped checkpoint dequantized — its quantization error "
                     "then compounds)")
    d = winner.deploy
    online = None
    if d.online and nat is None and ctx.engine.shorthand(d.online) is not None:  # the release's online shorthands
        online = command(ctx.engine.engine, model_id, d.online, kv_flag(ctx, ctx.engine, ctx.kv_name))
    kv = ctx.kv_options[ctx.kv_name].kv
    kvs = kv_cache_scheme(kv)
    recipe = llmcompressor_recipe(winner.scheme, d, model_id, ctx.arch, kv)
    if kvs is not None and d.checkpoint_format in ("awq", "gptq"):
        notes.append(f"{ctx.kv_name} has calibrated static scales: the recipe writes them (kv_cache_scheme) into a "
                     "compressed-tensors checkpoint; an AutoAWQ / AutoGPTQ checkpoint carries none, so the engine "
                     "would use its default k/v scale 1.0 (vllm/model_executor/layers/quantization/kv_cache.py)")
    elif kvs is not None and not winner.scheme.quantizes_weights:
        notes.append(f"{ctx.kv_name} on the original 16-bit checkpoint runs with the engine's default k/v scale 1.0 "
                     "(vLLM warns \"Using KV cache scaling factor 1.0 for fp8_e4m3\", "
                     "vllm/model_executor/layers/quantization/kv_cache.py); the llm-compressor line calibrates the "
                     "scales into a copy of it")
    plan = CheckpointPlan(
        format=d.checkpoint_format if winner.scheme.quantizes_weights else None,
        compressed_tensors_preset=d.compressed_tensors_preset,
        summary=checkpoint_summary(winner.scheme, d),
        alternatives=list(d.alternatives),
        recipe=recipe,
        quantization_config=quantization_config(winner.scheme, d, ctx.arch, kv),
        suggested_path=path,
        notes=notes,
        online=online,
    )
    return commands, plan
