"""Hostile tiny numbers: a value that passed "> 0" but is no measurement — a subnormal float (1e-320, 5e-324),
1e-300, or a fraction just under a physical floor. An efficiency of a profile divided every time by ~0 (a
pydantic traceback from the serving loop's cycle_s = nan, or ``"step_time_s": Infinity`` in JSON, or a
300-digit ITL with exit 0), a latency of a benchmark file divided every relative error by ~0 (``"ttft_s":
Infinity``), and ``--memory-utilization 1e-320`` sized "0.00 GB usable (0%)" with exit 0. Each is now one
``Error:`` line naming the file or flag and the field, exit 2, and the value at the floor still works.

The floors (their reasons are at the constants): a GPU-wide efficiency >= 0.01 of peak
(perf.profiles.MIN_EFFICIENCY; the shipped least is 0.45), a kernel curve's >= 0.001
(perf.kernel_curves.MIN_KERNEL_EFFICIENCY; the importer's fit stops at 0.005), a calibrated fit's compute
efficiency >= 1e-4 and memory efficiency >= 0.01 (calibrate's fit bounds), a timed call >= 1 us, a benchmark
latency 0 (not recorded) or >= 0.001 ms (calibration.bench.MIN_LATENCY_MS), --memory-utilization >= 0.01 and
--accuracy-tolerance >= 0.001 points (quantadvise.inputs.LIMITS)."""

from __future__ import annotations

import json
import re

import pytest

from quantadvise.catalog.loader import data_dir
from tests.conftest import FIXTURES
from tests.oneline import one_error

HEAD = "schema_version: 1\nid: x\nsource: x\nas_of: 2026-01-01\n"
# PyYAML reads a float only with a dot and a signed exponent: 1.0e-320, not 1e-320
TINY = ["1.0e-320", "5.0e-324", "1.0e-300"]




def _strict_json(text: str):
    """The report as JSON with no Infinity / NaN (json.loads takes them unless told not to)."""
    def refuse(name):
        raise AssertionError(f"{name} in a JSON report")
    return json.loads(text, parse_constant=refuse)


# -- profile files ------------------------------------------------------------------------------------------

EFFICIENCIES = [
    ("defaults:\n  memory_efficiency: {v}\n", "defaults.memory_efficiency"),
    ("defaults:\n  compute_efficiency: {{bf16: {v}}}\n", "defaults.compute_efficiency': compute_efficiency.bf16"),
    ("defaults:\n  allreduce: {{efficiency: {v}}}\n", "defaults.allreduce.efficiency"),
    ("defaults:\n  dequant: {{efficiency: {v}}}\n", "defaults.dequant.efficiency"),
    ("gpus:\n  - gpu: h100-sxm\n    memory_efficiency: {{batch: [1, 64], value: [{v}, 0.8]}}\n",
     "gpus.0.memory_efficiency"),
    ("gpus:\n  - gpu: h100-sxm\n    schemes:\n      w4a16: {{compute_efficiency: {{bf16: {v}}}}}\n",
     "gpus.0.schemes.w4a16.compute_efficiency': compute_efficiency.bf16"),
]


@pytest.mark.parametrize(("body", "field"), EFFICIENCIES, ids=[f for _, f in EFFICIENCIES])
@pytest.mark.parametrize("value", [*TINY, "0.009"])
def test_an_efficiency_under_one_percent_of_peak(cli, tmp_path, body, field, value):
    # memory_efficiency 1e-320: recommend's serving loop got cycle_s = nan (a pydantic traceback, exit 1) and
    # roofline printed "step_time_s": Infinity with exit 0; 1e-300 printed a 300-digit ITL and "0 tok/s";
    # 0.009 is no credible profile either (under 1% of peak; the shipped least is 0.45)
    (tmp_path / "p.yaml").write_text(HEAD + body.format(v=value))
    for args in (["recommend", "--profile", "p.yaml", "--gpus", "2"],
                 ["roofline", "--profile", "p.yaml", "-f", "json", "-s", "bf16,w4a16"]):
        one_error(cli(*args), "p.yaml", field, ">= 0.01 and <= 1")


def test_an_efficiency_at_the_floor_is_priced(cli, tmp_path):
    (tmp_path / "p.yaml").write_text(HEAD + "defaults:\n  memory_efficiency: 0.0099\n")
    one_error(cli("roofline", "--profile", "p.yaml", "-s", "bf16"), "memory_efficiency", "got 0.0099")
    (tmp_path / "p.yaml").write_text(HEAD + "defaults:\n  memory_efficiency: 0.01\n")
    r = cli("roofline", "--profile", "p.yaml", "-s", "bf16", "-b", "1", "--ctx", "2048", "--gpu", "mi300x",
            "-f", "json")
    assert r.code == 0, r.stderr
    (point,) = _strict_json(r.stdout)["points"]
    # a batch-1 decode step of Llama-3-8B in bf16 is memory bound: it reads its 7.50e9 linear weights x 2 B
    # = 15.01e9 B and a 2,048-token KV cache of 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B a
    # token = 0.268e9 B, at 1% of MI300X's 5.3 TB/s (MI300X has no measured profile on file, so the roofline
    # applies the efficiency as given): 15.28e9 / 5.3e10 = 0.288 s
    assert point["step_time_s"] == pytest.approx(0.288, rel=0.01)


@pytest.mark.parametrize(("find", "value", "field"), [
    (r"compute_efficiency: 0\.75449", "compute_efficiency: 1.0e-320", "linear.compute_efficiency"),
    (r"compute_efficiency: 0\.75449", "compute_efficiency: 9.0e-5", "linear.compute_efficiency"),  # fit's least: 1e-4
    (r"memory_efficiency: 0\.79803", "memory_efficiency: 5.0e-324", "linear.memory_efficiency"),  # fit's least: 0.01
    (r"value: \[0\.97889", "value: [1.0e-320", "linear.correction"),  # measured / fitted: 0.01 to 100
    # one timed call of the decode linears: 1e-300 s validated to a 300-digit error percentage
    (r"time_s: \[0\.0051111", "time_s: [1.0e-300", "time_s"),
    (r"time_s: \[0\.0051111", "time_s: [9.0e-7", "time_s"),
])
def test_a_calibration_s_fit_or_timing_under_its_floor(cli, tmp_path, find, value, field):
    text = (FIXTURES / "profiles" / "simulated-h100-sxm.yaml").read_text()
    hostile = re.sub(find, value, text, count=1)
    assert hostile != text
    (tmp_path / "p.yaml").write_text(hostile)
    for args in (["validate", "p.yaml", "-f", "json"], ["roofline", "--profile", "p.yaml", "-f", "json"]):
        one_error(cli(*args), "p.yaml", field)


@pytest.mark.parametrize(("find", "value", "field"), [
    # an M factor of 1e-320 made recommend's cycle nan (a traceback) and roofline print 1e+76-second steps
    (r"(m_factor: \[)[0-9.]+", r"\g<1>1.0e-320", "m_factor"),
    (r"(m_factor: \[)[0-9.]+", r"\g<1>0.0009", "m_factor"),
    (r"(nk_knots: \[)512", r"\g<1>0", "nk_knots"),  # log2(0): a math domain error
    (r"(act_bytes:) 1\.0", r"\g<1> 1.0e+308", "act_bytes"),  # an inf memory term: a traceback
    (r"(efficiency:) 1\.236", r"\g<1> 1.0e-320", "efficiency"),  # a quantization kernel's
    (r"(bytes_per_element:) 5\.0", r"\g<1> 1.0e+308", "bytes_per_element"),
    (r"(bytes_per_element:) 5\.0", r"\g<1> 1.0e-320", "bytes_per_element"),  # validated to a failed fit
])
def test_a_kernel_curve_number_no_kernel_has(cli, tmp_path, find, value, field):
    text = (data_dir() / "profiles" / "h100-sxm.yaml").read_text()
    hostile = re.sub(find, value, text, count=0 if field == "m_factor" else 1)
    assert hostile != text
    (tmp_path / "k.yaml").write_text(hostile)
    for args in (["validate", "k.yaml"], ["recommend", "--profile", "k.yaml", "-f", "json"]):
        one_error(cli(*args), "k.yaml", field)


def test_a_dequantisation_cost_past_any_format(cli, tmp_path):
    # 1e308 FLOP per weight printed a 300-digit step time for every weight-only scheme, with exit 0
    (tmp_path / "p.yaml").write_text(HEAD + "defaults:\n  dequant: {flops_per_weight: 1.0e+308}\n")
    one_error(cli("roofline", "--profile", "p.yaml", "-s", "w4a16", "--gpu", "mi300x"), "p.yaml",
               "dequant.flops_per_weight", "1000")


# -- benchmark result files -----------------------------------------------------------------------------------

def _set(doc, path: str, value: float) -> None:
    *parents, last = path.split(".")
    for p in parents:
        doc = doc[int(p)] if isinstance(doc, list) else doc[p]
    doc[last] = value


BENCH = [
    ("vllm_bench_serve_0.33.0.json", "mean_ttft_ms", "'mean_ttft_ms'"),
    ("vllm_bench_serve_0.33.0.json", "mean_tpot_ms", "'mean_tpot_ms'"),
    ("vllm_bench_serve_0.33.0.json", "mean_e2el_ms", "'mean_e2el_ms'"),
    ("sglang_bench_serving_0.5.23.jsonl", "mean_ttft_ms", "'mean_ttft_ms'"),
    ("sglang_bench_serving_0.5.23.jsonl", "mean_e2e_latency_ms", "'mean_e2e_latency_ms'"),
    ("genai_perf_profile_export_genai_perf_0.0.16.json", "time_to_first_token.avg", "time_to_first_token"),
    ("genai_perf_profile_export_genai_perf_0.0.16.json", "inter_token_latency.avg", "inter_token_latency"),
    ("guidellm_benchmarks_0.8.1_reduced.json", "benchmarks.0.metrics.time_to_first_token_ms.successful.mean",
     "time_to_first_token_ms"),
    ("guidellm_benchmarks_0.8.1_reduced.json", "benchmarks.0.metrics.request_latency.successful.mean",
     "request_latency"),
    ("vllm_bench_latency_0.33.0.json", "avg_latency", "'avg_latency'"),
]


def _hostile_bench(tmp_path, name: str, path: str, value: float) -> str:
    text = (FIXTURES / "bench" / name).read_text()
    if name.endswith(".jsonl"):  # the first run of the file
        doc = json.loads(text.splitlines()[0])
        _set(doc, path, value)
        out = json.dumps(doc) + "\n"
    else:
        doc = json.loads(text)
        _set(doc, path, value)
        out = json.dumps(doc)
    dest = tmp_path / ("b" + name[name.rindex("."):])
    dest.write_text(out)
    return dest.name


@pytest.mark.parametrize(("name", "path", "says"), BENCH, ids=[f"{n.split('_')[0]}-{s.strip(chr(39))}"
                                                             for n, _, s in BENCH])
@pytest.mark.parametrize("value", [1e-320, 5e-324, 1e-300])
def test_a_latency_under_a_microsecond_in_a_bench_file(cli, tmp_path, name, path, says, value):
    # mean_ttft_ms 1e-320 printed "error": {"ttft_s": Infinity} from validate --bench and calibrate --from-bench
    f = _hostile_bench(tmp_path, name, path, value)
    workload = ["--model", "llama-3.1-8b", "--concurrency", "4", "--prompt", "1024", "--output", "128"]
    for args in (["validate", "--bench", f, "--gpu", "h100", *workload, "-f", "json"],
                 ["calibrate", "--from-bench", f, "--gpu", "h100", "--out", "o.yaml", "--no-progress", "-f", "json"]):
        one_error(cli(*args), f, says, "a microsecond")


def test_a_latency_of_a_microsecond_is_read(cli, tmp_path):
    f = _hostile_bench(tmp_path, "vllm_bench_serve_0.33.0.json", "mean_ttft_ms", 0.0009)
    one_error(cli("validate", "--bench", f, "--gpu", "h100", "-f", "json"), "'mean_ttft_ms'", "0.001 ms")
    f = _hostile_bench(tmp_path, "vllm_bench_serve_0.33.0.json", "mean_ttft_ms", 0.001)
    r = cli("validate", "--bench", f, "--gpu", "h100", "-f", "json")
    assert r.code in (0, 1), r.stderr
    (point,) = _strict_json(r.stdout)["points"]
    # 0.001 ms is 1e-6 s; the relative error is predicted / measured - 1, large (no server answers in a
    # microsecond) and finite
    assert point["measured"]["ttft_s"] == pytest.approx(1e-6)
    assert point["error"]["ttft_s"] == pytest.approx(point["predicted"]["ttft_s"] / 1e-6 - 1)


# -- flags and the files that set them ------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["1e-320", "5e-324", "0.009"])
def test_a_memory_share_under_one_percent(cli, value):
    # 1e-320 sized "0.00 GB usable (0%)" with exit 0 (size) and "no scheme can serve this workload" (recommend)
    for args in (["size", "llama-3-8b", "--gpu", "h100"], ["recommend"]):
        line = one_error(cli(*args, "--memory-utilization", value))
        assert line == f"Error: --memory-utilization must be a number >= 0.01 and <= 1, got {float(value)!r}"


def test_a_memory_share_under_one_percent_in_a_workload_file(cli, tmp_path):
    (tmp_path / "w.yaml").write_text("model: meta-llama/Llama-3.1-8B\nmemory_utilization: 1.0e-320\n")
    one_error(cli("recommend", "-w", "w.yaml"), "memory_utilization", "0.01")


@pytest.mark.parametrize("value", ["1e-320", "5e-324", "0.0009"])
def test_an_accuracy_tolerance_under_a_thousandth_of_a_point(cli, value):
    # 1e-320 was accepted and printed "tolerance 9.99989e-321" (0 itself is refused)
    one_error(cli("recommend", "--accuracy-tolerance", value), "--accuracy-tolerance", ">= 0.001 and <= 100")


def test_a_negative_zero_reserve_or_headroom_is_zero(cli):
    # -0.0 is 0, which both take; the JSON report echoed "reserve_gb": -0.0
    r = cli("recommend", "--reserve-gb", "-0.0", "--headroom", "-0.0", "-f", "json")
    assert r.code == 0, r.stderr
    workload = _strict_json(r.stdout)["workload"]
    assert (workload["reserve_gb"], workload["headroom"]) == (0.0, 0.0)
    assert "-0.0" not in r.stdout
