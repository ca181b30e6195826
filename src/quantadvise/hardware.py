"""GPU rows of data/hardware.yaml: memory, bandwidth, dense peaks per math format, interconnect.

Pure domain type; ``registry`` loads the rows.
"""

from datetime import date

from pydantic import Field

from .results import Out

MATH_FORMATS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "fp4", "fp6")


class PeakFlops(Out):
    """Dense (no 2:4 sparsity) tensor-core peak per math format, FLOP/s; null = no such datapath."""

    __light_config__ = {"extra": "forbid"}
    fp32: float | None = None
    tf32: float | None = None
    bf16: float | None = None
    fp16: float | None = None
    fp8: float | None = None
    int8: float | None = None
    int4: float | None = None
    fp4: float | None = None
    fp6: float | None = None


class Interconnect(Out):
    __light_config__ = {"extra": "forbid"}
    kind: str
    bandwidth_bytes_per_s: float = Field(gt=0)  # per GPU, per direction
    note: str = ""


class GPU(Out):
    __light_config__ = {"extra": "forbid"}
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


# longer than any GPU's name or alias on file ("NVIDIA RTX PRO 6000 Blackwell Server Edition" is 45)
_LONGEST_NAME = 96
# words a GPU name carries that say nothing about which GPU it is
_VENDOR_WORDS = ("nvidia", "geforce", "tesla", "quadro", "amd", "instinct", "radeon")


def _family(name: str) -> tuple[str, int] | None:
    """("a", 6000) for "RTX A6000", ("rtx", 3090) for "GeForce RTX 3090", ("h", 100) for "h100-sxm":
    the letters before the model number (a leading "rtx" dropped before a letter-led number) and the
    number."""
    import re

    if len(name) > _LONGEST_NAME:  # no GPU name is that long (and the search below is quadratic in it)
        return None
    low = name.lower()
    for w in _VENDOR_WORDS:
        low = low.replace(w, " ")
    low = re.sub(r"\brtx[\s_-]*(?=[a-z]\d)", "", low.strip())
    m = re.search(r"([a-z]+)[\s_-]*(\d+)", low)
    return (m.group(1), int(m.group(2))) if m else None


# product lines whose letters change between generations (GeForce GTX -> RTX, Titan; Radeon RX): a
# typed name of a line with no row of its own letters is matched with the rows whose names carry the
# line's word, then with its vendor's rows
_LINES = {"gtx": "geforce", "rtx": "geforce", "titan": "geforce", "mi": "instinct", "rx": "radeon"}
_LINE_WORDS = ("geforce", "instinct", "radeon")
_VENDOR_OF = {"geforce": "nvidia", "tesla": "nvidia", "quadro": "nvidia", "nvidia": "nvidia",
              "instinct": "amd", "radeon": "amd", "amd": "amd"}


def _line_and_vendor(name: str) -> tuple[str | None, str | None]:
    low = name.lower()
    fam = _family(name)
    line = next((w for w in _LINE_WORDS if w in low), None) or (_LINES.get(fam[0]) if fam else None)
    vendor = next((v for w, v in _VENDOR_OF.items() if w in low), None) or (_VENDOR_OF.get(line) if line else None)
    return line, vendor


def family_suggestions(name: str, rows: list[tuple[str, tuple[str, ...], str | None]], n: int = 3) -> list[str]:
    """The ids of the GPUs closest to ``name`` by naming, for an unknown name: the same family (the
    same letters before the model number: ``v100s`` -> v100, ``a5000`` -> rtx-a6000), else the same
    product line (``gtx1080`` -> the GeForce RTX rows), else the same vendor; closest model number
    first within each. Empty when none applies. ``rows``: (id, its names, its vendor)."""
    want = _family(name)
    if want is None:
        return []
    line, vendor = _line_and_vendor(name)
    scored: dict[str, tuple[int, int]] = {}
    for gid, names, row_vendor in rows:
        row_line = next((w for w in _LINE_WORDS for a in names if w in a.lower()), None)
        for alias in names:
            fam = _family(alias)
            if fam is None:
                continue
            tier = 0 if fam[0] == want[0] else 1 if line is not None and row_line == line else \
                2 if vendor is not None and row_vendor == vendor else None
            if tier is None:
                continue
            got = (tier, abs(fam[1] - want[1]))
            scored[gid] = min(got, scored.get(gid, got))
    if not scored:
        return []
    best = min(t for t, _ in scored.values())
    return sorted((g for g in scored if scored[g][0] == best), key=lambda g: (scored[g], g))[:n]


def name_matches(name: str, rows: list[tuple[str, tuple[str, ...], str | None]]) -> list[str]:
    """The ids of the GPUs one of whose names is ``name`` followed by more words (``a100`` ->
    a100-40gb, a100-80gb): what a shared prefix stands for. Only for a name with a model number."""
    from .errors import norm_name

    low = norm_name(name)
    if not low or _family(low) is None:
        return []
    out: list[str] = []
    for gid, names, _ in rows:
        for alias in names:
            a = norm_name(alias)
            if len(a) > len(low) and a.startswith(low) and a[len(low)] in "- " and gid not in out:
                out.append(gid)
    return out
