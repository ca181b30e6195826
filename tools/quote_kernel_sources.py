"""Maintainer script: copy the engine source lines data/kernels/<engine>-<version>.yaml cites (its Linear
kernels and routes, and its fused-MoE kernels and routes), verbatim,
into tests/fixtures/kernel_quotes/<engine>-<version>.json (stamped with the wheel's sha256), so the
tests can check offline that each cited span names the kernel it is cited for.

    pip download vllm==0.33.0 sglang==0.5.23 --no-deps -d /tmp/wheels   # every release on file
    python tools/quote_kernel_sources.py /tmp/wheels                     # every table in data/kernels/
    python tools/quote_kernel_sources.py /tmp/wheels vllm-0.32.0         # only the tables named

Adding a release starts from a neighbouring release's table:

    python tools/quote_kernel_sources.py carry /tmp/wheels vllm-0.33.0 0.32.0 > data/kernels/vllm-0.32.0.yaml

writes the table with every citation moved to where the same lines are in the other release's wheel
(found by their text, nearest the old line) and its header restamped; on stderr it lists each span whose
text is not found again (kept as it was: read that code in the new wheel and fix the row by hand) and
each file the wheel lacks. It never decides a kernel: diff the selection code the rows cite between the
two wheels, and add, drop or reorder rows where the release's lists differ.

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


def _wheel(folder: str, artifact: str, sha256: str | None, what: str) -> Path:
    wheel = Path(folder) / artifact
    if sha256 is not None and hashlib.sha256(wheel.read_bytes()).hexdigest() != sha256:
        raise SystemExit(f"{wheel.name}: sha256 differs from {what}")
    return wheel


def _resolve(names: list[str], path: str) -> list[str]:
    return [n for n in names if n == path or n.endswith("/" + path)]


def quote(folder: str, only: list[str]) -> int:
    for data in sorted((REPO / "data" / "kernels").glob("*.yaml")):
        if only and data.stem not in only:
            continue
        doc = yaml.safe_load(data.read_text())
        wheel = _wheel(folder, doc["source"]["artifact"], doc["source"]["sha256"], data.name)
        with zipfile.ZipFile(wheel) as z:
            names = [n for n in z.namelist() if n.endswith(".py")]
            lines: dict[str, str] = {}
            paths: dict[str, str] = {}
            rows = [*doc["kernels"], *doc["routes"], *doc.get("moe_kernels", ()), *doc.get("moe_routes", ())]
            for row in rows:
                for path, start, end in spans(row["source"]):
                    full = _resolve(names, path)
                    if len(full) != 1:
                        raise SystemExit(f"{data.name}: '{path}' matches {len(full)} files in {wheel.name}")
                    paths[path] = full[0]
                    text = z.read(full[0]).decode().splitlines()
                    if end > len(text):
                        raise SystemExit(f"{data.name}: {path}:{start}-{end} is past the end of {full[0]}")
                    for i in range(start, end + 1):
                        lines[f"{path}:{i}"] = text[i - 1].strip()
        out = REPO / "tests" / "fixtures" / "kernel_quotes" / f"{data.stem}.json"
        out.write_text(json.dumps({"sha256": doc["source"]["sha256"], "paths": paths, "lines": lines}, indent=1,
                                  sort_keys=True) + "\n")
        print(f"{out.relative_to(REPO)}: {len(lines)} lines from {len(paths)} files")
    return 0


def carry_text(text: str, base: zipfile.ZipFile, target: zipfile.ZipFile, version: str, artifact: str,
               sha256: str) -> tuple[str, list[str]]:
    """``text`` (a kernel table read from the ``base`` wheel) with each citation moved to where the same
    lines are in ``target`` and the header restamped for ``version``; and the spans to read by hand."""
    old_v = str(yaml.safe_load(text)["version"])
    bnames = [n for n in base.namelist() if n.endswith(".py")]
    tnames = [n for n in target.namelist() if n.endswith(".py")]
    cache: dict[tuple[int, str], list[str] | None] = {}
    review: list[str] = []

    def lines_of(z: zipfile.ZipFile, names: list[str], path: str) -> list[str] | None:
        key = (id(z), path)
        if key not in cache:
            full = _resolve(names, path)
            cache[key] = [t.strip() for t in z.read(full[0]).decode().splitlines()] if len(full) == 1 else None
        return cache[key]

    def move(path: str, start: int, end: int, where: int) -> tuple[int, int]:
        old, new = lines_of(base, bnames, path), lines_of(target, tnames, path)
        if old is None or new is None:
            review.append(f"line {where}: {path} is not one file in {'the base' if old is None else 'the'} wheel")
            return start, end
        block = old[start - 1:end]
        hits = [i + 1 for i in range(len(new) - len(block) + 1) if new[i:i + len(block)] == block]
        if not block or not hits:
            review.append(f"line {where}: {path}:{start}" + (f"-{end}" if end != start else "")
                          + " not found again (kept): " + " / ".join(block)[:160])
            return start, end

        # a short block ("MarlinFP8ScaledMMLinearKernel,") recurs: prefer the hit whose neighbours match too
        def near(lines: list[str], first: int) -> list[str | None]:
            last = first + end - start
            return [lines[i - 1] if 1 <= i <= len(lines) else None
                    for i in (*range(first - 4, first), *range(last + 1, last + 5))]

        theirs = near(old, start)
        at = min(hits, key=lambda h: (-sum(a == b for a, b in zip(theirs, near(new, h), strict=True)),
                                      abs(h - start), h))
        return at, at + end - start

    out: list[str] = []
    path: str | None = None
    for no, line in enumerate(text.splitlines(), 1):
        def sub(m: re.Match[str], no: int = no) -> str:
            nonlocal path
            if m.group(1):
                path = m.group(1)
                s, e = move(path, int(m.group(2)), int(m.group(3) or m.group(2)), no)
                return f"{path}:{s}" + (f"-{e}" if m.group(3) else "")
            if path is None:
                return m.group(0)
            s, e = move(path, int(m.group(4)), int(m.group(5) or m.group(4)), no)
            return f":{s}" + (f"-{e}" if m.group(5) else "")

        line = CITE.sub(sub, line)
        if line.startswith(("version: ", "  version: ")):
            line = line.replace(old_v, version)
        elif line.startswith("  artifact: "):
            line = f"  artifact: {artifact}"
        elif line.startswith("  sha256: "):
            line = f"  sha256: {sha256}"
        out.append(line)
    return "\n".join(out) + "\n", review


def carry(folder: str, release: str, version: str) -> int:
    """Print data/kernels/<release>.yaml with its citations moved to the ``version`` wheel (see above)."""
    src = REPO / "data" / "kernels" / f"{release}.yaml"
    text = src.read_text()
    doc = yaml.safe_load(text)
    artifact = doc["source"]["artifact"].replace(f"-{doc['version']}-", f"-{version}-")
    target_path = _wheel(folder, artifact, None, "")
    with zipfile.ZipFile(_wheel(folder, doc["source"]["artifact"], doc["source"]["sha256"], src.name)) as base, \
            zipfile.ZipFile(target_path) as target:
        out, review = carry_text(text, base, target, version, artifact,
                                 hashlib.sha256(target_path.read_bytes()).hexdigest())
    sys.stdout.write(out)
    print(f"{src.name} -> {version}: {len(review)} citations to review", file=sys.stderr)
    for r in review:
        print("  " + r, file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "carry":
        raise SystemExit(carry(sys.argv[2], sys.argv[3], sys.argv[4]))
    if len(sys.argv) < 2 or sys.argv[1] == "carry":
        raise SystemExit(__doc__)
    raise SystemExit(quote(sys.argv[1], sys.argv[2:]))
