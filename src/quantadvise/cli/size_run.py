"""``quantadvise size`` without typer: what the command does with its options, given by name, and which of them
the command line gave (the typer declaration in ``size.py`` passes them on; ``fastpath.py`` parses a plain command
line straight to here without importing typer)."""

from collections.abc import Set
from typing import Any

from .. import defaults
from .common import emit_report, warn


def run_size(*, given: Set[str], **o: Any) -> None:
    """The command, given every option by its parameter name (``size.size_cmd``'s) and the names the line gave."""
    import os

    from ..api.size import size
    from ..inputs import check
    from ..inputs import engine as check_engine

    model, model_opt, scheme, gpu, memory_utilization = o["model"], o["model_opt"], o["scheme"], o["gpu"], \
        o["memory_utilization"]
    # `size` names no engine (its GPU share is the newest bundled vLLM's), but it reads its defaults from
    # the same QUANTADVISE_* variables as recommend, roofline and check: a bad QUANTADVISE_ENGINE is the
    # same error here, and a good one that size cannot follow is said, not silently dropped
    if scheme is not None and "," in scheme:  # QUANTADVISE_SCHEME=bf16,w4a16 is roofline's comma list
        from ..errors import InputError

        raise InputError(f"--scheme takes one scheme in `size`, got {scheme!r} (a comma list is for roofline and "
                         "recommend --candidates)", hint="give one, e.g. --scheme w4a16", field="scheme")
    if model_opt is not None:
        if "model" in given and model_opt != model:  # the MODEL argument typed, not its default
            from ..errors import InputError

            raise InputError(f"two models given: the MODEL argument '{model}' and --model '{model_opt}'",
                             hint="give one of them", field="model")
        model = model_opt
    env_engine = check_engine(os.environ.get("QUANTADVISE_ENGINE") or None)
    if env_engine not in (None, defaults.ENGINE) and gpu is not None and memory_utilization is None:
        warn(f"QUANTADVISE_ENGINE={env_engine}: `size` names no engine and takes the newest bundled "
             f"{defaults.ENGINE}'s share of each GPU (--memory-utilization to give {env_engine}'s)")
    report = size(
        model,
        scheme,
        bits=o["bits"],
        group=o["group"],
        symmetric=o["sym"],
        lm_head=o["lm_head"],
        embedding=o["embedding"],
        kv_dtype=o["kv_dtype"],
        ctx=o["ctx"],
        batch=o["batch"],
        gpu=gpu,
        gpus=o["gpus"],
        include_mtp=o["mtp"],
        memory_utilization=memory_utilization,
        reserve_bytes=int(check("reserve_gb", o["reserve_gb"]) * defaults.GiB),  # checked before it becomes bytes
        profile=o["profile"],
    )
    emit_report("size", o["fmt"], report, wide=o["wide"])
