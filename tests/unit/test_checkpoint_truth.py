"""Published configs quantadvise misread (issue 13): each test fails on the code before the fix.

The configs are cut down to the fields that matter, in the shape the published files have (quoted
where a public copy was found); the expected behaviour follows the engines' source lines cited.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantadvise import catalog
from quantadvise.checkpoint.parse import parse_checkpoint, parse_quantization_config
from quantadvise.engines.resolution import resolve
from quantadvise.errors import UnknownNameError
from quantadvise.model.inventory import inventory_of
from quantadvise.model.parse import parse_config

REPO = Path(__file__).resolve().parents[2]
VLLM = catalog.get_engine("vllm", "0.33.0")
SGL = catalog.get_engine("sglang", "0.5.23")


def bundled(name: str) -> dict:
    return json.loads((REPO / "data" / "models" / name).read_text())


def kinds(r) -> dict[str, object]:
    return {f.kind: f for f in r.findings}


# ---------------------------------------------------------------------------------------------
# fp8 `fmt` spellings no engine reads
# ---------------------------------------------------------------------------------------------


def test_minimax_fmt_float8_e4m3fn_is_read_not_refused(cli, tmp_path):
    # MiniMax-M2.5 writes "fmt": "float8_e4m3fn"; neither vLLM's Fp8Config.from_config
    # (vllm fp8.py:158-175 reads quant_method, activation_scheme, ignored_layers, weight_block_size,
    # store_dtype, modules_to_not_convert) nor SGLang's reads fmt, so it must not stop `inspect`
    qc = {"quant_method": "fp8", "fmt": "float8_e4m3fn", "activation_scheme": "dynamic",
          "weight_block_size": [128, 128]}
    ck = parse_quantization_config(qc)
    assert ck.groups[0].weights.element_format == "fp8_e4m3" and ck.details["fmt"] == "float8_e4m3fn"
    assert not ck.warnings
    cfg = {**bundled("meta-llama/Llama-3.1-8B.json"), "quantization_config": qc}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = cli("inspect", str(tmp_path), "--format", "json")
    assert r.code == 0, r.stderr
    # a spelling nobody knows is a warning, still not a refusal
    odd = parse_quantization_config({**qc, "fmt": "fp8_e4m3_fnuz_variant"})
    assert odd.warnings and "engines do not read fmt" in odd.warnings[0]


# ---------------------------------------------------------------------------------------------
# ModelOpt MIXED_PRECISION: quantized_layers, not config_groups
# ---------------------------------------------------------------------------------------------


def qwen_mixed() -> tuple[dict, dict]:
    """A flat MIXED_PRECISION config with config_groups AND quantized_layers, the shape of
    nvidia/Qwen3.6-35B-A3B-NVFP4: experts NVFP4, attention FP8, config_groups naming other targets."""
    cfg = bundled("Qwen/Qwen3-30B-A3B.json")
    layers = {}
    for i in range(cfg["num_hidden_layers"]):
        layers[f"model.language_model.layers.{i}.mlp.experts"] = {"quant_algo": "NVFP4", "group_size": 16}
        for p in ("q_proj", "k_proj", "v_proj", "o_proj"):
            layers[f"model.language_model.layers.{i}.self_attn.{p}"] = {"quant_algo": "FP8"}
    qc = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": "FP8",
          "producer": {"name": "modelopt", "version": "0.41.0"}, "quantized_layers": layers,
          "config_groups": {"group_0": {"targets": ["re:.*shared_expert.*"],
                                        "weights": {"num_bits": 4, "type": "float", "group_size": 16}}},
          "ignore": ["lm_head"]}
    return cfg, qc


def test_flat_mixed_precision_reads_quantized_layers():
    cfg, qc = qwen_mixed()
    ck = parse_checkpoint({**cfg, "quantization_config": qc})
    assert ck.quant_algo == "MIXED_PRECISION" and ck.has_nvfp4_layers is True
    assert sorted(g.name for g in ck.groups) == ["fp8", "nvfp4"]
    # SGLang configs/model_config.py:1855-1863: MIXED_PRECISION with NVFP4 / W4A16_NVFP4 layers in
    # quantized_layers -> {"quant_method": "modelopt_mixed"} (without them: w4afp8)
    s = resolve(SGL, ck, capability=100)
    assert s.checkpoint_method == "modelopt_mixed" and s.resolved_method == "modelopt_mixed"
    # vLLM modelopt.py: ModelOptMixedPrecisionConfig claims quant_algo MIXED_PRECISION
    assert resolve(VLLM, ck, capability=100).resolved_method == "modelopt_mixed"


def test_flat_mixed_precision_sizes_the_quantized_layers(cli, tmp_path):
    cfg, qc = qwen_mixed()
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "quantization_config": qc}))
    d = cli("inspect", str(tmp_path), "--format", "json").json()
    size = d["size"]
    # Qwen3-30B-A3B: 48 layers x 128 experts x 3 x 2048 x 768 = 28.99e9 expert parameters (NVFP4),
    # plus the attention projections (FP8): most of the ~30.5e9 parameters are quantized
    experts = 48 * 128 * 3 * 2048 * 768
    assert size["quantized_params"] > experts
    assert size["quantized_params"] > 0.9 * size["total_params"]


# ---------------------------------------------------------------------------------------------
# fp8 + moe_quant_algo NVFP4 (DeepSeek-V4 NVFP4 exports)
# ---------------------------------------------------------------------------------------------


def test_fp8_with_nvfp4_experts_keeps_the_experts():
    # the quantization_config of the DeepSeek-V4 NVFP4 exports (fp8 block linears, NVFP4 routed
    # experts); vLLM models/deepseek_v41/quant_config.py:103 and SGLang configs/model_config.py:781-782
    # read moe_quant_algo
    qc = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3", "weight_block_size": [128, 128],
          "scale_fmt": "ue8m0", "quant_algo": "MIXED_PRECISION", "moe_quant_algo": "NVFP4", "group_size": 16,
          "quantized_layers": {f"layers.{i}.ffn.experts": {"quant_algo": "NVFP4", "group_size": 16}
                               for i in range(3, 61)}}
    ck = parse_quantization_config(qc)
    names = [g.name for g in ck.groups]
    assert names == ["moe nvfp4", "fp8"] and ck.groups[0].scope == "experts"
    assert ck.groups[0].weights.element_format == "fp4_e2m1" and ck.groups[0].weights.group_size == 16
    cfg = {**bundled("deepseek-ai/DeepSeek-V3.json"), "quantization_config": qc}
    from quantadvise.checkpoint.placement import disk_size

    arch = parse_config(cfg)
    size = disk_size(arch, parse_checkpoint(cfg), catalog.layouts())
    by = {a.group: a for a in size.groups}
    # DeepSeek-V3: 58 MoE layers x 256 routed experts x 3 x 7168 x 2048 = 6.54e11 expert parameters,
    # all in the NVFP4 group (+ the MTP layer's 256 experts, which the checkpoint also stores)
    routed = 58 * 256 * 3 * 7168 * 2048
    assert by["moe nvfp4"].params >= routed and by["moe nvfp4"].components == ["experts", "mtp"]
    # NVFP4 stores 4.5 bits per weight (4 + an 8-bit scale per 16): the experts shrink ~1.8x vs fp8
    assert by["moe nvfp4"].bytes < 0.6 * by["moe nvfp4"].params


# ---------------------------------------------------------------------------------------------
# transform_config (SpinQuant / QuIP rotations)
# ---------------------------------------------------------------------------------------------

QUIP = {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
    "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}}},
    "transform_config": {"config_groups": {
        "v": {"type": "hadamard", "apply": [{"targets": ["Linear"], "location": "input"},
                                            {"targets": ["Linear"], "location": "weight_input", "inverse": True}]},
        "u": {"type": "hadamard", "apply": [{"targets": ["Linear"], "location": "weight_output"},
                                            {"targets": ["Linear"], "location": "output", "inverse": True}]}}}}


def test_transform_config_is_shown_and_sglang_is_warned(cli, tmp_path):
    ck = parse_quantization_config(QUIP)
    assert ck.transforms == ("v: hadamard at input, weight_input", "u: hadamard at weight_output, output")
    assert ck.details["transform_online"] is True
    # SGLang never reads transform_config (no file under sglang/srt/layers/quantization mentions it);
    # vLLM applies it (compressed_tensors.py:111-112, TransformConfig.model_validate)
    s = resolve(SGL, ck, capability=90)
    f = kinds(s)["transform_config_ignored"]
    assert f.severity == "warning" and "outputs are wrong" in f.message
    assert "transform_config_ignored" not in kinds(resolve(VLLM, ck, capability=90))
    # offline-only rotations (fused into the weights) are harmless: an info, not a warning
    fused = {**QUIP, "transform_config": {"config_groups": {"r1": {"type": "hadamard", "apply": [
        {"targets": ["Linear"], "location": "weight_input"}]}}}}
    assert kinds(resolve(SGL, parse_quantization_config(fused), capability=90))[
        "transform_config_ignored"].severity == "info"
    cfg = {**bundled("meta-llama/Llama-3.1-8B.json"), "quantization_config": QUIP}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    out = cli("inspect", str(tmp_path)).stdout
    assert "transform_config (applied at run time): v: hadamard" in out


# ---------------------------------------------------------------------------------------------
# GGUF weights
# ---------------------------------------------------------------------------------------------


def test_gguf_only_folder_is_recognised(cli, tmp_path):
    (tmp_path / "Llama-3-8B-Instruct-Q4_K_M.gguf").write_bytes(b"GGUF")
    d = cli("inspect", str(tmp_path), "--format", "json")
    assert d.code == 0, d.stderr  # was: "has no config.json", exit 2
    doc = d.json()
    assert doc["checkpoint"]["family"] == "gguf" and doc["checkpoint"]["details"]["quant_type"] == "Q4_K_M"
    by = {e["engine"]: e for e in doc["engines"]}
    # both default loaders look for safetensors / .bin in the folder: vllm default_loader.py:258-261,
    # sglang model_loader/loader.py:579-582 "Cannot find any model weights with `...`"
    for e in by.values():
        f = next(x for x in e["findings"] if x["kind"] == "no_weights")
        assert f["engine_message"] == f"Cannot find any model weights with `{tmp_path}`"


def test_config_and_gguf_folder_is_not_16_bit(cli, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(bundled("meta-llama/Llama-3.1-8B.json")))
    (tmp_path / "model-Q8_0.gguf").write_bytes(b"GGUF")
    doc = cli("inspect", str(tmp_path), "--format", "json").json()
    assert doc["checkpoint"]["family"] == "gguf" and doc["size"] is None  # was: 16-bit, loads
    for e in doc["engines"]:  # the folder's weights are .gguf: neither default loader finds safetensors
        assert [f["kind"] for f in e["findings"] if f["severity"] == "error"] == ["no_weights"], e["engine"]


def test_gguf_file_loads_in_sglang_not_in_vllm(tmp_path):
    from quantadvise.api.inspect import inspect

    f = tmp_path / "model-Q4_K_M.gguf"
    f.write_bytes(b"GGUF")
    r = inspect(str(f))
    by = {e.engine: e for e in r.engines}
    # SGLang takes a .gguf file path (utils/hf_transformers/common.py:396-401 check_gguf_file) with its
    # GGUFConfig; vLLM 0.33.0 has neither a gguf method nor a GGUF load format
    assert by["sglang"].resolved_method == "gguf" and not by["sglang"].refused
    assert by["vllm"].refused and "gguf_unsupported" in kinds(by["vllm"])


# ---------------------------------------------------------------------------------------------
# Architectures the inventory did not know
# ---------------------------------------------------------------------------------------------

NEMOTRON_H = {  # NVIDIA-Nemotron-3-Nano-30B-A3B config.json (the fields that shape the weights)
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "num_hidden_layers": 52,
    "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME", "hidden_size": 2688,
    "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 131072,
    "intermediate_size": 1856, "n_routed_experts": 128, "num_experts_per_tok": 6, "moe_intermediate_size": 1856,
    "moe_shared_expert_intermediate_size": 3712, "n_shared_experts": 1, "mamba_num_heads": 64, "mamba_head_dim": 64,
    "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4, "mlp_hidden_act": "relu2", "tie_word_embeddings": False,
    "torch_dtype": "bfloat16"}


def test_nemotron_h_is_sized_block_by_block():
    a = parse_config(NEMOTRON_H)
    total = inventory_of(a).total_params()
    # NVIDIA's model card: 31.6B total parameters. By hand, per block kind of the 52-letter pattern
    # (23 M, 23 E, 6 *): embedding + lm_head 2 x 131072 x 2688 = 704.6M; attention 6 x (2 x 4096 +
    # 2 x 256) x 2688 = 140.4M; experts 23 x 128 x 2 x 2688 x 1856 (squared-ReLU: up + down) = 29.37B;
    # shared experts 23 x 2 x 2688 x 3712 = 459.0M; Mamba-2 in_proj 23 x (2x4096 + 2x8x128 + 64) x 2688
    # + out_proj 23 x 2688 x 4096 = 890.3M (+ small conv / norm / router tensors)
    assert 31.5e9 < total < 31.7e9  # was 102e9: every layer got attention and 128 gated experts
    assert a.attention_layers.full == 6 and a.attention_layers.linear == 23  # KV cache only on 6 layers


def test_mla_without_head_dim_parses():
    # an MLA config need not set head_dim (its heads are qk_nope + qk_rope wide), and hidden_size need
    # not be a multiple of the head count
    cfg = {**bundled("deepseek-ai/DeepSeek-V3.json"), "hidden_size": 7000, "num_attention_heads": 128}
    cfg.pop("head_dim", None)
    a = parse_config(cfg)
    assert a.head_dim == cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]


def test_an_index_that_disagrees_with_the_inventory_is_reported(tmp_path):
    from quantadvise.api.inspect import inspect

    cfg = bundled("meta-llama/Llama-3.1-8B.json")
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "model_type": "some_new_arch"}))
    # the shards hold 10 GB more than a Llama-shaped inventory can account for
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 26_000_000_000},
                                                                        "weight_map": {}}))
    r = inspect(str(tmp_path))
    assert any("model.safetensors.index.json says the shards hold 26.00 GB" in w for w in r.warnings)
    # an index that agrees says nothing
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": r.size.total_bytes},
                                                                        "weight_map": {}}))
    assert not any("safetensors.index" in w for w in inspect(str(tmp_path)).warnings)


# ---------------------------------------------------------------------------------------------
# GPUs users still deploy on
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "gid", "cap"), [("v100", "v100-sxm2-32gb", 70), ("t4", "t4", 75),
                                                  ("a6000", "rtx-a6000", 86), ("rtx-3090", "rtx-3090", 86),
                                                  ("Tesla T4", "t4", 75), ("a10", "a10", 86), ("l4", "l4", 89)])
def test_common_gpus_are_on_file(name, gid, cap):
    g = catalog.get_gpu(name)
    assert (g.id, g.capability) == (gid, cap) and g.source.startswith("https://")


@pytest.mark.parametrize(("typed", "first"), [("v100s", "v100-sxm2-16gb"), ("rtx-3080", "rtx-3090"),
                                              ("a5000", "rtx-a6000"), ("mi250", "mi300x"), ("h300", "h200")])
def test_an_unknown_gpu_suggests_its_family(typed, first):
    with pytest.raises(UnknownNameError) as e:
        catalog.get_gpu(typed)
    assert e.value.suggestions[0] == first


def test_t4_refuses_what_its_capability_cannot_run():
    # vLLM fp8 config gate 75 passes on a T4 (fp8.py:147 `return 75`) but the weights run weight-only
    # through Marlin; ModelOpt FP8 needs 80 (modelopt.py ModelOptFp8Config.get_min_capability)
    t4 = catalog.get_gpu("t4").capability
    r = resolve(VLLM, parse_quantization_config({"quant_method": "fp8", "activation_scheme": "dynamic"}),
                capability=t4)
    assert not r.refused and "fp8_marlin_weight_only" in kinds(r)
    mo = parse_quantization_config({"quant_method": "modelopt", "quant_algo": "FP8"})
    assert "capability_too_low" in kinds(resolve(VLLM, mo, capability=t4))
