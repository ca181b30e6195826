#!/usr/bin/env python3
"""Write ``data/flags/<engine>-<version>.yaml``: every option an engine release's server parser accepts.

Maintainer tool, run by hand (never at run time, never imported by ``quantadvise``)::

    pip download vllm==0.33.0 --no-deps -d /tmp/wheels
    python tools/extract_flags.py /tmp/wheels/vllm-0.33.0-*.whl           # writes data/flags/vllm-0.33.0.yaml
    python tools/extract_flags.py /tmp/wheels/sglang-0.5.23-*.whl --check  # compare with the file on disk

The wheel is read as a zip and its modules parsed with :mod:`ast` (nothing is imported or run):
``flags_vllm.extract`` reads ``vllm serve``'s parser (``make_arg_parser``: the frontend dataclass
fields, ``EngineArgs`` / ``AsyncEngineArgs.add_cli_args``), ``flags_sglang.extract`` SGLang's
(``prepare_server_args``: ``ServerArgs``'s annotated fields and its literal ``add_argument`` calls).
Every option row cites the line that registers it; what an extractor saw and could not read is
written to the file's ``not_extracted`` and printed. The file is validated by
``quantadvise.engines.vocabulary.FlagVocabulary`` (``quantadvise`` data tests).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import date
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
from wheel_source import Wheel  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FLAGS = REPO / "data" / "flags"
_WHEEL = re.compile(r"(?P<engine>vllm|sglang)-(?P<version>\d[\w.]*?)(?:-|\.tar\.gz$)")

HEADER = """\
# {label} {version}: every option its server parser accepts ({prog}), validated by
# quantadvise.engines.vocabulary.FlagVocabulary (unknown keys are rejected). Written by
# tools/extract_flags.py from the published wheel below (read with ast; nothing imported or run); do not
# edit by hand, re-run the tool. Each option row cites the line that registers it (paths inside the wheel).
# kind: value (takes an argument) | flag (takes none) | negatable (BooleanOptionalAction: --no-X too).
# The gate (QA108) reports a spelling this parser does not register as the engine's own start-up error.
"""


EXTRAS_HEADER = """\
# {label} {version}: how its launcher reads a command line beyond the option list in ../{name}.yaml: the dotted
# JSON shorthand and the options it can set, what -O becomes, --config FILE, the environment variables it
# declares. Written by tools/extract_flags.py (tools/flags_extras.py) from the same artifact; do not edit by hand.
# Read by quantadvise.catalog.flag_vocabulary with the option list (engines.vocabulary.LauncherFacts).
"""


def build(wheel: Path) -> tuple[str, dict[str, Any]]:
    m = _WHEEL.match(wheel.name)
    if m is None:
        sys.exit(f"{wheel.name}: expected a vllm-X or sglang-X wheel or sdist")
    engine, version = m["engine"], m["version"]
    w = Wheel(wheel)
    if engine == "vllm":
        from flags_vllm import extract
    else:
        from flags_sglang import extract
    got = extract(w)
    parser = {k: got[k] for k in ("prog", "entry", "underscores", "abbreviations", "abbreviations_source",
                                  "negation", "enable_disable")}
    # the `python -m` server modules (of this engine's own package) the deployment readers know, where the wheel
    # has them: a launch of one the release lacks exits with "No module named ..."
    from quantadvise.engines.flags import SGLANG_MODULES, VLLM_MODULES

    known = [m for m in (VLLM_MODULES if engine == "vllm" else SGLANG_MODULES) if m.startswith(engine + ".")]
    parser["modules"] = [m for m in known if w.exists(m.replace(".", "/") + ".py")]
    if engine == "vllm":  # FlexibleArgumentParser.parse_args rewrites these before argparse sees them
        from flags_vllm import spellings

        rewrites = spellings(w)
        parser["short_o"] = rewrites.get("O_shorthand")
        parser["dotted_json"] = rewrites.get("dotted_json")
    from flags_extras import extract as extras

    more = extras(w, engine, got["options"])
    doc = {
        "schema_version": 1,
        "engine": engine,
        "version": version,
        "source": {"package": engine, "version": version, "artifact": wheel.name, "sha256": w.sha256,
                   "read_by": "tools/extract_flags.py (ast; nothing imported or run)"},
        "as_of": date.today(),
        "parser": parser,
        "not_extracted": list(got.get("not_extracted", [])),
        "options": [{"names": list(o["names"]), "kind": o["kind"], "source": o["source"],
                     **({"launcher": o["launcher"]} if o.get("launcher") else {})} for o in got["options"]],
    }
    doc["_extras"] = {"schema_version": 1, "engine": engine, "version": version, "source": doc["source"],
                      "as_of": doc["as_of"], **more}
    return f"{engine}-{version}", doc


def render_extras(doc: dict[str, Any], name: str) -> str:
    label = "vLLM" if doc["engine"] == "vllm" else "SGLang"
    env = doc.get("env_vars")
    body = {k: v for k, v in doc.items() if k not in ("env_vars", "json_options")}
    text = EXTRAS_HEADER.format(label=label, version=doc["version"], name=name)
    text += yaml.safe_dump(body, sort_keys=False, width=110, allow_unicode=True)
    text += "json_options:\n" + "".join(f"  - {json.dumps(n)}\n" for n in doc["json_options"]) if doc[
        "json_options"] else "json_options: []\n"
    if env is None:
        return text + "env_vars: null\n"
    text += f"env_vars:\n  source: {json.dumps(env['source'])}\n  names:\n"
    text += "".join(f"    {k}: {json.dumps(v)}\n" for k, v in env["names"].items())
    return text


def quotes(w: Wheel, doc: dict[str, Any], target: Path) -> None:
    """Each option row's cited line (its first, for a span), verbatim, keyed by the citation."""
    out: dict[str, str] = {}
    for o in doc["options"]:
        file, _, line = o["source"].rpartition(":")
        first = int(line.split("-")[0])
        out[o["source"]] = w.lines(file)[first - 1].strip()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"sha256": w.sha256, "lines": out}, indent=0, sort_keys=True) + "\n")


def render(doc: dict[str, Any]) -> str:
    label = "vLLM" if doc["engine"] == "vllm" else "SGLang"
    head = {k: v for k, v in doc.items() if k not in ("options", "_extras")}
    text = HEADER.format(label=label, version=doc["version"], prog=doc["parser"]["prog"])
    text += yaml.safe_dump(head, sort_keys=False, width=110, allow_unicode=True)
    text += "options:\n"
    for o in doc["options"]:
        names = ", ".join(json.dumps(n) for n in o["names"])
        launcher = f", launcher: {json.dumps(o['launcher'])}" if o.get("launcher") else ""
        text += f"  - {{names: [{names}], kind: {o['kind']}, source: {json.dumps(o['source'])}{launcher}}}\n"
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("wheels", nargs="+", type=Path)
    ap.add_argument("--check", action="store_true", help="compare with data/flags/ instead of writing")
    ap.add_argument("--out", type=Path, default=FLAGS, help="folder to write to (default: data/flags)")
    ap.add_argument("--quotes", type=Path, help="also write <folder>/<engine>-<version>.json: each option row's "
                    "cited line, verbatim (tests/fixtures/flag_quotes; the data tests read them back)")
    args = ap.parse_args()
    bad = 0
    for wheel in args.wheels:
        name, doc = build(wheel)
        more = doc.pop("_extras")
        if args.quotes is not None:
            quotes(Wheel(wheel), doc, args.quotes / f"{name}.json")
        target = args.out / f"{name}.yaml"
        kinds: dict[str, int] = {}
        for o in doc["options"]:
            kinds[o["kind"]] = kinds.get(o["kind"], 0) + 1
        print(f"{name}: {len(doc['options'])} options ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})",
              file=sys.stderr)
        for line in doc["not_extracted"]:
            print(f"  not extracted: {line}", file=sys.stderr)
        if args.check:
            if not target.is_file():
                print(f"  {target.name} is not on file", file=sys.stderr)
                bad += 1
                continue
            on_file = yaml.safe_load(target.read_text())
            on_file["as_of"] = doc["as_of"] = str(on_file["as_of"])
            old = {tuple(o["names"]): o for o in on_file["options"]}
            new = {tuple(o["names"]): o for o in doc["options"]}
            for k in sorted(set(old) - set(new)):
                print(f"  removed: {' '.join(k)}", file=sys.stderr)
            for k in sorted(set(new) - set(old)):
                print(f"  added: {' '.join(k)}", file=sys.stderr)
            for k in sorted(set(old) & set(new)):
                if old[k] != new[k]:
                    print(f"  changed: {' '.join(k)}: {old[k]} -> {new[k]}", file=sys.stderr)
            rest_old = {k: v for k, v in on_file.items() if k != "options"}
            rest_new = {k: v for k, v in doc.items() if k != "options"}
            if rest_old != rest_new or old != new:
                bad += 1
            else:
                print("  same as on file", file=sys.stderr)
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        target.write_text(render(doc))
        (args.out / "parser").mkdir(exist_ok=True)
        (args.out / "parser" / f"{name}.yaml").write_text(render_extras(more, name))
        print(f"  wrote {target.relative_to(REPO) if target.is_relative_to(REPO) else target}", file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
