"""Below compute capability 8.0 the 16-bit model runs in fp16, and recommend says so (audit rec #9).

vLLM 0.33.0 has no bfloat16 below 8.0: an explicit --dtype bfloat16 raises "Bfloat16 is only supported on
GPUs with compute capability of at least 8.0 ..." (vllm/platforms/cuda.py:651), and --dtype auto with a
bfloat16 checkpoint falls back to float16 with "Your device ... doesn't support torch.bfloat16. Falling back to
torch.float16 for compatibility." (vllm/config/model.py:2457-2458). V100 is 7.0, T4 7.5, H100 9.0
(NVIDIA's CUDA GPU compute-capability table). Llama-3.1-8B ships torch_dtype bfloat16 (its config.json).
"""

from __future__ import annotations

import quantadvise as api
from quantadvise.report.recommend import full as table  # the whole report (--explain)


def test_v100_baseline_runs_in_fp16_with_dtype_half():
    r = api.recommend(model="meta-llama/Llama-3.1-8B", gpu="v100", batch=4)
    vllm = r.engine_args["vllm"]
    assert vllm is not None and "--dtype half" in vllm
    assert any("Falling back to torch.float16" in n and "--dtype half" in n for n in r.checkpoint.notes)
    # the 16-bit tensors the winner leaves unquantized are fp16 in its axes, and the text says so
    axes = r.scheme.axes
    assert axes.math != "bf16"
    for ax in (axes.weights, axes.activations, axes.kv_cache):
        assert ax is None or ax.dtype != "bf16"
    text = table(r)
    assert "bf16 tensor cores" not in text and "lm_head bf16" not in text
    if r.scheme.id == "bf16":
        assert axes.math == "fp16" and "fp16 tensor cores" in text and "run in fp16" in r.scheme.description


def test_t4_quantized_winner_also_gets_dtype_half():
    r = api.recommend(model="meta-llama/Llama-3.2-1B", gpu="t4", batch=16)
    assert "--dtype half" in (r.engine_args["vllm"] or "")
    acts = r.scheme.axes.activations
    assert acts is None or acts.dtype != "bf16"


def test_h100_keeps_bf16_and_no_dtype_flag():
    r = api.recommend(batch=4)
    assert "--dtype" not in (r.engine_args["vllm"] or "")
    assert not any("Falling back to torch.float16" in n for n in r.checkpoint.notes)


def test_sglang_refuses_a_gpu_below_sm75():
    # SGLang 0.5.23 refuses every GPU below compute capability 7.5 ("SGLang only supports sm75 and above.",
    # sglang/srt/model_executor/model_runner_components/load_model_utils.py:80-91); the V100 is 7.0. As the other engine it gets no
    # command and a note; named with --engine it is an input error.
    import pytest

    from quantadvise.errors import InputError

    r = api.recommend(model="meta-llama/Llama-3.1-8B", gpu="v100", batch=4)
    assert r.engine_args.get("sglang") is None
    assert any("SGLang only supports sm75 and above." in n for n in r.checkpoint.notes)
    with pytest.raises(InputError, match="SGLang only supports sm75 and above"):
        api.recommend(model="meta-llama/Llama-3.1-8B", gpu="v100", batch=4, engine="sglang")
    t4 = api.recommend(model="meta-llama/Llama-3.1-8B", gpu="t4", batch=4)  # 7.5: SGLang starts (in fp16)
    assert not any("does not start" in n for n in t4.checkpoint.notes)
