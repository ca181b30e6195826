"""Collection glitches in NVIDIA's published kernel tables (``tools/import_aiconfigurator.py --tables``): a
cell far above its neighbours along the grid while no neighbouring shape rises there, and a table whose first
grid point timed a one-time cost in every shape's first call, are left blank in the shipped text (a header line
names them) and read between their neighbours. Pure: text in, text out."""

from __future__ import annotations

from collections.abc import Callable

GLITCH_FACTOR = 3.0  # a cell over this many times both its neighbours along the grid is a spike
# a table whose first grid point costs over this many times its second in most of its shapes timed a one-time cost
# in its first call (B200 vLLM CUTLASS fp8: +12-16 us at M = 1 in 355 of its 399 shapes, the same kernel as M = 2)
FIRST_POINT_FACTOR = 1.5


def drop_glitches(text: str, nkey: int, groups: Callable[[tuple[str, ...]], list[tuple[str, ...]]]) -> str:
    """``text`` (a table: ``#`` header lines, a column line, rows of ``nkey`` key columns then values) with each
    isolated spike left blank: a cell over :data:`GLITCH_FACTOR` times both its neighbours along the grid
    (tokens, M, KV length; the grid's first point: times its one neighbour, the next larger call — less work
    never costs 3x more) while no other row of its shape groups (``groups`` of a row's key: rows sharing one
    are neighbouring shapes) spikes at the same point — a collection glitch, not the kernel (a kernel's real
    step at some M shows in the neighbouring shapes too). A header line lists the cells left blank; the lookup
    reads them between their neighbours. A table whose first point costs over :data:`FIRST_POINT_FACTOR` times
    its second in the median shape has that point left blank wherever it costs more than the second
    (:func:`_first_point_artifact`)."""
    lines = text.splitlines()
    head = [ln for ln in lines if ln.startswith("#")]
    body = [ln for ln in lines if not ln.startswith("#")]
    cols = body[0].split(",")
    rows = [ln.split(",") for ln in body[1:]]

    def spikes(row: list[str]) -> set[int]:
        pts = [(i, float(x)) for i, x in enumerate(row[nkey:]) if x]
        got = {pts[j][0] for j in range(1, len(pts) - 1)
               if pts[j][1] > GLITCH_FACTOR * max(pts[j - 1][1], pts[j + 1][1])}
        if len(pts) > 1 and pts[0][1] > GLITCH_FACTOR * pts[1][1]:
            got.add(pts[0][0])  # the grid's first point has one neighbour, a larger call: a call never costs 3x more
        return got

    first = _first_point_artifact(rows, nkey)
    spiked = [spikes(r) for r in rows]
    members: dict[tuple[str, ...], list[int]] = {}
    for i, r in enumerate(rows):
        for g in groups(tuple(r[:nkey])):
            members.setdefault(g, []).append(i)
    dropped = []
    for i, found in enumerate(spiked):
        peers = {j for g in groups(tuple(rows[i][:nkey])) for j in members[g] if j != i}
        for c in sorted(found):
            if not any(c in spiked[j] for j in peers):
                rows[i][nkey + c] = ""
                dropped.append(f"{'/'.join(rows[i][:nkey])} at {cols[nkey + c]}")
    if first:
        hit, ratio, shapes = first
        head.append(f"# left blank: the grid's first point ({cols[nkey]}) in the {len(hit)} of {shapes} shapes where it "
                    f"costs more than the second ({ratio:.2f}x in the median shape, over {FIRST_POINT_FACTOR:g}x: a one-time "
                    "cost of each shape's first call, not the kernel; less work never costs more); read as the second")
    if dropped:
        head.append(f"# left blank as collection glitches (over {GLITCH_FACTOR:g}x both neighbours along the grid, or the next "
                    f"point at the grid's first, alone "
                    f"among the neighbouring shapes; read between them): {'; '.join(dropped)}")
    return "\n".join([*head, body[0], *(",".join(r) for r in rows)]) + "\n"


def _first_point_artifact(rows: list[list[str]], nkey: int) -> tuple[list[int], float, int] | None:
    """Where the table's first grid point costs over :data:`FIRST_POINT_FACTOR` times its second in the median
    shape (a one-time cost timed in each shape's first call, not the kernel: less work never costs more), blank
    that point in every row where it costs more than the second; (those rows, the median ratio, the shapes with
    both points), or None (nothing changed)."""
    pairs = [(i, float(r[nkey]), float(r[nkey + 1])) for i, r in enumerate(rows)
             if len(r) > nkey + 1 and r[nkey] and r[nkey + 1] and float(r[nkey + 1]) > 0]
    if not pairs:
        return None
    ratios = sorted(a / b for _, a, b in pairs)
    h = len(ratios) // 2
    median = ratios[h] if len(ratios) % 2 else 0.5 * (ratios[h - 1] + ratios[h])
    if median <= FIRST_POINT_FACTOR:
        return None
    hit = [i for i, a, b in pairs if a > b]
    for i in hit:
        rows[i][nkey] = ""
    return hit, median, len(pairs)


def gemm_groups(key: tuple[str, ...]) -> list[tuple[str, ...]]:
    return [("n", key[0]), ("k", key[1])]


def moe_groups(key: tuple[str, ...]) -> list[tuple[str, ...]]:
    return [(key[0], key[2], key[3])]  # hidden, top-k, experts: the per-GPU sizes of one model family


def attention_groups(key: tuple[str, ...]) -> list[tuple[str, ...]]:
    return [key[:4]]  # heads, kv heads, head dim, kv dtype: the batches of one configuration
