"""Walking the folders a scan is given, bounded.

:class:`Walk` yields the regular files under a folder in path order. It passes over folders that hold
no deployment (.git, node_modules, virtual environments, __pycache__, a test suite's fixtures —
tests/fixtures, testdata — unless named, /proc and other virtual file systems), does not follow symbolic links, skips FIFOs, devices and sockets (reading one blocks or never
ends), lists what it cannot read instead of failing, and stops — with the folder it stopped in — after
:data:`MAX_WALK_FILES` files, :data:`MAX_WALK_ENTRIES` folder entries of any kind (a tree of a million
empty folders holds no file but is no quicker to walk), :data:`MAX_WALK_BYTES` read, or
:data:`MAX_WALK_SECONDS`. Never a hang, never memory growth.
"""

from __future__ import annotations

import itertools
import os
import re
import time
from collections.abc import Iterator
from dataclasses import field
from functools import lru_cache
from pathlib import Path

from ..results import record

MAX_WALK_FILES = 20_000  # files one scan visits under the folders it is given; then it stops, with a warning
MAX_WALK_ENTRIES = 200_000  # folder entries (files, folders, links ...) one scan lists
MAX_WALK_BYTES = 64 * 1024 * 1024  # bytes of the files one scan reads (a large repository's deployment: a few MB)
MAX_WALK_SECONDS = 20.0  # one scan's walk and reading on the clock (a slow network file system)
MAX_WALK_CPU = 10.0  # and of CPU (a large repository: a second or two)
# file systems that hold no repository (the kernel's, devices): never walked, even when named
_VIRTUAL_FS = frozenset({"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs",
                         "securityfs", "pstore", "bpf", "configfs", "fusectl", "mqueue", "hugetlbfs", "binfmt_misc",
                         "autofs", "efivarfs", "rpc_pipefs", "nsfs", "selinuxfs"})
_VIRTUAL_DIRS = frozenset({"/proc", "/sys", "/dev"})  # where they are mounted when /proc/self/mounts says nothing
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache",
                       ".pytest_cache", "dist", "build", "site-packages", "dist-packages"})
DOT_DIRS_READ = frozenset({".github", ".gitlab", ".circleci", ".buildkite"})  # CI definitions launch engines too
# a test suite's fixtures are inputs to its tests, not the repository's deployment: passed over by a walk
# (named as a path, they are read): testdata anywhere (Go's convention), fixtures under a tests folder
_TESTDATA_DIRS = frozenset({"testdata", "test_data", "test-data"})
_FIXTURE_DIRS = frozenset({"fixtures", "__fixtures__"})
_TEST_DIRS = frozenset({"tests", "test", "testing", "__tests__"})


@lru_cache(maxsize=1)
def _virtual_mounts() -> frozenset[str]:
    """Mount points of virtual file systems (``/proc``, ``/sys``, ``/dev`` ...), from /proc/self/mounts
    where the OS has one."""
    found = set(_VIRTUAL_DIRS)
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as fh:
            for row in fh:
                parts = row.split()
                if len(parts) >= 3 and parts[2] in _VIRTUAL_FS:
                    found.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[1]))
    except OSError:
        pass
    found.discard("/")
    return frozenset(found)


def is_virtual(path: str) -> bool:
    """A folder on a virtual file system (/proc, /sys, /dev ...): not a repository, never walked."""
    return path in _virtual_mounts()


@record(frozen=False)
class Walk:
    """One scan's bounded walk: what it may still visit and read, and what it passed over (``FILE: why``)."""

    budget: int = field(default_factory=lambda: MAX_WALK_FILES)
    entries: int = field(default_factory=lambda: MAX_WALK_ENTRIES)
    bytes_left: int = field(default_factory=lambda: MAX_WALK_BYTES)
    deadline: float = field(default_factory=lambda: time.monotonic() + MAX_WALK_SECONDS)
    cpu_deadline: float = field(default_factory=lambda: time.process_time() + MAX_WALK_CPU)
    skipped: list[str] = field(default_factory=list)
    cut: str | None = None  # the folder the walk stopped in when a budget ran out
    why: str = ""  # which budget ran out: "20,000 files", "60 s" ...

    def stop(self, where: str, why: str) -> None:
        self.cut, self.why = where, why

    def late(self, where: str | None = None) -> bool:
        """Whether the walk is out of time (its clock or its CPU); with ``where``, it stops there."""
        why = f"{MAX_WALK_SECONDS:g} s" if time.monotonic() > self.deadline else \
            f"{MAX_WALK_CPU:g} s of CPU" if time.process_time() > self.cpu_deadline else None
        if why is not None and where is not None:
            self.stop(where, why)
        return why is not None

    def read(self, f: Path, size: int) -> bool:
        """Whether the walk may read ``size`` more bytes (of ``f``) and has time left; else it stops there."""
        if self.cut is not None:
            return False
        if size > self.bytes_left:
            self.stop(str(f.parent), f"{MAX_WALK_BYTES // 2**20} MiB read")
            return False
        if self.late(str(f.parent)):
            return False
        self.bytes_left -= size
        return True

    def files(self, root: Path) -> Iterator[Path]:
        """Regular files under ``root`` in path order (sorted part by part, as ``sorted(root.rglob("*"))``).
        Folders that hold no deployment (.git, node_modules, .venv, __pycache__, other dot folders but CI
        definitions, virtual file systems such as /proc) are passed over; symbolic links are not followed
        (no loops), FIFOs, devices and sockets not read; an entry that cannot be read is listed in
        ``skipped`` and passed over; the walk stops after ``budget`` files, ``entries`` entries, or its
        seconds (``cut`` says where)."""
        seen: set[tuple[int, int]] = set()
        stack: list[Iterator[os.DirEntry[str]]] = []

        def enter(folder: str, real: str) -> None:
            if is_virtual(real):
                self.skipped.append(f"{folder}: a virtual file system (the kernel's or devices'), not a repository")
                return
            try:
                st = os.stat(folder)
                if (st.st_dev, st.st_ino) in seen:  # the same folder again (a bind mount): walked once
                    return
                seen.add((st.st_dev, st.st_ino))
                with os.scandir(folder) as it:  # at most what the walk may still list: no million-entry list
                    entries = sorted(itertools.islice(it, max(self.entries, 0) + 1), key=lambda e: e.name)
            except OSError as exc:
                self.skipped.append(f"{folder}: cannot be read ({exc.strerror or exc})")
                return
            if folder != str(root) and any(e.name == "pyvenv.cfg" for e in entries):
                return  # a Python virtual environment, whatever its name: installed packages, not the repository's
            stack.append(iter(entries))

        enter(str(root), os.path.realpath(root))
        while stack and self.cut is None:
            e = next(stack[-1], None)
            if e is None:
                stack.pop()
                continue
            self.entries -= 1
            if self.entries < 0:
                self.stop(str(Path(e.path).parent), f"{MAX_WALK_ENTRIES:,} folder entries")
                return
            if self.entries % 1024 == 0 and self.late(str(Path(e.path).parent)):
                return
            try:
                if e.is_symlink():
                    continue
                if e.is_dir(follow_symlinks=False):
                    if fixtures(e.path):
                        self.skipped.append(f"{e.path}: test fixtures, not a deployment (name the folder to check it)")
                    elif e.name not in SKIP_DIRS and (not e.name.startswith(".") or e.name in DOT_DIRS_READ):
                        enter(e.path, os.path.realpath(e.path))
                    continue
                if not e.is_file(follow_symlinks=False):
                    continue  # a socket, a device, a pipe
            except OSError as exc:
                self.skipped.append(f"{e.path}: cannot be read ({exc.strerror or exc})")
                continue
            if self.budget <= 0:
                self.stop(str(Path(e.path).parent), f"{MAX_WALK_FILES:,} files")
                return
            self.budget -= 1
            yield Path(e.path)


def fixtures(folder: str) -> bool:
    """Whether a folder a walk meets holds a test suite's fixtures: ``testdata`` anywhere, ``fixtures``
    (and the like) directly under a ``tests`` folder."""
    path = Path(folder)
    return path.name in _TESTDATA_DIRS or (path.name in _FIXTURE_DIRS and path.parent.name in _TEST_DIRS)
