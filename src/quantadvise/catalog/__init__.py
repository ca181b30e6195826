"""The only reader of the shipped ``data/`` tables: ``loader`` finds and parses them (from their
compiled JSON form in a wheel install, else YAML with the safe loader; see ``catalog/tables.py``),
and one module per table family validates rows with pydantic models (``extra="forbid"``) when they
are first used: ``schemes`` (presets, KV presets, layouts), ``models`` (bundled models, GPUs),
``profiles`` (efficiency profiles, accuracy priors), ``pricing`` (default $/GPU-hour per GPU), ``comm`` (communication figures per GPU system), ``engines`` (engine and library releases,
kernel tables, server option lists, start-up facts), ``lookup_tables`` (the published per-kernel lookup
tables, their held-out checks and uncertainty bands), ``serving`` (the serving loop's facts and fitted terms,
the published end-to-end points, the benchmark CLIs' options). ``validate_all()`` validates everything. Names resolve
case-insensitively through ids and aliases, ``_`` and ``-`` alike, and an unknown name suggests the
closest ones.

Imported lazily: ``catalog.get_engine`` imports ``catalog/engines.py`` on first use, so a command
loads only the table families it reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# name -> the module of this package that defines it
_NAMES: dict[str, str] = {
    "engine_names": "engines", "engine_startup": "engines", "engine_versions": "engines",
    "flag_vocabulary": "engines", "format_library": "engines", "get_engine": "engines", "kernel_table": "engines",
    "moe_configs": "engines",
    "kv_issues": "engines", "option_list": "engines", "option_names": "engines", "validate_engines": "engines",
    "kernel_caveat": "engines", "release": "engines", "release_dates": "engines", "stack_release": "engines",
    "kernel_table_checks": "lookup_tables", "kernel_table_gpus": "lookup_tables", "kernel_tables": "lookup_tables",
    "uncertainty_bands": "lookup_tables", "kernel_benchmarks": "lookup_tables",
    "comm_ids": "comm", "comm_system": "comm", "layout_measurements": "comm",
    "data_dir": "loader", "data_yaml": "loader", "load_yaml_file": "loader",
    "FoundConfig": "models", "ModelRow": "models", "bundled_config": "models", "bundled_source": "models", "bundled_model_ids": "models", "bundled_model_names": "models",
    "find_bundled_model": "models", "get_gpu": "models", "gpu_ids": "models", "gpu_names": "models",
    "PriceRow": "pricing", "gpu_price": "pricing", "price_ids": "pricing",
    "accuracy_rules": "profiles", "default_perf_profile": "profiles", "load_perf_profile": "profiles",
    "measured_profile": "profiles", "profile_heldout": "profiles", "shipped_profile_paths": "profiles",
    "KvPreset": "schemes", "SchemePreset": "schemes", "get_kv": "schemes", "get_scheme": "schemes",
    "kv_ids": "schemes", "kv_names_all": "schemes", "kv_preset": "schemes", "layouts": "schemes",
    "load_scheme_file": "schemes", "scheme_from_preset": "schemes", "scheme_ids": "schemes",
    "scheme_names": "schemes", "scheme_names_all": "schemes", "scheme_preset": "schemes",
    "bench_options": "serving", "e2e_points": "serving", "engine_loop": "serving", "loop_release": "serving",
    "pick_terms": "serving", "shipped_terms": "serving", "validation_config": "serving",
    "validate_all": "validate",
}

if TYPE_CHECKING:
    from .comm import comm_ids, comm_system, layout_measurements
    from .engines import (
        engine_names,
        engine_startup,
        engine_versions,
        flag_vocabulary,
        format_library,
        get_engine,
        kernel_caveat,
        kernel_table,
        kv_issues,
        moe_configs,
        option_list,
        option_names,
        release,
        release_dates,
        stack_release,
        validate_engines,
    )
    from .loader import data_dir, data_yaml, load_yaml_file
    from .lookup_tables import (
        kernel_benchmarks,
        kernel_table_checks,
        kernel_table_gpus,
        kernel_tables,
        uncertainty_bands,
    )
    from .models import (
        FoundConfig,
        ModelRow,
        bundled_config,
        bundled_model_ids,
        bundled_model_names,
        bundled_source,
        find_bundled_model,
        get_gpu,
        gpu_ids,
        gpu_names,
    )
    from .pricing import PriceRow, gpu_price, price_ids
    from .profiles import (
        accuracy_rules,
        default_perf_profile,
        load_perf_profile,
        measured_profile,
        profile_heldout,
        shipped_profile_paths,
    )
    from .schemes import (
        KvPreset,
        SchemePreset,
        get_kv,
        get_scheme,
        kv_ids,
        kv_names_all,
        kv_preset,
        layouts,
        load_scheme_file,
        scheme_from_preset,
        scheme_ids,
        scheme_names,
        scheme_names_all,
        scheme_preset,
    )
    from .serving import (
        bench_options,
        e2e_points,
        engine_loop,
        loop_release,
        pick_terms,
        shipped_terms,
        validation_config,
    )
    from .validate import validate_all

__all__ = [
    "FoundConfig", "KvPreset", "ModelRow", "bundled_source", "comm_ids", "comm_system", "layout_measurements", "PriceRow", "SchemePreset", "gpu_price", "price_ids", "accuracy_rules", "bundled_config", "bundled_model_ids",
    "bundled_model_names", "data_dir", "data_yaml", "default_perf_profile", "engine_names", "engine_startup",
    "engine_versions", "find_bundled_model", "flag_vocabulary", "option_list", "option_names", "format_library", "get_engine", "get_gpu", "get_kv", "get_scheme",
    "gpu_ids", "gpu_names", "kernel_caveat", "kernel_table", "kernel_table_checks", "kernel_table_gpus", "kernel_tables",
    "uncertainty_bands", "kernel_benchmarks", "release", "release_dates", "stack_release", "kv_ids", "kv_issues", "kv_names_all", "kv_preset", "layouts", "moe_configs",
    "load_perf_profile",
    "load_yaml_file",
    "load_scheme_file", "measured_profile", "profile_heldout", "scheme_from_preset", "scheme_ids", "scheme_names",
    "scheme_names_all", "scheme_preset", "shipped_profile_paths", "validate_all", "validate_engines",
    "bench_options", "e2e_points", "engine_loop", "loop_release", "pick_terms", "shipped_terms", "validation_config",
]


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'quantadvise.catalog' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
