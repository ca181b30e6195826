"""Maintainer script: write data/comm.yaml, the communication figures the layout search prices with, from
NVIDIA's published measurements in aiconfigurator-core (the same package tools/import_aiconfigurator.py reads).

Run by hand, never at runtime:

    pip download aiconfigurator-core==0.12.0 --no-deps -d /tmp/aic && unzip -q /tmp/aic/*.whl -d /tmp/aic/x
    pip install pandas pyarrow pyyaml              # what the parquet tables need
    python tools/import_comm.py --source /tmp/aic/x/aiconfigurator_core

Per GPU system it keeps (every figure with its package file, and line for the node facts):

- the node facts of ``systems/<system>.yaml`` ``node:`` (GPUs per node, per-GPU one-direction NVLink / PCIe and
  network bandwidth, the point-to-point latency);
- all-reduce latency by message size and GPU count (2, 4, 8): each engine's custom all-reduce under CUDA graphs
  (``comm/vllm/<newest>/custom_allreduce_perf``, ``comm/sglang/<newest>/...``) and NCCL's
  (``comm/nccl/<misc.nccl_version>/nccl_perf``, all_reduce rows), and NCCL's alltoall;
- DeepEP low-latency dispatch and combine by tokens per rank, for the shape the package measured across nodes
  (hidden 7168, top-8 of 256 experts), newest release per node count.

Units, from the collectors in ai-dynamo/aiconfigurator (collector/network/collect_nccl.py,
collect_all_reduce.py): NCCL ``message_size`` is elements (nccl-tests bytes // 2 for half), latency the out-of-place
time in ms; custom all-reduce ``message_size`` is the tensor's numel, latency ms per op under graph replay; DeepEP
``*_avg_t_us`` microseconds. Written here as bytes and seconds.
"""

from __future__ import annotations

import argparse
import re
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = "aiconfigurator-core==0.12.0"
# quantadvise GPU id -> aiconfigurator system
SYSTEMS = {"h100-sxm": "h100_sxm", "h200": "h200_sxm", "b200": "b200_sxm", "gb200": "gb200", "b300": "b300_sxm",
           "gb300": "gb300", "a100-80gb": "a100_sxm",
           "h100-pcie": "h100_pcie", "rtx-pro-6000": "rtx_pro_6000_server", "l4": "l4"}
# tables whose figures reflect one collection host's topology, not the GPU (kept out: node facts only)
NO_CURVES = {"l4": "the package has no communication tables for l4"}
BPE = {"half": 2, "bfloat16": 2, "float16": 2, "int8": 1, "float32": 4}
DEEPEP_SHAPE = (7168, 8, 256)


def _version_key(v: str) -> tuple:
    return tuple(int(x) if x.isdigit() else -1 for x in re.split(r"[.+a-z]+", v) if x)


def node_facts(src: Path, system: str) -> tuple[dict, str]:
    lines = (src / "systems" / f"{system}.yaml").read_text().splitlines()
    out: dict[str, tuple[float, int]] = {}
    on = False
    for i, ln in enumerate(lines, 1):
        if ln.startswith("node:"):
            on = True
            continue
        if on and ln and not ln.startswith(" "):
            break
        m = re.match(r"\s+(\w+):\s*([0-9.e+-]+)", ln)
        if on and m:
            out[m.group(1)] = (float(m.group(2)), i)
    first, last = min(v[1] for v in out.values()), max(v[1] for v in out.values())
    facts = {k: v[0] for k, v in out.items()}
    return facts, f"{PKG}: aiconfigurator_core/systems/{system}.yaml:{first}-{last}"


def _curve(rows, size_col: str, lat_col: str, bpe: int, lat_scale: float) -> list[list[float]]:
    pts = sorted({(int(s) * bpe, float(t) * lat_scale) for s, t in zip(rows[size_col], rows[lat_col], strict=True)})
    out: list[list[float]] = []
    for b, t in pts:  # one latency per size (the first row's)
        if out and out[-1][0] == b:
            continue
        out.append([b, float(f"{t:.4g}")])
    return out


def curves(src: Path, system: str) -> list[dict]:
    import pandas as pd
    import yaml

    base = src / "systems" / "data" / system / "comm"
    out: list[dict] = []
    misc = yaml.safe_load((src / "systems" / f"{system}.yaml").read_text()).get("misc") or {}
    nccl_v = str(misc.get("nccl_version", ""))
    nccl_file = base / "nccl" / nccl_v / "nccl_perf.parquet"
    if nccl_file.exists():
        d = pd.read_parquet(nccl_file)
        d = d[d.nccl_dtype == "half"]
        for op in ("all_reduce", "alltoall"):
            for n, h in d[d.op_name == op].groupby("num_gpus"):
                out.append({"op": op, "impl": "nccl", "gpus": int(n), "version": nccl_v,
                            "points": _curve(h, "message_size", "latency", 2, 1e-3),
                            "source": f"{PKG}: aiconfigurator_core/{nccl_file.relative_to(src)} (NCCL {nccl_v}, "
                                      f"misc.nccl_version of systems/{system}.yaml; {op} rows, half)"})
    for engine, kernel in (("vllm", "vLLM_custom_graph"), ("sglang", "SGLang_CustomAllReduce_graph")):
        folder = base / engine
        if not folder.exists():
            continue
        versions = sorted((p.name for p in folder.iterdir() if (p / "custom_allreduce_perf.parquet").exists()),
                          key=_version_key)
        if not versions:
            continue
        v = versions[-1]
        f = folder / v / "custom_allreduce_perf.parquet"
        d = pd.read_parquet(f)
        d = d[d.kernel_source == kernel]
        for n, h in d.groupby("num_gpus"):
            bpe = BPE[str(h.allreduce_dtype.iloc[0])]
            out.append({"op": "all_reduce", "impl": engine, "gpus": int(n), "version": v,
                        "points": _curve(h, "message_size", "latency", bpe, 1e-3),
                        "source": f"{PKG}: aiconfigurator_core/{f.relative_to(src)} ({kernel}: {engine}'s custom "
                                  "all-reduce under CUDA graph replay)"})
    return out


def deepep(src: Path, system: str, mode: str = "ll") -> list[dict]:
    """DeepEP dispatch/combine by tokens per rank and node count: ``ll`` the low-latency kernels (decode),
    ``normal`` the high-throughput ones (prefill; the fastest of the SM counts measured per token count)."""
    import pandas as pd

    base = src / "systems" / "data" / system / "comm" / "sglang"
    if not base.exists():
        return []
    best: dict[int, dict] = {}
    for f in sorted(base.glob(f"*/wideep_deepep_{mode}_perf.parquet")):
        d = pd.read_parquet(f)
        hidden, topk, experts = DEEPEP_SHAPE
        d = d[(d.hidden_size == hidden) & (d.num_topk == topk) & (d.num_experts == experts)]
        for (ver, nodes), h in d.groupby(["version", "node_num"]):
            if mode == "ll":
                h = h.sort_values("num_token")
                pts = [[int(t), float(f"{a * 1e-6:.4g}"), float(f"{b * 1e-6:.4g}")] for t, a, b in
                       zip(h.num_token, h.dispatch_avg_t_us, h.combine_avg_t_us, strict=True)]
                what = "DeepEP low-latency: dispatch_avg_t_us, combine_avg_t_us by num_token per rank"
            else:
                h = h.assign(d_us=h.dispatch_transmit_us + h.dispatch_notify_us,
                             c_us=h.combine_transmit_us + h.combine_notify_us)
                g = h.groupby("num_token").agg(d_us=("d_us", "min"), c_us=("c_us", "min")).reset_index()
                pts = [[int(t), float(f"{a * 1e-6:.4g}"), float(f"{b * 1e-6:.4g}")] for t, a, b in
                       zip(g["num_token"], g["d_us"], g["c_us"], strict=True)]
                what = ("DeepEP normal (high-throughput): transmit + notify us, the fastest of the SM counts "
                        "measured, by num_token per rank")
            if len(pts) < 2:
                continue
            row = {"nodes": int(nodes), "hidden": hidden, "top_k": topk, "experts": experts, "version": str(ver),
                   "points": pts, "source": f"{PKG}: aiconfigurator_core/{f.relative_to(src)} ({what}, sglang {ver})"}
            if int(nodes) not in best or _version_key(str(ver)) > _version_key(best[int(nodes)]["version"]):
                best[int(nodes)] = row
    return [best[k] for k in sorted(best)]


HEADER = """\
# Communication figures per GPU system, for the layout search (advisor/layouts.py, perf/comm.py): what an
# all-reduce, an all-to-all, a pipeline hand-off and a DeepEP dispatch/combine cost. Written by
# tools/import_comm.py from NVIDIA's published measurements in aiconfigurator-core 0.12.0 (Apache-2.0);
# never edited by hand. Validated by quantadvise.perf.comm.CommSystem (unknown keys are rejected).
#
# - node facts: systems/<system>.yaml `node:` (bytes/s per GPU, one direction; p2p latency in seconds; the
#   package calls the 10 us latency "some nonofficial correction based on observations").
# - curves: [bytes, seconds] per message size. impl vllm / sglang: that engine's custom all-reduce under
#   CUDA graphs (the small messages of a decode step: vLLM 4.6 us at 16 KiB on 8 x H100 against NCCL's 15 us);
#   nccl: NCCL's all_reduce / alltoall (nccl-tests out-of-place time, half). Between points the latency is
#   interpolated linearly in bytes; past the last point it grows at the last segment's slope.
# - deepep: DeepEP low-latency dispatch / combine (the decode all-to-all of expert parallelism) by tokens per rank
#   and node count, for the shape measured across nodes (hidden 7168, top-8 of 256 experts: DeepSeek-V3's);
#   deepep_normal: the high-throughput kernels prefill runs (the fastest SM count measured at each size).
# l4 and h100-pcie carry node facts only (no tables in the package); the package's l40s tables are left out
# (about 1.5 GB/s bus bandwidth at 8 GPUs: that collection host's PCIe topology, not the GPU).
"""


def main(argv: list[str] | None = None) -> int:
    import yaml

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True, help="the aiconfigurator_core package folder")
    ap.add_argument("--out", default=str(ROOT / "data" / "comm.yaml"))
    ap.add_argument("--as-of", default=date.today().isoformat())
    args = ap.parse_args(argv)
    src = Path(args.source)
    rows = []
    for gpu, system in SYSTEMS.items():
        facts, where = node_facts(src, system)
        row = {"gpu": gpu, "system": system, "gpus_per_node": int(facts["num_gpus_per_node"]),
               "intra_node_bytes_per_s": facts["intra_node_bw"], "inter_node_bytes_per_s": facts["inter_node_bw"],
               "p2p_latency_s": facts["p2p_latency"], "node_source": where}
        if "num_gpus_per_rack" in facts:  # GB200: the NVLink domain spans the rack
            row["nvlink_domain_gpus"] = int(facts["num_gpus_per_rack"])
        if gpu not in NO_CURVES:
            row["curves"] = curves(src, system)
            row["deepep"] = deepep(src, system)
            row["deepep_normal"] = deepep(src, system, "normal")
        else:
            row["note"] = NO_CURVES[gpu]
        row["source"] = f"{PKG} (PyPI), systems/{system}.yaml and systems/data/{system}/comm/"
        row["as_of"] = args.as_of
        rows.append(row)

    class Flow(yaml.SafeDumper):
        pass

    def lists(d: yaml.SafeDumper, v: list) -> yaml.Node:
        flow = bool(v) and all(isinstance(x, int | float) for x in v)
        return d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=flow)

    Flow.add_representer(list, lists)
    text = yaml.dump({"schema_version": 1, "systems": rows}, Dumper=Flow, sort_keys=False, width=120)
    Path(args.out).write_text(HEADER + text)
    print("wrote", args.out, [r["gpu"] for r in rows])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
