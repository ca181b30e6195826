"""Accuracy evidence: delta with a paired CI, flips, McNemar, KL — every expected number by hand.

The 10-item plain fixture (tests/fixtures/accuracy/plain_*.jsonl, also docs/accuracy.md):

    item        q0 q1 q2 q3 q4 q5 q6 q7 q8 q9
    base         1  1  1  1  1  1  1  0  0  0     7/10 = 0.70
    quant        1  1  1  1  1  0  0  1  0  0     6/10 = 0.60
    -> both right 5 (q0-q4), lost 2 (q5, q6), gained 1 (q7), both wrong 2 (q8, q9)
    delta = (gained - lost)/n = (1 - 2)/10 = -0.10; flips = 3, rate 0.30
    McNemar exact: 3 discordant, min(2, 1) = 1: p = 2 * (C(3,0) + C(3,1)) / 2^3 = 2 * 4/8 = 1.0

    log-probs: q1 base softmax (0.8, 0.2) vs quant (0.5, 0.5); q2 the same after softmax
    (base [-1, -1 - ln 4] -> (1, 1/4)/(5/4) = (0.8, 0.2); quant [-2, -2] -> (0.5, 0.5)); the other
    items identical on both sides -> KL 0.
    KL(q1) = 0.8 ln(0.8/0.5) + 0.2 ln(0.2/0.5) = 0.8 * 0.4700036 - 0.2 * 0.9162907 = 0.1927448
    mean over 10 items = 2 * 0.1927448 / 10 = 0.0385490 nats
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import quantadvise as api
from quantadvise.artifacts.evidence import load_evidence, parse_jsonl, task_from_filename
from quantadvise.errors import ConfigError, InputError
from quantadvise.evals.stats import (
    AccuracyThresholds,
    Sample,
    TaskSamples,
    compare,
    kl_divergence,
    mcnemar_exact_p,
    paired_delta_ci,
    wilson_interval,
    z_value,
)

ACC = Path(__file__).resolve().parent.parent / "fixtures" / "accuracy"
LM_BASE = ACC / "lm_eval" / "base"
LM_QUANT = ACC / "lm_eval" / "quant"
Z95 = 1.959963984540054  # the 0.975 quantile of the standard normal

KL_Q1 = 0.8 * math.log(1.6) + 0.2 * math.log(0.4)


def _wilson(x: int, n: int) -> tuple[float, float]:
    # Wilson (1927): (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)
    p = x / n
    c = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    h = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
    return c - h, c + h


# --- the statistics --------------------------------------------------------------------------------


def test_z_value():
    assert z_value(0.95) == pytest.approx(Z95, abs=1e-12)
    with pytest.raises(InputError):
        z_value(1.0)


def test_wilson_interval_published_values():
    # 7/10 -> [0.3968, 0.8922] and 6/10 -> [0.3127, 0.8318], the textbook Wilson intervals
    lo, hi = wilson_interval(7, 10, Z95)
    assert (round(lo, 4), round(hi, 4)) == (0.3968, 0.8922)
    lo, hi = wilson_interval(6, 10, Z95)
    assert (round(lo, 4), round(hi, 4)) == (0.3127, 0.8318)


def test_newcombe_interval_reproduces_the_published_example():
    # Fagerland, Lydersen & Laake, "Statistical Analysis of Contingency Tables" (2017), ch. 8, the
    # Cavo et al. (2012) paired table [[59, 6], [16, 80]]: Newcombe square-and-add interval for
    # pi_1+ - pi_+1 = -0.0621 (95% CI -0.1186 to -0.0046). Our delta is column minus row
    # (quant - base), the mirror image: +0.0621 (0.0046 to 0.1186).
    lo, hi = paired_delta_ci(both=59, lost=6, gained=16, neither=80, z=Z95)
    assert (round(lo, 4), round(hi, 4)) == (0.0046, 0.1186)


def test_newcombe_interval_ten_items_by_hand():
    # p1 = 0.7 (base), p2 = 0.6 (quant); Wilson: l1, u1 = 0.39677, 0.89221; l2, u2 = 0.31267, 0.83182
    l1, u1 = _wilson(7, 10)
    l2, u2 = _wilson(6, 10)
    # phi: A = both*neither - lost*gained = 5*2 - 2*1 = 8 > n/2 = 5 -> (8 - 5)/sqrt(7*3*6*4) = 3/sqrt(504)
    phi = 3 / math.sqrt(504)
    lower = -0.1 - math.sqrt((0.6 - l2) ** 2 - 2 * phi * (0.6 - l2) * (u1 - 0.7) + (u1 - 0.7) ** 2)
    upper = -0.1 + math.sqrt((u2 - 0.6) ** 2 - 2 * phi * (u2 - 0.6) * (0.7 - l1) + (0.7 - l1) ** 2)
    assert (round(lower, 4), round(upper, 4)) == (-0.4236, 0.2562)  # the same numbers, worked on paper
    assert paired_delta_ci(5, 2, 1, 2, Z95) == pytest.approx((lower, upper), abs=1e-12)


def test_newcombe_interval_does_not_collapse_without_flips():
    # 100 items, nothing changed: the Wald interval would be [0, 0]; Newcombe's is not.
    lo, hi = paired_delta_ci(both=80, lost=0, gained=0, neither=20, z=Z95)
    assert lo < 0 < hi


def test_mcnemar_exact_p():
    # Cavo table: discordant 6 and 16, P = 2 * sum_{k<=6} C(22,k) / 2^22 = 2 * 110056 / 4194304
    # = 0.052479 (published: "McNemar exact conditional test: P = 0.052479")
    assert mcnemar_exact_p(6, 16) == pytest.approx(2 * 110056 / 2**22)
    assert round(mcnemar_exact_p(6, 16), 6) == 0.052479
    assert mcnemar_exact_p(0, 0) == 1.0
    assert mcnemar_exact_p(0, 5) == pytest.approx(2 / 32)  # 2 * (1/2)^5


def test_kl_divergence():
    assert kl_divergence([math.log(0.8), math.log(0.2)], [0.0, 0.0]) == pytest.approx(KL_Q1, abs=1e-12)
    # softmax-normalised: a constant shift changes nothing
    assert kl_divergence([-1.0, -1.0 - math.log(4)], [-2.0, -2.0]) == pytest.approx(KL_Q1, abs=1e-12)
    assert kl_divergence([0.0, 0.0], [0.0, 0.0]) == 0.0
    assert kl_divergence([0.0, 0.0], [0.0, -math.inf]) == math.inf


# --- plain JSONL ------------------------------------------------------------------------------------


def plain_report(**kw):
    return api.accuracy(ACC / "plain_base.jsonl", ACC / "plain_quant.jsonl", **kw)


def test_plain_fixture_by_hand():
    r = plain_report()
    (t,) = r.tasks
    assert (t.n, t.base_correct, t.quant_correct) == (10, 7, 6)
    assert (t.both_correct, t.lost, t.gained, t.both_wrong) == (5, 2, 1, 2)
    assert t.delta == pytest.approx(-0.1)
    assert (t.flips, t.flip_rate) == (3, pytest.approx(0.3))
    assert t.mcnemar_p == 1.0
    assert (round(t.delta_ci_low, 4), round(t.delta_ci_high, 4)) == (-0.4236, 0.2562)
    assert t.kl is not None and t.kl.items == 10
    assert t.kl.mean_nats == pytest.approx(2 * KL_Q1 / 10, abs=1e-9)
    assert t.kl.max_nats == pytest.approx(KL_Q1, abs=1e-9) and t.kl.max_id == "q1"
    assert r.checks == [] and r.exit_code() == 0 and r.ci_method == "newcombe-hybrid-score"


def test_thresholds_pass_fail_and_exact_boundaries():
    # drop 0.10 exactly at a 10-point limit passes (a ratio of counts, compared exactly; the API takes
    # percentage points, as recommend's accuracy_tolerance: 10 points = 10 / 100 = 0.10 of the items)
    r = plain_report(max_delta=10, max_flips=30, max_kl=0.0386, min_samples=10)
    assert [(c.check, c.status) for c in r.checks] == [
        ("samples", "pass"), ("delta", "pass"), ("flips", "pass"), ("kl", "pass")]
    r = plain_report(max_delta=5, max_flips=25, max_kl=0.03, min_samples=11)
    assert [(c.check, c.status) for c in r.checks] == [
        ("samples", "fail"), ("delta", "fail"), ("flips", "fail"), ("kl", "fail")]
    assert r.exit_code() == 1
    delta = next(c for c in r.checks if c.check == "delta")
    assert delta.value == pytest.approx(0.10) and "drop 10.00 pp > max 5.00 pp" in delta.message


def test_per_task_thresholds_overlay_the_defaults():
    r = plain_report()
    rows = r.evaluate(AccuracyThresholds(max_delta_drop=0.01, max_flip_rate=0.5),
                      {"plain_base": AccuracyThresholds(max_delta_drop=0.2)})
    assert {c.check: c.status for c in rows} == {"delta": "pass", "flips": "pass"}
    # a task the thresholds name but the evidence lacks is a failed check, not a crash: the gate
    # reports missing evidence
    (row,) = r.evaluate(AccuracyThresholds(), {"nope": AccuracyThresholds(max_delta_drop=0.01)})
    assert (row.task, row.check, row.status) == ("nope", "evidence", "fail")
    assert "no such task (present: plain_base)" in row.message


def test_kl_is_skipped_without_logprobs(tmp_path):
    b, q = tmp_path / "b.jsonl", tmp_path / "q.jsonl"
    b.write_text('{"id": 1, "correct": true}\n{"id": 2, "correct": false}\n')
    q.write_text('{"id": 1, "correct": true}\n{"id": 2, "correct": false}\n')
    r = api.accuracy(b, q, max_kl=0.1)
    assert r.tasks[0].kl is None and r.checks[0].status == "skipped" and r.exit_code() == 0


def test_mismatched_ids_are_reported_not_counted(tmp_path):
    b, q = tmp_path / "b.jsonl", tmp_path / "q.jsonl"
    b.write_text("".join(json.dumps({"id": i, "correct": True}) + "\n" for i in range(5)))
    q.write_text("".join(json.dumps({"id": i, "correct": i != 2}) + "\n" for i in range(2, 8)))
    r = api.accuracy(b, q)
    (t,) = r.tasks
    # paired ids 2, 3, 4; base-only 0, 1; quant-only 5, 6, 7
    assert (t.n, t.unmatched_base, t.unmatched_quant) == (3, 2, 3)
    assert (t.lost, t.gained) == (1, 0) and t.delta == pytest.approx(-1 / 3)
    assert t.unmatched_examples == ["0", "1", "5", "6", "7"]
    assert any("2 items only in the baseline and 3 only in the quantized run" in w for w in r.warnings)


def test_no_common_ids_is_an_input_error(tmp_path):
    b, q = tmp_path / "b.jsonl", tmp_path / "q.jsonl"
    b.write_text('{"id": "a", "correct": 1}\n')
    q.write_text('{"id": "b", "correct": 1}\n')
    with pytest.raises(InputError, match="no item id appears in both"):
        api.accuracy(b, q)


@pytest.mark.parametrize(("content", "message"), [
    ('{"id": 1, "correct": true}\n{"id": 2, "correct": tru}\n', r"bad.jsonl: line 2: invalid JSON"),
    ('{"id": 1, "correct": true}\n\n{"id": 2}\n', r"bad.jsonl: line 3: field 'correct' is missing"),
    ('{"id": 1, "correct": 0.5}\n', r"bad.jsonl: line 1: field 'correct' is 0.5"),
    ('{"id": 1, "correct": true}\n{"id": 1, "correct": false}\n', r"bad.jsonl: line 2: id 1 appears again \(first at line 1\)"),
    ('{"id": 1, "correct": true, "logprobs": [1]}\n', r"bad.jsonl: line 1: field 'logprobs' must be"),
    ("[1, 2]\n", r"bad.jsonl: line 1: expected a JSON object"),
    ('{"question": "x"}\n', r"bad.jsonl: line 1: not an lm-eval sample"),
    ("", r"bad.jsonl: no samples \(the file is empty\)"),
    ("\n  \n", r"bad.jsonl: no samples \(the file is empty\)"),
])
def test_malformed_files_name_file_and_line(content, message):
    with pytest.raises(ConfigError, match=message):
        parse_jsonl(content, "bad.jsonl")


def test_logprob_lengths_must_agree(tmp_path):
    b, q = tmp_path / "b.jsonl", tmp_path / "q.jsonl"
    b.write_text('{"id": 1, "correct": true, "logprobs": [0, -1]}\n')
    q.write_text('{"id": 1, "correct": true, "logprobs": [0, -1, -2]}\n')
    with pytest.raises(InputError, match="id 1 has log-probs that cannot be compared"):
        api.accuracy(b, q)


def test_token_distributions_as_mappings_use_the_shared_keys():
    # base {a: ln .5, b: ln .5, c: ...}, quant {a: ln .8, b: ln .2, d: ...}: shared keys a, b,
    # renormalised: P = (0.5, 0.5), Q = (0.8, 0.2)
    # KL = 0.5 ln(0.5/0.8) + 0.5 ln(0.5/0.2) = 0.5 (ln 0.625 + ln 2.5) = 0.5 ln 1.5625 = 0.2231436
    base = TaskSamples("t", "b", "jsonl", "correct", (Sample("1", True, 1, {"a": math.log(.5), "b": math.log(.5),
                                                                               "c": -9.0}),))
    quant = TaskSamples("t", "q", "jsonl", "correct", (Sample("1", True, 1, {"a": math.log(.8), "b": math.log(.2),
                                                                                "d": -9.0}),))
    r = compare([base], [quant])
    assert r.tasks[0].kl.mean_nats == pytest.approx(0.5 * math.log(1.5625), abs=1e-12)
    assert any("different keys" in w for w in r.warnings)


# --- lm-evaluation-harness samples -----------------------------------------------------------------


def test_task_from_filename():
    assert task_from_filename("samples_arc_easy_2026-11-20T10-11-12.345678.jsonl") == (
        "arc_easy", "2026-11-20T10-11-12.345678")
    assert task_from_filename("samples_mmlu_high_school_physics_2024-05-01T00-00-00.1.jsonl")[0] == \
        "mmlu_high_school_physics"
    assert task_from_filename("results.jsonl") == ("results", "")


def test_lm_eval_folders_by_hand():
    # arc_easy, 6 docs, acc: base 1 1 1 0 1 0, quant 1 0 1 0 1 1 -> both 3, lost 1 (doc 1),
    # gained 1 (doc 5), both wrong 1: delta 0, flips 2/6.
    # Per-choice log-likelihoods (softmax): "peaked0" = (1/2, 1/6, 1/6, 1/6), "peaked1" the same with
    # the 1/2 on choice B, "uniform" = 1/4 each.
    #   doc 0: peaked0 vs uniform: KL = 1/2 ln 2 + 3 * 1/6 ln(2/3) = 1/2 ln(4/3) = 0.1438410
    #   doc 1: peaked0 vs peaked1: KL = 1/2 ln 3 + 1/6 ln(1/3) = 1/3 ln 3        = 0.3662041
    #   doc 5: peaked1 vs peaked0: the mirror image, 1/3 ln 3
    #   docs 2, 3, 4 identical: 0.  Mean = (1/2 ln(4/3) + 2/3 ln 3) / 6 = 0.1460415
    r = api.accuracy(LM_BASE, LM_QUANT)
    arc = next(t for t in r.tasks if t.task == "arc_easy")
    assert arc.metric == "acc" and arc.filter == "none"
    assert (arc.n, arc.both_correct, arc.lost, arc.gained, arc.both_wrong) == (6, 3, 1, 1, 1)
    assert arc.delta == 0 and arc.flip_rate == pytest.approx(2 / 6)
    assert arc.kl.items == 6
    assert arc.kl.mean_nats == pytest.approx((0.5 * math.log(4 / 3) + 2 / 3 * math.log(3)) / 6, abs=1e-9)
    assert arc.kl.max_nats == pytest.approx(math.log(3) / 3, abs=1e-9) and arc.kl.max_id == "1"
    # gsm8k logs two filters; the first (strict-match) is used and the choice is reported.
    # strict-match exact_match: base 1 1 0 1 0, quant 1 0 0 1 0 -> lost 1, gained 0, delta -1/5
    gsm = next(t for t in r.tasks if t.task == "gsm8k")
    assert gsm.metric == "exact_match" and gsm.filter == "strict-match" and gsm.kl is None
    assert (gsm.n, gsm.lost, gsm.gained) == (5, 1, 0) and gsm.delta == pytest.approx(-0.2)
    assert any("filters strict-match, flexible-extract; using 'strict-match'" in w for w in r.warnings)
    assert [t.task for t in r.tasks] == ["arc_easy", "gsm8k"]


def test_lm_eval_filter_and_metric_choice():
    # flexible-extract: base 1 1 1 1 0, quant 1 1 0 1 1 -> lost 1 (doc 2), gained 1 (doc 4), delta 0
    with pytest.raises(InputError, match="metric 'exact_match' is not in the sample"):
        api.accuracy(LM_BASE, LM_QUANT, metric="exact_match")  # arc_easy has acc, acc_norm only
    one_b = next(LM_BASE.rglob("samples_gsm8k_*.jsonl"))
    one_q = next(LM_QUANT.rglob("samples_gsm8k_*.jsonl"))
    r = api.accuracy(one_b, one_q, filter="flexible-extract")
    (gsm,) = r.tasks
    assert (gsm.filter, gsm.lost, gsm.gained, gsm.delta) == ("flexible-extract", 1, 1, 0)
    with pytest.raises(InputError, match="task 'gsm8k' has no filter 'nope'"):
        api.accuracy(one_b, one_q, filter="nope")


def test_lm_eval_acc_norm_is_selectable():
    b = next(LM_BASE.rglob("samples_arc_easy_*.jsonl"))
    q = next(LM_QUANT.rglob("samples_arc_easy_*.jsonl"))
    (t,) = api.accuracy(b, q, metric="acc_norm").tasks
    assert t.metric == "acc_norm" and t.n == 6


def test_lm_eval_doc_hash_mismatch_is_refused(tmp_path):
    src = next(LM_BASE.rglob("samples_arc_easy_*.jsonl")).read_text().splitlines()
    rows = [json.loads(x) for x in src]
    rows[3]["doc_hash"] = "0" * 64
    q = tmp_path / "samples_arc_easy_2026-01-01T00-00-00.jsonl"
    q.write_text("".join(json.dumps(x) + "\n" for x in rows))
    with pytest.raises(InputError, match=r"1 paired item with a different document on each side"):
        api.accuracy(next(LM_BASE.rglob("samples_arc_easy_*.jsonl")), q)


def test_lm_eval_duplicate_doc_and_non_binary_metric(tmp_path):
    line = json.loads(next(LM_BASE.rglob("samples_arc_easy_*.jsonl")).read_text().splitlines()[0])
    with pytest.raises(ConfigError, match=r"x.jsonl: line 2: doc_id 0 appears again \(first at line 1\)"):
        parse_jsonl(json.dumps(line) + "\n" + json.dumps(line) + "\n", "x.jsonl")
    line["acc"] = 0.37
    with pytest.raises(ConfigError, match=r"x.jsonl: line 1: field 'acc' is 0.37"):
        parse_jsonl(json.dumps(line) + "\n", "x.jsonl")


def test_directory_keeps_the_newest_run_per_task(tmp_path):
    old = tmp_path / "samples_t_2026-01-01T00-00-00.000001.jsonl"
    new = tmp_path / "samples_t_2026-02-01T00-00-00.000001.jsonl"
    old.write_text('{"doc_id": 0, "acc": 0}\n')
    new.write_text('{"doc_id": 0, "acc": 1}\n')
    (ts,) = load_evidence(tmp_path)
    assert ts.file == str(new) and ts.samples[0].correct is True
    assert any("older run of 't'" in w for w in ts.warnings)


def test_tasks_missing_on_one_side_are_reported(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "q").mkdir()
    for side, tasks in (("b", ("x", "y")), ("q", ("x", "z"))):
        for t in tasks:
            (tmp_path / side / f"samples_{t}_2026-01-01T00-00-00.jsonl").write_text('{"doc_id": 0, "acc": 1}\n')
    r = api.accuracy(tmp_path / "b", tmp_path / "q")
    assert [t.task for t in r.tasks] == ["x"] and r.only_in_base == ["y"] and r.only_in_quant == ["z"]


def test_missing_path_and_empty_directory(tmp_path):
    with pytest.raises(InputError, match="BASE: no such file or directory"):
        api.accuracy(tmp_path / "nope", tmp_path)
    with pytest.raises(ConfigError, match="no samples_\\*.jsonl or \\*.jsonl files"):
        api.accuracy(tmp_path, tmp_path)


def test_threshold_values_are_validated():
    # percent: 150% of the answers is out of range; the error names the flag, not the internal field
    with pytest.raises(InputError, match="--max-flips must be a number >= 0 and <= 100, got 150"):
        plain_report(max_flips=150)
    for bad in (math.nan, math.inf):
        with pytest.raises(InputError, match="--max-delta must be a number"):
            plain_report(max_delta=bad)
        with pytest.raises(InputError, match="--max-kl must be a number"):
            plain_report(max_kl=bad)


def test_api_thresholds_are_points_like_recommend():
    # the fixture drops 10 points (2 lost - 1 gained of 10 items): a 1-point limit fails, whichever way
    # it is written; 1 is never read as the fraction 1.0 (= 100 points)
    for one_point in (1, 1.0, "1", "1%", "1pp"):
        (row,) = plain_report(max_delta=one_point).checks
        assert row.status == "fail" and row.threshold == pytest.approx(0.01), one_point


def test_lm_eval_metrics_list_with_entries_that_are_not_names(tmp_path):
    # lm-eval writes "metrics": ["exact_match"] in each sample; an entry that is a list (unhashable) or a
    # number names no metric and raised TypeError before: the choice falls back to the sample's own keys
    for side, src in (("b", LM_BASE), ("q", LM_QUANT)):
        rows = [json.loads(x) for x in next(src.rglob("samples_gsm8k_*.jsonl")).read_text().splitlines()]
        for r in rows:
            r["metrics"] = [[], 7, "exact_match"]
        d = tmp_path / side
        d.mkdir()
        (d / "samples_gsm8k_2026-01-01T00-00-00.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (t,) = api.accuracy(tmp_path / "b", tmp_path / "q", filter="flexible-extract").tasks
    assert t.metric == "exact_match" and (t.lost, t.gained) == (1, 1)  # as test_lm_eval_filter_and_metric_choice
