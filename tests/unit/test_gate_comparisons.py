"""The gate compares a deployment only with what it could run instead, holds shipped checkpoints to
their publisher's evaluation, reads the engines' config override flags, and quotes what the engines
really print (audit gate #1, #5, #6, #7, #8; cli #5)."""

from __future__ import annotations

from quantadvise import catalog
from quantadvise.engines.flags import model_overrides
from quantadvise.engines.startup import derived_max_len
from quantadvise.gate.accuracy import evidence_required
from quantadvise.gate.engine import dtype_findings
from quantadvise.gate.findings import Findings, Site
from quantadvise.gate.result import MemoryFit, PerfCheck
from quantadvise.gate.speed import performance_findings
from quantadvise.gate.target import Served, accuracy_policy, released_quantized

GiB = 1024**3


def site(**kw) -> Site:
    base = {"key": "run.sh#vllm", "label": "run.sh:1", "file": "run.sh", "line": 1,
            "flag_lines": {"model": 1, "quantization": 1}}
    base.update(kw)
    return Site(**base)


def perf(speedup: float, slowdown: float | None, **kw) -> PerfCheck:
    tps = 1000.0
    base = dict(scheme="fp8-block", kv_dtype="kv-bf16", tokens_per_s=tps, step_time_s=0.05,
                bf16_tokens_per_s=tps / speedup, speedup_vs_bf16=speedup, recommended="mxfp8",
                recommended_kv_dtype="kv-fp8", recommended_tokens_per_s=None if slowdown is None else tps * (1 + slowdown),
                slowdown_vs_recommended=slowdown, profile="default", mode="continuous", batch=1)
    base.update(kw)
    return PerfCheck(**base)


def memory(gpus: int, budget_per_gpu_gib: float) -> MemoryFit:
    return MemoryFit(gpu="h200", gpus=gpus, memory_bytes=gpus * 150_754_820_096, memory_utilization=0.9,
                     reserve_bytes=gpus * 2 * GiB, budget_bytes=int(gpus * budget_per_gpu_gib * GiB),
                     weights_bytes=0, weights_source="x", kv_dtype="kv-bf16", kv_bytes_per_token=1.0)


# --- QA201 / QA202: only against an alternative the deployment could run --------------------------


def test_no_slower_than_bf16_when_bf16_cannot_be_served():
    # DeepSeek-V3 in bf16: 671,026,419,200 parameters without the MTP module (data/models.yaml) x 2 bytes
    # = 1,342,052,838,400 B; over 8 GPUs 167.8e9 B = 156.2 GiB per GPU, more than a whole 140.4 GiB H200
    bf16 = 671_026_419_200 * 2
    out = Findings()
    notes = performance_findings(out, site(), perf(0.98, None, bf16_weights_bytes=bf16), max_slowdown=0.25,
                                 mem=memory(8, 124.36))
    assert [f.rule_id for f in out.items] == []
    assert "QA201" not in out.ran and "bf16 weights" in out.skipped["QA201"]
    assert any("156.24 GiB per GPU" in n for n in notes)  # 1,342,052,838,400 / 8 / 2^30 = 156.24


def test_slower_than_bf16_still_judged_when_bf16_fits():
    # Llama-3.1-8B in bf16: 8,030,261,248 parameters x 2 B = 16.06e9 B = 14.96 GiB < a 70 GiB budget
    out = Findings()
    performance_findings(out, site(), perf(0.90, None, bf16_weights_bytes=8_030_261_248 * 2), max_slowdown=0.25,
                         mem=memory(1, 70))
    assert [f.rule_id for f in out.items] == ["QA201"]
    assert "at 1 concurrent sequence," in out.items[0].message  # one sequence, not "1 concurrent sequences"


def test_recommend_finding_bf16_does_not_fit_also_skips_qa201():
    out = Findings()
    performance_findings(out, site(), perf(0.90, None, bf16_does_not_fit=True), max_slowdown=0.25)
    assert out.items == [] and "QA201" in out.skipped


def test_a_shipped_checkpoint_is_displaced_only_beyond_the_speed_models_error():
    # the recommendation re-quantizes a checkpoint served as shipped: the limit is at least NATIVE_MARGIN (15%)
    for slowdown, shipped, expected in ((0.12, False, ["QA202"]), (0.12, True, []), (0.20, True, ["QA202"])):
        out = Findings()
        performance_findings(out, site(), perf(1.2, slowdown), max_slowdown=0.10, shipped=shipped)
        assert [f.rule_id for f in out.items] == expected, (slowdown, shipped)
        if shipped and expected:
            assert "serves the checkpoint as shipped" in out.items[0].message


def test_no_slower_than_recommended_against_a_recommendation_that_does_not_fit():
    out = Findings()
    performance_findings(out, site(), perf(1.2, 0.9, recommended_fits=False), max_slowdown=0.25)
    assert out.items == [] and "does not hold the workload" in out.skipped["QA202"]


# --- QA401: a policy, and the publisher's own quantized release ---------------------------------------


def test_evidence_missing_is_a_note_without_a_declared_policy_and_an_error_with_one():
    for policy, severity in ((False, "note"), (True, "error")):
        out = Findings()
        evidence_required(out, site(), scheme="awq", bits=4, below=8, evidence=False, policy=policy)
        assert [(f.rule_id, f.severity) for f in out.items] == [("QA401", severity)]
    out = Findings({"QA401": "error"})  # rules: QA401: error wins over the note
    evidence_required(out, site(), scheme="awq", bits=4, below=8, evidence=False, policy=False)
    assert out.items[0].severity == "error"


def test_policy_is_declared_by_accuracy_thresholds_or_rules():
    assert not accuracy_policy({}, {})
    assert not accuracy_policy({"model": 1, "gpu": 2}, {})
    assert accuracy_policy({"thresholds.evidence_below_bits": 4}, {})
    assert accuracy_policy({"accuracy": 9}, {})
    assert accuracy_policy({}, {"QA401": "warning"})


def test_a_models_only_release_served_as_shipped_needs_no_evidence():
    shipped = Served(scheme=None, scheme_id="mxfp4-a16", scheme_from="the checkpoint (mxfp4)", kv_id="kv-bf16",
                     kv=None, kv_from="auto")
    assert released_quantized("openai/gpt-oss-120b", shipped)
    assert released_quantized("deepseek-ai/DeepSeek-V3", shipped)
    assert not released_quantized("Qwen/Qwen2.5-7B-Instruct-AWQ", shipped)  # a quantization of a 16-bit release
    assert not released_quantized("./ckpt", shipped)  # whoever made it
    online = Served(scheme=None, scheme_id="fp8-dynamic", scheme_from="--quantization fp8 (quantized online from "
                    "16-bit weights)", kv_id="kv-bf16", kv=None, kv_from="auto")
    assert not released_quantized("meta-llama/Llama-3.1-8B-Instruct", online)
    out = Findings()
    evidence_required(out, site(), scheme="mxfp4-a16", bits=4, below=8, evidence=False, shipped=True)
    assert out.items == [] and "only release" in out.skipped["QA401"]
    out = Findings()  # a KV cache the deployment quantizes below 8 bits still needs evidence
    evidence_required(out, site(), scheme="mxfp4-a16 + kv-x", bits=4, kv_bits=4, below=8, evidence=False, shipped=True)
    assert [f.rule_id for f in out.items] == ["QA401"]


# --- QA306: the engines' own length arithmetic with the command's config overrides -----------------------


QWEN = {"model_type": "qwen2", "max_position_embeddings": 32768}  # Qwen2.5-7B-Instruct's config.json
YARN = {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}


def test_vllm_takes_a_yarn_length_as_already_scaled():
    facts = catalog.engine_startup("vllm", "0.33.0")
    # vllm/config/model.py:2609-2617: yarn is in the list whose factor is not applied -> 32,768 stays
    d = derived_max_len(QWEN, facts, YARN)
    assert (d.value, d.unapplied_rope, d.overridden) == (32768, ("yarn", 4.0), ("rope_scaling",))
    # the override that makes --max-model-len 131072 start: the scaled length itself
    d = derived_max_len(QWEN, facts, {**YARN, "max_position_embeddings": 131072})
    assert d.value == 131072
    # a type outside that list (linear) is multiplied: 32,768 x 4 = 131,072 (model.py:2618-2621)
    d = derived_max_len(QWEN, facts, {"rope_scaling": {"rope_type": "linear", "factor": 4.0}})
    assert (d.value, d.unapplied_rope) == (131072, None)


def test_an_override_under_one_token_gives_no_length():
    # {"max_position_embeddings": 0.5} truncated to 0 and became the workload's context, which failed as
    # "command line: workload: field 'ctx'", a flag the user never set; a length under one token is none
    facts = catalog.engine_startup("vllm", "0.33.0")
    d = derived_max_len(QWEN, facts, {"max_position_embeddings": 0.5})
    assert d.key is None and d.value == facts.max_len_fallback and d.overridden == ("max_position_embeddings",)


def test_sglang_length_with_its_override_flag():
    facts = catalog.engine_startup("sglang", "0.5.23")
    # sglang/srt/utils/hf_transformers/common.py:677-694: a factor, unless original_max_position_embeddings is named
    assert derived_max_len(QWEN, facts, YARN).value == 32768
    assert derived_max_len(QWEN, facts, {"rope_scaling": {"rope_type": "dynamic", "factor": 4.0}}).value == 131072


def test_the_override_flags_are_read_as_json():
    assert model_overrides("vllm", {"--hf-overrides": '{"rope_scaling": {"factor": 4}}'}) == {
        "rope_scaling": {"factor": 4}}
    assert model_overrides("sglang", {"--json-model-override-args": '{"max_position_embeddings": 1}'}) == {
        "max_position_embeddings": 1}
    assert model_overrides("vllm", {"--hf-overrides": "not json"}) is None
    assert model_overrides("vllm", {}) is None
    # nested past Python's recursion limit (json.loads raised RecursionError through `check`), or an integer
    # json refuses to convert: not an override quantadvise can read
    assert model_overrides("vllm", {"--hf-overrides": "[" * 100_000 + "]" * 100_000}) is None
    assert model_overrides("sglang", {"--json-model-override-args": '{"x": ' + "9" * 5000 + "}"}) is None


# --- QA103: the model dtype -------------------------------------------------------------------------


def test_a_dtype_refusal_is_qa103_with_the_engines_words():
    said = "Bfloat16 is only supported on GPUs with compute capability of at least 8.0."
    out = Findings()
    dtype_findings(out, site(flag_lines={"dtype": 1}), engine_label="vLLM 0.33.0", dtype="bfloat16", refusal=said)
    assert [(f.rule_id, f.engine_message) for f in out.items] == [("QA103", said)]
    assert "--dtype half" in out.items[0].message  # the fix the engine's message suggests (--dtype=half)
    assert out.refused("run.sh:1") == {"QA103": said}
    out = Findings()
    notes = dtype_findings(out, site(), engine_label="vLLM", dtype="auto", refusal=None,
                           fallback=("float16", "falls back"))
    assert out.items == [] and notes == [
        "vLLM runs the model in float16, not the checkpoint's dtype (--dtype auto): falls back"]


def test_slower_than_bf16_on_no_measurement_is_a_warning():
    # the same 0.90x, priced by the roofline with the default profile (no table of the deployed scheme's kernel,
    # e.g. SGLang's mxfp4 experts of gpt-oss-120b on B200): reported, but it does not fail the deployment;
    # priced by a measured table it stays the rule's error
    for model, severity in (("roofline", "warning"), ("ideal", "warning"), ("measured", "error"),
                            ("composed", "error"), (None, "error")):
        out = Findings()
        performance_findings(out, site(), perf(0.90, None, bf16_weights_bytes=8_030_261_248 * 2, speed_model=model),
                             max_slowdown=0.25, mem=memory(1, 70))
        assert [(f.rule_id, f.severity) for f in out.items] == [("QA201", severity)], model
        assert ("a warning, not an error" in out.items[0].message) == (severity == "warning")
