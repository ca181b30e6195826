"""Published checkpoints in the tree: which one already carries each candidate scheme, and what its
producer's own evaluation says about its accuracy.

A published checkpoint carries a candidate when its scheme has the candidate's six axes for weights
and activations (the checkpoint format may differ: a GPTQ export carries ``w4a16``), the chosen
engine release loads it on the GPU, and it comes from a producer on :data:`defaults.PUBLISHED_PRODUCERS`.
Among several, the one with usable published accuracy evidence and the smallest drop comes first, then
the closest base model, then the producer's place on that list, then the most downloads. Pure: the rows
come in the context (the API reads data/checkpoints.yaml)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..checkpoint.presets import axes_key
from ..checkpoint.published import Published, checkpoint_of
from ..evals.priors import Verdict

if TYPE_CHECKING:
    from .options import Context, Option


def offer(p: Published) -> str:
    """``RedHatAI/...-FP8-block (published by RedHatAI)``."""
    return f"{p.id} (published by {p.short_producer})"


def accuracy_words(p: Published, prior: tuple[float, float] | None = None, prior_source: str = "") -> str:
    """Where the accuracy figure of a served published checkpoint comes from, in words."""
    a = p.accuracy
    if a is not None and a.usable:
        return f"accuracy {a.headline()} ({a.source})"
    lead = "no usable published evaluation on its card" if a is not None else "no published evaluation on its card"
    if prior is not None:
        lo, hi = prior
        return f"{lead}; accuracy from the generic prior, {lo:g}-{hi:g} points" + (f" ({prior_source})"
                                                                                  if prior_source else "")
    return lead


def attach(ctx: Context, live: list[Option]) -> None:
    """Set ``o.published`` on each live re-quantization a published checkpoint carries (the engine node's
    release loads it on this GPU)."""
    from ..engines.resolution import resolve

    for o in live:
        if o.native or not o.scheme.quantizes_weights:
            continue
        key = axes_key(o.scheme.weight, o.scheme.activation)
        hits = []
        for i, (p, scheme) in enumerate(ctx.published):
            if axes_key(scheme.weight, scheme.activation) != key:
                continue
            ck, _ = checkpoint_of(p, scheme, None, ctx.arch)
            if ck is None:
                continue
            res = resolve(ctx.engine, ck, capability=ctx.gpu.capability, platform=ctx.platform,
                          model_type=ctx.arch.model_type, model_dtype=ctx.arch.torch_dtype)
            if res.refused or res.resolved_method is None:
                continue
            hits.append((_preference(p, i), p))
        if hits:
            o.published = min(hits, key=lambda h: h[0])[1]


def _preference(p: Published, i: int) -> tuple[int, float, int, int, int]:
    from .. import defaults

    a = p.accuracy
    drop = a.drop_pct if a is not None and a.usable else None
    producer = p.short_producer
    rank = defaults.PUBLISHED_PRODUCERS.index(producer) if producer in defaults.PUBLISHED_PRODUCERS else 99
    downloads = p.popularity.downloads if p.popularity and p.popularity.downloads else 0
    return (0 if drop is not None else 1, drop[1] if drop is not None else 0.0, rank, -downloads, i)


def evidence(p: Published) -> Verdict | None:
    """The published checkpoint's own evaluation as a finding (the range :meth:`drop_pct` gives), with
    the action the tolerance gives it; None without a usable figure."""
    a = p.accuracy
    if a is None or not a.usable or a.drop_pct is None:
        return None
    return Verdict(rule=f"published:{p.id}", action="info", source=a.source,
                   message=f"{p.short_producer}'s own evaluation of {p.id}: {a.headline()}",
                   expected_drop_pct=a.drop_pct)


def prefer_published(ranked: list[Option]) -> tuple[list[Option], Option | None]:
    """The hook for ties the ranking records beyond ``defaults.TIE`` (an option's ``ties``: the ids it ties with
    within the speed model's uncertainty): when the winner has no published checkpoint and one it ties with
    does (holding at least as many sequences), that one comes first — a published checkpoint is tie-break
    evidence, as in ``options.evidence_key``. Returns the order and the candidate it displaced (None: unchanged).
    Without a tie list (today's ranking breaks its 0.5% ties with the same evidence) nothing moves."""
    winner = ranked[0]
    tied = set(getattr(winner, "ties", ()) or ())
    if winner.published is not None or winner.native or not tied:
        return ranked, None
    for o in ranked[1:]:
        if o.id in tied and o.published is not None and o.concurrency >= winner.concurrency:
            return [o, *[x for x in ranked if x is not o]], winner
    return ranked, None
