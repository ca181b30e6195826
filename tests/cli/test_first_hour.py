"""A newcomer's first hour (issue 29): `check` asks for the GPU before it reads a file and never gates a
test suite's fixtures unless they are named; the repository's own clone checks its shipped examples
only. (`validate` with a GPU alias: test_validate_shipped.py; `recommend` in one screen:
test_widths_plan.py; every documented command: tests/test_docs_examples.py.)"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SERVE = "#!/bin/sh\nvllm serve meta-llama/Llama-3.1-8B --max-model-len 8192 --tensor-parallel-size 2\n"


def test_no_gpu_is_said_before_any_file_is_read(cli, tmp_path, monkeypatch):
    import quantadvise.artifacts.scan as scan

    def refuse(*args, **kwargs):
        raise AssertionError("the deployment was read before the GPU was known")

    monkeypatch.setattr(scan, "read_paths", refuse)
    (tmp_path / "serve.sh").write_text(SERVE)
    r = cli("check", str(tmp_path))
    assert r.code == 2, r.stderr
    assert r.stderr.startswith("Error: no GPU declared") and r.stderr.count("\n") == 1


def _tree(root: Path) -> None:
    for rel in ("deploy/serve.sh", "tests/fixtures/deploy/serve.sh", "test/__fixtures__/serve.sh",
                "pkg/testdata/serve.sh", "fixtures/serve.sh"):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(SERVE)


def test_a_walk_passes_over_test_fixtures_unless_they_are_named(cli, tmp_path):
    _tree(tmp_path)
    doc = cli("check", ".", "--gpu", "h100", "--format", "json").json()  # the tests run in tmp_path
    # a fixtures folder only under a tests folder is a test suite's; testdata anywhere (Go's convention)
    assert sorted(doc["files_scanned"]) == ["deploy/serve.sh", "fixtures/serve.sh"]
    for rel in ("tests/fixtures", "test/__fixtures__", "pkg/testdata"):
        assert f"{rel}: test fixtures, not a deployment (name the folder to check it)" in doc["files_skipped"]
    named = cli("check", "tests/fixtures", "--gpu", "h100", "--format", "json").json()
    assert named["files_scanned"] == ["tests/fixtures/deploy/serve.sh"] and len(named["targets"]) == 1


def test_the_clone_checks_its_examples_not_its_fixtures(cli, monkeypatch):
    # `quantadvise check --gpu h100` at the root of this repository: the shipped examples' two manifests are
    # the deployments found; tests/fixtures (dozens of deliberately broken launches) are passed over
    monkeypatch.chdir(REPO)
    r = cli("check", "--gpu", "h100", "--format", "json")
    assert r.code in (0, 1), r.stderr
    files = sorted({t["file"] for t in r.json()["targets"]})
    assert files == ["examples/failing-repo/k8s/deployment.yaml", "examples/passing-repo/deploy/k8s/llm.yaml"]
    assert not any(f.startswith("tests/fixtures/") for f in r.json()["files_scanned"])


STACKS = REPO / "tests" / "fixtures" / "stacks"


def test_no_gpu_comes_first_for_the_stacks_manifests_and_deploys_output(cli, tmp_path, monkeypatch):
    """Issue 31's manifests (KServe LLMInferenceService, the production-stack chart's values, Dynamo) and what
    `deploy` writes: without a GPU, check says so before it reads any of them; with the quantadvise.yaml
    `deploy` writes, the GPU is the one it declares (no question asked)."""
    import quantadvise.api.check as api_check
    import quantadvise.artifacts.scan as scan

    out = tmp_path / "out"
    made = cli("deploy", "-m", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--max-gpus", "2", "--target", "llm-d",
               "-o", str(out))
    assert made.code == 0, made.stderr
    manifests = sorted(p for p in out.iterdir() if p.name != "quantadvise.yaml")
    assert manifests

    def refuse(*args, **kwargs):
        raise AssertionError("a manifest was read before the GPU was known")

    with monkeypatch.context() as m:
        m.setattr(scan, "read_paths", refuse)
        m.setattr(api_check, "read_deployment", refuse)
        for path in [*sorted(STACKS.glob("example.*.yaml")), *manifests]:
            r = cli("check", str(path))
            assert r.code == 2, (path, r.stderr)
            assert r.stderr.startswith("Error: no GPU declared") and r.stderr.count("\n") == 1, (path, r.stderr)
    declared = cli("check", str(out), "--config", str(out / "quantadvise.yaml"))
    assert "no GPU declared" not in declared.stderr


def test_deploy_without_out_writes_into_deploy_target_not_here(cli, tmp_path, monkeypatch):
    # --help promises [default: deploy-TARGET]; the default was Path(""), which is ".", so the manifests and a
    # quantadvise.yaml silently replaced the ones in the current folder
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quantadvise.yaml").write_text("version: 1\n# the user's own\n")
    r = cli("deploy", "-m", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--target", "helm")
    assert r.code == 0, r.stderr
    assert (tmp_path / "quantadvise.yaml").read_text() == "version: 1\n# the user's own\n"
    assert (tmp_path / "deploy-helm" / "quantadvise.yaml").is_file()
    # -o . writes here, but a file of the same name with other content is replaced only with --force (as
    # `check --init`): -o . (or -o '', which is '.') once replaced the user's quantadvise.yaml without a word
    for out in (".", ""):
        here = cli("deploy", "-m", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--target", "helm", "-o", out)
        assert here.code == 2 and here.stderr.splitlines() == [
            "Error: quantadvise.yaml already exists with other content; pass --force to overwrite, or --out another "
            "folder"]
        assert (tmp_path / "quantadvise.yaml").read_text() == "version: 1\n# the user's own\n"
    here = cli("deploy", "-m", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--target", "helm", "-o", ".", "--force")
    assert here.code == 0 and "# the user's own" not in (tmp_path / "quantadvise.yaml").read_text()  # asked for
    again = cli("deploy", "-m", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--target", "helm", "-o", ".")
    assert again.code == 0, again.stderr  # the same files again: nothing else is replaced
