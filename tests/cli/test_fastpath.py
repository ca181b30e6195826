"""A plain ``recommend`` or ``size`` line runs without typer (cli/fastpath.py): its reading must be typer's.

Every line the fast path accepts is also run through typer (``typer_app.invoke``) with the command's body
replaced by one that records what it was given; the two must agree value for value and type for type, and on
which parameters the line gave. Lines typer refuses or reads otherwise must be declined. The lines are the
hand-picked ones below and a seeded random mix of well-formed and hostile words drawn from each command's own
declaration."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from enum import Enum
from typing import Any

import pytest

from quantadvise.cli import recommend_run, size_run
from quantadvise.cli.fast_spec import SPEC as SPECS
from quantadvise.cli.fastpath import BODIES, parse
from quantadvise.cli.typer_app import fast_spec, invoke


def test_the_spec_is_the_typer_declaration():
    # stale after an option of a fast command changed: `python tools/fast_spec.py` rewrites it
    assert fast_spec() == SPECS


_MODULES = {"recommend": recommend_run, "size": size_run}


def _typer_reading(monkeypatch, command: str, words: list[str]) -> tuple[int, dict[str, Any] | None]:
    """(exit code, what the body got: its options and ``given``) when typer runs ``command`` + ``words``."""
    got: dict[str, Any] = {}
    module, func = BODIES[command][0], BODIES[command][1]
    assert _MODULES[command].__name__.endswith(module)
    monkeypatch.setattr(_MODULES[command], func, lambda **o: got.update(o))
    try:
        code = invoke([command, *words], False, {})
    except SystemExit as exc:  # --help and the like end the parse
        code = exc.code if isinstance(exc.code, int) else 0
    return code, (got or None)


def _fast_reading(command: str, words: list[str], env: dict[str, str] | None = None) -> dict[str, Any] | None:
    parsed = parse(SPECS[command], words, env or {})
    return None if parsed is None else {**parsed[0], "given": parsed[1]}


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(type(a[k]) is type(b[k]) and a[k] == b[k] for k in a)


def test_every_fast_command_has_its_body_and_spec():
    assert set(BODIES) == set(SPECS) == set(_MODULES)




PLAIN = [
    [],
    ["--batch", "64", "--ctx", "2048"],
    ["-b", "8", "--ctx=512", "--gpu", "a100-80gb,h100", "-m", "Qwen/Qwen3-8B", "--format", "json"],
    ["--accuracy-tolerance", "0.5", "--headroom", "0", "--ideal", "--wide", "--explain", "--layouts"],
    ["--engine", "sglang", "--engine-version", "0.5.23", "--kv-dtype", "kv-fp8", "--candidates", "w4a16,fp8-dynamic"],
    ["--rate", "2.25", "--users", "0", "--max-gpus", "16", "--node", "8xh100", "--usd-per-gpu-hour", "3"],
    ["--workload", "./w.yaml", "--profile", "prof/h100.yaml", "-f", "table", "--bench-plan"],
    ["--mode", "sync", "--task", "code", "--spec-tokens", "3", "--acceptance", "0.7", "--ttft-ms", "200"],
]


SIZE_PLAIN = [
    [],
    ["meta-llama/Llama-3-8B", "--bits", "4", "--group", "128"],
    ["--bits", "4", "Qwen/Qwen3-8B", "--asym", "--no-lm-head", "--embedding"],
    ["-m", "Qwen/Qwen3-8B", "--scheme", "awq", "--kv-dtype", "kv-fp8", "--ctx", "8192", "-b", "16"],
    ["x", "--model", "y", "--gpu", "h100", "--gpus=2", "--mtp", "--memory-utilization", "0.9", "--reserve-gb", "2.5"],
    ["--profile", "p.yaml", "-f", "json", "--wide", "--sym", "--lm-head", "-s", "w4a16"],
]


@pytest.mark.parametrize(("command", "words"), [("recommend", w) for w in PLAIN] + [("size", w) for w in SIZE_PLAIN],
                         ids=lambda w: " ".join(w) if isinstance(w, list) else w)
def test_plain_lines_read_as_typer_reads_them(monkeypatch, command, words):
    fast = _fast_reading(command, words)
    assert fast is not None
    code, typer_got = _typer_reading(monkeypatch, command, words)
    assert code == 0 and typer_got is not None and _same(fast, typer_got), (fast, typer_got)


DECLINED = [
    ["--help"], ["-h"], ["-b64"], ["--batch", "+5"], ["--batch", "064"], ["--batch", "1e3"], ["--batch", " 5"],
    ["--batch", "1_000"], ["--batch", "٣"], ["--batch", "-5"], ["--batch"], ["--rate", ".5"], ["--rate", "nan"],
    ["--ideal=true"], ["--batch", "8", "--batch", "9"], ["--model", "--gpu"], ["--model", ""], ["--model", "a b"],
    ["--model", "ｍodel"], ["--format", "JSON"], ["--format", "csv"], ["--plot", "f.png"], ["--nope", "1"],
    ["--", "--batch", "8"], ["batch", "8"], ["-b=8"], ["--model", "-m"],
]


SIZE_DECLINED = [["a", "b"], ["--group", "-1"], ["-1"], ["--sym", "--sym"], ["--sym", "--asym"], ["--sym=1"],
                 ["x", "--", "y"], ["--bits", "4.0"]]


@pytest.mark.parametrize(("command", "words"), [("recommend", w) for w in DECLINED]
                         + [("size", w) for w in SIZE_DECLINED],
                         ids=lambda w: " ".join(w) if isinstance(w, list) else w)
def test_lines_typer_must_read_are_declined(command, words):
    assert _fast_reading(command, words) is None


@pytest.mark.parametrize("command", sorted(SPECS))
def test_an_environment_variable_of_the_command_declines(command):
    # QUANTADVISE_MODEL / _FORMAT ...: typer reads the variable and names it in its errors
    params = SPECS[command]["params"]
    for p in params:
        for var in p["envvars"]:
            assert _fast_reading(command, ["--batch", "8"], {var: "x"}) is None
    assert any(p["envvars"] for p in params)
    assert _fast_reading(command, ["--batch", "8"], {"UNRELATED": "1"}) is not None


_WORDS = ["0", "1", "7", "64", "2048", "0.5", "3.25", "10.0", "064", "+5", "-1", "1e3", ".5", "5.", "inf", "nan",
          " 8", "8 ", "1_0", "٣", "０", "", "a b", "x", "h100", "a100-80gb,h100", "Qwen/Qwen3-8B", "./f.yaml",
          "table", "json", "JSON", "sync", "kv-fp8", "w4a16,fp8-dynamic", "=", "a=b", "é", "--", "-", "--batch"]


def _random_line(rng: random.Random, spec: dict[str, Any]) -> list[str]:
    words: list[str] = []
    for p in rng.sample(spec["params"], rng.randint(0, 6)):
        if p.get("positional"):
            words.insert(rng.randint(0, len(words)) if rng.random() < 0.5 else len(words),
                         rng.choice(["meta-llama/Llama-3-8B", "Qwen/Qwen3-8B", "x"]) if rng.random() < 0.8
                         else rng.choice(_WORDS))
            continue
        opt = rng.choice(p["opts"] + p.get("off", []))
        if p["kind"] == "flag":
            words.append(opt + ("=1" if rng.random() < 0.05 else ""))
            continue
        if p["kind"] == "int":
            good = str(rng.choice([0, 1, rng.randint(2, 10**6)]))
        elif p["kind"] == "float":
            good = rng.choice(["0", "1", f"{rng.randint(0, 999)}.{rng.randint(0, 99)}"])
        elif p["kind"] == "enum":
            good = rng.choice(p["choices"])
        else:
            good = rng.choice(["h100", "meta-llama/Meta-Llama-3-8B", "x.yaml", "a_b.c:d,e+f@g=h-i"])
        value = good if rng.random() < 0.7 else rng.choice(_WORDS)
        if opt.startswith("--") and rng.random() < 0.3:
            words.append(f"{opt}={value}")
        else:
            words += [opt, value]
    if rng.random() < 0.1 and words:  # an option given twice
        words += words[:2]
    return words


@pytest.mark.parametrize("command", sorted(SPECS))
def test_random_lines_the_fast_path_takes_are_read_as_typer_reads_them(monkeypatch, command):
    rng = random.Random(20261207)
    taken = declined = 0
    for _ in range(400):
        words = _random_line(rng, SPECS[command])
        if rng.random() < 0.05:
            words.append(rng.choice(["extra", "--nope"]))  # an extra argument, an unknown option
        fast = _fast_reading(command, words)
        code, typer_got = _typer_reading(monkeypatch, command, words)
        if fast is None:
            declined += 1
            continue
        taken += 1
        assert code == 0 and typer_got is not None and _same(fast, typer_got), (words, fast, typer_got)
    assert taken > 100 and declined > 50  # both kinds of line were drawn


def test_enum_and_defaults_are_the_declarations():
    fast = _fast_reading("recommend", [])
    assert fast is not None and fast["given"] == frozenset()
    assert isinstance(fast["fmt"], Enum) and fast["fmt"] is recommend_run.RecFormat.table
    assert fast["batch"] is None and fast["ideal"] is False


@pytest.mark.parametrize(("words", "key", "expected"), [
    (["recommend", "--batch", "8", "--ctx", "512", "--format", "json"], "workload", {"batch": 8}),
    (["size", "meta-llama/Meta-Llama-3-8B", "--bits", "4", "--group", "128", "-f", "json"], "model",
     {"id": "meta-llama/Meta-Llama-3-8B"}),
])
def test_the_fast_path_never_imports_typer(tmp_path, words, key, expected):
    code = (
        "import sys\n"
        "from quantadvise.cli.app import main\n"
        "try:\n"
        f"    main({words!r})\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        "print(sorted(m for m in ('typer', 'click', 'rich') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    report, tail = out.stdout.rsplit("\n", 2)[0], out.stdout.rsplit("\n", 2)[1]
    assert tail == "[]"
    doc = json.loads(report)[key]
    assert {k: doc[k] for k in expected} == expected  # the report of the line given


def test_an_error_of_the_command_is_the_same_line_either_way(cli, monkeypatch):
    words = ["recommend", "--gpu", "no-such-gpu", "--batch", "8"]
    fast = cli(*words)
    from quantadvise.cli import app

    monkeypatch.setattr(app, "fast_command", lambda args, env: None)
    slow = cli(*words)
    assert fast.code == slow.code == 2
    assert fast.stderr == slow.stderr and fast.stderr.startswith("Error:") and fast.stdout == slow.stdout == ""


def test_the_size_argument_typed_and_the_model_option_disagree_either_way(cli, monkeypatch):
    # the MODEL argument typed (not its default) and --model naming another: one error, both paths
    words = ["size", "meta-llama/Llama-3-8B", "--model", "Qwen/Qwen3-8B"]
    fast = cli(*words)
    from quantadvise.cli import app

    monkeypatch.setattr(app, "fast_command", lambda args, env: None)
    slow = cli(*words)
    assert fast.code == slow.code == 2 and fast.stderr == slow.stderr
    assert "two models given" in fast.stderr
    # the argument left at its default: --model alone names the model
    assert cli("size", "--model", "Qwen/Qwen3-8B", "-f", "json").json()["model"]["id"] == "Qwen/Qwen3-8B"


def test_an_end_of_input_in_the_body_is_typers_abort(cli, monkeypatch):
    def reads(**_: Any) -> None:
        raise EOFError

    monkeypatch.setattr(recommend_run, "run_recommend", reads)
    fast = cli("recommend", "--batch", "8")
    from quantadvise.cli import app

    monkeypatch.setattr(app, "fast_command", lambda args, env: None)
    slow = cli("recommend", "--batch", "8")
    assert (fast.code, fast.stderr) == (slow.code, slow.stderr) == (1, "\nAborted.\n")
