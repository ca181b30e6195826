"""Reading user files: one place that turns every failure into a one-line ConfigError."""

from __future__ import annotations

from pathlib import Path

from .errors import ConfigError


def read_text(path: Path) -> str:
    """A UTF-8 text file; an unreadable or binary file is a ConfigError naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
