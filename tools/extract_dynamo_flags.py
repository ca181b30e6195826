#!/usr/bin/env python3
"""Write ``data/flags/launchers/dynamo-<version>.yaml``: how NVIDIA Dynamo's workers start an engine.

Maintainer tool, run by hand (never at run time, never imported by ``quantadvise``)::

    pip download ai-dynamo==1.6.1 --no-deps -d /tmp/wheels
    python tools/extract_dynamo_flags.py /tmp/wheels/ai_dynamo-1.6.1-py3-none-any.whl          # writes the file
    python tools/extract_dynamo_flags.py /tmp/wheels/ai_dynamo-1.6.1-py3-none-any.whl --check  # compare

``python -m dynamo.vllm`` / ``python -m dynamo.sglang`` parse their command line in three steps
(dynamo/vllm/args.py ``_parse_cli_args``, dynamo/sglang/args.py ``parse_args``): Dynamo's own parser
(``DynamoRuntimeArgGroup`` + the backend's group) takes its options with ``parse_known_args``; the worker's
router parser (``parse_worker_router_config``) takes the router options out of the rest; the engine's own
parser (vLLM's ``AsyncEngineArgs.add_cli_args``, SGLang's ``ServerArgs.add_cli_args``) parses what is left,
and refuses anything it does not register. This tool reads the ``add_arguments`` methods of those groups with
:mod:`ast` (nothing imported or run) and writes every option Dynamo takes before the engine parser, with the
line that registers it; the engine each module runs and the engine release the release pins (its wheel's
``Requires-Dist`` for the ``vllm`` / ``sglang`` extras, the release the runtime images are built with).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import re
import sys
import zipfile
from datetime import date
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "data" / "flags" / "launchers"

HEADER = """\
# NVIDIA Dynamo {version}: the workers that start an engine (python -m dynamo.vllm / dynamo.sglang), the options
# Dynamo itself takes before the engine's parser sees the rest, and the engine release its runtime images run.
# Written by tools/extract_dynamo_flags.py from the published wheel below (read with ast; nothing imported or
# run); do not edit by hand, re-run the tool. Each option row cites the line that registers it (paths inside the
# wheel). kind: value (takes an argument) | flag (takes none) | negatable (BooleanOptionalAction: --no-X too).
# Read by quantadvise.catalog.stack_launchers (engines.launchers.StackRelease).
"""

RUNTIME = ("dynamo/common/configuration/groups/runtime_args.py", "DynamoRuntimeArgGroup")
ROUTER = ("dynamo/common/configuration/groups/router_args.py", "RouterArgGroup")
KV_ROUTER = ("dynamo/common/configuration/groups/kv_router_args.py", "KvRouterArgGroup")
# helpers the groups call that register options themselves
HELPERS = {"add_frontend_decoding_arg": "dynamo/common/configuration/groups/frontend_decoding_args.py"}
# (module, engine, the file that builds its parser, the backend's group, facts read by hand from that file)
LAUNCHERS: list[dict[str, Any]] = [
    {"module": "dynamo.vllm", "engine": "vllm", "args": "dynamo/vllm/args.py",
     "group": ("dynamo/vllm/backend_args.py", "DynamoVllmArgGroup"),
     "entry": "def _parse_cli_args", "engine_parser": "AsyncEngineArgs.add_cli_args(",
     "parser_call": "argparse.ArgumentParser(",
     # AsyncEngineArgs.add_cli_args registers vllm/engine/arg_utils.py's options only; `vllm serve`'s frontend
     # options (vllm/entrypoints/launchers/cli_args.py: --port, --api-key ...) are not among them
     "engine_option_files": ["vllm/engine/arg_utils.py"]},
    {"module": "dynamo.sglang", "engine": "sglang", "args": "dynamo/sglang/args.py",
     "group": ("dynamo/sglang/backend_args.py", "DynamoSGLangArgGroup"),
     "entry": "async def parse_args", "engine_parser": "ServerArgs.add_cli_args(",
     "parser_call": "argparse.ArgumentParser(", "engine_option_files": []},
]
ROUTER_SOURCE = ("dynamo/common/configuration/groups/router_args.py", "def parse_worker_router_config")
PIN = re.compile(r"^Requires-Dist: (vllm|sglang)(?:\[[^\]]*\])?==([\w.]+); extra == '(vllm|sglang)'")
IMAGE = "nvcr.io/nvidia/ai-dynamo/{engine}-runtime"


class Wheel:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.zip = zipfile.ZipFile(path)

    def text(self, name: str) -> str:
        return self.zip.read(name).decode("utf-8")

    def line_of(self, name: str, needle: str, after: int = 0) -> int:
        for i, line in enumerate(self.text(name).splitlines(), 1):
            if i > after and needle in line:
                return i
        sys.exit(f"{name}: no line with {needle!r}")


def _str(node: ast.AST | None, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.Attribute) and node.attr == "BooleanOptionalAction":
        return "BooleanOptionalAction"
    if isinstance(node, ast.Name | ast.Attribute):
        return f"<{ast.unparse(node)}>"
    return None


def _kind(call: ast.Call, helper: str, env: dict[str, Any]) -> str:
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    if helper == "add_negatable_bool_argument":
        return "negatable"
    action = _str(kw.get("action"), env)
    if action == "BooleanOptionalAction":
        return "negatable"
    if action in ("store_true", "store_false", "store_const", "count", "version", "help"):
        return "flag"
    if "nargs" in kw and _str(kw["nargs"], env) == 0:
        return "flag"
    return "value"


class Reader:
    """The option rows a group's ``add_arguments`` registers (following HELPERS, unrolling literal loops,
    skipping ``if self.include_frontend_only:``, which workers build with False: router_args.py)."""

    def __init__(self, wheel: Wheel) -> None:
        self.wheel = wheel
        self.rows: list[dict[str, Any]] = []
        self.skipped: list[str] = []

    def group(self, path: str, cls: str) -> None:
        tree = ast.parse(self.wheel.text(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == cls:
                for fn in node.body:
                    if isinstance(fn, ast.FunctionDef) and fn.name == "add_arguments":
                        self.body(fn.body, path, {})
                        return
        sys.exit(f"{path}: no {cls}.add_arguments")

    def helper(self, name: str) -> None:
        path = HELPERS[name]
        for node in ast.parse(self.wheel.text(path)).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                self.body(node.body, path, {})

    def body(self, stmts: list[ast.stmt], path: str, env: dict[str, Any]) -> None:
        for st in stmts:
            if isinstance(st, ast.If):
                if ast.unparse(st.test) == "self.include_frontend_only":
                    self.body(st.orelse, path, env)
                    continue
                self.skipped.append(f"{path}:{st.lineno}: `if {ast.unparse(st.test)}:` read as both branches")
                self.body(st.body, path, env)
                self.body(st.orelse, path, env)
            elif isinstance(st, ast.For) and isinstance(st.iter, ast.Tuple | ast.List):
                targets = [t.id for t in st.target.elts if isinstance(t, ast.Name)] \
                    if isinstance(st.target, ast.Tuple) else [getattr(st.target, "id", "")]
                for item in st.iter.elts:
                    values = [_str(e, env) for e in item.elts] if isinstance(item, ast.Tuple) else [_str(item, env)]
                    self.body(st.body, path, {**env, **dict(zip(targets, values, strict=False))})
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                self.call(st.value, path, env)
            elif isinstance(st, ast.With | ast.Try):
                self.body(st.body, path, env)

    def call(self, call: ast.Call, path: str, env: dict[str, Any]) -> None:
        fn = call.func
        name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        if name in HELPERS:
            self.helper(name)
            return
        if name not in ("add_argument", "add_negatable_bool_argument"):
            return
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        if "flag_name" in kw:  # dynamo.common.configuration.utils.add_argument(g, flag_name=..., obsolete_flag=...)
            names = [_str(kw["flag_name"], env)]
            if "obsolete_flag" in kw and _str(kw["obsolete_flag"], env):
                names.append(_str(kw["obsolete_flag"], env))
        else:  # argparse's own parser.add_argument("--x", ...)
            names = [_str(a, env) for a in call.args if isinstance(_str(a, env), str)]
        names = [n for n in names if isinstance(n, str) and n.startswith("-")]
        if not names or any(n.startswith("<") for n in names):
            self.skipped.append(f"{path}:{call.lineno}: option names not literal: {ast.unparse(call)[:80]}")
            return
        self.rows.append({"names": names, "kind": _kind(call, name, env), "source": f"{path}:{call.lineno}"})


def build(wheel_path: Path) -> tuple[str, dict[str, Any]]:
    m = re.match(r"ai_dynamo-(\d[\w.]*?)-", wheel_path.name)
    if m is None:
        sys.exit(f"{wheel_path.name}: expected an ai_dynamo-X wheel")
    version = m.group(1)
    wheel = Wheel(wheel_path)
    meta = f"ai_dynamo-{version}.dist-info/METADATA"
    pins = {}
    for i, line in enumerate(wheel.text(meta).splitlines(), 1):
        hit = PIN.match(line)
        if hit and hit.group(1) == hit.group(3):
            pins[hit.group(1)] = (hit.group(2), f"{meta}:{i}")
    launchers, skipped = [], []
    for spec in LAUNCHERS:
        reader = Reader(wheel)
        reader.group(*RUNTIME)
        reader.group(*spec["group"])
        reader.group(*ROUTER)
        reader.group(*KV_ROUTER)
        skipped += reader.skipped
        args = spec["args"]
        entry = wheel.line_of(args, spec["entry"])
        parser_line = wheel.line_of(args, spec["parser_call"], entry)
        block = wheel.text(args).splitlines()[parser_line - 1:parser_line + 4]
        abbrev = not any("allow_abbrev=False" in b for b in block)
        launchers.append({
            "module": spec["module"], "engine": spec["engine"], "entry": f"{args}:{entry}",
            "engine_parser": f"{args}:{wheel.line_of(args, spec['engine_parser'], entry)}",
            "router_parser": f"{ROUTER_SOURCE[0]}:{wheel.line_of(ROUTER_SOURCE[0], ROUTER_SOURCE[1])}",
            "engine_option_files": spec["engine_option_files"],
            "abbreviations": abbrev, "abbreviations_source": f"{args}:{parser_line}",
            "options": reader.rows,
        })
    images = [{"repository": IMAGE.format(engine=e), "engine": e, "engine_version": v,
               "source": f"{where} (Requires-Dist {e}=={v}; extra == '{e}')"} for e, (v, where) in sorted(pins.items())]
    doc = {
        "schema_version": 1, "stack": "dynamo", "version": version,
        "source": {"package": "ai-dynamo", "version": version, "artifact": wheel_path.name,
                   "sha256": hashlib.sha256(wheel_path.read_bytes()).hexdigest(),
                   "read_by": "tools/extract_dynamo_flags.py (ast; nothing imported or run)"},
        "as_of": date.today(),
        "images": images,
        "launchers": launchers,
        "not_extracted": sorted(set(skipped)),
    }
    return f"dynamo-{version}", doc


def dump(doc: dict[str, Any]) -> str:
    """The table, one option row a line (as data/flags/ writes them)."""
    head = {k: v for k, v in doc.items() if k not in ("images", "launchers", "not_extracted")}
    out = HEADER.format(version=doc["version"]) + yaml.safe_dump(head, sort_keys=False, width=120)
    out += "images:\n" + "".join(f"  - {yaml.safe_dump(i, default_flow_style=True, width=1000).strip()}\n"
                                 for i in doc["images"])
    out += "launchers:\n"
    for launcher in doc["launchers"]:
        fields = {k: v for k, v in launcher.items() if k != "options"}
        body = yaml.safe_dump([fields], sort_keys=False, width=120).rstrip("\n")
        out += "\n".join("  " + line for line in body.splitlines()) + "\n    options:\n"
        for row in launcher["options"]:
            names = ", ".join(f'"{n}"' for n in row["names"])
            out += f'      - {{names: [{names}], kind: {row["kind"]}, source: "{row["source"]}"}}\n'
    out += yaml.safe_dump({"not_extracted": doc["not_extracted"]}, sort_keys=False, width=120)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", type=Path)
    ap.add_argument("--check", action="store_true", help="compare with the file on disk instead of writing")
    a = ap.parse_args()
    stem, doc = build(a.wheel)
    target = OUT / f"{stem}.yaml"
    if a.check:
        old = yaml.safe_load(target.read_text())
        new = yaml.safe_load(dump(doc))
        old.pop("as_of", None)
        new.pop("as_of", None)
        sys.exit(0 if old == new else f"{target.relative_to(REPO)} differs from {a.wheel.name}")
    OUT.mkdir(parents=True, exist_ok=True)
    target.write_text(dump(doc))
    print(f"wrote {target.relative_to(REPO)}: {sum(len(x['options']) for x in doc['launchers'])} option rows; "
          f"not extracted: {len(doc['not_extracted'])}")
    for s in doc["not_extracted"]:
        print("  " + s)


if __name__ == "__main__":
    main()
