"""Narrow layouts drop or wrap secondary columns and never cut the identifier or a URL."""

from __future__ import annotations

from pathlib import Path

from quantadvise.report.text import wrap

ACC = Path(__file__).resolve().parent.parent / "fixtures" / "accuracy"


def test_list_models_keeps_every_id_whole_at_80(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = cli("list", "models").stdout
    ids = [m["id"] for m in cli("list", "models", "-f", "json").json()["models"]]
    rows = out.splitlines()
    for mid in ids:  # meta-llama/Meta-Llama-3-8B and -70B were both clipped to 'meta-llama/Meta-Llama-3…'
        assert any(line.split()[0] == mid for line in rows if line.strip()), mid
    assert "…" not in out.split("\n\n")[0]


def test_accuracy_gate_detail_wraps_and_keeps_the_threshold(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    r = cli("accuracy", ACC / "plain_base.jsonl", ACC / "plain_quant.jsonl", "--max-delta", "1", "--max-flips", "5",
            "--max-kl", "0.01")
    assert r.code == 1
    text = " ".join(r.stdout.split())
    # the drop is 10 points (2 lost - 1 gained of 10); the limit 1 point
    assert "drop 10.00 pp > max 1.00 pp" in text and "…" not in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) <= 80


def test_wrap_never_breaks_a_url():
    url = "(huggingface.co/ISTA-DASLab/Llama-3.1-8B-Instruct-FPQuant-QAT-NVFP4"
    lines = wrap(f"see {url} (model card)", 50, indent="    ", subsequent="    ")
    assert any(url in line for line in lines)
    # an ordinary long word is still broken to the width
    assert all(len(line) <= 20 for line in wrap("x" * 50, 20))
