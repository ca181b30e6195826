"""The engines' own benchmark clients: their option lists, and the command that measures a serving point.

``data/flags/bench/<engine>-<version>.yaml`` (:class:`BenchOptions`) lists every option ``vllm bench serve``
and SGLang's ``python -m sglang.bench_serving`` register, extracted from the release's wheel by
``tools/extract_bench_flags.py`` with the file and line of each ``add_argument`` call.
:func:`serve_bench_command` writes the command that measures one scheme at one workload against a
running server (``vllm serve`` / ``sglang.launch_server``, written by the deploy plan), every option it
uses checked against that list, so the next ``quantadvise validate --bench`` reads the result back:

- fixed lengths: vLLM's ``--random-range-ratio 0`` (lengths in [L(1-r), L(1+r)],
  ``vllm/benchmarks/datasets/datasets.py:555-565``), SGLang's ``1.0`` (lengths in [max(L r, 1), L],
  ``sglang/benchmark/datasets/common.py:56-65``); end-of-sequence ignored (vLLM ``--ignore-eos``; SGLang
  ignores it by default, ``sglang/benchmark/serving.py:289-317``);
- closed loop: ``--max-concurrency C`` with ``--request-rate inf``, ``--num-prompts N`` (enough requests
  for a stable mean: :func:`stable_prompts`);
- the workload written into the result: vLLM records no lengths, GPU, TP or scheme (only ``--metadata
  KEY=VALUE`` pairs, ``vllm/benchmarks/serve.py:2314-2323``); SGLang records its lengths and the server's
  resolved arguments (``server_info``) itself.

Pure: the option lists are values (``catalog.bench_options`` reads them).
"""

import math
import shlex
from datetime import date
from typing import Literal

from ..results import Strict
from .kernels import WheelSource

MIN_PROMPTS = 200  # requests in the measured window at least (a mean over fewer drifts with the ramp-up)
ROUNDS = 10  # each concurrency slot turns over this many times (InferenceX runs 10 x concurrency prompts)


class BenchOption(Strict):
    names: tuple[str, ...]
    kind: Literal["value", "flag", "list"]  # list: nargs="*" / "+"
    source: str  # file:line of the add_argument call


class BenchOptions(Strict):
    """One release's benchmark client and every option it registers."""

    schema_version: Literal[1]
    engine: Literal["vllm", "sglang"]
    version: str
    prog: str  # how the client is started ("vllm bench serve", "python -m sglang.bench_serving")
    entry: str  # file:line of the parser the options are registered on
    source: WheelSource
    as_of: date
    options: tuple[BenchOption, ...]

    @property
    def result_suffix(self) -> str:
        """The result file's suffix: vLLM saves one JSON object, SGLang appends JSON lines."""
        return ".json" if self.engine == "vllm" else ".jsonl"

    def has(self, name: str) -> bool:
        return any(name in o.names for o in self.options)

    def option(self, name: str) -> BenchOption | None:
        return next((o for o in self.options if name in o.names), None)


class BenchCommandError(ValueError):
    """An option the command needs is not registered by the release's benchmark client."""


def stable_prompts(concurrency: int) -> int:
    """Requests for a stable mean: every concurrency slot turning over :data:`ROUNDS` times, at least
    :data:`MIN_PROMPTS`."""
    return max(MIN_PROMPTS, ROUNDS * max(1, concurrency))


def _metadata(**pairs: object) -> list[str]:
    return [f"{k}={v}" for k, v in pairs.items() if v is not None and v != ""]


def serve_bench_command(engine: str, model: str, *, input_len: int, output_len: int, concurrency: int,
                        num_prompts: int, quantization: str | None = None, kv_cache_dtype: str | None = None,
                        options: BenchOptions | None = None, gpu: str | None = None, tp: int | None = None,
                        scheme: str | None = None, result_file: str | None = None, host: str | None = None,
                        port: int | None = None, model_id: str | None = None) -> str:
    """The shell command that measures ``concurrency`` closed-loop requests of ``input_len`` +
    ``output_len`` tokens against a server of ``engine`` already serving ``model`` (module docstring).
    ``quantization`` / ``kv_cache_dtype`` (the server's flags) and ``gpu``, ``tp``, ``scheme`` are written
    into the result so ``validate --bench`` recovers the workload. With ``options`` (the release's
    option list) every option is checked: :class:`BenchCommandError` names one it does not register.
    ``model_id`` (the model the checkpoint at ``model`` quantizes) is written too, for a reader without it."""
    name = "-".join(x for x in (scheme or "run", f"c{concurrency}", f"{input_len}x{output_len}") if x)
    meta = _metadata(model=model_id if model_id and model_id != model else None, random_input_len=input_len, random_output_len=output_len, max_concurrency=concurrency,
                     gpu=gpu, tp=tp, scheme=scheme, quantization=quantization, kv_cache_dtype=kv_cache_dtype,
                     engine=engine, engine_version=options.version if options is not None else None)
    args: list[tuple[str, list[str]]]
    if engine == "vllm":
        prog = options.prog if options is not None else "vllm bench serve"
        args = [("--model", [model]), ("--dataset-name", ["random"]), ("--random-input-len", [str(input_len)]),
                ("--random-output-len", [str(output_len)]), ("--random-range-ratio", ["0"]), ("--ignore-eos", []),
                ("--max-concurrency", [str(concurrency)]), ("--request-rate", ["inf"]),
                ("--num-prompts", [str(num_prompts)]), ("--save-result", []),
                ("--result-filename", [result_file or f"{name}.json"]), ("--metadata", meta)]
    elif engine == "sglang":
        prog = options.prog if options is not None else "python -m sglang.bench_serving"
        args = [("--backend", ["sglang"]), ("--model", [model]), ("--dataset-name", ["random"]),
                ("--random-input-len", [str(input_len)]), ("--random-output-len", [str(output_len)]),
                ("--random-range-ratio", ["1.0"]), ("--max-concurrency", [str(concurrency)]),
                ("--request-rate", ["inf"]), ("--num-prompts", [str(num_prompts)]),
                ("--output-file", [result_file or f"{name}.jsonl"]), ("--tag", [",".join(meta)])]
    else:
        raise BenchCommandError(f"no benchmark client known for engine '{engine}'")
    if host is not None:
        args.append(("--host", [host]))
    if port is not None:
        args.append(("--port", [str(port)]))
    if options is not None and engine == "sglang" and not options.has("--tag"):
        # bench_serving before 0.5.4 has no --tag: the workload's metadata cannot ride in the result file;
        # validate --bench then takes the GPU, TP and scheme from its own flags
        args = [(o, v) for o, v in args if o != "--tag"]
    if options is not None:
        for opt, _ in args:
            if not options.has(opt):
                raise BenchCommandError(f"{options.prog} ({options.engine} {options.version}) registers no {opt}")
    parts = prog.split()
    for opt, vals in args:
        parts.append(opt)
        parts.extend(vals)
    return " ".join(shlex.quote(p) if p not in prog.split() else p for p in parts)


def prompts_note(concurrency: int) -> str:
    n = stable_prompts(concurrency)
    rounds = math.floor(n / max(1, concurrency))
    return f"{n:,} requests: each of the {concurrency:,} slots turns over {rounds} times (at least {MIN_PROMPTS})"
