"""``size`` of a re-quantization of a model that ships quantized keeps the layers the shipped checkpoint
keeps 16-bit — the same layer policy ``recommend`` sizes, prices and writes the recipe from (issue 11,
"recipes from the same layer policy as the sizing"; one number for one quantity across commands)."""

from __future__ import annotations

import quantadvise as qa


def test_gpt_oss_w4a16_g64_is_sized_as_recommend_sizes_it() -> None:
    # gpt-oss-120b's quantization_config (modules_to_not_convert) keeps attention, router, embedding and
    # lm_head in bf16. int4 with a bf16 scale per 64 is 4 + 16/64 = 4.25 bits, as MXFP4's 4 + 8/32, so
    # the experts' 36 x 128 x 3 x 2880 x 2880 = 114,661,785,600 weights take 60,914,073,600 B and the
    # 2,167,371,072 bf16 params 4,334,742,144 B: 65,248,815,744 B, plus compressed-tensors' 16-B
    # weight_shape record per packed matrix (36 x 128 x 3 x 16 = 221,184 B).
    r = qa.size("openai/gpt-oss-120b", "w4a16", group=64)
    assert r.total_bytes == 65_248_815_744 + 36 * 128 * 3 * 16 == 65_249_036_928
    assert "attention kept 16-bit" in r.scheme.description
    rec = qa.recommend(model="openai/gpt-oss-120b", gpu="h100", batch=16, ctx=4096)
    w4 = next(a for a in rec.alternatives if a.scheme == "w4a16-g64")
    assert w4.weights_bytes == r.total_bytes


def test_a_model_that_ships_16_bit_is_sized_as_the_preset_says() -> None:
    # Llama-3-8B ships bf16: nothing to keep, the chapter's 5,727,854,592 B at 4-bit g128
    assert qa.size("meta-llama/Llama-3-8B", bits=4, group=128).total_bytes == 5_727_854_592
