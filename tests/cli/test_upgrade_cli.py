"""``engines diff`` across two releases of one engine and ``check --upgrade-to``, end to end.

The expected changes follow the wheels on file (each quoted where it is asserted):
- vLLM 0.30.0 -> 0.33.0: ``--quantization fp8`` on a bf16 checkpoint becomes the deprecated online
  path (0.33.0 vllm/model_executor/model_loader/weight_utils.py:355-360 logs "--quantization fp8 is
  deprecated for online quantization; use --quantization fp8_per_tensor instead." and resolves
  fp8_per_tensor; 0.30.0's Fp8Config quantizes online without a word, fp8.py:190-195).
- SGLang 0.5.21 -> 0.5.23: a compressed-tensors NVFP4 (W4A4) checkpoint below SM100 goes from
  ``NotImplementedError("Current platform does not support w4a4 nvfp4 quantization.")`` (0.5.21
  compressed_tensors.py:726-728) to weight-only FP4 Marlin with a warning (0.5.23 :778-783).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_check_cli import make_repo

REPO = Path(__file__).resolve().parents[2]


def llama() -> dict:
    return json.loads((REPO / "data" / "models" / "meta-llama" / "Llama-3.1-8B.json").read_text())


def nvfp4_llama() -> dict:
    from quantadvise import catalog
    from quantadvise.advisor import plan

    cfg = llama()
    preset = catalog.scheme_preset("nvfp4")
    cfg["quantization_config"] = plan.quantization_config(catalog.scheme_from_preset(preset), preset.deploy)
    return cfg


def test_engines_diff_two_vllm_releases(cli):
    r = cli("engines", "diff", "vllm@0.30.0", "vllm@0.33.0", "--format", "json")
    assert r.code == 0, r.stderr
    d = r.json()
    assert (d["a"], d["b"]) == ("vLLM 0.30.0", "vLLM 0.33.0")
    # KV cache dtypes: 18 in 0.30.0, 22 in 0.33.0 (the ultraquant and three octave modes were added;
    # vllm/config/cache.py CacheDType in each wheel; the reference's history table says the same)
    assert d["counts"]["vLLM 0.30.0"]["kv_cache_dtypes"] == 18 and d["counts"]["vLLM 0.33.0"]["kv_cache_dtypes"] == 22
    assert sorted(d["kv_only_b"]) == ["octave_k3v3", "octave_k3v3_compact", "octave_k3v4", "ultraquant_4bit"]
    changed = {(c["section"], c["subject"]) for c in d["changed"]}
    # 0.33.0's model_arch_config_convertor.py:259-270 also normalizes MIXED_PRECISION; 0.30.0 raises on it
    assert ("config_rules", "modelopt-hf-quant-config-algo") in changed
    rule = next(c for c in d["changed"] if c["subject"] == "modelopt-hf-quant-config-algo")
    assert rule["added"] == ["[MIXED_PRECISION]"] and rule["removed"] == []
    assert ("dispatch", "w4a8-mxfp4") in changed  # CompressedTensorsW4A8Mxfp4 first returned in 0.32.0
    fp8 = [v for v in d["verdicts"] if v["probe"] == "bf16 + --quantization fp8" and v["before"] != "REFUSES: fp8"]
    # on every GPU fp8 runs on (vLLM Fp8Config min capability 75: the V100, sm70, is refused by both)
    assert len(fp8) >= 6 and all(v["before"] == "loads: fp8" and v["after"] == "loads, with warnings: fp8_per_tensor"
                                 for v in fp8)
    assert fp8[0]["added"] == ["[fp8_online_deprecated] --quantization fp8 is deprecated for online quantization; "
                               "use --quantization fp8_per_tensor instead."]
    assert d["probes_compared"] >= 100
    table = cli("engines", "diff", "vllm@0.30.0", "vllm@0.33.0").stdout
    assert "verdicts that changed" in table and "fp8_per_tensor" in table


def test_engines_diff_sglang_nvfp4_fallback_arrives_in_0_5_22(cli):
    d = cli("engines", "diff", "sglang@0.5.21", "sglang@0.5.22", "--format", "json").json()
    h100 = next(v for v in d["verdicts"] if v["probe"].startswith("nvfp4 checkpoint") and "sm90" in v["gpu"])
    assert h100["before"].startswith("REFUSES") and h100["after"].startswith("loads, with warnings")
    assert h100["removed"] == ["[nvfp4_w4a4_unsupported] Current platform does not support w4a4 nvfp4 quantization."]
    # two releases that behave alike on every probe show no verdict change
    same = cli("engines", "diff", "vllm@0.32.0", "vllm@0.33.0", "--format", "json").json()
    assert same["verdicts"] == [] and same["probes_compared"] > 0


def test_upgrade_gate_reports_what_changes(cli, tmp_path, monkeypatch):
    root = make_repo(tmp_path, {
        "quantadvise.yaml": "model: ./ckpt\ngpu: h100\nengine: vllm\nengine_version: 0.30.0\n"
                            "workload: {concurrency: 8, ctx: 4096}\n",
        "ckpt/config.json": llama(),
        "deploy/run.sh": "vllm serve ./ckpt --quantization fp8 --max-model-len 4096 --max-num-seqs 8\n",
    })
    monkeypatch.chdir(root)
    plain = cli("check", "deploy", "--format", "json")
    assert plain.code in (0, 1), plain.stderr
    assert not any(f["rule_id"] == "QA112" for f in plain.json()["findings"])
    r = cli("check", "deploy", "--upgrade-to", "vllm@0.33.0", "--format", "json")
    assert r.code in (0, 1), r.stderr
    doc = r.json()
    qa112 = [f for f in doc["findings"] if f["rule_id"] == "QA112"]
    assert len(qa112) == 1 and qa112[0]["severity"] == "warning"
    assert (qa112[0]["file"], qa112[0]["line"]) == ("deploy/run.sh", 1)
    msg = qa112[0]["message"]
    assert "upgrading vllm 0.30.0 -> 0.33.0" in msg and "method fp8 -> fp8_per_tensor" in msg
    assert "--quantization fp8 is deprecated for online quantization" in msg
    assert any("1 of 1 vllm deployment behave" in n for n in doc["notes"])
    # the pinned release's report is unchanged: the upgrade is judged on the side
    assert doc["targets"][0]["engine_version"] == "0.30.0"
    # --fail-on warning gates the upgrade PR
    assert cli("check", "deploy", "--upgrade-to", "vllm@0.33.0", "--fail-on", "warning").code == 1
    # the same from the config key
    (root / "quantadvise.yaml").write_text((root / "quantadvise.yaml").read_text() + "upgrade_to: vllm@0.33.0\n")
    assert any(f["rule_id"] == "QA112" for f in cli("check", "deploy", "--format", "json").json()["findings"])


def test_upgrade_gate_sglang_verdict_turns(cli, tmp_path, monkeypatch):
    root = make_repo(tmp_path, {
        "quantadvise.yaml": "model: ./ckpt\ngpu: h100\nengine: sglang\nengine_version: 0.5.21\n"
                            "workload: {concurrency: 8, ctx: 4096}\n",
        "ckpt/config.json": nvfp4_llama(),
    })
    monkeypatch.chdir(root)
    pinned = cli("check", "--format", "json")
    assert pinned.code == 1  # 0.5.21 refuses NVFP4 W4A4 on an H100
    r = cli("check", "--upgrade-to", "sglang@0.5.23", "--format", "json")
    f = next(x for x in r.json()["findings"] if x["rule_id"] == "QA112")
    assert "verdict refused -> warnings" in f["message"]
    assert "gone: QA" in f["message"] and "Current platform does not support w4a4 nvfp4 quantization." in f["message"]
    assert "NVFP4 w4a4 requires compute capability >= 10.0" in f["message"]


def test_upgrade_gate_bad_target_is_exit_2(cli, tmp_path, monkeypatch):
    root = make_repo(tmp_path, {"quantadvise.yaml": "model: ./ckpt\ngpu: h100\n", "ckpt/config.json": llama()})
    monkeypatch.chdir(root)
    r = cli("check", "--upgrade-to", "vllm-latest")
    assert r.code == 2 and r.stderr.startswith("Error: --upgrade-to expects ENGINE@VERSION")
    r = cli("check", "--upgrade-to", "vllm@9.9.9")
    assert r.code == 2 and "unknown vllm version '9.9.9'" in r.stderr
