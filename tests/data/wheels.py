"""The engine artifacts the data tests check their quotes against: offline by default (skipped), or a
folder of downloaded wheels and sdists named by ``ENGINE_WHEELS_DIR``.

A release's data names the artifact it was read from (``source.artifact``): a wheel (``.whl``, a zip) or,
for the vLLM releases read from their source distribution, an sdist (``.tar.gz``) whose members sit in a
``<name>-<version>/`` folder. :func:`open_artifact` reads either by the path inside the package
(``vllm/config/cache.py``), as the quotes cite it.
"""

from __future__ import annotations

import os
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def wheel_or_skip(artifact: str) -> Path:
    """The artifact file (wheel or sdist) in ``ENGINE_WHEELS_DIR``; skips the test when it is not there."""
    folder = os.environ.get("ENGINE_WHEELS_DIR")
    wheel = Path(folder) / artifact if folder else None
    if wheel is None or not wheel.is_file():
        pytest.skip("ENGINE_WHEELS_DIR does not hold " + artifact)
    return wheel


class Artifact:
    """A wheel or an sdist, read by member path inside the package (the sdist's top folder dropped)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._zip: zipfile.ZipFile | None = None
        self._tar: dict[str, bytes] | None = None
        if path.name.endswith((".tar.gz", ".tgz")):
            self._tar = {}
            with tarfile.open(path, "r:gz") as tar:  # one pass: a tar.gz has no random access
                for m in tar:
                    if m.isfile() and "/" in m.name and m.name.endswith(".py"):
                        f = tar.extractfile(m)
                        if f is not None:
                            self._tar[m.name.split("/", 1)[1]] = f.read()
        else:
            self._zip = zipfile.ZipFile(path)

    def read(self, member: str) -> bytes:
        if self._zip is not None:
            return self._zip.read(member)
        assert self._tar is not None
        if member not in self._tar:
            raise KeyError(f"{member} is not in {self.path.name}")
        return self._tar[member]

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()


@contextmanager
def open_artifact(path: Path) -> Iterator[Artifact]:
    art = Artifact(path)
    try:
        yield art
    finally:
        art.close()


def line_in(z: Artifact | zipfile.ZipFile, path: str, line: int | str) -> str:
    """Line ``line`` (1-based) of ``path`` inside the artifact, stripped: what a quote records."""
    return z.read(path).decode().splitlines()[int(line) - 1].strip()
