"""Every option string SGLang's server parser registers, read from a wheel with ast (nothing imported or run).

``python -m sglang.launch_server`` and ``sglang serve`` both call ``server_args.prepare_server_args``: a
plain ``argparse.ArgumentParser`` (``--a_b`` is not ``--a-b``), ``ServerArgs.add_cli_args(parser)``,
``parser.parse_args``. Read: literal ``add_argument`` calls in every function the parser is handed to, in
any branch (an option registered only under a condition is listed), and ``add_cli_args_from_dataclass(
parser, Cls)``: one option per field annotated ``A[T, "help"]`` / ``A[T, Arg(...)]`` without
``no_cli=True``, named ``Arg.cli_name`` or ``--field-name``, plus ``Arg.aliases``; the fields of ``Cls``'s
bases, of the classes it is rebuilt from (``Cls.__annotations__ = {**collect_input_fields([...])[0], ...}``,
0.5.20+), then its own. The generator's rules are re-checked in ``arg_utils.py`` (``NotFound`` if changed).

Rows in registration order; ``source``: the ``add_argument`` call or the field annotation. ``kind``: flag
(store_true/false/const, count, custom actions with ``nargs`` 0), negatable (``BooleanOptionalAction``:
``names`` has the declared strings, argparse adds ``--no-X``), value otherwise (``nargs='?'``/``'*'`` too).
argparse's ``-h``/``--help`` is not listed. Not readable (a ``not_extracted`` line each; a maybe-option is
kept): what an installed plugin adds at run time (``load_plugins``), names computed at run time, metadata
other than a string, ``Arg(...)`` or a constant naming one.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wheel_source import NotFound, Wheel  # noqa: E402

SERVER_ARGS = "sglang/srt/server_args.py"
FLAG_ACTIONS = {"store_true", "store_false", "store_const", "count", "append_const", "help", "version"}
VALUE_ACTIONS = {"store", "append", "extend"}
FLAG_BASES = {"_StoreTrueAction", "_StoreFalseAction", "_StoreConstAction", "_CountAction", "_AppendConstAction"}
ROOT_BASES = {"object", "Struct", "Generic", "Protocol"}
Field = tuple[str, ast.AnnAssign]  # (file, the field's annotated assignment)


def _name(node: ast.AST) -> str:
    """The last dotted part of a Name / Attribute (``argparse.BooleanOptionalAction`` -> its class name)."""
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _const(node: ast.AST | None, default: Any = None) -> Any:
    return node.value if isinstance(node, ast.Constant) else default


def _strlike(node: ast.AST) -> bool:  # "a", f"a{b}", "a" + b
    return _strlike(node.left) if isinstance(node, ast.BinOp) else isinstance(node, ast.JoinedStr | ast.Constant) \
        and isinstance(getattr(node, "value", ""), str)


def _ordered(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` in source order (pre-order; ``ast.walk`` is breadth-first)."""
    yield node
    for child in ast.iter_child_nodes(node):
        yield from _ordered(child)


_UNREAD = object()


def _literal(kw: Mapping[str, ast.AST], key: str) -> Any:
    """The literal value of keyword ``key`` (None when absent, ``_UNREAD`` when not a literal)."""
    try:
        return ast.literal_eval(kw[key]) if key in kw else None
    except ValueError:
        return _UNREAD


def _at(rel: str, node: ast.AST) -> str:  # file:line
    return f"{rel}:{getattr(node, 'lineno', '?')}"


class _Reader:
    """Follows the parser through the wheel, collecting option rows and what it could not read."""

    def __init__(self, w: Wheel) -> None:
        self.w = w
        self.options: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.negation: str | None = None
        self.seen: set[tuple[str, int]] = set()

    def note(self, rel: str, node: ast.AST, what: str) -> None:
        if (line := f"{_at(rel, node)}: {what}") not in self.notes:
            self.notes.append(line)

    # -- resolving names ------------------------------------------------------------------------
    def module_value(self, rel: str, name: str, depth: int = 0) -> tuple[str, ast.AST] | None:
        """(file, def / class / assigned value) of module-level ``name`` in ``rel``, imports followed."""
        for node in self.w.tree(rel).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
                return rel, node
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", node)]
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value and name in map(_name, targets):
                return rel, node.value
        imp = self.w.imports(rel)
        return self.module_value(*imp[name], depth=depth + 1) if name in imp and depth < 8 else None

    def is_name_of(self, rel: str, node: ast.AST, target: str) -> bool:
        """Whether ``node`` (``A``, ``Annotated``, ``typing.Annotated``, ``Arg``...) names ``target``."""
        if _name(node) == target:
            return True
        got = self.module_value(rel, node.id) if isinstance(node, ast.Name) else None
        return got is not None and got[1] is not node and self.is_name_of(got[0], got[1], target)

    def callee(self, rel: str, func: ast.AST, cls: str | None) -> tuple[str, ast.FunctionDef] | None:
        """The def a call runs: ``f``, ``Cls.meth``, ``cls.meth`` / ``self.meth``, ``Cls(...)`` (its __init__)."""
        owner, meth = "", ""
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner, meth = (cls or "") if func.value.id in ("cls", "self") else func.value.id, func.attr
        elif isinstance(func, ast.Name) and (got := self.module_value(rel, func.id)):
            if isinstance(got[1], ast.FunctionDef):
                return got[0], got[1]
            if isinstance(got[1], ast.ClassDef):
                rel, owner, meth = got[0], got[1].name, "__init__"
        if not owner:
            return None
        try:
            path, _cls, fn = self.w.method(rel, owner, meth)
        except NotFound:
            return None
        return path, fn

    # -- walking the functions the parser is handed to -------------------------------------------
    def walk(self, rel: str, fn: ast.FunctionDef, parsers: set[str], cls: str | None) -> None:
        if (rel, fn.lineno) in self.seen:
            return
        self.seen.add((rel, fn.lineno))
        for node in _ordered(fn):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                    isinstance(node.value.func, ast.Attribute) and _name(node.value.func.value) in parsers and \
                    node.value.func.attr in ("add_argument_group", "add_mutually_exclusive_group"):
                parsers |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in parsers:
                if f.attr == "add_argument":  # set_defaults, parse_args ... add no option
                    self.literal(rel, node)
                continue
            if not any(_name(a) in parsers for a in [*node.args, *(k.value for k in node.keywords)]):
                continue
            if _name(f) == "add_cli_args_from_dataclass":
                self.dataclass(rel, node)
            elif (target := self.callee(rel, f, cls)) is None:
                self.note(rel, node, f"the parser is passed to {ast.unparse(f)}, not found (not followed)")
            else:
                path, callee = target
                params = [a.arg for a in [*callee.args.posonlyargs, *callee.args.args]]
                if params[:1] in (["self"], ["cls"]) and "staticmethod" not in map(_name, callee.decorator_list):
                    params = params[1:]
                inner = {params[i] for i, a in enumerate(node.args) if i < len(params) and _name(a) in parsers}
                inner |= {k.arg for k in node.keywords if k.arg and _name(k.value) in parsers}
                owner = next((c.name for c in ast.walk(self.w.tree(path))
                              if isinstance(c, ast.ClassDef) and callee in c.body), None)
                self.walk(path, callee, inner, owner)

    def literal(self, rel: str, call: ast.Call) -> None:
        """One ``parser.add_argument("--a", "-b", action=..., nargs=...)``."""
        names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if len(names) != len(call.args) or any(k.arg is None for k in call.keywords):
            self.note(rel, call, f"add_argument not all literal (names, **kwargs): {ast.unparse(call)[:90]}")
        if names and all(n.startswith("-") for n in names):  # else a positional argument (or noted)
            kw = {k.arg: k.value for k in call.keywords if k.arg}
            self.options.append({"names": names, "kind": self.kind(rel, kw.get("action"), kw.get("nargs"),
                                                                    "nargs" in kw), "source": _at(rel, call.args[0])})

    def kind(self, rel: str, action: ast.AST | None, nargs: ast.AST | None, given: bool) -> str:
        """value / flag / negatable for an ``action=`` (None: store) and a call-site ``nargs=``."""
        by_nargs = "flag" if given and _const(nargs, "?") == 0 else "value"
        if action is None or _const(action, "") is None:
            return by_nargs
        if isinstance(act := _const(action), str):
            if act not in FLAG_ACTIONS | VALUE_ACTIONS:
                self.note(rel, action, f"unknown action {act!r} (read as taking a value)")
            return "flag" if act in FLAG_ACTIONS else "value"
        got = self.module_value(rel, action.id) if isinstance(action, ast.Name) else None
        cdef = got[1] if got and isinstance(got[1], ast.ClassDef) else None
        if _name(action) == "BooleanOptionalAction" or (cdef and "BooleanOptionalAction" in map(_name, cdef.bases)):
            self.negation = self.negation or _at(rel, action)
            return "negatable"
        if cdef is None or given:
            if cdef is None:
                self.note(rel, action, f"action {ast.unparse(action)} not found (kind from nargs)")
            return by_nargs
        for init in (f for f in cdef.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"):
            a = init.args
            named = [p.arg for p in [*a.posonlyargs, *a.args]][len(a.posonlyargs) + len(a.args) - len(a.defaults):]
            defaults = dict(zip([*named, *(p.arg for p in a.kwonlyargs)], [*a.defaults, *a.kw_defaults], strict=True))
            supers = [k.value for c in ast.walk(init) if isinstance(c, ast.Call) and _name(c.func) == "__init__"
                      for k in c.keywords if k.arg == "nargs"]
            for node in [defaults.get("nargs"), *supers]:
                if isinstance(node, ast.Constant):
                    return "flag" if node.value == 0 else "value"
        return "flag" if set(map(_name, cdef.bases)) & FLAG_BASES else "value"

    # -- add_cli_args_from_dataclass --------------------------------------------------------------
    def dataclass(self, rel: str, call: ast.Call) -> None:
        gen = self.callee(rel, call.func, None)
        if gen is None or len(call.args) < 2 or not isinstance(call.args[1], ast.Name):
            raise NotFound(f"{_at(rel, call)}: add_cli_args_from_dataclass not in the wheel or its class not a name")
        self.check_generator(*gen)
        if (keep := _literal({k.arg: k.value for k in call.keywords if k.arg}, "fields")) is _UNREAD:
            self.note(rel, call, "fields= filter not literal (every field listed)")
        for path, field in self.fields(rel, call.args[1].id):
            if keep is None or keep is _UNREAD or _name(field.target) in keep:
                self.field(path, field)

    def check_generator(self, rel: str, fn: ast.FunctionDef) -> None:
        """The rules of the generator this module re-implements, re-checked in every release."""
        src = ast.unparse(fn)
        changed = [m for m in ("no_cli", "cli_name", "aliases", "_field_to_cli_name", "action_kwargs", "'store_true'")
                   if m not in src] + ["uses BooleanOptionalAction"] * ("BooleanOptionalAction" in src)
        if changed:
            raise NotFound(f"{rel}:{fn.lineno}: add_cli_args_from_dataclass changed (missing / now): {changed}")
        spell = self.w.function(rel, "_field_to_cli_name")
        ret = [ast.unparse(r.value) for r in ast.walk(spell) if isinstance(r, ast.Return) and r.value]
        if ret != ["'--' + name.replace('_', '-')"]:
            raise NotFound(f"{rel}:{spell.lineno}: _field_to_cli_name changed: {ret}")

    def fields(self, rel: str, cls: str, depth: int = 0) -> list[Field]:
        """The record fields of ``cls`` in order: bases', the namespace classes it is rebuilt from, its own."""
        path, cdef = self.w.find_class(rel, cls)
        out: dict[str, Field] = {}
        for base in reversed(cdef.bases):
            b = _name(base.value if isinstance(base, ast.Subscript) else base)
            try:
                if b not in ROOT_BASES and depth < 8:
                    out.update((_name(f[1].target), f) for f in self.fields(path, b, depth + 1))
            except NotFound:
                self.note(path, base, f"base class {b} of {cls} not found (its fields are not listed)")
        for name, f in self.composed(path, cls):
            if name in out:
                self.note(f[0], f[1], f"field {name} declared twice (SGLang raises at import)")
            out[name] = f
        for st in cdef.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and \
                    "ClassVar" not in ast.unparse(st.annotation):
                out[st.target.id] = (path, st)
        return list(out.values())

    def composed(self, rel: str, cls: str) -> list[tuple[str, Field]]:
        """``Cls.__annotations__ = {**collected, **Cls.__annotations__}``: the fields of the classes collected."""
        body = self.w.tree(rel).body
        for st in body:
            if not (isinstance(st, ast.Assign) and isinstance(st.value, ast.Dict) and any(
                    _name(t) == "__annotations__" and _name(getattr(t, "value", t)) == cls for t in st.targets)):
                continue
            out: list[tuple[str, Field]] = []
            for spread in (v for k, v in zip(st.value.keys, st.value.values, strict=True)
                           if k is None and not isinstance(v, ast.Attribute)):  # not Cls.__annotations__ itself
                call = next((a.value for a in body if isinstance(a, ast.Assign) and isinstance(a.value, ast.Call)
                             and any(_name(x) == _name(spread) for t in a.targets for x in ast.walk(t))), None)
                if call is None or not call.args:
                    raise NotFound(f"{rel}:{st.lineno}: where {ast.unparse(spread)} comes from is not read")
                arg = call.args[0]
                got = self.module_value(rel, arg.id) if isinstance(arg, ast.Name) else (rel, arg)
                if got is None or not isinstance(got[1], (ast.List, ast.Tuple)):
                    raise NotFound(f"{_at(rel, call)}: the classes {ast.unparse(call.func)} collects are not a list")
                for c in got[1].elts:
                    out += [(_name(f[1].target), f) for f in self.fields(got[0], _name(c))]
                # the collector puts the names of a literal tuple it reads (POSITIONAL_FIELD_ORDER) first
                fn = self.callee(rel, call.func, None)
                for name in sorted({n.id for n in ast.walk(fn[1]) if isinstance(n, ast.Name)} if fn else ()):
                    got = self.module_value(fn[0], name) if fn else None
                    if got and isinstance(got[1], (ast.Tuple, ast.List)) and got[1].elts and \
                            all(isinstance(_const(e), str) for e in got[1].elts):
                        rank = {_const(e): i for i, e in enumerate(got[1].elts)}
                        out.sort(key=lambda f: rank.get(f[0], len(rank)))  # stable: the rest keep their order
                        break
            return out
        return []

    def field(self, rel: str, st: ast.AnnAssign) -> None:
        """One field: ``A[T, "help"]`` / ``A[T, Arg(...)]`` -> an option, as add_cli_args_from_dataclass does."""
        ann: ast.AST = st.annotation
        if isinstance(_const(ann), str):
            ann = ast.parse(_const(ann), mode="eval").body
        meta: list[ast.AST] = []
        while isinstance(ann, ast.Subscript) and self.is_name_of(rel, ann.value, "Annotated"):
            elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            ann, meta = elts[0], [*elts[1:], *meta]  # Annotated[Annotated[T, x], y] is Annotated[T, x, y]
        name, arg = _name(st.target), None  # arg: Arg(...)'s keywords ({} for a help string)
        for m in meta:
            if isinstance(m, ast.Name) and (got := self.module_value(rel, m.id)):
                m = got[1]
            if isinstance(m, ast.Call) and self.is_name_of(rel, m.func, "Arg"):
                arg = {k.arg: k.value for k in m.keywords if k.arg is not None}
                if m.args or any(k.arg is None for k in m.keywords):
                    self.note(rel, m, f"field {name}: Arg(...) positional or ** arguments not read")
            elif isinstance(m, ast.Call):
                continue  # NS(...) and other markers
            elif not _strlike(m):
                self.note(rel, m, f"field {name}: metadata {ast.unparse(m)[:60]} not read (listed)")
            arg = arg if arg is not None else {}
            break
        if arg is None:
            return
        lit = {k: _literal(arg, k) for k in ("no_cli", "cli_name", "aliases")}
        for key in [k for k, v in lit.items() if v is _UNREAD]:
            self.note(rel, arg[key], f"field {name}: {key}= not literal (read as unset)")
            lit[key] = None
        if lit["no_cli"] is True:
            return
        names = [lit["cli_name"] or "--" + name.replace("_", "-"), *map(str, lit["aliases"] or [])]
        if "action" in arg and _const(arg["action"], "") is not None:  # Arg(action=None) is no action
            extra = arg.get("action_kwargs")
            nargs = next((v for k, v in zip(extra.keys, extra.values, strict=True) if k and _const(k) == "nargs"),
                         None) if isinstance(extra, ast.Dict) else None
            kind = self.kind(rel, arg["action"], nargs, nargs is not None)
        else:
            kind = "flag" if self.is_bool(rel, ann) else "value"
        # the line that spells the option: Arg(cli_name="--x") when it names one, else the field
        where = arg["cli_name"] if lit["cli_name"] else st
        self.options.append({"names": names, "kind": kind, "source": _at(rel, where)})

    def is_bool(self, rel: str, tp: ast.AST, depth: int = 0) -> bool:
        """``bool`` / ``Optional[bool]`` / ``bool | None`` (store_true); Literal, lists, unions are values."""
        parts: list[ast.AST] = [tp]
        if isinstance(tp, ast.Subscript) and _name(tp.value) in ("Optional", "Union"):
            parts = list(tp.slice.elts) if isinstance(tp.slice, ast.Tuple) else [tp.slice]
        elif isinstance(tp, ast.BinOp) and isinstance(tp.op, ast.BitOr):
            parts = [tp.left, tp.right]
        real = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None) and _name(p) != "NoneType"]
        if len(real) != 1 or not isinstance(t := real[0], ast.Name):
            return False
        if t.id != "bool" and depth < 4 and (got := self.module_value(rel, t.id)) and \
                not isinstance(got[1], (ast.ClassDef, ast.FunctionDef)):
            return self.is_bool(got[0], got[1], depth + 1)  # a type alias
        return t.id == "bool"


def extract(w: Wheel) -> dict[str, Any]:
    """The options ``prepare_server_args``'s parser registers (the contract: the module docstring)."""
    r = _Reader(w)
    entry = w.function(SERVER_ARGS, "prepare_server_args")  # NotFound when it is gone
    ctor = next((a for a in ast.walk(entry) if isinstance(a, ast.Assign) and isinstance(a.value, ast.Call)
                 and _name(a.value.func) == "ArgumentParser" and isinstance(a.targets[0], ast.Name)), None)
    if ctor is None or not isinstance(ctor.value, ast.Call):
        raise NotFound(f"{SERVER_ARGS}:{entry.lineno}: prepare_server_args builds no argparse.ArgumentParser")
    kw = {k.arg: k.value for k in ctor.value.keywords if k.arg}
    for key in [k for k in ("prog", "allow_abbrev", "add_help") if k in kw and not isinstance(kw[k], ast.Constant)]:
        r.note(SERVER_ARGS, ctor, f"ArgumentParser({key}=...) not literal")
    if _const(kw.get("add_help")) is False:  # the vocabulary adds -h/--help
        r.note(SERVER_ARGS, ctor, "add_help=False: -h/--help are not registered")
    parser = _name(ctor.targets[0])
    if not any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "parse_args"
               and _name(c.func.value) == parser for c in ast.walk(entry)):
        r.note(SERVER_ARGS, entry, f"prepare_server_args does not call {parser}.parse_args (unknown options may pass)")
    r.walk(SERVER_ARGS, entry, {parser}, None)
    if len(r.options) < 50:
        raise NotFound(f"{SERVER_ARGS}:{entry.lineno}: prepare_server_args -> add_cli_args registered only "
                       f"{len(r.options)} options (the registration is no longer where this module looks)")
    seen: dict[str, str] = {}
    for row, n in ((o, n) for o in r.options for n in o["names"]):
        if seen.setdefault(n, row["source"]) != row["source"]:
            r.notes.append(f"{row['source']}: {n} also registered at {seen[n]} (argparse raises a conflict)")
    for rel, anchor, what in (
            ("sglang/launch_server.py", r"load_plugins\(\)",
             "load_plugins() runs before prepare_server_args: an installed plugin may hook add_cli_args (not read)"),
    ):
        try:
            r.notes.append(f"{w.grep(rel, anchor).cite()}: {what}")
        except NotFound:
            pass
    # `sglang serve` takes --model-type <v> (exactly so spelled) out of argv before prepare_server_args: not a
    # parser option, read only on that launcher (python -m sglang.launch_server refuses it)
    try:
        mt = w.grep("sglang/cli/serve.py", r'arg == "--model-type"')
        r.options.append({"names": ["--model-type"], "kind": "value", "source": mt.cite(), "launcher": "sglang serve"})
    except NotFound:
        pass
    return {
        "prog": _const(kw.get("prog"), "launch_server.py"),
        "entry": _at(SERVER_ARGS, entry),
        "underscores": None,  # a plain argparse.ArgumentParser: --a_b is not read as --a-b
        "abbreviations": _const(kw.get("allow_abbrev")) is not False,
        "abbreviations_source": _at(SERVER_ARGS, ctor.value),
        "negation": r.negation,
        "enable_disable": False,
        "options": r.options,
        "not_extracted": r.notes,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description="List the options SGLang's server parser registers, per wheel.")
    ap.add_argument("wheels", nargs="+", type=Path)
    ap.add_argument("--json", action="store_true", help="dump the extracted dict")
    args = ap.parse_args()
    for path in args.wheels:
        got = extract(Wheel(path))
        kinds = Counter(o["kind"] for o in got["options"])
        print(json.dumps(got, indent=1) if args.json else "\n".join([
            f"{path.name}: {len(got['options'])} options ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})",
            *(f"  not extracted: {line}" for line in got["not_extracted"])]))


if __name__ == "__main__":
    main()
