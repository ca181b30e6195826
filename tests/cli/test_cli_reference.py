"""docs/cli.md is generated from --help; regenerate it when a command changes."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_cli_reference_is_current():
    from quantadvise.cli.reference import generate

    assert DOC.read_text() == generate(), (
        "docs/cli.md is stale: run `python -m quantadvise.cli.reference > docs/cli.md`"
    )


def test_every_command_has_help_and_json():
    from quantadvise.cli.app import COMMANDS
    from quantadvise.cli.reference import help_text

    for name in COMMANDS:
        text = help_text(name)
        assert text.startswith(f"Usage: quantadvise {name}"), name
        assert "--format" in text, f"{name} has no --format"
