"""A hard time limit for one test step: a hang fails the test instead of blocking the suite.

``time_limit(cpu=5, wall=30)`` arms the process's CPU timer (SIGPROF, counts user + system time) and
its real-time timer (SIGALRM, for a run blocked on I/O: a FIFO no one writes burns no CPU); either
raises :class:`Hang` — a BaseException, so no ``except Exception`` in the code under test swallows
it — where the step is. Main thread only (pytest and its xdist workers run tests there); elsewhere,
and where the OS has no such timers, the limit is not armed.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


class Hang(BaseException):
    """A step ran past its time limit."""


@contextlib.contextmanager
def time_limit(cpu: float = 5.0, wall: float = 30.0, what: str = "") -> Iterator[None]:
    armed = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if not armed:
        yield
        return

    def on_cpu(signum, frame):  # noqa: ARG001 - the signal handler's signature
        raise Hang(f"over {cpu:g} s of CPU (a hang?): {what}")

    def on_wall(signum, frame):  # noqa: ARG001
        raise Hang(f"over {wall:g} s on the clock (blocked?): {what}")

    old_prof = signal.signal(signal.SIGPROF, on_cpu)
    old_alrm = signal.signal(signal.SIGALRM, on_wall)
    signal.setitimer(signal.ITIMER_PROF, cpu)
    signal.setitimer(signal.ITIMER_REAL, wall)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, old_prof)
        signal.signal(signal.SIGALRM, old_alrm)
