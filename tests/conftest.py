"""Shared fixtures: no network, no user config, a private HF cache, a CLI runner; and the fuzz suite's
end-of-session count, summed over pytest-xdist workers."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent


CHECKED_DIRS = ("cli", "golden")  # every command, every option: where result pieces are made the most ways


@pytest.fixture(autouse=True)
def _checked_pieces(request, monkeypatch):
    """In the CLI and golden tests every result piece the fast path makes (results/light.py) is also validated
    by pydantic and held identical to it: the conversions the fast path skips are proven absent there (the
    check costs the advisor scans a quarter of their time, so the unit tests run the fast path alone)."""
    if Path(request.node.path).parent.name in CHECKED_DIRS:
        from quantadvise.results import light

        monkeypatch.setattr(light, "CHECKING", True)


@pytest.fixture(autouse=True)
def _isolate(monkeypatch, tmp_path):
    """Tests never touch the network, the user's HF cache or their quantadvise config."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-home" / "hub"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    import os

    for key in list(os.environ):
        if key.startswith("QUANTADVISE_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


def run_cli(*args: str) -> CliResult:
    """Run the real entry point (error mapping included) in-process."""
    from quantadvise.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return CliResult(code, out.getvalue(), err.getvalue())


@pytest.fixture
def pydantic_classes(monkeypatch) -> list[str]:
    """The names of the pydantic model classes made while the test runs (a light piece's fast path makes none;
    its shadow is one)."""
    from pydantic._internal import _model_construction

    made: list[str] = []
    original = _model_construction.ModelMetaclass.__new__
    monkeypatch.setattr(_model_construction.ModelMetaclass, "__new__",
                        lambda mcs, name, *a, **k: made.append(name) or original(mcs, name, *a, **k))
    return made


@pytest.fixture
def cli():
    return run_cli


# --- the fuzz suite's count (tests/fuzz/harness.py counts each run in the process that makes it) -------------
# Under pytest-xdist every worker counts its own runs: each hands its counters to the controller when it
# finishes (``workeroutput``), and the controller prints the sum. This hook lives here, not in
# tests/fuzz/conftest.py: the controller never collects, so it loads only the top-level conftest.

_FUZZ_FROM_WORKERS: list[dict] = []


def _fuzz_counts() -> dict | None:
    import sys

    harness = sys.modules.get("tests.fuzz.harness")
    if harness is None or not harness.RUNS:
        return None
    return {"runs": dict(harness.RUNS), "cpu": dict(harness.SLOWEST), "wall": dict(harness.SLOWEST_WALL),
            "max_seconds": harness.MAX_SECONDS}


def merge_fuzz_counts(parts: list[dict]) -> dict | None:
    """The fuzz counters of several processes as one: runs added, slowest runs the largest."""
    parts = [p for p in parts if p]
    if not parts:
        return None
    out: dict = {"runs": {}, "cpu": {}, "wall": {}, "max_seconds": max(p["max_seconds"] for p in parts)}
    for p in parts:
        for kind, n in p["runs"].items():
            out["runs"][kind] = out["runs"].get(kind, 0) + n
        for key in ("cpu", "wall"):
            for kind, t in p[key].items():
                out[key][kind] = max(out[key].get(kind, 0.0), t)
    return out


def pytest_sessionfinish(session, exitstatus):  # noqa: ARG001 - pytest's hook signature
    worker_output = getattr(session.config, "workeroutput", None)
    if worker_output is not None:  # an xdist worker: the controller prints the sum
        worker_output["quantadvise_fuzz"] = _fuzz_counts()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):  # noqa: ARG001 - pytest-xdist's hook signature
    _FUZZ_FROM_WORKERS.append(getattr(node, "workeroutput", {}).get("quantadvise_fuzz"))


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 - pytest's hook signature
    counts = merge_fuzz_counts([*_FUZZ_FROM_WORKERS, _fuzz_counts()])
    if counts is None:
        return
    total = sum(counts["runs"].values())
    wall = max(counts["wall"].values(), default=0.0)
    over = "" if wall < counts["max_seconds"] else " (over the 5 s bar on the clock: a loaded machine? CPU is the bar)"
    workers = len([p for p in _FUZZ_FROM_WORKERS if p])
    where = f" over {workers} workers" if workers > 1 else ""
    terminalreporter.write_sep("-", f"fuzz: {total:,} runs{where}, slowest {max(counts['cpu'].values()):.2f} s of "
                                    f"CPU, {wall:.2f} s on the clock{over}")
    for kind, n in sorted(counts["runs"].items()):
        terminalreporter.write_line(f"  {kind:<28} {n:>6,} runs, slowest {counts['cpu'][kind]:.2f} s")
