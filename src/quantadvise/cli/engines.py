"""``quantadvise engines``: the engines' quantization registries, version by version."""

from typing import Annotated

import typer

from .. import defaults
from . import completion
from .common import Format, emit_report
from .completion import ENGINE_ACTIONS
from .options import FormatOpt, WideOpt


def engines_cmd(
    ctx: typer.Context,
    action: Annotated[
        str, typer.Argument(help="list (every method), show METHOD (one method), diff [A B] (two engines, or two "
                            "releases of one, side by side); a method name alone means show.", show_default=True,
                            autocompletion=completion.engine_actions)
    ] = "list",
    name: Annotated[str | None, typer.Argument(help="The engine for list (sglang, vllm@0.30.0); the method for show "
                                               "(awq, fp8, compressed-tensors ...); the first release for diff "
                                               "(vllm@0.30.0).")] = None,
    second: Annotated[str | None, typer.Argument(help="The second release for diff (vllm@0.33.0).",
                                                 show_default=False)] = None,
    engine: Annotated[
        str, typer.Option("--engine", "-e", help="vllm or sglang (NAME==VERSION also works).",
                          envvar="QUANTADVISE_ENGINE", autocompletion=completion.engines)
    ] = "vllm",
    version: Annotated[
        str | None, typer.Option("--release", "--version", metavar="RELEASE",
                                 help="The engine's release on file, e.g. 0.30.0 [default: the newest]; not "
                                 "quantadvise's own version (`quantadvise --version`).")
    ] = None,
    other: Annotated[str | None, typer.Option("--other", help="The second engine for diff [default: the engine "
                                              "that is not --engine: sglang for vllm, vllm for sglang].")] = None,
    fmt: FormatOpt = Format.table,
    wide: WideOpt = False,
) -> None:
    """The --quantization methods an engine release accepts (config class, minimum compute
    capability, activation dtypes, optimized or not), its KV cache dtypes and online shorthands;
    one method in detail; vLLM and SGLang side by side; or two releases of one engine: every fact
    and every verdict that changed.

    Example: quantadvise engines diff vllm@0.30.0 vllm@0.33.0
    """
    from ..api.engines import engines_diff, engines_list, engines_show
    from ..errors import InputError

    act = action.strip().lower()
    if second is not None and act != "diff":
        raise InputError(f"'{action}' takes one name; only diff takes two (diff vllm@0.30.0 vllm@0.33.0)",
                         field="action")
    if act not in ENGINE_ACTIONS:
        if name is not None:
            raise InputError(f"unknown action '{action}' (choose list, show METHOD or diff)", field="action")
        act, name = "show", action
    if act == "list":
        if name is not None:  # `engines list sglang`: the engine as an argument, instead of --engine
            typed = getattr(ctx.get_parameter_source("engine"), "name", None) == "COMMANDLINE"  # not a default
            if typed and _name(name, "engine_argument") != _name(engine, "engine"):
                raise InputError(f"give the engine once: `engines list {name}` or --engine {engine}, not both",
                                 field="engine")
            engine = _checked(name, "engine_argument")
        emit_report("engines", fmt, engines_list(_checked(engine, "engine"), version), wide=wide)
    elif act == "show":
        if not name:
            raise InputError("show needs a method name, e.g. `quantadvise engines show awq`", field="name")
        emit_report("engine_method", fmt, engines_show(name, _checked(engine, "engine"), version), wide=wide)
    else:
        first = _checked(name, "engine_argument") if name else _checked(f"{engine}=={version}" if version else engine, "engine")
        if second is None and other is None:  # the other engine, never the first one again
            other = next(e for e in sorted(defaults.ENGINES, reverse=True) if e != _name(first, "engine_argument"))
        emit_report("engines_diff", fmt, engines_diff(first, _checked(second, "second_engine") if second
                                                      else _checked(other or "", "other")), wide=wide)


def _name(spec: str, field: str) -> str | None:
    """The engine ``spec`` (NAME, NAME==VERSION, NAME@VERSION) names, by the one engine check."""
    from ..inputs import engine, split_engine

    return engine(split_engine(spec, field)[0], field)


def _checked(spec: str, field: str) -> str:
    """``spec`` once its engine passed the one engine check (its release is the catalog's to check);
    ``field`` is the option or argument it came from, so an error blames QUANTADVISE_ENGINE only for
    --engine."""
    _name(spec, field)
    return spec
