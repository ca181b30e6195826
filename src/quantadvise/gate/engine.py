"""QA1xx: the engine refuses the deployment or misbehaves with it (what ``inspect`` predicts)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .findings import Findings, Site
from .rules import _KIND_FLAG, rule_for_kind

if TYPE_CHECKING:
    from ..engines.invocation import EngineInvocation
    from ..engines.vocabulary import FlagVocabulary


def engine_findings(out: Findings, site: Site, findings: Iterable[Any], engine_label: str) -> list[str]:
    """Map an engine resolution's findings (``engines.Finding``) to rules; returns the notes for
    informational ones."""
    out.ran_rules("QA101", "QA102", "QA103", "QA104", "QA105", "QA106", "QA203", "QA204")
    notes = []
    for f in findings:
        rid = rule_for_kind(f.kind, f.severity)
        if rid is None:
            notes.append(f"{engine_label}: {f.message}")
            continue
        file, line = site.at(*_KIND_FLAG.get(f.kind, ("quantization", "kv_cache_dtype", "model")))
        out.add(rid, f"{engine_label}: {f.message}", subject=f"{site.key}|{f.kind}|{f.subject or ''}", file=file,
                line=line, target=site.label, engine_message=f.engine_message)
    return notes


def _flag(engine: str, field: str) -> str:
    """The engine's own spelling of a field's flag, without the dashes (``tp-size`` for SGLang)."""
    from ..engines.flags import ENGINES

    table = ENGINES.get(engine)
    try:
        return table.for_field(field).name.lstrip("-") if table is not None else field.replace("_", "-")
    except KeyError:
        return field.replace("_", "-")


def parallelism_findings(out: Findings, site: Site, *, tp: int, pp: int, gpus_given: int | None,
                         split_error: str | None, engine: str = "vllm", node_gpus: int | None = None,
                         layout: str | None = None) -> None:
    """QA107: the GPUs the server on this node places its workers on (``node_gpus``: its layout's share of
    this node, data-parallel ranks and nodes counted; else TP x PP) against the container's."""
    out.ran_rules("QA107")
    need = node_gpus if node_gpus is not None else tp * pp
    if gpus_given is not None and need > gpus_given:
        file, line = site.at("tensor_parallel_size", "pipeline_parallel_size", "gpu_count")
        given_at = f" (line {site.flag_lines['gpu_count']})" if "gpu_count" in site.flag_lines else ""
        what = (f"{layout}: {need} GPUs on this node" if layout and node_gpus is not None else
                f"{_flag(engine, 'tensor_parallel_size')} {tp} x {_flag(engine, 'pipeline_parallel_size')} "
                f"{pp} = {tp * pp} GPUs")
        out.add("QA107", f"{what}, but the container is given {gpus_given}{given_at}: the engine cannot place its "
                "workers", subject=f"{site.key}|gpus", file=file, line=line, target=site.label)
    if split_error:
        file, line = site.at("tensor_parallel_size", "gpus")
        out.add("QA107", split_error, subject=f"{site.key}|tp-split", file=file, line=line, target=site.label)


_REFUSE = "the engine would refuse it"


def artifact_findings(out: Findings, site: Site, warnings: Iterable[str], unresolved: Mapping[str, str],
                      engine: str = "vllm") -> None:
    """An invocation's parse warnings (QA108 when the engine would refuse the value, else QA109) and
    flags that matter whose value is unresolved (QA110)."""
    import re

    out.ran_rules("QA108", "QA109", "QA110")
    for w in warnings:
        m = re.search(r"line (\d+)", w)
        line = int(m.group(1)) if m else site.line
        text = re.sub(r"^.*?: line \d+: ", "", w)
        rid = "QA108" if _REFUSE in w else "QA109"
        out.add(rid, text, subject=f"{site.key}|{text}", file=site.file, line=line, target=site.label)
    for name, raw in unresolved.items():
        file, line = site.at(name)
        out.add("QA110", f"{_flag(engine, name)} is '{raw}', set at run time: not checked (give the variable a "
                "default in the artifact or declare the value in quantadvise.yaml)",
                subject=f"{site.key}|unresolved|{name}", file=file, line=line, target=site.label)




def env_findings(out: Findings, site: Site, inv: EngineInvocation, vocab: FlagVocabulary | None) -> None:
    """The engine's own environment variables a launch sets (``VLLM_*``, ``SGLANG_*``) that the release does not
    declare (its parser sidecar: vllm/envs.py's ``environment_variables``; SGLang's ``Envs`` and literal reads):
    the engine never reads them, so they change nothing (QA109; vLLM 0.17 on also logs "Unknown vLLM environment
    variable detected", an error with --fail-on-environ-validation). Not checked where the release's list is
    incomplete (names built at run time)."""
    lf = vocab.launcher if vocab is not None else None
    if lf is None or lf.env_vars is None or any(n.startswith("env_vars") for n in lf.not_extracted) or not inv.env:
        return
    import difflib

    from ..engines.flags import engine_label

    out.ran_rules("QA109")
    label = f"{engine_label(lf.engine)} {lf.version}"
    for name, line in sorted(inv.env.items()):
        if name in lf.env_vars.names:
            continue
        near = difflib.get_close_matches(name, list(lf.env_vars.names), n=2, cutoff=0.8)
        hint = f"; did you mean {' or '.join(near)}?" if near else ""
        out.add("QA109", f"{name} is not an environment variable {label} reads ({lf.env_vars.source} declares "
                f"{len(lf.env_vars.names)}): setting it changes nothing{hint}", subject=f"{site.key}|env|{name}",
                file=site.flag_files.get(name, site.file), line=line, target=site.label)


def dtype_findings(out: Findings, site: Site, *, engine_label: str, dtype: str, refusal: str | None,
                   fallback: tuple[str, str] | None = None) -> list[str]:
    """The model dtype on this GPU (engines.config_checks.dtype_refusal / dtype_fallback, looked up by the
    caller): a refusal is QA103 (vLLM: "Bfloat16 is only supported on GPUs with compute capability of at
    least 8.0 ..." for --dtype bfloat16 on a T4 or V100); a fallback (auto -> float16) is a note."""
    out.ran_rules("QA103")
    if refusal is not None:
        file, line = site.at("dtype", "model")
        out.add("QA103", f"{engine_label} refuses --dtype {dtype} on this GPU at start-up; serve it with --dtype half "
                f"(float16)",
                subject=f"{site.key}|dtype|{dtype}", file=file, line=line, target=site.label, engine_message=refusal)
        return []
    if fallback is not None:
        asked = "the checkpoint's dtype (--dtype auto)" if dtype == "auto" else f"--dtype {dtype}"
        return [f"{engine_label} runs the model in {fallback[0]}, not {asked}: {fallback[1]}"]
    return []


_SUGGEST = 20  # unknown options per command that get "did you mean" (difflib over ~500 names each)


def option_findings(out: Findings, site: Site, inv: EngineInvocation, vocab: FlagVocabulary | None,
                    version: str, model_read: bool = True) -> list[str]:
    """The option names of a launch against every option the release's parser registers
    (``data/flags/``): a spelling it does not register, or a prefix of several, ends the start-up
    with argparse's own error (QA108). (A unique prefix is read as its option, by the deployment
    readers too: ``artifacts.launch``.) ``sglang serve`` hands a diffusion model to SGLang-Diffusion's
    own parser (sglang/cli/serve.py:107-142): its options are not checked when the command says
    ``--model-type diffusion`` or the model could not be read (``model_read`` False) to tell. A
    ``python -m`` server module the release does not hold ends the launch before any parser ("No module
    named ...", QA108). Returns the notes (why names were not checked)."""
    from ..engines.flags import ENGINES

    table = ENGINES.get(inv.engine)
    label = table.label if table is not None else inv.engine
    module = inv.launcher.removeprefix("python -m ") if inv.launcher and inv.launcher.startswith("python -m ") \
        else None
    if vocab is not None and module is not None and module.startswith(inv.engine + ".") and vocab.parser.modules \
            and module not in vocab.parser.modules:
        cli = table.cli if table is not None else ""
        servers = ", ".join([*([f"{cli} serve"] if cli and vocab.parser.modules else []),
                             *(f"python -m {m}" for m in vocab.parser.modules)])
        out.add("QA108", f"python -m {module}: {label} {vocab.version} has no such module, so the process exits "
                f"before a server starts (its servers: {servers})", subject=f"{site.key}|module|{module}",
                file=site.file, line=site.line, target=site.label, engine_message=f"No module named {module}")
    spelled = [n for n in inv.other if n.startswith("-") and "$" not in n]
    if not spelled:
        return []
    if inv.launcher == "python -m sglang_router.launch_server":
        return ["option names are not checked: sglang_router.launch_server adds the router's own options"]
    for option, program in (ENGINES[inv.engine].handoff_options if inv.engine in ENGINES else ()):
        if option in inv.other:
            return [f"option names are not checked: {option} hands the command line to {program}, whose options are "
                    "not on file"]
    if vocab is None:
        return [f"option names are not checked: {label} {version}'s option list is not on file (data/flags/)"]
    launcher = inv.launcher  # only `sglang serve` reads an option of its own (--model-type)
    if launcher == "sglang serve":
        model_type = str(inv.other.get("--model-type", "auto")).lower()
        if model_type == "diffusion" or (model_type == "auto" and not model_read):
            why = "--model-type diffusion" if model_type == "diffusion" else "the model could not be read to tell"
            return [f"option names are not checked: `sglang serve` hands a diffusion model to SGLang-Diffusion's own "
                    f"parser (sglang/cli/serve.py:107-142; {why})"]
    prog = vocab.parser.prog
    release = f"{label} {vocab.version}"
    for i, name in enumerate(spelled):
        hit = vocab.lookup(name, suggest=i < _SUGGEST, launcher=launcher)
        line = inv.flag_lines.get(name, site.line)
        file = site.flag_files.get(name, site.file)
        given = f" (in {file})" if file != site.file else ""
        if hit.verdict == "unknown":
            near = f"; did you mean {' or '.join(hit.matches)}?" if hit.matches else ""
            out.add("QA108", f"{name}{given} is not a {release} option: the server exits at start-up{near}",
                    subject=f"{site.key}|option|{name}", file=file, line=line, target=site.label,
                    engine_message=hit.engine_error(prog, name))
        elif hit.verdict == "ambiguous":
            out.add("QA108", f"{name}{given} is a prefix of {len(hit.matches)} {release} options: the server "
                    f"exits at start-up; write the option in full",
                    subject=f"{site.key}|option|{name}", file=file, line=line, target=site.label,
                    engine_message=hit.engine_error(prog, name))
        elif hit.verdict == "misread":  # the launcher rewrites it into a value the option cannot take
            out.add("QA108", f"{name}{given}: {hit.via}; the server exits at start-up",
                    subject=f"{site.key}|option|{name}", file=file, line=line, target=site.label)
    return []
