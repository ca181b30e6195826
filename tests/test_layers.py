"""The import layers, enforced on every import (docs/architecture.md draws them).

Every ``import`` counts: module body, function body and ``if TYPE_CHECKING:`` alike. The packages stack
in this order, and an import may only point at its own rank or below (never up, never across to a peer
package of the same rank):

    foundation   errors results defaults wording inputs files
    nouns        hardware workload
    model/ scheme/          (peers)
    memory/
    checkpoint/
    engines/
    evals/
    perf/                   the speed model
    calibration/            getting a profile
    advisor/ gate/          features (peers: never import each other)
    catalog/ artifacts/     I/O: the data/ loader and the Hub, deployment-file readers (peers)
    api/ report/            one file per command; renderers (peers)
    cli/
    the package (__init__, __main__)

Besides the order:
- the pure core (everything below the I/O rank, except the few I/O modules named in ``IO_MODULES``)
  imports no typer, rich, click, huggingface_hub or yaml, opens no file, and imports no I/O module;
- only ``cli/`` imports typer; api/ and the I/O modules import neither typer nor rich;
- only the loader (``catalog/``) finds the shipped data/ tables;
- no import cycle between modules;
- ``gate`` is imported only inside gate/, api/ and report/;
- engine names ("vllm", "sglang") are compared only inside engines/ and catalog/;
- at most 10 loose modules at the package top; no module over 600 lines; no function over
  ``MAX_FUNCTION_LINES`` except the ones on an allow-list that only shrinks;
- ``SCHEMA_VERSION`` is defined once; every public ``api`` function returns a ``Result``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import types
import typing
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "quantadvise"

RANKS: tuple[tuple[str, ...], ...] = (
    ("errors", "results", "defaults", "wording", "inputs", "files"),
    ("hardware", "workload"),
    ("model", "scheme"),
    ("memory",),
    ("checkpoint",),
    ("engines",),
    ("evals",),
    ("perf",),
    ("calibration",),
    ("advisor", "gate"),
    ("catalog", "artifacts"),
    ("api", "report"),
    ("cli",),
    ("", "__main__"),
)
# the foundation's modules may import one another (acyclically); every other rank's packages are peers
FOUNDATION = RANKS[0]
# modules below the I/O rank that do I/O (files, torch, a published package's tables)
IO_MODULES = {"files", "calibration.backends", "calibration.profile_file", "calibration.aiconfigurator",
              "calibration.aic_tables"}
# pure modules inside the I/O packages: the typed views ``list`` returns (renderers read them)
PURE_IN_IO = {"catalog.listing"}
IO_RANK = next(i for i, r in enumerate(RANKS) if "catalog" in r)
THIRD_PARTY_UI = {"typer", "rich", "click"}
CORE_BANNED_THIRD_PARTY = THIRD_PARTY_UI | {"huggingface_hub", "yaml"}
FILE_CALLS = {"open", "read_text", "write_text", "read_bytes", "write_bytes", "iterdir", "glob", "rglob", "mkdir",
              "unlink", "os.walk", "os.scandir", "os.listdir", "os.remove", "os.replace", "subprocess.run"}
ENGINE_NAMES = {"vllm", "sglang"}
MAX_FUNCTION_LINES = 120
# Functions longer than MAX_FUNCTION_LINES, each to be split; the list only shrinks (a test fails when an
# entry is short enough to leave it, or gone).
LONG_FUNCTIONS = {
    "advisor.tree.recommend", "api.check.check", "api.check_target.resolve_target", "api.roofline.roofline",
    "calibration.run.run_calibration", "cli.check.check_cmd", "cli.roofline.roofline_cmd", "engines.resolution.resolve",
    "gate.memory.memory_findings", "model.parse.parse_config", "perf.roofline.roofline", "perf.step.__init__",
    "report.pareto.frontier_figure",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def package(mod: str) -> str:
    return mod.split(".")[0] if mod else ""


def rank(mod: str) -> int:
    top = package(mod)
    for i, group in enumerate(RANKS):
        if top in group:
            return i
    raise AssertionError(f"{mod}: its package {top!r} has no place in RANKS (add it, and to docs/architecture.md)")


def is_io(mod: str) -> bool:
    return (rank(mod) == IO_RANK and mod not in PURE_IN_IO) or mod in IO_MODULES


@cache
def tree_of(mod: str) -> ast.Module:
    return ast.parse(MODULES[mod].read_text(encoding="utf-8"))


@cache
def imports(mod: str) -> tuple[tuple[str, int], ...]:
    """(imported module, line) for every import anywhere in the module; quantadvise-internal names are
    relative to the package (``perf.step``), third-party ones start with ``!``."""
    path = MODULES[mod]
    is_pkg = path.name == "__init__.py"
    here = mod.split(".") if mod else []
    base = here if is_pkg else here[:-1]
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree_of(mod)):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "quantadvise" or a.name.startswith("quantadvise."):
                    out.append((resolve(a.name.removeprefix("quantadvise").lstrip(".")), node.lineno))
                else:
                    out.append(("!" + a.name.split(".")[0], node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                name = node.module or ""
                if not (name == "quantadvise" or name.startswith("quantadvise.")):
                    out.append(("!" + name.split(".")[0], node.lineno))
                    continue
                target = name.removeprefix("quantadvise").lstrip(".")
            else:
                up = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join([*up, *([node.module] if node.module else [])])
            for a in node.names:  # `from . import catalog` imports a module
                sub = f"{target}.{a.name}" if target else a.name
                out.append((sub if sub in MODULES else resolve(target), node.lineno))
    return tuple(out)


def resolve(name: str) -> str:
    """The module an import names (``perf.step.StepModel`` style leftovers resolve to ``perf.step``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def internal(mod: str) -> list[tuple[str, int]]:
    return [(n, line) for n, line in imports(mod) if not n.startswith("!") and n != mod]


def test_the_module_list_is_sane():
    assert {"api.size", "cli.app", "catalog.loader", "scheme.axes", "perf.step", "gate.rules"} <= set(MODULES)
    for mod in MODULES:
        rank(mod)  # every package has a rank


def test_imports_never_point_up_or_across():
    bad = []
    for mod in MODULES:
        for target, line in internal(mod):
            if target == "":
                continue  # `import quantadvise` (the package's lazy API)
            r, t = rank(mod), rank(target)
            across = r == t and package(mod) != package(target) and RANKS[r] != FOUNDATION
            if t > r or across:
                bad.append(f"{mod}:{line} -> {target}")
    assert not bad, "imports that point up or across (see the order in this file's docstring):\n" + "\n".join(bad)


def test_no_import_cycles_counting_every_import():
    graph = {m: {t for t, _ in internal(m)} - {""} for m in MODULES}
    seen: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        seen[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if seen.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in seen and (cycle := visit(n)):
                return cycle
        stack.pop()
        seen[m] = 2
        return None

    for m in sorted(MODULES):
        if m not in seen and (cycle := visit(m)):
            pytest.fail("import cycle: " + " -> ".join(cycle))


CORE = sorted(m for m in MODULES if rank(m) < IO_RANK and m not in IO_MODULES)


@pytest.mark.parametrize("mod", CORE)
def test_the_pure_core_imports_no_io_and_no_ui(mod):
    bad = []
    for name, line in imports(mod):
        if name.startswith("!"):
            if name[1:] in CORE_BANNED_THIRD_PARTY:
                bad.append(f"line {line}: {name[1:]}")
        elif name and is_io(name):
            bad.append(f"line {line}: {name} (I/O)")
    assert not bad, f"{mod} (pure core) imports: " + "; ".join(bad)


@pytest.mark.parametrize("mod", CORE)
def test_the_pure_core_does_no_file_io(mod):
    calls = []
    for node in ast.walk(tree_of(mod)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("os", "subprocess"):
                name = f"{f.value.id}.{f.attr}"
            if name in FILE_CALLS:
                calls.append(f"line {node.lineno}: {name}()")
    assert not calls, f"{mod} (pure core) touches files: " + "; ".join(calls)


@pytest.mark.parametrize("mod", sorted(m for m in MODULES if package(m) in ("report", "api") or is_io(m)))
def test_renderers_api_and_io_never_import_typer_and_io_api_no_rich(mod):
    banned = {"typer"} if package(mod) == "report" else THIRD_PARTY_UI
    bad = [f"line {line}: {n[1:]}" for n, line in imports(mod) if n.startswith("!") and n[1:] in banned]
    assert not bad, f"{mod} imports: " + "; ".join(bad)


@pytest.mark.parametrize("mod", sorted(m for m in MODULES if package(m) == "report"))
def test_renderers_import_no_io(mod):
    bad = [f"line {line}: {n}" for n, line in internal(mod) if n and is_io(n)]
    assert not bad, f"{mod} (a renderer) imports I/O: " + "; ".join(bad)


def test_only_the_cli_imports_typer():
    users = sorted(m for m in MODULES for n, _ in imports(m) if n == "!typer")
    assert users and all(package(m) == "cli" for m in users), users


def test_only_the_loader_finds_the_data_tables():
    users = []
    for mod in MODULES:
        for node in ast.walk(tree_of(mod)):
            if isinstance(node, ast.Name) and node.id == "__file__":
                users.append(mod)
            if isinstance(node, ast.Attribute) and node.attr in ("data_dir", "data_yaml", "_table"):
                users.append(mod)
    assert all(package(m) == "catalog" for m in users), sorted(set(users))
    assert set(users) & {"catalog.loader"}  # the check sees the loader itself


def test_the_gate_is_imported_only_by_gate_api_and_report():
    users = sorted({m for m in MODULES for n, _ in internal(m) if package(n) == "gate"})
    assert all(package(m) in ("gate", "api", "report") for m in users), users


def _engine_name_comparisons(mod: str) -> list[str]:
    out = []
    for node in ast.walk(tree_of(mod)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for o in operands:
            consts = [o] if isinstance(o, ast.Constant) else list(o.elts) if isinstance(o, ast.Tuple | ast.List | ast.Set) \
                else []
            if any(isinstance(c, ast.Constant) and c.value in ENGINE_NAMES for c in consts):
                out.append(f"line {node.lineno}")
                break
    return out


def test_engine_names_are_compared_only_in_engines_and_catalog():
    bad = {m: hits for m in MODULES if package(m) not in ("engines", "catalog")
           if (hits := _engine_name_comparisons(m))}
    assert not bad, f"compare engine names in engines/ (a fact of the engine), not here: {bad}"


def test_at_most_ten_loose_modules_at_the_top():
    loose = sorted(p.name for p in SRC.glob("*.py"))
    assert len(loose) <= 10, loose


def test_no_module_is_over_600_lines():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600}
    assert not long, long


def _long_functions() -> dict[str, int]:
    out = {}
    for mod in MODULES:
        for node in ast.walk(tree_of(mod)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    out[f"{mod}.{node.name}"] = n
    return out


def test_no_function_is_over_the_cap_except_the_shrinking_allow_list():
    long = _long_functions()
    new = {f: n for f, n in long.items() if f not in LONG_FUNCTIONS}
    assert not new, f"functions over {MAX_FUNCTION_LINES} lines (split them): {new}"
    stale = LONG_FUNCTIONS - set(long)
    assert not stale, f"now within the cap or gone: take them off LONG_FUNCTIONS: {sorted(stale)}"


def test_schema_version_is_defined_once():
    homes = [m for m in MODULES for node in tree_of(m).body
             if isinstance(node, ast.Assign | ast.AnnAssign)
             for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
             if isinstance(t, ast.Name) and t.id == "SCHEMA_VERSION"]
    assert homes == ["results"], homes


def _type_namespace(mod: str, module: object) -> dict[str, object]:
    """The module's globals plus the names it imports under ``if TYPE_CHECKING:`` (annotations name them)."""
    ns = dict(vars(module))
    for node in tree_of(mod).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom):
                    source = importlib.import_module("." * imp.level + (imp.module or ""), f"quantadvise.{mod}"
                                                     .rpartition(".")[0]) if imp.level else \
                        importlib.import_module(imp.module or "")
                    for a in imp.names:
                        ns[a.asname or a.name] = getattr(source, a.name)
    return ns


def test_every_public_api_function_returns_a_result():
    """Each command's function in the public API (``quantadvise.<name>`` served from ``api/``) returns a
    ``Result``; the name resolvers (``quantadvise.load_model`` ...) live in ``catalog/`` and return values."""
    import quantadvise
    from quantadvise.results import Result

    bad = []
    served = {name: mod for name, mod in quantadvise._API.items() if mod.startswith("api.")}
    assert {"size", "recommend", "check", "roofline", "inspect"} <= set(served)
    for name, mod in sorted(served.items()):
        module = importlib.import_module(f"quantadvise.{mod}")
        fn = getattr(module, name)
        assert inspect.isfunction(fn), f"quantadvise.{name} is not a function of {mod}"
        ret = typing.get_type_hints(fn, globalns=_type_namespace(mod, module)).get("return")
        kinds = typing.get_args(ret) if typing.get_origin(ret) in (typing.Union, types.UnionType) else (ret,)
        if not kinds or not all(isinstance(k, type) and issubclass(k, Result) for k in kinds):
            bad.append(f"{mod}.{name} -> {ret}")
    assert not bad, "public api functions must return a Result: " + "; ".join(bad)
