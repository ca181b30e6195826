"""``validate --bench`` and ``calibrate --from-bench``: the user's benchmark files against the model, and the
deployment profile fitted to them (docs/calibration.md §10)."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import catalog, defaults
from ..errors import InputError

if TYPE_CHECKING:
    from ..calibration.bench import BenchRun
    from ..calibration.serving_fit import Sample
    from ..calibration.site import BenchPoint, BenchValidation, SiteCalibration
    from ..perf.loop import LoopTerms
    from .e2e import Setup

KV_FLAGS = {"fp8": "kv-fp8", "fp8_e4m3": "kv-fp8", "fp8_e5m2": "kv-fp8-e5m2"}  # the engines' --kv-cache-dtype values


def read_runs(files: list[str | Path], given: dict[str, Any]) -> list[BenchRun]:
    """Every run of ``files``, the workload fields a file does not record filled from ``given``; a run
    whose workload is still incomplete is an InputError naming the fields and the flags that give them."""
    from ..calibration.bench import parse_bench, with_workload
    from ..files import read_text
    from ..inputs import check

    if not files:
        raise InputError("give at least one benchmark result file", field="bench")
    for field in ("tp", "concurrency", "prompt", "output"):
        check(field, given.get(field))  # the flags that fill a file's gaps: the one input layer
    runs = []
    for f in files:
        p = Path(f)
        text = read_text(p)
        runs += [with_workload(r, given) for r in parse_bench(p.name if len(files) > 1 else str(p), text)]
    for r in runs:
        miss = r.missing()
        if miss:
            flags = ", ".join(f"--{m}" for m in miss)
            raise InputError(f"{r.file} (run {r.index + 1}, {r.format}): the file does not say the {', '.join(miss)} "
                             f"it measured; give {flags}", field=miss[0])
    return runs


def unique_files(files: list[str | Path]) -> tuple[list[str | Path], list[str]]:
    """``files`` with each file once (the same file named again, by another spelling or a link: its runs would
    count twice), and a note per name left out."""
    from ..files import resolved

    seen: dict[Path, str | Path] = {}
    notes = []
    for f in files:
        key = resolved(f)
        if key in seen:
            again = "" if str(seen[key]) == str(f) else f" (as {seen[key]})"
            notes.append(f"{f}: named before{again}; its runs are read once")
            continue
        seen[key] = f
    return list(seen.values()), notes


def _scheme(run: BenchRun, config: str) -> tuple[Any, str]:
    """(the scheme that prices the run — a preset id, or the checkpoint as shipped —, where it came from)."""
    from ..catalog.resolve import find_config, shipped_scheme
    from ..model.parse import parse_config

    if run.scheme:
        return run.scheme, run.recovered.get("scheme", "the file")
    doc = catalog.validation_config(config)
    src, cfg = (None, doc) if doc is not None else find_config(config)
    native = shipped_scheme(parse_config(cfg, config), src, cfg)
    if native is not None:
        return native.scheme, f"not recorded: the checkpoint as shipped ({native.scheme.id}; give --scheme)"
    told = f" (the server's --quantization {run.quantization} is not a scheme; give --scheme)" if run.quantization else ""
    return "bf16", f"not recorded: bf16 weights assumed{told or ' (give --scheme)'}"


def _setup(run: BenchRun, cache: dict[Any, Any]) -> tuple[Setup, dict[str, Any], list[str]]:
    from .e2e import setup

    notes: list[str] = []
    assert run.model is not None and run.gpu is not None
    engine = run.engine or defaults.ENGINE
    model = catalog.find_bundled_model(run.model)
    config = model.id if model is not None else run.model
    scheme, scheme_from = _scheme(run, config)
    if not run.scheme:
        notes.append(f"scheme {scheme_from}")
    kv = KV_FLAGS.get((run.kv_cache_dtype or "").lower())
    st = setup(cache, config=config, scheme=scheme, gpu=run.gpu, tp=run.tp or 1, engine=engine,
               version=run.engine_version, kv_dtype=kv)
    if run.engine_version and run.engine_version != st.version:
        notes.append(f"{engine} {run.engine_version} is not on file: priced as {engine} {st.version}")
    workload = {"model": config, "gpu": st.gpu.id, "tp": run.tp or 1, "engine": engine, "engine_version": st.version,
                "scheme": scheme if isinstance(scheme, str) else scheme.id, "kv_dtype": kv or "kv-bf16", "concurrency": run.concurrency,
                "prompt": round(run.prompt or 0), "output": round(run.output or 0), "mode": run.mode}
    return st, workload, notes


def _predict(run: BenchRun, st: Setup, terms: LoopTerms | None) -> tuple[Any, Any]:
    from ..calibration.site import Figures
    from ..perf.serving import Lengths, serve_loop

    prompt, output = max(1, round(run.prompt or 1)), max(1, round(run.output or 1))
    lengths = Lengths(prompt=prompt, output=output, decode_ctx=prompt + output // 2, mode=run.mode)
    p = serve_loop(st.sm, lengths, int(run.concurrency or 1), replace(st.loop, terms=terms))
    fig = Figures(output_tok_s=p.tokens_per_s, ttft_s=p.ttft_s, tpot_s=p.itl_s, e2e_s=p.e2e_s)
    return fig, p


def _price_runs(runs: list[BenchRun], site: tuple[LoopTerms, ...]) -> list[BenchPoint]:
    from ..calibration.site import compare

    cache: dict[Any, Any] = {}
    out = []
    for r in runs:
        st, workload, notes = _setup(r, cache)
        terms = catalog.pick_terms(workload["engine"], st.gpu, st.version, site)
        fig, p = _predict(r, st, terms)
        out.append(compare(r, workload, fig, bound=p.loop.bound if p.loop else "",
                           terms=terms.label() if terms is not None else None, notes=notes,
                           band=_band(r, st, p, terms)))
    return out


def _band(run: BenchRun, st: Setup, p: Any, terms: LoopTerms | None) -> float | None:
    """The prediction's whole band (perf.uncertainty): its kernels' at the sequences it runs, with the
    serving loop terms' held-out band added in quadrature. None where the GPU has no bands."""
    from ..perf.uncertainty import step_bands, with_loop

    bands = st.sm.eff.bands
    if bands is None:
        return None
    prompt, output = max(1, round(run.prompt or 1)), max(1, round(run.output or 1))
    running = p.loop.running if p.loop is not None else int(run.concurrency or 1)
    _, _, u = step_bands(st.sm, bands, running, prompt + output // 2, prompt, p.prefill_share)
    return with_loop(u, terms.uncertainty if terms is not None else None)


def validate_bench(files: list[str | Path], *, max_error: float = defaults.MAX_VALIDATION_ERROR,
                   profile: str | Path | None = None, **given: Any) -> BenchValidation:
    """Predicted vs measured for every run of the benchmark result ``files`` (``vllm bench serve``
    JSON, ``vllm bench latency`` / ``throughput`` JSON, SGLang ``bench_serving`` JSONL, genai-perf and
    GuideLLM exports): output tokens/s, TTFT, TPOT and E2E, with the workload each run's file recorded
    (``given``: the fields it does not — model, gpu, tp, scheme, kv_cache_dtype, engine, engine_version,
    concurrency, prompt, output). ``profile``: a deployment profile (``calibrate --from-bench``) whose terms
    price them, else the shipped terms. ``.passed`` / ``.exit_code()``: every run's output tokens/s within
    ``max_error`` (a fraction)."""
    from ..calibration.site import validation
    from ..catalog.resolve import load_site_terms

    files, notes = unique_files(list(files))
    runs = read_runs(files, given)
    site = load_site_terms(profile)
    return validation([str(f) for f in files], _price_runs(runs, site), max_error=max_error,
                      profile=str(profile) if profile is not None else None).model_copy(update={"notes": notes})


def calibrate_from_bench(files: list[str | Path], *, out: str | Path | None = None,
                         holdout: list[str | Path] | None = None, **given: Any) -> SiteCalibration:
    """Fit a deployment profile to benchmark result ``files``: per GPU, engine and release the serving
    loop's terms (as many as the runs pin; the rest keep the shipped values), each file left out in turn
    to say how well the others predict it; ``holdout`` files are priced by the fitted profile and not
    fitted. Writes the profile to ``out`` (default ``site.yaml``): ``recommend``, ``roofline``, ``size`` and
    ``check`` take it with ``--profile``."""
    from ..calibration.e2e import band
    from ..calibration.serving_fit import Sample, median
    from ..calibration.site import SiteCalibration, site_terms
    from ..files import resolved, write_file
    from ..perf.loop import SiteFile, SiteProfile, cycle

    files, notes = unique_files(list(files))
    held, held_notes = unique_files(list(holdout or []))
    fitted = {resolved(f) for f in files}
    both = [str(f) for f in held if resolved(f) in fitted]
    if both:
        raise InputError(f"--holdout {both[0]} is also a file to fit: a held-out file must not be fitted; name it "
                         "once, with --holdout or without", field="holdout")
    fit_files = [str(f) for f in files]
    runs = read_runs(list(files), given)
    held_runs = read_runs(list(held), given) if held else []
    cache: dict[Any, Any] = {}
    groups: dict[tuple[str, str, str], list[tuple[Sample, Setup]]] = {}
    for r in runs:
        st, workload, _ = _setup(r, cache)
        cy = cycle(st.sm, st.loop, concurrency=int(r.concurrency or 1), prompt=round(r.prompt or 1),
                   output=round(r.output or 1), decode_ctx=round((r.prompt or 1) + (r.output or 1) / 2),
                   lockstep=r.mode == "sync")
        s = Sample(key=f"{r.file}#{r.index}", group=r.file, band=band(int(r.concurrency or 1)),
                   numerator=cy.running * round(r.output or 1), cycle=cy, measured=r.output_tok_s)
        groups.setdefault((st.gpu.id, workload["engine"], st.version), []).append((s, st))
    today = date.today()
    pid = f"site-{today.isoformat()}"
    terms: list[LoopTerms] = []
    lofo: list[float] = []
    for (gpu, engine, version), items in groups.items():
        samples = [s for s, _ in items]
        g = items[0][1].gpu
        base = catalog.pick_terms(engine, g, version)
        names = sorted({s.group for s in samples})
        key = {"engine": engine, "gpu": gpu, "version": version, "vendor": g.vendor.lower()}
        src = f"quantadvise calibrate --from-bench {' '.join(fit_files)} ({today.isoformat()})"
        for f in names if len(names) > 1 else ():
            rest = [s for s in samples if s.group != f]
            t = site_terms(rest, base=base, key=key, ident="probe", source=src, today=today, files=names)
            lofo += [abs(s.error(t)) for s in samples if s.group == f]
        t = site_terms(samples, base=base, key=key, ident=f"{pid}:{gpu}-{engine}-{version}", source=src,
                       today=today, files=names)
        if lofo:
            t = t.model_copy(update={"heldout_median_error": round(median(lofo), 4)})
        terms.append(t)
    profile = SiteProfile(kind="deployment", id=pid, serving=tuple(terms),
                          description=f"serving terms fitted to {len(runs)} benchmark runs of {len(fit_files)} "
                                      f"file{'s' if len(fit_files) != 1 else ''}")
    points = _price_runs(runs, profile.serving)
    held_points = _price_runs(held_runs, profile.serving) if held_runs else []
    site_files = [SiteFile(file=f, role="fitted", points=len(ps), median_abs_error=_med(ps))
                  for f in fit_files if (ps := [p for p in points if _same(p.file, f, fit_files)])]
    hold_names = [str(h) for h in held]
    site_files += [SiteFile(file=f, role="held-out", points=len(ps), median_abs_error=_med(ps))
                   for f in hold_names if (ps := [p for p in held_points if _same(p.file, f, hold_names)])]
    profile = profile.model_copy(update={"files": tuple(site_files)})
    path = Path(out) if out is not None else Path("site.yaml")
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise InputError(f"--out {path}: the profile is YAML; name the file .yaml", field="out")
    write_file(path, site_yaml(profile), "--out")  # a FIFO never blocks, a device is refused
    errs = [abs(p.error.output_tok_s) for p in points if p.error.output_tok_s is not None]
    herrs = [abs(p.error.output_tok_s) for p in held_points if p.error.output_tok_s is not None]
    return SiteCalibration(profile_path=str(path), profile=profile, files=site_files, points=points + held_points,
                           median_abs_error=median(errs) if errs else None,
                           heldout_median_abs_error=(median(herrs) if herrs else median(lofo) if lofo else None),
                           notes=[f"held out by file: {'the --holdout files' if herrs else 'each file left out in turn'}"
                                  if herrs or lofo else "one file: nothing held out (give several, or --holdout)",
                                  *notes, *held_notes])


def _same(point_file: str, name: str, names: list[str]) -> bool:
    return point_file == (Path(name).name if len(names) > 1 else name)


def _med(points: list[BenchPoint]) -> float | None:
    from ..calibration.serving_fit import median

    e = [abs(p.error.output_tok_s) for p in points if p.error.output_tok_s is not None]
    return round(median(e), 4) if e else None


def site_yaml(profile: Any) -> str:
    """The deployment profile as YAML (``--profile`` reads it back)."""
    import yaml

    doc = profile.model_dump(mode="json", exclude_none=True)
    head = ("# A deployment profile written by `quantadvise calibrate --from-bench` (docs/calibration.md §10): the\n"
            "# serving loop's terms for this site's GPUs and engine releases, fitted to its own benchmark files.\n"
            "# recommend, roofline, size and check take it with --profile FILE.\n")
    return head + yaml.safe_dump(doc, sort_keys=False, width=100)
