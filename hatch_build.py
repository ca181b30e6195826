"""Wheel build hook: write the compiled JSON form of every shipped YAML table (quantadvise/catalog/tables.py)
beside it in the wheel, so an installed quantadvise loads its data without parsing YAML."""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CompileTables(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return  # an editable install reads the repository's data/ (YAML, parsed)
        spec = importlib.util.spec_from_file_location("_qa_tables", Path(self.root, "src", "quantadvise", "catalog", "tables.py"))
        assert spec is not None and spec.loader is not None
        tables = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tables)
        data = Path(self.root, "data")
        out = Path(tempfile.mkdtemp(prefix="quantadvise-tables-"))
        self._compiled = out  # removed in finalize(), once the wheel holds the files
        for src in sorted(data.rglob("*.yaml")):
            rel = src.relative_to(data).as_posix() + tables.SUFFIX
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tables.compile_yaml(src.read_bytes()))
            build_data["force_include"][str(target)] = f"quantadvise/data/{rel}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        compiled = getattr(self, "_compiled", None)
        if compiled is not None:
            shutil.rmtree(compiled, ignore_errors=True)  # no temp-dir litter per install
