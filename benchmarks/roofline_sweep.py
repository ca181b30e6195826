"""Throughput of the roofline model: 10 GPUs x 8 schemes x 20 batches x 6 contexts.

Run:  python benchmarks/roofline_sweep.py [--model meta-llama/Llama-3-8B] [--repeat 7] [--ideal] [--tiny]

Reports points per second (target: >= 100,000) for the sweep as a planner would run it: one
StepModel per (GPU, scheme) — every batch-independent constant folded once — then the step time of
each (batch, context) point. Setup is inside the timed region. A second figure times the full
per-point breakdown (bytes, FLOPs, bound, time split) that the report builds. Not a test: timings
depend on the machine; nothing here asserts. ``--tiny`` (one GPU, two schemes, a few points, one run) is
what the test suite runs to keep the script working (tests/test_benchmarks.py).
"""

from __future__ import annotations

import argparse
import statistics
import time

import quantadvise
from quantadvise import catalog
from quantadvise.perf.efficiency import resolve
from quantadvise.perf.profiles import IDEAL
from quantadvise.perf.step import StepModel

GPUS = ("h100-sxm", "h100-pcie", "h200", "h20", "b200", "a100-80gb", "a10g", "l4", "l40s", "mi300x")
SCHEMES = ("bf16", "w4a16", "awq", "gptq", "w8a16", "fp8-dynamic", "w8a8-int8", "nvfp4")
BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
CONTEXTS = (0, 512, 2048, 8192, 32768, 131072)


def sweep(arch, gpus, schemes, profiles, batches=BATCHES, contexts=CONTEXTS) -> int:
    """Step time of every point; returns the number of points."""
    n = 0
    for g in gpus:
        names = (g.id, g.name, *g.aliases)
        for s in schemes:
            sm = StepModel(arch, s, g, efficiency=resolve(profiles, names, catalog.scheme_names(s.id)))
            for ctx in contexts:
                n += len(sm.decode_times(batches, sm.cached_tokens(ctx)))
    return n


def sweep_detailed(arch, gpus, schemes, profiles, batches=BATCHES, contexts=CONTEXTS) -> int:
    """The same points with the full StepCost breakdown per point."""
    n = 0
    for g in gpus:
        names = (g.id, g.name, *g.aliases)
        for s in schemes:
            sm = StepModel(arch, s, g, efficiency=resolve(profiles, names, catalog.scheme_names(s.id)))
            for ctx in contexts:
                ct = sm.cached_tokens(ctx)
                for b in batches:
                    sm.decode(b, cached=ct)
                    n += 1
    return n


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default="meta-llama/Llama-3-8B")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--ideal", action="store_true", help="spec-sheet profile instead of the default")
    ap.add_argument("--tiny", action="store_true", help="one GPU, two schemes, a few points, one run (a smoke test)")
    args = ap.parse_args(argv)
    gpu_ids, scheme_ids, batches, contexts = GPUS, SCHEMES, BATCHES, CONTEXTS
    if args.tiny:
        gpu_ids, scheme_ids, batches, contexts, args.repeat = GPUS[:1], SCHEMES[:2], BATCHES[:3], CONTEXTS[:2], 1

    arch, _ = quantadvise.load_model(args.model)
    gpus = [catalog.get_gpu(g) for g in gpu_ids]
    schemes = [quantadvise.resolve_scheme(s) for s in scheme_ids]
    profiles = [IDEAL] if args.ideal else [catalog.default_perf_profile()]
    sweep(arch, gpus, schemes, profiles, batches, contexts)  # warm caches (model parse, pydantic schema builds)

    for label, fn in (("step time", sweep), ("full breakdown", sweep_detailed)):
        rates = []
        n = 0
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            n = fn(arch, gpus, schemes, profiles, batches, contexts)
            rates.append(n / (time.perf_counter() - t0))
        print(f"{args.model}: {len(gpus)} GPUs x {len(schemes)} schemes x {len(batches)} batches x "
              f"{len(contexts)} contexts = {n:,} points; {label}: median {statistics.median(rates):,.0f} "
              f"points/s (best {max(rates):,.0f}, {args.repeat} runs, setup included)")


if __name__ == "__main__":
    main()
