"""``accuracy``: per-sample evaluation results of a baseline and a quantized run, compared."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..artifacts.evidence import Choice
    from ..evals.stats import AccuracyReport, AccuracyThresholds


def accuracy(
    base: str | Path,
    quant: str | Path,
    *,
    metric: str | None = None,
    filter: str | None = None,
    confidence: float = 0.95,
    max_delta: float | str | None = None,
    max_flips: float | str | None = None,
    max_kl: float | None = None,
    min_samples: int | None = None,
    thresholds: AccuracyThresholds | None = None,
    per_task: dict[str, AccuracyThresholds] | None = None,
    choice: Choice | None = None,
) -> AccuracyReport:
    """Compare per-sample results of a baseline and a quantized run (files or folders of
    lm-eval ``samples_*.jsonl`` or plain JSONL): per task the accuracy delta with a paired
    confidence interval, flips, McNemar's p and mean KL; with thresholds, pass/fail checks.

    ``max_delta`` is percentage points and ``max_flips`` percent (1.0 = 1 point, the unit of
    ``recommend``'s ``accuracy_tolerance``; ``"1%"`` / ``"1pp"`` are read the same), ``max_kl`` nats;
    ``thresholds`` (an :class:`~quantadvise.accuracy_stats.AccuracyThresholds`) and ``per_task``
    (task -> thresholds) are the gate's way in. Returns an ``AccuracyReport``; its
    ``exit_code()`` is 1 when a check fails. ``choice`` (an ``evals.evidence.Choice``: per-task
    filters and metrics, and how messages name the choice) replaces ``metric`` / ``filter``.
    """
    from ..artifacts.evidence import load_evidence
    from ..evals.stats import AccuracyThresholds, compare
    from ..inputs import check, points

    delta, flips = points("max_delta", max_delta), points("max_flips", max_flips)
    min_samples = check("min_samples", min_samples)
    # the thresholds are fractions of the items (0.01 = 1 percentage point)
    flags = {"max_delta_drop": None if delta is None else delta / 100,
             "max_flip_rate": None if flips is None else flips / 100,
             "max_kl": check("max_kl", max_kl), "min_samples": min_samples}
    if any(v is not None for v in flags.values()):
        given = AccuracyThresholds(**{k: v for k, v in flags.items() if v is not None})
        thresholds = (thresholds or AccuracyThresholds()).overlay(given)
    b = load_evidence(base, metric=metric, filter=filter, role="BASE", choice=choice)
    q = load_evidence(quant, metric=metric, filter=filter, role="QUANT", choice=choice)
    return compare(b, q, base_label=str(base), quant_label=str(quant), confidence=confidence,
                   thresholds=thresholds, per_task=per_task)


