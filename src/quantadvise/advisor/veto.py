"""The filtering nodes of the tree: (c) engine and (d) accuracy. Both run before any speed figure is
computed, so every number the later nodes print is about a candidate that can be deployed.

c. engine   — the method must exist in the chosen engine release and accept the GPU; a method SGLang
              marks "not fully optimized" stays, with SGLang's own warning as a caution, and loses
              ties (engine maturity is tie-break evidence).
d. accuracy — published evidence (data/accuracy.yaml) removes a candidate when even its best
              published case uses up the tolerance, and cautions when the published range reaches
              it; it never picks one. The checkpoint as shipped is the publisher's own model: the
              findings about its format are reported, not applied; a re-quantization of it whose
              published range reaches the tolerance ranks after it (replacing a checkpoint of known
              accuracy with one that may exceed the tolerance is not worth a speed-up).
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..evals.priors import Verdict, action_of, expected_drop, judge
from ..wording import every
from .options import BF16_KV, Context, Option
from .published import evidence
from .result import TraceNode
from .verdict import engine_verdict


def node_engine(ctx: Context, live: list[Option]) -> TraceNode:
    """c. the chosen engine release must load each candidate's checkpoint on this GPU — with the KV
    cache dtype the workload forces (``--kv-dtype``), when it forces one. A forced KV dtype the engine
    refuses for every candidate it would otherwise load is an input error (exit 2) naming the flag."""
    label = ctx.engine.label
    numbers: dict[str, Any] = {"engine": label, "gpu_capability": ctx.gpu.compute_capability}
    refused, reasons = [], []
    kv_id = ctx.kv_name if ctx.forced_kv and ctx.kv_name != BF16_KV else None
    kv_refused: dict[str, str] = {}
    for o in live:
        v = engine_verdict(ctx, ctx.engine, o, None)
        o.engine = v
        if not v.supported:
            o.status = "not-supported"
            o.reason = "; ".join(v.messages) or f"{label} cannot run it"
            refused.append(o.id)
            continue
        if kv_id is not None and not (vk := engine_verdict(ctx, ctx.engine, o, kv_id)).supported:
            why = "; ".join(vk.messages) or f"{label} cannot run it with {kv_id}"
            o.status = "not-supported"
            o.reason = f"with --kv-dtype {kv_id}: {why}"
            kv_refused[o.id] = why
            refused.append(o.id)
            continue
        if v.optimized is False:
            msg = next((m for m in v.messages if "not fully optimized" in m), "")
            o.cautions.append(msg or f"{v.resolved_method} is not on {label}'s optimized list")
            reasons.append(f"{o.id} resolves to {v.resolved_method}, which {label} marks not fully optimized: it stays, "
                           "and loses ties to optimized methods")
    kept = [o for o in live if o.status == "candidate"]
    if kv_id is not None and kv_refused and not kept:
        raise _kv_refused(ctx, kv_id, next(iter(kv_refused.values())), live)
    numbers["resolved"] = {
        o.id: {"method": o.engine.resolved_method, "scheme_class": o.engine.scheme_class, "optimized": o.engine.optimized}
        for o in kept if o.engine is not None
    }
    numbers["supported"] = [o.id for o in kept]
    numbers["refused"] = refused
    if kv_id is not None:
        numbers["kv_dtype"] = kv_id
        numbers["refused_with_kv_dtype"] = list(kv_refused)
    with_kv = f" with --kv-dtype {kv_id}" if kv_id is not None else ""
    if not kept:
        decision = f"no candidate is accepted by {label} on {ctx.gpu.name}{with_kv}"
    elif refused:
        decision = f"{label} accepts {len(kept)} of {len(live)} candidates{with_kv}; refuses {', '.join(refused)}"
    else:
        decision = f"{label} accepts {every(len(kept), 'candidate', own='the')}{with_kv} on {ctx.gpu.name}"
    if kv_refused and kept:
        reasons.append(f"{', '.join(kv_refused)} load without it, but {label} refuses them with --kv-dtype {kv_id}: "
                       f"{next(iter(kv_refused.values()))}")
    return TraceNode(node="engine", decision=decision, numbers=numbers, reasons=reasons)


def _kv_refused(ctx: Context, kv_id: str, why: str, live: list[Option]) -> InputError:
    """The chosen engine refuses the forced KV cache dtype with every candidate it would load without
    it: exit 2, naming --kv-dtype, the engine's reason and what works (the other engine when it
    accepts the same KV dtype; the API adds the KV dtypes this engine accepts)."""
    label = ctx.engine.label
    other = ctx.other_engine
    fix = ""
    if other is not None and any(engine_verdict(ctx, other, o, kv_id).supported for o in live):
        fix = f"--engine {other.engine} ({other.label} accepts {kv_id})"
    said = why if why.startswith(label) else f"{label} refuses it: {why}"
    return InputError(f"--kv-dtype {kv_id}: {said}",
                      hint=f"pass a KV cache dtype {label} accepts" + (f", or {fix}" if fix else ""), field="kv_dtype")


def node_accuracy(ctx: Context, live: list[Option]) -> TraceNode:
    w = ctx.workload
    vetoed: dict[str, list[str]] = {}
    cautions: dict[str, list[str]] = {}
    priors: dict[str, list[float]] = {}
    reasons: list[str] = []
    evaluated: dict[str, dict[str, Any]] = {}
    kvq = ctx.kv_options[ctx.kv_name].kv if ctx.forced_kv else None
    for o in live:
        scheme = o.scheme.with_kv(kvq) if kvq is not None else o.scheme
        verdicts: list[Verdict] = judge(ctx.rules, scheme, str(w.task), w.accuracy_tolerance,
                                        params=ctx.model_params, prompt_tokens=w.prompt_tokens)
        own = evidence(o.published) if o.published is not None and not o.native else None
        if own is not None and own.expected_drop_pct is not None:
            # the checkpoint's own published evaluation replaces the generic findings on general benchmarks;
            # task- and prompt-length findings (code, reasoning, long context) still apply
            general = {r.id for r in ctx.rules if r.general}
            replaced = [v.rule for v in verdicts if v.rule in general]
            verdicts = [v for v in verdicts if v.rule not in general]
            verdicts.append(own.model_copy(update={"action": action_of(own.expected_drop_pct, w.accuracy_tolerance)}))
            evaluated[o.id] = {"evaluation": own.message, "source": own.source,
                               "drop_pct": list(own.expected_drop_pct), "replaces": replaced}
        if o.native:
            o.expected_drop = (0.0, 0.0)
            if verdicts:
                reasons.append(f"{o.id} is the publisher's own checkpoint: its evaluation is the evidence; published "
                               f"findings about its format ({', '.join(v.rule for v in verdicts)}) are not applied to it")
            priors[o.id] = [0.0, 0.0]
            continue
        o.expected_drop = expected_drop(verdicts)
        o.drop_sources = [f"{v.rule} ({v.source})" for v in verdicts if v.expected_drop_pct is not None]
        priors[o.id] = list(o.expected_drop)
        vetoes = [v for v in verdicts if v.action == "veto"]
        if vetoes:
            v = vetoes[0]
            lo, hi = v.expected_drop_pct or (0.0, 0.0)
            o.status = "vetoed"
            o.reason = (f"{v.rule}: expected drop {lo:g}-{hi:g} points >= tolerance {w.accuracy_tolerance:g}: "
                        f"{v.message} ({v.source})")
            vetoed[o.id] = [x.rule for x in vetoes]
            continue
        for v in verdicts:
            if v.action == "caution":
                lo, hi = v.expected_drop_pct or (0.0, 0.0)
                o.cautions.append(f"expected drop {lo:g}-{hi:g} points (tolerance {w.accuracy_tolerance:g}): {v.message} "
                                  f"({v.source})")
                cautions.setdefault(o.id, []).append(v.rule)
    native = next((o for o in live if o.native and o.status == "candidate"), None)
    behind = []
    for o in live:
        if native is not None and o is not native and o.status == "candidate" and o.id in cautions:
            o.behind_native = True
            behind.append(o.id)
    if behind and native is not None:
        need = max(live_o.expected_drop[1] for live_o in live if live_o.id in behind)
        reasons.append(
            f"{', '.join(behind)} would replace the shipped checkpoint with one whose published accuracy range reaches "
            f"the {w.accuracy_tolerance:g}-point tolerance: they rank after {native.id} whatever their speed "
            f"(a tolerance above {need:g} lets them compete)")
    kept = [o for o in live if o.status == "candidate"]
    numbers = {"task": w.task, "tolerance_pct": w.accuracy_tolerance, "vetoed": vetoed, "cautions": cautions,
               "expected_drop_pct": priors, "ranked_after_native": behind}
    carried = {o.id: o.published.id for o in live if o.published is not None}
    if carried:
        numbers["published"] = carried
        numbers["published_evaluations"] = evaluated
        reasons.insert(0, f"published checkpoints carry {', '.join(carried)} (numbers.published)"
                       + (f"; their producers' own evaluations replace the generic priors of {', '.join(evaluated)}"
                          if evaluated else ""))
    if not kept:
        decision = "every remaining candidate is vetoed: nothing meets the accuracy tolerance"
    elif vetoed:
        decision = (f"vetoed {', '.join(vetoed)} (published drop at or beyond the {w.accuracy_tolerance:g}-point "
                    f"tolerance); {len(kept)} pass")
    else:
        decision = ("no published evidence vetoes " + ("the one candidate" if len(kept) == 1
                                                        else f"any of the {len(kept):,} candidates"))
    if cautions:
        decision += f"; {len(cautions)} with cautions"
    return TraceNode(node="accuracy", decision=decision, numbers=numbers, reasons=reasons)
