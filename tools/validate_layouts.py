"""Maintainer script: the layout model against published multi-GPU measurements (data/layout_validation.yaml).

    python tools/validate_layouts.py            # the table of docs/calibration.md §8

Each measurement is priced the way the layout search prices a layout (perf/comm.py, perf/parallel.py, the
serving loop, advisor/disagg.py's prefill pool), at the lengths, layout and load the source states, with the
shipped efficiency profiles; the error is predicted / measured - 1 (a share in percentage points: predicted -
measured). tests/unit/test_layout_validation.py recomputes the table.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from quantadvise import catalog  # noqa: E402
from quantadvise.perf.comm import Comm, PublishedMeasurement  # noqa: E402


def _models(m: PublishedMeasurement, tp: int, kv: object = None):
    from quantadvise.api.speed import efficiency
    from quantadvise.catalog.resolve import get_gpu, load_model, load_profiles
    from quantadvise.perf.step import StepModel

    arch, _ = load_model(m.model or "")
    g = get_gpu(m.gpu)
    s = catalog.scheme_from_preset(catalog.scheme_preset(m.scheme or "bf16"))
    eff = efficiency(load_profiles(False, None, g), g, s, engine=m.engine)
    return arch, g, StepModel(arch, s, g, gpus=tp, efficiency=eff, kv=kv), StepModel(arch, s, g, gpus=1, efficiency=eff,
                                                                                     kv=kv)


def _layout(m: PublishedMeasurement, lay: dict | None = None):
    from quantadvise.perf.parallel import LayoutStep, Parallel

    lay = lay if lay is not None else (m.layout or {})
    par = Parallel(tp=int(lay.get("tp", 1)), pp=int(lay.get("pp", 1)), dp=int(lay.get("dp", 1)),
                   ep=bool(lay.get("ep", False)))
    arch, g, sm, one = _models(m, par.tp)
    comm = Comm(catalog.comm_system(g.id), m.engine or "vllm")
    return arch, par, comm, LayoutStep(sm, par, comm, experts=one if par.ep else None)


def predict(m: PublishedMeasurement) -> float:
    """The model's figure for ``m``, in ``m.unit``."""
    from quantadvise.engines.flags import prefill_chunk_tokens
    from quantadvise.memory.kvcache import sequence_bytes

    if m.metric == "allreduce_busbw_gbps":
        comm = Comm(catalog.comm_system(m.gpu), "nccl")
        n, b = m.gpus or 8, m.bytes or 0
        return b / comm.allreduce(b, n) * 2 * (n - 1) / n / 1e9
    if m.metric == "dispatch_ms_per_layer":
        row = catalog.comm_system(m.gpu)
        table = max(row.deepep, key=lambda t: t.nodes)  # the widest table on file (8 nodes)
        pts = tuple((p[0], p[1]) for p in table.points)
        from quantadvise.perf.comm import _interp

        return _interp(pts, m.tokens_per_gpu or 0) * 1e3
    if m.metric == "decode_tokens_per_s_per_node":
        _, par, comm, ls = _layout(m)
        step = ls.decode(m.concurrency or 1, m.decode_ctx).time_s
        return (m.concurrency or 1) / step * comm.gpus_per_node / par.gpus
    if m.metric == "prefill_tokens_per_s_per_node":
        _, par, comm, ls = _layout(m)
        t = ls.prefill(m.concurrency or 1, m.prompt or 0).time_s
        return (m.concurrency or 1) * (m.prompt or 0) / t * comm.gpus_per_node / par.gpus
    if m.metric == "prefill_comm_share_pct":
        _, _, _, ls = _layout(m)
        c = ls.prefill(m.concurrency or 1, m.prompt or 0)
        return 100 * c.communication_s / c.time_s
    if m.metric in ("tpot_ms", "pd_tpot_ms"):
        _, _, _, ls = _layout(m)
        return ls.decode(m.concurrency or 1, m.decode_ctx).time_s * 1e3
    if m.metric == "pd_ttft_ms":
        pre = m.prefill or {}
        arch, par, comm, ls = _layout(m, {"tp": pre.get("tp", 1)})
        g = catalog.get_gpu(m.gpu)
        prompt = m.prompt or 0
        b = max(1, prefill_chunk_tokens(m.engine or "vllm", g.memory_bytes) // max(prompt, 1))
        per_replica = b / ls.prefill(b, prompt).time_s
        rho = (m.rate or 0) / (pre.get("replicas", 1) * per_replica)
        one = ls.prefill(1, prompt).time_s
        transfer = comm.p2p(sequence_bytes(arch, None, prompt) / par.tp, cross_node=True)
        return (one * (1 + rho / (2 * (1 - rho))) + transfer) * 1e3
    raise ValueError(f"no prediction for metric {m.metric}")


def error(m: PublishedMeasurement, predicted: float) -> float:
    """Relative error (predicted / measured - 1), or the difference in points for a share."""
    return predicted - m.value if m.metric.endswith("_pct") else predicted / m.value - 1


def rows() -> list[tuple[PublishedMeasurement, float, float]]:
    return [(m, p, error(m, p)) for m in catalog.layout_measurements() for p in [predict(m)]]


def main() -> int:
    print("| measurement | split | measured | predicted | error |")
    print("|---|---|---|---|---|")
    for m, p, e in rows():
        err = f"{e:+.1f} points" if m.metric.endswith("_pct") else f"{e:+.0%}"
        print(f"| `{m.id}`: {m.what} | {m.split} | {m.value:,.4g} {m.unit} | {p:,.4g} | {err} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
