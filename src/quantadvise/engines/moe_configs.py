"""Whether an engine's Triton fused-MoE kernel finds a tuned configuration for a model's experts on a GPU.

vLLM and SGLang run routed experts through their Triton fused-MoE kernel (the ``triton-moe`` and
``triton-fp8-block-moe`` rows of a release's kernel table) with a tile configuration per token count, read from a
JSON file the release ships, named ``E=<experts per GPU>,N=<intermediate size per GPU>,device_name=<the GPU's torch
device name, spaces as _>[,dtype=<quantization>][,block_shape=[n,k]].json``; with none the kernel runs its default
tiles and the engine logs that performance might be sub-optimal. ``data/moe_configs/<engine>-<version>.yaml``
(:class:`MoeConfigs`, written by ``tools/extract_moe_configs.py`` from the release's artifact) lists the files and
cites where the release names and looks them up; :func:`moe_tuning` builds the name the release looks for as the
release builds it.

Pure: the lists are values (``catalog.moe_configs`` reads them).
"""

from datetime import date

from ..results import Strict
from ..results.records import record
from .flags import engine_label

# the kernel ids (data/kernels moe_kernels) of the engines' Triton fused-MoE -> (dtype selector, block shape): bf16
# experts name no dtype; block fp8 experts are fp8_w8a8 with 128 x 128 blocks (vLLM / SGLang get_config_dtype_str)
TRITON_MOE: dict[str, tuple[str | None, tuple[int, int] | None]] = {
    "triton-moe": (None, None),
    "triton-fp8-block-moe": ("fp8_w8a8", (128, 128)),
}


class MoeConfigs(Strict):
    """The tuned fused-MoE configurations one release ships (file stems; SGLang's under a Triton version folder)."""

    schema_version: int
    engine: str
    version: str
    source: str
    as_of: date
    file_name: str  # where the release builds a file's name
    block_shape_spaces: bool  # the name writes the block shape as Python prints a list ("[128, 128]")
    h200_family: str | None  # where the release names every H200-family GPU NVIDIA_H200 (None: it does not)
    lookup: str
    shape: str  # where E and N come from
    default_message: str  # what the release logs when it finds none
    default_message_at: str
    configs: tuple[str, ...]


@record(slots=True)
class MoeTuning:
    """The file the release looks for, and whether it ships it."""

    file: str
    found: bool


def config_stem(cfgs: MoeConfigs, kernel: str, *, experts: int, inter: int, device_name: str) -> str | None:
    """The file (without .json) ``cfgs``'s release looks for when ``kernel`` runs ``experts`` experts of per-GPU
    intermediate size ``inter`` on a GPU named ``device_name``; None: not a Triton fused-MoE kernel."""
    if kernel not in TRITON_MOE:
        return None
    dtype, block = TRITON_MOE[kernel]
    device = device_name.replace(" ", "_")
    if cfgs.h200_family is not None and "H200" in device.split("_"):
        device = "NVIDIA_H200"
    stem = f"E={experts},N={inter},device_name={device}"
    if dtype:
        stem += f",dtype={dtype}"
    if block:
        stem += f",block_shape=[{block[0]}, {block[1]}]" if cfgs.block_shape_spaces else \
            f",block_shape=[{block[0]},{block[1]}]"
    return stem


def moe_tuning(cfgs: MoeConfigs, kernel: str, *, experts: int, inter: int, device_name: str) -> MoeTuning | None:
    """Whether the release ships the tuned configuration ``kernel`` looks for (SGLang: in any Triton version's
    folder: it falls back to another version's file before the default tiles); None: not a Triton kernel."""
    stem = config_stem(cfgs, kernel, experts=experts, inter=inter, device_name=device_name)
    if stem is None:
        return None
    shipped = {c.rsplit("/", 1)[-1] for c in cfgs.configs}
    return MoeTuning(file=stem + ".json", found=stem in shipped)


def default_tiles(cfgs: MoeConfigs, tuning: MoeTuning, model: str, gpu: str) -> str:
    """The caution of experts that run the kernel's default tiles, in the release's own words."""
    return (f"{model}'s routed experts on {gpu} run {engine_label(cfgs.engine)} {cfgs.version}'s Triton fused-MoE "
            f"kernel with its default tiles: the release ships no tuned configuration {tuning.file} and logs "
            f"\"{cfgs.default_message}\" ({cfgs.default_message_at})")
