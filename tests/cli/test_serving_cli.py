"""Serving targets (issue 15) end to end: latency budgets, load, price, speculative decoding and the
Pareto frontier through `recommend` and `roofline --pareto`, their JSON, their errors and the plot.
Expected figures are derived by hand in the comments or are relations between two commands' outputs."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

LLAMA70 = ("-m", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--prompt", "1000", "--output", "200")
# a tight per-token budget that one H100 still meets for Llama-3.1-70B: not 20 ms, which no scheme meets there even
# at one sequence (the 4-bit weights stream at Hopper's mixed-input rate: w4a16's step ~24 ms at batch 1, ~35 GB at
# 3.35 TB/s x 1.76, data/kernel_tables/stream_factors.yaml; fp8's 70 GB at ~2.9 TB/s ~ 24-26 ms)
TIGHT = 30
# Llama-3-8B on the H100 spec sheet, synchronous, bf16 weights and KV (tests/unit/test_serving.py has the
# arithmetic: ITL(B) = 4.4806 + 0.3130 B ms)
IDEAL8 = ("-m", "meta-llama/Meta-Llama-3-8B", "--gpu", "h100", "--ideal", "--mode", "sync", "--candidates", "bf16",
          "--kv-dtype", "kv-bf16", "--prompt", "7808", "--output", "384")
RANKED = ("recommended", "runner-up", "ranked-after", "slower")


def _roofline_node(doc):
    return next(n for n in doc["trace"] if n["node"] == "roofline")


def _recommend(cli, *args):
    r = cli("recommend", *args, "-f", "json")
    assert r.code == 0, r.stderr
    return r.json()


def test_itl_tight_vs_80_runs_at_a_different_concurrency_and_says_why(cli):
    tight = _recommend(cli, *LLAMA70, "--itl-ms", str(TIGHT))
    loose = _recommend(cli, *LLAMA70, "--itl-ms", "80")
    for doc, budget in ((tight, TIGHT / 1e3), (loose, 0.080)):
        perf = doc["performance"]
        # the chosen concurrency is performance.concurrency; workload.batch is the search bound
        assert doc["target"]["batch_is_bound"] is True
        assert doc["workload"]["batch"] == doc["target"]["max_concurrency"] == 256
        assert 1 <= perf["concurrency"] < 256
        assert perf["itl_s"] <= budget and perf["limit"] in ("itl", "ttft", "e2e", "memory", "batch")
        # every ranked candidate carries the concurrency it runs at and its figures there
        ranked = [a for a in doc["alternatives"] if a["status"] in RANKED]
        assert len(ranked) >= 2
        for a in ranked:
            assert a["concurrency"] >= 1 and a["itl_s"] <= budget and a["ttft_s"] > 0
            assert a["limit"] in ("itl", "ttft", "e2e", "memory", "batch") and a["usd_per_mtok"] > 0
        # the trace records the same per candidate, and says which limit binds
        node = _roofline_node(doc)
        assert node["numbers"]["concurrency"] == {a["scheme"]: a["concurrency"] for a in ranked}
        assert node["numbers"]["limit"] == {a["scheme"]: a["limit"] for a in ranked}
        assert node["numbers"]["slo"]["itl_s"] == budget
        assert f"ITL <= {budget * 1e3:.0f} ms binds" in node["decision"]
    # a 4x looser budget lets the winner run more sequences at once and deliver more per GPU
    assert (tight["scheme"]["id"], tight["performance"]["concurrency"]) != \
        (loose["scheme"]["id"], loose["performance"]["concurrency"])
    assert loose["performance"]["concurrency"] > tight["performance"]["concurrency"]
    assert loose["performance"]["tokens_per_s_per_gpu"] > tight["performance"]["tokens_per_s_per_gpu"]
    assert loose["performance"]["usd_per_mtok"] < tight["performance"]["usd_per_mtok"]


def test_the_itl_limit_binds_where_the_next_sequence_breaks_it(cli):
    # the concurrency recommend stops at meets the budget and one more sequence breaks it: checked on
    # roofline --pareto's points for the same workload (decode context = 1000 + 200/2 = 1100, kv-fp8)
    doc = _recommend(cli, *LLAMA70, "--itl-ms", str(TIGHT))
    c, sid, kv = doc["performance"]["concurrency"], doc["scheme"]["id"], doc["kv"]["dtype"]
    assert doc["performance"]["limit"] == "itl"
    r = cli("roofline", "-m", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--pareto", "--prompt", "1000",
            "--output", "200", "--ctx", "1100", "--kv-dtype", kv, "--scheme", sid, "--batch", f"{c},{c + 1}",
            "-f", "json")
    assert r.code == 0, r.stderr
    at, past = r.json()["pareto"]["points"]
    assert at["itl_s"] <= TIGHT / 1e3 < past["itl_s"]


def test_recommend_and_roofline_pareto_give_the_same_numbers(cli):
    # the same (scheme, concurrency, prompt, output, KV dtype) priced by both commands
    doc = _recommend(cli, *LLAMA70, "--itl-ms", "80")
    kv = doc["kv"]["dtype"]
    ranked = [a for a in doc["alternatives"] if a["status"] in RANKED][:3]
    for a in ranked:
        r = cli("roofline", "-m", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--pareto", "--prompt", "1000",
                "--output", "200", "--ctx", "1100", "--kv-dtype", kv, "--scheme", a["scheme"],
                "--batch", str(a["concurrency"]), "-f", "json")
        assert r.code == 0, r.stderr
        (p,) = r.json()["pareto"]["points"]
        for key in ("itl_s", "ttft_s", "e2e_s", "tokens_per_s", "tokens_per_s_per_gpu", "prefill_share",
                    "usd_per_mtok"):
            assert p[key] == pytest.approx(a[key], rel=1e-12), (a["scheme"], key)


def test_rate_gives_the_gpu_count(cli):
    # ITL <= 10 ms: one TP1 replica runs 17 sequences at 4.4806 + 17 x 0.3130 = 9.80 ms. Synchronous
    # serving prefills the batch first: 17 x 7,808 = 132,736 prompt tokens through the linears, 2 x
    # (8,030,261,248 - 2 x 525,336,576 embedding and lm_head) = 13.959e9 FLOPs a token -> 1.8529e15 FLOPs at
    # 989.4e12 (H100 SXM bf16 dense, data/hardware.yaml) = 1.873 s, plus causal attention 17 x 32 layers x
    # 7,808 x 7,809 / 2 pairs x 4 x 32 heads x 128 = 2.717e14 FLOPs = 0.275 s: P_17 ~ 2.147 s. E2E = 2.147 +
    # 383 x 9.80 ms = 5.901 s; 17 x 384 / 5.901 = 1,106 tokens/s (not the decode-only 17 / 9.80 ms = 1,734).
    # 10 requests/s x 384 tokens = 3,840 tokens/s -> ceil(3,840 / 1,106) = ceil(3.47) = 4 replicas of 1 GPU
    doc = _recommend(cli, *IDEAL8, "--itl-ms", "10", "--rate", "10", "--gpus", "1")
    opt = doc["load"]["options"][0]
    assert opt["tokens_per_s"] == pytest.approx(1106, rel=0.01)
    assert (opt["tp"], opt["replicas"], opt["gpus"], opt["concurrency"]) == (1, 4, 4, 17)
    # the $ per hour is GPUs x the list price: 4 x $3.99 = $15.96
    assert opt["usd_per_hour"] == pytest.approx(4 * doc["price"]["usd_per_gpu_hour"])
    load = next(n for n in doc["trace"] if n["node"] == "load")
    assert load["numbers"]["gpus"] == {"bf16": 4}
    assert "4 replicas of TP1" in load["decision"]


def test_usd_per_mtok_follows_the_price_and_its_override(cli, tmp_path):
    listed = _recommend(cli, *LLAMA70, "--itl-ms", str(TIGHT))
    price = listed["price"]
    # data/pricing.yaml: Lambda's gpu_8x_h100_sxm5 at $31.92/hour for 8 GPUs -> $3.99 per GPU-hour
    assert price["kind"] == "list price" and price["usd_per_gpu_hour"] == pytest.approx(31.92 / 8)
    perf = listed["performance"]
    # $/Mtok = $/GPU-hour x GPUs / (tokens/s x 3600) x 1e6
    assert perf["usd_per_mtok"] == pytest.approx(3.99 * 1 / (perf["tokens_per_s"] * 3600) * 1e6)
    given = _recommend(cli, *LLAMA70, "--itl-ms", str(TIGHT), "--usd-per-gpu-hour", "2")
    assert given["price"]["kind"] == "given" and given["price"]["usd_per_gpu_hour"] == 2.0
    # same tokens/s, half the price (2 / 3.99) per million tokens
    assert given["performance"]["tokens_per_s"] == perf["tokens_per_s"]
    assert given["performance"]["usd_per_mtok"] == pytest.approx(perf["usd_per_mtok"] * 2 / 3.99)
    # the workload-file key, spelled either way
    for key in ("usd_per_gpu_hour", "usd-per-gpu-hour"):
        f = tmp_path / f"{key}.yaml"
        f.write_text(f"{key}: 2.0\n")
        viafile = _recommend(cli, *LLAMA70, "--itl-ms", str(TIGHT), "-w", str(f))
        assert viafile["price"]["kind"] == "given"
        assert viafile["performance"]["usd_per_mtok"] == pytest.approx(given["performance"]["usd_per_mtok"])


def test_speculative_decoding_in_json(cli):
    # K = 3, A = 0.6 -> 1 + 3 x 0.6 = 2.8 tokens per step per sequence
    doc = _recommend(cli, *IDEAL8, "--batch", "8", "--spec-tokens", "3", "--acceptance", "0.6")
    spec = doc["speculation"]
    assert spec["tokens_per_step"] == pytest.approx(2.8)
    a = spec["per_token_acceptance"]
    assert 1 + a + a**2 + a**3 == pytest.approx(2.8)  # Leviathan et al. eq. (1) with K = 3
    assert "arXiv:2211.17192" in spec["model"]
    assert doc["performance"]["tokens_per_step"] == pytest.approx(2.8)
    # acceptance 0: one token per step, as without speculation, and never faster than without it
    zero = _recommend(cli, *IDEAL8, "--batch", "8", "--spec-tokens", "3", "--acceptance", "0")
    plain = _recommend(cli, *IDEAL8, "--batch", "8")
    assert zero["performance"]["tokens_per_step"] == plain["performance"]["tokens_per_step"] == 1.0
    assert zero["performance"]["itl_s"] >= plain["performance"]["itl_s"]
    assert plain["speculation"] is None


def test_prefill_heavy_workload_is_flagged(cli):
    # 4,000-token prompts, 100-token answers, 16 in flight: prefill is most of the GPU time, and W8A8
    # out-delivers weight-only although 16 sequences are below the weight-only decode ridge
    doc = _recommend(cli, "-m", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--batch", "16", "--prompt", "4000",
                     "--output", "100")
    node = _roofline_node(doc)
    assert node["numbers"]["prefill_heavy"] is True
    perf = doc["performance"]
    assert perf["prefill_share"] >= 0.5
    assert perf["decode_share"] == pytest.approx(1 - perf["prefill_share"])
    # continuous batching: tokens/s = decode tokens/s x (1 - prefill share)
    assert perf["tokens_per_s"] == pytest.approx(perf["decode_tokens_per_s"] * (1 - perf["prefill_share"]))
    assert any(r.startswith("prefill-heavy:") for r in node["reasons"])


def test_without_targets_the_json_has_no_target(cli):
    doc = _recommend(cli, *IDEAL8, "--batch", "17")
    assert doc["target"] is None and doc["load"] is None and doc["speculation"] is None
    assert "itl_ms" not in doc["workload"] and doc["workload"]["batch"] == 17
    assert doc["performance"]["concurrency"] == 17 and doc["performance"]["limit"] == "batch"


def test_roofline_pareto_json_fields(cli):
    r = cli("roofline", "-m", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--pareto", "--prompt", "1000",
            "--output", "200", "--ctx", "1100", "--batch", "1,8,64", "--itl-ms", "30", "-f", "json")
    assert r.code == 0, r.stderr
    pa = r.json()["pareto"]
    assert (pa["prompt"], pa["output"], pa["mode"], pa["itl_budget_s"]) == (1000, 200, "continuous", 0.030)
    keys = {"scheme", "ctx", "batch", "tokens_per_s", "tokens_per_s_per_gpu", "tokens_per_s_per_user", "itl_s",
            "ttft_s", "e2e_s", "prefill_share", "usd_per_mtok", "bound", "fits", "meets_slo", "on_frontier", "best",
            "recommended", "uncertainty"}
    for p in pa["points"]:
        assert set(p) == keys
        assert p["tokens_per_s_per_user"] == pytest.approx(1 / p["itl_s"])
        assert p["meets_slo"] == (p["itl_s"] <= 0.030)
    rec = pa["recommended"]
    assert rec is not None and rec["recommended"] and rec["meets_slo"]
    assert [p for p in pa["points"] if p["recommended"]] == [rec]


@pytest.mark.parametrize(("args", "needle"), [
    (("recommend", "--itl-ms", "0"), "--itl-ms"),
    (("recommend", "--ttft-ms", "-5"), "--ttft-ms"),
    (("recommend", "--spec-tokens", "3"), "--acceptance"),
    (("recommend", "--spec-tokens", "3", "--acceptance", "1.5"), "--acceptance"),
    (("recommend", "--rate", "2", "--users", "10"), "--rate"),
    (("recommend", "--usd-per-gpu-hour", "0"), "--usd-per-gpu-hour"),
    (("recommend", "--plot", "frontier.txt"), ".png or .svg"),
    (("roofline", "--itl-ms", "30"), "--pareto"),
    (("roofline", "--pareto", "--plot", "frontier.jpg"), ".png or .svg"),
])
def test_bad_serving_input_is_one_error_line(cli, args, needle):
    r = cli(*args)
    assert r.code == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("Error:")]
    assert len(lines) == 1 and needle in r.stderr
    assert r.stdout == ""


def _svg(path):
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg")
    return path.read_text()


def test_roofline_pareto_plot_writes_an_svg(cli, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "frontier.svg"
    r = cli("roofline", "-m", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--pareto", "--prompt", "1000",
            "--output", "200", "--ctx", "1100", "--itl-ms", "30", "--plot", str(out), "-f", "json")
    assert r.code == 0, r.stderr
    r.json()  # stdout is still only the report
    text = _svg(out)
    for words in ("w4a16", "recommended:", "ITL"):
        assert words in text


def test_recommend_plot_writes_an_svg(cli, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "rec.svg"
    r = cli("recommend", *LLAMA70, "--itl-ms", str(TIGHT), "--plot", str(out), "-f", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert doc["frontier"] and sum(p["recommended"] for p in doc["frontier"]) == 1
    (star,) = [p for p in doc["frontier"] if p["recommended"]]
    assert (star["scheme"], star["batch"]) == (doc["scheme"]["id"], doc["performance"]["concurrency"])
    text = _svg(out)
    assert f"recommended: {doc['scheme']['id']}" in text


def test_recommend_json_fields_are_documented(cli):
    # docs/recommend.md "Output" names every key the JSON carries at the top level and in
    # performance, alternatives[], target, price, speculation and load
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "recommend.md").read_text()
    doc = _recommend(cli, *IDEAL8, "--itl-ms", "10", "--rate", "10", "--gpus", "1", "--spec-tokens", "1",
                     "--acceptance", "0.5")
    keys = set(doc) | set(doc["performance"]) | set(doc["alternatives"][0]) | set(doc["target"]) | set(doc["price"])
    keys |= set(doc["speculation"]) | set(doc["load"]) | set(doc["load"]["options"][0])
    missing = sorted(k for k in keys if f"`{k}`" not in text and f"`{k}[]`" not in text)
    assert not missing, missing


def test_prefill_heavy_is_flagged_when_the_winner_is_w4a8(cli):
    # 8,000-token prompts, 64-token answers: ~125 prompt tokens per output token, so prefill is most
    # of the GPU time; W4A8 (4-bit weights, fp8 activations) runs its prompt on the fp8 tensor cores — the
    # flag covered only 8-bit W+A and stayed false here. The flag follows the winner's prefill share
    # (docs/recommend.md: >= 50%), whichever candidate wins (issue 25: W4A8's composed kernel ties with the
    # 4-bit ones within the model's uncertainty, and evidence orders them)
    doc = _recommend(cli, "-m", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--batch", "8", "--prompt", "8000",
                     "--output", "64", "--mode", "continuous")
    node = _roofline_node(doc)
    assert doc["performance"]["prefill_share"] >= 0.5
    assert any(a["scheme"] == "w4a8-fp8" and a["prefill_share"] >= 0.5 for a in doc["alternatives"])
    assert node["numbers"]["prefill_heavy"] is True
