"""tools/extract_engine.py: hand-written rows carried to a new wheel are cited where their lines are now
(or listed for a human), every cited line is quoted, and the documented command reproduces the
committed data and quote files (with ENGINE_WHEELS_DIR pointing at the downloaded wheels)."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest

from tests.data.wheels import wheel_or_skip

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import extract_engine as ex  # noqa: E402
from wheel_source import Wheel  # noqa: E402

OLD = ["import os", "", "def check(cap):", "    if cap < 80:", "        raise ValueError('too old')", "    return cap"]


def fake_wheel(tmp: Path, version: str, body: list[str]) -> Wheel:
    path = tmp / f"eng-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"eng-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: eng\nVersion: {version}\n")
        z.writestr("eng/platform.py", "\n".join(body) + "\n")
    return Wheel(path)


def test_a_carried_row_is_cited_where_its_lines_moved(tmp_path):
    base = fake_wheel(tmp_path, "1.0", OLD)
    new = fake_wheel(tmp_path, "1.1", ["import sys", "import os", "", "", *OLD[2:]])  # the check moved 2 lines down
    rep = ex.Report()
    carrier = ex._Carrier(new, "eng", "1.1", "1.0", base, None, rep)
    out = carrier.relocate("messages[too_old]", "eng 1.0 wheel: eng/platform.py:4-5 (check)")
    assert out == "eng 1.1 wheel: eng/platform.py:6-7 (check)"
    assert not rep.review and "eng/platform.py:4 -> :6" in rep.hand[0]


def test_base_quotes_stand_in_for_the_base_wheel(tmp_path):
    new = fake_wheel(tmp_path, "1.1", ["# header", *OLD])
    quotes = {f"eng/platform.py:{i}": line.strip() for i, line in enumerate(OLD, 1)}
    rep = ex.Report()
    out = ex._Carrier(new, "eng", "1.1", "1.0", None, quotes, rep).relocate("x", "eng 1.0 wheel: eng/platform.py:5")
    assert out == "eng 1.1 wheel: eng/platform.py:6" and not rep.review


@pytest.mark.parametrize(("base_wheel", "why"), [(True, "not in this wheel"), (False, "pass --base-wheel")])
def test_a_line_that_cannot_be_found_needs_a_human(tmp_path, base_wheel, why):
    base = fake_wheel(tmp_path, "1.0", OLD)
    new = fake_wheel(tmp_path, "1.1", ["import os", "", "def check(cap):", "    return cap"])  # the raise is gone
    rep = ex.Report()
    carrier = ex._Carrier(new, "eng", "1.1", "1.0", base if base_wheel else None, None, rep)
    out = carrier.relocate("messages[too_old]", "eng 1.0 wheel: eng/platform.py:5")
    assert out == "eng 1.1 wheel: eng/platform.py:5"  # re-stamped, but ...
    assert len(rep.review) == 1 and "messages[too_old]" in rep.review[0] and why in rep.review[0]
    assert not rep.hand


def test_every_cited_line_is_quoted(tmp_path):
    w = fake_wheel(tmp_path, "1.0", [f"line {i}" for i in range(1, 21)])
    quotes: dict[str, str] = {}
    rep = ex.Report()
    ex._quote_source(w, "eng 1.0 wheel: eng/platform.py:2-15 (a span); platform.py:18 (suffix path)", quotes, rep, "x")
    # a span's first eight lines, the way tests/data/test_engine_sources.py reads a span back
    assert sorted(quotes) == sorted([f"eng/platform.py:{i}" for i in range(2, 10)] + ["platform.py:18"])
    assert quotes["platform.py:18"] == "line 18" and not rep.review
    ex._quote_source(w, "eng/platform.py:40", quotes, rep, "y")
    assert rep.review and "past the end" in rep.review[0]


def releases() -> list[str]:
    return sorted(p.stem for p in (REPO / "data" / "engines").glob("*.yaml") if p.stem.startswith(("vllm-", "sglang-")))


@pytest.mark.parametrize("release", releases())
def test_the_documented_command_reproduces_the_committed_files(release, tmp_path):
    """docs/data.md step 4: the version file and its quotes, byte for byte."""
    import yaml

    doc = yaml.safe_load((REPO / "data" / "engines" / f"{release}.yaml").read_text())
    wheel = wheel_or_skip(doc["source"]["artifact"])
    out, quotes = tmp_path / f"{release}.yaml", tmp_path / f"{release}.json"
    assert ex.main([str(wheel), "--out", str(out), "--quotes", str(quotes)]) == 0
    assert out.read_text() == (REPO / "data" / "engines" / f"{release}.yaml").read_text()
    committed = json.loads((REPO / "tests" / "fixtures" / "engine_quotes" / f"{release}.json").read_text())
    assert json.loads(quotes.read_text()) == committed


def test_adding_a_release_re_cites_the_carried_rows_from_the_previous_release_quotes(tmp_path):
    """vLLM 0.33.0 built on the 0.32.0 file (no --base-wheel): the hand-written dtype rows are found again by
    the text tests/fixtures/engine_quotes/vllm-0.32.0.json quotes, and cited where the committed 0.33.0 file
    cites them (vllm/platforms/cuda.py:648 in 0.32.0 is :650 in 0.33.0, gpu_worker.py:503 is :498 ...)."""
    import yaml

    now = yaml.safe_load((REPO / "data" / "engines" / "vllm-0.33.0.yaml").read_text())
    wheel = wheel_or_skip(now["source"]["artifact"])
    out, report = tmp_path / "vllm-0.33.0.yaml", tmp_path / "report.md"
    assert ex.main([str(wheel), "--base", str(REPO / "data" / "engines" / "vllm-0.32.0.yaml"), "--out", str(out),
                    "--report", str(report)]) == 0
    got = yaml.safe_load(out.read_text())
    for section, rid in (("messages", "bfloat16_unsupported"), ("messages", "dtype_auto_fallback"),
                         ("dtype_checks", "bfloat16_explicit"), ("dtype_checks", "bfloat16_auto")):
        row = next(r for r in got[section] if r["id"] == rid)
        want = next(r for r in now[section] if r["id"] == rid)
        assert row["source"] == want["source"], (section, rid)
    text = report.read_text()
    assert "messages[bfloat16_unsupported]: hand-written, its cited lines found again in 0.33.0 " \
           "(vllm/platforms/cuda.py:648 -> :650)" in text
    assert "not found again" not in text
