#!/usr/bin/env python3
"""Write ``data/engines/<engine>-<version>.yaml`` from a downloaded engine wheel.

Maintainer tool, run by hand (never at run time, never imported by ``quantadvise``)::

    pip download vllm==0.33.0 --no-deps -d /tmp/wheels
    python tools/extract_engine.py /tmp/wheels/vllm-0.33.0-*.whl            # writes data/engines/vllm-0.33.0.yaml
    python tools/extract_engine.py /tmp/wheels/vllm-0.33.0-*.whl --check    # compare with the file on disk

The wheel is read as a zip and its modules parsed with :mod:`ast` (nothing is imported or run).
What a script can read is **extracted**, each fact cited ``file:line`` in its row's ``source``: the
``--quantization`` names and their config classes, minimum capabilities, activation dtypes,
``get_name``, config file names, deprecated names, SGLang's CLI choices, CUDA registry, optimized
list, compatible table and requantization list, vLLM's override order, the platform allow-lists,
the KV cache dtype choices, the compressed-tensors ``kv_cache_scheme`` check and each dispatch
row's scheme minimum capability, the config-validation tables (``TYPE_MAP``, ModelOpt algorithms),
and the text of every message the engine prints. What it cannot read (what an override fires on,
the dispatch predicates, shorthand expansions, notes, weight/activation bits ...) is **carried** from
the base file (the same release if on file, else the nearest release) as hand-written, re-cited at
the line it is now on where an anchor finds it; the report on stderr lists every hand-written fact
and everything that needs a human (new or removed names, anchors not found, changed values).

Kernel selection is not extracted here (it has its own data, engines/kernels).
"""

from __future__ import annotations

import argparse
import ast
import copy
import re
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_specs import SPECS, Facts  # noqa: E402
from wheel_source import Fact, Wheel  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
ENGINES = REPO / "data" / "engines"

# Defaults of the EngineData row models: a key the base row does not have and the extraction gives
# its default value is left out (the files stay as short as the hand-written ones were).
DEFAULTS = {
    "methods": {"canonical": None, "deprecated": False, "cli_choice": True, "registered": True,
                "config_filenames": [], "registered_on": [], "without_config": None},
    "shorthands": {"deferred": False},
}


# where a section the wheel adds to a file that has none yet is placed (the key it follows)
PLACE_AFTER = {"marlin_compatible": "marlin_min_capability", "config_rules": "compressed_tensors"}


def _version_key(v: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.\-]", v))


def pick_base(engine: str, version: str) -> Path | None:
    """The same release if on file, else the nearest newer one, else the newest older one."""
    files = sorted(ENGINES.glob(f"{engine}-*.yaml"), key=lambda p: _version_key(p.stem.split("-", 1)[1]))
    if not files:
        return None
    same = [f for f in files if f.stem == f"{engine}-{version}"]
    if same:
        return same[0]
    newer = [f for f in files if _version_key(f.stem.split("-", 1)[1]) > _version_key(version)]
    return newer[0] if newer else files[-1]


class Report:
    def __init__(self) -> None:
        self.extracted: list[str] = []
        self.hand: list[str] = []
        self.review: list[str] = []
        self.quotes: dict[str, str] = {}  # "file:line" -> the line, for every line a source cites
        self.dangling: list[str] = []  # rows / fields dropped because what they name is not in this release

    def write(self, out: Any, label: str, seconds: float) -> None:
        print(f"# {label}: {len(self.extracted)} facts extracted, {len(self.hand)} hand-written, "
              f"{len(self.review)} to review ({seconds:.1f} s)", file=out)
        for title, items in (("hand-written (carried from the base file)", self.hand),
                             ("needs a human", self.review)):
            if items:
                print(f"\n## {title}", file=out)
                for i in items:
                    print(f"- {i}", file=out)


def _row(rows: list[dict[str, Any]], rid: str) -> dict[str, Any] | None:
    return next((r for r in rows if r.get("id") == rid), None)


def _def_source(w: Wheel, rel: str, cls: str | None, name: str) -> str | None:
    """The source of a function (or a module-level assignment, or the whole file for ``*``)."""
    try:
        if name == "*":
            return w.text(rel)
        try:
            fn = w.method(rel, cls, name)[2] if cls else w.function(rel, name)
            path = w.method(rel, cls, name)[0] if cls else rel
            return ast.get_source_segment(w.text(path), fn)
        except Exception:  # noqa: BLE001 - fall back to an assignment
            value, ln, end = w.assigned(rel, name)
            return "\n".join(w.lines(rel)[ln - 1:end])
    except Exception:  # noqa: BLE001 - not in this wheel
        return None


def build(w: Wheel, base: dict[str, Any], base_name: str, as_of: date | None, rep: Report,
          base_wheel: Wheel | None = None, base_quotes: dict[str, str] | None = None,
          drop_unfound: bool = False) -> dict[str, Any]:
    meta = w.metadata
    engine, version = meta["name"].lower(), meta["version"]
    spec = SPECS[engine]
    facts: Facts = spec(w, base)
    doc = copy.deepcopy(base)
    same_release = base.get("version") == version
    prefix = f"{engine} {version} {_kind(w)}: "
    cites: dict[tuple[str, str], list[str]] = {}
    quotes = rep.quotes

    def cite(section: str, rid: str, f: Fact, what: str) -> None:
        lst = cites.setdefault((section, rid), [])
        c = f.cite(what)
        if c not in lst:
            lst.append(c)
        if f.file.endswith(".py"):
            text = w.lines(f.file)
            for ln in range(f.line, min(f.end or f.line, f.line + 7) + 1):
                quotes[f"{f.file}:{ln}"] = text[ln - 1].strip()

    # -- the release -----------------------------------------------------------------------------
    doc["id"], doc["version"] = f"{engine}-{version}", version
    src = doc.setdefault("source", {})
    src.update(package=engine, version=version, artifact=w.path.name, sha256=w.sha256)
    src["commit"], src["commit_note"] = facts.commit
    pins = {}
    for pkg in ("torch", "compressed-tensors", "transformers"):
        got = meta["requires"].get(pkg)
        if got:
            old = (base.get("source", {}).get("pins") or {}).get(pkg)
            same = old is not None and sorted(old.split(",")) == sorted(got.split(","))
            pins[pkg] = old if same else got
    src["pins"] = pins
    src["files"] = sorted({f.split(":")[0] for f in facts.files})
    src["read_by"] = "tools/extract_engine.py (ast over the wheel's sources; nothing imported or run)"
    unchanged = same_release and base.get("source", {}).get("sha256") == w.sha256
    doc["as_of"] = base["as_of"] if unchanged and as_of is None else (as_of or date.today())
    stamp = doc["as_of"]

    # -- rows whose membership the wheel decides -------------------------------------------------
    for section, members in facts.members.items():
        old_rows = doc.get(section) or []
        new_rows = []
        for f in members:
            row = _row(old_rows, f.value)
            if row is None:
                row = copy.deepcopy(facts.skeleton(section, f.value))
                rep.review.append(f"{section}[{f.value}]: new in {version} (at {f.cite()}); its hand-written "
                                  "fields are placeholders: fill them in from the source")
            new_rows.append(row)
            cite(section, f.value, f, facts.member_what.get(section, section))
        for r in old_rows:
            if _row(new_rows, r["id"]) is None:
                rep.review.append(f"{section}[{r['id']}]: in {base_name} but not in {version}; dropped")
        if section in doc or section not in PLACE_AFTER or PLACE_AFTER[section] not in doc:
            doc[section] = new_rows
        else:  # a section new to this file goes where the hand-written files keep it
            items = list(doc.items())
            i = next(n for n, (k, _) in enumerate(items) if k == PLACE_AFTER[section])
            doc.clear()
            doc.update([*items[:i + 1], (section, new_rows), *items[i + 1:]])

    # -- rows the wheel's code defines (added where the base file has none; their read keys refreshed) --
    for section, row in facts.new_rows:
        rows = doc.setdefault(section, [])
        have = _row(rows, row["id"])
        if have is None:
            rows.append(copy.deepcopy(row))
            rep.review.append(f"{section}[{row['id']}]: new in this file (read from the wheel: "
                              f"{', '.join(k for k in row if k not in ('id', 'source', 'as_of'))})")
        else:
            for k, v in row.items():
                if k in ("source", "as_of", "notes"):
                    continue
                if have.get(k) != v:
                    rep.review.append(f"{section}[{row['id']}].{k}: {have.get(k)!r} in {base_name} -> {v!r} in the wheel")
                have[k] = v

    # -- rows this release does not have ----------------------------------------------------------
    for section, rid, why in facts.drops:
        if section == "compressed_tensors/fallback":
            row = _locate(doc, "compressed_tensors", rid)
            for k in ("fallback", "fallback_below", "fallback_min_capability", "fallback_message"):
                (row or {}).pop(k, None)
        elif section == "compressed_tensors" and rid == "*":  # the release has no compressed-tensors code
            doc["compressed_tensors"] = None
        elif section == "compressed_tensors":
            ct = doc.get("compressed_tensors") or {}
            ct["dispatch"] = [d for d in ct.get("dispatch") or [] if f"dispatch/{d['id']}" != rid]
        elif section == "doc":  # a release-level key the release does not have
            doc.pop(rid, None)
        else:
            doc[section] = [r for r in doc.get(section) or [] if r.get("id") != rid]
        rep.review.append(f"{section}[{rid}]: dropped: {why}")

    # -- extracted values --------------------------------------------------------------------------
    for (section, rid, key), (value, f, what) in facts.values.items():
        target = _locate(doc, section, rid)
        csec, crid = ("compressed_tensors", f"dispatch/{rid}") if section == "ct_weights" else (section, rid)
        if target is None:
            if section != "doc":
                rep.review.append(f"{section}[{rid}].{key}: the wheel gives {value!r} ({f.cite()}) but the file has "
                                  "no such row")
            continue
        default = DEFAULTS.get(section, {}).get(key, _MISSING)
        if key not in target and value == default:
            cite(csec, crid, f, what)
            continue
        if value is None and default is None:  # a fact this release does not have: the key goes
            rep.review.append(f"{section}[{rid}].{key}: {target.pop(key)!r} in {base_name} -> none in the wheel "
                              f"({f.cite()})")
            cite(csec, crid, f, what)
            continue
        old = target.get(key, _MISSING)
        if isinstance(old, str) and isinstance(value, str) and old.startswith(value + " ("):
            cite(csec, crid, f, what)  # the file annotates the class name ("Fp8Config (use_mxfp8)")
            rep.extracted.append(f"{section}[{rid}].{key} = {value!r} (annotated in the file) <- {f.cite()}")
            continue
        if old is not _MISSING and _norm(old) != _norm(value):
            rep.review.append(f"{section}[{rid}].{key}: {old!r} in {base_name} -> {value!r} in the wheel "
                              f"({f.cite()})")
            if section == "methods" and key == "config_class" and old and target.get("notes") and \
                    not target["notes"].startswith(CARRIED):  # the hand-written notes were about another class
                target["notes"] = f"{CARRIED}{base.get('id')}, where the class was {old}: not re-read] {target['notes']}"
        target[key] = value
        rep.extracted.append(f"{section}[{rid}].{key} = {value!r} <- {f.cite()}")
        cite(csec, crid, f, what)
    for section, rid, f, what in facts.anchors:
        cite(section, rid, f, what)
    for section, order in facts.orders.items():  # rows the engine tries in its own order (first match wins)
        rows = doc.get(section) or []
        ranked = sorted(rows, key=lambda r: order.index(r["id"]) if r["id"] in order else len(order))
        if [r["id"] for r in ranked] != [r["id"] for r in rows]:
            rep.review.append(f"{section}: reordered as the engine tries them: {', '.join(r['id'] for r in ranked)}")
        doc[section] = ranked
    for item in facts.hand:
        rep.hand.append(item)
    rep.review.extend(facts.review)
    if base_wheel is not None:
        for label, rel, cls, name in facts.hand_defs:
            now, then = _def_source(w, rel, cls, name), _def_source(base_wheel, rel, cls, name)
            if now is None:
                rep.review.append(f"{label}: {rel} {cls + '.' if cls else ''}{name} not found in {version}")
            elif now != then:
                rep.review.append(f"{label}: {rel} {cls + '.' if cls else ''}{name} differs from "
                                  f"{base_wheel.metadata['version']}: re-read the hand-written facts it backs")

    # -- sources: every row says the lines its facts are on -----------------------------------------
    # a hand-written row's citations were read in the base release: where the base is another wheel they
    # are found again in this one by the text of the lines they cite (the base wheel's, or the base
    # release's quote file), else the row needs a human; every line a source cites is quoted
    moved = base.get("source", {}).get("sha256") != w.sha256
    carry = _Carrier(w, engine, version, base.get("version"), base_wheel, base_quotes, rep) if moved else None

    def hand(label: str, source: str) -> str:
        if carry is None:
            out = _restamp(source, engine, version, _kind(w))
            rep.hand.append(f"{label}: hand-written, " + ("read in this wheel" if CITE.search(out) else "cites no line")
                            + f" ({out})")
        else:
            out = carry.relocate(label, source)
        return out

    for section in ("methods", "kv_cache_dtypes", "overrides", "rewrites", "compatible", "config_readings", "method_spellings", "platform_lists",
                    "dtype_checks",
                    "shorthands", "auto_kv", "messages", "config_rules", "marlin_compatible", "kernel_refusals"):
        for row in list(doc.get(section) or []):
            lines = cites.get((section, row["id"]))
            label = f"{section}[{row['id']}]"
            row["source"] = prefix + "; ".join(lines) if lines else hand(label, row["source"])
            if drop_unfound and carry is not None and label in carry.lost:
                doc[section].remove(row)  # a hand-written fact whose lines this release does not have: not carried
                rep.dangling.append(f"{label} dropped: hand-written in {base.get('id')}; the lines it cites are not "
                                    "found again in this release (whether the behaviour exists here was not read)")
                continue
            _quote_source(w, row["source"], quotes, rep, label)
            row["as_of"] = stamp
    ct = doc.get("compressed_tensors")
    if ct:
        for key, node in (("kv_cache_scheme", ct.get("kv_cache_scheme")), *(
                (f"dispatch/{d['id']}", d) for d in ct.get("dispatch") or []), ("_", ct)):
            if node is None:
                continue
            lines = cites.get(("compressed_tensors", key))
            node["source"] = prefix + "; ".join(lines) if lines else hand(f"compressed_tensors.{key}", node["source"])
            if drop_unfound and carry is not None and f"compressed_tensors.{key}" in carry.lost and \
                    key.startswith("dispatch/"):
                ct["dispatch"] = [d for d in ct["dispatch"] if d is not node]
                rep.dangling.append(f"compressed_tensors.{key} dropped: hand-written in {base.get('id')}; the lines "
                                    "it cites are not found again in this release")
                continue
            _quote_source(w, node["source"], quotes, rep, f"compressed_tensors.{key}")
            node["as_of"] = stamp

    # -- history: counts of this release; other releases' counts stop at this one ----------------------
    hist = doc.get("history") or {}
    for key, n in facts.counts.items():
        hist.setdefault(key, {})[version] = n
    for key in list(hist):
        hist[key] = {v: n for v, n in sorted(hist[key].items(), key=lambda kv: _version_key(str(kv[0])))
                     if _version_key(str(v)) <= _version_key(version)}
    doc["history"] = hist
    _dangling(doc, rep)
    _file_notes(doc, base, facts, rep, same_release)
    return doc


_MISSING = object()
CARRIED = "[carried from "


def _dangling(doc: dict[str, Any], rep: Report) -> None:
    """Drop what names a message, method or row this release does not have (a message the engine no
    longer / not yet prints, a method it does not register): the row or field that relied on it goes,
    listed for review and in the file's notes, instead of the file failing validation."""
    msgs = {m["id"] for m in doc.get("messages") or []}
    methods = {m["id"] for m in doc.get("methods") or []}
    gone: list[str] = []

    def keep(label: str, mid: str | None) -> bool:
        if mid is None or mid in msgs:
            return True
        gone.append(f"{label}: names message '{mid}', which this release does not print")
        return False

    doc["config_rules"] = [r for r in doc.get("config_rules") or [] if keep(f"config_rules[{r['id']}] dropped",
                                                                           r.get("message"))]
    doc["dtype_checks"] = [r for r in doc.get("dtype_checks") or [] if keep(f"dtype_checks[{r['id']}] dropped",
                                                                           r.get("message"))]
    for m in doc.get("methods") or []:
        if not keep(f"methods[{m['id']}].weight_only_* dropped", m.get("weight_only_message")):
            for k in ("weight_only_below", "weight_only_message", "weight_only_block_below", "weight_only_a16_except"):
                m.pop(k, None)
        wc = m.get("without_config")
        if wc and not keep(f"methods[{m['id']}].without_config dropped", wc.get("raises")):
            m.pop("without_config")
    for k in doc.get("kv_cache_dtypes") or []:
        if not keep(f"kv_cache_dtypes[{k['id']}].error dropped", k.get("error")):
            k.pop("error")
    ct = doc.get("compressed_tensors") or {}
    for d in ct.get("dispatch") or []:
        if not keep(f"compressed_tensors.dispatch[{d['id']}] fallback dropped", d.get("fallback_message")):
            for k in ("fallback", "fallback_below", "fallback_min_capability", "fallback_message", "fallback_platforms"):
                d.pop(k, None)
        if not keep(f"compressed_tensors.dispatch[{d['id']}].message dropped", d.get("message")):
            for k in ("message", "message_below", "message_block_below", "message_except"):
                d.pop(k, None)
        if not keep(f"compressed_tensors.dispatch[{d['id']}].below_message dropped", d.get("below_message")):
            d.pop("below_message")
    for ov in list(doc.get("overrides") or []):
        if ov["returns"] not in methods and ov["returns"] != "checkpoint":
            gone.append(f"overrides[{ov['id']}] dropped: returns '{ov['returns']}', not a method of this release")
            doc["overrides"].remove(ov)
    for c in list(doc.get("compatible") or []):
        if c["id"] not in methods:
            gone.append(f"compatible[{c['id']}] dropped: not a method of this release")
            doc["compatible"].remove(c)
    if doc.get("optimized_allow_list") is not None:  # SGLang: the flag follows the (extracted) allow-list
        allow = set(doc["optimized_allow_list"])
        for m in doc.get("methods") or []:
            if m.get("kind") != "escape_hatch" and m.get("optimized") != (m["id"] in allow):
                m["optimized"] = m["id"] in allow
    for g in gone:
        rep.review.append(g)
    rep.dangling += gone


def _file_notes(doc: dict[str, Any], base: dict[str, Any], facts: Facts, rep: Report, same_release: bool) -> None:
    """The file says what was not read from this release: the facts the spec could not extract, the
    rows it dropped because what they relied on is gone, and (when built on another release's file)
    which hand-written facts were carried without being re-read although the code behind them changed."""
    notes = [n for n in doc.get("notes") or [] if not n.startswith(("not extracted: ", "carried unreviewed: "))]
    if not same_release:  # the base release's own hand-written notes are not re-read here: say whose they are
        notes = [n if n.startswith(CARRIED) else f"{CARRIED}{base['id']}, not re-read] {n}" for n in notes]
    lines = [f"not extracted: {n}" for n in facts.not_extracted]
    lines += [f"not extracted: {r}" for r in facts.review if "not extracted" in r]
    lines += [f"not extracted: {g}" for g in getattr(rep, "dangling", [])]
    if not same_release:
        changed = [r.split(":")[0] for r in rep.review if " differs from " in r or " not found in " in r]
        if changed:
            lines.append(f"carried unreviewed: hand-written facts carried from {base['id']} whose code differs in "
                         f"this release (re-read by a human: tools/new_release.py lists them): {', '.join(changed)}")
        new = [r.split(":")[0] for r in rep.review if "its hand-written fields are placeholders" in r]
        if new:
            lines.append("carried unreviewed: rows new in this release whose hand-written fields are placeholders "
                         f"(kind checkpoint, no bits): {', '.join(new)}")
    prev = [n for n in doc.get("notes") or [] if n.startswith(("not extracted: ", "carried unreviewed: "))]
    if same_release:  # an idempotent re-run keeps what the first run (on another release's file) said, in order
        lines = prev + [n for n in lines if n not in prev]
    doc["notes"] = notes + list(dict.fromkeys(lines))


def _norm(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    return v


def _locate(doc: dict[str, Any], section: str, rid: str) -> dict[str, Any] | None:
    if section == "doc":
        return doc
    if section == "ct_weights":
        row = _locate(doc, "compressed_tensors", f"dispatch/{rid}")
        return row.get("weights") if row else None
    if section == "compressed_tensors":
        ct = doc.get("compressed_tensors") or {}
        if rid == "_":
            return ct
        if rid == "kv_cache_scheme":
            return ct.get("kv_cache_scheme")
        return _row(ct.get("dispatch") or [], rid.removeprefix("dispatch/"))
    return _row(doc.get(section) or [], rid)


def _kind(w: Wheel) -> str:
    """How a row's source names the artifact: ``wheel``, or ``sdist`` for a source distribution."""
    return "sdist" if w.path.name.endswith((".tar.gz", ".tgz")) else "wheel"


def _restamp(source: str, engine: str, version: str, kind: str = "wheel") -> str:
    return re.sub(rf"^{engine} [\w.]+ (?:wheel|sdist): ", f"{engine} {version} {kind}: ", source)


# a citation in a ``source``: ``path.py:12`` or ``path.py:12-30`` (the form the tests read back)
CITE = re.compile(r"(?<![\w./-])([\w./-]+\.py):(\d+)(?:-(\d+))?")
QUOTED = 8  # lines quoted from the start of a span (a span's head says what it is)


def _wheel_path(w: Wheel, path: str) -> str | None:
    """The wheel file a cited path names: itself, or the one file it is a suffix of."""
    if w.exists(path):
        return path
    hits = [n for n in w.names if n.endswith("/" + path)]
    return hits[0] if len(hits) == 1 else None


def _quote_source(w: Wheel, source: str, quotes: dict[str, str], rep: Report, label: str) -> None:
    """Quote the first lines of every span ``source`` cites, keyed by the path as written."""
    for m in CITE.finditer(source):
        path, start = m.group(1), int(m.group(2))
        end = int(m.group(3) or start)
        full = _wheel_path(w, path)
        if full is None:
            rep.review.append(f"{label}: cites {path}, which is not one file of {w.path.name}")
            continue
        text = w.lines(full)
        if end > len(text) or start < 1 or end < start:
            rep.review.append(f"{label}: cites {path}:{start}-{end}, past the end of the file ({len(text)} lines)")
            continue
        for ln in range(start, min(end, start + QUOTED - 1) + 1):
            quotes[f"{path}:{ln}"] = text[ln - 1].strip()


class _Carrier:
    """Finds a hand-written row's cited lines again in a new wheel, by their text in the base release."""

    def __init__(self, w: Wheel, engine: str, version: str, base_version: str | None, base_wheel: Wheel | None,
                 base_quotes: dict[str, str] | None, rep: Report) -> None:
        self.w, self.engine, self.version, self.base_version = w, engine, version, base_version
        self.base_wheel, self.base_quotes, self.rep = base_wheel, base_quotes or {}, rep
        self.lost: list[str] = []  # labels of the rows whose cited lines were not found again

    def _base_block(self, path: str, start: int, end: int) -> list[str] | None:
        last = min(end, start + QUOTED - 1)
        if self.base_wheel is not None:
            full = _wheel_path(self.base_wheel, path)
            if full is None:
                return None
            text = self.base_wheel.lines(full)
            return [t.strip() for t in text[start - 1:last]] if last <= len(text) else None
        got = [self.base_quotes.get(f"{path}:{ln}") for ln in range(start, last + 1)]
        return None if any(g is None for g in got) else [g for g in got if g is not None]

    def _find(self, path: str, block: list[str], near: int) -> int | None:
        full = _wheel_path(self.w, path)
        if full is None:
            return None
        text = [t.strip() for t in self.w.lines(full)]
        hits = [i + 1 for i in range(len(text) - len(block) + 1) if text[i:i + len(block)] == block]
        return min(hits, key=lambda h: (abs(h - near), h)) if hits else None

    def relocate(self, label: str, source: str) -> str:
        out = _restamp(source, self.engine, self.version, _kind(self.w))
        if not CITE.search(out):
            self.rep.hand.append(f"{label}: hand-written, cites no line ({out})")
            return out
        lost: list[str] = []
        moved: list[str] = []

        def sub(m: re.Match[str]) -> str:
            path, start = m.group(1), int(m.group(2))
            end = int(m.group(3) or start)
            block = self._base_block(path, start, end)
            at = self._find(path, block, start) if block else None
            if at is None:
                lost.append(f"{path}:{start}" + (f"-{end}" if end != start else "")
                            + (" (its text in the base release is not on file: pass --base-wheel)" if block is None
                               else " (its text is not in this wheel)"))
                return m.group(0)
            if at != start:
                moved.append(f"{path}:{start} -> :{at}")
            return f"{path}:{at}" + (f"-{at + end - start}" if m.group(3) else "")

        out = CITE.sub(sub, out)
        if lost:
            self.lost.append(label)
            self.rep.review.append(f"{label}: hand-written; cited lines of {self.base_version} not found again in "
                                   f"{self.version}, kept as they were: {'; '.join(lost)}")
        else:
            self.rep.hand.append(f"{label}: hand-written, its cited lines found again in {self.version}"
                                 + (f" ({', '.join(moved)})" if moved else " (unmoved)"))
        return out


# -------------------------------------------------------------------------------------------------
# YAML out: the same layout as the hand-written files (short lists in flow style, 120 columns)
# -------------------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _list(d: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    scalars = all(not isinstance(x, (dict, list)) or (isinstance(x, list) and all(
        not isinstance(y, (dict, list)) for y in x)) for x in data)
    flow = bool(data) and scalars and (len(str(data)) < 110 or all(len(str(x)) < 24 for x in data))
    return d.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _list)
_Dumper.add_representer(tuple, _list)


def dump(doc: dict[str, Any], header: str) -> str:
    body = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=True)
    return header + body


def header_of(path: Path | None, engine: str, version: str) -> str:
    label = {"vllm": "vLLM", "sglang": "SGLang"}.get(engine, engine)
    return (f"# {label} {version} — quantization facts for quantadvise, validated by quantadvise.engines.EngineData\n"
            "# (unknown keys are rejected). Written by tools/extract_engine.py from the published wheel named under\n"
            "# `source` (read with ast; nothing was imported or run). Each row's source gives the file:line of every\n"
            "# fact; facts the script cannot read are carried from the previous file as hand-written (the script's\n"
            "# report lists them). Adding a release: docs/data.md, \"Add an engine version\".\n")


def semantic_diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Differences between two documents, ``source`` / ``read_by`` strings left out."""
    out: list[str] = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k in ("source", "read_by") and isinstance(a.get(k), str):
                continue
            if k not in a or k not in b:
                out.append(f"{path}.{k}: {'added' if k not in a else 'removed'} {b.get(k, a.get(k))!r}"[:300])
            else:
                out += semantic_diff(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list) and all(isinstance(x, dict) and "id" in x for x in a + b):
        ids_a, ids_b = [x["id"] for x in a], [x["id"] for x in b]
        if ids_a != ids_b:
            out.append(f"{path}: ids {ids_a} -> {ids_b}"[:400])
        for x in a:
            y = next((r for r in b if r["id"] == x["id"]), None)
            if y is not None:
                out += semantic_diff(x, y, f"{path}[{x['id']}]")
    elif _norm(a) != _norm(b):
        out.append(f"{path}: {a!r} -> {b!r}"[:300])
    return out


QUOTES = REPO / "tests" / "fixtures" / "engine_quotes"
# quote files written on a branch that may not touch tests/ (moved to tests/fixtures/ when it is merged)
STAGED = REPO / "tools" / "staged_fixtures"


def validate(doc: dict[str, Any]) -> str | None:
    """The first validation error of the package's EngineData model for ``doc`` (None: it validates, or
    the package is not importable from this checkout)."""
    sys.path.insert(0, str(REPO / "src"))
    try:
        from quantadvise.engines.data import EngineData
    except Exception:  # noqa: BLE001 - the tool runs without the package too
        return None
    try:
        EngineData.model_validate(doc)
    except Exception as exc:  # noqa: BLE001 - pydantic's ValidationError, reported
        return " ".join(str(exc).split())[:400]
    return None


def base_quotes(base: dict[str, Any]) -> dict[str, str] | None:
    """The base release's quoted lines (tests/fixtures/engine_quotes/<id>.json) when they were read from
    the wheel the base file names."""
    path = QUOTES / f"{base.get('id')}.json"
    if not path.exists():
        path = STAGED / "engine_quotes" / f"{base.get('id')}.json"
    if not path.exists():
        return None
    import json

    doc = json.loads(path.read_text())
    return doc["lines"] if doc.get("sha256") == base.get("source", {}).get("sha256") else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", type=Path)
    ap.add_argument("--base", type=Path, help="version file to carry hand-written facts from (default: nearest)")
    ap.add_argument("--out", type=Path, help="where to write (default: data/engines/<engine>-<version>.yaml)")
    ap.add_argument("--as-of", type=date.fromisoformat, help="as_of stamp (default: the base's when the wheel is the "
                    "one it was read from, else today)")
    ap.add_argument("--check", action="store_true", help="write nothing; show how the result differs from the file "
                    "on disk (sources left out); exit 1 when it does")
    ap.add_argument("--report", type=Path, help="also write the report to this file")
    ap.add_argument("--quotes", type=Path, help="also write every cited line, verbatim, to this JSON file (the "
                    "tests check a sample of facts against it: tests/fixtures/engine_quotes/<engine>-<version>.json)")
    ap.add_argument("--base-wheel", type=Path, help="the wheel the base file was read from: the code behind every "
                    "hand-written fact is compared with it, and what changed is listed for review")
    ap.add_argument("--drop-unfound", action="store_true", help="drop a hand-written row whose cited lines are not "
                    "found again in this release (said in the file's notes) instead of keeping it for a human to "
                    "fix: for releases built without a review of every row (back-filling old releases)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    w = Wheel(args.wheel)
    engine, version = w.metadata["name"].lower(), w.metadata["version"]
    if engine not in SPECS:
        print(f"Error: no extraction spec for {engine} (have: {', '.join(SPECS)})", file=sys.stderr)
        return 2
    base_path = args.base or pick_base(engine, version)
    if base_path is None:
        print(f"Error: no {engine} release on file to carry the hand-written facts from; pass --base", file=sys.stderr)
        return 2
    base = yaml.safe_load(base_path.read_text())
    rep = Report()
    doc = build(w, base, base_path.name, args.as_of, rep, Wheel(args.base_wheel) if args.base_wheel else None,
                base_quotes(base), args.drop_unfound)
    out = args.out or ENGINES / f"{engine}-{version}.yaml"
    text = dump(doc, header_of(base_path, engine, version))
    problem = validate(yaml.safe_load(text))  # round-trips; the package's own model reads it
    if problem:
        rep.review.append(f"the file does not validate as quantadvise.engines.EngineData: {problem}")
    seconds = time.perf_counter() - t0
    rep.write(sys.stderr, f"{engine} {version} from {w.path.name} (base {base_path.name})", seconds)
    if args.report:
        with args.report.open("w") as fh:
            rep.write(fh, f"{engine} {version} from {w.path.name} (base {base_path.name})", seconds)
    if args.check:
        if not out.exists():
            print(f"{out} does not exist", file=sys.stderr)
            return 1
        diff = semantic_diff(yaml.safe_load(out.read_text()), doc)
        for d in diff:
            print(d)
        return 1 if diff else 0
    out.write_text(text)
    print(f"wrote {out}", file=sys.stderr)
    if args.quotes:
        import json

        args.quotes.parent.mkdir(parents=True, exist_ok=True)
        args.quotes.write_text(json.dumps({"wheel": w.path.name, "sha256": w.sha256,
                                           "lines": dict(sorted(rep.quotes.items()))}, indent=1) + "\n")
        print(f"wrote {args.quotes} ({len(rep.quotes)} cited lines)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["ast", "build", "main", "semantic_diff"]
