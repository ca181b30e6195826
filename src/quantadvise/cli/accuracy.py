"""``quantadvise accuracy``: per-sample accuracy evidence for a quantized model."""

from pathlib import Path
from typing import Annotated

import typer

from .common import Format, emit_report
from .options import FormatOpt, WideOpt


def _points(field: str):
    """'1', '1%' or '1pp' -> 1.0 (percentage points, as recommend's --accuracy-tolerance); a bad value:
    one error naming the flag (inputs.points)."""
    def parse(value: str) -> float | None:
        from ..errors import InputError
        from ..inputs import points

        try:
            return points(field, value)
        except InputError as exc:
            raise typer.BadParameter(exc.message) from None
    return parse


def _nats(value: str) -> float | None:
    from ..errors import InputError
    from ..inputs import check

    try:
        return check("max_kl", float(value))
    except ValueError:
        raise typer.BadParameter(f"--max-kl must be a number of nats, got {value!r}") from None
    except InputError as exc:
        raise typer.BadParameter(exc.message) from None


def accuracy_cmd(
    base: Annotated[Path, typer.Argument(metavar="BASE", help="Baseline results: an lm-eval samples_*.jsonl, a plain JSONL "
                                         "(id, correct[, logprobs]) or a folder of them.")],
    quant: Annotated[Path, typer.Argument(metavar="QUANT", help="Quantized-model results, same format and evaluation as BASE.")],
    metric: Annotated[
        str | None, typer.Option("--metric", help="lm-eval per-sample 0/1 metric [default: acc, else exact_match, "
                                 "acc_norm ...].")
    ] = None,
    filter_: Annotated[
        str | None, typer.Option("--filter", help="lm-eval filter when a task logs several (gsm8k: strict-match, "
                                 "flexible-extract) [default: the first].")
    ] = None,
    max_delta: Annotated[
        float | None, typer.Option("--max-delta", parser=_points("max_delta"), metavar="POINTS",
                                   help="Largest accuracy drop allowed, percentage points (as recommend's "
                                   "--accuracy-tolerance): 1, 1% and 1pp all mean 1 point.")
    ] = None,
    max_flips: Annotated[
        float | None, typer.Option("--max-flips", parser=_points("max_flips"), metavar="PERCENT",
                                   help="Largest share of answers allowed to change correctness, percent: 5 or "
                                   "5%.")
    ] = None,
    max_kl: Annotated[
        float | None, typer.Option("--max-kl", parser=_nats, metavar="NATS",
                                   help="Largest mean KL(base || quant) in nats (needs log-probs).")
    ] = None,
    min_samples: Annotated[
        int | None, typer.Option("--min-samples", min=1, help="Fewest paired items that count as evidence.")
    ] = None,
    confidence: Annotated[
        float, typer.Option("--confidence", min=0.5, max=0.999, help="Confidence level of the delta interval.")
    ] = 0.95,
    fmt: FormatOpt = Format.table,
    wide: WideOpt = False,
) -> None:
    """Compare a baseline and a quantized model item by item: accuracy delta with a confidence
    interval for the paired difference, flips (answers that changed correctness, both ways), McNemar's
    exact p and mean KL divergence when log-probs are present. With --max-delta / --max-flips /
    --max-kl / --min-samples it is a gate: exit 1 when a task fails one.

    Example: quantadvise accuracy examples/passing-repo/evals/bf16/ examples/passing-repo/evals/awq/ --max-delta 1
    """
    from ..api.accuracy import accuracy

    report = accuracy(
        base, quant, metric=metric, filter=filter_, confidence=confidence, max_delta=max_delta, max_flips=max_flips,
        max_kl=max_kl, min_samples=min_samples,
    )
    emit_report("accuracy", fmt, report, wide=wide)
    raise typer.Exit(report.exit_code())
