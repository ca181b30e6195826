"""The speed node of the tree, (b) roofline, and the pricing of one scheme at a workload.

Each candidate's step is priced at the workload's batch and context with its step model (the
roofline with its efficiency profile); its ridge batch and the crossover of the best weight-only
4-bit and the best W+A candidate name the regime: memory-bound -> weight-only 4-bit, compute-bound
-> W+A (FP8 where the GPU has fp8 tensor cores, INT8 where it does not), in between the predicted
time decides. Candidates are ranked by predicted speed.
"""

from __future__ import annotations

import math
from typing import Any

from ..hardware import GPU
from ..model import ModelArch
from ..perf.datapath import datapath
from ..perf.efficiency import Efficiency
from ..perf.solve import crossings
from ..perf.step import StepModel
from ..scheme import Scheme, TensorQuant
from ..workload import Workload
from .options import Context, Option, family, family_kind, rank
from .result import Prediction, TraceNode

CALIBRATED_NOTE = "prediction from the measured curves of a calibrated profile (fitted to its shapes)"
ROOFLINE_NOTE = "roofline prediction with the efficiency profile, not a measurement"


def model_note(efficiency: Efficiency) -> str:
    """What a predicted speed rests on, in words."""
    return CALIBRATED_NOTE if efficiency.model == "calibrated" else ROOFLINE_NOTE


def score(sm: StepModel, w: Workload) -> tuple[float, float, float | None, float]:
    """(decode step s, seconds per output token as experienced, ttft s, tokens/s)."""
    step = sm.decode(w.batch, w.decode_context).time_s
    prompt = w.prompt_tokens
    ttft = sm.prefill(1, prompt).time_s if prompt else None
    if w.serving_mode == "continuous" and prompt:
        # Over the life of `batch` concurrent requests the GPU runs their prefills once and
        # `output` decode steps: seconds per output token, all sequences together.
        prefill_all = sm.prefill(w.batch, prompt).time_s
        per_token = (w.output_tokens * step + prefill_all) / (w.batch * w.output_tokens)
        return step, per_token, ttft, 1.0 / per_token
    return step, step / w.batch, ttft, w.batch / step


def _regime(ctx: Context, ranked: list[Option], numbers: dict[str, Any]) -> tuple[str, list[str]]:
    """The decode regime from the best weight-only 4-bit and the best W+A candidate on this GPU."""
    w, g = ctx.workload, ctx.gpu
    wa_math = "fp8" if g.has_math("fp8") else "int8"
    wo = [o for o in ranked if o.scheme.weight_only and o.scheme.weight is not None and o.scheme.weight.bits == 4]
    wa = [o for o in ranked if family_kind(o.scheme) == "w+a" and o.model is not None and o.model.path.math == wa_math]
    regime = "unknown"
    reasons: list[str] = []
    if wo and wa:
        best_wo, best_wa = wo[0], wa[0]
        ridge_wo = best_wo.ridge or math.inf
        assert best_wo.model is not None and best_wa.model is not None
        m1, m2 = best_wo.model, best_wa.model
        ct = m1.cached_tokens(w.decode_context)

        def gap(b: float) -> float:  # relative step-time difference, weight-only minus W+A
            t1, t2 = m1.decode_time(b, ct), m2.decode_time(b, ct)
            return (t1 - t2) / max(t1, t2)

        xs = crossings(gap, 1.0, 4096.0)
        cross = xs[0] if xs else None
        numbers["crossover"] = {"a": best_wo.id, "b": best_wa.id, "batch": round(cross, 1) if cross else None}
        numbers["weight_only_ridge_batch"] = round(ridge_wo, 1) if ridge_wo != math.inf else None
        if w.batch < ridge_wo and (cross is None or w.batch < cross):
            regime = "memory-bound"
            reasons.append(
                f"batch {w.batch} is below {best_wo.id}'s ridge ({ridge_wo:.0f}): the step is memory-bound, so "
                f"the fewest weight bytes win -> weight-only 4-bit"
            )
        elif cross is not None and w.batch > cross:
            regime = "compute-bound"
            reasons.append(
                f"batch {w.batch} is past the {best_wo.id} / {best_wa.id} crossover ({cross:.0f}): compute-bound, "
                f"so the faster tensor-core path wins -> W+A on {wa_math} "
                + ("(this GPU has fp8 tensor cores)" if wa_math == "fp8" else "(no fp8 tensor cores on this GPU)")
            )
        else:
            regime = "in between"
            reasons.append(
                f"batch {w.batch} sits between {best_wo.id}'s ridge ({ridge_wo:.0f}) and the crossover "
                f"({cross:.0f}) " if cross else f"batch {w.batch} is past {best_wo.id}'s ridge ({ridge_wo:.0f}) "
            )
            reasons[-1] += "-> the predicted step time decides"
    if regime == "unknown" and wo and wo[0].ridge:
        regime = "memory-bound" if w.batch < wo[0].ridge else "compute-bound"
        reasons.append(f"batch {w.batch} is {'below' if regime == 'memory-bound' else 'past'} {wo[0].id}'s ridge "
                       f"({wo[0].ridge:.0f}); no W+A candidate on {wa_math} to compare against")
    return regime, reasons


def node_roofline(ctx: Context, options: list[Option]) -> TraceNode:
    w = ctx.workload
    mode = w.serving_mode
    # every runnable option is priced (bf16 stays the baseline even when it does not fit); only
    # the ones still in the running are ranked
    for o in options:
        if o.model is None:
            continue
        o.step_s, o.score_s, o.ttft_s, o.throughput = score(o.model, w)
        o.ridge = o.model.ridge_batch()
        o.base_score_s = o.score_s
    live = [o for o in options if o.status == "candidate"]
    base = next((o for o in options if o.family == "bf16" and o.model is not None), None)
    ranked = rank(live)
    numbers: dict[str, Any] = {
        "batch": w.batch,
        "ctx": w.context,
        "decode_ctx": w.decode_context,
        "mode": mode,
        "profile": live[0].efficiency.profile_id if live else None,
        "speed_model": {o.id: o.efficiency.model for o in live},
        "ridge_batch": {o.id: (round(o.ridge, 1) if o.ridge else None) for o in live},
        "step_time_s": {o.id: o.step_s for o in live},
        "tokens_per_s": {o.id: o.throughput for o in live},
    }
    if base is not None and base.model is not None:
        numbers["ridge_flop_per_byte"] = {
            o.id: round(o.model.ridge_flop_per_byte(w.batch), 1) for o in live if o.model is not None
        }
    regime, reasons = _regime(ctx, ranked, numbers)
    numbers["regime"] = regime
    if ranked:
        top = ranked[0]
        runner = ranked[1] if len(ranked) > 1 else None
        vs = ""
        if base is not None and base.step_s < math.inf:
            vs = f"{base.score_s / top.score_s:.2f}x bf16"
        if runner is not None:
            vs += f", {runner.score_s / top.score_s:.2f}x the runner-up {runner.id}"
        decision = (
            (f"{regime}: " if regime != "unknown" else "")
            + f"fastest is {top.id} ({family(top.scheme)}) at {top.step_s * 1e3:.2f} ms per step, "
            f"{top.throughput:,.0f} tokens/s ({vs})"
        )
        if regime in ("memory-bound", "compute-bound"):
            expected = "weight-only" if regime == "memory-bound" else "w+a"
            if family_kind(top.scheme) != expected:
                reasons.append(_why_not_regime(top, w))
    else:
        decision = "no candidate left to rank"
    for i, o in enumerate(ranked):
        o.reason = f"rank {i + 1} by predicted speed"
    return TraceNode(node="roofline", decision=decision, numbers=numbers, reasons=reasons)


def _why_not_regime(top: Option, w: Workload) -> str:
    """Why the fastest candidate is not of the family the decode regime points to."""
    assert top.model is not None
    if w.serving_mode == "continuous" and w.prompt_tokens:
        step = top.model.decode(w.batch, w.decode_context).time_s
        pre = top.model.prefill(w.batch, w.prompt_tokens).time_s
        share = pre / (w.output_tokens * step + pre)
        return (
            f"but {top.id} wins overall: in continuous batching the prefill of {w.prompt_tokens:,} prompt tokens "
            f"per sequence is {share:.0%} of GPU time and runs compute-bound, where {top.model.path.math} tensor "
            f"cores pay off (pass --mode sync to rank by decode latency alone)"
        )
    return (
        f"but the efficiency profile ({top.efficiency.profile_id}) predicts {top.id} faster at batch {w.batch} "
        "than the regime's family; the prediction is followed"
    )


def predict(arch: ModelArch, gpu: GPU, workload: Workload, scheme: Scheme, efficiency: Efficiency, *,
            kv: TensorQuant | None = None, kv_name: str = "kv-bf16") -> Prediction:
    """Price ``scheme`` (with the KV cache ``kv``) at ``workload``: the step model and the scoring the
    roofline node uses, so a candidate priced here and in ``recommend`` gets the same numbers."""
    sm = StepModel(arch, scheme, gpu, kv=kv, gpus=workload.gpus, efficiency=efficiency, path=datapath(scheme, gpu))
    step, per_token, ttft, tps = score(sm, workload)
    return Prediction(
        scheme=scheme.id, kv_dtype=kv_name, gpu=gpu.id, gpus=workload.gpus, batch=workload.batch,
        decode_ctx=workload.decode_context, mode=workload.serving_mode, step_time_s=step,
        seconds_per_token=per_token, tokens_per_s=tps, ttft_s=ttft, profile=efficiency.profile_id,
        speed_model=efficiency.model, model_note=model_note(efficiency),
    )
