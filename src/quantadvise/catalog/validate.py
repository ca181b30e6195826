"""Validating every row of every shipped table (the data tests call it)."""

from __future__ import annotations

from ..errors import DataError
from . import loader, profiles
from .comm import comm_ids, comm_system, layout_measurements
from .engines import engine_names, engine_versions, flag_vocabulary, moe_configs, stack_release, validate_engines
from .models import bundled_config, bundled_model_ids, find_bundled_model, get_gpu, gpu_ids
from .pricing import gpu_price, price_ids
from .profiles import accuracy_rules, default_perf_profile
from .schemes import kv_ids, kv_preset, layouts, scheme_from_preset, scheme_ids, scheme_preset
from .trusted import checking

__all__ = ["validate_all", "validate_engines"]


def validate_serving() -> dict[str, int]:
    """The serving loop's tables: a loop row for every engine release on file, the fitted terms, the
    published end-to-end points, the benchmark clients' option lists."""
    from ..calibration.e2e import E2ETable
    from .serving import _loop_table, bench_options, e2e_points, loop_release, shipped_terms

    for engine in engine_names():
        newest = engine_versions(engine)[-1]
        if loop_release(engine, newest).version != newest:
            raise DataError(f"data/serving.yaml: no row for {engine} {newest}, the newest release in data/engines")
        for version in engine_versions(engine):
            loop_release(engine, version)
            opts = bench_options(engine, version)
            if opts is None or opts.version != version:
                raise DataError(f"data/flags/bench: no option list for {engine} {version}")
    table = E2ETable.model_validate(e2e_points())
    return {"serving_loops": len(_loop_table().releases), "serving_terms": len(shipped_terms()),
            "e2e_points": len(table.points)}


def validate_all() -> dict[str, int]:
    """Validate every row of every table; returns row counts per table. The catalog's caches are emptied
    first, so every table is read again, validated by pydantic, and each model a command builds
    without validation (``trusted.shipped``) held identical to the validated one (what it leaves in the caches is
    the validated models)."""
    _clear_caches()
    with checking():
        return _validate_all()


def _clear_caches() -> None:
    """Empty every per-process cache of the catalog's modules (the tables they read and the models built)."""
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith(__package__ + ".") and module is not None:
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", None) == name:
                    value.cache_clear()


def _validate_all() -> dict[str, int]:
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
        # validated, and the profile a command builds directly held to it (checking)
        prof = profiles.shipped_profile(loader.load_yaml_file(path), f"data/profiles/{path.name}")
        for entry in prof.gpus:
            get_gpu(entry.gpu)
            table = any(c.basis == "measured" for c in entry.kernels.values())
            if not table and (entry.calibration is None or entry.calibration.provenance.simulated):
                raise DataError(f"data/profiles/{path.name}: a shipped profile must hold a calibration measured "
                                "on a real GPU or kernel curves fitted to published measurements (simulated ones "
                                "belong in tests/fixtures)")
        counts["perf_profiles"] += 1
    from .lookup_tables import validate_kernel_tables

    counts["kernel_tables"] = validate_kernel_tables()
    from .engines import release_dates

    dated = 0
    for engine in engine_names():  # every release on file has its publication date (data/engine_releases.yaml)
        dates = release_dates(engine)
        missing = [v for v in engine_versions(engine) if v not in dates]
        if missing:
            raise DataError(f"data/engine_releases.yaml: no publication date for {engine} {', '.join(missing)} "
                            "(the package index's first upload of the release)")
        dated += len(dates)
    counts["release_dates"] = dated
    counts["accuracy_rules"] = len(accuracy_rules())
    for gid in price_ids():
        get_gpu(gid)  # every priced GPU is a bundled GPU (an unknown id is an error with suggestions)
        gpu_price(gid)
    counts["prices"] = len(price_ids())
    for gid in comm_ids():
        get_gpu(gid)  # every communication row is a bundled GPU
        comm_system(gid)
    counts["comm_systems"] = len(comm_ids())
    for m in layout_measurements():
        get_gpu(m.gpu)
    counts["layout_measurements"] = len(layout_measurements())
    from .checkpoints import published_rows

    for pub in published_rows():  # every published checkpoint maps to a bundled model and known presets
        if find_bundled_model(pub.model) is None:
            raise DataError(f"data/checkpoints.yaml: checkpoint '{pub.id}' names model '{pub.model}', which is not "
                            "bundled")
        if pub.scheme is not None:
            scheme_preset(pub.scheme)
        if pub.kv is not None:
            kv_preset(pub.kv)
    counts["checkpoints"] = len(published_rows())
    from .checkpoints import speculators
    from .engines import kv_issues

    for sp in speculators():
        if find_bundled_model(sp.model) is None:
            raise DataError(f"data/speculators.yaml: '{sp.id}' names model '{sp.model}', which is not bundled")
    counts["speculators"] = len(speculators())
    for issue in kv_issues():
        if issue.engine not in engine_names():
            raise DataError(f"data/known_issues.yaml: '{issue.id}' names engine '{issue.engine}', which is not on file")
        for kid in issue.kv:
            kv_preset(kid)
    counts["kv_issues"] = len(kv_issues())
    counts.update(validate_serving())
    counts["flag_vocabularies"] = 0
    flags = loader.family("flags")
    for stem in flags.stems():
        engine, _, version = stem.partition("-")
        if engine not in engine_names() or version not in engine_versions(engine):
            raise DataError(f"data/flags/{stem}.yaml: no data/engines/{stem}.yaml for this release")
        flag_vocabulary(engine, version)
        counts["flag_vocabularies"] += 1
    for stem in flags.stems("launchers"):  # serving stacks' workers (Dynamo): each names releases on file
        rel = stack_release(*stem.split("-", 1))
        for row in rel.images:
            if row.engine_version not in engine_versions(row.engine):
                raise DataError(f"{flags.where(stem, 'launchers')}: {row.repository} runs {row.engine} "
                                f"{row.engine_version}, which is not on file (data/engines/)")
    counts["moe_config_lists"] = 0
    for stem in loader.family("moe_configs").stems():  # each a release on file, with a kernel table of its own
        engine, _, version = stem.partition("-")
        if engine not in engine_names() or version not in engine_versions(engine) \
                or stem not in loader.family("kernels").stems():
            raise DataError(f"data/moe_configs/{stem}.yaml: no release on file with a kernel table of its own")
        moe_configs(engine, version)
        counts["moe_config_lists"] += 1
    for sub, family in (("parser", flags), ("carried", loader.family("kernels"))):
        for stem in family.stems(sub):
            if stem.partition("-")[0] not in engine_names() or stem.partition("-")[2] not in engine_versions(
                    stem.partition("-")[0]):
                raise DataError(f"{family.where(stem, sub)}: no data/engines/{stem}.yaml for this release")
    from .engines import _startup_table

    counts.update(validate_engines())  # every engine and library release, with its kernel table
    counts["startup_releases"] = len(_startup_table().releases)
    return counts


