"""Issue 11, group 2: rank by what each candidate delivers at the concurrency it holds; ties broken
by evidence, never by list order. Issue 25: a tie is a gap inside the model's uncertainty (the tokens/s
intervals of the two candidates overlap), not a fixed 0.5%."""

from __future__ import annotations

import math
import random

import pytest

import quantadvise as api
from quantadvise import catalog, defaults
from quantadvise.advisor.options import Option, beats, evidence_key, rank, tie_reason, ties
from quantadvise.advisor.result import RANKED
from quantadvise.perf.efficiency import resolve
from quantadvise.perf.profiles import IDEAL
from quantadvise.scheme.axes import DeployHints


def node(rec, name):
    return next(t for t in rec.trace if t.node == name)


def alt(rec, scheme):
    return next(a for a in rec.alternatives if a.scheme == scheme)


def test_70b_on_one_h100_at_64x8k_ranks_what_holds_the_batch():
    # Llama-3.1-70B: 80 layers x 8 KV heads x 128 x 2 (K, V) x 1 byte (fp8) = 163,840 B per token;
    # a sequence averages 7,936 + 256/2 = 8,064 tokens -> 1,321,205,760 B. The budget is vLLM 0.33.0's
    # default share, given (the figures below are drawn at it; at 0.34.0's own, the GPU less 1 GiB, fp8-dynamic holds 7)
    # of the H100's 85,520,809,984 B less 2 GiB: floor(85,520,809,984 x 0.92) = 78,679,145,185
    # - 2,147,483,648 = 76,531,661,537 B; 4-bit weights (39,500,407,552 B) leave 37,031,253,985 B
    # -> floor(28.03) = 28 sequences; fp8-dynamic's 72,669,806,592 B leave 3,861,854,945 B -> floor(2.92)
    # = 2 sequences. The old tree ranked fp8-dynamic first on its speed at a batch of 64 it cannot hold
    # ("fastest candidate that fits", fits: false).
    r = api.recommend(model="meta-llama/Llama-3.1-70B", gpu="h100", batch=64, ctx=8192, memory_utilization=0.92)
    fit = node(r, "fit").numbers
    per_seq = 80 * 8 * 128 * 2 * 1 * (7936 + 128)
    assert per_seq == 1_321_205_760
    fp8 = alt(r, "fp8-dynamic")
    assert fit["budget_bytes"] == 76_531_661_537
    assert fp8.concurrency == math.floor((fit["budget_bytes"] - fp8.weights_bytes) / per_seq) == 2
    winner = alt(r, r.scheme.id)
    # a 4-bit winner holds what its own weights leave: w4a16's 39,500,407,552 B leave 28 (above); nvfp4's
    # 42,709,045,632 B leave 33,822,615,905 B -> floor(25.6) = 25 — the two tie within the model's uncertainty
    # and the published accuracy drop orders them (issue 25)
    assert winner.concurrency == math.floor((fit["budget_bytes"] - winner.weights_bytes) / per_seq) >= 25
    assert r.scheme.axes.weights.bits == 4 and r.kv.dtype == "kv-fp8"
    assert winner.tokens_per_s > fp8.tokens_per_s
    assert "fp8-dynamic" in fp8.reason or "fewer output tokens/s" in fp8.reason
    # the whole batch would need more GPUs, computed for the winner: weights + 64 sequences of KV
    # 39.5 + 64 x 1.32 = 124.1 GB: more than one 76.5 GB budget, within two (153.1 GB)
    assert r.performance.gpus_for_batch == 2


def _opt(name, tps, *, conc=8, drop=(0.0, 0.0), native=False, weights=0, optimized=None, behind=False):
    from quantadvise.advisor.result import EngineVerdict

    o = Option(scheme=catalog.get_scheme(name), deploy=DeployHints(), efficiency=resolve([IDEAL], ("h100-sxm",)),
               throughput=tps, concurrency=conc, expected_drop=drop, weights_bytes=weights,
               engine=EngineVerdict(supported=True, optimized=optimized), behind_native=behind)
    if native:
        from quantadvise.checkpoint.parse import parse_quantization_config

        o.checkpoint = parse_quantization_config({"quant_method": "fp8", "activation_scheme": "dynamic",
                                                  "weight_block_size": [128, 128]})
    return o


def test_rank_is_a_pure_function_of_the_numbers():
    opts = [_opt("w4a16", 100.0, drop=(0.3, 3.9)), _opt("awq", 100.2, drop=(0.3, 3.9), weights=2),
            _opt("fp8-dynamic", 100.1, drop=(0.0, 0.5)), _opt("w8a8-int8", 100.0, drop=(0.0, 3.0)),
            _opt("nvfp4", 80.0), _opt("fp8-block", 100.0, native=True), _opt("w8a16", 100.4, conc=6)]
    expected = [o.id for o in rank(opts)]
    rng = random.Random(11)
    for _ in range(50):
        shuffled = opts[:]
        rng.shuffle(shuffled)
        assert [o.id for o in rank(shuffled)] == expected
    # the tie (all within 0.5% of 100.4: spec-sheet options carry no band) is ordered by evidence: native,
    # accuracy prior (worst case, then best), basis, maturity, sequences held, then the central estimate
    # (awq's 100.2 before w4a16's 100.0); the 20% slower one is last
    assert expected == ["fp8-block", "w8a16", "fp8-dynamic", "w8a8-int8", "awq", "w4a16", "nvfp4"]


def test_evidence_order():
    nat = _opt("fp8-block", 100.0, native=True, drop=(0.0, 0.5))
    more = _opt("w4a16", 100.0, conc=9, drop=(0.3, 3.9))
    safer = _opt("fp8-dynamic", 100.0, drop=(0.0, 0.5))
    riskier = _opt("w8a8-int8", 100.0, drop=(0.0, 3.0))
    slow_engine = _opt("w8a16", 100.0, drop=(0.0, 0.5), optimized=False)
    # issue 25: the sequences held are already in the tokens/s each is priced at; they order a tie only after
    # the accuracy prior, the basis and the engine's maturity
    assert sorted([slow_engine, riskier, safer, more, nat], key=evidence_key) == [nat, safer, slow_engine, riskier, more]


def _overlap(a, b):
    ia, ib = a.uncertainty.tokens_per_s, b.uncertainty.tokens_per_s
    return ia.low <= ib.high and ib.low <= ia.high


def test_ties_are_labelled_only_within_the_tie():
    # Issue 11 group 6: "a candidate 37% faster is labelled 'ties'". Every tie label is a gap inside the
    # model's uncertainty (issue 25: the printed tokens/s intervals overlap); every other label names the ratio.
    for kw in (dict(batch=64, ctx=2048), dict(batch=512, ctx=2048, gpu="a100-80gb"),
               dict(model="deepseek-ai/DeepSeek-V3", gpu="h200", gpus=8, batch=64, ctx=32768),
               dict(model="openai/gpt-oss-120b", gpu="h100", batch=16, ctx=4096)):
        r = api.recommend(**kw)
        top = r.performance.tokens_per_s
        for a in r.alternatives:
            if a.status not in RANKED[1:]:
                continue
            if a.reason.startswith("tie within the model's uncertainty"):
                assert _overlap(a, alt(r, r.scheme.id)), (kw, a.scheme, a.reason)
                assert "comes first" in a.reason and "candidate order" not in a.reason
            elif a.tokens_per_s > top * (1 + defaults.TIE) and not _overlap(a, alt(r, r.scheme.id)):
                assert "ranks after" in a.reason  # faster but behind the shipped checkpoint: says so


@pytest.mark.parametrize("kw", [dict(batch=64, ctx=2048), dict(batch=8, ctx=4096, gpu="l40s")])
def test_the_winner_delivers_the_most_of_the_deployable(kw):
    r = api.recommend(**kw)
    ranked = [a for a in r.alternatives if a.status in RANKED]
    assert ranked[0].scheme == r.scheme.id
    # none delivers more beyond the model's uncertainty (issue 25: a faster one inside it ties)
    assert all(a.tokens_per_s <= ranked[0].tokens_per_s * (1 + defaults.TIE) or _overlap(a, ranked[0])
               for a in ranked)


@pytest.mark.parametrize("kw, out_of_order", [
    # Llama-3.1-70B on one H100 under an 80 ms ITL budget: w4a8-fp8 delivers more than the 4-bit weight-only
    # candidates inside the model's uncertainty (a composed kernel), where evidence puts them first
    (dict(model="meta-llama/Llama-3.1-70B", gpu="h100", prompt=1000, output=200, itl_ms=80), True),
    (dict(batch=64, ctx=2048), None),
    (dict(model="meta-llama/Llama-3.1-70B", gpu="h100", batch=64, ctx=8192), None),
])
def test_a_candidate_ranked_after_a_slower_one_says_why(kw, out_of_order):
    # the audit: "nvfp4 (866 tok/s) is runner-up while w4a16 (869) is 'slower'", with no tie reason
    r = api.recommend(**kw)
    ranked = [a for a in r.alternatives if a.status in RANKED]
    hits = 0
    for i, a in enumerate(ranked[1:], start=1):
        before = [b for b in ranked[1:i] if b.tokens_per_s < a.tokens_per_s]
        if before:
            # it out-delivers a candidate ranked before it: only a tie (inside the model's uncertainty: the
            # intervals overlap) broken by evidence may do that, and the reason says which candidate and why
            assert a.tokens_per_s <= before[0].tokens_per_s * 1.005 + 1e-9 or _overlap(a, before[0])
            assert f"than {before[0].scheme}" in a.reason or f"as fast as {before[0].scheme}" in a.reason
            assert "comes first" in a.reason
            hits += 1
    if out_of_order is not None:  # the case above is known to have one
        assert (hits > 0) == out_of_order


def test_only_the_shipped_checkpoint_outranks_a_faster_requantization():
    # Issue 11: "rank by delivered tokens/s and sequences held; ties broken by evidence". The one
    # precedence on top: a re-quantization whose published accuracy range reaches the tolerance
    # (behind_native) ranks after the checkpoint as shipped - after it, not after every other candidate.
    # Native 100 tok/s is credited its 15% margin (115). By speed: risky 200, plain 130, native 115,
    # risky2 90, slow 60; the two risky ones move to just after native, keeping their order; slow stays last.
    nat = _opt("fp8-block", 100.0, native=True)
    risky = _opt("w4a16", 200.0, behind=True, drop=(0.0, 2.6))
    plain = _opt("fp8-dynamic", 130.0)
    risky2 = _opt("awq", 90.0, behind=True, drop=(0.0, 2.6))
    slow = _opt("w8a16", 60.0)
    order = [o.id for o in rank([slow, risky2, plain, risky, nat])]
    assert order == ["fp8-dynamic", "fp8-block", "w4a16", "awq", "w8a16"]
    # the old tiers put every risky re-quantization after every plain candidate: awq (90) after w8a16 (60)
    assert order.index("awq") < order.index("w8a16")
    # without a shipped checkpoint in the list the flag changes nothing: speed decides
    assert [o.id for o in rank([slow, risky2, plain, risky])] == ["w4a16", "fp8-dynamic", "awq", "w8a16"]


def test_a_requantization_that_ranks_after_the_shipped_checkpoint_does_not_keep_it_out_of_first_place():
    # DeepSeek-V3 on 8 x B300 under SGLang (batch 256 x 8,192): bf16 fits there (1.34 TB on 2.2 TB), and the shipped
    # FP8 checkpoint (1,329 tok/s, credited its 15% margin: 1,528) tied with bf16 (1,533 +-26%) but was beaten beyond
    # the uncertainty by nvfp4 (1,749 +-1.6%) — a re-quantization with an accuracy risk that ranks after the shipped
    # checkpoint whatever its speed. That beat still kept the checkpoint out of first place, so bf16 (a checkpoint that
    # does not exist for this model) won, its reason "it is the checkpoint as shipped". The same numbers here:
    nat = _opt("fp8-block", 100.0, native=True)
    bf16 = _opt("bf16", 116.0)
    risky = _opt("nvfp4", 132.0, behind=True, drop=(0.0, 1.0))
    nat.u_own, bf16.u_own, risky.u_own = 0.02, 0.26, 0.016
    # 100 x 1.15 x 1.02 = 117.3 < 132 x 0.984 = 129.9: nvfp4 beats the checkpoint; 116 x 1.26 = 146.2 > 129.9 and
    # 116 x 0.74 = 85.8 < 117.3: bf16 ties with both
    assert beats(risky, nat) and not beats(risky, bf16) and ties(bf16, nat)
    order = [o.id for o in rank([bf16, risky, nat])]
    assert order == ["fp8-block", "bf16", "nvfp4"]
    assert tie_reason(nat, bf16) == "it is the checkpoint as shipped"
    # where the evidence favours the one ranked later, the reason says what put it there instead of naming evidence
    # the winner does not have
    assert tie_reason(bf16, nat) == "a candidate ranked before fp8-block delivers more than it beyond the model's uncertainty"


def test_a_local_awq_checkpoint_runner_up_is_the_best_remaining(tmp_path):
    # hugging-quants Meta-Llama-3.1-70B-Instruct-AWQ-INT4 on one H100, batch 8 x 4,096: the audit found
    # fp8-block (2 of 8 sequences held, 68 tok/s) as runner-up ahead of w4a16 (8 of 8, 203 tok/s) because
    # every cautioned re-quantization was tiered after every uncautioned one. The runner-up must be the
    # best remaining candidate by delivered tokens/s, or say why a faster one ranks after it.
    import json
    from pathlib import Path

    doc = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "checkpoints" /
                      "hugging-quants-meta-llama-3.1-70b-instruct-awq-int4.json").read_text())
    folder = tmp_path / "Llama-3.1-70B-Instruct-AWQ-INT4"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(doc["config"]))
    r = api.recommend(model=str(folder), gpu="h100", batch=8, ctx=4096, memory_utilization=0.92)
    assert r.scheme.id == "native-awq"
    _faster_rows_say_why(r)
    ranked = [a for a in r.alternatives if a.status in RANKED]
    held = {a.scheme: a.concurrency for a in ranked}
    # node e keeps a bf16 cache here; a sequence holds 3,840 + 256/2 = 3,968 tokens x (80 layers x 8 KV
    # heads x 128 x 2 x 2 B) = 1,300,234,240 B. At vLLM 0.33.0's default share, given (0.92: at 0.34.0's default
    # fp8-block would hold 7 of the 8), fp8-block's weights leave (76,531,661,537 B budget -
    # its weights) / 1,300,234,240 = 2.9 -> 2 sequences; the 4-bit candidates' ~40 GB leave room for 28.
    assert r.kv.dtype == "kv-bf16"
    per_seq = 80 * 8 * 128 * 2 * 2 * (3840 + 128)
    fp8 = next(a for a in ranked if a.scheme == "fp8-block")
    assert held["fp8-block"] == (76_531_661_537 - fp8.weights_bytes) // per_seq == 2
    assert ranked[1].scheme != "fp8-block" and held[ranked[1].scheme] == 8


@pytest.mark.parametrize("kw", [
    dict(model="deepseek-ai/DeepSeek-V3", gpu="h200", gpus=8, batch=64, ctx=32768),
    dict(model="openai/gpt-oss-120b", gpu="h100", batch=80, ctx=4096),
    dict(batch=512, ctx=2048, ideal=True),
    dict(batch=64, ctx=2048),
])
def test_labels_follow_the_numbers(kw):
    _faster_rows_say_why(api.recommend(**kw))


def _faster_rows_say_why(r):
    """Every ranked row placed after one it out-delivers beyond the model's uncertainty says why (the shipped
    checkpoint's precedence or margin); a row whose interval overlaps the winner's is never "slower"
    (issue 25); a row placed after one it out-delivers inside the uncertainty names the tie and the evidence."""
    tie = defaults.TIE
    ranked = [a for a in r.alternatives if a.status in RANKED]
    top = ranked[0]
    for i, a in enumerate(ranked[1:], start=1):
        if a.status == "slower":
            assert a.tokens_per_s * (1 + tie) < top.tokens_per_s, (a.scheme, a.reason)
            assert a.uncertainty is None or not _overlap(a, top), (a.scheme, a.reason)
        elif i > 1:
            assert a.status == "ranked-after", (a.scheme, a.status)
        passed = [b for b in ranked[:i] if a.tokens_per_s > b.tokens_per_s * (1 + tie)]
        if passed and (a.uncertainty is None or not all(_overlap(a, b) for b in passed)):
            native = next(b.scheme for b in ranked if b.native)
            assert f"ranks after {native}" in a.reason, (a.scheme, a.reason)
        elif passed:
            assert "comes first" in a.reason or "ranks after" in a.reason, (a.scheme, a.reason)


def test_sixteen_bit_weights_of_a_model_that_ships_quantized_are_served_from_their_own_folder():
    # served from the model's own id, both engines read its quantization_config and load the shipped quantized
    # weights (deepseek-ai/DeepSeek-V3 is FP8 only): a bf16 candidate of such a model runs from a 16-bit copy's folder,
    # the native candidate and a 16-bit model's bf16 from the id itself
    from types import SimpleNamespace

    from quantadvise.advisor.plan import checkpoint_path

    shipped = SimpleNamespace(model_id="deepseek-ai/DeepSeek-V3", workload=None, native=object())
    plain = SimpleNamespace(model_id="meta-llama/Meta-Llama-3-8B", workload=None, native=None)
    bf16, nat, fp8 = _opt("bf16", 1.0), _opt("fp8-block", 1.0, native=True), _opt("fp8-dynamic", 1.0)
    assert checkpoint_path(shipped, bf16) == "./DeepSeek-V3-bf16"
    assert checkpoint_path(shipped, nat) == "deepseek-ai/DeepSeek-V3"
    assert checkpoint_path(shipped, fp8) == "./DeepSeek-V3-fp8-dynamic"
    assert checkpoint_path(plain, bf16) == "meta-llama/Meta-Llama-3-8B"
