"""One input layer (issue 16): every command parses and checks the same flag the same way, with
the same environment variable, limits and message; an error caused by an environment variable
names it; messages count correctly and never show a workload nobody gave."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantadvise.inputs import LIMITS, check
from quantadvise.wording import install_hint, plural
from tests.cli.test_check_cli import copy_example

REPO = Path(__file__).resolve().parents[2]

# the same --gpus on every command that takes one (size needs a --gpu to fit against)
GPU_COMMANDS = [("size", "--gpu", "h100"), ("recommend",), ("roofline",)]


def _one_error_line(r) -> str:
    assert r.code == 2, (r.code, r.stdout, r.stderr)
    assert r.stdout == "" and r.stderr.count("\n") == 1 and r.stderr.startswith("Error: "), r.stderr
    return r.stderr


@pytest.mark.parametrize("cmd", GPU_COMMANDS, ids=lambda c: c[0])
def test_gpus_from_the_environment_is_checked_alike_and_named(cli, monkeypatch, cmd):
    monkeypatch.setenv("QUANTADVISE_GPUS", "-3")
    err = _one_error_line(cli(*cmd))
    # one range for every command: 1 to 1,024 GPUs (inputs.LIMITS["gpus"])
    assert "--gpus must be an integer >= 1 and <= 1,024, got -3" in err
    assert "QUANTADVISE_GPUS" in err


@pytest.mark.parametrize("cmd", [("size",), ("recommend",), ("check",)], ids=lambda c: c[0])
def test_a_bad_format_from_the_environment_is_an_error_everywhere(cli, monkeypatch, tmp_path, cmd):
    monkeypatch.setenv("QUANTADVISE_FORMAT", "xml")
    err = _one_error_line(cli(*cmd))
    assert "'xml'" in err and "QUANTADVISE_FORMAT" in err


def test_an_unknown_gpu_from_the_environment_says_so_and_suggests(cli, monkeypatch):
    monkeypatch.setenv("QUANTADVISE_GPU", "h1000")
    err = _one_error_line(cli("recommend"))
    assert "unknown GPU 'h1000'" in err and "did you mean" in err and "h100" in err
    assert "QUANTADVISE_GPU" in err and "quantadvise list gpus" in err
    # the flag on the command line wins over the variable: no blame on it then
    err2 = _one_error_line(cli("recommend", "--gpu", "h1000"))
    assert "QUANTADVISE_GPU" not in err2


def test_an_unknown_engine_names_the_flag_not_a_workload_field(cli, monkeypatch):
    monkeypatch.setenv("QUANTADVISE_ENGINE", "trt")
    err = _one_error_line(cli("recommend"))
    assert "unknown engine 'trt'" in err and "QUANTADVISE_ENGINE" in err
    assert "(top level)" not in err


@pytest.mark.parametrize("args, listing, near", [
    (("size", "llama-3-8bb"), "quantadvise list models", "llama-3-8b"),
    (("size", "meta-llama/Llama-3-8B", "--scheme", "w4a61"), "quantadvise list schemes", "'w4a16'"),
    (("recommend", "--kv-dtype", "kv-fp9"), "quantadvise list kv", "kv-fp8"),
    (("roofline", "--gpu", "h10"), "quantadvise list gpus", "'h100'"),
    (("recommend", "--engine", "vlm"), "quantadvise list engines", "vllm"),
], ids=["model", "scheme", "kv", "gpu", "engine"])
def test_every_unknown_name_points_to_its_listing(cli, args, listing, near):
    # a one-letter typo of a bundled name: the error suggests it and names the listing command
    err = _one_error_line(cli(*args))
    assert listing in err and near in err


def test_the_reserve_is_refused_alike_by_size_and_recommend(cli):
    a = _one_error_line(cli("size", "--gpu", "h100", "--reserve-gb", "-1"))
    b = _one_error_line(cli("recommend", "--reserve-gb", "-1"))
    want = "--reserve-gb must be a number >= 0 and <= 4,096, got -1.0"
    assert want in a and want in b
    for bad in ("inf", "nan"):
        assert "--reserve-gb must be" in _one_error_line(cli("size", "--gpu", "h100", "--reserve-gb", bad))


def test_a_prompt_longer_than_the_context_is_refused(cli):
    err = _one_error_line(cli("recommend", "--prompt", "5000", "--ctx", "100"))
    assert "5,000" in err and "--ctx 100" in err


def test_group_without_bits_says_what_to_give(cli):
    err = _one_error_line(cli("size", "--group", "100"))
    assert "--bits" in err and "--bits 4 --group 100" in err and "no weight scale" not in err


def test_size_never_says_1_00x_smaller_nor_ctx_0(cli):
    r = cli("size", "meta-llama/Llama-3-8B", "--gpu", "h100")  # bf16, no workload
    assert r.code == 0, r.stderr
    assert "1.00x smaller" not in r.stdout and "the same size" in r.stdout
    assert "ctx 0" not in r.stdout and "x 0 tokens" not in r.stdout
    assert "KV cache (" not in r.stdout  # no --ctx: no KV cache sized
    q = cli("size", "meta-llama/Llama-3-8B", "--bits", "4")
    # 16.06 GB / 5.73 GB = 2.80x (the chapter's figure)
    assert "2.80x smaller" in q.stdout


def test_check_counts_in_words(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(copy_example(tmp_path, "passing-repo"))
    r = cli("check", "--concurrency", "1", "--wide")
    assert r.code in (0, 1), r.stderr
    import re

    assert "1 sequence x" in r.stdout and not re.search(r"(?<![\d,])1 sequences", r.stdout)
    assert "GPU(s)" not in r.stdout


def test_limits_are_one_table():
    # the workload schema takes its bounds from the same table as the flags
    from quantadvise.errors import ConfigError
    from quantadvise.workload import parse_workload

    with pytest.raises(ConfigError, match="less than or equal to 1024"):
        parse_workload({"gpus": LIMITS["gpus"].high + 1})
    assert check("gpus", 8) == 8 and check("memory_utilization", 1) == 1.0
    for field, bad in (("gpus", 0), ("batch", 1.5), ("memory_utilization", 0), ("headroom", 1), ("ctx", float("nan"))):
        with pytest.raises(Exception, match=field.replace("_", "-")):
            check(field, bad)


def test_wording_helpers():
    assert plural(1, "sequence") == "1 sequence" and plural(2, "sequence") == "2 sequences"
    assert plural(1_024, "GPU") == "1,024 GPUs"
    hint = install_hint("plot")
    assert "pip install 'quantadvise[plot]'" in hint and "pip install '.[plot]'" in hint


def test_check_header_and_findings_give_one_number_for_the_tokens_held(cli, tmp_path, monkeypatch):
    # 256 sequences x 8,192 tokens under continuous batching hold prompt + half the output on average:
    # the failing example declares no lengths, so the default 256-token output gives 8,192 - 256/2 = 8,064,
    # and that one number is in the header and in every finding that sizes the workload
    repo = copy_example(tmp_path, "failing-repo")
    # the example as shipped is refused at start-up (QA102 --quantization gptq on an AWQ checkpoint,
    # QA107 two tensor-parallel workers in a one-GPU container), and a refused deployment has no
    # workload verdicts; without those two flags vLLM starts and the declared workload is sized
    dep = repo / "k8s" / "deployment.yaml"
    text = dep.read_text()
    dep.write_text(text.replace("--quantization gptq \\\n", "").replace("--tensor-parallel-size 2 \\\n", ""))
    assert dep.read_text() != text
    monkeypatch.chdir(repo)
    r = cli("check", "--wide")
    assert r.code == 1, r.stderr
    import re

    header = re.search(r"256 sequences x 8,192 tokens, ([\d,]+) held on average", r.stdout)
    assert header and header.group(1) == "8,064", r.stdout
    held = set(re.findall(r"256 (?:sequences )?x ([\d,]+) tokens", r.stdout)) - {"8,192"}
    assert held == {"8,064"}, held


def test_a_typo_of_a_bundled_hub_id_is_suggested_offline(cli, monkeypatch):
    # issue 16: every unknown-name error points to `quantadvise list models` and suggests the closest
    # names; an org/name typo ("Lama") of the bundled meta-llama/Llama-3.1-70B used to get neither
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = cli("size", "meta-llama/Lama-3.1-70B")
    assert r.code == 2 and r.stderr.count("\n") == 1
    assert "did you mean 'meta-llama/Llama-3.1-70B'" in r.stderr and "quantadvise list models" in r.stderr
    # an id nothing bundled resembles gets the pointer and no invented suggestion
    r = cli("size", "someorg/any-model")
    assert r.code == 2 and "did you mean" not in r.stderr and "quantadvise list models" in r.stderr
