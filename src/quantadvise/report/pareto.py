"""The Pareto frontier, drawn and tabulated: output tokens/s per GPU against tokens/s per user
(1 / ITL) for each scheme across concurrency — ``roofline --pareto`` and ``recommend --plot``.
matplotlib is the optional ``[plot]`` extra, imported only when a plot is asked for."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import InputError
from ..perf.serving import ParetoPoint
from ..wording import install_hint, ms, printable

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation
    from matplotlib.transforms import Bbox

PLOT_SUFFIXES = (".png", ".svg")
PLOT_DPI = 120  # labels are placed at this resolution, so the file is written at it too


def check_plot_path(path: Path, flag: str = "--plot") -> None:
    """One error line, before any work, when ``path`` is not a .png / .svg file name."""
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise InputError(f"{flag} {path}: the file must end in .png or .svg", field="plot")


def import_pyplot(flag: str = "--plot"):  # noqa: ANN201 - matplotlib's module, typed by matplotlib
    """matplotlib.pyplot on the Agg backend, or one error line saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise InputError(f"{flag} needs matplotlib: {install_hint('plot')}", field="plot") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "quantadvise"
    return plt


# two curves whose points all lie within this relative distance on both axes are drawn once and named
# together ("a ≈ b"): at 1% on a log axis spanning a decade or more they could not be told apart anyway
NEAR = 0.01
# a panel per context beyond one, at most this many side by side
PANELS_PER_ROW = 3
# where a batch label may go, in order of preference: (x, y) directions from its point and the alignment
# that keeps the text on that side — above right, below right, above left, below left
LABEL_SPOTS: tuple[tuple[int, int, Literal["left", "right"], Literal["bottom", "top"]], ...] = (
    (1, 1, "left", "bottom"), (1, -1, "left", "top"), (-1, 1, "right", "bottom"), (-1, -1, "right", "top"))
# with more curves than this in a panel, only each frontier's two ends (and the recommended point) are labelled
LABEL_ALL_UP_TO = 4
# the recommended star's radius, points (markersize 17), kept clear of batch labels
STAR_CLEARANCE = 9.5


def write_frontier(points: Sequence[ParetoPoint], path: Path, *, title: str, schemes: Sequence[str],
                   itl_budget_s: float | None = None, ttft_budget_s: float | None = None,
                   e2e_budget_s: float | None = None, flag: str = "--plot") -> Path:
    """The frontier plot (:func:`frontier_figure`) written to ``path`` (.png or .svg)."""
    check_plot_path(path, flag)
    fig = frontier_figure(points, title=printable(title), schemes=schemes, itl_budget_s=itl_budget_s,
                          ttft_budget_s=ttft_budget_s, e2e_budget_s=e2e_budget_s, flag=flag)
    return save_figure(fig, path, PLOT_DPI, flag)


def save_figure(fig: Figure, path: Path, dpi: int, flag: str = "--plot") -> Path:
    """Write a figure to ``path`` (.png or .svg, no date in an SVG) and close it; every text on it made
    :func:`~quantadvise.wording.printable` first (a model name that is not UTF-8, or holds a control
    character, is drawn as ``\\xNN``: matplotlib cannot lay out a lone surrogate)."""
    from matplotlib.text import Text

    plt = import_pyplot(flag)
    for t in fig.findobj(Text):
        text = t.get_text()
        if isinstance(text, str) and printable(text) != text:
            t.set_text(printable(text))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, metadata={"Date": None} if path.suffix.lower() == ".svg" else None)
    plt.close(fig)
    return path


def frontier_figure(points: Sequence[ParetoPoint], *, title: str, schemes: Sequence[str],
                    itl_budget_s: float | None = None, ttft_budget_s: float | None = None,
                    e2e_budget_s: float | None = None, flag: str = "--plot") -> Figure:
    """Every fitting point of each scheme (small dots), its frontier (a line), the envelope over all
    schemes (a thick grey band), points that break a TTFT / E2E budget hollow, the ITL budget as a
    vertical line (1 / ITL tokens/s per user, the side that breaks it shaded) and the recommended point as
    a star. One panel per decode context (shared axes), so a frontier or the envelope never joins points
    of two contexts. The budget and the recommended point's figures are legend entries, outside the axes;
    batch labels are placed where they cover no point and no other label (all of a frontier's points with
    up to ``LABEL_ALL_UP_TO`` curves, its two ends beyond), and curves within ``NEAR`` of each other are
    drawn once and named together."""
    fit = [p for p in points if p.fits]
    if not fit:
        raise InputError(f"{flag}: no point fits in GPU memory, nothing to draw", field="plot")
    plt = import_pyplot(flag)
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter, LogLocator

    ctxs = sorted({p.ctx for p in fit})
    n = len(ctxs)
    ncols = min(n, PANELS_PER_ROW)
    nrows = math.ceil(n / ncols)
    size = (10.5, 6.4) if n == 1 else (3.2 + 4.4 * ncols, 1.0 + 4.3 * nrows)
    fig, grid = plt.subplots(nrows, ncols, figsize=size, sharex=True, sharey=True, squeeze=False,
                             layout="constrained", dpi=PLOT_DPI)
    axes = [ax for row in grid for ax in row]
    for ax in axes[n:]:
        ax.set_visible(False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles: list[Any] = ["-", "--", ":", "-."]  # matplotlib types them as literals
    markers = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h"]
    twins = _twins(fit, schemes)
    drawn = [s for s in schemes if s not in twins]
    look = {sid: (colors[i % len(colors)], styles[i % len(styles)], markers[i % len(markers)])
            for i, sid in enumerate(drawn)}
    xs = [p.tokens_per_s_per_user for p in fit]
    lo, hi = min(xs), max(xs)
    if itl_budget_s is not None:
        lo, hi = min(lo, 1.0 / itl_budget_s), max(hi, 1.0 / itl_budget_s)
    rec = next((p for p in fit if p.recommended), None)
    labels: list[tuple[Axes, list[tuple[Annotation, float]]]] = []  # axes, (label, its clearance in points)
    obstacles: dict[Axes, list[tuple[float, float, float]]] = {}  # axes -> marker discs (x, y, radius in points)
    for ax, ctx in zip(axes, ctxs, strict=False):
        here = [p for p in fit if p.ctx == ctx]
        env = sorted((p for p in here if p.best), key=lambda p: p.tokens_per_s_per_user)
        if len(env) > 1:
            ax.plot([p.tokens_per_s_per_user for p in env], [p.tokens_per_s_per_gpu for p in env], "-",
                    color="0.8", linewidth=9, solid_capstyle="round", zorder=1)
        obs = obstacles.setdefault(ax, [])
        ends: list[tuple[ParetoPoint, str, str]] = []
        inner: list[tuple[ParetoPoint, str, str]] = []
        curves = [sid for sid in drawn if any(p.scheme == sid for p in here)]
        for sid in curves:
            color, style, marker = look[sid]
            pts = [p for p in here if p.scheme == sid]
            front = sorted((p for p in pts if p.on_frontier), key=lambda p: p.tokens_per_s_per_user)
            ax.plot([p.tokens_per_s_per_user for p in front], [p.tokens_per_s_per_gpu for p in front],
                    style, color=color, linewidth=1.8, zorder=3)
            for p in pts:
                ok = p.meets_slo is not False
                size_pt = 5 if p.on_frontier else 3
                ax.plot([p.tokens_per_s_per_user], [p.tokens_per_s_per_gpu], marker, markersize=size_pt,
                        markerfacecolor=color if ok else "white", markeredgecolor=color, zorder=4)
                obs.append((p.tokens_per_s_per_user, p.tokens_per_s_per_gpu, size_pt / 2 + 1.0))
            batches = _batch_labels(front, [p for p in here if p.scheme in twins and twins[p.scheme][0] == sid])
            for i, (p, text) in enumerate(zip(front, batches, strict=True)):
                (ends if i in (0, len(front) - 1) else inner).append((p, text, color))
        if rec is not None and rec.ctx == ctx:
            ax.plot([rec.tokens_per_s_per_user], [rec.tokens_per_s_per_gpu], "*", color="black", markersize=17,
                    zorder=6)
            obs.append((rec.tokens_per_s_per_user, rec.tokens_per_s_per_gpu, STAR_CLEARANCE))
        if itl_budget_s is not None:
            x = 1.0 / itl_budget_s
            ax.axvline(x, color="crimson", linestyle="--", linewidth=1.2, zorder=2)
            ax.axvspan(lo / 1.3, x, color="crimson", alpha=0.06, zorder=0)
        if n > 1:
            ax.set_title(f"ctx {ctx:,} (tokens a decode step reads)", fontsize=9)
        # the recommended point's label first, then the ends of every frontier, then (few curves) the rest
        first = [t for t in ends + inner if rec is not None and t[0] is rec]
        rest = [t for t in ends + (inner if len(curves) <= LABEL_ALL_UP_TO else []) if t not in first]
        labels.append((ax, [(ax.annotate(text, (p.tokens_per_s_per_user, p.tokens_per_s_per_gpu), fontsize=6.5,
                                         color=color, textcoords="offset points", xytext=(0, 0), zorder=5),
                             STAR_CLEARANCE if p is rec else (5 if p.on_frontier else 3) / 2 + 1.0)
                            for p, text, color in first + rest]))
    plain = FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v >= 10 else f"{v:g}")
    for ax in axes[:n]:
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            axis.set_major_formatter(plain)
            axis.set_minor_formatter(FuncFormatter(lambda v, _pos: ""))
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_xlim(lo / 1.3, hi * 1.3)
    for i, ax in enumerate(axes[:n]):  # shared x: a panel with no panel under it shows its own tick labels
        if i + ncols >= n:
            ax.tick_params(axis="x", labelbottom=True)
    xlabel = "output tokens/s per user (1 / mean inter-token latency) — faster for each user →"
    ylabel = "output tokens/s per GPU — more throughput per GPU →"
    if n == 1:
        axes[0].set_xlabel(xlabel)
        axes[0].set_ylabel(ylabel)
    else:
        fig.supxlabel(xlabel, fontsize=10)
        fig.supylabel(ylabel, fontsize=10)

    # the legend, outside the axes (right): never over a point, whatever the data
    handles: list[Line2D] = []
    if any(sum(1 for p in fit if p.best and p.ctx == c) > 1 for c in ctxs):
        handles.append(Line2D([], [], color="0.8", linewidth=9, solid_capstyle="round",
                              label="best of all schemes (envelope" + (", per context)" if n > 1 else ")")))
    for sid in drawn:
        color, style, marker = look[sid]
        same = [t for t, (of, _) in twins.items() if of == sid]
        exact = all(twins[t][1] for t in same)
        name = sid + (f" {'=' if exact else '≈'} {', '.join(same)} ("
                      + ("same points)" if exact else f"points within {NEAR:.0%})") if same else "")
        if not any(p.scheme == sid for p in fit):
            name += ": no batch fits in memory"
        handles.append(Line2D([], [], linestyle=style, color=color, linewidth=1.8, marker=marker, markersize=5,
                              label=name))
    if itl_budget_s is not None:
        handles.append(Line2D([], [], color="crimson", linestyle="--", linewidth=1.2,
                              label=f"ITL <= {itl_budget_s * 1e3:,.0f} ms: >= {1.0 / itl_budget_s:,.0f} tokens/s "
                                    "per user\nmeets it (the shaded side breaks it)"))
    budgets = [b for b in (f"ITL <= {itl_budget_s * 1e3:,.0f} ms" if itl_budget_s is not None else "",
                           f"TTFT <= {ttft_budget_s * 1e3:,.0f} ms" if ttft_budget_s is not None else "",
                           f"E2E <= {e2e_budget_s * 1e3:,.0f} ms" if e2e_budget_s is not None else "") if b]
    if budgets and any(p.meets_slo is False for p in fit):
        handles.append(Line2D([], [], linestyle="none", marker="o", markerfacecolor="white", markeredgecolor="0.3",
                              label="hollow: breaks " + " / ".join(budgets)))
    if rec is not None:
        ttft = f", TTFT {ms(rec.ttft_s)} ms" if rec.ttft_s is not None else ""
        where = f" (ctx {rec.ctx:,})" if n > 1 else ""
        handles.append(Line2D([], [], linestyle="none", marker="*", color="black", markersize=14,
                              label=f"recommended: {rec.scheme} at {rec.batch:,} sequences{where}:\n"
                                    f"{rec.tokens_per_s_per_gpu:,.0f} tok/s/GPU, "
                                    f"{rec.tokens_per_s_per_user:,.1f} tok/s/user,\nITL {ms(rec.itl_s)} ms{ttft}"))
    # beside the top right panel: constrained layout makes room for it under the title
    axes[ncols - 1].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
                           fontsize=8)
    if n == 1:
        axes[0].set_title(title, fontsize=9, wrap=True)
    else:
        fig.suptitle(title, fontsize=9)
    _place_labels(fig, labels, obstacles)
    return fig


def _batch_labels(front: Sequence[ParetoPoint], twin_points: Sequence[ParetoPoint]) -> list[str]:
    """The concurrency of each frontier point; where a curve drawn for its twins too has a twin at a
    different concurrency at the same rank (w4a16 at 205, awq at 203), both: "205/203"."""
    out = []
    by_scheme: dict[str, list[ParetoPoint]] = {}
    for p in twin_points:
        if p.on_frontier:
            by_scheme.setdefault(p.scheme, []).append(p)
    ranked = [sorted(ps, key=lambda p: p.tokens_per_s_per_user) for ps in by_scheme.values()]
    for i, p in enumerate(front):
        batches = [p.batch, *(ps[i].batch for ps in ranked if i < len(ps))]
        out.append("/".join(f"{b:,}" for b in dict.fromkeys(batches)))
    return out


def _place_labels(fig: Figure, labels: Sequence[tuple[Axes, Sequence[tuple[Annotation, float]]]],
                  obstacles: dict[Axes, list[tuple[float, float, float]]]) -> None:
    """Each batch label, in priority order, at the first of ``LABEL_SPOTS`` (its clearance away from its
    point) where it stays inside its axes and covers no marker and no label placed before it; a label
    with no such spot is left out (the legend and the table carry every figure)."""
    fig.draw_without_rendering()  # the layout: axes positions, so data maps to pixels
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    px = fig.dpi / 72.0
    for ax, anns in labels:
        box = ax.get_window_extent(renderer)
        discs = [(*ax.transData.transform((x, y)), r * px) for x, y, r in obstacles.get(ax, [])]
        placed: list[Bbox] = []
        for ann, gap in anns:
            for sx, sy, ha, va in LABEL_SPOTS:
                ann.xyann = (sx * gap, sy * gap * 0.6)
                ann.set_horizontalalignment(ha)
                ann.set_verticalalignment(va)
                bb = ann.get_window_extent(renderer)
                if (bb.x0 < box.x0 or bb.x1 > box.x1 or bb.y0 < box.y0 or bb.y1 > box.y1
                        or any(bb.overlaps(o) for o in placed)
                        or any(_disc_hits(bb, cx, cy, r) for cx, cy, r in discs)):
                    continue
                placed.append(bb)
                break
            else:
                ann.set_visible(False)


def _disc_hits(bb: Bbox, cx: float, cy: float, r: float) -> bool:
    """Whether the box ``bb`` (pixels) meets the disc of radius ``r`` around (cx, cy)."""
    nx = min(max(cx, bb.x0), bb.x1)
    ny = min(max(cy, bb.y0), bb.y1)
    return (nx - cx) ** 2 + (ny - cy) ** 2 < r * r


def _twins(points: Sequence[ParetoPoint], schemes: Sequence[str]) -> dict[str, tuple[str, bool]]:
    """Schemes whose curve coincides with an earlier scheme's: scheme -> (the earlier one, exact). Exact:
    the same concurrencies with the same tokens/s per user and per GPU to 1e-9 (nvfp4 and nvfp4-a16 run
    the same kernel on Hopper). Near: per context the same number of points, each, ranked by concurrency,
    within ``NEAR`` (relative) of its counterpart on both axes and on the same side of every budget and of
    the frontier (w4a16 and awq). Drawn once and named together, so a line is never hidden under another."""

    def curve(sid: str) -> list[ParetoPoint]:
        return sorted((p for p in points if p.scheme == sid), key=lambda p: (p.ctx, p.batch))

    def close(a: float, b: float) -> bool:
        return abs(a - b) <= NEAR * max(abs(a), abs(b))

    def same(a: list[ParetoPoint], b: list[ParetoPoint]) -> bool | None:
        """True: exact, False: near, None: neither."""
        if len(a) != len(b) or not a:
            return None
        if any(p.ctx != q.ctx or p.meets_slo != q.meets_slo or p.on_frontier != q.on_frontier
               for p, q in zip(a, b, strict=True)):
            return None
        if all(p.batch == q.batch and round(p.tokens_per_s_per_user, 9) == round(q.tokens_per_s_per_user, 9)
               and round(p.tokens_per_s_per_gpu, 9) == round(q.tokens_per_s_per_gpu, 9)
               for p, q in zip(a, b, strict=True)):
            return True
        if all(close(p.tokens_per_s_per_user, q.tokens_per_s_per_user)
               and close(p.tokens_per_s_per_gpu, q.tokens_per_s_per_gpu) for p, q in zip(a, b, strict=True)):
            return False
        return None

    firsts: list[tuple[str, list[ParetoPoint]]] = []
    out: dict[str, tuple[str, bool]] = {}
    for sid in schemes:
        c = curve(sid)
        if not c:
            continue
        for of, oc in firsts:
            verdict = same(oc, c)
            if verdict is not None:
                out[sid] = (of, verdict)
                break
        else:
            firsts.append((sid, c))
    return out
