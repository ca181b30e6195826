"""Write data/kernel_tables/stream_factors.yaml: how much more slowly a kernel priced by a same-math table (or a
composition) streams its weights than the table's kernel, fitted to published end-to-end runs of the kernel
itself or to its own published benchmark.

A same-math table (docs/calibration.md §11) is another library's measured GEMM of the same math on the same
GPU: TRT-LLM's weight-only int4 GEMM for Machete, its SmoothQuant int8 GEMM for vLLM's CUTLASS int8. At one
sequence those tables time batched-GEMV kernels; the engine's own kernel may stream its weights more slowly.
The Red Hat AI model cards (source S8 of data/validation/e2e_points.yaml) time one request at a time, each
quantized checkpoint beside its bf16 baseline on the same GPU, release and lengths. Per run, the baseline
anchors what the step model does not price (the host time of vLLM's V0 engine, the harness):
``X = measured per-token time of bf16 - predicted bf16 step``. For each (GPU, kernel, weight bits) that a
same-math table prices in the fitted S8 groups (those not in the points file's ``heldout``), the factor is the
one that makes the predicted per-token time plus X meet the measured one in the median over those runs
(bisection; the factor multiplies the streamed bytes, so it acts where the call is memory-bound and fades
once the math binds: ``perf.kernel_tables.composed``). A factor is written where it differs from 1 by more
than ``NOISE`` (the tables' own two-collection noise, 5%, doubled for the cards' 0.1 s rounding). It goes to
the kernel at any weight width and to the kernels built on its mainloop (``SAME_MAINLOOP``: vLLM's CUTLASS W4A8
on Machete's), on every GPU of its architecture (``carried_from`` names the fitted row).

A kernel no card runs but whose own benchmark is published (data/validation/kernel_benchmarks.yaml: Marlin and
Humming on an H100) is fitted to that: its time over the 16-bit baseline timed in the same harness, times the
shipped table of that baseline at the same shape, is what it takes on the tables' harness; the factor is the
one with which its same-math table meets that at the benchmark's smallest M. It goes to the same kernel's other
weight formats of that width (``also``) and to the GPUs of the same architecture.

    python tools/fit_stream_factors.py [--dry-run]

Then ``quantadvise validate --e2e`` shows the speed-up pairs of the held-out S8 groups.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Callable
from datetime import date
from pathlib import Path
from statistics import median
from typing import Any

from quantadvise import catalog
from quantadvise.api.e2e import points_table, setup
from quantadvise.catalog import lookup_tables
from quantadvise.perf.kernel_tables import StreamFactor
from quantadvise.perf.loop import cycle

OUT = Path(__file__).resolve().parents[1] / "data" / "kernel_tables" / "stream_factors.yaml"
NOISE = 0.10
SOURCE = "S8"


def _per_token(p: Any) -> tuple[float, float, Any]:
    """(predicted seconds per decode step, predicted prefill seconds, the step model's same-math choice), with the
    stream factors in force (:func:`~quantadvise.catalog.lookup_tables.stream_factors_as`)."""
    st = setup({}, config=p.config, scheme=p.scheme, gpu=p.gpu, tp=p.tp, engine=p.engine, version=p.engine_version,
               kv_dtype=p.kv_dtype, measured=p.as_of)
    full = cycle(st.sm, st.loop, concurrency=1, prompt=p.prompt, output=p.output,
                 decode_ctx=p.prompt + p.output // 2, lockstep=True).seconds(st.loop.terms)
    first = cycle(st.sm, st.loop, concurrency=1, prompt=p.prompt, output=1, decode_ctx=p.prompt,
                  lockstep=True).seconds(st.loop.terms)
    k = st.sm.eff.kernels
    return (full - first) / (p.output - 1), first, (k.layer_choice if k is not None else None, k)


def _measured_step(p: Any, prefill: float) -> float:
    latency = p.output / p.output_tok_s
    return (latency - prefill) / (p.output - 1)


# kernels built on the same upstream mainloop as a kernel fitted here, which take its factor on the same architecture:
# vLLM's Machete adapts CUTLASS's sm90 mixed-input collective (vllm 0.34.0
# csrc/quantization/machete/machete_mainloop.cuh:124-127: "modified code from ...
# sm90_mma_tma_gmma_rs_warpspecialized_mixed_input.hpp"); its CUTLASS W4A8 GEMM builds that collective for int4 x fp8
# (csrc/quantization/cutlass_w4a8/w4a8_mm_entry.cu:99-104, :142-150: CollectiveBuilder on Sm90,
# KernelTmaWarpSpecializedCooperative)
SAME_MAINLOOP = {"machete": ("cutlass-w4a8",)}


def _factor(miss: Callable[[float], float]) -> float:
    """The stream factor in [0.5, 4] where ``miss`` (the prediction's excess over the measurement, growing with the
    factor) crosses 0, by bisection, to three decimals."""
    lo, hi = 0.5, 4.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if miss(mid) < 0 else (lo, mid)
    return round((lo + hi) / 2, 3)


def _row(gpu: str, kernel: str, bits: int | None, f: float, note: str, fitted_on: list[str], source: str,
         carried: str | None, fitted_to: str) -> dict[str, Any]:
    return {"gpu": gpu, "kernel": kernel, **({"weight_bits": bits} if bits else {}), "factor": f,
            **({"carried_from": carried} if carried else {}), "fitted_to": fitted_to, "note": note,
            "fitted_on": fitted_on, "source": source, "as_of": date.today().isoformat()}


def _same_arch(gpu: str) -> list[str]:
    """``gpu`` and every other GPU with tables of the same architecture."""
    cc = catalog.get_gpu(gpu).compute_capability
    return [gpu, *(x for x in catalog.kernel_table_gpus() if x != gpu and catalog.get_gpu(x).compute_capability == cc)]


def _priced(gpu: str, kernel: str, bits: int | None) -> list[tuple[str, int | None]]:
    """The (kernel, weight bits) rows a same-math table or a composition prices on ``gpu`` for ``kernel``."""
    idx = lookup_tables.kernel_tables(gpu).index
    out: list[tuple[str, int | None]] = [(s.kernel, s.weight_bits) for s in idx.same_math
                                         if s.kernel == kernel and (bits is None or s.weight_bits in (None, bits))]
    return out + [(c.kernel, None) for c in idx.composed if c.kernel == kernel]


def _width_ratios(bench: list[dict[str, Any]]) -> tuple[float, str]:
    """How a mixed-input kernel's factor changes from 4-bit to 8-bit weights where a benchmark measured both: the
    median over those kernels of their 8-bit factor over their 4-bit one, and the words that say so."""
    own = {(r["gpu"], r["kernel"], r.get("weight_bits")): r["factor"] for r in bench if "carried_from" not in r}
    ratios = {k: own[(g, k, 8)] / f4 for (g, k, b), f4 in own.items() if b == 4 and (g, k, 8) in own}
    if not ratios:
        return 1.0, ""
    words = ", ".join(f"{k} {r:.3f}" for k, r in sorted(ratios.items()))
    return median(ratios.values()), f"8-bit / 4-bit factor as the benchmarked kernels show it ({words}: median)"


def _e2e_rows(gpu: str, kernel: str, bits: int | None, f: float, note: str, fitted_on: list[str],
              width: tuple[float, str]) -> list[dict[str, Any]]:
    """A factor fitted to end-to-end runs of ``kernel`` (``bits``) on ``gpu``: the kernel itself there, the same kernel
    at the other weight width (4 <-> 8 bits, scaled by ``width``: :func:`_width_ratios`) and the kernels on its
    mainloop (:data:`SAME_MAINLOOP`) at its width, on every GPU of its architecture."""
    fitted = f"{kernel}{f' ({bits}-bit)' if bits else ''} on {gpu}"
    arch = f"sm{catalog.get_gpu(gpu).compute_capability.replace('.', '')}"
    source = "tools/fit_stream_factors.py on data/validation/e2e_points.yaml source S8 (Red Hat AI model cards, published)"
    rows = []
    for g in _same_arch(gpu):
        for kern, why in ((kernel, "the same kernel"), *((k, f"built on {kernel}'s mainloop (CUTLASS's sm90 mixed-input "
                                                          "collective)") for k in SAME_MAINLOOP.get(kernel, ()))):
            for k2, b2 in _priced(g, kern, None):
                own = (g, k2, b2) == (gpu, kernel, bits)
                f2, how = f, why
                if bits in (4, 8) and b2 in (4, 8) and b2 != bits:  # the other width of the same kernel
                    f2 = round(f * (width[0] if b2 == 8 else 1.0 / width[0]), 3)
                    how = f"{why} at {b2} bits, x {width[0]:.3f}: the {width[1]}"
                rows.append(_row(g, k2, b2, f2, note if own else f"carried from {fitted} ({how}, {arch}): {note}",
                                 fitted_on, source, None if own else fitted, "end-to-end runs"))
    return rows


def _bench_rows() -> list[dict[str, Any]]:
    """Factors from published kernel benchmarks (data/validation/kernel_benchmarks.yaml): the kernel's time over its
    harness's 16-bit baseline, times the shipped table of that baseline at the same shape, is the time it takes on the
    tables' harness; the factor is the one its same-math table needs to meet that at the benchmark's smallest M."""
    from quantadvise.calibration.lookup_checks import benchmark_times
    from quantadvise.perf.lookup import TableChoice, choose_table, op_series

    rows = []
    for b in lookup_tables.kernel_benchmarks():
        gpu, n, k, ms = b.gpu, b.n, b.k, b.m
        tabs = lookup_tables.kernel_tables(gpu)
        base_table = tabs.get(b.baseline.table).series(n, k)
        arch = f"sm{catalog.get_gpu(gpu).compute_capability.replace('.', '')}"
        for col in b.kernels:
            bits = col.weight_bits
            choice = choose_table(tabs, "vllm", col.kernel, bits)
            target = benchmark_times(b, col, base_table)

            def at(f: float, m: float, c: Any = choice, tabs: Any = tabs, n: int = n, k: int = k,
                   bits: int = bits) -> float:
                return op_series(TableChoice(c.basis, c.table, c.why, f), tabs, n, k, bits / 8).at(m)

            f = _factor(lambda x, at=at, m=ms[0], t=target[0]: at(x, m) - t)
            errs = ", ".join(f"M = {m:g}: {at(f, m) / t - 1:+.0%}" for m, t in zip(ms, target, strict=True))
            note = (f"{col.column} against {b.baseline.column} in one harness ({b.id}: {n} x {k}), "
                    f"{b.baseline.tflops[0] / col.tflops[0]:.3f} of its time at M = {ms[0]:g}, read on the shipped "
                    f"{b.baseline.table} table: {target[0] * 1e6:.1f} us where {choice.table.meta.id} gives "
                    f"{at(1.0, ms[0]) * 1e6:.1f} us; at factor {f} the lookup is off by {errs}")
            fitted = f"{col.kernel} ({bits}-bit) on {gpu}"
            for g in _same_arch(gpu):
                for kern in (col.kernel, *col.also):
                    for k2, b2 in _priced(g, kern, bits if kern == col.kernel else None):
                        own = (g, k2, b2) == (gpu, col.kernel, bits)
                        why = "the same measurement" if kern == col.kernel else \
                            f"the same kernel on weights of the same width in another format, {arch}"
                        rows.append(_row(g, k2, b2, f, note if own else f"carried from {fitted} ({why}): {note}",
                                         [b.id], b.source, None if own else fitted, "kernel benchmark"))
            print(f"{gpu} {col.kernel} {bits}: factor {f} from {b.id} ({errs})")
    return rows


def fit() -> list[dict[str, Any]]:
    """Every row of the stream-factor file, fitted from the points and benchmarks on file (as written, but
    ``as_of``)."""
    table = points_table()
    held = set(table.heldout)
    pts = [p for p in table.points if p.source == SOURCE and not p.skip and p.group not in held]
    runs: dict[tuple[Any, ...], dict[str, Any]] = defaultdict(dict)
    for p in pts:
        runs[(p.group, p.gpu, p.tp, p.prompt, p.output, p.engine_version)][p.scheme] = p
    targets: dict[tuple[str, str, int | None], list[tuple[Any, float]]] = defaultdict(list)
    with lookup_tables.stream_factors_as(()):  # the tables as published
        for members in runs.values():
            base = members.get("bf16")
            if base is None:
                continue
            step_b, pre_b, _ = _per_token(base)
            x = _measured_step(base, pre_b) - step_b  # what the model leaves out of this run
            for scheme, p in members.items():
                if scheme == "bf16":
                    continue
                _, _, (choice, k) = _per_token(p)
                if choice is None or k.basis != "same-math":
                    continue
                bits = next((s.weight_bits for s in lookup_tables.kernel_tables(p.gpu).index.same_math
                             if s.kernel == choice.kernel.id and s.table == k.source_key), None)
                targets[(p.gpu, choice.kernel.id, bits)].append((p, x))
    rows: list[dict[str, Any]] = []
    fits: list[tuple[Any, ...]] = []
    for (gpu, kernel, bits), items in sorted(targets.items(), key=str):
        def residual(f: float, gpu: str = gpu, kernel: str = kernel, bits: int | None = bits,
                     items: list[tuple[Any, float]] = items) -> float:
            trial = (StreamFactor(gpu=gpu, kernel=kernel, weight_bits=bits, factor=f, fitted_to="end-to-end runs",
                                  note="", fitted_on=(), source="", as_of=date.today()),)
            out = []
            with lookup_tables.stream_factors_as(trial):
                for p, x in items:
                    step, pre, _ = _per_token(p)
                    out.append((step + x) / _measured_step(p, pre) - 1.0)
            return median(out)

        if residual(1.0) >= 0:  # the table's kernel is already as slow as the runs (or slower): no factor
            print(f"{gpu} {kernel} {bits}: runs no slower than the table ({residual(1.0):+.1%} at factor 1)")
            continue
        f = _factor(residual)
        before, after = residual(1.0), residual(f)
        print(f"{gpu} {kernel} {bits}: factor {f} over {len(items)} runs (per-token time {before:+.1%} -> {after:+.1%})")
        if abs(f - 1.0) <= NOISE:
            continue
        groups = sorted({p.group for p, _ in items})
        note = (f"{len(items)} single-stream runs of {', '.join(groups)} on {gpu} (vLLM "
                f"{', '.join(sorted({p.engine_version for p, _ in items}))}): predicted per-token time "
                f"{before:+.1%} at factor 1, {after:+.1%} at {f}")
        fits.append((gpu, kernel, bits, f, note, sorted(p.id for p, _ in items)))
    with lookup_tables.stream_factors_as(()):
        bench = _bench_rows()
    width = _width_ratios(bench)
    for fit in fits:
        rows += _e2e_rows(*fit, width)
    return rows + bench


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    rows = fit()
    text = ("# Written by tools/fit_stream_factors.py: how much more slowly a kernel priced by a same-math table\n"
            "# (or a composition) streams its weights than the table's kernel (docs/calibration.md §9, §11). Fitted to\n"
            "# published end-to-end runs of the kernel itself, or to its own published benchmark; `fitted_on` names them.\n"
            f"schema_version: 1\nas_of: {date.today().isoformat()}\nfactors:\n"
            + "".join("  - {" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in r.items()) + "}\n" for r in rows))
    if a.dry_run:
        print(text)
    else:
        OUT.write_text(text if rows else text.replace("factors:\n", "factors: []\n"))
        print(f"wrote {OUT.relative_to(OUT.parents[2])} ({len(rows)} factors)")


if __name__ == "__main__":
    main()
