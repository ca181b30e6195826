"""The layout search's results: every layout of the workload ranked (:class:`LayoutSearch`), and the
commands each node of the chosen one runs (:class:`LayoutPlan`). Typed so ``--format json`` is their dump."""

from typing import ClassVar

from ..perf.queueing import AtLoad
from ..perf.uncertainty import FigureBand
from ..results import OmitNone, Out, Result


class PrefillPool(Out):
    """The prefill side of a disaggregated layout."""

    layout: str
    tp: int
    pp: int
    ep: int
    dp: int
    replicas: int
    gpus: int
    prompts_per_s: float  # per replica
    utilization: float  # of the prefill pool at the load
    kv_transfer_s: float  # one prompt's KV cache, prefill to decode, over the network


class LayoutRow(OmitNone):
    """One way to serve the workload: a scheme on a GPU type, laid out as ``layout``, ``replicas`` times."""

    omit_if_none: ClassVar[tuple[str, ...]] = ("prefill", "utilization", "usd_per_mtok_at_load", "uncertainty",
                                               "at_load")

    rank: int = 0
    scheme: str
    native: bool = False
    gpu: str  # GPU id
    gpu_name: str
    family: str  # TP, TP+PP, TP+EP, TP+EP+PP, DP+EP, P/D
    layout: str  # TP8, TP4xPP2, DP16+EP16, P/D: ...
    tp: int
    pp: int
    ep: int  # expert-parallel degree (1: experts split by tensor parallelism)
    dp: int  # attention data-parallel groups in one replica
    gpus_per_replica: int
    gpus_per_node: int
    nodes_per_replica: int
    replicas: int
    gpus: int
    nodes: int
    kv_dtype: str
    concurrency: int  # sequences per replica
    limit: str  # what stops it: a budget (itl, ttft, e2e), memory, batch, users
    tokens_per_s: float  # output tokens/s per replica
    tokens_per_s_per_gpu: float
    itl_s: float
    ttft_s: float | None
    e2e_s: float
    step_s: float  # one decode step of a replica
    decode_tokens_per_s: float  # per replica, the decode steps alone
    prefill_share: float | None  # of GPU time (None: no prompt, or a decode pool)
    bound: str  # the decode step's: memory, compute, communication
    comm_share: float  # communication's share of the decode step
    usd_per_hour: float | None
    usd_per_mtok: float | None  # at each replica's capacity (every GPU busy)
    usd_per_mtok_at_load: float | None = None  # $/hour over the load's own tokens (--rate)
    utilization: float | None = None  # share of the replicas' output tokens/s the load uses (--rate)
    prefill: PrefillPool | None = None  # P/D: the prefill pool
    recommended: bool = False
    # the row's figures at the model's validated uncertainty (issue 25: each part of the replica's step weighted by
    # the held-out band of what priced it; the communication as the roofline's); None: the spec sheet
    uncertainty: FigureBand | None = None
    # --rate / --users: the replicas under the load, each at the concurrency the load keeps in flight, TTFT with the
    # mean wait for a free slot (perf.queueing); the figures above are at ``concurrency``
    at_load: AtLoad | None = None


class LayoutSearch(Out):
    """The layout table: every feasible layout, ranked, the first recommended."""

    pool: list[str]  # "h100-sxm: 8 GPUs per node (aiconfigurator-core ...)"
    max_gpus: int
    rate_per_s: float | None
    users: int | None
    output_tokens_per_s: float | None
    ranked_by: str
    rows: list[LayoutRow]
    weighed: int  # layouts priced
    pruned: int  # layouts that could not hold their weights and one sequence (never priced)
    over_pool: int  # layouts whose replicas the load needs exceed the pool
    bounded: int = 0  # layouts whose cost at the top of their range could not place them in the table
    notes: list[str] = []
    sources: list[str] = []
    plan: "LayoutPlan | None" = None  # the commands of the recommended layout


class NodeCommand(Out):
    """What one node of the chosen layout runs."""

    role: str  # replica | prefill | decode
    node_rank: int  # within its replica
    nodes: int  # nodes of its replica
    gpus: int  # GPUs this node gives the server
    command: str


class LayoutPlan(Out):
    """The chosen layout's commands, per engine and node (None: that engine cannot serve it), and the
    options a release does not register (the command is then not written)."""

    engines: dict[str, list[NodeCommand] | None]
    notes: list[str] = []


class DeployResult(Result):
    """The manifests for one stack: file name -> text, the layout they serve, how to check them."""

    target: str
    format: str  # the stack's format and version written
    engine: str
    engine_version: str
    model: str
    scheme: str
    layout: LayoutRow
    files: dict[str, str]
    check: str  # the command that reads them back
    notes: list[str] = []
