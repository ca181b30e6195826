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

# every release with a kernel table on file (each read from its own wheel)
RELEASES = sorted(p.stem for p in (REPO / "data" / "kernels").glob("*.yaml"))
# what the cited code calls the kernel, where the data's display name is not a code identifier
IDENT = {
    ("sglang", "cublas-bf16"): "f.linear",
    ("sglang", "sgl-fp8-scaled-mm"): "fp8_scaled_mm",
    ("sglang", "torch-scaled-mm-fp8"): "torch._scaled_mm",
    ("sglang", "sgl-int8-scaled-mm"): "int8_scaled_mm",
    ("sglang", "deepgemm-fp8-block"): "deepgemm",
    ("sglang", "flashinfer-fp8-block"): "flashinfer",
    ("sglang", "cutlass-fp8-block"): "cutlass",
    ("sglang", "triton-fp8-block"): "triton_w8a8_block_fp8_linear",
    ("sglang", "marlin"): "marlin",
    ("sglang", "awq-dequant-cublas"): "awq",
    ("sglang", "marlin-fp8"): "marlin",
    ("sglang", "flashinfer-cutedsl-nvfp4"): "flashinfer_cutedsl",
    ("sglang", "flashinfer-cutlass-nvfp4"): "flashinfer_cutlass",
    ("sglang", "marlin-nvfp4"): "marlin",
    ("vllm", "cublas-bf16"): "torch.nn.functional.linear",
    ("vllm", "awq-gemm"): "awq_gemm",
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
    return IDENT.get((release.split("-")[0], kernel["id"]), kernel["name"].split(" ")[0]).lower()


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


# what a fused-MoE oracle calls the backend a kernel id belongs to (its priority lists name backends, e.g.
# vLLM fused_moe/oracle/fp8.py Fp8MoeBackend.TRITON / FLASHINFER_TRTLLM, SGLang MoeRunnerBackend.TRITON)
MOE_IDENT = {"triton": "triton", "cutlass": "cutlass", "marlin": "marlin", "humming": "humming",
             "flashinfer-trtllm": "trtllm"}


def moe_ident(kid: str) -> str:
    return next(w for prefix, w in MOE_IDENT.items() if kid.startswith(prefix))


@pytest.mark.parametrize("release", RELEASES)
def test_each_fused_moe_row_cites_its_backend(release):
    # the fused-MoE kernels and routes are quoted like the Linear ones (tools/quote_kernel_sources.py); the
    # cited span of each names the backend family the row picks
    doc, quotes = load(release)
    for k in doc.get("moe_kernels", []):
        assert moe_ident(k["id"]) in cited(quotes, k["source"]), (k["id"], k["source"])
    for r in doc.get("moe_routes", []):
        assert moe_ident(r["kernel"]) in cited(quotes, r["source"]), (r["route"], r["kernel"], r["source"])


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


@pytest.mark.parametrize("release", RELEASES)
def test_each_table_is_read_from_its_own_release_wheel(release):
    # the file name, the table's engine and version, and the wheel it was read from name one release, the same
    # wheel (sha256) data/engines/<release>.yaml was extracted from; or, where the engine file was read from the
    # release's sdist (vLLM 0.34.0), that sdist, whose Python sources are the wheel's: checked, with
    # ENGINE_WHEELS_DIR holding the wheel, by finding every line the engine file quotes in the table's wheel
    doc, _ = load(release)
    engine, version = release.split("-", 1)
    assert (doc["engine"], str(doc["version"])) == (engine, version)
    assert f"-{version}-" in doc["source"]["artifact"] and str(doc["source"]["version"]) == version
    engine_doc = yaml.safe_load((REPO / "data" / "engines" / f"{release}.yaml").read_text())
    if doc["source"]["sha256"] == engine_doc["source"]["sha256"]:
        return
    assert engine_doc["source"]["artifact"] == f"{doc['source']['package']}-{version}.tar.gz", \
        "the table and the engine file were read from different releases' artifacts"
    assert doc["source"]["artifact"].endswith(".whl")
    quotes = json.loads((REPO / "tests" / "fixtures" / "engine_quotes" / f"{release}.json").read_text())
    assert quotes["sha256"] == engine_doc["source"]["sha256"]
    wheel = wheel_or_skip(doc["source"]["artifact"])
    with zipfile.ZipFile(wheel) as z:
        for key, text in quotes["lines"].items():
            path, _, ln = key.rpartition(":")
            assert line_in(z, path, ln) == text, key


def test_kernel_table_answers_each_release_with_its_own_table():
    from quantadvise import catalog

    for release in RELEASES:
        engine, version = release.split("-", 1)
        assert catalog.kernel_table(engine, version).version == version
    # a release with no table of its own gets the newest not newer than it, else the oldest; the table says
    # which release it is (callers compare .version: the upgrade gate and inspect never use a stand-in, and a
    # speed figure names the table that priced it)
    assert catalog.kernel_table("vllm", "0.35.0").version == "0.34.0"
    assert catalog.kernel_table("vllm", "0.29.0").version == "0.30.0"
    assert catalog.kernel_table("sglang", "0.5.19").version == "0.5.20"


# vLLM's weight-only Marlin messages come from the Marlin kernels' setup (scaled_mm/marlin.py ->
# prepare_fp8_layer_for_marlin; nvfp4/marlin.py), so the engine data's message and the kernel table's kernel must
# agree in every release (tests/unit/test_weight_only_kernels.py checks 0.33.0 in detail)
_WARN_CHECKPOINTS = ("fp8", "fp8-block", "modelopt-fp8", "modelopt-fp8-pb-wo", "modelopt-nvfp4", "ct-fp8",
                     "ct-fp8-block", "ct-w8a16-fp8", "ct-nvfp4", "ct-nvfp4a16")
# vLLM 0.30.0's CutlassFP8ScaledMMLinearKernel.is_supported checks only is_cuda() (scaled_mm/cutlass.py:163-169;
# 0.31.0 adds cutlass_fp8_supported()) and comes before Marlin in _POSSIBLE_FP8_KERNELS (kernels/linear/__init__.py:424,
# :428): Fp8Config / ModelOpt FP8 per-tensor and per-channel weights run CUTLASS there and log no Marlin message


_VLLM = sorted(r.split("-", 1)[1] for r in RELEASES if r.startswith("vllm-"))


@pytest.mark.parametrize(("version", "name", "capability"), [
    (v, n, c) for v in _VLLM for n in _WARN_CHECKPOINTS for c in (75, 80, 86, 89, 90, 100, 120)])
def test_marlin_messages_follow_each_vllm_release_kernel_table(version, name, capability):
    from quantadvise import catalog
    from quantadvise.checkpoint.parse import parse_quantization_config
    from quantadvise.engines.kernels import checkpoint_kernels
    from quantadvise.engines.resolution import resolve
    from tests.unit.test_weight_only_kernels import CHECKPOINTS, MARLIN_KINDS

    engine, table = catalog.get_engine("vllm", version), catalog.kernel_table("vllm", version)
    ck = parse_quantization_config(CHECKPOINTS[name])
    r = resolve(engine, ck, capability=capability)
    if r.refused:
        return
    (row,) = checkpoint_kernels([(g.name, g.scheme(), g.format) for g in ck.groups], [table], capability, None,
                                r.resolved_method)
    k = table.kernel(row.kernel) if row.kernel else None
    assert k is not None
    said = {f.kind for f in r.findings if f.kind in MARLIN_KINDS}
    assert said == ({k.warns} if k.warns else set()), (k.id, said)


def test_carry_moves_each_citation_to_where_its_lines_are_and_lists_the_rest(tmp_path):
    # tools/quote_kernel_sources.py carry: a citation whose lines moved in the other wheel is cited where they are
    # now (a recurring one-line span by its neighbours), one whose text changed is kept and listed for a human
    from quote_kernel_sources import carry_text

    def wheel(name: str, body: list[str]) -> zipfile.ZipFile:
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("eng/kernels.py", "\n".join(body) + "\n")
        return zipfile.ZipFile(path)

    old = ["A = [", "    Fast,", "    Marlin,", "]", "B = [", "    Marlin,", "    Slow,", "]", "def pick():",
           "    return 1"]
    new = ["import os", "", "A = [", "    Fast,", "    Marlin,", "]", "B = [", "    Marlin,", "    Slow,", "]",
           "def pick():", "    return 2"]
    table = ("version: 1.1\nsource:\n  version: 1.1\n  artifact: eng-1.1-py3-none-any.whl\n  sha256: aa\n"
             'routes:\n  - source: "eng/kernels.py:5-8 (B), :6 (Marlin in B), :3; kernels.py:9-10"\n')
    out, review = carry_text(table, wheel("eng-1.1-py3-none-any.whl", old), wheel("eng-1.0-py3-none-any.whl", new),
                             "1.0", "eng-1.0-py3-none-any.whl", "bb")
    assert 'source: "eng/kernels.py:7-10 (B), :8 (Marlin in B), :5; kernels.py:9-10"' in out
    assert "version: 1.0\n" in out and "  version: 1.0\n" in out and "  sha256: bb\n" in out
    assert len(review) == 1 and "kernels.py:9-10 not found again (kept)" in review[0]


# Carried records (data/kernels/carried/) that hold differences read by hand in the release's own source: each row
# cites lines of that release, quoted by `tools/carry_kernel_tables.py --quote-differences`
_CARRIED = REPO / "data" / "kernels" / "carried"
DIFFERENCES = sorted(p.stem for p in _CARRIED.glob("*.yaml") if yaml.safe_load(p.read_text()).get("differences"))


def _carried(release: str) -> tuple[dict, dict]:
    rec = yaml.safe_load((_CARRIED / f"{release}.yaml").read_text())
    quotes = json.loads((REPO / "tests" / "fixtures" / "kernel_quotes" / "carried" / f"{release}.json").read_text())
    assert quotes["sha256"] == rec["source"]["sha256"], "quotes and record were read from different artifacts"
    return rec, quotes


def test_some_releases_hold_differences():
    # fp8 through 0.10.2; AWQ's Marlin through 0.18.1 (awq_marlin.py returns apply_awq_marlin_linear up to 0.18.1;
    # 0.19.1's AWQMarlinLinearMethod asks choose_mp_linear_kernel)
    assert {"vllm-0.8.5.post1", "vllm-0.9.2", "vllm-0.10.1", "vllm-0.10.2"} <= set(DIFFERENCES)
    assert {f"vllm-{v}" for v in ("0.11.2", "0.12.0", "0.13.0", "0.14.1", "0.15.1", "0.16.0", "0.17.1", "0.18.1")} \
        <= set(DIFFERENCES)
    assert "vllm-0.19.1" not in DIFFERENCES
    # SGLang's block fp8 ran its Triton GEMM until 0.4.4 brought DeepGEMM (fp8_kernel.py imports deep_gemm there)
    assert {"sglang-0.4.1.post7", "sglang-0.4.2.post4", "sglang-0.4.3.post4"} <= set(DIFFERENCES)
    assert "sglang-0.4.4.post4" not in DIFFERENCES


@pytest.mark.parametrize("release", DIFFERENCES)
def test_each_difference_cites_the_lines_that_make_it(release):
    # a separate activation quantization cites the call that runs it (ops.scaled_fp8_quant, per_token_group_quant_fp8);
    # another kernel cites the code that picks it (CUTLASS for fp8, Marlin for AWQ before 0.19.1); a difference that takes
    # DeepGEMM away cites why (VLLM_USE_DEEP_GEMM off by default), or an apply path with no DeepGEMM call at all
    rec, quotes = _carried(release)
    for d in rec["differences"]:
        text = cited(quotes["lines"], d["source"])
        if d.get("activation_quant") == "unfused":
            assert "scaled_fp8_quant(" in text or "per_token_group_quant_fp8(" in text, (release, d["route"])
        if d.get("runs"):  # the code that picks it names it
            assert {"cutlass-fp8": "cutlass", "cutlass-fp8-block": "cutlass", "marlin": "marlin",
                    "triton-fp8-block": "w8a8_block_fp8_matmul("}[d["runs"]] in text, \
                (release, d["route"], d["runs"])
        if d["kernel"] == "deepgemm-fp8-block":  # why not DeepGEMM: off by default, or no path to it in this release
            assert "vllm_use_deep_gemm" in text or "deep" not in text.replace("deepgemm path", ""), (release, d["route"])


@pytest.mark.parametrize("release", DIFFERENCES)
def test_difference_quotes_match_the_release(release):
    """Offline by default: set ENGINE_WHEELS_DIR to a folder holding the release's artifact."""
    rec, quotes = _carried(release)
    art = wheel_or_skip(rec["source"]["artifact"])
    from wheel_source import open_artifact  # tools/

    z = open_artifact(art)
    for key, text in quotes["lines"].items():
        path, _, ln = key.rpartition(":")
        assert z.read(quotes["paths"][path]).decode().splitlines()[int(ln) - 1].strip() == text, key
