"""Reading benchmark result files (calibration/bench.py). The expected values are read off the example
files in tests/fixtures/bench/ (their README cites each key's source line); partial and malformed files
are one BenchFileError naming the file and what is wrong."""

from __future__ import annotations

import json
import math

import pytest

from quantadvise.calibration.bench import BenchFileError, parse_bench, with_workload
from tests.conftest import FIXTURES

BENCH = FIXTURES / "bench"


def _one(name: str):
    return parse_bench(name, (BENCH / name).read_text())


def test_vllm_bench_serve_recovers_the_workload_from_metadata():
    (r,) = _one("vllm_bench_serve_0.33.0.json")
    assert r.format == "vllm-serve" and r.engine == "vllm" and r.engine_version == "0.33.0"  # --metadata vllm=0.33.0
    assert (r.model, r.gpu, r.tp, r.concurrency) == ("meta-llama/Llama-3.1-8B-Instruct", "h100-sxm", 1, 4)
    assert (r.prompt, r.output) == (1024, 128)  # --metadata random_input_len / random_output_len
    assert r.recovered["prompt"] == "--metadata random_input_len"
    assert r.output_tok_s == pytest.approx(584.6643189327468)  # output_throughput
    assert r.ttft_s == pytest.approx(0.0318) and r.tpot_s == pytest.approx(0.00663)  # mean_ttft_ms, mean_tpot_ms
    doc = json.loads((BENCH / "vllm_bench_serve_0.33.0.json").read_text())
    assert r.e2e_s == pytest.approx(sum(doc["latencies"]) / len(doc["latencies"]))  # no mean_e2el_ms: the mean


def test_sglang_jsonl_holds_one_run_per_line():
    runs = _one("sglang_bench_serving_0.5.23.jsonl")
    assert [r.concurrency for r in runs] == [4, 16]
    r = runs[0]
    assert r.engine == "sglang" and r.engine_version == "0.5.23" and r.tp == 1  # server_info.version, tp_size
    assert (r.prompt, r.output) == (40960 / 40, 5120 / 40)  # totals / completed
    assert r.e2e_s == pytest.approx(0.8408)  # mean_e2e_latency_ms


def test_vllm_latency_and_throughput_need_the_workload_given():
    (lat,) = _one("vllm_bench_latency_0.33.0.json")
    assert lat.mode == "sync" and math.isnan(lat.output_tok_s) and set(lat.missing()) >= {"concurrency", "prompt"}
    lat = with_workload(lat, {"concurrency": 8, "prompt": 1024, "output": 128, "gpu": "h100"})
    # a static batch of 8 x 128 tokens in avg_latency 0.91364 s
    assert lat.output_tok_s == pytest.approx(8 * 128 / 0.9136399297656642)
    (thr,) = _one("vllm_bench_throughput_0.33.0.json")
    thr = with_workload(thr, {"prompt": 1024, "output": 128})
    # tokens_per_second counts input + output: 1,000 x 1,152 / 21.7 s, of which 128 / 1,152 are output
    assert thr.output_tok_s == pytest.approx(1000 * 1152 / 21.7 * 128 / 1152)
    assert thr.concurrency == 1000 and thr.recovered["prompt"] == "--prompt"


def test_genai_perf_and_guidellm():
    (g,) = _one("genai_perf_profile_export_genai_perf_0.0.16.json")
    assert (g.format, g.concurrency, g.prompt, g.output) == ("genai-perf", 4, 1024, 128)
    assert g.ttft_s == pytest.approx(0.0315) and g.e2e_s == pytest.approx(0.871)  # ms in the file
    (b,) = _one("guidellm_benchmarks_0.8.1_reduced.json")
    assert (b.format, b.concurrency, b.output_tok_s) == ("guidellm", 16, 1950.0)  # strategy streams 16
    assert b.model is None and "model" in b.missing()


def test_the_file_wins_over_a_flag_and_a_flag_fills_a_gap():
    (r,) = _one("vllm_bench_serve_0.33.0.json")
    r2 = with_workload(r, {"gpu": "h200", "scheme": "fp8-dynamic"})
    assert r2.gpu == "h100-sxm" and r2.scheme == "fp8-dynamic" and r2.recovered["scheme"] == "--scheme"


@pytest.mark.parametrize(("text", "says"), [
    ("", "the file is empty"),
    ('{"output_throughput": 1.0, "model_id": "m", "completed": 4', "not JSON"),
    ('{"hello": 1}', "not a benchmark result"),
    ('{"model_id": "m", "output_throughput": 5.0, "endpoint_type": "openai", "completed": 4}', "no 'total_input_tokens'"),
    ('{"model_id": "m", "output_throughput": 5.0, "endpoint_type": "openai", "completed": 0}', "'completed' is 0"),
    ('{"model_id": "m", "output_throughput": "fast", "endpoint_type": "openai", "completed": 4, '
     '"total_input_tokens": 4, "total_output_tokens": 4}', "not a number"),
    ('{"avg_latency": 1.0, "latencies": [1.0]}\n{"tokens_per_second": 2', "line 2"),
])
def test_partial_and_malformed_files_are_one_error(text, says):
    with pytest.raises(BenchFileError) as exc:
        parse_bench("run.json", text)
    assert says in str(exc.value) and "run.json" in str(exc.value) and "\n" not in str(exc.value)


def test_a_sglang_line_cut_short():
    lines = (BENCH / "sglang_bench_serving_0.5.23.jsonl").read_text().splitlines()
    with pytest.raises(BenchFileError, match="line 2"):
        parse_bench("s.jsonl", lines[0] + "\n" + lines[1][: len(lines[1]) // 2])


def test_an_open_loop_run_recovers_its_concurrency():
    # a vllm bench serve run at --request-rate 4 without --max-concurrency: 4 requests/s x a mean E2E of
    # 2.5 s keep 10 requests in flight on average (Little's law)
    doc = {"endpoint_type": "openai", "model_id": "m", "request_rate": 4.0, "max_concurrency": None, "completed": 100,
           "total_input_tokens": 100_000, "total_output_tokens": 20_000, "output_throughput": 800.0,
           "mean_e2el_ms": 2500.0}
    (r,) = parse_bench("rate.json", json.dumps(doc))
    assert r.concurrency == 10 and "Little's law" in r.recovered["concurrency"]
    # SGLang measures the mean in flight itself (its `concurrency` key)
    line = json.loads((BENCH / "sglang_bench_serving_0.5.23.jsonl").read_text().splitlines()[0])
    line.update(max_concurrency=None, request_rate=8.0, concurrency=6.6)
    (s,) = parse_bench("s.jsonl", json.dumps(line))
    assert s.concurrency == 7 and s.request_rate == 8.0


@pytest.mark.parametrize("strategy", ["null", None, 16, ["concurrent"], {"type_": "concurrent", "streams": "x"}])
def test_a_guidellm_strategy_that_is_not_an_object_recovers_no_concurrency(strategy):
    # GuideLLM 0.8.1 writes config.strategy as an object ({"type_": "concurrent", "streams": 16}); anything else
    # tells nothing about the concurrency (it was an AttributeError on a string)
    doc = json.loads((BENCH / "guidellm_benchmarks_0.8.1_reduced.json").read_text())
    doc["benchmarks"][0]["config"]["strategy"] = strategy
    (b,) = parse_bench("g.json", json.dumps(doc))
    assert b.concurrency is None and b.output_tok_s == 1950.0  # the rate is still read from metrics


def _sglang_line(**changes) -> str:
    d = json.loads((BENCH / "sglang_bench_serving_0.5.23.jsonl").read_text().splitlines()[0])
    d.update(changes)
    return json.dumps(d)


@pytest.mark.parametrize(("changes", "says"), [
    ({"output_throughput": 0}, "output tokens/s must be"),  # nothing measured: the fit divided by it
    ({"output_throughput": 1e-300}, "output tokens/s must be"),  # its cycle overflowed a float (OverflowError)
    ({"total_output_tokens": 1e-320}, "'output'"),  # a mean output under one token (ZeroDivisionError in the fit)
])
def test_a_run_that_measured_nothing_is_one_error(changes, says):
    with pytest.raises(BenchFileError) as exc:
        parse_bench("s.jsonl", _sglang_line(**changes))
    assert says in str(exc.value) and "s.jsonl" in str(exc.value) and "\n" not in str(exc.value)


def test_a_range_ratio_no_float_holds_is_no_ratio():
    # SGLang's --random-range-ratio is a fraction in [0, 1]; a 400-digit one raised OverflowError in the note's
    # f"{ratio:g}" (bench.py _sglang)
    (r,) = parse_bench("s.jsonl", _sglang_line(dataset_name="random", random_range_ratio=-(10**400)))
    assert not any("random-range-ratio" in n for n in r.notes)
    (q,) = parse_bench("s.jsonl", _sglang_line(dataset_name="random", random_range_ratio=0.5))
    assert any("--random-range-ratio 0.5" in n for n in q.notes)
