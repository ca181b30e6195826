"""``validate --bench``, ``validate --e2e``, ``calibrate --from-bench`` and ``recommend --bench-plan`` end to
end through the real entry point (docs/calibration.md §8-9).

The round trip writes ``vllm bench serve`` result files from runs priced with known serving terms (the
"site" below: 45 us per layer, 30 us per sequence, prefill 25% over its kernels — chosen, not measured),
fits a deployment profile on files A and checks it reproduces A within 5% and predicts files B, which it
never saw, within 5%."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest
import yaml

from tests.conftest import FIXTURES, REPO

BENCH = FIXTURES / "bench"
SERVE = BENCH / "vllm_bench_serve_0.33.0.json"


def test_validate_bench_reads_a_file_and_shows_the_workload(cli):
    r = cli("validate", "--bench", SERVE, "--max-error", "1000")
    assert r.code == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "c4 1024/128" in text and "h100-sxm" in text and "prompt from --metadata random_input_len" in text
    j = cli("validate", "--bench", SERVE, "--max-error", "1000", "-f", "json").json()
    (p,) = j["points"]
    assert p["workload"]["concurrency"] == 4 and p["measured"]["output_tok_s"] == pytest.approx(584.6643189327468)
    assert p["error"]["output_tok_s"] == pytest.approx(p["predicted"]["output_tok_s"] / 584.6643189327468 - 1)
    for k in ("ttft_s", "tpot_s", "e2e_s"):
        assert p["predicted"][k] > 0 and p["error"][k] is not None
    assert j["passed"] and j["schema_version"] == 1


def test_max_error_decides_the_exit_code(cli):
    err = abs(cli("validate", "--bench", SERVE, "--max-error", "1000", "-f", "json").json()["points"][0]["error"]
              ["output_tok_s"]) * 100
    assert cli("validate", "--bench", SERVE, "--max-error", f"{err + 0.5:.2f}").code == 0
    strict = cli("validate", "--bench", SERVE, "--max-error", f"{max(err - 0.5, 0.1):.2f}")
    assert strict.code == 1 and "exit 1" in " ".join(strict.stdout.split())


@pytest.mark.parametrize("name", ["sglang_bench_serving_0.5.23.jsonl", "genai_perf_profile_export_genai_perf_0.0.16.json",
                                  "guidellm_benchmarks_0.8.1_reduced.json", "vllm_bench_latency_0.33.0.json",
                                  "vllm_bench_throughput_0.33.0.json"])
def test_every_format_is_read(cli, name):
    r = cli("validate", "--bench", BENCH / name, "--gpu", "h100", "--model", "meta-llama/Llama-3.1-8B",
            "--concurrency", "8", "--prompt", "1024", "--output", "128", "--max-error", "1000", "-f", "json")
    assert r.code == 0, r.stderr
    assert all(p["measured"]["output_tok_s"] > 0 and p["predicted"]["output_tok_s"] > 0 for p in r.json()["points"])


def test_partial_malformed_and_incomplete_files_are_one_error_line(cli, tmp_path):
    cut = tmp_path / "cut.json"
    cut.write_text(SERVE.read_text()[:300])
    for bad, says in ((cut, "not JSON"), (BENCH / "README.md", "not JSON")):
        r = cli("validate", "--bench", bad)
        assert r.code == 2 and r.stdout == ""
        assert r.stderr.startswith("Error:") and says in r.stderr and r.stderr.count("Error:") == 1
    r = cli("validate", "--bench", BENCH / "guidellm_benchmarks_0.8.1_reduced.json")  # no model, no GPU in it
    assert r.code == 2 and "give --model, --gpu" in " ".join(r.stderr.split())
    assert cli("validate", "--bench").code == 2
    assert cli("validate", "--e2e", SERVE).code == 2


def test_validate_e2e_passes_the_bar(cli):
    r = cli("validate", "--e2e", "-f", "json")
    assert r.code == 0, r.stdout[-2000:]
    doc = r.json()
    assert doc["passed"] and {b["band"] for b in doc["bands"] if b["set"] == "held-out"} >= {"1-4", "8-32", "64-256"}
    t = cli("validate", "--e2e")
    assert "PASS" in t.stdout and "aiconfigurator" in t.stdout


# -------------------------------------------------------------------------------------------------------
# calibrate --from-bench: the round trip
# -------------------------------------------------------------------------------------------------------

SITE = dict(layer_s=45e-6, seq_s=30e-6, prefill_scale=0.25)


def _write_runs(folder: Path, runs: list[tuple[int, int, int]], prefix: str) -> list[Path]:
    """vllm bench serve result files (the keys of vllm/benchmarks/serve.py:2306-2335, 1318-1341) for runs
    priced with the SITE terms on an H100, Llama-3.1-8B fp8-dynamic, vLLM 0.33.0."""
    from quantadvise.api.e2e import setup
    from quantadvise.perf.loop import LoopTerms
    from quantadvise.perf.serving import Lengths, serve_loop

    st = setup({}, config="meta-llama/Llama-3.1-8B", scheme="fp8-dynamic", gpu="h100-sxm", tp=1, engine="vllm",
               version="0.33.0", kv_dtype=None)
    site = LoopTerms(id="site", engine="vllm", source="test", as_of=date(2026, 12, 6), **SITE)
    out = []
    for c, i, o in runs:
        p = serve_loop(st.sm, Lengths(i, o, i + o // 2, "continuous"), c, replace(st.loop, terms=site))
        n = 10 * c
        doc = {"date": "20261206-120000", "endpoint_type": "openai", "backend": "openai",
               "model_id": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct",
               "num_prompts": n, "gpu": "h100-sxm", "tp": "1", "scheme": "fp8-dynamic", "engine_version": "0.33.0",
               "random_input_len": str(i), "random_output_len": str(o), "request_rate": "inf", "burstiness": 1.0,
               "max_concurrency": c, "duration": n * o / p.tokens_per_s, "completed": n, "failed": 0,
               "total_input_tokens": n * i, "total_output_tokens": n * o, "output_throughput": p.tokens_per_s,
               "mean_ttft_ms": (p.ttft_s or 0) * 1e3, "mean_tpot_ms": p.itl_s * 1e3, "mean_itl_ms": p.itl_s * 1e3}
        path = folder / f"{prefix}-c{c}-{i}x{o}.json"
        path.write_text(json.dumps(doc))
        out.append(path)
    return out


@pytest.fixture
def site(tmp_path):
    a = _write_runs(tmp_path, [(1, 1024, 256), (8, 1024, 256), (32, 1024, 256), (128, 1024, 256), (16, 4096, 512)], "a")
    b = _write_runs(tmp_path, [(4, 2048, 512), (64, 2048, 512), (24, 512, 1024)], "b")
    return a, b, tmp_path / "site.yaml"


def test_from_bench_reproduces_files_a_and_predicts_files_b(cli, site):
    a, b, out = site
    r = cli("calibrate", "--from-bench", *a, *(x for f in b for x in ("--holdout", f)), "--out", out, "-f", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    fitted = [f for f in doc["files"] if f["role"] == "fitted"]
    held = [f for f in doc["files"] if f["role"] == "held-out"]
    assert len(fitted) == 5 and len(held) == 3
    assert doc["median_abs_error"] <= 0.05  # A reproduced within 5% median
    assert doc["heldout_median_abs_error"] <= 0.05  # B, never fitted, predicted within 5% median
    prof = yaml.safe_load(out.read_text())
    assert prof["kind"] == "deployment" and prof["serving"][0]["gpu"] == "h100-sxm"
    assert prof["serving"][0]["version"] == "0.33.0" and prof["serving"][0]["points"] == 5
    # validated on files B with the profile: every run within 5%
    v = cli("validate", "--bench", *b, "--profile", out, "--max-error", "5", "-f", "json")
    assert v.code == 0, v.stdout[-2000:]
    assert v.json()["profile"] == str(out)


def test_leave_one_file_out_without_holdout(cli, site):
    a, _, out = site
    doc = cli("calibrate", "--from-bench", *a, "--out", out, "-f", "json").json()
    assert doc["heldout_median_abs_error"] is not None and doc["heldout_median_abs_error"] <= 0.10
    assert "each file left out in turn" in doc["notes"][0]


def test_commands_take_the_profile_and_say_they_used_it(cli, site, monkeypatch):
    a, _, out = site
    assert cli("calibrate", "--from-bench", *a, "--out", out).code == 0
    pid = yaml.safe_load(out.read_text())["serving"][0]["id"]
    rec = cli("recommend", "-m", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--batch", "32", "--profile", out,
              "-f", "json").json()
    assert pid in rec["performance"]["serving_loop"]["terms"]
    assert any(a.startswith("serving loop:") and str(out) in a for a in rec["assumptions"])
    table = cli("recommend", "-m", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--batch", "32", "--profile", out)
    assert pid in " ".join(table.stdout.split())
    roof = cli("roofline", "-m", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "-s", "fp8-dynamic", "--pareto",
               "--batch", "8,32", "--profile", out, "-f", "json").json()
    assert pid in roof["pareto"]["serving_loop"]
    size = cli("size", "meta-llama/Llama-3.1-8B", "--profile", out, "-f", "json").json()
    assert any("deployment profile" in n and str(out) in n for n in size["notes"])
    (out.parent / "run.sh").write_text("vllm serve meta-llama/Llama-3.1-8B --max-model-len 4096 --max-num-seqs 64\n")
    (out.parent / "quantadvise.yaml").write_text(f"gpu: h100\nprofile: {out.name}\n")
    monkeypatch.chdir(out.parent)
    chk = cli("check", "--format", "json")
    assert chk.code in (0, 1), chk.stderr
    assert pid in chk.json()["targets"][0]["performance"]["serving_loop"]


# -------------------------------------------------------------------------------------------------------
# recommend --bench-plan
# -------------------------------------------------------------------------------------------------------


def _options(engine: str, version: str) -> set[str]:
    doc = yaml.safe_load((REPO / "data" / "flags" / "bench" / f"{engine}-{version}.yaml").read_text())
    return {n for o in doc["options"] for n in o["names"]}


def test_bench_plan_commands_use_only_options_the_client_registers(cli):
    doc = cli("recommend", "--batch", "64", "--ctx", "2048", "--bench-plan", "-f", "json").json()
    plan = doc["bench_plan"]
    assert [r["role"] for r in plan["runs"]] == ["recommended", "rival"]
    assert plan["runs"][0]["scheme"] == doc["scheme"]["id"]
    assert plan["runs"][1]["scheme"] == doc["performance"]["runner_up"]
    versions = {"vllm": doc["workload"].get("engine_version") or "0.33.0", "sglang": "0.5.23"}
    seen = 0
    for run in plan["runs"]:
        assert run["num_prompts"] >= max(200, 10 * run["concurrency"])  # engines.bench.stable_prompts
        for engine, cmd in run["bench"].items():
            if cmd is None:
                continue
            known = _options(engine, versions[engine])
            used = set(re.findall(r"(?<!\S)(--[a-z][a-z0-9-]*)", cmd))
            assert used <= known, used - known
            assert f"--max-concurrency {run['concurrency']}" in cmd and f"--random-input-len {run['prompt']}" in cmd
            seen += 1
    assert seen >= 3  # vLLM for both, SGLang for the winner at least
    text = cli("recommend", "--batch", "64", "--ctx", "2048", "--bench-plan")
    assert "vllm bench serve" in text.stdout and "quantadvise validate --bench" in text.stdout
    # each run's prediction carries its validated band, as in JSON (issue 25: every figure says how sure it is):
    # a benchmark measures one deployment, so the band printed is the whole one, the serving loop's included
    for run in plan["runs"]:
        u = run["uncertainty"]
        whole = (u["absolute"] or u)["relative"]
        assert u["absolute"] is not None and whole > u["relative"]  # vLLM's loop terms carry a held-out band
        band = f"{run['predicted_tokens_per_s']:,.0f} ±{whole:.0%} output tokens/s"
        assert band in " ".join(text.stdout.split()), band


def test_a_bench_plan_result_reads_back_with_its_workload(cli, tmp_path):
    doc = cli("recommend", "--batch", "64", "--ctx", "2048", "--bench-plan", "-f", "json").json()
    run = doc["bench_plan"]["runs"][0]
    cmd = run["bench"]["vllm"]
    meta = dict(kv.split("=", 1) for kv in cmd.split("--metadata ", 1)[1].split())
    name = re.search(r"--result-filename (\S+)", cmd).group(1)
    n, i, o = run["num_prompts"], run["prompt"], run["output"]
    # what vllm bench serve --save-result writes (keys: vllm/benchmarks/serve.py:2306-2335, 1318-1341), each
    # --metadata pair as a top-level key; the measured figures are made up
    result = {"date": "20261206-120000", "endpoint_type": "openai", "backend": "openai", "model_id": "./x",
              "tokenizer_id": "./x", "num_prompts": n, **meta, "request_rate": "inf", "max_concurrency":
              run["concurrency"], "completed": n, "total_input_tokens": n * i, "total_output_tokens": n * o,
              "output_throughput": 5000.0, "duration": n * o / 5000.0}
    (tmp_path / name).write_text(json.dumps(result))
    v = cli("validate", "--bench", tmp_path / name, "--max-error", "1000", "-f", "json")
    assert v.code == 0, v.stderr
    w = v.json()["points"][0]["workload"]
    assert (w["scheme"], w["gpu"], w["tp"], w["concurrency"], w["prompt"], w["output"]) == (
        run["scheme"], "h100-sxm", 1, run["concurrency"], i, o)
    assert w["model"] == "meta-llama/Meta-Llama-3-8B" and w["kv_dtype"] == doc["kv"]["dtype"]


def test_a_file_named_twice_is_read_once(cli, tmp_path):
    # Before: `validate --bench A A` priced A's runs twice (two points, each counted in the median); a link to A
    # is the same file too.
    (tmp_path / "link.json").symlink_to(SERVE)
    once = cli("validate", "--bench", SERVE, "--max-error", "1000", "-f", "json").json()
    twice = cli("validate", "--bench", SERVE, SERVE, tmp_path / "link.json", "--max-error", "1000", "-f", "json").json()
    assert len(twice["points"]) == len(once["points"]) and twice["files"] == [str(SERVE)]
    assert len(twice["notes"]) == 2 and "read once" in twice["notes"][0] and f"(as {SERVE})" in twice["notes"][1]
    text = cli("validate", "--bench", SERVE, SERVE, "--max-error", "1000")
    assert "named before; its runs are read once" in " ".join(text.stdout.split())


def test_a_held_out_file_that_is_also_fitted_is_one_error_line(cli, site):
    a, _, out = site
    r = cli("calibrate", "--from-bench", *a, "--holdout", a[0], "--out", out)
    assert r.code == 2 and r.stderr.startswith("Error: --holdout") and r.stderr.count("\n") == 1, r.stderr
    assert not out.exists()


def test_each_run_says_whether_it_falls_inside_the_predicted_band(cli):
    # The band of a prediction's output tokens/s is its kernels' with the serving loop's added in quadrature
    # (vLLM's terms: 19.8%, data/serving_terms.yaml), so it is at least the loop's. The interval of a rate at
    # half-width u is [x / (1 + u), x / (1 - u)]: with error e = predicted / measured - 1, measured lies inside
    # exactly when -u <= e <= u.
    doc = cli("validate", "--bench", SERVE, "--max-error", "1000", "-f", "json").json()
    for p in doc["points"]:
        u, e = p["band"], p["error"]["output_tok_s"]
        assert 0.198 <= u <= 0.9
        assert p["inside"] == (-u <= e <= u)
    out = " ".join(cli("validate", "--bench", SERVE, "--max-error", "1000").stdout.split())
    n_in = sum(1 for p in doc["points"] if p["inside"])
    assert f"band: {n_in} of {len(doc['points'])} runs' output tokens/s inside the predicted band" in out
