"""The shipped data tables: schema-valid, sourced, dated, and inside the wheel."""

from __future__ import annotations

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
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)],
        check=True,
        capture_output=True,
    )
    (whl,) = out.glob("quantadvise-*.whl")
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        z.extractall(tmp_path / "site")
    for required in ("quantadvise/data/schemes.yaml", "quantadvise/data/hardware.yaml", "quantadvise/data/models.yaml",
                     "quantadvise/data/models/meta-llama/Meta-Llama-3-8B.json"):
        assert required in names
    # Imported from the unpacked wheel (as an installed package would be), it finds its own data.
    code = (
        "import quantadvise.catalog as r, quantadvise as a;"
        "print(r.data_dir());"
        "print(a.size('meta-llama/Llama-3-8B', bits=4).total_bytes)"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
        env={"PYTHONPATH": str(tmp_path / "site"), "HF_HUB_OFFLINE": "1", "PATH": ""},
    )
    assert res.returncode == 0, res.stderr
    data_path, total = res.stdout.split()
    assert data_path.startswith(str(tmp_path / "site"))
    assert int(total) == 5_727_854_592


def test_parsed_tables_are_cached_and_invalidated(tmp_path, monkeypatch):
    # The cache returns exactly what parsing returns, and a changed file is parsed again.
    monkeypatch.setenv("QUANTADVISE_CACHE_DIR", str(tmp_path / "cache"))
    table = tmp_path / "t.yaml"
    table.write_text("rows: [{id: a, as_of: 2026-11-29}]\n")
    first = catalog.data_yaml(table, "t.yaml")
    assert list((tmp_path / "cache").glob("*.pickle"))
    assert catalog.data_yaml(table, "t.yaml") == first == yaml.safe_load(table.read_text())
    table.write_text("rows: [{id: b, as_of: 2026-11-30}, {id: c, as_of: 2026-12-01}]\n")
    assert [r["id"] for r in catalog.data_yaml(table, "t.yaml")["rows"]] == ["b", "c"]
    # a corrupt cache entry is ignored, never an error
    for f in (tmp_path / "cache").glob("*.pickle"):
        f.write_bytes(b"not a pickle")
    assert catalog.data_yaml(table, "t.yaml")["rows"][0]["id"] == "b"
    # caching can be switched off
    monkeypatch.setenv("QUANTADVISE_CACHE_DIR", "off")
    assert catalog.cache_dir() is None
    assert catalog.data_yaml(table, "t.yaml")["rows"][0]["id"] == "b"
