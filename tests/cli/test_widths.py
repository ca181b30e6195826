"""Human output fits the terminal (issue 16): for every command, at COLUMNS=80 and COLUMNS=200 no
line of stdout is longer than the width; with ``--wide`` nothing is clipped (no ellipsis, and the
wide tables show a line longer than 80), and at 200 columns a report that has more to show uses the
room. The text the narrow layouts wrap is still there, word for word (whitespace aside). recommend
and roofline, whose layouts carry the serving-target columns, are tested in test_widths_plan.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_check_cli import copy_example

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
ACC = FIXTURES / "accuracy" / "lm_eval"
SIMULATED_PROFILE = FIXTURES / "profiles" / "simulated-h100-sxm.yaml"
ELLIPSIS = "…"  # what a clipped table cell ends with (report/text.py)


def _checkpoint(folder: Path, name: str) -> Path:
    d = json.loads((FIXTURES / "checkpoints" / f"{name}.json").read_text())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(d["config"]))
    return folder


# name: (argv, exit codes, wide: a line longer than 80 with --wide (the report has more than 80 columns to show))
CASES: dict[str, tuple[list[str], tuple[int, ...], bool]] = {
    "size": (["size", "meta-llama/Llama-3-8B", "--bits", "4", "--group", "128"], (0,), True),
    "size-workload": (["size", "meta-llama/Llama-3-8B", "--bits", "4", "--ctx", "8192", "--batch", "16", "--gpu", "h100"],
                      (0,), True),
    "inspect-folder": (["inspect", "{awq}", "--gpu", "a100-80gb"], (0,), True),
    "inspect-refused": (["inspect", "{fp8}", "--engine", "vllm", "--kv-cache-dtype", "fp8_e5m2", "--gpu", "h100"],
                        (0,), True),
    "inspect-bundled": (["inspect", "meta-llama/Llama-3-8B", "-q", "fp8"], (0,), True),
    "engines-list": (["engines", "list"], (0,), True),
    "engines-list-sglang": (["engines", "list", "--engine", "sglang"], (0,), True),
    "engines-show": (["engines", "show", "awq"], (0,), True),
    "engines-show-override": (["engines", "show", "modelopt_fp4"], (0,), True),
    "engines-diff": (["engines", "diff"], (0,), True),
    "engines-diff-releases": (["engines", "diff", "vllm@0.30.0", "vllm@0.33.0"], (0,), True),
    "check-failing": (["check"], (1,), True),
    "check-passing": (["check"], (0,), True),
    "check-init": (["check", "--init", "--force", "--config", "ops/quality-gates/serving/llama-3-8b-awq-int4/qa.yaml"],
                   (0,), True),
    "accuracy": (["accuracy", str(ACC / "base"), str(ACC / "quant")], (0,), True),
    # the shipped profile's kernel curves: its verdict (exit 0 or 1) is the data's, not the layout's
    "validate-shipped": (["validate", "h100-sxm"], (0, 1), True),
    "validate-calibrated": (["validate", str(SIMULATED_PROFILE)], (0,), True),
    "validate-e2e": (["validate", "--e2e"], (0,), True),
    "validate-census": (["validate", "--census"], (0,), True),
    "calibrate-from-bench": (["calibrate", "--from-bench", str(FIXTURES / "bench" / "vllm_bench_serve_0.33.0.json"),
                              "--gpu", "h100", "--out", "site.yaml"], (0,), True),
    "validate-bench": (["validate", "--bench", str(FIXTURES / "bench" / "vllm_bench_serve_0.33.0.json"), "--gpu", "h100"],
                       (0,), True),
    "calibrate": (["calibrate", "--backend", "simulated", "--gpu", "h200", "--batches", "1..256", "--out",
                   "profiles/h200.yaml", "--no-progress"], (0,), True),
    "list-models": (["list", "models"], (0,), True),
    "list-gpus": (["list", "gpus"], (0,), True),
    "list-schemes": (["list", "schemes"], (0,), True),
    "list-kv": (["list", "kv"], (0,), True),
    "list-engines": (["list", "engines"], (0,), True),
    "help": (["--help"], (0,), False),
    "size-help": (["size", "--help"], (0,), False),
}


@pytest.fixture
def run_case(cli, tmp_path, monkeypatch):
    """Run a case at a terminal width (COLUMNS) in its own folder; ``wide`` adds --wide."""
    paths = {"awq": _checkpoint(tmp_path / "awq", "thebloke-llama-2-7b-awq"),
             "fp8": _checkpoint(tmp_path / "fp8", "neuralmagic-qwen2-7b-instruct-fp8-static")}

    def run(name: str, columns: int, wide: bool = False):
        args, codes, _ = CASES[name]
        if name.startswith("check-") and name != "check-init":
            root = tmp_path / name
            if not root.exists():
                root = copy_example(tmp_path, name.replace("check-", "") + "-repo")
                root.rename(tmp_path / name)
                root = tmp_path / name
            monkeypatch.chdir(root)
        monkeypatch.setenv("COLUMNS", str(columns))
        r = cli(*[a.format(**paths) for a in args], *(["--wide"] if wide else []))
        assert r.code in codes, (r.code, r.stdout, r.stderr)
        assert r.stdout.strip(), r.stderr
        return r

    return run


def _longest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("name", list(CASES))
def test_every_line_fits_the_width(run_case, name, columns):
    out = run_case(name, columns).stdout
    too_long = [line for line in out.splitlines() if len(line) > columns]
    assert not too_long, f"{name} at {columns} columns:\n" + "\n".join(too_long)


@pytest.mark.parametrize("name", [n for n, (_, _, wide) in CASES.items() if wide])
def test_wide_clips_nothing_and_200_columns_use_the_room(run_case, name):
    """--wide shows the full report (longer than 80 columns, no clipped cell); at 200 columns a
    report with more than 80 columns to show is wider than the 80-column layout."""
    wide = run_case(name, 80, wide=True).stdout
    assert _longest(wide) > 80, f"{name} --wide has nothing wider than 80 columns"
    assert ELLIPSIS not in wide
    narrow, roomy = run_case(name, 80).stdout, run_case(name, 200).stdout
    assert _longest(roomy) > 80 >= _longest(narrow)


def _words(text: str) -> str:
    return " ".join(text.split())


def test_narrow_engines_show_wraps_values_without_cutting_them(run_case, cli):
    out = run_case("engines-show", 80).stdout
    doc = cli("engines", "show", "awq", "--format", "json").json()
    m = doc["method"]
    # the long source and note wrap under a hanging indent; every word is still there, in order
    assert _words(f"source: {m['source']} (as of {m['as_of']})") in _words(out)
    assert _words(f"note: {m['notes']}") in _words(out)
    assert ELLIPSIS not in out


def test_narrow_inspect_stacks_the_groups_instead_of_cutting_them(run_case, cli):
    out = run_case("inspect-folder", 80).stdout
    doc = cli("inspect", str(Path.cwd() / "awq"), "--gpu", "a100-80gb", "--format", "json").json()
    g = doc["groups"][0]
    # the group table is wider than 80 columns: one block per group keeps its six axes whole
    assert f"  weights: {g['weights']}" in out.splitlines()
    assert f"group {g['group']}: format {g['format']}" in out
    wide = run_case("inspect-folder", 80, wide=True).stdout
    assert any(line.startswith("group  targets  format") for line in wide.splitlines())  # the table, in full
    for e in doc["engines"]:
        for step in e["steps"]:
            assert _words(step) in _words(out)


def test_narrow_check_keeps_every_finding_and_engine_message(run_case, cli):
    out = run_case("check-failing", 80).stdout
    doc = cli("check", "--format", "json").json()
    assert doc["findings"]
    for f in doc["findings"]:
        assert _words(f["message"]) in _words(out)
        if f["engine_message"]:
            assert _words(f"engine says: {f['engine_message']}") in _words(out)
    # wrapped lines of a finding stay under its message (10 columns in), never at the margin
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("error     QA102"))
    assert lines[head + 1].startswith(" " * 10) and lines[head + 2].startswith(" " * 10)


def test_narrow_release_diff_keeps_what_the_engine_now_prints(run_case, cli):
    out = run_case("engines-diff-releases", 80).stdout
    doc = cli("engines", "diff", "vllm@0.30.0", "vllm@0.33.0", "--format", "json").json()
    added = {x for v in doc["verdicts"] for x in v["added"]}
    assert added
    for x in added:
        assert _words(f"vLLM 0.33.0 now prints: {x}") in _words(out)
    # the changed facts clip their values at 80 columns (in full in JSON and with --wide)
    wide = run_case("engines-diff-releases", 80, wide=True).stdout
    for c in doc["changed"]:
        after = ", ".join(f"+{x}" for x in c["added"]) or c["after"]
        assert after in wide


def test_calibrate_prints_the_validate_command_whole(run_case):
    out = run_case("calibrate", 40).stdout  # narrower than the command: it breaks with continuations
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("quantadvise validate"))
    command = []
    for line in lines[start:]:
        command.append(line.strip().removesuffix("\\").strip())
        if not line.endswith("\\"):
            break
    assert len(command) > 1  # it did break
    assert " ".join(command) == "quantadvise validate profiles/h200.yaml"


def test_import_table_fits_and_wide_keeps_every_column():
    """``calibrate --from aiconfigurator`` needs the aiconfigurator-core package: its table is rendered
    here from the shipped profile and its held-out validation."""
    from quantadvise.api.calibrate import validate
    from quantadvise.calibration.validate import TableImportResult
    from quantadvise.catalog.profiles import measured_profile
    from quantadvise.report.calibrate import import_table

    v = validate("h100-sxm")
    profile = measured_profile("h100-sxm")
    assert profile is not None
    r = TableImportResult(gpu="h100-sxm", source="aiconfigurator-core (an unpacked wheel at /opt/wheels/aic)",
                          profile_path="profiles/h100-sxm-measured.yaml",
                          heldout_path="profiles/h100-sxm-measured.heldout.json.gz", profile=profile,
                          kernels=v.kernels)
    for width in (80, 200):
        assert _longest(import_table(r, width)) <= width
    wide = import_table(r, None)
    header = next(line for line in wide.splitlines() if line.startswith("gpu "))
    assert header.split() == ["gpu", "curve", "measured", "with", "calls", "call", "med", "call", "max", "steps",
                              "step", "med", "step", "max", "roof", "med", "roof", "max", "bars"]
    narrow = next(line for line in import_table(r, 80).splitlines() if "step med" in line)
    assert narrow.split()[0] == "curve"  # at 80 columns the GPU column drops first
    assert "quantadvise validate profiles/h100-sxm-measured.yaml" in import_table(r, 80)


def test_the_bench_plan_fits_the_width_but_for_a_word_longer_than_a_line(cli, monkeypatch):
    # `recommend --bench-plan` printed its paragraphs unwrapped (one 206-column line at 80 columns): only a
    # shell word longer than a line (SGLang's comma-joined --tag) may pass the width, alone after its indent
    monkeypatch.setenv("COLUMNS", "80")
    r = cli("recommend", "--batch", "64", "--ctx", "2048", "--bench-plan")
    assert r.code == 0, r.stderr
    long = [line for line in r.stdout.splitlines() if len(line) > 80]
    for line in long:
        words = line.split()
        assert len(words) <= 2 and len(words[-1]) > 80 - 12, line  # e.g. `--tag model=...,engine_version=...`
    assert any(line.startswith("recommended: ") and len(line) <= 80 for line in r.stdout.splitlines())
