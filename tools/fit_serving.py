"""Fit the serving loop's terms to the published end-to-end points and write data/serving_terms.yaml.

A maintainer script, run by hand after data/validation/e2e_points.yaml, data/serving.yaml or the kernel
pricing changes (docs/calibration.md §9):

    python tools/fit_serving.py            # fit, print the errors per band, write data/serving_terms.yaml
    python tools/fit_serving.py --dry-run  # fit and print only
    python tools/fit_serving.py --keep-terms  # keep the fitted values, recompute their errors and bands

One set of terms per engine on NVIDIA GPUs, fitted on every point of that engine whose group is not held
out (``heldout`` in the points file: whole sources, or whole source files of S2 — never single points); one
set for AMD GPUs (any engine), fitted on the AMD points outside the held-out groups, with fewer terms
(few points) and labelled unvalidated, its uncertainty the 90th percentile of its held-out |error|. The NVIDIA
terms' uncertainty is the 68th percentile of their held-out |error| (one sigma, the percentile of the kernels'
bands): the band the serving loop adds to every absolute figure it prices (advisor.speed.uncertainty_of). `quantadvise validate
--e2e` recomputes every figure from the shipped points and terms.
"""

from __future__ import annotations

import argparse
import sys
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from quantadvise.api.e2e import points_table, samples  # noqa: E402
from quantadvise.calibration.serving_fit import fit_values, median  # noqa: E402
from quantadvise.catalog.serving import shipped_terms  # noqa: E402
from quantadvise.perf.loop import TERMS, LoopTerms  # noqa: E402

AMD_TERMS = ("layer_s", "decode_scale", "prefill_scale")
OUT = REPO / "data" / "serving_terms.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--keep-terms", action="store_true",
                    help="keep the fitted values on file and only recompute their errors, notes and bands under "
                         "today's kernel pricing (a pricing change judged without refitting the loop)")
    a = ap.parse_args()
    kept = {t.id: t for t in shipped_terms()} if a.keep_terms else {}
    table = points_table()
    held = set(table.heldout)
    rows, _ = samples(table)
    rows = [r for r in rows if not r[0].pairs_only]  # speed-up pairs only (S8): never fitted, never banded
    today = date.today()
    groups = {
        "vllm": ([s for p, s, st in rows if p.engine == "vllm" and st.gpu.vendor.lower() == "nvidia"], TERMS,
                 {"engine": "vllm", "vendor": "nvidia"}),
        "sglang": ([s for p, s, st in rows if p.engine == "sglang" and st.gpu.vendor.lower() == "nvidia"], TERMS,
                   {"engine": "sglang", "vendor": "nvidia"}),
        "amd": ([s for p, s, st in rows if st.gpu.vendor.lower() == "amd"], AMD_TERMS, {"vendor": "amd"}),
    }
    out = []
    for tid, (pts, which, keys) in groups.items():
        train = [s for s in pts if s.group not in held]
        test = [s for s in pts if s.group in held]
        values = ({k: v for k in which if (v := getattr(kept[tid], k))} if tid in kept
                  else fit_values(train, which))
        as_of = kept[tid].as_of if tid in kept else today  # kept values keep the date they were fitted
        fitted_on = sorted({s.group for s in train})
        probe = LoopTerms(id=tid, source="probe", as_of=as_of, **keys, **values)
        herr = median([abs(s.error(probe)) for s in test]) if test else None
        ferr = median([abs(s.error(probe)) for s in train]) if train else None
        amd = tid == "amd"
        note = (f"fitted on {len(train)} points ({', '.join(fitted_on)}); median |error| {ferr:.1%} on them"
                + (f", {herr:.1%} on {len(test)} held-out points ({', '.join(sorted({s.group for s in test}))})"
                   if herr is not None else ""))
        if amd:
            note += ("; no ROCm kernel is measured per kernel here: the kernels keep the default efficiency profile "
                     "(data/perf_profile.yaml) and these terms carry the rest, so a figure outside the models and "
                     "engines fitted is unvalidated")
        terms = LoopTerms(
            id=tid, **keys, **values, points=len(train), fitted_on=tuple(fitted_on),
            heldout_median_error=round(herr, 4) if herr is not None else None, validated=not amd,
            uncertainty=(_p90([abs(s.error(probe)) for s in test]) if amd
                         else _p68([abs(s.error(probe)) for s in test]) if test else None), note=note,
            source=f"tools/fit_serving.py on {Path('data/validation/e2e_points.yaml')} (sources in its header), "
                   f"non-negative least |relative error| of the cycle",
            as_of=as_of)
        out.append(terms)
        print(f"{tid}: {len(train)} fitted, {len(test)} held out; fitted median |error| {ferr:.1%}"
              + (f", held-out {herr:.1%}" if herr is not None else ""))
        print("   " + ", ".join(f"{k}={v:g}" for k, v in values.items()))
    if a.dry_run:
        return
    lines = ["# The serving loop's fitted end-to-end terms (quantadvise.perf.loop.LoopTerms), written by",
             "# tools/fit_serving.py from data/validation/e2e_points.yaml; do not edit by hand (rerun the tool).",
             "# Units: seconds (layer_s per decoder layer per forward pass, pass_s per pass, seq_s per sequence per",
             "# decode step, eager_layer_s per layer per step past the largest CUDA graph, allreduce_s per all-reduce",
             "# per pass, allreduce_token_s per token per all-reduce x (tp - 1) / tp); prefill_scale and decode_scale",
             "# are fractions added to the kernels' time. docs/calibration.md §8 has the model and the errors.",
             "schema_version: 1", "terms:"]
    for t in out:
        d = t.model_dump(mode="json", exclude_defaults=True)
        d["id"], d["source"], d["as_of"] = t.id, t.source, t.as_of.isoformat()
        lines.append(f"  - id: {t.id}")
        for k, v in d.items():
            if k == "id":
                continue
            lines.append(f"    {k}: {_yaml(v)}")
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}")


def _p90(errs: list[float]) -> float:
    """The 90th percentile of the held-out |errors| (at least 25%): the band a figure of these terms carries."""
    if not errs:
        return 1.0
    s = sorted(errs)
    return round(max(0.25, s[min(len(s) - 1, int(0.9 * len(s)))]), 2)


def _p68(errs: list[float]) -> float:
    """The 68th percentile of the held-out |errors| (one sigma, as the kernels' bands): the band the loop adds."""
    s = sorted(errs)
    return round(s[min(len(s) - 1, int(0.68 * len(s)))], 3)


def _yaml(v: object) -> str:
    import json

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(json.dumps(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


if __name__ == "__main__":
    main()
