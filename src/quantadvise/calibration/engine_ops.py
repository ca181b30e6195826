"""Timing an engine's own kernels from ``calibrate --backend torch``.

When vLLM is importable on the GPU machine, the torch backend times, per scheme, the kernel vLLM
itself runs for that scheme on this GPU — the kernel :func:`quantadvise.engines.kernels.resolve_kernel`
resolves from ``data/kernels/vllm-<version>.yaml`` — by calling vLLM's own custom ops
(``vllm._custom_ops``) with weights packed by vLLM's own prepack ops. Where it cannot (vLLM not
importable, no kernel table for the installed release, a kernel it has no recipe for, an op missing
from the build, or an op that raises) the scheme falls back to torch's own kernel and the reason is
kept: the result and the profile say plainly which kernels were torch's.

The op calls follow the vLLM 0.33.0 wheel (vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl, the
release data/kernels and data/engines were read from); file:line below are inside it. vLLM 0.34.0's wheel
has the same signatures for these ops but one: its marlin_gemm has no ``a_scales`` (Marlin dropped 8-bit
activations; vllm/_custom_ops.py:1167-1183 there), so the Marlin call passes it only where the op takes it.

Pure until a builder runs: vllm and torch are imported lazily, inside functions.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..engines.flags import engine_label
from ..results import record

if TYPE_CHECKING:
    from ..engines.kernels import KernelTable
    from ..perf.profiles import LinearShape
    from ..scheme.axes import Scheme
    from .contract import Kernel



@record(slots=True)
class Engine:
    """An importable serving engine: its name, release and custom-op module."""

    name: str  # vllm
    version: str
    ops: Any  # the vllm._custom_ops module

    @property
    def label(self) -> str:
        return f"{engine_label(self.name)} {self.version}"


def _why(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
    return text if len(text) <= 160 else text[:157] + "..."


def detect() -> tuple[Engine | None, str]:
    """The engine whose kernels calibrate can time here, or None and why not. Importing vLLM can
    fail in many ways besides ImportError (CUDA or driver mismatches), so any exception counts as
    'not importable' and is reported."""
    reasons = []
    try:
        vllm = importlib.import_module("vllm")
        version = str(getattr(vllm, "__version__", "") or "unknown")  # vllm/__init__.py:7 (vllm/_version.py)
        ops = importlib.import_module("vllm._custom_ops")
        return Engine("vllm", version, ops), ""
    except Exception as exc:  # noqa: BLE001 - any import failure: time torch's kernels and say why
        reasons.append(f"vLLM is not importable ({_why(exc)})")
    try:
        sgl = importlib.import_module("sglang")
        reasons.append(f"SGLang {getattr(sgl, '__version__', '')} is importable, but timing its sgl_kernel ops "
                       "is not implemented")
    except Exception as exc:  # noqa: BLE001
        reasons.append(f"SGLang is not importable ({_why(exc)})")
    return None, "; ".join(reasons)


@record(slots=True)
class Recipe:
    """How calibrate calls one engine kernel in place of one torch kind."""

    ops: tuple[str, ...]  # vllm._custom_ops functions the timed call (and its weight prepack) use
    calls: str  # what one timed linear call runs, in words
    source: str  # where the call sequence comes from in the engine


# (data/kernels id, calibrate's torch kind) -> the recipe; vllm/... paths are inside the 0.33.0 wheel
RECIPES: dict[tuple[str, str], Recipe] = {
    ("cublas-bf16", "bf16"): Recipe(
        (), "torch.nn.functional.linear (cuBLAS), vLLM's default_unquantized_gemm: the same call torch's kernel makes",
        "vllm/model_executor/layers/utils.py:83-89"),
    ("cutlass-fp8", "fp8-tensor"): Recipe(
        ("scaled_fp8_quant", "cutlass_scaled_mm"),
        "vllm._custom_ops.cutlass_scaled_mm, fp8 e4m3 (K, N) column-major weight, per-tensor scales, bf16 out",
        "vllm/_custom_ops.py:784-831 (cutlass_scaled_mm), :1836-1905 (scaled_fp8_quant, static scale); "
        "model_executor/kernels/linear/scaled_mm/ScaledMMLinearKernel.py:139-174 and scaled_mm/cutlass.py:235-264 "
        "(apply); layers/quantization/utils/fp8_utils.py:1454-1479 (one per-tensor scale, weight transposed)"),
    ("cutlass-fp8", "fp8-rowwise"): Recipe(
        ("scaled_fp8_quant", "cutlass_scaled_mm"),
        "vllm._custom_ops.cutlass_scaled_mm, fp8 e4m3 (K, N) column-major weight, per-token x per-channel scales, "
        "bf16 out",
        "vllm/_custom_ops.py:784-831 (cutlass_scaled_mm), :1836-1905 (scaled_fp8_quant, "
        "use_per_token_if_dynamic); scaled_mm/ScaledMMLinearKernel.py:139-174, scaled_mm/cutlass.py:235-264; "
        "layers/quantization/utils/fp8_utils.py:1482-1497 (per-channel, weight transposed)"),
    ("cutlass-int8", "int8-dynamic"): Recipe(
        ("scaled_int8_quant", "cutlass_scaled_mm"),
        "vllm._custom_ops.scaled_int8_quant (dynamic per token) + cutlass_scaled_mm, int8 (K, N) column-major "
        "weight, per-token x per-channel scales, bf16 out",
        "vllm/_custom_ops.py:1908-1962 (scaled_int8_quant), :784-831 (cutlass_scaled_mm); "
        "model_executor/kernels/linear/scaled_mm/cutlass.py:46-56 (weight transposed), :122-142 (apply_weights)"),
    ("machete", "int4-weight-only"): Recipe(
        ("machete_prepack_B", "machete_mm"),
        "vllm._custom_ops.machete_mm, uint4b8 weights prepacked by machete_prepack_B, group 128, bf16 scales",
        "vllm/_custom_ops.py:1303-1327 (machete_mm), :1351-1359 (machete_prepack_B); "
        "model_executor/kernels/linear/mixed_precision/machete.py:60-72 (prepack), :97-121 (apply_weights); "
        "vllm/scalar_type.py:346 (uint4b8)"),
    ("marlin", "int4-weight-only"): Recipe(
        ("gptq_marlin_repack", "marlin_gemm"),
        "vllm._custom_ops.marlin_gemm, uint4b8 weights repacked by gptq_marlin_repack, group 128, bf16 scales, "
        "fp32 reduce",
        "vllm/_custom_ops.py:1104-1114 (gptq_marlin_repack), :1217-1252 (marlin_gemm); "
        "model_executor/kernels/linear/mixed_precision/marlin.py:98-110 (repack), :181-201 (apply_weights); "
        "layers/quantization/utils/marlin_utils.py:42 (fp32 reduce by default), :408-415 (workspace), "
        ":687-700 (no atomic add by default), :752-816 (apply_gptq_marlin_linear; the call at :794-810)"),
}


def plan(engine: Engine, table: KernelTable | None, torch_kernel: Kernel, scheme: Scheme, capability: int | None,
         shapes: tuple[LinearShape, ...]) -> tuple[Kernel | None, str]:
    """The engine kernel to time for one scheme, or None and why torch's kernel is timed instead."""
    from dataclasses import replace

    from ..engines.kernels import resolve_kernel

    if table is None or table.engine != engine.name or table.version != engine.version:
        have = f" (data/kernels has {table.label})" if table is not None else ""
        return None, (f"quantadvise has no data/kernels table for {engine.label}{have}, so which kernel it runs "
                      "here is not a known fact")
    if capability is None:
        return None, "the GPU's compute capability is unknown, so the engine's kernel cannot be resolved"
    choices = {s.name: resolve_kernel(table, scheme, capability, shape=(s.n, s.k)) for s in shapes}
    ids = {c.kernel.id if c is not None else None for c in choices.values()}
    sm = f"sm{capability}"
    if None in ids:
        return None, f"{engine.label}'s kernel table has no kernel for {scheme.id} on {sm}"
    if len(ids) > 1:
        per = ", ".join(f"{n}: {c.kernel.id}" for n, c in choices.items() if c is not None)
        return None, f"{engine.label} runs different kernels for this model's shapes ({per})"
    choice = next(c for c in choices.values() if c is not None)
    info = choice.kernel
    recipe = RECIPES.get((info.id, torch_kernel.kind))
    if recipe is None:
        return None, (f"{engine.label} runs {info.id} ({info.name}) for {scheme.id} on {sm} ({choice.source}); "
                      "calibrate has no way to time that kernel yet")
    missing = [op for op in recipe.ops if not callable(getattr(engine.ops, op, None))]
    if missing:
        return None, f"vllm._custom_ops in {engine.label} has no {', '.join(missing)}"
    if info.id == "cutlass-fp8":
        # what vLLM's cutlass_fp8_supported() asks (layers/quantization/utils/w8a8_utils.py:11-18)
        check = getattr(engine.ops, "cutlass_scaled_mm_supports_fp8", None)
        try:
            ok = bool(check(capability)) if callable(check) else True
        except Exception as exc:  # noqa: BLE001 - an op that raises: torch's kernel instead, with the reason
            return None, f"vllm._custom_ops.cutlass_scaled_mm_supports_fp8 raised {_why(exc)}"
        if not ok:
            return None, f"this {engine.label} build has no CUTLASS fp8 kernels for {sm}"
    quant = {"unfused": "activation quantization timed (the engine runs it as a separate kernel)",
             "fused": "activation quantization not timed: the engine fuses it into the producer at -O2 "
                      "(its input is quantized once, outside the timed region, by the engine's op)",
             }.get(info.activation_quant, "")
    desc = f"{engine.label} {engine.name}/{info.id}: {recipe.calls}" + (f"; {quant}" if quant else "")
    return replace(torch_kernel, description=desc, kernel_id=info.id, engine=engine.name,
                   engine_version=engine.version, ops=recipe.ops,
                   fused_quant=info.activation_quant == "fused"), ""


def kernels_statement(timed: dict[str, Kernel], fallbacks: dict[str, str]) -> str:
    """Which kernels were timed, in one plain sentence: the engine's custom ops, or torch's own
    kernels and why (the profile's description and source carry it, and the result's notes)."""
    eng = {sid: k for sid, k in timed.items() if k.engine}
    parts = []
    if eng:
        label = ", ".join(sorted({f"{engine_label(k.engine)} {k.engine_version}" for k in eng.values()}))
        parts.append(f"timed {label}'s own kernels for " + ", ".join(f"{sid} ({k.key})" for sid, k in eng.items()))
    own = [sid for sid in timed if sid not in eng]
    if own:
        reasons = {fallbacks.get(sid, "") for sid in own}
        head = "TORCH'S OWN KERNELS, not an engine's, were timed for " + ", ".join(
            f"{sid} ({timed[sid].kernel_id})" for sid in own)
        if len(reasons) == 1:
            parts.append(f"{head}: {reasons.pop()}")
        else:
            parts.append(head + " (" + "; ".join(f"{sid}: {fallbacks.get(sid, '')}" for sid in own) + ")")
    return "; ".join(parts)


# -------------------------------------------------------------------------------------------------
# The calls (on the GPU; torch and the engine are passed in, imported by the backend)
# -------------------------------------------------------------------------------------------------


def make_op(engine: Engine, torch: Any, kernel: Kernel, n: int, k: int, dev: Any, sm_count: int) -> Callable[[Any], Any]:
    """Random weights of shape (N, K) prepared the way the engine prepares them for ``kernel``, and
    the engine calls one linear layer makes with them (x: bf16 activations (M, K))."""
    ops = engine.ops
    bf16, f32 = torch.bfloat16, torch.float32
    if kernel.kernel_id == "cublas-bf16":  # vllm/model_executor/layers/utils.py:83-89
        w = torch.randn(n, k, dtype=bf16, device=dev)
        return lambda x: torch.nn.functional.linear(x, w)
    if kernel.kernel_id == "cutlass-fp8":
        fp8 = torch.float8_e4m3fn
        b = (torch.randn(n, k, device=dev) * 0.1).to(fp8).t()  # (K, N) column-major: fp8_utils.py:1478, :1497
        per_token = kernel.kind == "fp8-rowwise"
        s_b = (torch.full((n, 1), 0.01, dtype=f32, device=dev) if per_token  # ChannelQuantScaleParameter (N, 1)
               else torch.full((1,), 0.01, dtype=f32, device=dev))  # one per-tensor scale
        s_static = torch.full((1,), 0.02, dtype=f32, device=dev)
        quantized: dict[int, tuple[Any, Any, Any]] = {}

        def quant(x: Any) -> tuple[Any, Any]:
            # _custom_ops.py:1836-1905: static per-tensor with a scale; dynamic per-token without one
            if per_token:
                return ops.scaled_fp8_quant(x, use_per_token_if_dynamic=True)
            return ops.scaled_fp8_quant(x, s_static)

        def fp8_linear(x: Any) -> Any:
            if kernel.fused_quant:  # fused into the producer by the engine: quantize once, untimed
                key = id(x)
                if key not in quantized:
                    quantized[key] = (x, *quant(x))  # keeps x alive so its id is not reused
                _, xq, s_a = quantized[key]
            else:
                xq, s_a = quant(x)
            # _custom_ops.py:784-831; scaled_mm/cutlass.py:257-259
            return ops.cutlass_scaled_mm(xq, b, scale_a=s_a, scale_b=s_b, out_dtype=bf16)

        return fp8_linear
    if kernel.kernel_id == "cutlass-int8":
        b = torch.randint(-128, 128, (n, k), dtype=torch.int8, device=dev).t()  # cutlass.py:50-56: transposed
        s_b = torch.full((n, 1), 0.01, dtype=f32, device=dev)

        def int8_linear(x: Any) -> Any:
            # scaled_mm/cutlass.py:122-142: dynamic per-token int8 quantization, then CUTLASS
            xq, s_a, _ = ops.scaled_int8_quant(x.contiguous(), None, None, symmetric=True)
            return ops.cutlass_scaled_mm(xq, b, scale_a=s_a, scale_b=s_b, out_dtype=bf16)

        return int8_linear
    if kernel.kernel_id in ("machete", "marlin"):
        scalar_types = importlib.import_module(f"{engine.name}.scalar_type").scalar_types
        # vllm/scalar_type.py:346: symmetric int4 (uint4 with bias 8), as compressed-tensors W4A16 stores it
        wtype, group = scalar_types.uint4b8, 128
        # GPTQ layout: int32 words of 8 nibbles packed along K, (K/8, N) (machete.py:57-59, marlin.py:71-73)
        w_q = torch.randint(-(2**31), 2**31 - 1, (k // 8, n), dtype=torch.int32, device=dev)
        scales = (torch.rand(k // group, n, device=dev) * 0.01).to(bf16).contiguous()  # random: no permutation needed
        if kernel.kernel_id == "machete":
            # machete.py:66-71 and _custom_ops.py:1351-1359: the engine's own prepack of a column-major (K/8, N) tensor
            b_q = ops.machete_prepack_B(w_q.t().contiguous().t(), a_type=bf16, b_type=wtype, group_scales_type=bf16)

            def machete_linear(x: Any) -> Any:  # machete.py:114-121
                return ops.machete_mm(a=x, b_q=b_q, b_type=wtype, b_group_zeros=None, b_group_scales=scales,
                                      b_group_size=group)

            return machete_linear
        # marlin.py:101-109: the engine's own repack; marlin_utils.py:408-415: one lock per thread block
        b_q = ops.gptq_marlin_repack(w_q, size_k=k, size_n=n, num_bits=4)
        workspace = torch.zeros(sm_count * 4, dtype=torch.int, device=dev)  # MARLIN_MAX_BLOCKS_PER_SM = 4 (:35)
        no_zp = torch.empty(0, dtype=torch.int, device=dev)  # marlin_make_empty (marlin_utils.py:508-511)

        # a_scales (None: 16-bit activations) sits between b_scales and global_scale up to 0.33.0
        # (_custom_ops.py:1217-1234); 0.34.0 removed the parameter
        a_scales = (None,) if "a_scales" in inspect.signature(ops.marlin_gemm).parameters else ()

        def marlin_linear(x: Any) -> Any:  # marlin_utils.py:794-810 (same arguments, through _custom_ops.py:1217-1252)
            return ops.marlin_gemm(x, None, b_q, None, scales, *a_scales, None, no_zp, workspace, wtype, x.shape[0], n,
                                   k, use_atomic_add=False, use_fp32_reduce=True, is_zp_float=False)

        return marlin_linear
    raise ValueError(f"no recipe for {kernel.engine}/{kernel.kernel_id}")
