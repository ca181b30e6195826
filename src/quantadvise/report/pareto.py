"""The Pareto frontier, drawn and tabulated: output tokens/s per GPU against tokens/s per user
(1 / ITL) for each scheme across concurrency — ``roofline --pareto`` and ``recommend --plot``.
matplotlib is the optional ``[plot]`` extra, imported only when a plot is asked for."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from ..errors import InputError
from ..perf.serving import ParetoPoint
from ..wording import install_hint, ms

PLOT_SUFFIXES = (".png", ".svg")


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




def write_frontier(points: Sequence[ParetoPoint], path: Path, *, title: str, schemes: Sequence[str],
                   itl_budget_s: float | None = None, ttft_budget_s: float | None = None,
                   e2e_budget_s: float | None = None, flag: str = "--plot") -> Path:
    """One panel: every fitting point of each scheme (small dots), its frontier (a line, concurrency
    labelled), the envelope over all schemes (a thick grey band), points that break a TTFT / E2E
    budget hollow, the ITL budget as a vertical line (1 / ITL tokens/s per user, the side that breaks it
    shaded) and the recommended point as a star."""
    check_plot_path(path, flag)
    fit = [p for p in points if p.fits]
    if not fit:
        raise InputError(f"{flag}: no point fits in GPU memory, nothing to draw", field="plot")
    plt = import_pyplot(flag)
    from matplotlib.ticker import FuncFormatter, LogLocator

    fig, ax = plt.subplots(figsize=(10.5, 6.4), constrained_layout=True)
    ax.set_xscale("log")
    ax.set_yscale("log")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = ["-", "--", ":", "-."]
    markers = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h"]
    ctxs = sorted({p.ctx for p in fit})
    env = sorted((p for p in fit if p.best), key=lambda p: p.tokens_per_s_per_user)
    if len(env) > 1:
        ax.plot([p.tokens_per_s_per_user for p in env], [p.tokens_per_s_per_gpu for p in env], "-",
                color="0.8", linewidth=9, solid_capstyle="round", zorder=1, label="best of all schemes (envelope)")
    same = _same_points(fit, schemes)
    for si, sid in enumerate(schemes):
        if sid in same:  # drawn with the scheme it coincides with
            continue
        color = colors[si % len(colors)]
        marker = markers[si % len(markers)]
        twins = [t for t, of in same.items() if of == sid]
        name = sid + (f" = {', '.join(twins)} (same points)" if twins else "")
        if not any(p.scheme == sid for p in fit):
            ax.plot([], [], "-", color=color, linewidth=1.8, label=f"{name}: no batch fits in memory")
            continue
        for ci, ctx in enumerate(ctxs):
            pts = [p for p in fit if p.scheme == sid and p.ctx == ctx]
            if not pts:
                continue
            label = name if len(ctxs) == 1 else f"{name}, ctx {ctx:,}"
            # one line style per scheme when there is one context (overlapping frontiers stay visible),
            # per context otherwise
            style = styles[(si if len(ctxs) == 1 else ci) % len(styles)]
            front = sorted((p for p in pts if p.on_frontier), key=lambda p: p.tokens_per_s_per_user)
            ax.plot([p.tokens_per_s_per_user for p in front], [p.tokens_per_s_per_gpu for p in front],
                    style, color=color, linewidth=1.8, zorder=3, label=label, marker=marker, markersize=5,
                    markevery=[])
            for p in pts:
                ok = p.meets_slo is not False
                ax.plot([p.tokens_per_s_per_user], [p.tokens_per_s_per_gpu], marker,
                        markersize=5 if p.on_frontier else 3, markerfacecolor=color if ok else "white",
                        markeredgecolor=color, zorder=4)
            for p in front:
                ax.annotate(f"{p.batch:,}", (p.tokens_per_s_per_user, p.tokens_per_s_per_gpu), fontsize=6,
                            color=color, textcoords="offset points", xytext=(3, 3), zorder=5)
    xs = [p.tokens_per_s_per_user for p in fit]
    lo, hi = min(xs), max(xs)
    if itl_budget_s is not None:
        x = 1.0 / itl_budget_s
        ax.axvline(x, color="crimson", linestyle="--", linewidth=1.2, zorder=2)
        ax.axvspan(min(lo, x) / 1.3, x, color="crimson", alpha=0.06, zorder=0)
        # the note goes on the side of the line with more room (log axis), at the top or the bottom,
        # away from where the frontiers cross the line
        left, right = min(lo, x) / 1.3, max(hi, x) * 1.3
        room_right = math.log(right / x) / math.log(right / left)
        y0, y1 = ax.get_ylim()
        near = min(fit, key=lambda p: abs(math.log(p.tokens_per_s_per_user / x)))
        high = math.log(near.tokens_per_s_per_gpu / y0) / math.log(y1 / y0) > 0.5
        ax.annotate(f"ITL <= {itl_budget_s * 1e3:,.0f} ms: the shaded side breaks it\n"
                    f"(>= {x:,.0f} tokens/s per user meets it)", (x, 0.02 if high else 0.98),
                    xycoords=("data", "axes fraction"), fontsize=8, color="crimson",
                    ha="left" if room_right >= 0.4 else "right", va="bottom" if high else "top",
                    textcoords="offset points",
                    xytext=(4 if room_right >= 0.4 else -4, 0), zorder=7,
                    bbox={"boxstyle": "round", "fc": "white", "ec": "none", "alpha": 0.8})
    budgets = [f"ITL <= {itl_budget_s * 1e3:,.0f} ms" if itl_budget_s is not None else "",
               f"TTFT <= {ttft_budget_s * 1e3:,.0f} ms" if ttft_budget_s is not None else "",
               f"E2E <= {e2e_budget_s * 1e3:,.0f} ms" if e2e_budget_s is not None else ""]
    if any(b for b in budgets) and any(p.meets_slo is False for p in fit):
        ax.plot([], [], "o", markerfacecolor="white", markeredgecolor="0.3",
                label="hollow: breaks " + " / ".join(b for b in budgets if b))
    rec = next((p for p in fit if p.recommended), None)
    if rec is not None:
        ax.plot([rec.tokens_per_s_per_user], [rec.tokens_per_s_per_gpu], "*", color="black", markersize=17, zorder=6,
                label=f"recommended: {rec.scheme} at {rec.batch:,} sequences")
        ax.annotate(f"{rec.scheme}, {rec.batch:,} seqs: {rec.tokens_per_s_per_gpu:,.0f} tok/s/GPU\n"
                    f"ITL {ms(rec.itl_s)} ms, TTFT {ms(rec.ttft_s)} ms",
                    (rec.tokens_per_s_per_user, rec.tokens_per_s_per_gpu), fontsize=8, textcoords="offset points",
                    xytext=(14, -34), zorder=7, bbox={"boxstyle": "round", "fc": "white", "ec": "0.6", "alpha": 0.9},
                    arrowprops={"arrowstyle": "-", "color": "0.4", "linewidth": 0.8})
    plain = FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v >= 10 else f"{v:g}")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(FuncFormatter(lambda v, _pos: ""))
    ax.set_xlim(lo / 1.3, hi * 1.3)
    ax.set_xlabel("output tokens/s per user (1 / mean inter-token latency) — faster for each user →")
    ax.set_ylabel("output tokens/s per GPU — more throughput per GPU →")
    ax.grid(True, which="both", alpha=0.3)
    # outside the axes, right: never over a frontier or the budget note, whatever the data
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, fontsize=8)
    ax.set_title(title, fontsize=9, wrap=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, metadata={"Date": None} if path.suffix.lower() == ".svg" else None)
    plt.close(fig)
    return path


def _same_points(points: Sequence[ParetoPoint], schemes: Sequence[str]) -> dict[str, str]:
    """Schemes whose every point coincides with an earlier scheme's (same concurrencies, the same
    tokens/s per user and per GPU to 1e-9): scheme -> the earlier one. Drawn once, named together,
    so a line is never hidden under an identical one (nvfp4 and nvfp4-a16 run the same kernel on Hopper)."""

    def key(sid: str) -> tuple[tuple[int, int, float, float], ...]:
        return tuple(sorted((p.ctx, p.batch, round(p.tokens_per_s_per_user, 9), round(p.tokens_per_s_per_gpu, 9))
                            for p in points if p.scheme == sid))

    seen: dict[tuple[tuple[int, int, float, float], ...], str] = {}
    out: dict[str, str] = {}
    for sid in schemes:
        k = key(sid)
        if not k:
            continue
        if k in seen:
            out[sid] = seen[k]
        else:
            seen[k] = sid
    return out
