"""`quantadvise list` shows every alias when the width allows it (and always with --wide); narrow, the
aliases column stays, abbreviated to whole aliases and a count of the rest (issue 16). The aliases are
read from the data files themselves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

DATA = Path(__file__).resolve().parents[2] / "data"
GPUS = yaml.safe_load((DATA / "hardware.yaml").read_text())["gpus"]
MODELS = yaml.safe_load((DATA / "models.yaml").read_text())["models"]
KIND_ROWS = {"gpus": GPUS, "models": MODELS}


def rows_by_id(stdout: str) -> dict[str, str]:
    """Each table row keyed by its first cell (the id), the header and rule skipped."""
    lines = stdout.split("\n\n")[0].splitlines()[2:]
    return {line.split()[0]: line for line in lines}


def aliases_cell(stdout: str, row_line: str) -> str:
    start = stdout.splitlines()[0].index("aliases")
    return row_line[start:].strip()


@pytest.mark.parametrize("kind", sorted(KIND_ROWS))
@pytest.mark.parametrize("how", ["wide", "300 columns"])
def test_every_alias_is_shown_when_there_is_room(cli, monkeypatch, kind, how):
    monkeypatch.setenv("COLUMNS", "300")
    r = cli("list", kind, *(["--wide"] if how == "wide" else []))
    assert r.code == 0, r.stderr
    rows = rows_by_id(r.stdout)
    for row in KIND_ROWS[kind]:
        want = ", ".join(row.get("aliases", []))
        assert aliases_cell(r.stdout, rows[row["id"]]) == want, row["id"]
    assert "(+" not in r.stdout


@pytest.mark.parametrize("kind", ["models", "gpus", "schemes", "kv"])
def test_at_80_columns_the_aliases_column_stays_abbreviated(cli, monkeypatch, kind):
    monkeypatch.setenv("COLUMNS", "80")
    r = cli("list", kind)
    assert r.code == 0, r.stderr
    assert all(len(line) <= 80 for line in r.stdout.splitlines())
    assert r.stdout.splitlines()[0].rstrip().endswith("aliases")
    if kind not in KIND_ROWS:
        return
    rows = rows_by_id(r.stdout)
    cut = 0
    for row in KIND_ROWS[kind]:
        names = row.get("aliases", [])
        cell = aliases_cell(r.stdout, rows[row["id"]])
        m = re.fullmatch(r"(?:(.*) )?\(\+(\d+)\)", cell)
        if m is None:
            assert cell == ", ".join(names), row["id"]
            continue
        cut += 1
        shown, more = m.group(1) or "", int(m.group(2))
        # whole aliases (none cut), in the data's order (a long one may be skipped for shorter ones after
        # it), and the count of the ones left out
        parts = shown.split(", ") if shown else []
        assert "…" not in cell and len(parts) + more == len(names), (row["id"], cell)
        it = iter(names)
        assert all(p in it for p in parts), (row["id"], cell)  # a subsequence of the aliases
    if cut:
        assert "(+N): N more aliases, all shown with --wide or --format json" in " ".join(r.stdout.split())


def test_aliases_cell_by_hand():
    from quantadvise.report.listing import aliases_cell

    names = ["h100", "h100-sxm5", "h100-sxm-80gb"]
    assert aliases_cell(names, None) == "h100, h100-sxm5, h100-sxm-80gb"  # 30 characters
    assert aliases_cell(names, 30) == "h100, h100-sxm5, h100-sxm-80gb"
    assert aliases_cell(names, 29) == "h100, h100-sxm5 (+1)"  # 20 characters
    assert aliases_cell(names, 19) == "h100 (+2)"
    # a long first alias gives way to the shorter ones after it: "llama-3-8b, llama3-8b (+1)" is
    # 10 + 2 + 9 + 5 = 26 characters, while the 26-character id alone would need 26 + 5
    long = ["meta-llama/Meta-Llama-3-8B", "llama-3-8b", "llama3-8b"]
    assert aliases_cell(long, 26) == "llama-3-8b, llama3-8b (+1)"
    assert aliases_cell(names, 8) == "(+3)"  # not one whole alias fits beside its count
    assert aliases_cell([], 10) == ""


def test_quantadvise_gpus_is_list_gpus(cli):
    # issue 13, item 5: "`quantadvise gpus` lists them all" — the same report as `list gpus`
    short, full = cli("gpus", "-f", "json"), cli("list", "gpus", "-f", "json")
    assert short.code == full.code == 0 and short.stdout == full.stdout and '"kind": "gpus"' in short.stdout
