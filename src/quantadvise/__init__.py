"""quantadvise: which quantization scheme to deploy, what it costs, how fast it runs, whether your
engine accepts it — and a CI gate for all of it.

The public API (imported lazily, so ``import quantadvise`` stays cheap)::

    import quantadvise as qa
    report = qa.size("meta-llama/Llama-3-8B", bits=4, group=128)
    print(report.total_bytes / 1e9)          # 5.73

"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_API = {
    "size": "api",
    "load_model": "api",
    "resolve_scheme": "api",
    "resolve_kv": "api",
    "get_gpu": "api",
    "QuantAdviseError": "errors",
    "Scheme": "scheme",
    "TensorQuant": "scheme",
    "ScaleSpec": "scheme",
    "GroupShape": "scheme",
    "LayerPolicy": "scheme",
    "ModelArch": "model",
    "parse_config": "model",
    "GPU": "hardware",
    "SizeReport": "sizing",
    "roofline": "api",
    "RooflineResult": "perfmodel",
    "recommend": "api",
    "Recommendation": "advisor",
    "Workload": "workload",
    "load_workload": "api",
    "load_profiles": "api",
    "PerfProfile": "perfprofile",
    "accuracy": "api",
    "read_deployment": "api",
    "AccuracyReport": "accuracy_stats",
    "AccuracyThresholds": "accuracy_stats",
    "DeploymentScan": "deploy",
    "EngineInvocation": "deploy",
    "inspect": "api",
    "engines_list": "api",
    "engines_show": "api",
    "engines_diff": "api",
    "get_engine": "api",
    "InspectReport": "inspection",
    "CheckpointQuant": "checkpoint",
    "parse_checkpoint": "checkpoint",
    "parse_quantization_config": "checkpoint",
    "EngineData": "engines",
    "EngineResolution": "engines",
    "Finding": "engines",
    "calibrate": "api",
    "validate": "api",
    "CalibrationResult": "calibration",
    "ValidationResult": "calibration",
    "check": "api",
    "check_init": "api",
    "predict": "api",
    "Prediction": "advisor",
    "GateResult": "gate",
    "GateFinding": "gate",
    "DeploymentConfig": "deployconfig",
}

__all__ = sorted(_API) + ["__version__"]


def __getattr__(name: str) -> Any:
    mod = _API.get(name)
    if mod is None:
        raise AttributeError(f"module 'quantadvise' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(f"quantadvise.{mod}"), name)
    globals()[name] = value
    return value
