"""``check --upgrade-to ENGINE@VERSION``: judge every deployment again on the target release and
report what changes (the comparison is :mod:`quantadvise.gate.upgrade`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import catalog
from ..wording import plural

if TYPE_CHECKING:
    from ..engines.invocation import EngineInvocation
    from ..gate.config import LoadedConfig
    from ..gate.findings import Findings
    from ..gate.result import TargetReport
    from ..gate.upgrade import UpgradeChange
    from ..hardware import GPU


def upgrade_check(spec: str, deployments: Sequence[EngineInvocation | None], targets: Sequence[TargetReport],
                  loaded: LoadedConfig, root: Path, rel: Any, gpu: GPU, out: Findings, notes: list[str],
                  models: dict[str, Any], warnings: list[str] | None = None) -> list[UpgradeChange]:
    """Each deployment of the target's engine judged on the target release (through the same
    pipeline as the pinned one, into a scratch collector); a QA112 finding for each that changes (an
    error for one the target refuses to start). A target not on file is judged as the closest release on
    file, said once in ``warnings``."""
    from ..engines.versions import parse_target
    from ..gate.findings import Findings
    from ..gate.upgrade import compare, kernel_coverage, report
    from .check_target import resolve_target

    engine, asked = parse_target(spec)
    choice = catalog.release(engine, asked)  # a release not on file: the closest, with one warning
    version = choice.version
    if choice.warning is not None and warnings is not None:
        warnings.append(f"--upgrade-to {spec.strip()}: {choice.warning}")
    changes: list[UpgradeChange] = []
    compared = 0
    pinned: set[str] = set()
    for inv, before in zip(deployments, targets, strict=True):
        if before.engine != engine:
            continue
        if before.engine_version == version:
            notes.append(f"--upgrade-to {engine}@{version}: {before.label} already runs {engine} {version}")
            continue
        scratch = Findings(loaded.config.rules)
        after = resolve_target(inv, loaded, root, rel, gpu, scratch, engine_version_flag=version, notes=[],
                               models=models)
        compared += 1
        pinned.add(before.engine_version)
        if not (_has_kernel_table(engine, before.engine_version) and _has_kernel_table(engine, version)):
            # a carried table is another release's selection logic: its kernels are not this upgrade's change
            before, after = (t.model_copy(update={"kernels": None}) for t in (before, after))
        change = compare(before, after, out.items, scratch.items)
        if change is not None:
            changes.append(change)
    report(changes, out)
    if compared:  # a kernel table is one release's own selection logic: none on file, no kernel compared
        releases = sorted(pinned | {version})
        has = {v: _has_kernel_table(engine, v) for v in releases}
        note = kernel_coverage(catalog.get_engine(engine, version).display_name,
                               [v for v in releases if not has[v]], [v for v in releases if has[v]])
        if note:
            notes.append(f"--upgrade-to {engine}@{version}: {note}")
    notes.append(f"--upgrade-to {engine}@{version}: {len(changes)} of {plural(compared, engine + ' deployment')} "
                 f"{'behaves' if len(changes) == 1 else 'behave'} differently on the target release (QA112)"
                 if compared else
                 f"--upgrade-to {engine}@{version}: no deployment runs another {engine} release")
    return changes


def _has_kernel_table(engine: str, version: str) -> bool:
    """Whether ``engine`` ``version`` has its own kernel table (catalog.kernel_table falls back to the
    nearest release's, which the upgrade gate must not compare as if it were this one's)."""
    table = catalog.kernel_table(engine, version)
    return table is not None and table.version == version
