"""What the resolver reports: one :class:`Finding` (a refusal, warning or note in the engine's own words)
and the :class:`Collector` the resolver and its checks (``config_checks``, ``kv_checks``) add them to."""

from typing import Any

from ..results import Out
from .data import EngineData, Severity


class Finding(Out):
    """One refusal, warning or note an engine gives, with the engine's own words.

    ``kind`` is stable (the CI gate maps kinds to rule ids such as QA1xx); ``message`` is
    quantadvise's one-line explanation with the fix; ``engine_message`` is what the engine prints
    (None where the text is not on file)."""

    kind: str
    rule_id: str | None = None
    severity: Severity
    engine: str
    version: str
    subject: str | None = None
    message: str
    engine_message: str | None = None
    engine_exception: str | None = None
    source: str | None = None



class Collector:
    """What :func:`~.resolution.resolve` collects while it walks one checkpoint through one release: the
    findings in the engine's own words, the method the checkpoint names and the one it resolves to."""


    def __init__(self, engine: EngineData):
        self.engine = engine
        self.findings: list[Finding] = []
        self.checkpoint_method: str | None = None  # quant_method as the engine reads it
        self.resolved: str | None = None  # the method it resolves to

    @property
    def refused(self) -> bool:
        return any(f.severity == "error" for f in self.findings)

    def add(self, kind: str, severity: Severity, message: str, subject: str | None = None, **values: Any) -> None:
        msg = self.engine.message(kind)
        self.findings.append(Finding(
            kind=kind, severity=severity, engine=self.engine.engine, version=self.engine.version, subject=subject,
            message=message, engine_message=msg.render(**values) if msg else None,
            engine_exception=msg.exception if msg else None, source=msg.source if msg else None,
        ))
