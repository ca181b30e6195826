"""The crashes and hangs issue 14 reproduced, each now one `Error:` line and exit 2, fast (the fuzz
suite, tests/fuzz, generalises them)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# 511 bytes whose aliases expand to 10**9 list items when walked: the fan-out that hung `check` for minutes
BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 9))


def _one_error(r, fragment: str) -> None:
    assert r.code == 2, (r.code, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and fragment in lines[0], r.stderr
    assert "Traceback" not in r.stderr


# the input layer's one message for the reserve (inputs.LIMITS["reserve_gb"]: 0 to 4,096 GiB)
@pytest.mark.parametrize(("value", "fragment"), [("inf", "--reserve-gb must be a number >= 0 and <= 4,096, got inf"),
                                                 ("nan", "--reserve-gb must be a number >= 0 and <= 4,096, got nan"),
                                                 ("-1", "--reserve-gb must be a number >= 0 and <= 4,096, got -1")])
def test_reserve_gb_must_be_finite(cli, value, fragment):
    _one_error(cli("size", "--gpu", "h100", "--reserve-gb", value), fragment)  # OverflowError / ValueError before


def test_recommend_rejects_an_infinite_reserve(cli):
    r = cli("recommend", "--reserve-gb", "inf")
    _one_error(r, "--reserve-gb must be a number >= 0 and <= 4,096, got inf")


def test_a_5000_character_scheme_is_an_unknown_name(cli):
    _one_error(cli("size", "--scheme", "a" * 5000), "unknown scheme")  # OSError: File name too long before


def test_a_config_json_nested_1000_deep(cli, tmp_path):
    p = tmp_path / "config.json"
    p.write_text('{"model_type": "llama", "x": ' + '{"a": ' * 1000 + "1" + "}" * 1000 + "}")
    _one_error(cli("size", str(p)), "nested")  # RecursionError before


def test_a_billion_layers(cli, tmp_path):
    cfg = json.loads((REPO / "data" / "models" / "meta-llama" / "Llama-3.1-8B.json").read_text())
    cfg["num_hidden_layers"] = 10**9
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    t0 = time.perf_counter()
    _one_error(cli("size", str(p)), "num_hidden_layers")  # MemoryError before
    assert time.perf_counter() - t0 < 5


@pytest.mark.parametrize("where", ["quantadvise.yaml", "values.yaml"])
def test_a_yaml_alias_bomb_is_refused_up_front(cli, tmp_path, monkeypatch, where):
    assert len(BOMB.encode()) < 600
    (tmp_path / ".git").mkdir()
    (tmp_path / where).write_text(BOMB)
    monkeypatch.chdir(tmp_path)
    args = ["check", "--config", where] if where == "quantadvise.yaml" else ["check", where, "--gpu", "h100"]
    t0 = time.perf_counter()
    _one_error(cli(*args), "YAML aliases expand to more than 200,000 nodes")  # minutes of walking before
    assert time.perf_counter() - t0 < 5
