"""The engine's option list and how its parser reads a spelling (engines/vocabulary.py).

The oracle is Python's own argparse: a parser built with the same option strings must accept,
abbreviate or refuse a spelling exactly as ``FlagVocabulary.lookup`` says (both engines build their
server parser with argparse and leave ``allow_abbrev`` at its default: vLLM's FlexibleArgumentParser
in vllm/utils/argparse_utils.py, SGLang's ``argparse.ArgumentParser(prog="sglang serve")`` in
sglang/srt/server_args.py:679).
"""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from quantadvise.catalog import option_list
from quantadvise.engines.vocabulary import FlagVocabulary

OPTIONS = [
    {"names": ["--max-model-len"], "kind": "value", "source": "a.py:1"},
    {"names": ["--max-num-seqs"], "kind": "value", "source": "a.py:2"},
    {"names": ["--max-num-batched-tokens"], "kind": "value", "source": "a.py:3"},
    {"names": ["--tensor-parallel-size", "-tp"], "kind": "value", "source": "a.py:4"},
    {"names": ["--quantization", "-q"], "kind": "value", "source": "a.py:5"},
    {"names": ["--gpu-memory-utilization"], "kind": "value", "source": "a.py:6"},
    {"names": ["--enforce-eager"], "kind": "flag", "source": "a.py:7"},
    {"names": ["--enable-prefix-caching"], "kind": "negatable", "source": "a.py:8"},
    {"names": ["--trust-remote-code"], "kind": "negatable", "source": "a.py:9"},
]


def vocab(**parser: object) -> FlagVocabulary:
    return FlagVocabulary.model_validate({
        "schema_version": 1, "engine": "vllm", "version": "0.33.0", "as_of": "2026-12-02",
        "source": {"package": "vllm", "version": "0.33.0", "artifact": "w.whl", "sha256": "0" * 64, "read_by": "test"},
        "parser": {"prog": "vllm serve", "entry": "e.py:1", "abbreviations_source": "e.py:2", **parser},
        "options": OPTIONS,
    })


def argparse_reads(spelled: str, allow_abbrev: bool = True) -> str:
    """What a real argparse parser with OPTIONS does with ``spelled``: 'known:<dest>' or the error."""
    p = argparse.ArgumentParser(prog="vllm serve", allow_abbrev=allow_abbrev, exit_on_error=False)
    for o in OPTIONS:
        if o["kind"] == "value":
            p.add_argument(*o["names"])
        elif o["kind"] == "flag":
            p.add_argument(*o["names"], action="store_true")
        else:
            p.add_argument(*o["names"], action=argparse.BooleanOptionalAction)
    argv = [spelled, "1"]  # a value for options that take one; left over (a positional) for flags
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns, rest = p.parse_known_args(argv)
    except (argparse.ArgumentError, SystemExit) as exc:
        return f"error: {exc}" if isinstance(exc, argparse.ArgumentError) else f"error: {err.getvalue()}"
    if spelled in rest:
        return "unrecognized"
    return "known:" + ",".join(k for k, v in vars(ns).items() if v not in (None, False))


@pytest.mark.parametrize("spelled", [
    "--max-model-len", "--max-model", "--max-num", "--max", "--max-num-s", "--tensor-parallel-size", "-tp",
    "-q", "--enable-prefix-caching", "--no-enable-prefix-caching", "--no-trust", "--gpu-memory-utilisation",
    "--gpu-mem", "--enforce-eager", "--enforce-eager-mode", "--quantisation", "--tensor_parallel_size",
])
def test_lookup_agrees_with_argparse(spelled: str) -> None:
    v = vocab().lookup(spelled)
    real = argparse_reads(spelled)
    if v.verdict == "unknown":
        assert real == "unrecognized", (spelled, real)
    elif v.verdict == "ambiguous":
        assert real.startswith("error:") and "ambiguous option" in real, (spelled, real)
        for m in v.matches:
            assert m in real  # argparse names every option the prefix could match
    else:
        assert real.startswith("known:"), (spelled, real)
        assert v.option is not None
        dest = v.option.lstrip("-").removeprefix("no-").replace("-", "_")
        if v.option == "-tp":
            dest = "tensor_parallel_size"
        elif v.option == "-q":
            dest = "quantization"
        assert dest in real.removeprefix("known:").split(",") or v.option.startswith("--no-"), (spelled, real)


@pytest.mark.parametrize("spelled", ["--max-model-len", "--max-num", "--max", "--nonsense", "-O3", "-tp", "--no-trust"])
def test_a_remembered_lookup_is_the_lookup(spelled: str) -> None:
    # without suggestions a spelling's answer is remembered (a reader asks twice of each option): the same answer
    # a fresh vocabulary gives, and only for that spelling; with suggestions it is worked out each time
    from quantadvise.catalog import flag_vocabulary
    from quantadvise.engines import vocabulary

    v = vocab()
    first, again = v.lookup(spelled, suggest=False), v.lookup(spelled, suggest=False)
    fresh = FlagVocabulary.model_validate(v.model_dump())._read(spelled, False)
    assert first is again and first == fresh
    if first.verdict == "unknown":
        assert v.lookup(spelled) is not first  # with suggestions: worked out afresh, not the remembered answer
    big = flag_vocabulary("vllm", v.version)
    for i in range(vocabulary._MEMO_SIZE + 10):  # bounded: past the size it starts afresh
        big.lookup(f"--q{i}", suggest=False)
    assert len(big._memo) <= vocabulary._MEMO_SIZE


def test_verdicts_and_engine_messages() -> None:
    v = vocab()
    # a typo argparse cannot read: its own message, as vLLM prints it before exiting with status 2
    miss = v.lookup("--gpu-memory-utilisation")
    assert miss.verdict == "unknown" and miss.matches[0] == "--gpu-memory-utilization"
    assert miss.engine_error("vllm serve", "--gpu-memory-utilisation") == \
        "vllm serve: error: unrecognized arguments: --gpu-memory-utilisation"
    # --max is a prefix of three options: argparse's "ambiguous option: --max could match ..."
    amb = v.lookup("--max")
    assert amb.verdict == "ambiguous"
    assert amb.matches == ("--max-model-len", "--max-num-batched-tokens", "--max-num-seqs")
    assert amb.engine_error("vllm serve", "--max") == ("vllm serve: error: ambiguous option: --max could match "
                                                       "--max-model-len, --max-num-batched-tokens, --max-num-seqs")
    # a unique prefix is the option; --no-X exists only for BooleanOptionalAction options
    assert v.lookup("--max-model").option == "--max-model-len"
    assert v.lookup("--no-enable-prefix-caching").verdict == "known"
    assert v.lookup("--no-enforce-eager").verdict == "unknown"
    # -q8 is -q with the value 8 (argparse: a registered two-character option with its value attached)
    assert (v.lookup("-q8").verdict, v.lookup("-q8").option) == ("known", "-q")
    assert v.lookup("--help").verdict == "known"


def test_enable_disable_pairs_and_abbreviations_off() -> None:
    # vLLM's EnableDisableAction (vllm/utils/argparse_utils.py:120-143) registers --disable-x beside --enable-x
    assert vocab(enable_disable=True).lookup("--disable-prefix-caching").verdict == "known"
    assert vocab(enable_disable=False).lookup("--disable-prefix-caching").verdict == "unknown"
    # allow_abbrev=False: a long prefix is unrecognized (argparse reads only exact long options)
    assert vocab(abbreviations=False).lookup("--max-model").verdict == "unknown"
    assert argparse_reads("--max-model", allow_abbrev=False) == "unrecognized"


def test_compare_releases_by_what_the_newer_does_with_each_old_option() -> None:
    from quantadvise.engines.vocabulary import compare

    old = vocab()
    new_opts = [o for o in OPTIONS if o["names"] != ["--enforce-eager"]]  # removed
    new_opts = [{**o, "kind": "flag"} if o["names"] == ["--trust-remote-code"] else o for o in new_opts]
    new_opts = [o for o in new_opts if o["names"] != ["--max-num-seqs"]]  # removed, and now a prefix of one option
    new_opts.append({"names": ["--max-num-seqs-per-step"], "kind": "value", "source": "a.py:20"})
    new = FlagVocabulary.model_validate({**old.model_dump(mode="json"), "version": "0.34.0", "options": new_opts})
    d = compare(old, new, "vLLM 0.33.0", "vLLM 0.34.0")
    assert (d.a_count, d.b_count) == (9, 8)
    assert d.added == ["--max-num-seqs-per-step"]
    # --enforce-eager: nothing starts with it any more -> argparse refuses it; --max-num-seqs is now a unique
    # prefix of --max-num-seqs-per-step, so argparse reads it as that option (a silent change of meaning)
    assert [(c.option, c.before, c.after) for c in d.removed] == [
        ("--enforce-eager", "flag", "refused"), ("--max-num-seqs", "value", "read as --max-num-seqs-per-step")]
    assert [(c.option, c.before, c.after) for c in d.kind_changed] == [("--trust-remote-code", "negatable", "flag")]


def test_engines_diff_lists_the_options_a_release_dropped() -> None:
    """vLLM 0.31.0 dropped --enable-mamba-fine-grained-prefix-cache (in data/flags/vllm-0.30.0.yaml, in no later
    file); SGLang 0.5.23 turned --enable-tf32-matmul into a BooleanOptionalAction
    (sglang/srt/arg_groups/fields/exec_.py:45-49 in 0.5.23; a store_true field in 0.5.22)."""
    from quantadvise.api.engines import engines_diff

    v = engines_diff("vllm@0.30.0", "vllm@0.33.0").options
    assert v is not None and [(c.option, c.after) for c in v.removed] == [
        ("--enable-mamba-fine-grained-prefix-cache", "refused")]
    assert "--grpc-port" in v.added  # new in 0.32.0
    s = engines_diff("sglang@0.5.22", "sglang@0.5.23").options
    assert s is not None and ("--enable-tf32-matmul", "flag", "negatable") in [
        (c.option, c.before, c.after) for c in s.kind_changed]
    assert engines_diff("vllm", "sglang").options is None  # two engines: their options are not one list


def test_the_readers_take_each_options_kind_from_the_release() -> None:
    """An option the flag table does not read is skipped with or without the next token as the release's
    parser does. --allow-credentials is a bool field of vLLM's frontend (vllm/entrypoints/common/cli_args.py:327
    ``allow_credentials: bool = False``, a BooleanOptionalAction through get_kwargs), so the model after it is
    the positional; --disable-access-log-for-endpoints takes a value (cli_args.py:321 ``str | None``, one
    comma-separated string, :413-416), so "/health,/metrics" is its value and not the model."""
    from quantadvise.artifacts.launch import parse_shell

    inv = parse_shell("vllm serve --allow-credentials meta-llama/Meta-Llama-3-8B-Instruct --max-model-len 8192\n",
                      "a.sh", options=option_list)[0]
    assert (inv.model, inv.max_model_len, inv.other["--allow-credentials"]) == (
        "meta-llama/Meta-Llama-3-8B-Instruct", 8192, True)
    inv = parse_shell("vllm serve --disable-access-log-for-endpoints /health,/metrics meta-llama/Meta-Llama-3-8B\n",
                      "a.sh", options=option_list)[0]
    assert inv.model == "meta-llama/Meta-Llama-3-8B"
    assert inv.other["--disable-access-log-for-endpoints"] == "/health,/metrics"
    # -O3 carries its value (vLLM rewrites it to --optimization-level 3, vllm/utils/argparse_utils.py:395)
    inv = parse_shell("vllm serve -O3 meta-llama/Meta-Llama-3-8B --max-num-seqs 8\n", "a.sh", options=option_list)[0]
    assert (inv.model, inv.max_num_seqs) == ("meta-llama/Meta-Llama-3-8B", 8)
