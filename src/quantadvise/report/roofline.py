"""Renderers for ``quantadvise roofline``: table (with an optional terminal chart), CSV, and the
matplotlib plot (the optional ``[plot]`` extra, imported only when a plot is asked for)."""

from __future__ import annotations

import math
from pathlib import Path

from ..errors import InputError
from ..perf.roofline import CurveOut, Point, RooflineResult
from ..perf.serving import ParetoOut
from ..wording import ms, plural, usd
from .text import Table, csv_text, deployment_pm, gb, seconds_h, wrap

MARKERS = "abcdefghijklmnopqrstuvwxyz"
CHART_MIN_WIDTH = 60
CHART_WIDTH = 120  # the chart's width when the output has no width limit (--wide)
CHART_HEIGHT = 14


def pct(share: float) -> str:
    """A share as a percentage that keeps tiny shares readable (0.0018%)."""
    v = share * 100
    if v == 0:
        return "0%"
    if v >= 1:
        return f"{v:.1f}%"
    return f"{v:.2g}%"


def _batch(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def _profile_line(r: RooflineResult) -> str:
    p = r.profile
    if p.ideal:
        return "profile: ideal (spec sheet: peak bandwidth and FLOP/s, no dequantisation cost)"
    mem = p.memory_efficiency
    mem_s = f"{mem:.0%}" if isinstance(mem, float | int) else "curve"
    comp = {s.math: s.compute_efficiency for s in r.schemes}
    comp_s = ", ".join(f"{k} {v:.0%}" for k, v in sorted(comp.items()))
    deq = "dequant cost on" if p.dequant else "no dequant cost"
    measured = [s.scheme for s in r.schemes if s.model == "calibrated"]
    c = p.calibration
    if c is not None:
        sim = ", SIMULATED" if c.simulated else ""
        comp_s = ", ".join(f"{k} {v:.0%}" for k, v in sorted(p.compute_efficiency.items())
                           if isinstance(v, float | int) and k in ("bf16", "fp8", "int8"))
        return (f"profile: {p.id} (calibrated on '{c.gpu_name}', {c.measured_on.isoformat()}{sim}: measured curves "
                f"for {', '.join(measured) or 'no listed scheme'}; measured ceilings: memory {mem_s} of peak "
                f"bandwidth, GEMM {comp_s} of peak)")
    kern = [s for s in r.schemes if s.curve]
    if kern:
        return (f"profile: {p.id} (linear layers: the published table, else the measured curve, of the kernel each scheme runs, listed below; "
                f"other operators: memory {mem_s} of peak bandwidth; --ideal for the spec sheet)")
    return (f"profile: {p.id} (memory {mem_s} of peak bandwidth; compute {comp_s} of peak; {deq}; "
            "--ideal for the spec sheet)")


def header(r: RooflineResult, width: int | None = None) -> list[str]:
    m, g = r.model, r.gpu
    src = f"{m.source or '?'}; {m.kind}"
    link = f"{g.interconnect_bytes_per_s / 1e9:,.0f}" if g.interconnect_bytes_per_s is not None else "?"
    what = "serving points and Pareto frontier" if r.pareto is not None else "decode step roofline"
    lines = [
        f"{m.id or '?'} ({src}) on {r.gpus} x {g.name} — {what} (a model, not a measurement)",
        _profile_line(r),
        f"KV cache {r.kv_dtype}: {r.kv_bytes_per_token:,.0f} B/token; bandwidth "
        f"{g.bandwidth_bytes_per_s / 1e12:,.2f} TB/s per GPU"
        + (f" ({g.aggregate_bandwidth_bytes_per_s / 1e12:,.2f} TB/s aggregate, {g.interconnect} "
           f"{link} GB/s per direction)" if r.gpus > 1 else "")
        + ("; scope: decoder linear matrices + KV + residual stream (the chapter's accounting)"
           if r.scope == "decoder" else ""),
    ]
    if r.price is not None:
        lines.append(f"price: {r.price.label()}")
    if r.speculation is not None:
        sp = r.speculation
        lines.append(f"speculative decoding: K = {sp.tokens}, A = {sp.acceptance:g} -> {sp.tokens_per_step:.2f} tokens "
                     f"per step (per-token acceptance {sp.per_token_acceptance:.3f}; Leviathan et al., "
                     "arXiv:2211.17192)")
    return [x for line in lines for x in wrap(line, width, subsequent="  ")]


def schemes_table(r: RooflineResult, width: int | None = None) -> str:
    kern = any(s.kernel for s in r.schemes)
    spec = r.speculation is not None
    cols = ["scheme", "math", "runs", *(["kernel", "curve"] if kern else []), "bytes/weight", "weights/GPU",
            "ridge FLOP/B", "compute-bound from", *([f"with K={r.speculation.tokens}"] if r.speculation else [])]
    t = Table(cols, align="lll" + ("ll" if kern else "") + "rrrr" + ("r" if spec else ""), flex=("runs",),
              drop=(*(["curve", "kernel"] if kern else []), "ridge FLOP/B", "bytes/weight", "weights/GPU"))
    for s in r.schemes:
        rb = r.ridge_batch.get(s.scheme)
        runs = s.execution + (" + dequant" if s.dequant else "") + (" (measured)" if s.model == "calibrated" else "")
        kcols = [s.kernel or "-", (f"{s.curve} ({s.curve_basis})" if s.curve else "roofline")] if kern else []
        extra = ["never" if s.ridge_batch_speculative is None else f"B = {_batch(s.ridge_batch_speculative)}"] \
            if spec else []
        t.add(s.scheme, s.math, runs, *kcols, f"{s.bytes_per_weight:.3f}", gb(s.weights_bytes_per_gpu),
              f"{s.ridge_flop_per_byte:,.0f}", "never" if rb is None else f"B = {_batch(rb)}", *extra)
    return t.render(width)


def points_table(r: RooflineResult, width: int | None = None) -> str:
    """One row per point; narrow, the byte shares, intensity, memory and bound columns drop (in that
    order). A point whose weights + KV do not fit is marked ``!`` on its GB/GPU, or on its tok/s when
    GB/GPU is dropped."""
    t = _points_table(r, mark_tokens=False)
    if any(not p.fits for p in r.points) and "GB/GPU" not in t.shown(width):
        t = _points_table(r, mark_tokens=True)
    return t.render(width)


def _points_table(r: RooflineResult, mark_tokens: bool) -> Table:
    price = r.price is not None
    cols = ["ctx", "batch", "scheme", "step", "tok/s", *(["$/Mtok"] if price else []), "bound", "weights", "KV",
            "act", "FLOP/B", "GB/GPU"]
    align = "rrllr" + ("r" if price else "") + "lrrrrr"
    if r.prompt is not None:
        cols.append(f"TTFT@{r.prompt:,}")
        align += "r"
    t = Table(cols, align=align, drop=("act", "FLOP/B", "weights", "KV", "GB/GPU", "bound"))
    marks = _marks(r)
    last = None
    for p in r.points:
        key = (p.ctx, p.batch)
        first = key != last
        last = key
        mark = marks.get((p.ctx, p.batch, p.scheme), "")
        unfit = "" if p.fits else "!"
        row = [
            f"{p.ctx:,}" if first else "",
            f"{p.batch:,}" if first else "",
            p.scheme + mark,
            seconds_h(p.step_time_s),
            f"{p.tokens_per_s:,.0f}" + deployment_pm(p.uncertainty) + (unfit if mark_tokens else ""),
            *([usd(p.usd_per_mtok)] if price else []),
            p.bound,
            pct(p.byte_shares.weights),
            pct(p.byte_shares.kv),
            pct(p.byte_shares.activations),
            f"{p.intensity_flop_per_byte:,.1f}",
            f"{p.memory_per_gpu_bytes / 1e9:,.1f}" + unfit,
        ]
        if r.prompt is not None:
            row.append(seconds_h(p.ttft_s) if p.ttft_s is not None else "")
        t.add(*row)
    return t




def _marks(r: RooflineResult) -> dict[tuple[int, int, str], str]:
    """Per point, `` *`` for the fastest at its batch and context when it is faster than every other scheme
    beyond their combined uncertainty (perf.uncertainty: the tokens/s intervals apart), else `` ~`` on the
    fastest and on each scheme whose interval overlaps it: a tie the model cannot order (issue 25)."""
    from ..perf.uncertainty import overlap

    if len(r.schemes) < 2:
        return {}
    by: dict[tuple[int, int], list[Point]] = {}
    for p in r.points:
        by.setdefault((p.ctx, p.batch), []).append(p)
    def band(q: Point) -> float:
        return q.uncertainty.relative if q.uncertainty is not None else 0.0  # --ideal: no band, a strict order

    out: dict[tuple[int, int, str], str] = {}
    for (ctx, batch), ps in by.items():
        top = min(ps, key=lambda q: q.step_time_s)
        tied = [q for q in ps if q is not top and overlap(top.tokens_per_s, band(top), q.tokens_per_s, band(q))]
        if not tied:
            out[(ctx, batch, top.scheme)] = " *"
            continue
        for q in (top, *tied):
            out[(ctx, batch, q.scheme)] = " ~"
    return out


def request_lengths(pa: ParetoOut) -> str:
    """The request the serving points price, in words: "1,000 prompt + 200 output tokens per request", or,
    with no prompt, that only the decode is priced (no prefill, so no TTFT)."""
    if pa.prompt:
        return f"{pa.prompt:,} prompt + {pa.output:,} output tokens per request"
    return f"decode only, {pa.output:,} output tokens per request (no --prompt: prefill and TTFT not modelled)"


def pareto_table(r: RooflineResult, width: int | None = None) -> list[str]:
    """The serving points that fit, per context and scheme; marks: ``<`` the point to run at, ``*`` on the
    envelope of every scheme, ``f`` on the scheme's own frontier; budgets broken named. Narrow, E2E,
    prefill share, TTFT, $/Mtok and tokens/s per user drop, in that order (ITL stays)."""
    pa = r.pareto
    if pa is None:
        return []
    price = r.price is not None
    slo = any(v is not None for v in (pa.itl_budget_s, pa.ttft_budget_s, pa.e2e_budget_s))
    pre = bool(pa.prompt)  # no prompt: no prefill, so no TTFT and no prefill share to show
    cols = ["ctx", "scheme", "batch", "tok/s/GPU", "tok/s/user", "ITL ms", *(["TTFT ms"] if pre else []), "E2E s",
            *(["prefill"] if pre else []), *(["$/Mtok"] if price else []), *(["budgets"] if slo else []), "mark"]
    t = Table(cols, align="rlrrrr" + ("r" if pre else "") + "r" + ("r" if pre else "") + ("r" if price else "")
              + ("l" if slo else "") + "l",
              drop=("E2E s", *(["prefill", "TTFT ms"] if pre else []), *(["$/Mtok"] if price else []),
                    "tok/s/user"))
    last = None
    for p in pa.points:
        if not p.fits:
            continue
        key = (p.ctx, p.scheme)
        first = key != last
        last = key
        mark = "<" if p.recommended else "*" if p.best else "f" if p.on_frontier else ""
        t.add(f"{p.ctx:,}" if first else "", p.scheme if first else "", f"{p.batch:,}",
              f"{p.tokens_per_s_per_gpu:,.0f}", f"{p.tokens_per_s_per_user:,.1f}", ms(p.itl_s),
              *([ms(p.ttft_s)] if pre else []), f"{p.e2e_s:,.1f}",
              *(["-" if p.prefill_share is None else f"{p.prefill_share:.0%}"] if pre else []),
              *([usd(p.usd_per_mtok)] if price else []),
              *(["ok" if p.meets_slo else "breaks"] if slo else []), mark)
    ttft = "TTFT under load, " if pa.prompt else ""
    out = [*wrap(f"Serving points: {request_lengths(pa)}, continuous batching (ITL the mean a user sees, {ttft}"
                 "tokens/s per GPU = output tokens/s / GPUs):", width), t.render(width)]
    dropped = sum(1 for p in pa.points if not p.fits)
    legend = "< = the point to run at, * = on the envelope of every scheme, f = on the scheme's frontier"
    if dropped:
        legend += (f"; {plural(dropped, 'point')} whose KV cache does not fit {'is' if dropped == 1 else 'are'} "
                   "left out")
    out += wrap(legend, width)
    if pa.serving_loop:
        out += wrap(f"Serving loop: {pa.serving_loop} (docs/calibration.md §9)", width, subsequent="  ")
    rec = pa.recommended
    if rec is not None:
        budgets = ", ".join(f"{n} <= {v * 1e3:,.0f} ms" for n, v in (("ITL", pa.itl_budget_s),
                                                                     ("TTFT", pa.ttft_budget_s),
                                                                     ("E2E", pa.e2e_budget_s)) if v is not None)
        cost = f", ${usd(rec.usd_per_mtok)} per million output tokens" if rec.usd_per_mtok is not None else ""
        out += wrap(f"Run at: {rec.scheme}, {plural(rec.batch, 'sequence')} (ctx {rec.ctx:,}) — {rec.tokens_per_s_per_gpu:,.0f} "
                    f"output tokens/s per GPU, {rec.tokens_per_s_per_user:,.1f} per user (ITL {ms(rec.itl_s)} ms"
                    + (f", TTFT {ms(rec.ttft_s)} ms" if rec.ttft_s is not None else "") + f"){cost}: the most per GPU of the points that fit"
                    + (f" and meet {budgets}" if budgets else ""), width, subsequent="  ")
    elif slo:
        out += wrap("No point that fits meets the budgets: relax them, add GPUs or shorten the requests.", width)
    return out


def crossover_lines(r: RooflineResult) -> list[str]:
    if len(r.schemes) < 2:
        return []
    if not r.crossovers:
        hi = r.crossover_search_max_batch
        return [f"crossovers: none between batch 1 and {hi:,.0f} — the ranking does not change"]
    out = []
    by_ctx: dict[int, list[str]] = {}
    # a pair that trades places more than once at one context is within the model's uncertainty there (the
    # curves touch and part by less than their bands): one tie over that range, not a list of crossovers
    pairs: dict[tuple[int, frozenset[str]], list[float]] = {}
    for c in r.crossovers:
        pairs.setdefault((c.ctx, frozenset((c.a, c.b))), []).append(c.batch)
    done: set[tuple[int, frozenset[str]]] = set()
    for c in r.crossovers:
        key = (c.ctx, frozenset((c.a, c.b)))
        bs = pairs[key]
        if len(bs) == 1:
            by_ctx.setdefault(c.ctx, []).append(f"{c.faster_below} -> {c.faster_above} at B = {_batch(c.batch)}")
        elif key not in done:
            done.add(key)
            by_ctx.setdefault(c.ctx, []).append(
                f"{c.a} and {c.b} trade places {len(bs)} times between B = {_batch(min(bs))} and {_batch(max(bs))} "
                "(they cross back and forth there: the model cannot order them over that range)")
    for ctx, items in by_ctx.items():
        out.append(f"crossovers at ctx {ctx:,} (faster below -> faster above): " + "; ".join(items))
    return out


def table(r: RooflineResult, width: int | None = None, show_chart: bool = True) -> str:
    """Header, per-scheme ridge table, the points (with ``--pareto``: the serving points), crossovers,
    notes, fitted to ``width`` columns (None: no limit); a terminal chart when ``show_chart``, the result
    carries curves and the width allows (None: 120 columns)."""
    lines = [*header(r, width), "", schemes_table(r, width), ""]
    if r.pareto is not None:
        lines += pareto_table(r, width)
    else:
        lines += [points_table(r, width), ""]
        lines += wrap("* = fastest at that batch and context beyond the model's uncertainty (the ± of tok/s); "
                      "~ = the fastest and the schemes it cannot be told from there (a tie); bytes and FLOPs are "
                      "per GPU; ! = weights + KV do not fit in GPU memory", width)
    for line in crossover_lines(r):
        lines += wrap(line, width, subsequent="  ")
    for n in r.notes:
        lines += wrap(n, width, indent="note: ", subsequent="  ")
    chart_w = CHART_WIDTH if width is None else width
    if show_chart and chart_w >= CHART_MIN_WIDTH and r.curves and r.pareto is None:
        for ctx in sorted({c.ctx for c in r.curves})[:3]:
            lines.append("")
            lines.extend(chart(r, ctx, chart_w))
    return "\n".join(lines)


# -------------------------------------------------------------------------------------------------
# CSV
# -------------------------------------------------------------------------------------------------

CSV_COLUMNS = (
    "scheme", "batch", "ctx", "step_time_s", "tokens_per_s", "bound", "bytes_weights", "bytes_kv",
    "bytes_activations", "flops", "intensity_flop_per_byte", "share_weights", "share_kv", "share_activations",
    "memory_per_gpu_bytes", "fits", "ttft_s", "gpu", "gpus", "model", "kv_dtype", "profile", "usd_per_mtok",
)
PARETO_CSV_COLUMNS = (
    "scheme", "ctx", "batch", "tokens_per_s", "tokens_per_s_per_gpu", "tokens_per_s_per_user", "itl_s", "ttft_s",
    "e2e_s", "prefill_share", "usd_per_mtok", "bound", "fits", "meets_slo", "on_frontier", "best", "recommended",
    "prompt", "output", "gpu", "gpus", "model", "kv_dtype", "profile",
)


def _f(v: float | None) -> str:
    return "" if v is None else repr(v)


def _b(v: bool | None) -> str:
    return "" if v is None else str(v).lower()


def to_csv(r: RooflineResult) -> str:
    """One row per point (with ``--pareto``: per serving point); units in the column names; full float
    precision; an empty cell where a value does not apply."""
    if r.pareto is not None:
        pa = r.pareto
        return csv_text(PARETO_CSV_COLUMNS, ([
                q.scheme, q.ctx, q.batch, repr(q.tokens_per_s), repr(q.tokens_per_s_per_gpu),
                repr(q.tokens_per_s_per_user), repr(q.itl_s), _f(q.ttft_s), repr(q.e2e_s), _f(q.prefill_share),
                _f(q.usd_per_mtok), q.bound, _b(q.fits), _b(q.meets_slo), _b(q.on_frontier), _b(q.best),
                _b(q.recommended), pa.prompt, pa.output, r.gpu.id, r.gpus, r.model.id or "", r.kv_dtype, r.profile.id,
            ] for q in pa.points))
    return csv_text(CSV_COLUMNS, ([
            p.scheme, p.batch, p.ctx, repr(p.step_time_s), repr(p.tokens_per_s), p.bound,
            repr(p.bytes.weights), repr(p.bytes.kv), repr(p.bytes.activations), repr(p.flops),
            repr(p.intensity_flop_per_byte), repr(p.byte_shares.weights), repr(p.byte_shares.kv),
            repr(p.byte_shares.activations), p.memory_per_gpu_bytes, str(p.fits).lower(),
            "" if p.ttft_s is None else repr(p.ttft_s), r.gpu.id, r.gpus, r.model.id or "", r.kv_dtype,
            r.profile.id, _f(p.usd_per_mtok),
        ] for p in r.points))


# -------------------------------------------------------------------------------------------------
# Terminal chart
# -------------------------------------------------------------------------------------------------


def _log_ticks(lo: float, hi: float) -> list[float]:
    ticks = []
    e = math.floor(math.log10(lo))
    while 10**e <= hi * 1.0000001:
        for m in (1, 2, 5):
            v = m * 10**e
            if lo * 0.9999999 <= v <= hi * 1.0000001:
                ticks.append(float(v))
        e += 1
    return ticks


def _si(v: float) -> str:
    for unit, div in (("M", 1e6), ("k", 1e3)):
        if v >= div:
            x = v / div
            return f"{x:.0f}{unit}" if x >= 10 else f"{x:.1f}{unit}".replace(".0", "")
    return f"{v:.0f}" if v >= 10 or v == int(v) else f"{v:.1f}"


def chart(r: RooflineResult, ctx: int, width: int) -> list[str]:
    """tokens/s vs batch on log-log axes, one letter per scheme; ``^`` under the axis marks each
    scheme's ridge batch (its letter below it), ``X`` marks a crossover on the curves."""
    curves = [c for c in r.curves if c.ctx == ctx]
    if not curves:
        return []
    label_w = 7
    cols = max(20, min(width, 120) - label_w - 2)
    rows = CHART_HEIGHT
    xs0, xs1 = curves[0].batch[0], curves[0].batch[-1]
    ys = [y for c in curves for y in c.tokens_per_s]
    y0, y1 = min(ys), max(ys)
    if y1 <= y0:
        y1 = y0 * 1.1
    lx0, lx1, ly0, ly1 = math.log(xs0), math.log(xs1), math.log(y0), math.log(y1)

    def col_of(x: float) -> int:
        return round((math.log(x) - lx0) / (lx1 - lx0) * (cols - 1))

    def row_of(y: float) -> int:
        return rows - 1 - round((math.log(y) - ly0) / (ly1 - ly0) * (rows - 1))

    grid = [[" "] * cols for _ in range(rows)]
    for i, c in enumerate(curves):
        mark = MARKERS[i % len(MARKERS)]
        for col in range(cols):
            x = math.exp(lx0 + (lx1 - lx0) * col / (cols - 1))
            y = _interp(c, x)
            rr = row_of(y)
            cell = grid[rr][col]
            grid[rr][col] = mark if cell == " " or cell == mark else "+"
    by_scheme = {c.scheme: c for c in curves}
    for cr in r.crossovers:
        if cr.ctx == ctx and xs0 <= cr.batch <= xs1 and cr.a in by_scheme:
            grid[row_of(_interp(by_scheme[cr.a], cr.batch))][col_of(cr.batch)] = "X"
    legend = ", ".join(f"{MARKERS[i % len(MARKERS)]} = {c.scheme}" for i, c in enumerate(curves))
    out = [*wrap(f"tokens/s vs batch at ctx {ctx:,}, log-log (a roofline model)", width),
           *wrap(f"{legend}; + = overlap, X = crossover, ^ = ridge batch", width)]
    for i, row in enumerate(grid):
        y = math.exp(ly1 - (ly1 - ly0) * i / (rows - 1))
        label = _si(y) if i in (0, rows // 2, rows - 1) else ""
        out.append(f"{label:>{label_w}} |" + "".join(row).rstrip())
    out.append(" " * label_w + " +" + "-" * cols)
    axis = [" "] * cols
    ridge_row = [" "] * cols
    for i, c in enumerate(curves):
        rb = r.ridge_batch.get(c.scheme)
        if rb is not None and xs0 <= rb <= xs1:
            col = col_of(rb)
            axis[col] = "^"
            ridge_row[col] = MARKERS[i % len(MARKERS)] if ridge_row[col] == " " else "+"
    out.append(" " * label_w + "  " + "".join(axis).rstrip())
    if any(ch != " " for ch in ridge_row):
        out.append(" " * label_w + "  " + "".join(ridge_row).rstrip())
    ticks = " " * cols
    tick_chars = list(ticks)
    for v in _log_ticks(xs0, xs1):
        s = _si(v)
        col = col_of(v)
        start = min(max(0, col - len(s) // 2), cols - len(s))
        if all(ch == " " for ch in tick_chars[max(0, start - 1): start + len(s) + 1]):
            tick_chars[start:start + len(s)] = s
    out.append(" " * label_w + "  " + "".join(tick_chars).rstrip())
    out.append(" " * label_w + "  " + "batch (sequences per decode step)".center(cols).rstrip())
    return out


def _interp(c: CurveOut, x: float) -> float:
    """tokens/s at batch x from the sampled curve (linear in log-log between samples)."""
    bs, ys = c.batch, c.tokens_per_s
    if x <= bs[0]:
        return ys[0]
    if x >= bs[-1]:
        return ys[-1]
    lo, hi = 0, len(bs) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if bs[mid] <= x:
            lo = mid
        else:
            hi = mid
    t = (math.log(x) - math.log(bs[lo])) / (math.log(bs[hi]) - math.log(bs[lo]))
    return math.exp(math.log(ys[lo]) + t * (math.log(ys[hi]) - math.log(ys[lo])))


# -------------------------------------------------------------------------------------------------
# Plot (matplotlib, optional)
# -------------------------------------------------------------------------------------------------

def write_plot(r: RooflineResult, path: Path) -> Path:
    """Step time and tokens/s vs batch, one curve per scheme (line style per context), requested
    points as dots, ridge batches as dotted verticals, crossovers as black X with their batch."""
    from .pareto import check_plot_path, import_pyplot

    check_plot_path(path)
    if not r.curves:
        raise InputError("--plot needs at least two different batches to draw curves (e.g. --batch 1..512)",
                         field="plot")
    plt = import_pyplot()
    fig, (ax_t, ax_r) = plt.subplots(1, 2, figsize=(13, 5.2), constrained_layout=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = ["-", "--", ":", "-."]
    ctxs = sorted({c.ctx for c in r.curves})
    scheme_ids = [s.scheme for s in r.schemes]
    for c in r.curves:
        color = colors[scheme_ids.index(c.scheme) % len(colors)]
        style = styles[ctxs.index(c.ctx) % len(styles)]
        label = c.scheme if len(ctxs) == 1 else f"{c.scheme}, ctx {c.ctx:,}"
        ax_t.plot(c.batch, [t * 1e3 for t in c.step_time_s], style, color=color, label=label)
        ax_r.plot(c.batch, c.tokens_per_s, style, color=color, label=label)
    for p in r.points:
        color = colors[scheme_ids.index(p.scheme) % len(colors)]
        ax_t.plot([p.batch], [p.step_time_s * 1e3], "o", color=color, markersize=4)
        ax_r.plot([p.batch], [p.tokens_per_s], "o", color=color, markersize=4)
    lo, hi = r.curves[0].batch[0], r.curves[0].batch[-1]
    ridges: list[tuple[float, list[str]]] = []  # schemes whose ridge batches coincide share one label
    for sid in scheme_ids:
        rb = r.ridge_batch.get(sid)
        if rb is None or not lo <= rb <= hi:
            continue
        color = colors[scheme_ids.index(sid) % len(colors)]
        for ax in (ax_t, ax_r):
            ax.axvline(rb, color=color, linestyle=":", linewidth=1.2, alpha=0.8)
        for x, names in ridges:
            if abs(x - rb) <= 0.02 * rb:
                names.append(sid)
                break
        else:
            ridges.append((rb, [sid]))
    for i, (rb, names) in enumerate(sorted(ridges)):
        color = colors[scheme_ids.index(names[0]) % len(colors)] if len(names) == 1 else "dimgray"
        ax_r.annotate(f"ridge {', '.join(names)}: B={_batch(rb)}", (rb, 0.02 + 0.3 * (i % 2)),
                      xycoords=("data", "axes fraction"), rotation=90, fontsize=7, color=color, ha="right",
                      va="bottom")
    curve_of = {(c.scheme, c.ctx): c for c in r.curves}
    for i, cr in enumerate(sorted(r.crossovers, key=lambda c: c.batch)):
        if not lo <= cr.batch <= hi or (cr.a, cr.ctx) not in curve_of:
            continue
        c = curve_of[(cr.a, cr.ctx)]
        y_r = _interp(c, cr.batch)
        y_t = cr.batch / y_r * 1e3
        for ax, y in ((ax_t, y_t), (ax_r, y_r)):
            ax.plot([cr.batch], [y], "x", color="black", markersize=9, markeredgewidth=2)
        ax_r.annotate(f"{cr.faster_below}→{cr.faster_above}\nB={_batch(cr.batch)}", (cr.batch, y_r),
                      textcoords="offset points", xytext=(-12, -30 - 22 * (i % 2)), fontsize=7, ha="right",
                      arrowprops={"arrowstyle": "-", "color": "gray", "linewidth": 0.6})
    from matplotlib.ticker import FuncFormatter, LogLocator

    plain = FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v >= 1 else f"{v:g}")
    for ax, ylabel in ((ax_t, "decode step time (ms)"), (ax_r, "tokens/s (batch / step time)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(plain)
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v >= 10 else f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: ""))
        ax.set_xlabel("batch (sequences per decode step)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    ax_r.legend(loc="lower right", fontsize=8)
    prof = "ideal spec sheet" if r.profile.ideal else f"profile {r.profile.id}"
    ctx_s = ", ".join(f"{c:,}" for c in ctxs)
    fig.suptitle(
        f"{r.model.id or '?'} on {r.gpus} x {r.gpu.name} — ctx {ctx_s}, KV {r.kv_dtype}, {prof} "
        "(roofline model, not a measurement)", fontsize=10)
    from .pareto import save_figure

    return save_figure(fig, path, 120)


def write_pareto_plot(r: RooflineResult, path: Path) -> Path:
    """``roofline --pareto --plot FILE``: tokens/s per GPU vs per user, each scheme's frontier, the point to
    run at and the budgets (report/pareto.py)."""
    from .pareto import write_frontier

    pa = r.pareto
    if pa is None:
        raise InputError("--plot of the frontier needs --pareto", field="plot")
    prof = "ideal spec sheet" if r.profile.ideal else f"profile {r.profile.id}"
    title = (f"{r.model.id or '?'} on {r.gpus} x {r.gpu.name}, KV {r.kv_dtype}, {request_lengths(pa)},\n"
             f"continuous batching — Pareto frontier per scheme across batch ({prof}; a model, not a measurement)")
    return write_frontier(pa.points, path, title=title, schemes=[s.scheme for s in r.schemes],
                          itl_budget_s=pa.itl_budget_s, ttft_budget_s=pa.ttft_budget_s, e2e_budget_s=pa.e2e_budget_s)


__all__ = ["table", "to_csv", "chart", "write_plot", "write_pareto_plot", "pareto_table", "pct"]
