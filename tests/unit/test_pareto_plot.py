"""The Pareto frontier plot (report/pareto.py): one panel per decode context so the envelope never joins
two contexts, budget and recommended figures in the legend (outside the axes), batch labels that cover
no point and no other label, near-identical curves drawn once. The points are synthetic: a scheme's
ITL is ``a + b * B`` ms at concurrency B, so tokens/s per user = 1000 / ITL and per GPU = B * 1000 / ITL
(one GPU); the expected envelope of each case is worked out in its comment."""

from __future__ import annotations

import itertools
import re

import pytest

pytest.importorskip("matplotlib")

from quantadvise.perf.serving import ParetoPoint, mark_frontier  # noqa: E402
from quantadvise.report.pareto import LABEL_ALL_UP_TO, frontier_figure, write_frontier  # noqa: E402

BATCHES = (1, 2, 4, 8)
THICK = 9  # the envelope band's line width


def point(scheme: str, ctx: int, batch: int, a_ms: float, b_ms: float, *, meets: bool | None = None,
          recommended: bool = False) -> ParetoPoint:
    itl = (a_ms + b_ms * batch) / 1e3
    return ParetoPoint(scheme=scheme, ctx=ctx, batch=batch, tokens_per_s=batch / itl, tokens_per_s_per_gpu=batch / itl,
                       tokens_per_s_per_user=1 / itl, itl_s=itl, ttft_s=None, e2e_s=itl * 100, prefill_share=None,
                       usd_per_mtok=None, bound="memory", fits=True, meets_slo=meets, recommended=recommended)


def curve(scheme: str, ctx: int, a_ms: float, b_ms: float, batches=BATCHES) -> list[ParetoPoint]:
    return [point(scheme, ctx, b, a_ms, b_ms) for b in batches]


def star(points: list[ParetoPoint], scheme: str, ctx: int, batch: int) -> list[ParetoPoint]:
    return [p.model_copy(update={"recommended": True}) if (p.scheme, p.ctx, p.batch) == (scheme, ctx, batch) else p
            for p in points]


def drawn(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def labels(ax):
    return [t for t in ax.texts if t.get_visible()]


def legend_text(fig) -> str:
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    return "\n".join(t.get_text() for lg in legends for t in lg.get_texts())


def close(fig) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_the_envelope_is_drawn_per_context_never_across_two():
    # ctx 1,024: a (ITL 10 + B ms) beats b (20 + 2B) at every B on both axes, and every b point is
    # dominated by an a point (b at 8: 8 / 36 ms = 222 tok/s/GPU at 27.8/user, below a at 4: 4 / 14 ms =
    # 286 at 71.4), so the envelope is a's four points: per user 1000 / (10 + B) = 90.9, 83.3, 71.4, 55.6.
    # ctx 8,192: a is 40 + 4B = twice b's 20 + 2B, so b's four points: 1000 / (20 + 2B) = 45.5, 41.7,
    # 35.7, 27.8. One band joining both contexts (the old drawing) would zig-zag between the two sets.
    pts = mark_frontier(curve("a", 1024, 10, 1) + curve("b", 1024, 20, 2) + curve("a", 8192, 40, 4)
                        + curve("b", 8192, 20, 2))
    fig = frontier_figure(star(pts, "a", 1024, 8), title="t", schemes=["a", "b"])
    try:
        axes = drawn(fig)
        assert [ax.get_title() for ax in axes] == ["ctx 1,024 (tokens a decode step reads)",
                                                   "ctx 8,192 (tokens a decode step reads)"]
        expected = {0: [1000 / (10 + b) for b in BATCHES], 1: [1000 / (20 + 2 * b) for b in BATCHES]}
        for i, ax in enumerate(axes):
            (band,) = [ln for ln in ax.get_lines() if ln.get_linewidth() == THICK]
            assert sorted(band.get_xdata()) == pytest.approx(sorted(expected[i]))
        # the star is drawn once, in its context's panel
        stars = [[ln for ln in ax.get_lines() if ln.get_marker() == "*"] for ax in axes]
        assert [len(s) for s in stars] == [1, 0]
        assert "(envelope, per context)" in legend_text(fig)
    finally:
        close(fig)


def test_one_context_is_one_panel():
    fig = frontier_figure(mark_frontier(curve("a", 1100, 10, 1)), title="t", schemes=["a"])
    try:
        assert len(drawn(fig)) == 1
    finally:
        close(fig)


def test_budget_and_recommended_figures_are_legend_entries_not_boxes_on_the_data():
    # a at 10 + B ms; ITL <= 15 ms holds up to B = 4 (14 ms); the star at 4: 4 / 14 ms = 285.7 tok/s/GPU,
    # 1000 / 14 = 71.4 tok/s per user; ITL 14.0 ms; >= 1000 / 15 = 67 tokens/s per user meets the budget
    pts = [point("a", 1100, b, 10, 1, meets=b <= 4) for b in (1, 2, 4, 8, 16)]
    fig = frontier_figure(star(mark_frontier(pts), "a", 1100, 4), title="t", schemes=["a"], itl_budget_s=0.015)
    try:
        text = legend_text(fig)
        assert "ITL <= 15 ms: >= 67 tokens/s per user" in text
        assert "recommended: a at 4 sequences:\n286 tok/s/GPU, 71.4 tok/s/user,\nITL 14.0 ms" in text
        assert "TTFT" not in text.split("recommended:")[1]  # no prompt priced: no TTFT, not "TTFT - ms"
        assert "hollow: breaks ITL <= 15 ms" in text
        # on the axes there is nothing but batch labels
        (ax,) = drawn(fig)
        assert ax.texts and all(re.fullmatch(r"[\d,/]+", t.get_text()) for t in ax.texts)
    finally:
        close(fig)


def _crowded(n: int) -> list[ParetoPoint]:
    # n schemes whose curves nearly coincide (2% apart), over 1 .. 256: the labels of their ends and
    # inner points fall on one another unless placed
    out: list[ParetoPoint] = []
    for k in range(n):
        out += curve(f"s{k}", 1100, 10 * (1 + 0.02 * k), 0.5 * (1 + 0.02 * k), batches=(1, 2, 4, 8, 16, 32, 64, 128, 256))
    return star(mark_frontier(out), "s0", 1100, 64)


@pytest.mark.parametrize("n", [3, 10])
def test_batch_labels_cover_no_other_label_and_no_point(n):
    pts = _crowded(n)
    fig = frontier_figure(pts, title="t", schemes=[f"s{k}" for k in range(n)])
    try:
        renderer = fig.canvas.get_renderer()
        (ax,) = drawn(fig)
        box = ax.get_window_extent(renderer)
        shown = labels(ax)
        assert shown
        boxes = [t.get_window_extent(renderer) for t in shown]
        for b1, b2 in itertools.combinations(boxes, 2):
            assert not b1.overlaps(b2)
        for b in boxes:
            assert box.x0 <= b.x0 and b.x1 <= box.x1 and box.y0 <= b.y0 and b.y1 <= box.y1
        # no label box holds a point's centre
        centres = [ax.transData.transform((p.tokens_per_s_per_user, p.tokens_per_s_per_gpu)) for p in pts]
        for b in boxes:
            assert not any(b.x0 < x < b.x1 and b.y0 < y < b.y1 for x, y in centres)
        # the recommended point's concurrency is labelled
        assert any(t.get_text() == "64" and t.xy == pytest.approx((1000 / 42, 64000 / 42)) for t in shown)
    finally:
        close(fig)


def test_many_curves_label_only_the_ends_of_each_frontier_and_the_recommended_point():
    n = LABEL_ALL_UP_TO + 1
    pts = _crowded(n)
    fig = frontier_figure(pts, title="t", schemes=[f"s{k}" for k in range(n)])
    try:
        (ax,) = drawn(fig)
        allowed = {"1", "256", "64"}  # each curve's ends (B = 1, 256) and the star at 64
        assert {t.get_text() for t in ax.texts} <= allowed
    finally:
        close(fig)


def test_identical_curves_are_drawn_once_and_named_together():
    pts = mark_frontier(curve("nvfp4", 1100, 10, 1) + curve("nvfp4-a16", 1100, 10, 1))
    fig = frontier_figure(pts, title="t", schemes=["nvfp4", "nvfp4-a16"])
    try:
        assert "nvfp4 = nvfp4-a16 (same points)" in legend_text(fig)
        (ax,) = drawn(fig)
        # one frontier line (plus one dot per point): the twin adds no line of its own
        fronts = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1 and ln.get_linewidth() != THICK]
        assert len(fronts) == 1
    finally:
        close(fig)


def test_curves_within_one_percent_are_named_together_farther_ones_apart():
    # awq 0.6% slower at every point (ITL 10.06 + 1.006 B): drawn with w4a16 as "≈", its concurrency at the
    # last frontier point shown next to w4a16's when they differ; fp8 2% slower: a curve of its own
    w4 = curve("w4a16", 1100, 10, 1, batches=(1, 2, 4, 205))
    awq = curve("awq", 1100, 10.06, 1.006, batches=(1, 2, 4, 203))
    fp8 = curve("fp8", 1100, 10.2, 1.02)
    pts = mark_frontier(w4 + awq + fp8)
    fig = frontier_figure(pts, title="t", schemes=["w4a16", "awq", "fp8"])
    try:
        text = legend_text(fig)
        assert "w4a16 ≈ awq (points within 1%)" in text
        assert "\nfp8" in text and "≈ fp8" not in text
        (ax,) = drawn(fig)
        assert "205/203" in [t.get_text() for t in ax.texts]
    finally:
        close(fig)


def test_a_scheme_with_no_fitting_point_is_named_in_the_legend(tmp_path):
    unfit = [p.model_copy(update={"fits": False}) for p in curve("bf16", 1100, 40, 1)]
    pts = mark_frontier(unfit + curve("w4a16", 1100, 10, 1))
    out = write_frontier(pts, tmp_path / "f.svg", title="t", schemes=["bf16", "w4a16"])
    text = out.read_text()
    assert "bf16: no batch fits in memory" in text and "w4a16" in text


def test_pareto_without_a_prompt_says_decode_only(cli, tmp_path):
    # no --prompt: nothing to prefill, so no TTFT; the table, the run-at line and the plot say so instead of
    # "0 prompt + 256 output", a "TTFT ms" column of dashes and "TTFT - ms"
    out = tmp_path / "f.svg"
    r = cli("roofline", "--pareto", "--ctx", "1k,8k", "--batch", "1..64", "--plot", str(out))
    assert r.code == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "decode only, 256 output tokens per request (no --prompt: prefill and TTFT not modelled)" in text
    assert "0 prompt" not in text and "TTFT ms" not in text and "TTFT -" not in text
    run_at = text[text.index("Run at:"):]
    assert "TTFT" not in run_at.split(":", 2)[1]
    svg = out.read_text()
    assert "decode only" in svg and "0 + 256" not in svg and "TTFT - ms" not in svg
