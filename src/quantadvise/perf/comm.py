"""Communication: what a collective costs on one GPU system, from measured tables (``data/comm.yaml``).

The layout search (``advisor/layouts.py``) prices every exchange a parallel layout makes per step:

- **all-reduce** of the hidden state after attention and after the MLP under tensor parallelism: the
  engine's own custom all-reduce under CUDA graphs (vLLM's, SGLang's) or NCCL's, whichever the table
  says is faster at that size (the engines pick the custom kernel for small messages and NCCL above
  its size limit); linear interpolation in bytes between measured sizes, the last segment's slope past
  the largest. Across nodes (more GPUs than a node holds): the node's all-reduce over its GPUs, then a
  ring over the nodes' network links on the node's share of the message, ``2(N−1)/N · (bytes/g) / β_net
  + 2(N−1) · latency`` (N nodes of g GPUs; β_net per GPU, one direction).
- **dispatch + combine** of the routed tokens under expert parallelism: DeepEP measured by tokens per
  rank and node count, its low-latency kernels (decode) up to the largest count they were measured at,
  its high-throughput kernels beyond (prefill), (hidden 7168, top-8: DeepSeek-V3's shape; another shape
  reads the table at the tokens carrying the same bytes, ``tokens · hidden · k / (7168 · 8)``); without a table,
  bytes over the link: ``2 · latency + tokens · k · hidden · (1 + 2) B · (n−1)/n / β`` (fp8 out, bf16 back),
  β the node's NVLink within a node, its network across nodes.
- **point-to-point** hand-offs between pipeline stages and the KV cache sent from a prefill pool to a
  decode pool: ``latency + bytes / β``.

A system without measured curves (node facts only) prices an all-reduce on its link: the ring's
``2(n−1)/n · bytes / β + 2(n−1) · latency``. Each figure is a model over published measurements, not a
measurement of the deployment. Pure: rows come in as data (``catalog`` reads the file).
"""

import math
from bisect import bisect_left
from datetime import date

from ..results import Strict

DEEPEP_REFERENCE = (7168, 8)  # hidden, top-k of the DeepEP tables (DeepSeek-V3's shape)
DISPATCH_BYTES, COMBINE_BYTES = 1.0, 2.0  # per routed element: fp8 out (DeepEP's dispatch), bf16 back


class CommCurve(Strict):
    """One collective's latency by message size at one GPU count."""

    op: str  # all_reduce | alltoall
    impl: str  # nccl | an engine's name (its custom all-reduce)
    gpus: int
    version: str
    points: tuple[tuple[float, float], ...]  # (bytes, seconds), sorted by bytes
    source: str

    def seconds(self, nbytes: float) -> float:
        return _interp(self.points, nbytes)


class DeepEPTable(Strict):
    """DeepEP low-latency dispatch / combine by tokens per rank, on ``nodes`` nodes."""

    nodes: int
    hidden: int
    top_k: int
    experts: int
    version: str
    points: tuple[tuple[float, float, float], ...]  # (tokens per rank, dispatch s, combine s)
    source: str

    def seconds(self, tokens: float) -> float:
        """Dispatch + combine for ``tokens`` tokens per rank."""
        return (_interp(tuple((p[0], p[1]) for p in self.points), tokens)
                + _interp(tuple((p[0], p[2]) for p in self.points), tokens))


class CommSystem(Strict):
    """One row of data/comm.yaml: a GPU system's node facts and measured collectives."""

    gpu: str
    system: str
    gpus_per_node: int
    intra_node_bytes_per_s: float
    inter_node_bytes_per_s: float
    p2p_latency_s: float
    node_source: str
    nvlink_domain_gpus: int | None = None  # GB200 NVL72: NVLink spans the rack, beyond the 4-GPU node
    curves: tuple[CommCurve, ...] = ()
    deepep: tuple[DeepEPTable, ...] = ()  # low-latency kernels (decode)
    deepep_normal: tuple[DeepEPTable, ...] = ()  # high-throughput kernels (prefill)
    note: str = ""
    source: str
    as_of: date


def _interp(points: tuple[tuple[float, float], ...], x: float) -> float:
    """Piecewise linear in x; the first value below the first point; the last segment's slope past the last."""
    if not points:
        return 0.0
    xs = [p[0] for p in points]
    if x <= xs[0]:
        return points[0][1]
    i = bisect_left(xs, x)
    if i >= len(points):
        (x0, y0), (x1, y1) = points[-2] if len(points) > 1 else points[-1], points[-1]
        slope = (y1 - y0) / (x1 - x0) if x1 > x0 else 0.0
        return y1 + max(slope, 0.0) * (x - x1)
    (x0, y0), (x1, y1) = points[i - 1], points[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def _at_nodes(tables: dict[int, DeepEPTable], nodes: int) -> DeepEPTable | None:
    """The table measured on ``nodes`` nodes, else on the most nodes measured when ``nodes`` is beyond them."""
    if nodes in tables:
        return tables[nodes]
    if tables and nodes > max(tables):
        return tables[max(tables)]
    return None


class Comm:
    """A GPU system's collectives as functions of bytes (seconds), for one engine's all-reduce."""

    def __init__(self, system: CommSystem, engine: str):
        self.system = system
        self.engine = engine
        self.gpus_per_node = system.gpus_per_node
        # the NVLink domain: a node, or GB200's rack
        self.domain = system.nvlink_domain_gpus or system.gpus_per_node
        self._ar: dict[int, list[CommCurve]] = {}
        self._a2a: dict[int, CommCurve] = {}
        for c in system.curves:
            if c.op == "all_reduce" and c.impl in ("nccl", engine):
                self._ar.setdefault(c.gpus, []).append(c)
            elif c.op == "alltoall" and c.impl == "nccl":
                self._a2a[c.gpus] = c
        self._deepep = {t.nodes: t for t in system.deepep}
        self._deepep_normal = {t.nodes: t for t in system.deepep_normal}

    @property
    def measured(self) -> bool:
        return bool(self._ar)

    def nodes(self, gpus: int) -> int:
        return max(1, math.ceil(gpus / self.gpus_per_node))

    def _within(self, gpus: int) -> bool:
        return gpus <= self.domain

    def _ring(self, nbytes: float, n: int, bw: float) -> float:
        return 2.0 * (n - 1) / n * nbytes / bw + 2.0 * (n - 1) * self.system.p2p_latency_s

    def _curve_at(self, table: dict[int, list[CommCurve]], n: int) -> list[CommCurve] | None:
        if n in table:
            return table[n]
        larger = [k for k in table if k >= n]
        return table[min(larger)] if larger else None

    def allreduce(self, nbytes: float, gpus: int) -> float:
        """Seconds of one all-reduce of ``nbytes`` over ``gpus`` GPUs."""
        if gpus <= 1 or nbytes <= 0:
            return 0.0
        if self._within(gpus):
            curves = self._curve_at(self._ar, gpus)
            if curves:
                return min(c.seconds(nbytes) for c in curves)
            return self._ring(nbytes, gpus, self.system.intra_node_bytes_per_s)
        g = self.gpus_per_node
        n_nodes = self.nodes(gpus)
        inside = self.allreduce(nbytes, g)
        return inside + self._ring(nbytes / g, n_nodes, self.system.inter_node_bytes_per_s)

    def dispatch_combine(self, tokens_per_rank: float, *, hidden: int, top_k: int, gpus: int) -> float:
        """Seconds of one MoE layer's dispatch + combine with ``tokens_per_rank`` tokens on each of ``gpus``."""
        if gpus <= 1 or tokens_per_rank <= 0:
            return 0.0
        nodes = self.nodes(gpus) if not self._within(gpus) else 1
        ref_h, ref_k = DEEPEP_REFERENCE
        tokens = tokens_per_rank * hidden * top_k / (ref_h * ref_k)  # the tokens that move as many bytes
        table = _at_nodes(self._deepep, nodes)
        if table is not None and tokens > table.points[-1][0]:  # past the low-latency kernels' range: prefill's
            table = _at_nodes(self._deepep_normal, nodes) or table
        if table is not None:
            return table.seconds(tokens)
        bw = self.system.intra_node_bytes_per_s if nodes == 1 else self.system.inter_node_bytes_per_s
        moved = tokens_per_rank * top_k * hidden * (DISPATCH_BYTES + COMBINE_BYTES) * (gpus - 1) / gpus
        return 2.0 * self.system.p2p_latency_s + moved / bw

    def p2p(self, nbytes: float, *, cross_node: bool) -> float:
        """Seconds to send ``nbytes`` from one GPU to another (a pipeline hand-off, a KV transfer)."""
        bw = self.system.inter_node_bytes_per_s if cross_node else self.system.intra_node_bytes_per_s
        return self.system.p2p_latency_s + max(nbytes, 0.0) / bw

    def sources(self) -> list[str]:
        """The rows behind these figures, for a report's assumptions."""
        out = [self.system.node_source]
        for cs in self._ar.values():
            out += [c.source for c in cs]
        out += [t.source for t in self._deepep.values()]
        return sorted(set(out))


class PublishedMeasurement(Strict):
    """One published multi-GPU measurement the layout model is checked against (data/layout_validation.yaml)."""

    id: str
    split: str  # calibrate | holdout | reference
    what: str
    metric: str  # allreduce_busbw_gbps | dispatch_ms_per_layer | decode_tokens_per_s_per_node | ...
    gpu: str
    value: float
    unit: str
    source: str
    as_of: date
    model: str | None = None
    scheme: str | None = None
    engine: str | None = None
    gpus: int | None = None
    bytes: float | None = None
    tokens_per_gpu: int | None = None
    layout: dict[str, int | bool] | None = None  # tp, pp, dp, ep
    prefill: dict[str, int] | None = None  # a prefill pool: tp, replicas
    prompt: int | None = None
    output: int | None = None
    concurrency: int | None = None
    decode_ctx: int | None = None
    rate: float | None = None
    note: str = ""
    derived: str = ""
