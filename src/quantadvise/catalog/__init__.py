"""The only reader of the shipped ``data/`` tables: ``loader`` finds and parses them (from their
compiled JSON form in a wheel install, else YAML with the safe loader; see ``quantadvise/tables.py``),
and one module per table family validates rows with pydantic models (``extra="forbid"``) when they
are first used: ``schemes`` (presets, KV presets, layouts), ``models`` (bundled models, GPUs),
``profiles`` (efficiency profiles, accuracy priors), ``pricing`` (default $/GPU-hour per GPU), ``engines`` (engine and library releases,
kernel tables, server option lists, start-up facts). ``validate_all()`` validates everything. Names resolve
case-insensitively through ids and aliases, ``_`` and ``-`` alike, and an unknown name suggests the
closest ones."""

from __future__ import annotations

from .engines import (
    engine_names,
    engine_startup,
    engine_versions,
    flag_vocabulary,
    format_library,
    get_engine,
    kernel_table,
    option_list,
    validate_engines,
)
from .kernel_tables import kernel_table_checks, kernel_table_gpus, kernel_tables, uncertainty_bands
from .loader import data_dir, data_yaml, load_yaml_file
from .models import (
    ModelRow,
    bundled_config,
    bundled_model_ids,
    bundled_model_names,
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
from .validate import validate_all

__all__ = [
    "KvPreset", "ModelRow", "PriceRow", "SchemePreset", "gpu_price", "price_ids", "accuracy_rules", "bundled_config", "bundled_model_ids",
    "bundled_model_names", "data_dir", "data_yaml", "default_perf_profile", "engine_names", "engine_startup",
    "engine_versions", "find_bundled_model", "flag_vocabulary", "option_list", "format_library", "get_engine", "get_gpu", "get_kv", "get_scheme",
    "gpu_ids", "gpu_names", "kernel_table", "kernel_table_checks", "kernel_table_gpus", "kernel_tables", "uncertainty_bands", "kv_ids", "kv_names_all", "kv_preset", "layouts", "load_perf_profile",
    "load_yaml_file",
    "load_scheme_file", "measured_profile", "profile_heldout", "scheme_from_preset", "scheme_ids", "scheme_names",
    "scheme_names_all", "scheme_preset", "shipped_profile_paths", "validate_all", "validate_engines",
]
