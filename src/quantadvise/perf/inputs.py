"""What a sweep of the performance model takes: batch and context lists as users write them
(``1,8,64,512``, ``1..512``, ``512,2k,32k``), and a scheme's weight group fitted to the model.

Pure: no I/O, no printing.
"""

from __future__ import annotations

from ..errors import InputError
from ..inputs import DECODE_CTX, LIMITS, MAX_LIST_VALUES, Limit, check, parse, shown
from ..memory.sizing import quantized_groups
from ..model.arch import ModelArch
from ..model.inventory import inventory_of
from ..scheme.axes import Scheme
from ..wording import pattern

_RANGE = r"^(\d+)\s*(?:\.\.|-)\s*(\d+)(?:\s*:\s*(\d+))?$"  # compiled on first need (wording.pattern)


def parse_batches(text: str | int | list[int] | tuple[int, ...], field: str = "batch") -> tuple[int, ...]:
    """``1,8,64,512``; ``1..512`` (doubling from 1 to 512, 512 included); ``16..256:16`` (step 16).
    Every batch within the one batch limit (``inputs.LIMITS["batch"]``, the message ``--batch`` has in
    every command); ``field`` names the flag (``batches`` for calibrate)."""
    limit = LIMITS["batch"]
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
            m = pattern(_RANGE).match(part)
            if m:
                forms = "1,8,64 or 1..512"  # each bound read by the one input layer: 5,000 digits are an error line
                lo, hi = (int(parse(field, m.group(k), limit=limit, forms=forms)) for k in (1, 2))
                check(field, lo, limit)  # before the range is built: no 0..8 doubling forever, no 1..10**12 list
                check(field, hi, limit)
                if hi < lo:
                    raise InputError(f"--{field} range '{shown(part)[1:-1]}' must go upwards (low..high)", field=field)
                if m.group(3) is not None:
                    step = int(parse(field, m.group(3), limit=limit, forms=forms))
                    if step < 1:
                        raise InputError(f"--{field} range step must be >= 1, got {shown(step)}", field=field)
                    _not_too_many(field, (hi - lo) // step + 1)  # counted before it is built
                    values.extend(range(lo, hi + 1, int(step)))
                else:
                    v = lo
                    while v < hi:
                        values.append(v)
                        v *= 2
                    values.append(hi)
                continue
            values.append(_int(part, field, "1,8,64 or 1..512"))
    if not values:
        raise InputError(f"--{field} needs at least one value, e.g. 1,8,64,512 or 1..512", field=field)
    out = tuple(sorted({check(field, v, limit) for v in values}))
    _not_too_many(field, len(out))
    return out


def parse_contexts(text: str | int | list[int] | tuple[int, ...], field: str = "ctx") -> tuple[int, ...]:
    """``2048``, ``512,2k,32k`` (k = 1024 tokens): contexts a decode step reads, each within
    ``inputs.DECODE_CTX`` — the ctx limit, and 0 (no KV cache read)."""
    if isinstance(text, int):
        values = [text]
    elif isinstance(text, (list, tuple)):
        values = [int(v) for v in text]
    else:
        values = [_int(p.strip(), field, "2048 or 512,2k,32k", DECODE_CTX) for p in str(text).split(",") if p.strip()]
    if not values:
        raise InputError(f"--{field} needs at least one value, e.g. 2048 or 512,2k,32k", field=field)
    out = tuple(sorted({check(field, v, DECODE_CTX) for v in values}))
    _not_too_many(field, len(out))
    return out


def _not_too_many(field: str, n: int) -> None:
    """At most :data:`~quantadvise.inputs.MAX_LIST_VALUES` values in one list: each is a computation."""
    if n > MAX_LIST_VALUES:
        raise InputError(f"--{field} lists {n:,} values; at most {MAX_LIST_VALUES} are taken at once", field=field)


def _int(text: str, field: str, example: str, limit: Limit | None = None) -> int:
    t = text.lower().replace("_", "")
    mult = 1
    if t.endswith("k"):
        t, mult = t[:-1], 1024
    try:
        if len(t) > 64:  # no number any limit takes; int() refuses 4,300 digits with a ValueError anyway
            raise ValueError
        return int(t) * mult
    except ValueError:
        from ..inputs import bad_value

        raise bad_value(field, text, integer=True, limit=limit, forms=example) from None


def unfit_k(arch: ModelArch, scheme: Scheme) -> int | None:
    """The smallest quantized K ``scheme``'s per-group weight scale does not divide (None: it divides them all,
    or the scheme has no per-group weight scale)."""
    w = scheme.weight
    if w is None or w.scale is None or not w.scale.group.is_per_group or not scheme.quantizes_weights:
        return None
    g = w.scale.group.col
    bad = [grp.k for grp in quantized_groups(inventory_of(arch), scheme) if grp.k % g]
    return min(bad) if bad else None


def fit_weight_group(arch: ModelArch, scheme: Scheme) -> tuple[Scheme, str | None]:
    """``scheme`` with its per-group weight scale shrunk to the largest power-of-two group (>= 16)
    that divides every quantized layer's K, and a note saying so; unchanged when it already fits.
    Used for the default scheme list (an explicit scheme keeps its group and fails loudly)."""
    bad = unfit_k(arch, scheme)
    if bad is None or scheme.weight is None or scheme.weight.scale is None:
        return scheme, None
    g = scheme.weight.scale.group.col
    ks = {grp.k for grp in quantized_groups(inventory_of(arch), scheme)}
    cand = g // 2
    while cand >= 16:
        if all(k % cand == 0 for k in ks):
            return (scheme.with_weight_group(cand),
                    f"{scheme.id} uses group {cand} here: {g} does not divide K = {bad}")
        cand //= 2
    return scheme, None
