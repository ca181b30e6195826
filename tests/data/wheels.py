"""The engine wheels the data tests check their quotes against: offline by default (skipped), or a
folder of downloaded wheels named by ``ENGINE_WHEELS_DIR``."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest


def wheel_or_skip(artifact: str) -> Path:
    """The wheel file ``artifact`` in ``ENGINE_WHEELS_DIR``; skips the test when it is not there."""
    folder = os.environ.get("ENGINE_WHEELS_DIR")
    wheel = Path(folder) / artifact if folder else None
    if wheel is None or not wheel.is_file():
        pytest.skip("ENGINE_WHEELS_DIR does not hold " + artifact)
    return wheel


def line_in(z: zipfile.ZipFile, path: str, line: int | str) -> str:
    """Line ``line`` (1-based) of ``path`` inside the wheel, stripped: what a quote records."""
    return z.read(path).decode().splitlines()[int(line) - 1].strip()
