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

import copy
import functools
import json
import re
from pathlib import Path

import pytest
import yaml

from tests.data.wheels import line_in, open_artifact, wheel_or_skip

REPO = Path(__file__).resolve().parents[2]
FLAGS = REPO / "data" / "flags"
QUOTES = REPO / "tests" / "fixtures" / "flag_quotes"
RELEASES = sorted(p.stem for p in FLAGS.glob("*.yaml"))


@functools.cache
def _parsed(path: Path) -> dict:
    """A release file parsed once per process (the safe loader; libyaml's where installed): every test of
    a release reads the same document."""
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506


def load(release: str) -> tuple[dict, dict[str, str]]:
    doc = copy.deepcopy(_parsed(FLAGS / f"{release}.yaml"))  # a test may change its copy
    quotes = json.loads((QUOTES / f"{release}.json").read_text())
    assert quotes["sha256"] == doc["source"]["sha256"], "quotes and data were read from different wheels"
    return doc, quotes["lines"]


def test_every_engine_release_has_its_option_list() -> None:
    engines = sorted(p.stem for p in (REPO / "data" / "engines").glob("*.yaml") if p.stem.startswith(("vllm-",
                                                                                                        "sglang-")))
    assert RELEASES == engines


# The fewest options a release's parser registers, from the first release each bound holds for: counted in the
# sources as `add_argument(` calls (`grep -c 'add_argument('`) in the files that build the parser. vLLM
# 0.8.5.post1: 138 in vllm/engine/arg_utils.py, vllm/entrypoints/openai/cli_args.py and vllm/entrypoints/cli/serve.py
# (a few are helpers' own calls, hence 130); vLLM 0.21.0: 200 in arg_utils.py and cli_args.py; SGLang 0.4.0.post2: 84
# in sglang/srt/server_args.py; SGLang 0.5.2: 210 there. Later releases keep at least their bound (options are
# added faster than removed: vLLM 0.12.0 drops 6 of 0.11.2's 200, SGLang 0.5.20 9 of 0.5.19's 504).
OPTION_FLOORS = {"vllm": (("0.8.5", 130), ("0.21.0", 200)), "sglang": (("0.4.0", 84), ("0.5.2", 200))}


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])


def option_floor(release: str) -> int:
    engine, _, version = release.partition("-")
    return max(n for first, n in OPTION_FLOORS[engine] if version_key(first) <= version_key(version))


@pytest.mark.parametrize("release", RELEASES)
def test_each_option_is_on_the_line_it_cites(release: str) -> None:
    doc, lines = load(release)
    assert len(doc["options"]) >= option_floor(release)  # the whole parser was read, not a part of it
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
    with open_artifact(wheel) as z:
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


# Fields a release's parser has no option for at all (none of the flag table's spellings): SGLang's pipeline
# parallelism arrives in 0.4.6 (sglang/srt/server_args.py:704 of 0.4.6.post5 registers --pipeline-parallel-size /
# --pp-size; 0.4.5.post3's server_args.py registers neither: its quotes hold no "pp-size").
LACKS = {("sglang", "pipeline_parallel_size"): lambda v: version_key(v) < (0, 4, 6)}


@pytest.mark.parametrize("release", RELEASES)
def test_the_flag_table_writes_only_options_the_release_registers(release: str) -> None:
    """Every command quantadvise writes for a release (engines.flags.engine_command given the release's option
    list: the deploy plan's `vllm serve ...` lines) spells each flag as that release registers it, and refuses a
    field the release has no option for; every spelling the readers accept is one its parser reads as that flag:
    registered, or a unique prefix of it (SGLang's --tp for --tp-size, argparse's allow_abbrev)."""
    import shlex

    from quantadvise import catalog
    from quantadvise.engines.flags import ENGINES, MissingOption, engine_command

    engine, _, version = release.partition("-")
    vocab = catalog.flag_vocabulary(engine, version)
    values = {"quantization": "fp8", "kv_cache_dtype": "fp8", "max_num_seqs": 8, "max_model_len": 4096,
              "tensor_parallel_size": 2, "pipeline_parallel_size": 2, "dtype": "half", "gpu_memory_utilization": 0.8,
              "max_num_batched_tokens": 8192, "speculative_config": {"method": "ngram"}}
    for flag in ENGINES[engine].flags:
        lacks = LACKS.get((engine, flag.field), lambda v: False)(version)
        hits = [vocab.lookup(s) for s in flag.names]
        if lacks:
            assert all(h.verdict == "unknown" for h in hits), (release, flag.names)
            with pytest.raises(MissingOption, match="has no"):
                engine_command(engine, "m", vocab, **{flag.field: values[flag.field]})
            continue
        if flag.field != "model" or not ENGINES[engine].positional_model:  # `vllm serve MODEL`: no model option
            fields = {flag.field: values[flag.field]} if flag.field != "model" else {}
            written = shlex.split(engine_command(engine, "m", vocab, **fields))
            options = [w for w in written if w.startswith("-") and w != "-m"]
            assert options and all(vocab.lookup(o).verdict == "known" for o in options), (release, written)
            assert options[-1] in flag.names, (release, written)
        for spelled, hit in zip(flag.names, hits, strict=True):
            assert hit.verdict == "known" or (hit.verdict == "abbreviation" and hit.option in flag.names), \
                (release, spelled, hit)


@pytest.mark.parametrize("release", RELEASES)
def test_the_option_names_recommend_reads_are_the_vocabularys(release: str) -> None:
    """``catalog.option_names`` (what ``recommend`` spells its commands from, read without making the rows) holds
    exactly the option strings of the release's vocabulary (``FlagVocabulary.registered``: names, ``--no-X`` of
    a negatable option, enable/disable inverses, -h / --help), and every flag of the table is written the same
    from either."""
    from quantadvise import catalog
    from quantadvise.engines.flags import ENGINES, MissingOption, engine_command

    engine, _, version = release.partition("-")
    vocab, names = catalog.flag_vocabulary(engine, version), catalog.option_names(engine, version)
    assert names.version == version and names.registered == set(vocab.registered)
    # the rows, counted from the YAML: every registered string comes from a row or is argparse's -h / --help
    doc, _ = load(release)
    from_rows = {n for row in doc["options"] if row.get("launcher") is None for n in row["names"]}
    assert from_rows <= names.registered and {"-h", "--help"} <= names.registered
    for flag in ENGINES[engine].flags:
        if flag.field == "model":
            continue
        value = {"speculative_config": {"method": "ngram"}}.get(flag.field, 2)
        lines = []
        for options in (vocab, names):
            try:
                lines.append(engine_command(engine, "m", options, **{flag.field: value}))
            except MissingOption as exc:
                lines.append(f"missing: {exc}")
        assert lines[0] == lines[1], (release, flag.field)


def test_option_names_of_a_release_not_on_file_is_none() -> None:
    from quantadvise import catalog

    assert catalog.option_names("vllm", "0.0.1") is None and catalog.option_list("vllm", "0.0.1", True) is None
