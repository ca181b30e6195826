"""Communication figures (data/comm.yaml, perf/comm.py) and a layout's step (perf/parallel.py).

Expected numbers: the measured tables themselves (aiconfigurator-core 0.12.0, quoted with their file), or the
arithmetic of the model in a comment."""

from __future__ import annotations

from datetime import date

import pytest

from quantadvise import catalog
from quantadvise.perf.comm import Comm, CommCurve, CommSystem


def _system(**kw) -> CommSystem:
    base = dict(gpu="x", system="x", gpus_per_node=8, intra_node_bytes_per_s=400e9, inter_node_bytes_per_s=50e9,
                p2p_latency_s=1e-5, node_source="test", source="test", as_of=date(2026, 12, 6))
    return CommSystem.model_validate({**base, **kw})


def test_curves_interpolate_in_bytes_and_extend_at_the_last_slope():
    c = CommCurve(op="all_reduce", impl="nccl", gpus=2, version="t", points=((1000, 1e-5), (3000, 3e-5), (5000, 4e-5)),
                  source="t")
    assert c.seconds(500) == 1e-5  # below the first point: its latency
    assert c.seconds(2000) == pytest.approx(2e-5)  # halfway between 1e-5 and 3e-5
    assert c.seconds(7000) == pytest.approx(5e-5)  # last slope (4e-5 - 3e-5) / 2000 B x 2000 B more: 4e-5 + 1e-5


def test_all_reduce_takes_the_faster_of_the_engines_kernel_and_nccl_at_a_measured_size():
    """8 x H100, 16,384 B: vLLM's custom all-reduce 5.31 us against NCCL's 15 us (aiconfigurator-core 0.12.0,
    systems/data/h100_sxm/comm/vllm/0.24.0/custom_allreduce_perf.parquet and nccl/2.27.3/nccl_perf.parquet)."""
    h100 = catalog.comm_system("h100-sxm")
    assert h100 is not None
    vllm = next(c for c in h100.curves if c.impl == "vllm" and c.gpus == 8)
    nccl = next(c for c in h100.curves if c.impl == "nccl" and c.op == "all_reduce" and c.gpus == 8)
    assert vllm.seconds(16384) == pytest.approx(5.31e-6, rel=0.01)
    assert nccl.seconds(16384) > 10e-6
    assert Comm(h100, "vllm").allreduce(16384, 8) == pytest.approx(vllm.seconds(16384))


def test_node_facts_are_the_packages():
    """aiconfigurator-core 0.12.0 systems/h100_sxm.yaml:17-21: 8 GPUs, 50e9 B/s NDR per GPU, 450e9 NVLink, 10 us."""
    h100 = catalog.comm_system("h100-sxm")
    assert (h100.gpus_per_node, h100.inter_node_bytes_per_s, h100.intra_node_bytes_per_s, h100.p2p_latency_s) == \
        (8, 50e9, 450e9, 1e-5)
    assert catalog.comm_system("b200").inter_node_bytes_per_s == 100e9  # b200_sxm.yaml: CX8 XDR 800 Gb/s per GPU


def test_all_reduce_across_nodes_adds_a_ring_over_the_network():
    sys_ = _system(curves=[CommCurve(op="all_reduce", impl="nccl", gpus=8, version="t",
                                     points=((1, 2e-5), (1 << 30, 2e-5)), source="t")])
    comm = Comm(sys_, "vllm")
    # 16 GPUs = 2 nodes: 2e-5 within the node, then 2(2-1)/2 x (8 MiB / 8) / 50e9 + 2 x (2-1) x 1e-5
    expected = 2e-5 + 1.0 * (8 * 2**20 / 8) / 50e9 + 2e-5
    assert comm.allreduce(8 * 2**20, 16) == pytest.approx(expected)


def test_without_curves_the_link_prices_a_ring():
    comm = Comm(_system(), "vllm")
    # 4 GPUs: 2(4-1)/4 x 1 MB / 400e9 + 2(4-1) x 1e-5
    assert comm.allreduce(1e6, 4) == pytest.approx(1.5 * 1e6 / 400e9 + 6e-5)
    assert comm.allreduce(1e6, 1) == 0.0


def test_dispatch_combine_reads_deepep_and_scales_the_tokens_by_the_bytes():
    """H100, 1 node, 128 tokens per rank: DeepEP dispatch 36.72 us + combine 66.98 us (sglang 0.5.12 table,
    systems/data/h100_sxm/comm/sglang/0.5.12/wideep_deepep_ll_perf.parquet)."""
    comm = Comm(catalog.comm_system("h100-sxm"), "sglang")
    assert comm.dispatch_combine(128, hidden=7168, top_k=8, gpus=8) == pytest.approx(36.72e-6 + 66.98e-6, rel=0.01)
    # half the hidden size moves half the bytes: the table read at 64 tokens (24.57 + 39.73 us)
    assert comm.dispatch_combine(128, hidden=3584, top_k=8, gpus=8) == pytest.approx(24.57e-6 + 39.73e-6, rel=0.01)


def test_dispatch_combine_without_a_table_is_bytes_over_the_link():
    comm = Comm(_system(), "vllm")
    # 2 x 1e-5 + 100 tokens x 4 experts x 1000 x (1 + 2) B x (8-1)/8 / 400e9
    assert comm.dispatch_combine(100, hidden=1000, top_k=4, gpus=8) == pytest.approx(
        2e-5 + 100 * 4 * 1000 * 3 * 7 / 8 / 400e9)


def test_every_comm_row_is_a_bundled_gpu_with_a_source():
    for gid in catalog.comm_ids():
        row = catalog.comm_system(gid)
        catalog.get_gpu(gid)
        assert row.source and row.node_source.startswith("aiconfigurator-core==0.12.0")
        for c in row.curves:
            assert c.source.startswith("aiconfigurator-core==0.12.0") and c.points == tuple(sorted(c.points))
