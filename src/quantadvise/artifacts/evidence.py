"""Read per-sample evaluation results into :class:`~quantadvise.accuracy_stats.TaskSamples`.

Two formats, detected per file from its first record:

- **lm-evaluation-harness** ``samples_<task>_<timestamp>.jsonl`` as ``lm_eval --log_samples``
  writes them: one JSON object per line with ``doc_id``, ``doc``, ``target``, ``arguments``,
  ``resps``, ``filtered_resps``, ``doc_hash`` and, since v0.4.3, ``filter`` and ``metrics`` (the
  names of the per-sample metrics, whose values are keys of the line: ``acc``, ``acc_norm``,
  ``exact_match`` ...). The harness stringifies responses, so a multiple-choice item's
  ``filtered_resps`` is ``[["-12.31", "False"], ["-9.87", "True"], ...]`` — the per-choice
  log-likelihood and is-greedy flag, read here as the item's log-probs. A task with several filters
  (gsm8k: ``strict-match``, ``flexible-extract``) logs one line per document per filter.
- **plain JSONL**: ``{"id": ..., "correct": true|false|0|1, "logprobs": [...] | {token: logprob},
  "task": "..."}`` with ``logprobs`` and ``task`` optional.

A path may be a file or a directory (every ``samples_*.jsonl`` under it, else every ``*.jsonl``;
one task per file, the newest run of a task when several are present).

Parsing (``parse_jsonl``) is pure over text; ``load_evidence`` does the reading. Every error names
the file and line.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError
from ..evals.stats import Sample, TaskSamples
from ..files import not_regular, read_text, special
from ..inputs import MAX_NESTING, json_depth, shown
from ..results import record

# Preferred 0/1 metrics, in order, when --metric is not given.
PREFERRED_METRICS = ("acc", "exact_match", "acc_norm", "pass@1", "pass_at_1", "em", "correct")
# Keys of an lm-eval sample line that are not metrics.
_LM_EVAL_KEYS = frozenset({
    "doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics", "doc_hash",
    "prompt_hash", "target_hash", "token_counts", "task", "task_name", "idx",
})
_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+?)_(?P<ts>\d{4}-\d{2}-\d{2}T[0-9.\-:]+)\.jsonl$")


def task_from_filename(name: str) -> tuple[str, str]:
    """(task, timestamp) from ``samples_<task>_<timestamp>.jsonl``; (stem, "") for other names."""
    m = _SAMPLES_NAME.match(name)
    if m:
        return m.group("task"), m.group("ts")
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else Path(name).stem
    return stem.removeprefix("samples_"), ""


def _records(text: str, file: str) -> Iterable[tuple[int, dict[str, Any]]]:
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{file}: line {lineno}: invalid JSON: {exc.msg} (column {exc.colno})") from None
        except ValueError as exc:  # an integer of more than 4,300 digits
            raise ConfigError(f"{file}: line {lineno}: invalid JSON value: {str(exc).split(';')[0]}") from None
        except RecursionError:
            raise ConfigError(f"{file}: line {lineno}: JSON nested too deeply") from None
        if json_depth(obj) > MAX_NESTING:  # 3.12+ parse far deeper than 3.11's ~1,000 levels: the same bound on each
            raise ConfigError(f"{file}: line {lineno}: JSON nested more than {MAX_NESTING} levels deep")
        if not isinstance(obj, dict):
            raise ConfigError(f"{file}: line {lineno}: expected a JSON object per line, got {type(obj).__name__}")
        yield lineno, obj


def _as_correct(value: Any, file: str, line: int, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    raise ConfigError(
        f"{file}: line {line}: field '{key}' is {json.dumps(value)}; per-sample correctness must be true/false or "
        f"0/1" + (" (choose a 0/1 metric such as acc or exact_match with --metric)" if key != "correct" else "")
    )


_LOGPROB_FIX = "write each log-prob as a finite number; -inf (probability 0) only beside a finite one"


class _NotANumber(Exception):
    """A log-prob value that is no number at all (text, null, a list ...): the caller decides what it means."""


def _logprob_value(value: Any, *, text: bool) -> float:
    """One log-prob as a float, -inf allowed; ``text``: a numeral in a string is read (lm-eval stringifies).
    Raises ``_NotANumber`` for anything that is no number, ValueError (the reason) for NaN or +inf."""
    if isinstance(value, bool) or not isinstance(value, int | float | str) or (isinstance(value, str) and not text):
        raise _NotANumber
    if isinstance(value, str):
        try:
            v = float(value)  # the harness writes "-12.5", and "-inf" for an impossible choice
        except ValueError:
            raise _NotANumber from None
    elif isinstance(value, int):
        if abs(value) > sys.float_info.max:  # compared as an integer: no OverflowError
            raise ValueError("an integer past a float's range")
        v = float(value)
    else:
        v = value
    if math.isnan(v):
        raise ValueError("NaN")
    if v == math.inf:
        raise ValueError("+inf (Infinity, or a number past a float's range like 1e400)")
    return v


def _bad_logprob(file: str, line: int, field: str, what: str) -> ConfigError:
    return ConfigError(f"{file}: line {line}: field '{field}' {what}", hint=_LOGPROB_FIX, field=field)


def _all_minus_inf(values: Iterable[float], file: str, line: int, field: str) -> None:
    if all(v == -math.inf for v in values):
        raise _bad_logprob(file, line, field, "is -inf for every choice (probability 0 for all): no distribution")


def _lm_eval_logprobs(obj: dict[str, Any], file: str, line: int) -> tuple[float, ...] | None:
    """Per-choice log-likelihoods from ``filtered_resps`` of a multiple-choice item, else None (a generation
    task: text there). A numeral that is NaN or +inf, or -inf for every choice, is a ConfigError."""
    resps = obj.get("filtered_resps")
    if not isinstance(resps, list) or len(resps) < 2:
        return None
    out = []
    for i, r in enumerate(resps):
        if not (isinstance(r, list) and len(r) == 2 and str(r[1]) in ("True", "False", "true", "false")):
            return None  # a generation task: text answers, no log-probs
        try:
            out.append(_logprob_value(r[0], text=True))
        except _NotANumber:
            return None
        except ValueError as exc:
            raise _bad_logprob(file, line, "filtered_resps", f"choice {i}: the log-likelihood {shown(r[0])} is "
                               f"{exc}") from None
    _all_minus_inf(out, file, line, "filtered_resps")
    return tuple(out)


def _plain_logprobs(value: Any, file: str, line: int) -> tuple[float, ...] | dict[str, float] | None:
    if value is None:
        return None
    if isinstance(value, list | dict) and len(value) >= 2:
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        vals: dict[Any, float] = {}
        for k, v in items:
            where = f"key {shown(str(k))}" if isinstance(value, dict) else f"item {k}"
            try:
                vals[k] = _logprob_value(v, text=False)
            except _NotANumber:
                why = f"a string ({shown(v)}), not a JSON number" if isinstance(v, str) else \
                    f"{json.dumps(v) if isinstance(v, bool) or v is None else type(v).__name__}, not a number"
                raise _bad_logprob(file, line, "logprobs", f"{where} is {why}") from None
            except ValueError as exc:
                raise _bad_logprob(file, line, "logprobs", f"{where} is {exc}") from None
        _all_minus_inf(vals.values(), file, line, "logprobs")
        return {str(k): v for k, v in vals.items()} if isinstance(value, dict) else tuple(vals.values())
    raise ConfigError(
        f"{file}: line {line}: field 'logprobs' must be a list of 2+ numbers (per-choice log-likelihoods or a "
        f"log-distribution) or a mapping token -> log-prob"
    )


def _pick_metric(obj: dict[str, Any], metric: str | None, file: str, line: int, how: str = "--metric") -> str:
    listed = obj.get("metrics") if isinstance(obj.get("metrics"), list) else None
    # lm-eval lists the sample's metric names (strings); an entry of any other kind names nothing
    present = [k for k in (listed or obj) if isinstance(k, str) and k in obj and k not in _LM_EVAL_KEYS]
    if metric is not None:
        if metric not in obj:
            raise InputError(
                f"{file}: line {line}: metric '{metric}' is not in the sample",
                hint="metrics present: " + (", ".join(present) or "none"),
                field="metric",
            )
        return metric
    for m in PREFERRED_METRICS:
        if m in present:
            return m
    for m in present:
        if obj[m] in (0, 1) or isinstance(obj[m], bool):
            return m
    raise ConfigError(
        f"{file}: line {line}: no 0/1 per-sample metric found (present: {', '.join(present) or 'none'})",
        hint=f"name one with {how}",
    )


@record
class Choice:
    """Which lm-eval filter and metric to read: a preference for every task (``filter``, ``metric``),
    per-task choices that must exist (``tasks``: task -> (filter, metric)), and how the user makes the
    choice in this context (``--filter`` on the command line, a key in quantadvise.yaml)."""

    filter: str | None = None
    metric: str | None = None
    tasks: Mapping[str, tuple[str | None, str | None]] = dataclasses.field(default_factory=dict)
    how_task: str = "--filter"  # the way to choose one task's filter, named in messages (<task> filled in)
    how_metric: str = "--metric"
    strict: bool = True  # the command line: a --filter / --metric that cannot apply to a file is an error

    def for_task(self, task: str) -> tuple[str | None, str | None, bool]:
        """(filter, metric, whether they were chosen for this task alone)."""
        f, m = self.tasks.get(task, (None, None))
        own = task in self.tasks and (f is not None or m is not None)
        return (f if f is not None else self.filter), (m if m is not None else self.metric), own


def parse_jsonl(text: str, file: str, *, metric: str | None = None, filter: str | None = None,
                task: str | None = None, choice: Choice | None = None) -> list[TaskSamples]:
    """Parse one samples file (lm-eval or plain JSONL) into one TaskSamples per task.

    ``task`` defaults to the task in an lm-eval file name, else the file stem; plain records may
    carry their own ``task`` key (one file, several tasks). ``choice`` (else ``metric`` / ``filter``)
    says which lm-eval filter and metric to read.
    """
    choice = choice or Choice(filter=filter, metric=metric)
    records = list(_records(text, file))
    if not records:
        raise ConfigError(f"{file}: no samples (the file is empty)")
    default_task = task or task_from_filename(Path(file).name)[0]
    first_line, first = records[0]
    if "doc_id" in first:
        return [_parse_lm_eval(records, file, default_task, choice)]
    if "id" in first and "correct" in first:
        filter, metric, own = choice.for_task(default_task)
        if filter is not None and (choice.strict or own):
            raise InputError(f"{file}: a filter applies to lm-eval samples files; this is plain JSONL", field="filter")
        if metric not in (None, "correct") and (choice.strict or own):
            raise InputError(f"{file}: plain JSONL is scored by its 'correct' field; --metric does not apply",
                             field="metric")
        return _parse_plain(records, file, default_task)
    raise ConfigError(
        f"{file}: line {first_line}: not an lm-eval sample (no 'doc_id') nor a plain record (needs 'id' and "
        f"'correct')"
    )


def _parse_lm_eval(records: list[tuple[int, dict[str, Any]]], file: str, task: str, choice: Choice) -> TaskSamples:
    filters: list[str] = []
    for _, obj in records:
        f = obj.get("filter")
        if isinstance(f, str) and f not in filters:
            filters.append(f)
    filter, metric, own = choice.for_task(task)
    warnings: list[str] = []
    chosen = None
    how = choice.how_task.replace("<task>", task)
    if filter is not None and filter in filters:
        chosen = filter
    elif filter is not None and (own or choice.strict or len(filters) > 1):
        # chosen for this task, or several to choose from: a filter that is not there is an error
        raise InputError(
            f"{file}: task '{task}' has no filter '{filter}'",
            hint="filters present: " + (", ".join(filters) or "none (the file has no 'filter' key)")
            + (f"; choose one for this task with {how}" if not own and len(filters) > 1 else ""),
            field="filter",
        )
    elif filters:
        chosen = filters[0]
        if filter is not None:  # a preference for every task; this one logged only another filter
            warnings.append(f"{file}: task '{task}' logs only filter '{chosen}'; using it ('{filter}' applies to the "
                            "tasks that log it)")
        elif len(filters) > 1:
            warnings.append(
                f"{file}: task '{task}' was scored with filters {', '.join(filters)}; using '{chosen}' (choose with "
                f"{how})"
            )
    rows = [(ln, o) for ln, o in records if chosen is None or o.get("filter") == chosen]
    first_line, first = rows[0]
    m = _pick_metric(first, metric, file, first_line, choice.how_metric.replace("<task>", task))
    samples: list[Sample] = []
    seen: dict[str, int] = {}
    for ln, obj in rows:
        if "doc_id" not in obj:
            raise ConfigError(f"{file}: line {ln}: field 'doc_id' is missing (every lm-eval sample has one)")
        sid = str(obj["doc_id"])
        if sid in seen:
            raise ConfigError(
                f"{file}: line {ln}: doc_id {sid} appears again (first at line {seen[sid]})",
                hint="a file with several filters and no 'filter' key? re-log with lm-eval >= 0.4.3",
            )
        seen[sid] = ln
        if m not in obj:
            raise ConfigError(f"{file}: line {ln}: metric '{m}' is missing from this sample")
        samples.append(Sample(
            id=sid, correct=_as_correct(obj[m], file, ln, m), line=ln, logprobs=_lm_eval_logprobs(obj, file, ln),
            doc_hash=obj.get("doc_hash") if isinstance(obj.get("doc_hash"), str) else None,
        ))
    return TaskSamples(task=task, file=file, format="lm-eval", metric=m, filter=chosen, samples=tuple(samples),
                       warnings=tuple(warnings))


def _parse_plain(records: list[tuple[int, dict[str, Any]]], file: str, task: str) -> list[TaskSamples]:
    by_task: dict[str, list[Sample]] = {}
    seen: dict[tuple[str, str], int] = {}
    for ln, obj in records:
        for key in ("id", "correct"):
            if key not in obj:
                raise ConfigError(f"{file}: line {ln}: field '{key}' is missing (plain records need 'id' and "
                                  f"'correct')")
        if not isinstance(obj["id"], str | int) or isinstance(obj["id"], bool):
            raise ConfigError(f"{file}: line {ln}: field 'id' must be a string or an integer")
        t = obj.get("task", task)
        if not isinstance(t, str) or not t:
            raise ConfigError(f"{file}: line {ln}: field 'task' must be a non-empty string")
        sid = str(obj["id"])
        if (t, sid) in seen:
            raise ConfigError(f"{file}: line {ln}: id {sid} appears again (first at line {seen[(t, sid)]})")
        seen[(t, sid)] = ln
        by_task.setdefault(t, []).append(Sample(
            id=sid, correct=_as_correct(obj["correct"], file, ln, "correct"), line=ln,
            logprobs=_plain_logprobs(obj.get("logprobs"), file, ln),
        ))
    return [TaskSamples(task=t, file=file, format="jsonl", metric="correct", samples=tuple(s))
            for t, s in by_task.items()]


# --- I/O ------------------------------------------------------------------------------------------




def load_evidence(path: str | Path, *, metric: str | None = None, filter: str | None = None,
                  role: str = "evidence", choice: Choice | None = None) -> list[TaskSamples]:
    """Every task's samples under ``path`` (a samples file or a directory of them); ``choice`` (else
    ``metric`` / ``filter``) picks the lm-eval filter and metric per task."""
    choice = choice or Choice(filter=filter, metric=metric)
    p = Path(path)
    what = special(p)
    if what is not None:
        raise InputError(f"{role}: {not_regular(p, what)}", field=role)
    if not p.exists():
        raise InputError(f"{role}: no such file or directory: {p}", field=role)
    if p.is_file():
        return parse_jsonl(read_text(p), str(p), choice=choice)
    files = sorted(p.rglob("samples_*.jsonl")) or sorted(p.rglob("*.jsonl"))
    if not files:
        raise ConfigError(f"{p}: no samples_*.jsonl or *.jsonl files under this directory",
                          hint="pass the folder lm_eval --output_path --log_samples wrote")
    newest: dict[str, tuple[str, Path]] = {}
    dropped: list[str] = []
    for f in files:
        t, ts = task_from_filename(f.name)
        if t in newest:
            keep, other = ((ts, f), newest[t]) if ts > newest[t][0] else (newest[t], (ts, f))
            newest[t] = keep
            dropped.append(f"{other[1]} (older run of '{t}')")
        else:
            newest[t] = (ts, f)
    tasks: list[TaskSamples] = []
    for t, (_, f) in sorted(newest.items()):
        tasks.extend(parse_jsonl(read_text(f), str(f), task=t, choice=choice))
    if dropped:
        tasks[0] = dataclasses.replace(tasks[0], warnings=(*tasks[0].warnings, "ignored " + "; ".join(dropped)))
    names = [t.task for t in tasks]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"{p}: {'task' if len(dup) == 1 else 'tasks'} {', '.join(dup)} {'appears' if len(dup) == 1 else 'appear'} in more than one file", hint="keep one file per task")
    return tasks
