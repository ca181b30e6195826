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
    "size": "api.size",
    "load_model": "catalog.resolve",
    "resolve_scheme": "catalog.resolve",
    "resolve_kv": "catalog.resolve",
    "get_gpu": "catalog.resolve",
    "QuantAdviseError": "errors",
    "Scheme": "scheme.axes",
    "TensorQuant": "scheme.axes",
    "ScaleSpec": "scheme.axes",
    "GroupShape": "scheme.axes",
    "LayerPolicy": "scheme.axes",
    "ModelArch": "model.arch",
    "parse_config": "model.parse",
    "GPU": "hardware",
    "SizeReport": "memory.sizing",
    "roofline": "api.roofline",
    "RooflineResult": "perf.roofline",
    "recommend": "api.recommend",
    "deploy": "api.deploy",
    "Recommendation": "advisor.result",
    "Workload": "workload",
    "load_workload": "catalog.resolve",
    "load_profiles": "catalog.resolve",
    "PerfProfile": "perf.profiles",
    "accuracy": "api.accuracy",
    "read_deployment": "api.artifacts",
    "AccuracyReport": "evals.stats",
    "AccuracyThresholds": "evals.stats",
    "DeploymentScan": "engines.invocation",
    "EngineInvocation": "engines.invocation",
    "inspect": "api.inspect",
    "engines_list": "api.engines",
    "engines_show": "api.engines",
    "engines_diff": "api.engines",
    "get_engine": "catalog.resolve",
    "InspectReport": "engines.inspection",
    "CheckpointQuant": "checkpoint.quant",
    "parse_checkpoint": "checkpoint.parse",
    "parse_quantization_config": "checkpoint.parse",
    "EngineData": "engines.data",
    "EngineResolution": "engines.resolution",
    "Finding": "engines.findings",
    "calibrate": "api.calibrate",
    "validate": "api.calibrate",
    "CalibrationResult": "calibration.run",
    "ValidationResult": "calibration.validate",
    "check": "api.check",
    "check_init": "api.check",
    "predict": "api.recommend",
    "Prediction": "advisor.result",
    "GateResult": "gate.result",
    "GateFinding": "gate.result",
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
