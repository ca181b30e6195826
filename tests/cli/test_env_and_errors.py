"""QUANTADVISE_* variables read the same way by every command, help text that says what a flag
takes, and error lines that name the flag (or variable), echo the value and suggest a fix."""

from __future__ import annotations

import pytest


def _err(r):
    assert r.code == 2 and r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1, (r.code, r.stderr)
    return r.stderr


@pytest.mark.parametrize("args", [("recommend",), ("roofline",), ("check", "--model", "llama-3-8b", "--gpu", "h100")])
def test_engine_spec_with_a_version_is_read_by_every_command(cli, monkeypatch, args):
    # engines and inspect read NAME==VERSION; recommend, roofline and check said "unknown engine"
    monkeypatch.setenv("QUANTADVISE_ENGINE", "sglang==0.5.20")
    r = cli(*args)
    assert r.code in (0, 1), r.stderr
    assert "unknown engine" not in r.stderr and "0.5.20" in r.stdout


def test_engine_spec_and_engine_version_must_agree(cli):
    err = _err(cli("recommend", "--engine", "sglang==0.5.20", "--engine-version", "0.5.23"))
    assert "two releases" in err


def test_size_takes_one_scheme_and_says_which_variable(cli, monkeypatch):
    monkeypatch.setenv("QUANTADVISE_SCHEME", "bf16,w4a16")
    err = _err(cli("size", "llama-3-8b"))
    assert "--scheme takes one scheme in `size`" in err and "QUANTADVISE_SCHEME" in err
    assert cli("roofline", "--batch", "1").code == 0  # roofline's comma list still works


def test_a_format_only_other_commands_have_is_set_aside_with_a_note(cli, monkeypatch):
    monkeypatch.setenv("QUANTADVISE_FORMAT", "sarif")  # check's; size has table and json
    r = cli("size", "llama-3-8b")
    assert r.code == 0 and "Whole" not in r.stderr
    assert "note: QUANTADVISE_FORMAT=sarif is not a format of `quantadvise size` (table, json); using table" in r.stderr
    monkeypatch.setenv("QUANTADVISE_FORMAT", "json")
    assert cli("size", "llama-3-8b").json()["schema_version"] >= 1
    monkeypatch.setenv("QUANTADVISE_FORMAT", "yaml")  # no command has it
    err = _err(cli("size", "llama-3-8b"))
    assert "'yaml' is not an output format" in err and "QUANTADVISE_FORMAT" in err


def test_engines_diff_compares_the_other_engine(cli, monkeypatch):
    monkeypatch.setenv("QUANTADVISE_ENGINE", "sglang")
    r = cli("engines", "diff")
    assert r.code == 0 and r.stdout.startswith("SGLang ") and " vs vLLM " in r.stdout.splitlines()[0]


def test_engines_release_option_is_not_the_app_version(cli):
    assert cli("engines", "--release", "0.30.0").stdout.startswith("vLLM 0.30.0")
    assert "not quantadvise's own version" in " ".join(cli("engines", "--help").stdout.split())


def test_bad_config_names_the_flag_and_variable(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("QUANTADVISE_CONFIG", str(tmp_path / "nope.yaml"))
    err = _err(cli("check"))
    assert "--config" in err and "no such file" in err and "QUANTADVISE_CONFIG" in err
    monkeypatch.delenv("QUANTADVISE_CONFIG")
    err = _err(cli("check", "--config", tmp_path))
    assert f"--config {tmp_path} is a directory" in err


def test_a_directory_for_workload_names_the_flag(cli, tmp_path):
    assert f"--workload {tmp_path} is a directory" in _err(cli("recommend", "--workload", tmp_path))


def test_a_bad_integer_from_the_environment_is_echoed(cli, monkeypatch):
    monkeypatch.setenv("QUANTADVISE_GPUS", "abc")
    err = _err(cli("size", "llama-3-8b"))
    # the words --gpus 0 gets (inputs.LIMITS["gpus"]: 1 .. 1,024), the value as given, the variable named
    assert err == ("Error: --gpus must be an integer >= 1 and <= 1,024, got 'abc' "
                   "(from the environment variable QUANTADVISE_GPUS)\n")


def test_mode_names_the_flag_and_suggests(cli):
    err = _err(cli("recommend", "--mode", "asink"))
    # 'asink' is closest to the alias 'async' (workload.py MODE_ALIASES), which means continuous
    assert "unknown --mode value 'asink'; did you mean 'continuous'?" in err and "workload: field" not in err


def test_workload_key_typo_names_the_file_and_suggests(cli, tmp_path):
    (tmp_path / "w.yaml").write_text("batchh: 4\n")
    err = _err(cli("recommend", "-w", tmp_path / "w.yaml"))
    assert "w.yaml: unknown key 'batchh'; did you mean 'batch'?" in err


def test_help_texts(cli):
    roof = cli("roofline", "--help").stdout
    # two examples, two paragraphs; the default scheme is fp8-dynamic (data/schemes.yaml: w8a8-fp8 is its alias)
    assert any(line.strip().startswith("Example: quantadvise roofline -m") for line in roof.splitlines())
    assert "fp8-dynamic (alias w8a8-fp8)" in " ".join(roof.split())
    for cmd in ("size", "recommend"):
        text = " ".join(cli(cmd, "--help").stdout.split())
        # 2 GiB = 2 x 2^30 = 2,147,483,648 bytes = 2.15 decimal GB
        assert "GiB, 2^30 bytes" in text and "2 GiB = 2.15 GB" in text
