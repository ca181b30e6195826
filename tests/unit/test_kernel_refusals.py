"""vLLM picks its CUTLASS scaled_mm kernel for every int8 W8A8 layer on CUDA, and that kernel has no int8 build on
SM100 and up: the model loads, then the start-up profile run stops at the first int8 GEMM. Read by hand from each
release's C++ sources (data/engines/vllm-*.yaml ``kernel_refusals``)."""

from __future__ import annotations

import pytest

import quantadvise as api
from quantadvise import catalog
from quantadvise.checkpoint.parse import parse_quantization_config
from quantadvise.engines.resolution import resolve

# llm-compressor's W8A8 int8 preset as compressed-tensors writes it: per-channel int8 weights, dynamic per-token
# int8 activations (the CompressedTensorsW8A8Int8 scheme in every vLLM release on file)
W8A8_INT8 = {
    "quant_method": "compressed-tensors", "format": "int-quantized",
    "config_groups": {"group_0": {
        "targets": ["Linear"],
        "weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True, "dynamic": False},
        "input_activations": {"num_bits": 8, "type": "int", "strategy": "token", "symmetric": True, "dynamic": True},
    }},
    "ignore": ["lm_head"],
}
# vllm 0.11.2 .. 0.34.0 csrc/.../w8a8/cutlass/c3x/scaled_mm_helper.hpp: STD_TORCH_CHECK(false, "Int8 not supported on
# SM", version_num, ". Use FP8 quantization instead, or run on older arch (SM < 100).") — the SM number appended
NEW = "Int8 not supported on SM{}. Use FP8 quantization instead, or run on older arch (SM < 100)."


def _errors(version: str, capability: int, platform: str = "cuda") -> list:
    eng = catalog.get_engine("vllm", version)
    res = resolve(eng, parse_quantization_config(W8A8_INT8), capability=capability, platform=platform)
    return [f for f in res.findings if f.severity == "error"]


@pytest.mark.parametrize("version", ["0.34.0", "0.33.0", "0.24.0", "0.15.1", "0.11.2"])
@pytest.mark.parametrize("capability", [100, 103, 120])  # B200 / GB200, B300 / GB300, RTX 5090 / RTX PRO 6000
def test_vllm_refuses_int8_w8a8_on_sm100_and_up_with_its_own_message(version, capability):
    errs = _errors(version, capability)
    assert [f.kind for f in errs] == ["cutlass_int8_unsupported"]
    assert errs[0].engine_message == NEW.format(capability)
    assert errs[0].engine_exception == "RuntimeError" and "scaled_mm_helper.hpp" in errs[0].source


@pytest.mark.parametrize("capability", [80, 89, 90])
def test_vllm_runs_int8_w8a8_below_sm100(capability):
    assert _errors("0.34.0", capability) == []


def test_older_releases_refuse_in_their_own_words():
    # vllm 0.9.2: SM100 dispatches with no int8 function ("Int8 not supported for this architecture",
    # c3x/scaled_mm_helper.hpp:28); SM120 has its own fp8-only entry (scaled_mm_c3x_sm120.cu:29-30)
    assert _errors("0.9.2", 100)[0].engine_message == "Int8 not supported for this architecture"
    assert _errors("0.9.2", 120)[0].engine_message == "Currently, only fp8 gemm is implemented for Blackwell"
    # vllm 0.8.5.post1: every capability from 100 reaches the fp8-only SM100 entry (scaled_mm_c3x_sm100.cu:29-30)
    assert _errors("0.8.5.post1", 100)[0].engine_message == "Currently, only fp8 gemm is implemented for Blackwell"
    assert _errors("0.10.2", 103)[0].engine_message == "Int8 not supported for this architecture"


def test_rocm_is_not_this_kernel():
    # the refusal is vLLM's CUTLASS kernel on CUDA: ROCm runs AITER / Triton int8 (capability 94 from gfx942 is below
    # 100 anyway, so check a platform that is not CUDA at a capability that would be refused on CUDA)
    assert all(f.kind != "cutlass_int8_unsupported" for f in _errors("0.34.0", 100, platform="rocm"))


def test_recommend_on_b200_says_vllm_refuses_int8():
    # before: w8a8-int8 was a tie with the winner on B200 under vLLM 0.34.0 (priced from the fp8 table), a scheme
    # the engine stops on at start-up
    r = api.recommend(gpu="b200", batch=64, ctx=2048, engine="vllm")
    alt = {a.scheme: a for a in r.alternatives}
    assert alt["w8a8-int8"].status == "not-supported"
    assert alt["w8a8-int8"].reason == NEW.format(100)
    r = api.recommend(gpu="h100", batch=64, ctx=2048, engine="vllm")
    assert {a.scheme: a for a in r.alternatives}["w8a8-int8"].status != "not-supported"
    r = api.recommend(gpu="b300", batch=64, ctx=2048, engine="sglang")
    alt = {a.scheme: a for a in r.alternatives}["w8a8-int8"]
    assert alt.status == "not-supported" and alt.reason == "No implemented int8_scaled_mm for current compute capability."


@pytest.mark.parametrize("version", ["0.5.3.post3", "0.5.9", "0.5.14", "0.5.20", "0.5.23"])
def test_sglang_refuses_int8_w8a8_on_sm100_and_up(version):
    # sglang 0.5.3.post3-0.5.23 compressed_tensors_w8a8_int8.py apply_weights call sgl_kernel.int8_scaled_mm (0.5.23:
    # :170-178); the pinned kernel's SM100 build (sgl-kernel 0.3.15 .. sglang-kernel 0.4.10: the build sgl_kernel loads
    # on every capability but 90) has only the sm80-sm90 dispatch shapes, and the dispatch ends in
    # TORCH_CHECK_NOT_IMPLEMENTED(false, "No implemented int8_scaled_mm for current compute capability.")
    eng = catalog.get_engine("sglang", version)
    ck = parse_quantization_config(W8A8_INT8)
    got = [f for f in resolve(eng, ck, capability=100).findings if f.severity == "error"]
    assert [f.kind for f in got] == ["sgl_int8_scaled_mm_unsupported"]
    assert got[0].engine_message == "No implemented int8_scaled_mm for current compute capability."
    assert got[0].engine_exception == "NotImplementedError"
    assert not [f for f in resolve(eng, ck, capability=90).findings if f.severity == "error"]


def test_roofline_warns_where_the_release_stops_on_the_kernel_it_prices():
    # roofline still prices the kernel the release picks (what it would cost), and says the release never gets there
    r = api.roofline("meta-llama/Meta-Llama-3-8B", "fp8-dynamic,w8a8-int8", gpu="b300", batches="64", ctx=1)
    hits = [w for w in r.warnings if "stops at start-up" in w]
    assert len(hits) == 1 and hits[0].startswith("w8a8-int8: vLLM 0.34.0") and NEW.format(103) in hits[0]
    r = api.roofline("meta-llama/Meta-Llama-3-8B", "w8a8-int8", gpu="h100", batches="64", ctx=1)
    assert not [w for w in r.warnings if "stops at start-up" in w]


def test_the_gate_reports_it_as_qa103_in_the_engines_words():
    # check maps each engine finding to a rule: a kernel the release has no build of for the GPU stops the server at
    # start-up (QA103, a refusal), with the engine's own message
    from quantadvise.gate.engine import engine_findings
    from quantadvise.gate.findings import Findings, Site

    eng = catalog.get_engine("vllm", "0.34.0")
    res = resolve(eng, parse_quantization_config(W8A8_INT8), capability=100)
    out = Findings()
    site = Site(key="run.sh#vllm", label="run.sh:1", file="run.sh", line=1, flag_lines={"model": 1})
    engine_findings(out, site, res.findings, eng.label)
    assert [(f.rule_id, f.engine_message) for f in out.items] == [("QA103", NEW.format(100))]
    assert out.refused("run.sh:1") == {"QA103": NEW.format(100)}


def test_quark_int8_layers_run_the_same_kernel_in_vllm():
    # Quark W8A8-INT8 (vllm 0.34.0 quark/schemes/quark_w8a8_int8.py:88, init_int8_linear_kernel) builds its layer with
    # the same int8 kernel list
    # (CUTLASS first): refused on SM100 as the compressed-tensors one is, with the same message
    qc = {"quant_method": "quark", "global_quant_config": {
        "weight": {"dtype": "int8", "qscheme": "per_channel", "is_dynamic": False, "symmetric": True, "ch_axis": 0},
        "input_tensors": {"dtype": "int8", "qscheme": "per_tensor", "is_dynamic": False, "symmetric": True},
        "output_tensors": None, "bias": None}, "layer_quant_config": {}, "exclude": ["lm_head"]}
    eng = catalog.get_engine("vllm", "0.34.0")
    ck = parse_quantization_config(qc)
    got = [f for f in resolve(eng, ck, capability=100).findings if f.severity == "error"]
    assert [(f.kind, f.engine_message) for f in got] == [("cutlass_int8_unsupported", NEW.format(100))]
    assert not [f for f in resolve(eng, ck, capability=90).findings if f.severity == "error"]


def test_engines_diff_lists_a_refusal_that_changed_between_releases():
    # vllm 0.9.2 refuses SM100-119 and SM120+ in two rows with two messages; 0.34.0 in one row with one
    from quantadvise.engines.listing import fact_changes

    got = {(c.section, c.subject, c.field) for c in fact_changes(catalog.get_engine("vllm", "0.9.2"),
                                                                   catalog.get_engine("vllm", "0.34.0"))
           if c.section == "kernel_refusals"}
    assert got == {("kernel_refusals", "cutlass-int8-sm120", "row"),
                   ("kernel_refusals", "cutlass-int8-sm100", "max_capability"),
                   ("kernel_refusals", "cutlass-int8-sm100", "message")}
    same = fact_changes(catalog.get_engine("vllm", "0.33.0"), catalog.get_engine("vllm", "0.34.0"))
    assert not [c for c in same if c.section == "kernel_refusals"]


# sglang 0.4.4.post4 .. 0.5.2 compressed_tensors.py: _get_scheme_from_parts returns CompressedTensorsW8A8Int8(...) for a
# static per-tensor or dynamic per-token int8 W8A8 group (0.5.2: lines 423 and 430), a name the module never imports
# (its schemes import lists CompressedTensorsScheme, W8A8Fp8 and W8A16Fp8 only): Python raises NameError there.
# 0.5.3.post3 imports it (compressed_tensors.py:424) and runs it from capability 89 on.
@pytest.mark.parametrize("version", ["0.4.4.post4", "0.4.8.post1", "0.5.1.post3", "0.5.2"])
@pytest.mark.parametrize("activations", [
    {"num_bits": 8, "type": "int", "strategy": "token", "symmetric": True, "dynamic": True},
    {"num_bits": 8, "type": "int", "strategy": "tensor", "symmetric": False, "dynamic": False},
])
def test_old_sglang_fails_int8_w8a8_with_pythons_name_error(version, activations):
    cfg = {**W8A8_INT8, "config_groups": {"group_0": {**W8A8_INT8["config_groups"]["group_0"],
                                                      "input_activations": activations}}}
    res = resolve(catalog.get_engine("sglang", version), parse_quantization_config(cfg), capability=90)
    errs = [f for f in res.findings if f.severity == "error"]
    assert [f.kind for f in errs] == ["ct_int8_undefined"]
    assert errs[0].engine_message == "name 'CompressedTensorsW8A8Int8' is not defined"
    assert errs[0].engine_exception == "NameError"


def test_sglang_runs_int8_w8a8_once_it_imports_the_scheme():
    res = resolve(catalog.get_engine("sglang", "0.5.3.post3"), parse_quantization_config(W8A8_INT8), capability=90)
    assert [f for f in res.findings if f.severity == "error"] == []
