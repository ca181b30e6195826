"""Importing NVIDIA's published per-kernel tables (``aiconfigurator-core``, Apache-2.0) as profiles.

``aiconfigurator-core`` ships measured latency tables per GPU and engine release under
``aiconfigurator_core/systems/data/<system>/<op>/<engine>/<version>/*.parquet``, each row naming the
kernel it timed. This module reads the dense GEMM tables, the activation-quantization tables and the
fused-MoE Marlin tables, fits a :class:`~.kernel_curves.KernelCurve` per kernel (:mod:`.kernel_fit`)
on part of the shapes and batches, and keeps the rest as held-out data (:data:`HELD_OUT_SETS`, every
other batch), so that ``validate`` and the tests measure the error on calls the fit never saw.

The I/O layer: reads the package's files with pandas/pyarrow (the ``aiconfigurator`` extra), and is
imported only by ``tools/import_aiconfigurator.py`` and ``quantadvise calibrate --from
aiconfigurator``. What a measured call contains is read from the collectors of ai-dynamo/aiconfigurator
(``collector/vllm/collect_gemm.py``: a vLLM RowParallelLinear forward, static per-tensor fp8 with its
eager activation quantization, CUDA graph, except fp8 block which was timed without one;
``collector/sglang/collect_gemm.py``: sgl_per_token_quant_fp8 + fp8_scaled_mm, per-token-group quant +
DeepGEMM, F.linear; ``collect_computescale.py``: static quantization and the dynamic per-token
increment).
"""

from __future__ import annotations

import importlib.util
from datetime import date
from pathlib import Path
from typing import Any, NamedTuple

from .. import defaults
from ..errors import InputError
from ..hardware import GPU
from ..perf.kernel_curves import HeldOut, KernelCurve, QuantCurve, TableSource
from ..wording import install_hint
from .heldout import HELD_OUT_CELLS, heldout_errors, moe_config, moe_errors
from .kernel_fit import M_KNOTS, Calls, fit_calls, fit_moe, fit_quant

PACKAGE = "aiconfigurator-core"
LICENSE = "Apache-2.0"
# aiconfigurator system folder -> quantadvise GPU id
SYSTEMS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "a100_sxm": "a100-80gb", "l40s": "l40s",
           "b200_sxm": "b200", "gb200": "gb200", "b300_sxm": "b300", "gb300": "gb300",
           "rtx_pro_6000_server": "rtx-pro-6000"}
# (engine, kernel_source) -> (kernel id, activation quant inside the measured call, bytes per weight element)
GEMM_KERNELS: dict[tuple[str, str], tuple[str, str | None]] = {
    ("vllm", "torch.nn.functional.linear"): ("cublas-bf16", None),
    ("vllm", "vllm_default"): ("cublas-bf16", None),
    ("vllm", "CutlassFP8ScaledMMLinearKernel"): ("cutlass-fp8", "static-quant"),
    ("vllm", "FlashInferCuteDslNvFp4LinearKernel"): ("flashinfer-cutedsl-nvfp4", "included"),
    ("vllm", "FlashInferCutlassNvFp4LinearKernel"): ("flashinfer-cutlass-nvfp4", "included"),
    ("sglang", "sglang_torch_linear"): ("cublas-bf16", None),
    ("sglang", "sglang"): ("cublas-bf16", None),
    ("sglang", "sglang_sgl_kernel_fp8_scaled_mm"): ("sgl-fp8-scaled-mm", "per-token-quant"),
    ("sglang", "sglang_deepgemm_gemm_nt_f8f8bf16"): ("deepgemm-fp8-block", "per-token-quant"),
    ("sglang", "sglang_flashinfer_cutedsl_nvfp4"): ("flashinfer-cutedsl-nvfp4", "included"),
    ("sglang", "sglang_flashinfer_cutlass_nvfp4"): ("flashinfer-cutlass-nvfp4", "included"),
}
# tables timed without CUDA graphs (host launch time inside every small call): not fitted
# aiconfigurator quantize/<engine>/ tables fitted as activation-quantization curves (see fit_system)
QUANTIZE_TABLES_FITTED = ("vllm",)
SKIPPED = {("vllm", "DeepGemmFp8BlockScaledMMKernel"), ("vllm", "FlashInferFp8BlockScaledMMKernel"),
           ("vllm", "CutlassFp8BlockScaledMMKernel"), ("vllm", "TritonFp8BlockScaledMMKernel")}
DTYPE = {"bfloat16": ("bf16", 2.0, 2.0), "float16": ("bf16", 2.0, 2.0), "fp8": ("fp8", 1.0, 1.0),
         "fp8_block": ("fp8", 1.0 + 4.0 / (128 * 128), 1.0), "nvfp4": ("fp4", 0.5 + 1.0 / 16, 0.5 + 1.0 / 16)}
COLLECTORS = {
    "vllm": "ai-dynamo/aiconfigurator collector/vllm/collect_gemm.py: vLLM RowParallelLinear.forward in a CUDA graph "
            "(fp8: static per-tensor activation scale, quantized eagerly inside the call)",
    "sglang": "ai-dynamo/aiconfigurator collector/sglang/collect_gemm.py (sglang==0.5.14): F.linear; "
              "sgl_per_token_quant_fp8 + fp8_scaled_mm; per-token-group quant + DeepGEMM gemm_nt_f8f8bf16",
}
def gemm_m_tile(gpu: GPU) -> int:
    """Rows per M tile of a dense GEMM's compute term on ``gpu`` with ``--gemm-m-tile``, fixed before
    fitting (docs/roofline.md §6b): 64 on Hopper (sm90 wgmma) and datacenter Blackwell (sm100 tcgen05), whose tensor-core
    instructions compute 64 rows at least, so their GEMMs step there (H200 CUTLASS fp8, 4096 x 4096:
    10.8 us at M = 64, 14.4 us at M = 80); 1 elsewhere (16-row mma.sync tiles, no coarser than the
    tables' 16-row batch steps)."""
    major = (gpu.compute_capability or "").split(".")[0]
    return 64 if major in ("9", "10") else 1


MIN_SIDE = 512  # shapes with N or K below this are outside the curves' knots (and the engines' big GEMMs)
MAX_M = 16384


def data_root(source: str | Path | None = None) -> Path:
    """``.../aiconfigurator_core/systems/data``: under ``source`` (an unpacked wheel or the package
    folder) or the installed package."""
    if source is None:
        spec = importlib.util.find_spec("aiconfigurator_core")
        if spec is None or not spec.submodule_search_locations:
            raise InputError("the aiconfigurator-core package is not installed",
                             hint=f"{install_hint('aiconfigurator')}, or pass the unpacked wheel's folder",
                             field="source")
        base = Path(next(iter(spec.submodule_search_locations)))
    else:
        base = Path(source)
    for cand in (base / "systems" / "data", base / "aiconfigurator_core" / "systems" / "data", base):
        if (cand / "h200_sxm").is_dir() or any(cand.glob("*/gemm")):
            return cand
    raise InputError(f"no aiconfigurator tables under {base} (expected aiconfigurator_core/systems/data)",
                     field="source")


def package_version(root: Path) -> str:
    """The aiconfigurator-core version of the tables (its dist-info next to the package), else 'unknown'."""
    pkg = root.parent.parent
    infos = sorted(pkg.parent.glob("aiconfigurator_core-*.dist-info"))
    if infos:
        return infos[-1].name.removeprefix("aiconfigurator_core-").removesuffix(".dist-info")
    try:
        from importlib.metadata import version

        return version(PACKAGE)
    except Exception:  # noqa: BLE001 - metadata is best effort; the caller can pass it
        return "unknown"


def _read(path: Path) -> Any:
    try:
        import pandas as pd
    except ImportError:
        raise InputError("reading aiconfigurator tables needs pandas and pyarrow",
                         hint=install_hint("aiconfigurator"), field="source") from None
    return pd.read_parquet(path)


def _newest(folder: Path, table: str) -> Path | None:
    def key(p: Path) -> tuple[int | str, ...]:
        return tuple(int(x) if x.isdigit() else x for x in p.parent.name.replace("rc", ".").replace("post", ".").split("."))

    found = sorted(folder.glob(f"*/{table}"), key=key)
    return found[-1] if found else None


def _split_m(ms: list[int]) -> set[int]:
    """Held-out batch sizes: every other one (the smallest and largest stay in the fit)."""
    ms = sorted(ms)
    return {m for i, m in enumerate(ms) if i % 2 == 1 and m != ms[-1]}


def _plus_one(m: int) -> bool:
    """Batch sizes one past a tile boundary (17, 33, ... 257, 513, ...): the tables time them on
    purpose; engines pad decode batches to CUDA-graph sizes (multiples of 8 / 16), so they are left out."""
    return m > 16 and m % 16 == 1


def _source(rel: str, ks: str, engine: str, version: str, device: str, rows: int, pkg_version: str, as_of: date,
            collector: str = "") -> TableSource:
    return TableSource(package=PACKAGE, version=pkg_version, license=LICENSE, table=rel, kernel_source=ks,
                       engine=engine, engine_version=version, device=device, collector=collector, rows_fit=rows,
                       as_of=as_of)


def import_gpu(root: Path, system: str, gpu: GPU, *, pkg_version: str, as_of: date,
               gemm_tiles: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """One GPU's curves (``{"kernels": {...}, "quant_kernels": {...}, "notes": [...]}``) and its
    held-out data (the document ``validate`` reads). ``gemm_tiles``: price the dense GEMMs' compute in
    :func:`gemm_m_tile` rows (opt-in, docs/calibration.md §7)."""
    import numpy as np

    bw = gpu.bandwidth_bytes_per_s
    kernels: dict[str, KernelCurve] = {}
    quants: dict[str, QuantCurve] = {}
    held: dict[str, Any] = {}
    notes: list[str] = []
    for engine in defaults.ENGINES:
        # activation quantization: static and dynamic per-token fp8
        # (SGLang's table times torch's eager static ops, slower than its own per-token kernel, so its
        # scale-computation increment reads 0: only vLLM's custom-kernel tables are fitted)
        qdir = root / system / "quantize" / engine
        sm, cs = _newest(qdir, "scale_matrix_perf.parquet"), _newest(qdir, "computescale_perf.parquet")
        if engine in QUANTIZE_TABLES_FITTED and sm is not None and cs is not None:
            a, b = _read(sm), _read(cs)
            ver = str(a.version.iloc[0])
            joined = a.merge(b, on=["m", "k"], suffixes=("_s", "_c"))
            for kid, secs, bpe, qpath, ks, what in (
                ("static-quant", a.latency.to_numpy() * 1e-3, 3.0, sm, str(a.kernel_source.iloc[0]),
                 "static per-tensor fp8 quantization of the activations"),
                ("per-token-quant", (joined.latency_s + joined.latency_c).to_numpy() * 1e-3, 5.0, cs,
                 f"{a.kernel_source.iloc[0]} + {b.kernel_source.iloc[0]}",
                 "dynamic per-token fp8 quantization (static pass + the measured scale computation)"),
            ):
                mm = (a.m if kid == "static-quant" else joined.m).to_numpy(float)
                kk = (a.k if kid == "static-quant" else joined.k).to_numpy(float)
                keep = (kk >= MIN_SIDE) & (secs > 0)
                ks_vals = sorted(set(kk[keep]))
                test_k = {v for i, v in enumerate(ks_vals) if i % 2}
                tr = keep & ~np.isin(kk, list(test_k))
                te = keep & np.isin(kk, list(test_k))
                c0, eff, _ = fit_quant(mm[tr], kk[tr], secs[tr], bytes_per_element=bpe, bandwidth=bw)
                err = np.abs((c0 + mm[te] * kk[te] * bpe / (eff * bw)) / secs[te] - 1)
                quants[f"{engine}/{kid}"] = QuantCurve(
                    kernel=kid, engine=engine, basis="measured", note=what, overhead_s=c0, bytes_per_element=bpe,
                    efficiency=eff,
                    measured=_source(str(qpath.relative_to(root.parent.parent.parent)), ks, engine, ver,
                                     str(a.device.iloc[0]), int(tr.sum()), pkg_version, as_of),
                    heldout=HeldOut(gemm_points=int(te.sum()), gemm_median=float(np.median(err)),
                                    gemm_max=float(err.max()), method="every other K held out"))
        # dense GEMMs
        gpath = _newest(root / system / "gemm" / engine, "gemm_perf.parquet")
        if gpath is None:
            continue
        table = _read(gpath)
        ver = str(table.version.iloc[0])
        rel = str(gpath.relative_to(root.parent.parent.parent))
        for (ks, dt), rows in table.groupby(["kernel_source", "gemm_dtype"]):
            if (engine, ks) in SKIPPED:
                notes.append(f"{engine} {ks} ({rel}) was timed without a CUDA graph (host launch time in every "
                             "call, per the collector); not fitted")
                continue
            spec = GEMM_KERNELS.get((engine, ks))
            if spec is None or dt not in DTYPE:
                continue
            kid, quant = spec
            math_fmt, wbytes, abytes = DTYPE[dt]
            peak = gpu.peak(math_fmt)
            if peak is None:
                continue
            rows = rows[(rows.n >= MIN_SIDE) & (rows.k >= MIN_SIDE) & (rows.m <= MAX_M) & (rows.latency > 0)]
            rows = rows[~rows.m.map(_plus_one)]
            test_m = _split_m(sorted(set(rows.m.astype(int))))
            cell = [(int(n), int(k)) in HELD_OUT_CELLS for n, k in zip(rows.n, rows.k, strict=True)]
            is_cell = np.asarray(cell, bool)
            is_test_m = rows.m.isin(test_m).to_numpy()
            tr, te = rows[~is_cell & ~is_test_m], rows[is_cell & is_test_m]
            qc = (quants.get(f"{engine}/{quant}") or quants.get(f"vllm/{quant}")) if quant not in (None, "included") else None
            extra = None if qc is None else np.array([qc.time(m, k, bw) for m, k in zip(tr.m, tr.k, strict=True)])
            calls = Calls(tr.m.to_numpy(float), tr.n.to_numpy(float), tr.k.to_numpy(float),
                          tr.latency.to_numpy(float) * 1e-3, extra)
            tile = gemm_m_tile(gpu) if gemm_tiles else 1
            # the M factor is read at the rows computed, its knots from one tile up: every M within a tile
            # costs the same, and the time never falls as M grows
            fr = fit_calls(calls, weight_bytes=wbytes, act_bytes=abytes, bandwidth=bw, peak=peak, m_tile=tile,
                           tile_m_factor=tile > 1, m_knots=tuple(x for x in M_KNOTS if x >= tile))
            what = {None: "", "included": "; the measured call includes the activation fp4 quantization",
                    "static-quant": "; the measured call's eager static activation quantization is priced by "
                                    f"{engine}/static-quant and left out of the curve",
                    "per-token-quant": "; the measured call's per-token activation quantization is priced by "
                                       f"{engine}/per-token-quant and left out of the curve"}[quant]
            curve = KernelCurve(
                kernel=kid, engine=engine, basis="measured", math=math_fmt, act_bytes=abytes,
                includes_quant=quant == "included", overhead_s=fr.overhead_s, blend=fr.blend, nk_knots=fr.nk_knots,
                memory_efficiency=fr.memory_efficiency, compute_efficiency=fr.compute_efficiency,
                m_knots=fr.m_knots, m_factor=fr.m_factor, m_tile=tile, tile_m_factor=tile > 1,
                note=(f"fitted on {len(tr)} calls (N, K >= {MIN_SIDE}, M <= {MAX_M})"
                      + (f"; compute in {tile}-row M tiles" if tile > 1 else "") + what),
                measured=_source(rel, str(ks), engine, ver, str(table.device.iloc[0]), len(tr), pkg_version, as_of,
                                 COLLECTORS[engine]))
            doc, summary = _heldout_gemm(curve, te, wbytes, bw, peak, qc)
            kernels[curve.key] = curve.model_copy(update={"heldout": summary})
            held[curve.key] = doc
    marlin = _import_marlin(root, system, gpu, pkg_version=pkg_version, as_of=as_of)
    if marlin is not None:
        curve, doc = marlin
        kernels[curve.key] = curve
        held[curve.key] = doc
    return {"kernels": kernels, "quant_kernels": quants, "notes": notes}, held


def _heldout_gemm(curve: KernelCurve, te: Any, wbytes: float, bw: float, peak: float,
                  quant: QuantCurve | None) -> tuple[dict[str, Any], HeldOut]:
    """The held-out calls as a compact document (cells x batches, measured seconds; ``quant`` names
    the curve that prices the activation quantization inside each measured call) and the error
    summary (:func:`heldout_errors`)."""

    ms = sorted(set(int(m) for m in te.m))
    cells = sorted({(int(n), int(k)) for n, k in zip(te.n, te.k, strict=True)})
    idx = {(int(n), int(k), int(m)): float(t) * 1e-3 for n, k, m, t in zip(te.n, te.k, te.m, te.latency, strict=True)}
    seconds = [[_sig(idx[(n, k, m)]) if (n, k, m) in idx else None for m in ms] for n, k in cells]
    doc = {"weight_bytes": wbytes, "quant": quant.key if quant is not None else None, "batches": ms,
           "cells": [list(c) for c in cells], "seconds": seconds}
    return doc, heldout_errors(curve, doc, bw, peak, quant)


MOE_TABLES = (("sglang", "sglang_marlin_moe"), ("vllm", "marlin"))  # SGLang's cover more model shapes
MARLIN_M_TILE = 64  # Marlin computes M in blocks of up to 4 x 16 rows
INT4_G128_BYTES = 0.5 + 2.0 / 128  # int4 weights with one 16-bit scale per 128
FP8_BLOCK_BYTES = 1.0 + 4.0 / (128 * 128)  # fp8 weights with one fp32 scale per 128 x 128 block
NVFP4_BYTES = 0.5 + 1.0 / 16  # fp4 e2m1 weights with one fp8 scale per 16 (the fp32 global scale is negligible)
TRITON_MOE_M_TILE = 16  # the fused-MoE Triton kernel pads each expert's rows to BLOCK_SIZE_M (16 at decode sizes)


class MoeSpec(NamedTuple):
    """One fused-MoE kernel fitted to a published MoE table: the quantadvise kernel id, the table's
    ``moe_dtype``, the tables searched in order ((engine, substring of kernel_source)), bytes per
    weight element, bytes per activation element, the tensor cores, the rows per M tile, and what the
    kernel is."""

    kid: str
    dtype: str
    tables: tuple[tuple[str, str], ...]
    weight_bytes: float
    act_bytes: float
    math: str
    m_tile: int
    what: str
    first_table: bool = True  # the first (engine, marker) with tables wins; False: the most shapes over all


MOE_SPECS = (
    MoeSpec("marlin-moe", "int4_wo", MOE_TABLES, INT4_G128_BYTES, 2.0, "bf16", MARLIN_M_TILE,
            "fused-MoE Marlin (int4 weight-only, group 128)", False),
    # vLLM's TritonExperts: the FP8 MoE backend vLLM 0.33.0 puts first on Hopper for block FP8 under tensor
    # parallelism (fused_moe/oracle/fp8.py:122-132); measured as vllm_fp8moe_triton_tritonexperts
    MoeSpec("triton-fp8-block-moe", "fp8_block", (("vllm", "triton_tritonexperts"), ("vllm", "vllm_fused_moe"),
                                                  ("sglang", "sglang_fused_moe_triton")),
            FP8_BLOCK_BYTES, 1.0, "fp8", TRITON_MOE_M_TILE,
            "fused-MoE Triton (fp8 weights in 128 x 128 blocks, fp8 activations in 1 x 128 groups)"),
    # vLLM's unquantized TritonExperts (fused_moe/oracle/unquantized.py:69-80: Triton ahead of FlashInfer on SM90)
    MoeSpec("triton-moe", "bfloat16", (("vllm", "unquantizedfusedmoe_triton"), ("vllm", "vllm_fused_moe"),
                                       ("sglang", "sglang_fused_moe_triton")),
            2.0, 2.0, "bf16", TRITON_MOE_M_TILE, "fused-MoE Triton (bf16 weights and activations)"),
    # gpt-oss MXFP4 experts on Hopper: OAI triton_kernels matmul_ogs (fused_moe/oracle/mxfp4.py:402-425)
    MoeSpec("triton-mxfp4-moe", "w4a16_mxfp4", (("vllm", "gptossmxfp4moe_triton"), ("vllm", "vllm_mxfp4_moe")),
            0.5 + 1.0 / 32, 2.0, "bf16", TRITON_MOE_M_TILE,
            "fused-MoE OAI Triton matmul_ogs (mxfp4 weights, bf16 activations)"),
    # gpt-oss MXFP4 experts on Blackwell: FlashInfer's TRT-LLM MXFP4 x BF16 kernel, first in the gpt-oss priority
    # list on SM100 (fused_moe/oracle/mxfp4.py:402-407); measured as vllm_gptossmxfp4moe_flashinfer_trtllm_mxfp4_bf16
    MoeSpec("flashinfer-trtllm-mxfp4-moe", "w4a16_mxfp4", (("vllm", "gptossmxfp4moe_flashinfer_trtllm_mxfp4_bf16"),),
            0.5 + 1.0 / 32, 2.0, "bf16", TRITON_MOE_M_TILE,
            "fused-MoE FlashInfer TRT-LLM (mxfp4 weights, bf16 activations)"),
    # vLLM 0.33.0 on SM100 runs FlashInfer's TRT-LLM-gen fused-MoE kernels first for bf16, block fp8 and NVFP4
    # experts (fused_moe/oracle/unquantized.py:69-80, fp8.py:88-104, nvfp4.py:203-212); SGLang times the same kernels
    MoeSpec("flashinfer-trtllm-moe", "bfloat16", (("vllm", "unquantizedfusedmoe_flashinfer_trtllm"),
                                                  ("sglang", "sglang_flashinfer_trtllm_moe")),
            2.0, 2.0, "bf16", TRITON_MOE_M_TILE, "fused-MoE FlashInfer TRT-LLM (bf16 weights and activations)"),
    MoeSpec("flashinfer-trtllm-fp8-block-moe", "fp8_block", (("vllm", "fp8moe_flashinfer_trtllm_trtllmfp8expertsmonolithic"),
                                                             ("sglang", "sglang_flashinfer_trtllm_moe")),
            FP8_BLOCK_BYTES, 1.0, "fp8", TRITON_MOE_M_TILE,
            "fused-MoE FlashInfer TRT-LLM (fp8 weights in 128 x 128 blocks, fp8 activations in 1 x 128 groups)"),
    MoeSpec("flashinfer-trtllm-fp8-moe", "fp8", (("vllm", "modeloptfp8moe_flashinfer_trtllm_trtllmfp8expertsmonolithic"),),
            1.0, 1.0, "fp8", TRITON_MOE_M_TILE,
            "fused-MoE FlashInfer TRT-LLM (fp8 per-tensor weights, static per-tensor fp8 activations)"),
    MoeSpec("flashinfer-trtllm-nvfp4-moe", "nvfp4", (("vllm", "nvfp4moe_flashinfer_trtllm_trtllmnvfp4expertsmonolithic"),
                                                    ("sglang", "sglang_flashinfer_trtllm_moe")),
            NVFP4_BYTES, 0.5 + 1.0 / 16, "fp4", TRITON_MOE_M_TILE,
            "fused-MoE FlashInfer TRT-LLM (nvfp4 weights and activations)"),
)
# fused-MoE kernels with no table of their own: the measured MoE kernel that stands in, and why
MOE_PROXIES: dict[str, tuple[str, str]] = {
    "humming-moe": ("marlin-moe", "no published table for the Humming fused-MoE kernel: the measured fused-MoE Marlin "
                    "kernel (the mixed-input MoE GEMM Humming replaces on SM90) stands in"),
    "humming-fp8-moe": ("marlin-moe", "no published table for the Humming fused-MoE kernel with fp8 weights: the "
                        "measured fused-MoE Marlin kernel stands in"),
    "cutlass-fp8-moe": ("triton-fp8-block-moe", "no published table for vLLM's CUTLASS fp8 fused-MoE kernel "
                        "(CutlassExpertsFp8, per-channel weights): the measured fused-MoE Triton kernel with fp8 "
                        "weights and fp8 activations (the same bytes and tensor-core math) stands in"),
}


def add_moe_proxies(kernels: dict[str, KernelCurve]) -> dict[str, KernelCurve]:
    """``kernels`` with a labelled copy of the measured fused-MoE curve that stands in for each kernel of
    :data:`MOE_PROXIES` (vLLM's) where that curve is on this GPU."""
    out = dict(kernels)
    for kid, (base, why) in MOE_PROXIES.items():
        src = out.get(f"vllm/{base}") or out.get(f"sglang/{base}")
        if src is not None:
            out[f"vllm/{kid}"] = src.model_copy(update={
                "kernel": kid, "engine": "vllm", "basis": "proxy", "proxy_of": src.key, "note": why,
                "measured": None, "heldout": None})
    return out


def import_moe(root: Path, system: str, gpu: GPU, spec: MoeSpec, *, pkg_version: str,
               as_of: date) -> tuple[KernelCurve, dict[str, Any]] | None:
    """One fused-MoE kernel measured on this GPU (:data:`MOE_SPECS`): the table (of the first engine
    whose tables cover two or more model shapes, the one covering the most) fitted over balanced
    routing, no expert parallelism (how the tables split tokens across expert-parallel ranks is not
    documented); every other configuration and every other token count are held out."""
    import numpy as np

    peak = gpu.peak(spec.math)
    keys = ["hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"]
    if peak is None:
        return None
    found = []
    for engine, marker in spec.tables:
        for path in sorted((root / system / "moe" / engine).glob("*/moe_perf.parquet")):
            t = _read(path)
            rows = t[(t.moe_dtype == spec.dtype) & t.kernel_source.str.contains(marker)
                     & (t.distribution == "balanced") & (t.moe_ep_size == 1) & (t.latency > 0)]
            cfgs = sorted({tuple(int(x) for x in r) for r in rows[keys].itertuples(index=False)})
            if len(cfgs) >= 2:
                found.append((len(cfgs), engine, path, rows, cfgs))
        if found and spec.first_table:
            break
    if not found:
        return None
    _, engine, path, rows, cfgs = max(found, key=lambda f: f[0])  # the table covering the most model shapes
    held_cfg = {c for i, c in enumerate(cfgs) if i % 2 == 1}
    held_tok = _split_m(sorted(set(int(x) for x in rows.num_tokens)))
    ckey = [tuple(int(x) for x in r) for r in rows[keys].itertuples(index=False)]
    is_cfg = np.array([c in held_cfg for c in ckey], bool)
    is_tok = rows.num_tokens.isin(held_tok).to_numpy()
    tr, te = rows[~is_cfg & ~is_tok], rows[is_cfg & is_tok]
    tr_cfg = [moe_config(*c) for c, keep in zip(ckey, ~is_cfg & ~is_tok, strict=True) if keep]
    fr = fit_moe(tr_cfg, tr.num_tokens.to_numpy(float), tr.latency.to_numpy(float) * 1e-3,
                 weight_bytes=spec.weight_bytes, act_bytes=spec.act_bytes, bandwidth=gpu.bandwidth_bytes_per_s,
                 peak=peak, m_tile=spec.m_tile)
    ver, ks = str(rows.version.iloc[0]), str(rows.kernel_source.iloc[0])
    curve = KernelCurve(
        kernel=spec.kid, engine=engine, basis="measured", math=spec.math, act_bytes=spec.act_bytes,
        overhead_s=fr.overhead_s, blend=fr.blend, nk_knots=fr.nk_knots, memory_efficiency=fr.memory_efficiency,
        compute_efficiency=fr.compute_efficiency, m_knots=fr.m_knots, m_factor=fr.m_factor,
        m_tile=spec.m_tile,
        note=(f"{spec.what} fitted on {len(tr)} layers of {len(cfgs) - len(held_cfg)} tensor-parallel "
              f"configurations (expert parallel 1), balanced routing; compute rounded up to {spec.m_tile}-row M "
              "tiles; one call per MoE layer (gate/up and down)"),
        measured=_source(str(path.relative_to(root.parent.parent.parent)), ks, engine, ver,
                         str(rows.device.iloc[0]), len(tr), pkg_version, as_of,
                         f"ai-dynamo/aiconfigurator collector/{engine}/collect_moe.py ({spec.dtype}, balanced)"))
    toks = sorted(held_tok)
    idx = {(tuple(int(x) for x in r[:-2]), int(r[-2])): float(r[-1]) * 1e-3
           for r in te[[*keys, "num_tokens", "latency"]].itertuples(index=False)}
    hcfgs = sorted(held_cfg)
    doc = {"kind": "moe", "weight_bytes": spec.weight_bytes, "tokens": toks,
           "configs": [moe_config(*c) for c in hcfgs],
           "seconds": [[_sig(idx[(c, m)]) if (c, m) in idx else None for m in toks] for c in hcfgs]}
    return curve.model_copy(update={"heldout": moe_errors(curve, doc, gpu.bandwidth_bytes_per_s, peak)}), doc


def _import_marlin(root: Path, system: str, gpu: GPU, *, pkg_version: str,
                   as_of: date) -> tuple[KernelCurve, dict[str, Any]] | None:
    """The fused-MoE Marlin kernel (int4 weight-only experts) measured on this GPU (:func:`import_moe`)."""
    return import_moe(root, system, gpu, MOE_SPECS[0], pkg_version=pkg_version, as_of=as_of)


def _sig(v: float) -> float:
    return float(f"{v:.4e}")


# kernel id -> (measured curve it is priced by, why); "{engine}" is the engine running the kernel
PROXIES: dict[str, tuple[str, str]] = {
    "cutlass-int8": ("vllm/cutlass-fp8", "no published int8 table: vLLM's CUTLASS fp8 GEMM of the same scaled_mm "
                     "family stands in (int8 and fp8 have the same tensor-core peak on these GPUs)"),
    "flashinfer-fp8": ("vllm/cutlass-fp8", "the tables time vLLM's CUTLASS fp8 kernel; FlashInfer's per-tensor fp8 "
                       "GEMM has no table"),
    "sgl-int8-scaled-mm": ("sglang/sgl-fp8-scaled-mm", "no published int8 table: SGLang's CUTLASS fp8 scaled_mm stands "
                           "in"),
    "torch-scaled-mm-fp8": ("sglang/sgl-fp8-scaled-mm", "torch._scaled_mm (cuBLASLt) has no table: SGLang's CUTLASS fp8 "
                            "scaled_mm stands in"),
    "deepgemm-fp8-block": ("sglang/deepgemm-fp8-block", "vLLM's DeepGEMM table was timed without CUDA graphs; SGLang's "
                           "table of the same DeepGEMM kernel (in a CUDA graph) stands in"),
    "flashinfer-cutedsl-nvfp4": ("{other}/flashinfer-cutedsl-nvfp4", "the other engine's table of the same kernel"),
    "flashinfer-cutlass-nvfp4": ("{other}/flashinfer-cutlass-nvfp4", "the other engine's table of the same kernel"),
}
MIXED_FP8 = ("cutlass-w4a8",)  # int4 weights converted in-kernel, fp8 tensor cores
MARLIN_FAMILY = ("marlin", "machete", "humming", "humming-fp8", "humming-nvfp4", "humming-mxfp4", "humming-mxfp8",
                 "marlin-fp8", "marlin-nvfp4", "marlin-mxfp4", "marlin-mxfp8")


def add_proxies(kernels: dict[str, KernelCurve], quants: dict[str, QuantCurve],
                runs: dict[str, tuple[Any, ...]]) -> dict[str, KernelCurve]:
    """Curves for the kernels the engines run (``runs``: engine -> the kernel table's KernelInfo rows)
    that have no table of their own on this GPU, each an explicit, labelled copy of the measured curve
    that stands in: the named stand-ins of :data:`PROXIES`; mixed-input and weight-only kernels (16-bit
    math, or a weight-only fallback) by the fused-MoE Marlin measurement; any other fp8 / int8 / fp4
    kernel by the engine's measured scaled-mm / FP4 GEMM. A kernel with no stand-in stays on the
    roofline (and says so)."""
    out = dict(kernels)
    for engine, infos in runs.items():
        other = next(e for e in defaults.ENGINES if e != engine)
        for info in infos:
            kid = getattr(info, "id", info)
            key = f"{engine}/{kid}"
            if key in out or kid in ("cublas-bf16", "awq-dequant-cublas", "awq-gemm"):
                continue
            spec = PROXIES.get(kid)
            math = getattr(info, "math", "bf16")
            weight_only = kid in MARLIN_FAMILY or getattr(info, "execution", "native") == "weight-only" or (
                spec is None and math == "bf16")
            if (spec is None and weight_only) or kid in MIXED_FP8:
                base = out.get(f"{engine}/marlin-moe") or out.get(f"{other}/marlin-moe")
                names = (["cutlass-fp8", "sgl-fp8-scaled-mm"] if kid in MIXED_FP8 else ["cublas-bf16"])
                gemm = next((out[f"{e}/{n}"] for e in (engine, other) for n in names
                             if f"{e}/{n}" in out and out[f"{e}/{n}"].basis == "measured"), None)
                blas = out.get(f"{engine}/cublas-bf16") or out.get(f"{other}/cublas-bf16")
                if base is None or gemm is None or blas is None:
                    continue
                out[key] = _mixed_input(kid, engine, base, gemm, blas.overhead_s)
                continue
            if spec is not None:
                cands, why = [spec[0].format(other=other)], spec[1]
            else:
                cands = ([f"{engine}/flashinfer-cutedsl-nvfp4", f"{engine}/flashinfer-cutlass-nvfp4",
                          f"{other}/flashinfer-cutedsl-nvfp4", f"{other}/flashinfer-cutlass-nvfp4"] if math == "fp4"
                         else [f"{engine}/cutlass-fp8", f"{engine}/sgl-fp8-scaled-mm", f"{other}/cutlass-fp8",
                               f"{other}/sgl-fp8-scaled-mm"])
                why = f"no published table for {kid}: the engine's measured {math} GEMM of the nearest kind stands in"
            src = next((out[c] for c in cands if c in out and out[c].basis == "measured"), None)
            if src is None:
                continue
            out[key] = src.model_copy(update={"kernel": kid, "engine": engine, "basis": "proxy", "proxy_of": src.key,
                                              "note": why, "measured": None, "heldout": None,
                                              "math": "int8" if math == "int8" else src.math})
    for kid in ("static-quant", "per-token-quant"):
        v = quants.get(f"vllm/{kid}")
        if v is not None and f"sglang/{kid}" not in quants:
            quants[f"sglang/{kid}"] = v.model_copy(update={
                "engine": "sglang", "basis": "proxy", "proxy_of": v.key, "measured": None, "heldout": None,
                "note": "SGLang's quantization table times torch's eager static ops (slower than its own per-token "
                        "kernel, so the scale-computation increment it reports is 0); vLLM's custom-kernel "
                        "measurement stands in"})
    return out


def _mixed_input(kid: str, engine: str, marlin: KernelCurve, blas: KernelCurve, overhead_s: float) -> KernelCurve:
    """A dense weight-only / mixed-input kernel with no table (Marlin, Machete, Humming and the fp8 / fp4
    weight-only fallbacks; CUTLASS W4A8): the weight streaming of the measured fused-MoE Marlin kernel,
    the math and knee of the measured GEMM on the same tensor cores (cuBLAS bf16; the fp8 scaled-mm for
    W4A8), and the per-call overhead of the measured cuBLAS GEMM (one dense launch for all of them). The MoE table's math at many rows per
    expert carries MoE-specific costs; published dense measurements put these kernels near the 16-bit
    GEMM at large batch (Machete at parity with fp16 on H100, Marlin up to ~1.4x behind it: Neural Magic,
    'Introducing Machete', 2024; Frantar et al., arXiv:2408.11743) — so this is optimistic for Marlin
    at large M."""
    mem = tuple(tuple(min(1.0, marlin.efficiencies(1.0, n, k)[0]) for k in blas.nk_knots) for n in blas.nk_knots)
    return blas.model_copy(update={
        "kernel": kid, "engine": engine, "basis": "composed", "proxy_of": marlin.key, "measured": None,
        "heldout": None, "memory_efficiency": mem, "math": blas.math, "overhead_s": overhead_s,
        "note": (f"no published dense table for {kid}: streaming of the measured fused-MoE Marlin kernel "
                 f"({marlin.key}), math and knee of the measured {blas.math} GEMM ({blas.key}), a dense call's overhead "
                 "(cuBLAS)")})


def build_profile(gpu: GPU, parts: dict[str, Any], *, pkg_version: str, as_of: date, source: str) -> Any:
    """The profile of one GPU: its kernel curves, its activation-quantization curves, and as the GPU's
    streaming / bf16 compute efficiency (used by the operators no kernel curve covers: attention,
    embedding rows, activations) the measured cuBLAS curve's values at its largest shape knot."""
    from ..perf.profiles import GpuKnobs, PerfProfile

    kernels: dict[str, KernelCurve] = parts["kernels"]
    blas = kernels.get("vllm/cublas-bf16") or kernels.get("sglang/cublas-bf16")
    knobs: dict[str, Any] = {}
    if blas is not None:
        knobs["memory_efficiency"] = min(1.0, blas.memory_efficiency[-1][-1])
        knobs["compute_efficiency"] = {"bf16": min(1.0, blas.compute_efficiency[-1][-1] * blas.m_factor[-1]),
                                       "fp16": min(1.0, blas.compute_efficiency[-1][-1] * blas.m_factor[-1])}
    kinds = sorted({c.kernel for c in kernels.values()})
    entry = GpuKnobs(gpu=gpu.id, source=source, kernels=dict(sorted(kernels.items())),
                     quant_kernels=dict(sorted(parts["quant_kernels"].items())), **knobs)
    return PerfProfile(
        id=f"{gpu.id}-measured",
        description=(f"measured per-kernel GEMM curves for {gpu.name} fitted to {PACKAGE} {pkg_version}'s published "
                     f"tables ({', '.join(kinds)}); " + "; ".join(parts["notes"])).rstrip("; "),
        source=source,
        as_of=as_of,
        gpus=(entry,),
    )


def heldout_yaml(gpu_id: str, source: str, as_of: date, held: dict[str, Any]) -> str:
    """The held-out document of one GPU as YAML (data/profiles/heldout/<gpu>.yaml)."""
    import yaml

    doc = {"schema_version": 1, "gpu": gpu_id, "source": source, "as_of": as_of.isoformat(),
           "note": "measured calls never used to fit data/profiles/" + gpu_id + ".yaml (seconds; null: not in the table)",
           "kernels": held}
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=140)
