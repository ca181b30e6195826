"""data/engine_startup.yaml: every fact is on the wheel line it cites.

The cited lines are quoted verbatim in tests/fixtures/engine_quotes/startup.json (written by
tools/quote_startup_lines.py from the wheels, stamped with their sha256); these tests read the
facts back out of the quotes. With ``ENGINE_WHEELS_DIR`` pointing at a folder holding the wheels,
the quotes themselves are checked against the wheels (skipped offline by default).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from quantadvise import catalog
from tests.data.wheels import line_in, open_artifact, wheel_or_skip

REPO = Path(__file__).resolve().parents[2]
QUOTES = json.loads((REPO / "tests" / "fixtures" / "engine_quotes" / "startup.json").read_text())
CITE = re.compile(r"([\w./-]+\.py):(\d+)(?:-(\d+))?")


def span(release: str, fact: str) -> str:
    """The lines a fact cites, joined."""
    facts = catalog.engine_startup(*release.split("-", 1))
    quotes = QUOTES[release]["lines"]
    out = []
    for m in CITE.finditer(facts.lines[fact]):
        first, last = int(m.group(2)), int(m.group(3) or m.group(2))
        out += [quotes[f"{m.group(1)}:{i}"] for i in range(first, last + 1)]
    return " ".join(out)


def test_the_quotes_come_from_the_wheels_the_engine_data_names():
    doc = yaml.safe_load((REPO / "data" / "engine_startup.yaml").read_text())
    releases = {r["id"]: r for r in doc["releases"]}
    assert sorted(QUOTES) == sorted(releases)  # every release on file is quoted
    for release in QUOTES:
        engine = yaml.safe_load((REPO / "data" / "engines" / f"{release}.yaml").read_text())
        src, quotes = engine["source"], QUOTES[release]
        if src["artifact"].endswith(".whl"):
            assert quotes["wheel"] == src["artifact"]
            if "sha256" in src and release.startswith("vllm"):
                assert quotes["sha256"] == src["sha256"]
            continue
        # the engine data was extracted from the release's sdist (vLLM 0.34.0), whose Python sources are the wheel's:
        # the start-up facts were read from the wheel their own source names, the one the release's kernel table
        # was read from (same file, same sha256; tests/data/test_kernel_sources.py finds every line the engine data
        # quotes in it)
        assert src["artifact"] == f"{src['package']}-{src['version']}.tar.gz", release
        assert quotes["wheel"].startswith(f"{src['package']}-{src['version']}-") and quotes["wheel"].endswith(".whl")
        assert quotes["wheel"] in releases[release]["source"]
        sha = quotes["sha256"]
        assert f"sha256 {sha[:8]}...{sha[-2:]}" in releases[release]["source"]
        kernels = yaml.safe_load((REPO / "data" / "kernels" / f"{release}.yaml").read_text())["source"]
        assert (kernels["artifact"], kernels["sha256"]) == (quotes["wheel"], sha)


@pytest.mark.parametrize("release", ["vllm-0.33.0", "vllm-0.34.0"])
def test_vllm_facts_are_on_their_lines(release):
    f = catalog.engine_startup(*release.split("-", 1))
    assert f.id == release
    if release == "vllm-0.33.0":
        assert f"Field(default={f.memory_fraction_default}, gt=0, le=1)" in span(release, "memory_fraction_default")
        assert "math.ceil( init_snapshot.total_memory * cache_config.gpu_memory_utilization" in span(
            release, "requested_memory")
    tiers = span(release, "batch_defaults")
    for t in f.batch_defaults:
        if t.min_memory_gib:
            assert f"device_memory >= {t.min_memory_gib:g} * GiB_bytes" in tiers
        assert f"UsageContext.OPENAI_API_SERVER: {t.max_num_seqs}," in tiers
        assert f"UsageContext.OPENAI_API_SERVER: {t.max_num_batched_tokens}," in tiers
    assert '"a100" not in device_name' in tiers and "is_device_capability((12, 1))" not in tiers
    assert f"self.max_num_seqs *= {f.throughput_mode_factor}" in span(release, "throughput_mode_factor")
    assert "self.max_num_seqs = min(self.max_num_seqs, self.max_num_batched_tokens)" in span(release,
                                                                                            "max_num_seqs_capped")
    keys = span(release, "max_len_keys")
    assert all(f'"{k}"' in keys for k in f.max_len_keys) and "min(derived_max_model_len, max_len)" in keys
    rope = span(release, "max_len_rope_factor")
    assert all(f'"{t}"' in rope for t in f.max_len_unscaled_rope_types)
    assert "max(1, total_num_kv_heads // parallel_config.tensor_parallel_size)" in span(release, "kv_heads_per_gpu")
    assert "result.non_kv_cache_memory = result.total_consumed + result.transient_peak_headroom" in span(
        release, "non_kv_cache_memory")


def test_vllm_034_has_its_own_start_up_facts():
    """vLLM 0.34.0, the default release, is checked with its own row, not 0.33.0's (the closest older on file
    before it had one); a later release takes it as the closest older."""
    f = catalog.engine_startup("vllm", "0.34.0")
    assert f.version == "0.34.0" and catalog.engine_startup("vllm", "0.35.0").version == "0.34.0"
    assert catalog.engine_startup("vllm", "0.33.0").version == "0.33.0"
    # The default --gpu-memory-utilization: the field defaults to None (vllm/config/cache.py:216) and
    # resolved_gpu_memory_utilization (:494-501) returns it, else 1.0 with the extensible KV cache, else
    # DEFAULT_GPU_MEMORY_UTILIZATION 0.92 (:186); the extensible KV cache is on when unset wherever it is supported
    # (vllm/config/vllm.py:3252-3254), which is CUDA and ROCm (:3201-3202). So 1.0, not 0.33.0's 0.92.
    resolved = span("vllm-0.34.0", "memory_fraction_default")
    assert ("if self.gpu_memory_utilization is not None: return self.gpu_memory_utilization "
            f"if self.enable_extensible_kv_cache: return {f.memory_fraction_default} "
            "return self.DEFAULT_GPU_MEMORY_UTILIZATION") in resolved
    assert "gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)" in resolved
    assert "DEFAULT_GPU_MEMORY_UTILIZATION: ClassVar[float] = 0.92" in resolved
    assert "if requested is None: enabled = unsupported is None" in span("vllm-0.34.0", "extensible_kv_cache")
    assert ('if not current_platform.is_cuda_alike(): unsupported = "it is only supported on CUDA and ROCm"'
            in span("vllm-0.34.0", "extensible_kv_cache"))
    assert ("gpu_memory_utilization = cache_config.resolved_gpu_memory_utilization requested_memory = "
            "math.ceil(init_snapshot.total_memory * gpu_memory_utilization)") == span("vllm-0.34.0", "requested_memory")
    # The margin: KV_CACHE_MARGIN_FLOOR_BYTES = (3 if current_platform.is_rocm() else 1) << 30 (1 GiB on CUDA, 3 on
    # ROCm), taken off the device in min(requested - used, headroom - margin) (extensible_kv_cache.py:613-618).
    margin = span("vllm-0.34.0", "kv_margin")
    floor_ = f"KV_CACHE_MARGIN_FLOOR_BYTES = ({f.kv_margin_gib['amd']:g} if current_platform.is_rocm() else "
    assert floor_ + f"{f.kv_margin_gib['nvidia']:g}) << 30" in margin
    assert "available = min(requested_memory - non_kv_used, headroom - margin)" in margin
    assert "margin = max(margin_floor_bytes, int(transient_peak_bytes * margin_fraction))" in margin
    assert f.kv_margin_bytes("nvidia") == 1 << 30 and f.kv_margin_bytes("AMD") == 3 << 30
    assert f"AUTO_FIT_SHORT_MAX_MODEL_LEN = {f.auto_fit_short_below}" == span("vllm-0.34.0", "auto_fit_short_below")
    # before warmup no CUDA graph estimate comes off (profile_cudagraph_memory returns 0 with the extensible cache)
    assert "if self.cache_config.enable_extensible_kv_cache:" in span("vllm-0.34.0", "available_kv_memory")
    assert "_more_kv_cache_memory_hint(vllm_config, after_warmup=True)," in span("vllm-0.34.0", "kv_after_warmup")
    assert "_auto_fit_max_model_len( builder, vllm_config, groups_per_worker, available_memory, after_warmup=True" in \
        span("vllm-0.34.0", "auto_fit_after_warmup")
    # weights larger than the GPU: loaded with no handler, so no message of vLLM's is on file
    assert "weights_exceed_gpu" not in f.messages and "except" not in span("vllm-0.34.0", "weights_exceed_gpu")


def test_the_sizing_helpers_keyword_default_is_the_newest_vllms_own():
    """defaults.MEMORY_UTILIZATION is only the pure sizing helpers' keyword default (every command passes the
    engine release's own figure); it may not drift from the newest bundled vLLM's default."""
    from quantadvise import defaults

    newest = catalog.get_engine("vllm")
    assert defaults.MEMORY_UTILIZATION == catalog.engine_startup("vllm", newest.version).memory_fraction_default


@pytest.mark.parametrize(("fact", "key"), [("no_kv_memory", "no_kv_memory"), ("max_len_exceeds_kv", "max_len_exceeds_kv"),
                                           ("max_len_exceeds_model", "max_len_exceeds_model"),
                                           ("weights_exceed_gpu", "weights_exceed_gpu")])
def test_vllm_messages_are_the_engines_words(fact, key):
    f = catalog.engine_startup("vllm", "0.33.0")
    quoted = re.sub(r'"\s*f?"', "", span("vllm-0.33.0", fact))  # the f-string pieces, joined
    template = f.messages[key].split("{")[0].strip()  # the fixed words before the first value
    assert template in quoted, (template, quoted[:300])


def literals(release: str, fact: str) -> str:
    """The string literals of the lines a fact cites, concatenated as Python concatenates adjacent ones (an
    f-string's fields kept as written)."""
    return "".join(re.findall(r'f?"((?:[^"\\]|\\.)*)"', span(release, fact)))


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_vllm_034_messages_are_the_engines_words_in_full():
    """Each 0.34.0 message is the engine's string with its fields renamed to the file's placeholders
    (format_gib(needed_memory) -> needed_gib ...); the auto-fit lines are logger formats (%d, %s) filled as
    _auto_fit_max_model_len fills them on CUDA."""
    f = catalog.engine_startup("vllm", "0.34.0")
    m = {k: one_line(v) for k, v in f.messages.items()}
    names = {"{format_gib(needed_memory)}": "{needed_gib}", "{format_gib(available_memory)}": "{available_gib}",
             "{estimated_msg}": "{estimate}", "{estimated_max_len}": "{fits}"}

    def renamed(text: str) -> str:
        for engine_field, placeholder in names.items():
            text = text.replace(engine_field, placeholder)
        return one_line(text)

    assert renamed(literals("vllm-0.34.0", "no_kv_memory")) == m["no_kv_memory"]
    checked = renamed(literals("vllm-0.34.0", "max_len_exceeds_kv"))
    assert checked == m["max_len_estimate"] + " " + m["max_len_exceeds_kv"]  # the estimate, then the refusal
    hint = renamed(literals("vllm-0.34.0", "kv_hint"))
    for key in ("kv_hint_within_share", "kv_hint_all_memory", "kv_hint_used_by", "kv_hint_used_by_after_warmup",
                "kv_hint_graphs_after_warmup"):
        assert m[key] in hint, key
    auto = literals("vllm-0.34.0", "auto_fit")
    gpu = "GPU"
    assert 'return "GPU" if device_type == "cuda"' in span("vllm-0.34.0", "kv_cache_device_name") and '{format_gib(limiting_worker_mem)} GiB {_kv_cache_device_name(vllm_config)}' in auto
    left = "{kv_cache_memory} left for the KV cache after CUDA graph capture and warmup"
    assert left in auto
    left = left.replace("{kv_cache_memory}", "{available_gib} GiB " + gpu)
    reduced = "--max-model-len auto reduced max_model_len from %d to %d (%s)."
    assert reduced in auto
    assert m["auto_fit_reduced"] == reduced.replace("%d", "{derived}", 1).replace("%d", "{fits}", 1).replace("%s", left)
    short = "--max-model-len auto reduced max_model_len from %d to %d (%s). Requests longer than %d tokens will be " \
            "rejected. %s"
    assert short in auto
    assert m["auto_fit_reduced_short"] == short.replace("%d", "{derived}", 1).replace("%d", "{fits}").replace(
        "%s", left, 1).replace("%s", "{hint}")
    assert m["auto_fit_short_hint_within_share"] in auto and m["auto_fit_short_hint_all_memory"] in auto
    kept = ("Auto-fit max_model_len: using max_model_len=%d, which fits in the KV cache memory left after CUDA graph "
            "capture and warmup (%s).")
    assert kept in auto
    assert m["auto_fit_kept"] == kept.replace("%d", "{fits}").replace("%s", "{available_gib} GiB " + gpu)
    assert "Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. {hint}" \
        in auto and m["auto_fit_none"].endswith("{hint}")
    assert m["auto_fit_none_after_warmup_hint"] in auto
    assert one_line(literals("vllm-0.34.0", "max_len_exceeds_model")) == one_line(
        literals("vllm-0.33.0", "max_len_exceeds_model"))  # unchanged, lines moved
    assert f.messages["max_len_exceeds_model"] == catalog.engine_startup("vllm", "0.33.0").messages[
        "max_len_exceeds_model"]


def test_sglang_facts_are_on_their_lines():
    f = catalog.engine_startup("sglang", "0.5.23")
    tiers = span("sglang-0.5.23", "fraction_tiers")
    for t in f.fraction_tiers:
        if t.below_memory_mib is not None:
            assert f"gpu_mem < {t.below_memory_mib / 1024:g} * 1024" in tiers
        assert f"chunked_prefill_size={t.chunked_prefill_size}," in tiers
        assert f"max_bs = {t.cuda_graph_max_bs}" in tiers
    reserved = span("sglang-0.5.23", "reserved_mem")
    assert f"reserved_mem = {f.reserve_base_mib:g}" in reserved
    assert f"activation_tokens * {f.reserve_mib_per_activation_token:g}" in reserved
    assert f"max(cfg.chunked_prefill_size, {f.min_activation_tokens})" in reserved
    assert "cfg.tp_size * cfg.pp_size / 8 * 1024" in reserved and f.reserve_mib_per_parallel_gpu == 1024 / 8
    assert f"max(reserved_mem, {f.reserve_floor_mib / 1024:g} * 1024)" in reserved
    assert f"gpu_mem > {f.reserve_floor_above_memory_mib / 1024:g} * 1024" in reserved
    assert "round((gpu_mem - reserved_mem) / gpu_mem, 3)" in reserved
    graphs = span("sglang-0.5.23", "cuda_graph_reserve")
    assert f"max_bs * {f.reserve_mib_per_decode_graph_bs:g}" in graphs
    assert f"len(prefill_cuda_graph_config.bs) * {f.reserve_mib_per_prefill_graph_bucket:g}" in graphs
    assert f"{f.reserve_mib_mla_prefill_graphs / 1024:g} * 1024" in graphs
    buckets = span("sglang-0.5.23", "prefill_graph_buckets")
    for first, last, step in f.prefill_graph_buckets:
        stops = ["max_bs + 1"] if last is None else [str(last + 1), f"{last} + 1"]  # `1024 + 1` in the source
        assert any(f"list(range({first}, {stop}, {step}))" in buckets for stop in stops), (first, last)
    assert f"] = {f.max_prefill_tokens_default}" in span("sglang-0.5.23", "max_prefill_tokens_default")
    running = span("sglang-0.5.23", "max_running_requests")
    assert f"int(token_capacity / self.model_config.context_len * {f.max_running_requests_per_context})" in running
    assert (f"max(min(estimated, {f.max_running_requests_max}), {f.max_running_requests_min})" in running
            and f"token_capacity // {f.max_running_requests_token_divisor}" in running)
    keys = span("sglang-0.5.23", "max_len_keys")
    assert all(f'"{k}"' in keys for k in f.max_len_keys) and '== "llama3"' in keys
    assert '"original_max_position_embeddings" in rope_scaling' in keys


@pytest.mark.parametrize(("fact", "key"), [("weights_leave_no_kv", "weights_leave_no_kv"),
                                           ("pool_below_context", "pool_below_context"),
                                           ("context_exceeds_model", "context_exceeds_model")])
def test_sglang_messages_are_the_engines_words(fact, key):
    f = catalog.engine_startup("sglang", "0.5.23")
    # the f-string pieces joined; `reason` is "User-specified" for the served model (model_config.py:1296)
    quoted = re.sub(r'"\s*f?"', "", span("sglang-0.5.23", fact)).replace("{reason}", "User-specified")
    template = f.messages[key].split("{")[0].strip()
    assert template in quoted, (template, quoted[:300])


@pytest.mark.parametrize("release", sorted(QUOTES))
def test_quotes_match_the_wheel(release):
    """Offline by default: set ENGINE_WHEELS_DIR to a folder holding the downloaded wheels."""
    wheel = wheel_or_skip(QUOTES[release]["wheel"])
    with open_artifact(wheel) as z:
        for key, text in QUOTES[release]["lines"].items():
            path, _, ln = key.rpartition(":")
            assert line_in(z, path, ln) == text, key
