"""Every kernel-selection row cites engine source lines, and those lines name the kernel.

tools/quote_kernel_sources.py copies the lines data/kernels/<engine>-<version>.yaml cites, verbatim,
into tests/fixtures/kernel_quotes/<engine>-<version>.json (stamped with the wheel's sha256). Offline,
the tests check that the cited span of each kernel row and of each route row names that kernel (its
class or function); with ``ENGINE_WHEELS_DIR`` pointing at the downloaded wheels, the quotes
themselves are checked against the wheels.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.data.wheels import line_in, wheel_or_skip

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
from quote_kernel_sources import spans  # noqa: E402

RELEASES = ["vllm-0.33.0", "sglang-0.5.23"]
# what the cited code calls the kernel, where the data's display name is not a code identifier
IDENT = {
    ("sglang-0.5.23", "cublas-bf16"): "f.linear",
    ("sglang-0.5.23", "sgl-fp8-scaled-mm"): "fp8_scaled_mm",
    ("sglang-0.5.23", "torch-scaled-mm-fp8"): "torch._scaled_mm",
    ("sglang-0.5.23", "sgl-int8-scaled-mm"): "int8_scaled_mm",
    ("sglang-0.5.23", "deepgemm-fp8-block"): "deepgemm",
    ("sglang-0.5.23", "flashinfer-fp8-block"): "flashinfer",
    ("sglang-0.5.23", "cutlass-fp8-block"): "cutlass",
    ("sglang-0.5.23", "triton-fp8-block"): "triton_w8a8_block_fp8_linear",
    ("sglang-0.5.23", "marlin"): "marlin",
    ("sglang-0.5.23", "awq-dequant-cublas"): "awq",
    ("sglang-0.5.23", "marlin-fp8"): "marlin",
    ("sglang-0.5.23", "flashinfer-cutedsl-nvfp4"): "flashinfer_cutedsl",
    ("sglang-0.5.23", "flashinfer-cutlass-nvfp4"): "flashinfer_cutlass",
    ("sglang-0.5.23", "marlin-nvfp4"): "marlin",
    ("vllm-0.33.0", "cublas-bf16"): "torch.nn.functional.linear",
    ("vllm-0.33.0", "awq-gemm"): "awq_gemm",
}


def load(release: str) -> tuple[dict, dict[str, str]]:
    doc = yaml.safe_load((REPO / "data" / "kernels" / f"{release}.yaml").read_text())
    quotes = json.loads((REPO / "tests" / "fixtures" / "kernel_quotes" / f"{release}.json").read_text())
    assert quotes["sha256"] == doc["source"]["sha256"], "quotes and data were read from different wheels"
    return doc, quotes["lines"]


def cited(quotes: dict[str, str], source: str) -> str:
    out = []
    for path, start, end in spans(source):
        for i in range(start, end + 1):
            assert f"{path}:{i}" in quotes, f"{path}:{i} is not quoted (run tools/quote_kernel_sources.py)"
            out.append(quotes[f"{path}:{i}"])
    assert out, f"no file:line in {source!r}"
    return " ".join(out).lower()


def ident(release: str, kernel: dict) -> str:
    return IDENT.get((release, kernel["id"]), kernel["name"].split(" ")[0]).lower()


@pytest.mark.parametrize("release", RELEASES)
def test_each_kernel_row_cites_the_kernel(release):
    doc, quotes = load(release)
    for k in doc["kernels"]:
        assert ident(release, k) in cited(quotes, k["source"]), (k["id"], k["source"])


@pytest.mark.parametrize("release", RELEASES)
def test_each_route_row_cites_the_kernel_it_picks(release):
    doc, quotes = load(release)
    kernels = {k["id"]: k for k in doc["kernels"]}
    for r in doc["routes"]:
        assert ident(release, kernels[r["kernel"]]) in cited(quotes, r["source"]), (r["route"], r["kernel"])


@pytest.mark.parametrize("release", RELEASES)
def test_quotes_match_the_wheel(release):
    """Offline by default: set ENGINE_WHEELS_DIR to a folder holding the downloaded wheels."""
    doc, _ = load(release)
    wheel = wheel_or_skip(doc["source"]["artifact"])
    quotes = json.loads((REPO / "tests" / "fixtures" / "kernel_quotes" / f"{release}.json").read_text())
    with zipfile.ZipFile(wheel) as z:
        for key, text in quotes["lines"].items():
            path, _, ln = key.rpartition(":")
            full = quotes["paths"][path]
            assert line_in(z, full, ln) == text, key
