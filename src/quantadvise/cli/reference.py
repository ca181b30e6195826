"""Generate docs/cli.md from the commands' own ``--help``.

    python -m quantadvise.cli.reference > docs/cli.md

A test regenerates it and fails when docs/cli.md is stale, so the reference cannot drift from the
code. Help is rendered at a fixed width (100 columns) so the output does not depend on the terminal.
"""

from __future__ import annotations

import contextlib
import io
import os

WIDTH = "100"


def help_text(*args: str) -> str:
    from .app import main

    out = io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main([*args, "--help"])
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return out.getvalue().rstrip()


def generate() -> str:
    from .app import COMMANDS

    parts = [
        "# CLI reference",
        "",
        "Generated from each command's `--help` by `python -m quantadvise.cli.reference > docs/cli.md`;",
        "a test fails when this file is stale. Exit codes everywhere: 0 ok, 1 gate findings, 2 usage /",
        "config / input error.",
        "",
        "## quantadvise",
        "",
        "```text",
        help_text(),
        "```",
    ]
    for name in COMMANDS:
        parts += ["", f"## quantadvise {name}", "", "```text", help_text(name), "```"]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(generate())
