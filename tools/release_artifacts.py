#!/usr/bin/env python3
"""Which engine releases exist on the package index, and fetching one release's artifact.

Maintainer tool (never imported by ``quantadvise``; the package never touches the network)::

    python tools/release_artifacts.py list vllm                 # every release, and the ones the data covers
    python tools/release_artifacts.py get vllm 0.21.0 DIR       # the sdist (vLLM) / wheel (SGLang) into DIR
    python tools/release_artifacts.py get vllm 0.34.0 DIR --kind wheel

The index is PyPI's simple API (JSON form, PEP 691), the same one ``pip download`` reads. An artifact is
fetched by the URL the index gives and checked against the index's sha256. Which one:

- **vLLM**: the source distribution by default (7-50 MB; the wheel is 240-420 MB of compiled kernels and
  the same Python sources). ``pip download --no-binary :all: vllm==X`` would build the sdist's metadata
  (torch and a CUDA toolchain as build dependencies), so the file is fetched directly instead;
  ``tools/wheel_source.Wheel`` reads an sdist as it reads a wheel (the ``vllm-X/`` prefix dropped,
  ``PKG-INFO`` as the metadata). ``--kind wheel`` takes the x86_64 manylinux wheel.
- **SGLang**: the wheel: the pure-Python ``py3-none-any`` wheel where the release has one (up to the
  0.5.1x releases), else the CPython 3.11 x86_64 manylinux wheel (the one the releases on file were read
  from).

Which releases the data covers (:func:`covered`): vLLM, the newest patch of every minor release from
0.8 (``0.8.5.post1``, ``0.9.2`` ...) plus the patches listed in ``EXTRA`` (releases deployment repos
pin whose options differ from the minor's last patch); SGLang, the newest post-release of every
0.4.x / 0.5.x version (``0.4.0.post2``, ``0.5.7`` ...).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import urllib.request
from pathlib import Path
from typing import Any

INDEX = "https://pypi.org/simple/{name}/"
ACCEPT = "application/vnd.pypi.simple.v1+json"
FIRST = {"vllm": (0, 8), "sglang": (0, 4)}  # the oldest minor release the data covers
# patches kept beside the minor's last patch: vLLM 0.10.1 (public benchmark scripts pin it; 0.10.2
# changed its options)
EXTRA = {"vllm": ["0.10.1"], "sglang": []}


def vkey(v: str) -> tuple[Any, ...]:
    """Sort key of a release string: 0.4.0.post2 > 0.4.0.post1 > 0.4.0; rc/dev before the release."""
    m = re.fullmatch(r"(\d+(?:\.\d+)*)(?:(rc|a|b|\.dev|dev)(\d+))?(?:\.post(\d+))?", v)
    if m is None:
        return ((), -2, 0, 0)
    nums = tuple(int(x) for x in m.group(1).split("."))
    pre = -1 if m.group(2) else 0
    return (nums, pre, int(m.group(3) or 0), int(m.group(4) or 0))


def index(name: str) -> dict[str, Any]:
    req = urllib.request.Request(INDEX.format(name=name), headers={"Accept": ACCEPT})
    with urllib.request.urlopen(req, timeout=120) as fh:  # noqa: S310 - the package index
        return json.load(fh)


def versions(doc: dict[str, Any]) -> list[str]:
    """Final releases (no rc/dev) with at least one file that is not yanked, oldest first."""
    out = set()
    for f in doc["files"]:
        if f.get("yanked"):
            continue
        m = re.match(r"^[A-Za-z_]+-(\d[\w.]*?)(?:-|\.tar\.gz$)", f["filename"])
        if m and vkey(m.group(1))[1] == 0:
            out.add(m.group(1))
    return sorted(out, key=vkey)


def covered(engine: str, all_versions: list[str]) -> list[str]:
    """The releases the data covers (see the module docstring), oldest first."""
    first = FIRST[engine]
    groups: dict[tuple[int, ...], list[str]] = {}
    for v in all_versions:
        nums = vkey(v)[0]
        if nums[:2] < first:
            continue
        key = nums[:2] if engine == "vllm" else nums[:3]
        groups.setdefault(key, []).append(v)
    out = {max(vs, key=vkey) for vs in groups.values()}
    out.update(v for v in EXTRA[engine] if v in all_versions)
    return sorted(out, key=vkey)


def pick(engine: str, version: str, doc: dict[str, Any], kind: str | None = None) -> dict[str, Any]:
    """The index entry of the artifact to read for ``engine`` ``version`` (see the module docstring)."""
    files = [f for f in doc["files"] if not f.get("yanked")]
    sdist = [f for f in files if f["filename"] == f"{engine}-{version}.tar.gz"]
    wheels = [f for f in files if f["filename"].startswith(f"{engine}-{version}-") and f["filename"].endswith(".whl")]
    kind = kind or ("sdist" if engine == "vllm" else "wheel")
    if kind == "sdist" and sdist:
        return sdist[0]
    rank = [r"-py3-none-any\.whl$", r"-cp311-cp311-manylinux[\w.]*x86_64\.whl$", r"manylinux[\w.]*x86_64\.whl$"]
    for rx in rank:
        # vLLM republished some wheels with a build tag (vllm-0.21.0-1-cp38-...): the untagged one first
        hits = sorted((f for f in wheels if re.search(rx, f["filename"])), key=lambda f: f["filename"].count("-"))
        if hits:
            return hits[0]
    if sdist:
        return sdist[0]
    raise SystemExit(f"{engine} {version}: no wheel or sdist on the index")


def released(engine: str, version: str, doc: dict[str, Any]) -> str | None:
    """The day ``engine`` ``version`` was published: its earliest file's ``upload-time`` on the index (PEP 700),
    ``YYYY-MM-DD``; None when the index does not give upload times."""
    times = [f["upload-time"] for f in doc["files"] if f.get("upload-time")
             and (f["filename"] == f"{engine}-{version}.tar.gz" or f["filename"].startswith(f"{engine}-{version}-"))]
    return min(times)[:10] if times else None


def record_release_date(path: Path, engine: str, version: str, day: str) -> None:
    """Write ``engine`` ``version``'s publication ``day`` into data/engine_releases.yaml (its versions in order)."""
    import yaml

    lines = path.read_text(encoding="utf-8").splitlines()
    header = [ln for ln in lines if ln.startswith("#") or not ln.strip()]
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    dates = {e: {str(v): str(d) for v, d in (rows or {}).items()} for e, rows in (doc.get("released") or {}).items()}
    dates.setdefault(engine, {})[version] = day
    out = [*header, f"schema_version: {doc.get('schema_version', 1)}", f"source: {doc['source']}",
           f"as_of: {doc['as_of']}", "released:"]
    for e in sorted(dates):
        out.append(f"  {e}:")
        out += [f'    "{v}": {d}' for v, d in sorted(dates[e].items(), key=lambda kv: vkey(kv[0]))]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def fetch(entry: dict[str, Any], dest: Path) -> Path:
    """Download ``entry`` into ``dest`` (kept if already there with the right sha256)."""
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / entry["filename"]
    want = (entry.get("hashes") or {}).get("sha256")
    if out.is_file() and (want is None or _sha256(out) == want):
        return out
    tmp = out.with_suffix(out.suffix + ".part")
    with urllib.request.urlopen(entry["url"], timeout=600) as fh, tmp.open("wb") as w:  # noqa: S310
        while chunk := fh.read(1 << 20):
            w.write(chunk)
    if want is not None and _sha256(tmp) != want:
        tmp.unlink()
        raise SystemExit(f"{entry['filename']}: sha256 differs from the index")
    tmp.rename(out)
    return out


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def get(engine: str, version: str, dest: Path, kind: str | None = None) -> Path:
    return fetch(pick(engine, version, index(engine), kind), dest)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="the releases on the index and the ones the data covers")
    ls.add_argument("engine", choices=sorted(FIRST))
    g = sub.add_parser("get", help="download one release's artifact")
    g.add_argument("engine", choices=sorted(FIRST))
    g.add_argument("versions", nargs="+", metavar="VERSION")
    g.add_argument("dest", type=Path)
    g.add_argument("--kind", choices=("sdist", "wheel"))
    args = ap.parse_args(argv)
    doc = index(args.engine)
    if args.cmd == "list":
        allv = versions(doc)
        cov = covered(args.engine, allv)
        print(f"{args.engine}: {len(allv)} releases on the index; the data covers {len(cov)}:")
        print(" ".join(cov))
        return 0
    for v in args.versions:
        path = fetch(pick(args.engine, v, doc, args.kind), args.dest)
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
