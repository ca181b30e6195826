"""`quantadvise size` end to end through the real entry point: output, JSON, errors, exit codes."""

from __future__ import annotations

import json

import pytest


def test_card_example_shows_chapter_number(cli):
    # The design card's example, no symmetry flag: a scale and a zero-point per group -> 5.73 GB.
    r = cli("size", "meta-llama/Llama-3-8B", "--bits", "4", "--group", "128")
    assert r.code == 0, r.stderr
    assert "5.73 GB" in r.stdout and "16.06 GB bf16" in r.stdout and "2.80x" in r.stdout
    assert "4.156 effective bits" in r.stdout
    assert r.stderr == ""


def test_sym_flag(cli):
    r = cli("size", "meta-llama/Llama-3-8B", "--bits", "4", "--group", "128", "--sym", "-f", "json")
    assert r.code == 0
    assert r.json()["effective_bits_per_weight"] == pytest.approx(4.125)


def test_lm_head_flag(cli):
    r = cli("size", "meta-llama/Llama-3-8B", "--bits", "4", "--lm-head", "--format", "json")
    assert round(r.json()["compression_ratio"], 2) == 3.24


def test_json_schema_keys(cli):
    r = cli("size", "meta-llama/Llama-3-8B", "--scheme", "awq", "--format", "json")
    assert r.code == 0
    doc = json.loads(r.stdout)  # stdout is the report and nothing else
    for key in ("schema_version", "total_params", "total_bytes", "baseline_bytes", "compression_ratio",
                "effective_bits_per_weight", "components"):
        assert key in doc
    for comp in doc["components"]:
        assert {"component", "params", "bits_per_param", "bytes"} <= set(comp)
    assert sum(c["bytes"] for c in doc["components"]) == doc["total_bytes"]


def test_json_warnings_go_to_stderr(cli, tmp_path):
    cfg = {
        "model_type": "mystery", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "vocab_size": 1000, "tie_word_embeddings": False,
    }
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    r = cli("size", str(p), "--format", "json")
    assert r.code == 0
    json.loads(r.stdout)
    assert r.stderr.startswith("warning: model_type 'mystery'")


def test_kv_and_gpu(cli):
    r = cli("size", "llama-3-8b", "--kv-dtype", "kv-fp8", "--ctx", "8192", "--batch", "16", "--gpu", "h100",
            "-f", "json")
    doc = r.json()
    assert doc["kv"]["bytes"] == 65_536 * 8192 * 16  # fp8 KV: 2 x 8 x 128 x 32 layers = 65,536 B/token
    assert doc["fit"]["gpu"] == "h100-sxm" and doc["fit"]["fits"] is True
    t = cli("size", "llama-3-8b", "--kv-dtype", "kv-fp8", "--ctx", "8192", "--batch", "16", "--gpu", "h100")
    assert "fits" in t.stdout and "KV cache (kv-fp8)" in t.stdout


def test_local_folder(cli, tmp_path):
    from quantadvise import catalog

    row = catalog.find_bundled_model("meta-llama/Llama-3-8B")
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(catalog.bundled_config(row)))
    r = cli("size", str(folder), "--bits", "4", "-f", "json")
    assert r.code == 0 and r.json()["model"]["source"] == "local"
    assert r.json()["total_bytes"] == 5_727_854_592


def test_hf_cache_is_used_offline(cli, tmp_path, monkeypatch):
    # A config placed in the HF cache layout resolves with HF_HUB_OFFLINE=1 and no network.
    from quantadvise import catalog

    row = catalog.find_bundled_model("Qwen/Qwen2.5-7B")
    hub = tmp_path / "hf-home" / "hub" / "models--someorg--custom-7b"
    snap = hub / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (hub / "refs").mkdir()
    (hub / "refs" / "main").write_text("abc123")
    (snap / "config.json").write_text(json.dumps(catalog.bundled_config(row)))
    r = cli("size", "someorg/custom-7b", "-f", "json")
    assert r.code == 0, r.stderr
    assert r.json()["model"]["source"] == "cache"
    assert r.json()["total_params"] == 7_615_616_512


@pytest.mark.parametrize(
    "args, needle",
    [
        (["size", "nosuch-model"], "unknown model 'nosuch-model'"),
        (["size", "llama-3-8", "--bits", "4"], "did you mean"),
        (["size", "meta-llama/Llama-3-8B", "--bits", "4", "--group", "100"], "does not divide"),
        (["size", "meta-llama/Llama-3-8B", "--bits", "0"], "--bits must be between 2 and 8"),
        (["size", "meta-llama/Llama-3-8B", "--bits", "17"], "--bits must be between 2 and 8"),
        (["size", "meta-llama/Llama-3-8B", "--bits", "four"], "--bits must be an integer, got 'four'"),
        (["size", "meta-llama/Llama-3-8B", "--scheme", "w4a61"], "unknown scheme 'w4a61'"),
        (["size", "meta-llama/Llama-3-8B", "--gpu", "h1000"], "unknown GPU 'h1000'"),
        (["size", "meta-llama/Llama-3-8B", "--kv-dtype", "fp9"], "unknown KV cache dtype"),
        (["size", "someorg/not-cached"], "HF_HUB_OFFLINE is set"),
        (["size", "meta-llama/Llama-3-8B", "--scheme", "awq", "--bits", "4"], "either --scheme or --bits"),
        (["size", "meta-llama/Llama-3-8B", "--scheme", "awq", "--sym"], "--sym/--asym apply to --bits"),
        (["size", "--nope"], "No such option"),
    ],
)
def test_bad_input_one_line_exit_2(cli, args, needle):
    r = cli(*args)
    assert r.code == 2, r
    assert r.stdout == ""
    assert needle in r.stderr
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "content, needle",
    [
        ("{not json", "invalid JSON at line 1"),
        ("[1, 2]", "expected a JSON object"),
        ('{"model_type": "llama"}', "required field 'hidden_size' is missing"),
        ('{"model_type": "llama", "hidden_size": "big", "num_hidden_layers": 2}', "'hidden_size' must be an integer"),
        ('{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 5, '
         '"vocab_size": 10, "intermediate_size": 8}', "not divisible by num_attention_heads"),
    ],
)
def test_malformed_config_json(cli, tmp_path, content, needle):
    p = tmp_path / "config.json"
    p.write_text(content)
    r = cli("size", str(p))
    assert r.code == 2 and needle in r.stderr and r.stderr.count("\n") == 1


def test_binary_junk_is_refused(cli, tmp_path):
    p = tmp_path / "model.safetensors"
    p.write_bytes(b"\x00\xff" * 1000)
    r = cli("size", str(p))
    assert r.code == 2 and "not a UTF-8 text file" in r.stderr


def test_scheme_yaml_file(cli, tmp_path):
    good = tmp_path / "my.yaml"
    good.write_text(
        "id: int6-g64\nweight: {format: int6, scale: {format: fp16, group: g64}}\n"
    )
    r = cli("size", "meta-llama/Llama-3-8B", "--scheme", str(good), "-f", "json")
    assert r.code == 0, r.stderr
    assert r.json()["effective_bits_per_weight"] == pytest.approx(6 + 16 / 64)
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: x\nweight: {format: int4, scale: {format: fp16, group: g64}}\nwieght_bits: 4\n")
    r = cli("size", "meta-llama/Llama-3-8B", "--scheme", str(bad))
    assert r.code == 2 and "wieght_bits" in r.stderr and "unknown key" in r.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("id: [unclosed\n")
    r = cli("size", "meta-llama/Llama-3-8B", "--scheme", str(broken))
    assert r.code == 2 and "invalid YAML" in r.stderr and "line" in r.stderr


def test_version_and_help(cli):
    r = cli("--version")
    assert r.code == 0 and r.stdout.startswith("quantadvise ")
    h = cli("size", "--help")
    assert h.code == 0 and "--bits" in h.stdout and "--kv-dtype" in h.stdout


@pytest.mark.parametrize(
    ("columns", "wide", "golden"),
    [("80", False, "size_llama3_8b_w4_g128_80.txt"), ("200", False, "size_llama3_8b_w4_g128_200.txt"),
     ("80", True, "size_llama3_8b_w4_g128.txt")],
)
def test_golden_table(cli, monkeypatch, columns, wide, golden):
    # The human table is deterministic for a given width (COLUMNS; --wide: no limit); its numbers are
    # checked in test_sizing. Regenerate: `COLUMNS=80 quantadvise size meta-llama/Llama-3-8B --bits 4
    # --group 128 > tests/golden/size_llama3_8b_w4_g128_80.txt` (and 200; --wide for the unsuffixed one).
    from pathlib import Path

    monkeypatch.setenv("COLUMNS", columns)
    r = cli("size", "meta-llama/Llama-3-8B", "--bits", "4", "--group", "128", *(["--wide"] if wide else []))
    assert r.stdout == (Path(__file__).resolve().parents[1] / "golden" / golden).read_text()
