"""Engine release versions: their order, and which release on file stands in for one that is not."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import InputError


def version_key(version: str) -> tuple[int, ...]:
    """``"0.33.0"`` -> ``(0, 33, 0)``: the first three numbers (``v0.30.0``, ``0.5.23rc1`` alike)."""
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])


def nearest_version(versions: Iterable[str], wanted: str) -> str:
    """The newest of ``versions`` not newer than ``wanted``, else the oldest (the rule every table keyed
    by engine release follows: engine data, kernel tables, start-up facts)."""
    vs = list(versions)
    older = [v for v in vs if version_key(v) <= version_key(wanted)]
    return max(older, key=version_key) if older else min(vs, key=version_key)


def parse_target(spec: str) -> tuple[str, str]:
    """``vllm@0.33.0`` (also ``vllm==0.33.0``) -> ("vllm", "0.33.0")."""
    m = re.fullmatch(r"\s*([A-Za-z][\w-]*?)\s*(?:@|==)\s*v?([\w.+-]+)\s*", spec or "")
    if not m:
        raise InputError(f"--upgrade-to expects ENGINE@VERSION (vllm@0.33.0, sglang@0.5.23), got '{spec}'",
                         field="upgrade_to")
    return m.group(1).lower(), m.group(2)
