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
    for release in QUOTES:
        engine = yaml.safe_load((REPO / "data" / "engines" / f"{release}.yaml").read_text())
        assert QUOTES[release]["wheel"] == engine["source"]["artifact"]
        if "sha256" in engine["source"] and release.startswith("vllm"):
            assert QUOTES[release]["sha256"] == engine["source"]["sha256"]


def test_vllm_facts_are_on_their_lines():
    f = catalog.engine_startup("vllm", "0.33.0")
    assert f"Field(default={f.memory_fraction_default}, gt=0, le=1)" in span("vllm-0.33.0", "memory_fraction_default")
    tiers = span("vllm-0.33.0", "batch_defaults")
    for t in f.batch_defaults:
        if t.min_memory_gib:
            assert f"device_memory >= {t.min_memory_gib:g} * GiB_bytes" in tiers
        assert f"UsageContext.OPENAI_API_SERVER: {t.max_num_seqs}," in tiers
        assert f"UsageContext.OPENAI_API_SERVER: {t.max_num_batched_tokens}," in tiers
    assert '"a100" not in device_name' in tiers and "is_device_capability((12, 1))" not in tiers
    assert f"self.max_num_seqs *= {f.throughput_mode_factor}" in span("vllm-0.33.0", "throughput_mode_factor")
    keys = span("vllm-0.33.0", "max_len_keys")
    assert all(f'"{k}"' in keys for k in f.max_len_keys) and "min(derived_max_model_len, max_len)" in keys
    rope = span("vllm-0.33.0", "max_len_rope_factor")
    assert all(f'"{t}"' in rope for t in f.max_len_unscaled_rope_types)
    assert "max(1, total_num_kv_heads // parallel_config.tensor_parallel_size)" in span("vllm-0.33.0",
                                                                                         "kv_heads_per_gpu")
    assert "math.ceil( init_snapshot.total_memory * cache_config.gpu_memory_utilization" in span(
        "vllm-0.33.0", "requested_memory")


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
