"""Issue 11, groups 2-3: the KV cache decision (node e) is consistent with the candidate that is
recommended. The audit found gpt-oss-120b on one H100 keeping a bf16 cache at batch 75-84 (ctx 4,096)
and 150-168 (ctx 2,048) because a lighter re-quantization held the batch, while the recommended
shipped checkpoint held only part of it with bf16 and would hold all of it with kv-fp8.

The arithmetic, from openai/gpt-oss-120b's config.json: 36 layers alternating sliding_attention
(window 128 tokens) and full_attention, 8 KV heads x head_dim 64. A token costs 8 x 64 x 2 (K, V)
x 2 B = 2,048 B per layer in bf16 (1,024 B in fp8); a sliding layer holds at most 128 tokens.
The budget is 92% of the H100's 85,520,809,984 B (vLLM 0.33.0's default share, where the audit drew these
ranges; given here as --memory-utilization 0.92, since vLLM 0.34.0's own default takes the whole GPU less 1 GiB)
less the 2 GiB reserve: 76,531,661,537 B; the shipped checkpoint's weights are 65,248,815,744 B
(test_advisor_native.py), leaving 11,282,845,793 B for KV.
"""

from __future__ import annotations

import pytest

import quantadvise as api

ROOM = 76_531_661_537 - 65_248_815_744  # 11,282,845,793 B of KV next to the shipped weights
SHARE = 0.92  # floor(0.92 x 85,520,809,984) - 2 GiB = 76,531,661,537 B


def per_sequence(tokens: int, bytes_per_value: int) -> int:
    """KV bytes of one gpt-oss-120b sequence: 18 full layers hold every token, 18 sliding ones 128."""
    return 18 * 8 * 64 * 2 * bytes_per_value * (tokens + min(tokens, 128))


def node(rec, name):
    return next(t for t in rec.trace if t.node == name)


@pytest.mark.parametrize("ctx, first, last", [(4096, 75, 84), (2048, 150, 168)])
def test_gpt_oss_winner_gets_the_kv_cache_that_holds_the_batch(ctx, first, last):
    # ctx 4,096: a sequence holds 3,840 + 256/2 = 3,968 tokens -> 150,994,944 B in bf16: the shipped
    # checkpoint holds floor(11,282,845,793 / 150,994,944) = 74 sequences; in fp8 (75,497,472 B) 149.
    # ctx 2,048: 1,792 + 128 = 1,920 tokens -> 75,497,472 B in bf16: 149; in fp8 298.
    tokens = ctx - 256 + 128
    bf16_holds = ROOM // per_sequence(tokens, 2)
    fp8_holds = ROOM // per_sequence(tokens, 1)
    assert bf16_holds == first - 1 and fp8_holds >= last
    for batch in range(first, last + 1):
        r = api.recommend(model="openai/gpt-oss-120b", gpu="h100", batch=batch, ctx=ctx, memory_utilization=SHARE)
        assert r.scheme.id == "native-mxfp4", batch
        # a bf16 cache would hold bf16_holds < batch of them: the quantized cache holds all
        assert r.kv.dtype == "kv-fp8" and r.performance.concurrency == batch, (batch, r.kv.dtype)
        assert r.kv.max_concurrency == fp8_holds
        assert r.performance.gpus_for_batch == 1 and not any("--gpus" in w for w in r.warnings)
    # one below the range the shipped checkpoint holds the whole batch with bf16: nothing asks for fp8
    r = api.recommend(model="openai/gpt-oss-120b", gpu="h100", batch=first - 1, ctx=ctx, memory_utilization=SHARE)
    assert r.kv.dtype == "kv-bf16" and r.performance.concurrency == first - 1 == bf16_holds


def test_the_decision_looks_past_the_lightest_candidate():
    # At --accuracy-tolerance 4 w3a16-g64 is deployable (3-20 points: a caution, 3 < 4) and the lightest:
    # 3 + 16/64 = 3.25 bits on the 114,661,785,600 expert weights, 50.9 GB in all, so a bf16 cache holds
    # (76,531,661,537 - 50.9e9) / 150,994,944 = 169 sequences next to it and KV is under 25% of its step:
    # neither old condition fires. But the shipped checkpoint ranks first (the re-quantizations carry a
    # caution) and holds 74 of 80 with bf16: node e takes kv-fp8 for it, and says so.
    r = api.recommend(model="openai/gpt-oss-120b", gpu="h100", batch=80, ctx=4096, accuracy_tolerance=4,
                      memory_utilization=SHARE)
    kv = node(r, "kv")
    assert kv.numbers["reference"] == "w3a16-g64" and kv.numbers["max_concurrency_bf16"] >= 80
    assert kv.numbers["kv_share_of_step_bytes"] < kv.numbers["threshold"]
    assert kv.numbers["first_with_bf16"] == "native-mxfp4"
    assert kv.numbers["first_with_bf16_concurrency"] == ROOM // per_sequence(3968, 2) == 74
    assert r.scheme.id == "native-mxfp4" and r.kv.dtype == "kv-fp8" and r.performance.concurrency == 80
    assert "ranks first with" in kv.decision


def test_the_decision_keeps_bf16_when_the_winner_holds_the_batch():
    # batch 16 x 4,096: every deployable candidate holds the batch with bf16 (the heaviest, nvfp4's
    # 68.8 GB, leaves 7.7 GB: 7.7e9 / 150,994,944 = 50 sequences) and KV is a small share of the bytes a
    # step moves: bf16 stays, and no ranking with a bf16 cache is needed to say so
    r = api.recommend(model="openai/gpt-oss-120b", gpu="h100", batch=16, ctx=4096, memory_utilization=SHARE)
    kv = node(r, "kv")
    assert r.kv.dtype == "kv-bf16" and "first_with_bf16" not in kv.numbers


def test_a_faster_candidate_the_bf16_cache_leaves_short_takes_the_quantized_cache():
    # Llama-3.1-70B on one A100 80GB, ctx 2,048 (1,920 KV tokens a sequence): 80 layers x 8 KV heads x 128 x 2 (K, V)
    # x 2 B = 327,680 B a token in bf16, 629,145,600 B a sequence (314,572,800 in fp8). w8a8-int8's 72.7 GB of
    # weights leave room for 15 bf16 sequences (31 fp8): at batch 16 a bf16 cache ranks nvfp4 first (42.7 GB: it
    # holds all 16), tied with int8 at the 15 it holds. With kv-fp8 int8 holds all 16 and outruns nvfp4 beyond their
    # uncertainty: the node takes kv-fp8 rather than hand the batch to the slower scheme (before, the
    # recommendation went int8 -> nvfp4 at 16 and back to int8 at 20, where KV passes 25% of the step's bytes).
    per_seq = 80 * 8 * 128 * 2 * 2 * 1920
    at15 = api.recommend(model="meta-llama/Llama-3.1-70B", gpu="a100-80gb", batch=15, ctx=2048)
    at16 = api.recommend(model="meta-llama/Llama-3.1-70B", gpu="a100-80gb", batch=16, ctx=2048)
    kv15, kv16 = node(at15, "kv"), node(at16, "kv")
    assert kv15.numbers["kv_bytes_per_sequence_bf16"] == per_seq == 629_145_600
    assert at15.scheme.id == "w8a8-int8" and at15.kv.dtype == "kv-bf16" and at15.kv.max_concurrency == 15
    assert "first_with_quantized" not in kv15.numbers  # int8 ranks first with bf16 and holds the batch
    assert kv16.numbers["first_with_bf16"] == "nvfp4" and kv16.numbers["first_with_quantized"] == "w8a8-int8"
    assert kv16.numbers["first_with_quantized_tokens_per_s"] > kv16.numbers["first_with_bf16_tokens_per_s"]
    assert kv16.numbers["kv_share_of_step_bytes"] < kv16.numbers["threshold"]  # not the byte share: the ranking
    assert at16.scheme.id == "w8a8-int8" and at16.kv.dtype == "kv-fp8" and at16.performance.concurrency == 16
    assert 2 * 15 <= at16.kv.max_concurrency < 2 * 16  # room for 15 (not 16) bf16 sequences holds 30-31 fp8 ones
    assert "outruns nvfp4" in kv16.decision
