"""Collecting findings: where a deployment's findings point (:class:`Site`), the collector that
applies severity overrides and records which rules ran (:class:`Findings`), and the baseline split."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Literal, cast

from ..results import record
from ..wording import plural
from .result import GateFinding, RuleStatus
from .rules import REFUSES_START, RULE_BY_ID, RULES, SEVERITY_RANK, Severity, fingerprint

# engine field -> the declaration key that states the same thing
_DECLARED: dict[str, tuple[str, ...]] = {
    "quantization": ("quantization",), "kv_cache_dtype": ("kv_cache_dtype",), "model": ("model",),
    "max_num_seqs": ("workload.concurrency", "workload.batch"), "max_model_len": ("workload.ctx",), "gpu": ("gpu",),
    "tensor_parallel_size": ("gpus",), "engine_version": ("engine_version",), "engine": ("engine",),
    "concurrency": ("workload.concurrency", "workload.batch"), "ctx": ("workload.ctx",), "gpus": ("gpus",),
    "gpu_memory_utilization": ("gpu_memory_utilization",), "accuracy": ("accuracy",),
}


@record
class Site:
    """Where a target's findings point: the engine command's flag lines, else the declaration's."""

    key: str  # stable part of every subject: "k8s/deploy.yaml#Deployment/x container vllm" (no line)
    label: str
    file: str | None = None
    line: int | None = None
    flag_lines: Mapping[str, int] = field(default_factory=dict)
    flag_files: Mapping[str, str] = field(default_factory=dict)  # a flag given in another file (its --config YAML)
    config_file: str | None = None
    config_lines: Mapping[str, int] = field(default_factory=dict)

    def at(self, *fields: str, declared: bool = False) -> tuple[str | None, int | None]:
        """(file, line) of the first of ``fields`` found: an engine flag's line, else (or first, with
        ``declared``) the config key's line, else the command's line / the config file."""
        order = ("config", "flags") if declared else ("flags", "config")
        for where in order:
            for f in fields:
                if where == "flags" and f in self.flag_lines and self.file is not None:
                    return self.flag_files.get(f, self.file), self.flag_lines[f]
                if where == "config" and self.config_file is not None:
                    for key in _DECLARED.get(f, (f,)):
                        if key in self.config_lines:
                            return self.config_file, self.config_lines[key]
        if self.file is not None:
            return self.file, self.line
        if self.config_file is not None:
            return self.config_file, self.config_lines.get("model") or None
        return None, None


class Findings:
    """Accumulates findings and which rules ran, applying severity overrides (``off`` drops a rule)."""

    def __init__(self, overrides: Mapping[str, str] | None = None):
        self.overrides = dict(overrides or {})
        self.items: list[GateFinding] = []
        self.ran: set[str] = set()
        self.skipped: dict[str, str] = {}
        self._seen: set[str] = set()
        self._refused: dict[str | None, dict[str, str]] = {}  # target -> refusal rule id -> what it says

    def refused(self, target: str | None) -> dict[str, str]:
        """The rules (REFUSES_START) that found the engine refusing to start ``target``, in the order
        found, each with the engine's own words (else the finding's message); empty: it starts."""
        return dict(self._refused.get(target, {}))

    def ran_rules(self, *rule_ids: str) -> None:
        self.ran.update(rule_ids)

    def skip(self, rule_id: str, reason: str) -> None:
        self.skipped.setdefault(rule_id, reason)

    def add(self, rule_id: str, message: str, *, subject: str, file: str | None = None, line: int | None = None,
            target: str | None = None, engine_message: str | None = None, severity: Severity | None = None) -> None:
        """``severity``: this finding's default when it is not the rule's (QA401 without a declared accuracy
        policy is a note); a severity set under ``rules:`` wins over both."""
        rule = RULE_BY_ID[rule_id]
        self.ran.add(rule_id)
        sev = cast("Severity | Literal['off']", self.overrides.get(rule_id, severity or rule.severity))
        if sev == "off":
            return
        if rule_id in REFUSES_START:  # counted even when the same finding was reported for another target
            self._refused.setdefault(target, {}).setdefault(rule_id, " ".join((engine_message or message).split()))
        fp = fingerprint(rule_id, subject)
        if fp in self._seen:  # the same thing reported twice (two flags on one line): once is enough
            return
        self._seen.add(fp)
        self.items.append(GateFinding(
            rule_id=rule_id, rule=rule.name, family=rule.family, severity=sev, title=rule.title,
            message=" ".join(message.split()), file=file, line=line, subject=subject, fingerprint=fp, target=target,
            engine_message=engine_message, help_uri=rule.help_uri,
        ))

    def statuses(self, suppressed: Iterable[GateFinding] = ()) -> list[RuleStatus]:
        active: dict[str, int] = {}
        for f in self.items:
            active[f.rule_id] = active.get(f.rule_id, 0) + 1
        base: dict[str, int] = {}
        for f in suppressed:
            base[f.rule_id] = base.get(f.rule_id, 0) + 1
        out = []
        for r in RULES:
            sev = cast("Severity | Literal['off']", self.overrides.get(r.id, r.severity))
            if sev == "off":
                out.append(RuleStatus(rule_id=r.id, rule=r.name, severity=r.severity, status="off",
                                      reason="turned off in quantadvise.yaml (rules:)"))
                continue
            n, b = active.get(r.id, 0), base.get(r.id, 0)
            status: Literal["fail", "pass", "skipped"]
            if n:
                status, reason = "fail", ""
            elif r.id in self.ran or b:
                status, reason = "pass", (f"{plural(b, 'finding')} in the baseline" if b else "")
            else:
                status, reason = "skipped", self.skipped.get(r.id, "not applicable to this deployment")
            out.append(RuleStatus(rule_id=r.id, rule=r.name, severity=sev, status=status,
                                  findings=n, baselined=b, reason=reason))
        return out


def split_baseline(findings: list[GateFinding], known: set[str]) -> tuple[list[GateFinding], list[GateFinding]]:
    """(new findings, findings whose fingerprint is in the baseline)."""
    new = [f for f in findings if f.fingerprint not in known]
    old = [f for f in findings if f.fingerprint in known]
    return new, old


def sort_findings(findings: list[GateFinding]) -> list[GateFinding]:
    return sorted(findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.rule_id, f.file or "", f.line or 0,
                                           f.subject))




def baseline_document(findings: list[GateFinding]) -> dict[str, object]:
    """What ``--write-baseline`` records: every finding's fingerprint (what ``--baseline`` reads),
    with its rule, subject and message for the reader."""
    from ..results import SCHEMA_VERSION

    return {"schema_version": SCHEMA_VERSION, "tool": "quantadvise check",
            "note": "findings accepted on purpose: `quantadvise check --baseline FILE` ignores these fingerprints",
            "findings": [{"fingerprint": f.fingerprint, "rule_id": f.rule_id, "subject": f.subject,
                          "message": f.message} for f in findings]}
