"""Published checkpoints (issue 27): the bundled index, `quantadvise checkpoints`, the --hub query and the
maintainer script (huggingface_hub mocked at its API boundary: no network), and `recommend` serving
what exists."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from quantadvise import catalog
from quantadvise.catalog.checkpoints import published_rows
from quantadvise.checkpoint.parse import parse_checkpoint, parse_quantization_config
from quantadvise.checkpoint.presets import axes_key
from quantadvise.checkpoint.published import PublishedAccuracy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
ACCEPTANCE = ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B", "meta-llama/Llama-3.1-70B-Instruct",
              "openai/gpt-oss-120b", "deepseek-ai/DeepSeek-V3"]


# -- the index -------------------------------------------------------------------------------------

def test_every_row_names_a_bundled_model_a_preset_a_source_and_a_day():
    rows = published_rows()
    assert len(rows) >= 100
    schemes, kvs = set(catalog.scheme_ids()), set(catalog.kv_ids())
    for r in rows:
        assert catalog.find_bundled_model(r.model) is not None, r.id
        assert r.scheme is None or r.scheme in schemes, r.id
        assert r.kv is None or r.kv in kvs, r.id
        assert r.source.strip() and r.as_of.year >= 2026, r.id
        # what is not read is said: an inferred row says from what
        if r.config_status in ("inferred", "not_read"):
            assert r.inferred_from or r.scheme is None, r.id


def test_a_models_rows_are_the_index_rows_of_that_model():
    # published_for makes only the asked model's rows: the same rows, in index order, as the whole index filtered
    from quantadvise.catalog.checkpoints import published_for
    from quantadvise.errors import norm_name

    rows = published_rows()
    models = {r.model for r in rows}
    assert len(models) >= 5
    for m in sorted(models) + ["no/such-model"]:
        want = tuple(r for r in rows if norm_name(r.model) == norm_name(m))
        assert published_for(m) == want, m
    assert published_for("no/such-model") == ()


def test_a_config_read_whole_parses_to_its_scheme():
    # the scheme recorded for a row whose quantization_config was read whole has the same six axes as the
    # config itself, read by the parser inspect uses, or the row's scheme_note says it is only the closest
    # preset (AWQ g64 against the g128 preset, GPTQ 8-bit g128 against per-channel w8a16)
    checked = 0
    for r in published_rows():
        if r.config_status != "full" or r.quantization_config is None or r.scheme is None:
            continue
        where = r.read_from or "config.json"
        if where == "hf_quant_config.json":
            ck = parse_quantization_config(None, hf_quant_config=r.quantization_config)
        elif where == "config.json":
            ck = parse_quantization_config(r.quantization_config)
        else:
            ck = parse_checkpoint({}, {where: r.quantization_config})
        assert ck is not None and ck.is_quantized, r.id
        g = next(g for g in ck.groups if g.quantizes_weights)
        preset = catalog.get_scheme(r.scheme)
        same = axes_key(g.weight, g.activation) == axes_key(preset.weight, preset.activation)
        assert same or r.scheme_note, (r.id, r.scheme)  # else the row says it is the closest preset only
        checked += 1
    assert checked >= 15


@pytest.mark.parametrize(("acc", "want"), [
    # a stated recovery R of an average S <= 100 points: the drop S(1 - R/100) is at most 100 - R
    ({"recovery_pct": 99.7}, (0.0, 0.3)),
    ({"recovery_pct": 93.0}, (0.0, 7.0)),
    ({"recovery_pct": 100.3}, (0.0, 0.0)),  # recovered more than all of it: no drop
    # both averages published: the drop is their difference, 63.03 - 62.71 = 0.32
    ({"score": 62.71, "baseline_score": 63.03}, (0.32, 0.32)),
    ({"score": 71.0, "baseline_score": 70.92}, (0.0, 0.0)),
    # "within 1.0% of the unquantized scores" on each task: at most 1 point on a 100-point scale
    ({"bound_pct": 1.0}, (0.0, 1.0)),
])
def test_the_drop_a_published_evaluation_supports(acc, want):
    a = PublishedAccuracy(quote="q", source="s", **acc)
    lo, hi = a.drop_pct
    assert (round(lo, 6), round(hi, 6)) == want


def test_a_figure_with_a_caveat_is_not_evidence():
    a = PublishedAccuracy(score=50.88, baseline_score=51.70, caveat="a template copy", quote="q", source="s")
    assert not a.usable


# -- `quantadvise checkpoints` offline ---------------------------------------------------------------

@pytest.mark.parametrize("model", ACCEPTANCE)
def test_checkpoints_lists_five_variants_with_different_schemes_and_verdicts(cli, model, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = cli("checkpoints", model, "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    rows = doc["checkpoints"]
    assert len(rows) >= 5
    assert len({(c["scheme"], c["method"]) for c in rows}) >= 3
    verdicts = {(v["engine"], v["status"]) for c in rows for v in c["verdicts"]}
    assert len({s for _, s in verdicts}) >= 2, verdicts  # loads and refuses / warns, not one verdict for all
    assert {v["engine"] for c in rows for v in c["verdicts"]} == {"vllm", "sglang"}


def test_checkpoints_table_names_each_release_and_the_refusals(cli):
    r = cli("checkpoints", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100", "--wide")
    assert r.code == 0, r.stderr
    out = r.stdout
    # the verdicts are against each engine's newest release on file (the default)
    newest = {e: catalog.engine_versions(e)[-1] for e in ("vllm", "sglang")}
    assert f"vLLM {newest['vllm']}" in out and f"SGLang {newest['sglang']}" in out
    assert "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic" in out
    # the 2:4 sparse checkpoints are refused in each engine's own words
    assert "CompressedTensors24 is not supported now" in out
    assert "Sparsity support has been removed from compressed-tensors" in out


def test_a_model_not_bundled_needs_hub(cli):
    r = cli("checkpoints", "someone/not-bundled-7b")
    assert r.code == 2 and "--hub" in r.stderr


def test_the_verdict_follows_the_gpu(cli):
    # nvidia's NVFP4 checkpoint: W4A4 on SM100; on an L40S (SM89) SGLang serves it weight-only with a warning
    # and vLLM too (FP4 Marlin), so the verdict is no longer a plain "loads" on at least one engine
    b200 = cli("checkpoints", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "b200", "--format", "json").json()
    l40s = cli("checkpoints", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l40s", "--format", "json").json()

    def statuses(doc):
        row = next(c for c in doc["checkpoints"] if c["id"] == "nvidia/Llama-3.1-8B-Instruct-FP4")
        return {v["engine"]: v["status"] for v in row["verdicts"]}

    assert statuses(b200) != statuses(l40s)


# -- --hub, with huggingface_hub mocked -------------------------------------------------------------

def _fake_hub(monkeypatch, tmp_path, listing, configs):
    import huggingface_hub

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)

    def list_models(self, **kw):
        assert kw["filter"].startswith("base_model:quantized:")
        if isinstance(listing, Exception):
            raise listing
        return [SimpleNamespace(**m) for m in listing]

    def download(repo_id, filename, **kw):
        doc = configs.get((repo_id, filename))
        if doc is None:
            from huggingface_hub.errors import EntryNotFoundError

            raise EntryNotFoundError(f"{repo_id}/{filename}")
        p = tmp_path / repo_id.replace("/", "--") / filename
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(doc))
        return str(p)

    def metadata(url, **kw):  # the one probe before the listing: the Hub answers, or not
        if isinstance(listing, Exception):
            raise listing
        return SimpleNamespace(etag="x", size=1)

    from quantadvise.catalog.hub import forget_unreachable

    forget_unreachable()
    monkeypatch.setattr(huggingface_hub.HfApi, "list_models", list_models)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", metadata)


def _gptq_config() -> dict:
    d = json.loads((FIXTURES / "hugging-quants-meta-llama-3.1-70b-instruct-awq-int4.json").read_text())
    return d["config"]


def test_hub_reads_the_model_tree_and_each_config(cli, monkeypatch, tmp_path):
    cfg = _gptq_config()
    _fake_hub(monkeypatch, tmp_path,
              [{"id": "someorg/Llama-3.1-70B-Instruct-AWQ", "downloads": 1234, "likes": 5, "tags": ["awq"]},
               {"id": "someorg/Llama-3.1-70B-Instruct-GGUF", "downloads": 99, "likes": 1, "tags": ["gguf"]}],
              {("someorg/Llama-3.1-70B-Instruct-AWQ", "config.json"): cfg})
    r = cli("checkpoints", "meta-llama/Llama-3.1-70B-Instruct", "--hub", "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert doc["origin"].startswith("the Hub's model tree")
    awq = next(c for c in doc["checkpoints"] if c["id"].endswith("-AWQ"))
    # read with the parser inspect uses: AutoAWQ 4-bit g128 zero-point is the awq preset
    assert awq["scheme"] == "awq" and awq["config_status"] == "full" and awq["downloads"] == 1234
    assert {v["status"] for v in awq["verdicts"]} == {"loads"}
    gguf = next(c for c in doc["checkpoints"] if c["id"].endswith("-GGUF"))
    assert gguf["config_status"] == "gguf"
    # the listing is cached beside the HF cache and reused without asking again
    listing = tmp_path / "hf" / "quantadvise" / "model-tree" / "meta-llama--Llama-3.1-70B-Instruct.json"
    assert listing.is_file()


@pytest.mark.parametrize("fetched, models", [
    ("h100", [{"id": "a/B-AWQ", "downloads": 3, "likes": -1, "tags": ["awq"]}]),  # fetched not a number, likes < 0
    (1e308, [{"id": "a/B-AWQ", "tags": float("-inf")}]),  # tags not a list
    (10**400, [{"id": "a/B-AWQ", "downloads": float("nan")}]),  # a date no float holds (OverflowError), NaN count
    ([[[[1]]]], [{"id": "a/B-AWQ", "tags": ["inf", 3, None], "downloads": True}, {"tags": []}, 7]),
])
def test_a_hostile_cached_listing_is_read_as_far_as_it_makes_sense(cli, monkeypatch, tmp_path, fetched, models):
    # the listing cache beside the HF cache is a file anyone can edit (issue 29): a count that is not a
    # non-negative integer is unknown, tags that are not strings are dropped, a row without an id is left out,
    # and a listing whose date is not a number is stale (read only offline)
    _fake_hub(monkeypatch, tmp_path, ConnectionError("offline"), {})
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache = tmp_path / "hf" / "quantadvise" / "model-tree" / "meta-llama--Llama-3.1-70B-Instruct.json"
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps({"fetched": fetched, "models": models}).replace("-Infinity", "-1e999")
                     .replace("NaN", "1e999"))
    r = cli("checkpoints", "meta-llama/Llama-3.1-70B-Instruct", "--hub", "--format", "json")
    assert r.code in (0, 2), r.stderr
    assert "Traceback" not in r.stderr
    if r.code == 0:
        rows = [c for c in r.json()["checkpoints"] if c["id"] == "a/B-AWQ"]
        assert all(c["downloads"] in (None, 3) and c.get("likes") in (None,) for c in rows)


def test_hub_failure_is_one_line_within_three_seconds(cli, monkeypatch, tmp_path):
    _fake_hub(monkeypatch, tmp_path, ConnectionError("no route to host"), {})
    t = time.perf_counter()
    r = cli("checkpoints", "someone/not-bundled-7b", "--hub")
    took = time.perf_counter() - t
    assert r.code == 2 and took < 3.0
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and "cannot reach the Hugging Face Hub" in errors[0]


def test_hub_failure_for_a_bundled_model_falls_back_to_the_index(cli, monkeypatch, tmp_path):
    _fake_hub(monkeypatch, tmp_path, ConnectionError("no route to host"), {})
    r = cli("checkpoints", "Qwen/Qwen3-8B", "--hub", "--format", "json")
    assert r.code == 0
    doc = r.json()
    assert doc["origin"].startswith("the bundled index") and any("cannot reach" in w for w in doc["warnings"])


# -- the maintainer script ----------------------------------------------------------------------------

def test_refresh_adds_new_variants_and_keeps_what_a_person_wrote(monkeypatch, tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    import refresh_checkpoints as tool

    awq = _gptq_config()
    existing_id = "RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8-dynamic"
    fp8 = {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
           "config_groups": {"group_0": {"targets": ["Linear"],
                                         "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
                                         "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                                                               "dynamic": True}}}}
    _fake_hub(monkeypatch, tmp_path,
              [{"id": existing_id, "downloads": 20000, "likes": 8, "tags": []},
               {"id": "hugging-quants/New-70B-AWQ", "downloads": 10, "likes": 0, "tags": []},
               {"id": "somebody/Unlisted-AWQ", "downloads": 10, "likes": 0, "tags": []}],
              {(existing_id, "config.json"): {"quantization_config": fp8},
               ("hugging-quants/New-70B-AWQ", "config.json"): awq})
    import yaml

    rows = yaml.safe_load((Path(tool.INDEX)).read_text())["checkpoints"]
    before = next(r for r in rows if r["id"] == existing_id)
    model = catalog.find_bundled_model("meta-llama/Llama-3.1-70B")
    from datetime import date

    from quantadvise import defaults

    out = tool.refresh([model], rows, today=date(2027, 1, 2), limit=5, producers=defaults.PUBLISHED_PRODUCERS,
                       log=open("/dev/null", "w"))
    by = {r["id"]: r for r in out}
    new = by["hugging-quants/New-70B-AWQ"]
    assert new["scheme"] == "awq" and new["config_status"] == "full" and new["method"] == "awq"
    assert "somebody/Unlisted-AWQ" not in by  # not a listed producer
    upd = by[existing_id]
    assert upd["accuracy"] == before["accuracy"]  # the quoted card figures stay
    assert upd["config_status"] == "full" and upd["scheme"] == "fp8-dynamic"  # read now, not inferred
    assert upd["popularity"]["downloads"] == 20000 and upd["as_of"] == date(2027, 1, 2)
    text = tool.dump(out, tool.header(Path(tool.INDEX).read_text()))
    assert text.startswith("# Published quantized checkpoints") and yaml.safe_load(text)["checkpoints"]


# -- recommend serves what exists ---------------------------------------------------------------------

def test_recommend_serves_a_published_fp8_checkpoint_and_says_where_its_accuracy_comes_from(cli):
    r = cli("recommend", "-m", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100", "--batch", "64", "--ctx",
            "2048", "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    winner = doc["scheme"]["id"]
    tied = [a["scheme"] for a in doc["alternatives"] if a["status"] in ("recommended", "runner-up", "ranked-after")
            and a["tokens_per_s"] and a["tokens_per_s"] * 1.005 >= doc["performance"]["tokens_per_s"]]
    assert winner.startswith("fp8") or any(s.startswith("fp8") for s in tied)
    pub = doc["checkpoint"]["published"]
    assert pub is not None and pub["id"].startswith("RedHatAI/") and pub["scheme"].startswith("fp8")
    assert f"vllm serve {pub['id']}" in doc["engine_args"]["vllm"]
    assert pub["id"] in doc["engine_args"]["sglang"]
    # where the figure comes from: its card's evaluation, or the generic prior named with its source
    assert pub["accuracy_source"] or "arXiv:2411.02355" in pub["accuracy"]
    # the llm-compressor recipe stays, as the fallback
    assert doc["checkpoint"]["recipe"] and "fallback" in doc["checkpoint"]["summary"]


def test_a_published_evaluation_replaces_the_generic_prior(cli):
    # A100, batch 256: INT8 W8A8 wins (int8 tensor cores); RedHatAI's w8a8 of Llama-3.1-8B-Instruct states
    # "100.3% for OpenLLM v1" on its card -> a drop of at most max(0, 100 - 100.3) = 0 points, replacing the
    # generic INT8 W8A8 prior of 0-3 points (arXiv:2411.02355)
    doc = cli("recommend", "-m", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "a100-80gb", "-b", "256",
              "--format", "json").json()
    row = next(a for a in doc["alternatives"] if a["scheme"] == "w8a8-int8")
    assert row["expected_drop_pct"] == [0.0, 0.0]
    acc = next(t for t in doc["trace"] if t["node"] == "accuracy")
    ev = acc["numbers"]["published_evaluations"]["w8a8-int8"]
    assert ev["replaces"] == ["int8-w8a8"] and "100.3% recovery" in ev["evaluation"]
    if doc["scheme"]["id"] == "w8a8-int8":
        assert doc["checkpoint"]["published"]["accuracy_source"].startswith("https://huggingface.co/")


def test_a_base_model_is_not_served_an_instruct_checkpoint(cli):
    # meta-llama/Llama-3.1-8B (the base release) has RedHatAI's base-model w8a8 on file, never the -Instruct ones
    doc = cli("recommend", "-m", "meta-llama/Llama-3.1-8B", "--gpu", "a100-80gb", "-b", "256",
              "--format", "json").json()
    acc = next(t for t in doc["trace"] if t["node"] == "accuracy")
    assert all("Instruct" not in pid for pid in acc["numbers"].get("published", {}).values())


def test_an_engine_named_thousands_of_times_is_judged_once(cli):
    # each -e was a verdict per checkpoint (10,000 repeats: 19 s; 40,000: past a minute and 1 GB); now each
    # engine is taken once, as inspect takes them (inputs.names)
    from tests.limits import time_limit

    with time_limit(cpu=15, what="checkpoints -e vllm x 5000"):
        r = cli("checkpoints", "meta-llama/Llama-3.1-8B", *(["-e", "vllm"] * 5000), "--format", "json")
    assert r.code == 0, r.stderr[-800:]
    row = r.json()["checkpoints"][0]
    assert [v["engine"] for v in row["verdicts"]] == ["vllm"]


def test_a_cached_listing_nested_past_the_recursion_limit_is_no_listing(cli, monkeypatch, tmp_path):
    _fake_hub(monkeypatch, tmp_path, ConnectionError("offline"), {})
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache = tmp_path / "hf" / "quantadvise" / "model-tree" / "meta-llama--Llama-3.1-70B-Instruct.json"
    cache.parent.mkdir(parents=True)
    cache.write_text("[" * 100_000 + "]" * 100_000)
    r = cli("checkpoints", "meta-llama/Llama-3.1-70B-Instruct", "--hub", "--format", "json")
    assert r.code in (0, 2) and "Traceback" not in r.stderr, r.stderr[-800:]
