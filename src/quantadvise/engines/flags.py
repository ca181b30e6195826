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
from typing import Any, Literal, Protocol

from ..inputs import MAX_NESTING, json_depth
from ..results import record

Engine = Literal["vllm", "sglang"]
FlagType = Literal["str", "int", "float", "json"]


@record
class Flag:
    field: str  # the EngineInvocation field it sets
    names: tuple[str, ...]  # every spelling the engine accepts; names[0] is the one written
    type: FlagType = "str"
    human_int: bool = False  # vLLM parses it with human_readable_int: 32k = 32000, 32K = 32768
    default: float | None = None  # left out of a written command at this value

    @property
    def name(self) -> str:
        return self.names[0]


@record
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
# serving stacks' workers that start an engine with options of their own, and the engine each starts (NVIDIA
# Dynamo: dynamo/vllm/__main__.py, dynamo/sglang/__main__.py; their options: data/flags/launchers/)
STACK_MODULES: dict[str, Engine] = {"dynamo.vllm": "vllm", "dynamo.sglang": "sglang"}

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
        except (ValueError, RecursionError):  # not JSON, a 5,000-digit integer, nested past the recursion limit
            return None
        return value if isinstance(value, dict) and json_depth(value) <= MAX_NESTING else None
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


def speculative_args(engine: str, *, vllm_method: str, sglang_algorithm: str, draft: str | None,
                     tokens: int) -> list[str]:
    """The arguments that turn on speculative decoding with ``tokens`` drafted per step (K):

    - vLLM: ``--speculative-config`` with ``method``, ``model`` (the draft; left out for MTP layers inside
      the checkpoint) and ``num_speculative_tokens`` K (vllm/config/speculative.py:406-455 names the keys),
      written one key at a time (``--speculative-config.method eagle3``): vLLM's parser merges dotted keys
      into the JSON object it passes on (vllm/utils/argparse_utils.py:461-499 in 0.33.0), and the command
      then breaks between arguments instead of running one long JSON word past the terminal;
    - SGLang: ``--speculative-algorithm``, ``--speculative-draft-model-path`` (left out for MTP), and
      ``--speculative-num-steps`` K with ``--speculative-eagle-topk 1`` and ``--speculative-num-draft-tokens``
      K + 1: one chain of K drafted tokens, the shape the pricing assumes (with topk 1 SGLang sets
      num_draft_tokens to num_steps + 1 itself, sglang/srt/arg_groups/speculative_hook.py:1255-1265)."""
    if engine == "vllm":
        out = ["--speculative-config.method", vllm_method]
        if draft is not None:
            out += ["--speculative-config.model", draft]
        return out + ["--speculative-config.num_speculative_tokens", str(tokens)]
    if engine == "sglang":
        out = ["--speculative-algorithm", sglang_algorithm]
        if draft is not None:
            out += ["--speculative-draft-model-path", draft]
        return out + ["--speculative-num-steps", str(tokens), "--speculative-eagle-topk", "1",
                      "--speculative-num-draft-tokens", str(tokens + 1)]
    raise ValueError(f"no speculative-decoding flags on file for engine {engine!r}")



class OptionSet(Protocol):
    """A release's option list as the writer needs it (``engines.vocabulary.FlagVocabulary``): every option
    string its parser registers."""

    version: str

    @property
    def registered(self) -> Mapping[str, Any]: ...


class OptionReader(Protocol):
    """How a release's parser reads an option string (``engines.vocabulary.FlagVocabulary.lookup``)."""

    def lookup(self, spelled: str, suggest: bool = True, launcher: str | None = None) -> Any: ...


class MissingOption(ValueError):
    """A command for a release would need an option that release's parser does not register."""


def spelling(flag: Flag, options: OptionSet | None) -> str | None:
    """How a command for a release writes ``flag``: the first of its spellings the release's parser registers
    (SGLang 0.4.6-0.4.10 register --pipeline-parallel-size and --pp-size, 0.4.0-0.4.5 neither); None when it
    registers none of them; ``flag.name`` without an option list."""
    if options is None:
        return flag.name
    return next((n for n in flag.names if n in options.registered), None)


def engine_command(engine: str, model: str, options: OptionSet | None = None, extra: list[str] | None = None,
                   **fields: Any) -> str:
    """The command that serves ``model`` on ``engine`` with ``fields`` (the table's field names:
    ``quantization``, ``kv_cache_dtype``, ``max_num_seqs``, ``max_model_len``,
    ``tensor_parallel_size``, ``gpu_memory_utilization`` ...); unset fields and defaults are left out.
    ``options``: the release's option list (``catalog.option_list``): each flag is spelled as that release
    registers it, and a field it has no option for raises :class:`MissingOption` (None: the table's spellings);
    ``extra``: arguments written after the flags (speculative decoding, :func:`speculative_args`).

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
    return shlex.join(args + list(extra or ()))


# --- parallel layouts (written by the layout search and `quantadvise deploy`) ----------------------------


@record
class ParallelFlags:
    """How a release is told one replica's layout, in its canonical spellings (every one is checked against
    the release's option list before it is written: ``layout_args``' caller passes the vocabulary). vLLM
    0.33.0: vllm/engine/arg_utils.py:1162-1360 (ParallelConfig), :1881 (--kv-transfer-config); SGLang 0.5.23:
    sglang/srt/arg_groups/fields/parallel.py:32-289, disagg.py:55 (flags.md of issue 31 has every line)."""

    tensor: str
    pipeline: str
    expert_switch: str | None  # vLLM: a boolean; the expert-parallel size is TP x DP (parallel.py:148-149)
    expert_size: str | None  # SGLang: --ep-size N
    attention_dp: str | None  # SGLang: --attn-dp-size N (replaces --dp-size N --enable-dp-attention)
    data: str  # vLLM: DP ranks (attention DP under EP); SGLang --attn-dp-size carries it instead
    world_is_tp: bool  # SGLang's --tp-size is the world size of one server (EP and attention DP live inside it)
    a2a: tuple[str, str] | None  # the option and value of the low-latency all-to-all the pricing assumes (DeepEP)
    nnodes: str
    node_rank: str
    head: str  # vLLM --master-addr HOST; SGLang --dist-init-addr HOST:PORT
    head_port: int | None  # SGLang: the port written into --dist-init-addr (its docs' example, 25000)
    dp_local: str | None  # vLLM wide EP over nodes: --data-parallel-size-local, --data-parallel-address,
    dp_address: str | None  # --headless and --data-parallel-start-rank on the other nodes
    dp_start_rank: str | None
    headless: str | None
    disaggregation: dict[str, tuple[str, ...]]  # role (prefill / decode) -> the arguments that make the server one
    # the tokens one prefill chunk holds, by GPU memory (GiB, tokens: the largest tier not above the GPU's memory):
    # what a prefill-only replica batches per step
    prefill_chunk: tuple[tuple[float, int], ...]
    prefill_chunk_source: str
    # the running-sequence cap counts per data-parallel rank (vLLM: every DP rank is an engine core with its own
    # scheduler) rather than for the whole server (SGLang divides --max-running-requests over its attention-DP
    # ranks, sglang/srt/arg_groups/moe_hook.py:669)
    seqs_per_rank: bool = False


PARALLEL: dict[str, ParallelFlags] = {
    "vllm": ParallelFlags(
        tensor="--tensor-parallel-size", pipeline="--pipeline-parallel-size", expert_switch="--enable-expert-parallel",
        expert_size=None, attention_dp=None, data="--data-parallel-size", world_is_tp=False,
        a2a=("--all2all-backend", "deepep_low_latency"),
        nnodes="--nnodes", node_rank="--node-rank", head="--master-addr", head_port=None,
        dp_local="--data-parallel-size-local", dp_address="--data-parallel-address",
        dp_start_rank="--data-parallel-start-rank", headless="--headless",
        disaggregation={"prefill": ("--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'),
                        "decode": ("--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}')},
        # vllm/engine/arg_utils.py:2975-3001 (OPENAI_API_SERVER): >= 160 GiB 16384; >= 70 GiB (not A100) 8192; else 2048
        prefill_chunk=((0.0, 2048), (70.0, 8192), (160.0, 16384)),
        prefill_chunk_source="vLLM 0.33.0 default max_num_batched_tokens for the API server, "
                             "vllm/engine/arg_utils.py:2975-3001", seqs_per_rank=True),
    "sglang": ParallelFlags(
        tensor="--tp-size", pipeline="--pp-size", expert_switch=None, expert_size="--ep-size",
        attention_dp="--attn-dp-size", data="--dp-size", world_is_tp=True, a2a=("--moe-a2a-backend", "deepep"),
        nnodes="--nnodes", node_rank="--node-rank", head="--dist-init-addr", head_port=25000,
        dp_local=None, dp_address=None, dp_start_rank=None, headless=None,
        disaggregation={"prefill": ("--disaggregation-mode", "prefill"), "decode": ("--disaggregation-mode", "decode")},
        # sglang/srt/arg_groups/memory_hook.py:89-167: chunked_prefill_size 2k under 20 GiB, 4k under 60, 8k under 160,
        # else 16k
        prefill_chunk=((0.0, 2048), (20.0, 4096), (60.0, 8192), (160.0, 16384)),
        prefill_chunk_source="SGLang 0.5.23 default chunked_prefill_size by GPU memory, "
                             "sglang/srt/arg_groups/memory_hook.py:89-167"),
}


# the engine's container image per release, and the serving stacks that run the engine (quantadvise deploy --target):
# vLLM's production-stack chart and KServe's LLMInferenceService run vLLM only; llm-d and Dynamo run both
IMAGES = {"vllm": "vllm/vllm-openai:v{version}", "sglang": "lmsysorg/sglang:v{version}"}
STACKS = {"vllm": ("helm", "llm-d", "kserve", "dynamo"), "sglang": ("llm-d", "dynamo")}


def prefill_chunk_tokens(engine: str, memory_bytes: float) -> int:
    """Tokens one prefill step of ``engine`` batches on a GPU of ``memory_bytes`` (its default chunk)."""
    tiers = PARALLEL[engine].prefill_chunk
    gib = memory_bytes / 2**30
    return max(tokens for floor, tokens in tiers if gib >= floor)


def layout_args(engine: str, *, tp: int, pp: int = 1, dp: int = 1, ep: bool = False, gpus_per_node: int,
                node_rank: int = 0, head: str = "HEAD_ADDRESS", role: str | None = None,
                cross_node_a2a: bool = False) -> list[str]:
    """The arguments one node's server takes for a replica of ``tp`` x ``pp`` x ``dp`` GPUs (``ep``: routed
    experts over ``tp x dp``), on node ``node_rank`` of the replica; ``role`` prefill / decode for a
    disaggregated pool. Defaults (TP 1, PP 1) are left out, as every command quantadvise writes leaves them."""
    f = PARALLEL[engine]
    gpus = tp * pp * dp
    nodes = max(1, -(-gpus // gpus_per_node))
    args: list[str] = []
    world_tp = tp * dp if f.world_is_tp else tp
    if world_tp > 1:
        args += [f.tensor, str(world_tp)]
    if pp > 1:
        args += [f.pipeline, str(pp)]
    if dp > 1:
        if f.attention_dp is not None:
            args += [f.attention_dp, str(dp)]
        else:
            args += [f.data, str(dp)]
    if ep:
        if f.expert_size is not None:
            args += [f.expert_size, str(tp * dp)]
        if f.expert_switch is not None:
            args.append(f.expert_switch)
        if cross_node_a2a and f.a2a is not None:
            args += list(f.a2a)
    if nodes > 1:
        if dp > 1 and f.dp_local is not None and f.dp_address is not None:
            local = max(1, gpus_per_node // max(tp, 1))
            args += [f.dp_local, str(local), f.dp_address, head]
            if node_rank > 0 and f.headless is not None and f.dp_start_rank is not None:
                args += [f.headless, f.dp_start_rank, str(node_rank * local)]
        else:
            addr = f"{head}:{f.head_port}" if f.head_port is not None else head
            args += [f.nnodes, str(nodes), f.node_rank, str(node_rank), f.head, addr]
    if role is not None:
        args += list(f.disaggregation[role])
    return args


@record
class LayoutRead:
    """A server's parallel layout as its command gives it (what ``check`` sizes memory and GPUs by)."""

    gpus: int  # GPUs the server's replica uses
    node_gpus: int  # GPUs the server on this node uses (the container must be given them)
    dense_shards: int  # GPUs each dense weight (attention, dense MLP, embeddings) is split over
    expert_shards: int  # GPUs each routed-expert layer is split over
    attention_dp: int  # attention data-parallel ranks (each holds its own sequences' KV cache)
    words: str  # the options read, for a report

    @property
    def expert_parallel(self) -> bool:
        return self.expert_shards != self.dense_shards


def _int(other: dict[str, Any], *names: str) -> int | None:
    for n in names:
        v = other.get(n)
        if isinstance(v, str) and v.strip().isdecimal() and len(v.strip()) <= 9:  # a count, never 4,301 digits
            return int(v.strip())
    return None


def _on(other: dict[str, Any], *names: str) -> bool:
    return any(other.get(n) not in (None, False, "false", "False", "0") for n in names)


def canonical_options(other: dict[str, Any], vocab: OptionReader | None) -> dict[str, Any]:
    """``other`` keyed by the option each spelling is read as (argparse's unique-prefix abbreviations resolved
    with the release's own option list: SGLang's ``--dp 8`` is ``--dp-size 8``); as given without a list."""
    if vocab is None:
        return other
    out: dict[str, Any] = {}
    for k, v in other.items():
        lk = vocab.lookup(k, suggest=False)
        out.setdefault(lk.option if lk.verdict in ("known", "abbreviation") and lk.option else k, v)
    return out


def read_layout(engine: str, tp: int, pp: int, other: dict[str, Any], vocab: OptionReader | None = None
                ) -> LayoutRead:
    """The layout of a server started with ``tp`` / ``pp`` and the other options ``other`` (as the deployment
    readers keep them): vLLM's ``--data-parallel-size`` ranks (TP each; with ``--enable-expert-parallel`` the
    routed experts over TP x DP, vllm/config/parallel.py:148-149; ``--data-parallel-size-local`` of them on
    this node), SGLang's world of ``--tp-size`` GPUs with ``--attn-dp-size`` attention groups (or the deprecated
    ``--dp-size`` with ``--enable-dp-attention``) and ``--ep-size`` expert ranks; ``--nnodes`` splits a replica
    over nodes; ``vocab``: the release's option list, to read abbreviations as the parser does."""
    other = canonical_options(other, vocab)
    tp, pp = max(tp, 1), max(pp, 1)
    nodes = _int(other, "--nnodes", "-n") or 1
    if engine == "sglang":
        attn = _int(other, "--attn-dp-size", "--attention-data-parallel-size") or (
            _int(other, "--dp-size", "--data-parallel-size") if _on(other, "--enable-dp-attention") else None) or 1
        ep = _int(other, "--ep-size", "--expert-parallel-size", "--ep") or 1
        gpus = tp * pp
        dense = max(1, tp // attn) * pp
        expert = (ep if ep > 1 else tp) * pp
        return LayoutRead(gpus=gpus, node_gpus=max(1, gpus // nodes), dense_shards=dense, expert_shards=expert,
                          attention_dp=attn, words=f"--tp-size {tp}, attention DP {attn}, EP {ep}, {nodes} node(s)")
    dp = _int(other, "--data-parallel-size", "-dp") or 1
    local = _int(other, "--data-parallel-size-local", "-dpl")
    ep_on = _on(other, "--enable-expert-parallel", "-ep")
    gpus = tp * pp * dp
    node = tp * pp * local if local else max(1, gpus // nodes)
    return LayoutRead(gpus=gpus, node_gpus=node, dense_shards=tp * pp, expert_shards=(tp * dp if ep_on else tp) * pp,
                      attention_dp=dp if ep_on else 1,
                      words=f"TP {tp} x PP {pp} x DP {dp}" + (", experts over TP x DP" if ep_on else "")
                      + (f", {local} DP ranks on this node" if local else "") + (f", {nodes} nodes" if nodes > 1 else ""))
