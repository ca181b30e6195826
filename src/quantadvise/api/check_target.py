"""``check``, one deployment at a time: resolve what the pure gate needs (the engine release, the
model's config and sidecars, what the engine does with the checkpoint, the schemes, the predictions)
and hand it to :func:`quantadvise.gate.target.judge`. The decisions live in ``gate/``; this is the
lookup around them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import catalog
from ..errors import ConfigError, InputError, QuantAdviseError
from ..hardware import GPU
from ..scheme import Scheme

if TYPE_CHECKING:
    from ..artifacts.invocation import EngineInvocation
    from ..engines.data import EngineData
    from ..engines.inspection import InspectReport
    from ..engines.resolution import EngineResolution
    from ..gate.config import LoadedConfig
    from ..gate.findings import Findings
    from ..gate.result import TargetReport
    from ..gate.target import Served


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


def served_scheme(ck: Any, res: EngineResolution, notes: list[str]) -> tuple[Scheme | None, str, str]:
    """(scheme the engine runs, its id, where that comes from)."""
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


def _model(inv: EngineInvocation | None, loaded: LoadedConfig, site_label: str, site_file: str | None,
           out: Findings, site: Any) -> tuple[str, str, bool]:
    """(model reference, where it came from, whether the declaration names a local copy)."""
    from ..gate.target import choose_model

    cfg = loaded.config
    local = False
    declared_from = ""
    ref = cfg.model
    if ref is not None:
        path = Path(loaded.path(ref)) if "model" in loaded.lines else Path(ref)
        local = path.exists()
        ref = str(path) if local else ref
        declared_from = f"{loaded.file}" if "model" in loaded.lines else "--model"
    model_ref, model_from = choose_model(inv, ref, declared_is_local=local, declared_from=declared_from, site=site,
                                         out=out)
    if model_ref is None:
        raise InputError(f"{site_label}: no model to check (the command's model is "
                         f"{inv.raw.get('model', 'missing') if inv is not None else 'missing'})",
                         hint="set model: in quantadvise.yaml (a Hub id or a local copy of its config.json) or pass "
                              "--model",
                         field="model")
    if cfg.model is None and inv is not None and model_ref.startswith(("/", "./", "~")) \
            and not Path(model_ref).expanduser().exists():
        raise ConfigError(f"{site_file}: line {inv.flag_lines.get('model', inv.line)}: key 'model': "
                          f"'{model_ref}' is a path inside the container, not on this machine",
                          hint="set model: in quantadvise.yaml to its Hub id or a local copy of its config.json",
                          field="model")
    return model_ref, model_from, local


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
                   engine_version_flag: str | None, notes: list[str], models: dict[str, Any]) -> TargetReport:
    """Resolve one engine command (or the declaration alone) and judge it."""
    from ..checkpoint.parse import SIDECARS, parse_checkpoint
    from ..gate import target as gt
    from ..hub import read_sidecar, resolve_model
    from ..kvcache import bytes_per_token, sequence_bytes
    from ..perf.step import check_tensor_parallel
    from ..sizing import size_model
    from .common import load_model
    from .inspect import inspect

    cfg = loaded.config
    site, source = gt.site_for(inv, rel(inv.file) if inv is not None else None, loaded.file, loaded.lines)
    if inv is None:
        notes.append("no engine command found: the declaration alone is checked (engine flags as declared)")
    choice = gt.choose_engine(inv, cfg, versions=catalog.engine_versions(inv.engine if inv is not None else
                                                                          (cfg.engine or "vllm")),
                              version_flag=engine_version_flag, config_file=loaded.file, site=site, out=out)
    eng = declared(loaded, "engine_version", lambda: catalog.get_engine(choice.name, choice.version))

    model_ref, model_from, _ = _model(inv, loaded, site.label, site.file, out, site)
    if model_ref not in models:
        src, cfg_json = declared(loaded, "model", lambda: resolve_model(model_ref))
        if not isinstance(cfg_json, dict):
            raise ConfigError(f"{src.location}: expected a JSON object")
        side = {n: d for n in SIDECARS if (d := read_sidecar(src, n)) is not None}
        models[model_ref] = (src, cfg_json, side)
    src, cfg_json, side = models[model_ref]
    if inv is not None and inv.dtype and inv.dtype.lower() != "auto":
        cfg_json = {**cfg_json, "torch_dtype": gt.TORCH_NAMES.get(inv.dtype.lower(), inv.dtype)}

    # what the engine does with it
    ck0 = parse_checkpoint(cfg_json, side) if ("model_type" in cfg_json or "text_config" in cfg_json) else None
    if inv is not None:
        q_flag, kv_flag = inv.quantization, inv.kv_cache_dtype
    else:
        q_flag = online_flag(eng, cfg.quantization) if ck0 is None or not ck0.is_quantized else None
        kv_flag = None
        if cfg.kv_cache_dtype is not None:
            try:
                hints = catalog.kv_preset(cfg.kv_cache_dtype).deploy
                kv_flag = (hints.vllm_kv_cache_dtype if choice.name == "vllm" else hints.sglang_kv_cache_dtype) \
                    or cfg.kv_cache_dtype
            except QuantAdviseError:
                kv_flag = cfg.kv_cache_dtype
    rep: InspectReport = inspect(cfg_json, engines=f"{choice.name}=={eng.version}", gpu=g.id, quantization=q_flag,
                                 kv_cache_dtype=kv_flag, sidecars=side)
    res, ck = rep.engines[0], rep.checkpoint
    arch = load_model(cfg_json)[0] if rep.model.architecture else None
    w = gt.deployed_workload(inv, cfg, arch)
    split_error = None
    if arch is not None:
        try:
            check_tensor_parallel(arch, g, w.tp)
        except QuantAdviseError as exc:
            split_error = exc.message.replace(f"--gpus {w.tp}", f"tensor-parallel-size {w.tp}")

    served_notes: list[str] = []
    scheme, scheme_id, scheme_from = served_scheme(ck, res, served_notes)
    kv_id, kv_t, kv_from = _served_kv(res, kv_flag, served_notes)
    decl = gt.Declared()
    if cfg.quantization is not None:
        dscheme = declared(loaded, "quantization", lambda: catalog.get_scheme(cfg.quantization))
        decl = gt.Declared(scheme_id=dscheme.id, scheme=dscheme)
    if cfg.kv_cache_dtype is not None:
        decl.kv_id = declared(loaded, "kv_cache_dtype", lambda: catalog.kv_preset(cfg.kv_cache_dtype)).id
        decl.kv_as_written = cfg.kv_cache_dtype
    weight_bits = None
    if scheme is None and ck is not None and ck.groups and ck.groups[0].weight is not None:
        weight_bits = ck.groups[0].weight.bits
    served = gt.Served(scheme=scheme, scheme_id=scheme_id, scheme_from=scheme_from, kv_id=kv_id, kv=kv_t,
                       kv_from=kv_from, weight_bits=weight_bits)

    prof = cfg.profile
    profile_path = (loaded.path(prof) if "profile" in loaded.lines else str(root / prof)) if prof else None
    wdata = {"model": str(src.location) if src.kind == "local" else model_ref, "gpu": g.id, "gpus": w.tp,
             "engine": choice.name, "engine_version": eng.version, "batch": w.concurrency, "ctx": w.ctx,
             "prompt": cfg.workload.prompt, "output": cfg.workload.output, "mode": cfg.workload.mode,
             "task": cfg.workload.task, "memory_utilization": w.memory_utilization, "reserve_gb": w.reserve_gb,
             "profile": profile_path}
    wdata = {k: v for k, v in wdata.items() if v is not None}
    from ..workload import parse_workload

    workload = parse_workload(wdata, where=f"{loaded.file or 'command line'}: workload")

    memory = None
    if arch is not None and (scheme is not None or rep.size is not None):
        if ck is not None and ck.is_quantized and rep.size is not None:
            wb, wsrc = rep.size.total_bytes, "the checkpoint's tensors"
        elif scheme is not None:
            wb, wsrc = size_model(arch, scheme).total_bytes, f"{scheme_id} weights"
        else:
            wb, wsrc = rep.size.total_bytes, "the checkpoint's tensors"  # type: ignore[union-attr]
        a = arch
        memory = gt.Memory(weights_bytes=wb, weights_source=wsrc, kv_bytes_per_token=bytes_per_token(a, kv_t),
                           sequence_bytes=lambda n: sequence_bytes(a, kv_t, n),
                           kv_tokens_per_sequence=workload.kv_tokens_per_sequence,
                           continuous=workload.serving_mode == "continuous")

    perf, speed_note = None, None
    if arch is not None and scheme is not None and split_error is None:
        perf, speed_note = _price(arch, g, workload, scheme, scheme_id, served, profile_path, wdata)

    facts = gt.Facts(
        inv=inv, site=site, source=source, engine=choice, engine_label=res.label, model_ref=model_ref,
        model_shown=model_ref if src.kind != "local" else rel(model_ref), model_from=model_from, resolution=res,
        checkpoint_summary=rep.summary, inspect_notes=list(rep.notes), arch_missing=arch is None,
        split_error=split_error, served=served, declared=decl, gpu_id=g.id, gpu_memory_bytes=g.memory_bytes,
        workload=w, mode=workload.serving_mode, context=workload.context, memory=memory, performance=perf,
        speed_note=speed_note, evidence_declared=cfg.accuracy is not None, served_notes=served_notes,
    )
    version_declared = cfg.engine_version if "engine_version" in loaded.lines else None
    return gt.judge(facts, cfg, version_declared, out)


def _price(arch: Any, g: GPU, workload: Any, scheme: Scheme, scheme_id: str, served: Served,
           profile_path: str | None, wdata: dict[str, Any]) -> tuple[Any, str | None]:
    """The deployed scheme and bf16 priced at the deployed workload, next to the recommendation."""
    from ..advisor.speed import predict as price
    from ..gate.target import perf_check
    from ..perf.efficiency import resolve as resolve_eff
    from .common import load_profiles
    from .recommend import recommend

    try:
        profiles = load_profiles(False, profile_path)
        names = (g.id, g.name, *g.aliases)
        eff = resolve_eff(profiles, names, catalog.scheme_names(scheme.id) or (scheme.id,))
        dep = price(arch, g, workload, scheme, eff, kv=served.kv, kv_name=served.kv_id)
        bf16 = catalog.get_scheme("bf16")
        base = price(arch, g, workload, bf16, resolve_eff(profiles, names, catalog.scheme_names("bf16")), kv=served.kv,
                     kv_name=served.kv_id)
    except QuantAdviseError as exc:
        return None, f"speed not predicted: {exc}"
    note = None
    rec = None
    try:
        rec = recommend(dict(wdata))
    except QuantAdviseError as exc:
        note = f"no recommendation for this workload: {exc}"
    return perf_check(scheme_id=scheme_id, kv_id=served.kv_id, deployed=dep, bf16=base, recommended=rec), note

