"""Issue 25, "lookup before fit" for fused MoE: routed experts are priced by the published fused-MoE table of
the kernel the engine runs (data/kernel_tables/<gpu>/<engine>-<kernel>.csv.gz, aiconfigurator-core 0.12.0),
its own row where the table holds the model's configuration, interpolated in the per-GPU intermediate size
otherwise; the fitted curve only where the table has no configuration of that hidden size, top-k and
expert count. Expected figures are the tables' own rows (quoted below) or hand arithmetic on synthetic
tables. Before this change the experts were priced by the fitted curves (balanced routing, half-tile
padding): Qwen3-30B-A3B fp8-block at 8 tokens on an H100 came out 4.36 ms for the 48 MoE layers, the table
says 5.71 ms."""

from __future__ import annotations

from datetime import date

import pytest

from quantadvise import catalog
from quantadvise.api.speed import efficiency
from quantadvise.catalog.resolve import load_model, load_profiles
from quantadvise.perf.kernel_tables import TableMeta
from quantadvise.perf.moe_tables import MoeTable, leave_one_out, parse_moe
from quantadvise.perf.step import StepModel

US = 1e-6


def scheme(sid: str):
    return catalog.scheme_from_preset(catalog.scheme_preset(sid))


def _experts(model: str, sch: str, gpu_id: str = "h100", tp: int = 1) -> StepModel:
    gpu = catalog.get_gpu(gpu_id)
    arch, _ = load_model(model)
    return StepModel(arch, scheme(sch), gpu, gpus=tp, efficiency=efficiency(load_profiles(gpu=gpu), gpu, scheme(sch)))


def test_a_configuration_on_the_table_reads_its_own_row():
    # h100-sxm/vllm-triton-fp8-block-moe.csv.gz, row "2048,768,8,128,1" (Qwen3-30B-A3B: hidden 2048, moe inter
    # 768, top-8 of 128 experts, tp 1): 38.72 / 56.31 / 81.73 / 119 us at 1 / 2 / 4 / 8 tokens; 48 MoE layers
    sm = _experts("Qwen/Qwen3-30B-A3B", "fp8-block")
    assert sm.expert_time(8) == pytest.approx(48 * 119 * US, rel=1e-6)
    assert sm.expert_time(1) == pytest.approx(48 * 38.72 * US, rel=1e-6)
    # between grid points, linear in tokens: 3 tokens = (56.31 + 81.73) / 2
    assert sm.expert_time(3) == pytest.approx(48 * (56.31 + 81.73) / 2 * US, rel=1e-6)
    assert "experts: fused-MoE measured table vllm/triton-fp8-block-moe (vllm 0.24.0)" == sm.experts_label()


def test_tensor_parallel_reads_the_row_of_its_per_gpu_size():
    # the same table's row "2048,768,8,128,2": each of 2 GPUs computes inter 384; 77.94 us at 8 tokens
    sm = _experts("Qwen/Qwen3-30B-A3B", "fp8-block", tp=2)
    assert sm.expert_time(8) == pytest.approx(48 * 77.94 * US, rel=1e-6)


def test_a_kernel_without_a_table_is_priced_by_its_stand_ins_table_and_says_so():
    # vLLM 0.33.0 runs w4a16 experts on sm90 with Humming (no published table); its curve is a labelled proxy of
    # the measured fused-MoE Marlin, and so is its table: vLLM's Marlin table lacks Qwen3-30B-A3B's configuration,
    # SGLang's (h100-sxm/sglang-marlin-moe.csv.gz, row "2048,768,8,128,1": 71.8 us at 8 tokens) holds it
    sm = _experts("Qwen/Qwen3-30B-A3B", "w4a16")
    label = sm.experts_label()
    assert label is not None and "humming-moe by measured table sglang/marlin-moe" in label and "(proxy)" in label
    # w4a16 stores 0.5 + 2 / 128 bytes per weight (int4, one 16-bit scale per 128), as the Marlin table's timed
    # int4 group-128 weights (to within 0.01%: the stored bytes count each expert's scale rows): the row as published
    assert sm.expert_time(8) == pytest.approx(48 * 71.8 * US, rel=1e-4)


def _meta(weight_bytes: float = 1.0) -> TableMeta:
    return TableMeta(id="vllm/triton-fp8-block-moe", file="x.csv.gz", engine="vllm", engine_version="0.24.0",
                     kernel="triton-fp8-block-moe", kernel_source="k", math="fp8", weight_bytes=weight_bytes,
                     package="p", package_version="1", license="Apache-2.0", table="t", device="d", rows=6,
                     source="synthetic (test)", as_of=date(2026, 12, 6))


# a synthetic table: hidden 4096, top-8 of 64 experts; per-GPU inter 512 (the tp 2 row of inter 1024), 1024 and
# 2048; microseconds at 1 and 8 tokens
TEXT = """# synthetic
hidden,inter,topk,experts,tp,1,8
4096,1024,8,64,2,20,40
4096,1024,8,64,1,30,60
4096,2048,8,64,1,50,100
4096,4096,8,64,1,90,180
"""


def test_off_grid_sizes_interpolate_between_their_neighbours():
    t = parse_moe(_meta(), TEXT)
    s = t.series(4096, 768, 8, 64)  # halfway between 512 (20, 40) and 1024 (30, 60)
    assert s is not None and s.at(1) == pytest.approx(25 * US) and s.at(8) == pytest.approx(50 * US)
    s = t.series(4096, 3072, 8, 64)  # halfway between 2048 (50, 100) and 4096 (90, 180)
    assert s is not None and s.at(1) == pytest.approx(70 * US) and s.at(8) == pytest.approx(140 * US)
    # past the largest: affine from the two largest, 8192 = 4096 + 2 x (4096 - 2048): 90 + 2 x 40 = 170 us
    s = t.series(4096, 8192, 8, 64)
    assert s is not None and s.at(1) == pytest.approx(170 * US)
    # below the smallest: affine from the two smallest (20 - 10 x 0.5 = 15 us at 256), never under the
    # proportional share 20 x 256 / 512 = 10 us nor over the row itself
    s = t.series(4096, 256, 8, 64)
    assert s is not None and s.at(1) == pytest.approx(15 * US)
    s = t.series(4096, 16, 8, 64)  # affine would give 20 - 10 x 0.97 = 10.3; the proportional share 0.625
    assert s is not None and s.at(1) == pytest.approx(10.3125 * US)
    assert t.series(4096, 1024, 8, 128) is None  # no configuration with 128 experts: the curve prices it


def test_the_tp1_row_is_read_where_two_rows_give_the_same_per_gpu_size():
    # inter 1024 at tp 1 (30 us) and inter 2048 at tp 2 would both be 1024 per GPU: the smallest tp is read
    t = MoeTable(_meta(), (1.0, 8.0), cells={(4096, 1024, 8, 64, 1): (30 * US, 60 * US),
                                              (4096, 2048, 8, 64, 2): (33 * US, 66 * US)})
    s = t.series(4096, 1024, 8, 64)
    assert s is not None and s.at(1) == pytest.approx(30 * US)


def test_leave_one_configuration_out_predicts_an_interior_size_from_its_neighbours():
    t = parse_moe(_meta(), TEXT)
    got = leave_one_out(t)
    # interior sizes only: 1024 (from 512 and 2048: 20 + (50 - 20) x 512 / 1536 = 30 us at 1 token, 40 + 60 / 3 = 60
    # at 8) and 2048 (from 1024 and 4096: 30 + 60 / 3 = 50, 60 + 120 / 3 = 100) — this table is exactly affine
    assert set(got) == {((4096, 8, 64), 1024), ((4096, 8, 64), 2048)}
    for rows in got.values():
        for _m, pred, meas in rows:
            assert pred == pytest.approx(meas)


def test_experts_stored_at_other_bytes_stream_their_own_bytes():
    # W4A8 experts (0.5 + 2 / 128 bytes) on an fp8 table (1 byte): the call at one token above the table's launch
    # floor (its smallest configuration's first token: 20 us) streams 0.516x the bytes: 20 + 0.516 x (30 - 20)
    from quantadvise.perf.moe_tables import MoeChoice

    t = parse_moe(_meta(), TEXT)
    got = MoeChoice("proxy", (t,), "w4a8").series(4096, 1024, 8, 64, 0.5 + 2 / 128)
    assert got is not None
    ratio = 0.5 + 2 / 128
    assert got[0].at(1) == pytest.approx((20 + ratio * 10) * US)


# the synthetic table with one interior size off the affine line: 1024 per GPU measured 45 / 90 us where its
# neighbours 512 (20, 40) and 2048 (50, 100) interpolate to 30 / 60 us
SKEWED = TEXT.replace("4096,1024,8,64,1,30,60", "4096,1024,8,64,1,45,90")


def test_moe_checks_report_own_rows_and_held_out_sizes_in_validate_terms():
    from quantadvise.calibration.lookup_checks import moe_checks, table_check

    t = parse_moe(_meta(), SKEWED)
    c, errs = moe_checks(t)
    assert c["rows"]["median"] == 0.0 and c["rows"]["max"] == 0.0  # every size reads its own row
    # held out: 1024 from 512 and 2048 -> 30 / 60 against 45 / 90: |30 / 45 - 1| = 1/3 at both token counts;
    # 2048 from 1024 (45, 90) and 4096 (90, 180): 45 + 45 / 3 = 60 against 50, 90 + 90 / 3 = 120 against 100: 0.2
    assert sorted(errs) == pytest.approx([0.2, 0.2, 1 / 3, 1 / 3])
    assert c["steps"]["max"] == pytest.approx(1 / 3, abs=1e-4) and "1024 per GPU" in c["worst"]
    row = table_check("h100-sxm", "0.24.0", t)
    assert row.kind == "fused-moe" and row.within is False  # 33% worst is past the 20% bar


def test_experts_priced_by_their_own_moe_table_carry_the_moe_band():
    # Qwen3-30B-A3B fp8-block on an H100 reads vllm/triton-fp8-block-moe's own row (test above): its expert
    # seconds are filed under the "moe" band (data/kernel_tables/bands.yaml, h100-sxm: moe), not the GEMMs'
    sm = _experts("Qwen/Qwen3-30B-A3B", "fp8-block")
    parts = sm.parts(8, 1024)
    assert parts.get("own:moe", 0.0) == pytest.approx(sm.expert_time(8), rel=1e-6)
    bands = catalog.uncertainty_bands("h100-sxm")
    assert bands is not None and "moe" in bands


def test_validate_lists_every_fused_moe_table_of_the_gpu():
    from quantadvise.api.calibrate import validate

    r = validate("h100-sxm")
    moe = {c.table for c in r.lookup if c.kind == "fused-moe"}
    idx = catalog.kernel_tables("h100-sxm")
    assert idx is not None and moe == {m.id for m in idx.index.moe} and moe
    assert "moe" in r.bands["h100-sxm"]


def test_gpt_oss_experts_on_b200_are_priced_by_the_flashinfer_mxfp4_table_vllm_runs():
    # vLLM runs gpt-oss's MXFP4 experts on SM100 with FlashInfer's TRT-LLM MXFP4 x BF16 kernel (data/kernels/
    # vllm-0.33.0.yaml: fused_moe/oracle/mxfp4.py:402-407). Its published table, b200/vllm-flashinfer-trtllm-mxfp4-
    # moe.csv.gz, row "2880,2880,4,128,8" (gpt-oss-120b at TP8: 360 per GPU): 34.76 us at 8 tokens, 18.04 at 1;
    # 36 MoE layers. Before, the experts fell to the roofline: 0.27 ms a step at 8 tokens, a quarter of this.
    sm = _experts("openai/gpt-oss-120b", "mxfp4-a16-experts", "b200", tp=8)
    assert sm.experts_label() == "experts: fused-MoE measured table vllm/flashinfer-trtllm-mxfp4-moe (vllm 0.24.0)"
    assert sm.expert_time(8) == pytest.approx(36 * 34.76 * US, rel=1e-4)
    assert sm.expert_time(1) == pytest.approx(36 * 18.04 * US, rel=1e-4)
    assert sm.parts(8, 1024).get("own:moe", 0.0) == pytest.approx(sm.expert_time(8), rel=1e-6)


def test_a_table_whose_release_pads_the_experts_is_read_at_the_padded_sizes():
    # a table timed by a release that rounds each GPU's intermediate size up to 256 (vLLM 0.24.0's FlashInfer
    # TRT-LLM MXFP4 experts, fused_moe/oracle/mxfp4.py:647-648): per-GPU 90 and 180 both compute 256, 360 computes
    # 512, 720 computes 768 (us at 1 / 8 tokens below)
    meta = _meta().model_copy(update={"inter_align": 256})
    t = MoeTable(meta, (1.0, 8.0), cells={(2880, 2880, 4, 32, 32): (9 * US, 19 * US),
                                           (2880, 2880, 4, 32, 16): (10 * US, 20 * US),
                                           (2880, 2880, 4, 32, 4): (30 * US, 60 * US)})
    # a size on the table reads its own row, as without padding
    assert t.series(2880, 90, 4, 32).at(1) == pytest.approx(9 * US)  # type: ignore[union-attr]
    # 200 per GPU computes 256, the call of the 180 row (of two sizes padded alike, the larger: the smaller tp)
    assert t.series(2880, 200, 4, 32).at(8) == pytest.approx(20 * US)  # type: ignore[union-attr]
    # 360 per GPU computes 512: between 256 (10, 20) and 768 (30, 60) at (512 - 256) / (768 - 256) = 1/2;
    # unpadded it would read (360 - 180) / (720 - 180) = 1/3 of the way: 16.7 / 33.3 us
    s = t.series(2880, 360, 4, 32)
    assert s is not None and s.at(1) == pytest.approx(20 * US) and s.at(8) == pytest.approx(40 * US)
    # held out, 180 is predicted by 90's row (the same padded call), not from 90 and 720 apart
    got = dict(leave_one_out(t))[((2880, 4, 32), 180)]
    assert [(m, p) for m, p, _ in got] == [(1.0, pytest.approx(9 * US)), (8.0, pytest.approx(19 * US))]


@pytest.mark.parametrize(("gpu", "table", "grain", "cited", "worst_bar"), [
    # vLLM 0.24.0 pads FlashInfer TRT-LLM MXFP4 experts to 256 (fused_moe/oracle/mxfp4.py:647-648)
    ("b200", "vllm/flashinfer-trtllm-mxfp4-moe", 256, "mxfp4.py:647-648", True),
    # its OAI Triton kernel on sm90 computes them in tiles of 128 (triton_kernels opt_flags_nvidia.py:35-36, 23-24)
    ("h100-sxm", "vllm/triton-mxfp4-moe", 128, "opt_flags_nvidia.py:35-36", False),
    ("h200", "vllm/triton-mxfp4-moe", 128, "opt_flags_nvidia.py:35-36", False),
    # SGLang 0.5.14 pads every FlashInfer TRT-LLM expert to 128 (fused_moe_triton/layer.py:229-237); read at the sizes
    # as given these medians were 3.0%, 2.4%, 3.3% and the first two's worst rows 27.6% and 21.0% (over the 20% bar)
    ("b200", "sglang/flashinfer-trtllm-moe", 128, "layer.py:229-237", True),
    ("b200", "sglang/flashinfer-trtllm-fp8-block-moe", 128, "layer.py:229-237", True),
    ("b200", "sglang/flashinfer-trtllm-nvfp4-moe", 128, "layer.py:229-237", False),
])
def test_padded_expert_tables_meet_the_held_out_bars_read_in_the_kernels_grain(gpu, table, grain, cited, worst_bar):
    # gpt-oss, per-GPU 90 ... 2880: read at the sizes as given, the leave-one-size-out medians were 7.5% (B200),
    # 5.3% (H100), 5.9% (H200) (docs/calibration.md §11, 2026-12-06): 360 per GPU sits a third of the way from 180
    # to 720, but the B200 kernel computes 512, halfway between 256 and 768. The bar of issue 25: median <= 5%
    from quantadvise.calibration.lookup_checks import moe_checks

    t = catalog.kernel_tables(gpu).moe(table)
    assert t is not None and t.meta.inter_align == grain and cited in t.meta.inter_align_source
    c, _ = moe_checks(t)
    assert c["rows"]["max"] == 0.0 and c["steps"]["median"] <= 0.05
    if worst_bar:  # and the worst held-out row within 20% (the B200 MXFP4 table's was 17.2% already)
        assert c["steps"]["max"] <= 0.20


def _experts_on(model: str, sch: str, gpu_id: str, engine: str, version: str, tp: int = 1) -> StepModel:
    gpu = catalog.get_gpu(gpu_id)
    arch, _ = load_model(model)
    eff = efficiency(load_profiles(gpu=gpu), gpu, scheme(sch), engine=engine, version=version)
    return StepModel(arch, scheme(sch), gpu, gpus=tp, efficiency=eff)


def test_vllm_on_blackwell_runs_flashinfer_trtllm_experts_and_they_are_priced_by_its_table():
    # vLLM 0.33.0 on SM100 puts FlashInfer's TRT-LLM-gen fused MoE first for block-fp8 experts (fused_moe/oracle/
    # fp8.py:88-104; Triton is moved to the front only on SM90): b200/vllm-flashinfer-trtllm-fp8-block-moe.csv.gz,
    # row "2048,768,8,128,1" (Qwen3-30B-A3B): 61.16 us at 8 tokens, 22.25 at 1; 48 MoE layers. Before, the
    # release had no SM100 row and the Triton table stood in (proxy).
    sm = _experts_on("Qwen/Qwen3-30B-A3B", "fp8-block", "b200", "vllm", "0.33.0")
    assert sm.experts_label() == "experts: fused-MoE measured table vllm/flashinfer-trtllm-fp8-block-moe (vllm 0.24.0)"
    assert sm.expert_time(8) == pytest.approx(48 * 61.16 * US, rel=1e-4)
    assert sm.expert_time(1) == pytest.approx(48 * 22.25 * US, rel=1e-4)


def test_sglang_picks_flashinfer_trtllm_on_blackwell_by_model_family_only():
    # SGLang 0.5.23 sets --moe-runner-backend flashinfer_trtllm on SM100 for the DeepSeek family (arg_groups/
    # overrides.py:745-760, :810-823) and the Qwen3 MoE family (model_overrides/qwen3_moe.py:29-37, :78-86); other
    # models keep auto (the Triton runner): Mixtral's bf16 experts have no SM100 row, and a stand-in prices them.
    # b200/sglang-flashinfer-trtllm-fp8-block-moe.csv.gz row "7168,2048,8,256,8" (DeepSeek-V3 at TP8): 74.2 us at
    # 8 tokens; 58 MoE layers (layers 3-60)
    ds = _experts_on("deepseek-ai/DeepSeek-V3", "fp8-block", "b200", "sglang", "0.5.23", tp=8)
    assert "sglang/flashinfer-trtllm-fp8-block-moe" in (ds.experts_label() or "")
    assert ds.expert_time(8) == pytest.approx(58 * 74.2 * US, rel=1e-4)
    mx = _experts_on("mistralai/Mixtral-8x7B-v0.1", "bf16", "b200", "sglang", "0.5.23", tp=2)
    assert "flashinfer-trtllm" not in (mx.experts_label() or "") and "(proxy)" in (mx.experts_label() or "")


def test_a_kernel_with_tables_but_no_curve_reads_a_stand_ins_table_where_its_own_lack_the_model():
    # vLLM runs W4A4 MXFP4 experts on SM100 with FlashInfer's TRT-LLM MXFP4 kernel; its published table holds
    # gpt-oss's configurations only (hidden 2880). Qwen3-30B-A3B's experts read the fused-MoE Marlin table as a
    # labelled proxy (the stand-in of weight-only experts), never the roofline (before: own:roofline)
    sm = _experts_on("Qwen/Qwen3-30B-A3B", "mxfp4", "b200", "vllm", "0.33.0")
    label = sm.experts_label() or ""
    assert "flashinfer-trtllm-mxfp4-moe by measured table" in label and "marlin-moe" in label and "(proxy)" in label
    assert "own:roofline" not in sm.parts(8, 1024)


def test_mla_decode_attention_reads_sglangs_published_mla_table():
    # DeepSeek-V3 (128 heads, kv_lora_rank 512 + rope 64) at TP8 on H200 under SGLang: h200/sglang-mla-decode.csv.gz
    # row "16,1,576,bf16,1": 17.11 us at a 2,048-token KV; row "16,1,576,bf16,64": 55.4 us; 61 MLA layers. Before,
    # MLA kept the roofline with the GQA table's launch floor (issue 25: attention the tables hold, lookup first)
    sm = _experts_on("deepseek-ai/DeepSeek-V3", "fp8-block", "h200", "sglang", "0.5.23", tp=8)
    assert sm.decode(1, 2048).attention_s == pytest.approx(61 * 17.11 * US, rel=1e-4)
    assert sm.decode(64, 2048).attention_s == pytest.approx(61 * 55.4 * US, rel=1e-4)
    assert "attention" in sm.parts(64, 2048)  # the table's band, not attention-roofline
    # vLLM publishes whole-module MLA timings only: its MLA attention stays on the roofline with the floor
    vl = _experts_on("deepseek-ai/DeepSeek-V3", "fp8-block", "h200", "vllm", "0.33.0", tp=8)
    assert "attention-roofline" in vl.parts(64, 2048) and "attention" not in vl.parts(64, 2048)


def test_inspect_names_the_fused_moe_backend_the_release_picks_for_the_models_family():
    # the same rows the speed model reads (sglang-0.5.23.yaml moe_routes with architectures): DeepSeek-V3's
    # (DeepseekV3ForCausalLM) fp8 experts on B200 run FlashInfer's TRT-LLM fused MoE, its dense layers DeepGEMM
    from quantadvise.api.inspect import inspect

    r = inspect("deepseek-ai/DeepSeek-V3", gpu="b200", engines="sglang")
    kernels = {k.group: k.kernel for k in r.kernels}
    assert kernels["fp8 (experts)"] == "flashinfer-trtllm-fp8-block-moe"
    r = inspect("deepseek-ai/DeepSeek-V3", gpu="h100", engines="sglang")  # SM90: the Triton fused MoE
    assert {k.group: k.kernel for k in r.kernels}["fp8 (experts)"] == "triton-fp8-block-moe"


def test_a_kernel_on_file_without_a_curve_falls_to_its_stand_ins_curve_never_the_roofline():
    # vLLM 0.33.0 runs static per-tensor FP8 experts on SM100 with FlashInfer's TRT-LLM kernel (oracle/fp8.py:88-104,
    # :151-157); its B200 table holds no configuration of Nemotron-3-Nano (hidden 2688, top-6 of 128), nor does the
    # stand-in's Triton fp8 table: the stand-in's measured curve prices the experts, labelled proxy. Before, with
    # the route on file and no curve, they fell to the roofline (0 per-layer cost: 33-131% fast on the S7 runs)
    from quantadvise.api.e2e import load_arch

    gpu = catalog.get_gpu("b200")
    arch = load_arch("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B")
    s = scheme("fp8-tensor")
    sm = StepModel(arch, s, gpu, gpus=2, efficiency=efficiency(load_profiles(gpu=gpu), gpu, s, engine="vllm",
                                                                 version="0.33.0"))
    assert sm.experts_label() == "experts: fused-MoE vllm/flashinfer-trtllm-fp8-moe (proxy, vllm/triton-fp8-block-moe)"
    parts = sm.parts(8, 1024)
    assert "own:proxy" in parts and "own:roofline" not in parts


def test_a_row_the_collector_stopped_early_continues_as_the_next_sizes_proportional_share():
    # b200/vllm-flashinfer-trtllm-fp8-moe.csv.gz: "5120,8192,1,16,32" (256 per GPU) was timed at 1, 2, 4 tokens only
    # (16.53 / 17.38 / 19.21 us); "5120,8192,1,16,16" (512 per GPU) reaches 264.5 us at 16,384 tokens. Past its
    # last point the 256 row is half the 512 row's call (a proportional slice of the work), never under 19.21 us;
    # an affine extension of its three points gave ~15 ms at 16,384 tokens
    t = catalog.kernel_tables("b200").moe("vllm/flashinfer-trtllm-fp8-moe")
    s = t.series(5120, 256, 1, 16)
    assert s.at(4) == pytest.approx(19.21 * US, rel=1e-4)
    assert s.at(16384) == pytest.approx(264.5 / 2 * US, rel=1e-4)
    assert s.at(8) == pytest.approx(19.21 * US, rel=1e-4)  # half the 512 row (20.6 us) would be under its own 4-token time


def test_glm4_moe_on_blackwell_runs_flashinfer_trtllm_for_bf16_and_nvfp4_only():
    # SGLang 0.5.23 model_overrides/glm4_moe.py:15, :19, :34-39: on SM100, modelopt_fp4 or no quantization sets
    # flashinfer_trtllm for Glm4MoeForCausalLM; an FP8 GLM checkpoint keeps auto (no SM100 fp8-block row for it)
    from quantadvise.engines.kernels import resolve_moe_kernel, resolve_route

    t = catalog.kernel_table("sglang", "0.5.23")
    assert t is not None
    got = resolve_route(t, "bf16", 100, moe=True, architecture="Glm4MoeForCausalLM")
    assert got is not None and got.kernel.id == "flashinfer-trtllm-moe"
    assert resolve_moe_kernel(t, scheme("nvfp4"), 100, architecture="Glm4MoeForCausalLM").kernel.id \
        == "flashinfer-trtllm-nvfp4-moe"
    assert resolve_moe_kernel(t, scheme("fp8-block"), 100, architecture="Glm4MoeForCausalLM") is None
    assert resolve_route(t, "bf16", 100, moe=True, architecture="MixtralForCausalLM") is None
    assert resolve_route(t, "bf16", 100, moe=True) is None  # no architecture: family rows do not apply


def test_llama4_modelopt_fp8_on_blackwell_runs_flashinfer_trtllm_per_tensor():
    # SGLang 0.5.23 model_overrides/llama4.py:16, :38-40: on SM100, fp8 / modelopt_fp8 sets flashinfer_trtllm for
    # Llama 4; a ModelOpt FP8 checkpoint (static per-tensor) runs the per-tensor kernel, priced by the published
    # table of it (b200/vllm-flashinfer-trtllm-fp8-moe.csv.gz "5120,8192,1,16,1", Llama-4-Scout: 128.6 us at 8 tokens)
    from quantadvise.engines.kernels import resolve_moe_kernel
    from quantadvise.perf.lookup import choose_moe_table

    t = catalog.kernel_table("sglang", "0.5.23")
    assert t is not None
    got = resolve_moe_kernel(t, scheme("fp8-tensor"), 100, architecture="Llama4ForConditionalGeneration")
    assert got is not None and got.kernel.id == "flashinfer-trtllm-fp8-moe"
    assert resolve_moe_kernel(t, scheme("fp8-tensor"), 90, architecture="Llama4ForConditionalGeneration") is None
    tables = catalog.kernel_tables("b200")
    mc = choose_moe_table(tables, "sglang", "flashinfer-trtllm-fp8-moe")
    assert mc is not None
    s, _ = mc.series(5120, 8192, 1, 16, 1.0)
    assert s.at(8) == pytest.approx(128.6 * US, rel=1e-4)


def test_nemotron_h_on_blackwell_runs_flashinfer_trtllm_for_modelopt_and_bf16():
    # SGLang 0.5.23 model_overrides/nemotron_h.py:17-21, :99-103: a ModelOpt (FP8 / NVFP4) or unquantized Nemotron-H
    # on SM100 without an all-to-all runs flashinfer_trtllm
    from quantadvise.engines.kernels import resolve_moe_kernel, resolve_route

    t = catalog.kernel_table("sglang", "0.5.23")
    assert t is not None
    arch = "NemotronHForCausalLM"
    assert resolve_route(t, "bf16", 100, moe=True, architecture=arch).kernel.id == "flashinfer-trtllm-moe"
    assert resolve_moe_kernel(t, scheme("fp8-tensor"), 100, architecture=arch).kernel.id == "flashinfer-trtllm-fp8-moe"
    assert resolve_moe_kernel(t, scheme("nvfp4"), 100, architecture=arch).kernel.id == "flashinfer-trtllm-nvfp4-moe"
    assert resolve_moe_kernel(t, scheme("nvfp4"), 90, architecture=arch) is None  # SM90: not these rows


SGLANG_SM100_RELEASES = ("0.5.20", "0.5.21", "0.5.22", "0.5.23")


def _sglang_moe(version: str, sid: str, arch: str, capability: int = 100) -> str | None:
    from quantadvise.engines.kernels import resolve_moe_kernel, resolve_route

    t = catalog.kernel_table("sglang", version)
    assert t is not None and t.version == version
    got = (resolve_route(t, "bf16", capability, moe=True, architecture=arch) if sid == "bf16"
           else resolve_moe_kernel(t, scheme(sid), capability, architecture=arch))
    return got.kernel.id if got is not None else None


@pytest.mark.parametrize("version", SGLANG_SM100_RELEASES)
def test_gemma4_modelopt_nvfp4_on_blackwell_runs_flashinfer_trtllm(version):
    # SGLang 0.5.21-0.5.23 model_overrides/gemma4.py:17-22, :45-48 (0.5.20: :20-24, :39-42): on SM100 with
    # --moe-runner-backend auto, a modelopt_fp4 Gemma 4 sets flashinfer_trtllm; any other checkpoint keeps auto
    for arch in ("Gemma4ForConditionalGeneration", "Gemma4ForCausalLM"):
        assert _sglang_moe(version, "nvfp4", arch) == "flashinfer-trtllm-nvfp4-moe"
        assert _sglang_moe(version, "bf16", arch) is None
        assert _sglang_moe(version, "fp8-block", arch) is None
        assert _sglang_moe(version, "nvfp4", arch, 90) is None  # SM90: not these rows
    # DiffusionGemmaForBlockDiffusion joins the override's list in 0.5.21
    assert (_sglang_moe(version, "nvfp4", "DiffusionGemmaForBlockDiffusion") is None) == (version == "0.5.20")


@pytest.mark.parametrize("version", SGLANG_SM100_RELEASES)
def test_mimo_v2_fp8_on_blackwell_runs_flashinfer_trtllm(version):
    # SGLang 0.5.23 model_overrides/mimo_v2.py:19, :33-44 (0.5.20: :20, :30-35): on SM100 with --moe-runner-backend
    # auto, a quant_method fp8 MiMo-V2 sets flashinfer_trtllm (0.5.22 on: only without an all-to-all, and a mixed
    # checkpoint's MXFP4 experts take flashinfer_mxfp4, not on file); block scales run the block kernel
    arch = "MiMoV2FlashForCausalLM"
    assert _sglang_moe(version, "fp8-block", arch) == "flashinfer-trtllm-fp8-block-moe"
    assert _sglang_moe(version, "fp8-tensor", "MiMoV2ForCausalLM") == "flashinfer-trtllm-fp8-moe"
    assert _sglang_moe(version, "bf16", arch) is None
    assert _sglang_moe(version, "nvfp4", arch) is None
    assert _sglang_moe(version, "fp8-block", arch, 90) == "triton-fp8-block-moe"  # SM90: the generic auto row


@pytest.mark.parametrize("version", SGLANG_SM100_RELEASES)
def test_cohere2_moe_on_blackwell_runs_flashinfer_trtllm_for_bf16_and_nvfp4(version):
    # SGLang 0.5.23 model_overrides/cohere2_moe.py:28-31, :34-45 (0.5.20: :31-34, :37-48): on SM100 with
    # --moe-runner-backend auto, an unquantized or nvfp4-pack-quantized Cohere2 MoE sets flashinfer_trtllm; any other
    # quantized checkpoint keeps auto
    for arch in ("Cohere2MoeForCausalLM", "Cohere2VisionForConditionalGeneration"):
        assert _sglang_moe(version, "bf16", arch) == "flashinfer-trtllm-moe"
        assert _sglang_moe(version, "nvfp4", arch) == "flashinfer-trtllm-nvfp4-moe"
        assert _sglang_moe(version, "fp8-block", arch) is None
        assert _sglang_moe(version, "bf16", arch, 90) == "triton-moe"  # SM90: the generic auto row


def test_beam_modelopt_nvfp4_on_blackwell_runs_flashinfer_trtllm_from_0_5_23():
    # SGLang 0.5.23 model_overrides/beam.py:20, :33-44: a ModelOpt NVFP4 Beam on SM100 with --moe-runner-backend auto
    # and no all-to-all sets flashinfer_trtllm; beam.py is new in 0.5.23 (0.5.22 keeps auto: no SM100 row)
    assert _sglang_moe("0.5.23", "nvfp4", "BeamForCausalLM") == "flashinfer-trtllm-nvfp4-moe"
    assert _sglang_moe("0.5.23", "bf16", "BeamForCausalLM") is None
    assert _sglang_moe("0.5.22", "nvfp4", "BeamForCausalLM") is None
