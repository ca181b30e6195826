"""Renderers for ``quantadvise check``: table, markdown (a PR comment), GitHub workflow commands,
SARIF 2.1.0 (code scanning) and JUnit XML. Each is a pure ``(GateResult) -> str``; JSON is the
result's own dump (``report.to_json``)."""

from __future__ import annotations

import re
from typing import Any

from ..engines.flags import engine_label
from ..gate.result import GateFinding, GateResult, InitResult, MemoryFit, TargetReport
from ..gate.rules import RULE_BY_ID, RULES, SEVERITY_RANK
from ..wording import json_text, plural, printable
from .text import seconds_h, wrap

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _summary(r: GateResult) -> str:
    c = r.counts()
    parts = [f"{c['error']} error{'s' if c['error'] != 1 else ''}",
             f"{c['warning']} warning{'s' if c['warning'] != 1 else ''}"]
    if c["note"]:
        parts.append(f"{c['note']} note{'s' if c['note'] != 1 else ''}")
    text = ", ".join(parts)
    if r.suppressed:
        text += f"; {len(r.suppressed)} in the baseline"
    return text


def _verdict(r: GateResult) -> str:
    return "PASS" if r.passed else "FAIL"


def _target_lines(t: TargetReport, width: int | None) -> list[str]:
    out = wrap(t.label, width, subsequent="  ")

    def para(text: str) -> None:
        out.extend(wrap(text, width, indent="  ", subsequent="    "))

    served = f"{t.scheme} ({t.scheme_from})" if t.scheme else t.checkpoint
    declared = f"; declared {t.declared_scheme}" if t.declared_scheme and t.declared_scheme != t.scheme else ""
    para(f"{t.engine} {t.engine_version} ({t.engine_status}) serving {t.model or '(no model named)'}: "
         f"{served}{declared}")
    kv = f"KV {t.kv_cache_dtype}" + (f" (declared {t.declared_kv_cache_dtype})" if t.declared_kv_cache_dtype
                                     and t.declared_kv_cache_dtype != t.kv_cache_dtype else "")
    if (t.concurrency is None or t.ctx is None) and t.memory is not None and not t.memory.starts:
        para(f"{kv} · {t.gpus} x {t.gpu} · no workload priced: the engine refuses to start")
    elif t.concurrency is None or t.ctx is None:
        why = {"unknown (the command names no model)": "the command names no model",
               "unknown (the model is set at run time)": "the model is set at run time"}.get(
            t.checkpoint, "the model's config.json could not be read")
        para(f"{kv} · {t.gpus} x {t.gpu} · not sized ({why})")
    else:
        held = ""
        if t.memory is not None and t.memory.kv_tokens_per_sequence and t.memory.kv_tokens_per_sequence != t.ctx:
            held = f", {t.memory.kv_tokens_per_sequence:,} held on average"
        para(f"{kv} · {t.gpus} x {t.gpu} · {plural(t.concurrency, 'sequence')} x {t.ctx:,} tokens{held} "
             f"({t.mode} batching)")
    m = t.memory
    if m is not None:
        for line in _memory_lines(m):
            para(line)
    p = t.performance
    if p is not None:
        rec = ""
        if p.recommended is not None and p.recommended_tokens_per_s:
            rec = f"; recommended {p.recommended} ({p.recommended_kv_dtype}) {p.recommended_tokens_per_s:,.0f} tokens/s"
        vs = "bf16 does not fit" if p.bf16_unservable else f"{p.speedup_vs_bf16:.2f}x bf16"
        para(f"speed: {p.tokens_per_s:,.0f} tokens/s, {vs}, step "
             f"{seconds_h(p.step_time_s)}{rec} (a model, not a measurement)")
    for a in t.assumptions:
        para(f"assumed: {a}")
    for n in t.notes:
        para(f"note: {n}")
    return out


def _gib(n: float) -> str:
    return f"{n / 2**30:,.2f} GiB"


def _memory_lines(m: MemoryFit) -> list[str]:
    """The engine's start-up arithmetic in a few sentences (per GPU, as the engine logs it)."""
    n = max(m.gpus, 1)
    engine = engine_label(m.engine)
    reserve = f" - {_gib(m.reserve_bytes / n)} runtime reserve" if m.reserve_bytes else ""
    kept = m.kept_free_bytes_per_gpu  # vLLM 0.34.0's extensible KV cache margin
    margin = f" - {_gib(kept)} kept free after warmup" if kept >= 1 else ""
    head = (f"memory ({engine} start-up, per GPU): {m.memory_utilization_flag} {m.memory_utilization:g} x "
            f"{_gib(m.memory_bytes / n)}{margin} - {_gib(m.weights_bytes / n)} weights{reserve} = ")
    if m.kv_cache_bytes_per_gpu <= 0:
        return [head + "no KV cache: refuses to start"]
    cache = f"{_gib(m.kv_cache_bytes_per_gpu)} KV cache"
    if m.kv_capacity_tokens is not None:
        cache += f" ({m.kv_capacity_tokens:,} tokens)"
    out = [head + cache]
    kv_refusal = m.max_model_len_that_fits is not None and (m.max_model_len_kv_bytes or 0) > m.kv_cache_bytes_per_gpu
    if not m.starts and kv_refusal and (not m.refused_by or m.refused_by == ["QA302"]):  # vLLM's KV check (QA302)
        out.append(f"refuses to start: one sequence of {m.max_model_len:,} tokens needs "
                   f"{_gib(m.max_model_len_kv_bytes or 0)} per GPU; {m.max_model_len_that_fits or 0:,} fit")
    elif not m.starts:  # another rule found the refusal (QA306, QA1xx ...): the findings say why
        rules = ", ".join(f"{r} {RULE_BY_ID[r].name}" for r in m.refused_by or [] if r in RULE_BY_ID)
        out.append(f"refuses to start: {rules or 'see the findings'}")
    else:
        n_held = m.sequences_at_max_model_len or 0
        held = "" if not m.max_model_len else (
            f"{n_held:,} sequence{'s' if n_held != 1 else ''} of {m.max_model_len:,} tokens at once" if n_held else
            f"not one sequence of {m.max_model_len:,} tokens fits at once")
        cap = f"{m.max_num_seqs_flag} {m.max_num_seqs:,}" if m.max_num_seqs else ""
        out.append("starts: " + "; ".join(x for x in (held, cap) if x))
    if m.concurrency is not None and m.kv_tokens_per_sequence is not None:
        verdict = (f"fits, {m.headroom:.0%} headroom" if m.fits and m.headroom is not None else
                   f"{m.max_concurrency:,} run at once, the rest queue")
        out.append(f"declared workload: {m.concurrency:,} x {m.kv_tokens_per_sequence:,} tokens need "
                   f"{_gib(m.kv_bytes or 0)} of KV cache ({_gib(m.kv_cache_bytes)} on {plural(n, 'GPU')}): {verdict}")
    return out


def _finding_block(f: GateFinding, width: int | None, indent: str = "          ") -> list[str]:
    """A finding's head line (severity, rule, where), then its message and the engine's own words
    under it, wrapped to ``width`` (one line each with None)."""
    lines = wrap(f"{f.severity:<8}  {f.rule_id} {f.rule}  {f.location}", width, subsequent=indent)
    lines += wrap(f.message, width, indent=indent, subsequent=indent)
    if f.engine_message:
        lines += wrap(f"engine says: {f.engine_message}", width, indent=indent, subsequent=indent)
    return lines


def table(r: GateResult, width: int | None = None) -> str:
    out = wrap(f"quantadvise check: {_verdict(r)} — {_summary(r)} (fail on {r.fail_on})", width, subsequent="  ")
    scanned = f"{len(r.files_scanned)} file{'s' if len(r.files_scanned) != 1 else ''}"
    out += wrap(f"config: {r.config_file or 'none (flags only)'} · scanned {', '.join(r.paths) or '-'} ({scanned}) · "
                f"{len(r.targets)} deployment{'s' if len(r.targets) != 1 else ''}", width, subsequent="  ")
    for t in r.targets:
        out.append("")
        out.extend(_target_lines(t, width))
    if r.accuracy:
        out.append("")
        out.append("accuracy evidence:")
        for e in r.accuracy:
            kl = f", KL {e.kl_mean_nats:.4g} nats" if e.kl_mean_nats is not None else ""
            bad = f"  FAILS {', '.join(e.failed)}" if e.failed else ""
            out += wrap(f"{e.task}: {e.quant_accuracy:.2%} vs {e.base_accuracy:.2%} ({e.delta * 100:+.2f} pp, 95% CI "
                        f"{e.delta_ci_low * 100:+.2f} to {e.delta_ci_high * 100:+.2f}), flips {e.flip_rate:.2%}{kl}, "
                        f"n={e.n}{bad}", width, indent="  ", subsequent="    ")
    out.append("")
    if r.findings:
        for f in r.findings:
            out.extend(_finding_block(f, width))
    else:
        out.append("no findings" + (f" ({len(r.suppressed)} in the baseline)" if r.suppressed else ""))
    for n in r.notes:
        out += wrap(f"note: {n}", width, subsequent="  ")
    if r.baseline_written:
        out += wrap(f"wrote the baseline {r.baseline_written}: {plural(len(r.suppressed), 'finding')} accepted", width,
                    subsequent="  ")
    ran = sum(1 for s in r.rules if s.status in ("pass", "fail"))
    out.append("")
    failed = sum(1 for s in r.rules if s.status == "fail")
    out += wrap(f"{ran} rules checked, {failed} failed; rule reference: docs/ci.md", width)
    return "\n".join(out)


# -------------------------------------------------------------------------------------------------
# Markdown (a pull-request comment)
# -------------------------------------------------------------------------------------------------


def _md(text: str, code: bool = False) -> str:
    text = " ".join(str(text).split())  # a table cell is one line (newlines, tabs, CRs)
    text = printable(text)  # the bytes of a name that is not UTF-8, control characters: \xNN
    text = "".join(c if c.isprintable() else "\ufffd" for c in text)
    if not code:  # a code span shows a backslash as it is
        text = text.replace("\\", "\\\\")
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _md_code(text: str) -> str:
    """A table cell shown as code: in backticks unless the text holds one (it would end the span early)."""
    return f"`{_md(text, code=True)}`" if "`" not in text else _md(text)


def _md_memory(m: MemoryFit) -> str:
    if m.kv_cache_bytes_per_gpu <= 0 or not m.starts:
        return "refuses to start"
    text = f"KV {_gib(m.kv_cache_bytes_per_gpu)}/GPU"
    if m.kv_capacity_tokens is not None:
        text += f" ({m.kv_capacity_tokens:,} tokens)"
    if m.concurrency is not None and not m.fits:
        text += f"; {m.max_concurrency:,} of {m.concurrency:,} at once"
    return text


def markdown(r: GateResult) -> str:
    icon = "✅" if r.passed else "❌"
    out = [f"### {icon} quantadvise check: {_verdict(r)} — {_summary(r)}", ""]
    if r.findings:
        out += ["| Severity | Rule | Where | Finding |", "|---|---|---|---|"]
        for f in r.findings:
            where = _md_code(f.location) if f.file else "—"
            out.append(f"| {f.severity} | **{f.rule_id}** {_md(f.rule)} | {where} | {_md(f.message)} |")
        out.append("")
    else:
        out += ["No findings." + (f" {len(r.suppressed)} accepted in the baseline." if r.suppressed else ""), ""]
    if r.targets:
        out += [f"<details><summary>{len(r.targets)} deployment{'s' if len(r.targets) != 1 else ''} checked</summary>",
                "", "| Deployment | Engine | Served | KV | GPUs | Load | Memory | Predicted |",
                "|---|---|---|---|---|---|---|---|"]
        for t in r.targets:
            m, p = t.memory, t.performance
            mem = "—" if m is None else _md_memory(m)
            load = "—" if t.concurrency is None or t.ctx is None else f"{t.concurrency:,} x {t.ctx:,}"
            speed = "—" if p is None else f"{p.tokens_per_s:,.0f} tok/s (" + (
                "bf16 does not fit)" if p.bf16_unservable else f"{p.speedup_vs_bf16:.2f}x bf16)")
            out.append(f"| {_md_code(t.label)} | {_md(t.engine)} {_md(t.engine_version)} | {_md(t.scheme or t.checkpoint)} | "
                       f"{_md(t.kv_cache_dtype or '—')} | {t.gpus} x {_md(t.gpu)} | {load} | {mem} | {speed} |")
        out += ["", "</details>", ""]
    if r.accuracy:
        out += ["<details><summary>Accuracy evidence</summary>", "",
                "| Task | n | Baseline | Quantized | Δ (95% CI) | Flips | KL |", "|---|---|---|---|---|---|---|"]
        for e in r.accuracy:
            kl = f"{e.kl_mean_nats:.4g}" if e.kl_mean_nats is not None else "—"
            out.append(f"| {_md(e.task)} | {e.n} | {e.base_accuracy:.2%} | {e.quant_accuracy:.2%} | "
                       f"{e.delta * 100:+.2f} pp ({e.delta_ci_low * 100:+.2f} to {e.delta_ci_high * 100:+.2f}) | "
                       f"{e.flip_rate:.2%} | {kl} |")
        out += ["", "</details>", ""]
    failed = sum(1 for s in r.rules if s.status == "fail")
    ran = sum(1 for s in r.rules if s.status in ("pass", "fail"))
    out.append(f"<sub>{ran} rules checked, {failed} failed; fail on {r.fail_on}. Speed and memory are roofline "
               "models, not measurements. Rules: docs/ci.md.</sub>")
    return "\n".join(out)


# -------------------------------------------------------------------------------------------------
# GitHub workflow commands
# -------------------------------------------------------------------------------------------------


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


_GH_LEVEL = {"error": "error", "warning": "warning", "note": "notice"}


def github(r: GateResult) -> str:
    """One ``::error file=F,line=L,title=T::message`` workflow command per finding (GitHub turns
    them into annotations on the pull request), then a summary line."""
    out = []
    for f in r.findings:
        props = []
        if f.file:
            props.append(f"file={_gh_prop(f.file)}")
            if f.line:
                props.append(f"line={f.line}")
        props.append(f"title={_gh_prop(f'{f.rule_id} {f.rule}')}")
        out.append(f"::{_GH_LEVEL[f.severity]} {','.join(props)}::{_gh_data(f.message)}")
    out.append(f"quantadvise check: {_verdict(r)} — {_summary(r)} (fail on {r.fail_on}); rules: docs/ci.md")
    return "\n".join(out)


# -------------------------------------------------------------------------------------------------
# SARIF 2.1.0
# -------------------------------------------------------------------------------------------------


def _docs_base() -> str | None:
    """An absolute URL of docs/ci.md when the installed package names a GitHub repository."""
    from importlib import metadata

    try:
        urls = metadata.metadata("quantadvise").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    for entry in urls:
        label, _, url = entry.partition(",")
        url = url.strip().rstrip("/")
        if label.strip().lower() in ("repository", "source", "homepage", "code") and url.startswith("https://github.com/"):
            return f"{url}/blob/main/docs/ci.md"
    return None


_SARIF_LEVEL = {"error": "error", "warning": "warning", "note": "note"}


def _uri(path: str) -> str:
    """A file path as a SARIF ``artifactLocation.uri``: a relative URI reference, percent-encoded (a
    space is ``%20``, a ``%`` is ``%25``; SARIF 2.1.0 §3.10, RFC 3986). An absolute path becomes a
    ``file://`` URI."""
    from urllib.parse import quote

    safe = "/!$&'()*+,;=@"  # RFC 3986 path characters kept as they are (a ':' is encoded: no scheme confusion)
    posix = path.replace("\\", "/")

    def enc(text: str) -> str:  # a URI encodes the name's own bytes: one that is not UTF-8 too (%FF)
        try:
            return quote(text.encode("utf-8", "surrogateescape"), safe=safe)
        except UnicodeEncodeError:  # a lone surrogate no file name has (a JSON "\ud800"): shown
            return quote(printable(text), safe=safe)

    if posix.startswith("/"):
        return "file://" + enc(posix)
    if re.match(r"[A-Za-z]:/", posix):  # C:/...
        return "file:///" + posix[:2] + enc(posix[2:])
    return enc(posix)


def _pascal(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("-"))


def sarif(r: GateResult) -> str:
    from .. import __version__

    base = _docs_base()
    index = {rule.id: i for i, rule in enumerate(RULES)}
    overrides = {s.rule_id: s.severity for s in r.rules}
    rules = []
    for rule in RULES:
        desc: dict[str, Any] = {
            "id": rule.id,
            "name": _pascal(rule.name),
            "shortDescription": {"text": rule.title},
            "fullDescription": {"text": rule.rationale},
            "help": {"text": f"{rule.rationale} (docs/ci.md#{rule.anchor})",
                     "markdown": f"**{rule.id} {rule.name}**: {rule.rationale}\n\nSee `docs/ci.md#{rule.anchor}`."},
            "defaultConfiguration": {"level": _SARIF_LEVEL[overrides.get(rule.id, rule.severity)]},
            "properties": {"tags": ["quantization", rule.family], "family": rule.family},
        }
        if base is not None:
            desc["helpUri"] = f"{base}#{rule.anchor}"
        rules.append(desc)

    def result(f: GateFinding, suppressed: bool) -> dict[str, Any]:
        res: dict[str, Any] = {
            "ruleId": f.rule_id,
            "ruleIndex": index[f.rule_id],
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            "partialFingerprints": {"quantadvise/v1": f.fingerprint},
            "properties": {"subject": f.subject, **({"target": f.target} if f.target else {}),
                           **({"engineMessage": f.engine_message} if f.engine_message else {})},
        }
        if f.file:
            loc: dict[str, Any] = {"artifactLocation": {"uri": _uri(f.file)}}
            if f.line:
                loc["region"] = {"startLine": f.line}
            res["locations"] = [{"physicalLocation": loc}]
        if suppressed:
            why = f"accepted in the baseline {r.baseline_file or r.baseline_written}"
            res["suppressions"] = [{"kind": "external", "justification": why}]
        return res

    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "quantadvise", "version": __version__, "semanticVersion": __version__,
                                "rules": rules}},
            "invocations": [{"executionSuccessful": True,
                             **({"properties": {"config": r.config_file}} if r.config_file else {})}],
            "columnKind": "utf16CodeUnits",
            "results": [result(f, False) for f in r.findings] + [result(f, True) for f in r.suppressed],
        }],
    }
    return json_text(doc, indent=2)


# -------------------------------------------------------------------------------------------------
# JUnit XML
# -------------------------------------------------------------------------------------------------


def junit(r: GateResult) -> str:
    """One testcase per rule: a failure lists the findings at or above fail-on; findings below it go
    to system-out; rules that did not apply are skipped."""
    import xml.etree.ElementTree as ET

    floor = SEVERITY_RANK[r.fail_on]
    by_rule: dict[str, list[GateFinding]] = {}
    for f in r.findings:
        by_rule.setdefault(f.rule_id, []).append(f)
    cases = []
    failures = skipped = 0
    for s in r.rules:
        rule = RULE_BY_ID[s.rule_id]
        case = ET.Element("testcase", {"classname": f"quantadvise.{rule.family}", "name": f"{rule.id} {rule.name}"})
        found = by_rule.get(rule.id, [])
        bad = [f for f in found if SEVERITY_RANK[f.severity] >= floor]
        low = [f for f in found if SEVERITY_RANK[f.severity] < floor]
        if bad:
            failures += 1
            fail = ET.SubElement(case, "failure", {
                "message": f"{len(bad)} finding{'s' if len(bad) != 1 else ''}: {bad[0].message}",
                "type": bad[0].severity})
            fail.text = "\n".join(f"{f.location}: {f.severity}: {f.message}" for f in bad)
        elif s.status in ("skipped", "off"):
            skipped += 1
            ET.SubElement(case, "skipped", {"message": s.reason})
        if low:
            ET.SubElement(case, "system-out").text = "\n".join(f"{f.location}: {f.severity}: {f.message}" for f in low)
        cases.append(case)
    attrs = {"name": "quantadvise check", "tests": str(len(cases)), "failures": str(failures), "errors": "0",
             "skipped": str(skipped)}
    suites = ET.Element("testsuites", attrs)
    suite = ET.SubElement(suites, "testsuite", attrs)
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "fail_on", "value": r.fail_on})
    if r.config_file:
        ET.SubElement(props, "property", {"name": "config", "value": r.config_file})
    suite.extend(cases)
    for el in suites.iter():  # XML 1.0 has no control characters (a flag value may hold one): shown, not dropped
        if el.text:
            el.text = _xml_text(el.text)
        for k, v in el.attrib.items():
            el.set(k, _xml_text(v))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")


_XML_BAD = re.compile("[\ufffe\uffff]")


def _xml_text(text: str) -> str:
    """Text XML 1.0 can carry: control characters and the bytes of a name that is not UTF-8 as visible
    ``\\xNN`` escapes (:func:`~quantadvise.wording.printable`), the two non-characters as U+FFFD."""
    return _XML_BAD.sub("\ufffd", printable(text))


# -------------------------------------------------------------------------------------------------
# check --init
# -------------------------------------------------------------------------------------------------


def init_table(r: InitResult, width: int | None = None) -> str:
    verb = "overwrote" if r.overwritten else "wrote"
    filled = ", ".join(f"{k}" for k in r.prefilled if k != "deployment") or "nothing (no engine command found)"
    return "\n".join([*wrap(f"{verb} {r.path}: filled in from the deployment: {filled}; keys left commented out are "
                            "not checked.", width, subsequent="  "),
                      *wrap("Edit it, then run `quantadvise check`.", width)])
