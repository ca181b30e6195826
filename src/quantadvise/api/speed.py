"""The efficiency one prediction uses: profiles layered for a GPU, and the kernels the engine runs.

Also the $ per GPU-hour every cost figure uses (:func:`price_for`).

Every command that prices a scheme (``roofline``, ``recommend``, ``predict``, ``check``) resolves its
:class:`~quantadvise.perf.efficiency.Efficiency` here, so the same scheme on the same GPU and engine
gets the same kernel and the same curve in every command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import catalog, defaults

if TYPE_CHECKING:
    from ..hardware import GPU
    from ..perf.efficiency import Efficiency, KernelContext
    from ..perf.serving import Price
    from ..scheme.axes import Scheme


def kernel_context(gpu: GPU, scheme: Scheme, engine: str | None = None, version: str | None = None,
                   quantization: str | None = None) -> KernelContext | None:
    """The engine release's kernel table, the GPU's capability and the scheme (None: no table on file
    for the engine, or a GPU outside NVIDIA's, where the tables do not apply)."""
    from ..perf.efficiency import KernelContext

    if gpu.vendor.lower() != "nvidia":
        return None
    eng = catalog.get_engine(engine or defaults.ENGINE, version)
    table = catalog.kernel_table(eng.engine, eng.version)
    if table is None:
        return None
    return KernelContext(table=table, capability=gpu.capability, scheme=scheme, quantization=quantization,
                         engine_version=eng.version if eng.version != table.version else None)


def kernel_note(engine: str | None = None, version: str | None = None) -> str | None:
    """The one note a command shows when the release it prices has no kernel table of its own: which release's
    table stands in and why that is a stand-in (its carried record's caveat, data/kernels/carried/)."""
    eng = catalog.get_engine(engine or defaults.ENGINE, version)
    caveat = catalog.kernel_caveat(eng.engine, eng.version)
    return f"kernels: {caveat}" if caveat else None


def efficiency(profiles: list[Any], gpu: GPU, scheme: Scheme, *, engine: str | None = None,
               version: str | None = None, quantization: str | None = None) -> Efficiency:
    """``scheme``'s efficiency on ``gpu`` under ``engine`` ``version`` (the newest bundled when None):
    the layered profiles, and with any profile but the spec sheet, the kernel the engine runs for each
    linear layer and that kernel's measured curve."""
    from ..perf.efficiency import resolve

    names = catalog.scheme_names(scheme.id) or (scheme.id,)
    ctx = None if any(getattr(p, "ideal", False) for p in profiles) else kernel_context(gpu, scheme, engine, version,
                                                                                        quantization)
    return resolve(profiles, (gpu.id, gpu.name, *gpu.aliases), names, kernels=ctx)


def price_for(g: GPU, usd_per_gpu_hour: float | None) -> Price | None:
    """``usd_per_gpu_hour`` when given (a flag, an env var or a workload key), else the GPU's list price
    on file, else None (the cost figures are left out)."""
    from ..perf.serving import Price

    if usd_per_gpu_hour is not None:
        return Price(usd_per_gpu_hour=usd_per_gpu_hour, kind="given",
                     source="--usd-per-gpu-hour / usd_per_gpu_hour")
    row = catalog.gpu_price(g.id)
    if row is None:
        return None
    return Price(usd_per_gpu_hour=row.usd_per_gpu_hour, kind=row.kind, source=row.source, as_of=row.as_of,
                 offer=row.offer)
