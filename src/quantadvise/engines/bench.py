"""The engines' own benchmark clients: the command that measures one serving point on the user's GPU.

:func:`serve_bench_command` writes the closed-loop benchmark of one scheme at one workload, run against a
server started with the deploy plan's command (``vllm serve`` / ``python -m sglang.launch_server``):

- vLLM 0.30.0-0.34.0 ``vllm bench serve``: ``--dataset-name random --random-input-len I --random-output-len O``
  with ``--random-range-ratio 0`` (fixed lengths: uniform in [L(1-r), L(1+r)],
  ``vllm/benchmarks/datasets/datasets.py:555-565``), ``--ignore-eos`` (off by default, ``serve.py:1832``),
  ``--max-concurrency C --request-rate inf --num-prompts N``; the server's quantization and KV cache dtype
  are not recorded by the client, so they go into ``--metadata KEY=VALUE`` (``serve.py:2314-2323``);
- SGLang 0.5.20-0.5.23 ``python -m sglang.bench_serving --backend sglang``: the same options, but
  ``--random-range-ratio 1`` for fixed lengths (uniform in [max(L r, 1), L],
  ``sglang/benchmark/datasets/common.py:56-65``); it ignores end-of-sequence by default
  (``sglang/benchmark/serving.py:289-317``) and records the server's arguments itself (``server_info``).

Option names checked against the wheels (vllm-0.33.0, sglang-0.5.23; research notes of issue 26).

Pure: no I/O.
"""

from __future__ import annotations

import shlex

MIN_PROMPTS = 200  # requests in the measured window at least
ROUNDS = 10  # each concurrency slot turns over this many times


def stable_prompts(concurrency: int) -> int:
    """Requests for a stable mean: every concurrency slot turning over :data:`ROUNDS` times, at least
    :data:`MIN_PROMPTS`."""
    return max(MIN_PROMPTS, ROUNDS * max(1, concurrency))


def serve_bench_command(engine: str, model: str, *, input_len: int, output_len: int, concurrency: int,
                        num_prompts: int, quantization: str | None = None, kv_cache_dtype: str | None = None) -> str:
    """The benchmark client command that measures ``model`` served by ``engine`` (``vllm`` or ``sglang``) at
    ``concurrency`` requests in flight, each of ``input_len`` prompt and ``output_len`` output tokens."""
    common = ["--model", model, "--dataset-name", "random", "--random-input-len", str(input_len),
              "--random-output-len", str(output_len)]
    loop = ["--max-concurrency", str(concurrency), "--num-prompts", str(num_prompts), "--request-rate", "inf"]
    if engine == "vllm":
        meta = [f"{k}={v}" for k, v in (("quantization", quantization), ("kv_cache_dtype", kv_cache_dtype)) if v]
        args = ["vllm", "bench", "serve", *common, "--random-range-ratio", "0", "--ignore-eos", *loop,
                *(["--metadata", *meta] if meta else [])]
    elif engine == "sglang":
        args = ["python", "-m", "sglang.bench_serving", "--backend", "sglang", *common, "--random-range-ratio", "1",
                *loop]
    else:
        raise ValueError(f"no benchmark client for engine '{engine}'")
    return " ".join(shlex.quote(a) for a in args)
