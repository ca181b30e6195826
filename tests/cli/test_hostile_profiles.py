"""Issue 29, hostile profiles: a profile is a file anyone can edit, and its times had only a lower bound. A
1e308-second step overhead, kernel overhead, serving-loop term or measured call made the serving cycle inf:
pydantic refused the result (a traceback, exit 1) or the JSON report printed ``Infinity``. Each is now bounded
where it is read (a second per step, call, layer or collective; a minute per timed call), one Error line."""

from __future__ import annotations

import re

import pytest

from quantadvise.catalog.loader import data_dir
from tests.oneline import one_error


def test_a_step_overhead_past_a_second(cli, tmp_path):
    (tmp_path / "p.yaml").write_text("schema_version: 1\nid: x\nsource: x\nas_of: 2026-01-01\n"
                                     "defaults:\n  step_overhead_s: 1.0e+308\n")
    for args in (["recommend", "--profile", "p.yaml"], ["roofline", "--profile", "p.yaml", "--pareto", "-f", "json"]):
        one_error(cli(*args), "step_overhead_s")


def test_a_kernel_curve_overhead_past_a_second(cli, tmp_path):
    text = (data_dir() / "profiles" / "h100-sxm.yaml").read_text()
    hostile = re.sub(r"^( +overhead_s:) .*$", r"\1 1.0e+308", text, flags=re.M)
    assert hostile != text
    (tmp_path / "k.yaml").write_text(hostile)
    for args in (["validate", "k.yaml"], ["roofline", "--profile", "k.yaml", "-f", "json"]):
        one_error(cli(*args), "overhead_s")


@pytest.mark.parametrize(("term", "value"), [("layer_s", "1.0e+308"), ("allreduce_token_s", "1.0"),
                                              ("prefill_scale", "1.0e+6"), ("pass_s", "-1")])
def test_a_serving_term_past_any_loop(cli, tmp_path, term, value):
    # a deployment profile that `calibrate --from-bench` writes, its fitted term replaced
    from tests.conftest import FIXTURES

    made = cli("calibrate", "--from-bench", str(FIXTURES / "bench" / "vllm_bench_serve_0.33.0.json"), "--gpu", "h100",
               "--out", "site.yaml", "--no-progress")
    assert made.code == 0, made.stderr
    text = (tmp_path / "site.yaml").read_text()
    hostile = re.sub(rf"^(\s+{term}:) .*$", rf"\g<1> {value}", text, count=1, flags=re.M)
    if hostile == text:  # the fit left this term out: add it to the first terms row
        hostile = re.sub(r"^(\s+)(layer_s|pass_s|seq_s|prefill_scale):", rf"\g<1>{term}: {value}\n\g<1>\g<2>", text,
                         count=1, flags=re.M)
    assert hostile != text
    (tmp_path / "site.yaml").write_text(hostile)
    one_error(cli("roofline", "--profile", "site.yaml", "--pareto", "-f", "json"), term)


def test_a_measured_call_past_a_minute(cli, tmp_path):
    made = cli("calibrate", "--backend", "simulated", "--gpu", "h100", "--out", "sim.yaml", "--no-progress",
               "--seconds", "1")
    assert made.code == 0, made.stderr
    text = (tmp_path / "sim.yaml").read_text()
    hostile = re.sub(r"time_s: \[[0-9.e+-]+,", "time_s: [1.0e+308,", text, count=1)
    assert hostile != text
    (tmp_path / "p.yaml").write_text(hostile)
    one_error(cli("validate", "p.yaml", "-f", "json"), "time_s")
