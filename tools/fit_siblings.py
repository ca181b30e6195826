"""Write the ``transfer`` check of data/kernel_tables/siblings.yaml: how well one GPU's published tables, moved to
another GPU of the same architecture, predict that GPU's own tables.

A GPU with no tables of its own (H100 PCIe / NVL, A100 40GB) is priced with those of a GPU of the same compute
capability, the same kernels and compute within 25% (the ``siblings`` rows, written by hand: why each pair is one
chip): each measured cell is moved to it (``perf.kernel_tables.SiblingGemm``: its streaming part times the
sibling's bandwidth over this GPU's, its compute part times the sibling's peak over this GPU's, the per-call
overhead kept). Where two GPUs of one architecture both have tables (H100 SXM and H200: one GH100, 3.35 and 4.8
TB/s), each is priced from the other's, every decode step of the held-out shape sets both tables hold
(``calibration.lookup_checks.sibling_steps``); the errors' 68th percentile is the move's band, added in quadrature
to the sibling's own bands (``catalog.uncertainty_bands``). Its grouped-query decode-attention tables are read on
this GPU as measured, never below the KV cache read at this GPU's bandwidth and the default streaming efficiency
(``perf.siblings.SiblingAttention``); ``attention_transfer`` checks that rule the same way, every call.

    python tools/fit_siblings.py [--dry-run]
"""

from __future__ import annotations

import argparse
import sys
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from quantadvise import catalog
from quantadvise.calibration.lookup_checks import sibling_attention_errors, sibling_steps, stats
from quantadvise.catalog import lookup_tables
from quantadvise.perf.siblings import peak_ratios

OUT = Path(__file__).resolve().parents[1] / "data" / "kernel_tables" / "siblings.yaml"
HEAD = ("# GPUs with no published tables of their own, priced with the tables of a GPU of the same architecture moved\n"
        "# to them (quantadvise.perf.siblings); `transfer` and `attention_transfer` are written by tools/fit_siblings.py (the\n"
        "# rows by hand). docs/calibration.md §11 has the model and the check.\n")


def transfer() -> tuple[dict[str, Any], dict[str, Any]]:
    """Every ordered pair of GPUs with tables of the same compute capability: the errors of one's tables moved to
    the other, pooled: (the GEMM tables' decode steps, the decode-attention tables' calls)."""
    gpus = [catalog.get_gpu(g) for g in lookup_tables.kernel_table_gpus()]
    errs: list[float] = []
    attn: list[float] = []
    pairs = []
    eta = lookup_tables.default_memory_efficiency()
    for a in gpus:
        for b in gpus:
            if a.id == b.id or a.capability != b.capability:
                continue
            ta, tb = lookup_tables.kernel_tables(a.id), lookup_tables.kernel_tables(b.id)
            assert ta is not None and tb is not None
            errs += sibling_steps(ta, tb, a.bandwidth_bytes_per_s / b.bandwidth_bytes_per_s, peak_ratios(a, b))
            attn += sibling_attention_errors(ta, tb, b.bandwidth_bytes_per_s, eta)
            pairs.append(f"{a.id} -> {b.id}")

    def row(e: list[float], method: str) -> dict[str, Any]:
        s = stats(e)
        return {"pairs": list(pairs), **{k: s[k] for k in ("n", "median", "p68", "p90", "max")}, "method": method}

    return (row(errs, "each GPU's tables moved to the other GPU of its architecture with tables; every decode step of "
                      "the held-out shape sets (calibration.heldout) both GPUs' tables of one kernel hold, at every M"),
            row(attn, "each GPU's decode-attention tables on the other GPU of its architecture with tables (each time, "
                      "never below the KV read at the other's bandwidth and the default streaming efficiency); every "
                      "configuration, batch and KV length both tables of one engine hold"))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    doc = yaml.safe_load(OUT.read_text())
    gemm, attn = transfer()
    doc = {k: v for k, v in doc.items() if k not in ("transfer", "attention_transfer", "siblings")} | {
        "transfer": gemm, "attention_transfer": attn, "siblings": doc["siblings"]}
    doc["as_of"] = date.today()
    text = HEAD + yaml.safe_dump(doc, sort_keys=False, width=110)
    if args.dry_run:
        print(text)
    else:
        OUT.write_text(text)
        print(f"wrote {OUT.name}: {gemm['n']} steps, 68th percentile {gemm['p68']:.1%}; {attn['n']} attention calls, "
              f"68th percentile {attn['p68']:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
