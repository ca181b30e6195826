#!/usr/bin/env python3
"""Add an engine release to the data in one command, and list what needs a human.

Maintainer tool (never imported by ``quantadvise``; the package never touches the network)::

    python tools/new_release.py vllm 0.34.0                 # sdist for vLLM, wheel for SGLang
    python tools/new_release.py sglang 0.5.24 --keep DIR    # keep the downloads in DIR
    python tools/new_release.py vllm 0.34.0 --artifact-dir DIR --no-download

Steps (each timed; the total is printed at the end):

1. **download** the release's artifact, and the artifact of the release its hand-written facts are carried
   from, into a scratch folder outside the repository (``tools/release_artifacts.py``: the vLLM sdist, the
   SGLang wheel; ``--kind wheel`` for vLLM's wheel);
   its publication date (the earliest ``upload-time`` of its files on the index) goes in
   ``data/engine_releases.yaml``;
2. **engine facts**: ``tools/extract_engine.py`` writes ``data/engines/<engine>-<version>.yaml`` on the
   nearest release on file (``--base-wheel`` so every changed function behind a hand-written fact is listed),
   its quotes to ``tests/fixtures/engine_quotes/`` (``--quotes-dir``: ``tools/staged_fixtures`` on a branch that
   may not write tests/);
3. **options**: ``tools/extract_flags.py`` writes ``data/flags/<engine>-<version>.yaml`` and its parser sidecar
   ``data/flags/parser/<engine>-<version>.yaml``;
4. **kernel table**: ``tools/carry_kernel_tables.py`` carries the nearest table (its own table when every cited
   file is identical, else a ``data/kernels/carried/`` record with the caveat);
5. **diff against the previous release on file** (the nearest older one): quantization methods added /
   removed, KV cache dtypes, messages whose text changed or that are gone, options removed / added / whose
   kind changed, parser changes (dotted JSON, ``-O``, ``--config``), env vars added / removed;
6. **print what needs a human**: the extractor's "needs a human" list (facts not found, new methods whose
   hand-written fields are placeholders, changed functions behind hand-written facts, citations not found
   again), the flag extractor's ``not extracted`` lines, and whether the kernel table is a stand-in.

Exit status 0 when the files were written (review or not), 1 when a step failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

TOOLS = Path(__file__).resolve().parent
REPO = TOOLS.parent
sys.path.insert(0, str(TOOLS))
from release_artifacts import fetch, index, pick, record_release_date, released, vkey  # noqa: E402


def _on_file(engine: str) -> list[str]:
    return sorted((p.stem.split("-", 1)[1] for p in (REPO / "data" / "engines").glob(f"{engine}-*.yaml")), key=vkey)


def _run(cmd: list[str], log: list[str]) -> tuple[int, str]:
    p = subprocess.run([sys.executable, *cmd], cwd=REPO, capture_output=True, text=True)
    log.append(f"$ python {' '.join(cmd)}  (exit {p.returncode})")
    return p.returncode, p.stdout + p.stderr


def _load(path: Path) -> dict[str, Any] | None:
    return yaml.safe_load(path.read_text()) if path.is_file() else None


def diff_releases(engine: str, old: str, new: str) -> list[str]:
    """What changed from release ``old`` to ``new`` in the data files on disk (human-readable lines)."""
    out: list[str] = []
    a, b = _load(REPO / "data" / "engines" / f"{engine}-{old}.yaml"), _load(REPO / "data" / "engines" /
                                                                           f"{engine}-{new}.yaml")
    if a and b:
        def ids(doc: dict[str, Any], sec: str) -> list[str]:
            return [r["id"] for r in doc.get(sec) or []]

        for sec, what in (("methods", "quantization methods"), ("kv_cache_dtypes", "KV cache dtypes"),
                          ("shorthands", "online shorthands"), ("overrides", "overrides"),
                          ("config_rules", "config rules")):
            added = [i for i in ids(b, sec) if i not in ids(a, sec)]
            gone = [i for i in ids(a, sec) if i not in ids(b, sec)]
            if added:
                out.append(f"new {what}: {', '.join(added)}")
            if gone:
                out.append(f"{what} no longer in {new}: {', '.join(gone)}")
        ma = {m["id"]: m for m in a.get("methods") or []}
        for m in b.get("methods") or []:
            o = ma.get(m["id"])
            if o is None:
                continue
            for key in ("min_capability", "supported_act_dtypes", "config_class", "deprecated", "optimized"):
                if o.get(key) != m.get(key):
                    out.append(f"methods[{m['id']}].{key}: {o.get(key)!r} -> {m.get(key)!r}")
        msa = {m["id"]: m for m in a.get("messages") or []}
        for m in b.get("messages") or []:
            o = msa.get(m["id"])
            if o is not None and (o.get("text"), o.get("parts")) != (m.get("text"), m.get("parts")):
                out.append(f"message {m['id']} changed: {o.get('text') or o.get('parts')!r} -> "
                           f"{m.get('text') or m.get('parts')!r}"[:300])
        gone = [i for i in msa if i not in {m['id'] for m in b.get('messages') or []}]
        if gone:
            out.append(f"messages {new} no longer prints: {', '.join(gone)}")
    fa, fb = _load(REPO / "data" / "flags" / f"{engine}-{old}.yaml"), _load(REPO / "data" / "flags" /
                                                                          f"{engine}-{new}.yaml")
    if fa and fb:
        ka = {n: o["kind"] for o in fa["options"] for n in o["names"]}
        kb = {n: o["kind"] for o in fb["options"] for n in o["names"]}
        removed = sorted(n for n in ka if n not in kb)
        added = sorted(n for n in kb if n not in ka)
        kind = sorted(f"{n} ({ka[n]} -> {kb[n]})" for n in ka if n in kb and ka[n] != kb[n])
        if removed:
            out.append(f"options removed in {new} ({len(removed)}): {' '.join(removed)}")
        if added:
            out.append(f"options added in {new} ({len(added)}): {' '.join(added)}")
        if kind:
            out.append(f"options whose kind changed: {', '.join(kind)}")
    pa, pb = _load(REPO / "data" / "flags" / "parser" / f"{engine}-{old}.yaml"), _load(
        REPO / "data" / "flags" / "parser" / f"{engine}-{new}.yaml")
    if pa and pb:
        for key in ("dotted_json", "short_o", "config_file"):
            sa = {k: v for k, v in (pa.get(key) or {}).items() if k != "source"}
            sb = {k: v for k, v in (pb.get(key) or {}).items() if k != "source"}
            if sa != sb:
                out.append(f"parser {key}: {sa or None} -> {sb or None}")
        ea = set((pa.get("env_vars") or {}).get("names") or {})
        eb = set((pb.get("env_vars") or {}).get("names") or {})
        if eb - ea:
            out.append(f"env vars added ({len(eb - ea)}): {' '.join(sorted(eb - ea))}"[:600])
        if ea - eb:
            out.append(f"env vars removed ({len(ea - eb)}): {' '.join(sorted(ea - eb))}"[:600])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("engine", choices=("vllm", "sglang"))
    ap.add_argument("version")
    ap.add_argument("--kind", choices=("sdist", "wheel"), help="artifact to read (default: vLLM sdist, SGLang wheel)")
    ap.add_argument("--artifact-dir", type=Path, help="folder holding / receiving the artifacts (default: a temporary "
                    "folder, removed at the end unless --keep)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--no-download", action="store_true", help="use what --artifact-dir holds")
    ap.add_argument("--quotes-dir", type=Path, default=REPO / "tests" / "fixtures",
                    help="where the quote files go (engine_quotes/, flag_quotes/; default tests/fixtures)")
    args = ap.parse_args(argv)
    engine, version = args.engine, args.version
    t_all = time.perf_counter()
    times: list[tuple[str, float]] = []
    log: list[str] = []
    tmp = None
    folder = args.artifact_dir
    if folder is None:
        tmp = tempfile.TemporaryDirectory(prefix=f"new-release-{engine}-")
        folder = Path(tmp.name)
    folder.mkdir(parents=True, exist_ok=True)
    on_file = [v for v in _on_file(engine) if v != version]
    older = [v for v in on_file if vkey(v) < vkey(version)]
    newer = [v for v in on_file if vkey(v) > vkey(version)]
    base_v = newer[0] if newer else (older[-1] if older else None)  # extract_engine's pick_base
    prev_v = older[-1] if older else base_v  # what the release is compared with
    if base_v is None:
        print(f"no {engine} release on file to build on", file=sys.stderr)
        return 1

    # 1. download
    t = time.perf_counter()
    dateless: list[str] = []  # needs a human: a release whose publication date the index does not give
    if args.no_download:
        def local(v: str) -> Path:
            hits = sorted(folder.glob(f"{engine}-{v}.tar.gz")) + sorted(folder.glob(f"{engine}-{v}-*.whl"))
            if not hits:
                raise SystemExit(f"{folder} holds no {engine} {v} artifact")
            return hits[0]
        art, base_art = local(version), local(base_v)
    else:
        doc = index(engine)
        art = fetch(pick(engine, version, doc, args.kind), folder)
        base_meta = _load(REPO / "data" / "engines" / f"{engine}-{base_v}.yaml") or {}
        base_art_name = base_meta.get("source", {}).get("artifact", "")
        kind = "sdist" if base_art_name.endswith(".tar.gz") else "wheel"
        base_art = fetch(pick(engine, base_v, doc, kind), folder)
        day = released(engine, version, doc)
        if day is not None:  # data/engine_releases.yaml: the day it was published (validate --e2e reads it)
            record_release_date(REPO / "data" / "engine_releases.yaml", engine, version, day)
        else:
            dateless.append(f"- no upload time on the index for {engine} {version}: add its date to "
                            "data/engine_releases.yaml")
    times.append(("download", time.perf_counter() - t))

    # 2. engine facts
    t = time.perf_counter()
    report = folder / f"{engine}-{version}.report.md"
    (args.quotes_dir / "engine_quotes").mkdir(parents=True, exist_ok=True)
    rc, out = _run(["tools/extract_engine.py", str(art), "--base-wheel", str(base_art), "--report", str(report),
                    "--quotes", str(args.quotes_dir / "engine_quotes" / f"{engine}-{version}.json")], log)
    times.append(("engine facts", time.perf_counter() - t))
    if rc:
        print(out, file=sys.stderr)
        return 1

    # 3. options
    t = time.perf_counter()
    rc, flag_out = _run(["tools/extract_flags.py", str(art), "--quotes", str(args.quotes_dir / "flag_quotes")], log)
    times.append(("options", time.perf_counter() - t))
    if rc:
        print(flag_out, file=sys.stderr)
        return 1

    # 4. kernel table
    t = time.perf_counter()
    kt = [str(folder), engine, version]
    rc, kern_out = _run(["tools/carry_kernel_tables.py", *kt], log)
    times.append(("kernel table", time.perf_counter() - t))

    # 5. diff
    t = time.perf_counter()
    diff = diff_releases(engine, prev_v, version) if prev_v else []
    times.append(("diff", time.perf_counter() - t))
    total = time.perf_counter() - t_all

    # 6. what needs a human
    text = report.read_text()
    review = text.split("## needs a human", 1)[1].strip().splitlines() if "## needs a human" in text else []
    flags_ne = [ln.strip() for ln in flag_out.splitlines() if "not extracted:" in ln]
    print(f"# {engine} {version}: built on {engine}-{base_v}, compared with {engine}-{prev_v}")
    print(f"artifact: {art.name} (base {base_art.name})")
    print(text.splitlines()[0].lstrip("# "))
    print(f"\n## changed since {prev_v} ({len(diff)})")
    for d in diff:
        print(f"- {d}")
    print(f"\n## needs a human ({len(review) + len(flags_ne) + len(dateless)})")
    for r in [*review, *dateless]:
        print(r)
    for r in flags_ne:
        print(f"- options: {r}")
    print("\n## kernel table")
    print(kern_out.strip() or "(none)")
    print("\n## time")
    for name, s in times:
        print(f"- {name}: {s:.1f} s")
    print(f"- total: {total:.1f} s")
    for line in log:
        print(f"  {line}", file=sys.stderr)
    if tmp is not None and not args.keep:
        tmp.cleanup()
    elif tmp is not None:
        print(f"kept {folder}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
