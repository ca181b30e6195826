"""The vLLM and SGLang command-line flags quantadvise reads and writes: one table per engine.

Each :class:`Flag` names a field (the :class:`~quantadvise.engines.invocation.EngineInvocation`
attribute it fills), every spelling the engine accepts (the first is the one written), and the
type the engine parses it as. The deployment-file readers (``artifacts/``) look flags up here; the
deploy plan writes its ``vllm serve ...`` / ``python -m sglang.launch_server ...`` lines from the
same rows, so a command quantadvise writes reads back to the fields it was written from. Pure data
and a few helpers: no I/O.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Engine = Literal["vllm", "sglang"]
FlagType = Literal["str", "int", "float", "json"]


@dataclass(frozen=True)
class Flag:
    field: str  # the EngineInvocation field it sets
    names: tuple[str, ...]  # every spelling the engine accepts; names[0] is the one written
    type: FlagType = "str"
    human_int: bool = False  # vLLM parses it with human_readable_int: 32k = 32000, 32K = 32768
    default: float | None = None  # left out of a written command at this value

    @property
    def name(self) -> str:
        return self.names[0]


@dataclass(frozen=True)
class EngineFlags:
    engine: Engine
    label: str  # how the engine writes its own name (its release files' display_name)
    launch: tuple[str, ...]  # the command written before the model
    positional_model: bool  # the written command takes the model as its first argument, not as a flag
    flags: tuple[Flag, ...]  # in the order a written command gives them
    underscores: bool = False  # --max_model_len is read as --max-model-len (vLLM's FlexibleArgumentParser)
    dotted_json: bool = False  # --speculative-config.method eagle3 sets one key of a JSON flag (vLLM)
    cli: str = ""  # the console script whose `serve` subcommand starts the server (`vllm serve`, `sglang serve`)
    # how `CLI serve` takes the model: True, a positional argument; "first": only a first argument that is no option
    cli_model: bool | str = True
    images: tuple[str, ...] = ()  # image repository names (the last path part) that ship the engine
    image_runs_server: bool = False  # those images' entrypoint is the server (arguments follow it)
    # image repositories (whole paths) that ship the engine with another entrypoint (a shell): AMD's ROCm builds
    dev_images: tuple[str, ...] = ()
    # the option that reads more options from a YAML file (whether a release reads one: its parser sidecar)
    config_option: str | None = None
    # a mapping in that file becomes its option's JSON (vLLM: json.dumps in load_config_file), else Python's str()
    # of it (SGLang: _add_scalar_arg in server_args_config_parser.py)
    config_mapping_json: bool = False
    handoff_options: tuple[tuple[str, str], ...] = ()  # (option, program): the command line goes to that program
    kv_hint: str = ""  # the DeployHints field holding this engine's --kv-cache-dtype value
    env_prefix: str = ""  # the environment variables the engine reads start with this (VLLM_, SGLANG_)

    def named(self, name: str) -> Flag | None:
        """The flag a spelling names (``-tp``, ``--tp-size`` ...), None when it is not in the table."""
        return _BY_NAME[self.engine].get(name)

    def for_field(self, field: str) -> Flag:
        return _BY_FIELD[self.engine][field]


# `python -m MODULE` entrypoints that start the server (vllm/entrypoints/openai/api_server.py,
# sglang/launch_server.py).
VLLM_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
SGLANG_MODULES = ("sglang.launch_server", "sglang_router.launch_server")

VLLM = EngineFlags(
    engine="vllm",
    label="vLLM",
    launch=("vllm", "serve"),
    positional_model=True,
    underscores=True,
    dotted_json=True,
    cli="vllm",
    cli_model=True,
    images=("vllm-openai", "vllm-openai-rocm", "vllm-openai-xpu"),
    image_runs_server=True,  # vllm/vllm-openai's ENTRYPOINT is `vllm serve`
    dev_images=("rocm/vllm", "rocm/vllm-dev"),  # tags rocm6.4.1_vllm_0.10.1_20250909, nightly_main_20250901
    config_option="--config",
    config_mapping_json=True,
    handoff_options=(("--omni", "vllm_omni"),),  # vllm/entrypoints/cli/main.py:19: vllm_omni parses it
    kv_hint="vllm_kv_cache_dtype",
    env_prefix="VLLM_",  # vllm/envs.py environment_variables
    flags=(
        Flag("model", ("--model",)),
        Flag("quantization", ("--quantization", "-q")),
        Flag("kv_cache_dtype", ("--kv-cache-dtype",)),
        Flag("max_num_seqs", ("--max-num-seqs",), "int"),
        Flag("max_model_len", ("--max-model-len",), "int", human_int=True),
        Flag("tensor_parallel_size", ("--tensor-parallel-size", "-tp"), "int", default=1),
        Flag("pipeline_parallel_size", ("--pipeline-parallel-size", "-pp"), "int", default=1),
        Flag("dtype", ("--dtype",)),
        # no fixed default: each release has its own (data/engine_startup.yaml memory_fraction_default); a plan
        # writes the flag only when the workload gives a fraction, and otherwise sizes with that release's default
        Flag("gpu_memory_utilization", ("--gpu-memory-utilization",), "float"),
        Flag("max_num_batched_tokens", ("--max-num-batched-tokens",), "int", human_int=True),
        Flag("speculative_config", ("--speculative-config",), "json"),
    ),
)

SGLANG = EngineFlags(
    engine="sglang",
    label="SGLang",
    launch=("python", "-m", SGLANG_MODULES[0]),
    positional_model=False,
    cli="sglang",
    cli_model="first",  # sglang/cli/serve.py:62-66 (_normalize_positional_model_path)
    images=("sglang",),
    dev_images=("rocm/sgl-dev",),  # tags v0.5.11-rocm720-mi30x-20260510
    config_option="--config",  # sglang/srt/server_args.py prepare_server_args (ConfigArgumentMerger; from 0.5.3: the parser sidecar says per release)
    kv_hint="sglang_kv_cache_dtype",
    env_prefix="SGLANG_",  # sglang/srt/environ.py Envs, and literal SGLANG_* reads
    flags=(
        Flag("model", ("--model-path", "--model")),
        Flag("quantization", ("--quantization",)),
        Flag("kv_cache_dtype", ("--kv-cache-dtype",)),
        Flag("max_num_seqs", ("--max-running-requests",), "int"),
        Flag("max_model_len", ("--context-length",), "int"),
        Flag("tensor_parallel_size", ("--tp-size", "--tensor-parallel-size", "--tp"), "int", default=1),
        Flag("pipeline_parallel_size", ("--pp-size", "--pipeline-parallel-size"), "int", default=1),
        Flag("dtype", ("--dtype",)),
        # SGLang derives its own fraction from the GPU's memory, TP and model (gate.startup.sglang_fraction); a plan
        # writes one only when the workload gives a fraction
        Flag("gpu_memory_utilization", ("--mem-fraction-static",), "float"),
    ),
)

ENGINES: dict[str, EngineFlags] = {"vllm": VLLM, "sglang": SGLANG}


def engine_of_image(repository: str) -> tuple[Engine | None, bool]:
    """(engine, whether the image's entrypoint is its server) for an image repository (``vllm/vllm-openai``,
    ``docker.io/lmsysorg/sglang``, ``rocm/vllm``): by its last path part, or its whole path for AMD's images."""
    last = repository.rsplit("/", 1)[-1]
    for t in ENGINES.values():
        if last in t.images:
            return t.engine, t.image_runs_server
    for t in ENGINES.values():
        if any(repository == d or repository.endswith("/" + d) for d in t.dev_images):
            return t.engine, False
    return None, False


def kv_cache_flag(engine: str, hints: Any) -> str | None:
    """The ``--kv-cache-dtype`` value a KV preset's deploy hints give for ``engine``."""
    t = ENGINES.get(engine)
    return getattr(hints, t.kv_hint, None) if t is not None and t.kv_hint else None


def engine_label(engine: str) -> str:
    """``vLLM`` / ``SGLang`` for an engine id (the id itself for one not in the table)."""
    t = ENGINES.get(engine)
    return t.label if t is not None else engine
_BY_NAME = {e: {n: f for f in t.flags for n in f.names} for e, t in ENGINES.items()}

# The flag that overrides keys of the model's config.json (a JSON object): vLLM's --hf-overrides
# (ModelConfig.hf_overrides, applied to the Hugging Face config before the maximum length is derived,
# vllm/engine/arg_utils.py:1035) and SGLang's --json-model-override-args (set on the config before
# get_context_length, sglang/srt/utils/hf_transformers/config.py:405-423). RoPE scaling is given here
# (`{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, ...}}`): vLLM 0.33.0 has no --rope-scaling flag.
MODEL_OVERRIDE_FLAGS: dict[str, tuple[str, ...]] = {
    "vllm": ("--hf-overrides", "--hf_overrides"),
    "sglang": ("--json-model-override-args",),
}


def model_overrides(engine: str, other: dict[str, Any]) -> dict[str, Any] | None:
    """The config.json keys a command overrides (None: no override flag, or not a JSON object)."""
    for name in MODEL_OVERRIDE_FLAGS.get(engine, ()):
        raw = other.get(name)
        if not isinstance(raw, str):
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return None
_BY_FIELD = {e: {f.field: f for f in t.flags} for e, t in ENGINES.items()}

# Options known to take no value, both engines': the fallback for options no release's option list on file
# registers (data/flags/ gives the kind of every option the releases on file have; artifacts.launch reads it).
BOOLEAN_FLAGS = frozenset({
    "--trust-remote-code", "--enforce-eager", "--enable-prefix-caching", "--enable-chunked-prefill",
    "--disable-log-requests", "--disable-log-stats", "--enable-log-requests", "--enable-lora",
    "--enable-auto-tool-choice", "--enable-expert-parallel", "--disable-custom-all-reduce",
    "--disable-sliding-window", "--skip-tokenizer-init", "--disable-frontend-multiprocessing",
    "--enable-reasoning", "--disable-fastapi-docs", "--enable-prompt-tokens-details", "--enable-sleep-mode",
    "--async-scheduling", "--enable-eplb", "--headless", "--enable-server-load-tracking",
    "--enable-force-include-usage", "--enable-request-id-headers", "--disable-uvicorn-access-log",
    "--use-v2-block-manager", "--enable-log-outputs", "--calculate-kv-scales", "--disable-cascade-attn",
    "--return-tokens-as-token-ids", "--enable-lora-bias", "--fully-sharded-loras",
    "--disable-radix-cache", "--disable-cuda-graph", "--disable-cuda-graph-padding", "--enable-torch-compile",
    "--enable-dp-attention", "--enable-mixed-chunk", "--enable-metrics", "--enable-ep-moe", "--enable-deepep-moe",
    "--disable-overlap-schedule", "--enable-cache-report", "--log-requests", "--enable-p2p-check",
    "--enable-nan-detection", "--enable-two-batch-overlap", "--disable-chunked-prefix-cache",
    "--enable-hierarchical-cache", "--show-time-cost", "--enable-dp-lm-head", "--enable-multimodal",
    "--allow-auto-truncate", "--enable-memory-saver", "--enable-deterministic-inference",
    "--enable-priority-scheduling", "--disable-shared-experts-fusion", "--enable-symm-mem",
})
BOOLEAN_PREFIXES = ("--enable-", "--disable-", "--no-")


def is_boolean(name: str) -> bool:
    """Whether a flag takes no value."""
    return name in BOOLEAN_FLAGS or name.startswith(BOOLEAN_PREFIXES)


# --- writing ----------------------------------------------------------------------------------------


def _written(flag: Flag, value: Any) -> str | None:
    """The flag's value as written, None when it is left out (unset, or the default)."""
    if value is None or value == "":
        return None
    if flag.default is not None and abs(value - flag.default) <= 1e-9:
        return None
    if flag.type == "float":
        return f"{value:g}"
    if flag.type == "json" and not isinstance(value, str):
        return json.dumps(value)
    return str(value)


class OptionSet(Protocol):
    """A release's option list as the writer needs it (``engines.vocabulary.FlagVocabulary``): every option
    string its parser registers."""

    version: str

    @property
    def registered(self) -> Mapping[str, Any]: ...


class MissingOption(ValueError):
    """A command for a release would need an option that release's parser does not register."""


def spelling(flag: Flag, options: OptionSet | None) -> str | None:
    """How a command for a release writes ``flag``: the first of its spellings the release's parser registers
    (SGLang 0.4.6-0.4.10 register --pipeline-parallel-size and --pp-size, 0.4.0-0.4.5 neither); None when it
    registers none of them; ``flag.name`` without an option list."""
    if options is None:
        return flag.name
    return next((n for n in flag.names if n in options.registered), None)


def engine_command(engine: str, model: str, options: OptionSet | None = None, **fields: Any) -> str:
    """The command that serves ``model`` on ``engine`` with ``fields`` (the table's field names:
    ``quantization``, ``kv_cache_dtype``, ``max_num_seqs``, ``max_model_len``,
    ``tensor_parallel_size``, ``gpu_memory_utilization`` ...); unset fields and defaults are left out.
    ``options``: the release's option list (``catalog.option_list``): each flag is spelled as that release
    registers it, and a field it has no option for raises :class:`MissingOption` (None: the table's spellings).

    >>> engine_command("sglang", "m", max_num_seqs=8, tensor_parallel_size=2)
    'python -m sglang.launch_server --model-path m --max-running-requests 8 --tp-size 2'
    """
    table = ENGINES.get(engine)
    if table is None:
        raise ValueError(f"no command-line flags on file for engine {engine!r} (known: {', '.join(ENGINES)})")
    unknown = sorted(set(fields) - set(_BY_FIELD[engine]))
    if unknown:
        raise TypeError(f"{engine} has no flag for {', '.join(unknown)}")
    written = {f.field: _written(f, fields.get(f.field)) for f in table.flags}
    written["model"] = None if table.positional_model else model
    names = {}
    for flag in table.flags:
        if written[flag.field] is None:
            continue
        name = spelling(flag, options)
        if name is None:
            release = f"{table.label} {options.version}" if options is not None else table.label
            raise MissingOption(f"{release} has no {' / '.join(flag.names)} option: a command for it cannot set "
                                f"{flag.field.replace('_', ' ')}")
        names[flag.field] = name
    args = [*table.launch, model] if table.positional_model else [*table.launch, names["model"], model]
    for flag in table.flags:
        text = written[flag.field]
        if text is not None and flag.field != "model":
            args += [names[flag.field], text]
    return shlex.join(args)
