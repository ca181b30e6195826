"""The gate's pure core: rules, fingerprints, exit codes, baselines, the per-family evaluators and
the renderers (SARIF validated against the official 2.1.0 schema, JUnit parsed, GitHub escaping).

Numbers in expectations are worked out in the comments beside them."""

from __future__ import annotations

import inspect
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from quantadvise.artifacts.launch import parse_shell
from quantadvise.catalog import option_list
from quantadvise.engines.findings import Finding
from quantadvise.gate.accuracy import accuracy_findings, evidence_required
from quantadvise.gate.drift import engine_drift, kv_drift, model_drift, scheme_drift, workload_drift
from quantadvise.gate.engine import artifact_findings, engine_findings, parallelism_findings
from quantadvise.gate.findings import Findings, Site, split_baseline
from quantadvise.gate.result import GateResult, PerfCheck
from quantadvise.gate.rules import FAMILY_PREFIX, RULE_BY_ID, RULES, fingerprint, rule_for_kind
from quantadvise.gate.speed import performance_findings
from quantadvise.report import RENDERERS, render
from quantadvise.report import gate as rgate

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
GiB = 1024**3


def site(**kw) -> Site:
    base = {"key": "k8s/d.yaml#Deployment/x container vllm", "label": "k8s/d.yaml:20", "file": "k8s/d.yaml",
            "line": 20, "flag_lines": {"model": 20, "quantization": 21, "kv_cache_dtype": 22, "max_num_seqs": 23,
                                       "max_model_len": 24, "tensor_parallel_size": 25},
            "config_file": "quantadvise.yaml", "config_lines": {"model": 3, "quantization": 7, "kv_cache_dtype": 8}}
    base.update(kw)
    return Site(**base)


# --- the rule registry --------------------------------------------------------------------------


def test_rule_ids_are_unique_stable_and_in_their_family():
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids)) == 33  # 28 + QA111, QA305, QA306 (issue 14) + QA112 (issue 13) + QA205
    assert len({r.name for r in RULES}) == len(ids)
    for r in RULES:
        assert re.fullmatch(r"QA[1-5]\d\d", r.id)
        assert r.id.startswith(FAMILY_PREFIX[r.family]), r.id
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", r.name)
        assert r.severity in ("error", "warning")
        assert r.help_uri == f"docs/ci.md#{r.id.lower()}"
        assert len(r.rationale) > 60 and "\n" not in r.rationale


def test_docs_ci_md_documents_every_rule_with_its_severity_and_anchor():
    doc = (REPO / "docs" / "ci.md").read_text()
    for r in RULES:
        assert f'<a id="{r.id.lower()}"></a>' in doc, r.id
        assert f"#### {r.id} {r.name} ({r.severity})" in doc, r.id
        assert f"| {r.id} | {r.name} | {r.severity} |" in doc, r.id
    documented = set(re.findall(r'<a id="(qa\d+)"></a>', doc))
    assert documented == {r.id.lower() for r in RULES}  # no stale anchors either


def test_every_engine_finding_kind_maps_to_a_rule_or_is_informational():
    from quantadvise.engines import resolution as engines

    src = inspect.getsource(engines)
    emitted = set(re.findall(r'ctx\.add\(\s*"([a-z0-9_]+)",\s*"(error|warning|info)"', src))
    assert len(emitted) >= 20
    for kind, severity in emitted:
        rid = rule_for_kind(kind, severity)
        if severity == "info" and kind != "marlin_forced_off":
            assert rid is None, kind  # notes, not findings
        else:
            assert rid in RULE_BY_ID, kind
            # an error the engine raises never maps to a warning-only rule, and the reverse
            assert RULE_BY_ID[rid].severity == ("error" if severity == "error" else "warning"), kind
    assert rule_for_kind("some_future_refusal", "error") == "QA104"
    assert rule_for_kind("some_future_warning", "warning") == "QA106"


# --- fingerprints, findings, exit codes, baselines ------------------------------------------------


def test_fingerprint_is_rule_plus_subject_never_the_line():
    a, b = Findings(), Findings()
    a.add("QA102", "m1", subject="k8s/d.yaml#vllm|method_mismatch|gptq", file="k8s/d.yaml", line=26)
    b.add("QA102", "another wording", subject="k8s/d.yaml#vllm|method_mismatch|gptq", file="k8s/d.yaml", line=40)
    assert a.items[0].fingerprint == b.items[0].fingerprint
    assert a.items[0].fingerprint != fingerprint("QA102", "other.yaml#vllm|method_mismatch|gptq")
    assert a.items[0].fingerprint != fingerprint("QA101", "k8s/d.yaml#vllm|method_mismatch|gptq")
    a.add("QA102", "same thing again", subject="k8s/d.yaml#vllm|method_mismatch|gptq")
    assert len(a.items) == 1  # reported once


def test_severity_overrides_and_off():
    f = Findings({"QA202": "error", "QA505": "off"})
    f.add("QA202", "slow", subject="s")
    f.add("QA505", "drift", subject="s")
    assert [(x.rule_id, x.severity) for x in f.items] == [("QA202", "error")]
    statuses = {s.rule_id: s for s in f.statuses()}
    assert statuses["QA202"].status == "fail" and statuses["QA202"].severity == "error"
    assert statuses["QA505"].status == "off"
    assert statuses["QA301"].status == "skipped"


def _result(severities: list[str], fail_on: str = "error") -> GateResult:
    f = Findings()
    for i, sev in enumerate(severities):
        rid = {"error": "QA102", "warning": "QA202", "note": "QA202"}[sev]
        f.overrides = {"QA202": sev} if sev != "error" else {}
        f.add(rid, "x", subject=f"s{i}")
    return GateResult(passed=True, fail_on=fail_on, findings=f.items)


@pytest.mark.parametrize(
    ("severities", "fail_on", "exit_zero", "code"),
    [
        ([], "error", False, 0),
        (["warning"], "error", False, 0),  # below --fail-on
        (["warning"], "warning", False, 1),
        (["note"], "warning", False, 0),
        (["error"], "error", False, 1),
        (["error", "warning"], "warning", False, 1),
        (["error"], "error", True, 0),  # --exit-zero: no finding counts
        (["error"], "warning", True, 0),
    ],
)
def test_exit_codes(severities, fail_on, exit_zero, code):
    r = _result(severities)
    assert r.exit_code(fail_on, exit_zero) == code
    assert r.exit_code(fail_on) in (0, 1)  # a result never exits 2: "could not run" is an error raised earlier


def test_split_baseline_by_fingerprint():
    f = Findings()
    f.add("QA102", "a", subject="one")
    f.add("QA201", "b", subject="two")
    known = {fingerprint("QA201", "two"), "not-a-finding-any-more"}
    new, old = split_baseline(f.items, known)
    assert [x.rule_id for x in new] == ["QA102"] and [x.rule_id for x in old] == ["QA201"]
    statuses = {s.rule_id: s for s in f.statuses(old)}
    assert statuses["QA201"].baselined == 1


# --- QA1xx ----------------------------------------------------------------------------------------


def _finding(kind: str, severity: str, subject: str | None = None) -> Finding:
    return Finding(kind=kind, severity=severity, engine="vllm", version="0.33.0", subject=subject,
                   message=f"{kind} happened", engine_message=f"engine text for {kind}")


def test_engine_findings_map_to_rules_on_the_flag_lines():
    out = Findings()
    notes = engine_findings(out, site(), [
        _finding("method_mismatch", "error", "gptq"),
        _finding("kv_dtype_unknown", "error", "fp8_e9"),
        _finding("ct_no_scheme", "error", "group_0"),
        _finding("not_optimized", "warning", "awq"),
        _finding("compatible_override", "info", "awq_marlin"),
    ], "vLLM 0.33.0")
    got = {(x.rule_id, x.line) for x in out.items}
    # method_mismatch -> the --quantization line (21); kv -> the --kv-cache-dtype line (22);
    # a checkpoint config problem -> the quantization line, else the model line
    assert got == {("QA102", 21), ("QA105", 22), ("QA104", 21), ("QA203", 21)}
    assert notes == ["vLLM 0.33.0: compatible_override happened"]
    mm = next(x for x in out.items if x.rule_id == "QA102")
    assert mm.engine_message == "engine text for method_mismatch" and mm.target == "k8s/d.yaml:20"


def test_engine_findings_fall_back_to_the_config_lines_without_a_command():
    s = site(file=None, line=None, flag_lines={})
    out = Findings()
    engine_findings(out, s, [_finding("kv_dtype_unknown", "error")], "vLLM 0.33.0")
    assert (out.items[0].file, out.items[0].line) == ("quantadvise.yaml", 8)


def test_parallelism_and_artifact_findings_from_a_real_script():
    text = (
        "#!/bin/sh\n"
        "vllm serve org/m \\\n"
        "  --max-num-seqs lots \\\n"
        "  --kv-cache-dtype fp8 \\\n"
        "  --kv-cache-dtype fp8_e5m2 \\\n"
        "  --quantization \"$QUANT\"\n"
    )
    inv = parse_shell(text, "serve.sh", options=option_list)[0]
    s = Site(key="serve.sh#vllm", label="serve.sh:2", file="serve.sh", line=inv.line, flag_lines=inv.flag_lines)
    out = Findings()
    from quantadvise.gate.target import unresolved as _unresolved

    artifact_findings(out, s, inv.warnings, _unresolved(inv))
    got = sorted((x.rule_id, x.line) for x in out.items)
    # line 3: "--max-num-seqs lots" is not an integer (the engine refuses it) -> QA108;
    # line 5: --kv-cache-dtype again (first at 4) -> QA109; line 6: $QUANT unresolved -> QA110
    assert got == [("QA108", 3), ("QA109", 5), ("QA110", 6)]
    out = Findings()
    parallelism_findings(out, s, tp=4, pp=2, gpus_given=4, split_error=None)
    assert "4 x pipeline-parallel-size 2 = 8 GPUs, but the container is given 4" in out.items[0].message
    out = Findings()
    parallelism_findings(out, s, tp=2, pp=1, gpus_given=2, split_error=None)
    assert out.items == [] and "QA107" in out.ran


# --- QA2xx ----------------------------------------------------------------------------------------


def _perf(speedup: float, slowdown: float | None, tps: float = 1000.0) -> PerfCheck:
    return PerfCheck(scheme="awq", kv_dtype="kv-bf16", tokens_per_s=tps, step_time_s=0.05,
                     bf16_tokens_per_s=tps / speedup, speedup_vs_bf16=speedup, recommended="fp8-dynamic",
                     recommended_kv_dtype="kv-fp8", recommended_tokens_per_s=None if slowdown is None else
                     tps * (1 + slowdown), slowdown_vs_recommended=slowdown, profile="default", mode="continuous",
                     batch=256)


@pytest.mark.parametrize(
    ("speedup", "slowdown", "limit", "expected"),
    [
        (0.90, 0.55, 0.25, {"QA201", "QA202"}),
        (0.996, 0.0, 0.25, set()),  # within the advisor's 0.5% tie: not slower than bf16
        (0.994, 0.0, 0.25, {"QA201"}),
        (1.50, 0.25, 0.25, set()),  # exactly at the limit passes
        (1.50, 0.26, 0.25, {"QA202"}),
        (1.50, 0.90, None, set()),  # the limit turned off
    ],
)
def test_performance_findings(speedup, slowdown, limit, expected):
    out = Findings()
    performance_findings(out, site(), _perf(speedup, slowdown), max_slowdown=limit)
    assert {x.rule_id for x in out.items} == expected
    for x in out.items:
        assert (x.file, x.line) == ("k8s/d.yaml", 21)  # the --quantization line
    if limit is None:
        assert out.skipped["QA202"].endswith("is off")


# --- QA3xx: tests/unit/test_gate_startup.py (the engines' start-up arithmetic) -----------------------


# --- QA4xx ----------------------------------------------------------------------------------------


def test_evidence_required_below_eight_bits_only():
    for bits, evidence, expected in ((4, False, 1), (4, True, 0), (8, False, 0), (None, False, 0)):
        out = Findings()
        evidence_required(out, site(), scheme="x", bits=bits, below=8, evidence=evidence)
        assert len(out.items) == expected
    out = Findings()
    evidence_required(out, site(), scheme="w4a16", bits=4, below=8, evidence=False)
    assert (out.items[0].file, out.items[0].line) == ("quantadvise.yaml", 7)  # the declared quantization


def test_accuracy_findings_from_checks():
    from quantadvise.evals.stats import AccuracyCheck

    checks = [
        AccuracyCheck(task="gsm8k", check="delta", status="pass", value=0.0, threshold=0.01, message="ok"),
        AccuracyCheck(task="gsm8k", check="flips", status="fail", value=0.09, threshold=0.05, message="9% flips"),
        AccuracyCheck(task="gsm8k", check="kl", status="skipped", value=None, threshold=0.05, message="no lp"),
        AccuracyCheck(task="mmlu", check="evidence", status="fail", value=None, threshold=None, message="missing"),
    ]
    out = Findings()
    accuracy_findings(out, checks, {"gsm8k": "evals/q/gsm8k.jsonl"}, "quantadvise.yaml",
                           {"accuracy": 20, "accuracy.tasks.mmlu": 25})
    got = [(x.rule_id, x.file, x.line) for x in out.items]
    assert got == [("QA402", "evals/q/gsm8k.jsonl", None), ("QA403", "evals/q/gsm8k.jsonl", None),
                   ("QA402", "quantadvise.yaml", 25)]  # a task missing from the evidence: its limits' line


# --- QA5xx ----------------------------------------------------------------------------------------


def test_scheme_drift_kind_vs_variant():
    from quantadvise.catalog import get_scheme

    def run(declared: str, served: str) -> set[str]:
        out = Findings()
        scheme_drift(out, site(), declared_id=declared, declared=get_scheme(declared), served_id=served,
                          served=get_scheme(served), served_from="the checkpoint")
        return {x.rule_id for x in out.items}

    assert run("awq", "awq") == set()
    assert run("w4a16", "awq") == {"QA502"}  # 4-bit integer weights both: symmetric vs zero-point
    assert run("fp8-dynamic", "fp8-tensor") == {"QA502"}  # 8-bit float both: dynamic vs static scales
    assert run("fp8-dynamic", "awq") == {"QA501"}
    assert run("w4a16", "w8a16") == {"QA501"}
    assert run("bf16", "w4a16") == {"QA501"}
    assert run("w4a16", "nvfp4") == {"QA501"}  # integer vs float elements, 16-bit vs 4-bit activations


def test_kv_model_workload_and_engine_drift():
    out = Findings()
    kv_drift(out, site(), declared="kv-fp8", served="kv-bf16", served_from="--kv-cache-dtype auto")
    kv_drift(out, site(), declared="kv-fp8", served="kv-fp8", served_from="x")
    model_drift(out, site(), declared="Org/Model", served="org/model/")  # the same id
    model_drift(out, site(), declared="org/model-fp8", served="org/model-awq")
    workload_drift(out, site(), concurrency=64, max_num_seqs=32, ctx=8192, max_model_len=4096,
                        max_model_len_source="--max-model-len", gpus=1, parallel=2)
    engine_drift(out, site(), declared_engine="sglang", served_engine="vllm", declared_version="v0.33.0",
                      served_version="0.33.0", version_from="tag")
    got = [(x.rule_id, x.line) for x in out.items]
    assert got == [("QA503", 22), ("QA504", 20), ("QA505", 23), ("QA505", 24), ("QA505", 25), ("QA506", 20)]
    assert "64 exceeds --max-num-seqs 32: 32 requests queue" in out.items[2].message


# --- renderers ------------------------------------------------------------------------------------


def _sample_result() -> GateResult:
    out = Findings()
    out.add("QA102", "the checkpoint declares 'awq', --quantization is 'gptq'", subject="a|1", file="k8s/d,1.yaml",
            line=26, target="k8s/d,1.yaml:25")
    out.add("QA202", "100% slower:\nsee\r\nthis | table", subject="a|2", file="run.sh", line=3)
    out.add("QA402", "task gsm8k: 9% flips", subject="acc|gsm8k|flips", file="evals/q/gsm8k.jsonl")
    out.add("QA401", "no evidence", subject="decl|evidence")  # no file at all
    suppressed = Findings()
    suppressed.add("QA303", "old news", subject="a|3", file="k8s/d,1.yaml", line=30)
    # messages are one line when built through Findings.add; a renderer must still escape what it is given
    items = [f.model_copy(update={"message": "100% slower:\nsee\r\nthis | table"}) if f.rule_id == "QA202" else f
             for f in out.items]
    return GateResult(passed=False, fail_on="error", config_file="quantadvise.yaml", findings=items,
                      suppressed=suppressed.items, rules=out.statuses(suppressed.items), baseline_file="b.json")


def test_github_annotations_are_escaped():
    text = rgate.github(_sample_result())
    lines = text.splitlines()
    # properties escape % CR LF : and , ; messages escape % CR LF
    assert lines[0] == ("::error file=k8s/d%2C1.yaml,line=26,title=QA102 quantization-flag-mismatch::the checkpoint "
                        "declares 'awq', --quantization is 'gptq'")
    assert lines[1] == ("::warning file=run.sh,line=3,title=QA202 slower-than-recommended::"
                        "100%25 slower:%0Asee%0D%0Athis | table")
    assert lines[2] == "::error file=evals/q/gsm8k.jsonl,title=QA402 accuracy-threshold-failed::task gsm8k: 9%25 flips"
    assert lines[3] == "::error title=QA401 accuracy-evidence-missing::no evidence"
    assert lines[-1].startswith("quantadvise check: FAIL")


def _sarif_validator():
    import jsonschema

    schema = json.loads((FIXTURES / "sarif-schema-2.1.0.json").read_text())
    assert schema["id"].endswith("sarif-schema-2.1.0.json")
    return jsonschema.Draft4Validator(schema)


def test_sarif_validates_against_the_2_1_0_schema():
    doc = json.loads(rgate.sarif(_sample_result()))
    _sarif_validator().validate(doc)
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [r.id for r in RULES]
    res = run["results"]
    first = res[0]
    assert first["ruleId"] == "QA102" and run["tool"]["driver"]["rules"][first["ruleIndex"]]["id"] == "QA102"
    assert first["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": "k8s/d,1.yaml"},
                                                         "region": {"startLine": 26}}
    assert first["partialFingerprints"]["quantadvise/v1"] == fingerprint("QA102", "a|1")
    assert "region" not in res[2]["locations"][0]["physicalLocation"]  # a file without a line
    assert "locations" not in res[3]
    assert res[-1]["ruleId"] == "QA303" and res[-1]["suppressions"][0]["kind"] == "external"
    assert [r["level"] for r in res] == ["error", "warning", "error", "error", "warning"]  # QA303: a warning


def test_sarif_schema_rejects_a_broken_log():
    import jsonschema

    bad = json.loads(rgate.sarif(_sample_result()))
    bad["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        _sarif_validator().validate(bad)


def test_junit_parses_one_case_per_rule():
    root = ET.fromstring(rgate.junit(_sample_result()))
    assert root.tag == "testsuites"
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name").split()[0] for c in cases] == [r.id for r in RULES]
    failed = {c.get("name").split()[0] for c in cases if c.find("failure") is not None}
    assert failed == {"QA102", "QA402", "QA401"}  # errors at fail-on error; QA202 is a warning
    qa202 = next(c for c in cases if c.get("name").startswith("QA202"))
    assert "100% slower" in qa202.find("system-out").text
    assert root.get("failures") == "3" and root.get("tests") == str(len(RULES))
    qa102 = next(c for c in cases if c.get("name").startswith("QA102"))
    assert qa102.find("failure").text.startswith("k8s/d,1.yaml:26: error:")


def test_markdown_and_table_escape_and_summarise():
    md = rgate.markdown(_sample_result())
    assert md.startswith("### ❌ quantadvise check: FAIL — 3 errors, 1 warning; 1 in the baseline")
    assert "| 100% slower: see this \\| table |" in md  # one line per cell, pipes escaped
    table = rgate.table(_sample_result())
    assert "error     QA102 quantization-flag-mismatch  k8s/d,1.yaml:26" in table


def test_every_check_format_has_a_renderer():
    from quantadvise.cli.check import CheckFormat

    for fmt in CheckFormat:
        assert ("check", fmt.value) in RENDERERS
        assert isinstance(render("check", fmt.value, _sample_result()), str)
    assert ("check_init", "table") in RENDERERS and ("check_init", "json") in RENDERERS


# --- speed: the gate prices a scheme exactly as the recommender does --------------------------------


def test_predict_agrees_with_recommend_for_every_ranked_candidate():
    import quantadvise as api

    w = {"batch": 64, "ctx": 2048, "gpu": "h100"}
    rec = api.recommend(w)
    kv = rec.kv.dtype
    ranked = [a for a in rec.alternatives if a.status in ("recommended", "runner-up", "slower")]
    assert len(ranked) >= 5
    for alt in ranked:
        p = api.predict(w, alt.scheme, kv_dtype=kv)
        assert p.tokens_per_s == pytest.approx(alt.tokens_per_s, rel=1e-12), alt.scheme
        assert p.step_time_s == pytest.approx(alt.step_time_s, rel=1e-12), alt.scheme


def test_sarif_help_uri_when_the_package_names_its_repository(monkeypatch):
    monkeypatch.setattr(rgate, "_docs_base", lambda: "https://github.com/example/quantadvise/blob/main/docs/ci.md")
    doc = json.loads(rgate.sarif(_sample_result()))
    _sarif_validator().validate(doc)
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    assert rules[0]["helpUri"] == "https://github.com/example/quantadvise/blob/main/docs/ci.md#qa100"
    monkeypatch.setattr(rgate, "_docs_base", lambda: None)  # no absolute URL known: no helpUri, the anchor in help
    rules = json.loads(rgate.sarif(_sample_result()))["runs"][0]["tool"]["driver"]["rules"]
    assert "helpUri" not in rules[0] and "docs/ci.md#qa100" in rules[0]["help"]["text"]
