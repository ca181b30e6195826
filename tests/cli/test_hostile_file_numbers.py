"""A number in a file is written as a number: a YAML / JSON boolean (``ctx: true``) and text with non-ASCII
digits (``gpus: '١٢'``) are one ``Error:`` line naming the field, exit 2 — as on the command line, which
refuses both. Before, pydantic's lax mode read true as 1 and false as 0 (`ctx: true` planned a context of 1
token, `concurrency: true` one sequence, `max_delta_drop: true` a 1-point gate, `version: true` version 1,
`memory_efficiency: true` 100% of peak) and Python's int() read '١٢' as 12 GPUs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.oneline import one_error

REPO = Path(__file__).resolve().parents[2]




@pytest.mark.parametrize("key", ["ctx", "batch", "concurrency", "prompt", "rate", "users", "max_gpus",
                                 "memory_utilization", "reserve_gb", "headroom"])
@pytest.mark.parametrize("value", ["true", "false", "'١٢'", "'１２'"])
def test_a_workload_file_number_that_is_not_written_as_one(cli, tmp_path, key, value):
    w = tmp_path / "w.yaml"
    w.write_text(f"{key}: {value}\n", encoding="utf-8")
    # the field is named by its own name (concurrency is batch's alias)
    one_error(cli("recommend", "-w", str(w)), f"'{'batch' if key == 'concurrency' else key}'")


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "r"
    shutil.copytree(REPO / "examples" / "passing-repo", root)
    return root


@pytest.mark.parametrize(("old", "new", "key"), [
    ("  concurrency: 16", "  concurrency: true", "workload.concurrency"),
    ("  prompt: 2048", "  prompt: false", "workload.prompt"),
    ("version: 1", "version: true", "version"),
    ("gpus: 1", "gpus: '١'", "gpus"),
    ("  min_memory_headroom: 10%", "  min_memory_headroom: true", "thresholds.min_memory_headroom"),
])
def test_a_quantadvise_yaml_number_that_is_not_written_as_one(cli, tmp_path, monkeypatch, old, new, key):
    root = _repo(tmp_path)
    cfg = root / "quantadvise.yaml"
    text = cfg.read_text(encoding="utf-8")
    assert old + "\n" in text
    cfg.write_text(text.replace(old + "\n", new + "\n"), encoding="utf-8")
    monkeypatch.chdir(root)
    one_error(cli("check"), "quantadvise.yaml", key)


def test_an_accuracy_gate_limit_that_is_a_boolean(cli, tmp_path, monkeypatch):
    root = _repo(tmp_path)
    cfg = root / "quantadvise.yaml"
    text = cfg.read_text(encoding="utf-8")
    assert "  max_delta_drop: 2%\n" in text
    cfg.write_text(text.replace("  max_delta_drop: 2%\n", "  max_delta_drop: true\n"), encoding="utf-8")
    monkeypatch.chdir(root)
    one_error(cli("check"), "quantadvise.yaml", "max_delta_drop", "number")


def test_a_profile_efficiency_that_is_a_boolean(cli, tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("schema_version: 1\nid: x\nsource: x\nas_of: 2026-01-01\ndefaults:\n  memory_efficiency: true\n",
                 encoding="utf-8")
    one_error(cli("roofline", "--profile", str(p), "-s", "bf16"), "p.yaml", "memory_efficiency")


def test_numbers_written_as_numbers_still_read():
    # the same fields with plain numbers (and numeric text, which lax YAML readers have always accepted)
    from quantadvise.workload import parse_workload

    w = parse_workload({"ctx": 4096, "batch": "8", "memory_utilization": 0.85})
    assert (w.ctx, w.batch, w.memory_utilization) == (4096, 8, 0.85)
