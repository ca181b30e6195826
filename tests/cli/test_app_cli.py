"""The command line itself: bare `quantadvise`, --version in the help, grouped commands, shell
completion of bundled names, and `quantadvise list`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def test_bare_quantadvise_prints_the_help_and_exits_0(cli):
    r = cli()
    assert r.code == 0 and r.stderr == ""
    assert r.stdout.startswith("Usage: quantadvise [OPTIONS] COMMAND [ARGS]...")
    # grouped: plan, check, measure, list — each command once, in its group
    sections = [line.rstrip(":") for line in r.stdout.splitlines() if line and not line.startswith(" ")
                and line.endswith(":")]
    assert sections == ["Options", "Plan", "Check", "Measure", "List"]
    for name in ("recommend", "size", "roofline", "inspect", "engines", "check", "accuracy", "calibrate",
                 "validate", "list"):
        assert sum(1 for line in r.stdout.splitlines() if line.strip().startswith(name + " ")) == 1, name


def test_help_lists_version_and_completion(cli):
    r = cli("--help")
    assert r.code == 0
    assert "-V, --version" in r.stdout and "--install-completion" in r.stdout
    v = cli("--version")
    from quantadvise import __version__

    assert (v.code, v.stdout) == (0, f"quantadvise {__version__}\n")


def _complete(cli, monkeypatch, words: str, cword: int) -> list[str]:
    monkeypatch.setenv("_QUANTADVISE_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(cword))
    r = cli(*words.split()[1:])
    return r.stdout.split()


def test_completion_of_model_gpu_and_scheme_names(cli, monkeypatch):
    models = yaml.safe_load((REPO / "data" / "models.yaml").read_text())["models"]
    names = [n for m in models for n in (m["id"], *m.get("aliases", ()))]
    want = sorted({n for n in names if n.lower().startswith("meta-llama/llama-3.1")})
    assert want  # the bundled table has Llama 3.1 ids
    got = _complete(cli, monkeypatch, "quantadvise size meta-llama/Llama-3.1", 2)
    assert sorted(got) == want
    gpus = yaml.safe_load((REPO / "data" / "hardware.yaml").read_text())["gpus"]
    want_gpus = sorted({n for g in gpus for n in (g["id"], *g.get("aliases", ())) if n.lower().startswith("l4")})
    assert sorted(_complete(cli, monkeypatch, "quantadvise recommend --gpu l4", 3)) == want_gpus
    assert "recommend" in _complete(cli, monkeypatch, "quantadvise rec", 1)


def test_list_gpus_matches_the_table(cli):
    r = cli("list", "gpus", "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    rows = yaml.safe_load((REPO / "data" / "hardware.yaml").read_text())["gpus"]
    assert [g["id"] for g in doc["gpus"]] == [g["id"] for g in rows]
    h100 = next(g for g in doc["gpus"] if g["id"] == "h100-sxm")
    # nvidia-smi on an H100 SXM reports 81,559 MiB of HBM3 (the datasheet's "80 GB"); datasheet:
    # 3.35 TB/s, 989.4 TFLOP/s dense bf16, 1,979 dense fp8
    assert h100["memory_bytes"] == 81_559 * 2**20
    assert h100["bandwidth_bytes_per_s"] == 3.35e12
    assert (h100["peak_flops_bf16"], h100["peak_flops_fp8"]) == (989.4e12, 1979e12)
    assert "h100" in h100["aliases"]
    table = cli("list", "gpus")
    assert table.code == 0 and table.stdout.splitlines()[0].split()[0] == "gpu"


def test_list_schemes_effective_bits(cli):
    doc = cli("list", "schemes", "--format", "json").json()
    by_id = {s["id"]: s for s in doc["schemes"]}
    # w4a16: 4-bit symmetric weights, one fp16 scale per 128 weights: 4 + 16/128 = 4.125 bits
    assert by_id["w4a16"]["effective_bits_per_weight"] == pytest.approx(4 + 16 / 128)
    # bf16 keeps 16-bit weights: nothing to count
    assert by_id["bf16"]["weight_bits"] is None and by_id["bf16"]["effective_bits_per_weight"] is None
    assert doc["effective_bits_shape"] == [4096, 4096]


@pytest.mark.parametrize("kind", ["models", "kv", "engines"])
def test_list_other_kinds(cli, kind):
    r = cli("list", kind, "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert doc["kind"] == kind and doc["schema_version"] == 1
    if kind == "models":
        rows = yaml.safe_load((REPO / "data" / "models.yaml").read_text())["models"]
        assert {m["id"]: m["params"] for m in doc["models"]} == {m["id"]: m["published_params"] for m in rows}
        llama = next(m for m in doc["models"] if m["id"] == "meta-llama/Meta-Llama-3-8B")
        config = json.loads((REPO / "data" / "models" / "meta-llama" / "Meta-Llama-3-8B.json").read_text())
        assert llama["max_context"] == config["max_position_embeddings"] == 8192
    if kind == "kv":
        fp8 = next(k for k in doc["kv_presets"] if k["id"] == "kv-fp8")
        assert fp8["bits"] == 8 and fp8["vllm_kv_cache_dtype"] == "fp8"
    if kind == "engines":
        files = sorted(p.stem for p in (REPO / "data" / "engines").glob("*.yaml"))
        listed = [f"{e['engine']}-{v}" for e in doc["engines"] for v in e["versions"]]
        assert set(listed) <= set(files) and listed


def test_list_unknown_kind_is_one_error_line(cli):
    r = cli("list", "flavours")
    assert r.code == 2 and r.stdout == ""
    assert r.stderr.startswith("Error: unknown listing 'flavours'") and r.stderr.count("\n") == 1


@pytest.mark.parametrize(("words", "cword", "expected"), [
    # data/hardware.yaml: h100-sxm's alias h100; data/models.yaml: meta-llama/Meta-Llama-3-8B
    ("quantadvise check --gpu h10", 3, "h100"),
    ("quantadvise check --model meta-llama/Meta", 3, "meta-llama/Meta-Llama-3-8B"),
    ("quantadvise calibrate --gpu h10", 3, "h100-sxm"),
    # comma lists complete their last item (data/schemes.yaml: w4a16)
    ("quantadvise roofline --scheme bf16,w4a1", 3, "bf16,w4a16"),
    ("quantadvise recommend --candidates bf16,w4a1", 3, "bf16,w4a16"),
    ("quantadvise check -q w4a1", 3, "w4a16"),
    ("quantadvise inspect meta-llama/Meta", 2, "meta-llama/Meta-Llama-3-8B"),
    # vLLM's --kv-cache-dtype fp8_e5m2 (data/schemes.yaml kv-fp8-e5m2)
    ("quantadvise inspect x --kv-cache-dtype fp8_e", 4, "fp8_e5m2"),
    ("quantadvise recommend --engine sg", 3, "sglang"),
    ("quantadvise recommend --task reas", 3, "reasoning"),
    ("quantadvise recommend --mode cont", 3, "continuous"),
    ("quantadvise list gp", 2, "gpus"),
    ("quantadvise engines sh", 2, "show"),
])
def test_completion_of_every_name_option(cli, monkeypatch, words, cword, expected):
    assert expected in _complete(cli, monkeypatch, words, cword)
