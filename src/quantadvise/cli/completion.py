"""Shell completion of names from the bundled data: model ids, GPU ids, scheme and KV presets,
with their aliases. Called only while the shell completes (``--install-completion`` sets it up for
bash, zsh or fish); a normal run never imports the catalog for it."""

from __future__ import annotations

from collections.abc import Callable

from .. import defaults

ENGINE_ACTIONS = ("list", "show", "diff")  # `quantadvise engines ACTION`

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


def scheme_list(incomplete: str) -> list[str]:
    """A comma-separated list of schemes (roofline --scheme, recommend --candidates): the last item."""
    head, _, last = incomplete.rpartition(",")
    lead = head + "," if head else ""
    return [lead + n for n in schemes(last)]


def engines(incomplete: str) -> list[str]:
    return _matching(lambda: sorted(defaults.ENGINES), incomplete)


def tasks(incomplete: str) -> list[str]:
    from ..workload import TASK_ALIASES, Task

    return _matching(lambda: [t.value for t in Task] + list(TASK_ALIASES), incomplete)


def modes(incomplete: str) -> list[str]:
    from ..workload import MODE_ALIASES, Mode

    return _matching(lambda: [m.value for m in Mode] + list(MODE_ALIASES), incomplete)


def kv_cache_dtypes(incomplete: str) -> list[str]:
    """The engines' own --kv-cache-dtype values (auto, fp8, fp8_e5m2 ...), from the KV presets."""
    from ..api.listing import list_bundled
    from ..catalog.listing import KvList

    def names() -> list[str]:
        out = ["auto"]
        kv = list_bundled("kv")
        for k in kv.kv_presets if isinstance(kv, KvList) else ():
            out += [v for v in (k.vllm_kv_cache_dtype, k.sglang_kv_cache_dtype) if v]
        return out

    return _matching(names, incomplete)


def listings(incomplete: str) -> list[str]:
    from ..catalog.listing import KINDS

    return _matching(lambda: list(KINDS), incomplete)


def engine_actions(incomplete: str) -> list[str]:
    return _matching(lambda: list(ENGINE_ACTIONS), incomplete)
