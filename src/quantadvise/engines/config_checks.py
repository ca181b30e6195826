"""The checks an engine makes while it reads the checkpoint's quantization config and builds the config
class (:func:`quantadvise.engines.resolution.resolve` calls them): what ``get_quant_config`` does when
the checkpoint carries none (``Method.without_config``), and the values a config class refuses
(``config_rules``); and what the engine does with the model dtype on the GPU (``dtype_checks``:
:func:`dtype_refusal`, :func:`dtype_fallback`). Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..checkpoint.quant import CheckpointQuant
    from .data import ConfigReading, DtypeCheck, EngineData, Method
    from .findings import Collector


def check_without_config(ctx: Collector, engine: EngineData, ck: CheckpointQuant | None, ck_method: str | None,
                          method: Method, resolved: str, steps: list[str]) -> None:
    """``--quantization`` names a method and the engine reads no quantization config from the checkpoint:
    what its ``get_quant_config`` does then (``Method.without_config``, extracted from the source)."""
    wc = method.without_config
    if ck_method is not None:
        return
    if wc is None:
        if method.config_filenames and (ck is None or ck.found_in not in method.config_filenames):
            steps.append(f"no {' or '.join(method.config_filenames)}: {engine.label} builds '{resolved}' without "
                         "one (its get_quant_config handles the name before the file lookup)")
        return
    if wc.raises == "config_file_missing":
        if ck is not None and ck.found_in in method.config_filenames:
            return  # the side file it looks for is there
        ctx.add("config_file_missing", "error", f"--quantization {resolved} reads its parameters from "
                f"{' or '.join(method.config_filenames)}, and this checkpoint has no quantization config: "
                f"{engine.label} refuses to start. Drop --quantization (or point it at a {resolved} checkpoint)",
                subject=resolved, quantization=resolved)
        return
    ctx.add("config_class_needs_arguments", "error", f"--quantization {resolved} reads its parameters from the "
            f"checkpoint's quantization_config and this checkpoint has none: {engine.label} then builds "
            f"{method.config_class} with no arguments, which its __init__ does not accept (TypeError). Drop "
            f"--quantization (or point it at a {resolved} checkpoint)",
            subject=resolved, **wc.type_error())


def check_rules(ctx: Collector, engine: EngineData, ck: CheckpointQuant, resolved: str | None) -> bool:
    """The config checks of the class the checkpoint resolves to (``resolved`` None: the checks made
    while reading the config, before any method is chosen). True when one refused."""
    for rule in engine.config_rules:
        if bool(rule.methods) != (resolved is not None) or (rule.methods and resolved not in rule.methods):
            continue
        if (rule.family is not None and ck.family != rule.family) or (rule.found_in and ck.found_in not in
                                                                       rule.found_in):
            continue
        if any(ck.details.get(k) != v for k, v in rule.only_if.items()):
            continue
        if not rule.violated(ck.details):
            continue
        got = dict(zip(rule.fields, rule.values(ck.details), strict=True))
        shown = ", ".join(f"{k}={v}" for k, v in got.items())
        ok = " or ".join("/".join(str(v) for v in a) for a in rule.allowed)
        msg = engine.message(rule.message)
        ctx.add(rule.message, "error", f"the checkpoint's {shown} is not one {engine.label} accepts"
                + (f" for '{resolved}'" if resolved else "") + f" (it takes {ok}); it raises "
                f"{msg.exception if msg else 'an error'} while building the config: re-export the checkpoint",
                subject=rule.fields[0], **{**got, "supported": ", ".join(str(a[0]) for a in rule.allowed)})
        return True
    return False


# -------------------------------------------------------------------------------------------------
# the model dtype against the GPU (EngineData.dtype_checks)
# -------------------------------------------------------------------------------------------------

# --dtype spellings as the engines accept them (vLLM/SGLang "half", "float", the torch names) and the
# short forms quantadvise prints; "auto" stays "auto"
_DTYPE_NAMES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "half": "float16", "fp16": "float16",
                "float16": "float16", "float": "float32", "fp32": "float32", "float32": "float32", "auto": "auto"}


def _norm_dtype(dtype: str) -> str:
    d = dtype.strip().lower().removeprefix("torch.")
    return _DTYPE_NAMES.get(d, d)


def _capability_str(capability: int) -> str:
    """DeviceCapability.as_version_str(): 75 -> "7.5"."""
    return f"{capability // 10}.{capability % 10}"


def _applies(check: DtypeCheck, capability: int, dtype: str, config_dtype: str | None, platform: str) -> str | None:
    """The dtype the check looks at, when it fires for this request (None: it does not)."""
    if capability >= check.below or (check.platforms and platform not in check.platforms):
        return None
    asked = _norm_dtype(dtype)
    if asked == "auto":
        if check.requested == "explicit":
            return None
        subject = _norm_dtype(config_dtype) if config_dtype else None
    else:
        if check.requested == "auto":
            return None
        subject = asked
    if check.dtypes and subject not in check.dtypes:
        return None
    return subject or "auto"


def _render(engine: EngineData, check: DtypeCheck, capability: int, dtype: str, gpu_name: str) -> str:
    msg = engine.message(check.message)
    if msg is None:  # pragma: no cover - EngineData validates every message id
        return check.message
    text = msg.render(gpu_name=gpu_name, capability=_capability_str(capability), dtype=dtype,
                      becomes=check.becomes or "")
    return " ".join(text.split())  # no name: "Your  GPU" -> "Your GPU"


def dtype_refusal(engine: EngineData, capability: int, dtype: str, *, config_dtype: str | None = None,
                  gpu_name: str = "", platform: str = "cuda") -> str | None:
    """The message the engine raises at startup when the model dtype cannot run on a GPU of this compute
    capability (``75`` for 7.5), or None when it starts. ``dtype`` is the ``--dtype`` value ("bfloat16",
    "bf16", "half", "auto" ...); with "auto", ``config_dtype`` is the checkpoint's ``torch_dtype``.
    ``gpu_name`` is the name the engine prints (``torch.cuda.get_device_name()``: "Tesla T4").

    vLLM refuses an explicit bfloat16 below 8.0 (vllm/platforms/cuda.py ``check_if_supports_dtype``) but
    falls back to float16 under "auto" (:func:`dtype_fallback`); SGLang never refuses for the dtype but
    refuses every GPU below 7.5 (``maybe_downgrade_dtype_for_legacy_gpu``). Pure."""
    for check in engine.dtype_checks:
        if check.action != "refuse":
            continue
        subject = _applies(check, capability, dtype, config_dtype, platform)
        if subject is not None:
            return _render(engine, check, capability, subject, gpu_name)
    return None


def dtype_fallback(engine: EngineData, capability: int, dtype: str, *, config_dtype: str | None = None,
                   gpu_name: str = "", platform: str = "cuda") -> tuple[str, str] | None:
    """(the dtype the engine runs the model in instead, the message it logs) when it replaces the
    requested one on this GPU, else None (it runs what was asked, or refuses: :func:`dtype_refusal`
    first). Pure."""
    if dtype_refusal(engine, capability, dtype, config_dtype=config_dtype, gpu_name=gpu_name,
                     platform=platform) is not None:
        return None
    for check in engine.dtype_checks:
        if check.action != "fallback" or check.becomes is None:
            continue
        subject = _applies(check, capability, dtype, config_dtype, platform)
        if subject is None or subject == check.becomes:
            continue
        return check.becomes, _render(engine, check, capability, subject, gpu_name)
    return None


def no_quant_method(ctx: Collector, engine: EngineData, ck: CheckpointQuant, reading: ConfigReading,
                     user: str | None, steps: list[str]) -> str | None:
    """The method ``engine`` reads from a quantization_config that names no ``quant_method`` (the
    release's ``no-quant-method`` reading): ModelOpt when SGLang finds a ``quant_algo``, else "" (which
    its registry refuses as unknown); vLLM reads "" as no quantization and builds the model 16-bit."""
    where = ck.found_in
    if reading.reads_as == "modelopt-else-empty":
        if ck.family == "modelopt" and ck.quant_algo:
            steps.append(f"checkpoint {where}: no quant_method; {engine.display_name} parses it as ModelOpt "
                         f"(quant_algo {ck.quant_algo})")
            return "modelopt"
        steps.append(f"checkpoint {where}: no quant_method and no quant_algo: {engine.display_name} reads "
                     "quant_method ''")
        return user or ""
    steps.append(f"checkpoint {where}: no quant_method: {engine.display_name} reads quant_method '' and builds the "
                 "model unquantized")
    if user is None and ck.is_quantized:
        ctx.add("no_quant_method", "error", f"{where} names no quant_method, so {engine.label} builds the model "
                f"with 16-bit layers and the checkpoint's {ck.quant_method} tensors (packed weights, scales) have "
                + (f"no parameter to load into: add \"quant_method\": \"{ck.quant_method}\" to {where}"
                   if engine.method(ck.quant_method) is not None else
                   f"no parameter to load into, and {engine.label} has no '{ck.quant_method}' loader: serve a "
                   "checkpoint in a format it reads"),
                subject=where, prefix="<quantized tensor>", model="<model class>")
    return None
