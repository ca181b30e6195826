"""The checks an engine makes while it reads the checkpoint's quantization config and builds the config
class (:func:`quantadvise.engines.resolution.resolve` calls them): what ``get_quant_config`` does when
the checkpoint carries none (``Method.without_config``), and the values a config class refuses
(``config_rules``). Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..checkpoint.quant import CheckpointQuant
    from .data import EngineData, Method
    from .resolution import _Ctx


def check_without_config(ctx: _Ctx, engine: EngineData, ck: CheckpointQuant | None, ck_method: str | None,
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


def check_rules(ctx: _Ctx, engine: EngineData, ck: CheckpointQuant, resolved: str | None) -> bool:
    """The config checks of the class the checkpoint resolves to (``resolved`` None: the checks made
    while reading the config, before any method is chosen). True when one refused."""
    for rule in engine.config_rules:
        if bool(rule.methods) != (resolved is not None) or (rule.methods and resolved not in rule.methods):
            continue
        if (rule.family is not None and ck.family != rule.family) or (rule.found_in and ck.found_in not in
                                                                       rule.found_in):
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
