"""``quantadvise validate --census``: what prices each decision scheme on each GPU with published tables,
under each engine's newest release on file — its kernel's own measured table, a same-math table, a
composition, a stand-in's curve or the roofline — and the shares (docs/calibration.md §11)."""

from __future__ import annotations

from .. import catalog, defaults
from ..calibration.lookup_checks import CENSUS_BAR, CensusResult, CensusRow
from ..catalog.resolve import load_profiles
from ..errors import QuantAdviseError

# the schemes the decisions are about (issue 25's census)
CENSUS_SCHEMES = ("bf16", "fp8-dynamic", "fp8-tensor", "fp8-block", "w8a8-int8", "w4a16", "awq", "gptq", "w4a8-fp8",
                  "nvfp4", "mxfp4")


def census(gpus: list[str] | None = None, schemes: list[str] | None = None, *,
           every_release: bool = False) -> CensusResult:
    """The basis of every (GPU, engine, scheme) cell's own layers, for the GPUs with published tables (or
    ``gpus``) under each engine's newest release (``every_release``: under every release on file, which pinned
    releases run other kernels for), and the share priced by the kernel's own table or a same-math one against
    the bar (``CENSUS_BAR``)."""
    from ..engines.kernel_refusals import refusal_of
    from ..perf.datapath import datapath
    from .speed import efficiency

    gids = [catalog.get_gpu(g).id for g in gpus] if gpus else list(catalog.kernel_table_gpus())
    sids = list(schemes or CENSUS_SCHEMES)
    rows: list[CensusRow] = []
    engines = []
    for gid in gids:
        g = catalog.get_gpu(gid)
        profiles = load_profiles(gpu=g)
        releases = [catalog.get_engine(name, v) for name in defaults.ENGINES
                    for v in (catalog.engine_versions(name) if every_release else [None])]
        for eng in releases:
            engines.append(f"{eng.engine} {eng.version}")
            for sid in sids:
                scheme = catalog.get_scheme(sid)
                try:
                    datapath(scheme, g)
                    eff = efficiency(profiles, g, scheme, engine=eng.engine, version=eng.version)
                except QuantAdviseError:
                    rows.append(CensusRow(gpu=gid, engine=eng.engine, engine_version=eng.version, scheme=sid,
                                          kernel=None, basis="n/a", source=None))
                    continue
                k = eff.kernels
                ch = k.layer_choice if k is not None else None
                if ch is not None and refusal_of(eng.kernel_refusals, ch.kernel.id, g.capability, g.platform):
                    ch = None  # the release picks the kernel and stops on it at start-up (int8 GEMMs on SM100+)
                rows.append(CensusRow(gpu=gid, engine=eng.engine, engine_version=eng.version, scheme=sid,
                                      kernel=ch.kernel.id if ch is not None else None,
                                      basis=(k.basis if ch is not None else "n/a") if k is not None else "roofline",
                                      source=k.source_key if k is not None and ch is not None else None))
    served = [r for r in rows if r.basis != "n/a"]
    shares: dict[str, dict[str, float]] = {}
    for key, sel in [(f"{gid} {e}", [r for r in served if r.gpu == gid and r.engine == e])
                     for gid in gids for e in defaults.ENGINES] + [("all", served)]:
        if sel:
            shares[key] = {b: round(sum(r.basis == b for r in sel) / len(sel), 4)
                           for b in sorted({r.basis for r in sel})}
    good = sum(r.basis in ("measured", "same-math") for r in served) / len(served) if served else 0.0
    stuck = [f"{r.gpu} {r.engine}{f' {r.engine_version}' if every_release else ''} {r.scheme}" for r in served
             if r.basis == "roofline" and _math_table(r)]
    return CensusResult(gpus=gids, engines=list(dict.fromkeys(engines)), schemes=sids, rows=rows, shares=shares,
                        measured_or_same_math=round(good, 4), bar=CENSUS_BAR, roofline_with_table=stuck,
                        passed=good >= CENSUS_BAR and not stuck)


def _math_table(r: CensusRow) -> bool:
    """Whether the GPU ships a table of the math the cell's scheme runs on (a roofline cell then is a defect)."""
    tabs = catalog.kernel_tables(r.gpu)
    if tabs is None:
        return False
    math = catalog.get_scheme(r.scheme).math_format
    return any(t.math == math for t in tabs.index.tables)
