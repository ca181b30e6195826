"""Engine launches in Makefiles, Python launchers, Helm values that keep the image apart from the
args, and the vLLM production-stack chart; the folder walk that reaches .github/workflows and lists
what it skipped."""

from __future__ import annotations

import pytest

from quantadvise.artifacts.manifests import parse_yaml
from quantadvise.artifacts.programs import parse_makefile, parse_python
from quantadvise.artifacts.scan import classify, read_paths
from quantadvise.catalog import option_list
from quantadvise.errors import ConfigError


def test_makefile_recipes_with_makes_own_variables():
    text = ("MODEL ?= meta-llama/Llama-3.1-8B\n"
            "MODEL ?= ignored/because-set\n"
            "LEN := 16384\n"
            "FLAGS = --max-model-len $(LEN)\n"
            "FLAGS += --max-num-seqs 32\n"
            "\n"
            "serve: deps\n"
            "\t@echo starting\n"
            "\t-vllm serve $(MODEL) $(FLAGS) \\\n"
            "\t  --kv-cache-dtype fp8 --port $$PORT -tp $(TP)\n")
    (inv,) = parse_makefile(text, "Makefile", options=option_list)
    assert (inv.engine, inv.model, inv.max_model_len, inv.max_num_seqs, inv.kv_cache_dtype, inv.source) == (
        "vllm", "meta-llama/Llama-3.1-8B", 16384, 32, "fp8", "makefile")
    assert inv.line == 9 and inv.flag_lines["kv_cache_dtype"] == 10  # the continuation keeps its own line
    assert inv.tensor_parallel_size is None and inv.raw["tensor_parallel_size"] == "$(TP)"  # make never set TP
    assert inv.other.get("--port") == "$PORT"  # $$ is a literal $ for the shell


def test_a_makefile_variable_line_is_not_a_rule_and_a_recipe_needs_a_tab():
    text = "X = a:b\nrun:\n\tvllm serve org/model\nother:\n    vllm serve not/a-recipe\n"
    (inv,) = parse_makefile(text, "Makefile", options=option_list)
    assert inv.model == "org/model" and inv.line == 3


def test_python_launchers_with_literal_argv():
    text = ("import os, shlex, subprocess, sys\n"
            "subprocess.run([sys.executable, '-m', 'sglang.launch_server', '--model-path', 'org/m',\n"
            "                '--context-length', '8192', '--port', os.environ['PORT']], check=True)\n"
            "subprocess.Popen('vllm serve org/shell --max-num-seqs 8', shell=True)\n"
            "subprocess.call(shlex.split('vllm serve org/split -tp 2'))\n"
            "os.execvp('vllm', ['vllm', 'serve', MODEL, '--max-model-len', '4096'])\n"
            "print('vllm serve org/prose')\n")
    invs = parse_python(text, "launch.py", options=option_list)
    assert [(i.engine, i.line, i.source) for i in invs] == [("sglang", 2, "python"), ("vllm", 4, "python"),
                                                            ("vllm", 5, "python"), ("vllm", 6, "python")]
    sgl, shell, split, execvp = invs
    assert (sgl.model, sgl.max_model_len, sgl.flag_lines["max_model_len"]) == ("org/m", 8192, 3)
    assert sgl.other["--port"] == "${PORT}"  # a run-time value, named by its variable (no internal placeholder)
    assert (shell.model, shell.max_num_seqs) == ("org/shell", 8)
    assert (split.model, split.tensor_parallel_size) == ("org/split", 2)
    assert execvp.raw["model"] == "${MODEL}" and execvp.max_model_len == 4096  # MODEL is never bound: unresolved
    assert execvp.unresolved_env == ["MODEL"]


def test_python_names_bound_to_an_argv_or_an_environment_default():
    """r17/launch.py: `cmd = [sys.executable, "-m", "sglang.launch_server", ...]; subprocess.run(cmd)`, and
    r18/launch2.py: `MODEL = os.environ.get("MODEL", "Qwen/...")` — the default is what runs when MODEL is unset."""
    text = ("import os, subprocess, sys\n"
            "MODEL = os.environ.get('MODEL', 'org/default')\n"
            "KEY = os.environ['HF_MODEL']\n"
            "def main(port):\n"
            "    cmd = [\n"
            "        sys.executable, '-m', 'sglang.launch_server',\n"
            "        '--model-path', MODEL,\n"
            "    ]\n"
            "    cmd += ['--context-length', '8192']\n"
            "    cmd.append('--tp')\n"
            "    cmd.append('2')\n"
            "    subprocess.run(cmd, check=True)\n"
            "    subprocess.Popen(['vllm', 'serve', KEY, '--port', port])\n"
            "    for m in ('a/b', 'c/d'):\n"
            "        os.execvp('vllm', ['vllm', 'serve', m])\n")
    sgl, env, loop = parse_python(text, "launch.py", options=option_list)
    assert (sgl.engine, sgl.line, sgl.model, sgl.max_model_len, sgl.tensor_parallel_size) == (
        "sglang", 6, "org/default", 8192, 2)  # the list's first line; += and append() in line order
    assert sgl.argv[:3] == ["python", "-m", "sglang.launch_server"]
    assert env.raw["model"] == "${HF_MODEL}" and env.other["--port"] == "${port}"  # the variable, not a placeholder
    assert loop.raw["model"] == "${m}"  # a loop variable is a run-time value


def test_a_name_bound_twice_is_a_run_time_value():
    text = "import subprocess\nM = 'a/b'\nif x:\n    M = 'c/d'\nsubprocess.run(['vllm', 'serve', M])\n"
    (inv,) = parse_python(text, "l.py", options=option_list)
    assert inv.raw["model"] == "${M}" and inv.model == "${M}"


def test_python_that_does_not_parse_is_one_error():
    with pytest.raises(ConfigError, match=r"launch.py: line 1: not valid Python"):
        parse_python("subprocess.run([\n", "launch.py", options=option_list)


def test_helm_values_with_the_image_apart_from_the_args():
    text = ("image:\n  repository: vllm/vllm-openai\n  tag: v0.33.0\n"
            "server:\n  replicas: 2\n  args:\n    - --model\n    - org/model\n    - --max-model-len\n    - '32768'\n")
    (inv,) = parse_yaml(text, "chart/values.yaml", options=option_list)
    assert (inv.engine, inv.engine_version, inv.model, inv.max_model_len, inv.source) == (
        "vllm", "0.33.0", "org/model", 32768, "helm-values")
    assert inv.flag_lines["max_model_len"] == 9  # the flag's own line


def test_the_production_stack_chart_values():
    """servingEngineSpec.modelSpec[] as vllm-project/production-stack renders it
    (helm/templates/deployment-vllm-multi.yaml: `vllm serve <modelURL>` + vllmConfig flags + extraArgs)."""
    text = ("servingEngineSpec:\n  modelSpec:\n"
            "  - name: llama\n    repository: vllm/vllm-openai\n    tag: v0.33.0\n    modelURL: org/llama\n"
            "    requestGPU: 2\n    vllmConfig:\n      maxModelLen: 131072\n      tensorParallelSize: 2\n"
            "      gpuMemoryUtilization: 0.85\n      extraArgs: [\"--kv-cache-dtype\", \"fp8\"]\n"
            "  - name: small\n    repository: lmcache/vllm-openai\n    tag: latest\n    modelURL: org/small\n")
    big, small = parse_yaml(text, "values.yaml", options=option_list)
    assert (big.model, big.max_model_len, big.tensor_parallel_size, big.gpu_memory_utilization, big.kv_cache_dtype,
            big.gpu_count, big.engine_version, big.context) == ("org/llama", 131072, 2, 0.85, "fp8", 2, "0.33.0",
                                                               "modelSpec llama")
    assert big.flag_lines["max_model_len"] == 9 and big.line == 6
    assert (small.model, small.engine_version) == ("org/small", None)  # the `latest` tag names no release


@pytest.mark.parametrize(("name", "head", "kind"), [
    ("Makefile", "", "makefile"), ("ops/serve.mk", "", "makefile"), ("launch.py", "", "python"),
    ("serve", "#!/usr/bin/env python3\n", "python"), ("serve", "#!/bin/bash\n", "shell"),
    ("app.Dockerfile", "", "dockerfile"), ("notes.txt", "vllm serve x", None),
])
def test_classify(name, head, kind):
    assert classify(name, head) == kind


def test_the_walk_reads_ci_definitions_and_lists_what_it_skipped(tmp_path):
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "gate.yml").write_text("jobs:\n  a:\n    steps:\n      - run: vllm serve org/m\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "run.sh").write_text("vllm serve org/never\n")  # inside .git: never read
    (tmp_path / "README.md").write_text("Run `vllm serve org/m`.\n")
    (tmp_path / "big.yaml").write_text("x: " + "a" * 2_100_000 + "\n")
    scan = read_paths([tmp_path], options=option_list)
    assert [i.model for i in scan.invocations] == ["org/m"]
    skipped = {s.split(": ", 1)[0].rsplit("/", 1)[-1]: s for s in scan.files_skipped}
    assert set(skipped) == {"README.md", "big.yaml"}
    assert "no reader takes this kind of file" in skipped["README.md"]
    assert "larger than a deployment file" in skipped["big.yaml"]


def test_a_python_file_named_like_a_dockerfile_is_python(tmp_path):
    """`artifacts/dockerfile.py` whose docstring mentions `vllm serve` aborted the gate ("not a Dockerfile
    instruction"): the .py extension wins over the name's prefix."""
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "dockerfile.py").write_text('"""Engine launches: `vllm serve MODEL`."""\nimport os\n')
    assert classify("artifacts/dockerfile.py") == "python"
    assert classify("Dockerfile.cuda") == "dockerfile" and classify("dockerfile.yaml") == "yaml"
    scan = read_paths([tmp_path], options=option_list)
    assert scan.invocations == [] and scan.warnings == []


def test_a_file_only_guessed_to_be_a_dockerfile_is_skipped_not_fatal(tmp_path):
    (tmp_path / "Dockerfile-notes.md").write_text('"""how we run vllm serve in the image"""\n')
    (tmp_path / "run.sh").write_text("vllm serve org/m\n")
    scan = read_paths([tmp_path], options=option_list)
    assert [i.model for i in scan.invocations] == ["org/m"]
    assert scan.warnings == []  # said with -v only
    (why,) = [s for s in scan.files_skipped if "Dockerfile-notes.md" in s]
    assert "named like a Dockerfile, but not one" in why and "not a Dockerfile instruction" in why
    # a file only a Dockerfile is named like still stops the gate when it does not parse
    (tmp_path / "Dockerfile").write_text('"""x"""\nCMD ["vllm", "serve", "org/m"]\n')
    with pytest.raises(ConfigError, match="not a Dockerfile instruction"):
        read_paths([tmp_path], options=option_list)


def test_a_helm_template_is_named_as_one_even_when_it_parses_as_yaml(tmp_path):
    """`- {{ .Values.model }}` is a YAML flow mapping: the file parsed and the reader said "command/args items
    must be strings" (without -v). It is a Helm template, and is said to be one."""
    t = tmp_path / "chart" / "templates"
    t.mkdir(parents=True)
    (t / "deployment.yaml").write_text("spec:\n  template:\n    spec:\n      containers:\n        - name: vllm\n"
                                       "          args:\n            - vllm\n            - serve\n"
                                       "            - {{ .Values.model }}\n")
    scan = read_paths([tmp_path], options=option_list)
    assert scan.invocations == []
    assert not any("must be strings" in w for w in scan.warnings)
    assert any(w.startswith("skipped 1 Helm template (not rendered)") and "helm template" in w for w in scan.warnings)
    assert any("a Helm template (not rendered)" in s for s in scan.files_skipped)


def test_python_2_in_a_scanned_folder_is_skipped_with_its_reason(tmp_path):
    (tmp_path / "bench.py").write_text('# client for the vllm serve endpoint\nprint "vllm serve benchmark"\n')
    scan = read_paths([tmp_path], options=option_list)
    (w,) = scan.warnings
    assert "bench.py" in w and "not valid Python 3" in w and "no engine launch in it" not in w


def test_a_pinned_engine_in_a_github_workflow_step():
    """r17: `pip install vllm==0.32.0` in the step's `run:` was ignored (the same line in a .sh is honoured)."""
    text = ("jobs:\n  smoke:\n    steps:\n      - name: deps\n        run: pip install 'sglang[all]==0.5.20'\n"
            "      - name: start server\n        run: |\n          pip install vllm==0.32.0\n"
            "          vllm serve org/m --max-model-len 8192 &\n"
            "      - run: python -m sglang.launch_server --model-path org/s\n")
    vllm, sgl = parse_yaml(text, ".github/workflows/smoke.yml", options=option_list)
    assert (vllm.engine, vllm.engine_version, vllm.line) == ("vllm", "0.32.0", 9)
    assert (sgl.engine, sgl.engine_version) == ("sglang", "0.5.20")  # pinned in another step of the file
