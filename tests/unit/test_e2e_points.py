"""The serving-loop model against the published end-to-end points (data/validation/e2e_points.yaml;
docs/calibration.md §9): issue 26's bar, recomputed from the bundled points and terms on every run."""

from __future__ import annotations

import statistics
from datetime import date

import pytest

from quantadvise import catalog
from quantadvise.api.e2e import points_table, validate_e2e
from quantadvise.calibration.e2e import BAR, GATED, band


@pytest.fixture(scope="module")
def report():
    return validate_e2e()


def test_every_band_is_within_ten_percent_and_no_worse_than_aiconfigurator(report):
    assert report.passed, report.verdict
    rows = {(b.set, b.band): b for b in report.bands}
    for name in GATED:
        b = rows[("all", name)]
        assert b.points >= 100  # each band holds enough points to mean something
        assert b.median_abs_error is not None and b.median_abs_error <= BAR
        assert b.median_abs_error_on_aic_points is not None and b.aic_median_abs_error is not None
        assert b.median_abs_error_on_aic_points <= b.aic_median_abs_error


def test_the_medians_are_the_points_own(report):
    # recomputed here from the per-point errors: predicted / measured - 1, the median of its absolute value
    for name in GATED:
        # the pairs-only points (S8: single-stream runs of vLLM's V0 engine) are in the speed-up pairs, not the bands
        errs = [abs(p.predicted / p.measured - 1) for p in report.points if p.band == name and not p.pairs_only]
        row = next(b for b in report.bands if b.set == "all" and b.band == name)
        assert row.median_abs_error == pytest.approx(statistics.median(errs), rel=1e-12)
        held = [abs(p.error) for p in report.points if p.band == name and p.heldout and not p.pairs_only]
        hrow = next(b for b in report.bands if b.set == "held-out" and b.band == name)
        assert hrow.median_abs_error == pytest.approx(statistics.median(held), rel=1e-12)


def test_a_third_is_held_out_by_source_not_by_point(report):
    table = points_table()
    held = set(table.heldout)
    assert sum(p.heldout for p in report.points) >= len(report.points) / 3
    by_group: dict[str, set[bool]] = {}
    for p in report.points:
        by_group.setdefault(p.group, set()).add(p.heldout)
    assert all(len(v) == 1 for v in by_group.values())  # a group is wholly fitted or wholly held out
    from quantadvise import catalog

    fitted_on = {g for t in catalog.shipped_terms() for g in t.fitted_on}
    assert not fitted_on & held  # the shipped terms never saw a held-out source


def test_every_point_names_its_source_and_date():
    table = points_table()
    ids = {s.id for s in table.sources}
    # 943 points of S1-S7; S8 adds 515 rows of the Red Hat AI cards (196 priced, pairs only)
    assert len(table.points) == 943 + 515
    assert sum(p.source == "S8" and not p.skip for p in table.points) == 196
    assert all(p.pairs_only for p in table.points if p.source == "S8")
    for p in table.points:
        assert p.source in ids and p.locator and p.as_of
        assert p.group == p.source or p.group.startswith(p.source + "/")


def test_the_bands_are_the_issue_s():
    assert [band(c) for c in (1, 4, 5, 8, 32, 33, 64, 256, 257)] == [
        "1-4", "1-4", "8-32", "8-32", "8-32", "64-256", "64-256", "64-256", ">256"]


def test_amd_is_priced_but_never_confidently(report):
    amd = [p for p in report.points if p.gpu.startswith("mi")]
    assert amd
    # before the loop, MI300X was predicted about 2-4x the measured speed (docs/calibration.md §9); its
    # terms are fitted on S4 and labelled unvalidated
    assert all(p.predicted / p.measured < 3.0 for p in amd)
    assert any("UNVALIDATED" in t for t in report.terms)


def test_each_nvidia_loop_band_is_the_68th_percentile_of_its_held_out_errors(report):
    # The band the serving loop adds to an absolute figure (data/serving_terms.yaml `uncertainty`, perf.uncertainty)
    # recomputed here from the held-out points of that engine on NVIDIA GPUs: the 68th percentile of |error| (one
    # sigma, the percentile of the kernels' bands), index int(0.68 n) of the sorted errors.
    from quantadvise.catalog.serving import shipped_terms

    amd = {"mi300x", "mi325x", "mi355x"}
    terms = {t.id: t for t in shipped_terms()}
    for engine in ("vllm", "sglang"):
        errs = sorted(abs(p.error) for p in report.points
                      if p.heldout and p.engine == engine and p.gpu not in amd and not p.pairs_only)
        assert len(errs) >= 100
        p68 = errs[int(0.68 * len(errs))]
        assert terms[engine].uncertainty == pytest.approx(p68, abs=5e-4), engine
        # the held-out median the terms print (perf.loop, `validate --bench`) is these points' too: re-written by
        # `tools/fit_serving.py --keep-terms` whenever the kernel pricing moves (12.7% stood for vLLM's 13.2%)
        assert terms[engine].heldout_median_error == pytest.approx(statistics.median(errs), abs=5e-4), engine
        # about two held-out points in three lie inside a one-sigma band
        inside = sum(e <= terms[engine].uncertainty for e in errs) / len(errs)
        assert 0.6 <= inside <= 0.75, (engine, inside)
        # and `validate --e2e` says so, with the same count
        line = next(c for c in report.coverage if c.startswith(f"{engine} "))
        assert f"{inside:.0%} of its {len(errs)} held-out points inside" in line, line


def test_a_point_run_expert_parallel_is_priced_as_that_layout():
    # InferenceX row 135 (S1, JSON array index 135: "decode_tp": 8, "decode_ep": 8, "precision": "fp4",
    # "image": "lmsysorg/sglang:v0.5.12-cu130") ran DeepSeek-R1 NVFP4 with SGLang --ep-size 8; the point says so
    from quantadvise.api.e2e import setup
    from quantadvise.errors import InputError
    from quantadvise.perf.parallel import LayoutStep

    p = next(x for x in points_table().points if x.id == "p0066")
    assert (p.tp, p.ep) == (8, 8)
    # every point whose source ran the experts expert-parallel carries it; a TP-only point keeps ep 1
    assert sum(x.ep > 1 for x in points_table().points) == 27  # 14 EP 8 + 8 EP 4 + 5 EP 2 rows in the sources
    cache: dict = {}
    kw = dict(config=p.config, scheme=p.scheme, gpu=p.gpu, engine=p.engine, version=p.engine_version,
              kv_dtype=p.kv_dtype)
    ep = setup(cache, tp=8, ep=8, **kw).sm
    tp = setup(cache, tp=8, **kw).sm
    assert isinstance(ep, LayoutStep) and ep.par.ep and ep.par.expert_gpus == 8
    assert not isinstance(tp, LayoutStep)
    # 58 of DeepSeek-R1's 61 layers are MoE (first_k_dense_replace = 3): each exchanges its tokens (dispatch +
    # combine) instead of all-reducing them, so the layout all-reduces after attention (61), after the 3 dense
    # MLPs and once for the embedding: 65
    assert ep.n_exchange == 58 and ep.n_allreduce == 61 + 3 + 1
    # expert parallelism over part of the TP group (MoE TP 2 x EP 2 on 4 GPUs) is refused with a reason, not
    # priced as something else
    with pytest.raises(InputError, match="expert parallelism over 2 of 4 GPUs"):
        setup(cache, tp=4, ep=2, **kw)


def test_a_run_without_a_stated_release_is_priced_with_the_release_current_when_it_was_measured():
    # data/engine_releases.yaml (PyPI upload dates): SGLang 0.5.5.post3 2025-11-17, 0.5.6.post2 2025-12-11. A run
    # measured 2025-11-18 could not have used a 2026 release: the newest on file published by then
    from quantadvise.api.e2e import release_on_file

    assert release_on_file("sglang", None, date(2025, 11, 18)) == "0.5.5.post3"
    assert release_on_file("sglang", None, date(2025, 12, 11)) == "0.5.6.post2"
    assert release_on_file("sglang", None) == catalog.engine_versions("sglang")[-1]  # no date: the newest
    assert release_on_file("sglang", "0.5.12", date(2025, 11, 18)) == "0.5.12.post1"  # a stated release wins


def test_every_engine_release_on_file_has_its_publication_date():
    # data/engine_releases.yaml must cover each data/engines/<engine>-<version>.yaml (a release added without its
    # date would never be picked for a run measured after it); dates are a release's first upload, so later
    # releases of one line (0.5.5.post3 after 0.5.5) are never older than earlier ones on file
    for engine in ("vllm", "sglang"):
        dates = catalog.release_dates(engine)
        versions = catalog.engine_versions(engine)
        assert set(versions) <= set(dates), set(versions) - set(dates)
        assert [dates[v] for v in versions] == sorted(dates[v] for v in versions), engine


def test_new_release_records_the_publication_date_from_the_index(tmp_path):
    # tools/new_release.py writes the day a release was published (the earliest PEP 700 upload-time of its files on
    # the simple index) into data/engine_releases.yaml, in version order, leaving the other rows as they were
    import shutil
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from release_artifacts import record_release_date, released

    doc = {"files": [{"filename": "vllm-0.35.0.tar.gz", "upload-time": "2026-12-20T10:00:00.000Z"},
                     {"filename": "vllm-0.35.0-cp38-abi3-manylinux_2_28_x86_64.whl", "upload-time": "2026-12-19T09:00:00Z"},
                     {"filename": "vllm-0.34.0.tar.gz", "upload-time": "2026-11-16T00:00:00Z"}]}
    assert released("vllm", "0.35.0", doc) == "2026-12-19"
    assert released("vllm", "0.36.0", doc) is None
    path = tmp_path / "engine_releases.yaml"
    shutil.copy(catalog.data_dir() / "engine_releases.yaml", path)
    before = path.read_text()
    record_release_date(path, "vllm", "0.35.0", "2026-12-19")
    after = path.read_text()
    assert after.replace('    "0.35.0": 2026-12-19\n', "") == before
    assert after.index('"0.34.0"') < after.index('"0.35.0"')


def _point(pid: str, scheme: str, concurrency: int = 8, aic: float | None = None, kv: str | None = None):
    from quantadvise.calibration.e2e import E2EPoint

    return E2EPoint(id=pid, source="S9", group="S9", locator=pid, engine="vllm", model=f"Llama {scheme}",
                    config="meta-llama/Meta-Llama-3-8B", scheme=scheme, kv_dtype=kv, gpu="h100-sxm", tp=1,
                    prompt=1024, output=1024,
                    concurrency=concurrency, output_tok_s=1.0, aic="ok" if aic else "not_run", aic_output_tok_s=aic,
                    as_of=date(2026, 1, 1))


def _err(pid: str, measured: float, predicted: float, aic: float | None = None):
    from quantadvise.calibration.e2e import PointError

    return PointError(id=pid, group="S9", band="8-32", engine="vllm", gpu="h100-sxm", model="m", heldout=False,
                      measured=measured, predicted=predicted, error=predicted / measured - 1,
                      aic_error=None if aic is None else aic / measured - 1)


def test_a_speedup_pairs_the_runs_that_differ_only_in_their_scheme():
    from quantadvise.calibration.e2e import speedup_pairs

    points = [(_point("a", "fp8-dynamic", aic=1100.0), _err("a", 1200.0, 1300.0, aic=1100.0)),
              (_point("b", "bf16", aic=900.0), _err("b", 1000.0, 1000.0, aic=900.0)),
              (_point("c", "w4a16", concurrency=16), _err("c", 1500.0, 1400.0))]  # another concurrency: no pair
    (pair,) = speedup_pairs(points)
    assert pair.ids == ("b", "a") and pair.schemes == ("bf16", "fp8-dynamic")  # the baseline first by name
    # measured 1200 / 1000 = 1.2, predicted 1300 / 1000 = 1.3: 1.3 / 1.2 - 1 = +8.33%
    assert pair.measured == pytest.approx(1.2) and pair.predicted == pytest.approx(1.3)
    assert pair.error == pytest.approx(1.3 / 1.2 - 1)
    # aiconfigurator: 1100 / 900 = 1.2222 against 1.2 measured: +1.85%
    assert pair.aic_error == pytest.approx((1100 / 900) / 1.2 - 1)


def test_a_speedup_pairs_a_kv_cache_dtype_too():
    from quantadvise.calibration.e2e import speedup_pairs

    # the same run with an fp8 KV cache: 1150 / 1000 = 1.15 measured, 1300 / 1000 = 1.3 predicted: +13.0%
    (pair,) = speedup_pairs([(_point("a", "bf16"), _err("a", 1000.0, 1000.0)),
                             (_point("b", "bf16", kv="kv-fp8"), _err("b", 1150.0, 1300.0))])
    assert pair.ids == ("a", "b") and pair.schemes == ("bf16", "bf16 + kv-fp8")
    assert pair.error == pytest.approx(1.3 / 1.15 - 1)


def test_predicted_speedups_between_schemes_match_the_published_pairs(report):
    # every pair recomputed from the per-point figures; the median |error| of the speed-up no worse than
    # the end-to-end bar and than aiconfigurator's on the pairs it expresses
    by_id = {p.id: p for p in report.points}
    sm = report.speedup_summary
    assert sm is not None and sm.pairs == len(report.speedups) >= 50
    errs = []
    for x in report.speedups:
        a, b = by_id[x.ids[0]], by_id[x.ids[1]]
        assert (a.band, a.gpu, a.engine, a.heldout) == (b.band, b.gpu, b.engine, b.heldout)
        assert x.schemes[0] < x.schemes[1]
        errs.append(abs((b.predicted / a.predicted) / (b.measured / a.measured) - 1))
    # unrounded, as the bands and the pairs themselves are (one figure, one number in the whole report)
    assert sm.median_abs_error == pytest.approx(statistics.median(errs), rel=1e-12)
    assert sm.max_abs_error == pytest.approx(max(errs), rel=1e-12)
    assert sm.aic_pairs and sm.median_abs_error_on_aic_pairs <= sm.aic_median_abs_error
    # the bar holds on the pairs of S1-S7; S8's weight-scheme pairs (Red Hat AI's single-stream cards) are
    # reported, not gated, and meet it in the median since vLLM's CUTLASS int8 on A100 carries its fitted stream
    # factor and Machete its own (13.9% before: those gains priced 23% / 44% too large;
    # docs/calibration.md §9)
    banded = [e for x, e in zip(report.speedups, errs, strict=True) if not by_id[x.ids[0]].pairs_only]
    assert len(banded) == 67 and statistics.median(banded) <= BAR
    s8 = [e for x, e in zip(report.speedups, errs, strict=True) if by_id[x.ids[0]].pairs_only]
    assert len(s8) == 182 and statistics.median(s8) <= BAR


def _s8_pairs(report, gpu, schemes):
    byid = {p.id: p for p in report.points}
    return [x for x in report.speedups if byid[x.ids[0]].group.startswith("S8/") and byid[x.ids[0]].heldout
            and byid[x.ids[0]].gpu == gpu and x.schemes == schemes]


def test_machete_s_fitted_stream_factor_meets_the_held_out_cards(report):
    # Red Hat AI's cards, held-out groups (DeepSeek-R1-Distill-Qwen-7B / -32B), one request at a time on vLLM 0.7.2:
    # e.g. Qwen-7B on H100, 256/1024 tokens, bf16 7.5 s against w4a16 5.4 s (1.39x); the cards' ratios span
    # 1.29-1.65x. Priced with TRT-LLM's int4 GEMV table for vLLM's Machete, the gain comes out 30-46% too large
    # (docs/calibration.md §9). tools/fit_stream_factors.py fits Machete's weight stream on the Llama-8B card alone
    # (7 runs: 15% short at factor 1) and ships it; with it the held-out gains fall within 10% in the median.
    from quantadvise.catalog import lookup_tables

    (row,) = [r for r in lookup_tables.stream_factors() if (r.gpu, r.kernel, r.weight_bits) == ("h100-sxm", "machete", 4)]
    table = points_table()
    points = {p.id: p for p in table.points}
    assert 1.5 <= row.factor <= 2.0 and row.carried_from is None
    assert all(points[i].group not in table.heldout for i in row.fitted_on)
    shipped = _s8_pairs(report, "h100-sxm", ("bf16", "w4a16"))
    assert len(shipped) >= 14
    assert all(1.25 <= x.measured <= 1.70 for x in shipped)  # the cards' own ratios
    assert statistics.median(abs(x.error) for x in shipped) <= 0.10
    with lookup_tables.stream_factors_as(()):
        without = _s8_pairs(validate_e2e(), "h100-sxm", ("bf16", "w4a16"))
    assert len(without) == len(shipped) and statistics.median(abs(x.error) for x in without) > 0.30


def test_old_vllm_fp8_gains_meet_the_held_out_cards_with_the_quantization_that_release_runs(report):
    # The same cards, bf16 against FP8-dynamic on an H100, held-out groups: e.g. DeepSeek-R1-Distill-Llama-70B on two
    # GPUs, 256/128 tokens, 3.8 s against 2.7 s (1.41x); the ratios span 1.29-1.56x. vLLM 0.7.2 is priced as
    # 0.8.5.post1 (the oldest release on file), whose Fp8LinearOp.apply quantizes each fp8 layer's input with
    # ops.scaled_fp8_quant, a kernel of its own (vllm 0.8.5.post1 w8a8_utils.py:350-354; the carried record's
    # differences), where 0.30.0's table (the one it is priced with) fuses QuantFP8 into the input's producer. Priced
    # without that kernel (~3.6 us per call at K = 8192 on the H100 quantization table, 4 calls a layer) the gains came
    # out 11.5% too large in the median, 21% at worst; with it, within 7%.
    shipped = _s8_pairs(report, "h100-sxm", ("bf16", "fp8-dynamic"))
    assert len(shipped) >= 21
    assert all(1.25 <= x.measured <= 1.60 for x in shipped)  # the cards' own ratios
    assert statistics.median(abs(x.error) for x in shipped) <= 0.07
    assert max(abs(x.error) for x in shipped) <= 0.15


def test_hopper_mixed_input_kernels_share_the_evidence_and_none_keeps_the_gemv_stream():
    # Every Hopper kernel that a weight-only GEMV table (or a composition) prices streams its weights more slowly
    # than that table: Machete by the cards (above), at any weight width, and vLLM's CUTLASS W4A8 on the same CUTLASS
    # sm90 mixed-input mainloop; Marlin and Humming by their own H100 benchmark (humming pull request #2, 8192 x 8192,
    # M = 1: marlin-w4a16 4.98 TFLOPS against torch's 2.30 in the same harness, so 2.30 / 4.98 = 0.462 of cuBLAS's
    # time; the shipped cuBLAS table's 51.64 us gives 23.8 us against TRT-LLM's int4 GEMV 18.18 us: 1.31x the call,
    # more on its streaming part alone). None on Ampere: vLLM's Marlin on A100 runs no slower than the table.
    from quantadvise.catalog import lookup_tables

    rows = {(r.gpu, r.kernel, r.weight_bits): r for r in lookup_tables.stream_factors()}
    for gpu in ("h100-sxm", "h200"):
        idx = lookup_tables.kernel_tables(gpu).index
        for s in idx.same_math:
            wo = next(t for t in idx.tables if t.id == s.table)
            if s.kernel in ("allspark", "flashinfer-cutedsl-nvfp4-a16") or wo.math != "bf16" or wo.weight_bytes >= 2:
                continue  # neither runs on sm90: AllSpark is SM80-SM89, SGLang's CuTe-DSL bf16 x fp4 GEMM SM100/103 only
                # (sglang 0.5.23 data/kernels route nvfp4-a16: fp4_utils.py:154-156)
            assert s.stream_factor > 1.2, (gpu, s.kernel, s.weight_bits)
            assert (gpu, s.kernel, s.weight_bits) in rows
        assert all(c.stream_factor > 1.2 for c in idx.composed), gpu
    marlin = rows[("h100-sxm", "marlin", 4)]
    assert marlin.fitted_on == ("humming-pr2-h100",) and marlin.carried_from is None
    tabs = lookup_tables.kernel_tables("h100-sxm")
    assert tabs.get("vllm/cublas-bf16").series(8192, 8192).at(1) == pytest.approx(51.64e-6)
    assert tabs.get("trtllm/int4-wo").series(8192, 8192).at(1) == pytest.approx(18.18e-6)
    from quantadvise.perf.lookup import choose_table, op_series

    # the lookup at the factor meets the harness-normalized time: 2.30 / 4.98 x 51.64 us = 23.85 us
    t = op_series(choose_table(tabs, "vllm", "marlin", 4), tabs, 8192, 8192, 0.5).at(1)
    assert t == pytest.approx(2.30 / 4.98 * 51.64e-6, rel=0.01)
    assert not [r for r in lookup_tables.stream_factors() if r.gpu == "a100-80gb" and "marlin" in r.kernel]
    # Machete's 8-bit weights (no card runs them): its 4-bit factor times the median 8-bit / 4-bit ratio of the two
    # kernels benchmarked at both widths, e.g. 1.764 x median(1.253 / 1.537, 1.352 / 1.546) = 1.764 x 0.845 = 1.49
    def factor(kernel, bits):
        return rows[("h100-sxm", kernel, bits)].factor

    width = statistics.median([factor("marlin", 8) / factor("marlin", 4), factor("humming", 8) / factor("humming", 4)])
    assert factor("machete", 8) == pytest.approx(factor("machete", 4) * width, abs=0.002)
    assert 1.0 < factor("machete", 8) < factor("machete", 4)


def test_vllm_int8_s_stream_factor_is_shipped_and_meets_the_held_out_cards(report):
    # Red Hat AI's cards, held-out groups, one request at a time on vLLM 0.7.2 / 0.6.6.post1 on A100: w8a8-int8
    # against bf16. vLLM runs CUTLASS int8 there, priced with TRT-LLM's SmoothQuant int8 table (a batched-GEMV
    # kernel at one sequence); tools/fit_stream_factors.py fits its weight stream on the Llama-8B card alone
    # (7 runs: predicted per-token time 18% short at factor 1) and ships it. Without it the held-out gains come out
    # ~23% too large in the median (docs/calibration.md §9); with it within the 10% bar.
    from quantadvise.catalog import lookup_tables

    (row,) = [r for r in lookup_tables.stream_factors() if (r.gpu, r.kernel) == ("a100-80gb", "cutlass-int8")]
    table = points_table()
    points = {p.id: p for p in table.points}
    assert 1.3 <= row.factor <= 1.5 and all(points[i].group not in table.heldout for i in row.fitted_on)
    shipped = _s8_pairs(report, "a100-80gb", ("bf16", "w8a8-int8"))
    assert len(shipped) >= 14
    assert all(1.0 <= x.measured <= 2.0 for x in shipped)  # the cards' own ratios: a gain, never 2x
    assert statistics.median(abs(x.error) for x in shipped) <= 0.10
    with lookup_tables.stream_factors_as(()):
        without = _s8_pairs(validate_e2e(), "a100-80gb", ("bf16", "w8a8-int8"))
    assert len(without) == len(shipped) and statistics.median(abs(x.error) for x in without) > 0.15


def test_the_stream_factors_file_is_valid_and_every_row_names_its_runs():
    from quantadvise.catalog.lookup_tables import stream_factors

    table = points_table()
    points = {p.id: p for p in table.points}
    from quantadvise.catalog.lookup_tables import kernel_benchmarks

    benches = {b.id: b for b in kernel_benchmarks()}
    assert benches and all(b.source and b.as_of for b in benches.values())
    fitted = {(r.gpu, r.kernel, r.weight_bits) for r in stream_factors() if r.carried_from is None}
    for r in stream_factors():  # fitted to the cards' runs, or to a published kernel benchmark; or carried from one
        assert r.source and r.as_of and r.note and r.fitted_on
        if r.fitted_on[0] in benches:
            assert r.fitted_on == (r.fitted_on[0],) and r.source == benches[r.fitted_on[0]].source
        else:
            assert all(points[i].source == "S8" and points[i].group not in table.heldout for i in r.fitted_on)
        if r.carried_from is not None:  # "machete (4-bit) on h100-sxm": a fitted row's
            kernel, rest = r.carried_from.split(" ", 1)
            gpu = rest.rsplit(" on ", 1)[1]
            assert any(f[0] == gpu and f[1] == kernel for f in fitted), r.carried_from


def test_the_stream_factors_file_is_what_the_tool_fits_today():
    # data/kernel_tables/stream_factors.yaml is written by tools/fit_stream_factors.py from the points, the kernel
    # benchmarks and the tables on file; a change to any of them (or to the lookup) not followed by a re-run would
    # leave every factor stale: `python tools/fit_stream_factors.py` rewrites it
    import sys as _sys
    from pathlib import Path

    from quantadvise.catalog.lookup_tables import stream_factors

    _sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    try:
        import fit_stream_factors
    finally:
        _sys.path.pop(0)
    fitted = [{k: v for k, v in r.items() if k != "as_of"} for r in fit_stream_factors.fit()]
    shipped = [{k: v for k, v in r.model_dump(mode="json", exclude_defaults=True).items() if k != "as_of"}
               for r in stream_factors()]
    assert fitted == shipped


def test_a_kernel_benchmark_row_needs_one_figure_per_m():
    # data/validation/kernel_benchmarks.yaml is read through a model: a column with fewer TFLOPS than Ms (a row cut
    # short in transcription) is refused, naming the benchmark and the column
    from quantadvise.perf.kernel_tables import KernelBenchmark

    row = {"id": "x", "gpu": "h100-sxm", "source": "s", "as_of": "2026-12-07", "n": 8192, "k": 8192, "m": [1, 2],
           "baseline": {"column": "torch", "table": "vllm/cublas-bf16", "tflops": [2.3, 4.6]},
           "kernels": [{"column": "marlin-w4a16", "kernel": "marlin", "weight_bits": 4, "tflops": [4.98]}]}
    with pytest.raises(ValueError, match="marlin-w4a16 needs one positive TFLOPS per M"):
        KernelBenchmark.model_validate(row)
    row["kernels"][0]["tflops"] = [4.98, 10.02]
    assert KernelBenchmark.model_validate(row).kernels[0].tflops == (4.98, 10.02)
