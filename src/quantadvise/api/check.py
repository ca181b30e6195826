"""``check``: the CI gate over a deployment repository, and ``check --init``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import catalog
from ..errors import InputError
from ..hardware import GPU
from ..scheme import Scheme, TensorQuant
from .accuracy import accuracy
from .artifacts import read_deployment
from .common import get_gpu, load_model, load_profiles
from .inspect import inspect
from .recommend import recommend

if TYPE_CHECKING:
    from ..artifacts.scan import EngineInvocation
    from ..gate.config import DeploymentConfig, LoadedConfig
    from ..gate.rules import Findings, GateResult, InitResult, TargetReport


def check(
    paths: str | Path | list[str | Path] | None = None,
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
) -> GateResult:
    """The CI gate: check every engine command found under ``paths`` (shell scripts, Dockerfiles,
    Kubernetes manifests, Helm values, compose files) against the deployment description
    (``quantadvise.yaml``, ``[tool.quantadvise]`` or ``config``) and the rules QA1xx-QA5xx.

    Keyword values override the description (as the CLI flags do). ``paths`` default to the
    description's ``deployment:`` list, else its folder, else ``cwd``. With no engine command found,
    the description alone is checked. ``baseline`` suppresses findings whose fingerprint (rule +
    subject) it holds; ``write_baseline`` records every current finding there (all then suppressed).
    Returns a :class:`~quantadvise.gate.GateResult`; ``exit_code(fail_on, exit_zero)`` is 0 or 1.
    """
    import json
    import os

    from ..errors import ConfigError
    from ..gate import rules as gate
    from ..gate.config import (
        DeploymentConfig,
        LoadedConfig,
        find_config,
        load_config,
        with_flags,
    )

    root = Path(cwd) if cwd is not None else Path.cwd()
    rel = _relative_to(root)
    if isinstance(config, DeploymentConfig):
        loaded = LoadedConfig(config, None, {}, str(root))
    elif isinstance(config, dict):
        from ..gate.config import validate

        loaded = LoadedConfig(validate(config, "config"), None, {}, str(root))
    else:
        found = Path(config) if config is not None else (find_config(root) if discover else None)
        if found is not None and not found.is_absolute():
            found = root / found
        loaded = load_config(found, rel(found)) if found is not None else LoadedConfig(DeploymentConfig(), None, {},
                                                                                     str(root))
    flags = {"model": model, "gpu": gpu, "gpus": gpus, "engine": engine, "engine_version": engine_version,
             "concurrency": concurrency, "ctx": ctx, "quantization": quantization, "kv_cache_dtype": kv_cache_dtype,
             "task": task, "profile": str(profile) if profile is not None else None, "fail_on": fail_on}
    if model is not None:  # a --model path is relative to the working directory, not the config file
        m = Path(model).expanduser()
        flags["model"] = str(m if m.is_absolute() or not (root / m).exists() else root / m)
    loaded = with_flags(loaded, flags)
    cfg = loaded.config

    # the artifacts
    if paths:
        given = [paths] if isinstance(paths, str | Path) else list(paths)
        scan_paths = [Path(p) if Path(p).is_absolute() else root / p for p in given]
    elif cfg.deployment:
        scan_paths = [Path(loaded.path(p)) for p in cfg.deployment]
        for i, (p, raw) in enumerate(zip(scan_paths, cfg.deployment, strict=True)):
            if not p.exists():
                raise ConfigError(_at(loaded, f"deployment.{i}", f"no such file or directory: {raw}"),
                                  field="deployment")
    else:
        scan_paths = [Path(loaded.base_dir)]
    # relative to the working directory when inside it, so the reader's own errors name short paths
    here = Path.cwd().resolve()
    scan_args = [Path(os.path.relpath(p, here)) if p.resolve().is_relative_to(here) else p for p in scan_paths]
    scan = read_deployment(scan_args, env=env)
    invocations = list(scan.invocations)
    if not invocations and cfg.model is None:
        where = ", ".join(rel(p) for p in scan_paths)
        raise InputError(
            f"nothing to check: no engine command (vllm serve, python -m sglang.launch_server ...) found in {where}, "
            "and no model declared",
            hint="name the deployment files, set model: in quantadvise.yaml or pass --model "
                 "(`quantadvise check --init` writes a starter)", field="paths")
    if cfg.gpu is None:
        raise InputError("no GPU declared: the engine checks, memory and speed depend on it",
                         hint="set gpu: in quantadvise.yaml or pass --gpu (h100, a100-80gb, l4 ...)", field="gpu")
    g = _declared(loaded, "gpu", lambda: get_gpu(cfg.gpu))  # type: ignore[arg-type]

    out = gate.Findings(cfg.rules)
    notes: list[str] = []
    warnings = [w.replace(str(root) + "/", "") for w in scan.warnings if not any(w in i.warnings for i in invocations)]

    # accuracy evidence: one pair for the repository
    evidence = _gate_evidence(loaded, out, rel, notes)
    models: dict[str, Any] = {}  # each model's config read once per check
    targets = [
        _gate_target(inv, loaded, root, rel, g, out, engine_version_flag=engine_version, notes=notes, models=models)
        for inv in (invocations or [None])
    ]

    # the baseline
    findings = gate.sort_findings(out.items)
    base_path = Path(baseline) if baseline is not None else (Path(loaded.path(cfg.baseline)) if cfg.baseline else None)
    if base_path is not None and not base_path.is_absolute():
        base_path = root / base_path
    # writing a baseline accepts everything anyway: the old one need not exist (first adoption)
    known = _read_baseline(base_path) if base_path is not None and write_baseline is None else set()
    active, suppressed = gate.split_baseline(findings, known)
    written = None
    if write_baseline is not None:
        wpath = Path(write_baseline) if Path(write_baseline).is_absolute() else root / write_baseline
        doc = {"schema_version": gate.SCHEMA_VERSION, "tool": "quantadvise check",
               "note": "findings accepted on purpose: `quantadvise check --baseline FILE` ignores these fingerprints",
               "findings": [{"fingerprint": f.fingerprint, "rule_id": f.rule_id, "subject": f.subject,
                             "message": f.message} for f in findings]}
        try:
            wpath.parent.mkdir(parents=True, exist_ok=True)
            wpath.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write the baseline {wpath}: {exc.strerror or exc}",
                             field="write_baseline") from None
        written = rel(wpath)
        active, suppressed = [], findings
    fail = cfg.fail_on or "error"
    floor = gate.SEVERITY_RANK[fail]
    return gate.GateResult(
        passed=not any(gate.SEVERITY_RANK[f.severity] >= floor for f in active), fail_on=fail,
        config_file=loaded.file, paths=[rel(p) for p in scan_paths],
        files_scanned=[rel(f) for f in scan.files_scanned], targets=targets, findings=active, suppressed=suppressed,
        rules=out.statuses(suppressed), accuracy=evidence,
        baseline_file=rel(base_path) if base_path is not None else None, baseline_written=written,
        notes=list(dict.fromkeys(notes)), warnings=list(dict.fromkeys(warnings)),
    )


def check_init(
    path: str | Path | None = None,
    paths: str | Path | list[str | Path] | None = None,
    *,
    force: bool = False,
    cwd: str | Path | None = None,
) -> InitResult:
    """Write a commented starter ``quantadvise.yaml`` (at ``path``, default ./quantadvise.yaml), filled
    in from the first engine command found under ``paths``; refuses to overwrite without ``force``."""
    from ..gate import rules as gate
    from ..gate.config import parse_yaml_config, starter_config

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
    values: dict[str, Any] = {}
    if paths:
        given = [paths] if isinstance(paths, str | Path) else list(paths)
        scan_paths = [Path(p) if Path(p).is_absolute() else root / p for p in given]
        scan = read_deployment(scan_paths)
        import os

        values["deployment"] = [Path(os.path.relpath(p, target.parent)).as_posix() for p in scan_paths]
        if scan.invocations:
            inv = scan.invocations[0]
            values["engine"] = inv.engine
            if inv.engine_version:
                values["engine_version"] = inv.engine_version
            if inv.model and "$" not in inv.model:
                values["model"] = inv.model
            if inv.max_num_seqs:
                values["concurrency"] = inv.max_num_seqs
            if inv.max_model_len:
                values["ctx"] = inv.max_model_len
            tp, pp = inv.tensor_parallel_size or 1, inv.pipeline_parallel_size or 1
            values["gpus"] = tp * pp
            if inv.kv_cache_dtype:
                values["kv_cache_dtype"] = inv.kv_cache_dtype
    text = starter_config(values)
    parse_yaml_config(text, str(target))  # the starter must itself be valid
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {target}: {exc.strerror or exc}", field="init") from None
    return gate.InitResult(path=_relative_to(root)(target), overwritten=existed, prefilled=values, text=text)


def _relative_to(root: Path) -> Any:
    """A path as the report shows it: relative to ``root`` (POSIX separators) when inside it."""
    import os

    base = root.resolve()

    def rel(p: str | Path) -> str:
        q = Path(p)
        q = (q if q.is_absolute() else Path.cwd() / q).resolve()
        try:
            r = Path(os.path.relpath(q, base))
        except (OSError, ValueError):  # another drive
            return str(q)
        return r.as_posix() if r.parts[:3].count("..") < 3 else str(q)  # "../pyproject.toml", not "../../../etc/x"

    return rel


def _at(loaded: LoadedConfig, key: str, message: str) -> str:
    """``file: line N: key 'x': message`` for a value from the configuration file."""
    line = loaded.lines.get(key)
    if loaded.file is not None and line is not None:
        return f"{loaded.file}: line {line}: key '{key}': {message}"
    return f"{key.replace('_', '-')}: {message}"


def _declared(loaded: LoadedConfig, key: str, fn: Any) -> Any:
    """Resolve a declared name (GPU, scheme, KV dtype, engine release); a bad one names its line."""
    from ..errors import ConfigError, QuantAdviseError

    try:
        return fn()
    except QuantAdviseError as exc:
        if loaded.file is not None and key in loaded.lines:
            raise ConfigError(_at(loaded, key, str(exc)), field=key) from None
        raise


def _read_baseline(path: Path) -> set[str]:
    import json

    from ..errors import ConfigError

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the baseline {path}: {exc.strerror or exc}",
                          hint="create it with `quantadvise check --write-baseline FILE`") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: line {exc.lineno}: invalid JSON: {exc.msg}") from None
    items = doc.get("findings") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("fingerprint"), str)
                                              for i in items):
        raise ConfigError(f"{path}: key 'findings': expected a list of objects with a 'fingerprint' "
                          "(written by `quantadvise check --write-baseline`)")
    return {i["fingerprint"] for i in items}


def _gate_evidence(loaded: LoadedConfig, out: Findings, rel: Any, notes: list[str]) -> list[Any]:
    from ..errors import ConfigError
    from ..evals.stats import AccuracyThresholds
    from ..gate import rules as gate

    a = loaded.config.accuracy
    if a is None:
        out.skip("QA402", "no accuracy evidence declared (accuracy: in quantadvise.yaml)")
        out.skip("QA403", "no accuracy evidence declared")
        return []
    for key in ("baseline", "quantized"):
        p = Path(loaded.path(getattr(a, key)))
        if not p.exists():
            raise ConfigError(_at(loaded, f"accuracy.{key}", f"no such file or directory: {getattr(a, key)}"),
                              field=f"accuracy.{key}")
    thresholds = AccuracyThresholds(**a.limits())
    per_task = {t: AccuracyThresholds(**lim.limits()) for t, lim in a.tasks.items()}
    if thresholds.empty and all(t.empty for t in per_task.values()):
        thresholds = AccuracyThresholds(max_delta_drop=0.01)
        notes.append("accuracy: no thresholds set; checking the default max_delta_drop of 1 percentage point")
    rep = accuracy(loaded.path(a.baseline), loaded.path(a.quantized), metric=a.metric, filter=a.filter,
                   confidence=a.confidence, thresholds=thresholds, per_task=per_task or None)
    notes.extend(f"accuracy: {w}" for w in rep.warnings)
    files = {t.task: rel(t.quant_file) for t in rep.tasks}
    gate.accuracy_findings(out, rep.checks, files, loaded.file, loaded.lines)
    failed: dict[str, list[str]] = {}
    for c in rep.checks:
        if c.status == "fail":
            failed.setdefault(c.task, []).append(c.check)
    return [gate.TaskEvidence(task=t.task, n=t.n, base_accuracy=t.base_accuracy, quant_accuracy=t.quant_accuracy,
                              delta=t.delta, delta_ci_low=t.delta_ci_low, delta_ci_high=t.delta_ci_high,
                              flip_rate=t.flip_rate, kl_mean_nats=t.kl.mean_nats if t.kl else None,
                              failed=failed.get(t.task, [])) for t in rep.tasks]


_GATE_FIELDS = ("model", "quantization", "kv_cache_dtype", "dtype", "max_num_seqs", "max_model_len",
                "tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization")
_TORCH_NAMES = {"half": "float16", "float16": "float16", "fp16": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16",
                "float": "float32", "float32": "float32", "fp32": "float32"}


def _unresolved(inv: EngineInvocation) -> dict[str, str]:
    """Flags that matter whose value is a run-time reference (``$MODEL``, ``$(cat f)``)."""
    import re

    return {name: inv.raw[name] for name in _GATE_FIELDS
            if name in inv.raw and re.search(r"\$[{(\w]|`", inv.raw[name])}


def _nearest_version(versions: list[str], wanted: str) -> str:
    import re

    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", v)[:3])

    older = [v for v in versions if key(v) <= key(wanted)]
    return max(older, key=key) if older else min(versions, key=key)


def _online_flag(engine: Any, declared: str | None) -> str | None:
    """The --quantization a declaration implies for an unquantized checkpoint (online quantization),
    when there is no engine command to read it from."""
    from ..errors import QuantAdviseError

    if declared is None:
        return None
    name = declared.strip().lower()
    m = engine.method(name)
    if engine.shorthand(name) is not None or (m is not None and m.kind in ("online", "checkpoint_or_online")):
        return name
    try:
        online = catalog.scheme_preset(name).deploy.online
    except QuantAdviseError:
        return None
    return online if online and (engine.shorthand(online) is not None or engine.method(online) is not None) else None


def _served_scheme(ck: Any, res: Any, notes: list[str]) -> tuple[Scheme | None, str, str]:
    """(scheme the engine runs, its id, where that comes from)."""
    from ..errors import QuantAdviseError

    if ck is not None and ck.is_quantized:
        groups = [grp for grp in ck.groups if grp.quantizes_weights]
        if len({grp.preset or grp.name for grp in groups}) > 1:
            notes.append(f"the checkpoint has {len(groups)} quantized config groups; the first ({groups[0].name}) is "
                         "priced and sized")
        grp = groups[0]
        where = f"the checkpoint ({ck.quant_method})"
        if grp.preset:
            return catalog.get_scheme(grp.preset), grp.preset, where
        try:
            s = grp.scheme(catalog.layouts().get(grp.layout) if grp.layout else None)
        except (ValueError, QuantAdviseError):
            return None, grp.weights.describe() if grp.weights else grp.name, where
        return s, s.id, where
    if res.resolved_method is not None:
        where = f"--quantization {res.user_quantization} (quantized online from 16-bit weights)"
        try:
            preset = catalog.scheme_preset(res.resolved_method)
        except QuantAdviseError:
            notes.append(f"'{res.resolved_method}' has no scheme preset: not priced or sized as a scheme")
            return None, res.resolved_method, where
        return catalog.scheme_from_preset(preset), preset.id, where
    return catalog.get_scheme("bf16"), "bf16", "the checkpoint (no quantization_config)"


def _scheme_bits(scheme: Scheme | None, kv: TensorQuant | None) -> float | None:
    roles = (scheme.weight, scheme.activation) if scheme is not None else ()
    ts = [t for t in roles if t is not None and t.is_quantized]
    if kv is not None and kv.is_quantized:
        ts.append(kv)
    return min((t.bits for t in ts), default=None)


def _gate_target(inv: EngineInvocation | None, loaded: LoadedConfig, root: Path, rel: Any, g: GPU, out: Findings, *,
                 engine_version_flag: str | None, notes: list[str], models: dict[str, Any]) -> TargetReport:
    """Resolve one engine command (or the declaration alone) and run every rule on it."""
    import re

    from ..advisor.tree import predict as price
    from ..checkpoint.dialects import SIDECARS, parse_checkpoint
    from ..errors import ConfigError, QuantAdviseError
    from ..gate import rules as gate
    from ..hub import read_sidecar, resolve_model
    from ..kvcache import bytes_per_token, sequence_bytes
    from ..perf.profiles import resolve as resolve_eff
    from ..perf.step import check_tensor_parallel
    from ..sizing import size_model
    from ..workload import parse_workload

    cfg = loaded.config
    tnotes: list[str] = []
    assumptions: list[str] = []
    if inv is not None:
        file = rel(inv.file)
        site = gate.Site(key=f"{file}#{inv.context or inv.engine}",
                         label=f"{file}:{inv.line}" + (f" ({inv.context})" if inv.context else ""), file=file,
                         line=inv.line, flag_lines=dict(inv.flag_lines), config_file=loaded.file,
                         config_lines=dict(loaded.lines))
        source = inv.source
    else:
        site = gate.Site(key=f"{loaded.file or 'command line'}#declared",
                         label=f"{loaded.file} (declared; no engine command found)" if loaded.file else
                         "the command-line declaration", config_file=loaded.file, config_lines=dict(loaded.lines))
        source = "config" if loaded.file else "flags"
        notes.append("no engine command found: the declaration alone is checked (engine flags as declared)")

    # the engine release
    name = inv.engine if inv is not None else (cfg.engine or "vllm")
    versions = catalog.engine_versions(name)
    if engine_version_flag is not None:
        version, vfrom = engine_version_flag, "--engine-version"
    elif inv is not None and inv.engine_version:
        version, vfrom = inv.engine_version, f"the image tag / pinned package in {site.file}"
    elif cfg.engine_version is not None:
        version, vfrom = cfg.engine_version, loaded.file or "--engine-version"
    else:
        version, vfrom = versions[-1], "the newest release on file"
        assumptions.append(f"engine: {name} {version}, the newest release on file (no version declared or in the "
                           "image)")
    if version.removeprefix("v") not in versions and vfrom.startswith("the image"):
        chosen = _nearest_version(versions, version)
        out.add("QA100", f"{name} {version} ({vfrom}) is not on file; checked against {name} {chosen}, the closest "
                f"release on file (on file: {', '.join(versions)})", subject=f"{site.key}|engine-version",
                file=site.file, line=site.line, target=site.label)
        version, vfrom = chosen, f"the closest release on file to {version}"
    else:
        out.ran_rules("QA100")
    eng = _declared(loaded, "engine_version", lambda: catalog.get_engine(name, version))

    # the model
    declared_model = cfg.model
    observed = inv.model if inv is not None and inv.model and "model" not in _unresolved(inv) else None
    if declared_model is not None:
        local = Path(loaded.path(declared_model)) if "model" in loaded.lines else Path(declared_model)
        model_ref = str(local) if local.exists() else declared_model
        model_from = f"{loaded.file}" if "model" in loaded.lines else "--model"
        if observed is not None and not local.exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", observed) \
                and re.fullmatch(r"[\w.-]+/[\w.-]+", declared_model):
            gate.model_drift(out, site, declared=declared_model, served=observed)
        elif observed is not None:
            out.ran_rules("QA504")
    elif observed is not None:
        model_ref, model_from = observed, f"{site.file}:{inv.flag_lines.get('model', inv.line)}"  # type: ignore[union-attr]
    else:
        raise InputError(f"{site.label}: no model to check (the command's model is "
                         f"{inv.raw.get('model', 'missing') if inv is not None else 'missing'})",
                         hint="set model: in quantadvise.yaml (a Hub id or a local copy of its config.json) or pass "
                              "--model",
                         field="model")
    if model_ref not in models:
        if declared_model is None and inv is not None and model_ref.startswith(("/", "./", "~")) \
                and not Path(model_ref).expanduser().exists():
            raise ConfigError(f"{site.file}: line {inv.flag_lines.get('model', inv.line)}: key 'model': "
                              f"'{model_ref}' is a path inside the container, not on this machine",
                              hint="set model: in quantadvise.yaml to its Hub id or a local copy of its config.json",
                              field="model")
        src, cfg_json = _declared(loaded, "model", lambda: resolve_model(model_ref))
        if not isinstance(cfg_json, dict):
            raise ConfigError(f"{src.location}: expected a JSON object")
        side = {n: d for n in SIDECARS if (d := read_sidecar(src, n)) is not None}
        models[model_ref] = (src, cfg_json, side)
    src, cfg_json, side = models[model_ref]
    if inv is not None and inv.dtype and inv.dtype.lower() != "auto":
        cfg_json = {**cfg_json, "torch_dtype": _TORCH_NAMES.get(inv.dtype.lower(), inv.dtype)}

    # what the engine does with it
    ck0 = parse_checkpoint(cfg_json, side) if ("model_type" in cfg_json or "text_config" in cfg_json) else None
    if inv is not None:
        q_flag, kv_flag = inv.quantization, inv.kv_cache_dtype
    else:
        q_flag = _online_flag(eng, cfg.quantization) if ck0 is None or not ck0.is_quantized else None
        kv_flag = None
        if cfg.kv_cache_dtype is not None:
            try:
                d = catalog.kv_preset(cfg.kv_cache_dtype).deploy
                kv_flag = (d.vllm_kv_cache_dtype if name == "vllm" else d.sglang_kv_cache_dtype) or cfg.kv_cache_dtype
            except QuantAdviseError:
                kv_flag = cfg.kv_cache_dtype
    rep = inspect(cfg_json, engines=f"{name}=={eng.version}", gpu=g.id, quantization=q_flag, kv_cache_dtype=kv_flag,
                  sidecars=side)
    res, ck = rep.engines[0], rep.checkpoint
    tnotes.extend(gate.engine_findings(out, site, res.findings, res.label))
    if inv is not None:
        gate.artifact_findings(out, site, inv.warnings, _unresolved(inv))
    arch = load_model(cfg_json)[0] if rep.model.get("architecture") else None
    if arch is None:
        tnotes.append("the model's config.json has no architecture (model_type): memory and speed are not checked")

    # parallelism
    tp = (inv.tensor_parallel_size or 1) if inv is not None else (cfg.gpus or 1)
    pp = (inv.pipeline_parallel_size or 1) if inv is not None else 1
    split_error = None
    if arch is not None:
        try:
            check_tensor_parallel(arch, g, tp)
        except QuantAdviseError as exc:
            split_error = exc.message.replace(f"--gpus {tp}", f"tensor-parallel-size {tp}")
    gate.parallelism_findings(out, site, tp=tp, pp=pp, gpus_given=inv.gpu_count if inv is not None else None,
                              split_error=split_error)

    # what is served
    scheme, scheme_id, scheme_from = _served_scheme(ck, res, tnotes)
    kv_served = res.kv_cache_dtype_resolved or res.kv_cache_dtype or "auto"
    try:
        kvp = catalog.kv_preset(kv_served)
        kv_id, kv_t = kvp.id, (kvp.kv_cache if kvp.kv_cache.is_quantized else None)
    except QuantAdviseError:
        kv_id, kv_t = kv_served, None
        tnotes.append(f"KV cache dtype '{kv_served}' has no preset: sized as 16-bit")
    kv_from = (f"--kv-cache-dtype {kv_flag}" if kv_flag and kv_flag != "auto" else
               "'auto' with this checkpoint" if kv_id != "kv-bf16" else "--kv-cache-dtype auto (the default)")
    declared_scheme = None
    if cfg.quantization is not None:
        declared = _declared(loaded, "quantization", lambda: catalog.get_scheme(cfg.quantization))  # type: ignore[arg-type]
        declared_scheme = declared.id
        if scheme is not None:
            gate.scheme_drift(out, site, declared_id=declared.id, declared=declared, served_id=scheme_id, served=scheme,
                              served_from=scheme_from)
    else:
        out.skip("QA501", "no quantization declared")
        out.skip("QA502", "no quantization declared")
    declared_kv = None
    if cfg.kv_cache_dtype is not None:
        declared_kv = _declared(loaded, "kv_cache_dtype", lambda: catalog.kv_preset(cfg.kv_cache_dtype)).id  # type: ignore[arg-type]
        gate.kv_drift(out, site, declared=declared_kv, served=kv_id, served_from=kv_from,
                      declared_as=cfg.kv_cache_dtype)
    else:
        out.skip("QA503", "no kv_cache_dtype declared")

    # the workload
    w_cfg = cfg.workload
    conc = w_cfg.concurrency or (inv.max_num_seqs if inv is not None else None)
    if conc is None:
        conc = 1
        assumptions.append("concurrency: 1 (declare workload.concurrency, or set --max-num-seqs)")
    elif w_cfg.concurrency is None:
        assumptions.append(f"concurrency: {conc}, the engine's --max-num-seqs (declare workload.concurrency)")
    mml, mml_from = None, None
    if inv is not None and inv.max_model_len is not None:
        mml, mml_from = inv.max_model_len, f"--max-model-len at line {inv.flag_lines.get('max_model_len')}"
    elif inv is not None and arch is not None and arch.max_position_embeddings and "max_model_len" not in inv.raw:
        mml, mml_from = arch.max_position_embeddings, "the model's max_position_embeddings: no --max-model-len"
    ctx = w_cfg.ctx
    if ctx is None and w_cfg.prompt is None and w_cfg.output is None:
        if inv is not None and inv.max_model_len is not None:
            ctx = inv.max_model_len
            assumptions.append(f"context: {ctx:,} tokens per sequence, the engine's --max-model-len (every request "
                               "at the longest; declare workload.ctx)")
        else:
            ctx = 2048
            assumptions.append("context: 2,048 tokens per sequence (declare workload.ctx)")
    util = (inv.gpu_memory_utilization if inv is not None else None) or cfg.gpu_memory_utilization
    if util is None:
        util = 0.9
        assumptions.append("gpu-memory-utilization: 0.9, the engine default")
    reserve_gb = cfg.reserve_gb if cfg.reserve_gb is not None else 2.0
    if inv is not None:
        gate.workload_drift(out, site, concurrency=w_cfg.concurrency, max_num_seqs=inv.max_num_seqs, ctx=w_cfg.ctx,
                            max_model_len=mml, max_model_len_source=mml_from, gpus=cfg.gpus, parallel=tp * pp)
        gate.engine_drift(out, site, declared_engine=cfg.engine, served_engine=name,
                          declared_version=cfg.engine_version if "engine_version" in loaded.lines else None,
                          served_version=inv.engine_version, version_from=f"the image tag in {site.file}")
    else:
        out.skip("QA505", "no engine command")
        out.skip("QA506", "no engine command")
    prof = cfg.profile
    profile_path = (loaded.path(prof) if "profile" in loaded.lines else str(root / prof)) if prof else None
    wdata = {"model": str(src.location) if src.kind == "local" else model_ref, "gpu": g.id, "gpus": tp,
             "engine": name, "engine_version": eng.version, "batch": conc, "ctx": ctx, "prompt": w_cfg.prompt,
             "output": w_cfg.output, "mode": w_cfg.mode, "task": w_cfg.task, "memory_utilization": util,
             "reserve_gb": reserve_gb, "profile": profile_path}
    wdata = {k: v for k, v in wdata.items() if v is not None}
    w = parse_workload(wdata, where=f"{loaded.file or 'command line'}: workload")

    # memory
    mem = None
    if arch is not None and (scheme is not None or rep.size is not None):
        if ck is not None and ck.is_quantized and rep.size is not None:
            wb, wsrc = rep.size.total_bytes, "the checkpoint's tensors"
        elif scheme is not None:
            wb, wsrc = size_model(arch, scheme).total_bytes, f"{scheme_id} weights"
        else:
            wb, wsrc = rep.size.total_bytes, "the checkpoint's tensors"  # type: ignore[union-attr]
        mem = gate.memory_fit(
            gpu=g.id, gpus=tp * pp, gpu_memory_bytes=g.memory_bytes, memory_utilization=util,
            reserve_bytes_per_gpu=int(reserve_gb * 1024**3), weights_bytes=wb, weights_source=wsrc, kv_dtype=kv_id,
            kv_bytes_per_token=bytes_per_token(arch, kv_t), sequence_bytes=lambda n: sequence_bytes(arch, kv_t, n),
            concurrency=conc, kv_tokens_per_sequence=w.kv_tokens_per_sequence, max_model_len=mml,
            max_model_len_source=mml_from,
            kv_tokens_basis=("continuous batching holds sequences at every stage: prompt + half the output on "
                             "average, as `recommend` sizes it" if w.serving_mode == "continuous" else
                             "synchronous batches grow to the full context"),
        )
        gate.memory_findings(out, site, mem, engine=name, min_headroom=cfg.thresholds.min_memory_headroom)
    else:
        for rid in ("QA301", "QA302", "QA303", "QA304"):
            out.skip(rid, "no architecture or scheme to size")

    # speed
    perf = None
    if arch is not None and scheme is not None and split_error is None:
        try:
            profiles = load_profiles(False, profile_path)
            names = (g.id, g.name, *g.aliases)
            eff = resolve_eff(profiles, names, catalog.scheme_names(scheme.id) or (scheme.id,))
            dep = price(arch, g, w, scheme, eff, kv=kv_t, kv_name=kv_id)
            bf16 = catalog.get_scheme("bf16")
            base = price(arch, g, w, bf16, resolve_eff(profiles, names, catalog.scheme_names("bf16")), kv=kv_t,
                         kv_name=kv_id)
        except QuantAdviseError as exc:
            tnotes.append(f"speed not predicted: {exc}")
            dep = base = None
        if dep is not None and base is not None:
            rec = None
            try:
                rec = recommend(dict(wdata))
            except QuantAdviseError as exc:
                tnotes.append(f"no recommendation for this workload: {exc}")
            rec_tps = rec.performance.get("tokens_per_s") if rec is not None else None
            perf = gate.PerfCheck(
                scheme=scheme_id, kv_dtype=kv_id, tokens_per_s=dep.tokens_per_s, step_time_s=dep.step_time_s,
                bf16_tokens_per_s=base.tokens_per_s, speedup_vs_bf16=dep.tokens_per_s / base.tokens_per_s,
                recommended=rec.scheme_id if rec is not None else None,
                recommended_kv_dtype=rec.kv.get("dtype") if rec is not None else None,
                recommended_tokens_per_s=rec_tps, slowdown_vs_recommended=(rec_tps / dep.tokens_per_s - 1) if rec_tps
                else None, profile=dep.profile, mode=dep.mode, batch=dep.batch, model_note=dep.model_note,
            )
            gate.performance_findings(out, site, perf, max_slowdown=cfg.thresholds.max_slowdown_vs_recommended)
    if perf is None:
        out.skip("QA201", "speed not predicted (no architecture or scheme preset)")
        out.skip("QA202", "speed not predicted")

    # accuracy evidence for what is served
    bits = _scheme_bits(scheme, kv_t)
    if scheme is None and ck is not None and ck.groups and ck.groups[0].weight is not None:
        bits = ck.groups[0].weight.bits
    gate.evidence_required(out, site, scheme=scheme_id + (f" + {kv_id}" if kv_t is not None else ""), bits=bits,
                           below=cfg.thresholds.evidence_below_bits, evidence=cfg.accuracy is not None)

    return gate.TargetReport(
        label=site.label, file=site.file, line=site.line, source=source, context=inv.context if inv else None,
        engine=name, engine_version=eng.version, engine_version_from=vfrom, model=model_ref
        if src.kind != "local" else rel(model_ref), model_from=model_from, checkpoint=rep.summary,
        resolved_method=res.resolved_method, engine_status=res.status, scheme=scheme_id, scheme_from=scheme_from,
        declared_scheme=declared_scheme, kv_cache_dtype=kv_id, declared_kv_cache_dtype=declared_kv, gpu=g.id,
        gpus=tp * pp, concurrency=conc, ctx=w.context, mode=w.serving_mode, memory=mem, performance=perf,
        assumptions=assumptions, notes=list(dict.fromkeys(tnotes + list(rep.notes))),
    )
