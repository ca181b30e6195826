"""Kernels an engine release picks for a scheme but that raise on some GPUs at the first forward pass: the model
loads, then the engine's start-up profile run calls the kernel and stops with the kernel's own message (vLLM's
CUTLASS ``scaled_mm`` has no int8 kernel on SM100 and up, and every int8 W8A8 layer runs it on CUDA). Read by
hand from each release's C++ sources (``data/engines/<release>.yaml`` ``kernel_refusals``, with the message in its
``messages``). Pure."""

from datetime import date

from ..results import Strict


class KernelRefusal(Strict):
    """The layers of ``schemes`` (scheme classes as the dispatch names them) refused at start-up on CUDA GPUs of
    compute capability ``min_capability`` .. ``max_capability``; ``message``: an id of the release's messages."""

    id: str
    kernel: str | None = None  # the kernel's id in the release's kernel table (data/kernels), where it has one
    schemes: tuple[str, ...]
    min_capability: int
    max_capability: int | None = None
    message: str
    note: str = ""
    source: str
    as_of: date

    def on(self, capability: int | None, platform: str = "cuda") -> bool:
        """Whether it holds on a GPU of this capability and platform."""
        return platform == "cuda" and capability is not None and capability >= self.min_capability and \
            (self.max_capability is None or capability <= self.max_capability)

    def applies(self, scheme_class: str | None, capability: int | None, platform: str) -> bool:
        return scheme_class in self.schemes and self.on(capability, platform)


def refusal_of(refusals: tuple[KernelRefusal, ...], kernel: str, capability: int | None,
               platform: str = "cuda") -> KernelRefusal | None:
    """The refusal of the kernel ``kernel`` (an id of the release's kernel table) on this GPU, if any."""
    return next((r for r in refusals if r.kernel == kernel and r.on(capability, platform)), None)
