"""Accuracy evidence: how a quantized model's answers compare with its baseline's, item by item.

The inputs are per-sample results of the same evaluation run twice — once on the baseline, once on
the quantized model — paired by item id (``evidence.py`` reads them from files). For each task:

- **accuracy delta** ``quant - base`` with a confidence interval for the *paired* difference:
  Newcombe's hybrid score ("square-and-add") interval, method 10 of Newcombe (1998), built from
  the Wilson score intervals of the two accuracies and their correlation. Unlike the Wald interval
  it does not collapse to a point when no answer changed, and it stays inside [-1, 1];
- **flips**: answers whose correctness changed, in either direction (Dutta et al., "Accuracy is
  Not All You Need", arXiv:2407.09141) — a small delta can hide many flips that cancel out;
- **McNemar's exact test** p-value (two-sided, conditional on the discordant pairs);
- **KL(base || quant)** per item, averaged, when both files carry log-probs: each item's values are
  softmax-normalised (per-choice log-likelihoods of a multiple-choice task become the model's
  distribution over the choices; a full log-distribution is unchanged by it). Any finite values
  normalise (the log-softmax is shift-invariant; -inf is a probability of 0); NaN, +inf or -inf
  for every entry cannot, and are an InputError naming the file and line — never a KL of 0.

Thresholds turn a report into pass/fail rows (:meth:`AccuracyReport.evaluate`) — what the CI gate
consumes. docs/accuracy.md gives the formulas with a worked example.

Pure: no I/O, no printing.
"""

import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from statistics import NormalDist
from typing import Literal

from pydantic import ConfigDict, Field

from ..errors import InputError
from ..inputs import LIMITS
from ..results import Out, Result, Validated, record
from ..wording import plural

CI_METHOD = "newcombe-hybrid-score"
CI_METHOD_TEXT = "Newcombe hybrid score interval for a paired difference (Newcombe 1998, method 10)"
_EPS = 1e-12  # a threshold compared with a ratio of counts: 1/100 must not fail "max 0.01"


# --- inputs (built by evidence.py; plain dataclasses: an eval has tens of thousands of items) ----


@record
class Sample:
    """One evaluated item: its id, whether the answer was right, and optional log-probs."""

    id: str
    correct: bool
    line: int
    logprobs: tuple[float, ...] | Mapping[str, float] | None = None
    doc_hash: str | None = None


@record
class TaskSamples:
    """All items of one task from one file."""

    task: str
    file: str
    format: Literal["lm-eval", "jsonl"]
    metric: str
    samples: tuple[Sample, ...]
    filter: str | None = None
    warnings: tuple[str, ...] = field(default=())


# --- results ------------------------------------------------------------------------------------


class KLStats(Out):
    """KL(base || quant) in nats over the items where both sides have log-probs."""

    items: int
    mean_nats: float
    max_nats: float
    max_id: str
    skipped_items: int = 0  # paired items without log-probs on one side
    # items where the quantized side gives probability 0 (a -inf log-prob) to a choice the baseline does not: their
    # KL is infinite, and so are the mean and the max (null in JSON, which has no infinity)
    infinite_items: int = 0


class TaskAccuracy(Out):
    task: str
    base_file: str
    quant_file: str
    metric: str
    filter: str | None = None
    n: int
    base_correct: int
    quant_correct: int
    base_accuracy: float
    quant_accuracy: float
    delta: float  # quant - base, fraction (0.01 = 1 percentage point)
    delta_ci_low: float
    delta_ci_high: float
    both_correct: int
    lost: int  # right on the baseline, wrong after quantization
    gained: int  # wrong on the baseline, right after quantization
    both_wrong: int
    flips: int
    flip_rate: float
    mcnemar_p: float
    kl: KLStats | None = None
    unmatched_base: int = 0
    unmatched_quant: int = 0
    unmatched_examples: list[str] = []

    @property
    def drop(self) -> float:
        """Accuracy lost to quantization (positive = worse), as a fraction; exact ratio of counts."""
        return (self.lost - self.gained) / self.n

    def evaluate(self, thresholds: "AccuracyThresholds") -> "list[AccuracyCheck]":
        """One row per threshold that is set: pass, fail, or skipped (no log-probs for KL)."""
        rows: list[AccuracyCheck] = []
        t = thresholds
        if t.min_samples is not None:
            ok = self.n >= t.min_samples
            rows.append(AccuracyCheck(
                task=self.task, check="samples", status="pass" if ok else "fail", value=self.n,
                threshold=t.min_samples,
                message=f"{self.n} paired items" + ("" if ok else f" < minimum {t.min_samples}: too few to be evidence"),
            ))
        if t.max_delta_drop is not None:
            ok = self.drop <= t.max_delta_drop + _EPS
            ci = f"CI of the delta {_pp(self.delta_ci_low)} to {_pp(self.delta_ci_high)}"
            rows.append(AccuracyCheck(
                task=self.task, check="delta", status="pass" if ok else "fail", value=self.drop,
                threshold=t.max_delta_drop,
                message=(f"{self.metric} {self.quant_accuracy:.2%} vs {self.base_accuracy:.2%} baseline: "
                         f"drop {_pp(self.drop, sign=False)} {'<=' if ok else '>'} max {_pp(t.max_delta_drop, sign=False)} "
                         f"({ci})"),
            ))
        if t.max_flip_rate is not None:
            ok = self.flip_rate <= t.max_flip_rate + _EPS
            rows.append(AccuracyCheck(
                task=self.task, check="flips", status="pass" if ok else "fail", value=self.flip_rate,
                threshold=t.max_flip_rate,
                message=(f"{self.flips} of {self.n} answers changed correctness ({self.flip_rate:.2%}: {self.lost} "
                         f"lost, {self.gained} gained) {'<=' if ok else '>'} max {t.max_flip_rate:.2%}"),
            ))
        if t.max_kl is not None:
            if self.kl is None:
                rows.append(AccuracyCheck(
                    task=self.task, check="kl", status="skipped", value=None, threshold=t.max_kl,
                    message="no log-probs on both sides: KL not checked (log per-choice log-likelihoods or "
                            "'logprobs' to check it)",
                ))
            else:
                ok = self.kl.mean_nats <= t.max_kl + _EPS
                rows.append(AccuracyCheck(
                    task=self.task, check="kl", status="pass" if ok else "fail", value=self.kl.mean_nats,
                    threshold=t.max_kl,
                    message=(f"mean KL(base||quant) {self.kl.mean_nats:.4g} nats over {self.kl.items} items "
                             f"{'<=' if ok else '>'} max {t.max_kl:.4g} (largest {self.kl.max_nats:.4g} at id "
                             f"{self.kl.max_id})"),
                ))
        return rows


class AccuracyThresholds(Validated):
    """Limits per task; ``None`` = not checked. Fractions, not percent: 0.01 = 1 percentage point."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    max_delta_drop: float | None = Field(default=None, ge=0, le=1)
    max_flip_rate: float | None = Field(default=None, ge=0, le=1)
    max_kl: float | None = Field(default=None, ge=0)
    min_samples: int | None = Field(default=None, ge=1, le=LIMITS["min_samples"].high)

    @property
    def empty(self) -> bool:
        return all(v is None for v in self.model_dump().values())

    def overlay(self, other: "AccuracyThresholds | None") -> "AccuracyThresholds":
        """``other``'s set fields replace this one's (per-task limits over the defaults)."""
        if other is None:
            return self
        return self.model_copy(update={k: v for k, v in other.model_dump().items() if v is not None})


class AccuracyCheck(Out):
    """A findings-like row: one threshold on one task."""

    task: str
    check: Literal["evidence", "samples", "delta", "flips", "kl"]
    status: Literal["pass", "fail", "skipped"]
    value: float | None
    threshold: float | None  # None for "evidence": a task the thresholds name is missing
    message: str


class AccuracyReport(Result):
    base: str
    quant: str
    confidence: float
    ci_method: str = CI_METHOD
    tasks: list[TaskAccuracy]
    only_in_base: list[str] = []  # tasks without a counterpart
    only_in_quant: list[str] = []
    thresholds: AccuracyThresholds | None = None
    task_thresholds: dict[str, AccuracyThresholds] = {}
    checks: list[AccuracyCheck] = []
    warnings: list[str] = []

    def evaluate(
        self, thresholds: AccuracyThresholds | None = None, per_task: Mapping[str, AccuracyThresholds] | None = None
    ) -> list[AccuracyCheck]:
        """Check every task against ``thresholds``, overlaid by ``per_task[task]`` where given."""
        base = thresholds or AccuracyThresholds()
        per_task = dict(per_task or {})
        rows: list[AccuracyCheck] = []
        for t in self.tasks:
            rows.extend(t.evaluate(base.overlay(per_task.get(t.task))))
        present = ", ".join(t.task for t in self.tasks) or "none"
        for name in sorted(set(per_task) - {t.task for t in self.tasks}):
            rows.append(AccuracyCheck(
                task=name, check="evidence", status="fail", value=None, threshold=None,
                message=f"thresholds are set for task '{name}' but the evidence has no such task (present: {present})",
            ))
        return rows

    def with_checks(
        self, thresholds: AccuracyThresholds | None, per_task: Mapping[str, AccuracyThresholds] | None = None
    ) -> "AccuracyReport":
        """This report with ``checks`` filled in (and the thresholds recorded)."""
        checks = self.evaluate(thresholds, per_task)
        return self.model_copy(update={
            "thresholds": thresholds, "task_thresholds": dict(per_task or {}), "checks": checks,
        })

    @property
    def failed(self) -> list[AccuracyCheck]:
        return [c for c in self.checks if c.status == "fail"]

    def exit_code(self) -> int:
        """0 when every check passes (or none was asked for), 1 when one fails."""
        return 1 if self.failed else 0


# --- statistics (pure functions, each testable by hand) ------------------------------------------


def z_value(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be between 0 and 1 (exclusive), got {confidence}", field="confidence")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(successes: int, n: int, z: float) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``successes / n``."""
    if n <= 0:
        raise ValueError("wilson_interval needs n > 0")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_delta_ci(both: int, lost: int, gained: int, neither: int, z: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval (method 10) for ``quant_accuracy - base_accuracy``.

    2x2 table, rows = baseline right/wrong, columns = quantized right/wrong::

                    quant right  quant wrong
        base right     both         lost
        base wrong     gained       neither

    Each accuracy gets its Wilson interval ``(l, u)``; ``phi`` estimates their correlation from
    ``both*neither - lost*gained``, shrunk towards 0 by ``n/2`` when positive and set to 0 when a
    margin is empty. The interval is ``d - delta, d + epsilon`` with
    ``delta = sqrt((p2 - l2)^2 - 2 phi (p2 - l2)(u1 - p1) + (u1 - p1)^2)`` and
    ``epsilon = sqrt((u2 - p2)^2 - 2 phi (u2 - p2)(p1 - l1) + (p1 - l1)^2)``, ``p1`` the baseline's
    accuracy and ``p2`` the quantized one's, ``d = p2 - p1``.
    """
    n = both + lost + gained + neither
    base_right, quant_right = both + lost, both + gained
    p1, p2 = base_right / n, quant_right / n
    l1, u1 = wilson_interval(base_right, n, z)
    l2, u2 = wilson_interval(quant_right, n, z)
    margins = (base_right, n - base_right, quant_right, n - quant_right)
    if 0 in margins:
        phi = 0.0
    else:
        a = both * neither - lost * gained
        corr = a - n / 2 if a > n / 2 else (a if a < 0 else 0.0)
        phi = corr / math.sqrt(math.prod(margins))
    d = p2 - p1
    lower = math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    upper = math.sqrt(max(0.0, (u2 - p2) ** 2 - 2 * phi * (u2 - p2) * (p1 - l1) + (p1 - l1) ** 2))
    return max(-1.0, d - lower), min(1.0, d + upper)


def mcnemar_exact_p(lost: int, gained: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test of ``lost`` vs ``gained`` at p = 1/2."""
    m = lost + gained
    if m == 0:
        return 1.0
    k = min(lost, gained)
    tail = sum(math.comb(m, i) for i in range(k + 1)) / 2**m
    return min(1.0, 2 * tail)


_FLOAT_MAX = sys.float_info.max


def logprob_problem(values: Iterable[float]) -> str | None:
    """Why a vector of log-probs cannot be softmax-normalised, or None when it can: a NaN or a +inf entry,
    or every entry -inf (probability 0 for every choice). Any finite value is fine (the softmax is
    shift-invariant), and so is -inf beside a finite entry (that choice has probability 0)."""
    top = -math.inf
    for i, v in enumerate(values):
        if math.isnan(v):
            return f"entry {i} is NaN"
        if v == math.inf:
            return f"entry {i} is +inf"
        top = max(top, v)
    return "every entry is -inf (probability 0 for every choice)" if top == -math.inf else None


def _log_softmax(values: Sequence[float]) -> list[float]:
    """``values - logsumexp(values)``, stable for any finite entries: shifted by the largest first, so the sum
    of exponentials lies in [1, n] and never overflows; the largest entry is never added back (that would
    absorb ``ln n`` when it is near a float's end: [-1e308] * 4 is uniform, ``-ln 4`` each). An entry more
    than a float's range below the largest keeps the most negative finite value, so -inf in the result
    means a -inf (probability exactly 0) in ``values``. ValueError for what ``logprob_problem`` refuses."""
    problem = logprob_problem(values)
    if problem is not None:
        raise ValueError(f"log-probs cannot be normalised: {problem}")
    top = max(values)
    shifted = [v - top if v == -math.inf else max(v - top, -_FLOAT_MAX) for v in values]
    lse = math.log(math.fsum(math.exp(s) for s in shifted))  # in [0, ln n]: the largest entry gives exp(0) = 1
    return [s - lse for s in shifted]


def kl_divergence(base: Sequence[float], quant: Sequence[float]) -> float:
    """KL(P || Q) in nats, P and Q the softmax of two aligned vectors of log-probs/log-likelihoods.

    A term with ``p_i = 0`` (a -inf on the baseline) is 0; ``q_i = 0`` (a -inf on the quantized side)
    where ``p_i > 0`` makes KL +inf; a sum past a float's range is +inf. Never NaN, never negative.
    ValueError for vectors of different lengths or that cannot be normalised (``logprob_problem``)."""
    if len(base) != len(quant):
        raise ValueError("log-prob vectors differ in length")
    lp, lq = _log_softmax(base), _log_softmax(quant)
    terms: list[float] = []
    for a, b in zip(lp, lq, strict=True):
        if a == -math.inf:
            continue
        if b == -math.inf:
            return math.inf
        terms.append(math.exp(a) * (a - b))  # a - b <= 0 - (-float max): finite
    try:
        total = math.fsum(terms)  # the negative terms are each > -1/e: only the sum of positive ones can overflow
    except OverflowError:
        return math.inf
    return max(0.0, total)  # finite here: rounding may leave -1e-17 for equal distributions


def mean(values: Sequence[float]) -> float:
    """The mean of non-negative values (+inf when one is), finite when their sum passes a float's range:
    then each is scaled by the largest first (their mean is at most the largest)."""
    try:
        return math.fsum(values) / len(values)
    except OverflowError:  # finite values whose exact sum is past a float's end
        top = max(values)
        return top * (math.fsum(v / top for v in values) / len(values))


def _aligned(base: tuple[float, ...] | Mapping[str, float], quant: tuple[float, ...] | Mapping[str, float],
             ) -> tuple[list[float], list[float], bool] | None:
    """Two log-prob records on a common support: (base, quant, supports differed) or None."""
    if isinstance(base, Mapping) and isinstance(quant, Mapping):
        keys = sorted(set(base) & set(quant))
        if len(keys) < 2:
            return None
        return [base[k] for k in keys], [quant[k] for k in keys], set(base) != set(quant)
    if isinstance(base, Mapping) or isinstance(quant, Mapping):
        return None
    if len(base) != len(quant) or len(base) < 2:
        return None
    return list(base), list(quant), False


# --- pairing and the report ------------------------------------------------------------------------


def compare_task(base: TaskSamples, quant: TaskSamples, *, confidence: float = 0.95,
                 task: str | None = None) -> tuple[TaskAccuracy, list[str]]:
    """Pair two runs of one task by id and compute delta, CI, flips, McNemar and KL."""
    name = task or base.task
    z = z_value(confidence)
    qmap = {s.id: s for s in quant.samples}
    bids = {s.id for s in base.samples}
    pairs = [(s, qmap[s.id]) for s in base.samples if s.id in qmap]
    only_base = [s.id for s in base.samples if s.id not in qmap]
    only_quant = [s.id for s in quant.samples if s.id not in bids]
    warnings: list[str] = []
    if not pairs:
        raise InputError(
            f"task '{name}': no item id appears in both {base.file} and {quant.file} "
            f"({len(base.samples)} and {len(quant.samples)} items)",
            hint="both files must come from the same evaluation (same task, same doc ids)",
            field="ids",
        )
    mism = [(b, q) for b, q in pairs if b.doc_hash and q.doc_hash and b.doc_hash != q.doc_hash]
    if mism:
        b, q = mism[0]
        raise InputError(
            f"task '{name}': {plural(len(mism), 'paired item')} with a different document on each side (doc_hash differs; first: doc_id "
            f"{b.id} at {base.file} line {b.line} and {quant.file} line {q.line})",
            hint="re-run both evaluations with the same task version, dataset and --limit",
            field="doc_hash",
        )
    if only_base or only_quant:
        warnings.append(
            f"task '{name}': {plural(len(only_base), 'item')} only in the baseline and {len(only_quant)} only in the "
            f"quantized run were left out; {len(pairs)} paired"
        )
    both = sum(1 for b, q in pairs if b.correct and q.correct)
    lost = sum(1 for b, q in pairs if b.correct and not q.correct)
    gained = sum(1 for b, q in pairs if not b.correct and q.correct)
    neither = len(pairs) - both - lost - gained
    n = len(pairs)
    lo, hi = paired_delta_ci(both, lost, gained, neither, z)

    kl = _kl_stats(name, base, quant, pairs, warnings)
    result = TaskAccuracy(
        task=name, base_file=base.file, quant_file=quant.file, metric=base.metric, filter=base.filter, n=n,
        base_correct=both + lost, quant_correct=both + gained,
        base_accuracy=(both + lost) / n, quant_accuracy=(both + gained) / n,
        delta=(gained - lost) / n, delta_ci_low=lo, delta_ci_high=hi,
        both_correct=both, lost=lost, gained=gained, both_wrong=neither,
        flips=lost + gained, flip_rate=(lost + gained) / n, mcnemar_p=mcnemar_exact_p(lost, gained), kl=kl,
        unmatched_base=len(only_base), unmatched_quant=len(only_quant),
        unmatched_examples=(only_base + only_quant)[:5],
    )
    return result, warnings


def _kl_stats(name: str, base: TaskSamples, quant: TaskSamples, pairs: Sequence[tuple[Sample, Sample]],
              warnings: list[str]) -> KLStats | None:
    """KL(base || quant) over the paired items with log-probs on both sides (None without any); notes go to
    ``warnings``. Log-probs that cannot be compared or normalised are an InputError naming both lines."""
    kls: list[tuple[float, str]] = []
    skipped = differed = 0
    for b, q in pairs:
        if b.logprobs is None or q.logprobs is None:
            skipped += 1
            continue
        where = f"{base.file} line {b.line}, {quant.file} line {q.line}"
        aligned = _aligned(b.logprobs, q.logprobs)
        if aligned is None:
            raise InputError(
                f"task '{name}': id {b.id} has log-probs that cannot be compared ({where}): the two must be lists "
                f"of the same length (2 or more) or mappings sharing 2 or more keys",
                field="logprobs",
            )
        bl, ql, diff = aligned
        for side, values, file, line in (("baseline", bl, base.file, b.line), ("quantized", ql, quant.file, q.line)):
            problem = logprob_problem(values)
            if problem is not None:
                raise InputError(
                    f"task '{name}': id {b.id}: the {side} log-probs cannot be softmax-normalised ({file} line "
                    f"{line}, field 'logprobs'{', on the keys both sides share' if diff else ''}): {problem}",
                    hint="each log-prob must be a finite number; -inf (probability 0) only beside a finite one",
                    field="logprobs",
                )
        differed += diff
        kls.append((kl_divergence(bl, ql), b.id))
    if not kls:
        return None
    worst = max(kls, key=lambda t: t[0])
    if skipped:
        warnings.append(f"task '{name}': KL over {len(kls)} of {len(pairs)} items; {skipped} lack log-probs on one side")
    if differed:
        warnings.append(
            f"task '{name}': {plural(differed, 'item')} with top-k log-prob mappings of different keys; KL is "
            f"computed over the shared keys, renormalised (an approximation)"
        )
    return KLStats(items=len(kls), mean_nats=mean([v for v, _ in kls]), max_nats=worst[0], max_id=worst[1],
                   skipped_items=skipped, infinite_items=sum(1 for v, _ in kls if math.isinf(v)))


def compare(
    base: Sequence[TaskSamples],
    quant: Sequence[TaskSamples],
    *,
    base_label: str = "base",
    quant_label: str = "quant",
    confidence: float = 0.95,
    thresholds: AccuracyThresholds | None = None,
    per_task: Mapping[str, AccuracyThresholds] | None = None,
) -> AccuracyReport:
    """Pair tasks by name (one task on each side pairs whatever the names) and compare each."""
    warnings = [w for ts in (*base, *quant) for w in ts.warnings]
    if len(base) == 1 and len(quant) == 1:
        pairs = [(base[0].task, base[0], quant[0])]
        if base[0].metric != quant[0].metric:
            raise InputError(
                f"the baseline is scored by '{base[0].metric}' ({base[0].file}) and the quantized run by "
                f"'{quant[0].metric}' ({quant[0].file})",
                hint="choose one metric with --metric", field="metric",
            )
    else:
        bmap, qmap = {t.task: t for t in base}, {t.task: t for t in quant}
        pairs = [(name, bmap[name], qmap[name]) for name in sorted(bmap) if name in qmap]
        if not pairs:
            raise InputError(
                f"no task appears on both sides (baseline: {', '.join(sorted(bmap)) or 'none'}; "
                f"quantized: {', '.join(sorted(qmap)) or 'none'})",
                field="tasks",
            )
    tasks: list[TaskAccuracy] = []
    for name, b, q in pairs:
        if b.metric != q.metric:
            raise InputError(
                f"task '{name}': the baseline is scored by '{b.metric}' and the quantized run by '{q.metric}'",
                hint="choose one metric with --metric", field="metric",
            )
        t, w = compare_task(b, q, confidence=confidence, task=name)
        tasks.append(t)
        warnings.extend(w)
    paired = {n for n, _, _ in pairs}
    single = len(base) == 1 and len(quant) == 1
    only_b = [] if single else sorted({t.task for t in base} - paired)
    only_q = [] if single else sorted({t.task for t in quant} - paired)
    if only_b or only_q:
        warnings.append(
            "tasks without a counterpart were left out: "
            + "; ".join(x for x in (f"baseline only: {', '.join(only_b)}" if only_b else "",
                                    f"quantized only: {', '.join(only_q)}" if only_q else "") if x)
        )
    report = AccuracyReport(
        base=base_label, quant=quant_label, confidence=confidence, tasks=tasks, only_in_base=only_b,
        only_in_quant=only_q, warnings=warnings,
    )
    if thresholds is not None or per_task:
        report = report.with_checks(thresholds, per_task)
    return report


def _pp(x: float, *, sign: bool = True) -> str:
    """A fraction as percentage points: 0.0125 -> '+1.25 pp'."""
    return f"{x * 100:+.2f} pp" if sign else f"{x * 100:.2f} pp"
