"""The six-axis scheme model: group shapes, effective bits, validation reasons, presets."""

from __future__ import annotations

import pytest

from quantadvise import catalog
from quantadvise.errors import QuantAdviseError, SchemeError, UnknownNameError
from quantadvise.scheme.axes import GroupShape, Scheme, TensorQuant, build_scheme, custom_weight_scheme

# --- GroupShape -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, rows, cols, expected",
    [
        ("per-tensor", 4096, 14336, 1),  # one scale for the whole matrix
        ("per-channel", 4096, 14336, 4096),  # one per output channel (row of the [N, K] weight)
        ("per-token", 8, 4096, 8),  # one per token row of the [M, K] activation
        ("g128", 4096, 14336, 4096 * 14336 // 128),  # 4096 rows x 112 groups
        ("128x128", 576, 7168, 5 * 56),  # ceil(576/128)=5 partial row-blocks x 7168/128=56
        ([1, 16], 2880, 2880, 2880 * 180),  # 2880/16 = 180 groups per row
    ],
)
def test_group_shape_counts(spec, rows, cols, expected):
    assert GroupShape.model_validate(spec).count(rows, cols) == expected


def test_group_shape_kinds_follow_role():
    g = GroupShape.model_validate("per-channel")
    assert g.kind("weight") == "per-channel"
    assert g.kind("activation") == "per-token"  # same shape, other operand (the chapter's symmetry)
    assert GroupShape.model_validate("g128").kind() == "per-group 128"
    assert GroupShape.model_validate("128x128").kind() == "block 128x128"


@pytest.mark.parametrize("bad", ["per-block", [0, 128], [1, -2], [1, 2, 3]])
def test_group_shape_rejects_nonsense(bad):
    with pytest.raises(ValueError):
        GroupShape.model_validate(bad)


# --- effective bits ---------------------------------------------------------------------------


def test_chapter_4156_bits():
    # The chapter: 4-bit, g=128, fp16 scale and 4-bit zero-point: 4 + 16/128 + 4/128 = 4.15625.
    w = TensorQuant(format="uint4", scale={"format": "fp16", "group": "g128"}, symmetric=False, zero_format="uint4")
    assert w.effective_bits(4096, 4096) == pytest.approx(4 + 20 / 128)
    assert round(w.effective_bits(4096, 4096), 3) == 4.156


def test_symmetric_drops_zero_point():
    w = TensorQuant(format="int4", scale={"format": "fp16", "group": "g128"})
    assert w.effective_bits(4096, 4096) == pytest.approx(4 + 16 / 128)  # 4.125


def test_per_channel_scale_counted_exactly():
    # int8 per-channel bf16 scale on 4096x14336: 8 + 16*4096/(4096*14336) = 8 + 16/14336
    w = TensorQuant(format="int8", scale={"format": "bf16", "group": "per-channel"})
    assert w.effective_bits(4096, 14336) == pytest.approx(8 + 16 / 14336)


def test_block_scale_counted_exactly_with_partial_tiles():
    # fp8 128x128 fp32 scales on DeepSeek kv_a_proj 576x7168: 5*56 scales of 32 bits.
    w = TensorQuant(format="fp8_e4m3", scale={"format": "fp32", "group": "128x128"})
    assert w.stored_bits(576, 7168) == 576 * 7168 * 8 + 5 * 56 * 32


def test_nvfp4_two_level_scale():
    # NVFP4: 4 + 8/16 per element + one fp32 per tensor: 4.5 + 32/(N*K).
    nv = catalog.get_scheme("nvfp4").weight
    assert nv.effective_bits(4096, 4096) == pytest.approx(4.5 + 32 / (4096 * 4096))


def test_mxfp4_has_no_second_level():
    mx = catalog.get_scheme("mxfp4").weight
    assert mx.scale2 is None
    assert mx.effective_bits(4096, 4096) == pytest.approx(4 + 8 / 32)  # 4.25


# --- validation reasons ------------------------------------------------------------------------


def _w(fmt="int8", group="per-channel", **kw):
    return {"format": fmt, "scale": {"format": "fp32", "group": group}, **kw}


def _a(fmt="int8", dynamic=True, group="per-token"):
    return {"format": fmt, "scale": {"format": "fp32", "dynamic": dynamic, "group": group}}


@pytest.mark.parametrize(
    "data, reason",
    [
        (
            {"id": "x", "weight": _w("fp8_e4m3", "128x128"), "activation": _a("fp8_e4m3", False, "per-tensor")},
            "block-quantized weights pair only with dynamic",
        ),
        (
            {"id": "x", "weight": {"format": "int8", "scale": {"format": "fp32", "dynamic": True}}},
            "dynamic weight scale is meaningless",
        ),
        (
            {"id": "x", "weight": _w("uint8", symmetric=False, zero_format="uint8"), "activation": _a()},
            "W8A8 needs symmetric weights",
        ),
        (
            {
                "id": "x",
                "weight": {
                    "format": "fp4_e2m1",
                    "scale": {"format": "e8m0", "group": "g32"},
                    "scale2": {"format": "fp32"},
                },
            },
            "second-level scale only exists",
        ),
        ({"id": "x", "weight": _w(), "activation": _a(), "accumulation": "fp32"}, "accumulate in int32"),
        (
            {"id": "x", "weight": _w("fp8_e4m3"), "activation": _a("fp8_e4m3"), "accumulation": "int32"},
            "accumulate in fp32",
        ),
        ({"id": "x", "activation": _a()}, "activation-only quantization"),
        ({"id": "x", "weight": _w("int8"), "activation": _a("int4")}, "wider than activations"),
        ({"id": "x", "weight": {"format": "int4"}}, "needs a scale"),
        ({"id": "x", "weight": _w(symmetric=False)}, "needs zero_format"),
        ({"id": "x", "weight": _w(), "bogus": 1}, "unknown key"),
    ],
)
def test_invalid_combinations_give_the_reason(data, reason):
    with pytest.raises(SchemeError) as exc:
        build_scheme(data)
    assert reason in str(exc.value)
    assert "\n" not in str(exc.value)


def test_valid_w8a8_int_accumulates_in_int32_by_default():
    s = catalog.get_scheme("w8a8-int8")
    assert s.math_format == "int8" and s.accumulation_format == "int32"


def test_group_that_does_not_divide_k_is_rejected_by_sizing():
    import quantadvise as api
    from quantadvise.errors import InputError

    with pytest.raises(InputError, match="does not divide the reduction dimension K=4096"):
        api.size("meta-llama/Llama-3-8B", bits=4, group=100)


# --- presets ----------------------------------------------------------------------------------

REQUIRED_PRESETS = [
    "bf16", "w8a16", "w4a16", "w4a16-asym", "awq", "gptq", "w8a8-int8", "fp8-tensor", "fp8-dynamic",
    "fp8-block", "nvfp4", "nvfp4-a16", "mxfp4", "mxfp8", "w4a8-fp8",
]
REQUIRED_KV = ["kv-fp8", "kv-fp8-head", "kv-int8-token-head", "kv-int4-token-head", "kv-nvfp4"]


def test_required_presets_exist():
    assert set(REQUIRED_PRESETS) <= set(catalog.scheme_ids())
    assert set(REQUIRED_KV) <= set(catalog.kv_ids())


@pytest.mark.parametrize(
    "alias, preset",
    [
        ("FP8_DYNAMIC", "fp8-dynamic"),
        ("W4A16", "w4a16"),
        ("NVFP4", "nvfp4"),
        ("w8a8-fp8", "fp8-dynamic"),
        ("int4", "w4a16"),
        ("W8A8", "w8a8-int8"),
        ("fp8_per_block", "fp8-block"),
    ],
)
def test_aliases_resolve(alias, preset):
    assert catalog.get_scheme(alias).id == preset


def test_unknown_preset_suggests():
    with pytest.raises(UnknownNameError) as exc:
        catalog.get_scheme("w4a61")
    assert "did you mean" in str(exc.value)


def test_preset_axes_match_their_definitions():
    fb = catalog.get_scheme("fp8-block")
    assert fb.weight.scale.group.is_block and fb.activation.scale.dynamic
    assert fb.activation.scale.group.col == 128  # 1x128 activation group pairs with 128x128 blocks
    w4 = catalog.get_scheme("w4a8-fp8")
    assert w4.weight.format == "int4" and w4.math_format == "fp8"
    nv = catalog.get_scheme("nvfp4")
    assert nv.math_format == "fp4" and nv.weight.scale2.format == "fp32"
    assert catalog.get_scheme("nvfp4-a16").weight_only
    assert catalog.get_scheme("awq").weight.zero_format == "uint4"


def test_group_override_and_per_channel():
    s = catalog.get_scheme("w4a16").with_weight_group(-1)
    assert s.weight.scale.group.is_per_row
    s2 = catalog.get_scheme("w4a16").with_weight_group(64)
    assert s2.weight.scale.group.col == 64
    with pytest.raises(QuantAdviseError):
        catalog.get_scheme("bf16").with_weight_group(64)


@pytest.mark.parametrize("bits", [0, 1, 9, 17, -4])
def test_custom_bits_out_of_range(bits):
    with pytest.raises(SchemeError, match="--bits must be between 2 and 8"):
        custom_weight_scheme(bits)


def test_custom_bits_16_is_unquantized():
    assert not custom_weight_scheme(16).quantizes_weights


def test_scheme_copies_are_revalidated():
    s = catalog.get_scheme("w4a16")
    with pytest.raises(QuantAdviseError):
        s.with_weight_group(0)
    assert isinstance(s.with_policy(quantize_lm_head=True), Scheme)
