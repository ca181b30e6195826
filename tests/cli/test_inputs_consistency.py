"""The same input, the same check, the same message (issue 16, "Validation differs between commands"):
for every input several commands take — an engine, an engine release, a GPU, a GPU count, a KV dtype,
a batch, a context, a prompt or output length, a serving target — each command that takes it refuses a
bad value with exit 2 and one identical ``Error:`` line, naming the environment variable when the value
came from one. The expected lines are written out here from the rules (the limits in docs/cli.md, the
engines in data/engines/), not captured from a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_check_cli import copy_example

ENGINE_HINT = "(engines on file: sglang, vllm; `quantadvise list engines` lists their releases)"
FROM_ENV = " (from the environment variable {})"
# every vLLM release on file, oldest first (the file names of data/engines/)
VLLM_RELEASES = ", ".join(sorted((p.stem.removeprefix("vllm-") for p in (Path(__file__).resolve().parents[2] / "data" /
                                                                         "engines").glob("vllm-*.yaml")),
                                key=lambda v: tuple(int(x) for x in v.split(".")[:3])))


@pytest.fixture(autouse=True)
def _in_a_deployment_repo(tmp_path, monkeypatch):
    # `check` needs something to check before it gets to most of its inputs; the other commands do not
    # read the folder they run in
    monkeypatch.chdir(copy_example(tmp_path, "passing-repo"))


# name -> (environment, the commands with their arguments, the one error line every one of them prints)
CASES: dict[str, tuple[dict[str, str], list[tuple[str, ...]], str]] = {
    "engine-env": (
        {"QUANTADVISE_ENGINE": "trt"},
        [("recommend",), ("roofline",), ("check",), ("size",), ("engines",), ("engines", "show", "awq"),
         ("engines", "diff")],
        f"unknown engine 'trt' {ENGINE_HINT}" + FROM_ENV.format("QUANTADVISE_ENGINE"),
    ),
    "engine-typo": (
        {},
        [("recommend", "--engine", "vlm"), ("roofline", "--engine", "vlm"), ("check", "--engine", "vlm"),
         ("engines", "--engine", "vlm"), ("engines", "list", "vlm"), ("engines", "diff", "vlm", "sglang"),
         ("engines", "diff", "vllm", "vlm"), ("engines", "diff", "--other", "vlm"),
         ("engines", "diff", "vlm@0.30.0", "vllm@0.33.0"), ("check", "--upgrade-to", "vlm@0.33.0")],
        f"unknown engine 'vlm'; did you mean 'vllm'? {ENGINE_HINT}",
    ),
    "engine-unknown": (
        {},
        [("recommend", "--engine", "xyz"), ("roofline", "--engine", "xyz"), ("check", "--engine", "xyz"),
         ("engines", "--engine", "xyz"), ("engines", "list", "xyz")],
        f"unknown engine 'xyz' {ENGINE_HINT}",
    ),
    # a version not on file is judged as the closest on file (with a warning); a spelling that names no release
    # at all is refused, by every command alike
    "engine-version": (
        {},
        [("recommend", "--engine-version", "nope"), ("roofline", "--engine-version", "nope"),
         ("check", "--engine-version", "nope"), ("engines", "--version", "nope"),
         ("check", "--upgrade-to", "vllm@nope")],
        f"'nope' is not a vLLM release (a version such as {VLLM_RELEASES.rsplit(', ', 1)[-1]}, or nightly) "
        f"(vLLM releases on file: {VLLM_RELEASES})",
    ),
    "gpu-env": (
        {"QUANTADVISE_GPU": "xyz"},
        [("recommend",), ("size",), ("roofline",), ("check",)],
        "unknown GPU 'xyz' (`quantadvise list gpus` lists them)" + FROM_ENV.format("QUANTADVISE_GPU"),
    ),
    "gpus-flag": (
        {},
        [("recommend", "--gpus", "0"), ("size", "--gpus", "0"), ("roofline", "--gpus", "0"), ("check", "--gpus", "0")],
        "--gpus must be an integer >= 1 and <= 1,024, got 0",
    ),
    "gpus-env": (
        {"QUANTADVISE_GPUS": "2000"},
        [("recommend",), ("size",), ("roofline",), ("check",)],
        "--gpus must be an integer >= 1 and <= 1,024, got 2000" + FROM_ENV.format("QUANTADVISE_GPUS"),
    ),
    "kv-env": (
        {"QUANTADVISE_KV_DTYPE": "xyz"},
        [("recommend",), ("size",), ("roofline",)],
        "unknown KV cache dtype 'xyz' (`quantadvise list kv` lists them: kv-bf16, kv-fp8, kv-fp8-e5m2, kv-fp8-head, "
        "kv-fp8-token-head, kv-int8-token-head, kv-int4-token-head, kv-nvfp4)" + FROM_ENV.format("QUANTADVISE_KV_DTYPE"),
    ),
    "batch-zero": (
        {},
        # roofline takes a list or a range of batches: each one is a batch, checked alike
        [("recommend", "--batch", "0"), ("size", "--batch", "0"), ("roofline", "--batch", "0"),
         ("roofline", "--batch", "0,8"), ("roofline", "--batch", "0..8")],
        "--batch must be an integer >= 1 and <= 1,000,000, got 0",
    ),
    "batch-negative": (
        {},
        [("recommend", "--batch", "-1"), ("size", "--batch", "-1"), ("roofline", "--batch", "-1")],
        "--batch must be an integer >= 1 and <= 1,000,000, got -1",
    ),
    "batch-too-large": (
        {},
        [("recommend", "--batch", "2000000"), ("size", "--batch", "2000000"), ("roofline", "--batch", "2000000"),
         ("roofline", "--batch", "1..2000000")],
        "--batch must be an integer >= 1 and <= 1,000,000, got 2000000",
    ),
    "ctx-zero": (
        {},
        [("recommend", "--ctx", "0"), ("size", "--ctx", "0"), ("check", "--ctx", "0")],
        "--ctx must be an integer >= 1 and <= 10,000,000, got 0",
    ),
    "ctx-negative": (
        {},
        [("recommend", "--ctx", "-5"), ("size", "--ctx", "-5"), ("check", "--ctx", "-5")],
        "--ctx must be an integer >= 1 and <= 10,000,000, got -5",
    ),
    "prompt-negative": (
        {},
        [("recommend", "--prompt", "-1"), ("roofline", "--prompt", "-1")],
        "--prompt must be an integer >= 0 and <= 10,000,000, got -1",
    ),
    "prompt-too-long": (
        {},
        [("recommend", "--prompt", "20000000"), ("roofline", "--prompt", "20000000")],
        "--prompt must be an integer >= 0 and <= 10,000,000, got 20000000",
    ),
    "output-zero": (
        {},
        [("recommend", "--output", "0"), ("roofline", "--pareto", "--output", "0")],
        "--output must be an integer >= 1 and <= 10,000,000, got 0",
    ),
    "usd-env": (
        {"QUANTADVISE_USD_PER_GPU_HOUR": "-1"},
        [("recommend",), ("roofline", "--pareto")],
        "--usd-per-gpu-hour must be a number >= 0.000001 and <= 10,000, got -1.0"
        + FROM_ENV.format("QUANTADVISE_USD_PER_GPU_HOUR"),
    ),
    "spec-alone": (
        {},
        [("recommend", "--spec-tokens", "3"), ("roofline", "--spec-tokens", "3")],
        "--spec-tokens K and --acceptance A go together (K tokens drafted per step, A the mean fraction of them "
        "accepted) (e.g. --spec-tokens 3 --acceptance 0.7)",
    ),
    "memory-utilization": (
        {},
        [("recommend", "--memory-utilization", "0"), ("size", "--memory-utilization", "0")],
        "--memory-utilization must be a number >= 0.01 and <= 1, got 0.0",
    ),
}

PAIRS = [(name, cmd) for name, (_, cmds, _) in CASES.items() for cmd in cmds]


@pytest.mark.parametrize("name, cmd", PAIRS, ids=[f"{n}:{' '.join(c)}" for n, c in PAIRS])
def test_every_command_refuses_a_shared_input_with_the_same_line(cli, monkeypatch, name, cmd):
    env, _, message = CASES[name]
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    r = cli(*cmd)
    assert r.code == 2, (r.code, r.stderr)
    assert r.stdout == ""
    assert r.stderr == f"Error: {message}\n"


@pytest.mark.parametrize("cmd", [("engines", "list", "xyz"), ("engines", "diff", "--other", "xyz"),
                                 ("engines", "diff", "vllm", "xyz"), ("check", "--upgrade-to", "xyz@1.0")],
                         ids=lambda c: " ".join(c))
def test_an_engine_given_elsewhere_never_blames_the_variable(cli, monkeypatch, cmd):
    # QUANTADVISE_ENGINE is a good default here; the bad name came from an argument or another option
    monkeypatch.setenv("QUANTADVISE_ENGINE", "sglang")
    r = cli(*cmd)
    assert r.code == 2 and r.stderr == f"Error: unknown engine 'xyz' {ENGINE_HINT}\n"


def test_a_flag_wins_over_a_bad_variable(cli, monkeypatch):
    # the variable is only a default: a command line that names the engine never reads it
    monkeypatch.setenv("QUANTADVISE_ENGINE", "trt")
    for cmd in (("engines", "--engine", "sglang"), ("engines", "list", "sglang"), ("engines", "diff", "vllm", "sglang")):
        r = cli(*cmd)
        assert r.code == 0, (cmd, r.stderr)


def test_engines_list_takes_the_engine_as_an_argument(cli):
    by_arg = cli("engines", "list", "sglang", "-f", "json")
    by_flag = cli("engines", "--engine", "sglang", "-f", "json")
    assert by_arg.code == 0 and by_arg.json() == by_flag.json()
    assert by_arg.json() != cli("engines", "list", "-f", "json").json()  # not vLLM's list
    # an alias and a release, as --engine takes them
    assert cli("engines", "list", "sgl", "-f", "json").json() == by_flag.json()
    old = cli("engines", "list", "sglang@0.5.20", "-f", "json")
    assert old.code == 0 and old.json() == cli("engines", "--engine", "sglang", "--version", "0.5.20", "-f",
                                               "json").json()
    # the same engine twice is fine; two different ones is a contradiction, not a silent choice
    assert cli("engines", "list", "sglang", "--engine", "sglang").code == 0
    r = cli("engines", "list", "sglang", "--engine", "vllm")
    assert r.code == 2 and r.stderr.count("\n") == 1 and "give the engine once" in r.stderr


def test_size_reads_the_engine_variable_it_cannot_follow_aloud(cli, monkeypatch):
    # size takes the newest vLLM's share of each GPU whatever the engine: a good QUANTADVISE_ENGINE other
    # than vllm is said (only where the share is used: with --gpu, without --memory-utilization)
    monkeypatch.setenv("QUANTADVISE_ENGINE", "sglang")
    r = cli("size", "--gpu", "h100")
    assert r.code == 0 and "QUANTADVISE_ENGINE=sglang" in r.stderr and "--memory-utilization" in r.stderr
    for args in (("size",), ("size", "--gpu", "h100", "--memory-utilization", "0.8")):
        r = cli(*args)
        assert r.code == 0 and "QUANTADVISE_ENGINE" not in r.stderr, args
    monkeypatch.setenv("QUANTADVISE_ENGINE", "vllm")
    r = cli("size", "--gpu", "h100")
    assert r.code == 0 and "QUANTADVISE_ENGINE" not in r.stderr


# ---------------------------------------------------------------------------------------------
# roofline's --ctx is the context a decode step reads: 0 (no KV read) is its documented chapter case
# (docs/roofline.md §7), the upper limit is the same; the prompt must fit in it
# ---------------------------------------------------------------------------------------------


def test_roofline_ctx_has_the_ctx_upper_limit_and_keeps_zero(cli):
    for bad, got in (("20000000", "20000000"), ("512,20000000", "20000000"), ("-5", "-5")):
        r = cli("roofline", "--ctx", bad)
        assert r.code == 2 and r.stderr == f"Error: --ctx must be an integer >= 0 and <= 10,000,000, got {got}\n"
    # the same upper limit and the same words as recommend's --ctx
    assert cli("recommend", "--ctx", "20000000").stderr == \
        "Error: --ctx must be an integer >= 1 and <= 10,000,000, got 20000000\n"
    r = cli("roofline", "--ctx", "0", "--batch", "1", "--scheme", "bf16", "-f", "json")
    assert r.code == 0, r.stderr
    assert [p["ctx"] for p in r.json()["points"]] == [0]


@pytest.mark.parametrize("args, longest", [
    (("--prompt", "5000", "--ctx", "100"), "--ctx 100"),
    (("--prompt", "1000", "--ctx", "512,2k"), "--ctx 512"),  # every context must hold the prompt
    (("--prompt", "2049"), "--ctx 2,048"),  # the default context, 2048
    (("--pareto", "--prompt", "1200", "--output", "100", "--ctx", "1100"), "--ctx 1,100"),
])
def test_roofline_refuses_a_prompt_longer_than_the_context(cli, args, longest):
    r = cli("roofline", *args)
    assert r.code == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("Error: the prompt (") and f"is longer than {longest}" in r.stderr


def test_roofline_takes_a_prompt_that_fits(cli):
    # the first decode step after a 2,048-token prompt reads 2,048 tokens; under --pareto the decode
    # context is prompt + output/2 (1000 + 200/2 = 1100), shorter than prompt + output
    for args in (("--prompt", "2048"), ("--prompt", "0"),
                 ("--pareto", "--prompt", "1000", "--output", "200", "--ctx", "1100")):
        r = cli("roofline", "--batch", "1", "--scheme", "bf16", "-f", "json", *args)
        assert r.code == 0, (args, r.stderr)
    # an empty prompt, which recommend takes too, is no prefill to price
    assert cli("recommend", "--prompt", "0", "-f", "json").code == 0


def test_the_range_and_list_parsers_use_the_one_batch_check():
    from quantadvise.errors import InputError
    from quantadvise.perf.inputs import parse_batches, parse_contexts

    with pytest.raises(InputError, match=r"^--batches must be an integer >= 1 and <= 1,000,000, got 0$"):
        parse_batches("0..64", field="batches")  # calibrate's flag, the batch limit
    with pytest.raises(InputError, match=r"must go upwards"):
        parse_batches("8..2")
    assert parse_contexts("0,2k") == (0, 2048)  # the API keeps 0: no KV cache read


def test_the_engine_check_is_one_function():
    from quantadvise.errors import UnknownNameError
    from quantadvise.inputs import engine

    assert engine("SGL") == "sglang" and engine(" vllm ") == "vllm" and engine(None) is None
    with pytest.raises(UnknownNameError) as exc:
        engine("vlm", "other")
    assert exc.value.field == "other" and exc.value.suggestions == ["vllm"]


def test_docs_name_the_ctx_zero_case():
    # the one place roofline's --ctx differs from the workload's: written down, not an accident
    doc = (Path(__file__).resolve().parents[2] / "docs" / "roofline.md").read_text()
    assert "0 = no KV read" in doc
