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
    "RooflineResult": "perf.step",
    "recommend": "api",
    "Recommendation": "advisor.tree",
    "Workload": "workload",
    "load_workload": "api",
    "load_profiles": "api",
    "PerfProfile": "perf.profiles",
    "accuracy": "api",
    "read_deployment": "api",
    "AccuracyReport": "evals.stats",
    "AccuracyThresholds": "evals.stats",
    "DeploymentScan": "artifacts.scan",
    "EngineInvocation": "artifacts.scan",
    "inspect": "api",
    "engines_list": "api",
    "engines_show": "api",
    "engines_diff": "api",
    "get_engine": "api",
    "InspectReport": "engines.inspection",
    "CheckpointQuant": "checkpoint.dialects",
    "parse_checkpoint": "checkpoint.dialects",
    "parse_quantization_config": "checkpoint.dialects",
    "EngineData": "engines.schema",
    "EngineResolution": "engines.schema",
    "Finding": "engines.schema",
    "calibrate": "api",
    "validate": "api",
    "CalibrationResult": "perf.calibration",
    "ValidationResult": "perf.calibration",
    "check": "api",
    "check_init": "api",
    "predict": "api",
    "Prediction": "advisor.tree",
    "GateResult": "gate.rules",
    "GateFinding": "gate.rules",
    "DeploymentConfig": "gate.config",
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
