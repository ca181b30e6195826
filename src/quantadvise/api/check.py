"""``check``: the CI gate over a deployment repository, and ``check --init``.

The I/O of the gate: find and read the configuration, scan the deployment files, read the accuracy
evidence and the baseline, write the baseline or the starter. Each deployment found is resolved and
judged in ``check_target.py`` (lookups) and ``gate/`` (the pure rules).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..catalog.resolve import get_gpu
from ..errors import InputError
from ..files import exists, expand, resolved
from .accuracy import accuracy
from .artifacts import read_deployment

if TYPE_CHECKING:
    from ..engines.invocation import EngineInvocation
    from ..gate.config import DeploymentConfig, LoadedConfig
    from ..gate.findings import Findings
    from ..gate.result import GateResult, InitResult, TaskEvidence


def check(
    paths: str | Path | Sequence[str | Path] | None = None,
    *,
    config: str | Path | DeploymentConfig | dict[str, Any] | None = None,
    discover: bool = True,
    model: str | None = None,
    gpu: str | None = None,
    gpus: int | None = None,
    engine: str | None = None,
    engine_version: str | None = None,
    concurrency: int | None = None,
    ctx: int | None = None,
    quantization: str | None = None,
    kv_cache_dtype: str | None = None,
    task: str | None = None,
    profile: str | Path | None = None,
    fail_on: str | None = None,
    baseline: str | Path | None = None,
    write_baseline: str | Path | None = None,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    upgrade_to: str | None = None,
) -> GateResult:
    """The CI gate: check every engine command found under ``paths`` (shell scripts, Dockerfiles,
    Kubernetes manifests, Helm values, compose files) against the deployment description
    (``quantadvise.yaml``, ``[tool.quantadvise]`` or ``config``) and the rules QA1xx-QA5xx.

    Keyword values override the description (as the CLI flags do). ``paths`` default to the
    description's ``deployment:`` list, else its folder, else ``cwd``. With no engine command found,
    the description alone is checked. ``baseline`` suppresses findings whose fingerprint (rule +
    subject) it holds; ``write_baseline`` records every current finding there (all then suppressed).
    ``upgrade_to`` (``vllm@0.33.0``, or the description's ``upgrade_to:``) judges every deployment of
    that engine again on the target release and reports each one whose verdict, method or warnings
    change (QA112).
    Returns a :class:`~quantadvise.gate.GateResult`; ``exit_code(fail_on, exit_zero)`` is 0 or 1.
    """
    import os

    from ..errors import ConfigError
    from ..gate.config import DeploymentConfig, LoadedConfig, validate, with_flags
    from ..gate.findings import Findings, baseline_document, sort_findings, split_baseline
    from ..gate.result import GateResult
    from ..gate.rules import SEVERITY_RANK
    from ..gate.target import ordinals, site_key
    from .check_config import baseline_text, find_config, load_config, read_baseline, write_text
    from .check_target import at, declared, resolve_target

    root = Path(cwd) if cwd is not None else Path.cwd()
    rel = _relative_to(root)
    if isinstance(config, DeploymentConfig):
        loaded = LoadedConfig(config, None, {}, str(root))
    elif isinstance(config, dict):
        loaded = LoadedConfig(validate(config, "config"), None, {}, str(root))
    else:
        found = Path(config) if config is not None else (find_config(root) if discover else None)
        if found is not None and not found.is_absolute():
            found = root / found
        loaded = load_config(found, rel(found)) if found is not None else LoadedConfig(DeploymentConfig(), None, {},
                                                                                     str(root))
    from ..inputs import check as check_number

    gpus, concurrency, ctx = check_number("gpus", gpus), check_number("concurrency", concurrency), check_number("ctx", ctx)
    flags = {"model": model, "gpu": gpu, "gpus": gpus, "engine": engine, "engine_version": engine_version,
             "concurrency": concurrency, "ctx": ctx, "quantization": quantization, "kv_cache_dtype": kv_cache_dtype,
             "task": task, "profile": str(profile) if profile is not None else None, "fail_on": fail_on}
    if model is not None:  # a --model path is relative to the working directory, not the config file
        m = expand(model)
        flags["model"] = str(m if m.is_absolute() or not exists(root / m) else root / m)
    loaded = with_flags(loaded, flags)
    cfg = loaded.config

    # the GPU first: without one nothing can be judged, so say so before reading any file
    if cfg.gpu is None:
        raise InputError("no GPU declared: the engine checks, memory and speed depend on it",
                         hint="set gpu: in quantadvise.yaml or pass --gpu (h100, a100-80gb, l4 ...)", field="gpu")
    g = declared(loaded, "gpu", lambda: get_gpu(cfg.gpu))

    # the artifacts
    if paths:
        given = [paths] if isinstance(paths, str | Path) else list(paths)
        scan_paths = [Path(p) if Path(p).is_absolute() else root / p for p in given]
    elif cfg.deployment:
        scan_paths = [Path(loaded.path(p)) for p in cfg.deployment]
        for i, (p, raw) in enumerate(zip(scan_paths, cfg.deployment, strict=True)):
            if not exists(p):
                raise ConfigError(at(loaded, f"deployment.{i}", f"no such file or directory: {raw}"),
                                  field="deployment")
    else:
        scan_paths = [Path(loaded.base_dir)]
    # relative to the working directory when inside it, so the reader's own errors name short paths
    here = resolved(Path.cwd())
    scan_args = [Path(os.path.relpath(p, here)) if resolved(p).is_relative_to(here) else p for p in scan_paths]
    scan = read_deployment(scan_args, env=env)
    invocations = list(scan.invocations)
    if not invocations and cfg.model is None:
        where = ", ".join(rel(p) for p in scan_paths)
        # which of the walk's budgets ran out (files, entries, bytes, seconds): its warning says
        after = next((w.split(" (in ")[0].removeprefix("the scan stopped ") for w in scan.warnings
                      if w.startswith("the scan stopped after ")), "early")
        cut = f" (the scan stopped {after}, in {rel(scan.stopped)})" if scan.stopped is not None else ""
        # a launch the readers saw but did not take (`vllm serve --help`, arguments to an unknown image)
        aside = next((s for s in scan.files_skipped if s.endswith(("not checked", "not a deployment", "not a launch"))),
                     None)
        raise InputError(
            f"nothing to check: no engine command (vllm serve, python -m sglang.launch_server ...) found in {where}"
            f"{cut}, and no model declared" + (f"; skipped {_rel_reason(rel, aside)}" if aside else ""),
            hint="name the deployment files, set model: in quantadvise.yaml or pass --model "
                 "(`quantadvise check --init` writes a starter)", field="paths")

    out = Findings(cfg.rules)
    notes: list[str] = [n.replace(str(root) + "/", "") for n in scan.notes]
    warnings = [w.replace(str(root) + "/", "") for w in scan.warnings if not any(w in i.warnings for i in invocations)]

    # accuracy evidence: one pair for the repository
    evidence = _evidence(loaded, out, rel, notes)
    models: dict[str, Any] = {}  # each model's config read once per check
    deployments: list[EngineInvocation | None] = [*invocations] or [None]  # None: the declaration alone
    nths = ordinals([site_key(inv, rel(inv.file)) if inv is not None else None for inv in deployments])
    on_line = ordinals([f"{rel(inv.file)}:{inv.line}" if inv is not None else None for inv in deployments])
    targets = [
        resolve_target(inv, loaded, root, rel, g, out, engine_version_flag=engine_version, notes=notes, models=models,
                       nth=nth, nth_on_line=k)
        for inv, nth, k in zip(deployments, nths, on_line, strict=True)
    ]
    upgrade = upgrade_to or cfg.upgrade_to
    if upgrade:
        from .upgrade import upgrade_check

        upgrade_check(upgrade, deployments, targets, loaded, root, rel, g, out, notes, models, warnings)
    else:
        out.skip("QA112", "no --upgrade-to (upgrade_to: in quantadvise.yaml) given")

    # the baseline
    findings = sort_findings(out.items)
    base_path = Path(baseline) if baseline is not None else (Path(loaded.path(cfg.baseline)) if cfg.baseline else None)
    if base_path is not None and not base_path.is_absolute():
        base_path = root / base_path
    # writing a baseline accepts everything anyway: the old one need not exist (first adoption)
    known = read_baseline(base_path) if base_path is not None and write_baseline is None else set()
    active, suppressed = split_baseline(findings, known)
    written = None
    if write_baseline is not None:
        wpath = Path(write_baseline) if Path(write_baseline).is_absolute() else root / write_baseline
        write_text(wpath, baseline_text(baseline_document(findings)), field="write_baseline")
        written = rel(wpath)
        active, suppressed = [], findings
    fail = cfg.fail_on or "error"
    floor = SEVERITY_RANK[fail]
    return GateResult(
        passed=not any(SEVERITY_RANK[f.severity] >= floor for f in active), fail_on=fail,
        config_file=loaded.file, paths=[rel(p) for p in scan_paths],
        files_scanned=[rel(f) for f in scan.files_scanned],
        files_skipped=[_rel_reason(rel, s) for s in scan.files_skipped], targets=targets, findings=active,
        suppressed=suppressed,
        rules=out.statuses(suppressed), accuracy=evidence,
        baseline_file=rel(base_path) if base_path is not None else None, baseline_written=written,
        notes=list(dict.fromkeys(notes)), warnings=list(dict.fromkeys(warnings)),
    )


def check_init(
    path: str | Path | None = None,
    paths: str | Path | Sequence[str | Path] | None = None,
    *,
    force: bool = False,
    cwd: str | Path | None = None,
) -> InitResult:
    """Write a commented starter ``quantadvise.yaml`` (at ``path``, default ./quantadvise.yaml), filled
    in from the first engine command found under ``paths`` (default: ``cwd``, as ``check`` scans it);
    refuses to overwrite without ``force``."""
    from ..gate.config import starter_caps, starter_config, starter_values
    from ..gate.result import InitResult
    from .check_config import parse_yaml_config, write_text

    root = Path(cwd) if cwd is not None else Path.cwd()
    target = Path(path) if path is not None else root / "quantadvise.yaml"
    if not target.is_absolute():
        target = root / target
    if target.suffix.lower() not in (".yaml", ".yml"):
        raise InputError(f"--init writes YAML: give a .yaml path, not {target.name} (in pyproject.toml, copy the keys "
                         "under [tool.quantadvise] by hand)", field="init")
    existed = target.exists()
    if existed and not force:
        raise InputError(f"{_relative_to(root)(target)} already exists; pass --force to overwrite it", field="init")
    import os

    # the paths `check` would scan without any: the working directory (the starter's folder by default)
    given = ([paths] if isinstance(paths, str | Path) else list(paths)) if paths else [root]
    scan_paths = [Path(p) if Path(p).is_absolute() else root / p for p in given]
    scan = read_deployment(scan_paths)
    deployment = [Path(os.path.relpath(p, target.parent)).as_posix() for p in scan_paths]
    first = scan.invocations[0] if scan.invocations else None
    values, caps = starter_values(first, deployment), starter_caps(first)
    text = starter_config(values, caps)
    parse_yaml_config(text, str(target))  # the starter must itself be valid
    write_text(target, text, field="init")
    return InitResult(path=_relative_to(root)(target), overwritten=existed, prefilled=values, text=text)


def _rel_reason(rel: Any, item: str) -> str:
    """``FILE: why`` with FILE shown as the report shows paths."""
    file, sep, why = item.partition(": ")
    return f"{rel(file)}{sep}{why}" if sep else item


def _relative_to(root: Path) -> Any:
    """A path as the report shows it: relative to ``root`` (POSIX separators) when inside it."""
    import os

    base = resolved(root)

    def rel(p: str | Path) -> str:
        q = Path(p)
        q = resolved(q if q.is_absolute() else Path.cwd() / q)
        try:
            r = Path(os.path.relpath(q, base))
        except (OSError, ValueError):  # another drive
            return str(q)
        return r.as_posix() if r.parts[:3].count("..") < 3 else str(q)  # "../pyproject.toml", not "../../../etc/x"

    return rel


def _evidence(loaded: LoadedConfig, out: Findings, rel: Any, notes: list[str]) -> list[TaskEvidence]:
    from ..errors import ConfigError
    from ..gate.accuracy import accuracy_findings, evidence_thresholds, task_evidence
    from .check_target import at

    a = loaded.config.accuracy
    if a is None:
        out.skip("QA402", "no accuracy evidence declared (accuracy: in quantadvise.yaml)")
        out.skip("QA403", "no accuracy evidence declared")
        return []
    for key in ("baseline", "quantized"):
        p = Path(loaded.path(getattr(a, key)))
        if not exists(p):
            raise ConfigError(at(loaded, f"accuracy.{key}", f"no such file or directory: {getattr(a, key)}"),
                              field=f"accuracy.{key}")
    thresholds, per_task, note = evidence_thresholds(a)
    if note:
        notes.append(note)
    from ..artifacts.evidence import Choice

    where = loaded.file or "the configuration"
    choice = Choice(filter=a.filter, metric=a.metric, tasks={t: (c.filter, c.metric) for t, c in a.tasks.items()},
                    how_task=f"accuracy.tasks.<task>.filter in {where}",
                    how_metric=f"accuracy.metric (or accuracy.tasks.<task>.metric) in {where}", strict=False)
    rep = accuracy(loaded.path(a.baseline), loaded.path(a.quantized), confidence=a.confidence, thresholds=thresholds,
                   per_task=per_task or None, choice=choice)
    notes.extend(f"accuracy: {w}" for w in rep.warnings)
    files = {t.task: rel(t.quant_file) for t in rep.tasks}
    accuracy_findings(out, rep.checks, files, loaded.file, loaded.lines)
    return task_evidence(rep)
