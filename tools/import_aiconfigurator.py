"""Maintainer script: fit the shipped kernel profiles (data/profiles/<gpu>.yaml) to NVIDIA's published
per-kernel tables in aiconfigurator-core, and keep their held-out data (data/profiles/heldout/<gpu>.yaml).

Run by hand, never at runtime:

    pip download aiconfigurator-core==0.12.0 --no-deps -d /tmp/aic && unzip -q /tmp/aic/*.whl -d /tmp/aic/x
    pip install pandas pyarrow scipy            # what the tables and the fit need
    python tools/import_aiconfigurator.py --source /tmp/aic/x [--gpu h200 ...]

Writes one profile per GPU (every curve with its table, kernel name, engine release, package version
and as_of) and prints each kernel's held-out error. `quantadvise validate <gpu>-measured` recomputes the
held-out errors from the written files alone.
"""

from __future__ import annotations

import argparse
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from quantadvise import catalog  # noqa: E402
from quantadvise.calibration import aiconfigurator as aic  # noqa: E402
from quantadvise.calibration.profile_file import profile_yaml  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", help="the unpacked aiconfigurator-core wheel (default: the installed package)")
    ap.add_argument("--gpu", action="append", help="quantadvise GPU id (default: every GPU the tables cover)")
    ap.add_argument("--out", default=str(ROOT / "data" / "profiles"))
    ap.add_argument("--as-of", default=date.today().isoformat())
    ap.add_argument("--refresh-proxies", action="store_true",
                    help="keep the fitted curves of the profiles on file and only redo the stand-ins (after a kernel "
                         "table changes); needs no tables")
    ap.add_argument("--gemm-m-tile", action="store_true",
                    help="price the dense GEMMs' compute in 64-row M tiles on sm90 / sm100 (lower worst-case held-out "
                         "error on H100 / H200 / B200, but it moves advisor decisions at batch 1 and 65: "
                         "docs/calibration.md §7); off for the shipped profiles")
    ap.add_argument("--tables", action="store_true",
                    help="write the lookup tables (data/kernel_tables/<gpu>.yaml and <gpu>/*.csv.gz) of the GPUs they "
                         "cover, their held-out errors and uncertainty bands; needs --wheels for the TensorRT-LLM "
                         "weight-only / SmoothQuant tables of the older aiconfigurator wheels")
    ap.add_argument("--wheels", help="folder with aiconfigurator==0.7.0 and 0.10.0 wheels (pip download "
                                     "aiconfigurator==X --no-deps -d DIR)")
    ap.add_argument("--checks", action="store_true",
                    help="recompute only the held-out checks and bands from the tables on file (after a change to the "
                         "lookup); needs no download")
    ap.add_argument("--moe", action="store_true",
                    help="keep the profiles on file and add (or refit) only the fused-MoE curves of perf.aiconfigurator."
                         "MOE_SPECS and their held-out data")
    args = ap.parse_args(argv)
    as_of = date.fromisoformat(args.as_of)
    wanted = {catalog.get_gpu(g).id for g in args.gpu} if args.gpu else None
    runs = {}
    for engine in ("vllm", "sglang"):
        table = catalog.kernel_table(engine, catalog.get_engine(engine).version)
        runs[engine] = table.kernels if table is not None else ()
    out = Path(args.out)
    if args.refresh_proxies:
        return refresh(out, runs, wanted)
    if args.checks:
        return checks_only(ROOT / "data" / "kernel_tables", as_of, wanted)
    root = aic.data_root(args.source)
    version = aic.package_version(root)
    if args.tables:
        return tables(root, version, Path(args.wheels) if args.wheels else None, ROOT / "data" / "kernel_tables",
                      as_of, wanted)
    if args.moe:
        return add_moe(out, root, version, date.fromisoformat(args.as_of), wanted)
    (out / "heldout").mkdir(parents=True, exist_ok=True)
    for system, gid in aic.SYSTEMS.items():
        if wanted is not None and gid not in wanted:
            continue
        if not (root / system).is_dir():
            print(f"{gid}: no tables ({system})", file=sys.stderr)
            continue
        gpu = catalog.get_gpu(gid)
        parts, held = aic.import_gpu(root, system, gpu, pkg_version=version, as_of=as_of, gemm_tiles=args.gemm_m_tile)
        parts["kernels"] = aic.add_proxies(parts["kernels"], parts["quant_kernels"], runs)
        source = f"{aic.PACKAGE} {version} ({aic.LICENSE}), systems/data/{system}; tools/import_aiconfigurator.py"
        profile = aic.build_profile(gpu, parts, pkg_version=version, as_of=as_of, source=source)
        (out / f"{gid}.yaml").write_text(profile_yaml(profile), encoding="utf-8")
        (out / "heldout" / f"{gid}.yaml").write_text(aic.heldout_yaml(gid, source, as_of, held), encoding="utf-8")
        for key, c in profile.gpus[0].kernels.items():
            h = c.heldout
            err = (f"held-out calls: median {h.gemm_median:.1%}, max {h.gemm_max:.1%} (n={h.gemm_points}); steps: median "
                   f"{h.step_median:.1%}, max {h.step_max:.1%} (n={h.step_points})") if h else c.basis
            print(f"{gid:12s} {key:36s} {err}")
    return 0


def tables(root: Path, version: str, wheels: Path | None, out: Path, as_of: date, wanted: set[str] | None) -> int:
    """Write the lookup tables of every covered GPU (index + tables), then the held-out checks computed from
    them (checks/<gpu>.yaml) and the bands every prediction reads (bands.yaml, every GPU with checks)."""
    import yaml

    from quantadvise.calibration import aic_tables

    (out / "checks").mkdir(parents=True, exist_ok=True)
    for system, gid in aic_tables.iter_systems(wanted):
        doc = aic_tables.export_gpu(root, version, wheels, system, out, as_of, catalog.get_gpu(gid).l2_cache_bytes)
        (out / f"{gid}.yaml").write_text(INDEX_HEADER + yaml.safe_dump(doc, sort_keys=False, width=120),
                                         encoding="utf-8")
        write_checks(out, gid, doc["source"], as_of)
    write_bands(out, as_of)
    return 0


def checks_only(out: Path, as_of: date, wanted: set[str] | None) -> int:
    """Recompute the held-out checks and the bands from the tables on file (after a change to the lookup)."""
    for gid in catalog.kernel_table_gpus():
        tables = catalog.kernel_tables(gid)
        if tables is not None and (wanted is None or gid in wanted):
            write_checks(out, gid, tables.index.source, as_of)
    write_bands(out, as_of)
    return 0


def write_checks(out: Path, gid: str, source: str, as_of: date) -> None:
    """One GPU's held-out checks (checks/<gpu>.yaml), computed from its tables on file."""
    import yaml

    from quantadvise.calibration.lookup_checks import gpu_checks

    catalog.kernel_tables.cache_clear()
    checks = gpu_checks(catalog.kernel_tables(gid), catalog.get_gpu(gid), catalog.default_perf_profile())
    head = {"schema_version": 1, "gpu": gid, "source": source + "; quantadvise.calibration.lookup_checks",
            "as_of": as_of}
    (out / "checks" / f"{gid}.yaml").write_text(CHECKS_HEADER + yaml.safe_dump({**head, **checks}, sort_keys=False,
                                                                               width=120), encoding="utf-8")
    for key, v in checks["bands"].items():
        print(f"{gid:10s} band {key:12s} median {v['median']:.1%} p68 {v['p68']:.1%} p90 {v['p90']:.1%} (n={v['n']})")


def write_bands(out: Path, as_of: date) -> None:
    """The bands every prediction reads (bands.yaml), from every GPU's checks on file."""
    import yaml

    bands = {}
    for path in sorted((out / "checks").glob("*.yaml")):
        got = yaml.safe_load(path.read_text(encoding="utf-8"))
        bands[got["gpu"]] = {b: {k: v[k] for k in ("n", "median", "p68", "p90", "max")} for b, v in got["bands"].items()}
    doc = {"schema_version": 1, "source": "held-out checks of the published lookup tables (data/kernel_tables/checks/; "
           "quantadvise.calibration.lookup_checks)", "as_of": as_of, "gpus": bands}
    (out / "bands.yaml").write_text(BANDS_HEADER + yaml.safe_dump(doc, sort_keys=False, width=120), encoding="utf-8")
    catalog.uncertainty_bands.cache_clear()


INDEX_HEADER = ("# Published per-kernel latency tables of one GPU, read by lookup (quantadvise.perf.kernel_tables;\n"
                "# docs/calibration.md §11). Written by tools/import_aiconfigurator.py --tables; do not edit by hand.\n")
CHECKS_HEADER = ("# Held-out checks of one GPU's lookup tables (quantadvise.calibration.lookup_checks; docs/calibration.md\n"
                 "# §11): recomputed by `quantadvise validate <gpu>`. Written by tools/import_aiconfigurator.py --tables.\n")
BANDS_HEADER = ("# The uncertainty bands per GPU and basis (held-out step errors |predicted / measured - 1|; a prediction's\n"
                "# ± is the 68th percentile, perf.uncertainty). Written by tools/import_aiconfigurator.py --tables.\n")


def refresh(out: Path, runs: dict, wanted: set[str] | None) -> int:
    """Redo the stand-in curves of the profiles in ``out`` from their measured curves, and each measured
    curve's recorded held-out error from its held-out document (what ``validate`` recomputes: after a
    change to how a curve is priced, e.g. its M factor read through its non-decreasing envelope)."""
    import yaml

    from quantadvise.calibration.validate import validate_kernels
    from quantadvise.perf.profiles import parse_profile

    for path in sorted(out.glob("*.yaml")):
        prof = parse_profile(catalog.load_yaml_file(path), str(path))
        entry = prof.gpus[0]
        if wanted is not None and entry.gpu not in wanted or not entry.kernels:
            continue
        held_path = out / "heldout" / f"{entry.gpu}.yaml"
        if held_path.is_file():
            held = yaml.safe_load(held_path.read_text(encoding="utf-8"))
            again = {v.curve: v.calls for v in validate_kernels(entry, held, catalog.get_gpu(entry.gpu))}
            entry = entry.model_copy(update={"kernels": {
                k: (c.model_copy(update={"heldout": again[k]}) if k in again else c) for k, c in entry.kernels.items()}})
        measured = {k: c for k, c in entry.kernels.items() if c.basis == "measured"}
        quants = {k: q for k, q in entry.quant_kernels.items() if q.basis == "measured"}
        kernels = aic.add_moe_proxies(aic.add_proxies(measured, quants, runs))  # the dense and the fused-MoE stand-ins
        new_entry = entry.model_copy(update={"kernels": dict(sorted(kernels.items())),
                                             "quant_kernels": dict(sorted(quants.items()))})
        path.write_text(profile_yaml(prof.model_copy(update={"gpus": (new_entry,)})), encoding="utf-8")
        print(f"{entry.gpu}: {sum(c.basis != 'measured' for c in kernels.values())} stand-in curves")
    return 0


def add_moe(out: Path, root: Path, version: str, as_of: date, wanted: set[str] | None) -> int:
    """Add the fused-MoE curves (perf.aiconfigurator.MOE_SPECS) to the profiles in ``out`` (and their
    held-out documents), leaving every other curve as it is."""
    import yaml

    from quantadvise.perf.profiles import parse_profile

    gids = {v: k for k, v in aic.SYSTEMS.items()}
    for path in sorted(out.glob("*.yaml")):
        prof = parse_profile(catalog.load_yaml_file(path), str(path))
        entry = prof.gpus[0]
        system = gids.get(entry.gpu)
        if system is None or (wanted is not None and entry.gpu not in wanted) or not entry.kernels:
            continue
        gpu = catalog.get_gpu(entry.gpu)
        kernels = dict(entry.kernels)
        held_path = out / "heldout" / f"{entry.gpu}.yaml"
        held = yaml.safe_load(held_path.read_text(encoding="utf-8"))
        for spec in aic.MOE_SPECS[1:]:
            got = aic.import_moe(root, system, gpu, spec, pkg_version=version, as_of=as_of)
            if got is None:
                print(f"{entry.gpu:12s} {spec.kid:36s} no table")
                continue
            curve, doc = got
            for key in [k for k, c in kernels.items() if c.kernel == spec.kid]:
                del kernels[key]
                held["kernels"].pop(key, None)
            kernels[curve.key] = curve
            held["kernels"][curve.key] = doc
            h = curve.heldout
            print(f"{entry.gpu:12s} {curve.key:36s} held-out layers: median {h.gemm_median:.1%}, max {h.gemm_max:.1%} "
                  f"(n={h.gemm_points})")
        kernels = aic.add_moe_proxies(kernels)
        new_entry = entry.model_copy(update={"kernels": dict(sorted(kernels.items()))})
        path.write_text(profile_yaml(prof.model_copy(update={"gpus": (new_entry,)})), encoding="utf-8")
        held_path.write_text(yaml.safe_dump(held, sort_keys=False, default_flow_style=None, width=140),
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
