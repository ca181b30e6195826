"""The commands each node of a chosen layout runs: the tree's engine command (model, scheme flags, KV dtype,
context) with the layout's parallel options (``engines.flags.layout_args``) in place of its tensor-parallel
degree, one per node of every replica (and per pool of a disaggregated layout). Every option written is
looked up in the release's option list (``data/flags/``): a layout whose options a release does not register
gets no command for that engine, with the options named. Pure: the option lists come in as arguments."""

from __future__ import annotations

import math
import shlex
from typing import Any

from ..engines.flags import ENGINES, PARALLEL, layout_args
from ..perf.parallel import Parallel
from .layout_result import LayoutPlan, LayoutRow, NodeCommand


def _without(argv: list[str], names: set[str]) -> list[str]:
    """``argv`` without the options in ``names`` and their values."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        name = a.split("=", 1)[0]
        if name in names:
            skip = "=" not in a
            continue
        out.append(a)
    return out


def roles(row: LayoutRow) -> list[tuple[str, Parallel, int]]:
    """(role, layout, sequences per replica) of each pool of ``row``."""
    decode = Parallel(tp=row.tp, pp=row.pp, dp=row.dp, ep=row.ep > 1)
    if row.prefill is None:
        return [("replica", decode, row.concurrency)]
    p = row.prefill
    return [("prefill", Parallel(tp=p.tp, pp=p.pp, dp=p.dp, ep=p.ep > 1), 0), ("decode", decode, row.concurrency)]


def layout_plan(commands: dict[str, str | None], row: LayoutRow, gpus_per_node: int,
                vocabularies: dict[str, Any], labels: dict[str, str]) -> LayoutPlan:
    """Per engine, the command every node of ``row`` runs (``commands``: the tree's one-replica commands;
    ``vocabularies``: each engine release's option list, None when not on file; ``labels``: ``vLLM 0.33.0``)."""
    engines: dict[str, list[NodeCommand] | None] = {}
    notes: list[str] = []
    for engine, cmd in commands.items():
        if cmd is None or engine not in ENGINES:
            engines[engine] = None
            continue
        table = ENGINES[engine]
        tp_names = set(table.for_field("tensor_parallel_size").names) | set(table.for_field("pipeline_parallel_size").names)
        seqs_flag = table.for_field("max_num_seqs")
        base = _without(shlex.split(cmd), tp_names | set(seqs_flag.names))
        vocab = vocabularies.get(engine)
        missing: set[str] = set()
        out: list[NodeCommand] = []
        for role, par, seqs in roles(row):
            nodes = max(1, math.ceil(par.gpus / gpus_per_node))
            for rank in range(nodes):
                args = layout_args(engine, tp=par.tp, pp=par.pp, dp=par.dp, ep=par.ep, gpus_per_node=gpus_per_node,
                                   node_rank=rank, role=role if row.prefill is not None else None,
                                   cross_node_a2a=par.ep and par.expert_gpus > gpus_per_node)
                if vocab is not None:
                    missing |= {a for a in args if a.startswith("--") and vocab.lookup(a, suggest=False).verdict != "known"}
                per_rank = engine in PARALLEL and PARALLEL[engine].seqs_per_rank and par.dp > 1
                cap = math.ceil(seqs / par.dp) if per_rank else seqs
                extra = [seqs_flag.name, str(cap)] if seqs > 0 else []
                out.append(NodeCommand(role=role, node_rank=rank, nodes=nodes,
                                       gpus=min(gpus_per_node, par.gpus - rank * gpus_per_node),
                                       command=shlex.join([*base, *extra, *args])))
        if missing:
            engines[engine] = None
            notes.append(f"{labels.get(engine, engine)} does not register {', '.join(sorted(missing))} (its option "
                         f"list, data/flags/): no command for {row.layout}")
        else:
            engines[engine] = out
    return LayoutPlan(engines=engines, notes=notes)
