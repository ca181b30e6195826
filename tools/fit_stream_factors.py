"""Write data/kernel_tables/stream_factors.yaml: how much more slowly a kernel priced by a same-math table
streams its weights than the table's kernel, fitted to published end-to-end runs of the kernel itself.

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
than ``NOISE`` (the tables' own two-collection noise, 5%, doubled for the cards' 0.1 s rounding).

    python tools/fit_stream_factors.py [--dry-run]

Then ``quantadvise validate --e2e`` shows the speed-up pairs of the held-out S8 groups.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
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
# fitted but not shipped, and why (docs/calibration.md §9)
HELD_BACK = {
    ("h100-sxm", "machete"): "its 1.76 hands H100 recommendations (batch 1; Llama-3.1-70B under a 20 ms ITL) to NVFP4 "
    "weight-only, which runs Humming on Hopper in vLLM 0.34.0 (Marlin before), priced by the same int4 table with no "
    "end-to-end run of its own: one of the Hopper 4-bit kernels that table prices would be slowed on evidence the "
    "others lack",
}
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
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
    rows = []
    for (gpu, kernel, bits), items in sorted(targets.items(), key=str):
        def residual(f: float, gpu: str = gpu, kernel: str = kernel, bits: int | None = bits,
                     items: list[tuple[Any, float]] = items) -> float:
            trial = (StreamFactor(gpu=gpu, kernel=kernel, weight_bits=bits, factor=f, note="", fitted_on=(),
                                  source="", as_of=date.today()),)
            out = []
            with lookup_tables.stream_factors_as(trial):
                for p, x in items:
                    step, pre, _ = _per_token(p)
                    out.append((step + x) / _measured_step(p, pre) - 1.0)
            return median(out)

        lo, hi = 0.5, 4.0
        if residual(1.0) >= 0:  # the table's kernel is already as slow as the runs (or slower): no factor
            print(f"{gpu} {kernel} {bits}: runs no slower than the table ({residual(1.0):+.1%} at factor 1)")
            continue
        for _ in range(30):
            mid = (lo + hi) / 2
            if residual(mid) < 0:
                lo = mid
            else:
                hi = mid
        f = round((lo + hi) / 2, 3)
        before, after = residual(1.0), residual(f)
        print(f"{gpu} {kernel} {bits}: factor {f} over {len(items)} runs (per-token time {before:+.1%} -> {after:+.1%})")
        if abs(f - 1.0) <= NOISE:
            continue
        if (gpu, kernel) in HELD_BACK:
            print(f"  held back: {HELD_BACK[(gpu, kernel)]}")
            continue
        groups = sorted({p.group for p, _ in items})
        note = (f"{len(items)} single-stream runs of {', '.join(groups)} on {gpu} (vLLM "
                f"{', '.join(sorted({p.engine_version for p, _ in items}))}): predicted per-token time "
                f"{before:+.1%} at factor 1, {after:+.1%} at {f}")
        cc = catalog.get_gpu(gpu).compute_capability
        # the kernel's own design against the table's, so every GPU with tables of the same architecture
        for g in [gpu, *(x for x in catalog.kernel_table_gpus() if x != gpu
                         and catalog.get_gpu(x).compute_capability == cc)]:
            rows.append({"gpu": g, "kernel": kernel, **({"weight_bits": bits} if bits else {}), "factor": f,
                         "note": note if g == gpu else f"carried from {gpu} (the same kernel on the same "
                         f"architecture, sm{cc.replace('.', '')}): {note}",
                         "fitted_on": sorted(p.id for p, _ in items),
                         "source": "tools/fit_stream_factors.py on data/validation/e2e_points.yaml source S8 "
                                   "(Red Hat AI model cards, published)",
                         "as_of": date.today().isoformat()})
    text = ("# Written by tools/fit_stream_factors.py: how much more slowly a kernel priced by a same-math table\n"
            "# streams its weights than the table's kernel (docs/calibration.md §11). Fitted to published\n"
            "# end-to-end runs of the kernel itself; `fitted_on` names them.\n"
            f"schema_version: 1\nas_of: {date.today().isoformat()}\nfactors:\n"
            + "".join("  - {" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in r.items()) + "}\n" for r in rows))
    if a.dry_run:
        print(text)
    else:
        OUT.write_text(text if rows else text.replace("factors:\n", "factors: []\n"))
        print(f"wrote {OUT.relative_to(OUT.parents[2])} ({len(rows)} factors)")


if __name__ == "__main__":
    main()
