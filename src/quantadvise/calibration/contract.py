"""The contract between a calibration and its timing backends: the kernel one scheme's linear layers
run on (:class:`Kernel`), what a backend reports about its device and its timings, and the
:class:`Backend` protocol the torch and simulated backends implement (``backends.py``). Pure."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ..results import record

if TYPE_CHECKING:
    from ..perf.profiles import LinearShape


@record(slots=True)
class Kernel:
    """How the torch backend runs one scheme's linear layers (the simulated backend mirrors it)."""

    scheme: str  # preset id
    kind: str  # bf16 | fp8-tensor | fp8-rowwise | int8-dynamic | int4-weight-only
    description: str
    min_capability: int  # SM (major*10 + minor) the torch kernel needs
    kernel_id: str = ""  # the kernel timed, as data/kernels/*.yaml names it: its curve prices only that kernel
    engine: str = ""  # "" = torch's own kernel; "vllm" = the engine's custom ops (.engine_ops)
    engine_version: str = ""
    ops: tuple[str, ...] = ()  # the engine's custom ops the timed call (and its weight prepack) use
    fused_quant: bool = False  # the engine fuses the activation quantization into the producer: not timed

    @property
    def key(self) -> str:
        """``vllm/cutlass-fp8`` for an engine's kernel, the bare id for torch's own."""
        return f"{self.engine}/{self.kernel_id}" if self.engine else self.kernel_id


@record(slots=True)
class DeviceInfo:
    gpu_name: str  # as the driver reports it
    driver_version: str | None
    cuda_version: str | None
    torch_version: str | None
    capability: int | None  # major*10 + minor
    l2_cache_bytes: int | None
    memory_bytes: int | None


@record(slots=True)
class Timing:
    seconds: float  # median
    spread: float  # (p90 - p10) / median over the samples
    note: str = ""  # how it was timed when not the normal way (e.g. eager because capture failed)


class Backend(Protocol):
    name: str
    simulated: bool

    def device(self) -> DeviceInfo: ...

    def read_bandwidth(self, budget_s: float) -> tuple[float, int]:
        """(bytes/s, buffer bytes) of a read-only pass over a buffer far larger than the L2."""
        ...

    def gemm_flops(self, fmt: str, shape: tuple[int, int, int], budget_s: float) -> float:
        """FLOP/s of one dense GEMM (fmt: bf16, fp8, fp8-rowwise, int8)."""
        ...

    def linear_step(self, kernel: Kernel, shapes: tuple[LinearShape, ...], batch: int, budget_s: float) -> Timing:
        """Seconds of every shape x count at GEMM height ``batch`` (weights rotated past the L2)."""
        ...

    def rotation(self, kernel: Kernel, shapes: tuple[LinearShape, ...]) -> int:
        """Copies of one layer's weights the backend cycles through (1 when it holds all layers)."""
        ...

    def close(self) -> None: ...


Progress = Callable[[str, int, int], None]  # (what is being measured, steps done, steps in all)
