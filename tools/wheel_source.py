"""Reading an engine wheel's Python sources without importing or running anything.

A :class:`Wheel` opens a downloaded ``.whl`` (a zip), parses the modules the extractor asks for with
:mod:`ast`, and answers questions about them with the line each answer is on: the strings of a list
or ``Literal``, the keys of a dict, the literal an ``@classmethod`` returns, the text an exception or
log call prints. Every answer is a :class:`Fact` (value, file, line) so the version file can cite it.

Maintainer tooling: never imported by the ``quantadvise`` package.
"""

from __future__ import annotations

import ast
import hashlib
import re
import zipfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

TORCH_DTYPES = {
    "half": "float16", "float16": "float16", "bfloat16": "bfloat16", "float": "float32", "float32": "float32",
    "float8_e4m3fn": "float8_e4m3fn", "int8": "int8", "uint8": "uint8",
}


@dataclass(frozen=True)
class Fact:
    """A value read from the wheel and where: ``file`` is the path inside the wheel, ``line`` 1-based
    (``end`` the last line when the statement spans several)."""

    value: Any
    file: str
    line: int
    end: int | None = None

    def cite(self, what: str = "") -> str:
        span = f"{self.line}-{self.end}" if self.end and self.end != self.line else f"{self.line}"
        return f"{self.file}:{span}" + (f" ({what})" if what else "")


class NotFound(LookupError):
    """A fact the extractor looked for is not where it expected (the release changed)."""


class _Sdist:
    """A source distribution (``<name>-<version>.tar.gz``) read like a wheel's zip: member names without
    the ``<name>-<version>/`` folder (``PKG-INFO`` holds the metadata a wheel's ``.dist-info/METADATA`` does).
    The Python sources and PKG-INFO are read into memory in one pass (a tar.gz has no random access)."""

    KEEP = (".py", ".pyi", ".txt", ".json", ".yaml", ".toml")

    def __init__(self, path: Path) -> None:
        import tarfile

        self.files: dict[str, bytes] = {}
        with tarfile.open(path, "r:gz") as tar:
            for m in tar:
                if not m.isfile():
                    continue
                top, _, rel = m.name.partition("/")
                if rel == "PKG-INFO":
                    fh = tar.extractfile(m)
                    assert fh is not None
                    self.files["PKG-INFO"] = fh.read()
                elif rel.endswith(self.KEEP) and "/" in rel or rel.startswith("requirements"):
                    fh = tar.extractfile(m)
                    assert fh is not None
                    self.files[rel] = fh.read()

    def namelist(self) -> list[str]:
        return list(self.files)

    def read(self, name: str) -> bytes:
        return self.files[name]


def open_artifact(path: str | Path) -> zipfile.ZipFile | _Sdist:
    """A wheel (zip) or an sdist (``.tar.gz``), both answering ``namelist()`` / ``read(name)``."""
    path = Path(path)
    return _Sdist(path) if path.name.endswith((".tar.gz", ".tgz")) else zipfile.ZipFile(path)


class Wheel:
    """A downloaded release: its wheel, or its source distribution (the same Python sources; paths
    inside are the package paths either way, so citations read the same)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.zip = open_artifact(self.path)
        self.names = set(self.zip.namelist())
        self._trees: dict[str, ast.Module] = {}

    @cached_property
    def sha256(self) -> str:
        h = hashlib.sha256()
        with self.path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()

    @cached_property
    def metadata_file(self) -> str:
        """The wheel's ``<name>-<version>.dist-info/METADATA``, or an sdist's ``PKG-INFO``."""
        return next(n for n in sorted(self.names) if n.endswith(".dist-info/METADATA") or n == "PKG-INFO")

    @cached_property
    def metadata(self) -> dict[str, Any]:
        """Name, version and the ``Requires-Dist`` pins of the wheel's METADATA (an sdist's PKG-INFO)."""
        from email.parser import Parser

        meta = self.metadata_file
        msg = Parser().parsestr(self.zip.read(meta).decode("utf-8", "replace"), headersonly=True)
        out: dict[str, Any] = {"name": msg["Name"], "version": msg["Version"], "requires": {}}
        for val in msg.get_all("Requires-Dist") or []:
            if "extra ==" in val:
                continue
            m = re.match(r"([A-Za-z0-9_.-]+)\s*(?:\[[^]]*\])?\s*([^;]*)", val)
            if m:
                out["requires"][m.group(1).lower()] = m.group(2).strip().replace(" ", "")
        return out

    # -- files ----------------------------------------------------------------------------------
    def exists(self, rel: str) -> bool:
        return rel in self.names

    def text(self, rel: str) -> str:
        if rel not in self.names:
            raise NotFound(f"{rel} is not in {self.path.name}")
        return self.zip.read(rel).decode("utf-8")

    def lines(self, rel: str) -> list[str]:
        return self.text(rel).splitlines()

    def tree(self, rel: str) -> ast.Module:
        if rel not in self._trees:
            self._trees[rel] = ast.parse(self.text(rel), filename=rel)
        return self._trees[rel]

    def grep(self, rel: str, pattern: str, start: int = 1) -> Fact:
        """The first line at or after ``start`` matching ``pattern`` (a regex)."""
        rx = re.compile(pattern)
        for i, line in enumerate(self.lines(rel), 1):
            if i >= start and rx.search(line):
                return Fact(line.strip(), rel, i)
        raise NotFound(f"{rel}: no line matches {pattern!r}")

    def module_file(self, module: str, package_of: str | None = None, level: int = 0) -> str:
        """The wheel path of an imported module (absolute, or relative to ``package_of``)."""
        if level:
            assert package_of is not None
            base = package_of.rsplit("/", level)[0]
            parts = [base] + ([module.replace(".", "/")] if module else [])
            stem = "/".join(parts)
        else:
            stem = module.replace(".", "/")
        for cand in (f"{stem}.py", f"{stem}/__init__.py"):
            if cand in self.names:
                return cand
        raise NotFound(f"module {module!r} (from {package_of}) is not in the wheel")

    # -- classes and functions ------------------------------------------------------------------
    def imports(self, rel: str, scope: ast.AST | None = None) -> dict[str, tuple[str, str]]:
        """name -> (module file, original name) for every ``from X import Y [as Z]`` in ``scope``
        (default: the whole module, nested imports included)."""
        out: dict[str, tuple[str, str]] = {}
        for node in ast.walk(scope or self.tree(rel)):
            if isinstance(node, ast.ImportFrom):
                try:
                    mod = self.module_file(node.module or "", rel, node.level)
                except NotFound:
                    continue
                for a in node.names:
                    out[a.asname or a.name] = (mod, a.name)
        return out

    def find_class(self, rel: str, name: str, _depth: int = 0) -> tuple[str, ast.ClassDef]:
        """The class ``name`` as seen from module ``rel`` (following re-exports)."""
        for node in self.tree(rel).body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return rel, node
        if _depth > 6:
            raise NotFound(f"class {name} (import chain too deep from {rel})")
        imp = self.imports(rel)
        if name in imp:
            mod, orig = imp[name]
            return self.find_class(mod, orig, _depth + 1)
        raise NotFound(f"class {name} is not defined in or imported by {rel}")

    def method(self, rel: str, cls: str, meth: str) -> tuple[str, str, ast.FunctionDef]:
        """(file, defining class, def) of ``cls.meth``, walking the base classes."""
        path, node = self.find_class(rel, cls)
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == meth:
                return path, node.name, item
        for base in node.bases:
            bname = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
            if not bname or bname in ("object", "QuantizationConfig", "BaseModel"):
                continue
            try:
                return self.method(path, bname, meth)
            except NotFound:
                continue
        raise NotFound(f"{cls}.{meth} is not defined (in {rel} or its bases)")

    def returns(self, rel: str, cls: str, meth: str) -> list[Fact]:
        """The literal values ``cls.meth`` returns (ints, strings, lists of strings / torch dtypes),
        each with its line; non-literal returns are left out."""
        path, _owner, fn = self.method(rel, cls, meth)
        out = []
        for node in ast.walk(fn):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.IfExp):
                for branch in (node.value.body, node.value.orelse):
                    v = literal(branch)
                    if v is not _NOPE:
                        out.append(Fact(v, path, node.lineno, node.end_lineno))
            elif isinstance(node, ast.Return) and node.value is not None:
                v = literal(node.value)
                if v is not _NOPE:
                    out.append(Fact(v, path, node.lineno, node.end_lineno))
                elif isinstance(node.value, ast.Name):
                    # `return filenames` after `filenames = [...]`
                    for a in ast.walk(fn):
                        if isinstance(a, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.value.id
                                                             for t in a.targets):
                            v = literal(a.value)
                            if v is not _NOPE:
                                out.append(Fact(v, path, a.lineno, a.end_lineno))
        return out

    def function(self, rel: str, name: str, cls: str | None = None) -> ast.FunctionDef:
        scope: ast.AST = self.find_class(rel, cls)[1] if cls else self.tree(rel)
        for node in ast.walk(scope):
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return node
        raise NotFound(f"{rel}: no function {cls + '.' if cls else ''}{name}")

    def assigned(self, rel: str, name: str, scope: ast.AST | None = None) -> tuple[ast.AST, int, int]:
        """The value assigned to ``name`` (``x = ...`` or ``x: T = ...``) in ``scope``."""
        for node in ast.walk(scope or self.tree(rel)):
            if isinstance(node, ast.Assign):
                if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                    return node.value, node.lineno, node.end_lineno or node.lineno
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
                if node.value is not None:
                    return node.value, node.lineno, node.end_lineno or node.lineno
        raise NotFound(f"{rel}: nothing assigns {name}")

    def strings(self, rel: str, name: str, scope: ast.AST | None = None) -> list[Fact]:
        """The strings of a list / tuple / set / ``Literal[...]`` / dict keys assigned to ``name``,
        each with its own line."""
        value, _, _ = self.assigned(rel, name, scope)
        return string_items(value, rel)


_NOPE = object()


def literal(node: ast.AST) -> Any:
    """``ast.literal_eval`` plus ``torch.<dtype>`` names; ``_NOPE`` when not a literal."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
        return TORCH_DTYPES.get(node.attr, node.attr)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [literal(e) for e in node.elts]
        return _NOPE if any(i is _NOPE for i in items) else items
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
            "frozenset", "set", "tuple", "list") and len(node.args) == 1 and not node.keywords:
        return literal(node.args[0])
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOPE


def string_items(node: ast.AST, rel: str) -> list[Fact]:
    if isinstance(node, ast.Subscript):  # Literal[...]
        node = node.slice
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
            "frozenset", "set", "tuple", "list") and len(node.args) == 1:
        node = node.args[0]
    if isinstance(node, ast.Dict):
        elts: list[ast.AST] = [k for k in node.keys if k is not None]
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        elts = list(node.elts)
    else:
        raise NotFound(f"{rel}:{getattr(node, 'lineno', '?')}: not a list of strings")
    out = []
    for e in elts:
        if isinstance(e, ast.Constant) and isinstance(e.value, str):
            out.append(Fact(e.value, rel, e.lineno))
        elif isinstance(e, ast.Starred):
            continue
    return out


def dict_items(node: ast.AST, rel: str) -> list[tuple[Fact, ast.AST]]:
    """(key fact, value node) of a dict literal."""
    if not isinstance(node, ast.Dict):
        raise NotFound(f"{rel}:{getattr(node, 'lineno', '?')}: not a dict literal")
    return [(Fact(k.value, rel, k.lineno), v) for k, v in zip(node.keys, node.values, strict=True)
            if isinstance(k, ast.Constant)]


def message_text(node: ast.AST, names: dict[str, str] | None = None) -> str | None:
    """The text a string / f-string / implicit concatenation prints, with ``{placeholder}`` for each
    interpolated expression (``names`` renames them: ``{"weight_bits": "bits"}``)."""
    names = names or {}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace("{", "{{").replace("}", "}}")
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value).replace("{", "{{").replace("}", "}}"))
            elif isinstance(v, ast.FormattedValue):
                expr = ast.unparse(v.value)
                key = names.get(expr, expr.split(".")[-1])
                conv = {ord("r"): "!r", ord("a"): "!a"}.get(v.conversion, "")  # {x!r}: the repr, quoted
                parts.append("{" + key + conv + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = message_text(node.left, names), message_text(node.right, names)
        return None if a is None or b is None else a + b
    return None


def call_message(w: Wheel, rel: str, anchor: str, names: dict[str, str] | None = None) -> Fact:
    """The message of the ``raise X(...)`` / ``logger.*(...)`` call whose text contains ``anchor``:
    its str.format template (first argument) and the lines the call spans."""
    for node in ast.walk(w.tree(rel)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        text = message_text(node.args[0], names)
        if text is None or anchor not in text.replace("{{", "{").replace("}}", "}"):
            continue
        is_log = isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and \
            node.func.value.id in ("logger", "logging", "log")
        rest = [message_text(a, names) for a in node.args[1:]]
        if not is_log and rest and all(r is not None for r in rest):
            # an exception given several arguments: Python prints the tuple of them
            return Fact((text, *rest), rel, node.lineno, node.end_lineno)
        return Fact(text, rel, node.lineno, node.end_lineno)
    raise NotFound(f"{rel}: no call prints a message containing {anchor!r}")
