"""The tree's inputs as values: each candidate scheme (:class:`Option`) and everything the nodes
read (:class:`Context`: the model, the GPU, the workload, the KV options, the accuracy rules and the
engine releases as data). No callbacks: the nodes compute engine verdicts from the engine data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import defaults
from ..errors import QuantAdviseError
from ..evals.priors import AccuracyRule
from ..hardware import GPU
from ..model import ModelArch
from ..perf.datapath import datapath
from ..perf.efficiency import Efficiency
from ..perf.step import StepModel
from ..scheme import DeployHints, Scheme, TensorQuant
from ..sizing import size_model
from ..workload import Workload
from .result import EngineVerdict

if TYPE_CHECKING:
    from ..engines.data import EngineData

BF16_KV = "kv-bf16"


@dataclass(frozen=True)
class KvOption:
    """A KV cache dtype the tree may choose: its quantization (None: the model's 16-bit) and the
    engines' flags for it."""

    kv: TensorQuant | None
    hints: DeployHints


@dataclass(frozen=True)
class Candidate:
    """A scheme to weigh, with how it deploys and the efficiency curves that price it."""

    scheme: Scheme
    deploy: DeployHints
    efficiency: Efficiency


@dataclass
class Option:
    """A candidate scheme as the tree sees it (its state as the nodes judge it)."""

    scheme: Scheme
    deploy: DeployHints
    efficiency: Efficiency
    status: str = "candidate"
    reason: str = ""
    weights_bytes: int = 0
    model: StepModel | None = None
    model_kv: StepModel | None = None  # with the quantized KV cache option
    step_s: float = math.inf
    ttft_s: float | None = None
    throughput: float = 0.0
    score_s: float = math.inf  # seconds per output token as the workload experiences it
    fits_bf16_kv: bool = False
    fits_qkv: bool = False
    ridge: float | None = None
    cautions: list[str] = field(default_factory=list)
    engine: EngineVerdict | None = None
    family: str = ""
    priority: int = 0  # position in the candidate list (tie-break)
    partial: bool = False  # weights fit, but not the KV cache for the whole batch
    base_score_s: float = math.inf  # score with a bf16 KV cache (what "vs bf16" compares against)

    @property
    def id(self) -> str:
        return self.scheme.id


@dataclass
class Context:
    """What every node reads. ``engine`` is the release the workload deploys on; ``other_engine``
    the other engine, for which the plan also writes a command."""

    arch: ModelArch
    gpu: GPU
    workload: Workload
    kv_options: dict[str, KvOption]  # preset id -> option; always holds "kv-bf16" and ``quant_kv``
    quant_kv: str  # the quantized KV preset the tree weighs against bf16
    rules: tuple[AccuracyRule, ...]
    engine: EngineData
    other_engine: EngineData | None = None
    model_id: str = ""
    budget_bytes: float = 0.0
    kv_name: str = BF16_KV
    forced_kv: bool = False

    @property
    def platform(self) -> str:
        return "rocm" if self.gpu.vendor.lower() == "amd" else "cuda"


def rank(options: list[Option]) -> list[Option]:
    """Fastest first; near-ties (within ``defaults.TIE`` of the faster one) keep the candidate order,
    so two schemes the model cannot tell apart resolve to the one listed first (the more standard
    one). Candidates that hold the whole batch come before those that fit only part of it."""
    by_speed = sorted(options, key=lambda o: o.score_s)
    out: list[Option] = []
    i = 0
    while i < len(by_speed):
        lead = by_speed[i]
        j = i + 1
        while j < len(by_speed) and by_speed[j].score_s <= lead.score_s * (1 + defaults.TIE):
            j += 1
        out.extend(sorted(by_speed[i:j], key=lambda o: o.priority))
        i = j
    return [o for o in out if not o.partial] + [o for o in out if o.partial]


def family(s: Scheme) -> str:
    """bf16 | weight-only N-bit | WxAy <math>: how the trace and the result name a scheme's kind."""
    if not s.quantizes_weights or s.weight is None:
        return "bf16"
    if s.weight_only or s.activation is None:
        return f"weight-only {s.weight.bits}-bit"
    return f"W{s.weight.bits}A{s.activation.bits} {s.math_format}"


def family_kind(s: Scheme) -> str:
    if not s.quantizes_weights:
        return "bf16"
    return "weight-only" if s.weight_only else "w+a"


def build_options(arch: ModelArch, gpu: GPU, workload: Workload, candidates: Sequence[Candidate],
                  kv_options: dict[str, KvOption], quant_kv: str) -> list[Option]:
    """Size each candidate and build its step models (with a bf16 and with the quantized KV cache);
    a candidate the model cannot run on this GPU is kept, marked ``cannot-run`` with the reason."""
    opts: list[Option] = []
    kv_bf16 = kv_options[BF16_KV].kv
    kv_q = kv_options[quant_kv].kv
    for i, c in enumerate(candidates):
        o = Option(scheme=c.scheme, deploy=c.deploy, efficiency=c.efficiency, family=family(c.scheme), priority=i)
        try:
            o.weights_bytes = size_model(arch, c.scheme).total_bytes
            path = datapath(c.scheme, gpu)
            o.model = StepModel(arch, c.scheme, gpu, kv=kv_bf16, gpus=workload.gpus, efficiency=c.efficiency,
                                path=path)
            o.model_kv = StepModel(arch, c.scheme, gpu, kv=kv_q, gpus=workload.gpus, efficiency=c.efficiency,
                                   path=path)
            if path.note:
                o.cautions.append(path.note)
        except QuantAdviseError as exc:
            o.status = "cannot-run"
            o.reason = exc.message
        opts.append(o)
    return opts
