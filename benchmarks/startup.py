"""Cold-process wall time of quantadvise commands against the import floor.

    python benchmarks/startup.py [--runs 21]

Runs every command as a fresh process, round-robin (one run of each in turn, so a slow spell of the
machine hits every command alike), and reports the median and the minimum wall time of each, next
to three floors measured the same way:

- import floor: ``python -c "import typer, pydantic, rich, yaml"`` (the issues' reference; note
  that ``import pydantic`` is lazy and loads none of its validation machinery);
- typer floor: a one-command typer app that parses one option (typer >= 0.26 builds a pydantic
  TypeAdapter per option at run time, so any typer CLI loads pydantic's machinery);
- typer + model floor: the same app validating one pydantic model (what any typer CLI whose
  results are pydantic models pays before doing anything of its own).

Not a timed test: wall time depends on the machine. Run it on a quiet machine, from a wheel install
(``pip install dist/quantadvise-*.whl``: the wheel carries the compiled data tables).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TYPER_APP = """
import typer
app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
@app.command()
def main(x: int = 1, name: str = "a"):
    pass
app()
"""

TYPER_MODEL_APP = """
import typer
from pydantic import BaseModel
class Result(BaseModel):
    x: int
    name: str
app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
@app.command()
def main(x: int = 1, name: str = "a"):
    print(Result(x=x, name=name).model_dump_json())
app()
"""

COMMANDS = {
    "recommend --batch 64 --ctx 2048": ["recommend", "--batch", "64", "--ctx", "2048"],
    "size meta-llama/Llama-3-8B --bits 4 --group 128": ["size", "meta-llama/Llama-3-8B", "--bits", "4", "--group",
                                                        "128"],
    "size ... --format json": ["size", "meta-llama/Llama-3-8B", "--bits", "4", "--group", "128", "--format", "json"],
}


def run_once(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - t0
    if res.returncode not in (0, 1):
        sys.exit(f"command failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr.decode()}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--command", action="append", help="only these command labels")
    args = ap.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    exe = shutil.which("quantadvise")
    qa = [exe] if exe else [sys.executable, "-m", "quantadvise"]
    tmp = tempfile.mkdtemp()
    apps = {}
    for name, text in (("typer", TYPER_APP), ("typer_model", TYPER_MODEL_APP)):
        apps[name] = os.path.join(tmp, f"floor_{name}_app.py")  # not typer.py: it would shadow typer
        with open(apps[name], "w") as f:
            f.write(text)
    cases = {
        "import floor (import typer, pydantic, rich, yaml)": [sys.executable, "-c", "import typer, pydantic, rich, yaml"],
        "typer floor (one-command typer app)": [sys.executable, apps["typer"], "--x", "2"],
        "typer + model floor (same, one pydantic model)": [sys.executable, apps["typer_model"], "--x", "2"],
    }
    cases.update({f"quantadvise {label}": qa + cmd for label, cmd in COMMANDS.items()
                  if not args.command or label in args.command})
    times: dict[str, list[float]] = {k: [] for k in cases}
    try:
        for cmd in cases.values():  # warm the file cache once
            run_once(cmd, env)
        for _ in range(args.runs):
            for label, cmd in cases.items():
                times[label].append(run_once(cmd, env))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    floor_label = next(iter(cases))
    med0, min0 = statistics.median(times[floor_label]), min(times[floor_label])
    print(f"{'':58s} {'median':>8s} {'ratio':>6s}   {'min':>8s} {'ratio':>6s}")
    for label, ts in times.items():
        med, mn = statistics.median(ts), min(ts)
        print(f"{label:58s} {med * 1e3:6.1f}ms {med / med0:5.2f}x   {mn * 1e3:6.1f}ms {mn / min0:5.2f}x")
    print(f"({args.runs} runs each, round-robin; ratios against the import floor)")


if __name__ == "__main__":
    main()
