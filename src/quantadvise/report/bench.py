"""``validate --bench``, ``validate --e2e`` and ``calibrate --from-bench``: human tables."""

from __future__ import annotations

from statistics import median
from typing import TYPE_CHECKING

from .text import Table, wrap

if TYPE_CHECKING:
    from ..advisor.result import Recommendation
    from ..calibration.e2e import E2EReport
    from ..calibration.site import BenchPoint, BenchValidation, SiteCalibration


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:+.1f}%"


def _abs(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:,.1f}"


def _para(lines: list[str], texts: list[str], width: int | None) -> None:
    for text in texts:
        lines += wrap(text, width, subsequent="  ")


def _points_table(points: list[BenchPoint], width: int | None) -> list[str]:
    # the workload whole; the file (named again under the table) and the latencies give way at a narrow width
    t = Table(["file", "run", "workload", "tok/s", "pred", "err", "TTFT ms m/p", "TPOT ms m/p", "E2E s m/p", "bound"],
              align="lrlrrrrrrl", drop=["bound", "E2E s m/p", "run", "file", "TPOT ms m/p", "TTFT ms m/p"],
              flex=["file"], flex_min={"file": 12})
    for p in points:
        w = p.workload
        work = (f"{w['model'].split('/')[-1]} {w['scheme']} {w['gpu']} TP{w['tp']} c{w['concurrency']} "
                f"{w['prompt']}/{w['output']}")
        e2e = (f"{p.measured.e2e_s:,.2f}/{p.predicted.e2e_s:,.2f}" if p.measured.e2e_s and p.predicted.e2e_s else "-")
        t.add(p.file, str(p.index + 1), work, f"{p.measured.output_tok_s:,.0f}", f"{p.predicted.output_tok_s or 0:,.0f}",
              _pct(p.error.output_tok_s), f"{_ms(p.measured.ttft_s)}/{_ms(p.predicted.ttft_s)}",
              f"{_ms(p.measured.tpot_s)}/{_ms(p.predicted.tpot_s)}", e2e, p.bound)
    return [t.render(width), *wrap("tok/s: the run's output tokens/s; pred: the prediction; m/p: measured / predicted",
                                   width, subsequent="  ")]


def _recovered(points: list[BenchPoint], width: int | None) -> list[str]:
    lines: list[str] = []
    for p in points:
        where = "; ".join(f"{k} from {v}" for k, v in p.recovered.items())
        _para(lines, [f"{p.file} run {p.index + 1} ({p.format}): {where}"], width)
        _para(lines, [f"  note: {n}" for n in p.notes], width)
    return lines


def bench_table(r: BenchValidation, width: int | None = None) -> str:
    lines: list[str] = []
    _para(lines, [f"validate --bench: {len(r.points)} run{'s' if len(r.points) != 1 else ''} of {len(r.files)} "
                  f"file{'s' if len(r.files) != 1 else ''}, predicted by the serving-loop model ("
                  + (f"deployment profile {r.profile}" if r.profile else "the shipped terms") + ")"], width)
    lines.append("")
    lines += _points_table(r.points, width)
    lines.append("")
    lines += _recovered(r.points, width)
    terms = sorted({p.terms for p in r.points if p.terms})
    _para(lines, [f"terms: {t}" for t in terms], width)
    _para(lines, [f"note: {n}" for n in r.notes], width)
    judged = [p for p in r.points if p.inside is not None]
    if judged:
        inside = sum(1 for p in judged if p.inside)
        _para(lines, [f"band: {inside} of {len(judged)} runs' output tokens/s inside the predicted band (each "
                      "prediction's kernels' and serving loop's one-sigma bands; about two in three is what "
                      "the bands promise)"], width)
    verdict = (f"{'PASS' if r.passed else 'FAIL'}: output tokens/s median |error| {_abs(r.median_abs_error)}, worst "
               f"{_abs(r.max_abs_error)} ({'within' if r.passed else 'past'} --max-error {r.max_error * 100:g}%"
               + ("" if r.passed else "; exit 1") + ")")
    _para(lines, [verdict], width)
    return "\n".join(lines)


def e2e_table(r: E2EReport, width: int | None = None) -> str:
    lines: list[str] = []
    _para(lines, [f"validate --e2e: the serving-loop model on {len(r.points)} published end-to-end points "
                  f"({r.points_file}); held out (never fitted): {', '.join(r.heldout_groups)}; aic: aiconfigurator "
                  "on the points it expresses (aic n), ours on the same points beside it"], width)
    lines.append("")
    t = Table(["points", "band", "n", "median |err|", "signed", "aic n", "ours there", "aic"], align="llrrrrrr",
              drop=("signed",))
    for b in r.bands:
        if not b.points:
            continue
        t.add(b.set, b.band, str(b.points), _abs(b.median_abs_error), _pct(b.median_error), str(b.aic_points),
              _abs(b.median_abs_error_on_aic_points), _abs(b.aic_median_abs_error))
    lines += [t.render(width), ""]
    _para(lines, [f"terms: {t}" for t in r.terms], width)
    _para(lines, [f"band: {c}" for c in r.coverage], width)
    lines += _speedup_lines(r, width)
    _para(lines, [f"not priced: {n} point{'s' if n != 1 else ''}: {why}" for why, n in r.skipped.items()], width)
    _para(lines, [f"{'PASS' if r.passed else 'FAIL'}: " + "; ".join(r.verdict)
                  + ("" if r.passed else " (exit 1)")], width)
    return "\n".join(lines)


def _speedup_lines(r: E2EReport, width: int | None) -> list[str]:
    """The speed-ups: pairs of points that differ only in their quantization, per GPU / engine / model / choices."""
    sm = r.speedup_summary
    if sm is None:
        return []
    lines: list[str] = []
    aic = (f"; aiconfigurator on the {sm.aic_pairs} pairs it expresses {_abs(sm.aic_median_abs_error)} "
           f"(ours there {_abs(sm.median_abs_error_on_aic_pairs)})" if sm.aic_pairs else "")
    held = f"; held out {_abs(sm.heldout_median_abs_error)} over {sm.heldout_pairs}" if sm.heldout_pairs else ""
    _para(lines, [f"speed-ups: {sm.pairs} pairs of points that differ only in their quantization, the scheme or "
                  f"the KV cache dtype (same source, GPU, release, model, layout, lengths and concurrency): the "
                  f"predicted ratio of their output tokens/s "
                  f"against the measured one, median |error| {_abs(sm.median_abs_error)}, 90th percentile "
                  f"{_abs(sm.p90_abs_error)}, worst {_abs(sm.max_abs_error)}, signed {_pct(sm.median_error)}{held}{aic}"],
          width)
    point = {p.id: p for p in r.points}
    groups: dict[tuple[str, str, str, str], list[float]] = {}
    for x in r.speedups:
        p = point[x.ids[0]]
        groups.setdefault((p.gpu, p.engine, x.model.rsplit("/", 1)[-1], _pair_label(*x.schemes)), []).append(x.error)
    t = Table(["GPU", "engine", "model", "speed-up of", "pairs", "median |err|", "signed"], align="llllrrr",
              flex=("speed-up of", "model"), flex_min={"speed-up of": 12, "model": 10}, drop=("signed", "engine"))
    for (gpu, engine, model, schemes), errs in sorted(groups.items()):
        t.add(gpu, engine, model, schemes, str(len(errs)), _abs(median([abs(e) for e in errs])),
              _pct(median(errs)))
    return [*lines, t.render(width), ""]


def _pair_label(baseline: str, other: str) -> str:
    """``nvfp4 / fp8-tensor``; a pair that differs in the KV cache only, ``kv-fp8 / bf16 KV`` (``calibration.e2e.choice``
    writes a choice as ``scheme + kv dtype``)."""
    sa, _, ka = baseline.partition(" + ")
    sb, _, kb = other.partition(" + ")
    if sa == sb:
        return f"{kb or 'bf16 KV'} / {ka or 'bf16 KV'}"
    return f"{other} / {baseline}"


def site_table(r: SiteCalibration, width: int | None = None) -> str:
    lines: list[str] = []
    _para(lines, [f"calibrate --from-bench: deployment profile {r.profile.id}, "
                  f"{len(r.profile.serving)} GPU/engine release{'s' if len(r.profile.serving) != 1 else ''}"], width)
    lines.append("")
    t = Table(["GPU", "engine", "runs", *("layer us", "pass us", "seq us", "prefill +", "decode +"), "held-out |err|"],
              align="llrrrrrrr", drop=("decode +", "seq us"))  # the profile file has every term
    for s in r.profile.serving:
        t.add(s.gpu or "-", f"{s.engine} {s.version}", str(s.points), f"{s.layer_s * 1e6:.2f}", f"{s.pass_s * 1e6:.1f}",
              f"{s.seq_s * 1e6:.2f}", f"{s.prefill_scale:+.0%}", f"{s.decode_scale:+.0%}", _abs(s.heldout_median_error))
    lines += [t.render(width), ""]
    f = Table(["file", "role", "runs", "median |err|"], align="llrr", flex=("file",), flex_min={"file": 16})
    for sf in r.files:
        f.add(sf.file, sf.role, str(sf.points), _abs(sf.median_abs_error))
    lines += [f.render(width), ""]
    lines += _points_table(r.points, width)
    lines.append("")
    _para(lines, [f"in sample: output tokens/s median |error| {_abs(r.median_abs_error)}; held out by file: "
                  f"{_abs(r.heldout_median_abs_error)}", *(f"note: {n}" for n in r.notes)], width)
    if r.profile_path:
        _para(lines, [f"profile: {r.profile_path} (recommend / roofline / size / check --profile {r.profile_path})"],
              width)
    return "\n".join(lines)


def bench_plan_table(r: Recommendation, width: int | None = None) -> str:
    """``recommend --bench-plan``: the headline, then per candidate its prediction, server and benchmark commands."""
    from .text import deployment_pm, wrap_command

    lines: list[str] = []
    plan = r.bench_plan
    perf = r.performance
    band = deployment_pm(perf.uncertainty)
    _para(lines, [f"Recommendation: {r.scheme.id} — {perf.tokens_per_s:,.0f}{band} output tokens/s predicted at concurrency "
                  f"{perf.concurrency:,}" + (f"; closest rival {perf.runner_up}" if perf.runner_up else "")], width)
    if plan is None:
        return "\n".join(lines)
    for run in plan.runs:
        lines.append("")
        ttft = f", TTFT {run.predicted_ttft_s * 1e3:,.0f} ms" if run.predicted_ttft_s is not None else ""
        itl = f", ITL {run.predicted_itl_s * 1e3:,.1f} ms" if run.predicted_itl_s is not None else ""
        _para(lines, [f"{run.role}: {run.scheme} at concurrency {run.concurrency:,}, {run.prompt:,} prompt + "
                      f"{run.output:,} output tokens, {run.num_prompts:,} requests ({run.why_prompts}); predicted "
                      f"{run.predicted_tokens_per_s:,.0f}"
                      f"{deployment_pm(run.uncertainty)} output tokens/s{ttft}{itl}"],
              width)
        for engine, server in run.server.items():
            bench = run.bench.get(engine)
            if server is None or bench is None:
                lines += wrap(f"  {engine}: no command (the engine refuses it; see the recommendation)", width)
                continue
            lines += wrap(f"  {engine} server:", width)
            lines += wrap_command(server, width, indent="    ")
            lines += wrap(f"  {engine} benchmark:", width)
            lines += wrap_command(bench, width, indent="    ")
    lines.append("")
    _para(lines, [f"then: {cmd}" for cmd in plan.validate_commands.values()], width)
    _para(lines, [f"checked: {c}" for c in plan.checked_against], width)
    _para(lines, [f"note: {n}" for n in plan.notes], width)
    return "\n".join(lines)
