"""Shell completion of names from the bundled data: model ids, GPU ids, scheme and KV presets,
with their aliases. Called only while the shell completes (``--install-completion`` sets it up for
bash, zsh or fish); a normal run never imports the catalog for it."""

from __future__ import annotations

from collections.abc import Callable


def _matching(names: Callable[[], list[str]], incomplete: str) -> list[str]:
    low = incomplete.lower()
    return [n for n in dict.fromkeys(names()) if n.lower().startswith(low)]


def models(incomplete: str) -> list[str]:
    from ..catalog import bundled_model_names

    return _matching(bundled_model_names, incomplete)


def gpus(incomplete: str) -> list[str]:
    from ..catalog import gpu_names

    return _matching(gpu_names, incomplete)


def schemes(incomplete: str) -> list[str]:
    from ..catalog import scheme_names_all

    return _matching(scheme_names_all, incomplete)


def kv_presets(incomplete: str) -> list[str]:
    from ..catalog import kv_names_all

    return _matching(kv_names_all, incomplete)
