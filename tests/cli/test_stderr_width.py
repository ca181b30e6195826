"""Warnings on stderr fit the terminal like the reports on stdout do: ``warning:`` lines are wrapped
to COLUMNS (else the terminal's width when stderr is one, else 80, the reports' default) with a
hanging indent, word for word; ``--wide`` leaves them whole; ``Error:`` stays one line; ``--format
json`` keeps stdout the report only. Widths are counted in characters, not bytes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from quantadvise.cli.common import stderr_text, terminal_width

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WARNING = "warning: "
HANG = " " * len(WARNING)  # continuation lines line up under the message

# commands that warn on stderr, with the exit codes they end with
CASES: dict[str, tuple[list[str], tuple[int, ...]]] = {
    # 4-bit on an 8B model: the expected-accuracy-drop warning, 300+ characters unwrapped
    "recommend-l4": (["recommend", "-m", "meta-llama/Llama-3.1-8B", "--gpu", "l4"], (0,)),
    # points that do not fit in memory
    "roofline": (["roofline"], (0,)),
    "roofline-pareto": (["roofline", "--pareto"], (0,)),
    # SIMULATED timings
    "calibrate": (["calibrate", "--backend", "simulated", "--gpu", "h200", "--batches", "1..256", "--out",
                   "profiles/h200.yaml", "--no-progress"], (0,)),
    "validate": (["validate", str(FIXTURES / "profiles" / "simulated-h100-sxm.yaml")], (0,)),
    # the gate's own warnings (check.py calls warn() itself): a Helm template it cannot read
    "check-helm": (["check", "--gpu", "h100"], (0,)),
}
HELM_REPO = {
    ".git/HEAD": "ref: refs/heads/main\n",  # a repository root: config discovery stops here
    "serve.sh": "#!/bin/sh\nvllm serve meta-llama/Llama-3.1-8B --quantization fp8 --max-model-len 8192\n",
    # not YAML until rendered: skipped, with a warning
    "chart/templates/deployment.yaml": "spec:\n  replicas: {{ .Values.replicas }}\n  {{- if .Values.x }}\n",
}


@pytest.fixture
def run(cli, tmp_path, monkeypatch):
    def go(name: str, columns: int | None, *extra: str):
        args, codes = CASES[name]
        if name == "check-helm":
            root = tmp_path / name
            for rel, text in HELM_REPO.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text)
            monkeypatch.chdir(root)
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", str(columns))
        r = cli(*args, *extra)
        assert r.code in codes, (r.code, r.stderr)
        return r

    return go


def warnings_of(stderr: str) -> list[str]:
    """The warnings in ``stderr``, each rejoined from its first line and its indented continuation
    lines (whitespace normalised), so a wrapped and an unwrapped run compare word for word."""
    out: list[list[str]] = []
    for line in stderr.splitlines():
        if line.startswith(WARNING):
            out.append([line])
        elif out and line.startswith(HANG) and line.strip():
            out[-1].append(line)
    return [" ".join(" ".join(lines).split()) for lines in out]


def warning_blocks(stderr: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    for line in stderr.splitlines():
        if line.startswith(WARNING):
            blocks.append([line])
        elif blocks and line.startswith(HANG):
            blocks[-1].append(line)
    return blocks


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("name", list(CASES))
def test_warnings_fit_the_width_word_for_word(run, name, columns):
    # reference: the same run at a width no warning reaches, so every warning is one line
    whole = run(name, 100_000).stderr
    ref = [line for line in whole.splitlines() if line.startswith(WARNING)]
    assert ref, f"{name} no longer warns; pick a case that does"
    r = run(name, columns)
    too_long = [line for line in r.stderr.splitlines() if len(line) > columns]
    assert not too_long, f"{name} at {columns} columns:\n" + "\n".join(too_long)
    # the same warnings, word for word, in the same order
    assert warnings_of(r.stderr) == [" ".join(w.split()) for w in ref]
    # a warning is wrapped exactly when it did not fit: one line if it did (unchanged), else several
    for one, block in zip(ref, warning_blocks(r.stderr), strict=True):
        if len(one) <= columns:
            assert block == [one]
        else:
            assert len(block) > 1 and all(line.startswith(HANG) and line[len(HANG)] != " " for line in block[1:])


def test_recommend_l4_warning_is_wrapped_at_80(run):
    # the case: a 335-character accuracy warning at COLUMNS=80
    r = run("recommend-l4", 80)
    (block,) = [b for b in warning_blocks(r.stderr) if "expected drop" in b[0]]
    assert len(block) >= 4 and max(len(line) for line in block) <= 80


def test_without_columns_and_not_a_terminal_the_reports_default_of_80_holds(run):
    r = run("recommend-l4", None)
    assert max(len(line) for line in r.stderr.splitlines()) <= 80
    assert len(warning_blocks(r.stderr)[0]) > 1


def test_wide_leaves_warnings_whole(run):
    r = run("recommend-l4", 80, "--wide")
    lines = r.stderr.splitlines()
    assert all(line.startswith(WARNING) for line in lines)
    assert max(len(line) for line in lines) > 80


def test_json_keeps_stdout_the_report_only(run):
    r = run("recommend-l4", 80, "-f", "json")
    doc = json.loads(r.stdout)
    assert isinstance(doc, dict)
    assert max(len(line) for line in r.stderr.splitlines()) <= 80
    assert warnings_of(r.stderr)


def test_error_stays_one_line(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    r = cli("recommend", "--gpu", "no-such-gpu-at-all", "--batch", "8")
    assert r.code == 2 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("Error:") and len(line) > 40  # longer than the width, and still not wrapped


def test_width_is_counted_in_characters_not_bytes():
    # 'ééé' is 3 characters (6 bytes in UTF-8); "warning: " is 9. Five words take 9 + 5*3 + 4 spaces
    # = 28 characters, a sixth would make 32 > 30: so the first line holds exactly five words.
    # Counted in bytes, five words would be 9 + 30 + 4 = 43 and the line would hold fewer.
    text = stderr_text(" ".join(["ééé"] * 12), WARNING, HANG, 30)
    lines = text.splitlines()
    assert lines[0] == WARNING + " ".join(["ééé"] * 5)
    assert lines[1] == HANG + " ".join(["ééé"] * 5)
    assert lines[2] == HANG + " ".join(["ééé"] * 2)
    assert all(len(line) <= 30 for line in lines)
    # box-drawing and ellipsis characters (3 bytes each) likewise
    boxed = stderr_text("─" * 18 + " " + "…" * 18, WARNING, HANG, 30)
    assert boxed.splitlines() == [WARNING + "─" * 18, HANG + "…" * 18]


def test_a_newline_in_a_warning_starts_an_indented_paragraph():
    assert stderr_text("first part\nsecond part", WARNING, HANG, 80) == f"{WARNING}first part\n{HANG}second part\n"
    # no width: unwrapped, as with --wide
    long = "word " * 40
    assert stderr_text(long.strip(), WARNING, HANG, None) == WARNING + long.strip() + "\n"


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_stderr_on_a_terminal_uses_that_terminals_width(monkeypatch):
    import fcntl
    import struct
    import termios

    monkeypatch.delenv("COLUMNS", raising=False)
    leader, follower = os.openpty()
    try:
        # a terminal 123 columns wide (rows, columns, x pixels, y pixels)
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 123, 0, 0))
        with os.fdopen(os.dup(follower), "w") as tty:
            assert terminal_width(stream=tty) == 123
            assert terminal_width(True, stream=tty) is None  # --wide
            monkeypatch.setenv("COLUMNS", "90")  # COLUMNS wins, as for the reports
            assert terminal_width(stream=tty) == 90
    finally:
        os.close(leader)
        os.close(follower)
