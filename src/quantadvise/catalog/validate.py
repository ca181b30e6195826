"""Validating every row of every shipped table (the data tests call it)."""

from __future__ import annotations

from ..errors import ConfigError, DataError
from . import loader, profiles
from .engines import engine_names, engine_versions, flag_vocabulary, validate_engines
from .models import bundled_config, bundled_model_ids, find_bundled_model, get_gpu, gpu_ids
from .pricing import gpu_price, price_ids
from .profiles import accuracy_rules, default_perf_profile
from .schemes import kv_ids, kv_preset, layouts, scheme_from_preset, scheme_ids, scheme_preset

__all__ = ["validate_all", "validate_engines"]


def validate_all() -> dict[str, int]:
    """Validate every row of every table; returns row counts per table."""
    counts = {"layouts": len(layouts())}
    for sid in scheme_ids():
        scheme_from_preset(scheme_preset(sid))
    counts["schemes"] = len(scheme_ids())
    for kid in kv_ids():
        kv_preset(kid)
    counts["kv_presets"] = len(kv_ids())
    for mid in bundled_model_ids():
        row = find_bundled_model(mid)
        assert row is not None
        bundled_config(row)
    counts["models"] = len(bundled_model_ids())
    for gid in gpu_ids():
        get_gpu(gid)
    counts["gpus"] = len(gpu_ids())
    default_perf_profile()
    counts["perf_profiles"] = 1
    for path in profiles.shipped_profile_paths().values():
        from ..perf.profiles import parse_profile

        try:
            prof = parse_profile(loader.load_yaml_file(path), f"data/profiles/{path.name}")
        except ConfigError as exc:
            raise DataError(str(exc)) from None
        for entry in prof.gpus:
            get_gpu(entry.gpu)
            table = any(c.basis == "measured" for c in entry.kernels.values())
            if not table and (entry.calibration is None or entry.calibration.provenance.simulated):
                raise DataError(f"data/profiles/{path.name}: a shipped profile must hold a calibration measured "
                                "on a real GPU or kernel curves fitted to published measurements (simulated ones "
                                "belong in tests/fixtures)")
        counts["perf_profiles"] += 1
    from .kernel_tables import validate_kernel_tables

    counts["kernel_tables"] = validate_kernel_tables()
    counts["accuracy_rules"] = len(accuracy_rules())
    for gid in price_ids():
        get_gpu(gid)  # every priced GPU is a bundled GPU (an unknown id is an error with suggestions)
        gpu_price(gid)
    counts["prices"] = len(price_ids())
    counts["flag_vocabularies"] = 0
    for path in sorted((loader.data_dir() / "flags").glob("*.yaml")):
        engine, _, version = path.stem.partition("-")
        if engine not in engine_names() or version not in engine_versions(engine):
            raise DataError(f"data/flags/{path.name}: no data/engines/{path.stem}.yaml for this release")
        flag_vocabulary(engine, version)
        counts["flag_vocabularies"] += 1
    return counts


