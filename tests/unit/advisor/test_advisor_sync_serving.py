"""Synchronous serving counts the prefill in output tokens/s, $/Mtok and the ranking (audit rec #2).

A synchronous batch of B requests is prefilled together (TTFT = P_B, which yields each first token),
then decoded for O - 1 steps; the next batch starts when it finishes. So the B x O output tokens take
the batch's E2E = TTFT + (O - 1) x ITL, and output tokens/s = B x O / E2E. Before the fix `--mode sync`
reported the decode steps alone (B / ITL): `recommend -b 64 --mode sync` printed 12,405 tokens/s and
$0.089/Mtok with an E2E of 2.70 s, while 64 x 256 / 2.70 s = 6,068.
"""

from __future__ import annotations

import math

import pytest

import quantadvise as api

RANKED = ("recommended", "runner-up", "slower")

# Llama-3-8B on the H100 spec sheet (--ideal), bf16 weights and KV, synchronous. Decode (tests/unit/
# test_serving.py has the arithmetic): ITL(B) = 4.4806 + 0.3130 B ms -> 9.80 ms at B = 17.
# Prefill of 17 x 7,808 = 132,736 prompt tokens: the linears hold 8,030,261,248 - 2 x 525,336,576
# (embedding and lm_head) = 6,979,588,096 parameters, 2 FLOPs each a token -> 1.8529e15 FLOPs at 989.4e12
# FLOP/s (H100 SXM bf16 dense, data/hardware.yaml) = 1.873 s; causal attention 17 prompts x 32 layers x
# 7,808 x 7,809 / 2 pairs x 4 x 32 heads x 128 FLOPs = 2.717e14 -> 0.275 s. P_17 ~ 2.147 s (the KV writes,
# weight reads and activations are a few ms more). E2E = 2.147 + 383 x 9.80 ms = 5.901 s, so
# 17 x 384 / 5.901 = 1,106 output tokens/s; the decode steps alone give 17 / 9.80 ms = 1,734.
IDEAL_8B = dict(model="meta-llama/Meta-Llama-3-8B", gpu="h100", ideal=True, mode="sync", candidates=["bf16"],
                kv_dtype="kv-bf16", prompt=7808, output=384, batch=17)


def test_sync_tokens_per_s_includes_the_batch_prefill_by_hand():
    r = api.recommend(**IDEAL_8B)
    p = r.performance
    assert p.step_time_s == pytest.approx(9.8016e-3, rel=2e-3)
    assert p.decode_tokens_per_s == pytest.approx(17 / 9.8016e-3, rel=2e-3)  # 1,734: the decode steps alone
    assert p.ttft_s == pytest.approx(2.147, rel=0.01)
    assert p.e2e_s == pytest.approx(2.147 + 383 * 9.8016e-3, rel=0.01)
    assert p.tokens_per_s == pytest.approx(1106, rel=0.01)
    assert math.isclose(p.tokens_per_s, 17 * 384 / p.e2e_s, rel_tol=1e-12)
    # the prefill share is the batch's TTFT over its E2E; the figure says what it includes
    assert p.prefill_share == pytest.approx(p.ttft_s / p.e2e_s)
    assert "prefill included" in p.includes and "E2E" in p.includes
    # $/Mtok follows the delivered tokens/s: $/GPU-hour x GPUs / (tokens/s x 3600) x 1e6
    assert r.price is not None and p.usd_per_mtok is not None
    assert p.usd_per_mtok == pytest.approx(r.price.usd_per_gpu_hour / (p.tokens_per_s * 3600) * 1e6)
    # and the text says it
    from quantadvise.report.recommend import full as table  # the whole report (--explain)

    text = table(r)
    assert "1,734 decode tokens/s" not in text.split("Serving:")[1]  # the $/Mtok line uses the delivered figure
    assert f"{p.tokens_per_s:,.0f} output tokens/s (prefill included" in text


def test_sync_ranking_and_cost_use_the_delivered_tokens_per_s():
    # the audit's workload: batch 64, 1,792 + 256 tokens, synchronous
    r = api.recommend(batch=64, mode="sync")
    assert r.workload.serving_mode == "sync"
    ranked = [a for a in r.alternatives if a.status in RANKED]
    assert len(ranked) >= 2
    for a in ranked:
        # B x O / E2E per candidate (its own prefill: W8A8 prefills faster than weight-only)
        assert a.tokens_per_s == pytest.approx(a.concurrency * 256 / a.e2e_s, rel=1e-12)
        assert a.tokens_per_s < a.decode_tokens_per_s
    p = r.performance
    assert p.tokens_per_s == pytest.approx(64 * 256 / p.e2e_s, rel=1e-12)
    # the ranking is on those figures: nobody ranked after the winner out-delivers it beyond the tie band
    from quantadvise import defaults

    assert all(a.tokens_per_s <= p.tokens_per_s * (1 + defaults.TIE) for a in ranked[1:])
