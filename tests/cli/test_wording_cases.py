"""Counts and comparisons in human output, one case per defect of the wording audit: a count of one is
singular ("1 token", "its one sequence"), no "(s)" plurals, a slowdown is a share ("1.0% fewer"), not
"1.01x fewer", a negative room reads as a shortfall and a bits-per-parameter bound carries its unit.

Expected figures are derived from the catalog rows and the model configs in the comments, not copied
from the program's output. Every run is --wide so no line wraps inside an asserted phrase."""

from __future__ import annotations

import re

import pytest

from quantadvise.wording import every, more_or_fewer, plural

GIB = 1024**3
# H100 SXM row: 85,520,809,984 B; vLLM 0.34.0's default fraction 1.0 less the 1 GiB its extensible KV cache keeps
# free after warmup -> 84,447,068,160 B usable, less the 2 GiB runtime reserve = 82,299,584,512 B budget per GPU.
H100_BUDGET = 85_520_809_984 - GIB - 2 * GIB
# Llama-3-8B: 2 (K, V) x 8 KV heads x 128 head dim x 32 layers x 2 B = 131,072 B of bf16 KV per token.
L8B_KV_TOKEN = 2 * 8 * 128 * 32 * 2
# Llama-3.1-70B: per layer q 8192^2 + k, v 2 x 8192 x 1024 + o 8192^2 + MLP 3 x 8192 x 28,672
# = 855,638,016 linear params, + 2 x 8192 norm weights; x 80 layers, + embeddings and untied lm_head
# 2 x 128,256 x 8192 + the final norm 8192 = 70,553,706,496 params.
L70B_LINEAR = 80 * (2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28_672)
L70B_OTHER = 80 * 2 * 8192 + 2 * 128_256 * 8192 + 8192
L70B_PARAMS = L70B_LINEAR + L70B_OTHER
L70B_KV_TOKEN_BF16 = 2 * 8 * 128 * 80 * 2  # 327,680 B


def _out(cli, *args: str) -> str:
    """The whole report: a recommendation with --explain (the decision tree, every reason)."""
    r = cli(*args, "--wide", *(["--explain"] if args[0] == "recommend" else []))
    assert r.code == 0, r.stderr
    return r.stdout


def _line(text: str, start: str) -> str:
    """The first line that starts with ``start``, past indentation and the tree's guides."""
    return next(line for line in text.splitlines() if re.sub(r"^[\s│├└─]*", "", line).startswith(start))


def test_wording_helpers():
    assert plural(1, "token") == "1 token" and plural(2_048, "token") == "2,048 tokens"
    assert every(1, "sequence") == "its one sequence"
    assert every(1, "sequence", own="the") == "the one sequence"
    assert every(1_000, "sequence") == "all 1,000 sequences"
    # 100 against 101: 100 / 101 - 1 = -0.0099 -> 1.0% fewer (was "1.01x fewer")
    assert more_or_fewer(100, 101) == "1.0% fewer"
    # bf16's 172 tokens/s against w4a16's 467: 1 - 172 / 467 = 0.6317 -> 63.2% fewer
    assert more_or_fewer(172, 467) == "63.2% fewer"
    # 104.2 against 100: +4.2%, the way a gain has always been written
    assert more_or_fewer(104.2, 100) == "4.2% more"


def test_batch_one_is_its_one_sequence(cli):
    """Defect 1: `recommend --batch 1` holds its one sequence, in the prediction and the roofline node."""
    out = _out(cli, "recommend", "--batch", "1")
    assert "holding its one sequence" in _line(out, "Predicted")
    assert "holding its one sequence" in _line(out, "f. roofline")


def test_batch_one_winner_reason(cli):
    out = _out(cli, "recommend", "--batch", "1")
    assert "all 1 sequences" not in out
    assert "holds its one sequence" in out


def test_size_ctx_one_is_one_token(cli):
    """Defect 2: one sequence of one token; the token capacity and the sequences of one token agree."""
    out = _out(cli, "size", "meta-llama/Llama-3-8B", "--ctx", "1", "--gpu", "h100")
    # 1 x 131,072 B = 0.000131 GB -> "0.00 GB"
    assert "1 sequence x 1 token = 0.00 GB" in out
    # room: the budget less bf16 weights 16,060,522,496 B = 66,239,062,016 B; / 131,072 B per token
    # = 505,363 tokens (remainder 122,880 B), and as many sequences of one token
    free = H100_BUDGET - 16_060_522_496
    assert free == 66_239_062_016 and free // L8B_KV_TOKEN == 505_363
    assert "left for KV 66.24 GB = 505,363 tokens -> fits; at most 505,363 sequences of 1 token" in out
    assert not re.search(r"\b1 tokens\b", out)


def test_kv_node_counts_sequences_without_parentheses(cli):
    """Defect 3: the KV node's "N sequence(s) fit" is plural(): 285 sequences, and 1 sequence fits."""
    out = _out(cli, "recommend", "--batch", "1")
    # next to w4a16 (the fewest weight bytes): 32 layers x (4096^2 x 2 + 4096 x 1024 x 2 + 3 x 4096 x 14,336)
    # = 6,979,321,856 int4 weights in groups of 128, 64 B + a 2 B bf16 scale per group = 3,598,712,832 B;
    # + bf16 embeddings and lm_head 2 x 128,256 x 4096 x 2 B = 2,101,346,304 B; + norms (32 x 2 + 1) x 4096
    # x 2 B = 532,480 B -> 5,700,591,616 B. (82,299,584,512 - 5,700,591,616) // (2,048 x 131,072) = 285.
    w4a16 = 6_979_321_856 // 128 * 66 + 2 * 128_256 * 4096 * 2 + (32 * 2 + 1) * 4096 * 2
    assert (H100_BUDGET - w4a16) // (2_048 * L8B_KV_TOKEN) == 285
    assert "and 285 sequences fit (>= batch 1)" in _line(out, "e. KV cache")
    assert "(s)" not in out


def test_kv_node_one_sequence_fits(cli):
    """Defect 3, singular: Llama-3.1-70B on one L40S at 16,384 tokens holds one bf16 sequence next to w4a16."""
    out = _out(cli, "recommend", "-m", "meta-llama/Llama-3.1-70B", "--gpu", "l40s", "--batch", "1", "--ctx", "16384")
    # L40S row 48,305,799,168 B, less vLLM 0.34.0's 1 GiB margin and the 2 GiB reserve = 45,084,573,696 B. w4a16:
    # 68,451,041,280 linear weights / 128 x 66 B = 35,295,068,160 B + bf16 embeddings, lm_head and norms
    # 4,205,330,432 B = 39,500,398,592 B. Room 5,584,175,104 B; one sequence is 16,384 x 327,680 = 5,368,709,120 B
    # -> 1 (at 8,192 tokens, 2).
    budget = 48_305_799_168 - GIB - 2 * GIB
    w4a16 = L70B_LINEAR // 128 * 66 + L70B_OTHER * 2
    assert (budget, w4a16) == (45_084_573_696, 39_500_398_592)
    assert (budget - w4a16) // (16_384 * L70B_KV_TOKEN_BF16) == 1
    assert "and 1 sequence fits (>= batch 1)" in _line(out, "e. KV cache")


def test_slowdown_is_a_share(cli):
    """Defect 4: a slower candidate reads "N.N% fewer output tokens/s", as a gain reads "N.N% more"."""
    # (issue 25: Llama-3.1-70B on one L40S at batch 1, the case this read on, now ranks only two 4-bit
    # candidates that tie; the default workload has candidates slower beyond the model's uncertainty)
    out = _out(cli, "recommend", "--batch", "64", "--ctx", "2048")
    assert "x fewer" not in out
    assert re.search(r"\d+\.\d% fewer output tokens/s than fp8-block", out)


@pytest.mark.parametrize("ctx", [None, "2048"])
def test_weights_that_do_not_fit_read_as_a_shortfall(cli, ctx):
    """Defect 5: bf16 Llama-3.1-70B on one H100: no negative "left for KV", the shortfall instead."""
    out = _out(cli, "size", "meta-llama/Llama-3.1-70B", "--gpu", "h100", *(["--ctx", ctx] if ctx else []))
    # bf16 weights 70,553,706,496 x 2 B = 141,107,412,992 B against the 82,299,584,512 B budget:
    # 58,807,828,480 B short -> 58.81 GB
    assert L70B_PARAMS == 70_553_706_496
    assert round((L70B_PARAMS * 2 - H100_BUDGET) / 1e9, 2) == 58.81
    assert "exceeding the usable memory less the runtime reserve by 58.81 GB; nothing left for KV" in out
    assert "-58.81" not in out and not re.search(r"left for KV -\d", out)
    if ctx:
        assert "DOES NOT FIT; not one sequence of 2,048 tokens fits" in out
    else:
        assert "the weights DO NOT FIT" in out


def test_fit_bound_is_in_bits_per_param(cli):
    """Defect 6: the fit node's bound on the weights carries its unit, bits/param."""
    out = _out(cli, "recommend", "-m", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--gpus", "2", "--batch", "64",
               "--ctx", "8192")
    # continuous batching holds prompt 8,192 - 256 + output 256 / 2 = 8,064 tokens per sequence; kv-fp8 is
    # 2 x 8 x 128 x 80 x 1 B = 163,840 B per token: 64 x 8,064 x 163,840 = 84,557,168,640 B. Two GPUs'
    # budget 2 x 82,299,584,512 = 164,599,169,024 B leaves 80,042,000,384 B for the weights:
    # x 8 bits / 70,553,706,496 params = 9.08 -> 9.1 bits/param. (bf16 KV, 169.1 GB, exceeds the budget.)
    room = 2 * H100_BUDGET - 64 * 8_064 * 2 * 8 * 128 * 80
    assert f"{room * 8 / L70B_PARAMS:.1f}" == "9.1"
    assert 64 * 8_064 * L70B_KV_TOKEN_BF16 > 2 * H100_BUDGET
    fit = _line(out, "b. fit")
    assert "64 x 8,064 tokens" in fit
    assert "to hold the whole batch, weights must average <= 9.1 bits/param with kv-fp8" in fit


def test_counts_of_one_are_singular(cli):
    """Case 7: counts written by f-strings go through plural(): a context of one token, one user, one seq."""
    out = _out(cli, "recommend", "--batch", "1", "--ctx", "1")
    assert "batch 1, context 1 token (no prompt, 1 output), sync serving" in out
    assert "for 1 x 1 token within" in _line(out, "b. fit")
    load = _out(cli, "recommend", "--users", "1")
    assert "GPUs for 1 concurrent user —" in load
    assert re.search(r"[\w-]+ <\s+1\s+1 x TP1\s+1 seq\s", load)
    for text in (out, load):
        assert "(s)" not in text
