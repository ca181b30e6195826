"""The one engine-flag table: a command the deploy plan writes reads back, through the deployment-file
reader, to the fields it was written from."""

from __future__ import annotations

import pytest

from quantadvise.artifacts.launch import parse_shell
from quantadvise.catalog import option_list
from quantadvise.engines.flags import ENGINES, engine_command
from quantadvise.engines.invocation import EngineInvocation


def serving(engine: str, model: str, *, quantization, kv, batch, ctx, gpus, memory_utilization) -> str:
    """What the deploy plan writes for a recommendation (advisor/plan.py's deploy_plan)."""
    return engine_command(engine, model, quantization=quantization, kv_cache_dtype=kv, max_num_seqs=batch,
                          max_model_len=ctx, tensor_parallel_size=gpus, gpu_memory_utilization=memory_utilization)


def read_back(command: str) -> EngineInvocation:
    invs = parse_shell(command + "\n", "serve.sh", options=option_list)
    assert len(invs) == 1, invs
    return invs[0]


ROUND_TRIP = [
    # quantization, kv, batch, ctx, gpus, memory utilization
    ("awq_marlin", "fp8", 64, 8192, 2, 0.85),
    ("fp8", None, 1, 2048, 1, None),  # no fraction given: the engine's own default, left out
    ("fp8", None, 1, 2048, 1, 0.92),  # given (even at vLLM 0.33.0's own default): written
    (None, "fp8_e5m2", 256, 131072, 8, 0.95),
    ("compressed-tensors", None, 16, 32768, 4, 0.5),
]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize(("quantization", "kv", "batch", "ctx", "gpus", "mem"), ROUND_TRIP)
def test_a_written_command_reads_back_to_its_fields(engine, quantization, kv, batch, ctx, gpus, mem):
    cmd = serving(engine, "org/model", quantization=quantization, kv=kv, batch=batch, ctx=ctx, gpus=gpus,
                  memory_utilization=mem)
    inv = read_back(cmd)
    assert inv.engine == engine
    assert inv.model == "org/model"
    assert inv.quantization == quantization
    assert inv.kv_cache_dtype == kv
    assert inv.max_num_seqs == batch
    assert inv.max_model_len == ctx
    # TP 1 (the default) is left out; a fraction is written whenever one is given (the memory fraction has no
    # fixed default: each release has its own, which the plan assumes by leaving the flag out)
    assert inv.tensor_parallel_size == (gpus if gpus > 1 else None)
    assert inv.gpu_memory_utilization == mem
    assert not inv.other and not inv.warnings and not inv.unresolved_env


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_flag_in_the_table_round_trips(engine):
    """Each non-model field written by engine_command (names[0]) is read back, typed, by the reader."""
    values = {"quantization": "fp8", "kv_cache_dtype": "fp8", "dtype": "bfloat16", "max_num_seqs": 24,
              "max_model_len": 4096, "tensor_parallel_size": 2, "pipeline_parallel_size": 2,
              "gpu_memory_utilization": 0.8, "max_num_batched_tokens": 8192,
              "speculative_config": {"method": "eagle3", "num_speculative_tokens": 3}}
    fields = {f.field: values[f.field] for f in ENGINES[engine].flags if f.field != "model"}
    inv = read_back(engine_command(engine, "m", **fields))
    assert inv.model == "m"
    assert {k: getattr(inv, k) for k in fields} == fields
    assert set(inv.flag_lines) == {"model", *fields}


def test_every_spelling_names_one_flag():
    for table in ENGINES.values():
        names = [n for f in table.flags for n in f.names]
        assert len(names) == len(set(names)), table.engine
        assert [f.field for f in table.flags].count("model") == 1


def test_the_written_commands_are_pinned():
    kw = dict(quantization="awq_marlin", kv="fp8", batch=64, ctx=8192, gpus=2, memory_utilization=0.85)
    assert serving("vllm", "org/m", **kw) == (
        "vllm serve org/m --quantization awq_marlin --kv-cache-dtype fp8 --max-num-seqs 64 --max-model-len 8192 "
        "--tensor-parallel-size 2 --gpu-memory-utilization 0.85")
    assert serving("sglang", "org/m", **kw) == (
        "python -m sglang.launch_server --model-path org/m --quantization awq_marlin --kv-cache-dtype fp8 "
        "--max-running-requests 64 --context-length 8192 --tp-size 2 --mem-fraction-static 0.85")
    assert serving("vllm", "./my model", quantization=None, kv=None, batch=1, ctx=2048, gpus=1,
                   memory_utilization=None) == "vllm serve './my model' --max-num-seqs 1 --max-model-len 2048"
    assert serving("vllm", "m", quantization=None, kv=None, batch=1, ctx=2048, gpus=1, memory_utilization=0.9) == (
        "vllm serve m --max-num-seqs 1 --max-model-len 2048 --gpu-memory-utilization 0.9")
    assert engine_command("sglang", "m", max_num_seqs=8, tensor_parallel_size=2) == (
        "python -m sglang.launch_server --model-path m --max-running-requests 8 --tp-size 2")


def test_engine_command_refuses_what_it_has_no_flag_for():
    with pytest.raises(TypeError, match="max_num_batched_tokens"):
        engine_command("sglang", "m", max_num_batched_tokens=8192)
    with pytest.raises(ValueError, match="tgi"):
        engine_command("tgi", "m")


def test_engine_labels_are_the_release_files_display_names():
    # one spelling of each engine's name: the flag table's label is what every release file on record
    # calls the engine (display_name), so text written with or without engine data says the same
    from quantadvise import catalog
    from quantadvise.engines.flags import ENGINES, engine_label

    for name in ENGINES:
        for version in catalog.engine_versions(name):
            assert catalog.get_engine(name, version).display_name == engine_label(name)
    assert engine_label("trt") == "trt"


def test_the_layout_reader_reads_abbreviations_as_the_parser_does():
    # SGLang's parser (argparse, allow_abbrev) reads `--dp 8` as --dp-size 8, a unique prefix of that option in
    # 0.5.6.post2's option list; the layout is then attention DP 8 (the deprecated --dp-size with
    # --enable-dp-attention), not one tensor-parallel group of eight
    from quantadvise import catalog
    from quantadvise.engines.flags import canonical_options, read_layout

    vocab = catalog.flag_vocabulary("sglang", "0.5.6.post2")
    other = {"--enable-dp-attention": True, "--dp": "8"}
    assert canonical_options(other, vocab) == {"--enable-dp-attention": True, "--dp-size": "8"}
    assert read_layout("sglang", 8, 1, other).attention_dp == 1  # without the option list: the literal name only
    assert read_layout("sglang", 8, 1, other, vocab).attention_dp == 8
