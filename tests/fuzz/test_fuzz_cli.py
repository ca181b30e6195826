"""Fuzzing the command line: numbers, names, environment defaults and whole argument lists.

Every flag below is checked against the command's --help (a flag that disappears fails the test, so
the tables cannot rot); ``calibrate`` and ``validate`` are left out: they measure the GPU for as long
as they are told to (their flags' validation is covered by their own tests).
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import run_cli
from tests.fuzz.harness import budget, run_checked

# numeric options, per command (the values below are thrown at each)
NUMERIC = {
    "size": ["--bits", "--group", "--ctx", "--batch", "--gpus", "--memory-utilization", "--reserve-gb"],
    "recommend": ["--batch", "--ctx", "--prompt", "--output", "--accuracy-tolerance", "--gpus", "--headroom",
                  "--memory-utilization", "--reserve-gb"],
    "roofline": ["--gpus", "--batch", "--ctx", "--prompt", "--group"],
    "check": ["--gpus", "--concurrency", "--ctx"],
}
# name options: a GPU, a model, a scheme ... (strings of any shape)
NAMES = {
    "size": ["--scheme", "--kv-dtype", "--gpu", "MODEL"],
    "recommend": ["--model", "--gpu", "--engine", "--engine-version", "--kv-dtype", "--mode", "--task", "--candidates"],
    "roofline": ["--model", "--gpu", "--scheme", "--kv-dtype", "--batch", "--ctx"],
    "inspect": ["--engine", "--gpu", "--quantization", "--kv-cache-dtype", "MODEL"],
    "engines show": ["--engine", "--version"],
    "engines diff": ["--engine", "--version", "--other"],
    "check": ["--model", "--gpu", "--engine", "--engine-version", "--quantization", "--kv-cache-dtype", "--task"],
}
# QUANTADVISE_<FLAG> environment defaults the CLI reads
ENV = ["QUANTADVISE_MODEL", "QUANTADVISE_GPU", "QUANTADVISE_GPUS", "QUANTADVISE_ENGINE", "QUANTADVISE_FORMAT",
       "QUANTADVISE_KV_DTYPE", "QUANTADVISE_CONFIG"]
# what each command needs besides the fuzzed flag to get past "missing argument"
BASE = {"size": [], "recommend": [], "roofline": [], "inspect": ["meta-llama/Llama-3.1-8B"], "engines show": [],
        "engines diff": [], "check": ["--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100"]}

NASTY_NUMBERS = ["inf", "-inf", "+inf", "nan", "NaN", "-nan", "1e309", "-1e309", "1e-400", "-1", "0", "-0", "0.0",
                 "1e9", "1e18", "99999999999999999999999", "-99999999999", "2147483648", "4294967296", "0.0000001",
                 "1.5", "0.5", "1", "2", "3", "abc", "", " ", "0x10", "1_000", " 5", "5 ", "1e3", "١٢", "∞", "5%",
                 "50%", "-5%", "1/2", "None", "true", "[1]", "1,2", "--", "-", "8k", "4K", "1.0.0"]


@functools.cache
def help_text(command: str) -> str:
    r = run_cli(*command.split(), "--help")
    assert r.code == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("command", sorted(set(NUMERIC) | set(NAMES)))
def test_the_fuzzed_flags_exist(command):
    flags = [f for f in NUMERIC.get(command, []) + NAMES.get(command, []) if f.startswith("-")]
    missing = [f for f in flags if f not in help_text(command)]
    assert not missing, f"{command} has no {missing} any more: update tests/fuzz"


def _args(command: str, flag: str, value: str) -> list[str]:
    base = [*command.split(), *BASE[command]]
    if flag == "MODEL":  # the positional argument
        return [*command.split(), value] + (["--gpu", "h100"] if command == "size" else [])
    if flag == "--model" and command == "check":
        return [*command.split(), "--gpu", "h100", "--model", value]
    return [*base, flag, value] + (["--format", "json"] if command != "check" else ["--format", "json"])


numbers = st.one_of(
    st.sampled_from(NASTY_NUMBERS),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(min_value=-1e6, max_value=1e6).map(lambda x: f"{x:.6g}"),
)


@budget(450)
@given(data=st.data())
def test_numeric_flags(data):
    command = data.draw(st.sampled_from(sorted(NUMERIC)), label="command")
    flag = data.draw(st.sampled_from(NUMERIC[command]), label="flag")
    value = data.draw(numbers, label="value")
    run_checked(*_args(command, flag, value), kind=f"cli numbers: {command}")


names = st.one_of(
    st.sampled_from(["", " ", "h100", "H100-SXM-80GB", "a100", "l4", "bf16", "w4a16", "fp8", "auto", "vllm", "sglang",
                     "0.33.0", "v0.33.0", "99.99.99", "latest", "meta-llama/Llama-3.1-8B", "org/name", "../../etc/passwd",
                     "/dev/null", "/dev/zero", "/", ".", "~", "con", "a" * 5000, "x/" * 300, "-h", "--help", "é", "🙂",
                     "\x00", "\n", "a\nb", "a\tb", "%s%s%n", "{0}", "${HOME}", "$(id)", "`id`", "*", "?", "[", "\\",
                     "kv-fp8", "fp8_e5m2", "nvfp4", "w4a16-g128", "reasoning", "sync", "continuous", "general,code"]),
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=100, max_size=6000),
)


@budget(500)
@given(data=st.data())
def test_name_flags(data):
    command = data.draw(st.sampled_from(sorted(NAMES)), label="command")
    flag = data.draw(st.sampled_from(NAMES[command]), label="flag")
    value = data.draw(names, label="value")
    if "\x00" in value:  # an argv cannot hold NUL; the OS refuses it before quantadvise runs
        value = value.replace("\x00", "")
    run_checked(*_args(command, flag, value), kind=f"cli names: {command}")


@budget(300)
@given(data=st.data())
def test_environment_defaults(data):
    env = {k: data.draw(st.one_of(names, numbers), label=k).replace("\x00", "")
           for k in data.draw(st.lists(st.sampled_from(ENV), min_size=1, max_size=3, unique=True), label="vars")}
    command = data.draw(st.sampled_from(["size", "recommend", "roofline", "check"]), label="command")
    args = [command] + (["--gpu", "h100"] if command == "check" and "QUANTADVISE_GPU" not in env else [])
    run_checked(*args, kind="cli environment", env=env)


TOKENS = sorted({f for fs in NUMERIC.values() for f in fs} | {f for fs in NAMES.values() for f in fs if f != "MODEL"}
                | {"--format", "json", "table", "--explain", "--ideal", "--mtp", "--sym", "--asym", "-b", "-m", "-s",
                   "--fail-on", "warning", "--exit-zero", "--init", "--force", "--", "-", "--no-such-flag"})


@budget(450)
@given(data=st.data())
def test_argument_lists(data):
    command = data.draw(st.sampled_from(["size", "recommend", "roofline", "inspect", "check", "engines diff"]),
                        label="command")
    argv = data.draw(st.lists(st.one_of(st.sampled_from(TOKENS), numbers, names.filter(lambda s: "\x00" not in s)),
                              max_size=8), label="argv")
    if command == "check" and "--init" in argv:
        argv = [a for a in argv if a not in ("--init", "--force")]  # --init writes a file; covered in test_check_cli
    run_checked(*command.split(), *argv, kind=f"cli argv: {command}")
