"""The fuzz suite's harness. Its contract, checked on every generated run of the real entry point (in-process):

- the exit code is 0, 1 or 2 (2: exactly one ``Error:`` line on stderr);
- no traceback (an exception other than SystemExit escaping ``main`` fails the test with it);
- every run finishes in under :data:`MAX_SECONDS` of CPU time, and under :data:`HANG_SECONDS` on the
  wall clock (a run blocked on I/O does not burn CPU; the wall clock is judged loosely because the
  test machine is shared — on a dedicated CI runner the two agree).

Hypothesis is derandomized (the same cases on every CI run, no example database) and each test sets
its own ``max_examples``; the suite's count of runs is printed at the end of the session (the
acceptance asks for >= 3,000). ``QUANTADVISE_FUZZ_SCALE=4`` multiplies every budget for a longer
local run.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Iterator, Mapping

from hypothesis import HealthCheck, settings

from tests.conftest import CliResult, run_cli

MAX_SECONDS = 5.0
HANG_SECONDS = 30.0
SCALE = max(1, int(os.environ.get("QUANTADVISE_FUZZ_SCALE", "1") or 1))
RUNS: Counter[str] = Counter()
SLOWEST: dict[str, float] = {}
SLOWEST_WALL: dict[str, float] = {}  # reported beside the CPU figure (the issue counts runs over 5 s)

settings.register_profile(
    "quantadvise-fuzz", derandomize=True, database=None, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much,
                           HealthCheck.data_too_large],
)


def budget(n: int) -> settings:
    """A test's hypothesis settings: ``n`` examples (x QUANTADVISE_FUZZ_SCALE)."""
    return settings(settings.get_profile("quantadvise-fuzz"), max_examples=n * SCALE)


@contextlib.contextmanager
def environ(values: Mapping[str, str] | None) -> Iterator[None]:
    """Set environment variables for one run, restoring them after."""
    old = {k: os.environ.get(k) for k in (values or {})}
    try:
        for k, v in (values or {}).items():
            os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_checked(*args: str, kind: str, env: Mapping[str, str] | None = None) -> CliResult:
    """Run ``quantadvise ARGS`` and hold it to the contract above."""
    t0, c0 = time.perf_counter(), time.process_time()
    with environ(env):
        r = run_cli(*args)
    took, wall = time.process_time() - c0, time.perf_counter() - t0
    RUNS[kind] += 1
    SLOWEST[kind] = max(SLOWEST.get(kind, 0.0), took)
    SLOWEST_WALL[kind] = max(SLOWEST_WALL.get(kind, 0.0), wall)
    shown = " ".join(repr(a) if len(a) < 80 else repr(a[:77] + "...") for a in args)
    assert r.code in (0, 1, 2), f"exit {r.code}: quantadvise {shown}\n{r.stderr[-2000:]}"
    assert "Traceback" not in r.stderr, f"quantadvise {shown}\n{r.stderr[-2000:]}"
    if r.code == 2:
        errors = [line for line in r.stderr.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1, f"quantadvise {shown}: {len(errors)} Error: lines\n{r.stderr[-2000:]}"
    assert took < MAX_SECONDS, f"{took:.1f} s of CPU: quantadvise {shown}"
    assert wall < HANG_SECONDS, f"{wall:.1f} s on the clock (a hang?): quantadvise {shown}"
    return r


def count_direct(kind: str, took: float) -> None:
    """Count a run of a reader called directly (the same contract, as exceptions); ``took`` in CPU
    seconds."""
    RUNS[kind] += 1
    SLOWEST[kind] = max(SLOWEST.get(kind, 0.0), took)
    assert took < MAX_SECONDS, f"{took:.1f} s ({kind})"
