"""The import layers, enforced (docs/architecture.md draws them).

    cli/  ->  api/  ->  catalog, hub, files, artifacts/, evals/evidence, gate/files, perf/backends, perf/profile_file  (I/O)
     |          \\->  the pure core (domain types, sizing, perf/, checkpoint/, engines/, advisor/, evals/, gate/)
     \\-> report/ (renderers: result -> str)

- the core never imports cli/, report/, api/, the I/O modules, nor typer, rich, huggingface_hub, yaml or
  click, and never opens a file;
- report/ renders results: no cli/, api/, I/O modules, typer;
- api/ never imports cli/ or report/, typer or rich; only cli/ imports typer;
- only the loader (catalog.py) finds the shipped data/ tables;
- no import cycles between modules.

Every ``import`` counts, including the lazy ones inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "quantadvise"

IO_MODULES = {"catalog", "tables", "hub", "files", "artifacts.scan", "artifacts.shell", "artifacts.dockerfile",
              "artifacts.programs",
              "artifacts.manifests", "artifacts.launch", "evals.evidence", "gate.files", "perf.backends",
              "perf.profile_file", "perf.aiconfigurator"}
THIRD_PARTY_UI = {"typer", "rich", "click"}
CORE_BANNED_THIRD_PARTY = THIRD_PARTY_UI | {"huggingface_hub", "yaml"}
FILE_CALLS = {"open", "read_text", "write_text", "read_bytes", "write_bytes", "iterdir", "glob", "rglob", "mkdir",
              "unlink", "os.walk", "os.scandir", "os.listdir", "os.remove", "os.replace", "subprocess.run"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def in_group(mod: str, group: str | set[str]) -> bool:
    groups = {group} if isinstance(group, str) else group
    return any(mod == g or mod.startswith(g + ".") for g in groups)


def layer(mod: str) -> str:
    if in_group(mod, "cli"):
        return "cli"
    if in_group(mod, "report"):
        return "report"
    if in_group(mod, "api"):
        return "api"
    if in_group(mod, IO_MODULES):
        return "io"
    if mod in ("", "__main__"):
        return "package"
    return "core"


def imports(mod: str) -> list[tuple[str, int, bool]]:
    """(imported module, line, top-level?) for every import in the module; quantadvise-internal names
    are relative to the package (``perf.step``), third-party ones start with ``!``."""
    path = MODULES[mod]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    here = mod.split(".") if mod else []
    base = here if is_pkg else here[:-1]
    out = []
    top = set(id(n) for n in tree.body)

    def add(name: str, line: int, node: ast.AST) -> None:
        out.append((name, line, id(node) in top))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "quantadvise" or a.name.startswith("quantadvise."):
                    add(a.name.removeprefix("quantadvise").lstrip("."), node.lineno, node)
                else:
                    add("!" + a.name.split(".")[0], node.lineno, node)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                name = node.module or ""
                if name == "quantadvise" or name.startswith("quantadvise."):
                    target = name.removeprefix("quantadvise").lstrip(".")
                else:
                    add("!" + name.split(".")[0], node.lineno, node)
                    continue
            else:
                up = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join([*up, *([node.module] if node.module else [])])
            for a in node.names:  # `from . import catalog` imports a module
                sub = f"{target}.{a.name}" if target else a.name
                add(sub if sub in MODULES else target, node.lineno, node)
    return out


def resolve(name: str) -> str:
    """The module an import names (``perf.step.StepModel`` style leftovers resolve to ``perf.step``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def test_the_module_list_is_sane():
    assert {"api.size", "cli.app", "catalog", "scheme", "perf.step", "gate.rules"} <= set(MODULES)


@pytest.mark.parametrize("mod", sorted(m for m in MODULES if layer(m) == "core"))
def test_core_imports_nothing_above_it(mod):
    bad = []
    for name, line, _ in imports(mod):
        if name.startswith("!"):
            if name[1:] in CORE_BANNED_THIRD_PARTY:
                bad.append(f"line {line}: {name[1:]}")
            continue
        target = resolve(name)
        if layer(target) in ("cli", "report", "api", "io"):
            bad.append(f"line {line}: {target} ({layer(target)})")
    assert not bad, f"{mod} (core) imports: " + "; ".join(bad)


@pytest.mark.parametrize("mod", sorted(m for m in MODULES if layer(m) == "core"))
def test_core_does_no_file_io(mod):
    tree = ast.parse(MODULES[mod].read_text(encoding="utf-8"))
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("os", "subprocess"):
                name = f"{f.value.id}.{f.attr}"
            if name in FILE_CALLS:
                calls.append(f"line {node.lineno}: {name}()")
    assert not calls, f"{mod} (core) touches files: " + "; ".join(calls)


@pytest.mark.parametrize("mod", sorted(m for m in MODULES if layer(m) == "report"))
def test_report_renders_only(mod):
    bad = [f"line {line}: {n}" for n, line, _ in imports(mod)
           if (n.startswith("!") and n[1:] == "typer") or (not n.startswith("!") and layer(resolve(n)) in ("cli", "api",
                                                                                                          "io"))]
    assert not bad, f"{mod} imports: " + "; ".join(bad)


@pytest.mark.parametrize("mod", sorted(m for m in MODULES if layer(m) in ("api", "io")))
def test_api_and_io_never_import_the_cli_or_renderers(mod):
    bad = [f"line {line}: {n}" for n, line, _ in imports(mod)
           if (n.startswith("!") and n[1:] in THIRD_PARTY_UI)
           or (not n.startswith("!") and layer(resolve(n)) in ("cli", "report"))]
    assert not bad, f"{mod} imports: " + "; ".join(bad)


def test_only_the_cli_imports_typer():
    users = sorted(m for m in MODULES for n, _, _ in imports(m) if n == "!typer")
    assert users and all(layer(m) == "cli" for m in users), users


def test_only_the_loader_finds_the_data_tables():
    users = []
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "__file__":
                users.append(mod)
            if isinstance(node, ast.Attribute) and node.attr in ("data_dir", "data_yaml", "_table"):
                users.append(mod)
    assert all(m == "catalog" or m.startswith("catalog.") for m in users), sorted(set(users))
    assert set(users) & {"catalog.loader"}  # the check sees the loader itself


def test_no_import_cycles_between_modules():
    graph = {m: {resolve(n) for n, _, top in imports(m) if top and not n.startswith("!")} - {m, ""}
             for m in MODULES}
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


def test_no_module_is_over_600_lines():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600}
    assert not long, long
