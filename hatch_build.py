"""Wheel build hook: the shipped data, compiled (quantadvise/catalog/tables.py). Every YAML table outside the
release families ships with its compiled JSON form beside it (``<table>.yaml.json``); each release family
(``tables.BUNDLES``: data/engines, data/flags, data/kernels, data/moe_configs) ships as one folder of compiled members,
``quantadvise/data/<family>-compiled/``, and none of its YAML. The gzipped kernel tables ship inflated
(``tables.inflated_name``: ``<table>.csv``; the wheel's zip deflates them), each GEMM table with its cell index
(``tables.cells_index``: ``<table>.csv.cells.json``). Other files (model configs, READMEs) ship as they are."""

from __future__ import annotations

import gzip
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
        try:
            self._compile(tables, data, out, build_data["force_include"])
        except BaseException:  # a table that does not compile: no temp-dir litter from a failed build either
            shutil.rmtree(out, ignore_errors=True)
            raise

    @staticmethod
    def _compile(tables: Any, data: Path, out: Path, include: dict[str, str]) -> None:
        for family in tables.BUNDLES:
            target = out / (family + tables.BUNDLE_SUFFIX)
            for member in tables.write_bundle(data / family, target):
                include[str(target / member)] = f"quantadvise/data/{family}{tables.BUNDLE_SUFFIX}/{member}"
        for src in sorted(p for p in data.rglob("*") if p.is_file()):
            rel = src.relative_to(data).as_posix()
            if rel.split("/", 1)[0] in tables.BUNDLES:
                continue  # in its family's zip
            inflated = tables.inflated_name(rel)
            if inflated is not None:  # a gzipped kernel table ships inflated (the wheel deflates it again)
                target = out / inflated
                target.parent.mkdir(parents=True, exist_ok=True)
                text = gzip.decompress(src.read_bytes())
                target.write_bytes(text)
                include[str(target)] = f"quantadvise/data/{inflated}"
                index = tables.cells_index(text.decode("utf-8"))
                if index is not None:  # a GEMM table: where each cell's line starts
                    cells = out / (inflated + tables.CELLS_SUFFIX)
                    cells.write_bytes(index)
                    include[str(cells)] = f"quantadvise/data/{inflated}{tables.CELLS_SUFFIX}"
                continue
            include[str(src)] = f"quantadvise/data/{rel}"
            if src.suffix == ".yaml":
                target = out / (rel + tables.SUFFIX)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tables.compile_yaml(src.read_bytes()))
                include[str(target)] = f"quantadvise/data/{rel}{tables.SUFFIX}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        compiled = getattr(self, "_compiled", None)
        if compiled is not None:
            shutil.rmtree(compiled, ignore_errors=True)  # no temp-dir litter per install
