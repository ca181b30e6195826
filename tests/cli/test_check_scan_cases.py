"""``quantadvise check`` on deployment repositories a serving engineer really commits: a model set at
run time, several models under one declaration, a Python file that only looks like a Dockerfile by
name, a launcher that binds its argv to a name, a bash array of flags, a pinned engine in a GitHub
workflow, a Helm template, and ``--init`` with no paths. Expected lines are found in the files
themselves (``line_of``)."""

from __future__ import annotations

from pathlib import Path


def line_of(path: Path, needle: str) -> int:
    hits = [i for i, line in enumerate(path.read_text().splitlines(), start=1) if needle in line]
    assert len(hits) == 1, f"{needle!r} occurs {len(hits)} times in {path}"
    return hits[0]


def make_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    for name, content in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    (root / ".git").mkdir(parents=True, exist_ok=True)  # a repository root: config discovery stops here
    return root


def rule_ids(result) -> set[str]:
    return {f["rule_id"] for f in result.json()["findings"]}


def findings(result, rule: str) -> list[dict]:
    return [f for f in result.json()["findings"] if f["rule_id"] == rule]


# --- a model from a variable never stops the gate --------------------------------------------------


def test_a_model_set_at_run_time_is_a_warning_and_the_rest_is_checked(cli, tmp_path, monkeypatch):
    """`vllm serve "$MODEL"` next to a healthy script stopped the whole gate with exit 2; QA110 says
    the gate warns and checks the rest."""
    root = make_repo(tmp_path, {
        "ok.sh": "#!/bin/sh\nvllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 8192\n",
        "run.sh": "#!/bin/sh\n# the model comes from the job\nvllm serve \"$MODEL\" --max-model-len 8192 --kv-cache-dtype int8\n",
    })
    monkeypatch.chdir(root)
    r = cli("check", "--gpu", "h100", "--format", "json")
    assert r.code == 1, r.stderr  # QA105 below is an error; before the fix: exit 2 and no report
    doc = r.json()
    (qa110,) = findings(r, "QA110")
    assert (qa110["file"], qa110["line"]) == ("run.sh", line_of(root / "run.sh", "vllm serve"))
    assert "$MODEL" in qa110["message"] and qa110["severity"] == "warning"
    # the engine-level rules still ran on run.sh: vLLM 0.33.0 has no int8 KV cache (CacheDType in
    # vllm/config/cache.py lists auto, float16, bfloat16, fp8, fp8_e4m3, fp8_e5m2, fp8_inc, fp8_ds_mla ...)
    assert [f["file"] for f in findings(r, "QA105")] == ["run.sh"]
    targets = {t["file"]: t for t in doc["targets"]}
    assert set(targets) == {"ok.sh", "run.sh"}
    assert targets["ok.sh"]["model"] == "Qwen/Qwen2.5-7B-Instruct" and targets["ok.sh"]["scheme"] == "bf16"
    assert any("set at run time" in n and "only the engine-level rules ran" in n for n in targets["run.sh"]["notes"])
    assert "QA111" not in rule_ids(r)  # QA110 already names the variable


def test_a_kubernetes_model_from_a_configmap_and_init_then_check(cli, tmp_path, monkeypatch):
    manifest = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: m}\nspec:\n  template:\n    spec:\n"
                "      containers:\n        - name: vllm\n          image: vllm/vllm-openai:v0.33.0\n"
                "          command: [\"vllm\", \"serve\", \"$(MODEL_NAME)\"]\n"
                "          args: [\"--max-model-len\", \"8192\"]\n"
                "          env:\n            - name: MODEL_NAME\n              valueFrom:\n"
                "                configMapKeyRef: {name: llm-config, key: model}\n")
    root = make_repo(tmp_path, {"deploy.yaml": manifest})
    monkeypatch.chdir(root)
    r = cli("check", "--gpu", "h100", "--format", "json")
    assert r.code == 0, r.stderr
    (qa110,) = findings(r, "QA110")
    assert qa110["line"] == line_of(root / "deploy.yaml", "$(MODEL_NAME)") and "$(MODEL_NAME)" in qa110["message"]
    # the starter --init writes is accepted by the next check (before: exit 2 on the same file)
    assert cli("check", "--init", "deploy.yaml").code == 0
    r = cli("check", "--gpu", "h100", "--format", "json")
    assert r.code == 0, r.stderr
    # declaring the model checks it in full (the declaration stands in for the run-time value)
    text = (root / "quantadvise.yaml").read_text()
    (root / "quantadvise.yaml").write_text(text.replace("# model: meta-llama/Llama-3.1-8B-Instruct",
                                                        "model: Qwen/Qwen2.5-7B-Instruct"))
    r = cli("check", "--gpu", "h100", "--format", "json")
    (t,) = r.json()["targets"]
    assert r.code == 0 and (t["model"], t["scheme"]) == ("Qwen/Qwen2.5-7B-Instruct", "bf16")


def test_a_python_launcher_uses_the_environment_default(cli, tmp_path, monkeypatch):
    """`MODEL = os.environ.get("MODEL", "Qwen/...")` printed an internal placeholder `${PY_VALUE}` and
    exited 2; the default is what runs when MODEL is not set."""
    root = make_repo(tmp_path, {"launch.py": (
        "import os, subprocess\n"
        "MODEL = os.environ.get(\"MODEL\", \"Qwen/Qwen2.5-7B-Instruct\")\n"
        "subprocess.Popen([\"vllm\", \"serve\", MODEL, \"--max-model-len\", \"8192\"])\n")})
    monkeypatch.chdir(root)
    r = cli("check", "--gpu", "h100", "--format", "json")
    assert r.code == 0, r.stderr
    (t,) = r.json()["targets"]
    assert (t["model"], t["line"]) == ("Qwen/Qwen2.5-7B-Instruct", 3)
    assert "PY_VALUE" not in r.stdout


# --- a declared model applies only where the command names none ------------------------------------


PRODUCTION_STACK = """\
servingEngineSpec:
  modelSpec:
    - name: "llama3"
      repository: "vllm/vllm-openai"
      tag: "v0.33.0"
      modelURL: "meta-llama/Llama-3.1-8B-Instruct"
      requestGPU: 1
      vllmConfig:
        maxModelLen: 16384
    - name: "llama70"
      repository: "vllm/vllm-openai"
      tag: "v0.33.0"
      modelURL: "meta-llama/Llama-3.1-70B-Instruct"
      requestGPU: 1
      vllmConfig:
        tensorParallelSize: 1
        maxModelLen: 8192
"""


def test_a_declared_model_does_not_hide_another_deployments_model(cli, tmp_path, monkeypatch):
    """One `model:` (8B) used to be checked for both entries: PASS, while the 70B on one H100 cannot load.
    70.6e9 parameters x 2 bytes = 141 GB = 131.5 GiB of bf16 weights > 80 GiB (one H100)."""
    root = make_repo(tmp_path, {"values.yaml": PRODUCTION_STACK,
                                "quantadvise.yaml": "model: meta-llama/Llama-3.1-8B-Instruct\ngpu: h100\n"})
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json")
    assert r.code == 1, r.stderr
    (qa301,) = findings(r, "QA301")
    assert qa301["file"] == "values.yaml" and qa301["line"] > line_of(root / "values.yaml", "Llama-3.1-70B")
    (qa504,) = findings(r, "QA504")  # the drift is still reported, at the 70B's modelURL line
    assert qa504["line"] == line_of(root / "values.yaml", "Llama-3.1-70B")
    assert "the command's model is checked" in qa504["message"]
    models = {t["context"]: t["model"] for t in r.json()["targets"]}
    assert models == {"modelSpec llama3": "meta-llama/Llama-3.1-8B-Instruct",
                      "modelSpec llama70": "meta-llama/Llama-3.1-70B-Instruct"}


def test_a_declared_model_stands_in_for_a_path_inside_the_container(cli, tmp_path, monkeypatch):
    root = make_repo(tmp_path, {"run.sh": "vllm serve /models/llama --max-model-len 8192\n",
                                "quantadvise.yaml": "model: meta-llama/Llama-3.1-8B-Instruct\ngpu: h100\n"})
    monkeypatch.chdir(root)
    r = cli("check", "--format", "json")
    assert r.code == 0, r.stderr
    assert r.json()["targets"][0]["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert "QA504" not in rule_ids(r)


# --- what the readers missed -------------------------------------------------------------------------


def test_launchers_arrays_and_pins_that_were_missed(cli, tmp_path, monkeypatch):
    root = make_repo(tmp_path, {
        # r17/launch.py: the argv bound to a name, sys.executable as argv[0]
        "launch.py": ("import subprocess, sys\n\ndef main():\n    cmd = [\n"
                      "        sys.executable, \"-m\", \"sglang.launch_server\",\n"
                      "        \"--model-path\", \"meta-llama/Llama-3.1-8B-Instruct\", \"--context-length\", \"8192\",\n"
                      "    ]\n    subprocess.run(cmd, check=True)\n"),
        # r38/run.sh: TP 2 inside a bash array
        "run.sh": ("#!/bin/bash\nARGS=(\n  --tensor-parallel-size 2\n)\n"
                   "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 16384 \"${ARGS[@]}\"\n"),
        # r17/.github/workflows/smoke.yml: the pinned engine in the step
        ".github/workflows/smoke.yml": ("jobs:\n  smoke:\n    steps:\n      - run: |\n"
                                        "          pip install vllm==0.32.0\n"
                                        "          vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 8192 &\n"),
    })
    monkeypatch.chdir(root)
    r = cli("check", "--gpu", "h100", "--format", "json")
    assert r.code == 0, r.stderr
    t = {x["file"]: x for x in r.json()["targets"]}
    assert set(t) == {"launch.py", "run.sh", ".github/workflows/smoke.yml"}
    assert (t["launch.py"]["engine"], t["launch.py"]["model"]) == ("sglang", "meta-llama/Llama-3.1-8B-Instruct")
    assert t["run.sh"]["gpus"] == 2  # before: 1, the array's flags dropped
    assert t[".github/workflows/smoke.yml"]["engine_version"] == "0.32.0"  # before: 0.33.0, the newest on file


def test_init_without_paths_reads_what_check_reads(cli, tmp_path, monkeypatch):
    """cli #15: `check --init` with no PATHS wrote "filled in from the deployment: nothing" though `check`
    with no PATHS scans the folder and finds the Makefile's `vllm serve`."""
    root = make_repo(tmp_path, {"Makefile": "MODEL ?= Qwen/Qwen2.5-7B-Instruct\nserve:\n\tvllm serve $(MODEL) -tp 2\n"})
    monkeypatch.chdir(root)
    r = cli("check", "--init", "--format", "json")
    assert r.code == 0, r.stderr
    assert r.json()["prefilled"] == {"deployment": ["."], "engine": "vllm", "model": "Qwen/Qwen2.5-7B-Instruct",
                                     "gpus": 2}
    assert cli("check", "--gpu", "h100", "--format", "json").code == 0
