"""The shipped data tables: schema-valid, sourced, dated, and inside the wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from quantadvise import catalog

REPO = Path(__file__).resolve().parents[2]
TABLES = {
    "schemes.yaml": ("schemes", "kv_presets", "layouts"),
    "hardware.yaml": ("gpus",),
    "models.yaml": ("models",),
}


def test_every_table_validates():
    counts = catalog.validate_all()
    assert counts["schemes"] >= 15 and counts["kv_presets"] >= 5 and counts["models"] >= 12
    assert counts["gpus"] >= 15


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_row_has_source_and_as_of(table):
    doc = yaml.safe_load((REPO / "data" / table).read_text())
    for section in TABLES[table]:
        for row in doc[section]:
            assert row.get("source"), f"{table}:{section}:{row.get('id')} has no source"
            assert row.get("as_of"), f"{table}:{section}:{row.get('id')} has no as_of"


def test_unknown_keys_in_data_rows_are_rejected():
    from pydantic import ValidationError

    from quantadvise.hardware import GPU

    row = yaml.safe_load((REPO / "data" / "hardware.yaml").read_text())["gpus"][0]
    with pytest.raises(ValidationError):
        GPU.model_validate({**row, "bandwith": 1})


def test_h100_sxm_has_the_chapter_constants():
    # The chapter: 989.4 TFLOP/s bf16, 1979 fp8, 3.35 TB/s.
    h = catalog.get_gpu("H100-SXM-80GB")
    assert h.peak("bf16") == 989.4e12 and h.peak("fp8") == 1979e12
    assert h.bandwidth_bytes_per_s == 3.35e12


@pytest.mark.slow
def test_wheel_contains_data_and_finds_it(tmp_path):
    out = tmp_path / "wheel"
    tmp = tmp_path / "tmp"  # the build's temporary directory: the hook's compiled tables leave nothing behind
    tmp.mkdir()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)],
        check=True,
        capture_output=True,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    assert not list(tmp.glob("quantadvise-tables-*"))
    (whl,) = out.glob("quantadvise-*.whl")
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        z.extractall(tmp_path / "site")
    for required in ("quantadvise/data/schemes.yaml", "quantadvise/data/hardware.yaml", "quantadvise/data/models.yaml",
                     "quantadvise/data/models/meta-llama/Meta-Llama-3-8B.json"):
        assert required in names
    # every YAML table ships with its compiled JSON form (hatch_build.py)
    yamls = sorted(n for n in names if n.startswith("quantadvise/data/") and n.endswith(".yaml"))
    assert len(yamls) >= 8 and all(n + ".json" in names for n in yamls), [n for n in yamls if n + ".json" not in names]
    # Imported from the unpacked wheel (as an installed package would be), it finds its own data.
    code = (
        "import quantadvise.catalog as r, quantadvise as a;"
        "print(r.data_dir());"
        "print(a.size('meta-llama/Llama-3-8B', bits=4).total_bytes);"
        "import sys; print('yaml' in sys.modules)"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
        env={"PYTHONPATH": str(tmp_path / "site"), "HF_HUB_OFFLINE": "1", "PATH": ""},
    )
    assert res.returncode == 0, res.stderr
    data_path, total, parsed_yaml = res.stdout.split()
    assert data_path.startswith(str(tmp_path / "site"))
    assert int(total) == 5_727_854_592
    assert parsed_yaml == "False"  # the tables came from their compiled form: no YAML parsed


def test_compiled_tables_equal_the_yaml_and_never_shadow_an_edit(tmp_path):
    # The wheel ships <table>.yaml.json beside each table (hatch_build.py). The loader takes it only
    # when it was compiled from exactly the YAML beside it: dates come back as ISO strings (pydantic
    # reads them), everything else is identical; an edited table is parsed again; a corrupt or
    # foreign compiled file is ignored, never an error. No pickle: nothing loaded can run code.
    import datetime

    from quantadvise.catalog import tables

    table = tmp_path / "t.yaml"
    table.write_text("rows: [{id: a, as_of: 2026-11-29, x: 1.5, ok: true, none: null}]\n")
    compiled = tmp_path / "t.yaml.json"
    compiled.write_bytes(tables.compile_yaml(table.read_bytes()))
    doc = catalog.data_yaml(table, "t.yaml")
    assert doc == {"rows": [{"id": "a", "as_of": "2026-11-29", "x": 1.5, "ok": True, "none": None}]}
    assert yaml.safe_load(table.read_text())["rows"][0]["as_of"] == datetime.date(2026, 11, 29)
    table.write_text("rows: [{id: b}, {id: c}]\n")  # edited after compiling: the YAML wins
    assert [r["id"] for r in catalog.data_yaml(table, "t.yaml")["rows"]] == ["b", "c"]
    compiled.write_bytes(b"\x80 not json")
    assert catalog.data_yaml(table, "t.yaml")["rows"][0]["id"] == "b"
    compiled.write_text('{"format": "quantadvise-table/1", "sha256": "0", "data": {"rows": []}}')
    assert catalog.data_yaml(table, "t.yaml")["rows"][0]["id"] == "b"


def test_every_shipped_table_compiles_to_the_same_document():
    import datetime

    from quantadvise.catalog import tables

    def plain(x):
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        if isinstance(x, list):
            return [plain(v) for v in x]
        return x.isoformat() if isinstance(x, datetime.date) else x

    paths = sorted((REPO / "data").rglob("*.yaml"))
    assert len(paths) >= 8
    for path in paths:
        raw = path.read_bytes()
        ok, doc = tables.load_compiled(raw, tables.compile_yaml(raw))
        assert ok and doc == plain(yaml.safe_load(raw)), path.name
