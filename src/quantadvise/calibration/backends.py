"""Timing backends for ``quantadvise calibrate``: the only module that imports torch.

- :class:`TorchBackend` times real kernels on the local CUDA GPU — vLLM's own custom ops per scheme
  where vLLM is importable (:mod:`.engine_ops`), torch's otherwise: every timed region is captured
  once in a CUDA graph and replayed between CUDA events (no Python or launch gaps between
  kernels), the median of many samples is kept, and each layer's weights are cycled over enough
  copies that none is still in the L2 when it is read again (the decode step of a real model never
  re-reads a weight from the L2 either).
- :class:`SimulatedBackend` produces timings from a synthetic GPU built on a ``data/hardware.yaml``
  row. It behaves the way real kernels do and a roofline does not predict — a weight-only kernel
  that wins at batch 1 and loses to bf16 by batch 16, unfused dynamic activation quantization that
  makes FP8 slower than bf16 at small batch, kernel launch costs, tile and wave quantization, a
  kernel switch at a batch threshold, and noise — so the calibration and validation code can be
  tested (and demonstrated) on a machine without a GPU. Its numbers are not measurements; profiles
  it writes say so in their provenance.

Both implement :class:`quantadvise.calibration.Backend`.
"""

from __future__ import annotations

import math
import random
import shutil
import subprocess
from typing import Any

from ..errors import InputError
from ..hardware import GPU
from ..perf.profiles import LinearShape, blend
from ..wording import install_hint
from . import engine_ops
from .contract import DeviceInfo, Kernel, Timing

GiB = 1024**3
TORCH_MIN = (2, 5)  # row-wise _scaled_mm and the uint8 int4 packing


def get_backend(name: str, gpu: GPU | None, *, seed: int = 0) -> Any:
    """``torch`` or ``simulated`` (the latter needs the GPU row it simulates)."""
    if name == "simulated":
        if gpu is None:
            raise InputError("--backend simulated needs --gpu (the GPU to simulate)", field="gpu")
        return SimulatedBackend(gpu, seed=seed)
    if name == "torch":
        return TorchBackend(gpu)
    raise InputError(f"unknown --backend '{name}' (use torch or simulated)", field="backend")


def weight_bytes_per_element(kind: str) -> float:
    return {"bf16": 2.0, "fp8-tensor": 1.0, "fp8-rowwise": 1.0, "int8-dynamic": 1.0,
            "int4-weight-only": 0.5}[kind]


def rotation_copies(layer_bytes: float, l2_bytes: int | None, cap_bytes: float) -> int:
    """Copies of one layer to cycle through so that a weight is evicted from the L2 before it is
    read again: at least two, and together at least four times the L2."""
    l2 = l2_bytes or 64 * 1024**2
    r = max(2, math.ceil(4 * l2 / max(layer_bytes, 1.0)))
    return max(1, min(r, int(cap_bytes // max(layer_bytes, 1.0))))


# -------------------------------------------------------------------------------------------------
# Simulated GPU
# -------------------------------------------------------------------------------------------------


class SimulatedBackend:
    """Timings from a synthetic GPU (see the module docstring). Deterministic for a given seed."""

    name = "simulated"
    simulated = True
    LAUNCH_S = 3.0e-6  # per kernel, replayed from a CUDA graph
    NOISE = 0.015  # lognormal sigma of every timing
    READ_EFF = 0.91
    GEMM_EFF = {"bf16": 0.76, "fp8": 0.70, "fp8-rowwise": 0.64, "int8": 0.72}
    ELEMENTWISE_EFF = 0.80

    def __init__(self, gpu: GPU, *, seed: int = 0):
        self.gpu = gpu
        self.seed = seed
        self.bw = gpu.bandwidth_bytes_per_s
        self.sms = gpu.sm_count or 100

    def _noise(self, *key: object) -> float:
        rng = random.Random(":".join(str(k) for k in (self.seed, *key)))
        return math.exp(rng.gauss(0.0, self.NOISE))

    def device(self) -> DeviceInfo:
        return DeviceInfo(gpu_name=f"{self.gpu.name} (simulated)", driver_version=None, cuda_version=None,
                          torch_version=None, capability=self.gpu.capability, l2_cache_bytes=self.gpu.l2_cache_bytes,
                          memory_bytes=self.gpu.memory_bytes)

    def rotation(self, kernel: Kernel, shapes: tuple[LinearShape, ...]) -> int:
        layer = sum(s.n * s.k for s in shapes) * weight_bytes_per_element(kernel.kind)
        return rotation_copies(layer, self.gpu.l2_cache_bytes, 8 * GiB)

    def read_bandwidth(self, budget_s: float) -> tuple[float, int]:
        buf = max(GiB, 64 * (self.gpu.l2_cache_bytes or 0))
        return self.READ_EFF * self.bw * self._noise("bw"), buf

    def gemm_flops(self, fmt: str, shape: tuple[int, int, int], budget_s: float) -> float:
        peak = self.gpu.peak("fp8" if fmt == "fp8-rowwise" else fmt) or 0.0
        return self.GEMM_EFF[fmt] * peak * self._noise("gemm", fmt)

    # -- the synthetic kernels ---------------------------------------------------------------------
    def _elementwise(self, n_bytes: float, kernels: int) -> float:
        return kernels * self.LAUNCH_S + n_bytes / (self.ELEMENTWISE_EFF * self.bw)

    def _gemm(self, m: int, n: int, k: int, *, w_bytes: float, a_bytes: float, bw_eff: float, comp_eff: float,
              peak: float, p: float) -> float:
        """One GEMM: a smooth (p-norm) blend of streaming and tile-quantized math, plus a launch."""
        tile_m = 16 if m <= 16 else (32 if m <= 32 else (64 if m <= 128 else 128))
        m_eff = math.ceil(m / tile_m) * tile_m
        tiles = math.ceil(m_eff / tile_m) * math.ceil(n / 128)
        waves = math.ceil(tiles / self.sms)
        wave_eff = 0.85 + 0.15 * tiles / (waves * self.sms) if tiles >= self.sms else 1.0
        mem = (w_bytes + m * k * a_bytes + m * n * 2) / (bw_eff * self.bw)
        comp = 2.0 * m_eff * n * k / (comp_eff * peak * wave_eff)
        return blend(mem, comp, p) + self.LAUNCH_S

    def _shape_time(self, kind: str, m: int, n: int, k: int) -> float:
        g = self.gpu
        if kind == "bf16":
            return self._gemm(m, n, k, w_bytes=2.0 * n * k, a_bytes=2, bw_eff=0.86, comp_eff=0.76,
                              peak=g.peak("bf16") or 0.0, p=4.0)
        if kind == "fp8-tensor":
            quant = self._elementwise(m * k * (2 + 4 + 4 + 4 + 1), 3)  # mul, clamp, cast (fp32 in between)
            return quant + self._gemm(m, n, k, w_bytes=1.0 * n * k, a_bytes=1, bw_eff=0.84, comp_eff=0.70,
                                      peak=g.peak("fp8") or 0.0, p=4.0)
        if kind == "fp8-rowwise":
            quant = self._elementwise(m * k * (2 + 2 + 2 + 4 + 4 + 4 + 1), 5)  # abs, amax, div, clamp, cast
            # the row-wise kernel streams weights well only once M fills a 64-row tile
            bw_eff = 0.55 if m <= 32 else 0.68
            return quant + self._gemm(m, n, k, w_bytes=1.0 * n * k + 4.0 * n, a_bytes=1, bw_eff=bw_eff,
                                      comp_eff=0.62, peak=g.peak("fp8") or 0.0, p=3.0)
        if kind == "int8-dynamic":
            mp = 32 if m <= 16 else m  # _int_mm needs M > 16: small batches are padded
            quant = self._elementwise(m * k * (2 + 2 + 2 + 4 + 4 + 4 + 1), 6)  # abs, amax, div, round, clamp, cast
            pad = self._elementwise(mp * k, 1) if mp != m else 0.0
            epilogue = self._elementwise(m * n * (4 + 4 + 4 + 4 + 2), 4)  # to fp32, x s_a, x s_w, to bf16
            return quant + pad + epilogue + self._gemm(mp, n, k, w_bytes=1.0 * n * k, a_bytes=1, bw_eff=0.80,
                                                       comp_eff=0.66, peak=g.peak("int8") or 0.0, p=4.0)
        if kind == "int4-weight-only":
            # tinygemm-like: streams its 4-bit weights well at tiny M, but unpacks and scales every
            # weight on the CUDA cores once per 4 rows of M (7 vector ops per weight at half the fp32
            # peak), so its time grows with M long before the tensor cores matter; above M = 64 a
            # second kernel configuration does the same work 15% faster
            passes = math.ceil(m / 4) / (1.15 if m > 64 else 1.0)
            dequant = passes * n * k * 7.0 / (0.5 * (g.peak("fp32") or 0.0))
            mma = 2.0 * max(m, 16) * n * k / (0.5 * (g.peak("bf16") or 0.0))
            w_bytes = 0.5 * n * k + (k // 128) * n * 2 * 2
            mem = (w_bytes + m * k * 2 + m * n * 2) / (0.72 * self.bw)
            return blend(mem, dequant + mma, 2.5) + self.LAUNCH_S
        raise InputError(f"the simulated GPU has no kernel '{kind}'", field="schemes")

    def linear_step(self, kernel: Kernel, shapes: tuple[LinearShape, ...], batch: int, budget_s: float) -> Timing:
        t = sum(self._shape_time(kernel.kind, batch, s.n, s.k) * s.count for s in shapes)
        return Timing(seconds=t * self._noise("linear", kernel.kind, batch), spread=2.56 * self.NOISE)

    def close(self) -> None:
        return None


# -------------------------------------------------------------------------------------------------
# torch on CUDA
# -------------------------------------------------------------------------------------------------


class TorchBackend:
    """Real kernels on the local CUDA GPU (module docstring). Needs ``pip install 'quantadvise[gpu]'``.
    Where vLLM is importable it times vLLM's own kernels per scheme (:mod:`.engine_ops`), torch's
    own where it cannot, and says which."""

    name = "torch"
    simulated = False

    def __init__(self, gpu: GPU | None = None, device_index: int = 0):
        try:
            import torch
        except ImportError:
            raise InputError(f"--backend torch needs PyTorch with CUDA: {install_hint('gpu')}",
                             hint="or --backend simulated --gpu ID for a demo on a synthetic GPU",
                             field="backend") from None
        if getattr(torch.version, "hip", None):
            raise InputError("--backend torch measures NVIDIA GPUs through CUDA; this torch is a ROCm build",
                             field="backend")
        if not torch.cuda.is_available():
            raise InputError(f"--backend torch found no CUDA GPU (torch {torch.__version__}: "
                             "torch.cuda.is_available() is False)",
                             hint="run it on the GPU machine, or --backend simulated --gpu ID for a demo",
                             field="backend")
        ver = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2] if x.isdigit())
        if ver < TORCH_MIN:
            raise InputError(f"--backend torch needs torch >= {TORCH_MIN[0]}.{TORCH_MIN[1]} (row-wise "
                             f"_scaled_mm, uint8 int4 packing), found {torch.__version__}", field="backend")
        self.torch = torch
        self.dev = torch.device("cuda", device_index)
        self.props = torch.cuda.get_device_properties(self.dev)
        self.gpu = gpu
        self._layers: dict[tuple[str, str, str], list[list[Any]]] = {}
        self._inputs: dict[tuple[int, int], Any] = {}
        torch.manual_seed(0)
        # vLLM's own kernels where it is importable (.engine_ops); else torch's, and engine_note says why
        self.engine, self.engine_note = engine_ops.detect()

    def engine_kernel(self, kernel: Kernel, scheme: Any, shapes: tuple[LinearShape, ...], capability: int | None,
                      table: Any) -> tuple[Kernel, str]:
        """The engine's kernel for ``kernel.scheme`` where one can be timed here, else torch's
        ``kernel`` and why (calibration.run_calibration records both)."""
        if self.engine is None:
            return kernel, self.engine_note
        chosen, why = engine_ops.plan(self.engine, table, kernel, scheme, capability, shapes)
        return (chosen, "") if chosen is not None else (kernel, why)

    # -- facts -----------------------------------------------------------------------------------
    def device(self) -> DeviceInfo:
        t = self.torch
        l2 = getattr(self.props, "L2_cache_size", None) or (self.gpu.l2_cache_bytes if self.gpu else None)
        return DeviceInfo(
            gpu_name=t.cuda.get_device_name(self.dev),
            driver_version=_driver_version(),
            cuda_version=t.version.cuda,
            torch_version=t.__version__,
            capability=self.props.major * 10 + self.props.minor,
            l2_cache_bytes=l2,
            memory_bytes=self.props.total_memory,
        )

    def _l2(self) -> int | None:
        return getattr(self.props, "L2_cache_size", None) or (self.gpu.l2_cache_bytes if self.gpu else None)

    def _free(self) -> int:
        free, _total = self.torch.cuda.mem_get_info(self.dev)
        return int(free)

    # -- timing ----------------------------------------------------------------------------------
    def _time(self, fn: Any, budget_s: float) -> Timing:
        """Median seconds of one call of ``fn``: warmed up, captured in a CUDA graph, replayed
        between CUDA events (falls back to eager replays if capture fails, and says so)."""
        torch = self.torch
        cur = torch.cuda.current_stream(self.dev)
        side = torch.cuda.Stream(self.dev)
        side.wait_stream(cur)
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        cur.wait_stream(side)
        torch.cuda.synchronize(self.dev)
        note = ""
        graph = None
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                fn()
            run = graph.replay
            run()
        except Exception as exc:  # noqa: BLE001 - any capture failure: time eagerly instead
            torch.cuda.synchronize(self.dev)
            graph = None
            note = f"timed without a CUDA graph (capture failed: {type(exc).__name__})"
            run = fn
        torch.cuda.synchronize(self.dev)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        one = max(start.elapsed_time(end) / 1e3, 1e-7)
        reps = max(1, int(2e-3 / one))  # each sample at least ~2 ms of GPU time
        samples = max(7, min(200, int(budget_s / (reps * one + 5e-5))))
        ts = []
        for _ in range(samples):
            start.record()
            for _ in range(reps):
                run()
            end.record()
            end.synchronize()
            ts.append(start.elapsed_time(end) / 1e3 / reps)
        del graph
        ts.sort()
        med = ts[len(ts) // 2]
        p10, p90 = ts[int(0.1 * (len(ts) - 1))], ts[int(0.9 * (len(ts) - 1))]
        return Timing(seconds=med, spread=(p90 - p10) / med, note=note)

    # -- ceilings --------------------------------------------------------------------------------
    def read_bandwidth(self, budget_s: float) -> tuple[float, int]:
        torch = self.torch
        n_bytes = max(GiB, 64 * (self._l2() or 0))
        n_bytes = min(n_bytes, self._free() // 4)

        def measure() -> float:
            buf = torch.ones(n_bytes // 4, dtype=torch.float32, device=self.dev)
            return max(n_bytes / self._time(fn, budget_s / 2).seconds
                       for fn in (lambda: torch.sum(buf), lambda: torch.amax(buf)))

        best = measure()  # the buffer is released when measure() returns
        torch.cuda.empty_cache()
        return best, n_bytes

    def gemm_flops(self, fmt: str, shape: tuple[int, int, int], budget_s: float) -> float:
        torch = self.torch
        m, n, k = shape
        kind = {"bf16": "bf16", "fp8": "fp8-gemm", "fp8-rowwise": "fp8-rowwise-gemm", "int8": "int8-gemm"}[fmt]

        def measure() -> float:
            op = _make_op(torch, kind, n, k, self.dev)
            x = _make_input(torch, kind, m, k, self.dev)
            return self._time(lambda: op(x), budget_s).seconds

        seconds = measure()
        torch.cuda.empty_cache()
        return 2.0 * m * n * k / seconds

    # -- decode linears --------------------------------------------------------------------------
    def rotation(self, kernel: Kernel, shapes: tuple[LinearShape, ...]) -> int:
        layer = sum(s.n * s.k for s in shapes) * weight_bytes_per_element(kernel.kind)
        return rotation_copies(layer, self._l2(), min(8 * GiB, self._free() / 3))

    def linear_step(self, kernel: Kernel, shapes: tuple[LinearShape, ...], batch: int, budget_s: float) -> Timing:
        torch = self.torch
        lkey = (kernel.engine, kernel.kernel_id, kernel.kind)
        if lkey not in self._layers:
            self._layers.clear()
            self._inputs.clear()
            torch.cuda.empty_cache()
            copies = self.rotation(kernel, shapes)
            if kernel.engine and self.engine is not None:
                sms = int(getattr(self.props, "multi_processor_count", 0) or 132)
                self._layers[lkey] = [[engine_ops.make_op(self.engine, torch, kernel, s.n, s.k, self.dev, sms)
                                      for s in shapes] for _ in range(copies)]
            else:
                self._layers[lkey] = [[_make_op(torch, kernel.kind, s.n, s.k, self.dev) for s in shapes]
                                     for _ in range(copies)]
        layers = self._layers[lkey]
        xs = {}
        for s in shapes:
            key = (batch, s.k)
            if key not in self._inputs:
                self._inputs[key] = torch.randn(batch, s.k, dtype=torch.bfloat16, device=self.dev)
            xs[s.k] = self._inputs[key]

        def one_pass() -> None:
            for layer in layers:
                for s, op in zip(shapes, layer, strict=True):
                    op(xs[s.k])

        t = self._time(one_pass, budget_s)
        per_layer = t.seconds / len(layers)
        count = shapes[0].count
        return Timing(seconds=per_layer * count, spread=t.spread, note=t.note)

    def close(self) -> None:
        self._layers.clear()
        self._inputs.clear()
        self.torch.cuda.empty_cache()


class _Op:
    """A prepared weight and the torch calls one scheme's linear layer makes with it."""

    def __init__(self, kind: str, fn: Any, tensors: tuple[Any, ...]):
        self.kind, self.fn, self.tensors = kind, fn, tensors

    def __call__(self, x: Any) -> Any:
        return self.fn(x)


def _make_input(torch: Any, kind: str, m: int, k: int, dev: Any) -> Any:
    if kind in ("fp8-gemm", "fp8-rowwise-gemm"):
        return torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
    if kind == "int8-gemm":
        return torch.randint(-128, 128, (m, k), dtype=torch.int8, device=dev)
    return torch.randn(m, k, dtype=torch.bfloat16, device=dev)


def _make_op(torch: Any, kind: str, n: int, k: int, dev: Any) -> _Op:
    """Random weights of shape (N, K) in the kernel's storage format and the calls that use them.
    Activations arrive in bf16 (except the bare ``*-gemm`` kinds used for the ceilings); dynamic
    activation quantization runs as separate torch ops, so its unfused cost is in the timing."""
    F = torch.nn.functional
    fp8 = torch.float8_e4m3fn
    f32 = torch.float32
    if kind == "bf16":
        w = torch.randn(n, k, dtype=torch.bfloat16, device=dev)
        return _Op(kind, lambda x: F.linear(x, w), (w,))
    if kind in ("fp8-gemm", "fp8-tensor"):
        w8 = (torch.randn(n, k, device=dev) * 0.1).to(fp8)
        one = torch.ones((), dtype=f32, device=dev)
        if kind == "fp8-gemm":
            return _Op(kind, lambda x: torch._scaled_mm(x, w8.t(), scale_a=one, scale_b=one,
                                                        out_dtype=torch.bfloat16), (w8, one))
        s_a = torch.full((), 0.02, dtype=f32, device=dev)  # a static (calibrated) activation scale
        inv = 1.0 / 0.02

        def fp8_tensor(x: Any) -> Any:
            xq = (x * inv).clamp(-448.0, 448.0).to(fp8)
            return torch._scaled_mm(xq, w8.t(), scale_a=s_a, scale_b=one, out_dtype=torch.bfloat16)

        return _Op(kind, fp8_tensor, (w8, one, s_a))
    if kind in ("fp8-rowwise-gemm", "fp8-rowwise"):
        w8 = (torch.randn(n, k, device=dev) * 0.1).to(fp8)
        s_w = torch.full((1, n), 0.01, dtype=f32, device=dev)
        if kind == "fp8-rowwise-gemm":
            s_rows: dict[int, Any] = {}

            def rowwise_gemm(x: Any) -> Any:
                m = x.shape[0]
                if m not in s_rows:
                    s_rows[m] = torch.ones((m, 1), dtype=f32, device=dev)
                return torch._scaled_mm(x, w8.t(), scale_a=s_rows[m], scale_b=s_w, out_dtype=torch.bfloat16)

            return _Op(kind, rowwise_gemm, (w8, s_w))

        def fp8_rowwise(x: Any) -> Any:
            s_a = (x.abs().amax(dim=-1, keepdim=True).float() / 448.0).clamp(min=1e-12)
            xq = (x / s_a).clamp(-448.0, 448.0).to(fp8)
            return torch._scaled_mm(xq, w8.t(), scale_a=s_a, scale_b=s_w, out_dtype=torch.bfloat16)

        return _Op(kind, fp8_rowwise, (w8, s_w))
    if kind in ("int8-gemm", "int8-dynamic"):
        wq = torch.randint(-128, 128, (n, k), dtype=torch.int8, device=dev)
        w_kn = wq.t()  # (K, N) column-major, as the weight is stored; some cuBLAS builds want row-major
        try:
            torch._int_mm(torch.zeros(32, k, dtype=torch.int8, device=dev), w_kn)
        except RuntimeError:
            w_kn = wq.t().contiguous()
        if kind == "int8-gemm":
            return _Op(kind, lambda x: torch._int_mm(x, w_kn), (w_kn,))
        s_w = torch.full((1, n), 0.01, dtype=f32, device=dev)

        def int8_dynamic(x: Any) -> Any:
            m = x.shape[0]
            s_a = (x.abs().amax(dim=-1, keepdim=True).float() / 127.0).clamp(min=1e-12)
            xq = (x / s_a).round().clamp(-128.0, 127.0).to(torch.int8)
            if m <= 16:  # torch._int_mm needs more than 16 rows
                xq = F.pad(xq, (0, 0, 0, 32 - m))
            acc = torch._int_mm(xq, w_kn)
            return (acc[:m].float() * s_a * s_w).to(torch.bfloat16)

        return _Op(kind, int8_dynamic, (w_kn, s_w))
    if kind == "int4-weight-only":
        group = 128
        tiles = 8 if k % 128 == 0 else (4 if k % 64 == 0 else 2)
        nibbles = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, device=dev)
        if dev.type == "cuda":
            packed = torch._convert_weight_to_int4pack(nibbles, tiles)
            mm = torch._weight_int4pack_mm
        else:  # CPU builds pack and multiply with their own ops (used only by the smoke test)
            packed = torch._convert_weight_to_int4pack_for_cpu(
                torch.randint(0, 16, (n, k), dtype=torch.int32, device=dev), tiles)
            mm = torch._weight_int4pack_mm_for_cpu
        sz = (torch.rand(k // group, n, 2, device=dev) * 0.01).to(torch.bfloat16)
        return _Op(kind, lambda x: mm(x, packed, group, sz), (packed, sz))
    raise InputError(f"no torch kernel for '{kind}'", field="schemes")


def _driver_version() -> str | None:
    """The NVIDIA driver version from nvidia-smi (torch does not expose it), or None."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=15, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    line = out.stdout.strip().splitlines()
    return line[0].strip() if out.returncode == 0 and line else None
