"""`quantadvise accuracy` on hostile log-probs: NaN, +-inf, 1e400, numerals in strings, values near a float's end.

The rules (src/quantadvise/artifacts/evidence.py reads, src/quantadvise/evals/stats.py computes):
- a log-prob is a number; any finite value is read — each item's values are softmax-normalised
  (docs/accuracy.md), a shift-invariant operation, so they are unnormalised log-weights;
- NaN and +inf (``Infinity``, ``1e400``, which a JSON parser turns into inf) are errors naming the file,
  line and field; plain JSONL takes JSON numbers, not strings (lm-eval's stringified values are read);
- -inf is probability 0 for that choice, allowed beside a finite value; -inf for every choice is an error;
- the log-softmax subtracts the largest value and never adds it back, so values near a float's end
  give the right distribution, and a mean of huge per-item KLs does not overflow.

Every bad input: exit 2, one ``Error:`` line, no traceback — and never a PASS.

The baseline of the CLI cases: 30 items, each ``[-0.5, -1.5, -2.5, -3.5]``, whose softmax is
p_i = e^-i / S, i = 0..3, S = 1 + e^-1 + e^-2 + e^-3 = 1 + 0.3678794 + 0.1353353 + 0.0497871 = 1.5530018 (the -0.5 shift cancels):
p = (0.6439143, 0.2368828, 0.0871443, 0.0320586).
"""

from __future__ import annotations

import json
import math
import sys

import pytest

from quantadvise.errors import InputError
from quantadvise.evals.stats import Sample, TaskSamples, _log_softmax, compare, kl_divergence, mean
from tests.oneline import one_error

S = 1 + math.exp(-1) + math.exp(-2) + math.exp(-3)
P = [math.exp(-i) / S for i in range(4)]
BASE = "[-0.5, -1.5, -2.5, -3.5]"


def _write(path, logprobs: str, n: int = 30) -> None:
    path.write_text("".join(f'{{"id": {i}, "correct": {"true" if i % 3 else "false"}, "logprobs": {logprobs}}}\n'
                            for i in range(n)))


def _one_error(r, *fragments: str) -> str:
    line = one_error(r, *fragments)
    assert "PASS" not in r.stdout and "passed" not in r.stdout
    return line


# --- plain JSONL through the CLI ------------------------------------------------------------------------------

@pytest.mark.parametrize(("logprobs", "fragment"), ids=["all-minus-inf", "nan", "plus-inf", "1e400", "string-inf",
                                                        "string-nan", "string-number", "bool"], argvalues=[
    ("[-Infinity, -Infinity, -Infinity, -Infinity]", "is -inf for every choice"),
    ("[NaN, -1.5, -2.5, -3.5]", "item 0 is NaN"),
    ("[-0.5, Infinity, -2.5, -3.5]", "item 1 is +inf"),
    ("[-0.5, -1.5, 1e400, -3.5]", "item 2 is +inf"),  # json.loads('1e400') == inf
    ('["inf", -1.5, -2.5, -3.5]', "item 0 is a string ('inf'), not a JSON number"),
    ('[-0.5, "nan", -2.5, -3.5]', "item 1 is a string ('nan'), not a JSON number"),
    ('[-0.5, -1.5, "-2.5", -3.5]', "item 2 is a string ('-2.5'), not a JSON number"),
    ("[-0.5, true, -2.5, -3.5]", "item 1 is true, not a number"),
])
def test_a_log_prob_that_is_no_finite_number_is_one_error(cli, tmp_path, logprobs, fragment):
    _write(tmp_path / "base.jsonl", BASE)
    _write(tmp_path / "bad.jsonl", logprobs)
    for args in (("base.jsonl", "bad.jsonl", "--max-kl", "0.1"), ("bad.jsonl", "base.jsonl", "--max-kl", "0.1")):
        _one_error(cli("accuracy", *args), "bad.jsonl: line 1: field 'logprobs' ", fragment)


def test_a_mapping_with_an_infinite_value_names_the_key(cli, tmp_path):
    (tmp_path / "b.jsonl").write_text('{"id": 1, "correct": 1, "logprobs": {"A": -0.1, "B": NaN}}\n')
    (tmp_path / "q.jsonl").write_text('{"id": 1, "correct": 1, "logprobs": {"A": -0.1, "B": -2.4}}\n')
    _one_error(cli("accuracy", "b.jsonl", "q.jsonl", "--max-kl", "1"), "b.jsonl: line 1: field 'logprobs' key 'B' is NaN")


def test_values_near_a_floats_end_give_the_true_kl(cli, tmp_path):
    # [-1e308] * 4 is the uniform distribution (equal log-weights), q_i = 1/4, however large they are.
    # KL(base || uniform) = sum p_i ln(p_i / (1/4)) = ln 4 + sum p_i ln p_i
    #   = 1.3862944 + (0.6439143 ln 0.6439143 + 0.2368828 ln 0.2368828 + 0.0871443 ln 0.0871443
    #                  + 0.0320586 ln 0.0320586)
    #   = 1.3862944 - (0.2834444 + 0.3411562 + 0.2126487 + 0.1102877) = 1.3862944 - 0.9475370
    #   = 0.4387574 nats per item,
    # the same on all 30 items: the mean. (Before the fix: 0, a PASS.)
    expected = sum(p * math.log(4 * p) for p in P)
    assert 0.43875 < expected < 0.43876
    _write(tmp_path / "base.jsonl", BASE)
    _write(tmp_path / "tiny.jsonl", "[-1e308, -1e308, -1e308, -1e308]")
    r = cli("accuracy", "base.jsonl", "tiny.jsonl", "--max-kl", "0.1", "-f", "json")
    assert r.code == 1, r.stderr  # 0.44 > 0.1: fails
    (t,) = r.json()["tasks"]
    assert t["kl"]["items"] == 30
    assert t["kl"]["mean_nats"] == pytest.approx(expected, rel=1e-12)
    assert [c["status"] for c in r.json()["checks"]] == ["fail"]


def test_huge_finite_values_give_a_finite_kl_and_no_overflow(cli, tmp_path):
    # [1e308, 1e308, -2.5, -3.5]: q = (1/2, 1/2, e^(-2.5 - 1e308)/2, e^(-3.5 - 1e308)/2), so
    # ln q_1 = ln q_2 = -ln 2 and ln q_3 = -1e308 - 2.5 - ln 2, ln q_4 = -1e308 - 3.5 - ln 2 (= -1e308 in
    # floats). KL = p_1 ln(2 p_1) + p_2 ln(2 p_2) + p_3 (ln p_3 + 1e308 + ...) + p_4 (ln p_4 + 1e308 + ...)
    #   = (p_3 + p_4) * 1e308 up to terms 1e-308 of it smaller
    #   = (e^-2 + e^-3) / S * 1e308 = 0.1851224 / 1.5530018 * 1e308 = 1.192029e307 nats per item.
    # 30 such items sum past a float's end (3.6e308): the mean is still the per-item value.
    expected = (math.exp(-2) + math.exp(-3)) / S * 1e308
    assert 1.19202e307 < expected < 1.19203e307
    _write(tmp_path / "base.jsonl", BASE)
    _write(tmp_path / "big.jsonl", "[1e308, 1e308, -2.5, -3.5]")
    r = cli("accuracy", "base.jsonl", "big.jsonl", "--max-kl", "0.1", "-f", "json")
    assert r.code == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert r.json()["tasks"][0]["kl"]["mean_nats"] == pytest.approx(expected, rel=1e-12)


def test_shared_keys_that_are_all_minus_inf_on_one_side_are_one_error(cli, tmp_path):
    # Each record alone is normalisable, but on the keys both share (a, b) the baseline is -inf twice.
    (tmp_path / "b.jsonl").write_text('{"id": 1, "correct": 1, "logprobs": {"a": -Infinity, "b": -Infinity, '
                                      '"c": 0}}\n')
    (tmp_path / "q.jsonl").write_text('{"id": 1, "correct": 1, "logprobs": {"a": -1, "b": -2, "d": -3}}\n')
    _one_error(cli("accuracy", "b.jsonl", "q.jsonl", "--max-kl", "1"), "b.jsonl line 1", "field 'logprobs'",
               "on the keys both sides share", "every entry is -inf")


# --- lm-eval samples: the harness stringifies the log-likelihoods --------------------------------------------

def _lm_eval(path, values: list[str]) -> None:
    path.write_text(json.dumps({"doc_id": 0, "acc": 1.0, "filtered_resps": [[v, "False"] for v in values]}) + "\n")


@pytest.mark.parametrize(("values", "fragment"), ids=["nan", "inf", "1e400", "all-minus-inf"], argvalues=[
    (["nan", "-1.0"], "choice 0: the log-likelihood 'nan' is NaN"),
    (["-1.0", "inf"], "choice 1: the log-likelihood 'inf' is +inf"),
    (["-1.0", "1e400"], "choice 1: the log-likelihood '1e400' is +inf"),
    (["-inf", "-inf", "-inf"], "is -inf for every choice"),
])
def test_lm_eval_log_likelihoods_that_are_no_finite_number(cli, tmp_path, values, fragment):
    _lm_eval(tmp_path / "samples_arc_easy_2026-01-01T00-00-00.jsonl", values)
    (tmp_path / "q").mkdir()
    _lm_eval(tmp_path / "q" / "samples_arc_easy_2026-01-01T00-00-00.jsonl", ["-1.0", "-2.0", "-3.0"][:len(values)])
    _one_error(cli("accuracy", "samples_arc_easy_2026-01-01T00-00-00.jsonl", "q", "--max-kl", "1"),
               "samples_arc_easy_2026-01-01T00-00-00.jsonl: line 1: field 'filtered_resps' ", fragment)


# --- the math, pure ----------------------------------------------------------------------------------------------

def test_log_softmax_does_not_lose_ln_n_near_a_floats_end():
    # equal values: uniform, ln(1/4) each — before, -1e308 + ln 4 rounded back to -1e308 and gave 0 each
    assert _log_softmax([-1e308] * 4) == [-math.log(4)] * 4
    assert _log_softmax([1e308] * 2) == [-math.log(2)] * 2
    # 1e308 - (-1e308) is past a float's range: the small one keeps the most negative finite value, never -inf
    # (-inf means a probability of exactly 0, which only an input -inf says)
    assert _log_softmax([1e308, -1e308]) == [0.0, -sys.float_info.max]


def test_kl_with_a_probability_that_underflows_is_not_infinite():
    # base [0, -1e308]: p = (1, e^-1e308); quant [1e308, -1e308]: q = (1, e^-2e308). KL = p_2 ln(p_2/q_2)
    # = e^-1e308 * 1e308 = 0 to any float precision. Before: the quantized side's -1e308 - 1e308 became -inf,
    # read as q_2 = 0 exactly, and KL was inf.
    assert kl_divergence([0.0, -1e308], [1e308, -1e308]) == 0.0


@pytest.mark.parametrize("bad", [[math.nan, -1.0], [math.inf, -1.0], [-math.inf, -math.inf]])
def test_kl_refuses_what_cannot_be_normalised(bad):
    # before: NaN gave max(0.0, nan) = 0.0 — a KL of 0 that passes any --max-kl
    with pytest.raises(ValueError, match="cannot be normalised"):
        kl_divergence([-1.0, -2.0], bad)
    with pytest.raises(ValueError, match="cannot be normalised"):
        kl_divergence(bad, [-1.0, -2.0])


def test_mean_of_huge_values_does_not_overflow():
    # 3 x 1e308 sums past a float's end (1.797e308); the mean is 1e308. (1e308 + 1e307) / 2 = 5.5e307.
    assert mean([1e308, 1e308, 1e308]) == pytest.approx(1e308, rel=1e-15)
    assert mean([1e308, 1e308, 1e307, 1e307]) == pytest.approx(5.5e307, rel=1e-15)
    assert mean([0.5, math.inf]) == math.inf


def test_a_library_caller_with_nan_log_probs_gets_one_input_error():
    # Samples built in code skip the file reader: compare() must refuse, naming file, line and field.
    base = TaskSamples("t", "b.jsonl", "jsonl", "correct", (Sample("1", True, 3, (-1.0, -2.0)),))
    quant = TaskSamples("t", "q.jsonl", "jsonl", "correct", (Sample("1", True, 4, (math.nan, -2.0)),))
    with pytest.raises(InputError, match=r"q\.jsonl line 4, field 'logprobs'.*entry 0 is NaN") as exc:
        compare([base], [quant], thresholds=None)
    assert exc.value.field == "logprobs"


def test_an_infinite_kl_fails_the_gate_and_its_json_stays_json(cli, tmp_path):
    # the quantized side gives probability 0 (-inf) to a choice the baseline gives exp(-3.5) / S': KL(base||quant)
    # = +inf on every item, so --max-kl fails (exit 1); JSON has no Infinity: the report printed `Infinity`,
    # which strict readers refuse — now null, with the count of infinite items beside it
    _write(tmp_path / "b.jsonl", BASE)
    _write(tmp_path / "q.jsonl", "[-0.5, -1.5, -2.5, -Infinity]")
    r = cli("accuracy", str(tmp_path / "b.jsonl"), str(tmp_path / "q.jsonl"), "--max-kl", "0.1", "-f", "json")
    assert r.code == 1, r.stderr

    def refuse(const):
        raise ValueError(const)

    doc = json.loads(r.stdout, parse_constant=refuse)
    kl = doc["tasks"][0]["kl"]
    assert (kl["items"], kl["infinite_items"], kl["mean_nats"], kl["max_nats"]) == (30, 30, None, None)
    assert [(c["check"], c["status"], c["value"]) for c in doc["checks"]] == [("kl", "fail", None)]
