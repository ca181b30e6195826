"""``check`` prices a deployment on the kernel its ``--quantization`` makes the engine run (issue 12: "the
plain AWQ GEMM where --quantization awq is forced"; issue 14: the speed rules judge what runs).

SGLang 0.5.23 with ``--quantization awq`` forced on an AWQ checkpoint runs AWQ's own path, not AWQ-Marlin:
the whole int4 weight is dequantized to 16 bits on every call and multiplied by a bf16 GEMM (data/kernels/
sglang-0.5.23.yaml, kernel ``awq-dequant-cublas``; docs/calibration.md). Each decode step then moves the
packed weight, writes and reads it back at 16 bits, and runs the bf16 GEMM: more bytes than bf16 alone, so
it is slower than bf16 — the QA201 case — while the auto-detected ``awq_marlin`` is not."""

from __future__ import annotations

import json
from pathlib import Path

import quantadvise as qa

FIXTURE = Path(__file__).parents[1] / "fixtures" / "checkpoints" / "hugging-quants-meta-llama-3.1-70b-instruct-awq-int4.json"


def _deploy(tmp_path: Path, name: str, extra: str) -> Path:
    root = tmp_path / name
    (root / "ck").mkdir(parents=True)
    (root / "ck" / "config.json").write_text(json.dumps(json.loads(FIXTURE.read_text())["config"]))
    (root / "serve.sh").write_text(f"python -m sglang.launch_server --model-path ./ck{extra} --tp-size 2\n")
    return root


def test_forced_awq_on_sglang_is_priced_on_its_own_kernel(tmp_path, monkeypatch) -> None:
    forced, auto = _deploy(tmp_path, "forced", " --quantization awq"), _deploy(tmp_path, "auto", "")
    monkeypatch.chdir(forced)
    rf = qa.check(".", gpu="h100", gpus=2)
    monkeypatch.chdir(auto)
    ra = qa.check(".", gpu="h100", gpus=2)
    pf, pa = rf.targets[0].performance, ra.targets[0].performance
    assert pf is not None and pa is not None
    assert pf.tokens_per_s < pa.tokens_per_s  # dequantize + bf16 GEMM against AWQ-Marlin
    rules_f = {f.rule for f in rf.findings}
    assert {"slow-kernel-forced", "slower-than-bf16"} <= rules_f
    assert "slower-than-bf16" not in {f.rule for f in ra.findings}
