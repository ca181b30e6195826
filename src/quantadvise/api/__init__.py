"""The Python API: one function per CLI command (see ``quantadvise/__init__.py`` for the list).

Imported lazily: ``from quantadvise import api; api.size(...)`` loads only what ``size`` needs."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    import importlib

    value = getattr(importlib.import_module("quantadvise.api.core"), name)
    globals()[name] = value
    return value
