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

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from .. import defaults
from ..engines.flags import ENGINES, engine_label, read_layout
from ..engines.startup import DerivedMaxLen, StartupFacts, default_fraction, default_reserve_gb, vllm_max_num_seqs
from ..engines.versions import version_key
from ..results import record
from ..scheme.axes import Scheme, TensorQuant
from .accuracy import evidence_required
from .config import DeploymentConfig
from .drift import engine_drift, kv_drift, model_drift, scheme_drift, workload_drift
from .engine import artifact_findings, engine_findings, env_findings, option_findings, parallelism_findings
from .findings import Findings, Site
from .memory import memory_findings, refusal_reason
from .result import MemoryFit, PerfCheck, TargetReport
from .speed import bf16_unservable, performance_findings

if TYPE_CHECKING:
    from ..engines.invocation import EngineInvocation
    from ..engines.resolution import EngineResolution
    from ..engines.vocabulary import FlagVocabulary

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




def scheme_bits(scheme: Scheme | None, kv: TensorQuant | None) -> float | None:
    """The fewest bits any quantized tensor role of the served scheme (and KV cache) keeps."""
    roles = (scheme.weight, scheme.activation) if scheme is not None else ()
    ts = [t for t in roles if t is not None and t.is_quantized]
    if kv is not None and kv.is_quantized:
        ts.append(kv)
    return min((t.bits for t in ts), default=None)


def site_key(inv: EngineInvocation, file: str) -> str:
    """The stable part of a launch's finding subjects: its file and its place there (a container,
    a service, ``CMD``), else its engine. No line: a finding keeps its fingerprint (and its baseline
    entry) when lines above it move."""
    return f"{file}#{inv.context or inv.engine}"


def ordinals(keys: Sequence[str | None]) -> list[int]:
    """For each deployment, how many before it (and itself) share its :func:`site_key`: 1 for the
    first, 2 for the second ... Two launches with no context in one file (two ``vllm serve`` lines in
    a script, two Makefile recipes, two ``subprocess.run`` calls) share a key; the ordinal tells them
    apart (``serve.sh#vllm``, ``serve.sh#vllm#2``), so one launch's findings never hide another's."""
    seen: dict[str, int] = {}
    out = []
    for k in keys:
        if k is None:
            out.append(1)
            continue
        seen[k] = seen.get(k, 0) + 1
        out.append(seen[k])
    return out


def site_for(inv: EngineInvocation | None, file: str | None, config_file: str | None,
             config_lines: Mapping[str, int], nth: int = 1, nth_on_line: int = 1,
             flag_files: Mapping[str, str] | None = None) -> tuple[Site, str]:
    """(where the deployment's findings point, what kind of source it came from). ``nth``: the
    deployment's :func:`ordinals` entry; the first keeps the bare key (the fingerprints of a file with
    one launch never change), a later one with the same key gets ``#nth``. ``nth_on_line``: its ordinal
    among the launches that start on its line (``vllm serve a & vllm serve b``): the label of a later one
    says so, so every deployment has its own label. ``flag_files``: the flags given in another file (the
    command's --config YAML), as the report names files."""
    if inv is not None and file is not None:
        key = site_key(inv, file)
        label = f"{file}:{inv.line}" + (f" ({inv.context})" if inv.context else "") + (
            f" (launch {nth_on_line} on the line)" if nth_on_line > 1 else "")
        site = Site(key=key if nth <= 1 else f"{key}#{nth}", label=label, file=file,
                    line=inv.line, flag_lines=dict(inv.flag_lines), flag_files=dict(flag_files or {}),
                    config_file=config_file,
                    config_lines=dict(config_lines))
        return site, inv.source
    site = Site(key=f"{config_file or 'command line'}#declared",
                label=f"{config_file} (declared; no engine command found)" if config_file else
                "the command-line declaration", config_file=config_file, config_lines=dict(config_lines))
    return site, "config" if config_file else "flags"


@record
class EngineChoice:
    name: str
    version: str
    source: str  # where the version came from, in words
    assumption: str | None = None
    asked: str | None = None  # the release the image names when it is not on file (checked as ``version``)

    @property
    def running(self) -> str:
        """The release the deployment runs (the image's, even when another is on file in its place)."""
        return self.asked or self.version

    @property
    def options_release(self) -> str:
        """The release whose option list the command is checked against: the one it runs; the one on file
        when the two differ only past their third number (0.10.1.1 runs as 0.10.1, 0.5.3rc0 as 0.5.3.post3:
        a patch or post-release of the same release). Another release's list would call an option added or
        removed in between wrong, so a release not on file otherwise has no list (its options are not checked)."""
        if self.asked and version_key(self.asked) == version_key(self.version):
            return self.version
        return self.running


def choose_engine(inv: EngineInvocation | None, cfg: DeploymentConfig, *, versions: list[str],
                  version_flag: str | None, config_file: str | None, site: Site, out: Findings) -> EngineChoice:
    """The engine release the deployment runs: --engine-version, else the image tag / pinned package,
    else the declaration, else the newest on file. A release not on file (older, newer, a patch, a nightly
    build) is checked against the closest one on file, with one QA100 warning that names both."""
    from ..engines.flags import engine_label
    from ..engines.versions import choose_release

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
    choice = choose_release(engine_label(name), versions, version)
    out.ran_rules("QA100")
    if choice.warning is None:
        return EngineChoice(name, choice.version, vfrom, assumption)
    declared_here = vfrom == config_file and config_file is not None and "engine_version" in site.config_lines
    file, line = (config_file, site.config_lines["engine_version"]) if declared_here else (site.file, site.line)
    out.add("QA100", f"{choice.warning} (the release named by {vfrom})", subject=f"{site.key}|engine-version",
            file=file, line=line, target=site.label)
    return EngineChoice(name, choice.version, f"the closest release on file to {choice.asked}", assumption,
                        asked=choice.asked)


def choose_model(inv: EngineInvocation | None, declared: str | None, *, declared_is_local: bool,
                 declared_from: str, site: Site, out: Findings) -> tuple[str | None, str]:
    """(the declared model, or else the command's, and where it came from); two different Hub ids are
    QA504. The caller (api.check_target._model) checks a command that names its own Hub id as that
    model and keeps the declaration for commands that name none. None when neither names one."""
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


@record(frozen=False)
class DeployedWorkload:
    """What the deployment runs with, and what it is held to, with the assumptions that filled gaps.

    The engine's caps (``max_num_seqs``, ``max_model_len``) are what it allows, not the workload;
    the workload is what quantadvise.yaml (or --concurrency / --ctx) declares, None when nothing is."""

    engine: str
    concurrency: int | None  # declared sequences at once (None: not declared)
    declared: bool  # any of workload concurrency / ctx / prompt / output declared
    max_model_len: int | None  # the longest request the engine admits (the flag, else the model's)
    max_model_len_source: str | None
    max_model_len_given: int | None  # the flag's value (None: not given, or -1/auto)
    auto_fit: bool  # vLLM --max-model-len -1 / auto
    max_num_seqs: int | None  # the engine's cap: the flag, else vLLM's default (SGLang's comes from its pool)
    max_num_seqs_source: str | None
    fraction: float  # vLLM gpu-memory-utilization / SGLang mem-fraction-static
    fraction_from: str
    reserve_gb: float  # vLLM's runtime reserve per GPU (SGLang: inside its fraction)
    reserve_from: str
    tp: int
    pp: int
    assumptions: list[str] = field(default_factory=list)

    @property
    def flags(self) -> Any:
        return ENGINES[self.engine]

    def flag(self, name: str) -> str:
        """The engine's own spelling of a field's flag (``--max-running-requests`` for SGLang)."""
        return str(self.flags.for_field(name).name)


# Engine flags the start-up arithmetic does not model: named in the assumptions when present.
UNMODELLED = {
    "vllm": ("--kv-cache-memory-bytes", "--kv-cache-memory", "--cpu-offload-gb", "--num-gpu-blocks-override",
             "--speculative-config", "--no-enable-extensible-kv-cache"),
    "sglang": ("--dp-size", "--disaggregation-mode", "--speculative-algorithm",
               "--enable-memory-saver", "--max-total-tokens", "--enable-hierarchical-cache"),
}


def int_flag(inv: EngineInvocation | None, *names: str) -> int | None:
    """An integer flag kept in ``other`` (not in the flag table), None when absent or not an integer."""
    if inv is None:
        return None
    for n in names:
        v = inv.other.get(n)
        if isinstance(v, str) and re.fullmatch(r"-?\d{1,12}", v.strip()):
            return int(v)
    return None


def bool_flag(inv: EngineInvocation | None, *names: str) -> bool:
    return inv is not None and any(inv.other.get(n) not in (None, False, "false", "False") for n in names)


def deployed_workload(inv: EngineInvocation | None, cfg: DeploymentConfig, facts: StartupFacts, *,
                      derived: DerivedMaxLen | None, gpu_memory_bytes: int, gpu_names: tuple[str, ...],
                      capability: int | None, mla: bool, engine: str | None = None,
                      engine_version: str | None = None) -> DeployedWorkload:
    """The engine's caps and memory fraction (the flags, else the declaration, else the engine's
    own defaults from its source) and the declared workload."""
    engine = engine or (inv.engine if inv is not None else (cfg.engine or defaults.ENGINE))
    assumptions: list[str] = []
    if engine_version is not None and engine_version.removeprefix("v") != facts.version:
        older = version_key(facts.version) <= version_key(engine_version)
        assumptions.append(
            f"start-up memory: {engine} {facts.version}'s arithmetic and defaults, the closest older release in "
            f"data/engine_startup.yaml" if older else
            f"start-up memory: {engine} {facts.version}'s arithmetic and defaults: data/engine_startup.yaml has no "
            f"release as old as {engine_version}, so its oldest is used ({engine_version}'s own defaults may differ)")
    tp = (inv.tensor_parallel_size or 1) if inv is not None else (cfg.gpus or 1)
    pp = (inv.pipeline_parallel_size or 1) if inv is not None else 1
    table = ENGINES[engine]
    mml_flag, seqs_flag = table.for_field("max_model_len").name, table.for_field("max_num_seqs").name
    frac_flag = table.for_field("gpu_memory_utilization").name
    w_cfg = cfg.workload
    declared = any(v is not None for v in (w_cfg.batch, w_cfg.ctx, w_cfg.prompt, w_cfg.output))

    # the longest request
    given = inv.max_model_len if inv is not None else None
    raw_len = (inv.raw.get("max_model_len", "") if inv is not None else "").strip().lower()
    auto_fit = raw_len in facts.auto_max_model_len
    mml: int | None
    if given is not None:
        mml, mml_from = given, f"{mml_flag} at line {inv.flag_lines.get('max_model_len')}" if inv else mml_flag
    elif derived is not None:
        mml = derived.value
        key = derived.key or "no length key"
        mml_from = (f"the model's {key}, fitted to memory ({mml_flag} {raw_len})" if auto_fit else
                    f"the model's {key}: no {mml_flag}")
    else:
        mml, mml_from = None, None

    # the running-sequence cap
    seqs, seqs_from = (inv.max_num_seqs if inv is not None else None), None
    if seqs is not None and inv is not None:
        seqs_from = f"line {inv.flag_lines.get('max_num_seqs')}"
    elif facts.batch_defaults:  # the release derives its default cap per GPU (vLLM)
        got = vllm_max_num_seqs(facts, gpu_memory_bytes, gpu_names, capability,
                                throughput=bool(inv and str(inv.other.get("--performance-mode", "")) == "throughput"),
                                max_num_batched_tokens=inv.max_num_batched_tokens if inv is not None else None)
        if got is not None:
            seqs, seqs_from = got
            assumptions.append(f"{seqs_flag}: {seqs:,}, {seqs_from}")

    # the memory fraction
    flag_frac = inv.gpu_memory_utilization if inv is not None else None
    if flag_frac is not None and inv is not None:
        frac, frac_from = flag_frac, f"line {inv.flag_lines.get('gpu_memory_utilization')}"
    elif cfg.gpu_memory_utilization is not None:
        frac, frac_from = cfg.gpu_memory_utilization, "declared gpu_memory_utilization"
    else:  # the engine's own default, derived as `recommend` derives it (gate.startup.default_fraction)
        sglang = {} if not facts.fraction_tiers else dict(  # the flags its fraction heuristic reads (SGLang)
            chunked_prefill_size=int_flag(inv, "--chunked-prefill-size"),
            max_prefill_tokens=int_flag(inv, "--max-prefill-tokens"),
            decode_max_bs=int_flag(inv, "--cuda-graph-max-bs-decode", "--cuda-graph-max-bs"),
            max_running_requests=inv.max_num_seqs if inv is not None else None,
            decode_graphs=not (bool_flag(inv, "--disable-cuda-graph", "--disable-decode-cuda-graph")
                               or str(inv.other.get("--cuda-graph-backend-decode", "")) == "disabled" if inv else False),
            prefill_graphs=not (bool_flag(inv, "--disable-cuda-graph", "--disable-prefill-cuda-graph")
                                or str(inv.other.get("--cuda-graph-backend-prefill", "")) == "disabled" if inv else False))
        d = default_fraction(facts, gpu_memory_bytes, tp=tp, pp=pp, mla=mla,
                             model_path=(inv.model or "") if inv is not None else (cfg.model or ""), **sglang)
        frac, frac_from = d.fraction, d.source
        assumptions.append(f"{frac_flag}: {frac:g}, {frac_from}")
    reserve_gb, reserve_from = default_reserve_gb(engine)
    if facts.reserve_outside_share:
        if cfg.reserve_gb is not None:
            reserve_gb, reserve_from = cfg.reserve_gb, "declared reserve_gb"
        else:
            reserve_from += "; declare reserve_gb from your server's log"
    odd = [f for f in UNMODELLED.get(engine, ()) if inv is not None and (
        f in inv.other or (f == "--speculative-config" and inv.speculative_config is not None))]
    if odd:
        assumptions.append(f"{', '.join(odd)}: not modelled by the start-up arithmetic (a standard deployment is "
                           "assumed)")
    return DeployedWorkload(
        engine=engine, concurrency=w_cfg.batch, declared=declared, max_model_len=mml, max_model_len_source=mml_from,
        max_model_len_given=given, auto_fit=auto_fit, max_num_seqs=seqs, max_num_seqs_source=seqs_from, fraction=frac,
        fraction_from=frac_from, reserve_gb=reserve_gb, reserve_from=reserve_from, tp=tp, pp=pp,
        assumptions=assumptions)


def speed_workload(w: DeployedWorkload, cfg: DeploymentConfig, mem: MemoryFit | None,
                   sequence_bytes: Callable[[int], float] | None) -> tuple[int | None, int | None, list[str]]:
    """(sequences, context, assumptions) the speed rules price. The declared workload, at most the
    engine's running-sequence cap (``--max-num-seqs``, the flag or the engine's default: it never runs
    more at once); else the engine's own batch: its cap, at most what its KV cache holds at
    ``recommend``'s default context (capped at the longest request). None: no speed verdict (the engine
    does not start)."""
    w_cfg, notes = cfg.workload, []
    ctx = w_cfg.ctx
    if ctx is None and w_cfg.prompt is None and w_cfg.output is None:
        ctx = defaults.CONTEXT if w.max_model_len is None else min(defaults.CONTEXT, w.max_model_len)
        notes.append(f"context: {ctx:,} tokens per sequence, `recommend`'s default (declare workload.ctx)"
                     + (f"; {w.flag('max_model_len')} {w.max_model_len:,} is the longest request, not every one"
                        if w.max_model_len else ""))
    if mem is not None and not mem.starts:  # a declared workload too: nothing runs to price
        return None, ctx, [*notes, "no speed verdict: the engine does not start"]
    cap = mem.max_num_seqs if mem is not None and mem.max_num_seqs else w.max_num_seqs
    cap_from = mem.max_num_seqs_source if mem is not None and mem.max_num_seqs else w.max_num_seqs_source
    if w_cfg.batch is not None:
        if cap is not None and w_cfg.batch > cap:  # the engine never runs more at once: the rest wait (QA505)
            notes.append(f"concurrency: {cap:,}, the engine's cap {w.flag('max_num_seqs')} {cap:,} ({cap_from}): "
                         f"it runs at most that many of the declared {w_cfg.batch:,} sequences at once, the rest "
                         "queue; speed is priced at the cap")
            return cap, ctx, notes
        return w_cfg.batch, ctx, notes
    if cap is None:
        return None, ctx, [*notes, "no speed verdict: no workload declared and no engine batch to assume"]
    n, why = cap, f"{w.flag('max_num_seqs')} {cap:,} ({mem.max_num_seqs_source if mem else w.max_num_seqs_source})"
    if mem is not None and sequence_bytes is not None and ctx:
        per = sequence_bytes(ctx)
        held = math.floor(mem.kv_cache_bytes / per) if per > 0 else cap
        if held < cap:
            n, why = max(held, 1), f"the {held:,} sequences of {ctx:,} tokens its KV cache holds ({why} caps it)"
    notes.append(f"concurrency: {n:,}, the engine's batch when saturated: {why} (declare workload.concurrency)")
    return n, ctx, notes


@record(frozen=False)
class Served:
    """What the engine serves, as the I/O layer resolved it."""

    scheme: Scheme | None
    scheme_id: str
    scheme_from: str
    kv_id: str
    kv: TensorQuant | None  # None: a 16-bit KV cache
    kv_from: str
    weight_bits: float | None = None  # the checkpoint's own weight bits when it matches no scheme


@record(frozen=False)
class Declared:
    """What quantadvise.yaml declares, resolved (None: not declared)."""

    scheme_id: str | None = None
    scheme: Scheme | None = None
    kv_id: str | None = None
    kv_as_written: str | None = None


@record(frozen=False)
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
    concurrency: int  # the sequences the speed rules price (declared, else the engine's batch)
    memory: MemoryFit | None  # the engine's start-up arithmetic (None: nothing to size)
    performance: PerfCheck | None
    speed_note: str | None  # why speed was not predicted
    evidence_declared: bool
    facts: StartupFacts | None = None
    derived: DerivedMaxLen | None = None  # the model's own length limit
    served_notes: list[str] = field(default_factory=list)  # what resolving the served scheme / KV noticed
    speed_assumptions: list[str] = field(default_factory=list)
    options: FlagVocabulary | None = None  # every option the release's parser accepts (None: not on file)


def accuracy_policy(config_lines: Mapping[str, int], overrides: Mapping[str, str]) -> bool:
    """quantadvise.yaml declares an accuracy policy: evidence (accuracy:), the bits below which evidence is
    required (thresholds.evidence_below_bits), or QA401's severity (rules:). Without one QA401 is a note."""
    return "QA401" in overrides or any(k in config_lines for k in ("accuracy", "thresholds.evidence_below_bits"))


# a Hub name that says it is a quantization of another model ("-AWQ", "-FP8", "-w4a16", "-4bit", "-GGUF")
_QUANT_NAME = re.compile(r"awq|gptq|fp[48]|int[48]|w\d+a\d+|nf4|bnb|\d-?bit|gguf|exl2|quant|marlin", re.IGNORECASE)


def released_quantized(model_ref: str, s: Served) -> bool:
    """The model's only release is the quantized checkpoint the deployment serves as shipped: a Hub id
    whose name does not say it is a quantization of another model (openai/gpt-oss-120b ships MXFP4 experts,
    deepseek-ai/DeepSeek-V3 FP8 blocks; Qwen/Qwen2.5-7B-Instruct-AWQ is a quantization of a 16-bit release,
    and a local checkpoint is whoever made it). Its accuracy is its publisher's evaluation: there is no
    16-bit baseline to hold it to (QA401)."""
    if not serves_as_shipped(s) or not _HUB_ID.fullmatch(model_ref) or model_ref.startswith((".", "/", "~")):
        return False
    return _QUANT_NAME.search(model_ref.split("/", 1)[1]) is None


def serves_as_shipped(s: Served) -> bool:
    """The engine serves a quantized checkpoint as it is shipped (its quantization_config), not a
    16-bit checkpoint quantized online (api/check_target.served_scheme's ``scheme_from``)."""
    return s.scheme_id != "bf16" and s.scheme_from.startswith("the checkpoint (") \
        and "no quantization_config" not in s.scheme_from


def judge(f: Facts, cfg: DeploymentConfig, declared_engine_version: str | None, out: Findings) -> TargetReport:
    """Run every rule on one deployment and report it."""
    site, inv, w = f.site, f.inv, f.workload
    notes = engine_findings(out, site, f.resolution.findings, f.engine_label)
    out.ran_rules("QA111")  # the model's config.json was read
    if inv is not None:
        artifact_findings(out, site, inv.warnings, unresolved(inv), engine=f.engine.name)
        notes.extend(option_findings(out, site, inv, f.options, f.engine.running))
        env_findings(out, site, inv, f.options)
    if f.arch_missing:
        notes.append("the model's config.json has no architecture (model_type): memory and speed are not checked")
    notes.extend(f.served_notes)
    lay = read_layout(inv.engine, w.tp, w.pp, inv.other, f.options) if inv is not None else None
    parallelism_findings(out, site, tp=w.tp, pp=w.pp, gpus_given=inv.gpu_count if inv is not None else None,
                         split_error=f.split_error, engine=f.engine.name,
                         node_gpus=lay.node_gpus if lay is not None and lay.node_gpus != w.tp * w.pp else None,
                         layout=lay.words if lay is not None else None)

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
        cap = f.memory.max_num_seqs if f.memory is not None and inv.max_num_seqs is None else inv.max_num_seqs
        cap_from = (f.memory.max_num_seqs_source if f.memory is not None and inv.max_num_seqs is None else
                    f"line {inv.flag_lines.get('max_num_seqs')}")
        workload_drift(out, site, concurrency=cfg.workload.batch, max_num_seqs=cap, max_num_seqs_from=cap_from,
                       ctx=cfg.workload.ctx, max_model_len=w.max_model_len,
                       max_model_len_source=w.max_model_len_source, gpus=cfg.gpus, parallel=w.tp * w.pp,
                       seqs_flag=w.flag("max_num_seqs"), len_flag=w.flag("max_model_len"),
                       parallel_flags=f"{w.flag('tensor_parallel_size')} x {w.flag('pipeline_parallel_size')}")
        engine_drift(out, site, declared_engine=cfg.engine, served_engine=f.engine.name,
                     declared_version=declared_engine_version, served_version=inv.engine_version,
                     version_from=f"the image tag in {site.file}")
    else:
        out.skip("QA505", "no engine command")
        out.skip("QA506", "no engine command")

    mem = f.memory
    if mem is not None and f.facts is not None:
        memory_findings(out, site, mem, min_headroom=cfg.thresholds.min_memory_headroom, derived=f.derived,
                        max_model_len_given=w.max_model_len_given, max_model_len_flag=w.flag("max_model_len"),
                        facts=f.facts)
    else:
        for rid in ("QA301", "QA302", "QA303", "QA304", "QA305", "QA306"):
            out.skip(rid, "no architecture or scheme to size")

    # Every rule has run that can find the engine refusing to start (QA1xx, QA301, QA302, QA306): a refused
    # deployment gets no speed verdict and no workload; its memory says it does not start, and why.
    refused = out.refused(site.label)
    performance, speed_assumptions = f.performance, f.speed_assumptions
    concurrency: int | None = f.concurrency
    stopped = bool(refused) or (mem is not None and not mem.starts)
    if stopped:
        why = refusal_reason(f.engine.name, refused) if refused else (
            f"{engine_label(f.engine.name)} refuses to start")
        if mem is not None:
            first = next(iter(refused.values()), None)
            mem = mem.model_copy(update={  # as startup_memory leaves its own refusals: no declared workload held
                "starts": False, "refusal": mem.refusal or first, "refused_by": list(refused) or None,
                "concurrency": None, "kv_tokens_per_sequence": None, "kv_tokens_basis": "", "kv_bytes": None,
                "free_bytes": None, "headroom": None, "max_concurrency": None})
        performance, speed_assumptions = None, []
        concurrency = cfg.workload.batch  # the declared workload, if any; nothing runs to price
        for rid in ("QA201", "QA202", "QA205"):
            out.skip(rid, why)
        notes.append(f"no speed verdict: {why}")
    elif f.performance is not None:
        performance = f.performance.model_copy(update={"bf16_unservable": bf16_unservable(f.performance, mem)})
        notes.extend(performance_findings(out, site, performance,
                                          max_slowdown=cfg.thresholds.max_slowdown_vs_recommended, mem=mem,
                                          shipped=serves_as_shipped(s)))
    else:
        out.skip("QA201", "speed not predicted (no architecture or scheme preset)")
        out.skip("QA202", "speed not predicted")
        out.skip("QA205", "speed not predicted")
    if f.speed_note and not stopped:
        notes.append(f.speed_note)

    bits = scheme_bits(s.scheme, None)
    if s.scheme is None and s.weight_bits is not None:
        bits = s.weight_bits
    evidence_required(out, site, scheme=s.scheme_id + (f" + {s.kv_id}" if s.kv is not None else ""), bits=bits,
                      kv_bits=scheme_bits(None, s.kv), below=cfg.thresholds.evidence_below_bits,
                      evidence=f.evidence_declared, shipped=released_quantized(f.model_ref, s),
                      policy=accuracy_policy(site.config_lines, out.overrides))
    return TargetReport(
        label=site.label, file=site.file, line=site.line, source=f.source, context=inv.context if inv else None,
        engine=f.engine.name, engine_version=f.engine.version, engine_version_from=f.engine.source,
        model=f.model_shown, model_from=f.model_from, checkpoint=f.checkpoint_summary,
        resolved_method=f.resolution.resolved_method,
        # the header agrees with the findings: any rule that means "the engine refuses to start" (QA107, QA301,
        # QA306 ... rules.REFUSES_START), not only the quantization method's resolution, makes it "refused"
        engine_status="refused" if stopped else f.resolution.status, scheme=s.scheme_id,
        scheme_from=s.scheme_from, declared_scheme=d.scheme_id, kv_cache_dtype=s.kv_id,
        declared_kv_cache_dtype=d.kv_id, gpu=f.gpu_id, gpus=w.tp * w.pp, concurrency=concurrency, ctx=f.context,
        mode=f.mode, memory=mem, performance=performance,
        assumptions=([f.engine.assumption] if f.engine.assumption else []) + w.assumptions + speed_assumptions,
        notes=list(dict.fromkeys(notes + list(f.inspect_notes))),
        kernels=kernel_names(f.resolution),
    )


def kernel_names(res: EngineResolution) -> list[str] | None:
    """``"group: kernel"`` per config group the engine runs (None: no kernel table for the release)."""
    if res.kernels is None:
        return None
    return [f"{k.group}: {k.name.split(' (')[0] if k.name else 'no kernel on file'}" for k in res.kernels]


def perf_check(*, scheme_id: str, kv_id: str, deployed: Any, bf16: Any, recommended: Any | None,
               moe_tiles: str | None = None) -> PerfCheck:
    """The deployed scheme's prediction next to bf16's and the recommendation's (``moe_tiles``: QA205's words)."""
    rec_tps = recommended.performance.tokens_per_s if recommended is not None else None
    alts = list(getattr(recommended, "alternatives", None) or [])
    base = next((a for a in alts if a.scheme == "bf16"), None)
    top = next((a for a in alts if recommended is not None and a.scheme == recommended.scheme_id), None)
    return PerfCheck(
        scheme=scheme_id, kv_dtype=kv_id, tokens_per_s=deployed.tokens_per_s, step_time_s=deployed.step_time_s,
        bf16_tokens_per_s=bf16.tokens_per_s, speedup_vs_bf16=deployed.tokens_per_s / bf16.tokens_per_s,
        recommended=recommended.scheme_id if recommended is not None else None,
        recommended_kv_dtype=recommended.kv.dtype if recommended is not None else None,
        recommended_tokens_per_s=rec_tps,
        slowdown_vs_recommended=(rec_tps / deployed.tokens_per_s - 1) if rec_tps else None,
        profile=deployed.profile, mode=deployed.mode, batch=deployed.batch, model_note=deployed.model_note,
        speed_model=getattr(deployed, "speed_model", None),
        serving_loop=(f"{deployed.serving_loop.loop}; terms {deployed.serving_loop.terms}"
                      if getattr(deployed, "serving_loop", None) is not None else None),
        bf16_weights_bytes=base.weights_bytes if base is not None else None,
        bf16_does_not_fit=base is not None and base.status == "does-not-fit",
        recommended_native=bool(recommended is not None and recommended.scheme.native),
        recommended_fits=top.fits if top is not None else None,
        moe_tiles=moe_tiles,
    )
