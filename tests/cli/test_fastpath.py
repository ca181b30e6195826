"""A plain ``recommend`` line runs without typer (cli/fastpath.py): its reading must be typer's.

Every line the fast path accepts is also run through typer (``typer_app.invoke``) with the command's body
replaced by one that records what it was given; the two must agree value for value and type for type. Lines
typer refuses or reads otherwise must be declined. The lines are the hand-picked ones below and a seeded
random mix of well-formed and hostile words drawn from the command's own declaration."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from enum import Enum
from typing import Any

import pytest

from quantadvise.cli import recommend_run
from quantadvise.cli.fast_spec import SPEC as SPECS
from quantadvise.cli.fastpath import parse
from quantadvise.cli.typer_app import fast_spec, invoke


def test_the_spec_is_the_typer_declaration():
    # stale after an option of a fast command changed: `python tools/fast_spec.py` rewrites it
    assert fast_spec() == SPECS


def _typer_reading(monkeypatch, words: list[str]) -> tuple[int, dict[str, Any] | None]:
    """(exit code, the options the body got) when typer runs ``recommend`` + ``words``."""
    got: dict[str, Any] = {}
    monkeypatch.setattr(recommend_run, "run_recommend", lambda **o: got.update(o))
    try:
        code = invoke(["recommend", *words], False, {})
    except SystemExit as exc:  # --help and the like end the parse
        code = exc.code if isinstance(exc.code, int) else 0
    return code, (got or None)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(type(a[k]) is type(b[k]) and a[k] == b[k] for k in a)


SPEC = SPECS["recommend"]

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


@pytest.mark.parametrize("words", PLAIN, ids=lambda w: " ".join(w) or "(none)")
def test_plain_lines_read_as_typer_reads_them(monkeypatch, words):
    fast = parse(SPEC, words, {})
    assert fast is not None
    code, typer_got = _typer_reading(monkeypatch, words)
    assert code == 0 and typer_got is not None and _same(fast, typer_got), (fast, typer_got)


DECLINED = [
    ["--help"], ["-h"], ["-b64"], ["--batch", "+5"], ["--batch", "064"], ["--batch", "1e3"], ["--batch", " 5"],
    ["--batch", "1_000"], ["--batch", "٣"], ["--batch", "-5"], ["--batch"], ["--rate", ".5"], ["--rate", "nan"],
    ["--ideal=true"], ["--batch", "8", "--batch", "9"], ["--model", "--gpu"], ["--model", ""], ["--model", "a b"],
    ["--model", "ｍodel"], ["--format", "JSON"], ["--format", "csv"], ["--plot", "f.png"], ["--nope", "1"],
    ["--", "--batch", "8"], ["batch", "8"], ["-b=8"], ["--model", "-m"],
]


@pytest.mark.parametrize("words", DECLINED, ids=lambda w: " ".join(w))
def test_lines_typer_must_read_are_declined(words):
    assert parse(SPEC, words, {}) is None


def test_an_environment_variable_of_the_command_declines():
    # QUANTADVISE_MODEL / _FORMAT ...: typer reads the variable and names it in its errors
    for p in SPEC["params"]:
        for var in p["envvars"]:
            assert parse(SPEC, ["--batch", "8"], {var: "x"}) is None
    assert any(p["envvars"] for p in SPEC["params"])
    assert parse(SPEC, ["--batch", "8"], {"UNRELATED": "1"}) is not None


_WORDS = ["0", "1", "7", "64", "2048", "0.5", "3.25", "10.0", "064", "+5", "-1", "1e3", ".5", "5.", "inf", "nan",
          " 8", "8 ", "1_0", "٣", "０", "", "a b", "x", "h100", "a100-80gb,h100", "Qwen/Qwen3-8B", "./f.yaml",
          "table", "json", "JSON", "sync", "kv-fp8", "w4a16,fp8-dynamic", "=", "a=b", "é", "--", "-", "--batch"]


def _random_line(rng: random.Random) -> list[str]:
    words: list[str] = []
    for p in rng.sample(SPEC["params"], rng.randint(0, 6)):
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


def test_random_lines_the_fast_path_takes_are_read_as_typer_reads_them(monkeypatch):
    rng = random.Random(20261207)
    taken = declined = 0
    for _ in range(400):
        words = _random_line(rng)
        fast = parse(SPEC, words, {})
        code, typer_got = _typer_reading(monkeypatch, words)
        if fast is None:
            declined += 1
            continue
        taken += 1
        assert code == 0 and typer_got is not None and _same(fast, typer_got), (words, fast, typer_got)
    assert taken > 100 and declined > 50  # both kinds of line were drawn


def test_enum_and_defaults_are_the_declarations():
    fast = parse(SPEC, [], {})
    assert fast is not None
    assert isinstance(fast["fmt"], Enum) and fast["fmt"] is recommend_run.RecFormat.table
    assert fast["batch"] is None and fast["ideal"] is False


def test_the_fast_path_never_imports_typer(tmp_path):
    code = (
        "import sys\n"
        "from quantadvise.cli.app import main\n"
        "try:\n"
        "    main(['recommend', '--batch', '8', '--ctx', '512', '--format', 'json'])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        "print(sorted(m for m in ('typer', 'click', 'rich') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    report, tail = out.stdout.rsplit("\n", 2)[0], out.stdout.rsplit("\n", 2)[1]
    assert tail == "[]"
    assert json.loads(report)["workload"]["batch"] == 8  # the report of the line given


def test_an_error_of_the_command_is_the_same_line_either_way(cli, monkeypatch):
    words = ["recommend", "--gpu", "no-such-gpu", "--batch", "8"]
    fast = cli(*words)
    from quantadvise.cli import app

    monkeypatch.setattr(app, "fast_command", lambda args, env: None)
    slow = cli(*words)
    assert fast.code == slow.code == 2
    assert fast.stderr == slow.stderr and fast.stderr.startswith("Error:") and fast.stdout == slow.stdout == ""


def test_an_end_of_input_in_the_body_is_typers_abort(cli, monkeypatch):
    def reads(**_: Any) -> None:
        raise EOFError

    monkeypatch.setattr(recommend_run, "run_recommend", reads)
    fast = cli("recommend", "--batch", "8")
    from quantadvise.cli import app

    monkeypatch.setattr(app, "fast_command", lambda args, env: None)
    slow = cli("recommend", "--batch", "8")
    assert (fast.code, fast.stderr) == (slow.code, slow.stderr) == (1, "\nAborted.\n")
