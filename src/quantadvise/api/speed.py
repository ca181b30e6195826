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
    from ..model.arch import ModelArch
    from ..perf.efficiency import Efficiency, KernelContext
    from ..perf.serving import Price
    from ..scheme.axes import Scheme
    from ..workload import Workload


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
    from dataclasses import replace

    tables = catalog.kernel_tables(gpu.id) if ctx is not None else None
    eff = resolve(profiles, (gpu.id, gpu.name, *gpu.aliases), names, kernels=ctx, tables=tables,
                  borrowed_quants=sibling_quants(sib) if (sib := getattr(tables, "sibling", None)) else None)
    return eff if eff.ideal else replace(eff, bands=catalog.uncertainty_bands(gpu.id))


def sibling_quants(sibling: str) -> dict[str, Any] | None:
    """The activation-quantization curves of ``sibling``, the GPU whose tables are moved to the one priced (its
    measured profile's; None: it ships none)."""
    prof = catalog.measured_profile(sibling)
    if prof is None:
        return None
    sib = catalog.get_gpu(sibling)
    entry = prof.entry_for((sib.id, sib.name, *sib.aliases))
    return dict(entry.quant_kernels) if entry is not None else None


def moe_cautions(arch: ModelArch, gpu: GPU, scheme: Scheme, eff: Efficiency, w: Workload) -> tuple[str, ...]:
    """A candidate's cautions for workload ``w``: :func:`moe_default_tiles` at its GPUs and release (empty: none)."""
    got = moe_default_tiles(arch, gpu, scheme, eff, model=w.model, gpus=w.gpus, engine=w.engine,
                            version=w.engine_version)
    return (got,) if got else ()


def moe_default_tiles(arch: ModelArch, gpu: GPU, scheme: Scheme, eff: Efficiency, *, model: str, gpus: int,
                      engine: str | None, version: str | None) -> str | None:
    """The caution of a MoE model whose routed experts, split over ``gpus`` by tensor parallelism, run the engine
    release's Triton fused-MoE kernel with its default tiles on ``gpu``: the release ships no tuned configuration
    for them (``engines.moe_configs``). None: tuned, another kernel, or not known (no list on file for this exact
    release, no device name on file for the GPU, a stand-in kernel)."""
    from ..engines.moe_configs import default_tiles, moe_tuning
    from ..perf.efficiency import is_stand_in

    if not arch.is_moe or eff.kernels is None or gpu.device_name is None or not arch.moe_intermediate_size \
            or arch.moe_intermediate_size % gpus:
        return None
    choice = eff.kernels.choose_moe(scheme.quantizes_weights, arch.architecture)
    if choice is None or is_stand_in(choice):
        return None
    eng = catalog.get_engine(engine or defaults.ENGINE, version)
    cfgs = catalog.moe_configs(eng.engine, eng.version)
    if cfgs is None:
        return None
    tuning = moe_tuning(cfgs, choice.kernel.id, experts=arch.num_experts, inter=arch.moe_intermediate_size // gpus,
                        device_name=gpu.device_name)
    if tuning is None or tuning.found:
        return None
    return default_tiles(cfgs, tuning, model, gpu.name)


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
