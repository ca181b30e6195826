"""Property-based fuzzing of issue 29's hostile input classes, beside the older fuzz suite and under its
contract (tests/fuzz/harness.py): no traceback, an exit of 0, 1 or 2 (2: one ``Error:`` line), and a
hard time limit per case (tests/limits.py: a hang fails the case instead of blocking CI).

- numbers: the input layer itself, every numeric option and environment variable of the app (found
  in the app, so a new one is covered), numbers in config.json, quantadvise.yaml, JSON / YAML / TOML
  text and accuracy evidence;
- expansion: bombs in every reader's expansion syntax, each bounded in time and in what it builds;
- names: names that are not UTF-8 or hold control characters through every output format of
  ``check`` and the CSV writer, rendered and end to end.

Derandomized with a fixed number of examples per test (``budget``), so CI runs the same ~3,500 cases
each time; in-process (the real entry point, ``quantadvise.cli.app.main``, whose error mapping is the
contract; typer's CliRunner would bypass it). ``QUANTADVISE_FUZZ_SCALE`` multiplies the budgets."""

from __future__ import annotations

import functools
import json
import os
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import assume, given
from hypothesis import strategies as st

from tests.fuzz.harness import budget, count_direct, run_checked
from tests.fuzz.hostile import (
    bomb,
    hostile_number_text,
    layer_pattern,
    name_bytes,
    name_text,
    number_text,
    number_value,
    numeric_options,
)
from tests.limits import time_limit

REPO = Path(__file__).resolve().parents[2]
CPU, WALL = 5.0, 30.0  # a case's hard limits (the harness asserts the 5 s of CPU after the fact too)
BASE = {"size": ["llama-3-8b"], "check": ["--gpu", "h100", "--model", "llama-3-8b"], "inspect": ["llama-3-8b"],
        "accuracy": [str(REPO / "tests/fixtures/accuracy/plain_base.jsonl"),
                     str(REPO / "tests/fixtures/accuracy/plain_quant.jsonl")],
        "validate": [str(REPO / "tests/fixtures/profiles/simulated-h100-sxm.yaml")],
        "calibrate": ["--backend", "simulated", "--gpu", "h100", "--out", "p.yaml"],
        "deploy": ["--target", "helm", "--out", "d"]}
SLOW = ("calibrate", "validate")  # a valid value runs them for seconds: only values no limit takes


def _cli(*args: str, kind: str, env: dict[str, str] | None = None):
    with time_limit(cpu=CPU * 2, wall=WALL, what=" ".join(a[:40] for a in args)):
        return run_checked(*args, kind=kind, env=env)


def _direct(kind: str, fn, *args, **kw):
    """A reader or the input layer called directly: a QuantAdviseError (one line) or a value, in time."""
    from quantadvise.errors import QuantAdviseError

    t0 = time.process_time()
    with time_limit(cpu=CPU * 2, wall=WALL, what=kind):
        try:
            out = fn(*args, **kw)
        except QuantAdviseError as exc:
            assert "\n" not in str(exc).strip(), str(exc)
            assert len(str(exc)) < 2000, str(exc)[:300]
            out = exc
    count_direct(kind, time.process_time() - t0)
    return out


# -- numbers -----------------------------------------------------------------------------------------


@budget(600)
@given(field=st.sampled_from(sorted(__import__("quantadvise.inputs", fromlist=["LIMITS"]).LIMITS)),
       value=st.one_of(number_value, number_text))
def test_the_input_layer_takes_any_value(field, value):
    from quantadvise.errors import InputError
    from quantadvise.inputs import LIMITS, number, shown

    got = _direct("hostile: input layer", number, field, value)
    shown(value)  # never raises, whatever the value
    if not isinstance(got, InputError) and got is not None:
        lim = LIMITS[field]
        assert lim.low <= got <= lim.high and (not lim.integer or isinstance(got, int)), (field, value, got)


@budget(450)
@given(data=st.data())
def test_every_numeric_option(data):
    command, flag, _env, _integer = data.draw(st.sampled_from(numeric_options()), label="option")
    value = data.draw(hostile_number_text if command in SLOW else number_text, label="value")
    value = value.replace("\x00", "")  # an argv cannot hold NUL
    _cli(command, *BASE.get(command, []), flag, value, *(["--format", "json"] if command != "calibrate" else []),
         kind=f"hostile: numeric option {command}")


@budget(150)
@given(data=st.data())
def test_numeric_environment_variables(data):
    options = [o for o in numeric_options() if o[2]] + [("size", "--", "COLUMNS", True), ("recommend", "--", "COLUMNS", True)]
    command, _flag, env, _integer = data.draw(st.sampled_from(options), label="variable")
    value = data.draw(hostile_number_text if command in SLOW else number_text, label="value").replace("\x00", "")
    _cli(command, *BASE.get(command, []), kind="hostile: numeric environment", env={env: value})


CONFIG_KEYS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
               "vocab_size", "intermediate_size", "max_position_embeddings", "sliding_window", "rope_theta",
               "num_local_experts", "num_experts_per_tok", "moe_intermediate_size", "q_lora_rank", "kv_lora_rank",
               "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "first_k_dense_replace", "n_shared_experts",
               "num_nextn_predict_layers", "rope_scaling.factor", "rope_scaling.original_max_position_embeddings",
               "quantization_config.bits", "quantization_config.group_size", "tie_word_embeddings"]


@functools.cache
def _configs() -> dict[str, dict]:
    names = ["meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-120b"]
    return {n: json.loads((REPO / "data/models" / f"{n}.json").read_text()) for n in names}


@budget(250)
@given(model=st.sampled_from(["meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V3",
                              "openai/gpt-oss-120b"]),
       keys=st.lists(st.sampled_from(CONFIG_KEYS), min_size=1, max_size=3, unique=True),
       values=st.lists(number_value, min_size=3, max_size=3),
       command=st.sampled_from(["size", "size", "size", "inspect", "inspect", "roofline", "recommend", "check"]))
def test_numbers_in_config_json(model, keys, values, command):
    cfg = json.loads(json.dumps(_configs()[model]))
    for key, value in zip(keys, values, strict=False):
        outer, _, inner = key.partition(".")
        if inner:
            base = {"quant_method": "gptq", "bits": 4, "group_size": 128} if outer == "quantization_config" else \
                {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}
            cfg[outer] = {**base, inner: value}
        else:
            cfg[outer] = value
    try:
        text = json.dumps(cfg)
    except ValueError:  # an int of more than 4,300 digits: written by hand below
        text = json.dumps(cfg, default=str)
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "config.json").write_text(text)
        args = {"size": ["size", d], "inspect": ["inspect", d], "roofline": ["roofline", "--model", d, "--batch", "1,64"],
                "recommend": ["recommend", "--model", d], "check": ["check", "--model", d, "--gpu", "h100"]}[command]
        _cli(*args, "--format", "json", kind=f"hostile: config.json {command}")


YAML_KEYS = ["gpus", "gpu_memory_utilization", "reserve_gb", "workload.concurrency", "workload.batch", "workload.ctx",
             "workload.prompt", "workload.output", "thresholds.max_slowdown_vs_recommended",
             "thresholds.min_memory_headroom", "thresholds.evidence_below_bits", "accuracy.min_samples",
             "accuracy.max_kl", "accuracy.max_delta_drop", "accuracy.max_flip_rate", "accuracy.confidence"]


def _literal(value) -> str:
    if isinstance(value, str):
        return value if value and value.strip() == value and "\n" not in value else json.dumps(value)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return ".nan" if value != value else ".inf" if value == float("inf") else "-.inf" if value < -1e308 else repr(value)
    return str(value) if not isinstance(value, list) else json.dumps(value)


@budget(450)
@given(entries=st.lists(st.tuples(st.sampled_from(YAML_KEYS), number_value), min_size=1, max_size=4))
def test_numbers_in_quantadvise_yaml(entries):
    from quantadvise.api.check_config import parse_pyproject, parse_yaml_config

    sections: dict[str, list[str]] = {}
    top: list[str] = []
    for key, value in entries:
        outer, _, inner = key.partition(".")
        try:
            lit = _literal(value)
        except ValueError:
            lit = "9" * 5000
        (sections.setdefault(outer, []).append(f"  {inner}: {lit}") if inner else top.append(f"{outer}: {lit}"))
    if "accuracy" in sections:
        sections["accuracy"] += ["  baseline: b.jsonl", "  quantized: q.jsonl"]
    text = "\n".join(top + [f"{k}:\n" + "\n".join(v) for k, v in sections.items()]) + "\n"
    _direct("hostile: quantadvise.yaml", parse_yaml_config, text, "quantadvise.yaml")
    toml = "[tool.quantadvise]\n" + "\n".join(x.replace(": ", " = ", 1) for x in top) + "\n"
    _direct("hostile: pyproject.toml", parse_pyproject, toml, "pyproject.toml")


@budget(400)
@given(number=number_text.filter(lambda t: t.strip() != "" and "\x00" not in t),
       where=st.sampled_from(["json", "jsonl", "yaml", "workload", "profile", "dotenv", "speculative", "bench",
                              "stack"]))
def test_number_literals_in_every_reader(number, where):
    """A number literal as written — 5,000 digits, 1e999, -0, 0x... — in every text reader."""
    from quantadvise.artifacts.evidence import parse_jsonl
    from quantadvise.artifacts.scan import parse_text
    from quantadvise.catalog import option_list
    from quantadvise.catalog.loader import yaml_load
    from quantadvise.files import json_loads
    from quantadvise.perf.profiles import parse_profile
    from quantadvise.workload import WorkloadSpec

    if where == "json":
        _direct("hostile: JSON", json_loads, '{"hidden_size": ' + number + "}", "config.json")
    elif where == "jsonl":
        _direct("hostile: evidence", parse_jsonl, '{"id": ' + number + ', "correct": 1, "logprobs": [' + number +
                ", 1]}\n", "s.jsonl")
    elif where in ("yaml", "workload", "profile"):
        doc = _direct("hostile: YAML", yaml_load, f"batch: {number}\nctx: {number}\n", "w.yaml")
        if isinstance(doc, dict) and where == "workload":
            try:
                WorkloadSpec.model_validate(doc)
            except ValueError:  # pydantic's ValidationError: the readers turn it into one ConfigError
                pass
        elif isinstance(doc, dict):
            prof = yaml_load((REPO / "tests/fixtures/profiles/simulated-h100-sxm.yaml").read_text(), "p.yaml")
            prof["gpu_bandwidth_efficiency"] = doc.get("batch")
            _direct("hostile: profile", parse_profile, prof, "p.yaml")
    elif where == "dotenv":
        text = "services:\n  llm:\n    image: vllm/vllm-openai:v0.11.0\n    command: vllm serve m/m --max-model-len ${N}\n"
        _direct("hostile: compose .env", parse_text, text, "c.yml", "yaml", dotenv={"N": number}, options=option_list)
    elif where == "bench":  # a vllm bench serve result and a SGLang bench_serving line, every number as written
        from quantadvise.calibration.bench import parse_bench

        keys = ("completed", "output_throughput", "total_input_tokens", "total_output_tokens", "max_concurrency",
                "request_rate", "mean_ttft_ms", "mean_tpot_ms", "mean_e2el_ms")
        body = ", ".join(f'"{k}": {number}' for k in keys)
        _direct("hostile: bench file", parse_bench, "run.json", '{"model_id": "m", "endpoint_type": "openai", '
                f'"latencies": [{number}], {body}}}')
        _direct("hostile: bench file", parse_bench, "s.jsonl", '{"server_info": {"tp_size": ' + number + '}, '
                f'"concurrency": {number}, {body}}}\n')
    elif where == "stack":  # production-stack values on Ray, and KServe's parallelism
        stack = ("servingEngineSpec:\n  modelSpec:\n  - name: a\n    repository: vllm/vllm-openai\n    tag: v0.11.0\n"
                 f"    modelURL: m/m\n    requestGPU: {number}\n    replicaCount: {number}\n    raySpec:\n"
                 f"      enabled: true\n    vllmConfig:\n      tensorParallelSize: {number}\n")
        _direct("hostile: production-stack", parse_text, stack, "values.yaml", "yaml", options=option_list)
        kserve = ("apiVersion: serving.kserve.io/v1alpha1\nkind: LLMInferenceService\nmetadata:\n  name: a\nspec:\n"
                  f"  model:\n    uri: hf://m/m\n  parallelism:\n    tensor: {number}\n    data: {number}\n")
        _direct("hostile: kserve", parse_text, kserve, "isvc.yaml", "yaml", options=option_list)
    else:
        cmd = f"vllm serve m/m --speculative-config '{{\"num_speculative_tokens\": {number}}}' -tp '{number}' " \
              f"--gpu-memory-utilization '{number}' --max-model-len '{number}' --hf-overrides " \
              f"'{{\"max_position_embeddings\": {number}}}'\n"
        _direct("hostile: engine flags", parse_text, cmd, "s.sh", "shell", options=option_list)


# -- expansion ---------------------------------------------------------------------------------------


@budget(200)
@given(case=bomb())
def test_expansion_is_bounded_in_every_reader(case):
    from quantadvise.artifacts import budget as file_budget
    from quantadvise.artifacts.scan import parse_text
    from quantadvise.catalog import option_list

    reader, text, dotenv = case
    with file_budget.reading("bomb") as b:
        found = _direct(f"hostile: expansion {reader}", parse_text, text, "bomb", reader, dotenv=dotenv,
                        options=option_list)
    if isinstance(found, list):
        for inv in found:
            assert len(inv.argv) <= file_budget.MAX_WORDS + 4
            assert max((len(a) for a in inv.argv), default=0) <= file_budget.MAX_VALUE_CHARS + 100_000
            assert sum(len(a) for a in inv.argv) <= file_budget.MAX_EXPANDED_CHARS + len(text) + 100_000
    assert len(b.warnings) <= 8  # once per kind


@budget(40)
@given(case=bomb())
def test_expansion_bombs_through_check(case):
    reader, text, dotenv = case
    name = {"shell": "serve.sh", "makefile": "Makefile", "dockerfile": "Dockerfile", "yaml": "deploy.yaml"}[reader]
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / name).write_text(text)
        if dotenv:
            (Path(d) / ".env").write_text("".join(f"{k}={v}\n" for k, v in dotenv.items()))
        _cli("check", d, "--gpu", "h100", "--format", "json", kind="hostile: expansion via check")


# -- names -------------------------------------------------------------------------------------------

FORMATS = ["table", "json", "markdown", "github", "sarif", "junit"]


@functools.cache
def _gate_result():
    """One real check result with findings (computed once), to render with hostile names put in it."""
    from quantadvise.api.check import check

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "serve.sh").write_text("vllm serve meta-llama/Llama-3.1-8B --max-model-len 999999 --bogus 1\n")
        cwd = os.getcwd()
        os.chdir(d)
        try:
            return check(["serve.sh"], gpu="h100")
        finally:
            os.chdir(cwd)


def _printable(text: str, fmt: str) -> None:
    text.encode("utf-8")  # no lone surrogate: writable to any UTF-8 stream or file
    bad = [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0 or c in "\u202e\u2066"]
    assert not bad, (fmt, bad)


@budget(450)
@given(file=name_text, target=name_text, message=name_text, fmt=st.sampled_from(FORMATS))
def test_hostile_names_in_every_check_format(file, target, message, fmt):
    from quantadvise.report import render

    r = _gate_result()
    assert r.findings
    f0 = r.findings[0].model_copy(update={"file": f"{file}/x.sh", "target": target, "message": f"{message} tail",
                                          "subject": file})
    r2 = r.model_copy(update={"findings": [f0, *r.findings[1:]], "warnings": [*r.warnings, message]})
    t0 = time.process_time()
    with time_limit(cpu=CPU, wall=WALL, what=fmt):
        text = render("check", fmt, r2, **({"width": 80} if fmt == "table" else {}))
    count_direct(f"hostile: names render {fmt}", time.process_time() - t0)
    _printable(text, fmt)
    if fmt in ("json", "sarif"):
        json.loads(text)
    elif fmt == "junit":
        ET.fromstring(text.split("\n", 1)[1])
    elif fmt == "github":  # one workflow command per finding: a name cannot start another
        assert sum(line.startswith("::") for line in text.splitlines()) == len(r2.findings)


@budget(300)
@given(cell=st.one_of(name_text, st.text(), st.sampled_from(["=1+1", "+1", "-1", "-1.5e-05", "@x", "\t=1", "\r=1",
                                                               "nan", "-inf", "=", "-", "+-1"])))
def test_csv_cells(cell):
    import csv
    import io

    from quantadvise.report.text import CSV_FORMULA_START, csv_text

    t0 = time.process_time()
    text = csv_text(["c"], [[cell]])
    count_direct("hostile: CSV cell", time.process_time() - t0)
    _printable(text, "csv")
    (out,) = next(csv.reader(io.StringIO(text.split("\n", 1)[1] if "\n" in text else "")), [""]) or [""]
    import re

    number = re.fullmatch(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan", cell) is not None
    assert number or not out.startswith(CSV_FORMULA_START), (cell, out)


@budget(60)
@given(parts=st.lists(name_bytes, min_size=1, max_size=3), fmt=st.sampled_from(FORMATS + ["csv"]))
def test_hostile_file_names_end_to_end(parts, fmt):
    """Real files with hostile names: ``check`` in every format reads them and writes them escaped."""
    with tempfile.TemporaryDirectory() as d:
        root = os.fsencode(d)
        folder = os.path.join(root, *[p if p not in (b".", b"..") else b"_" + p for p in parts[:-1]])
        try:
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, parts[-1] + b".sh")
            with open(path, "w") as fh:
                fh.write("vllm serve meta-llama/Llama-3.1-8B --max-model-len 999999\n")
        except OSError:  # a name this file system refuses (too long, a reserved name)
            assume(False)
        if fmt == "csv":
            model = os.path.join(folder, b"m")
            os.makedirs(model, exist_ok=True)
            with open(os.path.join(model, b"config.json"), "w") as fh:
                fh.write((REPO / "data/models/meta-llama/Llama-3.1-8B.json").read_text())
            r = _cli("roofline", "--model", os.fsdecode(model), "--batch", "1", "--format", "csv",
                     kind="hostile: names end to end")
        else:
            r = _cli("check", d, "--gpu", "h100", "--format", fmt, "-v", kind="hostile: names end to end")
        _printable(r.stdout, fmt)
        _printable(r.stderr, fmt)


@budget(100)
@given(ignore=st.lists(layer_pattern, min_size=1, max_size=6), targets=st.lists(layer_pattern, min_size=1, max_size=3),
       model=st.sampled_from(["meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B"]))
def test_layer_patterns_in_a_quantization_config(ignore, targets, model):
    """Regular expressions a checkpoint's config matches against every tensor: refused when they could
    backtrack, and matched within the placement's time limit otherwise."""
    cfg = {**_configs()[model], "quantization_config": {
        "quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ignore,
        "config_groups": {"group_0": {"targets": targets, "weights": {"num_bits": 4, "type": "int", "symmetric": True,
                                                                       "strategy": "group", "group_size": 128}}}}}
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "config.json").write_text(json.dumps(cfg))
        _cli("size", d, "--format", "json", kind="hostile: layer patterns")
