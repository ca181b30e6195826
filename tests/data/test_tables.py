"""The shipped data tables: schema-valid, sourced, dated, and inside the wheel."""

from __future__ import annotations

import gzip
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
    "checkpoints.yaml": ("checkpoints",),
    "speculators.yaml": ("speculators",),
    "known_issues.yaml": ("kv_issues",),
}


def test_every_table_validates(monkeypatch):
    # validate_all reads every table afresh inside trusted.checking(): every shipped() call is validated by
    # pydantic and the model built without validation held identical to it (tests/unit/test_trusted.py)
    from quantadvise.catalog import trusted

    seen: list[tuple[str, bool]] = []
    real = trusted._checked

    def spy(cls, doc):
        seen.append((cls.__name__, trusted._CHECKING))
        return real(cls, doc)

    monkeypatch.setattr(trusted, "_checked", spy)
    counts = catalog.validate_all()
    assert counts["schemes"] >= 15 and counts["kv_presets"] >= 5 and counts["models"] >= 12
    assert counts["gpus"] >= 15
    assert all(on for _, on in seen) and not trusted._CHECKING
    assert {"EngineData", "FormatLibrary", "KernelTable", "FlagVocabulary", "TableIndex", "Published", "GPU",
            "SchemePreset", "KvPreset", "LoopTable", "StartupTable", "AccuracyRule", "PriceRow", "ModelRow",
            "KvIssue", "Speculator", "StreamFactors", "MoeConfigs"} <= {name for name, _ in seen}


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
    # every YAML table ships with its compiled JSON form (hatch_build.py); the release families only as one
    # compiled folder each, one member per table of the repository's data/<family>/
    yamls = sorted(n for n in names if n.startswith("quantadvise/data/") and n.endswith(".yaml"))
    assert len(yamls) >= 8 and all(n + ".json" in names for n in yamls), [n for n in yamls if n + ".json" not in names]
    from quantadvise.catalog import tables

    for family in tables.BUNDLES:
        assert not [n for n in names if n.startswith(f"quantadvise/data/{family}/")]
        prefix = f"quantadvise/data/{family}{tables.BUNDLE_SUFFIX}/"
        members = sorted(n.removeprefix(prefix) for n in names if n.startswith(prefix))
        expected = sorted(tables.member_name(p.relative_to(REPO / "data" / family).as_posix())
                          for p in (REPO / "data" / family).rglob("*.yaml"))
        assert members == expected
    # the gzipped kernel tables ship inflated (tables.inflated_name), each the text its .csv.gz holds, none gzipped
    gz = sorted((REPO / "data" / "kernel_tables").rglob("*.csv.gz"))
    assert len(gz) >= 30
    assert not [n for n in names if n.startswith("quantadvise/data/kernel_tables/") and n.endswith(".gz")]
    for src in gz:
        rel = src.relative_to(REPO / "data").as_posix()
        with zipfile.ZipFile(whl) as z:
            assert z.read("quantadvise/data/" + rel[:-len(".gz")]) == gzip.decompress(src.read_bytes()), rel
    # Imported from the unpacked wheel (as an installed package would be), it finds its own data.
    code = (
        "import quantadvise.catalog as r, quantadvise as a;"
        "print(r.data_dir());"
        "print(a.size('meta-llama/Llama-3-8B', bits=4).total_bytes);"
        "print(r.get_engine('vllm', '0.21.0').version, r.option_list('vllm', '0.21.0', True).launcher.version,"
        " len(r.engine_versions('sglang')));"
        "print(r.bench_options('vllm', '0.21.0').version);"
        "t = r.kernel_tables('h100-sxm'); print(len(t.get(t.index.tables[0].id).ms));"
        "import sys; print('yaml' in sys.modules);"
        # every GEMM table read through its cell index (hatch_build.py) holds the cells its text parses to
        "from quantadvise.perf.kernel_tables import parse_gemm;"
        "print(all(t.get(m.id).cells == parse_gemm(m, t._text(m)).cells and t._cells(m, t._text(m)) is not None"
        " for m in (*t.index.tables, *t.index.quant)))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
        env={"PYTHONPATH": str(tmp_path / "site"), "HF_HUB_OFFLINE": "1", "PATH": ""},
    )
    assert res.returncode == 0, res.stderr
    data_path, total, release, sidecar, sglang, bench, columns, parsed_yaml, indexed = res.stdout.split()
    assert data_path.startswith(str(tmp_path / "site"))
    assert int(total) == 5_727_854_592
    assert (release, sidecar) == ("0.21.0", "0.21.0")  # read from data/engines-compiled/ and data/flags-compiled/
    assert bench == "0.21.0"  # vllm bench serve's options, data/flags/bench/vllm-0.21.0.yaml in data/flags-compiled/
    assert int(sglang) == len(list((REPO / "data" / "engines").glob("sglang-*.yaml")))
    # a kernel table read from its inflated form: its header's M columns (the first table of data/kernel_tables/h100-sxm.yaml)
    index = yaml.safe_load((REPO / "data" / "kernel_tables" / "h100-sxm.yaml").read_text())
    first = REPO / "data" / "kernel_tables" / "h100-sxm" / index["tables"][0]["file"]
    header = next(ln for ln in gzip.decompress(first.read_bytes()).decode().splitlines() if not ln.startswith("#"))
    assert int(columns) == len(header.split(",")) - 2  # n,k then one column per M
    assert parsed_yaml == "False"  # the tables came from their compiled form: no YAML parsed
    assert indexed == "True"
    # a cell index beside every GEMM table (header n,k,...), none beside the attention and fused-MoE tables
    for src in gz:
        rel = "quantadvise/data/" + src.relative_to(REPO / "data").as_posix()[:-len(".gz")]
        gemm = gzip.decompress(src.read_bytes()).decode().split("\n")
        header = next(ln for ln in gemm if not ln.startswith("#"))
        assert (rel + tables.CELLS_SUFFIX in names) == header.startswith("n,k,"), rel


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

    # the reference document: PyYAML's safe loader (its libyaml build where installed, as compile_yaml uses;
    # the compiled form's round trip through JSON — dates as ISO strings — is what is checked here)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    paths = sorted((REPO / "data").rglob("*.yaml"))
    assert len(paths) >= 8
    for path in paths:
        raw = path.read_bytes()
        ok, doc = tables.load_compiled(raw, tables.compile_yaml(raw))
        assert ok and doc == plain(yaml.load(raw, Loader=loader)), path.name  # noqa: S506 - a safe loader


def test_a_bundled_family_reads_as_its_yaml_folder(tmp_path, monkeypatch):
    # the wheel's data/<family>-compiled/ (tables.write_bundle) and the checkout's data/<family>/ give the same
    # documents (dates as ISO strings in the compiled form, which pydantic reads back); a member is read only when
    # asked for, and a name that is not a table's path inside the family finds none
    from quantadvise.catalog import loader, tables

    root = tmp_path / "data"
    src = root / "kernels"
    (src / "carried").mkdir(parents=True)
    (src / "vllm-1.0.0.yaml").write_text("engine: vllm\nas_of: 2026-01-02\nrows: [1, 2]\n")
    (src / "carried" / "vllm-0.9.0.yaml").write_text("carried_from: vllm-1.0.0\n")
    assert tables.write_bundle(src, root / "kernels-compiled") == ["carried/vllm-0.9.0.json", "vllm-1.0.0.json"]
    monkeypatch.setattr(loader, "data_dir", lambda: root)
    folder = loader.Family("kernels")
    from_yaml = (folder.stems(), folder.stems("carried"), folder.read("vllm-1.0.0"))
    import shutil

    shutil.move(str(src), str(tmp_path / "moved"))  # only the bundle is left, as in a wheel
    bundle = loader.Family("kernels")
    assert from_yaml[:2] == (bundle.stems(), bundle.stems("carried")) == (["vllm-1.0.0"], ["vllm-0.9.0"])
    assert from_yaml[2]["rows"] == [1, 2] and str(from_yaml[2]["as_of"]) == "2026-01-02"
    assert bundle.read("vllm-1.0.0") == {"engine": "vllm", "as_of": "2026-01-02", "rows": [1, 2]}
    assert bundle.read("carried/none") is None and bundle.read("vllm-0.9.0", "carried") == {"carried_from": "vllm-1.0.0"}
    assert bundle.read("carried/vllm-0.9.0") == bundle.read("vllm-0.9.0", "carried")  # as the YAML folder reads it
    (root / "secret.json").write_text('{"format": "quantadvise-table/1", "data": 1}')
    for outside in ("../secret", "/secret", "carried/../../secret", "", "."):
        assert bundle.read(outside) is None, outside


@pytest.mark.parametrize("gpu", ["a100-80gb", "b200", "b300", "gb200", "gb300", "h100-sxm", "h200", "l40s"])
def test_the_recorded_bands_are_the_held_out_checks_of_the_tables_on_file(gpu):
    # data/kernel_tables/bands.yaml (what every prediction's ± reads) and checks/<gpu>.yaml are written by
    # tools/import_aiconfigurator.py (--tables, or --checks after a change to the lookup); a change to the lookup
    # or a table that is not followed by them would leave every band stale. Recomputed here from the tables as
    # `quantadvise validate <gpu>` recomputes them.
    from quantadvise.calibration.lookup_checks import gpu_checks

    root = REPO / "data" / "kernel_tables"
    recorded = yaml.safe_load((root / "bands.yaml").read_text(encoding="utf-8"))["gpus"][gpu]
    checks = yaml.safe_load((root / "checks" / f"{gpu}.yaml").read_text(encoding="utf-8"))
    got = gpu_checks(catalog.kernel_tables(gpu), catalog.get_gpu(gpu), catalog.default_perf_profile())
    keys = ("n", "median", "p68", "p90", "max")
    assert {b: {k: v[k] for k in keys} for b, v in got["bands"].items()} == recorded
    for tid, c in got["kernels"].items():
        assert {k: c["steps"][k] for k in keys} == {k: checks["kernels"][tid]["steps"][k] for k in keys}, tid


@pytest.mark.parametrize("gpu", ["a100-80gb", "b200", "b300", "gb200", "gb300", "h100-sxm", "h200", "l40s"])
def test_an_attention_tables_recorded_floor_and_its_configurations_read_alone_are_its_rows(gpu):
    # the index records each decode attention table's launch floor (floor_us, written by the exporter) so that a
    # lookup splits only the head configuration it prices out of the text: the floor must be the one every row
    # gives (the median over configurations of the smallest batch's first time), and each configuration read
    # alone must be the rows a full read gives it
    from quantadvise.perf.attention_tables import parse_attention

    tables = catalog.kernel_tables(gpu)
    metas = tables.index.attention
    assert metas and all(m.floor_us is not None for m in metas)
    for meta in metas:
        text = tables._text(meta)
        full = parse_attention(meta.model_copy(update={"floor_us": None}), text)
        assert meta.floor_us * 1e-6 == pytest.approx(full.floor_s, rel=1e-9), meta.id
        lazy = parse_attention(meta, text)
        for key, rows in full.cells.items():
            assert lazy.grid(*key) == full.grid(*key), (meta.id, key)
            assert lazy._config(key) == rows, (meta.id, key)
        assert lazy.grid(7, 7, 7, "bf16") is None  # a configuration the table lacks
        assert lazy.cells == full.cells


@pytest.mark.parametrize("gpu", ["a100-80gb", "b200", "gb200", "h100-sxm", "h200", "l40s"])
def test_each_tables_recorded_stream_is_its_fastest_call_too_large_to_stay_cached(gpu):
    # stream_bytes_per_s (written by the exporter): the fastest weight stream at a cell's first timed M among the cells
    # whose weight is at least twice the GPU's L2 (data/hardware.yaml), recomputed here from every cell of the file
    tables = catalog.kernel_tables(gpu)
    l2 = catalog.get_gpu(gpu).l2_cache_bytes
    assert tables.index.tables
    for meta in tables.index.tables:
        t = tables.get(meta.id)
        best = 0.0
        for (n, k), row in t.cells.items():
            w = n * k * meta.weight_bytes
            if w >= 2 * l2:
                best = max(best, w / next(x for x in row if x is not None))
        assert meta.stream_bytes_per_s == pytest.approx(best, rel=5e-4), meta.id
        assert meta.stream_bytes_per_s < catalog.get_gpu(gpu).bandwidth_bytes_per_s, meta.id  # below the datasheet
    # a grouped-query decode attention table: its fastest call whose cache (batch x KV length x K and V of kv_heads x
    # head_dim at 2 bytes, 1 for fp8) is at least twice the L2; MLA tables carry none (one latent, no K and V)
    for meta in tables.index.attention:
        if meta.kernel != "attention-decode":
            assert meta.stream_bytes_per_s is None, meta.id
            continue
        t = tables.attention(meta.engine)
        best = 0.0
        for (_h, kvh, d, dt), rows in t.cells.items():
            per_token = 2 * kvh * d * (1 if dt == "fp8" else 2)
            for b, row in rows.items():
                for x, us in zip(t.kvs, row, strict=True):
                    if us is not None and b * x * per_token >= 2 * l2:
                        best = max(best, b * x * per_token / us)
        assert meta.stream_bytes_per_s == pytest.approx(best, rel=5e-4), meta.id


@pytest.mark.parametrize("gpu", ["b300", "gb300"])
def test_a_gpu_whose_l2_is_not_on_file_records_no_stream(gpu):
    # the stream a table sustains from memory is read among the cells at least twice the GPU's L2; B300 and GB300
    # have no published L2 size (data/hardware.yaml: null), so no cell can be told cached from streamed and no table
    # records a stream (the lookup reads the tables as published, as on B200, whose tables time none faster)
    assert catalog.get_gpu(gpu).l2_cache_bytes is None
    tables = catalog.kernel_tables(gpu)
    assert tables.index.tables and tables.index.attention
    assert all(m.stream_bytes_per_s is None for m in (*tables.index.tables, *tables.index.attention))
