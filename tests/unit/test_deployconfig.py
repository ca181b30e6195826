"""quantadvise.yaml / [tool.quantadvise]: schema, line numbers in errors, discovery, the starter.

Expected line numbers are found in the test's own text (``line_of``), never taken from the parser.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from quantadvise.api.check_config import find_config, load_config, parse_pyproject, parse_yaml_config
from quantadvise.errors import ConfigError
from quantadvise.gate.config import LoadedConfig, starter_config, with_flags

GOOD = """\
version: 1
model: ./checkpoint
engine: vllm
engine-version: 0.33.0
gpu: l4
gpus: 2
quantization: awq
kv_cache_dtype: fp8
workload:
  concurrency: 16
  prompt: 2048
  output: 512
  task: chat
  mode: async
deployment: deploy/
thresholds:
  max_slowdown_vs_recommended: 20%
  min_memory_headroom: 0.1
accuracy:
  baseline: evals/bf16/
  quantized: evals/awq/
  max_delta_drop: 2%
  max_flip_rate: 0.05
  tasks:
    arc-challenge:
      max_kl: 0.1
rules:
  qa202: error
  QA505: off
"""


def line_of(text: str, needle: str) -> int:
    hits = [i for i, line in enumerate(text.splitlines(), start=1) if needle in line]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def test_a_full_file_parses_with_aliases_percentages_and_lines():
    cfg, lines = parse_yaml_config(GOOD, "quantadvise.yaml")
    assert cfg.engine_version == "0.33.0"  # kebab-case key accepted, a YAML float kept as text
    assert cfg.workload.task == "general"  # "chat" is an alias of general
    assert cfg.workload.mode == "continuous"  # "async" is continuous batching
    assert cfg.deployment == ["deploy/"]  # one path may be a string
    assert cfg.thresholds.max_slowdown_vs_recommended == pytest.approx(0.20)  # "20%"
    assert cfg.accuracy is not None and cfg.accuracy.max_delta_drop == pytest.approx(0.02)
    assert cfg.accuracy.tasks["arc-challenge"].max_kl == 0.1  # task names are kept as written
    assert cfg.rules == {"QA202": "error", "QA505": "off"}  # rule ids normalised to upper case
    assert lines["engine_version"] == line_of(GOOD, "engine-version")
    assert lines["workload.concurrency"] == line_of(GOOD, "concurrency")
    assert lines["accuracy.tasks.arc-challenge"] == line_of(GOOD, "arc-challenge:")


@pytest.mark.parametrize(
    ("bad_line", "replacement", "key", "says"),
    [
        ("  concurrency: 16", "  concurency: 16", "workload.concurency", "unknown key"),
        ("  concurrency: 16", "  concurrency: 0", "workload.concurrency", "greater than or equal to 1"),
        # numbers a flag also takes: the flag's range and message (inputs.LIMITS: gpus 1..1024, max_kl 0..1000)
        ("gpus: 2", "gpus: two", "gpus", "must be an integer >= 1 and <= 1,024, got 'two'"),
        ("engine: vllm", "engine: tensorrt", "engine", "'vllm' or 'sglang'"),
        # a bare 5 would be 500 points: refused, with the two spellings that mean 5 points (0.05, '5%')
        ("  max_flip_rate: 0.05", "  max_flip_rate: 5", "accuracy.max_flip_rate", "write '5%' for 5 points"),
        ("  max_flip_rate: 0.05", "  max_flip_rate: 1.5", "accuracy.max_flip_rate", "0.02 = 2 percentage points"),
        ("      max_kl: 0.1", "      max_kl: -1", "accuracy.tasks.arc-challenge.max_kl",
         "must be a number >= 0 and <= 1,000, got -1"),
        ("  mode: async", "  mode: batchy", "workload.mode", "sync, continuous, auto"),
        ("  qa202: error", "  QA999: error", "rules.QA999", "unknown rule id 'QA999'"),
        ("  qa202: error", "  QA202: loud", "rules.QA202", "'error', 'warning', 'note' or 'off'"),
    ],
)
def test_errors_name_file_line_and_key(bad_line, replacement, key, says):
    text = GOOD.replace(bad_line, replacement)
    assert text != GOOD
    with pytest.raises(ConfigError) as exc:
        parse_yaml_config(text, "repo/quantadvise.yaml")
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith(f"repo/quantadvise.yaml: line {line_of(text, replacement.strip())}:"), msg
    assert f"key '{key}'" in msg and says in msg, msg


def test_a_missing_required_key_points_at_its_parent():
    text = GOOD.replace("  quantized: evals/awq/\n", "")
    with pytest.raises(ConfigError) as exc:
        parse_yaml_config(text, "q.yaml")
    assert str(exc.value).startswith(f"q.yaml: line {line_of(text, 'accuracy:')}: key 'accuracy.quantized': "
                                     "required key is missing")


def test_a_key_given_twice_is_an_error_with_both_lines():
    text = GOOD.replace("gpus: 2\n", "gpus: 2\ngpu: h100\n")
    with pytest.raises(ConfigError) as exc:
        parse_yaml_config(text, "q.yaml")
    assert str(exc.value) == (f"q.yaml: line {line_of(text, 'gpu: h100')}: key 'gpu' is given twice "
                              f"(first at line {line_of(text, 'gpu: l4')})")


def test_invalid_yaml_and_wrong_shapes():
    with pytest.raises(ConfigError, match=r"^q.yaml: line 2: invalid YAML"):
        parse_yaml_config("model: a\n  gpu: [h100\n", "q.yaml")
    with pytest.raises(ConfigError, match="expected a mapping"):
        parse_yaml_config("- model\n", "q.yaml")
    with pytest.raises(ConfigError, match="2 YAML documents"):
        parse_yaml_config("model: a\n---\nmodel: b\n", "q.yaml")
    cfg, lines = parse_yaml_config("", "q.yaml")  # empty: every default
    assert cfg.model is None and lines == {}


PYPROJECT = """\
[project]
name = "my-deployment"

[tool.ruff]
line-length = 100

[tool.quantadvise]
model = "./checkpoint"
gpu = "h100"
workload.concurrency = 8

[tool.quantadvise.thresholds]
min_memory_headroom = "15%"

[tool.quantadvise.accuracy]
baseline = "evals/bf16"
quantized = "evals/w4"

[tool.quantadvise.accuracy.tasks.gsm8k]
max_delta_drop = 0.02
"""


def test_pyproject_table_parses_with_lines():
    parsed = parse_pyproject(PYPROJECT, "pyproject.toml")
    assert parsed is not None
    cfg, lines = parsed
    assert cfg.gpu == "h100" and cfg.workload.batch == 8
    assert cfg.thresholds.min_memory_headroom == pytest.approx(0.15)
    assert cfg.accuracy is not None and cfg.accuracy.tasks["gsm8k"].max_delta_drop == 0.02
    assert lines["gpu"] == line_of(PYPROJECT, 'gpu = "h100"')
    assert lines["workload.concurrency"] == line_of(PYPROJECT, "workload.concurrency")
    assert lines["accuracy.tasks.gsm8k.max_delta_drop"] == line_of(PYPROJECT, "max_delta_drop")
    assert parse_pyproject("[project]\nname = 'x'\n", "pyproject.toml") is None


def test_pyproject_errors_name_the_table_line_and_key():
    text = PYPROJECT.replace('gpu = "h100"', 'gpu = "h100"\ngpuz = 2')
    with pytest.raises(ConfigError) as exc:
        parse_pyproject(text, "pyproject.toml")
    assert str(exc.value).startswith(f"pyproject.toml [tool.quantadvise]: line {line_of(text, 'gpuz')}: key 'gpuz': "
                                     "unknown key")
    with pytest.raises(ConfigError, match="invalid TOML"):
        parse_pyproject("[tool.quantadvise\n", "pyproject.toml")


def test_discovery_walks_up_to_the_repository_root(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    deep = repo / "deploy" / "k8s"
    deep.mkdir(parents=True)
    assert find_config(deep) is None  # stops at the folder holding .git
    (tmp_path / "quantadvise.yaml").write_text("gpu: h100\n")  # outside the repository: never used
    assert find_config(deep) is None
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # no [tool.quantadvise]: skipped
    assert find_config(deep) is None
    (repo / "pyproject.toml").write_text(PYPROJECT)
    assert find_config(deep) == (repo / "pyproject.toml").resolve()
    (repo / "deploy" / ".quantadvise.yaml").write_text("gpu: l4\n")  # nearer wins
    assert find_config(deep) == (repo / "deploy" / ".quantadvise.yaml").resolve()


def test_load_config_resolves_paths_against_the_file(tmp_path):
    (tmp_path / "sub").mkdir()
    p = tmp_path / "sub" / "quantadvise.yaml"
    p.write_text("gpu: h100\ndeployment: [k8s/]\n")
    loaded = load_config(p, "sub/quantadvise.yaml")
    assert loaded.file == "sub/quantadvise.yaml"
    assert Path(loaded.path("k8s/")) == tmp_path / "sub" / "k8s"
    with pytest.raises(ConfigError, match="no such configuration file"):
        load_config(tmp_path / "missing.yaml")
    toml = tmp_path / "pyproject.toml"
    toml.write_text("[project]\nname = 'x'\n")
    with pytest.raises(ConfigError, match=r"has no \[tool.quantadvise\] table"):
        load_config(toml)


def test_flags_override_the_file_and_drop_its_lines():
    cfg, lines = parse_yaml_config(GOOD, "q.yaml")
    loaded = with_flags(LoadedConfig(cfg, "q.yaml", lines, "."), {"gpu": "h100", "concurrency": 64, "model": None})
    assert loaded.config.gpu == "h100" and loaded.config.workload.batch == 64
    assert loaded.config.workload.prompt == 2048  # the rest of the workload stays
    assert "gpu" not in loaded.lines and "workload.concurrency" not in loaded.lines
    assert loaded.lines["model"] == lines["model"]
    with pytest.raises(ConfigError, match="option for 'fail_on'"):
        with_flags(loaded, {"fail_on": "sometimes"})


def test_the_starter_is_valid_and_leaves_unknowns_commented_out():
    cfg, _ = parse_yaml_config(starter_config(), "quantadvise.yaml")
    assert cfg.model is None and cfg.gpu is None and cfg.quantization is None  # nothing guessed
    assert cfg.thresholds.min_memory_headroom == pytest.approx(0.10)
    text = starter_config({"model": "org/model-awq", "engine": "sglang", "gpus": 4, "concurrency": 96,
                           "deployment": ["k8s/", "run.sh"]})
    cfg, _ = parse_yaml_config(text, "quantadvise.yaml")
    assert (cfg.model, cfg.engine, cfg.gpus, cfg.workload.batch) == ("org/model-awq", "sglang", 4, 96)
    assert cfg.deployment == ["k8s/", "run.sh"]
    assert "# gpu: h100" in text  # the GPU is never read from artifacts: left for the user
