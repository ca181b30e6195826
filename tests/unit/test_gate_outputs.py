"""The gate's output formats stay valid whatever the values hold: SARIF URIs percent-encoded, JUnit
XML without the control characters XML 1.0 forbids, markdown tables one row per line, and the
pre-commit hook's file pattern."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote

import pytest
import yaml

from quantadvise.gate.findings import Findings
from quantadvise.gate.result import GateResult, TargetReport
from quantadvise.report import gate as rgate

REPO = Path(__file__).resolve().parents[2]


def _result(file: str, message: str, label: str = "run.sh:1", kv: str = "kv-bf16", config: str | None = None):
    out = Findings()
    out.add("QA108", message, subject="s|1", file=file, line=3, target=label)
    t = TargetReport(label=label, file=file, line=3, source="shell", engine="vllm", engine_version="0.33.0",
                     engine_version_from="x", model="m", model_from="x", checkpoint="c", engine_status="ok",
                     scheme="bf16", scheme_from="x", kv_cache_dtype=kv, gpu="h100-sxm", gpus=1, concurrency=1, ctx=2048,
                     mode="sync")
    return GateResult(passed=False, fail_on="error", config_file=config, findings=out.items, targets=[t],
                      rules=out.statuses())


@pytest.mark.parametrize(("path", "uri"), [
    ("deploy/my dir/serve.sh", "deploy/my%20dir/serve.sh"),  # a space
    ("deploy/100%.yaml", "deploy/100%25.yaml"),  # a percent sign
    ("k8s/d,1.yaml", "k8s/d,1.yaml"),  # sub-delimiters are legal in a path (RFC 3986 pchar)
    ("k8s/über#1?.yaml", "k8s/%C3%BCber%231%3F.yaml"),  # non-ASCII, fragment and query characters
    ("/srv/app/run.sh", "file:///srv/app/run.sh"),  # outside the repository: an absolute file URI
])
def test_sarif_uris_are_percent_encoded(path, uri):
    doc = json.loads(rgate.sarif(_result(path, "x")))
    got = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert got == uri
    assert unquote(got.removeprefix("file://")) == path  # decodes back to the file


def test_junit_is_valid_xml_with_control_characters_in_values():
    # a flag value with a BEL and an ESC (XML 1.0 has no way to write either)
    r = _result("run.sh", "--quantization 'fp8\x07\x1b[31m' is refused", config="qa\x01.yaml")
    text = rgate.junit(r)
    root = ET.fromstring(text)  # raised "not well-formed" before
    failure = root.find("./testsuite/testcase/failure")
    assert failure is not None and "fp8\\x07\\x1b[31m" in failure.get("message")
    prop = root.find("./testsuite/properties/property[@name='config']")
    assert prop is not None and prop.get("value") == "qa\\x01.yaml"


def test_markdown_rows_survive_pipes_newlines_and_backticks():
    r = _result("a|b.sh", "x | y\nz", label="run `a`|b.sh:1\nnext", kv="fp8|e4m3")
    md = rgate.markdown(r)
    rows = [line for line in md.splitlines() if line.startswith("|")]
    finding = next(line for line in rows if "QA108" in line)
    target = next(line for line in rows if "vllm 0.33.0" in line)
    cells = lambda line: len(re.split(r"(?<!\\)\|", line)) - 2  # noqa: E731 - unescaped pipes delimit cells
    assert cells(finding) == 4 and cells(target) == 8
    assert "x \\| y z" in finding and "fp8\\|e4m3" in target
    assert target.startswith("| run `a`\\|b.sh:1 next |")  # a backtick in the value: not wrapped in a code span


def _hook_pattern() -> re.Pattern[str]:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    return re.compile(hooks[0]["files"])


@pytest.mark.parametrize("name", ["app.Dockerfile", "deploy/Dockerfile.prod", "serve.dockerfile", "Containerfile",
                                  "scripts/serve", "bin/launch-vllm", "Makefile", "ops/serve.mk", "launch.py",
                                  ".github/workflows/gate.yml", "helm/values.yaml", "quantadvise.yaml",
                                  "checkpoint/config.json", "evals/awq/samples_gsm8k.jsonl", ".env", "run.sh"])
def test_the_pre_commit_pattern_matches_every_file_check_reads(name):
    assert _hook_pattern().search(name), name


@pytest.mark.parametrize("name", ["README.md", "docs/image.png", "notes.txt", "src/app.ts"])
def test_the_pre_commit_pattern_leaves_other_files(name):
    assert not _hook_pattern().search(name), name
