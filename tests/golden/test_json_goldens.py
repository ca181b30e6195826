"""JSON goldens for ``recommend``, ``check`` and ``inspect``: the safety net under refactoring.

Each case runs the real entry point with ``--format json`` and compares the whole document with
``tests/golden/json/<case>.json``. These files are not independent derivations (the unit and CLI
tests are); they pin today's behaviour so a restructuring that changes any number, word or field
shows up as a diff. A deliberate change regenerates them with

    REGEN_GOLDENS=1 python -m pytest tests/golden -q

and explains the diff in CHANGELOG.md. Floats compare to 1e-9 relative: a refactoring may reorder
a sum, not change a result. Key order is compared too (the JSON must stay byte-compatible).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli

HERE = Path(__file__).parent / "json"
REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures"
CK = FIX / "checkpoints"

RECOMMEND = {
    "rec-default-b64": ["--batch", "64", "--ctx", "2048"],
    "rec-b1-explain": ["--batch", "1", "--ctx", "2048", "--explain"],
    "rec-a100-b512": ["--batch", "512", "--ctx", "2048", "--gpu", "a100-80gb"],
    "rec-70b-h100-b8": ["-m", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--batch", "8", "--ctx", "4096"],
    "rec-70b-2xh100-b64": [
        "-m",
        "meta-llama/Llama-3.1-70B",
        "--gpu",
        "h100",
        "--gpus",
        "2",
        "--batch",
        "64",
        "--ctx",
        "8192",
    ],
    "rec-l4-b32-8k": ["--gpu", "l4", "--batch", "32", "--ctx", "8192"],
    "rec-l40s-sglang": ["--gpu", "l40s", "--engine", "sglang", "--batch", "128", "--ctx", "4096"],
    "rec-dsv3-8xh200": [
        "-m",
        "deepseek-ai/DeepSeek-V3",
        "--gpu",
        "h200",
        "--gpus",
        "8",
        "--batch",
        "64",
        "--ctx",
        "32768",
    ],
    "rec-gptoss120b": ["-m", "openai/gpt-oss-120b", "--gpu", "h100", "--batch", "16", "--ctx", "4096"],
    "rec-qwen3moe-reasoning": [
        "-m",
        "Qwen/Qwen3-30B-A3B",
        "--task",
        "reasoning",
        "--accuracy-tolerance",
        "0.5",
        "--batch",
        "256",
        "--ctx",
        "4096",
    ],
    "rec-b200-b256": ["--gpu", "b200", "--batch", "256", "--ctx", "2048"],
    # Meta-Llama-3-8B (the default) serves at most 8,192 tokens: the 16k case runs its 131k sibling
    "rec-kvfp8-sync": ["-m", "meta-llama/Llama-3.1-8B", "--batch", "4", "--ctx", "16384", "--kv-dtype", "kv-fp8",
                       "--mode", "sync"],
    "rec-70b-h100-b64-8k": ["-m", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--batch", "64", "--ctx", "8192"],
    "rec-mixtral-a10g-prompt": [
        "-m",
        "mistralai/Mixtral-8x7B-v0.1",
        "--gpu",
        "a100-80gb",
        "--gpus",
        "2",
        "--batch",
        "32",
        "--prompt",
        "3000",
        "--output",
        "500",
    ],
    "rec-candidates-ideal": ["--batch", "128", "--candidates", "bf16,w4a16,fp8-dynamic,w8a8-int8", "--ideal"],
}

INSPECT = {
    "insp-dsv3": ["deepseek-ai/DeepSeek-V3", "--gpu", "h100"],
    "insp-awq70b-a100": [CK / "hugging-quants-meta-llama-3.1-70b-instruct-awq-int4.json", "--gpu", "a100-80gb"],
    "insp-gptq-sm75": [CK / "thebloke-llama-2-7b-awq.json", "--gpu", "sm75"],
    "insp-gptoss": [CK / "openai-gpt-oss-120b-mxfp4.json", "--gpu", "h100"],
    "insp-ct-w4a16-sglang": [
        CK / "llm-compressor-issue-1215-llama-3.1-8b-instruct-w4a16-ct.json",
        "--engine",
        "sglang",
        "--gpu",
        "l4",
    ],
    "insp-ct-fp8-kv": [
        CK / "llm-compressor-tinyllama-fp8-static-kv-cache-scheme.json",
        "--gpu",
        "l40s",
        "--kv-cache-dtype",
        "fp8",
    ],
    # a bare hf_quant_config.json (ModelOpt), read without its config.json
    "insp-modelopt-405b": [
        ("hf_quant_config", CK / "nvidia-llama-3.1-405b-instruct-fp8-modelopt.json"),
        "--gpu",
        "h100",
    ],
    "insp-modelopt-nvfp4-hopper": [
        ("hf_quant_config", CK / "vipertsniper-deepseek-r1-distill-qwen-32b-nvfp4-modelopt.json"),
        "--gpu",
        "h100",
    ],
    "insp-bnb-nf4": [CK / "asif00-bangla-llama-4bit-bnb-nf4.json"],
    "insp-forced-awq": [CK / "thebloke-llama-2-7b-awq.json", "--quantization", "awq_marlin", "--gpu", "a10g"],
}

CHECK = {
    "check-passing": ("examples/passing-repo", []),
    "check-failing": ("examples/failing-repo", []),
    "check-multi": ("tests/fixtures/gate/multi", []),
    "check-deploy-fixtures": ("tests/fixtures/deploy", ["--gpu", "h100", "--model", "meta-llama/Llama-3.1-8B"]),
}


def _close(a, b, path="$"):
    """Structural equality with a relative float tolerance; returns the first differing path."""
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
            return None if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) else f"{path}: {a!r} != {b!r}"
        return f"{path}: {a!r} != {b!r}"
    if type(a) is not type(b):
        return f"{path}: type {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return f"{path}: keys differ: +{sorted(a.keys() - b.keys())} -{sorted(b.keys() - a.keys())}"
        if list(a) != list(b):  # --format json is byte-compatible: the key order is part of it
            return f"{path}: key order {list(a)} != {list(b)}"
        for k in a:
            if (d := _close(a[k], b[k], f"{path}.{k}")) is not None:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if (d := _close(x, y, f"{path}[{i}]")) is not None:
                return d
        return None
    return None if a == b else f"{path}: {a!r} != {b!r}"


def _compare(name: str, args: list, expect_codes: tuple[int, ...] = (0,)) -> None:
    r = run_cli(*[str(a) for a in args], "--format", "json")
    assert r.code in expect_codes, f"{name}: exit {r.code}\n{r.stderr}"
    got = {"exit_code": r.code, "report": json.loads(r.stdout)}
    path = HERE / f"{name}.json"
    if os.environ.get("REGEN_GOLDENS") == "1":
        path.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    assert path.exists(), f"no golden {path.name}: regenerate with REGEN_GOLDENS=1"
    want = json.loads(path.read_text(encoding="utf-8"))
    diff = _close(got, want)
    assert diff is None, f"{name} differs from its golden at {diff}"


@pytest.mark.parametrize("name", sorted(RECOMMEND))
def test_recommend_golden(name):
    _compare(name, ["recommend", *RECOMMEND[name]])


SIDECARS = {
    "quantize_config": "quantize_config.json",
    "hf_quant_config": "hf_quant_config.json",
    "quantization_config_json": "quantization_config.json",
    "quant_config_json": "quant_config.json",
}


def _checkpoint_folder(fixture: Path, tmp_path: Path) -> Path:
    """A fixture file (config plus sidecars, as quoted from the Hub) laid out as a checkpoint folder."""
    doc = json.loads(fixture.read_text())
    folder = tmp_path / fixture.stem
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(doc["config"]))
    for key, filename in SIDECARS.items():
        if key in doc:
            (folder / filename).write_text(json.dumps(doc[key]))
    return folder


@pytest.mark.parametrize("name", sorted(INSPECT))
def test_inspect_golden(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = []
    for a in INSPECT[name]:
        if isinstance(a, tuple):  # one sidecar file on its own
            key, fixture = a
            target = tmp_path / SIDECARS[key]
            target.write_text(json.dumps(json.loads(fixture.read_text())[key]))
            a = target.name
        elif isinstance(a, Path):
            a = _checkpoint_folder(a, tmp_path).name
        args.append(a)
    _compare(name, ["inspect", *args])


@pytest.mark.parametrize("name", sorted(CHECK))
def test_check_golden(name, tmp_path, monkeypatch):
    folder, extra = CHECK[name]
    root = tmp_path / "repo"
    shutil.copytree(REPO / folder, root)
    (root / ".git").mkdir(exist_ok=True)  # a repository root: config discovery stops here
    monkeypatch.chdir(root)
    _compare(name, ["check", *extra], expect_codes=(0, 1))
