"""The CI plumbing: `.ci/run` runs exactly the README's test command; that command prints its pass
count (pyproject's addopts hold no ``-q`` of their own, so the README's ``-q`` is not ``-qq``, which
drops the summary line) and runs on every core (pytest-xdist, in the test extra); the fuzz suite's
count is summed over the xdist workers."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tests.conftest import merge_fuzz_counts

REPO = Path(__file__).resolve().parents[1]


def _readme_test_command() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("Install and run the tests"):]
    block = re.search(r"```bash\n(.+?)\n```", section, re.S)
    assert block is not None
    lines = block.group(1).strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_ci_runs_exactly_the_readme_test_command():
    command = _readme_test_command()
    script = [line for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
              if line.strip() and not line.startswith("#")]
    assert command in script, (command, script)
    assert "python -m pytest" in command and " -n auto" in command


def test_the_test_command_prints_its_pass_count():
    doc = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    addopts = doc["tool"]["pytest"]["ini_options"]["addopts"].split()
    assert "-q" not in addopts and "--quiet" not in addopts and not any(re.fullmatch(r"-q+", a) for a in addopts)
    assert _readme_test_command().split().count("-q") == 1  # -q: dots and the "N passed" line; -qq: no count
    assert any(r.startswith("pytest-xdist") for r in doc["project"]["optional-dependencies"]["test"])


def test_fuzz_counts_are_summed_over_workers():
    a = {"runs": {"shell": 3, "yaml": 2}, "cpu": {"shell": 0.5, "yaml": 0.1}, "wall": {"shell": 0.6, "yaml": 0.2},
         "max_seconds": 5.0}
    b = {"runs": {"shell": 4}, "cpu": {"shell": 0.2}, "wall": {"shell": 0.9}, "max_seconds": 5.0}
    merged = merge_fuzz_counts([a, None, b])
    assert merged == {"runs": {"shell": 7, "yaml": 2}, "cpu": {"shell": 0.5, "yaml": 0.1},
                      "wall": {"shell": 0.9, "yaml": 0.2}, "max_seconds": 5.0}
    assert merge_fuzz_counts([None, None]) is None
