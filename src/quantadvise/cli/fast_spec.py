"""The options of the commands ``fastpath.py`` parses without typer, as their typer declarations give them.

Written by ``python tools/fast_spec.py`` from ``typer_app.fast_spec``; do not edit (tests/cli/test_fastpath.py
fails when it is stale)."""

from typing import Any

SPEC: dict[str, Any] = {
    "recommend": {"params": [
        {"default": None, "envvars": [], "kind": "int", "name": "batch", "opts": ["--batch", "-b"]},
        {"default": None, "envvars": [], "kind": "int", "name": "ctx", "opts": ["--ctx"]},
        {"default": None, "envvars": [], "kind": "int", "name": "prompt", "opts": ["--prompt"]},
        {"default": None, "envvars": [], "kind": "int", "name": "output", "opts": ["--output"]},
        {"default": None, "envvars": [], "kind": "str", "name": "mode", "opts": ["--mode"]},
        {"default": None, "envvars": [], "kind": "str", "name": "task", "opts": ["--task"]},
        {"default": None, "envvars": [], "kind": "float", "name": "tolerance", "opts": ["--accuracy-tolerance"]},
        {"default": None, "envvars": ["QUANTADVISE_MODEL"], "kind": "str", "name": "model", "opts": ["--model", "-m"]},
        {"default": None, "envvars": ["QUANTADVISE_GPU"], "kind": "str", "name": "gpu", "opts": ["--gpu"]},
        {"default": None, "envvars": ["QUANTADVISE_GPUS"], "kind": "int", "name": "gpus", "opts": ["--gpus"]},
        {"default": None, "envvars": ["QUANTADVISE_ENGINE"], "kind": "str", "name": "engine", "opts": ["--engine"]},
        {"default": None, "envvars": [], "kind": "str", "name": "engine_version", "opts": ["--engine-version"]},
        {
            "default": None,
            "envvars": ["QUANTADVISE_KV_DTYPE"],
            "kind": "str",
            "name": "kv_dtype",
            "opts": ["--kv-dtype"],
        },
        {"default": None, "envvars": [], "kind": "float", "name": "headroom", "opts": ["--headroom"]},
        {
            "default": None,
            "envvars": [],
            "kind": "float",
            "name": "memory_utilization",
            "opts": ["--memory-utilization"],
        },
        {"default": None, "envvars": [], "kind": "float", "name": "reserve_gb", "opts": ["--reserve-gb"]},
        {"default": None, "envvars": [], "kind": "str", "name": "candidates", "opts": ["--candidates"]},
        {"default": None, "envvars": [], "kind": "str", "name": "profile", "opts": ["--profile"]},
        {"default": False, "envvars": [], "kind": "flag", "name": "ideal", "off": [], "opts": ["--ideal"]},
        {"default": None, "envvars": [], "kind": "float", "name": "ttft_ms", "opts": ["--ttft-ms"]},
        {"default": None, "envvars": [], "kind": "float", "name": "itl_ms", "opts": ["--itl-ms"]},
        {"default": None, "envvars": [], "kind": "float", "name": "e2e_ms", "opts": ["--e2e-ms"]},
        {"default": None, "envvars": [], "kind": "float", "name": "rate", "opts": ["--rate"]},
        {"default": None, "envvars": [], "kind": "int", "name": "users", "opts": ["--users"]},
        {"default": None, "envvars": [], "kind": "int", "name": "max_gpus", "opts": ["--max-gpus"]},
        {"default": None, "envvars": [], "kind": "str", "name": "node", "opts": ["--node"]},
        {"default": False, "envvars": [], "kind": "flag", "name": "layouts", "off": [], "opts": ["--layouts"]},
        {
            "default": None,
            "envvars": ["QUANTADVISE_USD_PER_GPU_HOUR"],
            "kind": "float",
            "name": "usd_per_gpu_hour",
            "opts": ["--usd-per-gpu-hour"],
        },
        {"default": None, "envvars": [], "kind": "int", "name": "spec_tokens", "opts": ["--spec-tokens"]},
        {"default": None, "envvars": [], "kind": "float", "name": "acceptance", "opts": ["--acceptance"]},
        {"default": None, "envvars": [], "kind": "path", "name": "plot", "opts": ["--plot"]},
        {"default": None, "envvars": [], "kind": "str", "name": "workload", "opts": ["--workload", "-w"]},
        {"default": False, "envvars": [], "kind": "flag", "name": "explain", "off": [], "opts": ["--explain"]},
        {"default": False, "envvars": [], "kind": "flag", "name": "bench_plan", "off": [], "opts": ["--bench-plan"]},
        {"default": False, "envvars": [], "kind": "flag", "name": "wide", "off": [], "opts": ["--wide"]},
        {
            "choices": ["table", "json"],
            "default": "table",
            "enum": "quantadvise.cli.recommend_run:RecFormat",
            "envvars": ["QUANTADVISE_FORMAT"],
            "kind": "enum",
            "name": "fmt",
            "opts": ["--format", "-f"],
        },
    ]},
}
