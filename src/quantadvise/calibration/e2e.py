"""The end-to-end check: the serving-loop model against published end-to-end measurements
(``data/validation/e2e_points.yaml``; docs/calibration.md §9), per concurrency band, on the points the
fit saw and on the sources it never saw, beside aiconfigurator 0.12.0 on the same points.

The bar (issue 26): the median |error| of absolute output tokens/s at most :data:`BAR` in every band
(1-4, 8-32, 64-256) over all points, and no worse than aiconfigurator's on the points both express.
Besides (issue 25), the speed-ups: every two points that differ only in their quantization — the scheme,
the KV cache dtype or both (the same source, GPU, engine release, model, layout, lengths, concurrency and
mode) — compare the measured ratio of their tokens/s with the predicted one: what a recommendation between
them rests on.

Pure: no I/O, no printing.
"""

from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING, Literal

from ..results import Out, Result, Strict
from .serving_fit import Sample, median

if TYPE_CHECKING:
    from ..perf.loop import LoopTerms

BAR = 0.10
BANDS = ("1-4", "8-32", "64-256", ">256")
GATED = ("1-4", "8-32", "64-256")  # the bands the bar applies to


def band(concurrency: int) -> str:
    """The concurrency band of a point: 1-4, 8-32 (5..32), 64-256 (33..256), >256."""
    if concurrency <= 4:
        return "1-4"
    if concurrency <= 32:
        return "8-32"
    return "64-256" if concurrency <= 256 else ">256"


class E2EPoint(Strict):
    """One published point (a row of data/validation/e2e_points.yaml)."""

    id: str
    source: str
    group: str
    locator: str
    engine: Literal["vllm", "sglang"]
    engine_version: str | None = None
    model: str
    config: str | None = None
    scheme: str | None = None
    scheme_note: str | None = None
    kv_dtype: str | None = None
    gpu: str
    gpus: int | None = None
    tp: int
    ep: int = 1  # the routed experts sharded over this many GPUs of the TP group (the source's EP size)
    prompt: int | None = None
    output: int | None = None
    concurrency: int | None = None
    mode: Literal["continuous", "sync"] = "continuous"
    output_tok_s: float | None = None
    kind: Literal["measured", "derived"] = "measured"
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    aic: str = "not_run"
    aic_output_tok_s: float | None = None
    aic_command: str | None = None  # the aiconfigurator command that produced aic_output_tok_s
    skip: str | None = None
    pairs_only: bool = False  # priced for the speed-ups between schemes only, not in the bands (S8)
    as_of: date


class E2ESource(Strict):
    id: str
    title: str
    url: str


class E2ETable(Strict):
    schema_version: Literal[1]
    as_of: date
    heldout: tuple[str, ...]
    sources: tuple[E2ESource, ...]
    points: tuple[E2EPoint, ...]


class BandError(Out):
    """One band of one set of points."""

    band: str
    set: str  # all | fitted | held-out
    points: int
    median_abs_error: float | None
    median_error: float | None  # signed: > 0 predicts too fast
    aic_points: int  # of these, the ones aiconfigurator expressed
    median_abs_error_on_aic_points: float | None  # ours, on those
    aic_median_abs_error: float | None  # aiconfigurator's, on those


class PointError(Out):
    id: str
    group: str
    band: str
    engine: str
    gpu: str
    model: str
    heldout: bool
    measured: float
    predicted: float
    error: float
    aic_error: float | None = None
    bound: str = ""  # the cause with the largest share of the cycle
    pairs_only: bool = False  # in the speed-up pairs only, not in the bands (its source's absolute times: S8)


class SpeedupError(Out):
    """Two published points that differ only in their quantization (``schemes``: each one's scheme, with its
    KV cache dtype where one was set; ``ids``: their rows in ``points``, where
    the GPU, engine, model, band and hold-out are): ``other``'s output tokens/s over ``baseline``'s,
    measured and predicted."""

    ids: tuple[str, str]  # (baseline, other)
    schemes: tuple[str, str]
    model: str  # the configuration both price (their rows name the published checkpoints)
    measured: float
    predicted: float
    error: float  # predicted / measured - 1: > 0 predicts the other scheme's gain too large
    aic_error: float | None = None


class SpeedupSummary(Out):
    pairs: int
    median_abs_error: float | None
    p90_abs_error: float | None
    max_abs_error: float | None
    median_error: float | None
    heldout_pairs: int
    heldout_median_abs_error: float | None
    aic_pairs: int  # of these, the ones aiconfigurator expressed both points of
    median_abs_error_on_aic_pairs: float | None
    aic_median_abs_error: float | None


class E2EReport(Result):
    """``validate --e2e``: the serving-loop model on the published end-to-end points."""

    points_file: str
    terms: list[str]  # the terms that priced them, in words
    bar: float
    heldout_groups: list[str]
    bands: list[BandError]
    points: list[PointError]
    skipped: dict[str, int]  # why a point could not be priced -> how many
    sources: list[str]
    passed: bool
    verdict: list[str]  # per gated band: ours vs the bar and vs aiconfigurator
    # per term set with a band (perf.uncertainty): how many of its held-out points the band holds
    coverage: list[str] = []
    speedups: list[SpeedupError] = []
    speedup_summary: SpeedupSummary | None = None

    def exit_code(self) -> int:
        return 0 if self.passed else 1


def _band_rows(errs: Sequence[PointError], name: str) -> list[BandError]:
    out = []
    for b in BANDS:
        sel = [e for e in errs if e.band == b]
        both = [e for e in sel if e.aic_error is not None]
        out.append(BandError(
            band=b, set=name, points=len(sel),
            median_abs_error=median([abs(e.error) for e in sel]) if sel else None,
            median_error=median([e.error for e in sel]) if sel else None,
            aic_points=len(both),
            median_abs_error_on_aic_points=median([abs(e.error) for e in both]) if both else None,
            aic_median_abs_error=median([abs(e.aic_error or 0.0) for e in both]) if both else None))
    return out


# what two points may differ in and still be the same run but for the quantization: who ran it, what it was
# called, what it measured, the aiconfigurator columns — and the choice itself (scheme, KV cache dtype)
_NOT_THE_RUN = frozenset({"id", "locator", "model", "scheme", "scheme_note", "kv_dtype", "output_tok_s", "kind",
                          "ttft_ms", "tpot_ms", "aic", "aic_output_tok_s", "aic_command", "as_of", "skip"})


def choice(p: E2EPoint) -> str:
    """A point's quantization choice as a pair names it: its scheme, with its KV cache dtype where one was set."""
    return f"{p.scheme} + {p.kv_dtype}" if p.kv_dtype else p.scheme or ""


def speedup_pairs(points: Sequence[tuple[E2EPoint, PointError]]) -> list[SpeedupError]:
    """Every two priced points that differ only in their quantization (the scheme, the KV cache dtype or both),
    the choice first in name order the baseline (a run with three choices gives three pairs)."""
    runs: dict[tuple[object, ...], list[tuple[E2EPoint, PointError]]] = {}
    for p, e in points:
        if p.scheme is None:
            continue
        key = tuple((k, v) for k, v in p.model_dump().items() if k not in _NOT_THE_RUN)
        runs.setdefault(key, []).append((p, e))
    out = []
    for members in runs.values():
        members.sort(key=lambda m: (choice(m[0]), m[0].id))
        for i, (pa, ea) in enumerate(members):
            for pb, eb in members[i + 1:]:
                if choice(pa) == choice(pb):
                    continue
                measured, predicted = eb.measured / ea.measured, eb.predicted / ea.predicted
                aic = None
                if ea.aic_error is not None and eb.aic_error is not None:
                    aic = ((1.0 + eb.aic_error) / (1.0 + ea.aic_error)) - 1.0  # aic's ratio over the measured one
                out.append(SpeedupError(
                    ids=(pa.id, pb.id), schemes=(choice(pa), choice(pb)), model=pa.config or pa.model,
                    measured=measured, predicted=predicted, error=predicted / measured - 1.0, aic_error=aic))
    return out


def speedup_summary(pairs: Sequence[SpeedupError], heldout: set[str]) -> SpeedupSummary:
    """The pairs' errors; ``heldout``: the ids of the points the loop terms' fit never saw."""
    from .lookup_checks import stats

    abs_err = stats([abs(x.error) for x in pairs], digits=None)  # unrounded, as every other figure of the report
    held = [abs(x.error) for x in pairs if x.ids[0] in heldout]
    both = [x for x in pairs if x.aic_error is not None]
    return SpeedupSummary(
        pairs=len(pairs), median_abs_error=abs_err["median"] if pairs else None,
        p90_abs_error=abs_err["p90"] if pairs else None, max_abs_error=abs_err["max"] if pairs else None,
        median_error=median([x.error for x in pairs]) if pairs else None,
        heldout_pairs=len(held), heldout_median_abs_error=median(held) if held else None,
        aic_pairs=len(both), median_abs_error_on_aic_pairs=median([abs(x.error) for x in both]) if both else None,
        aic_median_abs_error=median([abs(x.aic_error or 0.0) for x in both]) if both else None)


def report(samples: "Sequence[tuple[E2EPoint, Sample, LoopTerms | None]]", table: E2ETable, *, terms: list[str],
           skipped: dict[str, int], points_file: str, bar: float = BAR) -> E2EReport:
    """The report of ``samples`` — (point, its sample, the terms that price it)."""
    from ..perf.loop import bound_by

    held = set(table.heldout)
    errs: list[PointError] = []
    for p, s, t in samples:
        pred = s.predict(t)
        bound = bound_by(s.cycle.shares(t))
        errs.append(PointError(
            id=p.id, group=p.group, band=s.band, engine=p.engine, gpu=p.gpu, model=p.model, heldout=p.group in held,
            measured=s.measured, predicted=pred, error=pred / s.measured - 1.0,
            aic_error=(p.aic_output_tok_s / s.measured - 1.0) if p.aic == "ok" and p.aic_output_tok_s else None,
            bound=bound, pairs_only=p.pairs_only))
    inside = [e for e in errs if not e.pairs_only]
    bands = (_band_rows(inside, "all") + _band_rows([e for e in inside if not e.heldout], "fitted")
             + _band_rows([e for e in inside if e.heldout], "held-out"))
    verdict, ok = [], True
    for r in bands:
        if r.set != "all" or r.band not in GATED or r.median_abs_error is None:
            continue
        within = r.median_abs_error <= bar
        beats = (r.aic_median_abs_error is None or r.median_abs_error_on_aic_points is None
                 or r.median_abs_error_on_aic_points <= r.aic_median_abs_error)
        ok = ok and within and beats
        aic = (f"; on the {r.aic_points} points aiconfigurator expresses {r.median_abs_error_on_aic_points:.1%} "
               f"against its {r.aic_median_abs_error:.1%}" if r.aic_median_abs_error is not None
               and r.median_abs_error_on_aic_points is not None else "")
        verdict.append(f"concurrency {r.band}: median |error| {r.median_abs_error:.1%} over {r.points} points "
                       f"({'within' if within else 'past'} {bar:.0%}){aic}" + ("" if beats else " (worse)"))
    held_by: dict[str, tuple[float, list[float]]] = {}
    for (_, _, t), e in zip(samples, errs, strict=True):
        if not e.pairs_only and e.heldout and t is not None and t.uncertainty:
            held_by.setdefault(t.id, (t.uncertainty, []))[1].append(abs(e.error))
    coverage = [f"{tid} ±{u:.1%}: {sum(x <= u for x in xs) / len(xs):.0%} of its {len(xs)} held-out points inside"
                for tid, (u, xs) in held_by.items()]
    pairs = speedup_pairs([(p, e) for (p, _, _), e in zip(samples, errs, strict=True)])
    return E2EReport(points_file=points_file, terms=terms, bar=bar, heldout_groups=sorted(held), bands=bands,
                     points=errs, skipped=dict(sorted(skipped.items(), key=lambda kv: -kv[1])),
                     sources=[f"{s.id}: {s.title} ({s.url})" for s in table.sources], passed=ok, verdict=verdict,
                     coverage=coverage, speedups=pairs,
                     speedup_summary=speedup_summary(pairs, {e.id for e in errs if e.heldout}) if pairs else None)
