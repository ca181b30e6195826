"""Issue 29, huge numbers: every number — a flag of any command, an environment variable, a key of
config.json, quantadvise.yaml, pyproject.toml, a workload or profile file, a JSON line of evidence —
passes the one input layer (``quantadvise.inputs``): integers are compared as integers before any
float conversion, and a number no field takes is one ``Error:`` line naming the field, exit 2. Before,
a 400-digit ``--batch`` raised OverflowError from about 15 code sites, and a number of more than
4,300 digits a ValueError from Python's int() in every JSON and YAML reader."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from tests.limits import time_limit

REPO = Path(__file__).resolve().parents[2]
HUGE = "9" * 400  # past a float (1.8e308): float() of it is inf, int() of it 400 digits
LONGEST = "9" * 5000  # past Python's int() (4,300 digits): a ValueError, not a number
VALUES = [HUGE, "-" + HUGE, LONGEST]
# what each command needs besides the flag under test
BASE = {"size": ["llama-3-8b"], "check": ["--gpu", "h100", "--model", "llama-3-8b"], "inspect": ["llama-3-8b"],
        "accuracy": [str(REPO / "tests/fixtures/accuracy/plain_base.jsonl"),
                     str(REPO / "tests/fixtures/accuracy/plain_quant.jsonl")],
        "validate": [str(REPO / "tests/fixtures/profiles/simulated-h100-sxm.yaml")],
        "calibrate": ["--backend", "simulated", "--gpu", "h100"], "deploy": ["--target", "helm", "--out", "d"]}


@functools.cache
def numeric_options() -> list[tuple[str, str, str | None]]:
    """(command, long flag, its environment variable) for every option typed int or float, from the app
    itself: a number flag added later is covered without touching this test."""
    import typer

    from quantadvise.cli.typer_app import build_app

    out = []
    for name, cmd in typer.main.get_command(build_app()).commands.items():
        for p in cmd.params:
            kind = getattr(getattr(p, "type_descriptor", None), "annotation", None)
            opts = [o for o in p.opts if o.startswith("--")]
            if opts and (kind in (int, float) or (kind is str and name in ("roofline", "calibrate")
                                                  and opts[0] in ("--batch", "--ctx", "--batches"))):
                out.append((name, max(opts, key=len), getattr(p, "envvar", None)))
    return out


def _one_error(r, *fragments: str) -> str:
    assert r.code == 2, (r.code, r.stdout[-500:], r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    errors = [x for x in lines if x.startswith("Error: ")]
    assert len(errors) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    for f in fragments:
        assert f in errors[0], errors[0]
    assert len(errors[0]) < 600, errors[0]  # a 5,000-digit value is quoted in part, never whole
    return errors[0]


def test_the_numeric_options_are_found():
    found = {(c, f) for c, f, _ in numeric_options()}
    assert {("size", "--batch"), ("recommend", "--batch"), ("check", "--concurrency"), ("roofline", "--batch"),
            ("accuracy", "--min-samples"), ("calibrate", "--seconds"), ("validate", "--max-error")} <= found


@pytest.mark.parametrize("value", VALUES, ids=["400-digits", "minus-400-digits", "5000-digits"])
def test_every_numeric_flag_refuses_a_huge_number_in_one_line(cli, value):
    for command, flag, _env in numeric_options():
        with time_limit(cpu=10, what=f"{command} {flag}"):
            r = cli(command, *BASE.get(command, []), flag, value)
        _one_error(r, flag.lstrip("-").split("-")[0])


@pytest.mark.parametrize("value", [HUGE, LONGEST], ids=["400-digits", "5000-digits"])
def test_every_numeric_environment_variable_refuses_a_huge_number(cli, monkeypatch, value):
    for command, _flag, env in numeric_options():
        if env:
            monkeypatch.setenv(env, value)
            r = cli(command, *BASE.get(command, []))
            monkeypatch.delenv(env)
            _one_error(r, env)


def test_the_issue_example_is_one_error_line(cli):
    line = _one_error(cli("size", "llama-3-8b", "--batch", HUGE), "--batch must be an integer >= 1 and <= 1,000,000")
    assert "(400 digits)" in line  # quoted in part


@pytest.mark.parametrize("value", [LONGEST, "6" * 300])
def test_columns_from_the_environment_never_crashes(cli, monkeypatch, value):
    monkeypatch.setenv("COLUMNS", value)  # a ValueError from int() before (5,000 digits)
    r = cli("size", "llama-3-8b")
    assert r.code == 0, r.stderr


def test_the_input_layer_compares_integers_as_integers():
    from quantadvise.errors import InputError
    from quantadvise.inputs import check, finite, parse, shown

    for v in (10**400, -(10**400), 10**5000):
        with pytest.raises(InputError, match="--batch must be an integer"):
            check("batch", v)  # OverflowError from math.isfinite before
    assert check("batch", 8) == 8 and check("reserve_gb", 1) == 1.0
    assert finite(10**400) is None and finite(float("nan")) is None and finite(True) is None and finite(3) == 3.0
    assert shown(10**400).endswith("(401 digits)") and len(shown(10**400)) < 50
    assert shown(10**5000) == "an integer of over 4,000 digits"  # str() of it would raise
    with pytest.raises(InputError, match="got '9999"):
        parse("batch", LONGEST)  # int() would raise a ValueError past 4,300 digits
    assert parse("batch", " 8 ") == 8 and parse("batch", "8.0") == 8 and parse("reserve_gb", "1e3") == 1000.0


def _llama() -> dict:
    return json.loads((REPO / "data/models/meta-llama/Llama-3.1-8B.json").read_text())


@pytest.mark.parametrize("key", ["hidden_size", "num_hidden_layers", "vocab_size", "intermediate_size",
                                 "max_position_embeddings", "num_key_value_heads", "sliding_window", "q_lora_rank",
                                 "head_dim"])
@pytest.mark.parametrize("value", [10**400, -(10**400), 10**30], ids=["1e400", "-1e400", "1e30"])
def test_a_huge_number_in_config_json(cli, tmp_path, key, value):
    cfg = _llama()
    cfg[key] = value
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    for args in (["size", "m"], ["recommend", "--model", "m"], ["roofline", "--model", "m"],
                 ["check", "--model", "m", "--gpu", "h100"]):
        _one_error(cli(*args), key)


def test_a_huge_group_size_in_a_quantization_config(cli, tmp_path):
    cfg = {**_llama(), "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 10**30}}
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    _one_error(cli("size", "m"), "group_size")  # OverflowError in GroupShape.count before


@pytest.mark.parametrize(("name", "text", "field"), ids=["config.json", "workload", "profile"], argvalues=[
    ("config.json", '{"model_type": "llama", "hidden_size": ' + LONGEST + "}", "config.json"),
    ("w.yaml", "batch: " + LONGEST + "\n", "w.yaml"),
    ("p.yaml", "gpu: h100\nx: " + LONGEST + "\n", "p.yaml"),
])
def test_a_number_python_cannot_convert_in_a_file(cli, tmp_path, name, text, field):
    (tmp_path / name).write_text(text)
    args = {"config.json": ["size", name], "w.yaml": ["recommend", "-w", name],
            "p.yaml": ["roofline", "--profile", name]}[name]
    _one_error(cli(*args), field)


@pytest.mark.parametrize("key", ["gpus", "gpu_memory_utilization", "reserve_gb", "workload.concurrency",
                                 "workload.ctx", "thresholds.evidence_below_bits", "accuracy.min_samples",
                                 "accuracy.max_delta_drop", "accuracy.max_kl"])
@pytest.mark.parametrize("value", [str(10**400), "'" + HUGE + "'", "-" + HUGE], ids=["int", "quoted", "negative"])
def test_a_huge_number_in_quantadvise_yaml(cli, tmp_path, key, value):
    outer, _, inner = key.partition(".")
    body = f"{outer}: {value}\n" if not inner else f"{outer}:\n  {inner}: {value}\n"
    if outer == "accuracy":
        body = f"accuracy:\n  baseline: b.jsonl\n  quantized: q.jsonl\n  {inner}: {value}\n"
    (tmp_path / "quantadvise.yaml").write_text("model: meta-llama/Llama-3.1-8B\ngpu: h100\n" + body)
    (tmp_path / "serve.sh").write_text("vllm serve meta-llama/Llama-3.1-8B\n")
    for f in ("b.jsonl", "q.jsonl"):
        (tmp_path / f).write_text((REPO / "tests/fixtures/accuracy/plain_base.jsonl").read_text())
    _one_error(cli("check", "serve.sh"), inner or outer)


def test_a_number_of_5000_digits_in_pyproject_and_quantadvise_yaml(cli, tmp_path):
    (tmp_path / "serve.sh").write_text("vllm serve meta-llama/Llama-3.1-8B\n")
    (tmp_path / "pyproject.toml").write_text(f"[tool.quantadvise]\ngpus = {LONGEST}\n")
    _one_error(cli("check", "serve.sh", "--config", "pyproject.toml", "--gpu", "h100"), "pyproject.toml")
    (tmp_path / "quantadvise.yaml").write_text(f"gpus: {LONGEST}\n")
    _one_error(cli("check", "serve.sh", "--gpu", "h100"), "quantadvise.yaml")


@pytest.mark.parametrize("line", ids=["id", "correct", "logprobs"], argvalues=['{"id": ' + LONGEST + ', "correct": 1}', '{"id": 1, "correct": ' + HUGE + "}",
                                  '{"id": 1, "correct": 1, "logprobs": [' + HUGE + "]}"])
def test_huge_numbers_in_accuracy_evidence(cli, tmp_path, line):
    (tmp_path / "b.jsonl").write_text(line + "\n")
    (tmp_path / "q.jsonl").write_text('{"id": 1, "correct": 1}\n')
    r = cli("accuracy", "b.jsonl", "q.jsonl")
    assert r.code in (0, 1, 2) and "Traceback" not in r.stderr, r.stderr
    if r.code == 2:
        _one_error(r)


@pytest.mark.parametrize("flag", ["--max-model-len", "--max-num-seqs", "--tensor-parallel-size",
                                  "--gpu-memory-utilization", "--hf-overrides", "--speculative-config"])
def test_huge_numbers_in_engine_flags(cli, tmp_path, flag):
    value = LONGEST if not flag.endswith(("overrides", "config")) else \
        '{"max_position_embeddings": ' + LONGEST + ', "num_speculative_tokens": ' + HUGE + "}"
    (tmp_path / "serve.sh").write_text(f"vllm serve meta-llama/Llama-3.1-8B {flag} '{value}'\n")
    with time_limit(cpu=10, what=flag):
        r = cli("check", "serve.sh", "--gpu", "h100", "--format", "json")
    assert r.code in (0, 1, 2) and "Traceback" not in r.stderr, r.stderr[-2000:]


def test_a_dockerfile_exec_form_with_5000_digits(cli, tmp_path):
    (tmp_path / "Dockerfile").write_text(f'FROM vllm/vllm-openai:v0.11.0\nCMD ["vllm", "serve", "m/m", {LONGEST}]\n')
    _one_error(cli("check", "Dockerfile", "--gpu", "h100"), "Dockerfile")  # ValueError from json.loads before


@pytest.mark.parametrize(("args", "fragment"), ids=lambda v: str(v)[:40], argvalues=[
    (["roofline", "--batch", "1.." + LONGEST], "--batch"), (["roofline", "--batch", "1..8:" + LONGEST], "--batch"),
    (["roofline", "--ctx", LONGEST + "k"], "--ctx"), (["size", "llama-3-8b", "--bits", HUGE], "--bits"),
    (["roofline", "--group", HUGE], "--group"), (["accuracy", "a", "b", "--min-samples", HUGE], "--min-samples"),
])
def test_list_forms_and_scheme_numbers(cli, args, fragment):
    _one_error(cli(*args), fragment)


@pytest.mark.parametrize("value", [".nan", ".inf", str(10**400)])
def test_a_non_finite_or_huge_number_in_a_profile_curve(cli, tmp_path, value):
    import yaml

    prof = yaml.safe_load((REPO / "tests/fixtures/profiles/simulated-h100-sxm.yaml").read_text())
    prof["gpus"][0]["schemes"]["bf16"]["linear"]["correction"]["batch"][1] = "@@"
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(prof).replace("'@@'", value))
    r = cli("roofline", "--profile", "p.yaml", "--gpu", "h100", "--batch", "1,64")
    _one_error(r, "p.yaml")  # a ValueError from math.log10(nan) in the renderer before


# ---- lists: each name once, each list bounded (every name, batch and context is a computation) --------------------
def test_a_scheme_named_100000_times_is_priced_once(cli):
    with time_limit(cpu=10, what="--scheme repeated"):
        r = cli("roofline", "--scheme", "bf16," * 100_000 + " w4a16", "--batch", "1,8", "--format", "json")
    assert r.code == 0, r.stderr[-2000:]
    assert [s["scheme"] for s in r.json()["schemes"]] == ["bf16", "w4a16"]


@pytest.mark.parametrize(("args", "fragment"), ids=lambda v: str(v)[:40], argvalues=[
    # 65 different names, one past inputs.MAX_NAMES = 64: refused before any is looked up
    (["roofline", "--scheme", ",".join(f"s{i}" for i in range(65))], "--scheme names 65 different values; at most 64"),
    (["roofline", "--scheme", " , ,"], "--scheme needs at least one name"),
    (["recommend", "--candidates", ",".join(f"s{i}" for i in range(65))], "--candidates names 65 different"),
    (["calibrate", "--backend", "simulated", "--gpu", "h100", "--schemes", ",".join(f"s{i}" for i in range(65))],
     "--schemes names 65 different"),
    (["calibrate", "--backend", "simulated", "--gpu", "h100", "--schemes", ","], "--schemes needs at least one"),
    (["inspect", "llama-3-8b", *[a for i in range(65) for a in ("-e", f"e{i}")]], "--engine names 65 different"),
    # 1..1024:1 is (1024 - 1) // 1 + 1 = 1,024 batches, past MAX_LIST_VALUES = 512, counted before the list is built
    (["deploy", "--target", "helm", "--out", "d", "--candidates", ",".join(f"s{i}" for i in range(65))],
     "--candidates names 65 different"),
    (["recommend", "--node", ",".join(f"8xg{i}" for i in range(65))], "--node names 65 different"),
    (["recommend", "--gpu", ",".join(f"g{i}" for i in range(65)), "--layouts"], "--gpu names 65 different"),
    # GPUs per node through the one input layer (1..1,024, the --gpus limit): 400 digits, 5,000 digits, 0
    (["recommend", "--node", HUGE + "xh100"], "--node must be an integer >= 1 and <= 1,024"),
    (["recommend", "--node", LONGEST + "xh100"], "--node must be an integer >= 1 and <= 1,024"),
    (["deploy", "--target", "helm", "--out", "d", "--node", "0xh100"], "--node must be an integer >= 1"),
    (["size", "llama-3-8b", "--gpu", "h" * 5000], "(5,000 characters)"),  # quoted in part, no spelling search
    (["roofline", "--batch", "1..1024:1"], "--batch lists 1,024 values; at most 512"),
    (["roofline", "--ctx", ",".join(str(c) for c in range(1, 514))], "--ctx lists 513 values; at most 512"),
    # 3 schemes x 512 batches (16..8192:16: (8192 - 16) // 16 + 1) x 14 contexts = 21,504 > MAX_POINTS = 20,000
    (["roofline", "--scheme", "bf16,w4a16,fp8-dynamic", "--batch", "16..8192:16",
      "--ctx", ",".join(str(c) for c in range(1, 15))], "3 x 512 x 14 = 21,504 points; at most 20,000"),
])
def test_list_flags_are_bounded(cli, args, fragment):
    with time_limit(cpu=10, what=" ".join(args)[:60]):
        _one_error(cli(*args), fragment)


def test_list_bounds_count_distinct_values():
    from quantadvise.perf.inputs import parse_batches, parse_contexts

    # two copies of 1..512:1 are 512 distinct batches (the bound), 1..4096 doubles: 2**0 .. 2**12, 13 values
    assert parse_batches("1..512:1,1..512:1") == tuple(range(1, 513))
    assert parse_batches("1..4096," * 1000) == tuple(2**k for k in range(13))
    assert parse_contexts("2k," * 10_000 + "512") == (512, 2048)


def test_engines_and_schemes_named_twice_are_one(cli):
    r = cli("inspect", "llama-3-8b", "-e", "vllm", "-e", " vllm", "-e", "vllm", "--format", "json")
    assert r.code == 0, r.stderr
    assert len(r.json()["engines"]) == 1
    r = cli("calibrate", "--backend", "simulated", "--gpu", "h100", "--schemes", "bf16,bf16, bf16", "--format", "json")
    assert r.code == 0, r.stderr
    assert [s["scheme"] for s in r.json()["schemes"]] == ["bf16"]


def test_workload_candidates_once_and_bounded(cli, tmp_path):
    from pydantic import ValidationError

    from quantadvise.workload import Workload

    assert Workload(candidates=["w4a16", "w4a16", " fp8-dynamic"]).candidates == ("w4a16", "fp8-dynamic")
    assert Workload(candidates="w4a16,w4a16").candidates == ("w4a16",)
    with pytest.raises(ValidationError, match="names 65 different values"):
        Workload(candidates=[f"s{i}" for i in range(65)])
    (tmp_path / "w.yaml").write_text("candidates: [" + ", ".join(f"s{i}" for i in range(65)) + "]\n")
    _one_error(cli("recommend", "--workload", "w.yaml"), "candidates")


# ---- benchmark result files (validate --bench, calibrate --from-bench): every number through the one layer ----------
SERVE = {"model_id": "m", "endpoint_type": "openai", "completed": 4, "output_throughput": 50.0,
         "total_input_tokens": 4096, "total_output_tokens": 512, "max_concurrency": 4, "request_rate": "inf"}


@pytest.mark.parametrize(("key", "raw", "says"), ids=lambda v: str(v)[:20], argvalues=[
    ("output_throughput", HUGE, "not a finite number"), ("output_throughput", "-" + HUGE, "not a finite number"),
    ("completed", LONGEST, "invalid JSON value"),  # past Python's int(): a ValueError from json.loads before
    ("total_input_tokens", "1e300", ">= 0 and <= 1e+12"),  # finite, but 1e300 x 1e300 overflowed a product
    ("output_throughput", "-5", ">= 0"), ("request_rate", '"' + "9" * 500 + '"', "not a number"),
    ("max_concurrency", "2000000", "concurrency"),  # 2,000,000 requests in flight: past the --concurrency limit
    ("latencies", "[" + "[" * 5000 + "]" * 5000 + "]", "nested"),
])
def test_hostile_numbers_in_a_bench_file(cli, tmp_path, key, raw, says):
    body = json.dumps({k: v for k, v in SERVE.items() if k != key})
    (tmp_path / "run.json").write_text(body[:-1] + f', "{key}": {raw}}}')
    with time_limit(cpu=10, what=key):
        r = cli("validate", "--bench", "run.json", "--gpu", "h100", "--model", "llama-3-8b")
    _one_error(r, "run.json", says)


@pytest.mark.parametrize("doc", ids=["list", "model-dict", "stimulus-list", "cfg-str"], argvalues=[
    [1, 2], {**SERVE, "model_id": {"a": 1}}, {"input_config": {"perf_analyzer": [1]}, "output_token_throughput": {}},
    {"input_config": "x", "output_token_throughput": {"avg": 1}},
])
def test_a_bench_file_of_the_wrong_shape_is_one_error(cli, tmp_path, doc):
    (tmp_path / "run.json").write_text(json.dumps(doc))
    _one_error(cli("validate", "--bench", "run.json", "--gpu", "h100", "--model", "llama-3-8b"), "run.json")


@pytest.mark.parametrize("ctx", ["[[null], 2, 3]", "{a: 1}", "'2048'", "true", "2048.5"])
def test_a_workload_file_length_that_is_not_a_whole_number(cli, tmp_path, ctx):
    # the prompt + output <= ctx check ran on the file's raw values before its schema did, and compared an
    # int with a list (TypeError); now the schema names the field
    (tmp_path / "w.yaml").write_text(f"model: meta-llama/Llama-3.1-8B\nprompt: 3000\noutput: 500\nctx: {ctx}\n")
    for args in (["recommend", "-w", "w.yaml", "--format", "json"],
                 ["deploy", "-w", "w.yaml", "--target", "helm", "-o", "out", "--format", "json"]):
        # a quoted '2048' is the number in the schema's lax mode, and then too short for 3,000 + 500 tokens
        _one_error(cli(*args), "ctx")


@pytest.mark.parametrize(("flag", "field"), [("--itl-ms", "--itl-ms"), ("--ttft-ms", "--ttft-ms"),
                                             ("--e2e-ms", "--e2e-ms"), ("--rate", "--rate"),
                                             ("--usd-per-gpu-hour", "--usd-per-gpu-hour")])
@pytest.mark.parametrize("value", ["5e-324", "1e-310", "0"])
def test_a_subnormal_budget_rate_or_price(cli, tmp_path, flag, field, value):
    # 5e-324 passed "> 0", then a budget in ms became 0.0 s (ZeroDivisionError in the layout search), a rate
    # per replica underflowed in the queue's log(lambda / mu) (ValueError) and 1 / price divided by zero
    runs = [["recommend", "--max-gpus", "8", flag, value]]
    if flag != "--e2e-ms":  # deploy takes the TTFT and ITL budgets only
        runs.append(["deploy", "--target", "helm", "-o", str(tmp_path / "d"), flag, value])
    for args in runs:
        _one_error(cli(*args), field, ">= 0.")


# 150 levels: every Python's json.loads parses it (3.11 stops near 1,000, 3.12+ far deeper), so only the
# readers' own bound (quantadvise.inputs.MAX_NESTING = 100) refuses it — the same answer on every Python
DEEP = "[" * 150 + "]" * 150


def test_a_bench_file_nested_past_the_bound_is_refused_on_every_python(cli, tmp_path):
    body = json.dumps({k: v for k, v in SERVE.items() if k != "latencies"})
    (tmp_path / "run.json").write_text(body[:-1] + f', "latencies": {DEEP}}}')
    _one_error(cli("validate", "--bench", "run.json", "--gpu", "h100", "--model", "llama-3-8b"), "run.json",
               "nested too deeply (more than 100 levels)")


def test_an_evidence_line_nested_past_the_bound_is_refused_on_every_python():
    from quantadvise.artifacts.evidence import parse_jsonl
    from quantadvise.errors import ConfigError

    with pytest.raises(ConfigError, match="line 2: JSON nested more than 100 levels deep"):
        parse_jsonl('{"doc_id": 0, "acc": 1}\n{"doc_id": 1, "acc": 0, "x": ' + DEEP + "}\n", "s.jsonl")


def test_a_model_override_nested_past_the_bound_is_not_read():
    from quantadvise.engines.flags import MODEL_OVERRIDE_FLAGS, model_overrides

    engine, flags = next((e, f) for e, f in MODEL_OVERRIDE_FLAGS.items() if f)
    inner = "[" * 99 + "]" * 99  # with the object around it, 100 levels: at the bound, read
    assert model_overrides(engine, {flags[0]: '{"a": ' + inner + "}"}) == {"a": json.loads(inner)}
    assert model_overrides(engine, {flags[0]: '{"a": ' + DEEP + "}"}) is None
