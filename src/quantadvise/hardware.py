"""GPU rows of data/hardware.yaml: memory, bandwidth, dense peaks per math format, interconnect.

Pure domain type; ``registry`` loads the rows.
"""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, ConfigDict, Field

MATH_FORMATS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "fp4", "fp6")


class PeakFlops(BaseModel):
    """Dense (no 2:4 sparsity) tensor-core peak per math format, FLOP/s; null = no such datapath."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    fp32: float | None = None
    tf32: float | None = None
    bf16: float | None = None
    fp16: float | None = None
    fp8: float | None = None
    int8: float | None = None
    int4: float | None = None
    fp4: float | None = None
    fp6: float | None = None


class Interconnect(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    kind: str
    bandwidth_bytes_per_s: float = Field(gt=0)  # per GPU, per direction
    note: str = ""


class GPU(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    id: str
    name: str
    # the name the driver reports (nvidia-smi, torch.cuda.get_device_name()), which the engines print in
    # their messages ("Your Tesla T4 GPU ..."); None where no public log of it is on file
    device_name: str | None = None
    aliases: tuple[str, ...] = ()
    vendor: str
    architecture: str
    compute_capability: str | None = None
    gfx_target: str | None = None
    memory_bytes: int = Field(gt=0)
    memory_note: str = ""
    bandwidth_bytes_per_s: float = Field(gt=0)
    l2_cache_bytes: int | None = None
    sm_count: int | None = None
    peak_flops: PeakFlops
    interconnect: Interconnect | None = None
    tdp_watts: float | None = None
    source: str
    as_of: date
    notes: str = ""

    def peak(self, math: str) -> float | None:
        """Dense peak for a math datapath; fp16/bf16 fall back to each other."""
        v = getattr(self.peak_flops, math, None)
        if v is None and math in ("bf16", "fp16"):
            v = getattr(self.peak_flops, "fp16" if math == "bf16" else "bf16", None)
        return v

    def has_math(self, math: str) -> bool:
        return self.peak(math) is not None

    def native_peak(self, math: str) -> float | None:
        """Dense peak of the chip's own datapath for ``math``, without :meth:`peak`'s bf16/fp16 stand-in:
        None on a GPU with no such tensor-core datapath (bf16 on Volta and Turing)."""
        return getattr(self.peak_flops, math, None)

    @property
    def capability(self) -> int | None:
        """Compute capability as vLLM compares it: "9.0" -> 90."""
        if not self.compute_capability:
            return None
        major, _, minor = self.compute_capability.partition(".")
        return int(major) * 10 + int(minor or 0)

    @property
    def platform(self) -> str:
        """The engines' platform for this GPU: ``rocm`` for AMD, else ``cuda``."""
        return "rocm" if self.vendor.lower() == "amd" else "cuda"

    @property
    def engine_capability(self) -> int | None:
        """The capability the engines compare: the CUDA compute capability, or on ROCm the one vLLM derives
        from the gfx target (gfx942 -> 94: :func:`gcn_capability`)."""
        if self.capability is not None:
            return self.capability
        return gcn_capability(self.gfx_target) if self.gfx_target else None

    def ridge(self, math: str) -> float | None:
        """FLOP per byte where the roofline turns from memory- to compute-bound."""
        p = self.peak(math)
        return None if p is None else p / self.bandwidth_bytes_per_s


def gcn_capability(gfx: str) -> int | None:
    """(major, minor) as vLLM's ROCm platform derives it from a GCN arch string, mirroring HIP's
    hipDeviceProp_t (vllm/platforms/rocm.py ``_capability_from_gcn_arch``): "gfx" + major (1 digit for
    gfx9, 2 for gfx10+) + minor + stepping, as ``major*10 + minor``: gfx90a -> 90, gfx942 -> 94,
    gfx950 -> 95, gfx1100 -> 110. None for a string it cannot read."""
    import re

    m = re.match(r"gfx(\d+)", gfx.strip().lower())
    if not m:
        return None
    d = m.group(1)
    if len(d) in (2, 3):
        return int(d[0]) * 10 + int(d[1])
    if len(d) == 4:
        return int(d[:2]) * 10 + int(d[2])
    return None


# words a GPU name carries that say nothing about which GPU it is
_VENDOR_WORDS = ("nvidia", "geforce", "tesla", "quadro", "amd", "instinct", "radeon")


def _family(name: str) -> tuple[str, int] | None:
    """("a", 6000) for "RTX A6000", ("rtx", 3090) for "GeForce RTX 3090", ("h", 100) for "h100-sxm":
    the letters before the model number (a leading "rtx" dropped before a letter-led number) and the
    number."""
    import re

    low = name.lower()
    for w in _VENDOR_WORDS:
        low = low.replace(w, " ")
    low = re.sub(r"\brtx[\s_-]*(?=[a-z]\d)", "", low.strip())
    m = re.search(r"([a-z]+)[\s_-]*(\d+)", low)
    return (m.group(1), int(m.group(2))) if m else None


def family_suggestions(name: str, rows: list[tuple[str, tuple[str, ...]]], n: int = 3) -> list[str]:
    """The ids of the GPUs of the same family as ``name`` (same letters before the model number),
    closest model number first; empty when no row shares the family. ``rows``: (id, its names)."""
    want = _family(name)
    if want is None:
        return []
    scored: dict[str, int] = {}
    for gid, names in rows:
        for alias in names:
            fam = _family(alias)
            if fam is not None and fam[0] == want[0]:
                d = abs(fam[1] - want[1])
                scored[gid] = min(d, scored.get(gid, d))
    return sorted(scored, key=lambda g: (scored[g], g))[:n]
