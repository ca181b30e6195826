#!/usr/bin/env python3
"""The option strings ``vllm serve`` accepts, read statically from a vLLM wheel.

Maintainer tool (never imported by ``quantadvise``): ``python tools/flags_vllm.py WHEEL... [--json]``.

**Reads** (``ast`` only; nothing in the wheel is imported or run) ``ServeSubcommand.subparser_init``
(``vllm/entrypoints/cli/serve.py``), the ``make_arg_parser`` it imports (``python -m
vllm.entrypoints.openai.api_server`` builds the same parser), and every ``X.add_cli_args(parser)`` or
function handed the parser from there (``FrontendArgs``, ``AsyncEngineArgs`` -> ``EngineArgs``, the
in-tree ``pre_register_and_update`` hooks). Each ``add_argument`` with literal names is one option, also
under an ``if`` (``--model``), cited at the line spelling its first name. The frontend's ``for key, value in
get_kwargs(cls).items()`` loop gives one ``--field-name`` per dataclass field of the class and its bases,
plus the ``["flags"]`` its ``_customize_cli_kwargs`` add. A kind comes from ``action=`` / ``nargs=0``,
from ``["action"]`` overrides, else from the config field's annotation (unions, ``Optional``,
``Annotated``, aliases and star imports followed) judged as vLLM's ``_compute_kwargs`` does: a dataclass
member -> value; exactly ``bool | str | None`` -> value (``nargs="?"``); other ``bool`` -> negatable.
Also cited: where ``--a_b`` is read as ``--a-b``, any ``allow_abbrev=False``, ``EnableDisableAction``;
:func:`spellings` cites the ``-O``, dotted-JSON, ``--help=``, ``--model`` and ``--config`` rewrites;
:func:`accepted` expands the ``--no-x`` / ``--disable-x`` spellings argparse registers.

**Cannot read**: options an out-of-tree platform plugin adds at run time; ``--omni`` (hands the command
line to ``vllm_omni``, not in the wheel); choices, value types. What it sees but cannot resolve goes to
``not_extracted``; a boolean of unresolved type is ``negatable`` (over-accepting is the safe side).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wheel_source import Fact, NotFound, Wheel  # noqa: E402

SERVE, MAIN, ARG_UTILS = "vllm/entrypoints/cli/serve.py", "vllm/entrypoints/cli/main.py", "vllm/engine/arg_utils.py"
FLAG_ACTIONS = {"store_true", "store_false", "store_const", "append_const", "count", "help", "version"}
FLAG_BASES = {f"_{a}Action" for a in ("StoreTrue", "StoreFalse", "StoreConst", "AppendConst", "Count", "Help",
                                       "Version")}
PARSER_MAKERS = {"add_argument_group", "add_mutually_exclusive_group", "add_cli_args", "add_parser", "make_arg_parser"}
SKIP_CALLS = PARSER_MAKERS - {"make_arg_parser"} | {"set_defaults", "add_subparsers", "register"}
OTHER_TYPES = {"int", "float", "dict", "list", "tuple", "set", "frozenset", "bytes", "object", "Any"}
Kwargs = tuple[str, str, str | None]  # (class file, class name, field; None: the whole get_kwargs dict)
Muts = dict[tuple[str, str], dict[str, ast.AST]]  # (class, field) -> {"action"|"nargs"|"flags": value}


def _name(node: ast.AST | None) -> str | None:
    """The last component of ``a.b.C`` / ``C``."""
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _toplevel(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module-level statements, including those under ``if TYPE_CHECKING:`` / ``try:``."""
    return [x for st in body for x in [st] + (_toplevel(st.body + st.orelse + getattr(st, "finalbody", []) + [
        s for h in getattr(st, "handlers", []) for s in h.body]) if isinstance(st, (ast.If, ast.Try)) else [])]


def _calls(node: ast.AST) -> list[ast.AST]:
    """Call and For nodes under ``node`` in source order, not looking into a For (see ``_Serve.loop``)."""
    out: list[ast.AST] = []
    for child in ast.iter_child_nodes(node):
        out += [child] if isinstance(child, (ast.Call, ast.For)) else []
        out += _calls(child) if not isinstance(child, ast.For) else []
    return out


class _Serve:
    def __init__(self, w: Wheel) -> None:
        self.w, self.entry, self.seen = w, "", set[tuple[str, int, str]]()
        self.options: list[dict[str, Any]] = []
        self.notes: list[str] = []

    def note(self, rel: str, node: ast.AST, what: str) -> None:
        self.notes.append(f"{rel}:{getattr(node, 'lineno', '?')}: {what}")

    def find(self, rel: str, name: str) -> tuple[str, ast.ClassDef] | None:
        try:
            return self.w.find_class(rel, name)
        except NotFound:  # defined outside the wheel (argparse.Action, pydantic BaseModel ...)
            return None

    def atoms(self, rel: str, node: ast.AST | None, depth: int = 0) -> set[str]:
        """What ``get_type_hints`` would see, coarsely: bool / str / None / dataclass / other / unknown."""
        if node is None or isinstance(node, ast.Constant) and node.value is None or depth > 15:
            return {"None" if depth <= 15 else "unknown"}
        if isinstance(node, ast.Constant) and isinstance(node.value, str):  # forward reference
            return self.atoms(rel, ast.parse(node.value, mode="eval").body, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.atoms(rel, node.left, depth + 1) | self.atoms(rel, node.right, depth + 1)
        if isinstance(node, ast.Subscript):
            head = _name(node.value)
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if head in ("Optional", "Union"):
                return set().union(*(self.atoms(rel, e, depth + 1) for e in elts)) | (
                    {"None"} if head == "Optional" else set())
            if head in ("dict", "Dict", "Mapping"):
                return {"dict"}
            return self.atoms(rel, elts[0], depth + 1) if head == "Annotated" else {"other"}  # Literal, list[..]
        if isinstance(node, ast.Name):
            return {node.id} if node.id in ("bool", "str", "None", "int", "float", "dict") else {"other"} \
                if node.id in OTHER_TYPES \
                else self.name_atoms(rel, node.id, depth + 1)
        return {"other"} if isinstance(node, ast.Attribute) else {"unknown"}  # torch.dtype: a class

    def name_atoms(self, rel: str, name: str, depth: int) -> set[str]:
        found: set[str] = set()
        for node in _toplevel(self.w.tree(rel).body):
            if isinstance(node, ast.ClassDef) and node.name == name:
                found.add("dataclass" if self.is_dataclass(rel, node, depth) else "other")
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets) \
                    or isinstance(node, ast.AnnAssign) and _name(node.target) == name and node.value is not None:
                found |= self.atoms(rel, node.value, depth + 1)
        if found or name in (imports := self.w.imports(rel)):
            return found or self.name_atoms(*imports[name], depth + 1)
        for node in self.w.tree(rel).body:  # from .types import *
            try:
                if isinstance(node, ast.ImportFrom) and node.names[0].name == "*" and depth < 15 and (
                        got := self.name_atoms(self.w.module_file(node.module or "", rel, node.level), name,
                                               depth + 1)) != {"unknown"}:
                    return got
            except NotFound:
                continue
        for imp in ast.walk(self.w.tree(rel)):
            if isinstance(imp, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name) == name for a in imp.names):
                inside = isinstance(imp, ast.ImportFrom) and (imp.level or (imp.module or "").startswith("vllm"))
                return {"unknown" if inside else "other"}  # from outside the wheel: a class, never `bool`
        return {"unknown"}

    def is_dataclass(self, rel: str, node: ast.ClassDef, depth: int = 0) -> bool:
        if any(_name(d.func if isinstance(d, ast.Call) else d) in ("config", "dataclass") for d in node.decorator_list):
            return True
        bases = [self.find(rel, _name(b) or "?") for b in node.bases] if depth < 10 else []
        return any(b is not None and self.is_dataclass(b[0], b[1], depth + 1) for b in bases)

    def fields(self, rel: str, cls: str) -> dict[str, tuple[ast.AST, str, int]]:
        """Dataclass fields of ``cls`` and its in-wheel bases, in dataclass order: name -> (annotation, file, line)."""
        path, node = self.w.find_class(rel, cls)
        out: dict[str, tuple[ast.AST, str, int]] = {}
        for b in [b for b in map(_name, node.bases) if b not in (None, "object", "Generic") and self.find(path, b)]:
            out.update(self.fields(path, b or "?"))
        for it in node.body:  # a field redefined in a subclass keeps its place, as in dataclasses
            if isinstance(it, ast.AnnAssign) and isinstance(it.target, ast.Name) and \
                    _name(getattr(it.annotation, "value", it.annotation)) not in ("ClassVar", "InitVar"):
                out[it.target.id] = (it.annotation, path, it.lineno)
        return out

    def field_json(self, rel: str, cls: str, fname: str) -> bool:
        """Whether get_kwargs parses the field's value as JSON: a config dataclass (parse_dataclass) or a
        dict without an int / float member (json.loads; vLLM's _compute_kwargs tests int and float first)."""
        flds = self.fields(rel, cls)
        if fname not in flds:
            return False
        atoms = self.atoms(flds[fname][1], flds[fname][0])
        return "dataclass" in atoms or ("dict" in atoms and not atoms & {"int", "float"})

    def field_kind(self, rel: str, cls: str, fname: str, where: str) -> str:
        flds = self.fields(rel, cls)
        if fname not in flds:
            raise NotFound(f"{where}: get_kwargs({cls})[{fname!r}]: {cls} has no field {fname!r}")
        ann, path, line = flds[fname]
        if "dataclass" in (atoms := self.atoms(path, ann)) or atoms == {"bool", "str", "None"}:
            return "value"
        if "unknown" in atoms and "bool" not in atoms:
            self.notes.append(f"{path}:{line}: type of {cls}.{fname} ({ast.unparse(ann)}) not resolved; negatable")
        return "negatable" if atoms & {"bool", "unknown"} else "value"

    def action_kind(self, rel: str, node: ast.AST, depth: int = 0) -> str:
        if isinstance(node, ast.Constant):
            return "flag" if node.value in FLAG_ACTIONS else "value"
        name = _name(node) or "?"
        if name in ("BooleanOptionalAction", "EnableDisableAction") or name in FLAG_BASES:
            return "flag" if name in FLAG_BASES else "negatable"
        if (found := self.find(rel, name)) is None:
            self.note(rel, node, f"action {ast.unparse(node)} not resolved; reported value")
            return "value"
        path, cls = found
        if any(isinstance(k, ast.keyword) and k.arg == "nargs" and isinstance(k.value, ast.Constant)
               and k.value.value == 0 for k in ast.walk(cls)):
            return "flag"
        base = next((b for b in cls.bases if _name(b) not in (None, "Action")), None)
        return self.action_kind(path, base, depth + 1) if base is not None and depth < 8 else "value"

    def kwargs_of(self, rel: str, node: ast.AST, env: dict[str, Kwargs], owner: Kwargs | None) -> Kwargs | None:
        """``get_kwargs(C)`` / ``get_kwargs(C)["f"]`` / ``kw["f"]`` / ``cls._customize_cli_kwargs(kw)``."""
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.Call) and _name(node.func) == "get_kwargs" and node.args:
            cname = _name(node.args[0]) or "?"
            return owner if cname == "cls" and owner else (self.w.find_class(rel, cname)[0], cname, None)
        if isinstance(node, ast.Call) and _name(node.func) == "_customize_cli_kwargs" and node.args:
            return self.kwargs_of(rel, node.args[0], env, owner)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            base = self.kwargs_of(rel, node.value, env, owner)
            return (base[0], base[1], str(node.slice.value)) if base and base[2] is None else None
        return None

    def mutations(self, rel: str, fn: ast.AST, env: dict[str, Kwargs], owner: Kwargs | None,
                  muts: Muts, dropped: set[str]) -> None:
        """``kw["f"]["action"|"nargs"|"flags"] = ...`` and ``del kw["f"]`` under ``fn``."""
        for node in ast.walk(fn):
            for t in node.targets if isinstance(node, (ast.Assign, ast.Delete)) else []:
                k = t.slice.value if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) else None
                if isinstance(node, ast.Assign) and isinstance(t, ast.Subscript) and k in {"action", "nargs", "flags"} \
                        and (kw := self.kwargs_of(rel, t.value, env, owner)) and kw[2]:
                    muts.setdefault((kw[1], kw[2]), {})[str(k)] = node.value
                elif isinstance(node, ast.Delete) and (kw := self.kwargs_of(rel, t, env, owner)) and kw[2]:
                    dropped.add(kw[2])

    def function(self, rel: str, fn: ast.FunctionDef, owner: Kwargs | None) -> None:
        if (key := (rel, fn.lineno, str(owner))) in self.seen:
            return
        self.seen.add(key)  # each function once per owner class
        env, muts = dict[str, Kwargs](), Muts()
        pvars = {a.arg for a in fn.args.args + fn.args.kwonlyargs
                 if "parser" in a.arg or "Parser" in ast.unparse(a.annotation or ast.Constant(""))}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                if got := self.kwargs_of(rel, node.value, env, owner):
                    env[node.targets[0].id] = got
                if isinstance(node.value, ast.Call) and _name(node.value.func) in PARSER_MAKERS:
                    pvars.add(node.targets[0].id)
        self.mutations(rel, fn, env, owner, muts, set())
        self.visit(rel, _calls(fn), env, muts, owner, pvars)

    def visit(self, rel: str, nodes: list[ast.AST], env: dict[str, Kwargs], muts: Muts, owner: Kwargs | None,
              pvars: set[str]) -> None:
        for node in nodes:
            if isinstance(node, ast.For):
                if not self.loop(rel, node, env, owner):
                    self.visit(rel, _calls(node), env, muts, owner, pvars)
            elif isinstance(node, ast.Call) and _name(node.func) == "add_argument":
                self.add_argument(rel, node, env, muts)
            elif isinstance(node, ast.Call) and _name(node.func) == "add_cli_args":
                cname = _name(getattr(node.func, "value", None)) or "?"
                if cname in ("?", "cls", "super") or not (found := self.find(rel, cname)):
                    self.note(rel, node, f"{ast.unparse(node.func)}(...) not followed (may add options)")
                    continue
                mpath, _, meth = self.w.method(found[0], cname, "add_cli_args")
                self.function(mpath, meth, (found[0], cname, None))
            elif isinstance(node, ast.Call) and _name(node.func) not in SKIP_CALLS and \
                    any(isinstance(a, ast.Name) and a.id in pvars for a in node.args):
                self.helper(rel, node)

    def helper(self, rel: str, call: ast.Call) -> None:
        """A call handed the parser: an in-wheel function is followed, the platform hook scanned."""
        name = _name(call.func) or "?"
        if name == "pre_register_and_update":
            hooks = [(n, fn) for n in sorted(self.w.names) if n.startswith("vllm/platforms/") and n.endswith(".py")
                     for fn in ast.walk(self.w.tree(n)) if isinstance(fn, ast.FunctionDef) and fn.name == name]
            for path, fn in hooks:
                self.function(path, fn, None)
            self.note(rel, call, f"{ast.unparse(call.func)}(parser): the {len(hooks)} in-tree definitions were read; "
                      "an out-of-tree platform plugin may add options at run time")
            return
        path, orig = self.w.imports(rel).get(name, (rel, name))
        if not (func := next((f for f in self.w.tree(path).body if isinstance(f, ast.FunctionDef) and f.name == orig
                              and isinstance(call.func, ast.Name)), None)):
            return self.note(rel, call, f"{ast.unparse(call.func)}(parser) not followed (may add options)")
        self.entry = f"{path}:{func.lineno}" if orig == "make_arg_parser" else self.entry
        self.function(path, func, None)

    def add(self, names: list[str], kind: str, source: str, json_value: bool = False) -> None:
        if names and names[0].startswith("-"):  # positionals (model_tag) are not options
            self.options.append({"names": names, "kind": kind, "source": source, "json": json_value})

    def kind(self, rel: str, kw: dict[str, ast.AST], base: str | None) -> str:
        if "action" in kw:
            return self.action_kind(rel, kw["action"])
        return "flag" if isinstance(n := kw.get("nargs"), ast.Constant) and n.value == 0 else base or "value"

    def add_argument(self, rel: str, call: ast.Call, env: dict[str, Kwargs], muts: Muts) -> None:
        names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if len(names) != len(call.args):
            self.note(rel, call, f"add_argument with a non-literal name: {ast.unparse(call)[:120]}")
        explicit: dict[str, ast.AST] = {k.arg: k.value for k in call.keywords if k.arg}
        kind = None
        json_value = False
        for k in (k for k in call.keywords if k.arg is None):  # **kw["f"], **{**kw["f"], "default": None}
            pairs = list(zip(k.value.keys, k.value.values, strict=True)) if isinstance(k.value, ast.Dict) else [
                (None, k.value)]
            explicit.update({str(key.value): v for key, v in pairs if isinstance(key, ast.Constant)})
            for s in (v for key, v in pairs if key is None):
                if not (kw := self.kwargs_of(rel, s, env, None)) or not kw[2]:
                    self.note(rel, call, f"**{ast.unparse(s)} not resolved for {names}; reported negatable")
                    kind = "negatable"
                    continue
                kind = self.field_kind(kw[0], kw[1], kw[2], f"{rel}:{call.lineno}")
                json_value = self.field_json(kw[0], kw[1], kw[2])
                explicit = {**muts.get((kw[1], kw[2]), {}), **explicit}
        if "type" in explicit:  # an explicit type= wins over the field's
            t = ast.unparse(explicit["type"])
            json_value = "json.loads" in t or "parse_dataclass" in t or "union_dict_and_str" in t
        self.add(names, self.kind(rel, explicit, kind), f"{rel}:{(call.args or [call])[0].lineno}", json_value)

    def literal_loop(self, rel: str, node: ast.For, adds: list[ast.Call]) -> bool:
        """``for arg, type in [("--a", str), ...]: group.add_argument(arg, type=type, ...)`` (vLLM 0.11's
        deprecated guided-decoding options): one option per literal item, each taking a value."""
        if len(adds) != 1 or not isinstance(node.iter, (ast.List, ast.Tuple)) or not adds[0].args:
            return False
        first = node.target.elts[0] if isinstance(node.target, ast.Tuple) else node.target
        if not (isinstance(first, ast.Name) and isinstance(adds[0].args[0], ast.Name)
                and adds[0].args[0].id == first.id):
            return False
        kw = {k.arg: k.value for k in adds[0].keywords if k.arg}
        for item in node.iter.elts:
            name = item.elts[0] if isinstance(item, ast.Tuple) else item
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                return False
            self.add([name.value], self.kind(rel, kw, None), f"{rel}:{name.lineno}")
        return True

    def loop(self, rel: str, node: ast.For, env: dict[str, Kwargs], owner: Kwargs | None) -> bool:
        """``for key, value in kw.items(): add_argument(*value.pop("flags", []), f"--{key...}", **value)``."""
        if not (adds := [c for c in ast.walk(node) if isinstance(c, ast.Call) and _name(c.func) == "add_argument"]):
            return False
        if self.literal_loop(rel, node, adds):
            return True
        it = node.iter
        kw = self.kwargs_of(rel, it.func.value, env, owner) if isinstance(it, ast.Call) and \
            isinstance(it.func, ast.Attribute) and it.func.attr == "items" else None
        fstr = [ast.unparse(a).replace("'", '"') for a in adds[0].args if isinstance(a, ast.JoinedStr)]
        if len(adds) != 1 or not kw or kw[2] or fstr != ['f"--{key.replace("_", "-")}"']:
            self.note(rel, node, f"loop adding options not understood: {ast.unparse(node)[:160]}")
            return True
        (cpath, cname, _), muts, dropped = kw, Muts(), set[str]()
        todo = [(cpath, cname)]
        while todo:  # _customize_cli_kwargs of the class and its bases (each calls super() first)
            path, cnode = self.w.find_class(*todo.pop())
            todo += [(path, b) for b in map(_name, cnode.bases) if b and b != "object" and self.find(path, b)]
            for item in cnode.body:
                if isinstance(item, ast.FunctionDef) and item.name == "_customize_cli_kwargs":
                    self.mutations(path, item, {item.args.args[1].arg: kw}, None, muts, dropped)
        self.mutations(rel, node, env, owner, muts, dropped)
        for fname, (_, path, line) in self.fields(cpath, cname).items():
            if fname in dropped:
                continue
            extra = (m := muts.get((cname, fname), {})).get("flags")
            flags = [str(e.value) for e in getattr(extra, "elts", []) if isinstance(e, ast.Constant)]
            if extra is not None and not flags:
                self.note(path, extra, f"extra flags of {fname} not literal: {ast.unparse(extra)}")
            base = self.field_kind(cpath, cname, fname, f"{path}:{line}")
            self.add([*flags, f"--{fname.replace('_', '-')}"], self.kind(path, m, base), f"{path}:{line}",
                     self.field_json(cpath, cname, fname))
        return True


def spellings(w: Wheel) -> dict[str, str]:
    """Where ``FlexibleArgumentParser.parse_args`` rewrites the command line before argparse sees it."""
    path, cls = w.find_class(SERVE, "FlexibleArgumentParser")
    if not (fn := next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "parse_args"), None)):
        raise NotFound(f"{path}: FlexibleArgumentParser.parse_args is gone")
    out = {}
    q = "[\"']"
    for key, pattern in (("underscores", rf"replace\({q}_{q}, {q}-{q}\)"), ("O_shorthand", rf"startswith\({q}-O{q}\)"),
                         ("dotted_json", rf"{q}\.{q} in processed_arg"), ("help_search", rf"startswith\({q}--help={q}\)"),
                         ("model_option_to_positional", r"\^--model"), ("config_file", rf"{q}--config{q} in args")):
        if hit := next((i for i, ln in enumerate(w.lines(path)[fn.lineno - 1:fn.end_lineno], fn.lineno)
                        if re.search(pattern, ln)), None):
            out[key] = f"{path}:{hit}"
    if "underscores" not in out:
        raise NotFound(f"{path}: parse_args no longer maps '_' to '-' (pattern changed)")
    return out


def extract(w: Wheel) -> dict[str, Any]:
    """``vllm serve``'s options (see the module docstring); raises NotFound when an anchor moved."""
    s = _Serve(w)
    init = w.function(SERVE, "subparser_init", "ServeSubcommand")
    if not (add_parser := next((c for c in ast.walk(init) if isinstance(c, ast.Call)
                                and _name(c.func) == "add_parser"), None)):
        raise NotFound(f"{SERVE}: subparser_init no longer calls add_parser")
    s.function(SERVE, init, None)
    if not s.entry:
        raise NotFound(f"{SERVE}: subparser_init no longer calls make_arg_parser")
    if missing := {"--port", "--max-model-len", "--tensor-parallel-size"} - {n for o in s.options for n in o["names"]}:
        raise NotFound(f"{sorted(missing)} not found from {s.entry} ({len(s.options)} options): the layout changed")
    if omni := next((i for i, ln in enumerate(w.lines(MAIN), 1) if re.search(r'"--omni" (not )?in sys\.argv', ln)), 0):
        s.notes.append(f"{MAIN}:{omni}: --omni anywhere on the command line hands it to vllm_omni "
                       "(not in this wheel), whose options are not read")
    ppath, pcls = w.find_class(SERVE, "FlexibleArgumentParser")
    abbrev: Fact | None = None
    for rel in sorted({ppath, SERVE, MAIN, s.entry.split(":")[0]} & w.names):
        for node in ast.walk(w.tree(rel)):
            off = isinstance(node, ast.keyword) and node.arg == "allow_abbrev" or \
                isinstance(node, ast.Assign) and any(_name(t) == "allow_abbrev" for t in node.targets)
            if off and isinstance(val := getattr(node, "value", None), ast.Constant) and val.value is False:
                abbrev = abbrev or Fact(False, rel, val.lineno)
    if not (negation := next((n for f in ast.walk(w.tree(ARG_UTILS)) if isinstance(f, ast.FunctionDef)
                              and f.name in ("get_kwargs", "_compute_kwargs") for n in ast.walk(f)
                              if isinstance(n, ast.Assign) and _name(n.value) == "BooleanOptionalAction"), None)):
        raise NotFound(f"{ARG_UTILS}: get_kwargs no longer turns bool fields into BooleanOptionalAction")
    register = next((c for c in ast.walk(pcls) if isinstance(c, ast.Call) and _name(c.func) == "register"
                     and len(c.args) == 3 and _name(c.args[1]) == "BooleanOptionalAction"), None)
    consts = {c.value for c in ast.walk(w.find_class(ppath, _name(register.args[2]) or "?")[1])
              if isinstance(c, ast.Constant)} if register else set()
    if not (enable_disable := {"--enable-", "--disable-"} <= consts) and register:
        s.note(ppath, register, f"{ast.unparse(register.args[2])} replaces BooleanOptionalAction; not understood")
    return {
        "prog": "vllm serve", "entry": s.entry, "underscores": spellings(w)["underscores"], "abbreviations": not abbrev,
        "abbreviations_source": f"{abbrev.file}:{abbrev.line}" if abbrev else f"{SERVE}:{add_parser.lineno}",
        "negation": f"{ARG_UTILS}:{negation.lineno}" + (f"; {ppath}:{register.lineno}" if register and enable_disable
                                                        else ""),
        "enable_disable": enable_disable, "options": s.options, "not_extracted": s.notes,
    }


def accepted(result: dict[str, Any]) -> dict[str, str]:
    """Every spelling argparse registers -> kind: the names, ``--no-x`` of a negatable ``--x``, and
    ``--disable-x`` / ``--enable-x`` for a negatable ``--enable-x`` / ``--disable-x`` where ``enable_disable``.
    Unique prefixes (``abbreviations``) and ``_`` for ``-`` are left to the caller."""
    swaps = (("--enable-", "--disable-"), ("--disable-", "--enable-")) if result["enable_disable"] else ()
    out = {n: o["kind"] for o in result["options"] for n in o["names"]}
    for n in [n for n, k in out.items() if k == "negatable" and n.startswith("--")]:
        out.update({m: "negatable" for m in ["--no-" + n[2:]] + [b + n[len(a):] for a, b in swaps if n.startswith(a)]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("wheels", nargs="+")
    ap.add_argument("--json", action="store_true", help="dump the extracted dict (a dict per version if several)")
    args = ap.parse_args()
    results = {(w := Wheel(path)).metadata["version"]: extract(w) for path in args.wheels}
    for version, res in results.items() if not args.json else []:
        kinds = {k: sum(o["kind"] == k for o in res["options"]) for k in ("value", "flag", "negatable")}
        print(f"vllm {version}: {len(res['options'])} options {kinds}, {len(accepted(res))} spellings; entry "
              f"{res['entry']}; abbreviations {res['abbreviations']}; enable/disable {res['enable_disable']}")
        print("".join(f"  not extracted: {n}\n" for n in res["not_extracted"]), end="")
    if args.json:
        print(json.dumps(results if len(results) > 1 else next(iter(results.values())), indent=1))


if __name__ == "__main__":
    main()
