"""How a command's process ends (``cli/app.py`` ``run``: the console script and ``python -m quantadvise``):
its output flushed whole, the exit code the command chose, then no interpreter teardown."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from quantadvise.cli.app import _exit_status

SRC = Path(__file__).resolve().parents[2] / "src" / "quantadvise"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


@pytest.mark.parametrize(("code", "status", "said"), [
    (None, 0, ""),      # sys.exit() / SystemExit(None): success, as Python reports it
    (0, 0, ""),
    (2, 2, ""),
    (257, 1, ""),       # the operating system keeps the low byte: 257 = 256 + 1
    ("boom", 1, "boom\n"),  # a message: printed on stderr, status 1 (Python's own rule)
])
def test_exit_status_is_pythons(code, status, said, capsys):
    assert _exit_status(code) == status
    assert capsys.readouterr().err == said


def test_a_report_larger_than_a_pipe_arrives_whole():
    # the process ends without Python's teardown, so the flush is ours: a report over the 64 KiB a Linux pipe
    # buffers must still arrive whole. `engines` lists every release's methods and KV dtypes (several 100 KB).
    res = subprocess.run([sys.executable, "-m", "quantadvise", "engines", "--format", "json"], capture_output=True,
                         timeout=120, env=ENV)
    assert res.returncode == 0, res.stderr[-800:]
    assert len(res.stdout) > 65536
    assert json.loads(res.stdout)  # whole: the last closing bracket arrived


def test_bad_input_still_exits_2_with_one_error_line():
    res = subprocess.run([sys.executable, "-m", "quantadvise", "size", "meta-llama/Llama-3-8B", "--bits", "0"],
                         capture_output=True, timeout=120, env=ENV)
    assert res.returncode == 2
    lines = res.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and "--bits" in lines[0]


def test_a_reader_gone_before_the_flush_ends_1_without_a_traceback(tmp_path):
    # `| true` exits at once; the report is written (buffered) and flushed after it left: the flush meets a broken
    # pipe. As a write inside the command does (cli/app.py), that is exit 1 and nothing on stderr — not Python's
    # "Exception ignored ... BrokenPipeError" and status 120 at teardown.
    line = (f"{sys.executable} -m quantadvise size meta-llama/Llama-3-8B --bits 4 --group 128 | true; "
            "echo rc=${PIPESTATUS[0]}")
    res = subprocess.run(["bash", "-c", line], capture_output=True, timeout=120, env=ENV, cwd=tmp_path)
    assert res.stdout.decode().strip() == "rc=1", res.stderr[-800:]
    assert b"Traceback" not in res.stderr and b"Exception ignored" not in res.stderr


def test_modules_with_pydantic_models_keep_annotations_evaluated():
    """A pydantic model's field annotations given as strings (``from __future__ import annotations``) are
    compiled and evaluated one by one when its class is built: about 0.5 ms a class on CPython 3.11, some
    80 ms of `recommend`'s start-up over its ~160 classes. Modules that define models keep annotations
    evaluated (names defined later or only for type checkers are quoted one by one)."""
    import importlib
    import pkgutil

    import pydantic

    import quantadvise

    for m in pkgutil.walk_packages(quantadvise.__path__, "quantadvise."):
        if not m.name.endswith("__main__"):
            importlib.import_module(m.name)
    from quantadvise.results import Out

    seen: set[type] = set()
    todo = [pydantic.BaseModel, Out]  # a result piece reads its annotations on first use (results/light.py)
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    modules = {c.__module__ for c in seen if c.__module__.startswith("quantadvise.")}
    assert len(modules) > 40  # the walk found the models (52 modules at this writing)
    stringy = []
    for name in sorted(modules):
        path = SRC.joinpath(*name.split(".")[1:]).with_suffix(".py")
        if not path.exists():  # a package's __init__
            path = SRC.joinpath(*name.split(".")[1:], "__init__.py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
               and any(a.name == "annotations" for a in n.names) for n in tree.body):
            stringy.append(name)
    assert not stringy, f"string annotations in modules with pydantic models: {stringy}"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [["--version"], ["list", "schemes"], ["size", "meta-llama/Llama-3-8B", "--bits", "4"]])
def test_a_full_disk_under_the_output_is_one_error_line_exit_2(args):
    # `> /dev/full`: every write fails with ENOSPC — at the first write (--version wrote outside the error
    # mapping: a traceback) or at the final flush (a short report stays buffered: it ended 0, the report lost)
    with open("/dev/full", "w") as full:
        res = subprocess.run([sys.executable, "-m", "quantadvise", *args], stdout=full, stderr=subprocess.PIPE,
                             timeout=120, env=ENV)
    err = res.stderr.decode().strip().splitlines()
    assert res.returncode == 2, err
    assert err == ["Error: cannot write the output: No space left on device (free space there, or write it "
                   "elsewhere)"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize(("args", "status"), [(["size", "--bits", "99"], 2), (["size", "no/such-model-xyz"], 2),
                                              (["size", "meta-llama/Llama-3-8B", "--bits", "4"], 0)])
def test_a_stderr_that_cannot_be_written_keeps_the_exit_status(args, status):
    # `2> /dev/full`: the Error line cannot be written (ENOSPC); bad input still ends 2, not 1 (the failed
    # write escaped as an OSError), and a good run 0
    with open("/dev/full", "w") as full:
        res = subprocess.run([sys.executable, "-m", "quantadvise", *args], stdout=subprocess.DEVNULL, stderr=full,
                             timeout=120, env=ENV)
    assert res.returncode == status
