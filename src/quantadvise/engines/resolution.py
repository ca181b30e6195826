"""Resolution: what one engine release does with one checkpoint on one GPU.

:func:`resolve` takes a parsed checkpoint (:mod:`quantadvise.checkpoint`), an engine release
(:class:`~quantadvise.engines.data.EngineData`), a GPU's compute capability and the user's
``--quantization`` / ``--kv-cache-dtype``, and predicts the method the engine resolves to, the
compressed-tensors scheme class each config group dispatches to, and every refusal or warning,
quoting the engine's own message. Each refusal/warning is a :class:`Finding` with a stable ``kind``
(the CI gate maps kinds to rule ids).
"""

from typing import TYPE_CHECKING, Any

from pydantic import Field

from ..results import Out
from .config_checks import check_rules as _check_rules
from .config_checks import check_without_config as _check_without_config
from .config_checks import no_quant_method as _no_quant_method
from .data import Dispatch, EngineData, Method, Override
from .findings import Collector, Finding
from .kernels import GroupKernel
from .kv_checks import check_kv

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..checkpoint.quant import CheckpointQuant, QuantGroup


class GroupDispatch(Out):
    """The kernel scheme one config group dispatches to (compressed-tensors and per-scheme gates)."""

    group: str
    scheme_class: str | None
    label: str = ""
    min_capability: int | None = None
    row: str | None = None
    note: str = ""


class EngineResolution(Out):
    """What one engine release does with one checkpoint on one GPU."""

    engine: str
    version: str
    label: str
    platform: str
    capability: int | None
    user_quantization: str | None
    checkpoint_method: str | None  # quant_method as this engine reads it (after its own parsing)
    resolved_method: str | None  # None: loads unquantized (or refused before a method was chosen)
    config_class: str | None = None
    method_kind: str | None = None
    min_capability: int | None = None
    optimized: bool | None = None
    steps: list[str] = []
    groups: list[GroupDispatch] = []
    kv_cache_dtype: str = "auto"
    kv_cache_dtype_resolved: str | None = None
    findings: list[Finding] = []
    # the GEMM kernel this release runs for each config group on the GPU (engines/kernels, filled by
    # inspect); None: not looked up, or no kernel table on file for this release. Not in the JSON
    # (``InspectReport.kernels`` carries it); ``check --upgrade-to`` compares it (QA112).
    kernels: list[GroupKernel] | None = Field(default=None, exclude=True)

    @property
    def refused(self) -> bool:
        return any(f.severity == "error" for f in self.findings)

    @property
    def status(self) -> str:
        if self.refused:
            return "refused"
        return "warnings" if any(f.severity == "warning" for f in self.findings) else "ok"


def serving_dtype(torch_dtype: str | None) -> str:
    """The activation dtype an engine runs with ``--dtype auto``: the config's 16-bit dtype; a
    float32 config runs in float16 (vLLM's and SGLang's auto rule)."""
    t = (torch_dtype or "bfloat16").lower().removeprefix("torch.")
    t = {"half": "float16", "float": "float32", "bf16": "bfloat16", "fp16": "float16"}.get(t, t)
    return "float16" if t == "float32" else t


def _marlin_ok(kind: str, ck: "CheckpointQuant", engine: EngineData, capability: int | None) -> bool:
    """Whether the engine's ``is_<kind>_marlin_compatible`` claims the checkpoint: every field it reads
    present, a (bits, sym / zero_point) the Marlin kernels take (``marlin_compatible``, extracted from
    the config class's TYPE_MAP and the Marlin type list), a Marlin group size and a capable GPU."""
    d = ck.details
    compat = next((m for m in engine.marlin_compatible if m.id == kind), None)
    if compat is None or not compat.accepts(d):
        return False
    if kind == "gptq":
        group = d.get("group_size")
        if group is None or "desc_act" not in d or d.get("checkpoint_format") == "marlin":
            return False
    else:
        group = d.get("q_group_size")
        if group is None:
            return False
    if engine.marlin_group_sizes and group not in engine.marlin_group_sizes:
        return False
    return capability is None or engine.marlin_min_capability is None or capability >= engine.marlin_min_capability


def _fires(ov: Override, ck: "CheckpointQuant", ck_method: str, user: str | None, model_type: str | None,
           platform: str, engine: EngineData, capability: int | None) -> bool:
    if ov.checkpoint_methods and ck_method not in ov.checkpoint_methods:
        return False
    if ov.checkpoint_method_prefix and not ck_method.startswith(ov.checkpoint_method_prefix):
        return False
    if ov.quant_algo is not None and not ov.quant_algo.matches(ck.quant_algo):
        return False
    if ov.model_types and model_type not in ov.model_types:
        return False
    if ov.user_in is not None and user not in ov.user_in:
        return False
    if ov.platforms and platform not in ov.platforms:
        return False
    if platform in ov.not_platforms:
        return False
    return not (ov.requires_marlin and not _marlin_ok(ov.requires_marlin, ck, engine, capability))


def _pylist(names: list[str] | tuple[str, ...]) -> str:
    return "[" + ", ".join(repr(n) for n in names) + "]"


def resolve(
    engine: EngineData,
    ck: "CheckpointQuant | None",
    *,
    capability: int | None = None,
    platform: str = "cuda",
    quantization: str | None = None,
    kv_cache_dtype: str | None = None,
    model_type: str | None = None,
    model_dtype: str | None = None,
    allow_deprecated: bool = False,
) -> EngineResolution:
    """Predict what ``engine`` does with checkpoint ``ck`` (None = unquantized): the method it
    resolves to, the scheme each config group dispatches to, and every refusal or warning."""
    ctx = Collector(engine)
    steps: list[str] = []
    user = quantization.strip().lower() if quantization else None
    dtype = serving_dtype(model_dtype)
    kv = (kv_cache_dtype or "auto").strip().lower()

    def done(method: Method | None = None, groups: list[GroupDispatch] | None = None,
             kv_resolved: str | None = None) -> EngineResolution:
        return EngineResolution(
            engine=engine.engine, version=engine.version, label=engine.label, platform=platform, capability=capability,
            user_quantization=user, checkpoint_method=ctx.checkpoint_method, resolved_method=ctx.resolved,
            config_class=method.config_class if method else None, method_kind=method.kind if method else None,
            min_capability=method.min_capability if method else None, optimized=method.optimized if method else None,
            steps=steps, groups=groups or [], kv_cache_dtype=kv, kv_cache_dtype_resolved=kv_resolved,
            findings=ctx.findings,
        )

    user_row = engine.method(user)
    if user_row is not None and user_row.kind == "escape_hatch":
        steps.append(f"--quantization {user}: explicit opt-out, checkpoint quantization auto-detection disabled")
        ctx.add("unquant_opt_out", "info", f"--quantization {user} tells {engine.label} to ignore the checkpoint's "
                "quantization_config" + (" (its quantized tensors will not load as 16-bit weights)" if ck and
                                        ck.is_quantized else ""), subject=user)
        kv_res = check_kv(ctx, engine, ck, None, kv, capability, platform)
        return done(None, kv_resolved=kv_res)

    # 1. the checkpoint's method as this engine reads it
    ck_method: str | None = None
    if ck is not None:
        reading = None if ck.method_declared or not ck.engines_read_it else engine.reading("no-quant-method")
        if reading is not None:
            ck_method = _no_quant_method(ctx, engine, ck, reading, user, steps)
        elif ck.engines_read_it:
            ck_method = ck.quant_method
            steps.append(f"checkpoint {ck.found_in}: quant_method '{ck.quant_method}'"
                         + (f", quant_algo {ck.quant_algo}" if ck.quant_algo else ""))
            for sp in engine.method_spellings:
                if sp.old in ck_method:
                    spelled = ck_method.replace(sp.old, sp.new)
                    steps.append(f"{engine.display_name} reads quant_method '{ck_method}' as '{spelled}'")
                    ck_method = spelled
        elif user is None:
            ctx.add("config_in_side_file", "error",
                    f"the quantization parameters are only in {ck.found_in}; {engine.label} reads config.json's "
                    f"quantization_config, treats the checkpoint as unquantized and cannot load its packed tensors: "
                    f"pass --quantization {ck.quant_method}", subject=ck.found_in)
        else:
            steps.append(f"{ck.found_in} is read because --quantization {user} asks for it")
        for rw in engine.rewrites:
            if ck_method and ck_method.startswith(rw.checkpoint_method_prefix) \
                    and rw.quant_algo.matches(ck.quant_algo) \
                    and (rw.has_nvfp4_layers is None or rw.has_nvfp4_layers == bool(ck.has_nvfp4_layers)):
                steps.append(f"{engine.display_name} parses quant_algo {ck.quant_algo} as '{rw.becomes}'")
                ck_method = rw.becomes
                break
    ctx.checkpoint_method = ck_method
    if ck is not None and ck_method is not None and _check_rules(ctx, engine, ck, None):
        # the engine refuses while reading the config, before any method is chosen
        return done(None)

    # 2. override probing
    if ck_method is not None and ck is not None and user not in engine.requantization_methods:
        order = list(engine.override_order) or list(dict.fromkeys(o.probed_as[0] for o in engine.overrides))
        if user == "humming" and "humming" in order:
            order.remove("humming")
            order.insert(0, "humming")
        seen: set[str] = set()
        for name in order:
            for ov in engine.overrides:
                if name not in ov.probed_as or ov.id in seen:
                    continue
                seen.add(ov.id)
                if _fires(ov, ck, ck_method, user, model_type, platform, engine, capability):
                    new = ck_method if ov.returns == "checkpoint" else ov.returns
                    steps.append(f"override {ov.id}: '{ck_method}'" + (f" with --quantization {user}" if user else "")
                                 + f" -> '{new}'")
                    ck_method = user = new
                    break
            else:
                continue
            break
        if user in ("awq", "gptq") and ck_method == user and engine.message("marlin_forced_off") and \
                _marlin_ok(user, ck, engine, capability):
            marlin = f"{user}_marlin"
            ctx.add("marlin_forced_off", "info", f"the checkpoint fits {marlin}, but --quantization {user} forces the "
                    f"slower kernels; drop the flag or pass {marlin}", subject=user, marlin=marlin, quantization=user)

    # 3. deferred online shorthands yield to checkpoint metadata
    sh = engine.shorthand(user)
    if sh is not None and sh.deferred and ck_method is not None:
        steps.append(f"--quantization {user} is deferred: the checkpoint's own '{ck_method}' metadata wins")
        user = None

    # 4. checkpoint vs --quantization
    if ck_method is None:
        resolved = user
    elif user is None:
        resolved = ck_method
    elif user == ck_method:
        resolved = user
    else:
        compat = next((c for c in engine.compatible if c.id == user), None)
        if compat is not None and ck_method in compat.checkpoint_methods:
            ctx.add("compatible_override", "info", f"--quantization {user} is on {engine.label}'s list of methods "
                    f"that may run a '{ck_method}' checkpoint", subject=user, quantization=user,
                    checkpoint_method=ck_method)
            resolved = user
        elif user in engine.requantization_methods:
            ctx.add("requantization", "info", f"{engine.label} requantizes the '{ck_method}' weights to {user} at "
                    "load: re-validate accuracy", subject=user, quantization=user, checkpoint_method=ck_method)
            resolved = user
        else:
            ctx.add("method_mismatch", "error", f"the checkpoint declares '{ck_method}' but --quantization is "
                    f"'{user}'; drop --quantization (or pass {ck_method})", subject=user, quantization=user,
                    checkpoint_method=ck_method)
            ctx.resolved = None
            return done(None, kv_resolved=check_kv(ctx, engine, ck, None, kv, capability, platform))

    # 5. vLLM: --quantization fp8 on an unquantized checkpoint is the online shorthand now
    if ck_method is None and resolved == "fp8" and engine.message("fp8_online_deprecated") and \
            engine.shorthand("fp8_per_tensor") is not None:
        ctx.add("fp8_online_deprecated", "warning", "--quantization fp8 on an unquantized checkpoint is deprecated "
                "online quantization and becomes fp8_per_tensor; pass --quantization fp8_per_tensor",
                subject="fp8")
        steps.append("--quantization fp8 without checkpoint metadata -> fp8_per_tensor")
        resolved = "fp8_per_tensor"
    ctx.resolved = resolved
    if resolved is None:
        steps.append("no quantization: 16-bit weights")
        return done(None, kv_resolved=check_kv(ctx, engine, ck, None, kv, capability, platform))

    # 5b. GGUF weight files: the engines' default loaders look for safetensors/bin files in a folder
    if ck is not None and ck.family == "gguf" and ck.details.get("path_kind") in ("file", "folder"):
        if ck.details["path_kind"] == "folder":
            ctx.add("no_weights", "error", f"the folder holds only .gguf weights; {engine.label}'s loader looks for "
                    "safetensors / .bin files and finds none"
                    + ("; pass the .gguf file itself as the model path" if engine.method("gguf") else
                       f"; {engine.label} has no GGUF loader"), subject="gguf", model=ck.details.get("path"))
            return done(None)
        if engine.method("gguf") is None:
            ctx.add("gguf_unsupported", "error", f"{engine.label} has no GGUF loader: 'gguf' is neither one of its "
                    "quantization methods nor a load format; convert the model to safetensors", subject="gguf")
            return done(None)

    # 6. is the name registered here?
    method = engine.method(resolved)
    if method is None or not method.registered:
        why = ("not in this engine's registry" if method is None else
               f"a CLI choice registered only on {', '.join(method.registered_on) or 'other platforms'}")
        name = f"'{resolved}'" if resolved else "the empty quant_method '' (the config names none)"
        ctx.add("unknown_method", "error", f"{name} is {why} in {engine.label}"
                + (f" ({ck.family} checkpoints do not load here)" if ck is not None and ck_method == resolved else ""),
                subject=resolved, quantization=resolved, supported=_pylist(engine.registered_names))
        return done(None, kv_resolved=check_kv(ctx, engine, ck, None, kv, capability, platform))
    steps.append(f"'{resolved}' -> {method.config_class}"
                 + (f" (get_name {method.canonical})" if method.canonical else ""))
    # The rest follows the engine's own order, and stops where the engine raises: the model config
    # checks (vLLM ModelConfig._verify_quantization, config/model.py:1464-1485; SGLang
    # _verify_quantization), then building the config class (get_quant_config) and the checks made on
    # it (vLLM VllmConfig._get_quantization_config, config/vllm.py:922-943; SGLang model_loader/loader.py
    # _get_quantization_config: capability, then the activation dtype), then the model's layers (the
    # compressed-tensors scheme of each group, the weight-only kernels). A refusal makes every later
    # stage unreachable, so nothing past it is reported (the KV cache flag is checked regardless).
    def stop() -> EngineResolution:
        return done(method, kv_resolved=check_kv(ctx, engine, ck, method, kv, capability, platform))

    # 7. platform allow-list
    plist = engine.platform_list(platform) if platform != "cuda" else None
    if plist is not None and resolved not in plist.allowed:
        ctx.add("platform_unsupported", "error", f"'{resolved}' is not on {engine.label}'s {platform} allow-list",
                subject=resolved, quantization=resolved, device=platform)
        return stop()

    # 8. deprecated
    if method.deprecated:
        if allow_deprecated:
            ctx.add("deprecated_method_allowed", "warning", f"'{resolved}' is deprecated in {engine.label} and will be "
                    "removed; re-export the checkpoint in a supported format", subject=resolved, quantization=resolved)
        else:
            ctx.add("deprecated_method", "error", f"'{resolved}' is deprecated in {engine.label}: it refuses to start "
                    "without --allow-deprecated-quantization", subject=resolved, quantization=resolved)
            return stop()

    # 9. SGLang's optimized allow-list
    if engine.optimized_allow_list is not None and method.optimized is False:
        ex = engine.not_optimized_exempt
        exempt = ex is not None and resolved in ex.methods and capability is not None and \
            capability >= ex.min_capability and (ex.max_capability is None or capability <= ex.max_capability)
        if not exempt:
            fits_marlin = resolved in ("awq", "gptq") and ck is not None and \
                _marlin_ok(resolved, ck, engine, capability)
            ctx.add("not_optimized", "warning", f"'{resolved}' is outside {engine.label}'s optimized list: it "
                    "loads but may run slower than bf16"
                    + ("; the checkpoint's Marlin path (drop --quantization) is optimized" if fits_marlin else ""),
                    subject=resolved, quantization=resolved)

    # 10. get_quant_config: no config to read, or the config class refuses what it reads
    _check_without_config(ctx, engine, ck, ck_method, method, resolved, steps)
    if ck is not None and ck_method is not None:
        _check_rules(ctx, engine, ck, resolved)
    if ck is not None and ck.family == "fp8" and method.config_class and "Fp8" in method.config_class \
            and ck.weight_block_size and ck.activation_scheme == "static":
        ctx.add("block_static_activations", "error", "block-quantized fp8 weights need dynamic activations "
                "(activation_scheme: dynamic)", subject="activation_scheme", activation_scheme="static")
    if ctx.refused:
        return stop()

    # 11. compute capability
    if capability is not None and method.min_capability is not None and capability < method.min_capability:
        ctx.add("capability_too_low", "error", f"'{resolved}' needs compute capability {method.min_capability}; this "
                f"GPU has {capability}", subject=resolved, quantization=resolved,
                min_capability=method.min_capability, capability=capability)
        return stop()
    if capability is not None and method.effective_min_capability and capability < method.effective_min_capability:
        ctx.add("kernel_capability", "warning", f"'{resolved}' passes the config-level gate but its kernels need "
                f"compute capability {method.effective_min_capability}", subject=resolved)

    # 12. activation dtype
    if method.supported_act_dtypes and dtype not in method.supported_act_dtypes:
        ctx.add("act_dtype_unsupported", "error", f"'{resolved}' runs with {', '.join(method.supported_act_dtypes)} "
                f"activations, the model's dtype is {dtype}: pass --dtype {method.supported_act_dtypes[0]}",
                subject=resolved, dtype=f"torch.{dtype}", quantization=resolved,
                supported="[" + ", ".join(f"torch.{d}" for d in method.supported_act_dtypes) + "]")
        return stop()

    # the weight-only fallbacks are Marlin kernels, which exist on CUDA only
    if platform == "cuda" and capability is not None and ck is not None and ck.is_quantized:
        _weight_only(ctx, engine, method, resolved, ck, capability)

    groups: list[GroupDispatch] = []
    # 13. the model's layers: compressed-tensors checks and scheme dispatch
    if ck is not None and method.config_class == "CompressedTensorsConfig" and engine.compressed_tensors is not None:
        groups = _check_ct(ctx, engine, ck, capability, platform)
    elif ck is not None and method.scheme_gates:
        groups = _check_gates(ctx, engine, ck, method, capability)
    # 14. the layers' kernels at the first forward pass: a kernel the release has no build of for this GPU
    for r in engine.kernel_refusals:
        hit = next((s for g in groups if r.applies(s := g.scheme_class or g.label, capability, platform)), None)
        if hit is not None:
            ctx.add(r.message, "error", f"{hit} layers run a kernel {engine.label} has no build of for compute "
                    f"capability {capability}: the model loads, then the engine stops at its first forward pass "
                    f"(start-up); {r.note}", subject=hit, capability=capability)

    kv_res = check_kv(ctx, engine, ck, method, kv, capability, platform)
    return done(method, groups, kv_res)


def _is_block(g: "QuantGroup | None", ck: "CheckpointQuant") -> bool:
    return (g is not None and g.weights is not None and g.weights.strategy == "block") or bool(ck.weight_block_size)


def _marlin_group(method: Method, g: "QuantGroup | None", ck: "CheckpointQuant", capability: int) -> bool:
    """Whether the method's kernel list lands on Marlin for group ``g`` on ``capability`` (the
    humming-preferred capabilities are the caller's): 16-bit-activation groups where
    ``weight_only_a16_except`` is set, on every other capability; else below ``weight_only_below``
    (block-quantized weights: ``weight_only_block_below``)."""
    if g is not None and g.input_activations is None and method.weight_only_a16_except is not None:
        return capability not in method.weight_only_a16_except
    below = method.weight_only_block_below if _is_block(g, ck) and method.weight_only_block_below \
        else method.weight_only_below
    return below is not None and capability < below


def _weight_only(ctx: Collector, engine: EngineData, method: Method, resolved: str, ck: "CheckpointQuant",
                 capability: int) -> None:
    """The method's weight-only fallback: the engine's warning where its kernel list lands on Marlin
    (the code path that logs it), a note where a kernel that logs nothing runs the weights weight-only
    instead (Humming on the engine's humming-preferred capabilities)."""
    if method.weight_only_below is None and method.weight_only_block_below is None \
            and method.weight_only_a16_except is None:
        return
    groups: list[QuantGroup | None] = [g for g in ck.groups if g.weights is not None] or [None]
    marlin = [g for g in groups if _marlin_group(method, g, ck, capability)]
    if not marlin:
        return
    a16 = method.weight_only_a16_except is not None and all(
        g is not None and g.input_activations is None for g in marlin)
    if capability in engine.humming_preferred:
        if not a16:  # a W8A8 / W4A4 checkpoint that runs weight-only, silently
            ctx.add("weight_only_silent", "info", f"'{resolved}' on compute capability {capability} runs the "
                    f"weights weight-only: {engine.label} prefers its Humming kernel over Marlin on this GPU and logs "
                    "no warning; the activations stay 16-bit, so compute-bound batches gain nothing over bf16",
                    subject=resolved)
        return
    if a16:
        native = "/".join(map(str, method.weight_only_a16_except or ()))
        text = (f"'{resolved}' on compute capability {capability} runs its 16-bit-activation layers through the "
                f"Marlin weight-only kernel (the native weight-only kernel needs compute capability {native})")
    else:
        below = method.weight_only_block_below if method.weight_only_block_below and \
            all(_is_block(g, ck) for g in marlin) else method.weight_only_below
        text = (f"'{resolved}' on compute capability {capability} (below {below}) runs the weights weight-only "
                "through Marlin: the activations stay 16-bit, so compute-bound batches gain nothing over bf16")
    ctx.add(method.weight_only_message or "weight_only_fallback", "warning", text, subject=resolved)


def _row_message(engine: EngineData, row: Dispatch, g: "QuantGroup", ck: "CheckpointQuant",
                 capability: int | None) -> str | None:
    """The message a dispatch row's own scheme logs for group ``g``: unconditional, or only where its
    kernel list lands on the Marlin kernel that logs it (``message_below`` / ``message_block_below``,
    not ``message_except``, not the humming-preferred capabilities)."""
    if row.message is None:
        return None
    conditional = row.message_below is not None or row.message_block_below is not None or bool(row.message_except)
    if not conditional:
        return row.message
    if capability is None or capability in row.message_except or capability in engine.humming_preferred:
        return None
    below = row.message_block_below if _is_block(g, ck) and row.message_block_below else row.message_below
    return row.message if below is None or capability < below else None


def _check_ct(ctx: Collector, engine: EngineData, ck: "CheckpointQuant", capability: int | None,
              platform: str = "cuda") -> list[GroupDispatch]:
    ct = engine.compressed_tensors
    assert ct is not None
    out: list[GroupDispatch] = []
    if ck.transforms and not ct.reads_transform_config:
        online = bool(ck.details.get("transform_online"))
        ctx.add("transform_config_ignored", "warning" if online else "info", f"the checkpoint has a "
                f"transform_config ({'; '.join(ck.transforms)}) that {engine.label} never reads: "
                + ("the rotations it applies at run time (input/output/attention) are skipped, so the outputs are "
                   "wrong; serve it with an engine that reads transform_config" if online else
                   "every transform is fused into the stored weights, so nothing is lost"),
                subject="transform_config")
    if ck.sparsity and ct.rejects_sparsity:
        ctx.add("ct_sparsity_rejected", "error", f"{engine.label} refuses compressed-tensors sparsity_config "
                f"({ck.sparsity.get('format', 'sparse')}); use a dense export", subject="sparsity_config")
    cutlass_24 = ct.rejects_cutlass_24 and _sparse_24(ck.sparsity)
    if cutlass_24 and not any(g.weights is not None for g in ck.groups):
        ctx.add("ct_sparsity_24", "error", f"{engine.label} builds no 2:4-sparse layer: the sparse layers would take "
                "its Cutlass 2:4 path, which raises at layer construction; use a dense export", subject="sparsity_config")
    for g in ck.groups:
        if g.weights is None:
            continue
        if cutlass_24 and _cutlass_24_layer(g):
            ctx.add("ct_sparsity_24", "error", f"config group '{g.name}' is 2:4 sparse {g.weights.describe()}: "
                    f"{engine.label} routes it to its Cutlass 2:4 path, which raises at layer construction; use a "
                    "dense export", subject=g.name)
            out.append(GroupDispatch(group=g.name, scheme_class=None, label="2:4 sparse", note="refused"))
            continue
        if ct.mxfp4_moe_method and _experts_only(g) and (_mxfp4_weights(g) or "mxfp4" in (ck.format or "")):
            ctx.add("mxfp4_moe", "info", f"config group '{g.name}' quantizes only MoE experts in MXFP4: "
                    f"{engine.label} serves them with {ct.mxfp4_moe_method}, before its linear scheme dispatch",
                    subject=g.name)
            out.append(GroupDispatch(group=g.name, scheme_class=ct.mxfp4_moe_method, label="MXFP4 MoE"))
            continue
        if g.weights.actorder in ct.rejects_actorder:
            ctx.add("ct_actorder_rejected", "error", f"config group '{g.name}': weights.actorder "
                    f"'{g.weights.actorder}' is refused by {engine.label} (re-export with actorder 'weight')",
                    subject=g.name)
        if ct.attention_only_groups == "skipped" and g.targets and all(t.endswith("Attention") for t in g.targets):
            ctx.add("ct_attention_group_skipped", "warning", f"config group '{g.name}' targets only attention "
                    f"modules; {engine.label} skips it", subject=g.name)
            continue
        chosen = None
        for row in sorted(ct.dispatch, key=lambda r: r.order):
            if row.formats and (g.format or "") not in row.formats:
                continue
            if not row.weights.matches(g.weights):
                continue
            if row.activations == "none":
                if g.input_activations is not None:
                    continue
            elif row.activations != "any" and not row.activations.matches(g.input_activations):
                continue
            if row.output_activations is not None and not row.output_activations.matches(g.output_activations):
                continue
            if row.exact_capability is not None and capability is not None and capability != row.exact_capability:
                continue
            chosen = row
            break
        if chosen is None:
            ctx.add("ct_no_scheme", "error", f"config group '{g.name}' ({g.weights.describe()}"
                    + (f", activations {g.input_activations.describe()}" if g.input_activations else "")
                    + f", format {g.format}) matches no compressed-tensors scheme in {engine.label}", subject=g.name)
            out.append(GroupDispatch(group=g.name, scheme_class=None, note="no scheme"))
            continue
        if chosen.scheme is None:
            ctx.add(chosen.error or "ct_no_scheme", "error", f"config group '{g.name}': {chosen.label} is refused by "
                    f"{engine.label}" + (f": {chosen.notes}" if chosen.notes else ""), subject=g.name)
            out.append(GroupDispatch(group=g.name, scheme_class=None, label=chosen.label, row=chosen.id))
            continue
        scheme, min_cap, note = chosen.scheme, chosen.min_capability, ""
        said = _row_message(engine, chosen, g, ck, capability)
        if chosen.fallback and (not chosen.fallback_platforms or platform in chosen.fallback_platforms) \
                and capability is not None and chosen.fallback_below and capability < chosen.fallback_below:
            scheme, min_cap = chosen.fallback, chosen.fallback_min_capability
            note = f"below compute capability {chosen.fallback_below}: weight-only fallback"
            # the fallback's Marlin kernel logs its message; where the engine prefers Humming, nothing
            said = chosen.fallback_message if capability not in engine.humming_preferred else None
        out.append(GroupDispatch(group=g.name, scheme_class=scheme, label=chosen.label, min_capability=min_cap,
                                 row=chosen.id, note=note))
        refused = capability is not None and min_cap is not None and capability < min_cap
        if note and not said and not refused:
            ctx.add("weight_only_silent", "info", f"config group '{g.name}' ({chosen.label}) runs as {scheme} on "
                    f"compute capability {capability}, below {chosen.fallback_below}: the checkpoint's activation "
                    f"quantization is ignored and the weights run weight-only; {engine.label} logs no warning for "
                    "it", subject=g.name)
        if said and not refused and not any(f.kind == said for f in ctx.findings):
            why = (f" on compute capability {capability}, below {chosen.fallback_below}: the checkpoint's activation "
                   "quantization is ignored and the weights run weight-only" if note else
                   (f" on compute capability {capability}" if capability is not None else "")
                   + ": the weights run weight-only through Marlin")
            ctx.add(said, "warning", f"config group '{g.name}' ({chosen.label}) runs as {scheme}{why}, so "
                    "compute-bound batches gain nothing over 16-bit activations", subject=g.name)
        if refused:
            ctx.add(chosen.below_message or "scheme_capability_too_low", "error", f"config group '{g.name}' "
                    f"dispatches to {scheme}, which needs compute capability {min_cap}; this GPU has {capability}",
                    subject=g.name, min_capability=min_cap, capability=capability)
    return out


def _sparse_24(sp: dict[str, Any] | None) -> bool:
    """SGLang's ``supports_cutlass_24`` sparsity half: structure 2:4 stored dense or sparse-24-bitmask."""
    if not sp:
        return False
    return str(sp.get("sparsity_structure")) == "2:4" and sp.get("format") in ("dense", "sparse-24-bitmask")


def _cutlass_24_layer(g: "QuantGroup") -> bool:
    """The quantization half: unquantized, or 8-bit weights per tensor|channel with 8-bit activations per
    tensor|token (weight-only falls through to the scheme dispatch)."""
    w, a = g.weights, g.input_activations
    if w is None or a is None:
        return w is None and a is None
    return w.num_bits == a.num_bits == 8 and w.strategy in ("tensor", "channel") and a.strategy in ("tensor", "token")


def _experts_only(g: "QuantGroup") -> bool:
    """The group's targets name only MoE experts (a FusedMoE class, or patterns on ``experts``)."""
    return bool(g.targets) and all(t == "FusedMoE" or "experts" in t.lower() for t in g.targets)


def _mxfp4_weights(g: "QuantGroup") -> bool:
    w = g.weights
    return w is not None and w.type == "float" and w.num_bits == 4 and w.strategy == "group" and w.group_size == 32 \
        and w.symmetric


def _check_gates(ctx: Collector, engine: EngineData, ck: "CheckpointQuant", method: Method,
                 capability: int | None) -> list[GroupDispatch]:
    out = []
    for g in ck.groups:
        gate = next((sg for sg in method.scheme_gates if sg.scheme in g.labels), None)
        out.append(GroupDispatch(group=g.name, scheme_class=None, label=gate.scheme if gate else "",
                                 min_capability=gate.min_capability if gate else None,
                                 note="" if gate else "no per-scheme gate on file"))
        if gate and capability is not None and capability < gate.min_capability:
            ctx.add("scheme_capability_too_low", "error", f"config group '{g.name}' ({gate.scheme}) needs compute "
                    f"capability {gate.min_capability} in {method.id}; this GPU has {capability}", subject=g.name,
                    min_capability=gate.min_capability, capability=capability)
    return out
