"""A value a flag cannot take at all (``-f xml``, ``--gpus abc``, ``--batch abc``) gets one ``Error:`` line
in the project's words, the same in every command, naming the flag; the environment variable is named
only when it gave the value (issue 16, "one input layer"). The expected lines are written out by hand:
the limits are the documented ones (docs/cli.md: --gpus 1..1,024, --batch 1..1,000,000, --ctx
1..10,000,000) and the formats each command's --help lists."""

from __future__ import annotations

import pytest

ENV = " (from the environment variable {})"
# every --format value some command takes, in the order the commands declare them
OTHERS = ("table", "json", "csv", "markdown", "github", "sarif", "junit")
FORMATS = {"recommend": ("table", "json"), "size": ("table", "json"), "roofline": ("table", "json", "csv"),
           "check": ("table", "json", "markdown", "github", "sarif", "junit"), "list": ("table", "json")}
PREFIX = {"list": ("list", "models")}  # commands that need an argument before the option


def one_error(r) -> str:
    assert r.code == 2, (r.code, r.stderr)
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1, r.stderr
    return r.stderr.removeprefix("Error: ").removesuffix("\n")


def format_line(cmd: str, value: str) -> str:
    takes = FORMATS[cmd]
    more = [f for f in OTHERS if f not in takes]
    return (f"--format {value!r} is not an output format (`quantadvise {cmd}` takes {', '.join(takes)}; "
            f"other commands also {', '.join(more)})")


@pytest.fixture
def clean_env(monkeypatch):
    for var in ("QUANTADVISE_FORMAT", "QUANTADVISE_GPUS", "QUANTADVISE_GPU", "QUANTADVISE_MODEL"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


@pytest.mark.parametrize("cmd", sorted(FORMATS))
@pytest.mark.parametrize("spelling", [("-f", "xml"), ("--format", "xml"), ("--format=xml",), ("-fxml",)])
def test_a_bad_format_flag_names_the_flag_not_the_variable(cli, clean_env, cmd, spelling):
    r = cli(*PREFIX.get(cmd, (cmd,)), *spelling)
    assert one_error(r) == format_line(cmd, "xml")


@pytest.mark.parametrize("cmd", sorted(FORMATS))
def test_a_bad_format_from_the_variable_names_the_variable(cli, clean_env, cmd):
    clean_env.setenv("QUANTADVISE_FORMAT", "xml")
    r = cli(*PREFIX.get(cmd, (cmd,)))
    assert one_error(r) == format_line(cmd, "xml") + ENV.format("QUANTADVISE_FORMAT")


def test_the_flag_wins_over_the_variable_and_is_the_one_named(cli, clean_env):
    # a good variable and a bad flag: the flag's value is the one refused, and only the flag is named
    clean_env.setenv("QUANTADVISE_FORMAT", "json")
    assert one_error(cli("recommend", "-f", "xml")) == format_line("recommend", "xml")
    clean_env.setenv("QUANTADVISE_GPUS", "2")
    assert one_error(cli("size", "llama-3-8b", "--gpus", "abc")) == \
        "--gpus must be an integer >= 1 and <= 1,024, got 'abc'"


GPUS = "--gpus must be an integer >= 1 and <= 1,024, got {}"
COMMANDS = {"recommend": ("recommend",), "size": ("size", "llama-3-8b"), "roofline": ("roofline",),
            "check": ("check", "--model", "llama-3-8b", "--gpu", "h100")}


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_gpus_not_a_number_reads_as_gpus_out_of_range(cli, clean_env, cmd):
    argv = COMMANDS[cmd]
    assert one_error(cli(*argv, "--gpus", "abc")) == GPUS.format("'abc'")
    assert one_error(cli(*argv, "--gpus", "0")) == GPUS.format("0")  # the same words for a number out of range
    clean_env.setenv("QUANTADVISE_GPUS", "abc")
    assert one_error(cli(*argv)) == GPUS.format("'abc'") + ENV.format("QUANTADVISE_GPUS")


@pytest.mark.parametrize(("argv", "line"), [
    (("recommend", "--batch", "abc"), "--batch must be an integer >= 1 and <= 1,000,000, got 'abc'"),
    (("recommend", "-b", "abc"), "--batch must be an integer >= 1 and <= 1,000,000, got 'abc'"),
    (("size", "llama-3-8b", "--batch", "abc"), "--batch must be an integer >= 1 and <= 1,000,000, got 'abc'"),
    (("recommend", "--batch", "1.5"), "--batch must be an integer >= 1 and <= 1,000,000, got '1.5'"),
    (("recommend", "--ctx", "lots"), "--ctx must be an integer >= 1 and <= 10,000,000, got 'lots'"),
    (("check", "--model", "llama-3-8b", "--gpu", "h100", "--concurrency", "abc"),
     "--concurrency must be an integer >= 1 and <= 1,000,000, got 'abc'"),
    # a latency budget: any positive number of ms up to 10,000,000
    (("recommend", "--itl-ms", "fast"), "--itl-ms must be a number >= 0.001 and <= 10,000,000, got 'fast'"),
])
def test_a_number_flag_given_a_word(cli, clean_env, argv, line):
    assert one_error(cli(*argv)) == line


def test_a_choice_flag_lists_its_choices(cli, clean_env):
    # check --fail-on takes the two severities that can fail a build
    assert one_error(cli("check", "--fail-on", "bogus")) == "--fail-on must be one of error, warning, got 'bogus'"


def test_an_unknown_option_still_points_to_the_help(cli, clean_env):
    err = one_error(cli("recommend", "--bogus"))
    assert err.startswith("No such option: --bogus") and err.endswith("(see `quantadvise recommend --help`)")


@pytest.mark.parametrize(("argv", "line"), [
    # roofline's --batch takes a list (1,8,64 or 1..512), each within the --batch limit (1..1,000,000)
    (["roofline", "--batch", "1x"],
     "--batch must be an integer >= 1 and <= 1,000,000 (a list: 1,8,64 or 1..512), got '1x'"),
    # roofline's --ctx is the context a decode step reads: 0 is allowed ("no KV read", docs/roofline.md §7)
    (["roofline", "--ctx", "2x"],
     "--ctx must be an integer >= 0 and <= 10,000,000 (a list: 2048 or 512,2k,32k), got '2x'"),
])
def test_roofline_lists_use_the_same_words(cli, clean_env, argv, line) -> None:
    assert one_error(cli(*argv)) == line
