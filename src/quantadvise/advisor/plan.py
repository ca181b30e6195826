"""The deployment plan for a chosen scheme: the checkpoint that carries it (its quantization_config and
llm-compressor recipe are written by ``checkpoint/write.py``) and the engine commands that serve it. Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..checkpoint.write import checkpoint_summary, kv_cache_scheme, llmcompressor_recipe, quantization_config
from ..wording import plural
from .options import Context, Option
from .result import CheckpointPlan, EngineVerdict, PublishedChoice

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..checkpoint.published import Published


def checkpoint_path(ctx: Context, o: Option) -> str:
    """The model a candidate is served from: the published checkpoint (the native candidate, or 16-bit
    weights of a 16-bit model), else the re-quantized copy's folder — and for 16-bit weights of a model that ships
    quantized, a 16-bit copy's folder: served from the model's own id, the engines load the shipped quantized weights."""
    model_id = ctx.model_id or ctx.workload.model
    short = model_id.rsplit("/", 1)[-1]
    if o.native or not o.scheme.quantizes_weights:
        return f"./{short}-bf16" if not o.native and ctx.native is not None else model_id
    return f"./{short}-{o.scheme.id}"


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
                               kv_cache_dtype=v.kv_cache_dtype_flag, gpu=ctx.gpu.id, tp=w.gpus, scheme=o.id,
                               model_id=ctx.model_id or w.model)


def deploy_plan(ctx: Context, winner: Option) -> tuple[dict[str, str | None], CheckpointPlan]:
    """How to serve the winner: one command per engine (the chosen engine first; None where that
    engine refuses it or the model's context limit, with the reason in the notes) and the checkpoint
    that carries it. The native candidate serves the published checkpoint as it is."""
    from ..engines.flags import MissingOption, engine_command
    from .verdict import engine_verdict, kv_flag

    w = ctx.workload
    model_id = ctx.model_id or w.model
    path = checkpoint_path(ctx, winner)
    # a latency budget or a searched concurrency is enforced by the engine's cap on running sequences
    searched = (ctx.slo is not None and ctx.slo.active) or ctx.batch_bound
    seqs = winner.concurrency if searched and winner.concurrency >= 1 else w.batch

    spec = _speculation(ctx)

    def command(engine: str, model: str, quantization: str | None, kv: str | None) -> str | None:
        # no bfloat16 on this GPU: the engine would run the 16-bit tensors in float16 anyway; say so
        try:
            return engine_command(engine, model, ctx.options.get(engine),
                                  extra=spec(engine) if spec is not None else None,
                                  quantization=quantization, kv_cache_dtype=kv, max_num_seqs=seqs,
                                  max_model_len=w.context, tensor_parallel_size=w.gpus,
                                  gpu_memory_utilization=w.memory_utilization,
                                  dtype="half" if engine in ctx.fp16 else None)
        except MissingOption as exc:  # the release has no option for a field the plan sets
            notes.append(str(exc))
            return None

    commands: dict[str, str | None] = {}
    notes = _speculation_notes(ctx)
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
            notes.append(f"{eng.label} refuses it: " + "; ".join(v.messages)
                         + (f" ({'; '.join(v.why)})" if v.why else ""))
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
    elif nat is not None:
        notes.append(f"{model_id} ships {nat.checkpoint.quant_method}, which both engines load as shipped from that id: "
                     f"16-bit weights are the publisher's 16-bit release, or the shipped checkpoint dequantized to bf16, "
                     f"served from their own folder ({path})")
    if winner.published is not None and winner.scheme.quantizes_weights:
        return _serve_published(ctx, winner, winner.published, command, notes)
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
        summary=(checkpoint_summary(winner.scheme, d) if nat is None or winner.scheme.quantizes_weights else
                 f"16-bit weights in {path}: the publisher's 16-bit release, or the shipped "
                 f"{nat.checkpoint.quant_method} checkpoint dequantized to bf16"),
        alternatives=list(d.alternatives),
        recipe=recipe,
        quantization_config=quantization_config(winner.scheme, d, ctx.arch, kv),
        suggested_path=path,
        notes=notes,
        online=online,
    )
    return commands, plan


def _serve_published(ctx: Context, winner: Option, p: Published,
                     command: Callable[[str, str, str | None, str | None], str | None],
                     notes: list[str]) -> tuple[dict[str, str | None], CheckpointPlan]:
    """The commands serve the published checkpoint that carries the winner (by its Hub id, with no
    --quantization: both engines read its quantization_config); the llm-compressor recipe stays, as the
    fallback. An engine that refuses the published checkpoint gets no command, with its reason."""
    from ..checkpoint.published import checkpoint_of
    from ..checkpoint.write import kv_cache_scheme
    from ..engines.resolution import resolve
    from .published import accuracy_words, offer
    from .verdict import kv_flag

    scheme = next((s for q, s in ctx.published if q.id == p.id), winner.scheme)
    ck, basis = checkpoint_of(p, scheme, None, ctx.arch)
    notes = [n for n in notes if " refuses it: " not in n]  # verdicts on the checkpoint the recipe writes
    commands: dict[str, str | None] = {}
    for eng in (ctx.engine, *([ctx.other_engine] if ctx.other_engine is not None else [])):
        if eng.engine in ctx.gpu_refused or (eng.engine in (ctx.limits or {}) and ctx.limits[eng.engine].tokens
                                             is not None and ctx.workload.context > (ctx.limits[eng.engine].tokens or 0)):
            commands[eng.engine] = None  # the reason is already in the notes
            continue
        flag = kv_flag(ctx, eng, ctx.kv_name)
        res = resolve(eng, ck, capability=ctx.gpu.capability, platform=ctx.platform, kv_cache_dtype=flag,
                      model_type=ctx.arch.model_type, model_dtype=ctx.arch.torch_dtype)
        if res.refused:
            commands[eng.engine] = None
            msgs = [f.engine_message or f.message for f in res.findings if f.severity == "error"]
            notes.append(f"{eng.label} refuses {p.id}: " + "; ".join(msgs))
        else:
            commands[eng.engine] = command(eng.engine, p.id, None, flag)
    words = accuracy_words(p, winner.expected_drop, "; ".join(winner.drop_sources))
    a = p.accuracy
    notes.append(f"serves {offer(p)}: {words}")
    if basis == "assumed":
        notes.append(f"{p.id}'s quantization_config was not read whole ({p.config_status}; data/checkpoints.yaml "
                     f"says what it rests on): the engines' verdicts judge the config a {p.method} export of "
                     f"{p.scheme} writes; `quantadvise inspect {p.id}` reads the real one")
    if kv_cache_scheme(ctx.kv_options[ctx.kv_name].kv) is not None and not p.kv:
        notes.append(f"{ctx.kv_name}: {p.id} carries no calibrated KV scales, so the engine uses its default k/v scale "
                     "1.0 (vllm/model_executor/layers/quantization/kv_cache.py)")
    d = winner.deploy
    kv = ctx.kv_options[ctx.kv_name].kv
    recipe = llmcompressor_recipe(winner.scheme, d, ctx.model_id or ctx.workload.model, ctx.arch, kv)
    choice = PublishedChoice(
        id=p.id, producer=p.producer, method=p.method, scheme=p.scheme, config_status=p.config_status,
        accuracy=words, accuracy_short=_short(p, winner), accuracy_source=a.source if a is not None and a.usable
        else None,
        expected_drop_pct=winner.expected_drop, source=p.source, as_of=p.as_of.isoformat())
    plan = CheckpointPlan(
        format=p.method, compressed_tensors_preset=d.compressed_tensors_preset,
        summary=f"the published checkpoint {p.id} ({p.method} {p.scheme}, by {p.short_producer}): nothing to "
                "produce; the recipe below is the fallback that writes the same scheme",
        alternatives=list(d.alternatives), recipe=recipe,
        quantization_config=p.quantization_config if p.config_status == "full" else
        quantization_config(winner.scheme, d, ctx.arch, kv),
        suggested_path=p.id, notes=notes, published=choice)
    return commands, plan


def _short(p: Published, o: Option) -> str:
    """``99.7% recovery on OpenLLM v1, its card`` / ``no evaluation on its card: prior 0-0.5 pt (fp8-w8a8)``."""
    a = p.accuracy
    if a is not None and a.usable:
        return f"{a.headline()}, its card"
    lo, hi = o.expected_drop
    rules = ", ".join(dict.fromkeys(s.split(" (")[0] for s in o.drop_sources))
    return f"no evaluation on its card: prior {lo:g}-{hi:g} pt" + (f" ({rules})" if rules else "")


DRAFT_PLACEHOLDER = "DRAFT"  # the draft's Hub id, where none is on file for the model (the note says so)


def _speculation(ctx: Context) -> Callable[[str], list[str]] | None:
    """The arguments that turn on the speculative decoding the workload priced (K drafted tokens per step),
    per engine: the model's published draft (data/speculators.yaml), else an EAGLE-3 draft to name."""
    from ..engines.flags import speculative_args

    if ctx.spec is None:
        return None
    k = ctx.spec.tokens
    d = ctx.draft
    if d is not None:
        return lambda engine: speculative_args(engine, vllm_method=d.vllm_method, sglang_algorithm=d.sglang_algorithm,
                                               draft=d.draft, tokens=k)
    return lambda engine: speculative_args(engine, vllm_method="eagle3", sglang_algorithm="EAGLE3",
                                           draft=DRAFT_PLACEHOLDER, tokens=k)


def _speculation_notes(ctx: Context) -> list[str]:
    if ctx.spec is None:
        return []
    sp, d = ctx.spec, ctx.draft
    priced = (f"speculative decoding priced at {plural(sp.tokens, 'drafted token')} per step and acceptance "
              f"{sp.acceptance:g} is on in the commands")
    if d is None:
        return [f"{priced}, with an EAGLE-3 draft: no published draft of {ctx.model_id or ctx.workload.model} is on "
                f"file (data/speculators.yaml), so the commands name {DRAFT_PLACEHOLDER}: put your draft's Hub id "
                "there, and price it with the acceptance it measures"]
    what = f"the checkpoint's own MTP layers ({d.vllm_method} / {d.sglang_algorithm})" if d.draft is None else \
        f"the draft {d.draft} ({d.vllm_method} / {d.sglang_algorithm})"
    return [f"{priced}, with {what} ({d.source}); the acceptance is yours to measure with it"]
