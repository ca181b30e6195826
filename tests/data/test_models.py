"""Every bundled model's parameter total, derived by hand here, equals the inventory's count and the
published figure (data/models.yaml cites each; tests/fixtures/param_derivations.md lists every
tensor). Notation: V vocab, H hidden, L layers, I intermediate, nh/nkv heads, hd head_dim."""

from __future__ import annotations

import pytest

import quantadvise as api
from quantadvise import catalog
from quantadvise.model.inventory import inventory_of


def llama_like(V, H, L, I, nh, nkv, hd, tied=False, qkv_bias=False, qk_norm=False, norms=2):
    attn = H * nh * hd + 2 * H * nkv * hd + nh * hd * H  # q, k, v, o
    if qkv_bias:
        attn += nh * hd + 2 * nkv * hd
    if qk_norm:
        attn += 2 * hd
    mlp = 3 * H * I  # gate, up, down
    per_layer = attn + mlp + norms * H
    return V * H * (1 if tied else 2) + L * per_layer + H  # embed (+ lm_head) + layers + final norm


HAND = {
    # Llama-3-8B: the chapter's 8.030e9 and index total_size 16,060,522,496 B / 2.
    "meta-llama/Meta-Llama-3-8B": llama_like(128256, 4096, 32, 14336, 32, 8, 128),
    "meta-llama/Meta-Llama-3-70B": llama_like(128256, 8192, 80, 28672, 64, 8, 128),
    "meta-llama/Llama-3.1-8B": llama_like(128256, 4096, 32, 14336, 32, 8, 128),
    "meta-llama/Llama-3.1-70B": llama_like(128256, 8192, 80, 28672, 64, 8, 128),
    # Llama-3.2-1B ties lm_head to the embedding: counted once.
    "meta-llama/Llama-3.2-1B": llama_like(128256, 2048, 16, 8192, 32, 8, 64, tied=True),
    "mistralai/Mistral-7B-v0.3": llama_like(32768, 4096, 32, 14336, 32, 8, 128),
    # Mixtral: per layer attention + router 8xH + 8 experts x 3 x H x I, 2 norms.
    "mistralai/Mixtral-8x7B-v0.1": 32000 * 4096 * 2
    + 32 * ((4096 * 4096 * 2 + 2 * 4096 * 1024) + 8 * 4096 + 8 * 3 * 4096 * 14336 + 2 * 4096)
    + 4096,
    "Qwen/Qwen2.5-7B": llama_like(152064, 3584, 28, 18944, 28, 4, 128, qkv_bias=True),
    "Qwen/Qwen2.5-32B": llama_like(152064, 5120, 64, 27648, 40, 8, 128, qkv_bias=True),
    # the instruct releases: the same tensors (their config.json differs in max_position_embeddings
    # and eos_token_id only, data/models.yaml config_overrides)
    "Qwen/Qwen2.5-7B-Instruct": llama_like(152064, 3584, 28, 18944, 28, 4, 128, qkv_bias=True),
    "Qwen/Qwen2.5-32B-Instruct": llama_like(152064, 5120, 64, 27648, 40, 8, 128, qkv_bias=True),
    "Qwen/Qwen3-8B": llama_like(151936, 4096, 36, 12288, 32, 8, 128, qk_norm=True),
    # Qwen3-30B-A3B: 48 MoE layers, 128 experts of I=768, router 128xH, q/k norms, head_dim 128.
    "Qwen/Qwen3-30B-A3B": 151936 * 2048 * 2
    + 48 * ((2048 * 32 * 128 * 2 + 2 * 2048 * 4 * 128) + 2 * 128 + 128 * 2048 + 128 * 3 * 2048 * 768 + 2 * 2048)
    + 2048,
    # gemma-2-9b: tied, head_dim 256, 4 norms per layer.
    "google/gemma-2-9b": llama_like(256000, 3584, 42, 14336, 16, 8, 256, tied=True, norms=4),
    # Phi-3-mini: fused qkv (3 x 3072 x 3072) and gate_up (2 x 8192 x 3072), MHA: same totals as unfused.
    "microsoft/Phi-3-mini-4k-instruct": llama_like(32064, 3072, 32, 8192, 32, 32, 96),
}


def gpt_oss(L, E):
    # H=2880, 64 heads x 64, 8 KV heads, V=201088; q/k/v/o with biases, a sink per head; router ExH + bias E;
    # experts: gate_up 2x2880x2880 + bias 2x2880, down 2880x2880 + bias 2880.
    H, nh, nkv, hd, V = 2880, 64, 8, 64, 201088
    attn = H * nh * hd + 2 * H * nkv * hd + nh * hd * H + (nh * hd + 2 * nkv * hd) + H + nh
    experts = E * (2 * H * H + 2 * H + H * H + H)
    per_layer = attn + E * H + E + experts + 2 * H
    return 2 * V * H + L * per_layer + H


HAND["openai/gpt-oss-20b"] = gpt_oss(24, 32)
HAND["openai/gpt-oss-120b"] = gpt_oss(36, 128)


def deepseek_v3_layer(moe: bool):
    H, nh = 7168, 128
    mla = (
        1536 * H + 1536  # q_a_proj + q_a_layernorm
        + nh * 192 * 1536  # q_b_proj: heads x (128 nope + 64 rope)
        + (512 + 64) * H + 512  # kv_a_proj_with_mqa + kv_a_layernorm
        + nh * (128 + 128) * 512  # kv_b_proj
        + H * nh * 128  # o_proj
    )
    if moe:
        # router 256xH + e_score_correction_bias 256; 256 routed + 1 shared expert of I=2048
        ffn = 256 * H + 256 + 257 * 3 * H * 2048
    else:
        ffn = 3 * H * 18432
    return mla + ffn + 2 * H


# DeepSeek-V3 main model: embed + 3 dense + 58 MoE layers + norm + lm_head = 671,026,419,200 ("671B").
DSV3_MAIN = 2 * 129280 * 7168 + 3 * deepseek_v3_layer(False) + 58 * deepseek_v3_layer(True) + 7168
# MTP module: its own embedding and head copies, enorm/hnorm/shared_head.norm, eh_proj 2HxH, one MoE layer.
DSV3_MTP = 2 * 129280 * 7168 + 3 * 7168 + 2 * 7168 * 7168 + deepseek_v3_layer(True)


def test_hand_derivations_are_the_published_numbers():
    assert DSV3_MAIN == 671_026_419_200
    # Published (Hub safetensors total) 684,531,386,000 = main + MTP + 41,540,496 fp8 block scales
    # (F32 weight_scale_inv tensors are stored values, counted by the Hub).
    assert DSV3_MAIN + DSV3_MTP + 41_540_496 == 684_531_386_000


@pytest.mark.parametrize("model_id", sorted(HAND))
def test_bundled_model_params(model_id):
    arch, info = api.load_model(model_id)
    assert inventory_of(arch).total_params() == HAND[model_id]
    assert info.published_params == HAND[model_id]


def test_deepseek_v3_with_and_without_mtp():
    arch, info = api.load_model("deepseek-ai/DeepSeek-V3")
    inv = inventory_of(arch)
    assert inv.total_params() == DSV3_MAIN
    assert inv.total_params(include_mtp=True) == DSV3_MAIN + DSV3_MTP
    # The fp8 128x128 checkpoint's scale count, from our group-shape arithmetic over the layers the
    # checkpoint quantizes (everything linear but embeddings, heads, routers and eh_proj):
    from quantadvise.scheme.axes import GroupShape

    block = GroupShape(row=128, col=128)
    scales = sum(
        block.count(g.n, g.k) * g.count
        for g in inv.groups
        if g.linear and g.component not in ("embedding", "lm_head", "router") and g.role != "eh_proj"
    )
    assert scales == 41_540_496
    assert info.published_params == DSV3_MAIN + DSV3_MTP + scales


def test_every_bundled_model_is_covered():
    assert set(HAND) | {"deepseek-ai/DeepSeek-V3"} == set(catalog.bundled_model_ids())
    assert len(catalog.bundled_model_ids()) >= 12


@pytest.mark.parametrize(
    "alias, canonical",
    [
        ("meta-llama/Llama-3-8B", "meta-llama/Meta-Llama-3-8B"),
        ("LLAMA-3-8B", "meta-llama/Meta-Llama-3-8B"),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B"),
    ],
)
def test_aliases(alias, canonical):
    _, info = api.load_model(alias)
    assert info.id == canonical


def test_architecture_kinds():
    kinds = {m: api.load_model(m)[0] for m in ("mistralai/Mixtral-8x7B-v0.1", "deepseek-ai/DeepSeek-V3",
                                              "openai/gpt-oss-20b", "google/gemma-2-9b")}
    assert kinds["mistralai/Mixtral-8x7B-v0.1"].is_moe
    assert kinds["deepseek-ai/DeepSeek-V3"].is_mla and kinds["deepseek-ai/DeepSeek-V3"].num_mtp_layers == 1
    # gpt-oss alternates sliding (128) and full attention; gemma-2 alternates 4096-token windows.
    assert kinds["openai/gpt-oss-20b"].attention_layers.sliding == 12
    assert kinds["openai/gpt-oss-20b"].attention_layers.window == 128
    assert kinds["google/gemma-2-9b"].attention_layers.sliding == 21
    assert kinds["google/gemma-2-9b"].attention_layers.window == 4096
