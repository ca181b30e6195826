#!/usr/bin/env python3
"""Kernel tables for releases nobody read the selection code of: carried from the nearest table, and said so.

Maintainer tool (never imported by ``quantadvise``)::

    python tools/carry_kernel_tables.py DIR vllm 0.29.0 0.28.0 ...    # releases in the order to carry them
    python tools/carry_kernel_tables.py --quote-differences DIR vllm 0.9.2 ...  # quote the differences' lines

``DIR`` holds each release's artifact (the one ``data/engines/<engine>-<version>.yaml`` names) and the base
table's. For each release, newest first, the nearest table on file (a newer one, else an older one; ones this
run wrote count) is carried with ``quote_kernel_sources.carry_text`` (every citation moved to where the same
lines are in the release), and then:

- **every file the table cites is byte-identical in the two releases** (and every message a kernel ``warns``
  with is in the release's engine data): the selection the table transcribes is the same code, so the table
  is written as the release's own, ``data/kernels/<engine>-<version>.yaml``, its ``read_by`` saying so, and
  its quotes to ``tests/fixtures/kernel_quotes/``;
- **otherwise** nothing is decided: ``data/kernels/carried/<engine>-<version>.yaml`` records that the release
  is priced with the nearest table, with a ``caveat`` naming the files whose code differs and how many
  citations were not found again. The package prices the release with that table and says the caveat
  (``catalog.kernel_table`` / ``catalog.kernel_caveat``).

A carried record may also hold ``differences``: facts read by hand in the release's own source where it runs a
route's kernel otherwise than the carried table says (another kernel, or its activations quantized by a separate
kernel); a rerun keeps them, and ``--quote-differences`` copies the lines they cite to
``tests/fixtures/kernel_quotes/carried/`` (the tests check each row against its quote).
"""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import date
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quote_kernel_sources import _resolve, carry_text, spans  # noqa: E402
from wheel_source import open_artifact  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
KERNELS = REPO / "data" / "kernels"
CARRIED = KERNELS / "carried"
STAGED = REPO / "tests" / "fixtures" / "kernel_quotes"


def vkey(v: str) -> tuple[Any, ...]:
    from release_artifacts import vkey as k

    return k(v)


def nearest(engine: str, version: str) -> Path | None:
    """The table to carry from: the nearest newer release's, else the nearest older one's."""
    tables = sorted(KERNELS.glob(f"{engine}-*.yaml"), key=lambda p: vkey(p.stem.split("-", 1)[1]))
    newer = [p for p in tables if vkey(p.stem.split("-", 1)[1]) > vkey(version)]
    older = [p for p in tables if vkey(p.stem.split("-", 1)[1]) < vkey(version)]
    return newer[0] if newer else (older[-1] if older else None)


def _text(z: Any, names: list[str], path: str) -> str | None:
    full = _resolve(names, path)
    return z.read(full[0]).decode() if len(full) == 1 else None


def carry_one(folder: Path, engine: str, version: str) -> str:
    base_path = nearest(engine, version)
    if base_path is None:
        return f"{engine} {version}: no kernel table on file to carry"
    base_doc = yaml.safe_load(base_path.read_text())
    eng = yaml.safe_load((REPO / "data" / "engines" / f"{engine}-{version}.yaml").read_text())
    artifact, sha = eng["source"]["artifact"], eng["source"]["sha256"]
    base_art = folder / base_doc["source"]["artifact"]
    if not base_art.is_file():
        return f"{engine} {version}: {base_art.name} (the base table's artifact) is not in {folder}"
    base, target = open_artifact(base_art), open_artifact(folder / artifact)
    text = base_path.read_text()
    out, review = carry_text(text, base, target, version, artifact, sha)  # type: ignore[arg-type]
    bnames = [n for n in base.namelist() if n.endswith(".py")]
    tnames = [n for n in target.namelist() if n.endswith(".py")]
    cited = sorted({p for row in [*base_doc["kernels"], *base_doc["routes"], *base_doc.get("moe_kernels", []),
                                  *base_doc.get("moe_routes", [])] for p, _s, _e in spans(row["source"])})
    changed = [p for p in cited if _text(base, bnames, p) != _text(target, tnames, p)]
    msgs = {m["id"] for m in eng.get("messages") or []}
    missing = sorted({k["warns"] for k in [*base_doc["kernels"], *base_doc.get("moe_kernels", [])]
                      if k.get("warns") and k["warns"] not in msgs})
    CARRIED.mkdir(exist_ok=True)
    pointer = CARRIED / f"{engine}-{version}.yaml"
    if not changed and not review and not missing:
        label = {"vllm": "vLLM", "sglang": "SGLang"}[engine]
        lines = out.splitlines()
        if lines and lines[0].startswith(f"# {label} {base_doc['version']} "):
            lines[0] = lines[0].replace(f"# {label} {base_doc['version']} ", f"# {label} {version} ", 1)
        doc_lines = []
        for ln in lines:
            if ln.startswith("  read_by: "):
                ln = (f"  read_by: \"carried from data/kernels/{base_path.name} by tools/carry_kernel_tables.py: the "
                      f"{len(cited)} files the table cites are identical in the two releases' sources, so the "
                      f"selection it transcribes is unchanged; the same artifact data/engines/{engine}-{version}.yaml "
                      "was extracted from\"")
            elif ln.startswith("as_of: "):
                ln = f"as_of: {date.today().isoformat()}"
            doc_lines.append(ln)
        (KERNELS / f"{engine}-{version}.yaml").write_text("\n".join(doc_lines) + "\n")
        pointer.unlink(missing_ok=True)
        _quotes(target, tnames, yaml.safe_load("\n".join(doc_lines)), f"{engine}-{version}", sha)
        return f"{engine} {version}: own table (carried from {base_path.stem}; {len(cited)} cited files identical)"
    caveat = (f"Kernel selection not read for {engine} {version}: priced with data/kernels/{base_path.name}, "
              f"whose cited selection code differs in this release ({len(changed)} of {len(cited)} cited files "
              f"changed or absent, {len(review)} citations not found again"
              + (f", kernel messages {missing} not printed by this release" if missing else "") + ").")
    kept = yaml.safe_load(pointer.read_text()).get("differences") if pointer.is_file() else None
    rec = {"schema_version": 1, "engine": engine, "version": version,
           "source": {"package": engine, "version": version, "artifact": artifact, "sha256": sha,
                      "read_by": "tools/carry_kernel_tables.py (files compared; no selection code read)"},
           "as_of": date.today(), "carried_from": base_path.stem, "caveat": caveat,
           "changed_files": changed, "citations_not_found": len(review)}
    if kept:  # read by hand in the release's own source (quote_differences), not by this comparison: kept
        rec["differences"] = kept
    pointer.write_text("# A release without a kernel table of its own: what it is priced with, and why that is a "
                       "stand-in.\n# Written by tools/carry_kernel_tables.py; read by quantadvise.catalog.kernel_table / kernel_caveat.\n"
                       + yaml.safe_dump(rec, sort_keys=False, width=110))
    return f"{engine} {version}: carried from {base_path.stem} ({len(changed)}/{len(cited)} cited files changed, " \
           f"{len(review)} spans lost)"


def _quotes(z: Any, names: list[str], doc: dict[str, Any], release: str, sha: str) -> None:
    """tests/fixtures/kernel_quotes/<release>.json, as quote_kernel_sources.quote writes it."""
    lines: dict[str, str] = {}
    paths: dict[str, str] = {}
    for row in [*doc["kernels"], *doc["routes"], *doc.get("moe_kernels", []), *doc.get("moe_routes", [])]:
        for path, start, end in spans(row["source"]):
            full = _resolve(names, path)
            paths[path] = full[0]
            text = z.read(full[0]).decode().splitlines()
            for i in range(start, end + 1):
                lines[f"{path}:{i}"] = text[i - 1].strip()
    STAGED.mkdir(parents=True, exist_ok=True)
    (STAGED / f"{release}.json").write_text(json.dumps({"sha256": sha, "paths": paths, "lines": lines}, indent=1,
                                                       sort_keys=True) + "\n")


def quote_differences(folder: Path, engine: str, version: str) -> str:
    """tests/fixtures/kernel_quotes/carried/<engine>-<version>.json: the lines the ``differences`` of a carried
    record cite, verbatim from the release's own artifact (its sha256 checked against the record)."""
    rec = yaml.safe_load((CARRIED / f"{engine}-{version}.yaml").read_text())
    art = folder / rec["source"]["artifact"]
    if hashlib.sha256(art.read_bytes()).hexdigest() != rec["source"]["sha256"]:
        return f"{engine} {version}: {art.name}'s sha256 differs from the carried record's"
    z = open_artifact(art)
    names = [n for n in z.namelist() if n.endswith(".py")]
    lines: dict[str, str] = {}
    paths: dict[str, str] = {}
    for row in rec.get("differences") or []:
        for path, start, end in spans(row["source"]):
            full = _resolve(names, path)
            if len(full) != 1:
                return f"{engine} {version}: {path} is not one file of {art.name}"
            paths[path] = full[0]
            text = z.read(full[0]).decode().splitlines()
            for i in range(start, end + 1):
                lines[f"{path}:{i}"] = text[i - 1].strip()
    out = STAGED / "carried" / f"{engine}-{version}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"sha256": rec["source"]["sha256"], "paths": paths, "lines": lines}, indent=1,
                              sort_keys=True) + "\n")
    return f"{engine} {version}: {len(lines)} lines quoted for {len(rec.get('differences') or [])} differences"


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    quotes = argv[0] == "--quote-differences"
    if quotes:
        argv = argv[1:]
    folder, engine, versions = Path(argv[0]), argv[1], argv[2:]
    for v in versions:
        print(quote_differences(folder, engine, v) if quotes else carry_one(folder, engine, v))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))


__all__ = ["carry_one", "hashlib"]
