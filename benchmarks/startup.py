"""Cold-process start-up of quantadvise commands against a bare typer app with the same options.

    python benchmarks/startup.py [--runs 21] [--command recommend] [--check]

The floor of a command is a typer app built the way ``quantadvise`` builds its own (the same Typer
settings, a root callback, one command) whose command takes **the same option set** as ours — each
option's type, spellings, environment variable and default, generated from our command's signature —
and does nothing, then ends as our console script ends (output flushed, ``os._exit``: no interpreter
teardown, ``cli/app.py`` ``run``). typer (>= 0.26) builds a pydantic adapter per option at run time, so that app is what
any CLI with these options pays before doing any work; the rest of our wall time is our own imports and
work. (The measured lines are plain: quantadvise parses them without importing typer, ``cli/fastpath.py``, so a
command can come in under its floor.) The import floor (``import typer, pydantic, rich, yaml``) is shown for reference.

Every case runs as a fresh process, round-robin (one run of each in turn, the order reversed every other round,
so a slow spell of the machine hits every case alike). Reported per case: the median wall time and the median
CPU time (user + sys of the child: less sensitive to other load on the machine than wall time), and each
command's ratio to its own floor: of the medians, and paired (the median over rounds of the command's wall time
over its floor's in the same round — on a shared host whose speed drifts by 30% between minutes, the steadier
figure). Targets (issue 30): ``recommend`` <= 1.5x and ``size`` <= 1.15x of
their floors, from a wheel install (``pip install .``: the wheel carries the compiled data tables).
``--check`` exits 1 when a target is missed. ``--baseline "OTHER/bin/quantadvise"`` runs another
install's commands (the previous wheel in its own venv) in the same rounds, against the same floors: a
before/after on one machine in one run. Not a timed test: the test suite runs this script at a tiny size
only to keep it working (tests/test_benchmarks.py).
"""

from __future__ import annotations

import argparse
import enum
import inspect
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
import typing
from pathlib import Path

# label -> (command, quantadvise arguments, target ratio to the command's floor)
COMMANDS: dict[str, tuple[str, list[str], float]] = {
    "recommend --batch 64 --ctx 2048": ("recommend", ["recommend", "--batch", "64", "--ctx", "2048"], 1.5),
    "size meta-llama/Llama-3-8B --bits 4 --group 128": (
        "size", ["size", "meta-llama/Llama-3-8B", "--bits", "4", "--group", "128"], 1.15),
    "size ... --format json": (
        "size", ["size", "meta-llama/Llama-3-8B", "--bits", "4", "--group", "128", "--format", "json"], 1.15),
}


def _base(tp: typing.Any) -> typing.Any:
    """The option's value type without ``| None``."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else str
    return tp


def _type_text(tp: typing.Any, enums: dict[str, list[str]]) -> str:
    b = _base(tp)
    optional = b is not tp
    if isinstance(b, type) and issubclass(b, enum.Enum):
        enums[b.__name__] = [m.value for m in b]
        text = b.__name__
    elif b in (int, float, str, bool):
        text = b.__name__
    elif b is Path or (isinstance(b, type) and issubclass(b, Path)):
        text = "Path"
    elif typing.get_origin(b) is list:
        text = "list[str]"
    else:
        text = "str"
    return f"{text} | None" if optional else text


def floor_source(command: str) -> str:
    """A typer app with ``command``'s option set and an empty body, built like quantadvise's app."""
    import importlib

    import typer

    from quantadvise.cli.app import COMMANDS as CLI

    module, func, _ = CLI[command]
    fn = getattr(importlib.import_module(f"quantadvise.cli.{module}"), func)
    hints = typing.get_type_hints(fn, include_extras=True)
    enums: dict[str, list[str]] = {}
    params = []
    for name, p in inspect.signature(fn).parameters.items():
        ann = hints[name]
        if ann is typer.Context:
            params.append(f"    {name}: typer.Context")
            continue
        meta = next((m for m in getattr(ann, "__metadata__", ()) if hasattr(m, "param_decls")), None)
        tp = _type_text(typing.get_args(ann)[0] if meta is not None else ann, enums)
        kind = "Argument" if meta is not None and type(meta).__name__.endswith("ArgumentInfo") else "Option"
        # with Annotated, typer reads a string `default` of the info as the first spelling
        first = [meta.default] if meta is not None and isinstance(meta.default, str) and meta.default.startswith("-") \
            else []
        decls = [repr(d) for d in (*first, *(getattr(meta, "param_decls", None) or ()))]
        if meta is not None and getattr(meta, "envvar", None):
            decls.append(f"envvar={meta.envvar!r}")
        extra = ""
        default = p.default
        if isinstance(default, enum.Enum):
            default_text = f"{type(default).__name__}({default.value!r})"
        elif default is inspect.Parameter.empty:
            default_text = ""
        else:
            default_text = repr(default)
        params.append(f"    {name}: Annotated[{tp}, typer.{kind}({', '.join(decls)}{extra})]"
                      + (f" = {default_text}" if default_text else ""))
    enum_text = "".join(
        f"class {n}(str, Enum):\n" + "".join(f"    v{i} = {v!r}\n" for i, v in enumerate(vals)) + "\n"
        for n, vals in enums.items())
    return (
        "import os\nimport sys\nfrom enum import Enum\nfrom pathlib import Path\nfrom typing import Annotated\n\nimport typer\n\n"
        + enum_text
        + "app = typer.Typer(name='floor', add_completion=True, pretty_exceptions_enable=False, "
          "rich_markup_mode=None)\n\n@app.callback()\ndef root() -> None:\n    pass\n\n"
        + f"@app.command({command!r})\ndef cmd(\n" + ",\n".join(params) + ",\n) -> None:\n    pass\n\n"
        # it ends as quantadvise's console script does (cli/app.py `run`): output flushed, no interpreter teardown
        + "try:\n    app()\n    code = 0\nexcept SystemExit as exc:\n    code = exc.code if isinstance(exc.code, int) else 1\n"
          "sys.stdout.flush()\nsys.stderr.flush()\nos._exit(code)\n")


def run_once(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode not in (0, 1):
        sys.exit(f"command failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr.decode()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--command", action="append", help="only the cases whose label starts with this")
    ap.add_argument("--check", action="store_true", help="exit 1 when a command misses its target ratio")
    ap.add_argument("--baseline", metavar="COMMAND",
                    help="another install's quantadvise command line, run in the same rounds (before/after)")
    args = ap.parse_args(argv)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    exe = shutil.which("quantadvise")
    qa = [exe] if exe else [sys.executable, "-m", "quantadvise"]
    chosen = {label: v for label, v in COMMANDS.items()
              if not args.command or any(label.startswith(c) for c in args.command)}
    tmp = tempfile.mkdtemp(prefix="qa-startup-")
    cases: dict[str, list[str]] = {"import floor (import typer, pydantic, rich, yaml)":
                                   [sys.executable, "-c", "import typer, pydantic, rich, yaml"]}
    floors: dict[str, str] = {}
    try:
        for label, (command, qargs, _) in chosen.items():
            floor = f"typer floor: {command}'s option set"
            if floor not in cases:
                path = os.path.join(tmp, f"floor_{command}.py")  # not typer.py: it would shadow typer
                Path(path).write_text(floor_source(command), encoding="utf-8")
                cases[floor] = [sys.executable, path, command, *qargs[1:]]
            floors[label] = floor
            cases[f"quantadvise {label}"] = qa + qargs
            if args.baseline:
                cases[f"baseline {label}"] = shlex.split(args.baseline) + qargs
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
        for cmd in cases.values():  # warm the file cache once
            run_once(cmd, env)
        for i in range(args.runs):  # one run of each a round, the order reversed every other round
            for label in (list(cases) if i % 2 == 0 else list(reversed(cases))):
                times[label].append(run_once(cases[label], env))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def med(label: str, i: int) -> float:
        return statistics.median(t[i] for t in times[label])

    def paired(label: str, floor: str) -> float:  # the median of each round's ratio: a slow spell hits both
        return statistics.median(a[0] / b[0] for a, b in zip(times[label], times[floor], strict=True))

    print(f"{'':60s} {'wall':>8s} {'cpu':>8s}   ratio to its floor (wall, cpu; paired wall)")
    missed = []
    for label in cases:
        line = f"{label:60s} {med(label, 0) * 1e3:6.1f}ms {med(label, 1) * 1e3:6.1f}ms"
        short = label.removeprefix("quantadvise ").removeprefix("baseline ")
        if short in floors and short != label:
            floor = floors[short]
            rw, rc = med(label, 0) / med(floor, 0), med(label, 1) / med(floor, 1)
            target = chosen[short][2]
            line += f"   {rw:4.2f}x {rc:4.2f}x; {paired(label, floor):4.2f}x (target <= {target:g}x)"
            if rc > target and label.startswith("quantadvise "):
                missed.append(short)
        print(line)
    print(f"({args.runs} runs each, round-robin, every other round reversed; medians, and the median of each "
          "round's ratio to the floor run in it)")
    if args.check and missed:
        print("missed: " + ", ".join(missed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
