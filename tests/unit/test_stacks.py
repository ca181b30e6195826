"""`quantadvise deploy`: each stack's manifests validate against the stack's published schema (offline,
tests/fixtures/stacks/, versions in its README), and `quantadvise check` reads them back and passes them."""

from __future__ import annotations

import copy
import gzip
import json
from functools import cache
from pathlib import Path

import pytest
import yaml

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "stacks"
# the acceptance workload of issue 31: DeepSeek-V3 at 20 requests/s of 1,000 + 200 tokens, ITL within 50 ms,
# on H100 vs H200 vs B200 nodes, up to 64 GPUs
ACCEPTANCE = dict(model="deepseek-ai/DeepSeek-V3", gpu="h100,h200,b200", max_gpus=64, rate=20, prompt=1000,
                  output=200, itl_ms=50)


def _strict(node):
    """Close every object schema that lists properties (kubectl apply --validate=strict rejects unknown fields)."""
    if isinstance(node, dict):
        node = {k: _strict(v) for k, v in node.items()}
        if "properties" in node and "additionalProperties" not in node \
                and not node.get("x-kubernetes-preserve-unknown-fields"):
            node["additionalProperties"] = False
        return node
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


@cache
def _validator(name: str):
    from jsonschema import Draft7Validator, Draft202012Validator

    doc = json.loads(gzip.decompress((FIX / name).read_bytes()))
    if "versions" not in doc:  # the chart's own values.schema.json
        return Draft202012Validator(doc)
    (schema,) = doc["versions"].values()
    return Draft7Validator(_strict(schema))


VALIDATORS = {"values.yaml": "production-stack-0.1.12.values.schema.json.gz",
              "LeaderWorkerSet": "lws-060ab4d.leaderworkersets.schema.json.gz",
              "LLMInferenceService": "kserve-aaac4e2.llminferenceservices.schema.json.gz",
              "DynamoGraphDeployment": "dynamo-1.6.1.dynamographdeployments.schema.json.gz"}


def _errors(doc: dict, key: str) -> list[str]:
    return [f"{list(e.path)}: {e.message[:200]}" for e in _validator(VALIDATORS[key]).iter_errors(doc)]


def _docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


@cache
def _deployed(target: str, **kw):
    from quantadvise.api.deploy import deploy

    return deploy(target=target, **(kw or ACCEPTANCE))


@pytest.mark.parametrize("example,key", [
    ("example.production-stack.values-15-pp-raycluster.yaml", "values.yaml"),
    ("example.dynamo-1.6.1.v1beta1-vllm-agg.yaml", "DynamoGraphDeployment"),
    ("example.kserve.llmisvc-pd-qwen2-7b.yaml", "LLMInferenceService"),
])
def test_the_stacks_own_examples_validate(example, key):
    """The validators accept what each stack publishes (so a pass below means something)."""
    for doc in _docs((FIX / example).read_text()):
        assert _errors(doc, key) == [], example


@pytest.mark.parametrize("key,doc,mutate", [
    ("LeaderWorkerSet", {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                         "metadata": {"name": "x"}, "spec": {"replicas": 1, "leaderWorkerTemplate": {
                             "size": 2, "workerTemplate": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}},
     lambda d: d["spec"]["leaderWorkerTemplate"].update(size="two")),
    ("LLMInferenceService", {"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
                             "metadata": {"name": "x"}, "spec": {"model": {"uri": "hf://m"}, "parallelism": {"tensor": 2}}},
     lambda d: d["spec"]["parallelism"].update(tensorParallel=4)),
    ("DynamoGraphDeployment", {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment",
                               "metadata": {"name": "x"}, "spec": {"components": [{"name": "w", "type": "worker"}]}},
     lambda d: d["spec"]["components"][0].update(type="decoder")),
    ("values.yaml", {"servingEngineSpec": {"modelSpec": [{"name": "m", "vllmConfig": {"tensorParallelSize": 4}}]}},
     lambda d: d["servingEngineSpec"]["modelSpec"][0]["vllmConfig"].update(tensorParallelSize="4")),
])
def test_the_validators_reject_a_wrong_field(key, doc, mutate):
    assert _errors(doc, key) == []
    bad = copy.deepcopy(doc)
    mutate(bad)
    assert _errors(bad, key)


@pytest.mark.parametrize("target", ["helm", "llm-d", "kserve", "dynamo"])
def test_deploy_writes_each_stacks_format(target):
    r = _deployed(target)
    manifests = {k: v for k, v in r.files.items() if k != "quantadvise.yaml"}
    assert len(manifests) == 1
    (name, text), = manifests.items()
    for doc in _docs(text):
        key = "values.yaml" if name == "values.yaml" else doc["kind"]
        assert _errors(doc, key) == [], (target, doc)
    # the layout's GPUs: each pod asks for the GPUs of its node, the pods add up to the layout
    row = r.layout
    assert row.gpus == row.replicas * row.gpus_per_replica + (row.prefill.gpus if row.prefill else 0)


def test_the_llm_d_pods_add_up_to_the_layout():
    r = _deployed("llm-d")
    row = r.layout
    total = 0
    for doc in _docs(r.files["leaderworkerset.yaml"]):
        tmpl = doc["spec"]["leaderWorkerTemplate"]
        size = tmpl["size"]
        lead = tmpl.get("leaderTemplate", tmpl["workerTemplate"])
        gpus_lead = int(lead["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"])
        gpus_work = int(tmpl["workerTemplate"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"])
        total += doc["spec"]["replicas"] * (gpus_lead + (size - 1) * gpus_work)
    assert total == row.gpus


@pytest.mark.parametrize("target", ["helm", "llm-d", "kserve", "dynamo"])
def test_check_reads_the_manifests_back_and_passes(target, tmp_path):
    """The acceptance: the winner's manifests, read back by `check` (its readers and rules), pass."""
    from quantadvise.api.check import check

    r = _deployed(target)
    for name, text in r.files.items():
        (tmp_path / name).write_text(text)
    report = check(config=str(tmp_path / "quantadvise.yaml"))
    assert report.targets, "check found no engine command in the manifests"
    assert report.exit_code() == 0, [f.message for f in report.findings]
    inv = report.targets[0]
    assert inv.engine == r.engine


def test_multi_node_layouts_write_one_pod_per_node(tmp_path):
    """DeepSeek-V3 as shipped (fp8, 673 GB with its MTP layer) does not fit one node of 8 x H100 (8 x 76.5 GB of
    budget): every layout of a 16-GPU pool spans two nodes. llm-d: LWS size 2, the worker's rank from
    LWS_WORKER_INDEX, the head from LWS_LEADER_ADDRESS; check reads the leader back and passes it."""
    from quantadvise.api.check import check
    from quantadvise.api.deploy import deploy

    r = deploy(target="llm-d", model="deepseek-ai/DeepSeek-V3", gpu="h100", node="8xh100", max_gpus=16,
               candidates=["native"], prompt=1000, output=200)
    assert r.layout.nodes_per_replica == 2, r.layout
    docs = _docs(r.files["leaderworkerset.yaml"])
    tmpl = docs[0]["spec"]["leaderWorkerTemplate"]
    assert tmpl["size"] == 2
    script = tmpl["workerTemplate"]["spec"]["containers"][0]["args"][0]
    assert "LWS_WORKER_INDEX" in script and "LWS_LEADER_ADDRESS" in script
    for doc in docs:
        assert _errors(doc, "LeaderWorkerSet") == []
    for name, text in r.files.items():
        (tmp_path / name).write_text(text)
    report = check(config=str(tmp_path / "quantadvise.yaml"))
    assert report.exit_code() == 0, [f.message for f in report.findings]


def test_dynamo_manifests_are_checked_against_the_engine_its_image_runs(tmp_path):
    # Dynamo 1.6.1's vllm-runtime image runs vLLM 0.31.0 (ai_dynamo-1.6.1.dist-info/METADATA:55, Requires-Dist
    # vllm==0.31.0; data/flags/launchers/dynamo-1.6.1.yaml). Before: deploy --target dynamo declared the newest
    # vLLM on file (0.34.0) while the manifest started the 0.31.0 image, so `check` of its own output warned of
    # engine drift (QA506) and the commands were checked against a release that would not run them.
    from quantadvise.api.check import check
    from quantadvise.api.deploy import deploy
    from quantadvise.errors import InputError

    r = _deployed("dynamo")
    assert r.engine_version == "0.31.0"
    assert "engine_version: 0.31.0" in r.files["quantadvise.yaml"]
    assert any("0.31.0" in n and "METADATA:55" in n for n in r.notes)
    for name, text in r.files.items():
        (tmp_path / name).write_text(text)
    report = check(config=str(tmp_path / "quantadvise.yaml"))
    assert report.exit_code() == 0 and not report.findings, [f.message for f in report.findings]
    # the DP8 + EP8 replica is not priced as one TP-1 GPU (DeepSeek-V3 would not even fit there: before, a
    # "626 tokens/s" figure and "try --gpus 4" advice); the note names the layout and the search that weighs it
    t = report.targets[0]
    assert t.performance is None
    assert any("DP 8" in n and "--max-gpus 8" in n for n in t.notes), t.notes
    assert not any("try --gpus" in n for n in t.notes), t.notes
    with pytest.raises(InputError, match="runs vllm 0.31.0"):
        deploy(target="dynamo", **{**ACCEPTANCE, "engine_version": "0.34.0"})
