"""The filtering nodes of the tree: (d) engine and (e) accuracy.

d. engine   — the method must exist in the chosen engine release and accept the GPU; SGLang's
              "not fully optimized" methods rank after optimized ones.
e. accuracy — published evidence as a veto, last: it can remove candidates, never pick one.
"""

from __future__ import annotations

from typing import Any

from ..evals.priors import Verdict, judge
from .options import BF16_KV, Context, Option
from .result import TraceNode
from .verdict import engine_verdict


def node_engine(ctx: Context, ranked: list[Option]) -> TraceNode:
    label = ctx.engine.label
    kv = ctx.kv_name if ctx.kv_name != BF16_KV else None
    numbers: dict[str, Any] = {"engine": label, "gpu_capability": ctx.gpu.compute_capability}
    supported, penalised, reasons = [], [], []
    for o in ranked:
        v = engine_verdict(ctx, ctx.engine, o, kv)
        o.engine = v
        if not v.supported:
            o.status = "not-supported"
            o.reason = "; ".join(v.messages) or f"{label} cannot run it"
            continue
        if v.optimized is False:
            penalised.append(o)
            msg = next((m for m in v.messages if "not fully optimized" in m), "")
            o.cautions.append(msg or f"{v.resolved_method} is not on {label}'s optimized list")
            reasons.append(
                f"{o.id} resolves to {v.resolved_method}, which {label} marks not fully optimized: "
                "ranked after the optimized methods"
            )
        else:
            supported.append(o)
    ranked[:] = supported + penalised
    numbers["resolved"] = {
        o.id: {"method": o.engine.resolved_method, "scheme_class": o.engine.scheme_class,
               "optimized": o.engine.optimized}
        for o in ranked if o.engine is not None
    }
    numbers["supported"] = [o.id for o in ranked]
    if ranked and ranked[0].engine is not None:
        top = ranked[0].engine
        decision = (f"{ranked[0].id} loads in {label} as {top.resolved_method}"
                    + (f" ({top.scheme_class})" if top.scheme_class else ""))
    else:
        decision = f"no candidate is accepted by {label} on {ctx.gpu.name}"
    return TraceNode(node="engine", decision=decision, numbers=numbers, reasons=reasons)


def node_accuracy(ctx: Context, ranked: list[Option]) -> TraceNode:
    w = ctx.workload
    before = ranked[0].id if ranked else None
    kept: list[Option] = []
    vetoed: dict[str, list[str]] = {}
    cautions: dict[str, list[str]] = {}
    kvq = ctx.kv_options[ctx.kv_name].kv
    for o in ranked:
        scheme = o.scheme.with_kv(kvq) if kvq is not None else o.scheme
        verdicts: list[Verdict] = judge(ctx.rules, scheme, str(w.task), w.accuracy_tolerance)
        vetoes = [v for v in verdicts if v.action == "veto"]
        if vetoes:
            o.status = "vetoed"
            o.reason = f"{vetoes[0].rule}: {vetoes[0].message} ({vetoes[0].source})"
            vetoed[o.id] = [v.rule for v in vetoes]
            continue
        for v in verdicts:
            if v.action == "caution":
                o.cautions.append(f"{v.message} ({v.source})")
                cautions.setdefault(o.id, []).append(v.rule)
        kept.append(o)
    ranked[:] = kept
    numbers = {"task": w.task, "tolerance_pct": w.accuracy_tolerance, "vetoed": vetoed, "cautions": cautions}
    after = ranked[0].id if ranked else None
    reasons = []
    if before and after and after != before:
        reasons.append(
            f"the veto removed the fastest candidate {before} ({', '.join(vetoed.get(before, []))}); "
            f"the runner-up {after} is chosen"
        )
    if not ranked:
        decision = "every remaining candidate is vetoed: nothing meets the accuracy tolerance on this hardware"
    elif vetoed:
        decision = f"vetoed {', '.join(vetoed)}; {after} passes"
    else:
        decision = f"no published evidence vetoes {after}"
    if ranked and ranked[0].cautions:
        decision += f" (with {len(ranked[0].cautions)} caution(s))"
    return TraceNode(node="accuracy", decision=decision, numbers=numbers, reasons=reasons)
