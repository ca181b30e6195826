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

import yaml

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


def pinned_repo(tmp_path, engine: str, version: str, ckpt: dict):
    """A deployment repo pinned to ``engine`` ``version`` on one H100, serving the checkpoint ``ckpt``."""
    return make_repo(tmp_path, {
        "quantadvise.yaml": f"model: ./ckpt\ngpu: h100\nengine: {engine}\nengine_version: {version}\n"
                            "workload: {concurrency: 8, ctx: 4096}\n",
        "ckpt/config.json": ckpt,
    })


def test_upgrade_gate_sglang_verdict_turns(cli, tmp_path, monkeypatch):
    root = pinned_repo(tmp_path, "sglang", "0.5.21", nvfp4_llama())
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
    r = cli("check", "--upgrade-to", "vllm@nope")
    assert r.code == 2 and "'nope' is not a vLLM release" in r.stderr
    # a release newer than any on file is the newest on file, said once (never exit 2)
    r = cli("check", "--upgrade-to", "vllm@9.9.9")
    newest = __import__("quantadvise").catalog.engine_versions("vllm")[-1]
    assert r.code != 2 and r.stderr.count("vLLM 9.9.9 is not on file") == 1 and f"vLLM {newest}" in r.stderr


def fp8_dynamic_llama() -> dict:
    from quantadvise import catalog
    from quantadvise.advisor import plan

    cfg = llama()
    preset = catalog.scheme_preset("fp8-dynamic")
    cfg["quantization_config"] = plan.quantization_config(catalog.scheme_from_preset(preset), preset.deploy)
    return cfg


def test_upgrade_gate_says_when_a_release_has_no_kernel_table(cli, tmp_path, monkeypatch):
    # vLLM 0.29.0 has no kernel table of its own: data/kernels/carried/vllm-0.29.0.yaml prices it with 0.30.0's and
    # says why that is a stand-in (tools/carry_kernel_tables.py: the cited selection files changed). A stand-in is
    # never compared as if it were 0.29.0's own: no kernel change can be reported for it, and the gate says so.
    from quantadvise import catalog

    carried = yaml.safe_load((REPO / "data" / "kernels" / "carried" / "vllm-0.29.0.yaml").read_text())
    assert carried["carried_from"] == "vllm-0.30.0" and not (REPO / "data" / "kernels" / "vllm-0.29.0.yaml").exists()
    root = pinned_repo(tmp_path, "vllm", "0.29.0", fp8_dynamic_llama())
    monkeypatch.chdir(root)
    doc = cli("check", "--upgrade-to", "vllm@0.33.0", "--format", "json").json()
    assert any(n.startswith("--upgrade-to vllm@0.33.0: kernel changes not compared: no kernel table on file for "
                            "vLLM 0.29.0 (kernel tables on file: vLLM 0.33.0)") for n in doc["notes"])
    assert not any("kernel" in f["message"] for f in doc["findings"] if f["rule_id"] == "QA112")
    # inspect prices the pinned release with the carried table and says the record's caveat
    out = cli("inspect", "ckpt", "--gpu", "h100", "-e", "vllm==0.29.0").stdout
    assert "vLLM 0.29.0 kernels from vLLM 0.30.0's table: Kernel selection not read for vllm 0.29.0" in \
        " ".join(out.split())
    assert catalog.kernel_caveat("vllm", "0.29.0") == carried["caveat"]


def test_upgrade_gate_reports_a_kernel_change(cli, tmp_path, monkeypatch):
    # The mechanism on a stand-in: the pinned release's table is 0.33.0's with the per-channel FP8 route
    # preferring HummingFP8ScaledMMLinearKernel (the real tables of 0.32.0 and 0.33.0 agree on this route;
    # test_upgrade_gate_reports_a_real_kernel_change below compares two real ones). The target's own table
    # (data/kernels/vllm-0.33.0.yaml, route fp8-channel) takes cutlass-fp8 first from SM89
    # (kernels/linear/__init__.py:458-467; scaled_mm/cutlass.py:164-174): an H100 (SM90) runs CUTLASS.
    from quantadvise import catalog

    real = catalog.kernel_table
    t33 = real("vllm", "0.33.0")
    routes = tuple(r.model_copy(update={"kernel": "humming-fp8"}) if r.route == "fp8-channel" else r
                   for r in t33.routes)
    t32 = t33.model_copy(update={"version": "0.32.0", "routes": routes})
    monkeypatch.setattr(catalog, "kernel_table", lambda e, v: t32 if (e, v) == ("vllm", "0.32.0") else real(e, v))
    root = make_repo(tmp_path, {
        "quantadvise.yaml": "model: ./ckpt\ngpu: h100\nengine: vllm\nengine_version: 0.32.0\n"
                            "workload: {concurrency: 8, ctx: 4096}\n",
        "ckpt/config.json": fp8_dynamic_llama(),
    })
    monkeypatch.chdir(root)
    doc = cli("check", "--upgrade-to", "vllm@0.33.0", "--format", "json").json()
    qa112 = [f for f in doc["findings"] if f["rule_id"] == "QA112"]
    assert len(qa112) == 1
    assert ("kernel group_0: HummingFP8ScaledMMLinearKernel -> group_0: CutlassFP8ScaledMMLinearKernel"
            in qa112[0]["message"]), qa112[0]["message"]
    assert not any("kernel changes not compared" in n for n in doc["notes"])
    # with the same table on both sides nothing changes (vLLM 0.32.0 and 0.33.0 resolve this checkpoint alike)
    monkeypatch.setattr(catalog, "kernel_table", lambda e, v: t33.model_copy(update={"version": v})
                        if e == "vllm" else real(e, v))
    same = cli("check", "--upgrade-to", "vllm@0.33.0", "--format", "json").json()
    assert not any(f["rule_id"] == "QA112" for f in same["findings"])


def test_kernels_are_compared_only_where_both_releases_have_a_table_and_load():
    from quantadvise.gate.result import TargetReport
    from quantadvise.gate.upgrade import compare, kernel_coverage

    def target(version: str, kernels: list[str] | None, status: str = "ok") -> TargetReport:
        return TargetReport(label="run.sh:1", source="shell", engine="vllm", engine_version=version,
                            engine_version_from="flag", model="m", model_from="flag", checkpoint="c",
                            engine_status=status, scheme_from="checkpoint", gpu="h100-sxm", gpus=1, mode="decode",
                            kernels=kernels)

    a, b = ["group_0: MarlinLinearKernel"], ["group_0: MacheteLinearKernel"]
    change = compare(target("0.32.0", a), target("0.33.0", b), [], [])
    assert change is not None and change.summary() == ("kernel group_0: MarlinLinearKernel -> "
                                                       "group_0: MacheteLinearKernel")
    assert compare(target("0.30.0", None), target("0.33.0", b), [], []) is None  # no table for 0.30.0
    refused = compare(target("0.32.0", a, "refused"), target("0.33.0", b), [], [])
    assert refused is not None and [d.what for d in refused.changes] == ["verdict"]
    assert "kernels" not in target("0.33.0", b).model_dump(mode="json")  # not in check's JSON
    assert kernel_coverage("vLLM", ["0.30.0"], ["0.33.0"]) == (
        "kernel changes not compared: no kernel table on file for vLLM 0.30.0 (kernel tables on file: vLLM 0.33.0); "
        "the verdict, method, scheme, KV cache dtype and messages are compared")
    assert kernel_coverage("vLLM", [], ["0.32.0", "0.33.0"]) is None


def test_upgrade_gate_reports_a_real_kernel_change(cli, tmp_path, monkeypatch):
    # A compressed-tensors NVFP4 (W4A4) Llama on one H100 (SM90), pinned on vLLM 0.31.0, upgraded to 0.32.0; both
    # releases' own kernel tables, read from their wheels:
    # - 0.31.0 (data/kernels/vllm-0.31.0.yaml): below SM100 the W4A4 checkpoint runs weight-only. The CUDA list
    #   _POSSIBLE_NVFP4_KERNELS (kernels/linear/__init__.py:551-567) puts FlashInfer CuTe-DSL (:553, sm_10x only,
    #   nvfp4/flashinfer.py:112-123) and FlashInfer CUTLASS (:554, SM100+) first, then MarlinNvFp4LinearKernel
    #   (:559), supported from SM75, well ahead of HummingNvFp4LinearKernel (:566); the 0.31.0 wheel has no
    #   layers/quantization/utils/humming/priority.py, so nothing reorders the list: an H100 runs FP4 Marlin, whose
    #   setup logs "Your GPU does not have native support for FP4 computation ..." (nvfp4/marlin.py:35).
    # - 0.32.0 (data/kernels/vllm-0.32.0.yaml): _resolve_backend_kernels calls prioritize_humming
    #   (kernels/linear/__init__.py:411), which moves Humming directly ahead of Marlin where
    #   _HUMMING_PREFERRED_CAPABILITIES = frozenset({90}) (humming/priority.py:11, 26-48): the H100 runs
    #   HummingNvFp4LinearKernel, and the Marlin message is gone.
    root = pinned_repo(tmp_path, "vllm", "0.31.0", nvfp4_llama())
    monkeypatch.chdir(root)
    doc = cli("check", "--upgrade-to", "vllm@0.32.0", "--format", "json").json()
    qa112 = [f for f in doc["findings"] if f["rule_id"] == "QA112"]
    assert len(qa112) == 1, doc["findings"]
    msg = qa112[0]["message"]
    assert "upgrading vllm 0.31.0 -> 0.32.0" in msg
    assert "kernel group_0: MarlinNvFp4LinearKernel -> group_0: HummingNvFp4LinearKernel" in msg, msg
    assert "gone: QA106 [warning] Your GPU does not have native support for FP4 computation" in msg
    # both releases have their own table: the coverage note is not printed
    assert not any("kernel changes not compared" in n for n in doc["notes"])
    # on an A100 (SM80, not Humming-preferred in either release) both run FP4 Marlin: no kernel change
    (root / "quantadvise.yaml").write_text((root / "quantadvise.yaml").read_text().replace("gpu: h100", "gpu: a100-80gb"))
    a100 = cli("check", "--upgrade-to", "vllm@0.32.0", "--format", "json").json()
    assert not any(f["rule_id"] == "QA112" for f in a100["findings"])


def test_engines_diff_lists_kernel_changes(cli):
    d = cli("engines", "diff", "vllm@0.30.0", "vllm@0.33.0", "--format", "json").json()
    assert d["kernel_tables"] == {"vLLM 0.30.0": "vLLM 0.30.0", "vLLM 0.33.0": "vLLM 0.33.0"}
    kernels = {(c["subject"].split(" ")[0], c["field"]): (c["before"], c["after"])
               for c in d["changed"] if c["section"] == "kernels"}
    # W8A16 (symmetric 8-bit, per channel): 0.30.0 lists AllSparkLinearKernel between Machete and Marlin
    # (kernels/linear/__init__.py:503), for SM80-SM89 uint8b128 per-channel weights
    # (quantization/utils/allspark_utils.py:25-65); 0.31.0 dropped it, so Marlin runs from then on
    assert kernels[("w8a16", "kernel on sm80, sm86, sm89")] == ("AllSparkLinearKernel", "MarlinLinearKernel")
    # on SM90 Humming moves ahead of Marlin from 0.32.0 (humming/priority.py:11)
    assert kernels[("nvfp4", "kernel on sm90")] == ("MarlinNvFp4LinearKernel", "HummingNvFp4LinearKernel")
    assert kernels[("mxfp8", "kernel on sm90")] == ("MarlinMxfp8LinearKernel", "HummingMxfp8LinearKernel")
    # a refusal is the verdict's change, never a kernel's: each listed change is between two loading releases
    assert all(not k[0].startswith("bf16") for k in kernels)
    table = cli("engines", "diff", "vllm@0.30.0", "vllm@0.33.0", "--wide").stdout
    assert any(line.startswith("kernels") and "AllSparkLinearKernel" in line for line in table.splitlines())
    # 0.32.0 and 0.33.0 select the same kernels (their selection code differs only off the CUDA routes on file)
    same = cli("engines", "diff", "vllm@0.32.0", "vllm@0.33.0", "--format", "json").json()
    assert not [c for c in same["changed"] if c["section"] == "kernels"]
