#!/usr/bin/env python3
"""Write ``data/flags/bench/<engine>-<version>.yaml``: every option an engine release's benchmark client
registers (``vllm bench serve``; SGLang's ``python -m sglang.bench_serving``).

Maintainer tool, run by hand (never at run time, never imported by ``quantadvise``)::

    pip download vllm==0.33.0 sglang==0.5.23 --no-deps -d /tmp/wheels
    python tools/extract_bench_flags.py /tmp/wheels/vllm-0.33.0-*.whl /tmp/wheels/sglang-0.5.23-*.whl

A source distribution (``vllm-0.34.0.tar.gz``, for a release whose wheel is not published for this
platform) is read the same way.

The wheel is read as a zip and the client's modules parsed with :mod:`ast` (nothing imported or run):
every ``add_argument`` call of the files below, with its option strings, whether it takes a value
(``action="store_true"``: no; ``nargs="*"`` / ``"+"``: a list) and its line. Validated by
``quantadvise.engines.bench.BenchOptions`` (``quantadvise`` data tests).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wheel_source import Wheel  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "data" / "flags" / "bench"
_WHEEL = re.compile(r"(?P<engine>vllm|sglang)-(?P<version>\d[\w.]*?)(?:-|\.tar\.gz$)")

FILES = {  # the modules whose parser the client builds: serve's own options and the dataset options it adds;
    # each a tuple of the paths it has had across releases, the first one present is read
    "vllm": (("vllm/benchmarks/serve.py",),
             ("vllm/benchmarks/datasets/datasets.py", "vllm/benchmarks/datasets.py")),  # a package from 0.20
    "sglang": (("sglang/benchmark/serving.py", "sglang/bench_serving.py"),),  # moved in 0.5.15
}
PROG = {"vllm": "vllm bench serve", "sglang": "python -m sglang.bench_serving"}
ENTRY = {"vllm": (FILES["vllm"][0], "def add_cli_args"), "sglang": (FILES["sglang"][0], "parser = ArgumentParser")}


def _present(names: set[str], paths: tuple[str, ...], wheel: str) -> str:
    found = next((p for p in paths if p in names), None)
    if found is None:
        raise SystemExit(f"{wheel}: none of {', '.join(paths)} in the archive (the client moved again)")
    return found


def options(src: str, path: str) -> list[dict[str, object]]:
    out = []
    for node in ast.walk(ast.parse(src)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"):
            continue
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                 and a.value.startswith("-")]
        if not names:
            continue
        kw = {k.arg: k.value for k in node.keywords}
        kind = "value"
        act = kw.get("action")
        if isinstance(act, ast.Constant) and act.value in ("store_true", "store_false"):
            kind = "flag"
        nargs = kw.get("nargs")
        if isinstance(nargs, ast.Constant) and nargs.value in ("*", "+"):
            kind = "list"
        out.append({"names": names, "kind": kind, "source": f"{path}:{node.lineno}"})
    return sorted(out, key=lambda o: (str(o["source"]).split(":")[0], int(str(o["source"]).split(":")[1])))


def build(wheel_path: Path) -> tuple[str, str]:
    m = _WHEEL.match(wheel_path.name)
    if m is None:
        raise SystemExit(f"{wheel_path.name}: not a vllm / sglang wheel")
    engine, version = m["engine"], m["version"]
    w = Wheel(wheel_path)
    rows = []
    names = set(w.zip.namelist())
    for paths in FILES[engine]:
        path = _present(names, paths, wheel_path.name)
        rows += options(w.zip.read(path).decode("utf-8"), path)
    epaths, needle = ENTRY[engine]
    epath = _present(names, epaths, wheel_path.name)
    lines = w.zip.read(epath).decode("utf-8").splitlines()
    entry_line = next(i for i, t in enumerate(lines, 1) if needle in t)
    head = [f"# {PROG[engine]} ({engine} {version}): every option its parser registers, written by",
            "# tools/extract_bench_flags.py from the published wheel (read with ast; nothing imported or run); do not",
            "# edit by hand. kind: value | flag (store_true) | list (nargs * or +). Validated by",
            "# quantadvise.engines.bench.BenchOptions; `recommend --bench-plan` checks its commands against it.",
            "schema_version: 1", f"engine: {engine}", f"version: {version}", f"prog: {PROG[engine]}",
            f"entry: {epath}:{entry_line}", "source:", f"  package: {engine}", f"  version: {version}",
            f"  artifact: {wheel_path.name}", f"  sha256: {w.sha256}",
            "  read_by: tools/extract_bench_flags.py (ast; nothing imported or run)",
            f"as_of: {date.today().isoformat()}", "options:"]
    for r in rows:
        names = ", ".join(str(n) for n in r["names"])  # type: ignore[union-attr]
        head.append(f"  - {{names: [{names}], kind: {r['kind']}, source: '{r['source']}'}}")
    return f"{engine}-{version}", "\n".join(head) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheels", nargs="+", type=Path)
    a = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for wp in a.wheels:
        stem, text = build(wp)
        (OUT / f"{stem}.yaml").write_text(text, encoding="utf-8")
        print(f"wrote data/flags/bench/{stem}.yaml ({text.count('- {names')} options)")


if __name__ == "__main__":
    main()
