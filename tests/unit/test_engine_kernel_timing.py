"""``calibrate --backend torch`` times the engine's own kernels where vLLM is importable
(quantadvise.calibration.engine_ops), torch's own, per scheme and with the reason, where it cannot.

No GPU, no torch, no vLLM here: a fake ``torch`` (permissive tensors that only carry a shape) and
a fake ``vllm`` package whose ``_custom_ops`` records every call stand in for them. The CUDA-event
timing itself (``TorchBackend._time``) is replaced by one eager call of the timed region — so the
ops really are built and called — and the seconds come from the simulated GPU of the same kind
(quantadvise.calibration.backends.SimulatedBackend), so the fits see realistic curves. What is checked is
the choice of kernel, the calls made, the fallbacks and what the profile and report say.

Expected kernels are read from vLLM 0.33.0's source, not from quantadvise's resolver (the code
under test uses it): each expectation cites the engine lines it follows.
"""

from __future__ import annotations

import sys
import types
from datetime import date
from typing import Any

import pytest
import yaml

import quantadvise as api
from quantadvise import catalog
from quantadvise.calibration.backends import SimulatedBackend, TorchBackend
from quantadvise.calibration.contract import Timing
from quantadvise.calibration.profile_file import profile_yaml
from quantadvise.calibration.run import KERNELS, run_calibration
from quantadvise.catalog.resolve import load_model
from quantadvise.perf.profiles import parse_profile
from quantadvise.report.calibrate import calibrate_table

LLAMA = "meta-llama/Meta-Llama-3-8B"
BATCHES = (1, 8, 64, 512)
CALLS: list[tuple[str, str]] = []  # (owner, op) of every fake GEMM-ish call, in order


# -------------------------------------------------------------------------------------------------
# fakes
# -------------------------------------------------------------------------------------------------


class T:
    """A tensor that only knows its shape: every method and operator gives a tensor back."""

    def __init__(self, *shape: int, dtype: Any = "bf16"):
        self.shape, self.dtype = tuple(shape), dtype

    def t(self) -> T:
        return T(*reversed(self.shape), dtype=self.dtype)

    def to(self, dtype: Any = None, *a: Any, **k: Any) -> T:
        return T(*self.shape, dtype=dtype if isinstance(dtype, str) else self.dtype)

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: self

    def __getitem__(self, idx: Any) -> T:
        return self

    def _op(self, *_: Any) -> T:
        return self

    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __add__ = __radd__ = __sub__ = __neg__ = _op


def _rec(owner: str, op: str, out: Any = None) -> Any:
    CALLS.append((owner, op))
    return out if out is not None else T(1, 1)


def fake_torch(monkeypatch: pytest.MonkeyPatch, *, capability: int = 90) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.__version__ = "2.9.0"
    torch.version = types.SimpleNamespace(hip=None, cuda="12.8")
    for name in ("bfloat16", "float32", "float8_e4m3fn", "int8", "int32", "int", "uint8"):
        setattr(torch, name, name)
    torch.device = lambda kind, index=0: types.SimpleNamespace(type=kind, index=index)
    torch.manual_seed = lambda s: None
    shape = lambda a: tuple(a[0]) if a and isinstance(a[0], tuple) else tuple(a)  # noqa: E731
    torch.randn = lambda *a, dtype="f32", **k: T(*shape(a), dtype=dtype)
    torch.rand = lambda *a, **k: T(*shape(a))
    torch.randint = lambda lo, hi, size, dtype="i64", **k: T(*size, dtype=dtype)
    torch.full = torch.ones = torch.zeros = torch.empty = lambda size, *a, dtype="f32", **k: T(
        *(size if isinstance(size, tuple) else (size,)), dtype=dtype)
    torch.nn = types.SimpleNamespace(functional=types.SimpleNamespace(
        linear=lambda x, w: _rec("torch", "linear", T(x.shape[0], w.shape[0])), pad=lambda x, *a, **k: x))
    torch._scaled_mm = lambda a, b, **k: _rec("torch", "_scaled_mm")
    torch._int_mm = lambda a, b: _rec("torch", "_int_mm")
    torch._convert_weight_to_int4pack = lambda w, tiles: T(*w.shape)
    torch._weight_int4pack_mm = lambda x, w, g, sz: _rec("torch", "_weight_int4pack_mm")
    props = types.SimpleNamespace(major=capability // 10, minor=capability % 10, L2_cache_size=50 * 2**20,
                                  total_memory=80 * 2**30, multi_processor_count=132)
    torch.cuda = types.SimpleNamespace(
        is_available=lambda: True, get_device_properties=lambda dev: props, get_device_name=lambda dev: "fake",
        mem_get_info=lambda dev: (60 * 2**30, 80 * 2**30), empty_cache=lambda: None)
    monkeypatch.setitem(sys.modules, "torch", torch)
    return torch


def fake_vllm(monkeypatch: pytest.MonkeyPatch, *, version: str = "0.33.0", drop: tuple[str, ...] = (),
              raises: dict[str, Any] | None = None) -> types.ModuleType:
    """``vllm`` with the ``_custom_ops`` functions calibrate calls (signatures of vllm 0.33.0's
    _custom_ops.py, cited in engine_ops); ``drop`` removes ops, ``raises[op](args)`` makes an op
    raise when it returns True."""
    raises = raises or {}
    vllm = types.ModuleType("vllm")
    vllm.__version__ = version
    ops = types.ModuleType("vllm._custom_ops")

    def op(name: str, out: Any = None) -> Any:
        def call(*a: Any, **k: Any) -> Any:
            if name in raises and raises[name](a, k):
                raise RuntimeError(f"fake {name} failure")
            return _rec("vllm", name, out(*a, **k) if out else None)
        return call

    ops.cutlass_scaled_mm = op("cutlass_scaled_mm")
    ops.scaled_fp8_quant = op("scaled_fp8_quant", lambda x, *a, **k: (T(*x.shape, dtype="fp8"), T(1)))
    ops.scaled_int8_quant = op("scaled_int8_quant", lambda x, *a, **k: (T(*x.shape, dtype="int8"), T(1), None))
    ops.cutlass_scaled_mm_supports_fp8 = lambda cap: cap >= 89
    ops.machete_prepack_B = op("machete_prepack_B", lambda w, **k: T(*w.shape))
    ops.machete_mm = op("machete_mm")
    ops.gptq_marlin_repack = op("gptq_marlin_repack", lambda w, **k: T(*w.shape))
    # marlin_gemm with its real parameters: vllm 0.34.0 dropped a_scales (its _custom_ops.py:1167-1183)
    def marlin_033(a: Any, c: Any, b_q_weight: Any, b_bias: Any, b_scales: Any, a_scales: Any, global_scale: Any,
                   b_zeros: Any, workspace: Any, b_q_type: Any, size_m: int, size_n: int, size_k: int,
                   use_atomic_add: bool = False, use_fp32_reduce: bool = False, is_zp_float: bool = False) -> Any:
        return _rec("vllm", "marlin_gemm")

    def marlin_034(a: Any, c: Any, b_q_weight: Any, b_bias: Any, b_scales: Any, global_scale: Any, b_zeros: Any,
                   workspace: Any, b_q_type: Any, size_m: int, size_n: int, size_k: int, use_atomic_add: bool = False,
                   use_fp32_reduce: bool = False, is_zp_float: bool = False) -> Any:
        return _rec("vllm", "marlin_gemm")

    ops.marlin_gemm = marlin_033 if version == "0.33.0" else marlin_034
    for name in drop:
        delattr(ops, name)
    st = types.ModuleType("vllm.scalar_type")
    st.scalar_types = types.SimpleNamespace(uint4b8="uint4b8")
    vllm._custom_ops, vllm.scalar_type = ops, st
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm._custom_ops", ops)
    monkeypatch.setitem(sys.modules, "vllm.scalar_type", st)
    monkeypatch.setitem(sys.modules, "sglang", None)  # import sglang -> ImportError
    return vllm


@pytest.fixture
def gpu_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    """TorchBackend's CUDA timing replaced: two eager calls of the region (a warm-up and the timed
    one, as the real timing warms up before it replays), and the simulated GPU's seconds for the
    kind of kernel (the ceilings too)."""
    CALLS.clear()
    sim = SimulatedBackend(catalog.get_gpu("h100"))

    def one_call(self: TorchBackend, fn: Any, budget_s: float) -> Timing:
        fn()
        fn()
        return Timing(seconds=1.0, spread=0.0)

    real_step = TorchBackend.linear_step

    def step(self: TorchBackend, kernel: Any, shapes: Any, batch: int, budget_s: float) -> Timing:
        real_step(self, kernel, shapes, batch, budget_s)  # builds the ops and calls them once
        return sim.linear_step(kernel, shapes, batch, budget_s)

    monkeypatch.setattr(TorchBackend, "_time", one_call)
    monkeypatch.setattr(TorchBackend, "linear_step", step)
    monkeypatch.setattr(TorchBackend, "read_bandwidth", lambda self, b: sim.read_bandwidth(b))
    monkeypatch.setattr(TorchBackend, "gemm_flops", lambda self, f, s, b: sim.gemm_flops(f, s, b))
    monkeypatch.setattr("quantadvise.calibration.backends._driver_version", lambda: None)


def _run(gpu: str = "h100", schemes: tuple[str, ...] = tuple(KERNELS)) -> tuple[Any, Any, TorchBackend]:
    g = catalog.get_gpu(gpu)
    be = TorchBackend(g)
    table = catalog.kernel_table(be.engine.name, be.engine.version) if be.engine else None
    prof, res = run_calibration(
        be, arch=load_model(LLAMA)[0], model_id=LLAMA, gpu=g,
        schemes={s: catalog.get_scheme(s) for s in schemes},
        presets={s: catalog.get_scheme(s) for s in catalog.scheme_ids()}, batches=BATCHES, seconds=4,
        tool="quantadvise test", today=date(2026, 12, 1), engine_table=table)
    return prof, res, be


def _by_scheme(res: Any) -> dict[str, Any]:
    return {s.scheme: s for s in res.schemes}


# -------------------------------------------------------------------------------------------------
# the engine's kernels, per scheme
# -------------------------------------------------------------------------------------------------


def test_on_hopper_each_scheme_times_the_kernel_vllm_runs(monkeypatch, gpu_timing):
    fake_torch(monkeypatch, capability=90)
    fake_vllm(monkeypatch)
    prof, res, _ = _run("h100")
    got = {s.scheme: (s.kernel_id, s.engine, s.engine_version, s.torch_kernel) for s in res.schemes}
    # vLLM 0.33.0 on SM90, read from its source:
    #  bf16: default_unquantized_gemm -> F.linear (layers/utils.py:83-89)
    #  fp8 per-tensor and per-channel/per-token: CUTLASS scaled_mm (FlashInfer needs SM100, scaled_mm/
    #    flashinfer.py:41-65; cutlass_fp8_supported at SM90)
    #  int8: CutlassInt8 first on CUDA (kernels/linear/__init__.py:446-452)
    #  w4a16: Machete first on SM90 exactly (mixed_precision/machete.py:33-34), Llama's K % 64 and N % 128 hold
    assert got == {
        "bf16": ("vllm/cublas-bf16", "vllm", "0.33.0", False),
        "fp8-tensor": ("vllm/cutlass-fp8", "vllm", "0.33.0", False),
        "fp8-dynamic": ("vllm/cutlass-fp8", "vllm", "0.33.0", False),
        "w8a8-int8": ("vllm/cutlass-int8", "vllm", "0.33.0", False),
        "w4a16": ("vllm/machete", "vllm", "0.33.0", False),
    }
    assert res.engine == "vllm" and res.engine_version == "0.33.0"
    assert not any(s.fallback for s in res.schemes)
    # the linear steps called the engine's ops only: torch's kernels for quantized schemes never ran
    # (the ceilings, which are torch's GEMMs, are replaced by the fixture)
    owners = {op for owner, op in CALLS if owner == "torch"}
    assert owners == {"linear"}  # bf16: vLLM's own path is F.linear
    vllm_ops = [op for owner, op in CALLS if owner == "vllm"]
    # each region is called twice per batch (gpu_timing). int8 quantizes its input in every call
    # (unfused in vLLM: scaled_mm/cutlass.py:134-136); fp8's quantization is fused into the producer
    # by vLLM (data/kernels/vllm-0.33.0.yaml notes), so it runs once per input, outside the timed call
    fp8_gemms = _fp8_gemm_calls(vllm_ops)
    int8_gemms = vllm_ops.count("cutlass_scaled_mm") - fp8_gemms
    assert fp8_gemms > 0 and int8_gemms > 0
    assert vllm_ops.count("scaled_int8_quant") == int8_gemms
    assert vllm_ops.count("scaled_fp8_quant") * 2 == fp8_gemms
    # Machete: one prepack per weight, one machete_mm per GEMM call; Llama-3-8B has 4 GEMMs per layer
    assert vllm_ops.count("machete_mm") == 2 * len(BATCHES) * vllm_ops.count("machete_prepack_B")
    assert vllm_ops.count("machete_prepack_B") % 4 == 0
    assert "marlin_gemm" not in vllm_ops
    # the profile records the kernel each curve timed (data/kernels ids: the pricing compares them)
    fits = {sid: k.linear.kernel_id for sid, k in prof.gpus[0].schemes.items()}
    assert fits == {"bf16": "cublas-bf16", "fp8-tensor": "cutlass-fp8", "fp8-dynamic": "cutlass-fp8",
                    "w8a8-int8": "cutlass-int8", "w4a16": "machete"}
    kernels = {m.scheme: m.kernel for m in prof.gpus[0].calibration.measurements}
    assert kernels["w4a16"].startswith("vLLM 0.33.0 vllm/machete: vllm._custom_ops.machete_mm")
    assert "vLLM 0.33.0's own kernels" in prof.description and "vLLM 0.33.0" in prof.gpus[0].source
    assert "TORCH" not in prof.description
    # the provenance names the engine whose kernels were timed (the fake reports vLLM 0.33.0)
    prov = prof.gpus[0].calibration.provenance
    assert (prov.engine, prov.engine_version) == ("vllm", "0.33.0")


def _fp8_gemm_calls(ops: list[str]) -> int:
    """cutlass_scaled_mm calls not preceded by scaled_int8_quant (the fp8 ones)."""
    return sum(1 for i, op in enumerate(ops) if op == "cutlass_scaled_mm" and (i == 0 or ops[i - 1] != "scaled_int8_quant"))


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_on_ampere_w4a16_times_marlin(monkeypatch, gpu_timing, version):
    # each release's own kernel table and its own marlin_gemm signature (0.34.0's has no a_scales)
    fake_torch(monkeypatch, capability=80)
    fake_vllm(monkeypatch, version=version)
    _, res, _ = _run("a100-80gb", ("bf16", "w8a8-int8", "w4a16"))
    # Machete needs SM90 exactly (machete.py:33-34); Marlin is next on SM75+ (mixed_precision/marlin.py:32-33)
    assert {s.scheme: s.kernel_id for s in res.schemes} == {
        "bf16": "vllm/cublas-bf16", "w8a8-int8": "vllm/cutlass-int8", "w4a16": "vllm/marlin"}
    ops = [op for owner, op in CALLS if owner == "vllm"]
    assert "gptq_marlin_repack" in ops and "marlin_gemm" in ops and "machete_mm" not in ops


# -------------------------------------------------------------------------------------------------
# torch's kernels instead, per scheme, with the reason
# -------------------------------------------------------------------------------------------------


def test_a_missing_op_falls_back_to_torch_for_that_scheme_only(monkeypatch, gpu_timing):
    fake_torch(monkeypatch, capability=90)
    fake_vllm(monkeypatch, drop=("machete_mm",))
    prof, res, _ = _run("h100", ("fp8-dynamic", "w4a16"))
    s = _by_scheme(res)
    assert s["fp8-dynamic"].kernel_id == "vllm/cutlass-fp8" and not s["fp8-dynamic"].torch_kernel
    # torch's own int4 kernel (calibration.KERNELS: tinygemm), and the op the build lacks named
    assert s["w4a16"].torch_kernel and s["w4a16"].kernel_id == "torch-tinygemm-int4"
    assert s["w4a16"].fallback == "vllm._custom_ops in vLLM 0.33.0 has no machete_mm"
    assert prof.gpus[0].schemes["w4a16"].linear.kernel_id == "torch-tinygemm-int4"
    assert ("torch", "_weight_int4pack_mm") in CALLS
    text = calibrate_table(res)
    assert "TORCH'S OWN KERNELS, not an engine's, were timed for w4a16 (torch-tinygemm-int4): vllm._custom_ops " \
           "in vLLM 0.33.0 has no machete_mm" in " ".join(text.split())
    assert "TORCH'S OWN KERNELS" in prof.description and "w4a16 (torch-tinygemm-int4)" in prof.gpus[0].source


def test_an_op_that_raises_falls_back_with_its_error(monkeypatch, gpu_timing):
    fake_torch(monkeypatch, capability=90)
    # cutlass_scaled_mm fails on int8 operands only: fp8 keeps the engine's kernel
    fake_vllm(monkeypatch, raises={"cutlass_scaled_mm": lambda a, k: a[0].dtype == "int8"})
    prof, res, _ = _run("h100", ("fp8-tensor", "w8a8-int8"))
    s = _by_scheme(res)
    assert s["fp8-tensor"].kernel_id == "vllm/cutlass-fp8"
    assert s["w8a8-int8"].kernel_id == "torch-int-mm" and s["w8a8-int8"].torch_kernel
    assert s["w8a8-int8"].fallback == ("vllm/cutlass-int8 (vLLM 0.33.0) raised RuntimeError: fake cutlass_scaled_mm "
                                       "failure")
    assert ("torch", "_int_mm") in CALLS
    # the failed attempt left no trace in the record: one measurement per scheme, torch's kernel described
    ms = prof.gpus[0].calibration.measurements
    assert [m.scheme for m in ms] == ["fp8-tensor", "w8a8-int8"]
    assert ms[1].kernel == KERNELS["w8a8-int8"].description


def test_without_vllm_every_kernel_is_torchs_and_the_profile_says_so(monkeypatch, gpu_timing):
    fake_torch(monkeypatch, capability=90)
    monkeypatch.setitem(sys.modules, "vllm", None)
    monkeypatch.setitem(sys.modules, "sglang", None)
    prof, res, be = _run("h100", ("bf16", "w4a16"))
    assert be.engine is None and res.engine is None
    assert all(s.torch_kernel for s in res.schemes)
    assert [s.kernel_id for s in res.schemes] == ["cublas-bf16", "torch-tinygemm-int4"]
    why = res.schemes[0].fallback
    assert why.startswith("vLLM is not importable (ModuleNotFoundError") and "SGLang is not importable" in why
    assert res.kernels_timed.startswith("TORCH'S OWN KERNELS, not an engine's, were timed for bf16 (cublas-bf16), "
                                        "w4a16 (torch-tinygemm-int4): vLLM is not importable")
    assert res.kernels_timed in prof.description
    assert {owner for owner, _ in CALLS} == {"torch"}
    text = calibrate_table(res)
    assert text.count("torch's own (not an engine's)") == 2
    prov = prof.gpus[0].calibration.provenance
    assert prov.engine is None and prov.engine_version is None  # no engine's kernel was timed


def test_an_engine_release_without_a_kernel_table_is_not_guessed(monkeypatch, gpu_timing):
    # data/kernels has no table for vllm 0.35.0 (the newest, 0.34.0, stands in elsewhere): which kernel 0.35.0
    # runs is not a known fact
    fake_torch(monkeypatch, capability=90)
    fake_vllm(monkeypatch, version="0.35.0")
    _, res, _ = _run("h100", ("fp8-dynamic",))
    s = res.schemes[0]
    assert s.torch_kernel and s.kernel_id == "torch-scaled-mm-fp8-rowwise"
    assert s.fallback.startswith("quantadvise has no data/kernels table for vLLM 0.35.0 (data/kernels has vLLM 0.34.0)")


def test_a_kernel_calibrate_cannot_time_is_named(monkeypatch, gpu_timing):
    # on SM100 vLLM runs per-tensor fp8 through FlashInfer (kernels/linear/__init__.py:460,
    # scaled_mm/flashinfer.py:41-65), which has no recipe here: torch's kernel, and that kernel named
    fake_torch(monkeypatch, capability=100)
    fake_vllm(monkeypatch)
    _, res, _ = _run("b200", ("fp8-tensor",))
    s = res.schemes[0]
    assert s.torch_kernel and "runs flashinfer-fp8" in s.fallback and "no way to time that kernel" in s.fallback


# -------------------------------------------------------------------------------------------------
# the profile: a valid file, and the model uses a curve only for the kernel it timed
# -------------------------------------------------------------------------------------------------


def test_the_profile_round_trips_and_prices_only_the_kernel_it_timed(monkeypatch, gpu_timing, tmp_path):
    fake_torch(monkeypatch, capability=90)
    fake_vllm(monkeypatch)
    prof, _, _ = _run("h100", ("bf16", "fp8-dynamic"))
    text = profile_yaml(prof)
    assert parse_profile(yaml.safe_load(text), "p.yaml") == prof
    path = tmp_path / "h100-vllm.yaml"
    path.write_text(text, encoding="utf-8")
    # vLLM runs FP8_DYNAMIC on CUTLASS (the kernel timed): its curve prices it; SGLang runs its own
    # sgl-kernel fp8_scaled_mm there (data/kernels/sglang-0.5.23.yaml), which this profile did not time
    vl = api.roofline(LLAMA, "fp8-dynamic", gpu="h100", profile=str(path), batches="1,16", ctx=0, engine="vllm")
    sg = api.roofline(LLAMA, "fp8-dynamic", gpu="h100", profile=str(path), batches="1,16", ctx=0, engine="sglang")
    assert vl.schemes[0].model == "calibrated" and vl.schemes[0].kernel == "cutlass-fp8"
    assert sg.schemes[0].model != "calibrated" and sg.schemes[0].kernel != "cutlass-fp8"


def test_api_calibrate_passes_the_engines_table(monkeypatch, gpu_timing, tmp_path):
    fake_torch(monkeypatch, capability=90)
    fake_vllm(monkeypatch)
    r = api.calibrate(LLAMA, "w8a8-int8", batches="1,8,64,512", backend="torch", gpu="h100", seconds=1,
                      out=tmp_path / "p.yaml")
    assert r.schemes[0].kernel_id == "vllm/cutlass-int8" and r.engine_version == "0.33.0"
    doc = yaml.safe_load((tmp_path / "p.yaml").read_text())
    assert doc["gpus"][0]["schemes"]["w8a8-int8"]["linear"]["kernel_id"] == "cutlass-int8"
    assert doc["gpus"][0]["calibration"]["measurements"][0]["kernel"].startswith("vLLM 0.33.0 vllm/cutlass-int8")
