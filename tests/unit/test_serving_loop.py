"""The engine's serving loop (perf/loop.py, engines/loop.py, data/serving.yaml): each release's defaults as
its source states them, and the cycle arithmetic of docs/calibration.md §8."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from quantadvise import catalog
from quantadvise.perf.loop import TERMS, EngineLoop, LoopTerms, cycle, prefill_s, running
from quantadvise.perf.serving import Lengths, serve_loop


def _loop(gpu: str, engine: str, version: str, tp: int = 1):
    return catalog.engine_loop(catalog.get_gpu(gpu), engine, version, tp=tp)


def test_vllm_capture_sizes_on_h100_and_b200():
    # vllm/config/vllm.py (0.33.0) 2464-2469, 2552, 2585-2597: max = min(2 x max_num_seqs, 512 | 1024 on SM100),
    # then min(max_num_batched_tokens, max); sizes [1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16).
    # H100: max_num_seqs 1024 -> min(2048, 512) = 512 -> 3 + 31 (8..248) + 17 (256..512) = 51 sizes.
    h = _loop("h100-sxm", "vllm", "0.33.0").facts
    assert len(h.graph_sizes) == 51 and h.graph_sizes[:4] == (1, 2, 4, 8) and h.graph_max == 512
    assert h.token_budget == 8192 and h.max_seqs == 1024  # vllm/engine/arg_utils.py:2984-2995 (70-160 GiB tier)
    # B200 (SM100, 180 GB >= 160 GiB tier: 16384 tokens): min(2048, 1024) = 1024 -> 3 + 31 + 49 (256..1024) = 83
    b = _loop("b200", "vllm", "0.33.0").facts
    assert len(b.graph_sizes) == 83 and b.graph_max == 1024 and b.token_budget == 16384
    # A100 80GB is excluded from the 70 GiB tier ("a100" in the name): 2048 tokens, 256 sequences,
    # max = min(512, 512, 2048) = 512
    a = _loop("a100-80gb", "vllm", "0.33.0").facts
    assert a.token_budget == 2048 and a.max_seqs == 256 and a.graph_max == 512


def test_sglang_capture_sizes_by_memory_and_tp():
    # sglang/srt/arg_groups/cuda_graph_hook.py:512-515 (0.5.23): [1,2,4,8,12] + range(16,257,8) + range(272,512,16)
    # + range(512, max+1, 32); memory_hook.py: H100 (<90 GB) max_bs 256 at TP < 4, 512 at TP >= 4; B200 512
    h1 = _loop("h100-sxm", "sglang", "0.5.23").facts
    assert len(h1.graph_sizes) == 5 + 31 and h1.graph_max == 256 and h1.token_budget == 8192
    h8 = _loop("h100-sxm", "sglang", "0.5.23", tp=8).facts
    assert len(h8.graph_sizes) == 5 + 31 + 15 + 1 and h8.graph_max == 512
    assert 12 in h1.graph_sizes and not h1.mixed_prefill and h1.overlap  # enable_mixed_chunk False
    assert _loop("b200", "sglang", "0.5.23").facts.token_budget == 16384


def test_padding_and_eager_steps():
    f = _loop("h100-sxm", "vllm", "0.33.0").facts
    assert f.padded(3) == 4 and f.padded(17) == 24 and f.padded(256) == 256 and f.padded(257) == 272
    assert not f.eager(512) and f.eager(513) and f.padded(600) == 600


def test_every_fact_is_cited_to_the_wheel():
    f = _loop("h100-sxm", "vllm", "0.33.0").facts
    assert any("vllm/config/scheduler.py:134" in c for c in f.cites)  # enable_chunked_prefill = True
    assert any("vllm/config/vllm.py:1719" in c for c in f.cites)  # async_scheduling resolved True
    for engine in catalog.engine_names():
        # the newest release (the default) has its own row, read from its wheel (or sdist)
        newest = catalog.engine_versions(engine)[-1]
        assert catalog.loop_release(engine, newest).version == newest
        for version in catalog.engine_versions(engine):
            rel = catalog.loop_release(engine, version)
            assert rel.source and rel.as_of
            assert {"mixed_prefill", "overlap", "graph_ranges", "preemption"} <= set(rel.lines)


def test_a_release_without_a_loop_row_runs_the_nearest_row_and_says_so():
    from quantadvise.catalog.serving import _loop_table
    from quantadvise.engines.versions import version_key

    rows = {e: sorted((r.version for r in _loop_table().releases if r.engine == e), key=version_key)
            for e in ("vllm", "sglang")}
    # vLLM 0.21.0 is on file (data/engines) without a loop row: the newest row not newer than it stands in
    assert "0.21.0" in catalog.engine_versions("vllm") and "0.21.0" not in rows["vllm"]
    below = max((v for v in rows["vllm"] if version_key(v) <= version_key("0.21.0")), key=version_key)
    f = _loop("h100-sxm", "vllm", "0.21.0").facts
    assert f.version == "0.21.0" and f.carried_from == below
    assert f"loop facts of {below}" in f.label()
    assert any(c.startswith(f"serving-loop facts carried from vllm {below}") for c in f.cites)
    # vLLM 0.8.5.post1 is older than every loop row: the oldest row stands in
    assert version_key("0.8.5.post1") < version_key(rows["vllm"][0])
    assert _loop("h100-sxm", "vllm", "0.8.5.post1").facts.carried_from == rows["vllm"][0]
    # vLLM runs async scheduling (the CPU's work hidden under the GPU's) by default from 0.14: not in 0.12.0
    # (vllm/config/scheduler.py:131 `async_scheduling: bool = False`), in 0.14.1 (vllm/config/vllm.py:628)
    assert not _loop("h100-sxm", "vllm", "0.12.0").facts.overlap and _loop("h100-sxm", "vllm", "0.14.1").facts.overlap
    # a release with its own row carries nothing
    own = _loop("h100-sxm", "vllm", rows["vllm"][-1]).facts
    assert own.carried_from is None and "loop facts of" not in own.label()


@pytest.fixture(scope="module")
def sm():
    from quantadvise.catalog.resolve import get_gpu, load_model, load_profiles, resolve_scheme
    from quantadvise.perf.efficiency import resolve
    from quantadvise.perf.step import StepModel

    g = get_gpu("h100-sxm")
    s = resolve_scheme("bf16")
    eff = resolve(load_profiles(True, None, g), (g.id,), ("bf16",))  # the spec sheet: no kernel tables
    return StepModel(load_model("meta-llama/Llama-3.1-8B")[0], s, g, efficiency=eff)


TERMS_X = LoopTerms(id="x", layer_s=20e-6, pass_s=100e-6, seq_s=10e-6, prefill_scale=0.25, source="test",
                    as_of=date(2026, 12, 6))


def test_cycle_is_the_decode_steps_and_the_prefill(sm):
    loop = replace(_loop("h100-sxm", "vllm", "0.33.0"), terms=TERMS_X)
    r, prompt, out, ctx = 24, 1000, 200, 1100
    cy = cycle(sm, loop, concurrency=r, prompt=prompt, output=out, decode_ctx=ctx)
    # 24 is a capture size: no padding. One step = kernels + 32 layers x 20 us + 100 us + 24 x 10 us;
    # 24 x 1000 = 24,000 prefill tokens at 8192 - 24 tokens a step need ceil(24000 / 8168) = 3 steps < 200:
    # vLLM mixes them into decode steps, so no pass of its own; the prefill kernels x 1.25 join the cycle.
    step = sm.decode(r, ctx).time_s + 32 * 20e-6 + 100e-6 + r * 10e-6
    pre = sm.prefill(r, prompt).time_s
    assert cy.step_s(loop.terms) == pytest.approx(step, rel=1e-12)
    assert cy.seconds(loop.terms) == pytest.approx(out * step + pre * 1.25, rel=1e-12)
    p = serve_loop(sm, Lengths(prompt, out, ctx, "continuous"), r, loop)
    assert p.tokens_per_s == pytest.approx(r * out / (out * step + pre * 1.25), rel=1e-12)  # Little's law
    assert p.itl_s == pytest.approx((out * step + pre * 1.25) / out, rel=1e-12)


def test_sglang_runs_prefill_as_its_own_passes(sm):
    loop = replace(_loop("h100-sxm", "sglang", "0.5.23"), terms=TERMS_X)
    cy = cycle(sm, loop, concurrency=24, prompt=1000, output=200, decode_ctx=1100)
    # 24,000 prompt tokens in passes of chunked_prefill_size 8192: ceil(24000 / 8192) = 3 passes, each
    # paying 32 layers x 20 us + 100 us on top of the decode steps
    vllm = cycle(sm, replace(_loop("h100-sxm", "vllm", "0.33.0"), terms=TERMS_X), concurrency=24, prompt=1000,
                 output=200, decode_ctx=1100)
    extra = cy.seconds(TERMS_X) - vllm.seconds(TERMS_X)
    assert extra == pytest.approx(3 * (32 * 20e-6 + 100e-6), rel=1e-9)


def test_padding_prices_the_padded_rows_of_the_linears(sm):
    loop = _loop("h100-sxm", "vllm", "0.33.0")
    cy = cycle(sm, loop, concurrency=17, prompt=0, output=100, decode_ctx=1000)
    # 17 runs the graph of 24: the linears at 24 rows, attention at the 17 real sequences
    pad = sm.decode(24, 1000).linear_s - sm.decode(17, 1000).linear_s
    assert cy.padded == 24 and cy.parts["graph_padding"] == pytest.approx(100 * pad, rel=1e-12)


def test_the_kv_cache_caps_the_running_set(sm):
    from quantadvise.memory.kvcache import sequence_bytes

    f = _loop("h100-sxm", "vllm", "0.33.0").facts
    per = sequence_bytes(sm.arch, None, 1100)  # one sequence of 1000 + 200/2 tokens
    assert running(64, f, sm, 10.5 * per, 1100) == (10, "KV cache")
    assert running(2000, f, sm, None, 1100) == (1024, "max_num_seqs")
    assert running(8, f, sm, 10.5 * per, 1100) == (8, "concurrency")
    # 64 clients on 10 slots: each waits for a slot about 64 / 10 - 1 cycles (in TTFT); the replica delivers
    # the 10 running requests' tokens
    loop = EngineLoop(facts=f, terms=TERMS_X, kv_room_bytes=10.5 * per)
    p = serve_loop(sm, Lengths(1000, 200, 1100, "continuous"), 64, loop)
    ten = serve_loop(sm, Lengths(1000, 200, 1100, "continuous"), 10, replace(loop, kv_room_bytes=None))
    assert p.tokens_per_s == pytest.approx(ten.tokens_per_s, rel=1e-12)
    assert p.loop is not None and p.loop.limited_by == "KV cache" and p.loop.running == 10
    assert p.ttft_s is not None and ten.ttft_s is not None and p.ttft_s > ten.ttft_s + 5 * 0.9 * (ten.e2e_s - ten.ttft_s)


def test_synchronous_batches_prefill_together_then_decode_in_lockstep(sm):
    loop = replace(_loop("h100-sxm", "vllm", "0.33.0"), terms=TERMS_X)
    p = serve_loop(sm, Lengths(1000, 200, 1100, "sync"), 4, loop)
    # TTFT = the batch's prefill x 1.25 + 1 pass (4,000 tokens < 8,192) x (32 x 20 us + 100 us); then 199 steps
    ttft = sm.prefill(4, 1000).time_s * 1.25 + 32 * 20e-6 + 100e-6
    step = sm.decode(4, 1100).time_s + 32 * 20e-6 + 100e-6 + 4 * 10e-6
    assert p.ttft_s == pytest.approx(ttft, rel=1e-12) and p.itl_s == pytest.approx(step, rel=1e-12)
    assert p.tokens_per_s == pytest.approx(4 * 200 / (ttft + 199 * step), rel=1e-12)
    assert prefill_s(sm, loop, 4, 1000) == pytest.approx(ttft, rel=1e-12)


def test_the_summary_says_what_bounds_the_cycle(sm):
    loop = replace(_loop("h100-sxm", "vllm", "0.33.0"), terms=TERMS_X)
    p = serve_loop(sm, Lengths(8000, 100, 8050, "continuous"), 32, loop)
    assert p.loop is not None and p.loop.bound == "prefill"  # 32 x 8000-token prompts per 100 tokens out
    assert sum(p.loop.shares.values()) == pytest.approx(1.0, abs=1e-3)
    q = serve_loop(sm, Lengths(100, 2000, 1100, "continuous"), 1, loop)
    assert q.loop is not None and q.loop.bound == "decode kernels"


def test_shipped_terms_cover_both_engines_and_amd_is_labelled():
    terms = {t.id: t for t in catalog.shipped_terms()}
    assert {"vllm", "sglang", "amd"} <= set(terms)
    assert terms["vllm"].validated and terms["sglang"].validated
    amd = terms["amd"]
    assert not amd.validated and amd.uncertainty is not None and amd.uncertainty >= 0.25
    assert "UNVALIDATED" in amd.label()
    assert all(getattr(t, k) >= 0 for t in terms.values() for k in TERMS)  # every term a cost, never a credit
    mi = catalog.get_gpu("mi300x")
    assert catalog.pick_terms("vllm", mi, "0.33.0").id == "amd"
    assert catalog.pick_terms("sglang", catalog.get_gpu("h200"), "0.5.23").id == "sglang"


def test_a_site_profile_wins_for_its_gpu_and_release():
    site = (LoopTerms(id="s1", engine="vllm", gpu="h100-sxm", version="0.32.0", layer_s=1e-6, source="t",
                      as_of=date(2026, 12, 6)),
            LoopTerms(id="s2", engine="vllm", gpu="h100-sxm", version="0.33.0", layer_s=2e-6, source="t",
                      as_of=date(2026, 12, 6)))
    h = catalog.get_gpu("h100")
    assert catalog.pick_terms("vllm", h, "0.33.0", site).id == "s2"
    assert catalog.pick_terms("vllm", h, "0.31.0", site).id == "s1"  # another release: the site's, still
    assert catalog.pick_terms("vllm", catalog.get_gpu("h200"), "0.33.0", site).id == "vllm"
    assert catalog.pick_terms("sglang", h, "0.5.23", site).id == "sglang"  # the site has no SGLang terms


def test_the_bench_command_is_accepted_by_every_release_on_file():
    # bench_formats: every option the command uses is registered by the release's vllm bench serve /
    # sglang.bench_serving (data/flags/bench/, each option with its add_argument line), one list per release
    from quantadvise.engines.bench import serve_bench_command

    for engine in catalog.engine_names():
        for version in catalog.engine_versions(engine):
            opts = catalog.bench_options(engine, version)
            assert opts is not None and opts.version == version and opts.source.sha256
            assert all(o.source.split(":")[-1].isdigit() for o in opts.options)
            cmd = serve_bench_command(engine, "m", input_len=128, output_len=64, concurrency=8, num_prompts=200,
                                      kv_cache_dtype="fp8", options=opts, gpu="h100-sxm", tp=2, scheme="fp8-dynamic")
            assert "--max-concurrency 8" in cmd and "--num-prompts 200" in cmd
            # the workload's metadata rides in the result where the client can carry it: vllm --metadata
            # (every release on file), sglang --tag (bench_serving registers it from 0.5.4 on)
            assert ("--metadata" in cmd or "--tag" in cmd) == (opts.has("--metadata") or opts.has("--tag"))
