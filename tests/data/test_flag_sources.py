"""Every option in data/flags/ is on the line it cites, and the files cover the releases on file.

tools/extract_flags.py writes each option row's ``source`` (the ``add_argument`` call, or the
dataclass field the engine turns into an option) and, beside the data, the cited lines verbatim
(tests/fixtures/flag_quotes/<engine>-<version>.json, stamped with the wheel's sha256). Each option's
name must be read back out of its quoted line: the literal option string (``"--max-model-len"``), or
the field it is generated from (``max_model_len:`` -> ``--max-model-len``: vLLM's
``f"--{key.replace('_', '-')}"`` in vllm/entrypoints/common/cli_args.py:283, SGLang's
``_field_to_cli_name`` in sglang/srt/arg_groups/arg_utils.py). With ``ENGINE_WHEELS_DIR`` pointing at
the wheels, the quotes themselves are checked against them (skipped offline by default).
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.data.wheels import line_in, wheel_or_skip

REPO = Path(__file__).resolve().parents[2]
FLAGS = REPO / "data" / "flags"
QUOTES = REPO / "tests" / "fixtures" / "flag_quotes"
RELEASES = sorted(p.stem for p in FLAGS.glob("*.yaml"))


def load(release: str) -> tuple[dict, dict[str, str]]:
    doc = yaml.safe_load((FLAGS / f"{release}.yaml").read_text())
    quotes = json.loads((QUOTES / f"{release}.json").read_text())
    assert quotes["sha256"] == doc["source"]["sha256"], "quotes and data were read from different wheels"
    return doc, quotes["lines"]


def test_every_engine_release_has_its_option_list() -> None:
    engines = sorted(p.stem for p in (REPO / "data" / "engines").glob("*.yaml") if p.stem.startswith(("vllm-",
                                                                                                        "sglang-")))
    assert RELEASES == engines


@pytest.mark.parametrize("release", RELEASES)
def test_each_option_is_on_the_line_it_cites(release: str) -> None:
    doc, lines = load(release)
    assert len(doc["options"]) > 200  # both servers register hundreds (vLLM 0.33 ~300, SGLang 0.5.23 ~530)
    for row in doc["options"]:
        text = lines[row["source"]]
        fields = {n.lstrip("-").replace("-", "_") for n in row["names"]}
        literal = any(f'"{n}"' in text or f"'{n}'" in text for n in row["names"])
        field = any(re.match(rf"{re.escape(f)}\s*:", text) for f in fields)
        assert literal or field, (release, row["names"], text)


@pytest.mark.parametrize("release", RELEASES)
def test_quotes_match_the_wheel(release: str) -> None:
    doc, lines = load(release)
    wheel = wheel_or_skip(doc["source"]["artifact"])
    with zipfile.ZipFile(wheel) as z:
        for cite, text in lines.items():
            path, _, line = cite.rpartition(":")
            assert line_in(z, path, line.split("-")[0]) == text, cite


@pytest.mark.parametrize(("release", "option", "kind"), [
    # vllm/engine/arg_utils.py: add_argument("--gpu-memory-utilization", **cache_kwargs[...]) (a float field)
    ("vllm-0.33.0", "--gpu-memory-utilization", "value"),
    # vllm/entrypoints/common/cli_args.py make_arg_parser: add_argument("--headless", action="store_true")
    ("vllm-0.33.0", "--headless", "flag"),
    # sglang/srt/arg_groups/fields/memory.py: mem_fraction_static: A[Optional[float], ...]
    ("sglang-0.5.23", "--mem-fraction-static", "value"),
    # sglang/srt/arg_groups/fields/model.py: trust_remote_code: A[bool, ...] -> store_true (arg_utils.py)
    ("sglang-0.5.23", "--trust-remote-code", "flag"),
])
def test_sample_kinds(release: str, option: str, kind: str) -> None:
    doc = yaml.safe_load((FLAGS / f"{release}.yaml").read_text())
    rows = [r for r in doc["options"] if option in r["names"]]
    assert len(rows) == 1 and rows[0]["kind"] == kind


@pytest.mark.parametrize("release", RELEASES)
def test_the_flag_table_writes_only_options_the_release_registers(release: str) -> None:
    """Every command quantadvise writes (engines.flags: the deploy plan's `vllm serve ...` lines) spells each
    flag as the release registers it, and every spelling the readers accept is one its parser reads as that
    flag: registered, or a unique prefix of it (SGLang's --tp for --tp-size, argparse's allow_abbrev)."""
    from quantadvise import catalog
    from quantadvise.engines.flags import ENGINES

    engine, _, version = release.partition("-")
    vocab = catalog.flag_vocabulary(engine, version)
    for flag in ENGINES[engine].flags:
        assert vocab.lookup(flag.name).verdict == "known", (release, flag.name)
        for spelled in flag.names[1:]:
            hit = vocab.lookup(spelled)
            assert hit.verdict == "known" or (hit.verdict == "abbreviation" and hit.option in flag.names), \
                (release, spelled, hit)
