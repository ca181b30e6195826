"""`quantadvise engines` and `quantadvise inspect` through the real entry point."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def write_checkpoint(folder: Path, name: str) -> Path:
    """A checkpoint folder with the fixture's config.json and side files."""
    d = fixture(name)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(d["config"]))
    for key, fn in (("quantize_config", "quantize_config.json"), ("hf_quant_config", "hf_quant_config.json"),
                    ("quantization_config_json", "quantization_config.json"),
                    ("quant_config_json", "quant_config.json")):
        if key in d:
            (folder / fn).write_text(json.dumps(d[key]))
    return folder


# ---------------------------------------------------------------------------------------------
# engines
# ---------------------------------------------------------------------------------------------


def test_engines_list_json_counts(cli):
    r = cli("engines", "list", "--engine", "sglang", "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert doc["schema_version"] == 1 and doc["version"] == "0.5.23"
    real = [m for m in doc["methods"] if m["cli_choice"] and m["kind"] != "escape_hatch"]
    assert len(real) == doc["counts"]["real_cli_methods"] == 30
    assert doc["counts"]["real_cli_not_optimized"] == sum(1 for m in real if m["optimized"] is False) == 12


def test_engines_list_table(cli):
    r = cli("engines", "--engine", "vllm@0.33.0")
    assert r.code == 0 and "AutoAWQConfig" in r.stdout and "fp8_per_block (deferred)" not in r.stdout
    assert "30 methods" in r.stdout and "22 KV cache dtypes" in r.stdout


def test_engines_show_a_method(cli):
    r = cli("engines", "show", "awq", "--engine", "vllm", "--format", "json")
    assert r.code == 0
    doc = r.json()
    assert doc["method"]["config_class"] == "AutoAWQConfig"
    assert sorted(doc["same_class"]) == ["auto_awq", "awq_marlin"]
    assert doc["elsewhere"]["SGLang 0.5.23"]["config_class"] == "AWQConfig"
    # a bare method name means show
    assert "AWQConfig" in cli("engines", "awq", "--engine", "sglang").stdout


def test_engines_diff(cli):
    r = cli("engines", "diff", "--format", "json")
    assert r.code == 0
    doc = r.json()
    assert {"bitsandbytes", "gguf"} <= set(doc["only_b"])
    assert {"fbgemm_fp8", "fp8_per_tensor"} <= set(doc["only_a"])
    assert "fp8_e5m2" in doc["kv_both"] and "mxfp8" in doc["kv_only_b"]
    assert len(doc["not_optimized"]["SGLang 0.5.23"]) == 12
    table = cli("engines", "diff").stdout
    assert "only in SGLang 0.5.23" in table


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["engines", "show", "awqq"], "did you mean 'awq'"),
        (["engines", "list", "--engine", "tgi"], "unknown engine 'tgi'"),
        (["engines", "list", "--engine", "vllm", "--version", "v1x"], "'v1x' is not a vLLM release"),
        (["engines", "show"], "show needs a method name"),
        # positional arguments are named as such: there is no --name or --second option
        (["engines", "diff", "vllm@", "sglang"], "the engine argument expects NAME or NAME==VERSION"),
        (["engines", "diff", "vllm", "sglang@"], "the second engine argument expects NAME or NAME==VERSION"),
    ],
)
def test_engines_errors_are_one_line(cli, args, needle):
    r = cli(*args)
    assert r.code == 2 and r.stdout == ""
    assert r.stderr.startswith("Error: ") and needle in r.stderr and r.stderr.count("\n") == 1


# ---------------------------------------------------------------------------------------------
# inspect
# ---------------------------------------------------------------------------------------------


def test_inspect_awq_folder_json(cli, tmp_path):
    folder = write_checkpoint(tmp_path / "llama2-awq", "thebloke-llama-2-7b-awq")
    r = cli("inspect", str(folder), "--gpu", "a100-80gb", "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert doc["checkpoint"]["family"] == "awq"
    assert doc["groups"][0]["preset"] == "awq" and doc["groups"][0]["modules"] == 32 * 7
    by = {e["engine"]: e for e in doc["engines"]}
    assert by["vllm"]["resolved_method"] == "auto_awq"
    assert by["sglang"]["resolved_method"] == "awq_marlin"
    # Llama-2-7B AWQ g128 with zero-points, AutoAWQ GEMM packing, fp16 elsewhere. Per layer the
    # linear N*K sum is 4*4096*4096 + 3*11008*4096 = 202,375,168: qweight N*K/2 bytes, qzeros
    # N*K/128/2 and fp16 scales N*K/128*2 -> 101,187,584 + 790,528 + 3,162,112 = 105,140,224;
    # x 32 layers = 3,364,487,168. embed + lm_head fp16 2*32000*4096*2 = 524,288,000; norms
    # 65*4096*2 = 532,480. Total 3,889,307,648.
    assert doc["size"]["total_bytes"] == 3_364_487_168 + 524_288_000 + 532_480


def test_inspect_table_has_group_rows_and_engine_messages(cli, tmp_path):
    folder = write_checkpoint(tmp_path / "fp8", "neuralmagic-qwen2-7b-instruct-fp8-static")
    r = cli("inspect", str(folder), "--engine", "vllm==0.33.0", "--kv-cache-dtype", "fp8_e5m2", "--gpu", "h100")
    assert r.code == 0, r.stderr
    assert "fp8_e4m3, per-tensor static fp32 scale" in r.stdout
    assert "REFUSES" in r.stdout
    assert "vLLM 0.33.0 says: fp8_e5m2 kv-cache is not supported with fp8 checkpoints." in r.stdout


def test_inspect_reads_autogptq_side_file(cli, tmp_path):
    folder = write_checkpoint(tmp_path / "gptq", "seonglae-llama-2-7b-chat-hf-gptq")
    doc = cli("inspect", str(folder), "--format", "json").json()
    assert doc["checkpoint"]["found_in"] == "quantize_config.json"
    pub = fixture("seonglae-llama-2-7b-chat-hf-gptq")["published_size"]["total_size_bytes"]
    assert abs(doc["size"]["total_bytes"] - pub) / pub < 0.005
    vllm = next(e for e in doc["engines"] if e["engine"] == "vllm")
    assert vllm["findings"][0]["kind"] == "config_in_side_file"


def test_inspect_a_bare_quantization_config_file(cli, tmp_path):
    p = tmp_path / "quantization_config.json"
    p.write_text(json.dumps(fixture("gptqmodel-gguf-q4-k-m-quantization-config")["config"]["quantization_config"]))
    doc = cli("inspect", str(p), "--format", "json").json()
    assert doc["checkpoint"]["family"] == "gguf" and doc["size"] is None
    vllm = next(e for e in doc["engines"] if e["engine"] == "vllm")
    assert vllm["findings"][0]["kind"] == "unknown_method"


def test_inspect_bundled_unquantized_model_with_online_fp8(cli):
    doc = cli("inspect", "meta-llama/Llama-3-8B", "-q", "fp8", "--format", "json").json()
    assert doc["checkpoint"] is None and doc["size"]["total_bytes"] == 16_060_522_496
    vllm = next(e for e in doc["engines"] if e["engine"] == "vllm")
    assert vllm["resolved_method"] == "fp8_per_tensor"
    assert vllm["findings"][0]["engine_message"].startswith("--quantization fp8 is deprecated")


def test_inspect_gpu_as_capability(cli, tmp_path):
    folder = write_checkpoint(tmp_path / "awq", "thebloke-llama-2-7b-awq")
    doc = cli("inspect", str(folder), "--gpu", "sm75", "--engine", "sglang", "--format", "json").json()
    (e,) = doc["engines"]
    assert e["capability"] == 75 and e["resolved_method"] == "awq"  # no Marlin below SM80
    assert e["findings"][0]["kind"] == "not_optimized"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('[1, 2, 3]', "expected a JSON object"),
        ('{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, '
         '"intermediate_size": 128, "vocab_size": 100, "quantization_config": {"quant_method": "awq", "w_bit": 4, '
         '"q_group_size": 0}}', "q_group_size"),
        ('{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, '
         '"intermediate_size": 128, "vocab_size": 100, "quantization_config": {"bits": 4, "group_size": 128, '
         '"sym": true, "desc_act": false}}', "quant_method"),
        ('{"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"], '
         '"weights": {"num_bits": 4, "strategy": "diagonal"}}}}', "strategy"),
        ('{"quant_method": "gptq", "bits": "four", "group_size": 128}', "bits"),
        ('{not json', "invalid JSON"),
    ],
)
def test_inspect_malformed_is_exit_2_one_line(cli, tmp_path, content, needle):
    p = tmp_path / "config.json"
    p.write_text(content)
    r = cli("inspect", str(p))
    assert r.code == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.startswith("Error: ") and needle in r.stderr and r.stderr.count("\n") == 1


def test_inspect_refuses_50_mb_of_junk_quickly(cli, tmp_path):
    p = tmp_path / "config.json"
    with p.open("wb") as f:
        f.write(b'{"junk": "' + b"x" * (50 * 1024 * 1024) + b'"}')
    t0 = time.perf_counter()
    r = cli("inspect", str(p))
    assert time.perf_counter() - t0 < 2.0
    assert r.code == 2 and "too large" in r.stderr and r.stderr.count("\n") == 1


def test_every_engines_and_inspect_format_has_a_renderer():
    from quantadvise.cli.common import Format
    from quantadvise.report import RENDERERS

    for kind in ("engines", "engine_method", "engines_diff", "inspect"):
        for fmt in Format:
            assert (kind, fmt.value) in RENDERERS


# ---------------------------------------------------------------------------------------------
# checkpoint audit: conflicting versions, a release against itself, malformed compressed-tensors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [("engines", "list", "vllm@0.30.0", "--version", "0.33.0"),
                                  ("engines", "list", "--version", "0.31.0", "-e", "vllm==0.32.0"),
                                  ("engines", "show", "awq", "-e", "vllm==0.32.0", "--version", "0.31.0")])
def test_engines_conflicting_versions_is_one_error(cli, args):
    r = cli(*args)
    assert r.code == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: conflicting versions") and "--version" in lines[0]
    # the same version twice is no conflict
    assert cli("engines", "list", "vllm@0.32.0", "--version", "0.32.0").code == 0


def test_engines_diff_of_a_release_with_itself_says_so(cli):
    r = cli("engines", "diff", "vllm@0.33.0", "vllm@0.33.0", "--format", "json")
    assert r.code == 0
    assert any("compared with itself" in w for w in r.json()["warnings"])


@pytest.mark.parametrize(("group", "field"), [
    ({"targets": "Linear", "weights": {"num_bits": 8, "type": "float", "strategy": "tensor"}}, "targets"),
    ({"targets": ["Linear"], "weights": None,
      "input_activations": {"num_bits": 8, "type": "float", "strategy": "tensor"}}, "weights"),
])
def test_inspect_malformed_compressed_tensors_group_is_one_error(cli, tmp_path, group, field):
    # compressed-tensors QuantizationScheme: targets: list[str], and both engines validate every group's weights
    # with QuantizationArgs.model_validate (vLLM compressed_tensors.py:330-335)
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
           "torch_dtype": "bfloat16", "quantization_config": {"quant_method": "compressed-tensors",
                                                              "format": "float-quantized",
                                                              "config_groups": {"group_0": group}}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = cli("inspect", str(tmp_path), "--gpu", "h100")
    lines = r.stderr.strip().splitlines()
    assert r.code == 2 and len(lines) == 1 and lines[0].startswith("Error: ")
    assert f"config_groups.group_0.{field}" in lines[0]


@pytest.mark.parametrize("gpu", ["99.9", "sm0", "0.0", "sm999", "2.0", "13.0", "sm_130"])
def test_inspect_gpu_that_is_no_compute_capability(cli, gpu):
    # CUDA compute capabilities run from Kepler's 3.0 to Blackwell's 12.x; '99.9' was judged as "sm999
    # (compute capability 999)" while 'sm999' was an unknown GPU
    r = cli("inspect", "meta-llama/Llama-3-8B", "--gpu", gpu)
    errors = [x for x in r.stderr.splitlines() if x.startswith("Error: ")]
    assert r.code == 2 and len(errors) == 1 and f"--gpu {gpu!r}" in errors[0] and "compute capability" in errors[0]


@pytest.mark.parametrize(("gpu", "cap"), [("9.0", 90), ("sm90", 90), ("sm_120", 120), ("12.0", 120), ("75", 75),
                                          ("3.0", 30), ("12.9", 129)])
def test_inspect_gpu_as_a_compute_capability(gpu, cap):
    import quantadvise as qa

    assert qa.inspect("meta-llama/Llama-3-8B", gpu=gpu).gpu.capability == cap  # major x 10 + minor
