"""Exporting NVIDIA's published per-kernel tables as the lookup tables quantadvise ships
(``data/kernel_tables/<gpu>.yaml`` and ``data/kernel_tables/<gpu>/*.csv.gz``).

The tables come from ``aiconfigurator-core`` 0.12.0 (Apache-2.0; ``systems/data/<system>/<op>/<engine>/
<version>/*.parquet``) and, for the TensorRT-LLM weight-only / SmoothQuant GEMMs that later releases
dropped, from older ``aiconfigurator`` wheels read straight from the ``.whl`` (``systems/data/<system>/
<engine>/<version>/gemm_perf.{txt,parquet}``). Every row is kept as published (milliseconds -> microseconds,
four significant digits); only shapes with N or K under :data:`MIN_SIDE` and sliding-window / beam
attention rows are left out.

What each table prices, and how, is :data:`GEMM_SPECS` (the kernel's own table), :data:`SAME_MATH`
(a same-math table for a kernel with none) and :data:`COMPOSED` (composition from the engine's math
table); what a measured call contains is read from ai-dynamo/aiconfigurator's collectors
(``collector/vllm/collect_gemm.py``, ``collector/sglang/collect_gemm.py``,
``collector/trtllm/collect_gemm.py`` and ``collect_gemm_trt.py``, ``collect_computescale.py``).

The I/O layer: pandas / pyarrow (the ``aiconfigurator`` extra), imported only by
``tools/import_aiconfigurator.py``.
"""

from __future__ import annotations

import gzip
import io
import re
import zipfile
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any, NamedTuple

from ..perf.attention_tables import kv_stream_rate, parse_attention
from ..perf.kernel_tables import TableMeta, dram_stream_rate, parse_gemm
from .glitches import attention_groups, drop_glitches, gemm_groups, moe_groups

PACKAGE = "aiconfigurator-core"
OLD_PACKAGE = "aiconfigurator"
LICENSE = "Apache-2.0"
MIN_SIDE = 128  # shapes with N or K below this are not shipped (no engine runs a dense GEMM that small)
# aiconfigurator system folder -> quantadvise GPU id (the GPUs the lookup tables cover)
SYSTEMS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "a100_sxm": "a100-80gb", "l40s": "l40s", "b200_sxm": "b200",
           "gb200": "gb200", "b300_sxm": "b300", "gb300": "gb300"}

COLLECT = {
    "vllm": "collector/vllm/collect_gemm.py: vLLM RowParallelLinear.forward in a CUDA graph",
    "sglang": "collector/sglang/collect_gemm.py: SGLang's GEMM ops in a CUDA graph",
    "trtllm-torch": "collector/trtllm/collect_gemm.py: TRT-LLM PyTorch-flow Linear in a CUDA graph",
    "trtllm-trt": ("collector/trtllm/collect_gemm_trt.py: a TensorRT engine with TRT-LLM plugins, fp16 activations, "
                   "per-channel weights (no groups); latency = the layer's time from a TRT IProfiler"),
}


class Spec(NamedTuple):
    """One shipped GEMM table: its id, the engine folder / release / kernel_source / gemm_dtype to read,
    the package (``core`` or an old ``aiconfigurator`` wheel version), the kernel id, the math, bytes per
    weight in the timed call, the quantization inside each call, and a note."""

    id: str
    engine: str
    version: str
    kernel_source: str  # exact, or a prefix ending in '*'
    dtype: str
    package: str
    kernel: str
    math: str
    weight_bytes: float
    includes_quant: str | None
    collector: str
    note: str = ""


def _core(engine: str, version: str, ks: str, dtype: str, kid: str, math: str, wb: float, q: str | None,
          note: str = "") -> Spec:
    coll = "trtllm-torch" if engine == "trtllm" else engine
    return Spec(f"{engine}/{kid}" if engine != "trtllm" else f"trtllm/{kid}", engine, version, ks, dtype, "core", kid,
                math, wb, q, coll, note)


def _trt(pkg: str, version: str, dtype: str, kid: str, math: str, wb: float, note: str) -> Spec:
    return Spec(f"trtllm/{kid}", "trtllm", version, "trt_flow*", dtype, pkg, kid, math, wb, None, "trtllm-trt", note)


FP8_BLOCK = 1.0 + 4.0 / (128 * 128)
NVFP4 = 0.5 + 1.0 / 16
_SQ = ("TRT-LLM SmoothQuant int8 GEMM (CUTLASS): per-channel int8 weights, per-tensor static int8 activations; "
       "the activation quantization is a separate layer, not in the time")
_I4 = "TRT-LLM weight-only int4 GEMM (fpA_intB CUTLASS / batched GEMV at small M), per-channel scales, fp16 activations"
_I8 = "TRT-LLM weight-only int8 GEMM (fpA_intB CUTLASS / batched GEMV at small M), per-channel scales, fp16 activations"
_LT = ("TRT-LLM FP8 Linear: dynamic per-tensor activation quantization + cublas_scaled_mm (cuBLASLt, the library "
       "behind torch._scaled_mm); the quantization is in the time")


def _bf16_and_fp8() -> list[Spec]:
    """The bf16 and per-tensor / per-token fp8 GEMMs of vLLM 0.24.0 and SGLang 0.5.14, as aiconfigurator-core
    times them on every GPU below (Hopper, L40S, B200)."""
    return [
        _core("vllm", "0.24.0", "torch.nn.functional.linear", "bfloat16", "cublas-bf16", "bf16", 2.0, None),
        _core("sglang", "0.5.14", "sglang_torch_linear", "bfloat16", "cublas-bf16", "bf16", 2.0, None),
        _core("vllm", "0.24.0", "CutlassFP8ScaledMMLinearKernel", "fp8", "cutlass-fp8", "fp8", 1.0, "static-quant",
              "static per-tensor activation scale, quantized eagerly inside each call"),
        _core("sglang", "0.5.14", "sglang_sgl_kernel_fp8_scaled_mm", "fp8", "sgl-fp8-scaled-mm", "fp8", 1.0,
              "per-token-quant", "sgl_per_token_quant_fp8 + fp8_scaled_mm"),
    ]


def _hopper(trt_pkg: str) -> list[Spec]:
    return [
        *_bf16_and_fp8(),
        _core("sglang", "0.5.14", "sglang_deepgemm_gemm_nt_f8f8bf16", "fp8_block", "deepgemm-fp8-block", "fp8",
              FP8_BLOCK, "per-token-quant", "per-token-group quantization + DeepGEMM gemm_nt_f8f8bf16"),
        _core("trtllm", "1.3.0rc20", "torch_flow", "fp8", "fp8-cublaslt", "fp8", 1.0, "per-tensor-quant", _LT),
        _trt(trt_pkg, "1.2.0rc5", "sq", "int8-sq", "int8", 1.0, _SQ),
        _trt(trt_pkg, "1.2.0rc5", "int4_wo", "int4-wo", "bf16", 0.5, _I4),
        _trt(trt_pkg, "1.2.0rc5", "int8_wo", "int8-wo", "bf16", 1.0, _I8),
    ]


GEMM_SPECS: dict[str, list[Spec]] = {
    "h100_sxm": _hopper("0.7.0"),
    "h200_sxm": _hopper("0.10.0"),
    "a100_sxm": [
        _core("vllm", "0.14.0", "vllm_default", "bfloat16", "cublas-bf16", "bf16", 2.0, None),
        _core("sglang", "0.5.10", "sglang", "bfloat16", "cublas-bf16", "bf16", 2.0, None),
        _trt("core", "1.0.0", "sq", "int8-sq", "int8", 1.0, _SQ),
        _trt("core", "1.0.0", "int4_wo", "int4-wo", "bf16", 0.5, _I4),
        _trt("core", "1.0.0", "int8_wo", "int8-wo", "bf16", 1.0, _I8),
    ],
    "l40s": [
        *_bf16_and_fp8(),
        # TRT-LLM 1.3.0rc20's L40S fp8 rows below M = 16 are implausible (INDEX.csv of the research); 1.0.0's are not
        Spec("trtllm/fp8-cublaslt", "trtllm", "1.0.0", "torch_flow", "fp8", "0.10.0", "fp8-cublaslt", "fp8", 1.0,
             "per-tensor-quant", "trtllm-torch", _LT + "; on sm89 TRT-LLM runs M <= 8 on a CUDA-core cuda_scaled_mm"),
        _trt("0.10.0", "1.0.0", "sq", "int8-sq", "int8", 1.0, _SQ),
        _trt("0.10.0", "1.0.0", "int4_wo", "int4-wo", "bf16", 0.5, _I4),
        _trt("0.10.0", "1.0.0", "int8_wo", "int8-wo", "bf16", 1.0, _I8),
    ],
    "b200_sxm": [
        *_bf16_and_fp8(),
        _core("sglang", "0.5.14", "sglang_deepgemm_gemm_nt_f8f8bf16", "fp8_block", "deepgemm-fp8-block", "fp8",
              FP8_BLOCK, "per-token-quant", "per-token-group quantization + DeepGEMM gemm_nt_f8f8bf16"),
        _core("vllm", "0.24.0", "FlashInferCuteDslNvFp4LinearKernel", "nvfp4", "flashinfer-cutedsl-nvfp4", "fp4",
              NVFP4, "fp4-quant", "the activation fp4 quantization is inside each call"),
        _core("sglang", "0.5.14", "sglang_flashinfer_cutedsl_nvfp4", "nvfp4", "flashinfer-cutedsl-nvfp4", "fp4",
              NVFP4, "fp4-quant", "the activation fp4 quantization is inside each call"),
        _core("trtllm", "1.3.0rc20", "torch_flow", "fp8", "fp8-cublaslt", "fp8", 1.0, "per-tensor-quant", _LT),
    ],
}
GEMM_SPECS["gb200"] = list(GEMM_SPECS["b200_sxm"])  # one Blackwell GPU of a GB200: the same engines' tables
# Blackwell Ultra (B300, one GPU of a GB300): the same engine releases timed the same kernels
GEMM_SPECS["b300_sxm"] = list(GEMM_SPECS["b200_sxm"])
GEMM_SPECS["gb300"] = list(GEMM_SPECS["b200_sxm"])
# activation-quantization tables (summed where two): id -> (engine folder, tables, what)
QUANT_SPECS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "vllm/static-quant": ("vllm", ("scale_matrix",), "static per-tensor fp8 quantization (static_scaled_fp8_quant)"),
    "vllm/per-token-quant": ("vllm", ("scale_matrix", "computescale"),
                             "dynamic per-token fp8 quantization: the static pass + the measured scale computation"),
    "trtllm/per-tensor-quant": ("trtllm", ("scale_matrix", "computescale"),
                                "TRT-LLM dynamic per-tensor fp8 quantization: scale computation + scaling (torch ops)"),
}
# kernels with no table of their own, priced by a same-math table on the same GPU: (kernel, weight bits or
# None for any, table id, why). A kernel listed for a GPU without that table is not priced this way there.
_I4WHY = ("int4 weights with 16-bit activations on the same GPU: TRT-LLM's measured weight-only int4 GEMM "
          "(per-channel; the scheme's group scales are added to the streamed bytes)")
_I8WHY = ("8-bit weights with 16-bit activations on the same GPU: TRT-LLM's measured weight-only int8 GEMM "
          "(per-channel; the scheme's scales are added to the streamed bytes)")
SAME_MATH: tuple[tuple[str, int | None, str, str], ...] = (
    *((k, 4, "trtllm/int4-wo", _I4WHY) for k in ("machete", "marlin", "humming")),
    *((k, 8, "trtllm/int8-wo", _I8WHY) for k in ("machete", "marlin", "humming", "allspark")),
    *((k, None, "trtllm/int4-wo", "4-bit float weights unpacked to 16 bits, 16-bit math: " + _I4WHY)
      for k in ("humming-nvfp4", "marlin-nvfp4", "humming-mxfp4", "marlin-mxfp4", "flashinfer-cutedsl-nvfp4-a16")),
    *((k, None, "trtllm/int8-wo", "fp8 weights unpacked to 16 bits, 16-bit math: " + _I8WHY)
      for k in ("humming-fp8", "marlin-fp8", "humming-mxfp8", "marlin-mxfp8")),
    *((k, None, "trtllm/int8-sq", "int8 weights and int8 activations on the int8 tensor cores: TRT-LLM's measured "
       "SmoothQuant int8 GEMM (per-channel x per-tensor; the engine's own activation quantization is added)")
      for k in ("cutlass-int8", "sgl-int8-scaled-mm")),
    *((k, None, "trtllm/fp8-cublaslt", "per-tensor fp8 on cuBLASLt: TRT-LLM's measured cublas_scaled_mm, its "
       "quantization taken off (the engine's own is added)") for k in ("torch-scaled-mm-fp8", "flashinfer-fp8")),
    ("flashinfer-mxfp4", None, "vllm/flashinfer-cutedsl-nvfp4", "fp4 weights and activations on the fp4 tensor cores: "
     "vLLM's measured FlashInfer NVFP4 GEMM (block scales of 16 against MXFP4's 32)"),
)
# kernels with neither: composed from the engine's table of the math they run (kernel, math kernel, the math the
# kernel computes on, why); where the GPU's peak of that math differs from the table's (int8 on Blackwell Ultra: 153.5
# TOPS against 4.5 PFLOPS of fp8) the compute part is scaled by the peaks' ratio where the tables are loaded
COMPOSED: tuple[tuple[str, str, str, str], ...] = (
    ("cutlass-w4a8", "cutlass-fp8", "fp8", "no dense W4A8 table: the int4 weight stream at the measured CUTLASS fp8 "
     "GEMM's streaming rate, its fp8 math once the math binds"),
    ("marlin", "cublas-bf16", "bf16", "no Marlin or int4 weight-only table on this GPU: the int4 weight stream at the "
     "measured cuBLAS GEMM's streaming rate, its bf16 math once the math binds"),
    ("cutlass-int8", "cutlass-fp8", "int8", "no int8 table on this GPU: the measured CUTLASS fp8 GEMM (same bytes; its "
     "math at the GPU's int8 tensor-core rate)"),
    ("sgl-int8-scaled-mm", "sgl-fp8-scaled-mm", "int8", "no int8 table on this GPU: SGLang's measured fp8 scaled_mm "
     "(same bytes; its math at the GPU's int8 tensor-core rate)"),
)
ATTENTION_ENGINES = ("vllm", "sglang")
# fused-MoE tables: kernel id -> per engine, the kernel_source names that time it (exact; the first a release has)
# and the table's moe_dtype. Of an engine's releases the table covering the most model configurations is shipped
# (the newest on a tie); one routing distribution, no expert parallelism (how the collector splits tokens over
# expert-parallel ranks is not documented; an expert-parallel layout is priced from the one-GPU rows, perf/parallel.py)
MOE_TABLE_SPECS: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {
    "triton-moe": ("bfloat16", {"vllm": ("vllm_unquantizedfusedmoe_triton_tritonexperts", "vllm_fused_moe"),
                                "sglang": ("sglang_fused_moe_triton",)}),
    "triton-fp8-block-moe": ("fp8_block", {"vllm": ("vllm_fp8moe_triton_tritonexperts", "vllm_fused_moe"),
                                           "sglang": ("sglang_fused_moe_triton",)}),
    "marlin-moe": ("int4_wo", {"vllm": ("vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts",
                                        "vllm_marlin_int4_moe"),
                               "sglang": ("sglang_marlin_moe",)}),
    "triton-mxfp4-moe": ("w4a16_mxfp4", {"vllm": ("vllm_gptossmxfp4moe_triton_oaitritonmxfp4expertsmonolithic",)}),
    "flashinfer-trtllm-mxfp4-moe": ("w4a16_mxfp4", {
        "vllm": ("vllm_gptossmxfp4moe_flashinfer_trtllm_mxfp4_bf16_trtllmmxfp4expertsmonolithic",)}),
    "flashinfer-trtllm-moe": ("bfloat16", {"vllm": ("vllm_unquantizedfusedmoe_flashinfer_trtllm_trtllmbf16experts",),
                                           "sglang": ("sglang_flashinfer_trtllm_moe",)}),
    "flashinfer-trtllm-fp8-block-moe": ("fp8_block", {"vllm": ("vllm_fp8moe_flashinfer_trtllm_trtllmfp8expertsmonolithic",),
                                                      "sglang": ("sglang_flashinfer_trtllm_moe",)}),
    "flashinfer-trtllm-fp8-moe": ("fp8", {
        "vllm": ("vllm_modeloptfp8moe_flashinfer_trtllm_trtllmfp8expertsmonolithic",)}),
    "flashinfer-trtllm-nvfp4-moe": ("nvfp4", {
        "vllm": ("vllm_compressedtensorsw4a4nvfp4moe_flashinfer_trtllm_trtllmnvfp4expertsmonolithic",),
        "sglang": ("sglang_flashinfer_trtllm_moe",)}),
}
SGLANG_TRTLLM_PAD = ("sglang 0.5.14 sglang/srt/layers/moe/fused_moe_triton/layer.py:229-237 (the flashinfer_trtllm "
                     "backend: intermediate_size_per_partition = round_up(intermediate_size_per_partition, 128) where "
                     "it is not a multiple of 128)")
# fused-MoE kernels whose timed release pads each GPU's expert intermediate size (kernel, engine, release ->
# the multiple, the engine source line): the table's sizes are the padded ones the kernel computes
MOE_INTER_ALIGN: dict[tuple[str, str, str], tuple[int, str]] = {
    ("flashinfer-trtllm-mxfp4-moe", "vllm", "0.24.0"): (
        256, "vllm 0.24.0 vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:647-648 "
             "(TRTLLM_BACKENDS: intermediate_size = round_up(intermediate_size, 256))"),
    # the OAI Triton kernel on sm90: vLLM 0.24.0 pads its experts to 64 only (the same file, :663-664), but the kernel
    # computes the per-GPU size in tiles of 128: the down GEMM's K in block_k 128 (4-bit weights without native MXFP),
    # the gate/up GEMM's N = 2 x the size in block_n 256 (vLLM swizzles with num_warps=8, mxfp4_utils.py:36)
    ("triton-mxfp4-moe", "vllm", "0.24.0"): (
        128, "vllm 0.24.0 vllm/third_party/triton_kernels/matmul_ogs_details/opt_flags_details/opt_flags_nvidia.py:"
             "35-36 (block_k = 128 for 4-bit weights without native MXFP: the down GEMM's K) and :23-24 (block_n 256: "
             "the gate/up GEMM's N, twice the size; vLLM swizzles with num_warps=8, quantization/utils/mxfp4_utils.py:36)"),
    # SGLang pads every FlashInfer TRT-LLM expert (bf16, block fp8, NVFP4) to 128; vLLM 0.24.0 pads only its MXFP4 ones
    **{(kid, "sglang", "0.5.14"): (128, SGLANG_TRTLLM_PAD) for kid in (
        "flashinfer-trtllm-moe", "flashinfer-trtllm-fp8-block-moe", "flashinfer-trtllm-nvfp4-moe")},
}
# aiconfigurator's own default for the expert load (sdk/models/deepseek.py:170 power_law_alpha 1.01; generic MoE
# models 1.2, sdk/models/moe.py:128): serving traffic is not routed evenly; the two power laws agree within a few %
MOE_DISTRIBUTION = "power_law_1.01"
MOE_KEYS = ["hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size"]


# -- reading ------------------------------------------------------------------------------------------------
def _read_parquet(data: bytes | Path) -> Any:
    import pandas as pd

    return pd.read_parquet(io.BytesIO(data) if isinstance(data, bytes) else data)


def core_root(source: str | Path | None) -> tuple[Path, str]:
    """(``.../aiconfigurator_core/systems/data``, package version) of the installed or unpacked core."""
    from .aiconfigurator import data_root, package_version

    root = data_root(source)
    return root, package_version(root)


def _version_key(v: str) -> tuple[int | str, ...]:
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"[.]|rc|post", v))


def core_table(root: Path, system: str, op: str, engine: str, version: str | None, name: str) -> tuple[Path, Any] | None:
    folder = root / system / op / engine
    found = sorted(folder.glob(f"*/{name}.parquet"), key=lambda p: _version_key(p.parent.name))
    if version is not None:
        found = [p for p in found if p.parent.name == version]
    if not found:
        return None
    return found[-1], _read_parquet(found[-1])


def wheel_table(wheels: Path, pkg: str, system: str, engine: str, version: str) -> tuple[str, Any] | None:
    """``gemm_perf`` of an old aiconfigurator wheel (``pip download aiconfigurator==<pkg> --no-deps``)."""
    import pandas as pd

    for whl in sorted(wheels.glob(f"aiconfigurator-{pkg}-*.whl")):
        z = zipfile.ZipFile(whl)
        for ext in ("parquet", "txt"):
            name = f"aiconfigurator/systems/data/{system}/{engine}/{version}/gemm_perf.{ext}"
            if name in z.namelist():
                raw = z.read(name)
                return name, (_read_parquet(raw) if ext == "parquet" else pd.read_csv(io.BytesIO(raw)))
    return None


def _pick(t: Any, spec: Spec) -> Any:
    ks = spec.kernel_source
    match = t.kernel_source.str.startswith(ks[:-1]) if ks.endswith("*") else (t.kernel_source == ks)
    return t[match & (t.gemm_dtype == spec.dtype)]


# -- writing ------------------------------------------------------------------------------------------------
def _fmt(v: float) -> str:
    return f"{v:.4g}"


def gemm_csv(rows: Any, header: list[str]) -> tuple[str, int]:
    """One GEMM table as text: ``#`` header lines, then ``n,k,<M grid>`` and one line per (N, K) cell with its
    microseconds per call at each M (blank: no row)."""
    rows = rows[(rows.n >= MIN_SIDE) & (rows.k >= MIN_SIDE) & (rows.latency > 0)]
    g = rows.groupby(["n", "k", "m"]).latency.median()
    ms = sorted({int(m) for m in rows.m})
    lines = [*(f"# {h}" for h in header), "n,k," + ",".join(str(m) for m in ms)]
    for (n, k), cell in g.groupby(level=[0, 1]):
        vals = {int(m): float(v) * 1e3 for (_, _, m), v in cell.items()}
        lines.append(f"{int(n)},{int(k)}," + ",".join(_fmt(vals[m]) if m in vals else "" for m in ms))
    return "\n".join(lines) + "\n", int(len(g))


def quant_csv(tables: list[Any], header: list[str]) -> tuple[str, int]:
    """An activation-quantization table (the sum of ``tables`` at each (M, K)): rows ``1,k,...``."""
    import functools

    keyed = [t[t.latency > 0].groupby(["k", "m"]).latency.median() for t in tables]
    total = functools.reduce(lambda a, b: a.add(b, fill_value=None).dropna(), keyed)
    ms = sorted({int(m) for _, m in total.index})
    lines = [*(f"# {h}" for h in header), "n,k," + ",".join(str(m) for m in ms)]
    for k, cell in total.groupby(level=0):
        vals = {int(m): float(v) * 1e3 for (_, m), v in cell.items()}
        lines.append(f"1,{int(k)}," + ",".join(_fmt(vals[m]) if m in vals else "" for m in ms))
    return "\n".join(lines) + "\n", int(len(total))


def attention_csv(t: Any, header: list[str]) -> tuple[str, int]:
    """Decode attention (one layer, one call) per head configuration: ``heads,kv_heads,head_dim,kv_dtype,batch``
    and microseconds at each KV length (isl + step) of the grid."""
    keep = t.latency > 0
    for col, want in (("window_size", 0), ("beam_width", 1)):
        if col in t:
            keep &= t[col] == want
    t = t[keep].copy()
    t["kv"] = t.isl + t.step
    keys = ["num_heads", "num_key_value_heads", "head_dim", "kv_cache_dtype", "batch_size", "kv"]
    g = t.groupby(keys).latency.median()
    kvs = sorted({int(x) for x in t.kv})
    lines = [*(f"# {h}" for h in header), "heads,kv_heads,head_dim,kv_dtype,batch," + ",".join(str(x) for x in kvs)]
    for key, cell in g.groupby(level=[0, 1, 2, 3, 4]):
        vals = {int(idx[-1]): float(v) * 1e3 for idx, v in cell.items()}
        h, kvh, hd, dt, b = key
        dt = "fp8" if "fp8" in str(dt) else "bf16"
        lines.append(f"{int(h)},{int(kvh)},{int(hd)},{dt},{int(b)}," + ",".join(
            _fmt(vals[x]) if x in vals else "" for x in kvs))
    return "\n".join(lines) + "\n", int(len(g))


def moe_csv(rows: Any, header: list[str]) -> tuple[str, int]:
    """A fused-MoE table as text: ``hidden,inter,topk,experts,tp,<token counts>`` and one line per model
    configuration with its microseconds per MoE layer (gate/up and down of the experts) at each token count."""
    rows = rows[rows.latency > 0]
    g = rows.groupby([*MOE_KEYS, "num_tokens"]).latency.median()
    toks = sorted({int(m) for m in rows.num_tokens})
    lines = [*(f"# {h}" for h in header), "hidden,inter,topk,experts,tp," + ",".join(str(m) for m in toks)]
    for key, cell in g.groupby(level=list(range(len(MOE_KEYS)))):
        vals = {int(idx[-1]): float(v) * 1e3 for idx, v in cell.items()}
        lines.append(",".join(str(int(x)) for x in key) + "," + ",".join(
            _fmt(vals[m]) if m in vals else "" for m in toks))
    return "\n".join(lines) + "\n", int(len(g))


def _write_gz(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # mtime 0: the same tables give the same bytes
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
        f.write(text.encode("utf-8"))


def _file_of(table_id: str) -> str:
    return table_id.replace("/", "-") + ".csv.gz"


def export_gpu(root: Path, core_version: str, wheels: Path | None, system: str, out: Path, as_of: date,
               l2_bytes: int | None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Write one GPU's tables under ``out/<gpu>/`` and return its index document (``out/<gpu>.yaml``);
    ``l2_bytes``: the GPU's L2 (each GEMM and grouped-query attention table's sustained stream, :func:`_stream_field`)."""
    gid = SYSTEMS[system]
    folder = out / gid
    metas: list[dict[str, Any]] = []
    for spec in GEMM_SPECS[system]:
        got: tuple[Any, Any] | None
        if spec.package == "core":
            got = core_table(root, system, "gemm", spec.engine, spec.version, "gemm_perf")
            pkg, pkg_ver = PACKAGE, core_version
            rel = str(got[0].relative_to(root.parent.parent.parent)) if got is not None else ""
        else:
            if wheels is None:
                log(f"{gid}: {spec.id} needs the aiconfigurator {spec.package} wheel (--wheels)")
                continue
            got = wheel_table(wheels, spec.package, system, spec.engine, spec.version)
            pkg, pkg_ver = OLD_PACKAGE, spec.package
            rel = got[0] if got is not None else ""
        if got is None:
            log(f"{gid}: no table for {spec.id} ({spec.engine} {spec.version}, {pkg} {pkg_ver})")
            continue
        rows = _pick(got[1], spec)
        if rows.empty:
            log(f"{gid}: {spec.id}: no {spec.kernel_source} {spec.dtype} rows in {rel}")
            continue
        ks = str(rows.kernel_source.iloc[0])
        device = str(rows.device.iloc[0]) if "device" in rows else ""
        source = f"{pkg} {pkg_ver} ({LICENSE}), {rel}"
        text, n = gemm_csv(rows, [f"{spec.id}: {ks} ({spec.dtype}), {spec.engine} {spec.version}, {device}",
                                  f"source: {source}", f"as_of: {as_of.isoformat()}",
                                  "unit: microseconds per call (blank: no row); columns: n, k, then one per M"])
        shipped = drop_glitches(text, 2, gemm_groups)
        _write_gz(folder / _file_of(spec.id), shipped)
        row = {"id": spec.id, "file": _file_of(spec.id), "engine": spec.engine, "engine_version": spec.version,
               "kernel": spec.kernel, "kernel_source": ks, "math": spec.math, "weight_bytes": spec.weight_bytes,
               "includes_quant": spec.includes_quant, "package": pkg, "package_version": pkg_ver, "license": LICENSE,
               "table": rel, "device": device, "collector": "ai-dynamo/aiconfigurator " + COLLECT[spec.collector],
               "rows": n, "note": spec.note, "source": source, "as_of": as_of}
        # no L2 on file (B300, GB300): no cell can be told cached from streamed, so no stream is recorded
        rate = dram_stream_rate(parse_gemm(TableMeta.model_validate(row), shipped), l2_bytes) if l2_bytes else None
        metas.append({**row, **_stream_field(rate)})
    quants = _export_quant(root, core_version, system, folder, as_of)
    moes = _export_moe(root, core_version, system, folder, as_of)
    attn = _export_attention(root, core_version, system, folder, as_of, l2_bytes)
    attn += _export_mla(root, core_version, system, folder, as_of)
    have = {m["id"] for m in metas}
    same = [{"kernel": k, **({"weight_bits": b} if b else {}), "table": tid, "why": why,
             "source": "quantadvise calibration/aic_tables.py SAME_MATH", "as_of": as_of}
            for k, b, tid, why in SAME_MATH if tid in have]
    comp = [{"kernel": k, "math_kernel": mk, "why": why, "source": "quantadvise calibration/aic_tables.py COMPOSED",
             "as_of": as_of, "math": math} for k, mk, math, why in COMPOSED
            if not any(s["kernel"] == k for s in same) and any(m["kernel"] == mk for m in metas)]
    return {"schema_version": 1, "gpu": gid, "source": f"{PACKAGE} {core_version} and {OLD_PACKAGE} wheels ({LICENSE}); "
            "tools/import_aiconfigurator.py --tables", "license": LICENSE, "as_of": as_of,
            "note": "published per-kernel latency tables (NVIDIA, measured); every row as published, microseconds",
            "tables": metas, "same_math": same, "composed": comp, "quant": quants, "attention": attn,
            "moe": moes}


def _export_quant(root: Path, core_version: str, system: str, folder: Path, as_of: date) -> list[dict[str, Any]]:
    out = []
    for qid, (engine, names, what) in QUANT_SPECS.items():
        got = [core_table(root, system, "quantize", engine, None, f"{n}_perf") for n in names]
        if any(g is None for g in got):
            continue
        paths = [g[0] for g in got if g is not None]
        tabs = [g[1] for g in got if g is not None]
        ver = paths[0].parent.name
        rel = ", ".join(str(p.relative_to(root.parent.parent.parent)) for p in paths)
        source = f"{PACKAGE} {core_version} ({LICENSE}), {rel}"
        text, n = quant_csv(tabs, [f"{qid}: {what}, {engine} {ver}", f"source: {source}",
                                   f"as_of: {as_of.isoformat()}", "unit: microseconds per call; columns: n (1), k, M"])
        _write_gz(folder / _file_of(qid), text)
        out.append({"id": qid, "file": _file_of(qid), "engine": engine, "engine_version": ver, "kernel": qid.split("/")[1],
                    "kernel_source": str(tabs[0].kernel_source.iloc[0]), "math": "bf16", "weight_bytes": 1.0,
                    "package": PACKAGE, "package_version": core_version, "license": LICENSE, "table": rel,
                    "device": str(tabs[0].device.iloc[0]), "collector": "ai-dynamo/aiconfigurator "
                    "collector/*/collect_computescale.py", "rows": n, "note": what, "source": source, "as_of": as_of})
    return out


def _where(root: Path, core_version: str, path: Path) -> tuple[str, str, str]:
    """(the release folder, the file inside the package, the source line) of one core table."""
    rel = str(path.relative_to(root.parent.parent.parent))
    return path.parent.name, rel, f"{PACKAGE} {core_version} ({LICENSE}), {rel}"


def _moe_rows(root: Path, system: str, engine: str, sources: tuple[str, ...], dtype: str) -> tuple[Path, Any] | None:
    """Of ``engine``'s MoE tables on this system, the rows of the release covering the most configurations
    (the newest on a tie) for the first of ``sources`` it times."""
    best: tuple[int, tuple[int | str, ...], Path, Any] | None = None
    for path in sorted((root / system / "moe" / engine).glob("*/moe_perf.parquet")):
        t = _read_parquet(path)
        base = t[(t.moe_dtype == dtype) & (t.moe_ep_size == 1) & (t.distribution == MOE_DISTRIBUTION)]
        for ks in sources:
            rows = base[base.kernel_source == ks]
            if rows.empty:
                continue
            n = len(rows.groupby(MOE_KEYS))
            key = (n, _version_key(path.parent.name))
            if n >= 2 and (best is None or key > best[:2]):
                best = (n, key[1], path, rows)
            break
    return None if best is None else (best[2], best[3])


def _export_moe(root: Path, core_version: str, system: str, folder: Path, as_of: date) -> list[dict[str, Any]]:
    from .aiconfigurator import MOE_SPECS

    specs = {s.kid: s for s in MOE_SPECS}
    out = []
    for kid, (dtype, by_engine) in MOE_TABLE_SPECS.items():
        spec = specs[kid]
        for engine, sources in by_engine.items():
            got = _moe_rows(root, system, engine, sources, dtype)
            if got is None:
                continue
            path, rows = got
            ver, rel, source = _where(root, core_version, path)
            ks = str(rows.kernel_source.iloc[0])
            tid = f"{engine}/{kid}"
            text, n = moe_csv(rows, [f"{tid}: {ks} ({dtype}, {MOE_DISTRIBUTION}), {engine} {ver}, {rows.device.iloc[0]}",
                                     f"source: {source}", f"as_of: {as_of.isoformat()}",
                                     "unit: microseconds per MoE layer (blank: no row); columns: hidden, inter, topk, "
                                     "experts, tp (the tensor-parallel split of inter), then one per token count"])
            _write_gz(folder / _file_of(tid), drop_glitches(text, 5, moe_groups))
            out.append({"id": tid, "file": _file_of(tid), "engine": engine, "engine_version": ver, "kernel": kid,
                        "kernel_source": ks, "math": spec.math, "weight_bytes": spec.weight_bytes,
                        "package": PACKAGE, "package_version": core_version, "license": LICENSE, "table": rel,
                        "device": str(rows.device.iloc[0]), "collector": f"ai-dynamo/aiconfigurator collector/{engine}/"
                        f"collect_moe.py ({dtype}, {MOE_DISTRIBUTION})", "rows": n,
                        "note": f"{spec.what}: one call per MoE layer (gate/up and down of the experts the tokens reach), "
                        f"expert load {MOE_DISTRIBUTION}, no expert parallelism",
                        **_inter_align(kid, engine, ver), "source": source, "as_of": as_of})
    return out


def _stream_field(rate: float | None) -> dict[str, Any]:
    """A table's ``stream_bytes_per_s`` index field (:func:`~quantadvise.perf.kernel_tables.dram_stream_rate`,
    :func:`~quantadvise.perf.attention_tables.kv_stream_rate`; none: no call large enough)."""
    return {} if rate is None else {"stream_bytes_per_s": float(f"{rate:.4g}")}


def _inter_align(kid: str, engine: str, version: str) -> dict[str, Any]:
    got = MOE_INTER_ALIGN.get((kid, engine, version))
    return {} if got is None else {"inter_align": got[0], "inter_align_source": got[1]}


def _export_decode(root: Path, core_version: str, system: str, folder: Path, as_of: date, *, op: str, name: str,
                   kernel: str, engines: tuple[str, ...], unit: str, collector: str, note: str,
                   prepare: Callable[[Any], Any] | None = None, l2_bytes: int | None = None) -> list[dict[str, Any]]:
    """One decode-attention table per engine (``<engine>/<kernel>``) from the core's ``<op>/<engine>/*/<name>``:
    the rows :func:`attention_csv` writes (``prepare`` first shapes a table that lacks its columns), its launch
    floor and, given the GPU's L2 (grouped-query tables), the KV read it sustains from memory."""
    out = []
    for engine in engines:
        got = core_table(root, system, op, engine, None, name)
        if got is None:
            continue
        path, t = got
        if prepare is not None:
            t = prepare(t)
        ver, rel, source = _where(root, core_version, path)
        ks = " / ".join(sorted(set(map(str, t.kernel_source))))
        tid = f"{engine}/{kernel}"
        text, n = attention_csv(t, [f"{tid}: {ks}, {engine} {ver}, {t.device.iloc[0]}", f"source: {source}",
                                    f"as_of: {as_of.isoformat()}", unit])
        shipped = drop_glitches(text, 5, attention_groups)
        _write_gz(folder / _file_of(tid), shipped)
        row: dict[str, Any] = {"id": tid, "file": _file_of(tid), "engine": engine, "engine_version": ver,
                               "kernel": kernel, "kernel_source": ks, "math": "bf16", "weight_bytes": 2.0,
                               "package": PACKAGE, "package_version": core_version, "license": LICENSE, "table": rel,
                               "device": str(t.device.iloc[0]),
                               "collector": f"ai-dynamo/aiconfigurator collector/{engine}/{collector} (generation: "
                               "one new token per sequence attending isl + step cached tokens)",
                               "rows": n, "note": note}
        table = parse_attention(TableMeta.model_validate({**row, "source": source, "as_of": as_of}), shipped)
        rate = kv_stream_rate(table, l2_bytes) if l2_bytes is not None else None
        out.append({**row, "floor_us": round(table.measured_floor() * 1e6, 6), **_stream_field(rate),
                    "source": source, "as_of": as_of})
    return out


def _export_attention(root: Path, core_version: str, system: str, folder: Path, as_of: date,
                      l2_bytes: int | None) -> list[dict[str, Any]]:
    return _export_decode(root, core_version, system, folder, as_of, op="attention", name="generation_attention_perf",
                          kernel="attention-decode", engines=ATTENTION_ENGINES, l2_bytes=l2_bytes,
                          unit="unit: microseconds per call (one layer); columns: heads, kv_heads, head_dim, "
                               "kv_dtype, batch, then one per KV length (isl + step)",
                          collector="collect_attn.py",
                          note="decode attention of one layer; sliding-window and beam rows left out")


# MLA decode attention (DeepSeek-V2/V3/R1, Kimi K2: one latent KV head of kv_lora_rank 512 + rope 64 = 576):
# SGLang's published generation tables (trtllm_mla on B200, FlashAttention-3 on Hopper); num_heads is per GPU
MLA_ENGINES = ("sglang",)
MLA_HEAD_DIM = 512 + 64


def _mla_rows(t: Any) -> Any:
    t = t[t.mla_dtype == "bfloat16"].copy()
    t["num_key_value_heads"], t["head_dim"] = 1, MLA_HEAD_DIM
    return t


def _export_mla(root: Path, core_version: str, system: str, folder: Path, as_of: date) -> list[dict[str, Any]]:
    return _export_decode(root, core_version, system, folder, as_of, op="mla", name="generation_mla_perf",
                          kernel="mla-decode", engines=MLA_ENGINES, prepare=_mla_rows,
                          unit="unit: microseconds per call (one MLA layer); columns: heads (per GPU), kv_heads "
                               f"(1: the latent), head_dim ({MLA_HEAD_DIM}: kv_lora_rank 512 + rope 64), kv_dtype, "
                               "batch, then one per KV length (isl + step)",
                          collector="collect_mla.py",
                          note="MLA decode attention of one layer (DeepSeek's latent dimensions), bf16 math")


def iter_systems(wanted: set[str] | None) -> Iterator[tuple[str, str]]:
    for system, gid in SYSTEMS.items():
        if wanted is None or gid in wanted:
            yield system, gid
