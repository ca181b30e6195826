"""Every example in README.md and docs/*.md runs from a fresh clone as written (issue 29).

What counts as an example: each command line of a fenced code block — a ``$ ...`` line of a console
block, or a line that starts with ``quantadvise``, ``python`` or ``pip`` in a plain or bash block, with
its ``\\`` continuations — each ``Example:`` paragraph of docs/cli.md (the commands' ``--help``), and
each ```python block; in README.md, docs/*.md and examples/*/README.md. Output lines in the blocks are
not commands.

How they run: a document's examples in order, in a scratch folder holding a copy of the shipped
``examples/`` and of ``tests/fixtures/`` (the example files in each format, e.g. ``tests/fixtures/bench``;
without the engines' quoted source, which no example reads) — so paths are the clone's, and a file one
command writes is there for the next, as in a reader's shell — each line from that folder; ``quantadvise ...`` in-process through the real entry
point (``tests.conftest.run_cli``), a Python block with ``exec``. ``cd DIR && ...`` runs the rest of the
line in DIR and ``NAME=value`` before a command sets the variable for it. A command exits 0 unless its
comment says ``exit 1`` (a gate with findings); never 2 (an error) and never a traceback.

What does not run: a line marked ``# template: <why>`` — a pattern to adapt (a synopsis, your own
paths) or a step that needs what a test may not use (a CUDA GPU, the network) — and the install steps
of the README (a virtual environment, ``pip install``: ``.ci/run`` runs them on a clean clone, and
tests/test_ci.py holds it to the README's line). Anything else that is not a ``quantadvise`` command
fails here until it is marked.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "examples").glob("*/README.md"))]
TEMPLATE = "template:"
# the README's install steps: .ci/run runs them on a clean clone (tests/test_ci.py)
INSTALL = {"python3 -m venv .venv", ". .venv/bin/activate", "pip install .", 'pip install -e ".[test]"',
           "python -m pytest -q -n auto"}
SHELL_LANGS = {"", "console", "bash", "sh", "shell"}
COMMAND_START = re.compile(r"^(quantadvise|python3?|pip|cd|[A-Z_]+=\S*\s+quantadvise)\b")


@dataclass(frozen=True)
class Example:
    where: str  # file:line
    kind: str  # "shell" or "python"
    text: str  # the command (continuations joined) or the Python block
    comment: str  # the shell comment after the command ("" for none)

    @property
    def template(self) -> bool:
        return TEMPLATE in self.comment or self.text.lstrip().startswith(f"# {TEMPLATE}")

    @property
    def expected_exit(self) -> int:
        m = re.search(r"\bexit (\d)\b", self.comment)
        return int(m.group(1)) if m else 0


def split_comment(line: str) -> tuple[str, str]:
    """A shell line and its trailing ``# comment`` (a ``#`` outside quotes, after a space)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def examples(path: Path) -> list[Example]:
    """The examples of one Markdown file, in order."""
    rel = path.relative_to(REPO).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Example] = []
    lang: str | None = None
    start = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^\s*```(\w*)", line)
        if fence:
            if lang is None:
                lang, start = fence.group(1), i + 1
            else:
                if lang == "python":
                    out.append(Example(f"{rel}:{start + 1}", "python", "\n".join(lines[start:i]), ""))
                lang = None
            i += 1
            continue
        if rel == "docs/cli.md" and lang is not None and (m := re.match(r"^\s+Example: (quantadvise .+)$", line)):
            where, text = i + 1, m.group(1)
            while i + 1 < len(lines) and lines[i + 1].strip():  # --help wraps a long example: its paragraph
                i += 1
                text += " " + lines[i].strip()
            out.append(Example(f"{rel}:{where}", "shell", *split_comment(text)))
        elif rel != "docs/cli.md" and lang in SHELL_LANGS:
            text = line.strip()
            prompt = text.startswith("$ ")
            text = text.removeprefix("$ ")
            if prompt or COMMAND_START.match(text):
                where = i + 1
                while text.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    text = text[:-1].rstrip() + " " + lines[i].strip()
                command, comment = split_comment(text)
                out.append(Example(f"{rel}:{where}", "shell", command, comment))
        i += 1
    return out


ALL = [e for doc in DOCS for e in examples(doc)]


# what of tests/fixtures the scratch clone leaves out: the engines' quoted source (megabytes no example reads)
FIXTURES_LEFT_OUT = shutil.ignore_patterns("engine_quotes", "flag_quotes", "kernel_quotes")


def lay_out(root: Path) -> None:
    """A scratch folder laid out like the clone's root: copies of the shipped examples/ and tests/fixtures/."""
    shutil.copytree(REPO / "examples", root / "examples")
    shutil.copytree(REPO / "tests" / "fixtures", root / "tests" / "fixtures", ignore=FIXTURES_LEFT_OUT)


@pytest.fixture
def clone(tmp_path, monkeypatch):
    """A scratch folder laid out like the clone's root (:func:`lay_out`), the working directory."""
    lay_out(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run_shell(example: Example, root: Path) -> None:
    cwd = root
    for part in (p.strip() for p in example.text.split("&&")):
        if part in INSTALL:
            continue
        words = shlex.split(part)
        if words[0] == "cd":
            cwd = (cwd / words[1]).resolve()
            assert cwd.is_dir(), f"{example.where}: no folder {words[1]} in a fresh clone"
            continue
        env = {}
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            key, value = words.pop(0).split("=", 1)
            env[key] = value
        assert words and words[0] == "quantadvise", (
            f"{example.where}: `{part}` is not a quantadvise command: run it here or mark the line "
            f"`# {TEMPLATE} <why>`")
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        here = Path.cwd()
        os.chdir(cwd)
        try:
            r = run_cli(*words[1:])
        finally:
            os.chdir(here)
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        assert "Traceback" not in r.stderr, f"{example.where}: {part}\n{r.stderr[-3000:]}"
        assert r.code == example.expected_exit, (
            f"{example.where}: `{part}` exited {r.code}, documented {example.expected_exit}\n{r.stderr[-2000:]}")


def _run_python(example: Example) -> None:
    code = compile(example.text, example.where, "exec")
    with contextlib.redirect_stdout(io.StringIO()):
        exec(code, {"__name__": "__docs__"})  # noqa: S102 - the documentation's own example


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_the_examples_run_as_written(doc, clone):
    for example in examples(doc):
        if example.template:
            continue
        if example.kind == "python":
            _run_python(example)
        else:
            _run_shell(example, clone)


def test_every_document_is_read_and_templates_say_why():
    assert len(ALL) >= 40, len(ALL)
    assert {e.where.split(":")[0] for e in ALL} >= {"README.md", "docs/ci.md", "docs/recommend.md", "docs/cli.md"}
    for e in ALL:
        if e.template:
            why = (e.comment if TEMPLATE in e.comment else e.text.lstrip().splitlines()[0]).split(TEMPLATE, 1)[1]
            assert why.strip(), f"{e.where}: say why the line is a template"
    # most examples run: a template is the exception (a GPU, the network, a synopsis)
    assert sum(e.template for e in ALL) <= len(ALL) // 4, [e.where for e in ALL if e.template]


def test_the_extractor_reads_commands_continuations_comments_and_output():
    doc = REPO / "README.md"
    found = {e.text for e in examples(doc)}
    assert any(t.startswith("quantadvise recommend --batch 1 --ctx 2048") for t in found)
    assert split_comment('quantadvise check --x "a # b"  # exit 1') == ('quantadvise check --x "a # b"', "exit 1")
    e = Example("x:1", "shell", "quantadvise check", "exit 1: findings")
    assert e.expected_exit == 1 and not e.template
    assert Example("x:1", "shell", "quantadvise calibrate", "template: needs a CUDA GPU").template
