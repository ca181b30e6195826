"""Fuzzing the files quantadvise reads: config.json, quantadvise.yaml, deployment files (shell,
Kubernetes, Helm and production-stack values, compose, Dockerfile, Makefile, Python launchers) and
accuracy evidence — through the real entry point, plus the readers called directly on raw text."""

from __future__ import annotations

import copy
import json
import tempfile
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from quantadvise.catalog import option_list
from tests.fuzz.harness import budget, count_direct, run_checked

REPO = Path(__file__).resolve().parents[2]
MODELS = ["meta-llama/Llama-3.1-8B.json", "Qwen/Qwen3-30B-A3B.json", "deepseek-ai/DeepSeek-V3.json",
          "openai/gpt-oss-120b.json", "mistralai/Mixtral-8x7B-v0.1.json"]
KEYS = ["model_type", "architectures", "hidden_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "vocab_size", "intermediate_size", "max_position_embeddings",
        "rope_scaling", "sliding_window", "layer_types", "num_experts", "num_local_experts", "num_experts_per_tok",
        "moe_intermediate_size", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
        "torch_dtype", "tie_word_embeddings", "quantization_config", "text_config", "first_k_dense_replace",
        "model_max_length", "n_routed_experts", "n_shared_experts", "num_nextn_predict_layers"]


def values(depth: int = 2) -> st.SearchStrategy:
    scalars = st.one_of(
        st.none(), st.booleans(),
        st.sampled_from([0, -1, 1, 2, 7, 8, 128, 4096, 10**9, 10**12, 10**18, 2**31, 2**63, -(2**63), 10**40]),
        st.integers(min_value=-(2**64), max_value=2**64),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(["", "llama", "qwen3_moe", "deepseek_v3", "bfloat16", "float8_e4m3fn", "awq", "gptq", "fp8",
                         "compressed-tensors", "modelopt", "mxfp4", "NVFP4", "a" * 3000, "é🙂", "\x00"]),
        st.text(max_size=20),
    )
    if depth <= 0:
        return scalars
    return st.one_of(scalars, st.lists(values(depth - 1), max_size=4),
                     st.dictionaries(st.sampled_from(KEYS + ["quant_method", "bits", "group_size", "config_groups",
                                                              "weights", "format", "type", "factor", "num_bits",
                                                              "strategy", "quant_algo", "producer"]),
                                     values(depth - 1), max_size=4))


@st.composite
def config_json(draw) -> str:
    cfg = copy.deepcopy(json.loads((REPO / "data" / "models" / draw(st.sampled_from(MODELS))).read_text()))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        op = draw(st.sampled_from(["set", "set", "delete", "nest"]))
        key = draw(st.sampled_from(KEYS))
        if op == "delete":
            cfg.pop(key, None)
        elif op == "set":
            cfg[key] = draw(values())
        else:
            cfg[key] = "__DEEP__"
    n = draw(st.sampled_from([5, 50, 99, 101, 500, 2000]))
    return json.dumps(cfg, allow_nan=True).replace('"__DEEP__"', '{"a": ' * n + "1" + "}" * n)


@budget(160)
@given(text=config_json(), command=st.sampled_from(["size", "inspect", "check", "recommend", "roofline"]))
def test_config_json(text, command):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "config.json"
        p.write_text(text)
        args = {"size": ["size", str(p), "--gpu", "h100", "--ctx", "4096"], "inspect": ["inspect", str(p)],
                "check": ["check", "--model", str(p), "--gpu", "h100", "--format", "json"],
                "recommend": ["recommend", "--model", str(p), "--batch", "8"],
                "roofline": ["roofline", "--model", str(p), "--batch", "1,64"]}[command]
        run_checked(*args, kind=f"config.json: {command}")


CONFIG_KEYS = ["version", "model", "engine", "engine_version", "gpu", "gpus", "quantization", "kv_cache_dtype",
               "gpu_memory_utilization", "reserve_gb", "workload", "thresholds", "accuracy", "deployment", "profile",
               "fail_on", "baseline", "rules", "nonsense"]
YAML_VALUES = ["1", "0", "-1", "1e309", ".inf", "-.inf", ".nan", "null", "~", "yes", "off", "true", "''", "'x'",
               "h100", "l4", "vllm", "sglang", "0.33.0", "meta-llama/Llama-3.1-8B", "fp8", "auto", "[]", "{}", "[1, 2]",
               "{concurrency: 8, ctx: 4096}", "{concurrency: inf}", "{concurrency: 99999999999999}",
               "{max_slowdown_vs_recommended: 200%}", "{QA303: off, QA999: error}", "{baseline: x, quantized: y}",
               "'50%'", "'abc%'", "!!python/object/apply:os.system ['id']", "*undefined", "&a [1]", "\"\\x00\"",
               "'" + "a" * 3000 + "'", "\t1", "[[[[[[[[[[]]]]]]]]]]"]


@st.composite
def quantadvise_yaml(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(min_value=0, max_value=7))):
        lines.append(f"{draw(st.sampled_from(CONFIG_KEYS))}: {draw(st.sampled_from(YAML_VALUES))}")
    extra = draw(st.sampled_from(["", "bomb", "deep", "dup", "docs", "tab", "binary"]))
    if extra == "bomb":
        lines.append("a0: &a0 [x, x, x, x, x, x, x, x, x, x]")
        lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]
    elif extra == "deep":
        lines.append("x: " + "{a: " * 200 + "1" + "}" * 200)
    elif extra == "dup":
        lines += ["gpu: h100", "gpu: l4"]
    elif extra == "docs":
        lines += ["---", "gpu: h100"]
    elif extra == "tab":
        lines.append("\tgpu: h100")
    elif extra == "binary":
        lines.append("\udcff")
    return "\n".join(lines) + "\n"


@budget(350)
@given(text=quantadvise_yaml(), script=st.booleans())
def test_quantadvise_yaml(text, script):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / ".git").mkdir()
        (root / "quantadvise.yaml").write_bytes(text.encode("utf-8", "surrogateescape"))
        if script:
            (root / "serve.sh").write_text("vllm serve meta-llama/Llama-3.1-8B --max-model-len 8192\n")
        run_checked("check", "--config", str(root / "quantadvise.yaml"), "--format", "json", kind="quantadvise.yaml")


FLAG_VALUES = ["8192", "0", "-1", "auto", "1e309", "inf", "nan", "8k", "4K", "1.5", "abc", "$UNSET", "${X:-16}", "''",
               "fp8", "fp8_e5m2", "awq", "gptq", "bogus", "bf16", "half", "0.95", "1.5", "0", "2", "64", "99999999"]
FLAGS = ["--max-model-len", "--max-num-seqs", "--gpu-memory-utilization", "--tensor-parallel-size", "-tp",
         "--pipeline-parallel-size", "--kv-cache-dtype", "--quantization", "-q", "--dtype", "--max-num-batched-tokens",
         "--speculative-config", "--performance-mode", "--context-length", "--mem-fraction-static",
         "--max-running-requests", "--tp-size", "--chunked-prefill-size", "--cuda-graph-max-bs-decode"]
MODELS_ARG = ["meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B", "someorg/not-bundled", "/models/in/the/container",
              "$MODEL", "deepseek-ai/DeepSeek-V3"]


@st.composite
def command(draw) -> str:
    engine = draw(st.sampled_from(["vllm serve {m}", "python -m sglang.launch_server --model-path {m}",
                                   "python -m vllm.entrypoints.openai.api_server --model {m}"]))
    parts = [engine.format(m=draw(st.sampled_from(MODELS_ARG)))]
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        parts.append(f"{draw(st.sampled_from(FLAGS))} {draw(st.sampled_from(FLAG_VALUES))}")
    return " ".join(parts)


@st.composite
def deployment_file(draw) -> tuple[str, str]:
    cmd = draw(command())
    kind = draw(st.sampled_from(["sh", "k8s", "compose", "docker", "make", "py", "helm", "stack", "workflow", "junk"]))
    words = cmd.split()
    if kind == "sh":
        return "serve.sh", f"#!/bin/sh\nMODEL=${{MODEL:-meta-llama/Llama-3.1-8B}}\n{cmd} \\\n  --port 8000\n"
    if kind == "k8s":
        args = "\n".join(f"            - {json.dumps(w)}" for w in words)
        return "deploy.yaml", ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n"
                               "    spec:\n      containers:\n        - name: llm\n          image: vllm/vllm-openai:v0.33.0\n"
                               f"          command:\n{args}\n          resources: {{limits: {{nvidia.com/gpu: "
                               f"{draw(st.sampled_from(['1', '2', 'x', '-1']))}}}}}\n")
    if kind == "compose":
        return "docker-compose.yml", f"services:\n  llm:\n    image: lmsysorg/sglang:v0.5.23\n    command: {json.dumps(cmd)}\n"
    if kind == "docker":
        return "Dockerfile", f"FROM vllm/vllm-openai:v0.33.0\nARG X=1\nCMD {json.dumps(words[2:])}\n"
    if kind == "make":
        return "Makefile", f"PORT = 8000\nTP ?= {draw(st.sampled_from(FLAG_VALUES))}\nserve:\n\t@{cmd} -tp $(TP)\n"
    if kind == "py":
        return "launch.py", f"import subprocess, os\nsubprocess.run({json.dumps(words)}, check=True)\nos.execvp('vllm', {words!r})\n"
    if kind == "helm":
        return "values.yaml", (f"image:\n  repository: vllm/vllm-openai\n  tag: {draw(st.sampled_from(['v0.33.0', 'latest', '']))}\n"
                               f"server:\n  args: {json.dumps(words[2:])}\n")
    if kind == "stack":
        return "values.yaml", ("servingEngineSpec:\n  modelSpec:\n  - name: m\n    repository: vllm/vllm-openai\n"
                               f"    tag: v0.33.0\n    modelURL: {draw(st.sampled_from(MODELS_ARG))}\n"
                               f"    requestGPU: {draw(st.sampled_from(['1', '4', 'x']))}\n    vllmConfig:\n"
                               f"      maxModelLen: {draw(st.sampled_from(FLAG_VALUES))}\n"
                               f"      extraArgs: {json.dumps(words[3:])}\n")
    if kind == "workflow":
        return ".github/workflows/serve.yml", f"jobs:\n  s:\n    steps:\n      - run: |\n          {cmd}\n"
    return "notes.txt", draw(st.text(max_size=300)) + cmd


@budget(120)
@given(files=st.lists(deployment_file(), min_size=1, max_size=3), gpu=st.sampled_from(["h100", "l4", "a100", "b200"]))
def test_deployment_files(files, gpu):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / ".git").mkdir()
        for name, text in files:
            p = root / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        run_checked("check", str(root), "--gpu", gpu, "--format", "json", kind="deployment files")


@st.composite
def samples(draw) -> str:
    n = draw(st.integers(min_value=0, max_value=30))
    rows = []
    for i in range(n):
        style = draw(st.sampled_from(["jsonl", "lmeval", "junk"]))
        if style == "jsonl":
            row = {"id": draw(st.one_of(st.integers(0, 10), st.text(max_size=3), st.none())),
                   "correct": draw(st.one_of(st.booleans(), st.integers(-1, 2), st.floats(allow_nan=True), st.none())),
                   "task": draw(st.sampled_from(["gsm8k", "arc_challenge", ""]))}
            if draw(st.booleans()):
                row["logprobs"] = draw(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=4))
            rows.append(json.dumps(row, allow_nan=True))
        elif style == "lmeval":
            rows.append(json.dumps({"doc_id": i, "filter": draw(st.sampled_from(["none", "strict-match", "flexible"])),
                                    "metrics": ["acc"], "acc": draw(st.sampled_from([0, 1, 0.5, None, "x"])),
                                    "resps": [[["x"]]], "doc": {"q": "?"}}))
        else:
            rows.append(draw(st.sampled_from(["", "{", "[]", "null", "1", "\"x\"", "{\"id\": {\"a\": []}}"])))
    return "\n".join(rows) + "\n"


@budget(130)
@given(base=samples(), quant=samples(),
       extra=st.lists(st.sampled_from(["--metric", "acc", "--filter", "strict-match", "--max-delta", "1%",
                                       "--max-flips", "200%", "--max-kl", "nan", "--min-samples", "0", "--confidence",
                                       "1", "--format", "json"]), max_size=4))
def test_accuracy_files(base, quant, extra):
    with tempfile.TemporaryDirectory() as d:
        b, q = Path(d) / "samples_gsm8k_base.jsonl", Path(d) / "samples_gsm8k_quant.jsonl"
        b.write_text(base)
        q.write_text(quant)
        run_checked("accuracy", str(b), str(q), *extra, kind="accuracy files")


@budget(600)
@given(text=st.one_of(st.text(max_size=400), deployment_file().map(lambda f: f[1]),
                      st.text(alphabet="\\$`'\"(){}[]|&;<>#=:- \n\tabcvllmserve-.", max_size=300)),
       reader=st.sampled_from(["shell", "yaml", "dockerfile", "makefile", "python"]))
def test_readers_on_raw_text(text, reader):
    """The deployment readers on arbitrary text: invocations, or one ConfigError/InputError, fast."""
    from quantadvise.artifacts.scan import parse_text
    from quantadvise.errors import QuantAdviseError

    t0 = time.process_time()
    try:
        parse_text(text, "fuzz.txt", reader, options=option_list)
    except QuantAdviseError as exc:
        assert "\n" not in str(exc)
    count_direct(f"reader: {reader}", time.process_time() - t0)
