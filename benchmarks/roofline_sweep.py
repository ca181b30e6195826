"""Throughput of the roofline model: 10 GPUs x 8 schemes x 20 batches x 6 contexts.

Run:  python benchmarks/roofline_sweep.py [--model meta-llama/Llama-3-8B] [--repeat 7] [--ideal]

Reports points per second (target: >= 100,000) for the sweep as a planner would run it: one
StepModel per (GPU, scheme) — every batch-independent constant folded once — then the step time of
each (batch, context) point. Setup is inside the timed region. A second figure times the full
per-point breakdown (bytes, FLOPs, bound, time split) that the report builds. Not a test: timings
depend on the machine; nothing here asserts.
"""

from __future__ import annotations

import argparse
import statistics
import time

from quantadvise import api, catalog
from quantadvise.perf.efficiency import resolve
from quantadvise.perf.profiles import IDEAL
from quantadvise.perf.step import StepModel

GPUS = ("h100-sxm", "h100-pcie", "h200", "h20", "b200", "a100-80gb", "a10g", "l4", "l40s", "mi300x")
SCHEMES = ("bf16", "w4a16", "awq", "gptq", "w8a16", "fp8-dynamic", "w8a8-int8", "nvfp4")
BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
CONTEXTS = (0, 512, 2048, 8192, 32768, 131072)


def sweep(arch, gpus, schemes, profiles) -> int:
    """Step time of every point; returns the number of points."""
    n = 0
    for g in gpus:
        names = (g.id, g.name, *g.aliases)
        for s in schemes:
            sm = StepModel(arch, s, g, efficiency=resolve(profiles, names, catalog.scheme_names(s.id)))
            for ctx in CONTEXTS:
                n += len(sm.decode_times(BATCHES, sm.cached_tokens(ctx)))
    return n


def sweep_detailed(arch, gpus, schemes, profiles) -> int:
    """The same points with the full StepCost breakdown per point."""
    n = 0
    for g in gpus:
        names = (g.id, g.name, *g.aliases)
        for s in schemes:
            sm = StepModel(arch, s, g, efficiency=resolve(profiles, names, catalog.scheme_names(s.id)))
            for ctx in CONTEXTS:
                ct = sm.cached_tokens(ctx)
                for b in BATCHES:
                    sm.decode(b, cached=ct)
                    n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="meta-llama/Llama-3-8B")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--ideal", action="store_true", help="spec-sheet profile instead of the default")
    args = ap.parse_args()

    arch, _ = api.load_model(args.model)
    gpus = [catalog.get_gpu(g) for g in GPUS]
    schemes = [api.resolve_scheme(s) for s in SCHEMES]
    profiles = [IDEAL] if args.ideal else [catalog.default_perf_profile()]
    sweep(arch, gpus, schemes, profiles)  # warm caches (model parse, pydantic schema builds)

    for label, fn in (("step time", sweep), ("full breakdown", sweep_detailed)):
        rates = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            n = fn(arch, gpus, schemes, profiles)
            rates.append(n / (time.perf_counter() - t0))
        print(f"{args.model}: {len(GPUS)} GPUs x {len(SCHEMES)} schemes x {len(BATCHES)} batches x "
              f"{len(CONTEXTS)} contexts = {n:,} points; {label}: median {statistics.median(rates):,.0f} "
              f"points/s (best {max(rates):,.0f}, {args.repeat} runs, setup included)")


if __name__ == "__main__":
    main()
