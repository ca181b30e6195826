"""The speed node of the tree, (f) roofline, and the pricing of one scheme at a workload.

Runs last, on the deployable candidates only (engine and accuracy filters and the KV decision come
first), so every figure it prints is about a candidate that can be served. Each candidate is priced
with its step model (the roofline with its efficiency profile) and the workload's KV cache dtype at
the concurrency it holds — ``min(batch, max_concurrency)`` — and ranked on what it delivers there
(:func:`~quantadvise.advisor.options.rank`). Its ridge batch and the crossover of the best
weight-only 4-bit and the best W+A candidate name the regime: memory-bound -> weight-only 4-bit,
compute-bound -> W+A (FP8 where the GPU has fp8 tensor cores, INT8 where it does not), in between
the predicted time decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .. import defaults
from ..hardware import GPU
from ..model import ModelArch
from ..perf.datapath import datapath
from ..perf.efficiency import Efficiency
from ..perf.solve import crossings
from ..perf.step import StepModel
from ..scheme import Scheme, TensorQuant
from ..workload import Workload
from .options import BF16_KV, Context, Option, family, family_kind, rank
from .result import Prediction, TraceNode

CALIBRATED_NOTE = "prediction from the measured curves of a calibrated profile (fitted to its shapes)"
ROOFLINE_NOTE = "roofline prediction with the efficiency profile, not a measurement"
MEASURED_NOTE = ("prediction from the measured curve of the kernel each linear layer runs (fitted to published "
                 "per-kernel tables; held-out error in docs/calibration.md), not a measurement of this deployment")


def model_note(efficiency: Efficiency) -> str:
    """What a predicted speed rests on, in words."""
    if efficiency.model == "calibrated":
        return CALIBRATED_NOTE
    return MEASURED_NOTE if efficiency.model == "measured-kernels" else ROOFLINE_NOTE


def kernel_line(efficiency: Efficiency) -> str | None:
    """``"w4a16 via MacheteLinearKernel, vLLM 0.33.0, sm90; ..."``: the kernel that prices a scheme."""
    return efficiency.kernels.label() if efficiency.kernels is not None else None


@dataclass(frozen=True)
class Score:
    """One scheme's speed at one concurrency. ``tokens_per_s`` is output tokens per second as the
    workload experiences them (continuous batching: each prompt's prefill included; synchronous: the
    decode step alone, TTFT apart); ``decode_tokens_per_s`` is concurrency / decode step;
    ``prefill_share`` the share of GPU time spent on prefill (continuous batching, else None), so
    ``tokens_per_s = decode_tokens_per_s x (1 - prefill_share)``."""

    step_s: float
    seconds_per_token: float
    ttft_s: float | None
    tokens_per_s: float
    decode_tokens_per_s: float
    prefill_share: float | None


def score_at(sm: StepModel, w: Workload, batch: int) -> Score:
    """Price ``sm`` at ``batch`` concurrent sequences of the workload's lengths."""
    step = sm.decode(batch, w.decode_context).time_s
    prompt = w.prompt_tokens
    ttft = sm.prefill(1, prompt).time_s if prompt else None
    decode_tps = batch / step
    if w.serving_mode == "continuous" and prompt:
        # Over the life of `batch` concurrent requests the GPU runs their prefills once and
        # `output` decode steps: seconds per output token, all sequences together.
        prefill_all = sm.prefill(batch, prompt).time_s
        decode_all = w.output_tokens * step
        per_token = (decode_all + prefill_all) / (batch * w.output_tokens)
        return Score(step, per_token, ttft, 1.0 / per_token, decode_tps, prefill_all / (decode_all + prefill_all))
    return Score(step, step / batch, ttft, decode_tps, decode_tps, None)


def score(sm: StepModel, w: Workload) -> tuple[float, float, float | None, float]:
    """(decode step s, seconds per output token as experienced, ttft s, tokens/s) at the workload's batch."""
    s = score_at(sm, w, w.batch)
    return s.step_s, s.seconds_per_token, s.ttft_s, s.tokens_per_s


def priced_model(ctx: Context, o: Option) -> StepModel | None:
    """The step model of ``o`` with the workload's KV cache dtype."""
    return o.model if ctx.kv_name == BF16_KV else o.model_kv


def price(ctx: Context, o: Option) -> None:
    """Price ``o`` at the concurrency it holds with the chosen KV cache."""
    sm = priced_model(ctx, o)
    if sm is None or o.concurrency < 1:
        return
    s = score_at(sm, ctx.workload, o.concurrency)
    o.step_s, o.score_s, o.ttft_s, o.throughput = s.step_s, s.seconds_per_token, s.ttft_s, s.tokens_per_s
    o.decode_tps, o.prefill_share = s.decode_tokens_per_s, s.prefill_share


@lru_cache(maxsize=256)
def _crossover(m1: StepModel, m2: StepModel, ct: float) -> float | None:
    """The first batch where ``m2``'s decode step overtakes ``m1``'s (step models are immutable, so
    the answer is reused across walks over the same candidates)."""

    def gap(b: float) -> float:  # relative step-time difference, weight-only minus W+A
        t1, t2 = m1.decode_time(b, ct), m2.decode_time(b, ct)
        return (t1 - t2) / max(t1, t2)

    xs = crossings(gap, 1.0, 4096.0)
    return xs[0] if xs else None


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
        m1, m2 = priced_model(ctx, best_wo), priced_model(ctx, best_wa)
        assert m1 is not None and m2 is not None
        best_wo.ridge = m1.ridge_batch()
        ridge_wo = best_wo.ridge or math.inf
        cross = _crossover(m1, m2, m1.cached_tokens(w.decode_context))
        numbers["crossover"] = {"a": best_wo.id, "b": best_wa.id, "batch": round(cross, 1) if cross else None}
        numbers["weight_only_ridge_batch"] = round(ridge_wo, 1) if ridge_wo != math.inf else None
        if w.batch < ridge_wo and (cross is None or w.batch < cross):
            regime = "memory-bound"
            reasons.append(f"batch {w.batch} is below {best_wo.id}'s ridge ({ridge_wo:.0f}): the step is memory-bound, "
                           "so the fewest weight bytes win -> weight-only 4-bit")
        elif cross is not None and w.batch > cross:
            regime = "compute-bound"
            reasons.append(
                f"batch {w.batch} is past the {best_wo.id} / {best_wa.id} crossover ({cross:.0f}): compute-bound, "
                f"so the faster tensor-core path wins -> W+A on {wa_math} "
                + ("(this GPU has fp8 tensor cores)" if wa_math == "fp8" else "(no fp8 tensor cores on this GPU)"))
        else:
            regime = "in between"
            reasons.append((f"batch {w.batch} sits between {best_wo.id}'s ridge ({ridge_wo:.0f}) and the crossover "
                            f"({cross:.0f}) " if cross else f"batch {w.batch} is past {best_wo.id}'s ridge ({ridge_wo:.0f}) ")
                           + "-> the predicted step time decides")
    if regime == "unknown" and wo and (m := priced_model(ctx, wo[0])) is not None:
        wo[0].ridge = m.ridge_batch()
    if regime == "unknown" and wo and wo[0].ridge:
        regime = "memory-bound" if w.batch < wo[0].ridge else "compute-bound"
        reasons.append(f"batch {w.batch} is {'below' if regime == 'memory-bound' else 'past'} {wo[0].id}'s ridge "
                       f"({wo[0].ridge:.0f}); no W+A candidate on {wa_math} to compare against")
    return regime, reasons


def node_roofline(ctx: Context, live: list[Option]) -> tuple[TraceNode, list[Option]]:
    """f. price the deployable candidates at the concurrency each holds and rank them."""
    w = ctx.workload
    for o in live:
        price(ctx, o)
    for o in live:
        if o.concurrency < 1:
            o.status = "does-not-fit"
            o.reason = (f"{o.weights_bytes / 1e9:.1f} GB of weights leave no room for one sequence with a "
                        f"{ctx.kv_name} cache")
    ranked = rank([o for o in live if o.concurrency >= 1 and o.priced])
    numbers: dict[str, Any] = {
        "batch": w.batch, "ctx": w.context, "decode_ctx": w.decode_context, "mode": w.serving_mode,
        "kv_dtype": ctx.kv_name,
        "profile": ranked[0].efficiency.profile_id if ranked else None,
        "speed_model": {o.id: o.efficiency.model for o in ranked},
        "kernel": {o.id: kernel_line(o.efficiency) for o in ranked},
        "concurrency": {o.id: o.concurrency for o in ranked},
        "step_time_s": {o.id: o.step_s for o in ranked},
        "tokens_per_s": {o.id: o.throughput for o in ranked},
        "decode_tokens_per_s": {o.id: o.decode_tps for o in ranked},
        "prefill_share": {o.id: o.prefill_share for o in ranked},
    }
    regime, reasons = _regime(ctx, ranked, numbers)
    numbers["regime"] = regime
    if ranked:
        top = ranked[0]
        held = ("its one sequence" if w.batch == 1 else f"all {w.batch} sequences" if top.concurrency >= w.batch
                else f"{top.concurrency} of the {w.batch} sequences")
        share = f", {top.prefill_share:.0%} of GPU time in prefill" if top.prefill_share is not None else ""
        decision = ((f"{regime}: " if regime != "unknown" else "")
                    + f"{top.id} ({family(top.scheme)}, {ctx.kv_name}) ranks first: {top.throughput:,.0f} output "
                    f"tokens/s holding {held} ({top.decode_tps:,.0f} decode tokens/s at {top.step_s * 1e3:.2f} ms per "
                    f"step{share})")
        if len(ranked) > 1:
            r = ranked[1]
            decision += f"; next {r.id} at {r.throughput:,.0f}" + (
                " (ranked after the shipped checkpoint: its published accuracy range reaches the tolerance)"
                if r.behind_native and not top.behind_native else
                f" (within the {defaults.NATIVE_MARGIN:.0%} a re-quantization must beat the shipped checkpoint by)"
                if top.native and r.throughput > top.throughput * (1 + defaults.TIE) else "")
        if regime in ("memory-bound", "compute-bound"):
            expected = "weight-only" if regime == "memory-bound" else "w+a"
            if family_kind(top.scheme) != expected and top.scheme.quantizes_weights:
                reasons.append(_why_not_regime(ctx, top))
        reasons.extend(f"{line}: {o.throughput:,.0f} tokens/s, {o.step_s * 1e3:.2f} ms per step" for o in ranked
                       if (line := kernel_line(o.efficiency)) is not None)
        if any(o.concurrency < w.batch for o in ranked):
            reasons.append("a candidate that holds fewer sequences is priced at the concurrency it holds, not at the "
                           "batch it cannot hold")
    else:
        decision = "no candidate left to rank"
    return TraceNode(node="roofline", decision=decision, numbers=numbers, reasons=reasons), ranked


def _why_not_regime(ctx: Context, top: Option) -> str:
    """Why the fastest candidate is not of the family the decode regime points to."""
    w = ctx.workload
    if top.native:
        return f"but {top.id} is the checkpoint as shipped and delivers the most as it is"
    if top.prefill_share is not None:
        return (f"but {top.id} wins overall: in continuous batching the prefill of {w.prompt_tokens:,} prompt tokens per "
                f"sequence is {top.prefill_share:.0%} of GPU time and runs compute-bound, where "
                f"{top.model.path.math if top.model else 'its'} tensor cores pay off (pass --mode sync to rank by decode "
                "latency alone)")
    if top.concurrency < w.batch:
        return f"but {top.id} holds more sequences than the regime's family and delivers more at the concurrency it holds"
    return (f"but the efficiency profile ({top.efficiency.profile_id}) predicts {top.id} faster at batch {w.batch} "
            "than the regime's family; the prediction is followed")


def predict(arch: ModelArch, gpu: GPU, workload: Workload, scheme: Scheme, efficiency: Efficiency, *,
            kv: TensorQuant | None = None, kv_name: str = "kv-bf16") -> Prediction:
    """Price ``scheme`` (with the KV cache ``kv``) at ``workload``: the step model and the scoring the
    roofline node uses, so a candidate priced here and in ``recommend`` gets the same numbers."""
    sm = StepModel(arch, scheme, gpu, kv=kv, gpus=workload.gpus, efficiency=efficiency, path=datapath(scheme, gpu))
    s = score_at(sm, workload, workload.batch)
    return Prediction(
        scheme=scheme.id, kv_dtype=kv_name, gpu=gpu.id, gpus=workload.gpus, batch=workload.batch,
        decode_ctx=workload.decode_context, mode=workload.serving_mode, step_time_s=s.step_s,
        seconds_per_token=s.seconds_per_token, tokens_per_s=s.tokens_per_s, ttft_s=s.ttft_s,
        decode_tokens_per_s=s.decode_tokens_per_s, prefill_share=s.prefill_share, profile=efficiency.profile_id,
        speed_model=efficiency.model, model_note=model_note(efficiency), kernel=kernel_line(efficiency),
    )
