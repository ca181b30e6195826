"""One exception hierarchy for everything a user can get wrong.

Every error a user can cause is a :class:`QuantAdviseError`. The CLI maps the whole family, in one
place, to ``Error: <message>`` (plus an optional hint) on stderr and exit code 2. Library callers
catch :class:`QuantAdviseError` and read ``.message`` / ``.hint`` / ``.field``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping


def norm_name(name: str) -> str:
    """How every name (GPU, scheme, model alias, profile entry) is compared: case-insensitive, with
    ``_`` and ``-`` alike."""
    return name.strip().lower().replace("_", "-")


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: the fewest single-character insertions, deletions and substitutions that
    turn ``a`` into ``b``."""
    if len(a) < len(b):
        a, b = b, a
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def closest(name: str, spellings: Iterable[str], *, n: int = 3, cutoff: float = 0.5) -> list[str]:
    """The spellings nearest ``name``, case-insensitively, nearest first — the one suggestion ranking every
    "did you mean" uses (GPUs, schemes, KV presets, engines, models; ids and aliases alike): first those
    that extend what was typed (``h10`` -> ``h100``, shortest first), then by edit distance, difflib's
    similarity breaking ties, then the order given. A spelling is near when its similarity is at least
    ``cutoff`` or its edit distance at most ``(1 - cutoff)`` of the typed length (so a one-letter slip in a
    long id, ``meta-llama/Llama-3-8x``, finds the alias ``meta-llama/Llama-3-8B`` before the id
    ``meta-llama/Llama-3.1-8B``). Returns spellings as given, the first of case-insensitive duplicates."""
    low = name.strip().lower()
    first: dict[str, str] = {}
    for s in spellings:
        first.setdefault(s.lower(), s)
    if not low:
        return []
    ranked: list[tuple[int, int, float, int, str]] = []
    for order, key in enumerate(first):
        if key == low:
            continue
        if key.startswith(low):
            ranked.append((0, len(key), 0.0, order, key))
            continue
        la, lb = len(low), len(key)
        if 2 * min(la, lb) < cutoff * (la + lb) and abs(la - lb) > int(la * (1 - cutoff)):
            continue  # too far by length alone (similarity <= 2 min / sum, distance >= the length gap): not near
        dist = edit_distance(low, key)
        ratio = difflib.SequenceMatcher(None, low, key).ratio()
        if ratio >= cutoff or dist <= int(len(low) * (1 - cutoff)):
            ranked.append((1, dist, -ratio, order, key))
    return [first[k] for *_, k in sorted(ranked)[:n]]


class QuantAdviseError(Exception):
    """Base class: bad input, bad data or an unreachable source. Exit code 2 in the CLI."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.field = field

    def __str__(self) -> str:  # one line, always
        text = self.message if not self.hint else f"{self.message} ({self.hint})"
        return " ".join(text.split())


class InputError(QuantAdviseError):
    """A flag, argument or value the user gave is invalid."""


class NoSchemeError(InputError):
    """No candidate serves the workload; ``vetoed``: some were turned down by the accuracy filter (so
    a looser ``--accuracy-tolerance`` is one way out)."""

    def __init__(self, message: str, *, hint: str | None = None, vetoed: bool = False):
        super().__init__(message, hint=hint, field="workload")
        self.vetoed = vetoed


MAX_NAME_CHARS = 200  # a model, GPU, scheme or engine name longer than this is quoted in part


class UnknownNameError(InputError):
    """A model / GPU / scheme / engine name that is not known, with close matches.

    Suggestions: names that extend what was typed (``h10`` -> ``h100``) first, then the caller's own
    (``suggestions``: GPUs of the same family) or spelling neighbours. ``ids`` (any name -> its row's
    id) turns an alias into the id it stands for, so ``W4A16`` is offered as ``w4a16``; without it the
    first spelling of a name in ``candidates`` (ids come before their aliases) is the one shown. An
    empty name says so instead of guessing."""

    def __init__(self, kind: str, name: str, candidates: Iterable[str], *, hint: str | None = None,
                 suggestions: list[str] | None = None, ids: Mapping[str, str] | None = None):
        cands = list(candidates)
        by_lower: dict[str, str] = {}
        for c in cands:
            by_lower.setdefault(c.lower(), c)
        low = name.lower().strip()
        if not low:
            self.suggestions: list[str] = []
            super().__init__(f"the {kind} name is empty", hint=hint, field=kind)
            return

        def canonical(c: str) -> str:
            real = by_lower[c]
            return ids.get(real, ids.get(c, real)) if ids else real

        # names that extend what was typed ("a100" -> "a100-80gb") first, then spelling neighbours, nearest
        # first by edit distance over ids and aliases alike (:func:`closest`)
        near = [c.lower() for c in closest(low, list(by_lower), n=6 + len(by_lower), cutoff=0.5)] \
            if len(low) <= MAX_NAME_CHARS else []  # 5,000 characters are no name: nothing is near
        prefix = [canonical(c) for c in near if c.startswith(low)]
        close = [canonical(c) for c in near if not c.startswith(low)][:6]
        if suggestions:  # a caller that knows better (GPUs: the same product family) ranks the rest
            picked = list(dict.fromkeys(prefix[:1] + [ids.get(s, s) if ids else s for s in suggestions]))
        else:
            picked = list(dict.fromkeys(prefix + close))
        self.suggestions = picked[:3]
        msg = f"unknown {kind} '{name}'" if len(name) <= MAX_NAME_CHARS else \
            f"unknown {kind} '{name[:40]}...' ({len(name):,} characters)"
        if self.suggestions:
            msg += "; did you mean " + ", ".join(f"'{s}'" for s in self.suggestions) + "?"
        super().__init__(msg, hint=hint, field=kind)


class AmbiguousNameError(UnknownNameError):
    """A name several rows share (``a100``: a100-40gb and a100-80gb): the rows it matches, to pick
    one. An :class:`UnknownNameError`, so every caller that handles an unresolved name handles it."""

    def __init__(self, kind: str, name: str, matches: Iterable[str], *, hint: str | None = None):
        self.suggestions = list(matches)
        InputError.__init__(self, f"{kind} '{name}' is ambiguous: it matches "
                            + ", ".join(f"'{m}'" for m in self.suggestions) + "; pass one of them",
                            hint=hint, field=kind)


class ConfigError(QuantAdviseError):
    """A file (config.json, YAML scheme, workload, deployment, profile) is malformed."""


class SchemeError(InputError):
    """A quantization scheme is not a valid point of the design space (the reason says why)."""


class DataError(QuantAdviseError):
    """A shipped data table failed validation (a packaging bug, not a user error)."""


class SourceUnavailableError(QuantAdviseError):
    """A model could not be fetched (offline, gated, not found on the Hub)."""


def format_validation_error(exc: object, where: str) -> str:
    """Turn a pydantic ValidationError into one line naming the first bad field.

    ``where`` names the file or object being validated. Only the first error is reported in full,
    with a count of the rest, so the message stays on one line.
    """
    errors = exc.errors()  # type: ignore[attr-defined]
    if not errors:
        return f"{where}: invalid"
    first = errors[0]
    loc = ".".join(str(p) for p in first.get("loc", ()) if p != "__root__") or "(top level)"
    kind = first.get("type", "")
    msg = first.get("msg", "invalid value")
    if kind == "extra_forbidden":
        msg = "unknown key (check spelling; see the documented keys)"
    elif kind == "missing":
        msg = "required key is missing"
    msg = msg.removeprefix("Value error, ")
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: field '{loc}': {msg}{more}"
