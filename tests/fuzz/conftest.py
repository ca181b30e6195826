"""The fuzz suite's end-of-session count (the runs themselves are counted in ``harness.py``)."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 - pytest's hook signature
    from tests.fuzz.harness import MAX_SECONDS, RUNS, SLOWEST, SLOWEST_WALL

    if not RUNS:
        return
    total = sum(RUNS.values())
    wall = max(SLOWEST_WALL.values(), default=0.0)
    over = "" if wall < MAX_SECONDS else " (over the 5 s bar on the clock: a loaded machine? CPU is the bar)"
    terminalreporter.write_sep("-", f"fuzz: {total:,} runs, slowest {max(SLOWEST.values()):.2f} s of CPU, "
                                    f"{wall:.2f} s on the clock{over}")
    for kind, n in sorted(RUNS.items()):
        terminalreporter.write_line(f"  {kind:<28} {n:>6,} runs, slowest {SLOWEST[kind]:.2f} s")
