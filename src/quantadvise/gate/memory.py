"""QA3xx: memory, the way the engine sees it at start-up.

:func:`startup_memory` replays the engine's own arithmetic (``startup.py``, facts from
``data/engine_startup.yaml``) on one deployment; :func:`memory_findings` turns it into findings:

- QA301 the weights leave no KV cache: the engine refuses to start (its own message);
- QA302 vLLM: one sequence of max-model-len does not fit in one GPU's KV cache (its own message);
- QA305 SGLang: the KV pool holds fewer tokens than --context-length (it starts, and warns);
- QA306 the maximum length is longer than the model's config.json allows (both refuse);
- QA303 a *declared* workload does not fit at once: it queues (a warning with the numbers);
- QA304 a declared workload fits with less headroom than configured.

``--max-num-seqs`` and ``--max-model-len`` are caps, not a workload: with nothing declared and an
engine that starts, there is no memory finding. An engine that refuses to start — here (QA301,
QA302, QA306) or for any other rule in ``rules.REFUSES_START`` found before (QA1xx) — gets no
QA303/QA304/QA305: they describe an engine that runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace

from ..engines.flags import engine_label
from ..engines.startup import (
    DerivedMaxLen,
    StartupFacts,
    gib,
    longest_that_fits,
    sglang_max_running,
    usable_fraction,
)
from ..memory.kvcache import kv_share_per_gpu
from ..memory.sizing import memory_budget
from ..results import record
from ..wording import plural
from .findings import Findings, Site
from .result import MemoryFit
from .rules import RULE_BY_ID


@record
class Declared:
    """A declared workload: sequences at once, tokens each holds in the KV cache, why that many."""

    concurrency: int
    kv_tokens_per_sequence: int
    basis: str = ""


@record
class MemoryInputs:
    """Everything the engine's start-up arithmetic reads for one deployment."""

    facts: StartupFacts
    gpu: str
    gpu_memory_bytes: int  # one GPU
    tp: int
    pp: int
    fraction: float  # vLLM gpu-memory-utilization / SGLang mem-fraction-static
    fraction_flag: str
    fraction_from: str
    reserve_bytes_per_gpu: int  # vLLM's runtime outside weights + KV (SGLang: 0, inside the fraction)
    reserve_from: str
    weights_bytes: int  # all GPUs
    weights_source: str
    kv_dtype: str
    kv_bytes_per_token: float  # all GPUs, layers that cache every token
    sequence_bytes: Callable[[int], float]  # tokens -> one sequence's KV bytes, whole model
    kv_heads: int
    mla: bool
    max_model_len: int  # the length in force (the flag, else the model's)
    max_model_len_source: str
    auto_fit: bool = False  # vLLM --max-model-len -1 / auto: fitted to memory, never refused
    max_num_seqs: int | None = None  # the flag (SGLang: --max-running-requests), else vLLM's default
    max_num_seqs_flag: str = "--max-num-seqs"
    max_num_seqs_source: str | None = None
    declared: Declared | None = None
    vendor: str = "nvidia"  # the GPU's: the margin vLLM's extensible KV cache keeps free depends on it


def startup_memory(m: MemoryInputs) -> MemoryFit:
    """The engine's start-up memory for one deployment (see the module docstring)."""
    f, gpus = m.facts, max(m.tp * m.pp, 1)
    # SGLang derives its fraction from the GPU's memory less what its flags reserve (a large chunked prefill or
    # CUDA-graph batch on a small GPU): at or below 0 the engine has nothing for weights and KV, and fails to start
    # vLLM 0.34.0's extensible KV cache keeps a margin of the GPU free after warmup (usable_fraction)
    usable = usable_fraction(f, m.fraction, m.gpu_memory_bytes, m.vendor) if m.fraction > 0 else 1.0
    b = memory_budget(m.gpu_memory_bytes, gpus=gpus, memory_utilization=usable, reserve_bytes=m.reserve_bytes_per_gpu)
    if m.fraction <= 0:
        b = replace(b, usable_bytes=0)
    share = kv_share_per_gpu(kv_heads=m.kv_heads, mla=m.mla, tp=m.tp, pp=m.pp)
    weights_gpu = m.weights_bytes / gpus
    kv_gpu = b.budget_bytes / gpus - weights_gpu
    # a release that sizes its KV cache again after warmup first checks the capacity it reserves before it, with no
    # margin taken (vLLM 0.34.0: the same checks, each saying which stage refused); otherwise the one size
    kv_before = kv_gpu
    if f.sizes_kv_after_warmup and m.fraction > 0:
        kv_before += math.floor(m.gpu_memory_bytes * m.fraction) - math.floor(m.gpu_memory_bytes * usable)

    def seq_gpu(n: int) -> float:
        return m.sequence_bytes(n) * share

    per_token_gpu = m.kv_bytes_per_token * share
    tokens = max(0, math.floor(kv_gpu / per_token_gpu)) if per_token_gpu > 0 and kv_gpu > 0 else 0
    mml, mml_from = m.max_model_len, m.max_model_len_source
    refusal = None
    fits_len = None
    need_gpu = math.ceil(seq_gpu(mml)) if mml > 0 else 0
    # vLLM fits an auto length before it checks the cache (kv_cache_planning.py: _auto_fit_max_model_len, then
    # _check_enough_kv_cache_memory): with no KV memory at all it says it cannot fit even one token
    auto_fits_first = m.auto_fit and f.refuses_context_beyond_kv and weights_gpu <= m.gpu_memory_bytes
    if kv_gpu <= 0 and not auto_fits_first:
        refusal = _no_kv_message(f, m, weights_gpu, after_warmup=kv_before > 0)
    elif f.refuses_context_beyond_kv:
        if m.auto_fit:
            first = longest_that_fits(seq_gpu, kv_before, mml)  # fitted to the capacity reserved before warmup
            fits_len = longest_that_fits(seq_gpu, kv_gpu, first)  # ... and again to the size measured after it
            if first == 0:
                refusal = f.message("auto_fit_none", hint=f.kv_hint(m.fraction, after_warmup=False))
            elif fits_len == 0:
                refusal = f.message("auto_fit_none", hint=f.message("auto_fit_none_after_warmup_hint"))
            elif fits_len < mml:
                mml_from = _auto_fit_words(f, m.fraction, mml, first, fits_len, kv_gpu)
                mml, need_gpu = fits_len, math.ceil(seq_gpu(fits_len))
        elif need_gpu > kv_gpu:
            fits_len = longest_that_fits(seq_gpu, kv_gpu, mml)  # what to set: it passes both checks
            before = need_gpu > kv_before  # the check on the reserved capacity refuses first
            room = kv_before if before else kv_gpu
            said_fits = longest_that_fits(seq_gpu, room, mml)
            estimate = f.message("max_len_estimate", fits=said_fits) + " " if said_fits > 0 else ""
            refusal = f.message("max_len_exceeds_kv", max_model_len=mml, needed_gib=gib(need_gpu),
                                available_gib=gib(room), estimate=estimate,
                                hint=f.kv_hint(m.fraction, after_warmup=not before))
    elif need_gpu > kv_gpu:
        fits_len = longest_that_fits(seq_gpu, kv_gpu, mml)  # SGLang starts; requests are cut at the pool
    at_mml = math.floor(kv_gpu / seq_gpu(mml)) if kv_gpu > 0 and mml > 0 and seq_gpu(mml) > 0 else 0
    cap, cap_from = m.max_num_seqs, m.max_num_seqs_source
    if f.caps_running_by_pool and kv_gpu > 0:
        requested = m.max_num_seqs
        cap = sglang_max_running(f, tokens, mml, requested)
        if requested is None:
            cap_from = (f"SGLang {f.version}'s default from the KV pool: int({tokens:,} tokens / {mml:,} x "
                        f"{f.max_running_requests_per_context}) within [{f.max_running_requests_min}, "
                        f"{f.max_running_requests_max}], at most tokens / {f.max_running_requests_token_divisor}"
                        f" ({f.lines.get('max_running_requests', '')})")
        elif cap < requested:
            cap_from = f"{cap_from}; " + f.message("max_running_reduced", requested=requested, allowed=cap)
    fit = MemoryFit(
        engine=f.engine, gpu=m.gpu, gpus=gpus, memory_bytes=b.memory_bytes, memory_utilization=m.fraction,
        memory_utilization_flag=m.fraction_flag, memory_utilization_from=m.fraction_from,
        reserve_bytes=b.reserve_bytes, reserve_from=m.reserve_from, budget_bytes=b.budget_bytes,
        weights_bytes=m.weights_bytes, weights_source=m.weights_source,
        kv_cache_bytes=math.floor(kv_gpu * gpus), kv_cache_bytes_per_gpu=math.floor(kv_gpu), kv_dtype=m.kv_dtype,
        kv_bytes_per_token=m.kv_bytes_per_token, kv_capacity_tokens=tokens if per_token_gpu > 0 else None,
        max_model_len=mml, max_model_len_source=mml_from, max_model_len_kv_bytes=need_gpu,
        max_model_len_that_fits=fits_len, sequences_at_max_model_len=at_mml, max_num_seqs=cap,
        max_num_seqs_flag=m.max_num_seqs_flag, max_num_seqs_source=cap_from, starts=refusal is None and kv_gpu > 0,
        refusal=refusal,
    )
    d = m.declared
    if d is None or refusal is not None:
        return fit
    per_seq = seq_gpu(d.kv_tokens_per_sequence) * gpus
    kv = per_seq * d.concurrency
    free = fit.kv_cache_bytes - kv
    return fit.model_copy(update={
        "concurrency": d.concurrency, "kv_tokens_per_sequence": d.kv_tokens_per_sequence, "kv_tokens_basis": d.basis,
        "kv_bytes": math.ceil(kv), "free_bytes": math.floor(free),
        "headroom": free / b.budget_bytes if b.budget_bytes > 0 else None,
        "max_concurrency": max(0, math.floor(fit.kv_cache_bytes / per_seq)) if per_seq > 0 else d.concurrency,
    })


def _no_kv_message(f: StartupFacts, m: MemoryInputs, weights_gpu: float, *, after_warmup: bool) -> str | None:
    """What the engine prints when the weights leave no KV cache. Weights larger than the GPU fail while
    loading (a CUDA out-of-memory error: vLLM's own words where on file, else none quoted), before the
    engine plans a KV cache. ``after_warmup``: the capacity reserved before warmup held, the size measured
    after it does not (vLLM 0.34.0's hint says so)."""
    if weights_gpu > m.gpu_memory_bytes:
        return f.message("weights_exceed_gpu") if "weights_exceed_gpu" in f.messages else None
    if "weights_leave_no_kv" in f.messages:
        minimum = weights_gpu / m.gpu_memory_bytes  # 1 - available/pre, with available = pre - weights
        return f.message("weights_leave_no_kv", fraction=f"{m.fraction:g}", suggested=f"{math.ceil(minimum * 1000) / 1000:.3f}",
                         minimum=f"{minimum:.4f}")
    return f.message("no_kv_memory", hint=f.kv_hint(m.fraction, after_warmup=after_warmup))


def _auto_fit_words(f: StartupFacts, fraction: float, derived: int, first: int, fits: int, kv_gpu: float) -> str:
    """What vLLM logs when --max-model-len auto shortens the length: once, where it sizes the KV cache once;
    where it fits the length again after warmup (0.34.0), its last word: the first fit kept, or shortened again
    (with a warning and a hint below ``auto_fit_short_below`` tokens)."""
    if not f.sizes_kv_after_warmup:
        return f.message("auto_fit_reduced", derived=derived, fits=fits, available_gib=gib(kv_gpu))
    if fits == first:
        return f.message("auto_fit_kept", fits=fits, available_gib=gib(kv_gpu))
    short = f.auto_fit_short_below is not None and fits < f.auto_fit_short_below
    hint = f.message("auto_fit_short_hint_within_share" if fraction < 1.0 else "auto_fit_short_hint_all_memory")
    return f.message("auto_fit_reduced_short" if short else "auto_fit_reduced", derived=first, fits=fits,
                     available_gib=gib(kv_gpu), hint=hint)


def _fixed_words(template: str) -> str:
    """A message's words before its first value: what every filling of it starts with."""
    return " ".join(template.split("{")[0].split())


def _gib(n: float) -> str:
    return f"{gib(n)} GiB"


def _short(source: str) -> str:
    """Where a value came from, in a few words (the assumptions say it in full)."""
    if source.startswith("line ") or source.startswith("declared"):
        return source
    return "the engine's default" if "default" in source else "the engine's heuristic" if "heuristic" in source \
        else source


def refusal_reason(engine: str, refused: Mapping[str, str]) -> str:
    """``vLLM refuses to start (QA306 context-exceeds-model)``: why a start-dependent rule did not run."""
    rules = ", ".join(f"{r} {RULE_BY_ID[r].name}" for r in refused)
    return f"{engine_label(engine)} refuses to start ({rules})"


def memory_findings(out: Findings, site: Site, m: MemoryFit, *, min_headroom: float | None,
                    derived: DerivedMaxLen | None, max_model_len_given: int | None,
                    max_model_len_flag: str, facts: StartupFacts) -> None:
    """QA301-QA306 for one deployment's start-up memory."""
    out.ran_rules("QA301", "QA306")
    gpus = max(m.gpus, 1)
    fraction = (f"{m.memory_utilization_flag} {m.memory_utilization:g} ({_short(m.memory_utilization_from)}) x "
                f"{_gib(m.memory_bytes / gpus)}")
    usable_gpu = m.usable_bytes_per_gpu
    if facts.sizes_kv_after_warmup and usable_gpu > 0 and m.kept_free_bytes_per_gpu > 0:
        # the share capped by the margin vLLM 0.34.0 keeps free after warmup: min(fraction x memory, memory - margin)
        fraction += (f", at most {_gib(m.memory_bytes / gpus)} - {_gib(m.memory_bytes / gpus - usable_gpu)} vLLM keeps "
                     f"free after warmup ({facts.cite('kv_margin')})")
    if derived is not None and max_model_len_given is not None and max_model_len_given > derived.value \
            and (derived.model_max_length is None or max_model_len_given > derived.model_max_length):
        file, line = site.at("max_model_len", "model")
        if "max_len_exceeds_model" in facts.messages:
            said = facts.message("max_len_exceeds_model", max_model_len=max_model_len_given, key=derived.key,
                                 derived=derived.value, model_max_length=derived.model_max_length)
        else:
            said = facts.message("context_exceeds_model", context=max_model_len_given, derived=derived.value)
        overridden = f", with the command's {', '.join(derived.overridden)} override" if derived.overridden else ""
        hint = ""
        if derived.unapplied_rope is not None and derived.key:
            kind, factor = derived.unapplied_rope
            hint = (f"; {engine_label(facts.engine)} does not multiply {derived.key} by the {kind} RoPE factor "
                    f"{factor:g} (it takes the length as already scaled): set {derived.key} to the scaled length in "
                    "the same override (e.g. "
                    f"\"{derived.key}\": {max_model_len_given}) if the model supports it")
        out.add("QA306", f"{max_model_len_flag} {max_model_len_given:,} is longer than the {derived.value:,} tokens the "
                f"model's config.json allows ({derived.key or 'no length key: the engine assumes it'}{overridden}): "
                f"{engine_label(facts.engine)} refuses to start ({facts.cite('max_len_exceeds_model' if 'max_len_exceeds_model' in facts.messages else 'context_exceeds_model')}){hint}",
                subject=f"{site.key}|max-len-vs-model", file=file, line=line, target=site.label,
                engine_message=said)
    if not m.weights_fit:
        file, line = site.at("gpu_memory_utilization", "tensor_parallel_size", "model")
        weights_gpu = m.weights_bytes / gpus
        fix = (f"use more GPUs (tensor parallel), a smaller scheme or a larger {m.memory_utilization_flag}"
               if m.memory_utilization < 1 else "use more GPUs (tensor parallel) or a smaller scheme")
        oom = weights_gpu > m.memory_bytes / gpus
        if oom:
            fix = "use more GPUs (tensor parallel) or a smaller scheme"
            what = (f"the weights ({_gib(weights_gpu)} per GPU, {m.weights_source}) are larger than the "
                    f"{_gib(m.memory_bytes / gpus)} of the {m.gpu}: loading runs out of memory (CUDA out of memory "
                    "in the model loader, before any KV cache is planned)")
        else:
            reserve = (f" + {_gib(m.reserve_bytes / gpus)} runtime reserve ({m.reserve_from})"
                       if m.reserve_bytes else "")
            what = (f"the weights ({_gib(weights_gpu)} per GPU, {m.weights_source}){reserve} fill the "
                    f"{_gib(m.budget_bytes / gpus + m.reserve_bytes / gpus)} {m.engine} may use per GPU "
                    f"({fraction}): no KV cache is left and {m.engine} refuses to start")
        fact = ("weights_exceed_gpu" if oom else "no_kv_memory") if "no_kv_memory" in facts.messages else \
            ("weights_leave_no_kv" if not oom else "")
        cite = f" ({facts.cite(fact)})" if fact in facts.lines else ""
        out.add("QA301", f"{what}; {fix}{cite}",
                subject=f"{site.key}|weights", file=file, line=line, target=site.label, engine_message=m.refusal)
        for rid in ("QA302", "QA303", "QA304", "QA305"):
            out.skip(rid, "the weights leave no KV cache (QA301)")
        return
    refused = out.refused(site.label)  # QA306 above, or a QA1xx refusal found before the memory rules
    kv_line = (f"the KV cache gets {_gib(m.kv_cache_bytes_per_gpu)} per GPU ({fraction}, less "
               f"{_gib(m.weights_bytes / gpus)} of weights"
               + (f" and {_gib(m.reserve_bytes / gpus)} runtime reserve" if m.reserve_bytes else "") + ")")
    if facts.refuses_context_beyond_kv:
        out.ran_rules("QA302")
        out.skip("QA305", "SGLang's pool warning; vLLM refuses instead (QA302)")
        if not m.starts:
            file, line = site.at("max_model_len", "model")
            fits = m.max_model_len_that_fits or 0
            if "auto_fit_none" in facts.messages and m.refusal is not None and \
                    m.refusal.startswith(_fixed_words(facts.messages["auto_fit_none"])):
                out.add("QA302", f"--max-model-len {m.max_model_len_source or 'auto'}: not one token of {m.kv_dtype} KV "
                        f"cache fits in the {_gib(m.kv_cache_bytes_per_gpu)} per GPU left: vLLM refuses to start "
                        f"({facts.cite('auto_fit')})", subject=f"{site.key}|max-model-len", file=file, line=line,
                        target=site.label, engine_message=m.refusal)
                return
            out.add("QA302", f"one sequence of max-model-len {m.max_model_len:,} tokens ({m.max_model_len_source}) needs "
                    f"{_gib(m.max_model_len_kv_bytes or 0)} of {m.kv_dtype} KV cache per GPU, but {kv_line}: vLLM "
                    f"refuses to start; the longest that fits is {fits:,} tokens (set --max-model-len {fits}"
                    + (", or raise --gpu-memory-utilization" if m.memory_utilization < 1 else "")
                    + f") ({facts.cite('max_len_exceeds_kv')})",
                    subject=f"{site.key}|max-model-len", file=file, line=line, target=site.label,
                    engine_message=m.refusal)
            for rid in ("QA303", "QA304"):
                out.skip(rid, "vLLM refuses to start (QA302)")
            return
    else:
        out.skip("QA302", "vLLM's start-up check; SGLang starts and warns (QA305)")
        if refused:
            out.skip("QA305", refusal_reason(m.engine, refused))
        else:
            out.ran_rules("QA305")
        if not refused and m.kv_capacity_tokens is not None and m.max_model_len is not None and m.kv_capacity_tokens < m.max_model_len:
            file, line = site.at("max_model_len", "gpu_memory_utilization", "model")
            out.add("QA305", f"{kv_line}: {m.kv_capacity_tokens:,} tokens of {m.kv_dtype}, fewer than one request of "
                    f"--context-length {m.max_model_len:,} ({m.max_model_len_source}); SGLang starts, and refuses or "
                    f"truncates longer requests ({facts.cite('pool_below_context')})",
                    subject=f"{site.key}|context-vs-pool", file=file, line=line, target=site.label,
                    engine_message=facts.message("pool_below_context", tokens=m.kv_capacity_tokens,
                                                 context=m.max_model_len))
    if refused:
        for rid in ("QA303", "QA304"):
            out.skip(rid, refusal_reason(m.engine, refused))
        return
    if m.concurrency is None:
        out.skip("QA303", "no workload declared (workload.concurrency / --concurrency): the engine's caps are not a "
                 "workload")
        out.skip("QA304", "no workload declared")
        return
    out.ran_rules("QA303")
    if not m.fits:
        file, line = site.at("concurrency", "max_num_seqs", "model", declared=True)
        basis = f" ({m.kv_tokens_basis})" if m.kv_tokens_basis else ""
        cap = f", up to {m.max_num_seqs_flag} {m.max_num_seqs:,}" if m.max_num_seqs else ""
        out.add("QA303", f"the declared workload, {m.concurrency:,} sequences x {m.kv_tokens_per_sequence:,} "
                f"tokens{basis}, needs {_gib(m.kv_bytes or 0)} of {m.kv_dtype} KV cache; {kv_line}, "
                f"{_gib(m.kv_cache_bytes)} in all: {m.max_concurrency:,} such sequences run at once{cap}, the rest "
                f"queue" + (" (vLLM preempts running sequences that outgrow the cache)" if facts.preempts_when_kv_full else ""),
                subject=f"{site.key}|concurrency", file=file, line=line, target=site.label)
        out.skip("QA304", "the declared workload does not fit at once (QA303)")
        return
    if min_headroom is None:
        out.skip("QA304", "thresholds.min_memory_headroom is not set")
        return
    out.ran_rules("QA304")
    if m.headroom is not None and m.headroom < min_headroom - 1e-12:
        file, line = site.at("concurrency", "gpu_memory_utilization", "max_num_seqs", "model", declared=True)
        out.add("QA304", f"{_gib(m.weights_bytes)} weights + {_gib(m.kv_bytes or 0)} KV ({m.concurrency:,} x "
                f"{m.kv_tokens_per_sequence:,} tokens, {m.kv_dtype}) leave {_gib(m.free_bytes or 0)} free of the "
                f"{_gib(m.budget_bytes)} budget of {plural(gpus, 'GPU')} ({fraction}): {m.headroom:.1%} headroom < "
                f"{min_headroom:.0%} required",
                subject=f"{site.key}|headroom", file=file, line=line, target=site.label)
