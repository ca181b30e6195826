"""``quantadvise engines``: the engines' quantization registries, version by version."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import Format, FormatOpt, WideOpt, emit_report

ACTIONS = ("list", "show", "diff")


def engines_cmd(
    action: Annotated[
        str, typer.Argument(help="list (every method), show METHOD (one method), diff [A B] (two engines, or two "
                            "releases of one, side by side); a method name alone means show.", show_default=True)
    ] = "list",
    name: Annotated[str | None, typer.Argument(help="The method for show (awq, fp8, compressed-tensors ...); the "
                                               "first release for diff (vllm@0.30.0).")] = None,
    second: Annotated[str | None, typer.Argument(help="The second release for diff (vllm@0.33.0).",
                                                 show_default=False)] = None,
    engine: Annotated[
        str, typer.Option("--engine", "-e", help="vllm or sglang (NAME==VERSION also works).",
                          envvar="QUANTADVISE_ENGINE")
    ] = "vllm",
    version: Annotated[
        str | None, typer.Option("--version", help="Engine release on file [default: the newest].")
    ] = None,
    other: Annotated[str, typer.Option("--other", help="The second engine for diff.")] = "sglang",
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

    act = action.strip().lower()
    if second is not None and act != "diff":
        from ..errors import InputError

        raise InputError(f"'{action}' takes one name; only diff takes two (diff vllm@0.30.0 vllm@0.33.0)",
                         field="action")
    if act not in ACTIONS:
        if name is not None:
            from ..errors import InputError

            raise InputError(f"unknown action '{action}' (choose list, show METHOD or diff)", field="action")
        act, name = "show", action
    if act == "list":
        emit_report("engines", fmt, engines_list(engine, version), wide=wide)
    elif act == "show":
        if not name:
            from ..errors import InputError

            raise InputError("show needs a method name, e.g. `quantadvise engines show awq`", field="name")
        emit_report("engine_method", fmt, engines_show(name, engine, version), wide=wide)
    else:
        first = name or (f"{engine}=={version}" if version else engine)
        emit_report("engines_diff", fmt, engines_diff(first, second or other), wide=wide)
