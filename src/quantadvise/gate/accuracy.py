"""QA4xx: accuracy evidence — missing for a scheme below 8 bits, or failing its thresholds."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .findings import Findings, Site
from .result import TaskEvidence

if TYPE_CHECKING:
    from ..evals.stats import AccuracyReport, AccuracyThresholds
    from .config import AccuracyConfig


def evidence_required(out: Findings, site: Site, *, scheme: str, bits: float | None, below: int,
                      evidence: bool, kv_bits: float | None = None, shipped: bool = False,
                      policy: bool = True) -> None:
    """QA401: ``bits`` (the served weights / activations) or ``kv_bits`` (a quantized KV cache) below
    ``below`` with no evidence declared. ``shipped``: the weights are the model's only release, served as
    its publisher ships it (target.released_quantized: gpt-oss and DeepSeek-V3 have no 16-bit release to
    compare with; the publisher's evaluation is the evidence): only a KV cache the deployment quantizes
    needs evidence. ``policy``: quantadvise.yaml
    declares an accuracy policy (accuracy:, thresholds.evidence_below_bits or rules: QA401); without one
    the finding is a note, never a failed build."""
    low = [b for b in ((None if shipped else bits), kv_bits) if b is not None and b < below]
    if shipped and bits is not None and bits < below and not low:
        out.skip("QA401", f"{scheme}: the model's only release is this quantized checkpoint, served as its publisher "
                          "ships it (its accuracy is the publisher's evaluation; no 16-bit baseline exists)")
        return
    out.ran_rules("QA401")
    if not low or evidence:
        return
    file, line = site.at("quantization", "model", declared=True)
    what = f"{scheme} quantizes to {min(low):g} bits (< {below})" if not shipped else \
        f"the KV cache ({scheme}) is quantized to {min(low):g} bits (< {below})"
    out.add("QA401", f"{what} and "
            + ("quantadvise.yaml names no accuracy evidence" if policy else
               "no accuracy policy is declared (no quantadvise.yaml accuracy:)")
            + ": add accuracy.baseline and accuracy.quantized (per-sample results, e.g. lm-eval "
            "--log_samples) with thresholds", subject=f"{site.key}|evidence|{scheme}", file=file, line=line,
            target=site.label, severity=None if policy else "note")


def accuracy_findings(out: Findings, checks: Iterable[Any], files: Mapping[str, str], config_file: str | None,
                      config_lines: Mapping[str, int]) -> None:
    """``AccuracyCheck`` rows -> QA402 (fail) / QA403 (skipped); ``files`` maps task -> evidence file."""
    out.ran_rules("QA402", "QA403")
    for c in checks:
        if c.status == "pass":
            continue
        task_key = f"accuracy.tasks.{c.task}"
        file = files.get(c.task)
        line = None
        if file is None and config_file is not None:
            file = config_file
            line = config_lines.get(task_key) or config_lines.get("accuracy")
        rid = "QA402" if c.status == "fail" else "QA403"
        out.add(rid, f"task {c.task}: {c.message}", subject=f"accuracy|{c.task}|{c.check}", file=file, line=line)




def evidence_thresholds(a: AccuracyConfig) -> tuple[AccuracyThresholds, dict[str, AccuracyThresholds], str | None]:
    """(repository-wide thresholds, per-task thresholds, a note when none were set and the default
    max_delta_drop of 1 percentage point applies)."""
    from ..evals.stats import AccuracyThresholds

    thresholds = AccuracyThresholds(**a.limits())
    per_task = {t: AccuracyThresholds(**lim.limits()) for t, lim in a.tasks.items()}
    if thresholds.empty and all(t.empty for t in per_task.values()):
        return (AccuracyThresholds(max_delta_drop=0.01), per_task,
                "accuracy: no thresholds set; checking the default max_delta_drop of 1 percentage point")
    return thresholds, per_task, None


def task_evidence(rep: AccuracyReport) -> list[TaskEvidence]:
    """The evidence per task, as the gate's report shows it, with the checks each task failed."""
    failed: dict[str, list[str]] = {}
    for c in rep.checks:
        if c.status == "fail":
            failed.setdefault(c.task, []).append(c.check)
    return [TaskEvidence(task=t.task, n=t.n, base_accuracy=t.base_accuracy, quant_accuracy=t.quant_accuracy,
                         delta=t.delta, delta_ci_low=t.delta_ci_low, delta_ci_high=t.delta_ci_high,
                         flip_rate=t.flip_rate, kl_mean_nats=t.kl.mean_nats if t.kl else None,
                         failed=failed.get(t.task, [])) for t in rep.tasks]
