"""Write data/validation/e2e_points.yaml: published end-to-end serving measurements, one row each, with the
configuration quantadvise prices them at and aiconfigurator 0.12.0's prediction on the same point.

A maintainer script, run by hand (never imported by the package). Its inputs are the collected points
(a CSV with one row per published point, its source URL and locator: the columns below) and
aiconfigurator's predictions on them (a CSV keyed by point_id, made by running
``aiconfigurator cli estimate --estimate-mode agg`` per point with aiconfigurator 0.12.0's default perf
database); its model configs are copied from the aiconfigurator-core 0.12.0 wheel (Apache-2.0,
``aiconfigurator_core/model_configs/``) for the models the package does not bundle:

    python tools/build_e2e_points.py --points points.csv --aic aic_predictions.csv \
        --aic-configs <unpacked aiconfigurator_core>/model_configs

Nothing here is measured by quantadvise: every number is the source's (output tokens/s derived from
TTFT and TPOT where the source gives only those, ``kind: derived``).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "data" / "validation"

SOURCES = {
    "S1": ("InferenceX (SemiAnalysis) dashboard API snapshot, packages/app/cypress/fixtures/api/benchmarks.json "
           "(InferenceX-app at commit 528c4146; each row names its GitHub Actions run in SemiAnalysisAI/InferenceX)",
           "https://github.com/vngcloud/InferenceX-app/blob/528c4146b8f502fcbce8df7870a935a970cbae25/packages/app/"
           "cypress/fixtures/api/benchmarks.json"),
    "S2": ("aiconfigurator silicon_sample.csv (ai-dynamo/aiconfigurator at commit 095f58a5; aggregated vLLM and "
           "SGLang measurements with TTFT and TPOT; output tokens/s derived as concurrency x OSL / (TTFT + TPOT x "
           "(OSL - 1)))",
           "https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/"
           "aiconfigurator_core/systems/silicon_sample.csv"),
    "S3": ("AMD ROCm hub, Performance results (vLLM on MI300X, offline throughput)",
           "https://www.amd.com/en/developer/resources/rocm-hub/dev-ai/performance-results.html"),
    "S4": ("Oracle Cloud Infrastructure blog, Serving Llama 3.1 405B with AMD MI300X GPUs (vLLM benchmark_latency)",
           "https://blogs.oracle.com/cloud-infrastructure/serving-llama-31-405b-model-with-amd-mi300x-gpus"),
    "S5": ("SGLang benchmark/benchmark_vllm_060/README.md (SGLang 0.3.0 vs vLLM 0.6.0, ShareGPT)",
           "https://github.com/sgl-project/sglang/blob/120affb9613cc3f5bcd055ec09c7621d3ced0ebc/benchmark/"
           "benchmark_vllm_060/README.md"),
    "S6": ("vLLM blog 2026-04-22, The State of FP8 KV-Cache, Tables 4-5",
           "https://github.com/vllm-project/vllm-project.github.io/blob/c3a01c4a5807c8d900ae468897e45263373e534e"),
    "S7": ("Vultr inference cookbook, CUDA Concurrency Tuning (NVIDIA HGX B200 verified)",
           "https://docs.vultr.com/inference-cookbook/cuda/optimization/concurrency-tuning"),
    "S8": ("Red Hat AI model cards on Hugging Face, 'Inference Performance' single-stream latency tables (vLLM 0.7.2 "
           "and 0.6.6.post1, GuideLLM; one request at a time, fixed prompt/output tokens); each row's locator names "
           "its card", "https://huggingface.co/RedHatAI"),
}
# sources whose rows were transcribed into the points file directly (not in the collected CSV): kept as they are
KEPT = ("S8",)

# the hold-out units: a source, or one source file of S2 (its campaigns); decided before any fit
HELDOUT = ("S1", "S2/qwen3-32b", "S2/inferencex-2026-03-25", "S2/llama-3.1-8b-fp8-vllm", "S6", "S7",
           "S8/deepseek-r1-distill-llama-70b", "S8/deepseek-r1-distill-qwen-7b", "S8/deepseek-r1-distill-qwen-32b")

GPUS = {"h100": "h100-sxm", "h200": "h200", "b200": "b200", "b300": "b300", "a100": "a100-80gb", "mi300x": "mi300x",
        "mi325x": "mi325x", "mi355x": "mi355x"}

CONFIGS = {  # model as published -> the config.json priced: bundled id, or validation/models/<file>
    "meta-llama/Llama-3.1-70B": "meta-llama/Llama-3.1-70B",
    "meta-llama/Llama-3.1-70B-Instruct": "meta-llama/Llama-3.1-70B",
    "meta-llama/Llama-3.1-8B": "meta-llama/Llama-3.1-8B",
    "meta-llama/Llama-3.1-8B-Instruct": "meta-llama/Llama-3.1-8B",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "meta-llama/Llama-3.1-8B",
    "openai/gpt-oss-120b": "openai/gpt-oss-120b",
    "openai/gpt-oss-20b": "openai/gpt-oss-20b",
    "Qwen/Qwen3-32B": "Qwen/Qwen3-32B",
    "Qwen/Qwen3-235B-A22B-FP8": "Qwen/Qwen3-235B-A22B",
}
VALIDATION_CONFIGS = {  # validation/models/<id>.json <- aiconfigurator-core's model_configs/<file>
    "Qwen/Qwen3-32B": "Qwen--Qwen3-32B_config.json",
    "Qwen/Qwen3-235B-A22B": "Qwen--Qwen3-235B-A22B_config.json",
    "deepseek-ai/DeepSeek-R1": "deepseek-ai--DeepSeek-R1_config.json",
    "meta-llama/Llama-3.1-405B": "meta-llama--Meta-Llama-3.1-405B_config.json",
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B": "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16_config.json",
}


def config_of(x: dict[str, str]) -> str | None:
    m = x["model"]
    if m.startswith("DeepSeek-R1"):
        return "deepseek-ai/DeepSeek-R1"
    if "405B" in m:
        return "meta-llama/Llama-3.1-405B"
    if m.startswith("Nemotron Nano"):
        return "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B"
    return CONFIGS.get(m)


def scheme_of(x: dict[str, str]) -> tuple[str | None, str]:
    """(the preset priced, why) for a point's weights as published."""
    q, m = x["quant_scheme"], x["model"]
    if "gpt-oss" in m:
        return "mxfp4-a16-experts", "gpt-oss ships MXFP4 experts and 16-bit attention"
    if q.startswith("bf16"):
        return "bf16", ""
    if q == "nvfp4":
        return "nvfp4", ""
    if q == "fp8-block" or "235B" in m or ("Qwen3-32B" in m and q == "fp8"):
        return "fp8-block", "the FP8 checkpoints of DeepSeek-R1 and Qwen3 use 128 x 128 weight blocks"
    if q.startswith("fp8"):
        if "Llama-3.1-8B-Instruct" == m.split("/")[-1] and x["engine"] == "sglang":
            return "fp8-dynamic", "a bf16 checkpoint served with --quantization fp8 (dynamic per-token activations)"
        return "fp8-tensor", "a per-tensor FP8 checkpoint (ModelOpt / Quark / vLLM's own FP8 checkpoints)"
    return None, ""


def group_of(x: dict[str, str]) -> str:
    s = x["source_id"][:2]
    if s != "S2":
        return s
    n = x["notes"]
    if "2026-04-06" in n:
        return "S2/inferencex-2026-04-06"
    if "2026-03-25" in n:
        return "S2/inferencex-2026-03-25"
    if "Qwen3-32B" in n or "qwen3_32b" in n:
        return "S2/qwen3-32b"
    if "235B" in n:
        return "S2/qwen3-235b-fp8"
    if "nvidia_Llama" in n:
        return "S2/llama-3.1-8b-fp8-vllm"
    return "S2/llama-3.1-8b-sglang"


def skip_reason(x: dict[str, str], config: str | None, scheme: str | None) -> str | None:
    """Why quantadvise cannot price the point as published (None: it can)."""
    if not x["output_tok_s"]:
        return "no output tokens/s published (or input and output tokens not told apart)"
    if not x["isl"] or not x["osl"]:
        return "ShareGPT workload: lengths vary per request and are not published"
    if not x["concurrency"]:
        return "request-rate (open-loop) or ShareGPT workload: no fixed concurrency and lengths"
    if x["gpu"] not in GPUS:
        return f"GPU {x['gpu']} not on file"
    if config is None:
        return "no config.json for this model on file (Nemotron Super 49B: a pruned architecture the parser refuses)"
    if scheme is None:
        return "weights format not mapped"
    tp = int(x["tp"])
    moe_tp, moe_ep = int(x["aic_moe_tp"] or 1), int(x["aic_moe_ep"] or 1)
    if moe_tp * moe_ep > tp * int(x["aic_attention_dp"] or 1):
        return f"inconsistent parallel layout in the source row (MoE TP {moe_tp} x EP {moe_ep} > TP {tp})"
    return None


def num(v: str) -> float | int | None:
    if v in ("", None):
        return None
    f = float(v)
    return int(f) if f.is_integer() and "." not in v else f


def row_yaml(d: dict[str, object]) -> str:
    parts = []
    for k, v in d.items():
        if v is None:
            continue
        parts.append(f"{k}: {json.dumps(v, ensure_ascii=False)}")
    return "  - {" + ", ".join(parts) + "}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", required=True, type=Path)
    ap.add_argument("--aic", required=True, type=Path)
    ap.add_argument("--aic-configs", required=True, type=Path)
    a = ap.parse_args()
    aic = {r["point_id"]: r for r in csv.DictReader(a.aic.open())}
    rows = []
    for x in csv.DictReader(a.points.open()):
        config = config_of(x)
        scheme, why = scheme_of(x)
        kv = x["kv_cache_dtype"].lower()
        kvd = "kv-fp8" if kv.startswith("fp8") else None
        conc = num(x["concurrency"])
        mode = "sync" if "static batch" in x["length_dist"] or "benchmark_latency" in x["length_dist"] else "continuous"
        p = aic.get(x["point_id"], {})
        sid = x["source_id"][:2]
        d = {
            "id": x["point_id"], "source": sid, "group": group_of(x), "locator": x["source_locator"],
            "engine": "vllm" if x["engine"].startswith("vllm") else "sglang",
            "engine_version": x["engine_version"] or None, "model": x["model"], "config": config, "scheme": scheme,
            "scheme_note": why or None, "kv_dtype": kvd, "gpu": GPUS.get(x["gpu"], x["gpu"]), "gpus": num(x["num_gpus"]),
            "tp": num(x["tp"]), "ep": ep if (ep := num(x["ep"])) and ep > 1 else None,  # the source's EP size
            "prompt": num(x["isl"]), "output": num(x["osl"]),
            "concurrency": conc, "mode": mode, "output_tok_s": num(x["output_tok_s"]),
            "kind": "derived" if x["output_tok_s_kind"].startswith("derived") else "measured",
            "ttft_ms": num(x["ttft_ms"]), "tpot_ms": num(x["tpot_ms"]),
            "aic": p.get("status") or "not_run", "aic_output_tok_s": num(p.get("aic_output_tok_s", "")),
            "aic_command": (p.get("command") or None) if p.get("status") in ("ok", "error") else None,
            "skip": skip_reason(x, config, scheme),
            "as_of": x["measured_date"] or "2026-12-06",
        }
        rows.append(d)
    head = ["# Published end-to-end serving measurements (docs/calibration.md §8), written by tools/build_e2e_points.py.",
            "# One row per point: the workload as published, the configuration quantadvise prices it at (config:",
            "# a bundled model or data/validation/models/<org>--<name>.json; scheme: a data/schemes.yaml preset),",
            "# the source's output tokens/s (kind: measured, or derived = conc x OSL / (TTFT + TPOT x (OSL - 1)) where",
            "# the source gives only TTFT and TPOT), and aiconfigurator 0.12.0's prediction on the same point",
            "# (aic: ok | error | not_expressible; aic_command: the `aiconfigurator cli estimate --estimate-mode agg`",
            "# that was run, default perf database). `skip` says why quantadvise cannot price a point as published.",
            "# `group` is the hold-out unit (a source, or one source file of S2); `heldout` lists the groups the",
            "# fit never sees.",
            "# `pairs_only`: priced for the speed-ups between schemes only (S8: single-stream latencies of vLLM's V0",
            "# engine, whose per-step host time the loop rows do not price), not in the bands; output tokens/s derived as",
            "# output tokens / the published latency. The loop-terms fit never sees them; tools/fit_stream_factors.py",
            "# reads the S8 groups not in `heldout`.",
            "schema_version: 1", "as_of: 2026-12-06",
            "heldout: [" + ", ".join(json.dumps(h) for h in HELDOUT) + "]", "sources:"]
    for sid, (title, url) in SOURCES.items():
        head.append(f"  - {{id: {sid}, title: {json.dumps(title)}, url: {json.dumps(url)}}}")
    head.append("points:")
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / "e2e_points.yaml"
    kept = [line for line in target.read_text(encoding="utf-8").splitlines()
            if any(f'source: "{k}"' in line for k in KEPT)] if target.is_file() else []
    target.write_text("\n".join(head + [row_yaml(r) for r in rows] + kept) + "\n", encoding="utf-8")
    models = OUT / "models"
    models.mkdir(exist_ok=True)
    for mid, name in VALIDATION_CONFIGS.items():
        cfg = json.loads((a.aic_configs / name).read_text())
        cfg.pop("quantization_config", None)  # the scheme is priced as the row says
        cfg["_name_or_path"] = mid
        (models / (mid.replace("/", "--") + ".json")).write_text(json.dumps(cfg, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} points and {len(VALIDATION_CONFIGS)} model configs under {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
