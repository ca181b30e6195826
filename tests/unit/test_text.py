"""Fitting human output to the terminal: tables shrink their flexible columns, then drop columns in
the given order; paragraphs wrap at spaces; commands wrap with shell continuations that paste back
to the same argv."""

from __future__ import annotations

import shlex

import pytest

from quantadvise.report.text import MIN_FLEX, Table, clip, wrap, wrap_command

LONG = "fastest candidate that fits, loads in the engine and passes the accuracy veto"


def table() -> Table:
    t = Table(["scheme", "status", "ms/step", "why"], align="llrl", flex=("why",), drop=("ms/step",))
    t.add("w4a16", "recommended", "1.23", LONG)
    t.add("fp8-dynamic", "runner-up", "1.50", "1.22x slower than w4a16 per output token")
    return t


def test_unlimited_width_keeps_every_cell_whole():
    out = table().render(None)
    assert LONG in out and "ms/step" in out


def test_narrow_width_clips_the_flexible_column_first():
    # natural widths: scheme 11, status 11, ms/step 7, why 77 -> 11+11+7+77 + 3 gaps x 2 = 112 > 80
    out = table().render(80)
    lines = out.splitlines()
    assert max(map(len, lines)) == 80
    assert "ms/step" in lines[0]  # nothing dropped: shrinking "why" was enough
    assert lines[2].endswith("…")
    # "why" gets 80 - (11 + 11 + 7) - 3 x 2 = 45 characters: 44 of text and the ellipsis
    assert lines[2].split("1.23  ")[1] == LONG[:44] + "…"


def test_then_columns_are_dropped_in_order():
    # 11 + 11 + 7 + MIN_FLEX + 6 = 45 > 40: "ms/step" goes; 11 + 11 + 4 (gaps) = 26 leaves "why" 14
    out = table().render(40)
    assert "ms/step" not in out and max(map(len, out.splitlines())) <= 40
    assert out.splitlines()[2].endswith(LONG[:13] + "…")
    assert MIN_FLEX == 10


@pytest.mark.parametrize("width", [20, 33, 50, 80])
def test_wrap_never_exceeds_the_width(width):
    text = "lengths: 1,792 prompt + 256 output tokens per sequence (--prompt/--output); " + "x" * 70
    lines = wrap(text, width, "  - ", "    ")
    assert all(len(line) <= width for line in lines)
    assert " ".join(line[4:] for line in lines).replace(" ", "") == text.replace(" ", "")  # both prefixes are 4 wide


def test_clip():
    assert clip("abcdef", 6) == "abcdef" and clip("abcdef", 4) == "abc…"


@pytest.mark.parametrize("width", [40, 60, 200])
def test_wrapped_commands_paste_back_to_the_same_argv(width):
    cmd = ("vllm serve './my model' --quantization awq_marlin --kv-cache-dtype fp8 --max-num-seqs 512 "
           "--max-model-len 2048 --tensor-parallel-size 2")
    lines = wrap_command(cmd, width, "  ")
    assert all(len(line) <= width for line in lines) or width < 40
    joined = " ".join(line.removesuffix("\\").strip() for line in lines)
    assert shlex.split(joined) == shlex.split(cmd)
    # a flag is never separated from its value
    assert not any(line.rstrip(" \\").endswith(("--max-num-seqs", "--kv-cache-dtype")) for line in lines)
