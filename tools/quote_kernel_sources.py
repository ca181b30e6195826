"""Maintainer script: copy the engine source lines data/kernels/<engine>-<version>.yaml cites, verbatim,
into tests/fixtures/kernel_quotes/<engine>-<version>.json (stamped with the wheel's sha256), so the
tests can check offline that each cited span names the kernel it is cited for.

    pip download vllm==0.33.0 sglang==0.5.23 --no-deps -d /tmp/wheels
    python tools/quote_kernel_sources.py /tmp/wheels

A citation is ``path:line`` or ``path:start-end``; a path may be a suffix of the wheel path
(``scaled_mm/cutlass.py``), resolved to the one wheel file that ends with it.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
CITE = re.compile(r"([\w./-]+\.py):(\d+)(?:-(\d+))?|(?<![\w./-]):(\d+)(?:-(\d+))?")


def spans(text: str) -> list[tuple[str, int, int]]:
    """Every (path, start, end) a source string cites: ``a.py:1-3 ... :7`` cites a.py twice (a bare
    ``:line`` belongs to the last file named before it)."""
    out: list[tuple[str, int, int]] = []
    path = None
    for m in CITE.finditer(text):
        if m.group(1):
            path = m.group(1)
            out.append((path, int(m.group(2)), int(m.group(3) or m.group(2))))
        elif path is not None:
            out.append((path, int(m.group(4)), int(m.group(5) or m.group(4))))
    return out


def main(folder: str) -> int:
    for data in sorted((REPO / "data" / "kernels").glob("*.yaml")):
        doc = yaml.safe_load(data.read_text())
        wheel = Path(folder) / doc["source"]["artifact"]
        raw = wheel.read_bytes()
        if hashlib.sha256(raw).hexdigest() != doc["source"]["sha256"]:
            raise SystemExit(f"{wheel.name}: sha256 differs from {data.name}")
        with zipfile.ZipFile(wheel) as z:
            names = [n for n in z.namelist() if n.endswith(".py")]
            lines: dict[str, str] = {}
            paths: dict[str, str] = {}
            rows = [*doc["kernels"], *doc["routes"]]
            for row in rows:
                for path, start, end in spans(row["source"]):
                    full = [n for n in names if n == path or n.endswith("/" + path)]
                    if len(full) != 1:
                        raise SystemExit(f"{data.name}: '{path}' matches {len(full)} files in {wheel.name}")
                    paths[path] = full[0]
                    text = z.read(full[0]).decode().splitlines()
                    for i in range(start, end + 1):
                        lines[f"{path}:{i}"] = text[i - 1].strip()
        out = REPO / "tests" / "fixtures" / "kernel_quotes" / f"{data.stem}.json"
        out.write_text(json.dumps({"sha256": doc["source"]["sha256"], "paths": paths, "lines": lines}, indent=1,
                                  sort_keys=True) + "\n")
        print(f"{out.relative_to(REPO)}: {len(lines)} lines from {len(paths)} files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
