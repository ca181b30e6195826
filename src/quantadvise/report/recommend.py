"""Human output for ``quantadvise recommend``. :func:`table` (the default) is the answer in one screen:
the scheme, its predicted speed, the commands that deploy it and the ranked alternatives (at most 40
lines at 80 columns for a plain workload). :func:`explain` (``--explain``) is everything behind it: the
scheme's axes, the decision tree drawn with rich (the chosen path marked), the kernels, the load plan,
every alternative's reason, how to make the checkpoint and the assumptions."""

from __future__ import annotations

from pathlib import Path

from .. import defaults
from ..advisor.result import Recommendation, Uncertainty
from ..perf.loop import LoopSummary
from ..scheme.axes import SchemeAxes
from ..wording import MOVED, every, ms, plural, usd
from .text import Table, deployment_pm, gb, plus_minus, wrap, wrap_code, wrap_command

NODE_LABELS = {
    "native": "a. native",
    "fit": "b. fit",
    "engine": "c. engine",
    "accuracy": "d. accuracy",
    "kv": "e. KV cache",
    "roofline": "f. roofline",
    "load": "g. load",
    "layouts": "g. layouts",
}

EXPLAIN_UNLIMITED = 10_000  # the tree's width with --wide (no limit): rich then wraps nothing


def _axes_rows(axes: SchemeAxes) -> Table:
    t = Table(["role", "dtype", "granularity", "scale", "static/dynamic", "symmetric", "zero-point", "scale2"],
              align="llllllll", drop=("scale2", "zero-point", "symmetric", "static/dynamic"))
    for role, ax in (("weights", axes.weights), ("activations", axes.activations), ("kv cache", axes.kv_cache)):
        if ax is None or ax.dtype in ("bf16", "fp16") and not ax.granularity:
            t.add(role, ax.dtype if ax is not None else _sixteen(axes), "-", "-", "-", "-", "-", "-")
            continue
        t.add(
            role,
            ax.dtype,
            ax.granularity or "-",
            ax.scale_dtype or "-",
            "-" if ax.dynamic is None else ("dynamic" if ax.dynamic else "static"),
            "yes" if ax.symmetric else "no",
            ax.zero_point_dtype or "-",
            f"{ax.scale2.dtype} per-tensor" if ax.scale2 else "-",
        )
    return t




def _sixteen(axes: SchemeAxes) -> str:
    """The 16-bit dtype the unquantized tensors run in: fp16 where the GPU has no bf16 (the axes say so)."""
    acts = axes.activations
    return "fp16" if axes.math == "fp16" or (acts is not None and acts.dtype == "fp16") else "bf16"


def _lengths(r: Recommendation) -> str:
    """The tokens of a sequence, each quantity with one number, as ``check`` words them: the context, what
    it is made of, and — under continuous batching, where the KV cache and the decode steps are sized
    for it — the average held, the figure the fit and KV nodes quote: "context 2,048 tokens (1,792
    prompt + 256 output), 1,920 held on average"."""
    from ..workload import Workload

    sw = r.workload
    w = Workload.model_validate({k: v for k, v in sw.model_dump().items() if k in Workload.__light_fields__})
    held = w.kv_tokens_per_sequence
    parts = f"{w.prompt_tokens:,} prompt + {w.output_tokens:,} output" if w.prompt_tokens else \
        f"no prompt, {w.output_tokens:,} output"
    return (f"context {plural(w.context, 'token')} ({parts})"
            + (f", {held:,} held on average" if held != w.context else ""))


def _searched(r: Recommendation) -> bool:
    return r.target is not None


def _held(r: Recommendation) -> str:
    w, perf = r.workload, r.performance
    if _searched(r):
        return f"{plural(perf.concurrency, 'sequence')} at once ({_limit_words(r, perf.limit)})"
    return (every(w.batch, "sequence") if perf.concurrency >= w.batch
            else f"{perf.concurrency} of {w.batch} sequences (serving all needs --gpus {perf.gpus_for_batch})"
            if perf.gpus_for_batch else f"{perf.concurrency} of {w.batch} sequences")


def _limit_words(r: Recommendation, limit: str) -> str:
    t = r.target
    budget = {"itl": t.itl_s, "ttft": t.ttft_s, "e2e": t.e2e_s}.get(limit) if t is not None else None
    if budget is not None:
        return f"{limit.upper()} <= {budget * 1e3:,.0f} ms binds"
    if limit == "memory":
        return "its KV cache holds no more"
    # a layout of data-parallel groups or pipeline micro-batches holds the bound once per group
    each = " per group of the layout" if (r.performance.concurrency or 0) > r.workload.batch else ""
    return f"the {'search bound' if t is not None and t.batch_is_bound else 'batch'} of {r.workload.batch:,}{each}"


def _prefill_words(r: Recommendation) -> str:
    """How the output tokens/s counts the prefill, per serving mode (perf.serving.serve)."""
    if r.workload.serving_mode == "continuous":
        return "prefill included"
    return "prefill included: batch x output tokens / E2E"


def _serving_lines(r: Recommendation, width: int | None) -> list[str]:
    """Latencies, the prefill / decode split, speculation and cost of the recommended point."""
    perf = r.performance
    lines: list[str] = []
    lat = f"ITL {ms(perf.itl_s)} ms (mean)"
    if perf.ttft_s is not None:
        under = "under load" if r.workload.serving_mode == "continuous" else "the batch's prompts together"
        lat += f", TTFT {ms(perf.ttft_s)} ms ({under}), E2E {perf.e2e_s:,.2f} s per request"
    split = (f"; GPU time: prefill {perf.prefill_share:.0%}, decode {perf.decode_share:.0%}"
             if perf.prefill_share is not None and perf.decode_share is not None else "")
    cost = (f"; ${usd(perf.usd_per_mtok)} per million output tokens at "
            f"{perf.tokens_per_s_per_gpu:,.0f} tokens/s per GPU") if perf.usd_per_mtok is not None else ""
    lines += wrap(f"Serving: {lat}{split}{cost}.", width, subsequent="  ")
    if perf.serving_loop is not None:
        lines += wrap(loop_line(perf.serving_loop), width, subsequent="  ")
    if r.speculation is not None:
        sp = r.speculation
        lines += wrap(f"Speculative decoding: K = {sp.tokens} drafted, A = {sp.acceptance:g} accepted -> "
                      f"{sp.tokens_per_step:.2f} tokens per step (per-token acceptance {sp.per_token_acceptance:.3f}; "
                      "Leviathan et al., arXiv:2211.17192); each step verifies K+1 tokens and drafts K.",
                      width, subsequent="  ")
    if r.price is not None:
        lines += wrap(f"Price: {r.price.label()}.", width, subsequent="  ")
    return lines


def loop_line(s: LoopSummary) -> str:
    """``Loop: vLLM 0.33.0, terms 'vllm'; decode kernels 53% of time``: one line (docs/calibration.md §9)."""
    terms = s.terms.split(" (")[0] if s.terms else None
    top = next(iter(s.shares.items()), None)
    where = f"; {s.bound} {top[1]:.0%} of time" if top is not None else ""
    held = f", {s.running:,} running ({s.limited_by} binds)" if s.limited_by != "concurrency" else ""
    tag = "" if s.validated else f" UNVALIDATED ±{s.uncertainty:.0%}" if s.uncertainty else " UNVALIDATED"
    return (f"Loop: {s.loop.split(':')[0]}, terms '{terms}'{tag}{held}{where}"
            if terms else f"Loop: {s.loop.split(':')[0]}, no fitted terms{held}{where}")


def _load_table(r: Recommendation, width: int | None) -> list[str]:
    plan = r.load
    if plan is None:
        return []
    demand = (f"{plan.rate_per_s:g} requests/s ({plan.output_tokens_per_s:,.0f} output tokens/s)"
              if plan.rate_per_s is not None and plan.output_tokens_per_s is not None
              else plural(plan.users or 0, "concurrent user"))
    out = ["", *wrap(f"GPUs for {demand} — each scheme's layout with the fewest GPUs "
                     f"(tensor parallel {', '.join(map(str, plan.tp_degrees))} weighed):", width)]
    rate = plan.rate_per_s is not None
    cols = ["scheme", "GPUs", "layout", "per replica", "tok/s/GPU", "ITL ms", "TTFT ms", "$/hour", "$/Mtok"]
    if rate:
        cols[5:5] = ["busy"]
        cols += ["at load"]
    t = Table(cols, align="lrlr" + "r" * (len(cols) - 4),
              drop=("$/hour", "per replica", "TTFT ms", "$/Mtok", "ITL ms") if rate
              else ("$/hour", "per replica", "TTFT ms", "ITL ms"))
    for x in plan.options:
        a = x.at_load
        row = [x.scheme + (" <" if x.recommended else ""), x.gpus, f"{x.replicas} x TP{x.tp}",
               plural(x.concurrency, "seq"), f"{x.tokens_per_s_per_gpu:,.0f}",
               ms(a.itl_s if a is not None else x.itl_s), ms(a.ttft_s if a is not None else x.ttft_s),
               usd(x.usd_per_hour), usd(x.usd_per_mtok)]
        if rate:
            row[5:5] = ["-" if x.utilization is None else f"{100 * x.utilization:.0f}%"]
            row += [usd(x.usd_per_mtok_at_load)]
        t.add(*row)
    out += [t.render(width), "< the recommendation"]
    if rate:
        out += wrap("busy: the share of the layout's output tokens/s (at full concurrency, per replica) the load "
                    "uses; replicas are added until at most "
                    f"{defaults.LOAD_WAIT_SHARE:.0%} of requests wait for a free slot; ITL and TTFT at the load "
                    "(the concurrency it keeps in flight; TTFT with the mean wait for a slot); $/Mtok at full "
                    "concurrency, and at load: $/hour over the load's own tokens (the GPUs are paid for whether "
                    "busy or not)", width)
    elif plan.users is not None:
        out += wrap("ITL and TTFT with the users spread over the replicas", width)
    return out


def _alternatives_table(r: Recommendation, why: bool) -> Table:
    w = r.workload
    searched = _searched(r)
    ttft = w.prompt is None or (w.prompt or 0) > 0
    price = any(a.usd_per_mtok is not None for a in r.alternatives)
    cols = ["scheme", "status", "holds" if not searched else "seqs", "tokens/s", "ITL ms", "TTFT ms", "$/Mtok",
            "decode tok/s", "vs bf16", "weights GB", *(["why"] if why else [])]
    t = Table(cols, align="llrrrrrrrr" + ("l" if why else ""),
              drop=("decode tok/s", "weights GB", "vs bf16", "TTFT ms", "$/Mtok", "ITL ms"))
    for a in r.alternatives:
        held = "-" if a.concurrency is None else (f"{a.concurrency:,}" if searched else f"{a.concurrency}/{w.batch}")
        t.add(
            a.scheme + (" *" if a.native else ""),
            a.status,
            held,
            "-" if a.tokens_per_s is None else f"{a.tokens_per_s:,.0f}" + _pm_between(a.uncertainty),
            ms(a.itl_s),
            ms(a.ttft_s) if ttft else "-",
            usd(a.usd_per_mtok) if price else "-",
            "-" if a.decode_tokens_per_s is None else f"{a.decode_tokens_per_s:,.0f}",
            "-" if a.speedup_vs_bf16 is None else f"{a.speedup_vs_bf16:.2f}x",
            "-" if a.weights_bytes is None else f"{a.weights_bytes / 1e9:,.2f}",
            *([a.reason] if why else []),
        )
    return t


def _alternatives(r: Recommendation, width: int | None) -> str:
    """The alternatives with their reasons in a ``why`` column when the whole table fits (always with
    ``--wide``); otherwise the table keeps the columns that fit (dropping decode tok/s, weights GB,
    vs bf16, TTFT ms, $/Mtok, ITL ms in that order) and the reasons follow it, whole and wrapped."""
    full = _alternatives_table(r, why=True)
    if width is None or full.natural_width() <= width:
        return full.render(width)
    out = [_alternatives_table(r, why=False).render(width), "Why each:"]
    for a in r.alternatives:
        out += wrap(f"{a.scheme}: {a.reason}", width, indent="  ", subsequent="    ")
    return "\n".join(out)


def _headline(r: Recommendation, width: int | None) -> list[str]:
    """The scheme and the workload it answers."""
    w = r.workload
    return [
        *wrap(f"Recommendation: {r.scheme.id} — {r.scheme.description}", width, subsequent="  "),
        *wrap(f"{w.model_id} on {w.gpus} x {w.gpu}, {w.engine} {w.engine_version or ''}".rstrip()
              + (f"; up to {plural(w.batch, 'sequence')} searched" if r.target is not None and r.target.batch_is_bound
                 else f"; batch {w.batch}")
              + f", {_lengths(r)}, {w.serving_mode} serving, task {w.task}", width, indent="  ",
              subsequent="    "),
    ]


def full(r: Recommendation, width: int | None = None, tree: str | None = None) -> str:
    """The whole recommendation (``--explain``), fitted to ``width`` columns (None: no limit): tables drop
    the least important columns first, the alternatives' reasons move under their table unless the whole
    table fits, paragraphs wrap, engine commands break between arguments with ``\\`` continuations and
    the llm-compressor call inside its brackets (both still paste). ``tree``: the decision tree as
    :func:`explain` draws it (None: the trace as an indented list)."""
    w = r.workload
    perf = r.performance
    axes = r.scheme.axes
    lines = [
        *_headline(r, width),
        "",
        _axes_rows(axes).render(width),
        *wrap(f"accumulation {axes.accumulation} on {axes.math} tensor cores; "
              f"lm_head {'quantized' if axes.lm_head_quantized else _sixteen(axes)}; "
              f"KV cache {r.kv.dtype} ({gb(r.kv.bytes_total)} for the sequences held)", width, subsequent="  "),
        "",
        "Why (the decision tree" + (", the chosen path marked):" if tree is not None else "):"),
    ]
    if tree is not None:
        lines.append(tree)
    for node in r.trace if tree is None else ():
        label = f"  {NODE_LABELS.get(node.node, node.node):12s} "
        lines += wrap(node.decision, width, indent=label, subsequent=" " * len(label))
        for reason in node.reasons:
            lines += wrap(reason, width, indent=" " * len(label) + "- ", subsequent=" " * (len(label) + 2))
    lines.append("")
    vs = []
    if perf.speedup_vs_bf16:
        vs.append(f"{perf.speedup_vs_bf16:.2f}x bf16")
    if perf.vs_runner_up:
        vs.append(f"{perf.vs_runner_up:.2f}x the runner-up {perf.runner_up}")
    lines += wrap(
        f"Predicted with a {perf.kv_dtype} cache, {'running' if _searched(r) else 'holding'} {_held(r)}: "
        f"{perf.tokens_per_s:,.0f}{deployment_pm(perf.uncertainty)} output tokens/s"
        + (f" ({_prefill_words(r)}; {perf.decode_tokens_per_s:,.0f} decode tokens/s, {perf.prefill_share:.0%} of "
           "GPU time in prefill)" if perf.prefill_share is not None else " (decode only: no prompt)")
        + f", {perf.step_time_s * 1e3:,.2f} ms per decode step"
        + (f"; {', '.join(vs)}" if vs else "")
        + f" — {perf.model_note} ({perf.profile})", width, subsequent="  ")
    lines += _serving_lines(r, width)
    if perf.kernel:
        lines += wrap(f"Kernel: {perf.kernel}", width, subsequent="  ")
    lines += _load_table(r, width)
    if r.layouts is not None and r.layouts.rows:  # a layout search (pool flags): its table, imported only then
        from .layouts import layout_lines

        lines += layout_lines(r.layouts, width)
    lines += ["", *wrap("Alternatives (speed at the concurrency each runs, with its KV cache; ITL the mean a user "
                        "sees" + ("; TTFT under load" if w.serving_mode == "continuous" else "") + _between_note(r)
                        + "):", width)]
    lines.append(_alternatives(r, width))
    if perf.tie is not None:
        lines += wrap(_tie_line(r), width, subsequent="  ")
    if any(a.native for a in r.alternatives):
        lines.append("* the checkpoint as shipped")
    lines += ["", "Deploy:"]
    pub = r.checkpoint.published
    if pub is not None:  # one line: the published checkpoint the commands serve, and its accuracy evidence
        lines += wrap(f"serve: {pub.id} (published; {pub.accuracy_short})", width,
                      indent="  ", subsequent="    ")
    for engine, cmd in r.engine_args.items():
        if cmd:
            lines += wrap_command(cmd, width, indent=f"  {engine}: ")
    ck = r.checkpoint
    if ck.summary:
        lines += wrap(f"checkpoint: {ck.summary}", width, indent="  ", subsequent="    ")
    for alt in ck.alternatives:
        lines += wrap(f"or: {alt}", width, indent="       ", subsequent="         ")
    if ck.recipe:
        lines += wrap_code(ck.recipe, width, indent="  llm-compressor: ", subsequent="    ")
    for n in ck.notes:
        lines += wrap(f"note: {n}", width, indent="  ", subsequent="    ")
    lines += ["", "Assumptions:"]
    for a in r.assumptions:
        lines += wrap(a, width, indent="  - ", subsequent="    ")
    return "\n".join(lines)


def table(r: Recommendation, width: int | None = None) -> str:
    """The answer in one screen (the default): the scheme and the workload, the predicted speed, the
    commands that deploy it, the ranked alternatives (the candidates no node let through on one line),
    and what ``--explain`` adds. Fitted to ``width`` as :func:`full` is."""
    perf = r.performance
    lines = _headline(r, width)
    vs = f", {perf.speedup_vs_bf16:.2f}x bf16" if perf.speedup_vs_bf16 else ""
    latency = f"ITL {ms(perf.itl_s)} ms" + (f", TTFT {ms(perf.ttft_s)} ms" if perf.ttft_s is not None else "")
    cost = f"; ${usd(perf.usd_per_mtok)} per million output tokens" if perf.usd_per_mtok is not None else ""
    lines += wrap(
        f"Predicted: {perf.tokens_per_s:,.0f}{deployment_pm(perf.uncertainty)} output tokens/s "
        f"{'running' if _searched(r) else 'holding'} {_held(r)} "
        f"with a {perf.kv_dtype} cache"
        + (" (prefill included)" if perf.prefill_share is not None else " (decode only: no prompt)")
        + f"{vs}; {latency}{cost} — {_basis(r)}", width, subsequent="  ")
    if r.speculation is not None:
        sp = r.speculation
        lines += wrap(f"Speculative decoding: K = {sp.tokens} drafted, A = {sp.acceptance:g} accepted -> "
                      f"{sp.tokens_per_step:.2f} tokens per step", width, subsequent="  ")
    lines += _load_table(r, width)
    lines += ["", "Deploy:"]
    for engine, cmd in r.engine_args.items():
        if cmd:
            lines += wrap_command(cmd, width, indent=f"  {engine}: ")
    ck = r.checkpoint
    if ck.published is not None:  # the commands serve it: its accuracy evidence in a few words, the recipe behind
        pub = ck.published
        lines += wrap(f"checkpoint: {pub.id} (published, by {pub.producer}; {pub.accuracy_short}): nothing to "
                      "produce", width, indent="  ", subsequent="    ")
    elif ck.summary:
        lines += wrap(f"checkpoint: {ck.summary}", width, indent="  ", subsequent="    ")
    ranked = r.model_copy(update={"alternatives": [a for a in r.alternatives if a.tokens_per_s is not None]})
    lines += ["", *wrap(f"Alternatives (each at the concurrency it runs, with its KV cache{_between_note(r)}):", width),
              _alternatives_table(ranked, why=False).render(width)]
    if perf.tie is not None:
        lines += wrap(_tie_line(r), width, subsequent="  ")
    if any(a.native for a in ranked.alternatives):
        lines.append("* the checkpoint as shipped")
    left: dict[str, list[str]] = {}
    for a in r.alternatives:
        if a.tokens_per_s is None:
            left.setdefault(a.status, []).append(a.scheme)
    if left:
        lines += wrap("not ranked: " + "; ".join(f"{', '.join(ids)} ({status})" for status, ids in left.items()),
                      width, subsequent="  ")
    lines += wrap(f"--explain: {_rest(r)}", width, subsequent="  ")
    return "\n".join(lines)


def _rest(r: Recommendation) -> str:
    """What ``--explain`` adds to the one screen, naming the sections this recommendation has."""
    parts = ["the decision tree", "every reason", "kernels"]
    if r.performance.serving_loop is not None:
        parts.append("the serving loop")
    if r.layouts is not None and r.layouts.rows:
        parts.append("the layouts weighed")
    parts.append("the fallback recipe" if r.checkpoint.published is not None else "recipe")
    return ", ".join(parts[:-1]) + f", {parts[-1]} and assumptions"


_BASIS = {  # perf.speed_model (advisor.speed.curve_basis) in a few words
    "measured": "its kernel's published measured table",
    "same-math": "another library's measured table of the same math",
    "composed": "measured tables composed",
    "proxy": "a similar kernel's measured curve",
    "roofline": "a roofline with default efficiencies",
    "measured-kernels": "kernel cost curves",
    "calibrated": "your calibrated profile",
    "calibrated-ceilings": "a roofline with your profile's measured ceilings",
    "ideal": "the spec-sheet roofline",
    "default-efficiency": "a roofline with default efficiencies",
}


def _basis(r: Recommendation) -> str:
    """What the predicted speed rests on, in a few words (``--explain`` has each scheme's curve)."""
    perf = r.performance
    basis = _BASIS.get(perf.speed_model, perf.speed_model)
    if MOVED in perf.model_note:  # a same-architecture GPU's tables (perf.siblings)
        basis += ", timed on a GPU of the same architecture and moved to this one"
    loop = perf.serving_loop
    if r.workload.profile is not None and loop is not None and loop.terms:  # --profile: say whose terms priced it
        basis += f"; serving-loop terms {loop.terms.split(' (')[0]}"
    return f"a model ({basis}), not a measurement"


def _pm_between(u: Uncertainty | None) -> str:
    """`` ±4%``: the kernels' band (``relative``) that sets the candidates of one serving loop apart: what the
    alternatives are compared with."""
    return plus_minus(u.relative if u is not None else None)


def _between_note(r: Recommendation) -> str:
    """The alternatives' header words for their ± when the serving loop added a band common to all of them."""
    u = r.performance.uncertainty
    if u is None or not u.loop:
        return ""
    return f"; ± the kernels' band between schemes, all also carry the serving loop's ±{u.loop:.0%}"


def _tie_line(r: Recommendation) -> str:
    tie = r.performance.tie
    assert tie is not None
    return f"Tie within the model's uncertainty: {', '.join(tie.schemes)} (--explain: benchmarks that settle it)"


def write_plot(r: Recommendation, path: Path) -> Path:
    """The ranked candidates' Pareto frontier (``recommend --plot``): tokens/s per GPU vs per user across
    concurrency, the recommended point starred, the latency budgets drawn."""
    from .pareto import write_frontier

    w, t = r.workload, r.target
    schemes = list(dict.fromkeys(p.scheme for p in r.frontier))
    lengths = (f"{w.prompt:,} + {w.output:,} tokens" if w.prompt is not None and w.output is not None
               else f"context {w.context:,}")
    per = "per layout family (its cheapest layout)" if r.layouts is not None else "per scheme"
    title = (f"{w.model_id} on {w.gpus} x {w.gpu} ({r.kv.dtype}), {lengths}, {w.serving_mode} — Pareto frontier "
             f"{per}\nacross concurrency ({r.performance.profile}; a model, not a measurement)")
    return write_frontier(r.frontier, path, title=title, schemes=schemes,
                          itl_budget_s=t.itl_s if t else None, ttft_budget_s=t.ttft_s if t else None,
                          e2e_budget_s=t.e2e_s if t else None)


def explain(r: Recommendation, color: bool = False, width: int | None = None) -> str:
    """``--explain``: the whole recommendation (:func:`full`) with the decision tree drawn (:func:`tree`)."""
    return full(r, width, tree=tree(r, color, width))


def tree(r: Recommendation, color: bool = False, width: int | None = None) -> str:
    """The decision tree as a rich Tree, the chosen path in bold green (plain text unless
    ``color``; the path is also marked with arrows so it survives without colour). Rich wraps each
    label inside the tree to ``width`` (None: no wrapping); trailing spaces are trimmed."""
    from io import StringIO

    from rich.console import Console
    from rich.tree import Tree

    w = r.workload
    root = Tree(f"[bold]workload[/]: batch {w.batch}, ctx {w.context:,}, {w.serving_mode}, task {w.task} on "
                f"{w.gpus} x {w.gpu}")
    node = root
    for t in r.trace:
        branch = node.add(f"[bold cyan]{NODE_LABELS.get(t.node, t.node)}[/] [green]{_escape(t.decision)}[/]")
        for reason in t.reasons:
            branch.add(f"[dim]{_escape(reason)}[/]")
        if t.node == "roofline":
            for a in r.alternatives:
                if a.step_time_s is None:
                    continue
                style = "bold green" if a.status == "recommended" else "dim"
                branch.add(f"[{style}]{a.scheme}: {a.tokens_per_s or 0:,.0f} tok/s holding {a.concurrency} "
                           f"({a.kv_dtype}, {a.step_time_s * 1e3:,.2f} ms/step; {a.status})[/]")
        if t.node == "accuracy":
            for a in r.alternatives:
                if a.status == "vetoed":
                    branch.add(f"[red]✗ {a.scheme}: {_escape(a.reason)}[/]")
        node = branch
    tie = r.performance.tie
    if tie is not None:
        branch = node.add(f"[bold yellow]tie within the model's uncertainty[/]: {', '.join(tie.schemes)}; "
                          f"{tie.schemes[0]} first: {_escape(tie.evidence)}; settle it on your GPU:")
        for scheme, cmd in tie.commands.items():
            branch.add(f"{scheme}: {_escape(cmd)}")
    node.add(f"[bold green]→ {r.scheme.id}[/] + KV {r.kv.dtype}")
    buf = StringIO()
    Console(file=buf, width=width or EXPLAIN_UNLIMITED, force_terminal=color,
            color_system="standard" if color else None, highlight=False).print(root)
    return "\n".join(line.rstrip() for line in buf.getvalue().rstrip().splitlines())


def _escape(text: str) -> str:
    return text.replace("[", "\\[")
