"""How far the deployment-file readers go on hostile input: one file's allowance.

A deployment file is at most 2 MB (``scan.MAX_FILE_BYTES``), but what its readers build from it can
grow without bound: a shell variable set to itself twice (``A=$A$A``) doubles on every line, a Makefile
variable naming ten others ten levels deep is ten billion references, a line of 300,000 flags is
300,000 words, each looked up. So every reader draws on one :class:`Budget` per file:

- **expansion** (shell ``$X`` / ``${X:-...}`` / arrays / ``eval``, make ``$(X)``, Dockerfile ARG/ENV,
  compose ``${X}``, Kubernetes ``$(X)``): a value may grow to :data:`MAX_VALUE_CHARS`, nest
  :data:`MAX_DEPTH` deep, and one file may expand :data:`MAX_REFERENCES` references producing
  :data:`MAX_EXPANDED_CHARS` characters in all. Past any of these the reference stays as written — a
  value only known at run time, as the gate treats ``$(cmd)`` — and the file gets one warning;
- **words**: a command keeps its first :data:`MAX_WORDS` words, a file its first :data:`MAX_FILE_WORDS`
  (the shell reader stops at the first word past them: the rest of the file is not even scanned);
- **time**: reading one file stops after :data:`MAX_SECONDS` of CPU (:class:`TimeUp`; the scan skips
  the file with a warning). CPU, not the clock: a loaded machine reads the same files.

Never a hang, never memory growth; the same result for the same text, the clock aside. The active
budget is a context variable: ``scan.parse_text`` opens one per file (:func:`reading`), and a reader
called on its own opens its own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import field

from ..errors import ConfigError
from ..results import record

MAX_VALUE_CHARS = 65_536  # the longest value one expansion may produce (a real one is a model id, a flag list)
MAX_DEPTH = 16  # expansions inside expansions: ${A:-${B:-...}}, make variables naming variables, eval
MAX_REFERENCES = 20_000  # references one file may expand (a long real script has hundreds)
MAX_EXPANDED_CHARS = 4_000_000  # characters all of one file's expansions may produce together
MAX_WORDS = 1_000  # words of one command that are read (a real launch has tens)
MAX_FILE_WORDS = 100_000  # words of one file that are read (a long real script has thousands)
MAX_SECONDS = 2.0  # of CPU, reading one file (a real one takes milliseconds; a 2 MB one well under a second)
_CLOCK_EVERY = 4_096  # steps between looks at the clock


class TimeUp(ConfigError):
    """Reading one file took longer than :data:`MAX_SECONDS`."""


@record(frozen=False)
class Budget:
    """One file's allowance (see the module's doc); ``warnings`` says what was left unexpanded or unread,
    once per kind."""

    file: str
    references: int = MAX_REFERENCES
    chars: int = MAX_EXPANDED_CHARS
    words_left: int = MAX_FILE_WORDS
    deadline: float = field(default_factory=lambda: time.process_time() + MAX_SECONDS)
    full: bool = False  # a word was refused past MAX_FILE_WORDS: the readers stop (the rest of the file is not read)
    warnings: list[str] = field(default_factory=list)
    _steps: int = 0
    _said: set[str] = field(default_factory=set)

    def expand(self, what: str, size: int, depth: int = 0, line: int | None = None) -> bool:
        """Whether the reference ``what`` (``$MODEL``, ``$(ARGS)``) may be replaced by a value of ``size``
        characters at nesting ``depth``; False, with the file's one warning of that kind, past an
        allowance (the reference then stays as written)."""
        self.tick()
        why = None
        if depth > MAX_DEPTH:
            why = ("depth", f"expansions nested more than {MAX_DEPTH} deep")
        elif size > MAX_VALUE_CHARS:
            why = ("size", f"a value would grow past {MAX_VALUE_CHARS:,} characters")
        elif self.references <= 0:
            why = ("count", f"more than {MAX_REFERENCES:,} variable references")
        elif size > self.chars:
            why = ("total", f"expansions would produce more than {MAX_EXPANDED_CHARS:,} characters")
        if why is not None:
            self.say(why[0], f"{self.file}:{f' line {line}:' if line else ''} {why[1]} (an expansion bomb?): "
                     f"{_short(what)} and what follows are left unexpanded, as values only known at run time")
            return False
        self.references -= 1
        self.chars -= size
        return True

    def words(self, n: int, line: int | None = None) -> bool:
        """Whether a command may take its ``n``-th word; False past :data:`MAX_WORDS` words in the command
        or :data:`MAX_FILE_WORDS` in the file (each said once)."""
        if n >= MAX_WORDS:
            self.say("words", f"{self.file}:{f' line {line}:' if line else ''} a command of more than "
                     f"{MAX_WORDS:,} words: the rest of it is not read")
            return False
        if self.words_left <= 0:
            self.say("file words", f"{self.file}:{f' line {line}:' if line else ''} more than {MAX_FILE_WORDS:,} "
                     "words in the file: the rest of it is not read")
            self.full = True
            return False
        self.words_left -= 1
        return True

    def tick(self, steps: int = 1) -> None:
        """Count ``steps`` of work; past the deadline, :class:`TimeUp`."""
        self._steps += steps
        if self._steps >= _CLOCK_EVERY:
            self._steps = 0
            if time.process_time() > self.deadline:
                raise TimeUp(f"{self.file}: reading it took more than {MAX_SECONDS:g} s of CPU (a file built to "
                             "stall a parser?): not read")

    def say(self, kind: str, message: str) -> None:
        if kind not in self._said:
            self._said.add(kind)
            self.warnings.append(message)


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


_ACTIVE: ContextVar[Budget | None] = ContextVar("quantadvise_read_budget", default=None)


def current(file: str = "<text>") -> Budget:
    """The budget of the file being read; a fresh one when no reader opened one (a reader called on its
    own: its allowance is its own)."""
    active = _ACTIVE.get()
    return active if active is not None else Budget(file)


@contextmanager
def reading(file: str) -> Iterator[Budget]:
    """One file's budget for everything read inside the block; inside another file's block, that one
    (a reader calling a reader shares its file's allowance)."""
    active = _ACTIVE.get()
    if active is not None:
        yield active
        return
    budget = Budget(file)
    token = _ACTIVE.set(budget)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)
