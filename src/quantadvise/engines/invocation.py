"""What the deployment-file readers return: one :class:`EngineInvocation` per engine launch found,
gathered in a :class:`DeploymentScan`."""

from typing import Any, Literal

from ..results import Out, Result
from .flags import Engine

Source = Literal["shell", "dockerfile", "kubernetes", "helm-values", "compose", "yaml", "makefile", "python"]


class EngineInvocation(Out):
    """One engine launch found in a file, with the flags that matter parsed and located."""

    engine: Engine
    file: str
    line: int  # the line of the command's first token (the engine's, or the image's arguments)
    source: Source
    context: str | None = None  # "Deployment/llm container vllm", "service api", "CMD", "docker run" ...
    launcher: str | None = None  # "vllm serve", "sglang serve", "python -m MODULE", "image entrypoint"
    image: str | None = None
    engine_version: str | None = None  # from the image tag or a pinned `pip install vllm==...`
    argv: list[str]
    model: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    dtype: str | None = None
    max_num_seqs: int | None = None
    max_model_len: int | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    gpu_memory_utilization: float | None = None
    max_num_batched_tokens: int | None = None
    speculative_config: dict[str, Any] | str | None = None
    gpu_count: int | None = None  # GPUs the container is given: k8s resources, compose devices, docker --gpus
    flag_lines: dict[str, int] = {}  # understood field (or spelled flag, for `other`) -> line
    # understood field or spelled flag -> the file that gives it, where that is not ``file`` (its --config YAML)
    flag_files: dict[str, str] = {}
    # the engine's own environment variables (VLLM_*, SGLANG_*) the launch sets -> line: before the command
    # (`VLLM_X=1 vllm serve`), `docker run -e`, an `export` above it in the script, the container's env
    env: dict[str, int] = {}
    raw: dict[str, str] = {}  # understood field -> the value as written (after env resolution)
    unresolved_env: list[str] = []
    other: dict[str, str | bool] = {}
    # a serving stack's own options (Dynamo's, for `python -m dynamo.vllm`): taken by the stack's parser before the
    # engine's runs, so known and not judged as the engine's (artifacts.stack_launch)
    stack_options: dict[str, str | bool] = {}
    warnings: list[str] = []

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"


class DeploymentScan(Result):
    paths: list[str]
    files_scanned: list[str]
    invocations: list[EngineInvocation]
    warnings: list[str] = []
    files_skipped: list[str] = []  # "FILE: why" for each candidate file no reader took (check -v lists them)
    stopped: str | None = None  # the folder the walk stopped in, its file budget spent (None: walked to the end)
    notes: list[str] = []  # how a launch was put together (a manifest's arguments to this repository's image)
