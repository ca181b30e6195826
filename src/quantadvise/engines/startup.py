"""What vLLM and SGLang decide about GPU memory when they start — pure.

The facts (defaults, constants, messages) are rows of ``data/engine_startup.yaml``, one per engine
release, each with the file and line of the wheel it was read from (:class:`StartupFacts`). The
functions here replay the engines' own arithmetic on them:

- vLLM (``vllm/v1/worker/gpu_worker.py:753``): per GPU, the KV cache gets
  ``ceil(total x gpu_memory_utilization) - weights - (activation peak + non-torch memory + CUDA
  graphs)``; it refuses to start when that is <= 0 or cannot hold one sequence of ``max_model_len``
  (``vllm/v1/core/kv_cache_planning.py:50-86``). ``--max-num-seqs`` defaults by GPU memory
  (:func:`vllm_max_num_seqs`).
- SGLang (``sglang/srt/mem_cache/kv_cache_configurator.py:2990-3060``): the KV pool is
  ``memory x mem_fraction_static - weights``; the fraction, when not given, comes from its heuristic
  (:func:`sglang_fraction`), and ``--max-running-requests`` from the pool (:func:`sglang_max_running`).
- both refuse a context length above the one the model's config.json allows (:func:`derived_max_len`).
"""

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any, Literal

from .. import defaults
from ..inputs import finite
from ..results import Strict, record
from ..wording import plural

MiB = 1024**2
GiB = 1024**3


class VllmBatchTier(Strict):
    """One row of vLLM's ``get_batch_defaults`` (the OpenAI API server's usage context)."""

    min_memory_gib: float
    max_num_seqs: int
    max_num_batched_tokens: int
    unless_name_contains: tuple[str, ...] = ()
    unless_capability: tuple[int, ...] = ()


class SglangTier(Strict):
    """One row of SGLang's ``handle_gpu_memory_settings``: chunked prefill and decode CUDA-graph batch."""

    below_memory_mib: float | None
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    cuda_graph_max_bs_tp4: int  # with --tp-size >= 4


class StartupFacts(Strict):
    """One engine release's start-up memory facts (``data/engine_startup.yaml``)."""

    id: str
    engine: Literal["vllm", "sglang"]
    version: str
    source: str
    as_of: date
    memory_fraction_default: float | None = None
    messages: dict[str, str]
    lines: dict[str, str]
    # vLLM
    batch_defaults: tuple[VllmBatchTier, ...] = ()
    throughput_mode_factor: int = 1
    max_len_keys: tuple[str, ...] = ()  # config.json keys the engine derives the longest sequence from
    max_len_pick: Literal["smallest", "first"] = "smallest"  # vLLM: the smallest present; SGLang: the first
    max_len_override_key: str | None = None  # vLLM: model_max_length wins when set
    max_len_unscaled_rope_types: tuple[str, ...] = ()  # RoPE types whose factor is not applied again
    max_len_unscaled_if_rope_has: tuple[str, ...] = ()  # ... nor when the scaling names one of these keys
    max_len_fallback: int = 2048
    # vLLM's extensible KV cache (0.34.0 on): sized after warmup, it keeps this much of each GPU free (GiB, by GPU
    # vendor: the floor of measure_kv_cache_bytes' margin), and --max-model-len auto warns below this many tokens
    kv_margin_gib: dict[str, float] = {}
    auto_fit_short_below: int | None = None
    # SGLang
    fraction_tiers: tuple[SglangTier, ...] = ()
    reserve_base_mib: float = 0
    reserve_mib_per_activation_token: float = 0
    min_activation_tokens: int = 0
    max_prefill_tokens_default: int = 0
    reserve_mib_per_parallel_gpu: float = 0
    reserve_mib_per_decode_graph_bs: float = 0
    reserve_mib_per_prefill_graph_bucket: float = 0
    reserve_mib_mla_prefill_graphs: float = 0
    reserve_floor_mib: float = 0
    reserve_floor_above_memory_mib: float = 0
    prefill_graph_buckets: tuple[tuple[int, int | None, int], ...] = ()
    llama2_prefill_graph_cap: int | None = None
    max_running_requests_per_context: int = 0
    max_running_requests_min: int = 0
    max_running_requests_max: int = 0
    max_running_requests_token_divisor: int = 1

    # -- what the release does, read off the facts on file (the gate and the recommender ask these) --
    @property
    def refuses_context_beyond_kv(self) -> bool:
        """The release refuses to start when one ``--max-model-len`` sequence needs more KV cache than its
        pool holds (vLLM's ``max_len_exceeds_kv``); otherwise it starts and cuts requests at the pool."""
        return "max_len_exceeds_kv" in self.messages

    @property
    def auto_max_model_len(self) -> tuple[str, ...]:
        """The ``--max-model-len`` values that ask the release to fit the longest sequence the KV cache
        holds (vLLM's ``-1`` / ``auto``: the ``auto_fit`` messages), none where it has no such mode."""
        return ("-1", "auto") if "auto_fit_none" in self.messages else ()

    @property
    def caps_running_by_pool(self) -> bool:
        """The release caps running requests from its KV pool (SGLang's ``resolve_max_num_reqs``)."""
        return self.max_running_requests_max > 0

    @property
    def preempts_when_kv_full(self) -> bool:
        """Running sequences that outgrow the KV cache are preempted and recomputed (vLLM's scheduler);
        SGLang's scheduler admits only what its pool holds and queues the rest."""
        return self.engine == "vllm"

    @property
    def reserve_outside_share(self) -> bool:
        """The release subtracts a runtime reserve (activation peak, CUDA graphs) from its memory share
        before the KV cache (vLLM); SGLang's ``mem_fraction_static`` already leaves it out."""
        return default_reserve_gb(self.engine)[0] > 0

    @property
    def sizes_kv_after_warmup(self) -> bool:
        """The release sizes its KV cache again from the memory measured after warmup and CUDA graph capture
        (vLLM 0.34.0's extensible KV cache), checking the reserved capacity before it."""
        return bool(self.kv_margin_gib)

    def kv_margin_bytes(self, vendor: str) -> int:
        """Bytes of each GPU the release keeps free after warmup however large its share (0: none)."""
        return int(self.kv_margin_gib.get(vendor.lower(), 0) * GiB)

    def kv_hint(self, fraction: float, *, after_warmup: bool) -> str:
        """What vLLM's KV cache refusals tell the user to do (``_more_kv_cache_memory_hint``: by whether
        ``fraction`` is below 1.0 and whether the cache was sized after warmup); empty where the release's
        messages carry no such part."""
        if "kv_hint_all_memory" not in self.messages:
            return ""
        graphs = " " + self.message("kv_hint_graphs_after_warmup") if after_warmup else ""
        used_by = self.message("kv_hint_used_by_after_warmup" if after_warmup else "kv_hint_used_by")
        which = "kv_hint_within_share" if fraction < 1.0 else "kv_hint_all_memory"
        return " ".join(self.messages[which].format(used_by=used_by, utilization=fraction, graphs_hint=graphs).split())

    def cite(self, fact: str) -> str:
        """``<engine> <version> <file:line>`` for a fact."""
        return f"{self.engine} {self.version} {self.lines.get(fact, 'source on file').split(' (')[0]}"

    def message(self, which: str, /, **values: Any) -> str:
        """The engine's message ``which``, its fields filled in, on one line."""
        return " ".join(self.messages[which].format(**values).split())


class StartupTable(Strict):
    schema_version: Literal[1]
    releases: tuple[StartupFacts, ...]


def pick_release(table: StartupTable, engine: str, version: str) -> StartupFacts:
    """The row for ``engine`` ``version``: that release, else the newest on file not newer than it, else
    the oldest (the engine data's own fallback, :func:`quantadvise.engines.versions.nearest_version`)."""
    from .versions import nearest_version

    rows = [r for r in table.releases if r.engine == engine]
    if not rows:
        from ..errors import DataError

        raise DataError(f"data/engine_startup.yaml has no release of {engine}")
    chosen = nearest_version((r.version for r in rows), version)
    return next(r for r in rows if r.version == chosen)


def gib(n: float) -> str:
    """Bytes as the engines print them (``format_gib``: GiB to 2 decimals)."""
    return f"{round(n / GiB, 2)}"


# -------------------------------------------------------------------------------------------------
# The model's own limit
# -------------------------------------------------------------------------------------------------


@record
class DerivedMaxLen:
    value: int
    key: str | None  # the config.json key it came from (None: no key, the engine's fallback)
    model_max_length: int | None
    # a RoPE scaling the engine does NOT multiply the length by: (rope type, factor) — vLLM takes a yarn
    # config's max_position_embeddings as already scaled (vllm/config/model.py:2609-2617)
    unapplied_rope: tuple[str, float] | None = None
    overridden: tuple[str, ...] = ()  # config.json keys the command's override flag set (--hf-overrides)
    rope_factor: float | None = None  # the RoPE factor the engine multiplied the length by (None: not scaled)


def apply_overrides(cfg: Mapping[str, Any], overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """config.json with a command's --hf-overrides / --json-model-override-args applied, as the engines
    set them on the Hugging Face config (a dict-valued key merges into a sub-config or a rope dict)."""
    out = dict(cfg)
    for k, v in (overrides or {}).items():
        cur = out.get(k)
        out[k] = {**cur, **v} if isinstance(v, dict) and isinstance(cur, dict) else v
    text = out.get("text_config")
    if isinstance(text, dict) and overrides:  # a text model's keys live in its text_config
        out["text_config"] = {**text, **{k: v for k, v in overrides.items() if k != "text_config"}}
    return out


def _num(v: Any) -> float | None:
    x = finite(v)
    return x if x is not None and x > 0 else None


def derived_max_len(cfg: Mapping[str, Any], facts: StartupFacts,
                    overrides: Mapping[str, Any] | None = None) -> DerivedMaxLen:
    """The longest sequence the engine derives from a config.json: vLLM's smallest length key
    (``model_max_length`` winning) times the RoPE factor (``vllm/config/model.py:2545-2640``), SGLang's
    first length key times its factor (``get_context_length``); the rules are the release's data.
    ``overrides``: the command's --hf-overrides / --json-model-override-args (engines.flags.model_overrides),
    applied first as the engine applies them."""
    from ..model.towers import text_defaults

    cfg = apply_overrides(cfg, overrides)
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    assert isinstance(text, Mapping)
    text = text_defaults(dict(cfg), dict(text))  # the config class's defaults, as the engine's transformers fills them
    keys = facts.max_len_keys or ("max_position_embeddings",)
    best: float | None = None
    key: str | None = None
    for k in keys:
        v = _num(text.get(k))
        if v is None:
            continue
        if facts.max_len_pick == "first":
            best, key = v, k
            break
        if best is None or v < best:
            best, key = v, k
    mml = _num(text.get("model_max_length"))
    if facts.max_len_override_key:
        override = _num(text.get(facts.max_len_override_key))
        if override is not None:
            best, key = override, facts.max_len_override_key
    touched = tuple(sorted(overrides or ()))
    if best is None or best < 1:  # none, or under one token (an override of 0.5): no length the config gives
        return DerivedMaxLen(facts.max_len_fallback, None, None, overridden=touched)
    rope = text.get("rope_scaling") or text.get("rope_parameters")
    model_type = str(text.get("model_type", ""))
    unapplied, applied = None, None
    if isinstance(rope, dict) and "gemma3" not in model_type:
        kind = rope.get("rope_type") or rope.get("type")
        factor = _num(rope.get("factor"))
        unscaled = kind in facts.max_len_unscaled_rope_types or kind == "default" or \
            any(k in rope for k in facts.max_len_unscaled_if_rope_has)
        if factor is not None and not unscaled:
            best *= factor
            applied = factor
        elif factor is not None and factor > 1 and kind != "default":
            unapplied = (str(kind), factor)
    return DerivedMaxLen(int(min(best, 2**62)), key, int(mml) if mml is not None else None, unapplied, touched,
                         applied)


# -------------------------------------------------------------------------------------------------
# Defaults the engines fill in
# -------------------------------------------------------------------------------------------------


def vllm_batch_tier(facts: StartupFacts, gpu_memory_bytes: int, gpu_names: Sequence[str],
                    capability: int | None) -> VllmBatchTier | None:
    names = " ".join(gpu_names).lower()
    for tier in facts.batch_defaults:
        if gpu_memory_bytes < tier.min_memory_gib * GiB:
            continue
        if any(s in names for s in tier.unless_name_contains) or (capability in tier.unless_capability):
            continue
        return tier
    return None


def vllm_max_num_seqs(facts: StartupFacts, gpu_memory_bytes: int, gpu_names: Sequence[str], capability: int | None,
                      *, throughput: bool = False, max_num_batched_tokens: int | None = None) -> tuple[int, str] | None:
    """(vLLM's default --max-num-seqs for ``vllm serve`` on this GPU, how it was derived)."""
    tier = vllm_batch_tier(facts, gpu_memory_bytes, gpu_names, capability)
    if tier is None:
        return None
    n = tier.max_num_seqs
    why = (f"{n} on a GPU with >= {tier.min_memory_gib:g} GiB" if tier.min_memory_gib > 0 else
           f"{n}, its tier for GPUs below the larger ones (and A100s)")
    if throughput:
        n *= facts.throughput_mode_factor
        why += f", x{facts.throughput_mode_factor} for --performance-mode throughput"
    batched = max_num_batched_tokens
    if batched is None:
        batched = tier.max_num_batched_tokens * (facts.throughput_mode_factor if throughput else 1)
    if batched < n:
        n, why = batched, f"{why}, capped at --max-num-batched-tokens {batched}"
    return n, f"vLLM {facts.version}'s default ({why}; {facts.lines.get('batch_defaults', '')})"


@record
class SglangFraction:
    fraction: float
    reserved_mib: float
    chunked_prefill_size: int
    decode_max_bs: int
    prefill_buckets: int
    explanation: str


def prefill_bucket_count(facts: StartupFacts, max_bs: int) -> int:
    """How many prefill CUDA graphs SGLang captures up to ``max_bs`` tokens."""
    n = 0
    for first, last, step in facts.prefill_graph_buckets:
        top = max_bs if last is None else min(last, max_bs)
        if top >= first:
            n += (top - first) // step + 1
    return n


def sglang_fraction(facts: StartupFacts, gpu_memory_bytes: int, *, tp: int, pp: int, mla: bool,
                    chunked_prefill_size: int | None = None, max_prefill_tokens: int | None = None,
                    decode_max_bs: int | None = None, max_running_requests: int | None = None,
                    decode_graphs: bool = True, prefill_graphs: bool = True, model_path: str = "") -> SglangFraction:
    """SGLang's default ``mem_fraction_static`` (``memory_hook.py:281-327``) for a standard CUDA
    deployment (no data-parallel attention, disaggregation or speculative decoding)."""
    gpu_mib = gpu_memory_bytes / MiB
    tier = next(t for t in facts.fraction_tiers if t.below_memory_mib is None or gpu_mib < t.below_memory_mib)
    chunk = tier.chunked_prefill_size if chunked_prefill_size is None else chunked_prefill_size
    bs_default = decode_max_bs is None
    bs = (tier.cuda_graph_max_bs_tp4 if tp >= 4 else tier.cuda_graph_max_bs) if bs_default else int(decode_max_bs or 0)
    if bs_default and max_running_requests is not None and bs > max_running_requests:
        bs = max_running_requests  # memory_hook.py:182-188
    activation_tokens = max(chunk if chunk > 0 else (max_prefill_tokens or facts.max_prefill_tokens_default),
                            facts.min_activation_tokens)
    reserved = facts.reserve_base_mib + activation_tokens * facts.reserve_mib_per_activation_token
    reserved += tp * pp * facts.reserve_mib_per_parallel_gpu
    graphs = 0.0
    if decode_graphs:
        graphs += bs * facts.reserve_mib_per_decode_graph_bs
    buckets = 0
    if prefill_graphs and chunk > 0:
        if mla:
            graphs += facts.reserve_mib_mla_prefill_graphs
        else:
            top = chunk
            if facts.llama2_prefill_graph_cap and "llama-2" in model_path.lower():
                top = min(top, facts.llama2_prefill_graph_cap)
            buckets = prefill_bucket_count(facts, top)
            graphs += buckets * facts.reserve_mib_per_prefill_graph_bucket
    reserved += graphs
    floor = ""
    if gpu_mib > facts.reserve_floor_above_memory_mib and reserved < facts.reserve_floor_mib:
        reserved, floor = facts.reserve_floor_mib, f", raised to the {facts.reserve_floor_mib:,.0f} MiB floor"
    fraction = round((gpu_mib - reserved) / gpu_mib, 3)
    why = (f"SGLang {facts.version}'s heuristic: ({gpu_mib:,.0f} - {reserved:,.0f}) / {gpu_mib:,.0f} MiB, reserving "
           f"{facts.reserve_base_mib:g} + {activation_tokens:,} activation tokens x {facts.reserve_mib_per_activation_token:g}"
           f" + {plural(tp * pp, 'GPU')} x {facts.reserve_mib_per_parallel_gpu:g} + {graphs:,.0f} MiB of CUDA graphs "
           f"(decode max batch {bs if decode_graphs else 0}, {buckets} prefill graphs){floor}; "
           f"{facts.lines.get('reserved_mem', '')}")
    return SglangFraction(fraction, reserved, chunk, bs, buckets, why)


@record
class DefaultFraction:
    """The memory fraction an engine release takes when no flag sets it."""

    fraction: float
    source: str  # where it comes from, as the gate words it (SGLang: the heuristic with its numbers)
    brief: str  # where it comes from, in a phrase: "vLLM 0.33.0's default --gpu-memory-utilization, <file:line>"


def default_fraction(facts: StartupFacts, gpu_memory_bytes: int, *, tp: int, pp: int = 1, mla: bool = False,
                     model_path: str = "", **sglang: Any) -> DefaultFraction:
    """The fraction of each GPU's memory ``facts``' engine release takes when neither its flag nor a
    declaration sets it: vLLM's ``--gpu-memory-utilization`` default of that release, SGLang's
    ``mem_fraction_static`` heuristic for this GPU, parallelism and model (:func:`sglang_fraction`;
    ``sglang`` passes its other keywords, the flags the command gives). The one derivation ``check``
    (``gate.target.deployed_workload``) and ``recommend`` (``advisor.fit.engine_memory``) share."""
    if facts.engine == "sglang":
        h = sglang_fraction(facts, gpu_memory_bytes, tp=tp, pp=pp, mla=mla, model_path=model_path, **sglang)
        mib = gpu_memory_bytes / MiB
        par = f"TP {tp}" + (f" x PP {pp}" if pp > 1 else "")
        return DefaultFraction(h.fraction, h.explanation,
                               f"SGLang {facts.version}'s default --mem-fraction-static for this GPU and {par}: "
                               f"({mib:,.0f} - {h.reserved_mib:,.0f} MiB reserved) / {mib:,.0f} MiB, "
                               f"{facts.lines.get('reserved_mem', '').split(' (')[0]}")
    if facts.memory_fraction_default is None:
        from ..errors import DataError

        raise DataError(f"data/engine_startup.yaml: {facts.id} has no memory_fraction_default")
    line = facts.lines.get("memory_fraction_default", "").split(" (")[0]
    # the value is said where the share is not it (a release that keeps a margin free: usable_fraction)
    value = f" {facts.memory_fraction_default:g}" if facts.sizes_kv_after_warmup else ""
    return DefaultFraction(facts.memory_fraction_default, f"vLLM {facts.version}'s default ({line})",
                           f"vLLM {facts.version}'s default --gpu-memory-utilization{value}" + (f", {line}" if line else ""))


def usable_fraction(facts: StartupFacts, fraction: float, gpu_memory_bytes: int, vendor: str) -> float:
    """The share of each GPU the release's KV cache sizing reaches at ``fraction``: the fraction itself, but where
    the release keeps a margin free after warmup (vLLM 0.34.0's extensible KV cache: ``min(requested - used, free
    - margin)``, ``kv_margin``) no more than the GPU's memory less that margin (the default 1.0 included)."""
    margin = facts.kv_margin_bytes(vendor)
    if margin <= 0 or gpu_memory_bytes <= margin:
        return fraction
    return min(fraction, (gpu_memory_bytes - margin) / gpu_memory_bytes)


def margin_phrase(facts: StartupFacts, vendor: str) -> str:
    """``less the 1 GiB vLLM 0.34.0 keeps free after warmup, <file:line>``: why :func:`usable_fraction` is below
    the flag (empty where the release keeps no margin)."""
    margin = facts.kv_margin_bytes(vendor)
    if margin <= 0:
        return ""
    return (f"less the {margin / GiB:g} GiB vLLM {facts.version} keeps free after warmup, "
            f"{facts.lines.get('kv_margin', '').split(' (')[0]}")


def share_of_gpu(facts: StartupFacts, gpu_memory_bytes: int, vendor: str, *, tp: int, mla: bool, model_path: str,
                 fraction: float | None = None, fraction_from: str = "", **sglang: Any) -> tuple[float, str]:
    """(the share of each GPU the release's KV cache sizing reaches, where it comes from): ``fraction`` (a flag
    the user gave, said by ``fraction_from``) or the release's default (:func:`default_fraction`), capped by the
    margin it keeps free after warmup (:func:`usable_fraction`, :func:`margin_phrase` added to the words). The
    one derivation ``recommend`` (``advisor.fit.engine_memory``), ``size --gpu`` / ``roofline``
    (``catalog.resolve.engine_share``) and ``validate --e2e`` share."""
    if fraction is None:
        d = default_fraction(facts, gpu_memory_bytes, tp=tp, mla=mla, model_path=model_path, **sglang)
        fraction, fraction_from = d.fraction, d.brief
    usable = usable_fraction(facts, fraction, gpu_memory_bytes, vendor)
    if usable < fraction:
        return usable, f"{fraction_from}, {margin_phrase(facts, vendor)}"
    return fraction, fraction_from


def default_reserve_gb(engine: str) -> tuple[float, str]:
    """(GiB per GPU, why) the engine uses outside its weights and KV cache when no reserve is given:
    vLLM subtracts its activation peak, non-torch memory and CUDA graphs from its share
    (``available_kv_memory``; quantadvise's estimate, ``defaults.RESERVE_GB``); SGLang's
    ``mem_fraction_static`` has already left them out, so nothing more comes off its pool."""
    if engine == "sglang":
        return 0.0, "inside SGLang's mem-fraction-static"
    return defaults.RESERVE_GB, "quantadvise's estimate of vLLM's activation peak, non-torch memory and CUDA graphs"


def sglang_max_running(facts: StartupFacts, tokens: int, context_len: int, requested: int | None) -> int:
    """``--max-running-requests`` as SGLang resolves it from the KV pool (``resolve_max_num_reqs``)."""
    cap = tokens // max(facts.max_running_requests_token_divisor, 1)
    if requested is not None:
        return max(0, min(max(1, requested), cap))
    est = int(tokens / max(context_len, 1) * facts.max_running_requests_per_context)
    est = max(min(est, facts.max_running_requests_max), facts.max_running_requests_min)
    return max(0, min(est, cap))


# -------------------------------------------------------------------------------------------------
# One GPU's share of the KV cache
# -------------------------------------------------------------------------------------------------


# the fact has one home, kvcache (size, recommend, roofline and check all read it); importable from here too
from ..memory.kvcache import kv_share_per_gpu as kv_share_per_gpu  # noqa: E402


def longest_that_fits(seq_bytes: Any, room: float, upper: int) -> int:
    """The longest sequence whose KV (``seq_bytes(n)``, growing with n) fits in ``room`` (vLLM's
    ``estimate_max_model_len``: a binary search; 0 when not even one token fits)."""
    if room <= 0 or seq_bytes(1) > room:
        return 0
    lo, hi = 1, max(1, upper)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if seq_bytes(mid) <= room:
            lo = mid
        else:
            hi = mid - 1
    return lo
