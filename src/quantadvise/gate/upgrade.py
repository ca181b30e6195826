"""``check --upgrade-to vllm@0.33.0``: what an engine upgrade changes for each deployment.

Each deployment is judged twice, on the release it pins and on the target release (the same
pipeline both times: the engine command, the model's config, the flags); :func:`compare` reads the
two :class:`~quantadvise.gate.result.TargetReport` s and the engine findings (QA101-QA110) each
produced, and returns an :class:`UpgradeChange` when the verdict (loads / warnings / refuses), the
method the engine resolves to, the GEMM kernel it runs for a config group (where both releases have a
kernel table on file, engines/kernels), the served scheme or KV cache dtype, or what the engine prints
differs. :func:`report` turns each change into a QA112 finding at the command's line — an error when the
deployment starts on its release and the target refuses to start it (the upgrade would not start), located
at the line the target's refusal names (the flag to fix) and saying what the target refuses;
:func:`kernel_coverage` says when a release has no kernel table, so no kernel change can be seen.
Pure: the caller runs the pipeline.
"""

import re
from collections.abc import Iterable

from ..results import Out
from .findings import Findings
from .result import GateFinding, TargetReport
from .rules import REFUSES_START

RULE = "QA112"
# the engine findings an upgrade can add or remove (QA100: version not on file; QA111: model unread)
ENGINE_RULES = tuple(f"QA{n}" for n in range(101, 111))
# (TargetReport field, how the change is named); "kernels" (the GEMM kernel per config group) is compared only
# where both releases have a kernel table on file and the engine loads the model on both
_FIELDS = (("engine_status", "verdict"), ("resolved_method", "method"), ("kernels", "kernel"),
           ("scheme", "scheme served"), ("kv_cache_dtype", "KV cache dtype"))


class UpgradeDelta(Out):
    what: str  # verdict | method | kernel | scheme served | KV cache dtype
    before: str | None
    after: str | None


class UpgradeRefusal(Out):
    """Why the target release refuses to start a deployment its own release starts: the refusal finding the
    target's judgement made, at its line (the flag or declaration to fix)."""

    rule_id: str
    message: str
    file: str | None = None
    line: int | None = None


class UpgradeChange(Out):
    """One deployment whose behaviour changes between the pinned and the target release."""

    target: str
    file: str | None = None
    line: int | None = None
    engine: str
    from_version: str
    to_version: str
    changes: list[UpgradeDelta] = []
    added: list[str] = []  # "QA106 [warning] <the engine's words>" only the target prints
    removed: list[str] = []
    # the deployment starts on its release and the target refuses to start it: why, at the lines to fix
    refusals: list[UpgradeRefusal] = []

    @property
    def stops_starting(self) -> bool:
        return bool(self.refusals)

    def summary(self) -> str:
        parts = [f"{d.what} {d.before or '-'} -> {d.after or '-'}" for d in self.changes]
        parts += [f"new: {a}" for a in self.added] + [f"gone: {r}" for r in self.removed]
        return "; ".join(parts)


def _text(v: object) -> str | None:
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, list | tuple):
        return ", ".join(str(getattr(x, "kernel", x)) for x in v)
    return str(v)


def _said(findings: Iterable[GateFinding], versions: tuple[str, ...]) -> dict[str, str]:
    """key (rule + the engine's words, release numbers and quoted lists left out) -> the line shown."""
    out = {}
    for f in findings:
        if f.rule_id not in ENGINE_RULES:
            continue
        text = f.engine_message or f.message
        key = text
        for v in versions:
            key = key.replace(v, "<version>")
        key = re.sub(r"\[[^\]]*\]", "[...]", key)
        out[f"{f.rule_id} {key}"] = f"{f.rule_id} [{f.severity}] {text}"
    return out


def compare(before: TargetReport, after: TargetReport, before_findings: Iterable[GateFinding],
            after_findings: Iterable[GateFinding]) -> UpgradeChange | None:
    """The change one deployment sees between the two releases (None: it behaves the same)."""
    deltas = [UpgradeDelta(what=label, before=_text(getattr(before, key, None)), after=_text(getattr(after, key, None)))
              for key, label in _FIELDS if getattr(before, key, None) != getattr(after, key, None)
              and (key != "kernels" or _kernels_comparable(before, after))]
    versions = (before.engine_version, after.engine_version)
    sa = _said([f for f in before_findings if f.target == before.label], versions)
    sb = _said([f for f in after_findings if f.target == after.label], versions)
    added = [v for k, v in sb.items() if k not in sa]
    removed = [v for k, v in sa.items() if k not in sb]
    if not deltas and not added and not removed:
        return None
    refusals = []
    if before.engine_status != "refused" and after.engine_status == "refused":
        refusals = [UpgradeRefusal(rule_id=f.rule_id, message=f.message, file=f.file, line=f.line)
                    for f in after_findings if f.target == after.label and f.rule_id in REFUSES_START]
        if not refusals:  # refused for a reason no finding locates: the command's line
            refusals = [UpgradeRefusal(rule_id=RULE, message=f"{after.engine} {after.engine_version} refuses to start it",
                                       file=before.file, line=before.line)]
    return UpgradeChange(target=before.label, file=before.file, line=before.line, engine=before.engine,
                         from_version=before.engine_version, to_version=after.engine_version, changes=deltas,
                         added=added, removed=removed, refusals=refusals)


def _kernels_comparable(before: TargetReport, after: TargetReport) -> bool:
    """Both releases have a kernel table (kernels not None) and load the model (a refusal is the verdict's
    change, not a kernel's)."""
    return before.kernels is not None and after.kernels is not None and \
        "refused" not in (before.engine_status, after.engine_status)


def kernel_coverage(engine_label: str, without_table: Iterable[str], with_table: Iterable[str]) -> str | None:
    """The note ``check --upgrade-to`` prints when a release has no kernel table on file (None: both have
    one): kernel changes cannot be seen for it, only verdicts, methods, schemes and messages."""
    missing = sorted(set(without_table))
    if not missing:
        return None
    have = sorted(set(with_table))
    return (f"kernel changes not compared: no kernel table on file for {engine_label} {', '.join(missing)}"
            + (f" (kernel tables on file: {engine_label} {', '.join(have)})" if have else "")
            + "; the verdict, method, scheme, KV cache dtype and messages are compared")


def report(changes: Iterable[UpgradeChange], out: Findings) -> None:
    """One QA112 finding per deployment the upgrade changes, at the engine command's line; an error where
    the target release refuses to start a deployment its own release starts (the upgrade would not start),
    at the first line the refusal names, with every refusal and its line."""
    out.ran_rules(RULE)
    for c in changes:
        if c.stops_starting:
            first = c.refusals[0]
            why = "; ".join(f"{r.rule_id} {r.message}" + (f" ({r.file}:{r.line})" if r.file and r.line else "")
                            for r in c.refusals)
            out.add(RULE, f"upgrading {c.engine} {c.from_version} -> {c.to_version}: the engine would refuse to start "
                    f"this deployment, which starts on {c.from_version} ({why}); fix the command before upgrading. "
                    f"What changes: {c.summary()}", subject=f"{c.target}|upgrade-to|{c.engine}@{c.to_version}",
                    file=first.file or c.file, line=first.line or c.line, target=c.target, severity="error")
            continue
        out.add(RULE, f"upgrading {c.engine} {c.from_version} -> {c.to_version} changes this deployment: "
                f"{c.summary()}", subject=f"{c.target}|upgrade-to|{c.engine}@{c.to_version}", file=c.file,
                line=c.line, target=c.target)
