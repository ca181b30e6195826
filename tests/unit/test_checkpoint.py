"""Checkpoint parsing: every real quantization_config fixture classified; sizes against published
byte totals; malformed input refused in one line; mutated configs never crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quantadvise import catalog
from quantadvise.checkpoint.parse import parse_checkpoint, parse_quantization_config
from quantadvise.checkpoint.placement import disk_size
from quantadvise.engines.resolution import resolve
from quantadvise.errors import ConfigError, QuantAdviseError
from quantadvise.model.parse import parse_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
ALL = sorted(FIXTURES.glob("*.json"))
SIDE = {"quantize_config": "quantize_config.json", "hf_quant_config": "hf_quant_config.json",
        "quantization_config_json": "quantization_config.json", "quant_config_json": "quant_config.json"}
# the fixture author's family names -> quantadvise's
FAMILY = {"unknown/mlx": "mlx", "unknown/exl2": "unknown"}


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def sidecars(d: dict) -> dict:
    return {fn: d[k] for k, fn in SIDE.items() if k in d}


def quant_text_on_file(d: dict) -> bool:
    cfg = d.get("config") or {}
    return bool(sidecars(d)) or any(k in cfg for k in ("quantization_config", "compression_config"))


def test_enough_real_fixtures_cover_every_method():
    fams = set()
    for p in ALL:
        d = load(p)
        assert d.get("source") and d.get("checkpoint"), p.name
        if quant_text_on_file(d):
            fams.add(parse_checkpoint(d.get("config") or {}, sidecars(d)).family)
    assert sum(quant_text_on_file(load(p)) for p in ALL) >= 25
    # the list: awq, gptq, fp8, compressed-tensors, modelopt, mxfp4, bitsandbytes, gguf, auto-round, quark
    assert {"awq", "gptq", "fp8", "compressed-tensors", "modelopt", "mxfp4", "bitsandbytes", "gguf", "auto-round",
            "quark"} <= fams


def _bits_of(g) -> int | None:
    return g.weights.num_bits if g.weights else None


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_fixture_is_classified(path):
    d = load(path)
    e = d["expected"]
    if not quant_text_on_file(d):
        # The config text was not readable (or, for GGUF, carries none): the engines see an
        # unquantized config.json, and so does the parser.
        assert parse_checkpoint(d.get("config") or {}, {}) is None
        return
    ck = parse_checkpoint(d.get("config") or {}, sidecars(d))
    assert ck is not None
    assert ck.family == FAMILY.get(e["family"], e["family"])
    if ck.family in ("unknown", "gguf"):
        assert not ck.groups or all(not g.quantizes_weights for g in ck.groups)
        return
    if e.get("groups") is not None:  # compressed-tensors: group by group
        assert len(ck.groups) == len(e["groups"])
        for g, eg in zip(ck.groups, e["groups"], strict=True):
            assert g.name == eg["name"] and list(g.targets) == eg["targets"]
            assert g.weights.num_bits == eg["weight_bits"] and g.weights.type == eg["weight_type"]
            if "weight_strategy" in eg:
                assert g.weights.strategy == eg["weight_strategy"]
            if eg.get("group_size") is not None:
                assert g.weights.group_size == eg["group_size"]
            if "symmetric" in eg:
                assert g.weights.symmetric == eg["symmetric"]
            if eg.get("format"):
                assert g.format == eg["format"]
            _check_acts(g.input_activations, eg.get("activations"))
    else:
        g = next(x for x in ck.groups if x.scope != "patterns") if len(ck.groups) > 1 else ck.groups[0]
        if e.get("weight_bits") is not None:
            assert _bits_of(g) == e["weight_bits"]
        if e.get("group_size") is not None and ck.family != "bitsandbytes":
            want = e["group_size"]
            assert (g.weights.group_size if want != -1 else -1 if g.weights.strategy == "channel" else None) == want
        if e.get("symmetric") is not None:
            assert g.weights.symmetric == e["symmetric"]
        if isinstance(e.get("activations"), dict) or e.get("activations") is None:
            _check_acts(g.input_activations, e.get("activations"))
        if e.get("weight_block_size"):
            assert list(ck.weight_block_size) == e["weight_block_size"]
        if "desc_act" in e and e["desc_act"] is not None:
            assert ck.details["desc_act"] == e["desc_act"]
        if e.get("checkpoint_format"):
            assert ck.format == e["checkpoint_format"]
        if "double_quant" in e:
            assert ck.details["bnb_4bit_use_double_quant"] == e["double_quant"]
        if e.get("weight_format") in ("nf4", "fp4"):
            assert g.weights.element_format == {"nf4": "nf4", "fp4": "fp4_e2m1"}[e["weight_format"]]
        if e.get("quant_algo"):
            assert ck.quant_algo == e["quant_algo"]
        if e.get("awq_version"):
            assert ck.details["version"].lower() == e["awq_version"]
    # the KV cache the checkpoint carries
    kv = e.get("kv_cache")
    if isinstance(kv, dict):
        assert ck.kv_cache_quant is not None and ck.kv_cache_quant.bits == kv["bits"]
    elif kv is None:
        assert ck.kv_cache_quant is None
    # the layers the config leaves unquantized are named in its ignore list
    sparsity_ignore = (ck.sparsity or {}).get("ignore") or []
    for name in e.get("modules_not_quantized") or []:
        assert name in ck.ignore or name in sparsity_ignore


def _check_acts(a, ea) -> None:
    if ea is None:
        assert a is None
        return
    assert a is not None
    assert a.num_bits == ea["bits"]
    if "type" in ea:
        assert a.type == ea["type"]
    if "dynamic" in ea:
        # compressed-tensors spells NVFP4's per-16 activation scales (under a static global scale)
        # dynamic 'local'; producers that only say dynamic mean the same thing
        assert a.dynamic == ea["dynamic"] or (ea["dynamic"] is True and a.dynamic == "local")
    if ea.get("strategy") in ("tensor", "token", "group", "tensor_group"):
        assert a.strategy == ea["strategy"]
    if "symmetric" in ea:
        assert a.symmetric == ea["symmetric"]


# ---------------------------------------------------------------------------------------------
# Size on disk against published byte totals
# ---------------------------------------------------------------------------------------------


def _synthesized(d: dict) -> dict:
    """For the two size fixtures whose config text was not published, the sidecar their notes
    describe (the AutoGPTQ quantize_config.json / the llm-compressor W4A16 recipe)."""
    e = d["expected"]
    if e["family"] == "gptq":
        return {"quantize_config.json": {"bits": e["weight_bits"], "group_size": e["group_size"],
                                         "sym": e["symmetric"] if e["symmetric"] is not None else True,
                                         "desc_act": bool(e.get("desc_act"))}}
    g = e["groups"][0]
    return {"quantization_config.json": {
        "quant_method": "compressed-tensors", "format": g["format"], "ignore": e["modules_not_quantized"],
        "config_groups": {g["name"]: {"targets": g["targets"], "weights": {
            "num_bits": g["weight_bits"], "type": g["weight_type"], "strategy": g["weight_strategy"],
            "group_size": g["group_size"], "symmetric": g["symmetric"]}}}}}


SIZED = [p for p in ALL if isinstance((load(p).get("published_size") or {}).get("total_size_bytes"), int)
         and load(p)["published_size"]["kind"] in ("index_total_size", "file_bytes_sum") and load(p).get("config")]


def test_there_are_published_sizes_to_check():
    assert len(SIZED) >= 6


@pytest.mark.parametrize("path", SIZED, ids=[p.stem for p in SIZED])
def test_predicted_size_matches_published_bytes(path):
    d = load(path)
    cfg = d["config"]
    side = sidecars(d) or _synthesized(d)
    ck = parse_checkpoint(cfg, side)
    arch = parse_config(cfg)
    stored = "fp16" if (cfg.get("torch_dtype") in ("float16", "float32")) else "bf16"
    ds = disk_size(arch, ck, catalog.layouts(), stored_dtype=stored, tied_lm_head_stored=ck.tied_lm_head_stored)
    pub = d["published_size"]["total_size_bytes"]
    assert abs(ds.total_bytes - pub) / pub < 0.005
    # file_bytes_sum includes the safetensors JSON header, so the tensors never exceed it
    if d["published_size"]["kind"] == "file_bytes_sum":
        assert ds.total_bytes <= pub


def test_w4a16_pack_quantized_llama31_8b_to_the_byte():
    # Llama-3.1-8B: h 4096, 32 layers, 8 KV heads x 128, intermediate 14336, vocab 128256, untied.
    # Per layer the linear N*K sum is 2*4096*4096 (q,o) + 2*1024*4096 (k,v) + 3*14336*4096 (MLP)
    # = 218,103,808. compressed-tensors pack-quantized stores int32 words [N, K/8] (N*K/2 bytes),
    # bf16 scales [N, K/128] (N*K/64 bytes) and an int64 [2] shape (16 bytes) per matrix:
    # 109,051,904 + 3,407,872 + 7*16 = 112,459,888 per layer, x 32 = 3,598,716,416.
    # embed + lm_head bf16: 2 * 128256*4096 * 2 = 2,101,346,304; norms (2*32+1)*4096*2 = 532,480.
    # Total 5,700,595,200 = the index total_size reported in llm-compressor#1215.
    d = load(FIXTURES / "llm-compressor-issue-1215-llama-3.1-8b-instruct-w4a16-ct.json")
    ck = parse_checkpoint(d["config"], _synthesized(d))
    ds = disk_size(parse_config(d["config"]), ck, catalog.layouts())
    assert ds.total_bytes == 3_598_716_416 + 2_101_346_304 + 532_480 == 5_700_595_200
    # packed int32 words are not parameters: the quantized params are the 32 * 218,103,808 weights
    assert ds.quantized_params == 32 * 218_103_808


def test_autogptq_stores_a_tied_lm_head_twice():
    # Llama-3.2-1B ties embed and lm_head; AutoGPTQ's file holds lm_head.weight again:
    # 128256 * 2048 params * 2 bytes = 525,336,576 extra bytes.
    d = load(FIXTURES / "almheiri-llama-3.2-1b-instruct-gptq-int4.json")
    arch = parse_config(d["config"])
    ck = parse_checkpoint(d["config"], _synthesized(d))
    stored = disk_size(arch, ck, catalog.layouts(), stored_dtype="fp16", tied_lm_head_stored=True)
    once = disk_size(arch, ck, catalog.layouts(), stored_dtype="fp16", tied_lm_head_stored=False)
    assert stored.total_bytes - once.total_bytes == 128256 * 2048 * 2


def test_mxfp4_quantizes_only_the_experts():
    d = load(FIXTURES / "openai-gpt-oss-120b-mxfp4.json")
    arch = parse_config(d["config"])
    ck = parse_checkpoint(d["config"])
    ds = disk_size(arch, ck, catalog.layouts())
    assert [c.component for c in ds.components if c.quantized] == ["experts"]
    experts = next(c for c in ds.components if c.component == "experts")
    # e2m1 (4 bits) + one e8m0 byte per 32 weights = 4.25 bits per expert weight
    assert experts.bits_per_param == pytest.approx(4.25)


# ---------------------------------------------------------------------------------------------
# Malformed input: one line naming the field, never a traceback
# ---------------------------------------------------------------------------------------------

W4 = {"quant_method": "compressed-tensors", "format": "pack-quantized",
      "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": True,
                                                                       "strategy": "group", "group_size": 128}}}}


@pytest.mark.parametrize(
    ("qc", "field"),
    [
        ({"bits": 4, "group_size": 128, "desc_act": False}, "quant_method"),  # missing quant_method
        ({"quant_method": "gptq", "bits": "4", "group_size": 128}, "bits"),  # wrong type
        ({"quant_method": "awq", "w_bit": 4, "q_group_size": 0}, "q_group_size"),  # group_size 0
        ({**W4, "config_groups": {"group_0": {**W4["config_groups"]["group_0"],
                                              "weights": {"num_bits": 4, "strategy": "rowwise", "group_size": 128}}}},
         "strategy"),  # unknown strategy
        ({**W4, "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "group_size": 0}}}},
         "group_size"),
        # compressed-tensors QuantizationScheme.targets is list[str] (quant_scheme.py:39); both engines iterate it
        ({**W4, "config_groups": {"group_0": {**W4["config_groups"]["group_0"], "targets": "Linear"}}}, "targets"),
        # both engines: QuantizationArgs.model_validate(quant_config.get("weights")) (vLLM compressed_tensors.py:333-335,
        # SGLang compressed_tensors.py:367-369) raises on null or a missing field
        ({**W4, "config_groups": {"group_0": {"targets": ["Linear"], "weights": None}}}, "weights"),
        ({**W4, "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": {"num_bits": 8}}}},
         "weights"),
        ({**W4, "config_groups": {"group_0": {"targets": [], "weights": {"num_bits": 4}}}}, "targets"),
        ({"quant_method": "fp8", "weight_block_size": [128, 128, 1]}, "weight_block_size"),
        ({"quant_method": "fp8", "activation_scheme": "sometimes"}, "activation_scheme"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": True}, "load_in_4bit"),
        ({"quant_method": 4}, "quant_method"),
        ([1, 2, 3], "quantization_config"),  # a non-object
    ],
)
def test_malformed_config_is_one_line_naming_the_field(qc, field):
    with pytest.raises(ConfigError) as ei:
        parse_quantization_config(qc)
    text = str(ei.value)
    assert "\n" not in text and field in text


# ---------------------------------------------------------------------------------------------
# Property: mutated configs give a result or a QuantAdviseError, nothing else
# ---------------------------------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-300, max_value=300) | st.floats(allow_nan=False, width=32)
    | st.sampled_from(["", "int", "float", "group", "tensor", "channel", "token", "block", "tensor_group", "local",
                       "Linear", "re:.*", "lm_head", "FP8", "NVFP4", "gemm", "nf4", "static", "dynamic", "e4m3"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
_SEEDS = [
    load(p) for p in ALL if quant_text_on_file(load(p))
]


def _mutate(draw, obj, depth=0):
    if isinstance(obj, dict) and obj:
        obj = dict(obj)
        key = draw(st.sampled_from(sorted(obj, key=str)))
        op = draw(st.sampled_from(["drop", "replace", "recurse", "recurse"]))
        if op == "drop":
            del obj[key]
        elif op == "replace" or depth > 4:
            obj[key] = draw(_json)
        else:
            obj[key] = _mutate(draw, obj[key], depth + 1)
        return obj
    if isinstance(obj, list) and obj:
        i = draw(st.integers(0, len(obj) - 1))
        obj = list(obj)
        obj[i] = _mutate(draw, obj[i], depth + 1) if draw(st.booleans()) else draw(_json)
        return obj
    return draw(_json)


@st.composite
def mutated(draw):
    d = draw(st.sampled_from(_SEEDS))
    cfg = d.get("config") or {}
    side = sidecars(d)
    for _ in range(draw(st.integers(1, 3))):
        if side and draw(st.booleans()):
            name = draw(st.sampled_from(sorted(side)))
            side = {**side, name: _mutate(draw, side[name])}
        else:
            cfg = _mutate(draw, cfg)
    return cfg, side


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_configs_never_raise_anything_else(case):
    cfg, side = case
    engines = [catalog.get_engine("vllm"), catalog.get_engine("sglang")]
    try:
        ck = parse_checkpoint(cfg, side)
        for e in engines:
            resolve(e, ck, capability=80, quantization=None)
        if ck is not None and isinstance(cfg, dict) and "model_type" in cfg:
            disk_size(parse_config(cfg), ck, catalog.layouts())
    except QuantAdviseError as exc:
        assert "\n" not in str(exc)


def test_disk_size_agrees_with_size_model_for_a_uniform_checkpoint():
    # A compressed-tensors W4A16 checkpoint that quantizes every decoder linear and ignores lm_head
    # is the w4a16 preset (int4 g128 symmetric, ct-pack-quantized layout) under the default policy:
    # the placement path and sizing.size_model must give the same bytes.
    from quantadvise.memory.sizing import size_model

    cfg = catalog.bundled_config(catalog.find_bundled_model("meta-llama/Meta-Llama-3-8B"))
    ck = parse_quantization_config({**W4, "ignore": ["lm_head"]})
    arch = parse_config(cfg)
    w4a16 = size_model(arch, catalog.get_scheme("w4a16")).total_bytes
    assert disk_size(arch, ck, catalog.layouts()).total_bytes == w4a16
    # without the ignore entry the class target "Linear" takes lm_head too (as vLLM matches it)
    assert disk_size(arch, parse_quantization_config(W4), catalog.layouts()).total_bytes < size_model(
        arch, catalog.get_scheme("w4a16")).total_bytes
