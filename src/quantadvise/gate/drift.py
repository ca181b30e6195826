"""QA5xx: drift — the checkpoint, the engine flags and the declaration disagree."""

from __future__ import annotations

from typing import Any

from ..wording import plural
from .findings import Findings, Site


def scheme_key(scheme: Any) -> tuple[Any, ...]:
    """What a scheme is at the level drift cares about: the kind of number (integer, float, lookup
    table) and the bits of the weights and of the activations (None = 16-bit). Signed and
    zero-point integers are one kind: W4A16 and AWQ differ in detail, not in kind."""
    from ..scheme.formats import get_format

    def one(t: Any) -> tuple[str, int] | None:
        if t is None or not t.is_quantized:
            return None
        f = get_format(t.format)
        return ("integer" if f.is_integer else "float" if f.is_float else f.kind, f.bits)

    return one(scheme.weight), one(scheme.activation)


def describe_key(key: tuple[Any, ...]) -> str:
    w, a = key
    if w is None:
        return "16-bit weights"
    text = f"{w[1]}-bit {w[0]} weights"
    return text + (f", {a[1]}-bit {a[0]} activations" if a else ", 16-bit activations")


def scheme_drift(out: Findings, site: Site, *, declared_id: str, declared: Any, served_id: str, served: Any,
                 served_from: str) -> None:
    out.ran_rules("QA501", "QA502")
    if declared_id == served_id:
        return
    dk, sk = scheme_key(declared), scheme_key(served)
    file, line = site.at("quantization", "model")
    decl_at = f" (quantadvise.yaml line {site.config_lines['quantization']})" if "quantization" in site.config_lines \
        else ""
    if dk != sk:
        out.add("QA501", f"declared quantization {declared_id}{decl_at} ({describe_key(dk)}) but {served_from} serves "
                f"{served_id} ({describe_key(sk)})", subject=f"{site.key}|scheme", file=file, line=line,
                target=site.label)
    else:
        out.add("QA502", f"declared quantization {declared_id}{decl_at} but {served_from} serves {served_id}: same "
                f"{describe_key(sk)}, different details ({served.description or served_id})",
                subject=f"{site.key}|scheme-variant", file=file, line=line, target=site.label)


def kv_drift(out: Findings, site: Site, *, declared: str, served: str, served_from: str,
             declared_as: str | None = None) -> None:
    """``declared`` and ``served`` are KV preset ids; ``declared_as`` is the value as written."""
    out.ran_rules("QA503")
    if declared == served:
        return
    if declared_as and declared_as != declared:
        declared = f"{declared_as} ({declared})"
    file, line = site.at("kv_cache_dtype", "model")
    decl_at = f" (quantadvise.yaml line {site.config_lines['kv_cache_dtype']})" if "kv_cache_dtype" in \
        site.config_lines else ""
    out.add("QA503", f"declared kv_cache_dtype {declared}{decl_at} but the engine will use {served} ({served_from})",
            subject=f"{site.key}|kv", file=file, line=line, target=site.label)


def model_drift(out: Findings, site: Site, *, declared: str, served: str) -> None:
    out.ran_rules("QA504")
    if declared.strip().strip("/").lower() == served.strip().strip("/").lower():
        return
    file, line = site.at("model")
    out.add("QA504", f"the command serves '{served}' but quantadvise.yaml declares model '{declared}'; the "
            f"command's model is checked (the declaration applies to deployments that name none)",
            subject=f"{site.key}|model", file=file, line=line, target=site.label)


def workload_drift(out: Findings, site: Site, *, concurrency: int | None, max_num_seqs: int | None,
                   ctx: int | None, max_model_len: int | None, max_model_len_source: str | None,
                   gpus: int | None, parallel: int | None, max_num_seqs_from: str | None = None,
                   seqs_flag: str = "--max-num-seqs", len_flag: str = "--max-model-len",
                   parallel_flags: str = "--tensor-parallel-size x --pipeline-parallel-size") -> None:
    """The declared workload against the engine's caps (``seqs_flag`` / ``len_flag``: the engine's
    own spelling, ``--max-running-requests`` / ``--context-length`` for SGLang)."""
    out.ran_rules("QA505")
    if concurrency is not None and max_num_seqs is not None and concurrency > max_num_seqs:
        file, line = site.at("max_num_seqs", "concurrency")
        src = f" ({max_num_seqs_from})" if max_num_seqs_from else ""
        out.add("QA505", f"declared concurrency {concurrency:,} exceeds {seqs_flag} {max_num_seqs:,}{src}: "
                f"{concurrency - max_num_seqs:,} requests queue", subject=f"{site.key}|max-num-seqs", file=file,
                line=line, target=site.label)
    if ctx is not None and max_model_len is not None and ctx > max_model_len:
        file, line = site.at("max_model_len", "model")
        out.add("QA505", f"declared context {ctx:,} tokens exceeds {len_flag.lstrip('-')} {max_model_len:,} "
                f"({max_model_len_source}): longer requests are rejected", subject=f"{site.key}|max-model-len",
                file=file, line=line, target=site.label)
    if gpus is not None and parallel is not None and gpus != parallel:
        file, line = site.at("tensor_parallel_size", "model")
        out.add("QA505", f"quantadvise.yaml declares {plural(gpus, 'GPU')} but the command runs on {plural(parallel, 'GPU')} "
                f"({parallel_flags})", subject=f"{site.key}|gpus", file=file, line=line, target=site.label)


def engine_drift(out: Findings, site: Site, *, declared_engine: str | None, served_engine: str,
                 declared_version: str | None, served_version: str | None, version_from: str) -> None:
    out.ran_rules("QA506")
    file, line = site.at("engine_version", "model")
    if declared_engine is not None and declared_engine != served_engine:
        out.add("QA506", f"quantadvise.yaml declares engine {declared_engine} but the command runs {served_engine}",
                subject=f"{site.key}|engine", file=file, line=line, target=site.label)
    if declared_version is not None and served_version is not None and \
            declared_version.removeprefix("v") != served_version.removeprefix("v"):
        out.add("QA506", f"quantadvise.yaml declares {served_engine} {declared_version} but {version_from} says "
                f"{served_version}", subject=f"{site.key}|engine-version", file=file, line=line, target=site.label)

