"""Engine data (counted, not typed) and engine resolution: every refusal or warning kind shows the
engine's own message and version."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from quantadvise import catalog
from quantadvise.checkpoint.parse import parse_checkpoint, parse_quantization_config
from quantadvise.engines.data import EngineData
from quantadvise.engines.resolution import resolve

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "checkpoints"
VLLM = catalog.get_engine("vllm", "0.33.0")
SGL = catalog.get_engine("sglang", "0.5.23")


def fixture_ck(name: str):
    d = json.loads((FIXTURES / f"{name}.json").read_text())
    side = {fn: d[k] for k, fn in (("quantize_config", "quantize_config.json"), ("hf_quant_config",
                                                                                  "hf_quant_config.json"))
            if k in d}
    return parse_checkpoint(d.get("config") or {}, side), d.get("config") or {}


def kinds(r) -> dict[str, object]:
    return {f.kind: f for f in r.findings}


# ---------------------------------------------------------------------------------------------
# The data reproduces the reference counts (shared/reference/engines.md), by counting it
# ---------------------------------------------------------------------------------------------


def test_sglang_counts_match_the_reference():
    real = [m for m in SGL.methods if m.cli_choice and m.kind != "escape_hatch"]
    hatch = [m for m in SGL.methods if m.kind == "escape_hatch"]
    # engines.md 2.1: "31 entries = 30 real names + unquant"
    assert len(real) == 30 and [m.id for m in hatch] == ["unquant"]
    # 2.2: "12 real CLI names are absent from the list", "The allow-list has 23 entries"
    assert sorted(m.id for m in real if m.optimized is False) == sorted(
        ["awq", "mxfp8", "gptq", "bitsandbytes", "gguf", "modelopt", "mxfp4", "auto-round-int8", "mxfp_w4a8",
         "quark_int4fp8_moe", "mlx_q4", "mlx_q8"])
    assert len(SGL.optimized_allow_list) == 23
    # 2.1: "On CUDA it has 29 names"; 2.5: "8 choices"
    assert len(SGL.registered_names) == 29
    assert len(SGL.kv_cache_dtypes) == 8


def test_vllm_counts_match_the_reference():
    # engines.md 1.1: "a Literal of 30 names"; 1.5: "There are 22 values"; 1.3: the override list
    # has 17 names; DEPRECATED_QUANTIZATION_METHODS fbgemm_fp8 and fp_quant
    assert len(VLLM.methods) == 30
    assert len(VLLM.kv_cache_dtypes) == 22
    assert len(VLLM.override_order) == 17
    assert sorted(m.id for m in VLLM.methods if m.deprecated) == ["fbgemm_fp8", "fp_quant"]
    assert all(m.optimized is None for m in VLLM.methods) and VLLM.optimized_allow_list is None
    # the chapter's count (17 CacheDType values) held in 0.29.0, per the history row
    assert VLLM.history["kv_cache_dtypes"]["0.29.0"] == 17


def test_compressed_tensors_presets_match_the_reference():
    lib = catalog.format_library("compressed-tensors")
    # engines.md 4.3: 33 names in 0.20.1, 30 in 0.18.0, 17 in 0.17.0
    assert len(lib.presets) == 33
    assert len(lib.preset_history["0.18.0"]) == 30 and len(lib.preset_history["0.17.0"]) == 17
    assert lib.preset("INT8").name == "W8A8"


def test_chapter_claims_about_the_registries():
    # "vLLM collapsed awq/awq_marlin onto one AutoAWQConfig and gptq/gptq_marlin/auto_gptq onto one
    # AutoGPTQConfig"
    assert {VLLM.method(n).config_class for n in ("awq", "awq_marlin", "auto_awq")} == {"AutoAWQConfig"}
    assert {VLLM.method(n).config_class for n in ("gptq", "gptq_marlin", "auto_gptq")} == {"AutoGPTQConfig"}
    # "bitsandbytes and gguf are in SGLang's registry and have no entry in vLLM's QuantizationMethods"
    for name in ("bitsandbytes", "gguf"):
        assert SGL.method(name).registered and VLLM.method(name) is None


def test_every_engine_row_has_source_and_as_of():
    fast = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the same safe loader, in C where libyaml is there
    for path in sorted((REPO / "data" / "engines").glob("*.yaml")):
        doc = yaml.load(path.read_text(), Loader=fast)  # noqa: S506
        assert doc["source"] and doc["as_of"]
        for section in ("methods", "kv_cache_dtypes", "overrides", "rewrites", "compatible", "platform_lists",
                        "shorthands", "auto_kv", "messages", "presets", "config_rules", "kernel_refusals"):
            for row in doc.get(section) or []:
                assert row.get("source") and row.get("as_of"), f"{path.name}:{section}:{row.get('id')}"


def test_unknown_keys_in_engine_data_are_rejected():
    from pydantic import ValidationError

    doc = yaml.safe_load((REPO / "data" / "engines" / "vllm-0.33.0.yaml").read_text())
    doc["methods"][0]["min_capabilty"] = 75
    with pytest.raises(ValidationError):
        EngineData.model_validate(doc)


def test_adding_an_engine_version_is_adding_a_file(tmp_path, monkeypatch):
    data = tmp_path / "data"
    shutil.copytree(REPO / "data", data)
    on_file = sorted((p.stem.removeprefix("vllm-") for p in (REPO / "data" / "engines").glob("vllm-*.yaml")),
                     key=lambda v: tuple(int(x) for x in v.split(".")[:3]))
    newest = on_file[-1]
    doc = yaml.safe_load((data / "engines" / f"vllm-{newest}.yaml").read_text())
    gone = doc["methods"][0]["id"]
    doc.update(id="vllm-9.0.0", version="9.0.0")
    doc["source"]["version"] = "9.0.0"
    doc["methods"] = [m for m in doc["methods"] if m["id"] != gone]
    doc["override_order"] = [o for o in doc["override_order"] if o != gone]
    (data / "engines" / "vllm-9.0.0.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    from quantadvise.catalog import engines as releases
    from quantadvise.catalog import loader

    monkeypatch.setattr(loader, "data_dir", lambda: data)
    caches = (releases._release_paths, releases._release_doc, catalog.get_engine, catalog.format_library,
              loader.family, loader.family_table)
    for f in caches:
        f.cache_clear()
    try:
        assert catalog.engine_versions("vllm") == [*on_file, "9.0.0"]
        assert catalog.get_engine("vllm").version == "9.0.0"  # newest by default
        assert catalog.get_engine("vllm", newest).method(gone) is not None
        assert catalog.get_engine("vllm", "9.0.0").method(gone) is None
        # a release newer than any on file is judged as the newest, said once
        choice = catalog.release("vllm", "9.1.0")
        assert (choice.version, choice.exact) == ("9.0.0", False)
        assert choice.warning is not None and "9.1.0" in choice.warning and "9.0.0" in choice.warning
    finally:
        for f in caches:
            f.cache_clear()


# ---------------------------------------------------------------------------------------------
# Resolution: the method each engine ends up with
# ---------------------------------------------------------------------------------------------

GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": False}
AWQ = {"quant_method": "awq", "w_bit": 4, "q_group_size": 128, "zero_point": True, "version": "gemm"}


def test_vllm_override_rewrites_gptq_to_auto_gptq():
    r = resolve(VLLM, parse_quantization_config(GPTQ), capability=90)
    assert (r.checkpoint_method, r.resolved_method, r.config_class) == ("gptq", "auto_gptq", "AutoGPTQConfig")
    assert not r.findings


def test_sglang_routes_awq_to_awq_marlin_on_ampere_and_later():
    r = resolve(SGL, parse_quantization_config(AWQ), capability=80, model_dtype="float16")
    assert (r.resolved_method, r.config_class) == ("awq_marlin", "AWQMarlinConfig")
    assert not r.findings  # awq_marlin is on the optimized list: no warning


def test_sglang_gptq_below_marlin_capability_is_unknown_on_cuda():
    # GPTQMarlin needs SM80; the plain 'gptq' name left the CUDA registry in 0.5.20
    r = resolve(SGL, parse_quantization_config(GPTQ), capability=75)
    f = kinds(r)["unknown_method"]
    assert f.engine_message.startswith("Unknown quantization method: gptq. Must be one of ['awq', ")
    assert f.version == "0.5.23"


def test_gpt_oss_mxfp4_goes_to_the_gpt_oss_class_in_vllm():
    ck, cfg = fixture_ck("openai-gpt-oss-120b-mxfp4")
    r = resolve(VLLM, ck, capability=90, model_type=cfg["model_type"])
    assert r.resolved_method == "gpt_oss_mxfp4" and r.config_class == "GptOssMxfp4Config"


def test_compressed_tensors_scheme_dispatch():
    w4 = {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
                                           "symmetric": True, "dynamic": False}}}, "ignore": ["lm_head"]}
    r = resolve(VLLM, parse_quantization_config(w4), capability=90)
    assert [(g.scheme_class, g.min_capability) for g in r.groups] == [("CompressedTensorsWNA16", 75)]
    ck, _ = fixture_ck("duydq12-nomic-embed-code-fp8-dynamic-ct")
    # FP8_DYNAMIC: W8A8Fp8 on SM89+, the weight-only W8A16Fp8 (Marlin) below
    assert resolve(VLLM, ck, capability=90).groups[0].scheme_class == "CompressedTensorsW8A8Fp8"
    low = resolve(VLLM, ck, capability=80).groups[0]
    assert low.scheme_class == "CompressedTensorsW8A16Fp8" and low.min_capability == 75


def test_sglang_compatible_table_accepts_w8a8_int8_over_compressed_tensors():
    ck, _ = fixture_ck("nm-testing-deepseek-coder-v2-lite-instruct-w8a8-int8-dynamic")
    r = resolve(SGL, ck, capability=90, quantization="w8a8_int8")
    f = kinds(r)["compatible_override"]
    assert f.severity == "info" and r.resolved_method == "w8a8_int8"
    assert f.engine_message == ("Using CLI-specified quantization (w8a8_int8) which is compatible with HF config "
                                "quant_method (compressed-tensors).")


# ---------------------------------------------------------------------------------------------
# Every refusal / warning kind of the issue, with the engine's message and version
# ---------------------------------------------------------------------------------------------


def test_method_mismatch():
    ck, _ = fixture_ck("neuralmagic-qwen2-7b-instruct-fp8-static")
    for eng in (VLLM, SGL):
        r = resolve(eng, ck, capability=90, quantization="awq")
        f = kinds(r)["method_mismatch"]
        assert f.severity == "error" and f.version == eng.version and r.refused
        assert f.engine_message == ("Quantization method specified in the model config (fp8) does not match the "
                                    "quantization method specified in the `quantization` argument (awq).")


@pytest.mark.parametrize("fixture", ["asif00-bangla-llama-4bit-bnb-nf4", "gptqmodel-gguf-q4-k-m-quantization-config"])
def test_bitsandbytes_and_gguf_are_unknown_to_vllm(fixture):
    ck, _ = fixture_ck(fixture)
    r = resolve(VLLM, ck, capability=90)
    f = kinds(r)["unknown_method"]
    assert f.engine_message.startswith(f"Unknown quantization method: {ck.quant_method}. Must be one of ['awq', "
                                       "'auto_awq', 'fp8', ")
    assert f.engine_exception == "ValueError" and f.version == "0.33.0"
    # SGLang loads both, on its not-optimized path
    s = resolve(SGL, ck, capability=90, model_dtype="bfloat16")
    assert s.resolved_method == ck.quant_method and "not_optimized" in kinds(s)


def test_kv_cache_scheme_vllm_cannot_load():
    base = {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
        "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True}}}}
    int4 = parse_quantization_config({**base, "kv_cache_scheme": {"num_bits": 4, "type": "int", "strategy": "tensor",
                                                                  "symmetric": True}})
    f = kinds(resolve(VLLM, int4, capability=90))["kv_cache_scheme_unsupported"]
    assert f.engine_message == ("Currently supported kv cache quantization is num_bits=8, type=float, however "
                                "received num_bits=4, type=int")
    assert f.engine_exception == "NotImplementedError"
    group = parse_quantization_config({**base, "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "group",
                                                                   "group_size": 64, "symmetric": True}})
    f = kinds(resolve(VLLM, group, capability=90))["kv_cache_scheme_strategy"]
    assert f.engine_message.endswith("Expected strategies: ('tensor', 'attn_head'), found strategy: group")
    # SGLang ignores what it cannot use (a warning, not a refusal)
    s = resolve(SGL, int4, capability=90)
    assert kinds(s)["kv_cache_scheme_ignored"].severity == "warning" and not s.refused
    # an accepted fp8 scheme makes --kv-cache-dtype auto resolve to fp8
    ok = parse_quantization_config({**base, "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor",
                                                                "symmetric": True, "dynamic": False}})
    assert resolve(VLLM, ok, capability=90).kv_cache_dtype_resolved == "fp8"
    assert resolve(SGL, ok, capability=90).kv_cache_dtype_resolved == "fp8_e4m3"


def test_block_weights_with_static_activations():
    ck = parse_quantization_config({"quant_method": "fp8", "activation_scheme": "static",
                                    "weight_block_size": [128, 128]})
    assert ck.groups[0].scheme_error  # not a valid point of the design space either
    for eng in (VLLM, SGL):
        f = kinds(resolve(eng, ck, capability=90))["block_static_activations"]
        assert f.engine_message == ("The block-wise quantization only supports dynamic activation scheme for now, "
                                    "but got static activation scheme.")
        assert f.version == eng.version


def test_gpu_below_the_minimum_capability():
    ck, _ = fixture_ck("mygitphase-guhan-30b-fp8-modelopt-kv-fp8")
    # SGLang parses ModelOpt FP8 as modelopt_fp8 (ModelOptFp8Config, min 89): an A100 (80) is refused
    s = resolve(SGL, ck, capability=80)
    f = kinds(s)["capability_too_low"]
    assert s.resolved_method == "modelopt_fp8"
    assert f.engine_message == ("The quantization method modelopt_fp8 is not supported for the current GPU. "
                                "Minimum capability: 89. Current capability: 80.")
    # vLLM's ModelOptFp8Config gate is 80: the A100 passes, a T4 (75) does not
    assert "capability_too_low" not in kinds(resolve(VLLM, ck, capability=80))
    f = kinds(resolve(VLLM, ck, capability=75))["capability_too_low"]
    assert f.engine_message.endswith("Minimum capability: 80. Current capability: 75.") and f.version == "0.33.0"


def test_compressed_tensors_scheme_below_capability():
    d = json.loads((FIXTURES / "brainforge-devstral-2-123b-nvfp4-ct-quantization-config-json.json").read_text())
    ck = parse_checkpoint({}, {"quantization_config.json": d["quantization_config_json"]})
    # NVFP4 W4A4 in SGLang 0.5.23 needs SM100 for the W4A4 kernel, but below it the group is served
    # weight-only by FP4 Marlin (CompressedTensorsW4A16Fp4, min capability 80); only below SM80 the
    # scheme check refuses (schemes/compressed_tensors_w4a16_nvfp4.py:135-137 `return 80`)
    f = kinds(resolve(SGL, ck.model_copy(update={"found_in": "quantization_config"}), capability=75))[
        "scheme_capability_too_low"]
    # sglang compressed_tensors.py:422-426 raises RuntimeError with three string arguments, so Python
    # prints the argument tuple (as vLLM does)
    assert f.engine_message == ("('Quantization scheme is not supported for ', 'the current GPU. Min capability: 80. ',"
                                " 'Current capability: 75.')")
    # vLLM raises the same check with three arguments: Python prints the tuple
    v = resolve(VLLM, ck.model_copy(update={"found_in": "quantization_config"}), capability=70)
    f = kinds(v)["scheme_capability_too_low"]
    assert f.engine_message == ("('Quantization scheme is not supported for ', 'the current GPU. Min capability: 75. ',"
                                " 'Current capability: 70.')")


def test_deprecated_method():
    ck = parse_quantization_config({"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0})
    r = resolve(VLLM, ck, capability=90)
    f = kinds(r)["deprecated_method"]
    # vLLM passes the name as a second exception argument, so the %s is printed literally
    assert f.engine_message == ("('The quantization method %s is deprecated and will be removed in future versions of "
                                "vLLM. To bypass, set `--allow-deprecated-quantization`.', 'fbgemm_fp8')")
    assert r.refused and f.version == "0.33.0"
    allowed = resolve(VLLM, ck, capability=90, allow_deprecated=True)
    f = kinds(allowed)["deprecated_method_allowed"]
    assert not allowed.refused and f.engine_message == ("The quantization method fbgemm_fp8 is deprecated and will be "
                                                        "removed in future versions of vLLM.")


def test_fp8_online_is_deprecated_in_vllm():
    r = resolve(VLLM, None, capability=90, quantization="fp8")
    f = kinds(r)["fp8_online_deprecated"]
    assert r.resolved_method == "fp8_per_tensor" and f.severity == "warning"
    assert f.engine_message == ("--quantization fp8 is deprecated for online quantization; use --quantization "
                                "fp8_per_tensor instead.")
    # SGLang still takes fp8 as online quantization
    assert resolve(SGL, None, capability=90, quantization="fp8").findings == []


def test_not_fully_optimized_in_sglang():
    r = resolve(SGL, parse_quantization_config(AWQ), capability=80, quantization="awq", model_dtype="float16")
    f = kinds(r)["not_optimized"]
    assert f.engine_message == ("awq quantization is not fully optimized yet. The speed can be slower than "
                                "non-quantized models.")
    assert f.version == "0.5.23" and not r.refused
    # ...and the explicit flag turned Marlin off
    assert kinds(r)["marlin_forced_off"].severity == "info"
    # mxfp4 is exempt on SM100
    ck, cfg = fixture_ck("openai-gpt-oss-120b-mxfp4")
    assert "not_optimized" in kinds(resolve(SGL, ck, capability=90, model_type="gpt_oss"))
    assert "not_optimized" not in kinds(resolve(SGL, ck, capability=100, model_type="gpt_oss"))


def test_fp8_e5m2_kv_with_an_fp8_checkpoint():
    ck, _ = fixture_ck("neuralmagic-qwen2-7b-instruct-fp8-static")
    f = kinds(resolve(VLLM, ck, capability=90, kv_cache_dtype="fp8_e5m2"))["fp8_e5m2_with_fp8_checkpoint"]
    assert f.engine_message == "fp8_e5m2 kv-cache is not supported with fp8 checkpoints."
    # the exemption: compressed-tensors without a kv_cache_scheme
    ct, _ = fixture_ck("duydq12-nomic-embed-code-fp8-dynamic-ct")
    assert "fp8_e5m2_with_fp8_checkpoint" not in kinds(resolve(VLLM, ct, capability=90, kv_cache_dtype="fp8_e5m2"))
    # SGLang has no such restriction (fp8_e5m2 is refused only on CPU)
    assert "fp8_e5m2_with_fp8_checkpoint" not in kinds(resolve(SGL, ck, capability=90, kv_cache_dtype="fp8_e5m2"))


def test_kv_cache_dtype_choices_and_constraints():
    assert kinds(resolve(SGL, None, capability=90, kv_cache_dtype="int8_per_token_head"))["kv_dtype_unknown"]
    assert not resolve(VLLM, None, capability=90, kv_cache_dtype="int8_per_token_head").findings
    # SGLang's mxfp8 KV needs SM100; nvfp4 KV only SM100/SM120
    assert kinds(resolve(SGL, None, capability=90, kv_cache_dtype="mxfp8"))["kv_dtype_capability"]
    assert kinds(resolve(SGL, None, capability=90, kv_cache_dtype="nvfp4"))["kv_dtype_capability"]
    assert not resolve(SGL, None, capability=120, kv_cache_dtype="nvfp4").findings


def test_modelopt_kv_algo_resolves_auto():
    ck, _ = fixture_ck("mygitphase-guhan-30b-fp8-modelopt-kv-fp8")
    assert resolve(VLLM, ck, capability=90).kv_cache_dtype_resolved == "fp8_e4m3"


def test_quantization_only_in_a_side_file():
    ck, _ = fixture_ck("seonglae-llama-2-7b-chat-hf-gptq")
    r = resolve(VLLM, ck, capability=90)
    assert kinds(r)["config_in_side_file"].severity == "error" and r.resolved_method is None
    r = resolve(VLLM, ck, capability=90, quantization="gptq")
    assert r.resolved_method == "gptq" and not r.refused
