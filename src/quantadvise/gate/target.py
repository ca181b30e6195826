"""One deployment, derived and judged — pure.

``api/check.py`` finds the engine commands, reads the configuration, resolves the model, the engine
release, the schemes and the predictions (the I/O). This module decides, from those values:

- where the deployment's findings point (:func:`site_for`);
- which engine release it runs (:func:`choose_engine`, QA100 when the image names one not on file);
- which model it serves (:func:`choose_model`, QA504 when the command and the declaration disagree);
- the workload it is held to (:func:`deployed_workload`: concurrency, context, memory share —
  the declaration first, then the engine's own flags, then stated assumptions);
- every rule on it (:func:`judge`), returning its :class:`~quantadvise.gate.result.TargetReport`.

A new rule is a row in ``rules.py``, a function in its family's module and a call in :func:`judge`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import defaults
from ..scheme import Scheme, TensorQuant
from .accuracy import evidence_required
from .config import DeploymentConfig
from .drift import engine_drift, kv_drift, model_drift, scheme_drift, workload_drift
from .engine import artifact_findings, engine_findings, parallelism_findings
from .findings import Findings, Site
from .memory import memory_findings, memory_fit
from .result import MemoryFit, PerfCheck, TargetReport
from .speed import performance_findings

if TYPE_CHECKING:
    from ..artifacts.invocation import EngineInvocation
    from ..engines.resolution import EngineResolution
    from ..model import ModelArch

# the engine flags the gate reads; one whose value is a run-time reference cannot be checked
GATE_FIELDS = ("model", "quantization", "kv_cache_dtype", "dtype", "max_num_seqs", "max_model_len",
               "tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization")
TORCH_NAMES = {"half": "float16", "float16": "float16", "fp16": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16",
               "float": "float32", "float32": "float32", "fp32": "float32"}
_HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")


def unresolved(inv: EngineInvocation) -> dict[str, str]:
    """Flags that matter whose value is a run-time reference (``$MODEL``, ``$(cat f)``)."""
    return {name: inv.raw[name] for name in GATE_FIELDS
            if name in inv.raw and re.search(r"\$[{(\w]|`", inv.raw[name])}


def nearest_version(versions: list[str], wanted: str) -> str:
    """The newest release on file not newer than ``wanted`` (else the oldest on file)."""

    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", v)[:3])

    older = [v for v in versions if key(v) <= key(wanted)]
    return max(older, key=key) if older else min(versions, key=key)


def scheme_bits(scheme: Scheme | None, kv: TensorQuant | None) -> float | None:
    """The fewest bits any quantized tensor role of the served scheme (and KV cache) keeps."""
    roles = (scheme.weight, scheme.activation) if scheme is not None else ()
    ts = [t for t in roles if t is not None and t.is_quantized]
    if kv is not None and kv.is_quantized:
        ts.append(kv)
    return min((t.bits for t in ts), default=None)


def site_for(inv: EngineInvocation | None, file: str | None, config_file: str | None,
             config_lines: Mapping[str, int]) -> tuple[Site, str]:
    """(where the deployment's findings point, what kind of source it came from)."""
    if inv is not None and file is not None:
        site = Site(key=f"{file}#{inv.context or inv.engine}",
                    label=f"{file}:{inv.line}" + (f" ({inv.context})" if inv.context else ""), file=file,
                    line=inv.line, flag_lines=dict(inv.flag_lines), config_file=config_file,
                    config_lines=dict(config_lines))
        return site, inv.source
    site = Site(key=f"{config_file or 'command line'}#declared",
                label=f"{config_file} (declared; no engine command found)" if config_file else
                "the command-line declaration", config_file=config_file, config_lines=dict(config_lines))
    return site, "config" if config_file else "flags"


@dataclass(frozen=True)
class EngineChoice:
    name: str
    version: str
    source: str  # where the version came from, in words
    assumption: str | None = None


def choose_engine(inv: EngineInvocation | None, cfg: DeploymentConfig, *, versions: list[str],
                  version_flag: str | None, config_file: str | None, site: Site, out: Findings) -> EngineChoice:
    """The engine release the deployment runs: --engine-version, else the image tag / pinned package,
    else the declaration, else the newest on file. An image naming a release not on file is checked
    against the closest one on file (QA100)."""
    name = inv.engine if inv is not None else (cfg.engine or defaults.ENGINE)
    assumption = None
    if version_flag is not None:
        version, vfrom = version_flag, "--engine-version"
    elif inv is not None and inv.engine_version:
        version, vfrom = inv.engine_version, f"the image tag / pinned package in {site.file}"
    elif cfg.engine_version is not None:
        version, vfrom = cfg.engine_version, config_file or "--engine-version"
    else:
        version, vfrom = versions[-1], "the newest release on file"
        assumption = f"engine: {name} {version}, the newest release on file (no version declared or in the image)"
    if version.removeprefix("v") not in versions and vfrom.startswith("the image"):
        chosen = nearest_version(versions, version)
        out.add("QA100", f"{name} {version} ({vfrom}) is not on file; checked against {name} {chosen}, the closest "
                f"release on file (on file: {', '.join(versions)})", subject=f"{site.key}|engine-version",
                file=site.file, line=site.line, target=site.label)
        version, vfrom = chosen, f"the closest release on file to {version}"
    else:
        out.ran_rules("QA100")
    return EngineChoice(name, version, vfrom, assumption)


def choose_model(inv: EngineInvocation | None, declared: str | None, *, declared_is_local: bool,
                 declared_from: str, site: Site, out: Findings) -> tuple[str | None, str]:
    """(the model reference to check, where it came from): the declaration wins over the command;
    two different Hub ids are QA504. None when neither names one."""
    observed = inv.model if inv is not None and inv.model and "model" not in unresolved(inv) else None
    if declared is not None:
        if observed is not None and not declared_is_local and _HUB_ID.fullmatch(observed) \
                and _HUB_ID.fullmatch(declared):
            model_drift(out, site, declared=declared, served=observed)
        elif observed is not None:
            out.ran_rules("QA504")
        return declared, declared_from
    if observed is not None and inv is not None:
        return observed, f"{site.file}:{inv.flag_lines.get('model', inv.line)}"
    return None, ""


@dataclass
class DeployedWorkload:
    """What the deployment is held to, with the assumptions that filled the gaps."""

    concurrency: int
    ctx: int | None  # None: derived from prompt/output by the workload model
    max_model_len: int | None
    max_model_len_source: str | None
    memory_utilization: float
    reserve_gb: float
    tp: int
    pp: int
    assumptions: list[str] = field(default_factory=list)


def deployed_workload(inv: EngineInvocation | None, cfg: DeploymentConfig, arch: ModelArch | None) -> DeployedWorkload:
    """The declared workload, else the engine's flags, else the stated defaults."""
    assumptions: list[str] = []
    w_cfg = cfg.workload
    conc = w_cfg.batch or (inv.max_num_seqs if inv is not None else None)
    if conc is None:
        conc = 1
        assumptions.append("concurrency: 1 (declare workload.concurrency, or set --max-num-seqs)")
    elif w_cfg.batch is None:
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
            ctx = defaults.CONTEXT
            assumptions.append(f"context: {defaults.CONTEXT:,} tokens per sequence (declare workload.ctx)")
    util = (inv.gpu_memory_utilization if inv is not None else None) or cfg.gpu_memory_utilization
    if util is None:
        util = defaults.MEMORY_UTILIZATION
        assumptions.append(f"gpu-memory-utilization: {defaults.MEMORY_UTILIZATION:g}, the engine default")
    reserve_gb = cfg.reserve_gb if cfg.reserve_gb is not None else defaults.RESERVE_GB
    tp = (inv.tensor_parallel_size or 1) if inv is not None else (cfg.gpus or 1)
    pp = (inv.pipeline_parallel_size or 1) if inv is not None else 1
    return DeployedWorkload(concurrency=conc, ctx=ctx, max_model_len=mml, max_model_len_source=mml_from,
                            memory_utilization=util, reserve_gb=reserve_gb, tp=tp, pp=pp, assumptions=assumptions)


@dataclass
class Served:
    """What the engine serves, as the I/O layer resolved it."""

    scheme: Scheme | None
    scheme_id: str
    scheme_from: str
    kv_id: str
    kv: TensorQuant | None  # None: a 16-bit KV cache
    kv_from: str
    weight_bits: float | None = None  # the checkpoint's own weight bits when it matches no scheme


@dataclass
class Declared:
    """What quantadvise.yaml declares, resolved (None: not declared)."""

    scheme_id: str | None = None
    scheme: Scheme | None = None
    kv_id: str | None = None
    kv_as_written: str | None = None


@dataclass
class Memory:
    """The bytes the memory rules weigh (None weights: nothing to size)."""

    weights_bytes: int | None
    weights_source: str
    kv_bytes_per_token: float
    sequence_bytes: Callable[[int], float]  # tokens -> one sequence's KV bytes (sliding windows included)
    kv_tokens_per_sequence: int
    continuous: bool


@dataclass
class Facts:
    """Everything resolved for one deployment: the judge's whole input."""

    inv: EngineInvocation | None
    site: Site
    source: str
    engine: EngineChoice
    engine_label: str
    model_ref: str
    model_shown: str  # as the report names it (relative for a local copy)
    model_from: str
    resolution: EngineResolution
    checkpoint_summary: str
    inspect_notes: list[str]
    arch_missing: bool
    split_error: str | None
    served: Served
    declared: Declared
    gpu_id: str
    gpu_memory_bytes: int
    workload: DeployedWorkload
    mode: str
    context: int
    memory: Memory | None
    performance: PerfCheck | None
    speed_note: str | None  # why speed was not predicted
    evidence_declared: bool
    served_notes: list[str] = field(default_factory=list)  # what resolving the served scheme / KV noticed


def judge(f: Facts, cfg: DeploymentConfig, declared_engine_version: str | None, out: Findings) -> TargetReport:
    """Run every rule on one deployment and report it."""
    site, inv, w = f.site, f.inv, f.workload
    notes = engine_findings(out, site, f.resolution.findings, f.engine_label)
    if inv is not None:
        artifact_findings(out, site, inv.warnings, unresolved(inv))
    if f.arch_missing:
        notes.append("the model's config.json has no architecture (model_type): memory and speed are not checked")
    notes.extend(f.served_notes)
    parallelism_findings(out, site, tp=w.tp, pp=w.pp, gpus_given=inv.gpu_count if inv is not None else None,
                         split_error=f.split_error)

    s, d = f.served, f.declared
    if d.scheme is not None and d.scheme_id is not None:
        if s.scheme is not None:
            scheme_drift(out, site, declared_id=d.scheme_id, declared=d.scheme, served_id=s.scheme_id,
                         served=s.scheme, served_from=s.scheme_from)
    else:
        out.skip("QA501", "no quantization declared")
        out.skip("QA502", "no quantization declared")
    if d.kv_id is not None:
        kv_drift(out, site, declared=d.kv_id, served=s.kv_id, served_from=s.kv_from, declared_as=d.kv_as_written or "")
    else:
        out.skip("QA503", "no kv_cache_dtype declared")
    if inv is not None:
        workload_drift(out, site, concurrency=cfg.workload.batch, max_num_seqs=inv.max_num_seqs,
                       ctx=cfg.workload.ctx, max_model_len=w.max_model_len,
                       max_model_len_source=w.max_model_len_source, gpus=cfg.gpus, parallel=w.tp * w.pp)
        engine_drift(out, site, declared_engine=cfg.engine, served_engine=f.engine.name,
                     declared_version=declared_engine_version, served_version=inv.engine_version,
                     version_from=f"the image tag in {site.file}")
    else:
        out.skip("QA505", "no engine command")
        out.skip("QA506", "no engine command")

    mem: MemoryFit | None = None
    m = f.memory
    if m is not None and m.weights_bytes is not None:
        mem = memory_fit(
            gpu=f.gpu_id, gpus=w.tp * w.pp, gpu_memory_bytes=f.gpu_memory_bytes,
            memory_utilization=w.memory_utilization, reserve_bytes_per_gpu=int(w.reserve_gb * defaults.GiB),
            weights_bytes=m.weights_bytes, weights_source=m.weights_source, kv_dtype=s.kv_id,
            kv_bytes_per_token=m.kv_bytes_per_token, sequence_bytes=m.sequence_bytes, concurrency=w.concurrency,
            kv_tokens_per_sequence=m.kv_tokens_per_sequence, max_model_len=w.max_model_len,
            max_model_len_source=w.max_model_len_source,
            kv_tokens_basis=("continuous batching holds sequences at every stage: prompt + half the output on "
                             "average, as `recommend` sizes it" if m.continuous else
                             "synchronous batches grow to the full context"),
        )
        memory_findings(out, site, mem, engine=f.engine.name, min_headroom=cfg.thresholds.min_memory_headroom)
    else:
        for rid in ("QA301", "QA302", "QA303", "QA304"):
            out.skip(rid, "no architecture or scheme to size")

    if f.performance is not None:
        performance_findings(out, site, f.performance, max_slowdown=cfg.thresholds.max_slowdown_vs_recommended)
    else:
        out.skip("QA201", "speed not predicted (no architecture or scheme preset)")
        out.skip("QA202", "speed not predicted")
    if f.speed_note:
        notes.append(f.speed_note)

    bits = scheme_bits(s.scheme, s.kv)
    if s.scheme is None and s.weight_bits is not None:
        bits = s.weight_bits
    evidence_required(out, site, scheme=s.scheme_id + (f" + {s.kv_id}" if s.kv is not None else ""), bits=bits,
                      below=cfg.thresholds.evidence_below_bits, evidence=f.evidence_declared)
    return TargetReport(
        label=site.label, file=site.file, line=site.line, source=f.source, context=inv.context if inv else None,
        engine=f.engine.name, engine_version=f.engine.version, engine_version_from=f.engine.source,
        model=f.model_shown, model_from=f.model_from, checkpoint=f.checkpoint_summary,
        resolved_method=f.resolution.resolved_method, engine_status=f.resolution.status, scheme=s.scheme_id,
        scheme_from=s.scheme_from, declared_scheme=d.scheme_id, kv_cache_dtype=s.kv_id,
        declared_kv_cache_dtype=d.kv_id, gpu=f.gpu_id, gpus=w.tp * w.pp, concurrency=w.concurrency, ctx=f.context,
        mode=f.mode, memory=mem, performance=f.performance,
        assumptions=([f.engine.assumption] if f.engine.assumption else []) + w.assumptions,
        notes=list(dict.fromkeys(notes + list(f.inspect_notes))),
    )


def perf_check(*, scheme_id: str, kv_id: str, deployed: Any, bf16: Any, recommended: Any | None) -> PerfCheck:
    """The deployed scheme's prediction next to bf16's and the recommendation's."""
    rec_tps = recommended.performance.tokens_per_s if recommended is not None else None
    return PerfCheck(
        scheme=scheme_id, kv_dtype=kv_id, tokens_per_s=deployed.tokens_per_s, step_time_s=deployed.step_time_s,
        bf16_tokens_per_s=bf16.tokens_per_s, speedup_vs_bf16=deployed.tokens_per_s / bf16.tokens_per_s,
        recommended=recommended.scheme_id if recommended is not None else None,
        recommended_kv_dtype=recommended.kv.dtype if recommended is not None else None,
        recommended_tokens_per_s=rec_tps,
        slowdown_vs_recommended=(rec_tps / deployed.tokens_per_s - 1) if rec_tps else None,
        profile=deployed.profile, mode=deployed.mode, batch=deployed.batch, model_note=deployed.model_note,
    )
