"""Values of the wrong shape where a reader expected another (found by the fuzz suite at 4x its budget): each
is one clean outcome — a report or one ``Error:`` line — never a traceback. The config.json, GPU-count and
compose tests raised on the code before the fix; the genai-perf ones guard the reader the same fix touched."""

from __future__ import annotations

import json

import pytest

from quantadvise.artifacts.launch import gpu_request_count
from quantadvise.catalog.resolve import load_model


def _llama_like(**extra: object) -> dict:
    cfg = dict(load_model("meta-llama/Meta-Llama-3-8B")[0].raw_quantization_config or {})
    cfg.update({"architectures": ["LlamaForCausalLM"], "model_type": None, "hidden_size": 4096,
                "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
                "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192})
    cfg.update(extra)
    return cfg


def test_check_with_a_text_config_that_is_not_an_object(cli, tmp_path):
    # "text_config": true beside "model_type": null: the dtype lookup read text_config as a mapping
    p = tmp_path / "config.json"
    p.write_text(json.dumps(_llama_like(text_config=True)))
    r = cli("check", "--model", str(p), "--gpu", "h100", "--format", "json")
    assert r.code in (0, 1, 2)
    assert r.code != 2 or r.stderr.startswith("Error:"), r.stderr


@pytest.mark.parametrize(("text", "count"), [("2", 2), ("'device=0,1'", 2), ("all", None),
                                              ("9" * 4301, None), ("1234567890", None), ("\u00b2", None)])
def test_a_gpu_request_is_a_count_or_unknown(text, count):
    # 4,301 digits is past what int() converts; a superscript two is a digit int() refuses
    assert gpu_request_count(text) == count


def test_a_compose_file_asking_for_4301_digits_of_gpus(cli, tmp_path):
    (tmp_path / "docker-compose.yml").write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.12.0\n"
        "    command: [\"--model\", \"meta-llama/Meta-Llama-3-8B\"]\n"
        "    deploy:\n      resources:\n        reservations:\n          devices:\n"
        "            - driver: nvidia\n              count: " + "9" * 4301 + "\n              capabilities: [gpu]\n")
    r = cli("check", str(tmp_path), "--gpu", "h100", "--format", "json")
    assert r.code in (0, 1, 2)
    assert r.code != 2 or r.stderr.startswith("Error:"), r.stderr


@pytest.mark.parametrize("input_config", [{"model_names": 5, "perf_analyzer": {"stimulus": "x"}},
                                          {"model_names": ["m"], "perf_analyzer": [1, 2]}])
def test_a_genai_perf_export_with_misshapen_config(cli, tmp_path, input_config):
    p = tmp_path / "profile_export_genai_perf.json"
    p.write_text(json.dumps({"input_config": input_config, "output_token_throughput": {"avg": 100.0}}))
    r = cli("validate", "--bench", str(p))
    assert r.code == 2 and r.stderr.startswith("Error:") and len(r.stderr.strip().splitlines()) == 1, r.stderr
