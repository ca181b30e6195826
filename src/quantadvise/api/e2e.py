"""``validate --e2e``: the serving-loop model on the published end-to-end points, and the samples the
fit of its terms reads (``tools/fit_serving.py``; docs/calibration.md §9)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from .. import catalog
from ..results import record

if TYPE_CHECKING:
    from datetime import date

    from ..calibration.e2e import E2EPoint, E2EReport, E2ETable
    from ..calibration.serving_fit import Sample
    from ..hardware import GPU
    from ..perf.loop import EngineLoop, LoopTerms
    from ..perf.step import StepModel

POINTS_FILE = "data/validation/e2e_points.yaml"


@record(frozen=False)
class Setup:
    """What prices one deployment: its step model and its serving loop (terms left out)."""

    sm: StepModel
    loop: EngineLoop
    gpu: GPU
    version: str


def release_on_file(engine: str, version: str | None, measured: date | None = None) -> str:
    """The release on file that stands in for ``version`` (the newest not newer, else the oldest). An
    unstated release: the newest on file published by ``measured``, the date the run was measured (a run
    cannot have used a later release; data/engine_releases.yaml), else the newest."""
    from ..engines.versions import nearest_version, version_key

    versions = catalog.engine_versions(engine)
    if not version or not version_key(version):
        dates = catalog.release_dates(engine) if measured is not None else {}
        if measured is None or not dates:
            return versions[-1]
        then = [v for v in versions if v in dates and dates[v] <= measured]
        return then[-1] if then else versions[0]
    return nearest_version(versions, version)


def load_arch(config: str) -> Any:
    """A bundled model, else a config shipped for the validation points."""
    from ..catalog.resolve import load_model

    doc = catalog.validation_config(config)
    return load_model(doc)[0] if doc is not None else load_model(config)[0]


def setup(cache: dict[Any, Setup], *, config: str, scheme: Any, gpu: str, tp: int, engine: str,
          version: str | None, kv_dtype: str | None, kv_limit: bool = True, ep: int = 1,
          measured: date | None = None) -> Setup:
    """The step model and loop of one deployment as the engine release starts it by default: its memory
    fraction and reserve leave the KV room the loop's running set is held to (``kv_limit``). ``ep`` > 1: the
    routed experts sharded over the TP group (SGLang ``--ep-size``, vLLM ``--enable-expert-parallel``), priced
    as a layout (:class:`~quantadvise.perf.parallel.LayoutStep`) with the GPU's measured communication."""
    from ..catalog.resolve import get_gpu, load_profiles, resolve_kv, resolve_scheme
    from ..engines.startup import default_reserve_gb, share_of_gpu
    from ..memory.sizing import memory_budget, size_model
    from ..perf.datapath import datapath
    from ..perf.step import StepModel
    from .speed import efficiency

    rel = release_on_file(engine, version, measured)
    key = (config, scheme if isinstance(scheme, str) else scheme.id, gpu, tp, engine, rel, kv_dtype, kv_limit, ep)
    if key in cache:
        return cache[key]
    arch = load_arch(config)
    g = get_gpu(gpu)
    s = resolve_scheme(scheme)
    kv, _ = resolve_kv(kv_dtype) if kv_dtype else (None, None)
    if kv is not None and not kv.is_quantized:
        kv = None
    eff = efficiency(load_profiles(False, None, g), g, s, engine=engine, version=rel)
    sm = StepModel(arch, s, g, kv=kv, gpus=tp, efficiency=eff, path=datapath(s, g))
    if ep > 1:
        sm = _expert_parallel(sm, ep=ep, engine=engine)
    room = None
    if kv_limit:
        startup = catalog.engine_startup(engine, rel)
        frac, _ = share_of_gpu(startup, g.memory_bytes, g.vendor, tp=tp, mla=arch.is_mla, model_path=config)
        reserve = int(default_reserve_gb(engine)[0] * 1024**3)
        budget = memory_budget(g.memory_bytes, gpus=tp, memory_utilization=frac, reserve_bytes=reserve).budget_bytes
        room = float(budget - size_model(arch, s).total_bytes)
    loop = catalog.engine_loop(g, engine, rel, tp=tp, kv_room_bytes=room)
    cache[key] = Setup(sm=sm, loop=loop, gpu=g, version=rel)
    return cache[key]


def _expert_parallel(sm: StepModel, *, ep: int, engine: str) -> StepModel:
    """``sm`` (the TP group's step) with its routed experts sharded over the ``ep`` GPUs of the group."""
    from ..errors import InputError
    from ..perf.comm import Comm
    from ..perf.parallel import LayoutStep, Parallel
    from ..perf.step import StepModel

    if not sm.arch.is_moe or ep != sm.tp:
        raise InputError(f"expert parallelism over {ep} of {sm.tp} GPUs is not a layout quantadvise prices "
                         "(it shards the routed experts over the whole TP group)", field="ep")
    row = catalog.comm_system(sm.gpu.id)
    if row is None:
        raise InputError(f"no communication figures on file for {sm.gpu.id}: expert parallelism not priced",
                         field="ep")
    one = StepModel(sm.arch, sm.scheme, sm.gpu, kv=sm.kv, gpus=1, efficiency=sm.eff, path=sm.path)
    return LayoutStep(sm, Parallel(tp=sm.tp, ep=True), Comm(row, engine), experts=one)


def points_table() -> E2ETable:
    from pydantic import ValidationError

    from ..calibration.e2e import E2ETable
    from ..errors import DataError, format_validation_error

    try:
        return E2ETable.model_validate(catalog.e2e_points())
    except ValidationError as exc:
        raise DataError(format_validation_error(exc, POINTS_FILE)) from None


def samples(table: E2ETable | None = None) -> tuple[list[tuple[E2EPoint, Sample, Setup]], dict[str, int]]:
    """Every point quantadvise can price as a fit sample (its cycle without terms), and why the others
    cannot be priced (reason -> count)."""
    from ..calibration.e2e import band
    from ..calibration.serving_fit import Sample
    from ..errors import QuantAdviseError
    from ..perf.loop import cycle

    table = table or points_table()
    cache: dict[Any, Setup] = {}
    out = []
    skipped: Counter[str] = Counter()
    for p in table.points:
        if p.skip:
            skipped[p.skip] += 1
            continue
        assert p.config and p.scheme and p.prompt and p.output and p.concurrency and p.output_tok_s
        try:
            st = setup(cache, config=p.config, scheme=p.scheme, gpu=p.gpu, tp=p.tp, engine=p.engine,
                       version=p.engine_version, kv_dtype=p.kv_dtype, ep=p.ep, measured=p.as_of)
        except QuantAdviseError as exc:
            skipped[f"quantadvise cannot price it: {exc.message.split(';')[0]}"] += 1
            continue
        cy = cycle(st.sm, st.loop, concurrency=p.concurrency, prompt=p.prompt, output=p.output,
                   decode_ctx=p.prompt + p.output // 2, lockstep=p.mode == "sync")
        out.append((p, Sample(key=p.id, group=p.group, band=band(p.concurrency), numerator=cy.running * p.output,
                              cycle=cy, measured=p.output_tok_s), st))
    return out, dict(skipped)


def validate_e2e(*, bar: float | None = None) -> E2EReport:
    """The serving-loop model, with the shipped terms, on every published end-to-end point it can price:
    median |error| of output tokens/s per concurrency band, over all points, the fitted sources and the
    held-out ones, beside aiconfigurator 0.12.0 on the same points. ``.passed`` / ``.exit_code()``: every
    gated band within ``bar`` (default 10%) and no worse than aiconfigurator."""
    from ..calibration.e2e import BAR, report

    table = points_table()
    rows, skipped = samples(table)
    priced: list[tuple[E2EPoint, Sample, LoopTerms | None]] = [(p, s, st.loop.terms) for p, s, st in rows]
    used = sorted({t.label() for _, _, t in priced if t is not None})
    return report(priced, table, terms=used, skipped=skipped, points_file=POINTS_FILE,
                  bar=BAR if bar is None else bar)
