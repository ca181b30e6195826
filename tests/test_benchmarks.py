"""Every script in benchmarks/ runs, at a tiny size (a smoke test: no timing is asserted), so the
benchmarks cannot rot unnoticed when the code moves."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_benchmark_script_is_smoke_tested():
    """A new script in benchmarks/ needs a smoke test here."""
    scripts = {p.name for p in BENCH.iterdir() if p.suffix in (".py", ".sh")}
    assert scripts == {"roofline_sweep.py", "startup.py", "device_calibrate.sh"}


def test_roofline_sweep_runs_tiny(capsys):
    _load("roofline_sweep").main(["--tiny"])
    out = capsys.readouterr().out
    # 1 GPU x 2 schemes x 3 batches x 2 contexts = 12 points, for both figures
    assert out.count("= 12 points") == 2 and "points/s" in out


def test_startup_floor_app_has_the_commands_options():
    """The floor is a typer app with our command's option set: every spelling of ours is in it."""
    import typer

    from quantadvise.cli.size import size_cmd

    src = _load("startup").floor_source("size")
    compile(src, "floor_size.py", "exec")
    hints = __import__("typing").get_type_hints(size_cmd, include_extras=True)
    spellings = [d for h in hints.values() for m in getattr(h, "__metadata__", ())
                 for d in (getattr(m, "param_decls", None) or ()) if isinstance(d, str)]
    assert spellings and all(repr(s) in src for s in spellings)
    assert "typer.Context" not in src or "click_ctx" in src
    assert typer  # the floor imports typer only


@pytest.mark.slow
def test_startup_runs_tiny():
    mod = _load("startup")
    assert mod.main(["--runs", "1", "--command", "size ... --format json"]) == 0


@pytest.mark.slow
def test_startup_runs_a_baseline_in_the_same_rounds(capsys):
    """--baseline: another install's commands, interleaved, against the same floor (here: this one)."""
    mod = _load("startup")
    assert mod.main(["--runs", "1", "--command", "size ... --format json",
                     "--baseline", f"{sys.executable} -m quantadvise"]) == 0
    out = capsys.readouterr().out
    assert "baseline size ... --format json" in out and out.count("(target <= 1.15x)") == 2


@pytest.mark.slow
def test_device_calibrate_script_dry_run(tmp_path):
    """The device script on the simulated backend (its documented dry run), with a small budget."""
    env = {**os.environ, "OUT": str(tmp_path), "BACKEND": "simulated", "GPU": "h200", "CAL_SECONDS": "1",
           "PYTHON": sys.executable}
    res = subprocess.run(["bash", str(BENCH / "device_calibrate.sh")], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode in (0, 1), res.stderr[-2000:]  # 1: validate's verdict on the simulated profile
    assert "Traceback" not in res.stderr, res.stderr[-2000:]
    profiles = list((tmp_path / "profiles").glob("*.yaml"))
    assert len(profiles) == 1 and (tmp_path / "calibrate.txt").read_text().strip()
    assert (tmp_path / "validate.json").read_text().strip()
