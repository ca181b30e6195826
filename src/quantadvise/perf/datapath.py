"""Which tensor cores a scheme's GEMMs run on, on one GPU: natively, weight-only (a W+A scheme
whose float weights engines run with 16-bit activations where the chip lacks the datapath), or
not at all.

Pure: no I/O, no printing.
"""

from __future__ import annotations

from ..errors import SchemeError
from ..hardware import GPU
from ..results import record
from ..scheme.axes import Scheme, TensorQuant
from ..scheme.formats import get_format


@record(slots=True)
class Datapath:
    math: str  # the datapath the scheme's quantized GEMMs use on this GPU
    execution: str  # "native" | "weight-only" (a W+A scheme run with 16-bit activations)
    dequant: bool  # stored weights are converted inside the kernel
    note: str | None = None  # why it is not native (a warning)


def _microscaled(a: TensorQuant) -> bool:
    """Activation scales per 16/32 elements along K (NVFP4, MX formats) need block-scaled tensor
    cores; every chip in the table that has them also has the fp4 datapath (Blackwell, CDNA4)."""
    return a.scale is not None and a.scale.group.is_per_group and a.scale.group.col <= 32


def datapath(scheme: Scheme, gpu: GPU) -> Datapath:
    """How ``scheme``'s GEMMs run on ``gpu``; SchemeError when no engine can run it there.

    - unquantized and weight-only schemes: bf16 tensor cores (weight-only dequantises in-kernel);
    - W+A on a chip with that datapath: native (W4A8 still converts its int4 weights to fp8);
    - W+A with float weights (fp8, fp4, MX) on a chip without the datapath: engines run the weights
      weight-only — vLLM's FP8 runs as W8A16 through Marlin below SM89, NVFP4 and MXFP4 through
      Marlin below SM100, AMD parts through emulation — modelled as weight-only, with a warning;
    - W+A with integer weights on a chip without the datapath (W4A8-FP8 on A100, W8A8-INT8 on a
      chip without int8 tensor cores): no engine path, an error.
    """
    if not scheme.quantizes_weights:
        return Datapath("bf16", "native", False)
    if scheme.weight_only:
        return Datapath("bf16", "native", scheme.needs_dequant)
    a, w = scheme.activation, scheme.weight
    assert a is not None and w is not None
    math_fmt = scheme.math_format
    reason = None
    if not gpu.has_math(math_fmt):
        reason = f"{gpu.name} has no {math_fmt} tensor cores"
    elif _microscaled(a) and not gpu.has_math("fp4"):
        kind = a.scale.group.kind("activation") if a.scale else "group"
        reason = f"{gpu.name} has no block-scaled tensor cores for {kind} activation scales"
    if reason is None:
        return Datapath(math_fmt, "native", scheme.needs_dequant)
    if get_format(w.format).is_float:
        return Datapath(
            "bf16",
            "weight-only",
            True,
            f"{scheme.id}: {reason}; engines run its {w.format} weights weight-only (dequantised into bf16 "
            f"GEMMs: vLLM's Marlin kernels on NVIDIA, emulation on AMD), so it is modelled as "
            f"W{w.bits}A16 with 16-bit activations",
        )
    raise SchemeError(
        f"scheme '{scheme.id}' cannot run on {gpu.name}: {reason}, and no engine runs {w.format} weights "
        f"with {a.format} activations another way",
        hint="use a weight-only scheme such as w4a16 or w8a16",
        field="scheme",
    )
