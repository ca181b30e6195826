"""`quantadvise roofline` end to end through the real entry point: table, JSON, CSV, chart, plot,
profiles, errors and exit codes."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
POINT_KEYS = {"scheme", "batch", "ctx", "step_time_s", "tokens_per_s", "bound", "bytes", "flops"}


def test_default_run_shows_three_schemes_and_crossovers(cli):
    r = cli("roofline", "--no-chart")
    assert r.code == 0, r.stderr
    # default schemes on an fp8-capable GPU: bf16, w4a16 and w8a8-fp8 (the fp8-dynamic preset)
    for s in ("bf16", "w4a16", "fp8-dynamic"):
        assert s in r.stdout
    assert "a model, not a measurement" in r.stdout
    assert "crossovers at ctx 2,048" in r.stdout


def test_default_schemes_follow_the_gpu(cli):
    r = cli("roofline", "--gpu", "a100-80gb", "--batch", "1", "-f", "json")
    assert r.code == 0, r.stderr
    assert [s["scheme"] for s in r.json()["schemes"]] == ["bf16", "w4a16", "w8a8-int8"]  # no fp8 on Ampere


def test_json_schema(cli):
    r = cli("roofline", "--scheme", "bf16,w4a16,w8a8-fp8", "--batch", "1,8,64,512", "--ctx", "0,2048",
            "--ideal", "-f", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert doc["schema_version"] == 1
    assert len(doc["points"]) == 3 * 4 * 2
    for p in doc["points"]:
        assert POINT_KEYS <= set(p)
        assert set(p["bytes"]) == {"weights", "kv", "activations"}
        assert p["bound"] in ("memory", "compute", "communication")
        assert p["tokens_per_s"] == pytest.approx(p["batch"] / p["step_time_s"])
    assert set(doc["ridge_batch"]) == {"bf16", "w4a16", "fp8-dynamic"}
    assert round(doc["ridge_batch"]["bf16"]) == 295  # 989.4e12 / 3.35e12
    (c,) = [c for c in doc["crossovers"] if c["ctx"] == 0]
    assert (c["a"], c["b"], round(c["batch"])) == ("w4a16", "fp8-dynamic", 148)


def test_json_fields_are_documented():
    # docs/roofline.md documents every field the JSON carries (checked against the code).
    import quantadvise as api

    doc_text = (REPO / "docs" / "roofline.md").read_text()
    doc = api.roofline(batches="1..512", prompt=128, curve_points=8).model_dump(mode="json")
    keys = set(doc) | set(doc["points"][0]) | set(doc["schemes"][0]) | set(doc["crossovers"][0])
    keys |= set(doc["points"][0]["time"]) | set(doc["gpu"]) | set(doc["profile"]) | set(doc["curves"][0])
    keys |= set(doc["points"][0]["bytes"]) | set(doc["model"])
    missing = sorted(k for k in keys if f"`{k}`" not in doc_text and f"`{k}[]`" not in doc_text)
    assert not missing, f"undocumented JSON fields: {missing}"


def test_csv_one_row_per_point(cli):
    r = cli("roofline", "--batch", "1..16", "--ctx", "1k,4k", "-f", "csv")
    assert r.code == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == 3 * 5 * 2  # 3 schemes x batches 1,2,4,8,16 x 2 contexts
    assert {row["ctx"] for row in rows} == {"1024", "4096"}
    row = rows[0]
    assert float(row["tokens_per_s"]) == pytest.approx(int(row["batch"]) / float(row["step_time_s"]))


def test_chart_when_the_terminal_is_wide(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    r = cli("roofline", "--batch", "1..512")
    assert r.code == 0, r.stderr
    assert "tokens/s vs batch at ctx 2,048" in r.stdout
    assert "a = bf16" in r.stdout and "^" in r.stdout
    chart = r.stdout[r.stdout.index("tokens/s vs batch"):]
    assert max(len(line) for line in chart.splitlines()) <= 100
    r2 = cli("roofline", "--batch", "1..512", "--no-chart")
    assert "tokens/s vs batch" not in r2.stdout
    monkeypatch.setenv("COLUMNS", "40")
    assert "tokens/s vs batch" not in cli("roofline", "--batch", "1..512").stdout


def test_prompt_adds_ttft(cli):
    r = cli("roofline", "--batch", "1", "--prompt", "2048", "--scheme", "bf16", "-f", "json")
    (p,) = r.json()["points"]
    # bf16 prefill of 2048 tokens is compute-bound: at least the 2 x 2048 x 6.979e9 decoder FLOP at the
    # H100's spec-sheet 989.4e12 FLOP/s (the measured cuBLAS curve reaches a fraction of it)
    assert p["ttft_s"] >= 2 * 2048 * 6.979e9 / 989.4e12
    assert "TTFT@2,048" in cli("roofline", "--batch", "1", "--prompt", "2048", "--no-chart").stdout


def test_gpus_split_the_weights(cli):
    one = cli("roofline", "--scheme", "bf16", "--batch", "1", "-f", "json").json()
    two = cli("roofline", "--scheme", "bf16", "--batch", "1", "--gpus", "2", "-f", "json").json()
    assert two["schemes"][0]["weights_bytes_per_gpu"] == pytest.approx(one["schemes"][0]["weights_bytes_per_gpu"] / 2,
                                                                       abs=1)
    assert two["gpu"]["aggregate_bandwidth_bytes_per_s"] == 2 * 3.35e12
    assert any("tensor parallel over 2 GPUs is a model" in n for n in two["notes"])


def test_profile_file_is_layered_over_the_default(cli, tmp_path):
    # the A10G has no measured kernel profile: every operator is the roofline with the profile's efficiencies
    prof = tmp_path / "slow.yaml"
    prof.write_text("schema_version: 1\nid: slow\nsource: test\nas_of: 2026-11-29\n"
                    "gpus:\n  - gpu: a10g\n    memory_efficiency: 0.4\n"
                    "    call_floor_s: {bf16: 0.0, quantized: 0.0, attention: 0.0, moe: 0.0}\n")
    no_floor = tmp_path / "nofloor.yaml"
    no_floor.write_text("schema_version: 1\nid: nofloor\nsource: test\nas_of: 2026-11-29\n"
                        "gpus:\n  - gpu: a10g\n    call_floor_s: {bf16: 0.0, quantized: 0.0, attention: 0.0, moe: 0.0}\n")
    args = ("roofline", "--gpu", "a10g", "--scheme", "bf16", "--batch", "1", "--ctx", "0", "-f", "json")
    base = cli(*args, "--profile", str(no_floor)).json()
    slow = cli(*args, "--profile", str(prof))
    assert slow.code == 0, slow.stderr
    # bf16 at batch 1 is memory-bound throughout: half the bandwidth efficiency (0.4 vs 0.8), twice the time
    assert slow.json()["points"][0]["step_time_s"] == pytest.approx(2 * base["points"][0]["step_time_s"], rel=1e-9)
    assert slow.json()["profile"]["id"] == "default+slow"
    # the default profile's launch floors (data/perf_profile.yaml): 2.14 us a 16-bit GEMM call, Llama-3-8B running
    # 32 layers x 4 calls (q/k/v fused, o, gate/up fused, down) + the lm_head = 129 calls a step; and 11.9 us a
    # decode-attention layer (32 of them), over an attention of no KV at ctx 0
    floored = cli(*args).json()["points"][0]["step_time_s"]
    assert floored - base["points"][0]["step_time_s"] == pytest.approx(129 * 2.14e-6 + 32 * 11.9e-6, rel=1e-9)
    # on a GPU with a measured kernel profile, the linear layers follow the kernel's curve; a user
    # profile's efficiencies price what no curve covers
    h = cli("roofline", "--scheme", "bf16", "--batch", "1", "--ctx", "0", "--profile", str(prof), "-f", "json").json()
    assert h["profile"]["id"] == "default+h100-sxm-measured+slow" and h["schemes"][0]["curve"] == "vllm/cublas-bf16"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--gpu", "h100x"), "unknown GPU 'h100x'"),
        (("--batch", "0"), "--batch must be an integer >= 1"),
        (("--ctx", "-5"), "--ctx must be an integer >= 0"),
        (("--ctx=-5",), "--ctx must be an integer >= 0"),
        (("--scheme", "w4a8-fp8", "--gpu", "a100-80gb"), "cannot run on NVIDIA A100"),
        (("--scheme", "nope"), "unknown scheme 'nope'"),
        (("--gpus", "3"), "do not split over 3 GPUs"),
        (("--ideal", "--profile", "p.yaml"), "not both"),
        (("--kv-dtype", "kv-nvfp4"), "needs fp4 hardware"),
        (("--plot", "out.jpg"), "must end in .png or .svg"),
        (("--format", "xml"), "--format"),
    ],
)
def test_bad_input_is_one_line_exit_2(cli, args, needle):
    r = cli("roofline", *args)
    assert r.code == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and needle in lines[0], r.stderr


def test_bad_profile_is_one_line_exit_2(cli, tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("id: bad\nsource: s\nas_of: 2026-11-29\ndefaults:\n  memory_eficiency: 0.8\n")
    r = cli("roofline", "--profile", str(p))
    assert r.code == 2 and "memory_eficiency" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    p.write_text("gpus:\n  - gpu: h100z\n")
    r = cli("roofline", "--profile", str(p))
    assert r.code == 2 and "unknown GPU 'h100z'" in r.stderr


def test_emulated_scheme_warns_on_stderr_and_keeps_stdout_clean(cli):
    r = cli("roofline", "--scheme", "nvfp4,fp8-dynamic", "--gpu", "h100", "--batch", "1", "-f", "json")
    assert r.code == 0
    # the warning wraps at the terminal width: read it joined
    assert re.search(r"^warning: nvfp4: .*weight-only", " ".join(r.stderr.split()))
    doc = r.json()  # stdout is the report only
    assert doc["schemes"][0]["execution"] == "weight-only"


def test_plot_png_and_svg(cli, tmp_path):
    import matplotlib  # noqa: F401 - the [test] extra installs it; a missing one must fail, not skip
    png, svg = tmp_path / "r.png", tmp_path / "r.svg"
    r = cli("roofline", "--batch", "1..1024", "--ctx", "0", "--ideal", "--plot", str(png), "-f", "json")
    assert r.code == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {png}" in r.stderr
    r = cli("roofline", "--batch", "1..1024", "--ctx", "0", "--ideal", "--plot", str(svg), "-f", "json")
    text = svg.read_text()
    # the crossover near 148 and the ridge labels are in the drawing
    assert "B=148" in text and "B=76.1" in text and "B=295" in text


def test_plot_without_matplotlib_is_a_clear_error(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    r = cli("roofline", "--batch", "1..64", "--plot", "x.png")
    assert r.code == 2 and "pip install 'quantadvise[plot]'" in r.stderr


def test_plot_needs_a_batch_range(cli):
    r = cli("roofline", "--batch", "8", "--plot", "x.png")
    assert r.code == 2 and "at least two different batches" in r.stderr


def test_every_output_format_has_a_renderer():
    from quantadvise.cli.common import TableJsonCsv
    from quantadvise.report import RENDERERS

    for fmt in TableJsonCsv:
        assert ("roofline", fmt.value) in RENDERERS


def test_default_list_fits_the_group_to_the_model_and_group_flag(cli):
    # gpt-oss: K = 2880 = 2^6 x 45, so g128 does not divide it and g64 does.
    r = cli("roofline", "-m", "openai/gpt-oss-20b", "--batch", "1", "-f", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert [s["scheme"] for s in doc["schemes"]] == ["bf16", "w4a16-g64", "fp8-dynamic"]
    assert any("group 64" in n for n in doc["notes"])
    # an explicit scheme keeps its group and says which flag fixes it
    bad = cli("roofline", "-m", "openai/gpt-oss-20b", "--scheme", "w4a16", "--batch", "1")
    assert bad.code == 2 and "--group 64" in bad.stderr
    ok = cli("roofline", "-m", "openai/gpt-oss-20b", "--scheme", "w4a16", "--group", "32", "--batch", "1", "-f", "json")
    assert ok.code == 0 and ok.json()["schemes"][0]["scheme"] == "w4a16-g32"


def test_default_list_leaves_out_a_scheme_no_group_fits(cli, tmp_path):
    # intermediate_size 14,344 = 2^3 x 1,793: no power-of-two group of 16 or more divides the down projection's K,
    # so the default list keeps bf16 and fp8-dynamic and says why w4a16 is not there (it was exit 2: "group size
    # 128 does not divide ... K=14344", with no --group given and --help promising the default list fits)
    cfg = json.loads((REPO / "data/models/meta-llama/Llama-3.1-8B.json").read_text())
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({**cfg, "intermediate_size": 14344}))
    r = cli("roofline", "-m", str(tmp_path / "m"), "--batch", "1", "-f", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert [s["scheme"] for s in doc["schemes"]] == ["bf16", "fp8-dynamic"]
    assert any(n.startswith("w4a16 left out: no group of 16 or more divides K = 14,344") for n in doc["notes"])


def test_golden_table_and_chart_at_100_columns(cli, monkeypatch):
    # Human output at a pinned width, spec-sheet profile (regenerate after an intended change with
    # `COLUMNS=100 quantadvise roofline --ideal --ctx 0 --batch 1..1024 > tests/golden/roofline_h100_ideal.txt`).
    monkeypatch.setenv("COLUMNS", "100")
    r = cli("roofline", "--ideal", "--ctx", "0", "--batch", "1..1024")
    assert r.code == 0 and r.stderr == ""
    assert r.stdout == (REPO / "tests" / "golden" / "roofline_h100_ideal.txt").read_text()


def test_the_table_shows_each_band_and_never_calls_a_tie_fastest(cli, monkeypatch):
    # Issue 25 in the roofline table: tok/s carries its band; "*" only where the fastest is faster than every
    # other scheme beyond their combined uncertainty, "~" on schemes whose intervals overlap the fastest's.
    monkeypatch.setenv("COLUMNS", "140")
    doc = cli("roofline", "--batch", "64,512", "-s", "bf16,fp8-dynamic", "-f", "json").json()
    pts = {(p["batch"], p["scheme"]): p for p in doc["points"]}

    def interval(p):  # a rate at half-width u: [x / (1 + u), x / (1 - u)]
        x, u = p["tokens_per_s"], p["uncertainty"]["relative"]
        return x / (1 + u), x / (1 - u)

    lo64, _ = interval(pts[(64, "fp8-dynamic")])
    _, hi64 = interval(pts[(64, "bf16")])
    assert lo64 > hi64  # at 64 sequences fp8 is faster beyond both bands
    lo512, _ = interval(pts[(512, "fp8-dynamic")])
    _, hi512 = interval(pts[(512, "bf16")])
    assert lo512 <= hi512  # at 512 their intervals overlap: a tie
    rows = [line for line in cli("roofline", "--batch", "64,512", "-s", "bf16,fp8-dynamic").stdout.splitlines()
            if " ms " in line and "%" in line]
    assert len(rows) == 4 and all("±" in r for r in rows)
    assert "fp8-dynamic *" in rows[1] and "*" not in rows[0]
    assert "bf16 ~" in rows[2] and "fp8-dynamic ~" in rows[3]


def test_a_pair_that_keeps_trading_places_is_one_tie_line(cli):
    # bf16 and fp8-dynamic on Llama-3-8B / H100 at ctx 2,048 cross back and forth between 256 and ~855 sequences
    # (their curves touch within their bands): one line naming the range, not six "crossovers"
    out = " ".join(cli("roofline", "--batch", "1,64", "-s", "bf16,fp8-dynamic").stdout.split())
    assert "bf16 and fp8-dynamic trade places" in out and "cannot order them over that range" in out
    assert "fp8-dynamic -> bf16 at" not in out
