"""The native-format node of the tree: the checkpoint as its publisher ships it (the checkpoint side,
:class:`~quantadvise.checkpoint.native.Native`, is read in ``checkpoint/native.py``). Re-quantizations
must beat it by more than a tie (DESIGN.md §3b). Pure: values in, values out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import defaults
from .result import TraceNode

if TYPE_CHECKING:
    from .options import Context, Option


def node_native(ctx: Context, options: list[Option]) -> TraceNode:
    """a. native — what the checkpoint ships, and what serving it as shipped means."""
    nat = ctx.native
    numbers: dict[str, Any] = {"ships_quantized": nat is not None}
    if nat is None:
        return TraceNode(
            node="native", numbers=numbers,
            decision="the checkpoint is 16-bit (no quantization_config): every quantized candidate is a "
                     "re-quantization of its weights")
    o = next((o for o in options if o.native), None)
    ck = nat.checkpoint
    numbers.update(candidate=nat.id, quant_method=ck.quant_method, found_in=ck.found_in, preset=nat.preset,
                   quantized_components=list(nat.quantized), kept_16bit=list(nat.kept),
                   weights_bytes=o.weights_bytes if o is not None else None)
    size = f", {o.weights_bytes / 1e9:.1f} GB of weights" if o is not None and o.weights_bytes else ""
    flag = ("no --quantization flag (the engines read the method from the checkpoint's "
            f"{ck.found_in})" if ck.engines_read_it else
            f"only --quantization {ck.quant_method} (its parameters are in {ck.found_in}, which only the producer's "
            "loader reads)")
    reasons = [
        f"serving as shipped needs no calibration and {flag}; its accuracy is the publisher's own evaluation",
        "every other candidate re-quantizes the dequantized 16-bit weights: to displace it, it must be predicted "
        f"faster by more than {defaults.NATIVE_MARGIN:.0%} (the speed model's validated error) with no accuracy "
        "risk at this tolerance",
        *nat.notes,
    ]
    return TraceNode(
        node="native", numbers=numbers, reasons=reasons,
        decision=f"ships {ck.summary()} ({', '.join(nat.quantized)} quantized{size}): candidate {nat.id}, "
                 "preferred on ties",
    )
