"""``quantadvise deploy``: the recommended layout as manifests for a stack that already scales."""

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from ..files import writing
from . import completion
from .common import emit_report, input_file
from .options import MaxGpusOpt, NodeOpt, UsdPerGpuHourOpt, WideOpt


class Target(str, Enum):
    helm = "helm"
    llm_d = "llm-d"
    kserve = "kserve"
    dynamo = "dynamo"


class DeployFormat(str, Enum):
    table = "table"
    json = "json"


def deploy_cmd(
    target: Annotated[Target, typer.Option("--target", "-t", help="helm (vLLM production-stack values) | llm-d "
                                           "(LeaderWorkerSets) | kserve (LLMInferenceService) | dynamo "
                                           "(DynamoGraphDeployment).", case_sensitive=False)],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Folder to write the manifests and quantadvise.yaml "
                                             "into [default: deploy-TARGET].", file_okay=False)] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Bundled id, local config.json / folder, or Hub "
                                              "id.", envvar="QUANTADVISE_MODEL", autocompletion=completion.models)]
    = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="GPU id or alias; several, comma-separated: a pool.",
                                            envvar="QUANTADVISE_GPU", autocompletion=completion.gpus)] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", help="GPUs a layout may use (without --max-gpus).")] = None,
    max_gpus: MaxGpusOpt = None,
    node: NodeOpt = None,
    engine: Annotated[str | None, typer.Option("--engine", help="vllm | sglang [default: vllm].",
                                               envvar="QUANTADVISE_ENGINE", autocompletion=completion.engines)] = None,
    engine_version: Annotated[str | None, typer.Option("--engine-version", help="Engine release.")] = None,
    prompt: Annotated[int | None, typer.Option("--prompt", help="Prompt tokens per request.")] = None,
    output: Annotated[int | None, typer.Option("--output", help="Output tokens per request.")] = None,
    ctx: Annotated[int | None, typer.Option("--ctx", help="Tokens per sequence, prompt + output.")] = None,
    rate: Annotated[float | None, typer.Option("--rate", help="Load in requests/s.")] = None,
    users: Annotated[int | None, typer.Option("--users", help="Load in concurrent users.")] = None,
    ttft_ms: Annotated[float | None, typer.Option("--ttft-ms", help="Time-to-first-token budget, ms.")] = None,
    itl_ms: Annotated[float | None, typer.Option("--itl-ms", help="Mean inter-token latency budget, ms.")] = None,
    kv_dtype: Annotated[str | None, typer.Option("--kv-dtype", help="Force the KV cache dtype.",
                                                 autocompletion=completion.kv_presets)] = None,
    candidates: Annotated[str | None, typer.Option("--candidates", help="Comma-separated schemes to weigh.",
                                                   autocompletion=completion.scheme_list)] = None,
    usd_per_gpu_hour: UsdPerGpuHourOpt = None,
    workload: Annotated[str | None, typer.Option("--workload", "-w", help="Workload YAML file; flags win.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite files of the same name in --out (a "
                                                         "quantadvise.yaml, a manifest).")] = False,
    wide: WideOpt = False,
    fmt: Annotated[DeployFormat, typer.Option("--format", "-f", help="Output format.", envvar="QUANTADVISE_FORMAT",
                                              case_sensitive=False)] = DeployFormat.table,
) -> None:
    """Write the manifests that serve the recommended layout (scheme x GPU x parallelism) on a stack that
    already scales, and the quantadvise.yaml that `quantadvise check` holds them to. No orchestration of its own.

    Example: quantadvise deploy -m deepseek-ai/DeepSeek-V3 --gpu h100,h200,b200 --max-gpus 64 --rate 20 --target llm-d
    """
    from ..api.deploy import deploy
    from ..catalog.resolve import load_workload
    from ..errors import InputError
    from ..inputs import engine_spec, names

    engine, engine_version = engine_spec(engine, engine_version)
    input_file(workload, "workload", "a workload YAML file")
    base = load_workload(workload) if workload else {}
    flags = {"model": model, "gpu": gpu, "gpus": gpus, "max_gpus": max_gpus, "node": node, "engine": engine,
             "engine_version": engine_version, "prompt": prompt, "output": output, "ctx": ctx, "rate": rate,
             "users": users, "ttft_ms": ttft_ms, "itl_ms": itl_ms, "kv_dtype": kv_dtype,
             "candidates": list(names("candidates", candidates, "w4a16,fp8-dynamic") or ()) if candidates else None,
             "usd_per_gpu_hour": usd_per_gpu_hour}
    result = deploy(base, target=target.value, **flags)
    folder = out if out is not None else Path(f"deploy-{target.value}")  # -o . (or -o '') writes here, as asked
    taken = sorted(name for name, text in result.files.items() if _differs(folder / name, text))
    if taken and not force:  # as `check --init`: a user's own quantadvise.yaml or manifest is never lost unasked
        shown = ", ".join(str(folder / name) for name in taken[:3]) + (f" and {len(taken) - 3} more" if len(taken) > 3
                                                                         else "")
        raise InputError(f"{shown} already exist{'s' if len(taken) == 1 else ''} with other content; pass --force "
                         "to overwrite, or --out another folder", field="out")
    with writing(folder, "--out"):
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in result.files.items():
            (folder / name).write_text(text, encoding="utf-8")
    emit_report("deploy", fmt, result.model_copy(update={"check": result.check.replace("DIR", str(folder))}),
                wide=wide)


def _differs(path: Path, text: str) -> bool:
    """Whether writing ``text`` to ``path`` would replace something else (a file the same run wrote is not)."""
    try:
        return path.read_text(encoding="utf-8") != text
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError):
        return path.exists() or path.is_symlink()
