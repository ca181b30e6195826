"""docs/architecture.md names every module of the tree, and nothing that is not there; the README links it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "quantadvise"
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = sorted(p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists())


def tree_modules() -> set[str]:
    return {p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py")}


def doc_modules() -> set[str]:
    """Every `path.py` in a table row's first cell (one module per row)."""
    out = set()
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\|\s*`([\w/]+\.py)`\s*\|", line)
        if m:
            out.add(m.group(1))
    return out


def test_the_doc_names_every_module_and_only_modules_that_exist():
    tree, doc = tree_modules(), doc_modules()
    assert not tree - doc, f"modules docs/architecture.md does not describe: {sorted(tree - doc)}"
    assert not doc - tree, f"docs/architecture.md names modules that do not exist: {sorted(doc - tree)}"


def test_every_name_in_the_doc_exists():
    """A path or dotted name in backticks that looks like one of ours (``perf/step``, ``catalog/hub.py``,
    ``advisor/load.walk_load``) points at a module that exists, and the attribute after it at a name the
    module defines."""
    text = DOC.read_text(encoding="utf-8")
    missing = []
    for ref in re.findall(r"`([a-z_]+/[\w/]*?(?:\.py)?(?:\.[A-Za-z_][\w.]*)?)`", text):
        path, _, attr = ref.partition(".py")
        if not attr and "." in path:
            path, _, attr = path.partition(".")
            attr = "." + attr
        path = path.rstrip("/")
        if path.split("/")[0] not in PACKAGES:
            continue
        mod = SRC / f"{path}.py"
        pkg = SRC / path / "__init__.py"
        if not (mod.exists() or pkg.exists()):
            missing.append(ref)
            continue
        name = attr.lstrip(".").split(".")[0]
        if name and not re.search(rf"^(?:def|class|async def)\s+{name}\b|^{name}\s*[:=]",
                                  (mod if mod.exists() else pkg).read_text(encoding="utf-8"), re.M):
            missing.append(ref)
    assert not missing, f"docs/architecture.md names what is not there: {missing}"


def test_the_readme_links_the_architecture():
    assert "docs/architecture.md" in (ROOT / "README.md").read_text(encoding="utf-8")
