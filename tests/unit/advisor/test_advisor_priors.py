"""Issue 11, group 5: accuracy priors as data, one rule shape, inclusive boundaries, task and size
rules, every rule with its source and model-neutral text."""

from __future__ import annotations

import re

import pytest

import quantadvise as api
from quantadvise import catalog
from quantadvise.advisor.result import RANKED
from quantadvise.evals.priors import AccuracyRule, expected_drop, judge

RULES = catalog.accuracy_rules()
B8, B70 = 8_030_261_248, 70_553_706_496  # Llama-3(.1)-8B / -70B published_params (data/models.yaml)


def verdicts(scheme, task="general", tol=1.0, params=B8, prompt=2048):
    return {v.rule: v.action for v in judge(RULES, catalog.get_scheme(scheme), task, tol, params=params,
                                            prompt_tokens=prompt)}


def test_every_rule_has_a_source_evidence_and_model_neutral_text():
    for r in RULES:
        # an arXiv id, a model card or a public page: no rule rests on "the chapter" alone any more
        assert re.search(r"arXiv:\d{4}\.\d{4,5}|huggingface\.co/|https://|github\.com/", r.source), r.id
        assert "the chapter" not in r.source, r.id
        assert r.evidence and r.as_of
        # a rule's message is about the format, not one model family (it used to say "LLaMA-3" to a
        # gpt-oss or DeepSeek user)
        assert not re.search(r"llama|qwen|deepseek|gpt-oss|mistral", r.message, re.I), (r.id, r.message)


def test_one_shape_inclusive_boundaries():
    r = next(x for x in RULES if x.id == "sub4-weights")
    lo, hi = r.expected_drop_pct  # arXiv:2404.14047: 3-20 points
    assert (lo, hi) == (3.0, 20.0)
    assert r.action(lo) == "veto"  # the tolerance equals the best published case: no margin left
    assert r.action(lo + 0.01) == "caution" and r.action(hi) == "caution"
    assert r.action(hi + 0.01) == "info"


def test_a_rule_without_a_range_or_subject_is_rejected():
    with pytest.raises(ValueError, match="expected_drop_pct"):
        AccuracyRule.model_validate(dict(id="x", description="d", weights={"bits_max": 3}, expected_drop_pct=[5, 1],
                                         message="m", evidence="e", source="arXiv:2404.14047", as_of="2026-11-29"))
    with pytest.raises(ValueError, match="must describe"):
        AccuracyRule.model_validate(dict(id="x", description="d", expected_drop_pct=[1, 2],
                                         message="m", evidence="e", source="arXiv:2404.14047", as_of="2026-11-29"))


def test_size_aware_4bit_weight_only():
    # RedHatAI Llama-3.1 w4a16 cards: 8B recovers 96.1-99.7% (0.3-3.9 points), 70B 97.4-101%
    # (0-2.6): at a 0.3-point tolerance the 8B is vetoed (0.3 <= 0.3), the 70B only cautioned
    assert verdicts("w4a16", tol=0.3, params=B8) == {"w4-weight-only": "veto"}
    assert verdicts("w4a16", tol=0.3, params=B70) == {"w4-weight-only-large": "caution"}


def test_code_and_long_context_rules_change_the_verdict():
    # code: 4-bit weight-only stays within 0.3-2.6 points of pass@1 on an 8B (HumanEval 99.7%,
    # HumanEval+ 97.4%): at a 3-point tolerance general tasks still get a caution (up to 3.9), code none
    assert verdicts("w4a16", "general", tol=3.0) == {"w4-weight-only": "caution"}
    assert verdicts("w4a16", "code", tol=3.0) == {"code-w4-weight-only": "info"}
    # retrieval past 64K-token inputs (arXiv:2505.20276): the best 4-bit method loses 2.6 points on
    # average (test_long_context_ranges_are_the_papers_figures), so at the default 1-point tolerance
    # 4-bit weights are vetoed (1 <= 2.6), at 3 points cautioned (2.6 < 3 <= 58.6)
    assert verdicts("w4a16", "retrieval", prompt=100_000)["long-context-w4"] == "veto"
    assert verdicts("w4a16", "retrieval", tol=3.0, prompt=100_000)["long-context-w4"] == "caution"
    # 8-bit weights: 0.2 (GPTQ-int8) to 1.0 (FP8) points on average, 7.0 at worst: a caution at 1
    assert verdicts("fp8-dynamic", "retrieval", prompt=100_000)["long-context-w8"] == "caution"
    assert verdicts("fp8-dynamic", "retrieval", tol=7.5, prompt=100_000)["long-context-w8"] == "info"
    assert "long-context-w4" not in verdicts("w4a16", "retrieval", prompt=32_000)


def test_mxfp4_w4a4_is_worse_than_nvfp4_w4a4():
    # arXiv:2509.23202: MXFP4's power-of-two scales lose more than NVFP4 under the same quantizer
    # (Llama-3-8B round-to-nearest recovery 88.1% vs 94.8%); the old rules tied them with no caution.
    mx = {v.rule: v.expected_drop_pct for v in judge(RULES, catalog.get_scheme("mxfp4"), "general", 10, params=B8)}
    nv = {v.rule: v.expected_drop_pct for v in judge(RULES, catalog.get_scheme("nvfp4"), "general", 10, params=B8)}
    assert mx["mxfp4-w4a4"][0] >= nv["nvfp4-w4a4"][1]
    assert verdicts("mxfp4", tol=4.0) == {"mxfp4-w4a4": "veto"} and verdicts("nvfp4", tol=4.0) == {"nvfp4-w4a4": "caution"}


def test_the_accuracy_prior_breaks_ties():
    # H100, batch 512, ctx 2048, spec sheet (--ideal): W8A8 INT8 and W8A8 FP8 price alike (the int8 and
    # fp8 tensor-core peaks are equal); FP8 is lossless (0-0.5 points), INT8 0-3. The old tree showed
    # INT8 as runner-up to FP8 at equal speed by list order; now the prior decides. (With the measured
    # kernel profile they are no tie: vLLM quantizes int8 activations in a separate kernel.)
    r = api.recommend(batch=512, ctx=2048, ideal=True)
    ranked = [a for a in r.alternatives if a.status in RANKED]
    fp8 = next(a for a in ranked if a.scheme in ("fp8-dynamic", "fp8-block"))
    int8 = next(a for a in ranked if a.scheme == "w8a8-int8")
    assert abs(int8.tokens_per_s / fp8.tokens_per_s - 1) <= 0.005  # a tie in the speed model
    assert ranked.index(int8) > ranked.index(fp8)
    assert int8.expected_drop_pct == (0.0, 3.0) and fp8.expected_drop_pct == (0.0, 0.5)
    assert "published accuracy drop is smaller" in int8.reason
    # a tie is no "slower" row: it is ranked after the winner by evidence (or is the runner-up)
    assert int8.status in ("runner-up", "ranked-after")


# arXiv:2505.20276's released scores (github.com/molereddy/long-context-quantization, all_results.csv):
# its long-input benchmarks (Ruler, OneRuler over 64K and 128K tokens, NoCha over whole novels), five
# models, bf16 and each quantization method; "bnb-int4" is the paper's BNB-nf4. OneRuler is the mean of
# oneruler_results.csv's 64K and 128K rows, rounded here to two decimals.
SCORES = {  # (benchmark, model): {method: score}
    ("Ruler", "llama3.1_8b"): {"bf16": 87.7, "fp8": 89.5, "gptq-int8": 88.7, "awq-int4": 83.7, "gptq-int4": 66.7, "bnb-int4": 57.0},
    ("Ruler", "llama3.1_70b"): {"bf16": 82.7, "fp8": 80.0, "gptq-int8": 83.0, "awq-int4": 80.7, "gptq-int4": 79.7, "bnb-int4": 77.7},
    ("Ruler", "qwen2.5_7b"): {"bf16": 41.7, "fp8": 38.8, "gptq-int8": 39.2, "awq-int4": 35.5, "gptq-int4": 38.7, "bnb-int4": 18.0},
    ("Ruler", "qwen2.5_32b"): {"bf16": 53.2, "fp8": 46.2, "gptq-int8": 51.8, "awq-int4": 47.0, "gptq-int4": 47.0, "bnb-int4": 38.5},
    ("Ruler", "qwen2.5_72b"): {"bf16": 66.2, "fp8": 63.3, "gptq-int8": 65.0, "awq-int4": 66.67, "gptq-int4": 58.0, "bnb-int4": 58.0},
    ("OneRuler", "llama3.1_8b"): {"bf16": 57.77, "fp8": 59.06, "gptq-int8": 57.06, "awq-int4": 57.02, "gptq-int4": 52.75, "bnb-int4": 61.27},
    ("OneRuler", "llama3.1_70b"): {"bf16": 71.0, "fp8": 70.44, "gptq-int8": 70.81, "awq-int4": 67.04, "gptq-int4": 64.94, "bnb-int4": 12.42},
    ("OneRuler", "qwen2.5_7b"): {"bf16": 75.0, "fp8": 74.08, "gptq-int8": 75.98, "awq-int4": 70.5, "gptq-int4": 69.85, "bnb-int4": 65.6},
    ("OneRuler", "qwen2.5_32b"): {"bf16": 93.85, "fp8": 94.29, "gptq-int8": 94.12, "awq-int4": 92.38, "gptq-int4": 94.12, "bnb-int4": 93.87},
    ("OneRuler", "qwen2.5_72b"): {"bf16": 89.19, "fp8": 87.92, "gptq-int8": 89.19, "awq-int4": 89.38, "gptq-int4": 88.23, "bnb-int4": 89.77},
    ("NoCha", "llama3.1_8b"): {"bf16": 15.4, "fp8": 15.4, "gptq-int8": 15.4, "awq-int4": 14.0, "gptq-int4": 15.2, "bnb-int4": 18.5},
    ("NoCha", "llama3.1_70b"): {"bf16": 29.6, "fp8": 29.2, "gptq-int8": 29.6, "awq-int4": 27.2, "gptq-int4": 25.4, "bnb-int4": 22.5},
    ("NoCha", "qwen2.5_7b"): {"bf16": 24.9, "fp8": 24.9, "gptq-int8": 24.9, "awq-int4": 22.3, "gptq-int4": 25.3, "bnb-int4": 24.9},
    ("NoCha", "qwen2.5_32b"): {"bf16": 38.5, "fp8": 38.5, "gptq-int8": 38.5, "awq-int4": 35.8, "gptq-int4": 38.3, "bnb-int4": 31.3},
    ("NoCha", "qwen2.5_72b"): {"bf16": 39.8, "fp8": 39.8, "gptq-int8": 39.8, "awq-int4": 38.5, "gptq-int4": 39.4, "bnb-int4": 41.3},
}


def _drops(method):
    """Drop in %-points against bf16 on each (benchmark, model) of the paper's long-input results."""
    return [s["bf16"] - s[method] for s in SCORES.values()]


def test_long_context_ranges_are_the_papers_figures():
    # Points, not relative %: the low end is the best method's average drop, the high end the worst
    # single result, read the same way for 4-bit and 8-bit weights.
    def mean(xs):
        return sum(xs) / len(xs)

    w4 = {m: mean(_drops(m)) for m in ("awq-int4", "gptq-int4", "bnb-int4")}
    w8 = {m: mean(_drops(m)) for m in ("fp8", "gptq-int8")}
    assert round(w4["awq-int4"], 1) == 2.6 and round(w4["gptq-int4"], 1) == 4.2 and round(w4["bnb-int4"], 1) == 10.4
    assert round(w8["gptq-int8"], 1) == 0.2 and round(w8["fp8"], 1) == 1.0
    worst4 = max(d for m in w4 for d in _drops(m))  # BNB-nf4 on Llama-3.1-70B OneRuler: 71.0 -> 12.42
    worst8 = max(d for m in w8 for d in _drops(m))  # FP8 on Qwen-2.5-32B Ruler: 53.2 -> 46.2
    rules = {r.id: r.expected_drop_pct for r in RULES}
    assert rules["long-context-w4"] == (round(min(w4.values()), 1), round(worst4, 1)) == (2.6, 58.6)
    assert rules["long-context-w8"] == (round(min(w8.values()), 1), round(worst8, 1)) == (0.2, 7.0)
    # every 4-bit method averages more than every 8-bit one: "4-bit methods lose more" (abstract)
    assert min(w4.values()) > max(w8.values())


def test_retrieval_past_64k_vetoes_4bit_weights_and_changes_the_answer():
    # Llama-3.1-8B, one sequence of 100,000 tokens: prompt 100,000 - 256 = 99,744 >= 65,536, so the
    # long-context rules apply to --task retrieval. Without the task the 4-bit-weight candidates are ranked
    # (at batch 1 and 100k tokens the step is mostly KV reads: they tie with the 8-bit ones within the model's
    # uncertainty, issue 25). With it, the 4-bit range's low end (2.6 points, the best 4-bit method's average)
    # is >= the default 1-point tolerance: every 4-bit-weight candidate is vetoed, and an 8-bit (or 16-bit)
    # scheme is recommended.
    kw = dict(model="meta-llama/Llama-3.1-8B", ctx=100_000, batch=1)
    plain = api.recommend(**kw)
    assert any(catalog.get_scheme(a.scheme).weight is not None and catalog.get_scheme(a.scheme).weight.bits == 4
               and a.status in ("recommended", "runner-up", "ranked-after", "slower") for a in plain.alternatives)
    r = api.recommend(**kw, task="retrieval")
    assert r.scheme.axes.weights is None or r.scheme.axes.weights.bits >= 8
    acc = next(t for t in r.trace if t.node == "accuracy").numbers
    for a in r.alternatives:
        s = catalog.get_scheme(a.scheme)
        if s.weight is not None and s.weight.bits <= 4:
            assert a.status == "vetoed" and a.scheme in acc["vetoed"], a.scheme


@pytest.mark.parametrize("task", ["general", "code", "reasoning", "retrieval"])
@pytest.mark.parametrize("params", [B8, B70])
def test_w4a8_follows_the_4bit_weight_rows(task, params):
    # W4A8's FP8 activations are lossless (arXiv:2411.02355, W8A8-FP): its 4-bit weights carry the
    # error, so for every model size and task it gets the same range as 4-bit weight-only (its own
    # message says so). The old data gave a 70B W4A8 the 8B card's 0.3-3.9 and no code row.
    def drop(scheme):
        return expected_drop(judge(RULES, catalog.get_scheme(scheme), task, 1.0, params=params, prompt_tokens=100_000))

    assert drop("w4a8-fp8") == drop("w4a16")
    expected = {("general", B8): (0.3, 3.9), ("general", B70): (0.0, 2.6),  # RedHatAI 8B / 70B w4a16 cards
                ("code", B8): (0.3, 2.6), ("code", B70): (0.0, 0.8)}  # their HumanEval / HumanEval+ rows
    if (task, params) in expected:
        assert drop("w4a8-fp8") == expected[(task, params)]


def test_w4a8_on_a_70b_coding_workload():
    # Llama-3.1-70B on 2 x H100, --task code: W4A8 gets the 70B code row (0-0.8 points of pass@1), like
    # 4-bit weight-only, instead of the 8B card's 0.3-3.9.
    r = api.recommend(model="meta-llama/Llama-3.1-70B", gpu="h100", gpus=2, ctx=4096, task="code")
    rows = {a.scheme: a.expected_drop_pct for a in r.alternatives}
    assert rows["w4a8-fp8"] == rows["w4a16"] == (0.0, 0.8)


def test_lm_head_range_is_the_auto_round_figures():
    # intel/auto-round docs/tips_and_tricks.md, "Should the LM-head Be Quantized?": INT4 W4G128 with and
    # without an INT4 lm_head. 16-task averages: GLM4-chat 0.6230 -> 0.6204, Qwen2.5-7B-Instruct
    # 0.6586 -> 0.6577; worst single task IFEval prompt-level strict on GLM4-chat, 0.4233 -> 0.4067.
    averages = [(0.6230 - 0.6204) * 100, (0.6586 - 0.6577) * 100]  # 0.26, 0.09 points
    worst = (0.4233 - 0.4067) * 100  # 1.66 points
    rule = next(r for r in RULES if r.id == "lm-head-quantized")
    assert rule.expected_drop_pct == (round(min(averages), 1), round(worst, 1)) == (0.1, 1.7)
    assert "github.com/intel/auto-round" in rule.source
