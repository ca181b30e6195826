"""The tuned fused-MoE Triton configurations a release ships, and the file its kernel looks for
(engines/moe_configs.py, data/moe_configs/).

Expected names are written from the engines' own code: vLLM 0.34.0 ``fused_moe.py:1178-1189``
(``f"E={E},N={N},device_name={device_name}{dtype_selector}{block_shape_selector}.json"``, the block shape's spaces
removed by ``.replace(" ", "")`` at :1186-1188, every H200-family device named ``NVIDIA_H200`` at :1182-1184) and
SGLang 0.5.23 ``fused_moe_triton_config.py:36-51`` (the same name, the block shape as Python prints a list, no
H200 rule); E and N are ``E, _, N = w2_shape`` (vLLM :1513, SGLang :284): the experts one GPU holds and its share of
the experts' intermediate size."""

from __future__ import annotations

import json

import pytest

from quantadvise import catalog
from quantadvise.engines.moe_configs import config_stem, moe_tuning

H100 = "NVIDIA H100 80GB HBM3"  # torch.cuda.get_device_name() on an H100 SXM (hardware.yaml, device_name)


def test_names_as_each_engine_writes_them():
    v, s = catalog.moe_configs("vllm", "0.34.0"), catalog.moe_configs("sglang", "0.5.23")
    assert config_stem(v, "triton-moe", experts=128, inter=768, device_name=H100) == \
        "E=128,N=768,device_name=NVIDIA_H100_80GB_HBM3"
    assert config_stem(v, "triton-fp8-block-moe", experts=256, inter=128, device_name=H100) == \
        "E=256,N=128,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128,128]"
    assert config_stem(s, "triton-fp8-block-moe", experts=256, inter=128, device_name=H100) == \
        "E=256,N=128,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128, 128]"
    # vLLM names every H200-family GPU NVIDIA_H200 (an H200 NVL reports "NVIDIA H200 NVL"); SGLang does not
    assert config_stem(v, "triton-moe", experts=8, inter=14336, device_name="NVIDIA H200 NVL") == \
        "E=8,N=14336,device_name=NVIDIA_H200"
    assert config_stem(s, "triton-moe", experts=8, inter=14336, device_name="NVIDIA H200 NVL") == \
        "E=8,N=14336,device_name=NVIDIA_H200_NVL"
    # a kernel that reads no such file (Marlin, FlashInfer, OAI Triton MXFP4)
    assert config_stem(v, "marlin-moe", experts=128, inter=768, device_name=H100) is None
    assert moe_tuning(v, "triton-mxfp4-moe", experts=128, inter=2880, device_name=H100) is None


def test_what_the_releases_ship():
    v = catalog.moe_configs("vllm", "0.34.0")
    # Qwen3-30B-A3B (128 experts of intermediate 768) on one GPU: vLLM 0.34.0 ships the H200's, not the H100's
    assert not moe_tuning(v, "triton-moe", experts=128, inter=768, device_name=H100).found
    assert moe_tuning(v, "triton-moe", experts=128, inter=768, device_name="NVIDIA H200").found
    # ... and at tensor parallel 2 (768 / 2 = 384 per GPU) the H100's
    assert moe_tuning(v, "triton-moe", experts=128, inter=384, device_name=H100).found
    # SGLang ships it for the H100 in two Triton versions' folders (triton_3_2_0, triton_3_7_1): any folder serves
    s = catalog.moe_configs("sglang", "0.5.23")
    assert moe_tuning(s, "triton-moe", experts=128, inter=768, device_name=H100).found
    assert catalog.moe_configs("vllm", "0.29.0") is None  # no list for a release without a kernel table


@pytest.mark.parametrize(("gpu", "gpus", "cautioned"), [("h100", 1, True), ("h200", 1, False), ("h100", 2, False)])
def test_recommend_says_when_the_experts_run_default_tiles(cli, gpu, gpus, cautioned):
    r = cli("recommend", "-m", "Qwen/Qwen3-30B-A3B", "--gpu", gpu, "--gpus", str(gpus), "--batch", "8",
            "--candidates", "bf16", "-f", "json")
    assert r.code == 0, r.stderr
    bf16 = next(a for a in r.json()["alternatives"] if a["scheme"] == "bf16")
    said = [c for c in bf16["cautions"] if "default tiles" in c]
    assert bool(said) == cautioned, bf16["cautions"]
    if cautioned:
        assert "E=128,N=768,device_name=NVIDIA_H100_80GB_HBM3.json" in said[0]
        assert '"Using default MoE config. Performance might be sub-optimal!"' in said[0]
        assert "vllm/model_executor/layers/fused_moe/fused_moe.py:" in said[0]


def test_a_dense_model_and_an_unnamed_gpu_say_nothing(cli):
    dense = cli("recommend", "--batch", "8", "--candidates", "bf16", "-f", "json").json()
    assert not any("default tiles" in c for a in dense["alternatives"] for c in a["cautions"])
    # the L4's torch device name is not on file: the file it would look for is not known, so nothing is said
    assert catalog.get_gpu("l4").device_name is None
    l4 = cli("recommend", "-m", "Qwen/Qwen3-30B-A3B", "--gpu", "l4", "--gpus", "4", "--candidates", "bf16",
             "-f", "json")
    assert l4.code == 0, l4.stderr
    assert not any("default tiles" in c for a in l4.json()["alternatives"] for c in a["cautions"])


def test_every_list_is_a_release_with_a_kernel_table():
    from quantadvise.catalog import loader

    stems = loader.family("moe_configs").stems()
    assert stems == loader.family("kernels").stems()  # one per release whose fused-MoE routes are known
    for stem in stems:
        engine, _, version = stem.partition("-")
        c = catalog.moe_configs(engine, version)
        assert (c.engine, c.version) == (engine, version) and len(c.configs) > 100
        assert json.dumps(c.configs) == json.dumps(sorted(c.configs))


def test_roofline_notes_it_once_per_scheme(cli):
    r = cli("roofline", "-m", "Qwen/Qwen3-30B-A3B", "--gpu", "h100", "-s", "bf16,fp8-block,w4a16", "--batch", "1",
            "-f", "json")
    assert r.code == 0, r.stderr
    said = [n for n in r.json()["notes"] if "default tiles" in n]
    # bf16 (triton-moe) and fp8-block (triton-fp8-block-moe) find no H100 file; w4a16's experts run Humming (no file)
    assert [("dtype=fp8_w8a8" in n) for n in said] == [False, True], said


@pytest.mark.parametrize(("gpu", "fires"), [("h100", True), ("h200", False)])
def test_the_gate_warns_where_the_release_ships_no_tiles(cli, tmp_path, monkeypatch, gpu, fires):
    (tmp_path / "serve.sh").write_text("vllm serve Qwen/Qwen3-30B-A3B --max-model-len 8192\n")
    monkeypatch.chdir(tmp_path)
    r = cli("check", ".", "--gpu", gpu, "--format", "json")
    assert r.code in (0, 1), r.stderr
    found = [f for f in r.json()["findings"] if f["rule_id"] == "QA205"]
    assert bool(found) == fires
    if fires:  # a warning at the model's line, in vLLM's words
        assert (found[0]["severity"], found[0]["file"], found[0]["line"]) == ("warning", "serve.sh", 1)
        assert "E=128,N=768,device_name=NVIDIA_H100_80GB_HBM3.json" in found[0]["message"]
