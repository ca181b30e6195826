"""`size` and `roofline` say what they would otherwise do silently: a context the engines refuse, a
tensor-parallel degree the heads do not split over, a flag that changes nothing, a regrouped scheme."""

from __future__ import annotations

import pytest

# Meta-Llama-3-8B's config.json: max_position_embeddings 8192, no rope scaling (data/models). vLLM 0.33.0
# refuses a longer max_model_len (vllm/config/model.py:2664) and SGLang 0.5.23 a longer --context-length
# (sglang/srt/configs/model_config.py:1291-1316) unless an override env var is set.
LLAMA3 = "meta-llama/Meta-Llama-3-8B"


def test_size_warns_when_ctx_is_over_the_models_limit(cli):
    r = cli("size", LLAMA3, "--ctx", "131072", "--format", "json")
    assert r.code == 0  # `size` answers "what would it cost"; it says the engines refuse it
    (w,) = [w for w in r.json()["warnings"] if w.startswith("--ctx")]
    assert "8,192 tokens per sequence (max_position_embeddings)" in w
    from quantadvise import catalog

    newest = {e: catalog.engine_versions(e)[-1] for e in ("vllm", "sglang")}  # `size` names the newest releases
    assert f"vLLM {newest['vllm']} and SGLang {newest['sglang']}" in w and "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in w
    assert "8,192 tokens per sequence" in r.stderr  # and on stderr
    assert not [w for w in cli("size", LLAMA3, "--ctx", "8192", "--format", "json").json()["warnings"]
                if w.startswith("--ctx")]


def test_roofline_warns_for_each_context_over_the_limit(cli):
    r = cli("roofline", "-m", LLAMA3, "--ctx", "512,2k,32k,131072", "-b", "1", "--format", "json")
    assert r.code == 0, r.stderr
    (w,) = [w for w in r.json()["warnings"] if w.startswith("--ctx")]
    assert w.startswith("--ctx 32,768 and 131,072 are longer than meta-llama/Meta-Llama-3-8B serves")
    assert "--ctx 32,768" in r.stderr.replace("\n", " ")


def test_size_refuses_gpus_the_heads_do_not_split_over(cli):
    # Meta-Llama-3-8B has 32 attention heads: 32 % 3 != 0; recommend and roofline refuse it the same way
    r = cli("size", LLAMA3, "--gpu", "h100", "--gpus", "3")
    assert r.code == 2 and r.stdout == ""
    assert r.stderr.startswith("Error: --gpus 3: the model's 32 attention heads do not split over 3 GPUs")
    assert r.stderr.count("Error:") == 1


@pytest.mark.parametrize(("args", "flag", "add"), [
    (("--gpus", "2"), "--gpus", "--gpu"),
    (("--memory-utilization", "0.8"), "--memory-utilization", "--gpu"),
    (("--reserve-gb", "4"), "--reserve-gb", "--gpu"),
    (("--batch", "8"), "--batch", "--ctx"),
    (("--kv-dtype", "kv-fp8"), "--kv-dtype", "--ctx"),
])
def test_size_says_a_flag_has_no_effect(cli, args, flag, add):
    r = cli("size", LLAMA3, *args, "--format", "json")
    assert r.code == 0
    assert r.json()["warnings"] == [f"{flag} has no effect without {add}: add {add} " + (
        "(e.g. --gpu h100-sxm) to size the fit" if add == "--gpu" else "(tokens per sequence) to size the KV cache")]
    assert f"{flag} has no effect without {add}" in r.stderr


def test_size_mtp_on_a_model_without_mtp_layers(cli):
    r = cli("size", LLAMA3, "--mtp", "--format", "json")
    assert r.json()["warnings"] == ["--mtp has no effect: this model has no multi-token-prediction layers"]
    # DeepSeek-V3 has one MTP layer (num_nextn_predict_layers: 1): --mtp counts it, no warning
    r = cli("size", "deepseek-ai/DeepSeek-V3", "--mtp", "--format", "json")
    assert not [w for w in r.json()["warnings"] if "--mtp" in w]


def test_size_flags_that_do_apply_say_nothing(cli):
    r = cli("size", LLAMA3, "--gpu", "h100", "--gpus", "2", "--reserve-gb", "4", "--ctx", "4096", "--batch", "8",
            "--kv-dtype", "kv-fp8", "--format", "json")
    assert r.code == 0 and r.json()["warnings"] == [] and r.stderr == ""


def test_size_regrouped_scheme_describes_its_group(cli):
    # w4a16 is group 128 (data/schemes.yaml); --group 64 makes it w4a16-g64: group 64 in table and JSON
    r = cli("size", LLAMA3, "--scheme", "w4a16", "--group", "64", "--format", "json")
    d = r.json()["scheme"]
    assert d["id"] == "w4a16-g64"
    assert "group 64" in d["description"] and "group 128" not in d["description"]
    r = cli("size", LLAMA3, "--scheme", "w4a16", "--group", "64")
    assert "w4a16-g64 — int4 weight-only, group 64" in r.stdout
    # per-channel (-1): the preset's "group 128" is not true any more either
    d = cli("size", LLAMA3, "--scheme", "w4a16", "--group", "-1", "--format", "json").json()["scheme"]
    assert d["description"].endswith("weights regrouped by --group to per-channel scales")
    # the preset's own group: nothing changes
    d = cli("size", LLAMA3, "--scheme", "w4a16", "--group", "128", "--format", "json").json()["scheme"]
    assert d["description"] == "int4 weight-only, group 128, symmetric, bf16 scale, compressed-tensors pack-quantized layout"


def test_size_of_a_model_released_quantized_is_the_checkpoint_as_shipped(cli):
    # openai/gpt-oss-120b ships MXFP4 experts (its config.json quantization_config, quant_method mxfp4; attention,
    # router, embedding and lm_head unquantized): 36 layers x 128 experts x 3 x 2880 x 2880 = 114,661,785,600
    # expert weights at 4.25 bits (4 + one 8-bit e8m0 scale per 32) = 60,914,073,600 B, plus the other
    # 2,167,371,072 params in bf16 = 4,334,742,144 B: 65,248,815,744 B — not the 233.66 GB of all 116.83B
    # parameters in bf16. With no scheme asked for, `size` sizes what is stored; --scheme bf16 the 16-bit model.
    import json

    r = cli("size", "openai/gpt-oss-120b", "--format", "json")
    doc = json.loads(r.stdout)
    assert r.code == 0 and doc["scheme"]["id"] == "native-mxfp4" and doc["total_bytes"] == 65_248_815_744
    assert any("sized as shipped" in n for n in doc["notes"])
    bf16 = json.loads(cli("size", "openai/gpt-oss-120b", "--scheme", "bf16", "--format", "json").stdout)
    assert bf16["scheme"]["id"] == "bf16" and bf16["total_bytes"] > 3 * doc["total_bytes"]
    # a 16-bit checkpoint is sized as bf16, as before
    assert json.loads(cli("size", "--format", "json").stdout)["scheme"]["id"] == "bf16"
