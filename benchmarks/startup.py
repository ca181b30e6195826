"""Cold-process wall time of quantadvise commands against the import floor.

    python benchmarks/startup.py [--runs 21]

Reports the median wall time of each command run as a fresh process, next to two floors measured
the same way on the same machine:

- import floor: ``python -c "import typer, pydantic, rich, yaml"`` (the issues' reference);
- typer floor: a one-command typer app that parses one option and returns (typer >= 0.26 builds a
  pydantic TypeAdapter per option at run time, so any typer CLI pays this).

Not a timed test: wall time depends on the machine. Run it on a quiet machine.
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

COMMANDS = {
    "recommend --batch 64 --ctx 2048": ["recommend", "--batch", "64", "--ctx", "2048"],
    "size meta-llama/Llama-3-8B --bits 4 --group 128": ["size", "meta-llama/Llama-3-8B", "--bits", "4", "--group", "128"],
    "size ... --format json": ["size", "meta-llama/Llama-3-8B", "--bits", "4", "--group", "128", "--format", "json"],
}


def median_wall(cmd: list[str], runs: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        res = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        times.append(time.perf_counter() - t0)
        if res.returncode not in (0, 1):
            sys.exit(f"command failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr.decode()}")
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--command", action="append", help="only these command labels")
    args = ap.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    exe = shutil.which("quantadvise")
    qa = [exe] if exe else [sys.executable, "-m", "quantadvise"]
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(TYPER_APP)
        typer_app = f.name
    try:
        floor = median_wall([sys.executable, "-c", "import typer, pydantic, rich, yaml"], args.runs, env)
        typer_floor = median_wall([sys.executable, typer_app, "--x", "2"], args.runs, env)
    finally:
        os.unlink(typer_app)
    print(f"{'import floor (import typer, pydantic, rich, yaml)':48s} {floor * 1e3:7.1f} ms   1.00x")
    print(f"{'typer floor (one-command typer app)':48s} {typer_floor * 1e3:7.1f} ms   {typer_floor / floor:4.2f}x")
    for label, cmd in COMMANDS.items():
        if args.command and label not in args.command:
            continue
        t = median_wall(qa + cmd, args.runs, env)
        print(
            f"{'quantadvise ' + label:48s} {t * 1e3:7.1f} ms   {t / floor:4.2f}x import floor, "
            f"{t / typer_floor:4.2f}x typer floor"
        )


if __name__ == "__main__":
    main()
