"""`quantadvise validate` on the shipped kernel profiles: --max-error decides the exit code, the
project's bars are a labelled report line (part of the exit code only with --project-bars), and the
profile id the report prints is accepted as the argument, as is a GPU alias (h100). Without --max-error
each curve is held to the held-out error its profile records (docs/calibration.md §7): the documented
example `quantadvise validate h200` passes, and says why the curves are above 15%.

The expected verdicts are worked out here from each curve's held-out error in the JSON (the error
statistics, not the verdict): a curve's worst error is its worst held-out decode step, or for a
fused-MoE curve (no step sets) its worst call — docs/calibration.md §7. The shipped h100-sxm curves
miss the 8% / 20% bars (docs/calibration.md: every h100-sxm worst step is above 12%)."""

from __future__ import annotations

import math

import pytest


@pytest.fixture(scope="module")
def worst_pct():
    from tests.conftest import run_cli

    doc = run_cli("validate", "h100-sxm", "--max-error", "1000", "-f", "json").json()
    worst = [k["calls"]["step_max"] if k["calls"]["step_points"] else k["calls"]["gemm_max"] for k in doc["kernels"]]
    return max(worst) * 100, len(worst)


def test_max_error_governs_the_exit_code(cli, worst_pct):
    worst, _ = worst_pct
    above, below = math.ceil(worst) + 1, math.floor(worst) - 1
    loose = cli("validate", "h100-sxm", "--max-error", above)
    assert loose.code == 0, loose.stdout + loose.stderr
    assert (f"PASS: every measured kernel curve's worst held-out error is within {above}% (--max-error)"
            in " ".join(loose.stdout.split()))
    tight = cli("validate", "h100-sxm", "--max-error", below)
    assert tight.code == 1
    assert f"NOT within {below}% (--max-error) (exit 1)" in " ".join(tight.stdout.split())


def test_project_bars_are_a_report_line_unless_asked(cli, worst_pct):
    worst, n = worst_pct
    above = str(math.ceil(worst) + 1)
    r = cli("validate", "h100-sxm", "--max-error", above)
    text = " ".join(r.stdout.split())
    assert (f"project bars (8% median / 20% worst held-out step, plain bf16 5% / 12%): 0 of {n} curves within"
            in text)
    assert "--project-bars makes it part of the exit code" in text
    assert cli("validate", "h100-sxm", "--max-error", above, "--project-bars").code == 1
    doc = cli("validate", "h100-sxm", "--max-error", above, "-f", "json").json()
    assert doc["passed"] is True and doc["bars_passed"] is False
    assert all(k["within_max_error"] for k in doc["kernels"]) and not any(k["within"] for k in doc["kernels"])


def test_the_printed_profile_id_is_accepted(cli):
    by_id = cli("validate", "h100-sxm-measured", "--max-error", "1000", "-f", "json")
    assert by_id.code == 0, by_id.stderr
    assert by_id.json()["profile"] == "h100-sxm-measured"


def test_unknown_profile_name_suggests(cli):
    r = cli("validate", "h100-sx")
    assert r.code == 2
    assert "unknown profile 'h100-sx'; did you mean 'h100-sxm'" in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_a_gpu_alias_names_its_shipped_profile(cli):
    by_alias = cli("validate", "h100", "--max-error", "1000", "-f", "json")
    assert by_alias.code == 0, by_alias.stderr
    assert by_alias.json()["profile"] == "h100-sxm-measured"
    r = cli("validate", "l4")  # a GPU with no shipped profile: one line naming those that ship
    assert r.code == 2 and r.stderr.count("\n") == 1
    assert "no shipped profile for NVIDIA L4" in r.stderr and "h100-sxm" in r.stderr


def test_without_max_error_each_curve_is_held_to_its_recorded_error(cli, worst_pct):
    worst, n = worst_pct
    r = cli("validate", "h200")
    text = " ".join(r.stdout.split())
    assert r.code == 0, r.stdout + r.stderr
    assert "PASS: every measured kernel curve's held-out error is the one this profile records" in text
    # the curves above the 15% a calibration is held to are named as the documented limit, not a bare FAIL
    assert "above 15%" in text and "a documented limit of the shipped curves" in text and "FAIL" not in text
    doc = cli("validate", "h100-sxm", "-f", "json").json()
    assert doc["kernels_judged"] == "recorded" and doc["passed"] and doc["max_error"] == 0.15
    assert len(doc["kernels"]) == n and worst > 15  # h100-sxm's worst held-out error is above 15%


def test_a_curve_worse_than_recorded_fails(monkeypatch):
    # the recorded figure is the bar: a curve whose held-out error comes out worse than its profile says
    # (a curve or its held-out data changed without the importer rewriting the record) exits 1
    from quantadvise import catalog
    from quantadvise.api.calibrate import validate

    real = catalog.load_perf_profile
    shipped = real(catalog.shipped_profile_paths()["h200"])
    entry = shipped.gpus[0]
    key = "vllm/cutlass-fp8"
    curve = entry.kernels[key]
    better = curve.heldout.model_copy(update={"step_max": curve.heldout.step_max / 2})
    kernels = {**entry.kernels, key: curve.model_copy(update={"heldout": better})}
    changed = shipped.model_copy(update={"gpus": (entry.model_copy(update={"kernels": kernels}),)})
    r = validate(changed)
    assert r.kernels_judged == "recorded" and not r.passed and r.exit_code() == 1
    assert [k.curve for k in r.kernels if not k.within_max_error] == [key]
    assert validate(shipped).passed


BENCH = "tests/fixtures/bench/sglang_bench_serving_0.5.23.jsonl"  # records no GPU: --gpu names it


def test_bench_takes_gpu_aliases_as_the_profile_argument_does(cli, monkeypatch):
    """`validate --bench` (issue 26) names the GPU as every other command does: an alias is its row."""
    from pathlib import Path

    from quantadvise import defaults

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    by_id = cli("validate", "--bench", BENCH, "--gpu", "h100-sxm", "-f", "json").json()
    by_alias = cli("validate", "--bench", BENCH, "--gpu", "h100", "-f", "json").json()
    assert by_alias == by_id and {p["workload"]["gpu"] for p in by_alias["points"]} == {"h100-sxm"}
    # no --max-error: a run is held to the calibration bar, as `validate PROFILE` holds a calibration
    assert by_alias["max_error"] == defaults.MAX_VALIDATION_ERROR
    r = cli("validate", "--bench", BENCH, "--gpu", "h100x")
    assert r.code == 2 and r.stderr.startswith("Error: unknown GPU 'h100x'") and r.stderr.count("\n") == 1


def test_the_help_states_each_modes_default_bar():
    from quantadvise import defaults
    from quantadvise.calibration.e2e import BAR
    from tests.conftest import run_cli

    text = " ".join(run_cli("validate", "--help").stdout.split())
    assert f"[default: {defaults.MAX_VALIDATION_ERROR * 100:g} for a calibration and --bench;" in text
    assert f"--e2e: {BAR * 100:g} per band" in text


def test_validating_again_reuses_the_lookup_checks_until_the_tables_change(monkeypatch):
    # The held-out pricing of a GPU's lookup tables (~0.5 s) is done once per (tables, GPU, profile) object: a
    # second validate of the same profile reuses it, tables built afresh (a cleared cache) are checked again, and
    # the reused checks are the same figures.
    from quantadvise.api import calibrate as api_calibrate
    from quantadvise.api.calibrate import validate
    from quantadvise.calibration import lookup_checks
    from quantadvise.catalog.lookup_tables import kernel_tables, stream_factors_as

    calls: list[str] = []
    real = lookup_checks.gpu_checks

    def counting(tables, gpu, *a, **k):
        calls.append(gpu.id)
        return real(tables, gpu, *a, **k)

    monkeypatch.setattr(lookup_checks, "gpu_checks", counting)
    monkeypatch.setattr(api_calibrate, "_LOOKUP_MEMO", {})
    first = validate("h200")
    second = validate("h200")
    assert calls == ["h200"]
    assert second.lookup == first.lookup and second.bands == first.bands and second.substitutes == first.substitutes
    with stream_factors_as([]):  # clears the table caches: new TableSet objects
        assert kernel_tables("h200") is not None
        validate("h200")
    assert calls == ["h200", "h200"]


def test_the_published_kernel_benchmarks_are_checked_against_the_lookup(cli):
    # data/validation/kernel_benchmarks.yaml (humming pull request #2, H100, 8192 x 8192): each column against the
    # lookup that prices its kernel, its stream factor in force. The benchmark read on the shipped cuBLAS table: at
    # M = 2 marlin-w4a16 ran 10.02 TFLOPS against torch's 4.63, so 4.63 / 10.02 of the table's 45.79 us = 21.16 us;
    # M = 1 is where the factor was fitted (within 1%); the H200 has no benchmark of its own
    doc = cli("validate", "h100-sxm", "--max-error", "1000", "-f", "json").json()
    got = {(b["kernel"], b["weight_bits"]): b for b in doc["benchmarks"]}
    assert set(got) == {("marlin", 4), ("humming", 4), ("marlin", 8), ("humming", 8)}
    marlin = got[("marlin", 4)]
    (m1, m2, m4) = marlin["points"]
    assert (m1["m"], m2["m"], m4["m"]) == (1, 2, 4) and marlin["stream"] > 1.2
    assert m2["benchmark_s"] == pytest.approx(4.63 / 10.02 * 45.79e-6, rel=1e-3)
    assert abs(m1["error"]) < 0.01
    for p in marlin["points"]:
        assert p["error"] == pytest.approx(p["predicted_s"] / p["benchmark_s"] - 1, rel=1e-9)
    text = " ".join(cli("validate", "h100-sxm", "--max-error", "1000").stdout.split())
    assert f"h100-sxm marlin-w4a16 (marlin, 8192 x 8192, humming-pr2-h100; weight stream x{marlin['stream']:.2f}): " \
           f"M = 1 {m1['error']:+.0%}, M = 2 {m2['error']:+.0%}, M = 4 {m4['error']:+.0%}" in text
    assert cli("validate", "h200", "-f", "json").json().get("benchmarks") == []
