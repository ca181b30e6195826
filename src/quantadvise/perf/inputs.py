"""What a sweep of the performance model takes: batch and context lists as users write them
(``1,8,64,512``, ``1..512``, ``512,2k,32k``), and a scheme's weight group fitted to the model.

Pure: no I/O, no printing.
"""

from __future__ import annotations

import re

from ..errors import InputError
from ..model import ModelArch
from ..scheme import Scheme
from ..sizing import quantized_groups

MAX_BATCH = 1 << 24  # the largest batch the step model covers


_RANGE = re.compile(r"^(\d+)\s*(?:\.\.|-)\s*(\d+)(?:\s*:\s*(\d+))?$")


def parse_batches(text: str | int | list[int] | tuple[int, ...], field: str = "batch") -> tuple[int, ...]:
    """``1,8,64,512``; ``1..512`` (doubling from 1 to 512, 512 included); ``16..256:16`` (step 16)."""
    if isinstance(text, int):
        values = [text]
    elif isinstance(text, (list, tuple)):
        values = [int(v) for v in text]
    else:
        values = []
        for part in str(text).split(","):
            part = part.strip()
            if not part:
                continue
            m = _RANGE.match(part)
            if m:
                lo, hi, step = int(m.group(1)), int(m.group(2)), m.group(3)
                if lo < 1 or hi < lo:
                    raise InputError(f"--{field} range '{part}' must go from >= 1 upwards", field=field)
                if step is not None:
                    if int(step) < 1:
                        raise InputError(f"--{field} range step must be >= 1, got {step}", field=field)
                    values.extend(range(lo, hi + 1, int(step)))
                else:
                    v = lo
                    while v < hi:
                        values.append(v)
                        v *= 2
                    values.append(hi)
                continue
            values.append(_int(part, field))
    if not values:
        raise InputError(f"--{field} needs at least one value, e.g. 1,8,64,512 or 1..512", field=field)
    for v in values:
        if v < 1:
            raise InputError(f"--{field} must be >= 1 (a decode step serves at least one sequence), got {v}",
                             field=field)
        if v > MAX_BATCH:
            raise InputError(f"--{field} {v} is beyond what the model covers (max {MAX_BATCH:,})", field=field)
    return tuple(sorted(set(values)))


def parse_contexts(text: str | int | list[int] | tuple[int, ...], field: str = "ctx") -> tuple[int, ...]:
    """``2048``, ``512,2k,32k`` (k = 1024 tokens); 0 is allowed (no KV cache read)."""
    if isinstance(text, int):
        values = [text]
    elif isinstance(text, (list, tuple)):
        values = [int(v) for v in text]
    else:
        values = [_int(p.strip(), field) for p in str(text).split(",") if p.strip()]
    if not values:
        raise InputError(f"--{field} needs at least one value, e.g. 2048 or 512,2k,32k", field=field)
    for v in values:
        if v < 0:
            raise InputError(f"--{field} must be >= 0 tokens, got {v}", field=field)
    return tuple(sorted(set(values)))


def _int(text: str, field: str) -> int:
    t = text.lower().replace("_", "")
    mult = 1
    if t.endswith("k"):
        t, mult = t[:-1], 1024
    try:
        return int(t) * mult
    except ValueError:
        raise InputError(f"--{field}: '{text}' is not a whole number (e.g. 1,8,64 or 1..512)", field=field) from None


def fit_weight_group(arch: ModelArch, scheme: Scheme) -> tuple[Scheme, str | None]:
    """``scheme`` with its per-group weight scale shrunk to the largest power-of-two group (>= 16)
    that divides every quantized layer's K, and a note saying so; unchanged when it already fits.
    Used for the default scheme list (an explicit scheme keeps its group and fails loudly)."""
    w = scheme.weight
    if w is None or w.scale is None or not w.scale.group.is_per_group or not scheme.quantizes_weights:
        return scheme, None
    g = w.scale.group.col
    ks = {grp.k for grp in quantized_groups(arch.inventory, scheme)}
    if all(k % g == 0 for k in ks):
        return scheme, None
    cand = g // 2
    while cand >= 16:
        if all(k % cand == 0 for k in ks):
            bad = min(k for k in ks if k % g)
            return (scheme.with_weight_group(cand),
                    f"{scheme.id} uses group {cand} here: {g} does not divide K = {bad} (--group to choose)")
        cand //= 2
    return scheme, None
