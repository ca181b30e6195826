"""mypy is part of the test command: the package type-checks clean under the configuration in
pyproject.toml ([tool.mypy]: the pydantic plugin, no implicit Optional, unused ignores reported).

Incremental: the cache is mypy's own ``.mypy_cache`` at the repository root (git ignores it), so a
second run re-checks only what changed (about 1 s instead of 10-40 s); ``MYPY_CACHE_DIR`` moves it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_mypy_is_clean():
    env = {**os.environ, "MYPY_CACHE_DIR": os.environ.get("MYPY_CACHE_DIR") or str(REPO / ".mypy_cache")}
    res = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml")],
                         cwd=REPO, capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert "Success: no issues found" in res.stdout
