"""A step model's answers kept per model: :class:`~.step.StepModel` is immutable once built (its
``with_kv`` copy starts afresh), and a walk, a concurrency search or a batch scan asks it the same
question many times (a serving loop pads batches to the engine's CUDA-graph sizes; a bisection
revisits its bounds): a 200-batch scan of one workload asks ~17,000 steps of which ~2,000 differ.

Pure: no I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
MAX_ENTRIES = 65_536  # per model; a sweep past it starts over (memory stays bounded)


def per_model(method: F) -> F:
    """``method``'s result per (arguments) on its instance, in the instance's ``_step_memo`` dict (created on
    first use; a copy that changes what the method reads must drop it, as ``StepModel.with_kv`` does)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        memo = self.__dict__.get("_step_memo")
        if memo is None:
            memo = self.__dict__["_step_memo"] = {}
        key = (method.__name__, args, tuple(kwargs.items()))
        got = memo.get(key)
        if got is None:
            if len(memo) >= MAX_ENTRIES:
                memo.clear()
            got = memo[key] = method(self, *args, **kwargs)
        return got

    return wrapper  # type: ignore[return-value]
