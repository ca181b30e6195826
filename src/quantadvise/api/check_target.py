"""``check``, one deployment at a time: resolve what the pure gate needs (the engine release, the
model's config and sidecars, what the engine does with the checkpoint, the schemes, the predictions)
and hand it to :func:`quantadvise.gate.target.judge`. The decisions live in ``gate/``; this is the
lookup around them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import catalog, defaults
from ..defaults import GiB
from ..engines.flags import kv_cache_flag
from ..errors import ConfigError, InputError, QuantAdviseError, SourceUnavailableError, UnknownNameError
from ..files import exists
from ..hardware import GPU
from ..scheme.axes import Scheme

if TYPE_CHECKING:
    from ..engines.data import EngineData
    from ..engines.inspection import InspectReport
    from ..engines.invocation import EngineInvocation
    from ..engines.resolution import EngineResolution
    from ..gate.config import LoadedConfig
    from ..gate.findings import Findings
    from ..gate.result import TargetReport
    from ..gate.target import Served
    from ..model.arch import ModelArch


def at(loaded: LoadedConfig, key: str, message: str) -> str:
    """``file: line N: key 'x': message`` for a value from the configuration file."""
    line = loaded.lines.get(key)
    if loaded.file is not None and line is not None:
        return f"{loaded.file}: line {line}: key '{key}': {message}"
    return f"{key.replace('_', '-')}: {message}"


def declared(loaded: LoadedConfig, key: str, fn: Any) -> Any:
    """Resolve a declared name (GPU, scheme, KV dtype, engine release); a bad one names its line."""
    try:
        return fn()
    except QuantAdviseError as exc:
        if loaded.file is not None and key in loaded.lines:
            raise ConfigError(at(loaded, key, str(exc)), field=key) from None
        raise


def online_flag(engine: EngineData, name_declared: str | None) -> str | None:
    """The --quantization a declaration implies for an unquantized checkpoint (online quantization),
    when there is no engine command to read it from."""
    if name_declared is None:
        return None
    name = name_declared.strip().lower()
    m = engine.method(name)
    if engine.shorthand(name) is not None or (m is not None and m.kind in ("online", "checkpoint_or_online")):
        return name
    try:
        online = catalog.scheme_preset(name).deploy.online
    except QuantAdviseError:
        return None
    return online if online and (engine.shorthand(online) is not None or engine.method(online) is not None) else None


def served_scheme(ck: Any, res: EngineResolution, notes: list[str], arch: ModelArch | None = None,
                  ) -> tuple[Scheme | None, str, str]:
    """(scheme the engine runs, its id, where that comes from). A shipped checkpoint is priced and sized
    as ``recommend`` prices it (advisor.native: the layers it really quantizes, e.g. only gpt-oss's
    experts), so the deployed checkpoint and the recommended native one are one number."""
    if ck is not None and ck.is_quantized:
        groups = [grp for grp in ck.groups if grp.quantizes_weights]
        if arch is not None:
            from ..checkpoint.native import native_scheme

            nat = native_scheme(arch, ck, catalog.layouts())
            if nat is not None:
                notes.extend(nat.notes)
                return nat.scheme, nat.preset or nat.id, f"the checkpoint ({ck.quant_method})"
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
    return catalog.get_scheme("bf16"), "bf16", "the checkpoint, no quantization_config"


def _model(inv: EngineInvocation | None, loaded: LoadedConfig, site_label: str, site_file: str | None,
           out: Findings, site: Any) -> tuple[str | None, str, bool]:
    """(model reference, where it came from, whether it is the declaration's).

    The command's own model is checked when it names one: a declared Hub id (``model:`` or
    ``--model``) that differs from the command's Hub id is reported (QA504) and the command's model
    checked, so one declaration never hides another deployment's model; the declaration stands in
    for a command whose model is missing, set at run time or a path this machine cannot read, and a
    declared local copy (or bundled name) is taken as the deployment's model. None (no exception) when the command's model is set at run time and
    nothing is declared: the deployment gets QA110 and the engine-level rules; None too when the
    command names no model at all and nothing is declared (an image's ``ENTRYPOINT ["vllm", "serve"]``
    whose model comes with the container's arguments): QA111 and the engine-level rules."""
    from ..gate.target import _HUB_ID, choose_model

    cfg = loaded.config
    local = False
    declared_from = ""
    ref = cfg.model
    if ref is not None:
        path = Path(loaded.path(ref)) if "model" in loaded.lines else Path(ref)
        local = exists(path)
        ref = str(path) if local else ref
        declared_from = f"{loaded.file}" if "model" in loaded.lines else "--model"
    model_ref, model_from = choose_model(inv, ref, declared_is_local=local, declared_from=declared_from, site=site,
                                         out=out)  # QA504 when the two name different Hub ids
    if ref is not None and inv is not None and model_ref == ref:
        observed = _observed_model(inv)
        # the two name different Hub ids (QA504 above), or the command names a copy on this machine
        if observed is not None and (exists(observed) or (not local and _HUB_ID.fullmatch(observed)
                                                         and _HUB_ID.fullmatch(ref) and not _same_model(observed, ref))):
            return observed, f"{site_file}:{inv.flag_lines.get('model', inv.line)}", False
    if model_ref is None:
        if inv is not None and "model" in inv.raw:  # set at run time ($MODEL): QA110, the gate goes on
            return None, f"{site_file}:{inv.flag_lines.get('model', inv.line)}", False
        if inv is not None:  # the command names none (ENTRYPOINT ["vllm", "serve"]): QA111, the gate goes on
            return None, f"{site_file}:{inv.line}", False
        raise InputError(f"{site_label}: no model to check (the command names none)",
                         hint="set model: in quantadvise.yaml (a Hub id or a local copy of its config.json) or pass "
                              "--model",
                         field="model")
    return model_ref, model_from, ref is not None and model_ref == ref


def _observed_model(inv: EngineInvocation) -> str | None:
    """The model the command names, when it is not set at run time."""
    from ..gate.target import unresolved

    return inv.model if inv.model and "model" not in unresolved(inv) else None


def _same_model(a: str, b: str) -> bool:
    return a.strip().strip("/").lower() == b.strip().strip("/").lower()


def _served_kv(res: EngineResolution, kv_flag: str | None, notes: list[str]) -> tuple[str, Any, str]:
    kv_served = res.kv_cache_dtype_resolved or res.kv_cache_dtype or "auto"
    try:
        kvp = catalog.kv_preset(kv_served)
        kv_id, kv_t = kvp.id, (kvp.kv_cache if kvp.kv_cache.is_quantized else None)
    except QuantAdviseError:
        kv_id, kv_t = kv_served, None
        notes.append(f"KV cache dtype '{kv_served}' has no preset: sized as 16-bit")
    kv_from = (f"--kv-cache-dtype {kv_flag}" if kv_flag and kv_flag != "auto" else
               "'auto' with this checkpoint" if kv_id != "kv-bf16" else "--kv-cache-dtype auto (the default)")
    return kv_id, kv_t, kv_from


def resolve_target(inv: EngineInvocation | None, loaded: LoadedConfig, root: Path, rel: Any, g: GPU, out: Findings, *,
                   engine_version_flag: str | None, notes: list[str], models: dict[str, Any],
                   nth: int = 1, nth_on_line: int = 1) -> TargetReport:
    """Resolve one engine command (or the declaration alone) and judge it. ``nth``: its ordinal among
    the launches of its file that share a site key, ``nth_on_line`` among those on its line
    (gate.target.ordinals)."""
    from ..catalog.hub import read_sidecar, resolve_model
    from ..catalog.resolve import load_model
    from ..checkpoint.parse import SIDECARS, parse_checkpoint
    from ..engines.config_checks import dtype_fallback, dtype_refusal
    from ..engines.flags import canonical_options, model_overrides
    from ..engines.startup import derived_max_len
    from ..gate import target as gt
    from ..gate.engine import dtype_findings
    from ..perf.step import check_tensor_parallel
    from .inspect import inspect

    cfg = loaded.config
    site, source = gt.site_for(inv, rel(inv.file) if inv is not None else None, loaded.file, loaded.lines, nth,
                               nth_on_line, {k: rel(v) for k, v in inv.flag_files.items()} if inv is not None else None)
    if inv is None:
        notes.append("no engine command found: the declaration alone is checked (engine flags as declared)")
    choice = gt.choose_engine(inv, cfg, versions=catalog.engine_versions(inv.engine if inv is not None else
                                                                          (cfg.engine or "vllm")),
                              version_flag=engine_version_flag, config_file=loaded.file, site=site, out=out)
    eng = declared(loaded, "engine_version", lambda: catalog.get_engine(choice.name, choice.version))
    facts = catalog.engine_startup(choice.name, eng.version)

    model_ref, model_from, is_declared = _model(inv, loaded, site.label, site.file, out, site)
    if model_ref is None:  # set at run time (QA110) or named nowhere (QA111): the engine-level rules alone
        return _unresolved(inv, loaded, g, out, site, source, choice, eng, facts, None, model_from, None)
    if model_ref not in models:
        try:
            if not is_declared and inv is not None and model_ref.startswith(("/", "./", "~")) \
                    and not exists(model_ref):
                raise Unresolvable(f"'{model_ref}' is a path inside the container, not on this machine",
                                   hint="set model: in quantadvise.yaml to its Hub id or a local copy of its "
                                        "config.json", field="model")
            src, cfg_json = resolve_model(model_ref)
        except QuantAdviseError as exc:
            if not _may_skip(exc, is_declared):  # a wrong name or a broken local copy: exit 2, at its line
                raise (_at_line(loaded, "model", exc) if is_declared else exc) from None
            models[model_ref] = exc  # not bundled, cached or reachable: QA111, the gate goes on
        else:
            if not isinstance(cfg_json, dict):
                raise ConfigError(f"{src.location}: expected a JSON object")
            side = {n: d for n in SIDECARS if (d := read_sidecar(src, n)) is not None}
            models[model_ref] = (src, cfg_json, side)
    if isinstance(models[model_ref], Exception):
        return _unresolved(inv, loaded, g, out, site, source, choice, eng, facts, model_ref, model_from,
                           models[model_ref])
    src, cfg_json, side = models[model_ref]
    text_cfg = cfg_json.get("text_config")
    config_dtype = cfg_json.get("torch_dtype") or (text_cfg.get("torch_dtype") if isinstance(text_cfg, dict) else None)
    if inv is not None and inv.dtype and inv.dtype.lower() != "auto":
        cfg_json = {**cfg_json, "torch_dtype": gt.TORCH_NAMES.get(inv.dtype.lower(), inv.dtype)}

    # what the engine does with it
    ck0 = parse_checkpoint(cfg_json, side) if ("model_type" in cfg_json or "text_config" in cfg_json) else None
    q_flag, kv_flag = _engine_flags(inv, cfg, eng, choice.name, ck0)
    rep: InspectReport = inspect(cfg_json, engines=f"{choice.name}=={eng.version}", gpu=g.id, quantization=q_flag,
                                 kv_cache_dtype=kv_flag, sidecars=side)
    res, ck = rep.engines[0], rep.checkpoint
    arch = load_model(cfg_json)[0] if rep.model.architecture else None
    vocab = catalog.flag_vocabulary(choice.name, choice.options_release)
    # the options read as the parser reads them (SGLang's `--dp 8` is --dp-size 8): the workload and the layout
    # are read from `read`, the findings keep `inv`'s spellings
    read = inv.model_copy(update={"other": canonical_options(inv.other, vocab)}) if inv is not None else None
    overrides = model_overrides(choice.name, read.other) if read is not None else None
    derived = derived_max_len(cfg_json, facts, overrides) if arch is not None else None
    w = gt.deployed_workload(read, cfg, facts, derived=derived, gpu_memory_bytes=g.memory_bytes,
                             gpu_names=(g.id, g.name, *g.aliases), capability=g.capability,
                             mla=bool(arch is not None and arch.is_mla), engine=choice.name,
                             engine_version=eng.version)
    split_error = None
    if arch is not None:
        try:
            check_tensor_parallel(arch, g, w.tp)
        except QuantAdviseError as exc:
            split_error = exc.message.replace(f"--gpus {w.tp}", f"{w.flag('tensor_parallel_size')} {w.tp}")

    served_notes: list[str] = []
    cap = g.engine_capability
    if cap is not None:  # the engine's dtype check on this GPU (QA103, or a note when it falls back)
        dtype = inv.dtype if inv is not None and inv.dtype else "auto"
        how: dict[str, Any] = dict(config_dtype=config_dtype, gpu_name=g.device_name or g.name, platform=g.platform)
        served_notes += dtype_findings(out, site, engine_label=res.label, dtype=dtype,
                                       refusal=dtype_refusal(eng, cap, dtype, **how),
                                       fallback=dtype_fallback(eng, cap, dtype, **how))
    scheme, scheme_id, scheme_from = served_scheme(ck, res, served_notes, arch)
    kv_id, kv_t, kv_from = _served_kv(res, kv_flag, served_notes)
    decl = _declared_schemes(loaded)
    weight_bits = None
    if scheme is None and ck is not None and ck.groups and ck.groups[0].weight is not None:
        weight_bits = ck.groups[0].weight.bits
    served = gt.Served(scheme=scheme, scheme_id=scheme_id, scheme_from=scheme_from, kv_id=kv_id, kv=kv_t,
                       kv_from=kv_from, weight_bits=weight_bits)

    prof = cfg.profile
    profile_path = (loaded.path(prof) if "profile" in loaded.lines else str(root / prof)) if prof else None
    mem, seq_total = _startup(arch, scheme, scheme_id, ck, rep, w, cfg, g, facts, kv_id, kv_t, loaded, read)
    batch, ctx, speed_notes = gt.speed_workload(w, cfg, mem, seq_total)
    wdata = {"model": str(src.location) if src.kind == "local" else model_ref, "gpu": g.id, "gpus": w.tp,
             "engine": choice.name, "engine_version": eng.version, "batch": batch or 1, "ctx": ctx,
             "prompt": cfg.workload.prompt, "output": cfg.workload.output, "mode": cfg.workload.mode,
             "task": cfg.workload.task, "reserve_gb": w.reserve_gb,
             # SGLang's derived fraction at or below 0: the memory finding says it does not start
             "memory_utilization": w.fraction if w.fraction > 0 else None,
             "profile": profile_path}
    wdata = {k: v for k, v in wdata.items() if v is not None}
    from ..workload import parse_workload

    workload = parse_workload(wdata, where=f"{loaded.file or 'command line'}: workload")
    perf, speed_note = None, None
    spread = _spread_layout(read, w)
    if batch is None:
        speed_note = next((n for n in speed_notes if n.startswith("no speed verdict")), None)
    elif spread is not None:
        # the comparison below prices tensor-parallel replicas; a data- or expert-parallel one would be priced
        # on one TP group's GPUs (and a model spread over eight might not even fit there)
        speed_note = (f"speed not predicted: the gate's comparison prices tensor-parallel replicas and this one is "
                      f"{spread}; `quantadvise recommend --gpu {g.id} --max-gpus {_spread_gpus(read, w)}` weighs the "
                      "data- and expert-parallel layouts")
    elif arch is not None and scheme is not None and split_error is None:
        perf, speed_note = _price(arch, g, workload, scheme, scheme_id, served, profile_path, wdata, q_flag)

    facts_ = gt.Facts(
        inv=inv, site=site, source=source, engine=choice, engine_label=res.label, model_ref=model_ref,
        model_shown=model_ref if src.kind != "local" else rel(model_ref), model_from=model_from, resolution=res,
        checkpoint_summary=rep.summary, inspect_notes=list(rep.notes), arch_missing=arch is None,
        split_error=split_error, served=served, declared=decl, gpu_id=g.id, gpu_memory_bytes=g.memory_bytes,
        workload=w, mode=workload.serving_mode, context=workload.context, concurrency=workload.batch, memory=mem,
        performance=perf, speed_note=speed_note, evidence_declared=cfg.accuracy is not None, facts=facts,
        derived=derived, served_notes=served_notes,
        speed_assumptions=[n for n in speed_notes if not n.startswith("no speed verdict")] + _kernel_note(
            perf, choice.name, eng.version),
        options=vocab,
    )
    version_declared = cfg.engine_version if "engine_version" in loaded.lines else None
    return gt.judge(facts_, cfg, version_declared, out)


def _kernel_note(perf: Any, engine: str, version: str) -> list[str]:
    """The carried kernel table's caveat, where the speed verdict was priced with another release's table."""
    from .speed import kernel_note

    note = kernel_note(engine, version) if perf is not None else None
    return [note] if note else []


def _at_line(loaded: LoadedConfig, key: str, exc: QuantAdviseError) -> QuantAdviseError:
    """``exc`` naming the configuration line of ``key`` when the value came from there."""
    if loaded.file is not None and key in loaded.lines:
        return ConfigError(at(loaded, key, str(exc)), field=key)
    return exc


class Unresolvable(QuantAdviseError):
    """A model reference that names nothing this machine can read (a path inside the container)."""


def _may_skip(exc: Exception, is_declared: bool) -> bool:
    """Whether a model that cannot be read leaves the engine-level rules to run (QA111): a Hub id
    that is not bundled, cached or reachable, or a path inside the container — whether the command or
    quantadvise.yaml names it (issue 14: an unresolvable model never aborts the gate). A declared
    (``model:`` / ``--model``) local copy that is missing or malformed, or a declared name that is
    neither bundled nor a Hub id, stays an error (the declaration is wrong); the command's own path that is
    no checkpoint here is the container's to resolve (docs/ci.md §1)."""
    if isinstance(exc, Unresolvable | SourceUnavailableError):
        return True
    if not is_declared and isinstance(exc, ConfigError):
        return True  # the command's path on this machine is no checkpoint (./model, ., /etc/passwd): the container's
    if not isinstance(exc, UnknownNameError):
        return False
    if is_declared:  # quantadvise.yaml's model: or --model: only a Hub id the Hub does not know
        return "Hugging Face Hub" in (exc.hint or "")  # hub.py: "not found on the Hugging Face Hub either"
    return "Hub" in (exc.hint or "")  # the command's model: the engine may find what this machine cannot


def _engine_flags(inv: EngineInvocation | None, cfg: Any, eng: EngineData, engine: str, ck0: Any
                  ) -> tuple[str | None, str | None]:
    """(--quantization, --kv-cache-dtype) as the engine sees them: the command's, else the declaration's."""
    if inv is not None:
        return inv.quantization, inv.kv_cache_dtype
    q_flag = online_flag(eng, cfg.quantization) if ck0 is None or not ck0.is_quantized else None
    kv_flag = None
    if cfg.kv_cache_dtype is not None:
        try:
            hints = catalog.kv_preset(cfg.kv_cache_dtype).deploy
            kv_flag = kv_cache_flag(engine, hints) or cfg.kv_cache_dtype
        except QuantAdviseError:
            kv_flag = cfg.kv_cache_dtype
    return q_flag, kv_flag


def _declared_schemes(loaded: LoadedConfig) -> Any:
    from ..gate import target as gt

    cfg = loaded.config
    decl = gt.Declared()
    if cfg.quantization is not None:
        dscheme = declared(loaded, "quantization", lambda: catalog.get_scheme(cfg.quantization))
        decl = gt.Declared(scheme_id=dscheme.id, scheme=dscheme)
    if cfg.kv_cache_dtype is not None:
        decl.kv_id = declared(loaded, "kv_cache_dtype", lambda: catalog.kv_preset(cfg.kv_cache_dtype)).id
        decl.kv_as_written = cfg.kv_cache_dtype
    return decl


def _startup(arch: Any, scheme: Scheme | None, scheme_id: str, ck: Any, rep: Any, w: Any, cfg: Any, g: GPU,
             facts: Any, kv_id: str, kv_t: Any, loaded: LoadedConfig,
             inv: EngineInvocation | None = None) -> tuple[Any, Any]:
    """The engine's start-up memory (None when there is nothing to size), and one sequence's KV bytes
    over all GPUs as the engine holds them (replicated heads included)."""
    from ..gate.memory import Declared as DeclaredLoad
    from ..gate.memory import MemoryInputs, startup_memory
    from ..memory.kvcache import bytes_per_token, kv_share_per_gpu, sequence_bytes
    from ..memory.sizing import size_model
    from ..workload import parse_workload

    if arch is None or (scheme is None and rep.size is None) or w.max_model_len is None:
        return None, None
    if ck is not None and ck.is_quantized and rep.size is not None:
        wb, wsrc = rep.size.total_bytes, "the checkpoint's tensors"
    elif scheme is not None:
        wb, wsrc = size_model(arch, scheme).total_bytes, f"{scheme_id} weights"
    else:
        wb, wsrc = rep.size.total_bytes, "the checkpoint's tensors"
    wb, wsrc, tp = _layout_weights(arch, scheme, rep, w, inv, wb, wsrc)
    gpus = max(tp * w.pp, 1)
    share = kv_share_per_gpu(kv_heads=arch.num_kv_heads, mla=arch.is_mla, tp=tp, pp=w.pp)

    def seq_total(n: int) -> float:
        return sequence_bytes(arch, kv_t, n) * share * gpus

    load = None
    if w.declared and cfg.workload.batch is not None:
        wl = parse_workload({k: v for k, v in {"batch": cfg.workload.batch, "ctx": cfg.workload.ctx,
                                                "prompt": cfg.workload.prompt, "output": cfg.workload.output,
                                                "mode": cfg.workload.mode}.items() if v is not None},
                            where=f"{loaded.file or 'command line'}: workload")
        basis = ("continuous batching holds sequences at every stage: prompt + half the output on average, as "
                 "`recommend` sizes it" if wl.serving_mode == "continuous" else
                 "synchronous batches grow to the full context")
        load = DeclaredLoad(wl.batch, wl.kv_tokens_per_sequence, basis)
    mem = startup_memory(MemoryInputs(
        facts=facts, gpu=g.id, gpu_memory_bytes=g.memory_bytes, tp=tp, pp=w.pp, fraction=w.fraction,
        fraction_flag=w.flag("gpu_memory_utilization"), fraction_from=w.fraction_from,
        reserve_bytes_per_gpu=int(w.reserve_gb * GiB), reserve_from=w.reserve_from, weights_bytes=wb,
        weights_source=wsrc, kv_dtype=kv_id, kv_bytes_per_token=bytes_per_token(arch, kv_t),
        sequence_bytes=lambda n: sequence_bytes(arch, kv_t, n), kv_heads=arch.num_kv_heads, mla=arch.is_mla,
        max_model_len=w.max_model_len, max_model_len_source=w.max_model_len_source or "", auto_fit=w.auto_fit,
        max_num_seqs=w.max_num_seqs, max_num_seqs_flag=w.flag("max_num_seqs"),
        max_num_seqs_source=w.max_num_seqs_source, declared=load, vendor=g.vendor))
    return mem, seq_total


def _spread_layout(inv: EngineInvocation | None, w: Any) -> str | None:
    """The server's layout in words when it is more than tensor (and pipeline) parallel — data-parallel ranks or
    experts spread over more GPUs than the dense weights (``engines.flags.read_layout``) — else None."""
    from ..engines.flags import read_layout

    if inv is None:
        return None
    lay = read_layout(inv.engine, w.tp, w.pp, inv.other)
    if lay.gpus > max(w.tp, 1) * max(w.pp, 1) or lay.expert_parallel or lay.attention_dp > 1:
        return lay.words
    return None


def _spread_gpus(inv: EngineInvocation | None, w: Any) -> int:
    from ..engines.flags import read_layout

    return read_layout(inv.engine, w.tp, w.pp, inv.other).gpus if inv is not None else max(w.tp, 1)


def _layout_weights(arch: Any, scheme: Scheme | None, rep: Any, w: Any, inv: EngineInvocation | None, wb: int,
                    wsrc: str) -> tuple[int, str, int]:
    """(weights over one attention group's GPUs, where that figure comes from, the group's tensor-parallel degree)
    for the server's layout (``engines.flags.read_layout``): under expert parallelism each GPU holds the dense
    weights split by the group's TP and the routed experts split over the expert ranks, so the group's GPUs hold
    ``gpus x (dense / dense shards + experts / expert shards)``. Without it, the weights and TP as given."""
    from ..engines.flags import read_layout
    from ..memory.sizing import size_model

    if inv is None:
        return wb, wsrc, w.tp
    lay = read_layout(inv.engine, w.tp, w.pp, inv.other)
    tp = max(1, lay.dense_shards // max(w.pp, 1))
    if not lay.expert_parallel:
        return wb, wsrc, tp
    sized = size_model(arch, scheme) if scheme is not None else rep.size
    experts = sum(c.bytes for c in sized.components if c.component == "experts")
    if sized.total_bytes > 0:
        experts = experts * wb / sized.total_bytes  # the same share of the weights the deployment loads
    per_gpu = (wb - experts) / lay.dense_shards + experts / lay.expert_shards
    group = tp * max(w.pp, 1)
    return (round(per_gpu * group), f"{wsrc}, the routed experts over {lay.expert_shards} GPUs ({lay.words}): "
            f"{per_gpu / 2**30:,.2f} GiB per GPU", tp)


def _unresolved(inv: EngineInvocation | None, loaded: LoadedConfig, g: GPU, out: Findings, site: Any, source: str,
                choice: Any, eng: EngineData, facts: Any, model_ref: str | None, model_from: str,
                exc: Exception | None) -> TargetReport:
    """A deployment whose model's config.json cannot be read: the engine-level rules that need no
    checkpoint (QA1xx on the flags alone), and the rest skipped. ``exc`` None: the command's model is
    set at run time (``$MODEL``), which QA110 reports; else one QA111 warning names the model."""
    from ..engines.resolution import resolve
    from ..gate.engine import artifact_findings, engine_findings, env_findings, option_findings, parallelism_findings
    from ..gate.result import TargetReport
    from ..gate.rules import CHECKPOINT_FREE_KINDS
    from ..gate.target import unresolved
    from .inspect import gpu_target

    cfg = loaded.config
    q_flag, kv_flag = _engine_flags(inv, cfg, eng, choice.name, None)
    tgt = gpu_target(g)
    res = resolve(eng, None, capability=tgt.capability if tgt else None, platform=tgt.platform if tgt else "cuda",
                  quantization=q_flag, kv_cache_dtype=kv_flag)
    kept = [f for f in res.findings if f.kind in CHECKPOINT_FREE_KINDS]
    res = res.model_copy(update={"findings": kept})
    notes = engine_findings(out, site, kept, res.label)
    tp = (inv.tensor_parallel_size or 1) if inv is not None else (cfg.gpus or 1)
    pp = (inv.pipeline_parallel_size or 1) if inv is not None else 1
    if inv is not None:
        artifact_findings(out, site, inv.warnings, unresolved(inv), engine=choice.name)
        vocab = catalog.flag_vocabulary(choice.name, choice.options_release)
        notes.extend(option_findings(out, site, inv, vocab, choice.running, model_read=False))
        env_findings(out, site, inv, vocab)
        # the GPUs the container is given need no model config (the head split does: not checked)
        parallelism_findings(out, site, tp=tp, pp=pp, gpus_given=inv.gpu_count, split_error=None, engine=choice.name)
    named_none = exc is None and (inv is None or "model" not in inv.raw)
    if named_none:  # ENTRYPOINT ["vllm", "serve"], `vllm serve --port 8000`: the model comes with the arguments
        model_ref = ""
        how = (inv.launcher or inv.engine) if inv is not None else "the engine"
        out.add("QA111", f"the command ({how}) names no model: it is given at run time (the container's arguments, "
                "a config file); only the engine-level rules ran (the flags against the engine), not memory, speed "
                f"or drift (declare model: in quantadvise.yaml, or give the command its model{_model_hint(inv)})",
                subject=f"{site.key}|model-missing", file=site.file, line=site.line, target=site.label)
    elif exc is None:
        raw = inv.raw.get("model", "") if inv is not None else ""
        model_ref = raw
        notes.append(f"the model is '{raw}', set at run time: only the engine-level rules ran (the flags against "
                     "the engine), not memory, speed or drift; give the variable a default in the artifact or "
                     "declare model: in quantadvise.yaml")
    else:
        # where the model is named: quantadvise.yaml's model: line when the declaration names it, else the command's
        from_config = loaded.file is not None and "model" in loaded.lines and model_from == loaded.file
        file, line = site.at("model", declared=from_config)
        named = f"{loaded.file} line {loaded.lines['model']}" if from_config else (model_from or "declared")
        why = " ".join((exc.message if isinstance(exc, QuantAdviseError) else str(exc)).split())
        out.add("QA111", f"model '{model_ref}' ({named}) could not be resolved: {why}; only the "
                "engine-level rules ran (the flags against the engine), not memory, speed or drift"
                + (f" ({exc.hint})" if isinstance(exc, QuantAdviseError) and exc.hint else ""),
                subject=f"{site.key}|model-unresolved", file=file, line=line, target=site.label)
    return TargetReport(
        label=site.label, file=site.file, line=site.line, source=source, context=inv.context if inv else None,
        engine=choice.name, engine_version=choice.version, engine_version_from=choice.source, model=model_ref or "",
        model_from=model_from or "declared", checkpoint="unknown (config.json not readable)" if exc is not None
        else "unknown (the command names no model)" if named_none else "unknown (the model is set at run time)",
        resolved_method=res.resolved_method, engine_status="refused" if out.refused(site.label) else res.status,
        scheme=None,
        scheme_from="unknown: the model's config.json could not be read", kv_cache_dtype=kv_flag or "auto",
        gpu=g.id, gpus=tp * pp, mode="unknown",
        assumptions=[choice.assumption] if choice.assumption else [], notes=notes,
    )


def _model_hint(inv: EngineInvocation | None) -> str:
    """How this command names a model, for a hint: `` (vllm serve MODEL)``, `` (--model-path MODEL)``."""
    from ..engines.flags import ENGINES

    if inv is None:
        return ""
    if inv.launcher in ("vllm serve", "sglang serve"):
        return f" ({inv.launcher} MODEL)"
    if inv.launcher == "image entrypoint" and ENGINES[inv.engine].positional_model:  # vllm/vllm-openai: `vllm serve`
        return " (the first argument: MODEL)"
    try:
        return f" ({ENGINES[inv.engine].for_field('model').name} MODEL)"
    except KeyError:
        return ""


def _price(arch: Any, g: GPU, workload: Any, scheme: Scheme, scheme_id: str, served: Served,
           profile_path: str | None, wdata: dict[str, Any], quantization: str | None = None) -> tuple[Any, str | None]:
    """The deployed scheme and bf16 priced at the deployed workload, next to the recommendation. The
    deployed scheme runs the kernel its ``--quantization`` selects (SGLang's forced ``awq``: dequantize,
    then a bf16 GEMM), as ``roofline --quantization`` prices it."""
    from ..advisor.speed import predict as price
    from ..catalog.resolve import load_profiles, load_site_terms
    from ..gate.target import perf_check
    from .recommend import recommend
    from .speed import efficiency, moe_default_tiles

    # the user's own profile is read first and outside the pricing: a file that cannot be read or is not a
    # profile is a configuration error (exit 2, as `recommend --profile` and `roofline --profile` say), never a
    # note that leaves the speed rules unchecked behind a PASS
    profiles = load_profiles(False, profile_path, g)
    site = load_site_terms(profile_path)
    try:
        eng = {"engine": wdata.get("engine"), "version": wdata.get("engine_version")}
        release = catalog.get_engine(eng["engine"] or defaults.ENGINE, eng["version"])
        loop = catalog.engine_loop(g, release.engine, release.version, tp=workload.gpus, site=site)
        eff = efficiency(profiles, g, scheme, **eng, quantization=quantization)
        tiles = moe_default_tiles(arch, g, scheme, eff, model=workload.model, gpus=workload.gpus,
                                  engine=release.engine, version=release.version)
        dep = price(arch, g, workload, scheme, eff, kv=served.kv, kv_name=served.kv_id, loop=loop)
        bf16 = catalog.get_scheme("bf16")
        base = price(arch, g, workload, bf16, efficiency(profiles, g, bf16, **eng), kv=served.kv, kv_name=served.kv_id,
                     loop=loop)
    except QuantAdviseError as exc:
        return None, f"speed not predicted: {exc}"
    note = None
    rec = None
    try:
        rec = recommend(dict(wdata))
    except QuantAdviseError as exc:
        note = f"no recommendation for this workload: {exc}"
    return perf_check(scheme_id=scheme_id, kv_id=served.kv_id, deployed=dep, bf16=base, recommended=rec,
                      moe_tiles=tiles), note

