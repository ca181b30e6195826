"""Issue 28: the engine releases deployment repos pin, and a gate that never fails a launch that ran.

Each test is one defect of the issue's "Why", run through ``quantadvise.check`` on a small repository the
way a user's CI runs it. Expected verdicts follow the engines' own sources (quoted in the comments, and in
tests/fixtures/flag_quotes/ for every option a release registers).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import quantadvise as qa

FIXTURES = Path(__file__).parents[1] / "fixtures"
FLAG_QUOTES = FIXTURES / "flag_quotes"
MODEL = "meta-llama/Meta-Llama-3-8B"  # bundled: no network


def repo(tmp_path: Path, script: str, config: str = "", name: str = "r", **files: str) -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "quantadvise.yaml").write_text(f"model: {MODEL}\ngpu: h100\n{config}")
    (root / "serve.sh").write_text(script)
    for fname, text in files.items():
        (root / fname.replace("__", ".")).write_text(text)
    return root


def check(root: Path, monkeypatch: pytest.MonkeyPatch, **kw: object) -> qa.GateResult:
    monkeypatch.chdir(root)
    return qa.check(".", **kw)


def rules(r: qa.GateResult, rule_id: str) -> list:
    return [f for f in r.findings if f.rule_id == rule_id]


def quoted(release: str, needle: str) -> bool:
    """Whether the release's server parser registers an option on a line that spells ``needle`` (the flag quote
    files hold every registering line, checked against the wheels / sdists by tests/data/test_flag_sources.py)."""
    lines = json.loads((FLAG_QUOTES / f"{release}.json").read_text())["lines"].values()
    return any(needle in line for line in lines)


# -- 1. the release the repo pins is the one it is judged against -----------------------------------------------


def test_a_declared_release_on_file_is_judged_as_itself(tmp_path, monkeypatch):
    # the issue: `engine_version: 0.21.0` with image vllm/vllm-openai:v0.21.0 made check exit 2
    root = repo(tmp_path, f"docker run --gpus all vllm/vllm-openai:v0.21.0 --model {MODEL} --max-model-len 8192\n",
                "engine_version: 0.21.0\n")
    r = check(root, monkeypatch)
    assert r.exit_code() != 2
    assert r.targets[0].engine_version == "0.21.0"
    assert not rules(r, "QA100") and not rules(r, "QA108")


@pytest.mark.parametrize(("declared", "image", "on_file"), [
    ("0.21.1", "v0.21.1", "0.21.0"),  # a patch not on file: the same minor release on file
    ("0.10.1.1", "v0.10.1.1", "0.10.1"),  # vLLM's post-release of 0.10.1
    ("0.35.0", "v0.35.0", "0.34.0"),  # newer than any release on file: the newest
    ("0.7.3", "v0.7.3", "0.8.5.post1"),  # older than any: the oldest
])
def test_a_release_not_on_file_is_the_closest_with_one_warning(tmp_path, monkeypatch, declared, image, on_file):
    root = repo(tmp_path, f"docker run --gpus all vllm/vllm-openai:{image} --model {MODEL}\n",
                f"engine_version: {declared}\n")
    r = check(root, monkeypatch)
    assert r.exit_code() != 2
    assert r.targets[0].engine_version == on_file
    (qa100,) = rules(r, "QA100")  # one warning, naming both releases
    assert qa100.severity == "warning" and declared in qa100.message and on_file in qa100.message


@pytest.mark.parametrize(("image", "engine", "on_file"), [
    ("lmsysorg/sglang:v0.5.7-cu129", "sglang", "0.5.7"),
    ("lmsysorg/sglang:v0.4.6.post5-cu124", "sglang", "0.4.6.post5"),
    ("lmsysorg/sglang:v0.5.7-rocm700-mi30x", "sglang", "0.5.7"),
    ("rocm/sgl-dev:v0.5.11-rocm720-mi30x-20260510", "sglang", "0.5.11"),
    ("rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909", "vllm", "0.10.1"),
    ("vllm/vllm-openai-rocm:v0.21.0", "vllm", "0.21.0"),
])
def test_image_tags_name_their_release(tmp_path, monkeypatch, image, engine, on_file):
    launch = (f"python3 -m sglang.launch_server --model-path {MODEL}" if engine == "sglang" else
              f"vllm serve {MODEL}")
    root = repo(tmp_path, f"docker run --gpus all {image} {launch}\n")
    r = check(root, monkeypatch)
    t = r.targets[0]
    assert (t.engine, t.engine_version) == (engine, on_file)
    assert not rules(r, "QA100")


def test_a_nightly_image_is_the_newest_release_said_once(tmp_path, monkeypatch):
    root = repo(tmp_path, f"docker run --gpus all vllm/vllm-openai:nightly --model {MODEL}\n")
    r = check(root, monkeypatch)
    newest = qa.catalog.engine_versions("vllm")[-1]
    assert r.targets[0].engine_version == newest
    (qa100,) = rules(r, "QA100")
    assert "nightly" in qa100.message and newest in qa100.message


# -- 2. options exactly as each release's parser reads them -----------------------------------------------------

# vLLM 0.21.0 vllm/utils/argparse_utils.py:389 `if processed_arg.startswith("-") and "." in processed_arg:` turns
# `-cc.key=value` / `--compilation-config.key value` into the option before the first dot with a JSON value; the
# option is registered at vllm/engine/arg_utils.py:1427 `"--compilation-config", "-cc", ...`. `-O3` is
# `--optimization-level 3` (argparse_utils.py:322-326).
ACCEPTED_0_21 = ("-cc.cudagraph_mode=FULL_DECODE_ONLY --compilation-config.max_capture_size 512 -O3 "
                 "--max-model-len 8192 --gpu-memory-utilization 0.9 --enable-prefix-caching --kv-cache-dtype fp8")


def test_the_option_set_021_accepts_is_no_error(tmp_path, monkeypatch):
    assert quoted("vllm-0.21.0", '"--compilation-config", "-cc"')
    root = repo(tmp_path, f"docker run --gpus all vllm/vllm-openai:v0.21.0 --model {MODEL} {ACCEPTED_0_21}\n")
    r = check(root, monkeypatch)
    assert r.targets[0].engine_version == "0.21.0"
    assert not rules(r, "QA108"), [f.message for f in rules(r, "QA108")]


@pytest.mark.parametrize("release", ["0.21.0", "0.33.0"])
def test_dotted_compilation_config_shorthand_is_read(tmp_path, monkeypatch, release):
    # the issue: `-cc.<key>=...` was QA108 "not an option"
    root = repo(tmp_path, f"vllm serve {MODEL} -cc.cudagraph_mode=FULL_DECODE_ONLY -cc.pass_config.enable_fusion true\n",
                f"engine_version: {release}\n")
    assert not rules(check(root, monkeypatch), "QA108")


@pytest.mark.parametrize(("release", "refused"), [
    # 0.10.1 vllm/utils/__init__.py:1805-1812: -O3 -> `-O.level=3`, and -O is a spelling of --compilation-config
    ("0.10.1", False),
    # 0.12.0 vllm/utils/argparse_utils.py:261-270: `-O.<key>` is deprecated and rewritten to `-cc.<key>`
    ("0.12.0", False),
    # 0.21.0 argparse_utils.py:322-326: any `-O<x>` is `--optimization-level <x>`, so `-O.level=3` hands the
    # optimization level the value '.level=3' (an IntEnum option: vllm/config/vllm.py:68)
    ("0.21.0", True),
])
def test_dotted_O_follows_each_release(tmp_path, monkeypatch, release, refused):
    root = repo(tmp_path, f"vllm serve {MODEL} -O.level=3\n", f"engine_version: {release}\n")
    found = rules(check(root, monkeypatch), "QA108")
    assert bool(found) == refused
    if refused:
        assert "-cc.level" in found[0].message  # the spelling that works


def test_dotted_keys_of_a_release_without_the_shorthand_are_refused(tmp_path, monkeypatch):
    # vLLM 0.8.5.post1 has no dotted JSON rewrite (its FlexibleArgumentParser.parse_args only rewrites
    # underscores): argparse sees `--compilation-config.level` and refuses it
    root = repo(tmp_path, f"vllm serve {MODEL} --compilation-config.level 3\n", "engine_version: 0.8.5.post1\n")
    assert rules(check(root, monkeypatch), "QA108")


def test_an_exact_option_name_is_not_a_prefix(tmp_path, monkeypatch):
    # SGLang 0.5.7 registers --cuda-graph-max-bs itself (argparse takes an exact option string before any
    # prefix); 0.5.23 splits it into --cuda-graph-max-bs-decode / -prefill, where it is ambiguous
    assert quoted("sglang-0.5.7", '"--cuda-graph-max-bs"')
    assert quoted("sglang-0.5.23", "cuda_graph_max_bs_decode") and quoted("sglang-0.5.23", "cuda_graph_max_bs_prefill")
    script = (f"docker run --gpus all lmsysorg/sglang:v0.5.7-cu129 python3 -m sglang.launch_server "
              f"--model-path {MODEL} --cuda-graph-max-bs 160\n")
    r = check(repo(tmp_path, script), monkeypatch)
    assert r.targets[0].engine_version == "0.5.7" and not rules(r, "QA108")
    r = check(repo(tmp_path, script.replace("v0.5.7-cu129", "v0.5.23"), name="new"), monkeypatch)
    (amb,) = rules(r, "QA108")
    assert "prefix of 2" in amb.message


@pytest.mark.parametrize(("release", "refused"), [("0.10.1", False), ("0.17.1", False), ("0.33.0", True)])
def test_a_removed_option_is_an_error_only_where_it_is_gone(tmp_path, monkeypatch, release, refused):
    # --swap-space: vllm/engine/arg_utils.py registers it up to 0.17 (flag quotes), not in 0.18 on
    assert quoted(f"vllm-{release}", '"--swap-space"') != refused
    root = repo(tmp_path, f"vllm serve {MODEL} --swap-space 16\n", f"engine_version: {release}\n")
    assert bool(rules(check(root, monkeypatch), "QA108")) == refused


def test_max_seq_len_to_capture_lives_until_0_10(tmp_path, monkeypatch):
    assert quoted("vllm-0.10.2", '"--max-seq-len-to-capture"') and not quoted("vllm-0.11.2", '"--max-seq-len-to-capture"')
    for release, refused in (("0.10.2", False), ("0.11.2", True)):
        root = repo(tmp_path, f"vllm serve {MODEL} --max-seq-len-to-capture 8192\n", f"engine_version: {release}\n",
                    name=release)
        assert bool(rules(check(root, monkeypatch), "QA108")) == refused, release


def test_options_in_a_config_file_are_checked_at_their_lines(tmp_path, monkeypatch):
    # vllm/utils/argparse_utils.py (0.21.0) load_config_file: each top-level key becomes `--key value`, a mapping
    # its JSON; booleans `--key` when true
    cfg = "tensor-parallel-size: 1\nswap_space: 4\nenable-prefix-caching: true\ncompilation-config:\n  level: 3\n"
    root = repo(tmp_path, f"vllm serve {MODEL} --config cfg.yaml\n", "engine_version: 0.21.0\n", cfg__yaml=cfg)
    r = check(root, monkeypatch)
    (bad,) = rules(r, "QA108")
    assert bad.file == "cfg.yaml" and bad.line == 2 and "--swap-space" in bad.message


def test_engine_environment_variables_the_release_does_not_read(tmp_path, monkeypatch):
    # vllm/envs.py environment_variables of 0.21.0 declares VLLM_LOGGING_LEVEL and no VLLM_USE_V1 (the V0 engine
    # and its switch are gone); the data's parser sidecar lists the declared names
    side = (Path(__file__).parents[2] / "data" / "flags" / "parser" / "vllm-0.21.0.yaml").read_text()
    assert "VLLM_LOGGING_LEVEL:" in side and "VLLM_USE_V1:" not in side
    script = f"export VLLM_USE_V1=1\nVLLM_LOGGING_LEVEL=DEBUG vllm serve {MODEL}\n"
    r = check(repo(tmp_path, script, "engine_version: 0.21.0\n"), monkeypatch)
    (w,) = [f for f in rules(r, "QA109") if "VLLM_" in f.message]
    assert "VLLM_USE_V1" in w.message and w.line == 1 and w.severity == "warning"


# -- 3. an upgrade that would not start fails the gate ----------------------------------------------------------


def test_an_upgrade_that_would_not_start_is_an_error(tmp_path, monkeypatch):
    # --swap-space is a vLLM 0.10.1 option (flag quotes) and none of 0.33.0's: the deployment starts today and the
    # upgrade would end at argparse ("unrecognized arguments: --swap-space")
    script = f"docker run --gpus all vllm/vllm-openai:v0.10.1 \\\n  --model {MODEL} \\\n  --swap-space 16\n"
    root = repo(tmp_path, script)
    r = check(root, monkeypatch)
    assert r.targets[0].engine_status != "refused" and r.exit_code() == 0
    r = check(root, monkeypatch, upgrade_to="vllm@0.33.0")
    (up,) = rules(r, "QA112")
    assert up.severity == "error" and r.exit_code() == 1
    assert (up.file, up.line) == ("serve.sh", 3)  # the line to fix
    assert "--swap-space" in up.message and "ok -> refused" in up.message


def test_an_upgrade_that_changes_but_starts_stays_a_warning(tmp_path, monkeypatch):
    root = repo(tmp_path, f"docker run --gpus all vllm/vllm-openai:v0.10.1 --model {MODEL} --kv-cache-dtype fp8\n")
    r = check(root, monkeypatch, upgrade_to="vllm@0.33.0")
    assert all(f.severity == "warning" for f in rules(r, "QA112"))


# -- 4. a compressed-tensors FP8 checkpoint with --kv-cache-dtype fp8_e5m2 --------------------------------------

CT_FP8 = FIXTURES / "checkpoints" / "llm-compressor-tinyllama-fp8-static-per-tensor.json"
CT_FP8_KV = FIXTURES / "checkpoints" / "llm-compressor-tinyllama-fp8-static-kv-cache-scheme.json"


@pytest.mark.parametrize(("fixture", "release", "refused"), [
    # vLLM 0.21.0: compressed_tensors.py:192-193 gives every Attention layer CompressedTensorsKVCacheMethod, and
    # attention.py:167-168 raises "fp8_e5m2 kv-cache is not supported with fp8 checkpoints." for any such method
    (CT_FP8, "0.21.0", True),
    # vLLM 0.33.0 attention.py:205-219: the same error only when the method is not compressed-tensors' or its
    # config declares a kv_cache_scheme ("weight-only ones declare none and must keep fp8_e5m2")
    (CT_FP8, "0.33.0", False),
    (CT_FP8_KV, "0.33.0", True),
])
def test_ct_fp8_with_e5m2_kv_follows_the_release(fixture, release, refused):
    cfg = json.loads(fixture.read_text())["config"]
    rep = qa.inspect(cfg, engines=f"vllm=={release}", gpu="h100", kv_cache_dtype="fp8_e5m2")
    kinds = {f.kind for f in rep.engines[0].findings if f.severity == "error"}
    assert ("fp8_e5m2_with_fp8_checkpoint" in kinds) == refused, kinds


# -- 5. every release people run is on file ---------------------------------------------------------------------


def test_engines_list_names_every_release(cli):
    out = cli("engines", "list", "--format", "json")
    assert out.code == 0
    releases = out.json()["releases"]
    assert len(releases["vLLM"]) >= 25 and len(releases["SGLang"]) >= 20
    assert {"0.10.1", "0.21.0", "0.34.0"} <= set(releases["vLLM"]) and "0.5.7" in releases["SGLang"]


def test_engines_diff_across_old_and_new_releases(cli):
    out = cli("engines", "diff", "vllm@0.10.1", "vllm@0.34.0", "--format", "json")
    assert out.code == 0
    d = out.json()
    assert d["options"]["removed"]  # --swap-space among them: 0.10.1 registers it, 0.34.0 does not
    assert "--swap-space" in {c["option"] for c in d["options"]["removed"]}


# -- 6. the pure rules --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("tag", "release"), [
    ("v0.21.0", "0.21.0"), ("v0.10.1.1", "0.10.1.1"), ("v0.5.7-cu129", "0.5.7"), ("v0.4.6.post5-cu124", "0.4.6.post5"),
    ("v0.5.3rc0-rocm700-mi30x-20250925", "0.5.3rc0"), ("rocm6.4.1_vllm_0.10.1_20250909", "0.10.1"),
    ("rocm6.3.1_instinct_vllm0.7.3_20250311", "0.7.3"), ("nightly", "nightly"), ("nightly-0a1b2c3", "nightly"),
    ("dev", "nightly"), ("nightly_main_20250901", "nightly"), ("latest", None), ("gptoss", None),
])
def test_release_in_an_image_tag(tag, release):
    from quantadvise.engines.versions import release_in_tag

    assert release_in_tag(tag) == release


def test_the_closest_release_on_file():
    from quantadvise.engines.versions import choose_release

    on_file = ["0.8.5.post1", "0.9.2", "0.10.1", "0.10.2", "0.11.2", "0.12.0", "0.33.0", "0.34.0"]
    picks = {asked: choose_release("vLLM", on_file, asked) for asked in
             ("0.10.1.1", "0.11.0", "0.13.0", "0.35.0", "0.7.3", "0.8.0", "nightly", "latest", "0.9.2")}
    assert {a: c.version for a, c in picks.items()} == {
        "0.10.1.1": "0.10.1", "0.11.0": "0.11.2", "0.13.0": "0.12.0", "0.35.0": "0.34.0", "0.7.3": "0.8.5.post1",
        "0.8.0": "0.8.5.post1", "nightly": "0.34.0", "latest": "0.34.0", "0.9.2": "0.9.2"}
    assert picks["latest"].warning is None and picks["0.9.2"].warning is None
    assert "the newest on file" in picks["0.35.0"].warning and "closest" in picks["0.13.0"].warning
    from quantadvise.errors import InputError

    with pytest.raises(InputError, match="not a vLLM release"):
        choose_release("vLLM", on_file, "nope")
