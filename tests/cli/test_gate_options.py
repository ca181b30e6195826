"""``quantadvise check``: an option the engine's parser does not register refuses the deployment.

Both servers parse their command line with argparse and exit at start-up on what they cannot read:
``parser.parse_args`` (vLLM's FlexibleArgumentParser, vllm/utils/argparse_utils.py; SGLang's
``prepare_server_args``, sglang/srt/server_args.py:696) calls ``parser.error("unrecognized arguments:
...")`` for an unknown option and "ambiguous option: --x could match ..." for a prefix of several
(Python's argparse, ``_parse_optional`` / ``parse_args``), then exits with status 2. The option lists
are data/flags/<engine>-<version>.yaml, read from the wheels.
"""

from __future__ import annotations

from tests.cli.test_check_cli import line_of, make_repo


def _check(cli, *args):
    r = cli("check", *args, "--format", "json")
    assert r.code in (0, 1), r.stderr
    return r, r.json()


def test_misspelt_vllm_option_is_the_engines_start_up_error(cli, tmp_path, monkeypatch):
    """--gpu-memory-utilisation (British spelling) is not a vLLM 0.33.0 option: `vllm serve` prints
    "vllm serve: error: unrecognized arguments: --gpu-memory-utilisation" and exits 2. The finding
    names the option it is closest to (--gpu-memory-utilization, one letter apart)."""
    script = ("#!/bin/sh\nvllm serve meta-llama/Meta-Llama-3-8B-Instruct --max-model-len 8192 \\\n"
              "  --gpu-memory-utilisation 0.85\n")
    root = make_repo(tmp_path, {"serve.sh": script})
    monkeypatch.chdir(root)
    r, doc = _check(cli, ".", "--gpu", "h100", "--engine-version", "0.33.0")
    assert r.code == 1
    found = [f for f in doc["findings"] if f["rule_id"] == "QA108"]
    assert len(found) == 1
    f = found[0]
    assert f["engine_message"] == "vllm serve: error: unrecognized arguments: --gpu-memory-utilisation"
    assert "did you mean --gpu-memory-utilization" in f["message"]
    assert f["line"] == line_of(root / "serve.sh", "--gpu-memory-utilisation")
    t = doc["targets"][0]
    assert (t["memory"]["starts"], t["memory"]["refused_by"]) == (False, ["QA108"])


def test_sglang_prefix_of_two_options_is_ambiguous(cli, tmp_path, monkeypatch):
    """SGLang 0.5.23 registers --cuda-graph-max-bs-decode and --cuda-graph-max-bs-prefill
    (sglang/srt/arg_groups/fields/exec_.py:629-634) and no --cuda-graph-max-bs: argparse's prefix match
    finds two, so the server exits with "ambiguous option: --cuda-graph-max-bs could match
    --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill"."""
    script = ("python -m sglang.launch_server --model-path meta-llama/Meta-Llama-3-8B-Instruct "
              "--cuda-graph-max-bs 64\n")
    monkeypatch.chdir(make_repo(tmp_path, {"a.sh": script}))
    r, doc = _check(cli, ".", "--gpu", "h100", "--engine", "sglang", "--engine-version", "0.5.23")
    assert r.code == 1
    f = next(f for f in doc["findings"] if f["rule_id"] == "QA108")
    assert f["engine_message"] == ("sglang serve: error: ambiguous option: --cuda-graph-max-bs could match "
                                   "--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill")


def test_unique_prefix_is_read_as_its_option_by_the_engine_and_by_the_gate(cli, tmp_path, monkeypatch):
    """--mem-fraction is a prefix of one SGLang 0.5.23 option only, --mem-fraction-static: argparse reads it as
    that option and the server starts (no QA108). The gate reads it the same way, so the start-up memory
    uses 0.8 (not SGLang's default), and warns (QA109) that a prefix breaks once a release adds another
    option starting with it."""
    script = ("python -m sglang.launch_server --model-path meta-llama/Meta-Llama-3-8B-Instruct "
              "--mem-fraction 0.8\n")
    monkeypatch.chdir(make_repo(tmp_path, {"a.sh": script}))
    _, doc = _check(cli, ".", "--gpu", "h100", "--engine", "sglang", "--engine-version", "0.5.23")
    assert not [f for f in doc["findings"] if f["rule_id"] == "QA108"]
    f = next(f for f in doc["findings"] if f["rule_id"] == "QA109")
    assert f["message"].startswith("--mem-fraction is read as --mem-fraction-static")
    m = doc["targets"][0]["memory"]
    assert (m["memory_utilization"], m["memory_utilization_flag"]) == (0.8, "--mem-fraction-static")


def test_healthy_commands_have_no_option_finding(cli, tmp_path, monkeypatch):
    """Options as each engine spells them, in the forms its parser reads: vLLM's --x_y (the
    FlexibleArgumentParser rewrite), --x=value, -tp, a BooleanOptionalAction's --no-X and vLLM's
    --enable-x/--disable-x pair; SGLang's --tp (a unique prefix of --tp-size) and store_true flags."""
    vllm = ("vllm serve meta-llama/Meta-Llama-3-8B-Instruct --max_model_len 8192 --max-num-seqs=64 -tp 1 "
            "--no-enable-prefix-caching --enforce-eager --disable-log-stats --trust-remote-code --port 8000\n")
    sgl = ("python -m sglang.launch_server --model-path meta-llama/Meta-Llama-3-8B-Instruct --tp 1 "
           "--mem-fraction-static 0.8 --trust-remote-code --enable-metrics --host 0.0.0.0 --port 30000\n")
    monkeypatch.chdir(make_repo(tmp_path, {"v.sh": vllm, "s.sh": sgl}))
    _, doc = _check(cli, ".", "--gpu", "h100")
    assert not [f for f in doc["findings"] if f["rule_id"] == "QA108"], doc["findings"]
    assert not [f for f in doc["findings"] if f["rule_id"] == "QA109"], doc["findings"]


def test_release_without_an_option_list_is_not_checked_and_says_so(cli, tmp_path, monkeypatch):
    """An image tag newer than the data (vllm/vllm-openai:v0.99.0): its options may include ones the
    newest list on file lacks, so the names are not checked, and the report says why."""
    compose = ("services:\n  llm:\n    image: vllm/vllm-openai:v0.99.0\n"
               "    command: --model meta-llama/Meta-Llama-3-8B-Instruct --some-future-option 1\n")
    monkeypatch.chdir(make_repo(tmp_path, {"docker-compose.yaml": compose}))
    _, doc = _check(cli, ".", "--gpu", "h100")
    assert not [f for f in doc["findings"] if f["rule_id"] == "QA108"]
    notes = " ".join(doc["targets"][0]["notes"])
    assert "option names are not checked: vLLM 0.99.0's option list is not on file" in notes


def test_upgrade_names_an_option_the_target_release_removed(cli, tmp_path, monkeypatch):
    """--enable-mamba-fine-grained-prefix-cache is a vLLM 0.30.0 option that 0.31.0 dropped (it is in
    data/flags/vllm-0.30.0.yaml, not in vllm-0.31.0 or later): the deployment starts on 0.30.0 and
    `vllm serve` on 0.33.0 exits with "unrecognized arguments", so the upgrade gate reports QA112
    "verdict ok -> refused" with that line."""
    script = ("vllm serve meta-llama/Meta-Llama-3-8B-Instruct --max-model-len 8192 "
              "--enable-mamba-fine-grained-prefix-cache\n")
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": script}))
    r, doc = _check(cli, ".", "--gpu", "h100", "--engine-version", "0.30.0")
    assert not [f for f in doc["findings"] if f["rule_id"] == "QA108"]  # 0.30.0 registers it
    r, doc = _check(cli, ".", "--gpu", "h100", "--engine-version", "0.30.0", "--upgrade-to", "vllm@0.33.0")
    f = next(f for f in doc["findings"] if f["rule_id"] == "QA112")
    assert "verdict ok -> refused" in f["message"]
    assert "unrecognized arguments: --enable-mamba-fine-grained-prefix-cache" in f["message"]


def test_sglang_serve_takes_a_positional_model_and_its_own_model_type(cli, tmp_path, monkeypatch):
    """`sglang serve MODEL` turns a first bare argument into --model-path (sglang/cli/serve.py:62-66) and takes
    --model-type out of argv before the parser runs (:30-59); `python -m sglang.launch_server` goes straight to
    prepare_server_args, whose parser has no --model-type: "unrecognized arguments: --model-type"."""
    serve = "sglang serve meta-llama/Meta-Llama-3-8B-Instruct --model-type llm --tp 1\n"
    module = "python -m sglang.launch_server --model-path meta-llama/Meta-Llama-3-8B-Instruct --model-type llm\n"
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": serve, "module.sh": module}))
    r, doc = _check(cli, ".", "--gpu", "h100", "--engine-version", "0.5.23")
    by_file = {t["file"]: t for t in doc["targets"]}
    assert by_file["serve.sh"]["model"] == "meta-llama/Meta-Llama-3-8B-Instruct"  # was: "no model to check"
    qa108 = [(f["file"], f["engine_message"]) for f in doc["findings"] if f["rule_id"] == "QA108"]
    assert qa108 == [("module.sh", "sglang serve: error: unrecognized arguments: --model-type")]


def test_sglang_serve_of_a_model_it_cannot_read_leaves_the_diffusion_parsers_options_alone(cli, tmp_path,
                                                                                            monkeypatch):
    """`sglang serve` sends a diffusion model (model_index.json) to SGLang-Diffusion's parser
    (sglang/cli/serve.py:107-142), which registers --num-gpus and --ulysses-degree
    (sglang/multimodal_gen/runtime/server_args/server_args.py): when the model cannot be read to tell, or the
    command says --model-type diffusion, the option names are not judged against the LLM server's list."""
    flux = "sglang serve black-forest-labs/FLUX.1-dev --num-gpus 1 --ulysses-degree 1\n"
    typed = "sglang serve some-org/some-model --model-type diffusion --num-gpus 2\n"
    monkeypatch.chdir(make_repo(tmp_path, {"flux.sh": flux, "typed.sh": typed}))
    _, doc = _check(cli, ".", "--gpu", "h100", "--engine-version", "0.5.23")
    assert not [f for f in doc["findings"] if f["rule_id"] == "QA108"]
    notes = {t["file"]: " ".join(t["notes"]) for t in doc["targets"]}
    assert "the model could not be read to tell" in notes["flux.sh"]
    assert "--model-type diffusion" in notes["typed.sh"]


def test_true_or_false_after_an_option_that_takes_none_is_refused(cli, tmp_path, monkeypatch):
    """vLLM 0.33.0 registers --enforce-eager and --enable-chunked-prefill as BooleanOptionalAction options
    (bool fields through get_kwargs, vllm/engine/arg_utils.py), which take no value: the word after them is
    left over and argparse ends with "unrecognized arguments: False". (Releases before those on file parsed
    some of them as booleans, so a release not on file is not judged.)"""
    script = ("vllm serve meta-llama/Meta-Llama-3-8B-Instruct --enforce-eager true --enable-chunked-prefill False "
              "--max-model-len 8192\n")
    monkeypatch.chdir(make_repo(tmp_path, {"a.sh": script}))
    _, doc = _check(cli, ".", "--gpu", "h100", "--engine-version", "0.33.0")
    msgs = sorted(f["message"] for f in doc["findings"] if f["rule_id"] == "QA108")
    assert len(msgs) == 2
    assert "'False' after it is an argument the parser does not take" in msgs[0]
    assert msgs[0].endswith("write --no-enable-chunked-prefill")
    assert msgs[1].endswith("write --enforce-eager")


def test_a_server_module_the_release_does_not_hold_is_refused(cli, tmp_path, monkeypatch):
    """The old demo server vllm/entrypoints/api_server.py is in none of the vLLM wheels on file (0.30.0-0.33.0:
    `unzip -l` lists vllm/entrypoints/openai/api_server.py only), so `python -m vllm.entrypoints.api_server`
    exits with Python's "No module named vllm.entrypoints.api_server" before any server starts."""
    script = "python -m vllm.entrypoints.api_server --model meta-llama/Meta-Llama-3-8B-Instruct --port 8000\n"
    ok = "python3 -m vllm.entrypoints.openai.api_server --model meta-llama/Meta-Llama-3-8B-Instruct\n"
    monkeypatch.chdir(make_repo(tmp_path, {"old.sh": script, "ok.sh": ok}))
    _, doc = _check(cli, ".", "--gpu", "h100", "--engine-version", "0.33.0")
    found = [(f["file"], f["engine_message"]) for f in doc["findings"] if f["rule_id"] == "QA108"]
    assert found == [("old.sh", "No module named vllm.entrypoints.api_server")]
