"""The deploy section says everything the pricing assumed (issue 27): speculative decoding is on in the
commands, a W4A8 winner's SGLang refusal says why, FP8 KV on gpt-oss follows the engines' known issues,
and the accuracy filter's rule for a range that straddles the tolerance is the one stated."""

from __future__ import annotations

import json
import shlex

import pytest

from quantadvise.engines.flags import speculative_args


def _args(cmd: str) -> list[str]:
    return shlex.split(cmd)


def _vllm_spec(argv: list[str]) -> dict:
    """The JSON object vLLM builds from ``--speculative-config.KEY VALUE`` pairs (argparse_utils.py:476-479:
    json.loads of each value, falling back to the string)."""
    out: dict = {}
    for i, a in enumerate(argv):
        if a.startswith("--speculative-config."):
            raw = argv[i + 1]
            try:
                out[a.split(".", 1)[1]] = json.loads(raw)
            except ValueError:
                out[a.split(".", 1)[1]] = raw
    return out


def test_speculative_flags_per_engine():
    # vLLM: --speculative-config keys method, model, num_speculative_tokens (vllm/config/speculative.py:413-419),
    # written as dotted keys, which vllm/utils/argparse_utils.py:461-499 merges into the one JSON object
    v = speculative_args("vllm", vllm_method="eagle3", sglang_algorithm="EAGLE3", draft="org/draft", tokens=3)
    assert _vllm_spec(v) == {"method": "eagle3", "model": "org/draft", "num_speculative_tokens": 3}
    # SGLang: one chain of K: num_steps K, topk 1, num_draft_tokens K + 1 (speculative_hook.py:1255-1265 sets it so)
    s = speculative_args("sglang", vllm_method="eagle3", sglang_algorithm="EAGLE3", draft="org/draft", tokens=3)
    assert s == ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "org/draft",
                 "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
    # MTP layers inside the checkpoint: no draft model (SGLang warns "DeepSeek MTP does not require setting
    # speculative_draft_model_path.", speculative_hook.py:1155)
    m = speculative_args("vllm", vllm_method="deepseek_mtp", sglang_algorithm="NEXTN", draft=None, tokens=1)
    assert _vllm_spec(m) == {"method": "deepseek_mtp", "num_speculative_tokens": 1}


def test_recommend_turns_on_the_priced_speculation_with_the_published_draft(cli):
    doc = cli("recommend", "-m", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100", "--prompt", "1000", "--output",
              "200", "--itl-ms", "50", "--spec-tokens", "3", "--acceptance", "0.6", "--format", "json").json()
    vllm, sglang = _args(doc["engine_args"]["vllm"]), _args(doc["engine_args"]["sglang"])
    cfg = _vllm_spec(vllm)
    # data/speculators.yaml: RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3 (vLLM's EAGLE documentation)
    assert cfg == {"method": "eagle3", "model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
                   "num_speculative_tokens": 3}
    assert sglang[sglang.index("--speculative-draft-model-path") + 1] == cfg["model"]
    assert sglang[sglang.index("--speculative-num-steps") + 1] == "3"
    assert any("speculative decoding priced at 3 drafted tokens" in n for n in doc["checkpoint"]["notes"])


def test_without_a_published_draft_the_command_names_a_placeholder_and_says_so(cli):
    doc = cli("recommend", "-m", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--prompt", "1000", "--output", "200",
              "--itl-ms", "50", "--spec-tokens", "3", "--acceptance", "0.6", "--format", "json").json()
    cfg = _vllm_spec(_args(doc["engine_args"]["vllm"]))
    assert cfg["model"] == "DRAFT" and cfg["num_speculative_tokens"] == 3
    assert any("no published draft" in n and "DRAFT" in n for n in doc["checkpoint"]["notes"])


def test_no_speculation_no_flags(cli):
    doc = cli("recommend", "-m", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100", "--batch", "8",
              "--format", "json").json()
    assert all("speculative" not in (c or "") for c in doc["engine_args"].values())


def test_w4a8_winner_says_why_sglang_has_no_command(cli):
    # sglang 0.5.23 compressed_tensors.py:453 _is_wint4afp8 is tested only by get_moe_scheme
    # (CompressedTensorsW4AFP8MoE, :993); the dense dispatch ends in :862 `raise NotImplementedError("No
    # compressed-tensors compatible scheme was found.")`
    doc = cli("recommend", "-m", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--batch", "64", "--ctx", "8192",
              "--format", "json").json()
    assert doc["scheme"]["id"] == "w4a8-fp8" and doc["engine_args"]["sglang"] is None
    note = next(n for n in doc["checkpoint"]["notes"] if n.startswith("SGLang 0.5.23 refuses it"))
    assert "No compressed-tensors compatible scheme was found." in note and "MoE-only" in note


@pytest.mark.parametrize(("engine", "kv"), [("vllm", "kv-fp8"), ("sglang", "kv-bf16")])
def test_fp8_kv_on_gpt_oss_follows_each_engines_known_issues(cli, engine, kv):
    # gpt-oss-20b, batch 64 x 16k: KV is 67% of a decode step's bytes (>= the 25% share), and a bf16 cache holds
    # all 64 on one H100. vLLM: near-parity published (vllm-project/vllm#25674: GPQA 0.7904 fp8 KV vs 0.7910) ->
    # kv-fp8 by the share. SGLang: accuracy losses reported (#9783: GPQA 0.7115 -> 0.6559; #19107; #28144) -> the
    # share alone does not take kv-fp8
    doc = cli("recommend", "-m", "openai/gpt-oss-20b", "--gpu", "h100", "--batch", "64", "--ctx", "16384",
              "--engine", engine, "--format", "json").json()
    node = next(t for t in doc["trace"] if t["node"] == "kv")
    assert node["numbers"]["kv_share_of_step_bytes"] >= 0.25
    assert doc["kv"]["dtype"] == kv
    assert node["numbers"]["kv_issue"] == f"{engine}-gpt-oss-fp8-kv"
    said = " ".join(node["reasons"])
    assert ("25674" in said) if engine == "vllm" else ("9783" in said and "19107" in said)


def test_a_range_that_straddles_the_tolerance_is_a_caution():
    # the one rule (evals.priors.action_of): veto when tolerance <= low, caution when low < tolerance <= high.
    # INT8 W8A8's published range 0-3 points at --accuracy-tolerance 0.5: 0 < 0.5 <= 3 -> caution, never a veto
    from quantadvise.evals.priors import action_of

    assert action_of((0.0, 3.0), 0.5) == "caution"
    assert action_of((0.3, 3.9), 0.3) == "veto"  # inclusive: the best case uses the tolerance up
    assert action_of((0.0, 0.5), 0.5) == "caution"
    assert action_of((0.0, 0.5), 0.6) == "info"


def test_the_straddling_int8_pick_carries_its_caution(cli):
    # recommend -m meta-llama/Meta-Llama-3-8B --gpu a100-80gb -b 256 --accuracy-tolerance 0.5 picks INT8 W8A8 (int8
    # tensor cores, 1.42x bf16) with its caution: the published range 0-3 reaches 0.5 but its best case does not
    r = cli("recommend", "-m", "meta-llama/Meta-Llama-3-8B", "--gpu", "a100-80gb", "-b", "256",
            "--accuracy-tolerance", "0.5", "--format", "json")
    doc = r.json()
    assert doc["scheme"]["id"] == "w8a8-int8"
    assert any("expected drop 0-3 points (tolerance 0.5)" in w for w in doc["warnings"])


def test_a_recorded_tie_list_lets_a_published_checkpoint_lead():
    # the hook for ties wider than defaults.TIE (a speed model's uncertainty band): an option's `ties`
    from types import SimpleNamespace

    from quantadvise.advisor.published import prefer_published

    a = SimpleNamespace(id="fp8-block", published=None, native=False, concurrency=64, ties=("fp8-dynamic",))
    b = SimpleNamespace(id="fp8-dynamic", published=SimpleNamespace(id="RedHatAI/x"), native=False, concurrency=64)
    c = SimpleNamespace(id="w4a16", published=SimpleNamespace(id="RedHatAI/y"), native=False, concurrency=64)
    order, displaced = prefer_published([a, c, b])
    assert [o.id for o in order] == ["fp8-dynamic", "fp8-block", "w4a16"] and displaced is a
    a.ties = ()
    assert prefer_published([a, c, b]) == ([a, c, b], None)  # no tie list: the ranking's own order stands
