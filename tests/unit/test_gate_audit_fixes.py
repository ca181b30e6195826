"""The gaps the issue-14 audit found in ``check`` (its "Real gaps" list), each with the case
that failed before:

1. two launches in one file (script, Makefile, Python launcher) share a finding subject, so the second
   one's findings were dropped as duplicates;
2. a command that names no model (``ENTRYPOINT ["vllm", "serve"]``, ``vllm serve --help``, a YAML
   ``prog: python -m sglang.launch_server``) stopped the whole gate with exit 2;
3. ``reserve_gb: .inf`` in quantadvise.yaml ended in an OverflowError traceback;
4. ``check /`` raised PermissionError on /proc, and ``check /usr`` walked for minutes;
5. an unreachable Hub cost ~1.8 s per distinct unresolved model;
7. a declared concurrency above ``--max-num-seqs`` was priced above the engine's cap.

No network: the Hub is faked with the exception classes huggingface_hub 2.x raises (a HEAD with no
route raises ``httpx2.ConnectError``; checked against the installed version by pointing it at a closed
port on this machine).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from quantadvise.artifacts import scan as scan_mod
from quantadvise.artifacts import walk as walk_mod
from quantadvise.artifacts.scan import Walk, read_paths
from quantadvise.catalog import hub, option_list
from quantadvise.errors import SourceUnavailableError, UnknownNameError
from quantadvise.gate.target import ordinals
from tests.cli.test_check_cli import make_repo

HEALTHY = ("vllm serve meta-llama/Meta-Llama-3-8B-Instruct --dtype bfloat16 --max-num-seqs 256 "
           "--max-model-len 8192 --gpu-memory-utilization 0.90\n")


def _findings(doc, rule_id=None):
    return [f for f in doc["findings"] if rule_id is None or f["rule_id"] == rule_id]


def _one_error(r, fragment):
    assert r.code == 2, (r.code, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    assert fragment in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------------------------------
# Gap 1: every launch in a file is its own deployment, with its own findings
# --------------------------------------------------------------------------------------------------

def test_ordinals_tell_launches_with_one_key_apart():
    assert ordinals(["a#vllm", "a#vllm", "b#vllm", None, "a#vllm", "a#service x"]) == [1, 2, 1, 1, 3, 1]


# Two models that are neither bundled nor cached (HF_HUB_OFFLINE=1 in tests): each launch gets its
# QA111, and the KV cache dtype 'int4' (which vLLM does not have) is reported for each: the engine
# rule needs no model config.
TWO_LAUNCHES = {
    "serve.sh": ("#!/bin/sh\n"
                 "vllm serve someorg/private-a --kv-cache-dtype int4 --port 8000 &\n"
                 "vllm serve someorg/private-b --kv-cache-dtype int4 --port 8001 &\n"),
    "Makefile": ("serve-a:\n"
                 "\tvllm serve someorg/private-a --kv-cache-dtype int4\n"
                 "serve-b:\n"
                 "\tvllm serve someorg/private-b --kv-cache-dtype int4\n"),
    "launch.py": ("import subprocess\n"
                  'subprocess.run(["vllm", "serve", "someorg/private-a", "--kv-cache-dtype", "int4"])\n'
                  'subprocess.run(["vllm", "serve", "someorg/private-b", "--kv-cache-dtype", "int4"])\n'),
}
# the line of each launch's model in each file
LINES = {"serve.sh": (2, 3), "Makefile": (2, 4), "launch.py": (2, 3)}


@pytest.mark.parametrize("name", sorted(TWO_LAUNCHES))
def test_two_launches_in_one_file_each_get_their_findings(cli, tmp_path, monkeypatch, name):
    monkeypatch.chdir(make_repo(tmp_path, {name: TWO_LAUNCHES[name]}))
    r = cli("check", name, "--gpu", "h100", "--format", "json")
    assert r.code == 1, r.stderr  # QA105 is an error
    doc = r.json()
    first, second = LINES[name]
    assert [t["label"] for t in doc["targets"]] == [f"{name}:{first}", f"{name}:{second}"]
    qa111 = _findings(doc, "QA111")
    assert sorted((f["line"], f["target"]) for f in qa111) == [(first, f"{name}:{first}"),
                                                               (second, f"{name}:{second}")]
    assert {"someorg/private-a" in f["message"] for f in qa111} == {True, False}  # one per model
    qa105 = _findings(doc, "QA105")
    assert sorted(f["target"] for f in qa105) == [f"{name}:{first}", f"{name}:{second}"]
    # distinct identities: the first keeps the plain key (the fingerprint of a file with one launch),
    # the second is told apart by its order among the file's launches
    assert sorted(f["subject"] for f in qa111) == [f"{name}#vllm#2|model-unresolved", f"{name}#vllm|model-unresolved"]
    assert len({f["fingerprint"] for f in doc["findings"]}) == len(doc["findings"])


def test_a_file_with_one_launch_keeps_its_subjects(cli, tmp_path, monkeypatch):
    """Baselines hold fingerprints of subjects: one launch in a file keeps ``FILE#engine|...``."""
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": "vllm serve someorg/private-a --kv-cache-dtype int4\n"}))
    doc = cli("check", "serve.sh", "--gpu", "h100", "--format", "json").json()
    assert sorted(f["subject"] for f in doc["findings"]) == ["serve.sh#vllm|kv_dtype_unknown|int4",
                                                             "serve.sh#vllm|model-unresolved"]


def test_a_second_refused_launch_in_a_script_is_reported(cli, tmp_path, monkeypatch):
    """The audit's script on an L4: both launches are refused at start-up, and both are reported.
    Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 131,072 B per token, so its
    131,072-token default context needs 16 GiB of KV cache; an L4 has 22.49 GiB, of which 0.92 holds
    14.96 GiB of weights and the 2 GiB reserve: 3.7 GiB. Mistral-7B: the same 131,072 B per token, so
    32,768 tokens need 4 GiB; 0.8 x 22.49 - 13.5 - 2 = 2.49 GiB. Both refuse (QA302)."""
    script = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 131072 --port 8000 &\n"
              "vllm serve mistralai/Mistral-7B-Instruct-v0.3 --max-model-len 32768 --gpu-memory-utilization 0.8 "
              "--port 8001 &\n")
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": script}))
    doc = cli("check", "serve.sh", "--gpu", "l4", "--format", "json").json()
    assert sorted(f["line"] for f in _findings(doc, "QA302")) == [1, 2]
    assert [t["engine_status"] for t in doc["targets"]] == ["refused", "refused"]


def test_two_launches_on_one_line_keep_their_own_verdicts(cli, tmp_path, monkeypatch):
    """`a & b` on one line: the first refuses (131,072 tokens x 131,072 B = 16 GiB of KV cache on an L4, as
    above), the second (4,096 tokens: 0.5 GiB) starts; one's refusal is not the other's."""
    line = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 131072 & "
            "vllm serve mistralai/Mistral-7B-Instruct-v0.3 --max-model-len 4096 &\n")
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": line}))
    doc = cli("check", "serve.sh", "--gpu", "l4", "--format", "json").json()
    assert [(t["label"], t["engine_status"]) for t in doc["targets"]] == [
        ("serve.sh:1", "refused"), ("serve.sh:1 (launch 2 on the line)", "ok")]
    assert [f["target"] for f in _findings(doc, "QA302")] == ["serve.sh:1"]


# --------------------------------------------------------------------------------------------------
# Gap 2: a command with no model does not stop the gate
# --------------------------------------------------------------------------------------------------

DOCKERFILE_EP = 'FROM vllm/vllm-openai:v0.33.0\nRUN pip install my-plugin\nENTRYPOINT ["vllm", "serve"]\n'


def test_an_entrypoint_with_no_model_is_a_warning_and_the_gate_goes_on(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(make_repo(tmp_path, {"Dockerfile": DOCKERFILE_EP, "serve.sh": HEALTHY}))
    r = cli("check", ".", "--gpu", "h100", "--format", "json")
    assert r.code == 0, r.stderr  # exit 2 before: "no model to check (the command names none)"
    doc = r.json()
    assert sorted(t["label"] for t in doc["targets"]) == ["Dockerfile:3 (ENTRYPOINT)", "serve.sh:1"]
    (w,) = [f for f in _findings(doc, "QA111") if f["file"] == "Dockerfile"]
    assert w["line"] == 3 and w["severity"] == "warning" and "names no model" in w["message"]
    served = next(t for t in doc["targets"] if t["file"] == "serve.sh")
    assert served["memory"] is not None and served["performance"] is not None  # checked in full


def test_the_engine_rules_run_on_a_launch_with_no_model(cli, tmp_path, monkeypatch):
    """vLLM has no 'int4' KV cache dtype: an error that needs no model config."""
    dockerfile = 'FROM vllm/vllm-openai:v0.33.0\nENTRYPOINT ["vllm", "serve", "--kv-cache-dtype", "int4"]\n'
    monkeypatch.chdir(make_repo(tmp_path, {"Dockerfile": dockerfile}))
    r = cli("check", ".", "--gpu", "h100", "--format", "json")
    assert r.code == 1, r.stderr
    assert {f["rule_id"] for f in r.json()["findings"]} == {"QA105", "QA111"}


def test_help_and_version_are_not_deployments(cli, tmp_path, monkeypatch):
    script = "vllm serve --help\npython -m sglang.launch_server --version\n" + HEALTHY
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": script}))
    r = cli("check", ".", "--gpu", "h100", "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert [t["label"] for t in doc["targets"]] == ["serve.sh:3"]
    skipped = [s for s in doc["files_skipped"] if s.startswith("serve.sh: ")]
    assert len(skipped) == 2 and "line 1: `vllm serve --help` prints the engine's help" in skipped[0]
    assert "line 2:" in skipped[1] and "version" in skipped[1]


def test_a_launcher_named_in_a_data_yaml_is_not_a_launch(cli, tmp_path, monkeypatch):
    """``data/flags/sglang-*.yaml`` records ``parser.prog: python -m sglang.launch_server``: `check` of a
    repository holding it stopped with exit 2."""
    files = {"meta.yaml": "parser:\n  prog: python -m sglang.launch_server\n", "serve.sh": HEALTHY}
    monkeypatch.chdir(make_repo(tmp_path, files))
    r = cli("check", ".", "--gpu", "h100", "--format", "json", "-v")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert [t["label"] for t in doc["targets"]] == ["serve.sh:1"]
    (why,) = [s for s in doc["files_skipped"] if s.startswith("meta.yaml")]
    assert "line 2: parser.prog is the launcher's name only" in why


def test_the_quantadvise_repository_itself_does_not_stop_the_gate(cli):
    """The audit ran `check` over this repository: data/flags/sglang-0.5.20.yaml:18 (parser.prog) aborted it."""
    repo = Path(__file__).resolve().parents[2]
    scan = read_paths([repo / "data" / "flags"], options=option_list)
    assert scan.invocations == []
    assert any("parser.prog is the launcher's name only" in s for s in scan.files_skipped)


K8S = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: llm}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: ghcr.io/acme/llm:1.0
          args: ["meta-llama/Meta-Llama-3-8B-Instruct", "--max-model-len", "8192"]
          resources: {limits: {nvidia.com/gpu: 1}}
        - name: proxy
          image: nginx:1.27
          args: ["-g", "daemon off;"]
"""


def test_a_custom_image_and_its_manifests_arguments_are_joined(cli, tmp_path, monkeypatch):
    """The repository builds its own image on vLLM's (ENTRYPOINT ["vllm", "serve"]) and a Deployment runs
    it with the model as its arguments: checked as `vllm serve MODEL --max-model-len 8192`, on the
    Dockerfile's release (its FROM tag), at the manifest's line. The nginx sidecar is not joined."""
    monkeypatch.chdir(make_repo(tmp_path, {"Dockerfile": DOCKERFILE_EP, "k8s/deploy.yaml": K8S}))
    r = cli("check", ".", "--gpu", "h100", "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    (t,) = doc["targets"]
    assert (t["file"], t["line"], t["model"]) == ("k8s/deploy.yaml", 10, "meta-llama/Meta-Llama-3-8B-Instruct")
    assert t["engine_version"] == "0.33.0" and "image tag" in t["engine_version_from"]
    # 8,192 tokens x 131,072 B = 1 GiB per sequence: one fits, the engine starts
    assert t["memory"]["starts"] is True and t["memory"]["max_model_len"] == 8192
    assert any("the image Dockerfile:3 builds to run `vllm serve`" in n for n in doc["notes"])
    assert not _findings(doc, "QA111")  # the Dockerfile's own launch (no model) is the joined one


def test_a_manifest_that_never_spells_the_engine_is_still_read_for_the_join(tmp_path):
    """The walk does not parse files that spell no engine; a manifest passing engine options to this
    repository's image is read all the same."""
    (tmp_path / "Dockerfile").write_text(DOCKERFILE_EP)
    (tmp_path / "deploy.yaml").write_text(K8S.replace("name: vllm", "name: llm"))
    assert "vllm" not in (tmp_path / "deploy.yaml").read_text() and "sglang" not in K8S
    (inv,) = read_paths([tmp_path], options=option_list).invocations
    assert (Path(inv.file).name, inv.model, inv.context) == (
        "deploy.yaml", "meta-llama/Meta-Llama-3-8B-Instruct", "Deployment/llm container llm")


def test_an_engine_image_left_as_it_is_takes_the_manifests_arguments(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM vllm/vllm-openai:v0.32.0\nRUN pip install my-plugin\n")
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "deploy.yaml").write_text(K8S)
    (inv,) = read_paths([tmp_path], options=option_list).invocations
    assert (inv.engine, inv.engine_version, inv.model, inv.max_model_len) == (
        "vllm", "0.32.0", "meta-llama/Meta-Llama-3-8B-Instruct", 8192)
    assert inv.launcher == "image entrypoint"


def test_two_engine_images_are_not_guessed_between(tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "Dockerfile").write_text(DOCKERFILE_EP)
    (tmp_path / "deploy.yaml").write_text(K8S)
    invs = read_paths([tmp_path], options=option_list).invocations
    assert sorted(i.file.rsplit("/", 2)[-2] for i in invs) == ["a", "b"]  # the two Dockerfiles, no model
    assert all(i.model is None for i in invs)


def test_engine_arguments_to_an_image_no_dockerfile_builds_are_named(cli, tmp_path, monkeypatch):
    """The manifest alone: nothing is checked, and the error says which container was passed over."""
    monkeypatch.chdir(make_repo(tmp_path, {"k8s/deploy.yaml": K8S}))
    scan = read_paths([tmp_path / "repo"], options=option_list)
    (why,) = [s for s in scan.files_skipped if "deploy.yaml" in s]
    assert "line 10: a container (Deployment/llm container vllm) passes --max-model-len to ghcr.io/acme/llm:1.0" in why
    assert "nginx" not in " ".join(scan.files_skipped)  # `-g "daemon off;"` is no engine's option
    _one_error(cli("check", ".", "--gpu", "h100"), "; skipped k8s/deploy.yaml: line 10: a container")


# --------------------------------------------------------------------------------------------------
# Gap 3: numbers in quantadvise.yaml are held to the flags' limits, with the flags' message
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [".inf", "1e308", "1.0e308", ".nan", "-1", "5000"])
def test_reserve_gb_in_the_config_is_bounded_as_the_flag_is(cli, tmp_path, monkeypatch, value):
    root = make_repo(tmp_path, {"serve.sh": HEALTHY,
                                "quantadvise.yaml": f"version: 1\ngpu: h100\nreserve_gb: {value}\n"})
    monkeypatch.chdir(root)
    line = _one_error(cli("check", "serve.sh"), "quantadvise.yaml: line 3: key 'reserve_gb': ")
    said = line.split("key 'reserve_gb': ", 1)[1]
    # the same words as --reserve-gb says for the same number (the one input layer's limit, 0..4,096 GiB)
    as_flag = {".inf": "inf", ".nan": "nan"}.get(value, value)
    flag = _one_error(cli("size", "--gpu", "h100", "--reserve-gb", as_flag), "--reserve-gb must be")
    assert said == flag.removeprefix("Error: --reserve-gb ")
    assert said.startswith("must be a number >= 0 and <= 4,096, got ")


@pytest.mark.parametrize(("key", "value", "says"), [
    ("gpus", ".inf", "must be an integer >= 1 and <= 1,024, got inf"),
    ("gpus", "1.0e308", "must be an integer >= 1 and <= 1,024, got 1e+308"),
    ("gpu_memory_utilization", ".inf", "must be a number >= 0.01 and <= 1, got inf"),
    ("gpu_memory_utilization", ".nan", "must be a number >= 0.01 and <= 1, got nan"),
])
def test_other_numbers_in_the_config_are_bounded_too(cli, tmp_path, monkeypatch, key, value, says):
    root = make_repo(tmp_path, {"serve.sh": HEALTHY, "quantadvise.yaml": f"version: 1\ngpu: h100\n{key}: {value}\n"})
    monkeypatch.chdir(root)
    _one_error(cli("check", "serve.sh"), f"quantadvise.yaml: line 3: key '{key}': {says}")


@pytest.mark.parametrize("block", ["thresholds: {max_slowdown_vs_recommended: .inf}",
                                   "thresholds: {min_memory_headroom: .nan}",
                                   "thresholds: {evidence_below_bits: .inf}",
                                   "workload: {concurrency: .inf}", "workload: {ctx: 1.0e308}"])
def test_every_numeric_key_refuses_inf_and_huge_in_one_line(cli, tmp_path, monkeypatch, block):
    root = make_repo(tmp_path, {"serve.sh": HEALTHY, "quantadvise.yaml": f"version: 1\ngpu: h100\n{block}\n"})
    monkeypatch.chdir(root)
    _one_error(cli("check", "serve.sh"), "quantadvise.yaml: line 3: key '")


def test_a_valid_reserve_is_taken(cli, tmp_path, monkeypatch):
    root = make_repo(tmp_path, {"serve.sh": HEALTHY, "quantadvise.yaml": "version: 1\ngpu: h100\nreserve_gb: 3\n"})
    monkeypatch.chdir(root)
    r = cli("check", "serve.sh", "--format", "json")
    assert r.code == 0, r.stderr
    # 3 GiB instead of 2: 1 GiB less KV cache than the healthy deployment's 58,760,722,841 B
    assert r.json()["targets"][0]["memory"]["kv_cache_bytes_per_gpu"] == 58_760_722_841 - 2**30


# --------------------------------------------------------------------------------------------------
# Gap 4: the walk is bounded, never follows links, and skips what it cannot read
# --------------------------------------------------------------------------------------------------

def _tree(root: Path, names: list[str]) -> None:
    for n in names:
        p = root / n
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x\n")


def test_the_walk_gives_path_order(tmp_path):
    _tree(tmp_path, ["b.txt", "a/x.txt", "a.txt", "a/b/c.txt", "a-b/y.txt", "c/d/e/f.txt", "A.txt"])
    got = list(Walk().files(tmp_path))
    assert got == sorted(p for p in tmp_path.rglob("*") if p.is_file())


def test_the_walk_passes_over_what_holds_no_deployment(tmp_path):
    run = "vllm serve org/m\n"
    for d in ("node_modules/x", ".venv", "__pycache__", "lib/python3.11/site-packages/pkg", "env", ".git", ".cache"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "serve.sh").write_text(run)
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")  # a virtual environment by any name
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text("jobs:\n  a:\n    steps:\n      - run: " + run)
    (tmp_path / "serve.sh").write_text(run)
    scan = read_paths([tmp_path], options=option_list)
    assert sorted(Path(i.file).relative_to(tmp_path).as_posix() for i in scan.invocations) == [
        ".github/workflows/ci.yml", "serve.sh"]


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_the_walk_never_follows_links(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "serve.sh").write_text("vllm serve org/m\n")
    (tmp_path / "a" / "loop").symlink_to(tmp_path)  # a loop
    (tmp_path / "link.sh").symlink_to(tmp_path / "a" / "serve.sh")
    scan = read_paths([tmp_path], options=option_list)
    assert [Path(i.file).name for i in scan.invocations] == ["serve.sh"]


def test_an_unreadable_folder_is_listed_and_passed_over(tmp_path, monkeypatch):
    """A folder the user may not read (as /proc/1/cwd, or a CI user's view of another's files): the
    permission error is faked, since tests may run as root."""
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "serve.sh").write_text("vllm serve org/hidden\n")
    (tmp_path / "serve.sh").write_text("vllm serve org/m\n")
    real = os.scandir

    def scandir(path):
        if str(path).endswith("secret"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(walk_mod.os, "scandir", scandir)
    scan = read_paths([tmp_path], options=option_list)
    assert [i.model for i in scan.invocations] == ["org/m"]
    assert any(s.endswith("secret: cannot be read (Permission denied)") for s in scan.files_skipped)


def test_a_file_that_is_not_utf8_in_a_walked_folder_is_skipped(tmp_path):
    (tmp_path / "values.yaml").write_bytes(b"image: vllm/vllm-openai\nx: \xff\xfe\n")
    (tmp_path / "serve.sh").write_text("vllm serve org/m\n")
    scan = read_paths([tmp_path], options=option_list)
    assert [i.model for i in scan.invocations] == ["org/m"]
    assert any(s.startswith(f"{tmp_path / 'values.yaml'}: not UTF-8") for s in scan.files_skipped)


def test_the_walk_stops_at_its_budget_with_one_warning(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(walk_mod, "MAX_WALK_FILES", 5)
    _tree(tmp_path / "repo", [f"f{i:02d}.txt" for i in range(9)])
    (tmp_path / "repo" / "zz.sh").write_text("vllm serve org/m\n")  # after the 5th file: never reached
    scan = read_paths([tmp_path / "repo"], options=option_list)
    assert scan.invocations == [] and scan.stopped == str(tmp_path / "repo")
    (w,) = [w for w in scan.warnings if "stopped" in w]
    assert w.startswith("the scan stopped after 5 files") and "quantadvise check deploy/" in w
    monkeypatch.chdir(tmp_path / "repo")
    r = cli("check", ".", "--gpu", "h100")
    _one_error(r, "(the scan stopped after 5 files, in .)")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="a Linux /proc")
def test_check_proc_is_not_walked(cli, tmp_path, monkeypatch):
    t0 = time.perf_counter()
    r = cli("check", "/proc", "--gpu", "h100")
    assert time.perf_counter() - t0 < 5
    _one_error(r, "nothing to check")  # no PermissionError / FileNotFoundError traceback
    scan = read_paths(["/proc"], options=option_list)
    assert scan.files_scanned == [] and scan.files_skipped == [
        "/proc: a virtual file system (the kernel's or devices'), not a repository"]


def test_a_virtual_file_system_inside_a_walk_is_passed_over(tmp_path, monkeypatch):
    (tmp_path / "virt").mkdir()
    (tmp_path / "virt" / "serve.sh").write_text("vllm serve org/virtual\n")
    (tmp_path / "serve.sh").write_text("vllm serve org/m\n")
    monkeypatch.setattr(walk_mod, "_virtual_mounts", lambda: frozenset({str((tmp_path / "virt").resolve())}))
    scan = read_paths([tmp_path], options=option_list)
    assert [i.model for i in scan.invocations] == ["org/m"]
    assert any("virt: a virtual file system" in s for s in scan.files_skipped)


def test_files_that_spell_no_engine_are_read_but_not_parsed(tmp_path, monkeypatch):
    """Parsing is the cost of a big walk: a file with neither 'vllm' nor 'sglang' in it holds no launch,
    nor does a Python file that imports the engine without a call that could start it (its source tree)."""
    (tmp_path / "big.py").write_text("import os\n" + "x = 1\n" * 1000)
    (tmp_path / "engine_code.py").write_text("from sglang.srt.server_args import ServerArgs\n"
                                             "def serve(args: ServerArgs):\n    return args\n")
    (tmp_path / "launch.py").write_text('import subprocess\nsubprocess.run(["vllm", "serve", "org/m"])\n')
    parsed = []
    real = scan_mod.parse_text
    monkeypatch.setattr(scan_mod, "parse_text", lambda text, file, *a, **k: parsed.append(Path(file).name)
                        or real(text, file, *a, **k))
    scan = read_paths([tmp_path], options=option_list)
    assert parsed == ["launch.py"] and [i.model for i in scan.invocations] == ["org/m"]
    assert sorted(Path(f).name for f in scan.files_scanned) == ["big.py", "engine_code.py", "launch.py"]


def test_a_compose_file_whose_engine_comes_from_its_env_file_is_parsed(tmp_path):
    (tmp_path / ".env").write_text("IMAGE=vllm/vllm-openai:v0.33.0\n")
    (tmp_path / "docker-compose.yml").write_text(
        "services:\n  llm:\n    image: ${IMAGE}\n    command: [\"org/m\", \"--max-model-len\", \"4096\"]\n")
    (inv,) = read_paths([tmp_path], options=option_list).invocations
    assert (inv.model, inv.max_model_len, inv.engine_version) == ("org/m", 4096, "0.33.0")


# --------------------------------------------------------------------------------------------------
# Gap 5: an unreachable Hub is asked once per process
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def online(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    hub.forget_unreachable()
    yield
    hub.forget_unreachable()


def test_a_hub_that_cannot_be_reached_is_asked_once(online, monkeypatch):
    import httpx2
    import huggingface_hub

    probes = []

    def no_route(url, **kw):
        probes.append(url)
        raise httpx2.ConnectError("[Errno 111] Connection refused")

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", no_route)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda *a, **k: pytest.fail("downloaded"))
    with pytest.raises(SourceUnavailableError, match="cannot reach the Hugging Face Hub for 'someorg/m1'"):
        hub.resolve_model("someorg/m1")
    t0 = time.perf_counter()
    for name in ("someorg/m2", "someorg/m3"):
        with pytest.raises(SourceUnavailableError) as info:
            hub.resolve_model(name)
        text = str(info.value)
        assert text.startswith(f"cannot reach the Hugging Face Hub for '{name}' (ConnectError")
        assert "when 'someorg/m1' was looked up; not asked again" in text and "\n" not in text
    assert time.perf_counter() - t0 < 0.5
    assert len(probes) == 1
    hub.forget_unreachable()  # a later run asks again
    with pytest.raises(SourceUnavailableError):
        hub.resolve_model("someorg/m4")
    assert len(probes) == 2


def test_a_connection_lost_in_the_download_is_remembered_too(online, monkeypatch):
    import huggingface_hub
    from huggingface_hub import errors as hf_errors

    downloads = []

    def lost(*a, **k):
        downloads.append(a)
        raise hf_errors.LocalEntryNotFoundError("An error happened while trying to locate the file on the Hub")

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", lambda url, **kw: object())
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lost)
    for name in ("someorg/m1", "someorg/m2"):
        with pytest.raises(SourceUnavailableError, match="cannot reach the Hugging Face Hub"):
            hub.resolve_model(name)
    assert len(downloads) == 1


def test_a_hub_that_answers_not_found_is_asked_again(online, monkeypatch):
    """A 404 is an answer: the Hub is up, the next model is looked up."""
    import huggingface_hub
    from huggingface_hub import errors as hf_errors

    probes = []

    def not_found(url, **kw):
        probes.append(url)
        raise hf_errors.RepositoryNotFoundError.__new__(hf_errors.RepositoryNotFoundError)

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", not_found)
    for name in ("someorg/m1", "someorg/m2"):
        with pytest.raises(UnknownNameError):
            hub.resolve_model(name)
    assert len(probes) == 2


def test_check_over_many_private_models_waits_once(cli, tmp_path, monkeypatch, online):
    import httpx2
    import huggingface_hub

    probes = []

    def slow_no_route(url, **kw):
        probes.append(url)
        time.sleep(0.3)
        raise httpx2.ConnectError("[Errno 111] Connection refused")

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", slow_no_route)
    files = {f"s{i}.sh": f"vllm serve someorg/m{i} --kv-cache-dtype int4\n" for i in range(5)}
    monkeypatch.chdir(make_repo(tmp_path, files))
    r = cli("check", ".", "--gpu", "h100", "--format", "json")
    assert r.code == 1, r.stderr  # five QA105 errors (int4), five QA111 warnings
    doc = r.json()
    assert len(_findings(doc, "QA111")) == 5 and len(_findings(doc, "QA105")) == 5
    assert len(probes) == 1


# --------------------------------------------------------------------------------------------------
# Gap 7: speed is priced at what the engine runs at once
# --------------------------------------------------------------------------------------------------

def _perf(cli, concurrency, ctx="512"):
    doc = cli("check", "serve.sh", "--gpu", "h100", "--concurrency", concurrency, "--ctx", ctx,
              "--format", "json").json()
    return doc, doc["targets"][0]


def test_a_declared_concurrency_above_the_cap_is_priced_at_the_cap(cli, tmp_path, monkeypatch):
    """--max-num-seqs 256: vLLM's scheduler never runs more than 256 sequences at once (the rest wait in
    its queue), so 512 declared is priced as 256 — the same numbers as declaring 256."""
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": HEALTHY}))
    doc, over = _perf(cli, "512")
    _, at = _perf(cli, "256")
    assert over["performance"]["batch"] == 256 and over["concurrency"] == 256
    assert over["performance"]["tokens_per_s"] == at["performance"]["tokens_per_s"]
    assert any("the engine's cap --max-num-seqs 256" in a and "the declared 512" in a for a in over["assumptions"])
    assert _findings(doc, "QA505")  # the queue itself is still reported
    _, under = _perf(cli, "128")
    assert under["performance"]["batch"] == 128  # below the cap: as declared


def test_the_engines_default_cap_bounds_the_price_too(cli, tmp_path, monkeypatch):
    """No --max-num-seqs: vLLM 0.33.0's default on a GPU below 70 GiB is 256 (vllm/engine/arg_utils.py,
    the usage-context defaults: 256 for the OpenAI server below the large-memory tier); an L4 has 24 GB."""
    monkeypatch.chdir(make_repo(tmp_path, {"serve.sh": "vllm serve meta-llama/Llama-3.1-8B-Instruct "
                                                       "--max-model-len 4096\n"}))
    doc = cli("check", "serve.sh", "--gpu", "l4", "--concurrency", "1000", "--ctx", "256", "--format", "json").json()
    t = doc["targets"][0]
    assert t["performance"]["batch"] == 256
    assert any("the declared 1,000" in a for a in t["assumptions"])
