"""recommend's header gives one number per quantity, as check's does (issue 16): the context, what it is
made of and, under continuous batching, the tokens held on average — the figure the fit and KV nodes
quote — instead of "context 2,048" over a body that says "1,920"."""

from __future__ import annotations


def test_the_header_names_the_average_the_body_uses(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    r = cli("recommend", "--batch", "64", "--ctx", "2048")
    assert r.code == 0, r.stderr
    header = r.stdout.splitlines()[1]
    # --ctx 2048 with no --output: 256 output tokens (defaults.OUTPUT_TOKENS, below half the context),
    # 2,048 - 256 = 1,792 prompt; continuous batching holds the prompt and half the output on average:
    # 1,792 + 128 = 1,920
    assert "context 2,048 tokens (1,792 prompt + 256 output), 1,920 held on average" in header
    assert "64 x 1,920 tokens" in cli("recommend", "--batch", "64", "--ctx", "2048", "--explain").stdout  # the fit
    # node's figure is that one


def test_a_synchronous_batch_holds_the_whole_context(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    r = cli("recommend", "--batch", "4", "--ctx", "2048", "--mode", "sync")
    assert r.code == 0, r.stderr
    header = r.stdout.splitlines()[1]
    assert "context 2,048 tokens (1,792 prompt + 256 output), sync serving" in header
    assert "held on average" not in header
