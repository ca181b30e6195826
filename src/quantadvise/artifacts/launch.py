"""Engine launches in commands: which command starts vLLM or SGLang (``vllm serve MODEL``,
``python -m vllm.entrypoints.openai.api_server``, ``python -m sglang.launch_server``,
``sglang serve``, ``docker run IMAGE ARGS`` of an engine image), and its flags read into an
:class:`~quantadvise.engines.invocation.EngineInvocation`: the flags in
:mod:`quantadvise.engines.flags` typed and located, every other flag kept in ``other``.

A shell script is a list of such commands (:func:`parse_shell`); the Dockerfile and YAML readers
hand theirs to :func:`invocation_from_words` too. Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from ..engines.flags import (
    ENGINES,
    SGLANG_MODULES,
    STACK_MODULES,
    VLLM_MODULES,
    Engine,
    EngineFlags,
    Flag,
    engine_of_image,
)
from ..engines.invocation import EngineInvocation, Source
from ..engines.versions import release_in_tag
from ..engines.vocabulary import FlagVocabulary, Lookup, takes_no_value
from ..inputs import shown
from .budget import MAX_WORDS, current
from .shell import Word, split_shell

# Text that holds an engine launch (decides whether a file's parse errors matter, and which YAML strings
# are read as commands).
ENGINE_MARKER = re.compile(
    r"(?:\bvllm\s+serve|\bsglang\s+serve|(?<![\w-])-m\s*(?:vllm\.entrypoints\.(?:openai\.)?api_server"
    r"|vllm\.entrypoints\.cli\.main|sglang(?:_router)?\.launch_server|dynamo\.(?:vllm|sglang)))\b"
)
_PIP_PIN = re.compile(r"""(?:^|[\s"'])(vllm|sglang)(?:\[[^\]]*\])?==(\d[\w.+\-]*)""")
_NOT_LAUNCH = frozenset({"echo", "printf", "logger", "grep", "sed", "awk", "#"})
_WRAPPERS = frozenset({"exec", "nohup", "env", "sudo", "time", "uv", "uvx", "run", "poetry", "pipenv", "timeout",
                       "numactl", "taskset", "nice", "stdbuf", "setsid", "srun", "command", "ray", "job", "submit",
                       "--"})


# (engine, release or None for the newest on file, exact) -> the release's option list, or None when it is
# not on file (with ``exact``; else the newest's). The caller that reads the files passes it in (the
# catalog's ``option_list``); without one, option names are not checked against a release.
OptionLists = Callable[[str, str | None, bool], FlagVocabulary | None]


@dataclass
class LaunchContext:
    """Where a command was found, and what its file says about it beyond its words."""

    file: str
    source: Source
    context: str | None = None
    image: str | None = None
    engine_version: str | None = None
    implicit: Engine | None = None  # the image's entrypoint is this engine's server
    line: int | None = None  # where an implicit invocation starts, when there are no words
    gpus: tuple[str, int] | None = None  # (the request as written, its line)
    warnings: list[str] = field(default_factory=list)
    options: OptionLists | None = None  # the releases' option lists (see OptionLists)
    env: dict[str, int] = field(default_factory=dict)  # environment variables the container sets -> line
    runs_image: str | None = None  # the image the container runs, an engine's or not (a stack worker's tag)


@dataclass
class ImageArgs:
    """A container (Kubernetes, Helm values, compose) that runs an image no reader knows as an engine's,
    with arguments and no command of its own: the image's entrypoint gets them. When this repository's
    one Dockerfile builds an engine server image, they are that server's arguments (scan.join_images)."""

    words: list[Word]
    ctx: LaunchContext


@dataclass
class ServerImage:
    """A Dockerfile whose image runs an engine's server and takes its arguments at run time: its own
    ``ENTRYPOINT ["vllm", "serve"]`` (``launcher``: those words), or an engine image's entrypoint left
    in place with no CMD (``launcher`` empty)."""

    file: str
    line: int
    engine: Engine
    version: str | None
    launcher: list[str]


@dataclass
class Asides:
    """What the readers notice besides launches: commands that are not deployments (``FILE: line N: why``,
    for ``check -v``), what a file's budget left unread (warnings), and the halves of a launch split between a
    Dockerfile and a manifest."""

    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what a file's budget left unexpanded or unread
    image_args: list[ImageArgs] = field(default_factory=list)
    server_images: list[ServerImage] = field(default_factory=list)


def has_arguments(inv: EngineInvocation) -> bool:
    """Whether the command gives the server any argument (a model, a flag, a run-time value)."""
    return bool(inv.raw or inv.other or inv.unresolved_env)


# options that make the server print and exit instead of serving (argparse's -h/--help, vLLM's
# --help=GROUP, --version)
_EXITS_AT_ONCE = ("--help", "-h", "--version")


def not_a_deployment(inv: EngineInvocation) -> str | None:
    """Why a found command is not a deployment (``vllm serve --help``), else None."""
    asked = [o for o in _EXITS_AT_ONCE if o in inv.other]
    if asked:
        return (f"`{inv.launcher or inv.engine} {asked[0]}` prints the engine's "
                f"{'version' if asked[0] == '--version' else 'help'} and exits: not a deployment")
    return None


def parse_image(image: str) -> tuple[Engine | None, bool, str | None]:
    """(engine, whether its entrypoint is the engine's server, the release its tag names: ``release_in_tag``,
    ``nightly`` for a nightly's). The tag: after the last path segment's first ':' outside an unresolved ${X:?m}."""
    ref = image.split("@", 1)[0]
    masked = re.sub(r"\$\{[^}]*\}", lambda m: "_" * len(m.group(0)), ref)
    at = masked.find(":", masked.rfind("/") + 1)
    name, tag = (ref[:at], ref[at + 1:]) if at >= 0 else (ref, None)
    engine, entry = engine_of_image(name)
    version = release_in_tag(tag) if tag and engine is not None else None
    return engine, entry, version


def find_engine(words: Sequence[Word]) -> tuple[Engine, int, int, bool | str] | None:
    """(engine, index of the engine token, index of its first argument, positional model allowed: True,
    False, or "first" when only a first argument that is not an option names the model)."""
    if not words or words[0].text in _NOT_LAUNCH:
        return None
    for i, w in enumerate(words):
        nxt = words[i + 1].text if i + 1 < len(words) else ""
        base = w.text.rsplit("/", 1)[-1]
        if nxt == "serve":  # `vllm serve MODEL`; `sglang serve MODEL`: a first bare argument is --model-path
            for t in ENGINES.values():
                if base == t.cli:
                    return t.engine, i, i + 2, t.cli_model
        if w.text == "-m" or (w.text.startswith("-m") and w.text[2:] in (*VLLM_MODULES, *SGLANG_MODULES,
                                                                          *STACK_MODULES)):
            mod = nxt if w.text == "-m" else w.text[2:]
            skip = 2 if w.text == "-m" else 1
            if mod in VLLM_MODULES:
                return "vllm", i, i + skip, False
            if mod == "vllm.entrypoints.cli.main" and i + 2 < len(words) and words[i + 2].text == "serve":
                return "vllm", i, i + 3, True
            if mod in SGLANG_MODULES:
                return "sglang", i, i + skip, False
            if mod in STACK_MODULES:  # a stack's worker: the engine's options plus the stack's (stack_launch.py)
                return STACK_MODULES[mod], i, i + skip, False
    return None


def docker_run_image(words: Sequence[Word]) -> tuple[int, str] | None:
    """Index and name of an engine image in a ``docker run ...`` command."""
    for i, w in enumerate(words[:-1]):
        if w.text.rsplit("/", 1)[-1] in ("docker", "podman", "nerdctl") and words[i + 1].text == "run":
            for j in range(i + 2, len(words)):
                engine, _, _ = parse_image(words[j].text)
                if engine is not None and not words[j].text.startswith("-"):
                    return j, words[j].text
    return None


def _human_int(text: str, suffixes: bool) -> int:
    t = text.strip()
    if len(t) > 64:  # no count or length of an engine: int() refuses 4,300 digits anyway, float() makes inf
        raise ValueError(text)
    if suffixes:
        m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmgtKMGT])", t)
        if m:
            num, suf = m.groups()
            if suf.islower():
                return int(float(num) * 10 ** (3 * "kmgt".index(suf) + 3))
            if "." in num:
                raise ValueError(text)
            return int(num) * 2 ** (10 * "KMGT".index(suf) + 10)
    return int(t)


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_NUMERIC = frozenset("0123456789")  # the character after a leading '-' of a number
MAX_ENGINE_INT = 2**63 - 1  # a count or a length past a 64-bit integer is no engine's


def _is_number(text: str) -> bool:
    return _NUMBER.fullmatch(text) is not None


def invocation_from_words(words: Sequence[Word], ctx: LaunchContext) -> EngineInvocation | None:
    """The engine launch in one command's words, if there is one (its first :data:`~.budget.MAX_WORDS`
    words: a YAML list of 200,000 items is no command line)."""
    if len(words) > MAX_WORDS:
        current(ctx.file).words(MAX_WORDS, words[0].line)
        words = words[:MAX_WORDS]
    found = find_engine(words)
    launcher: str | None = None
    image, version = ctx.image, ctx.engine_version
    run = docker_run_image(words)
    if run is not None:
        j, run_image = run
        for k in range(j):
            t = words[k].text
            if t.startswith("--gpus="):
                ctx = LaunchContext(**{**ctx.__dict__, "gpus": (t.split("=", 1)[1], words[k].line)})
            elif t == "--gpus" and k + 1 < j:
                ctx = LaunchContext(**{**ctx.__dict__, "gpus": (words[k + 1].text, words[k].line)})
        run_engine, entry, tag_version = parse_image(run_image)
        if found is not None and found[1] > j:
            image, version = run_image, tag_version or version  # `docker run IMAGE python -m sglang...`
        elif found is None and entry and run_engine is not None:
            image, version = run_image, tag_version or version
            found = (run_engine, j, j + 1, True)  # the arguments go to the image's server entrypoint
            launcher = "image entrypoint"
    elif found is None and ctx.implicit is not None:
        found = (ctx.implicit, -1, 0, True)
    if found is None:
        return None
    engine, at, first_arg, positional = found
    in_container = run is not None and (launcher == "image entrypoint" or at > run[0])
    # `docker run -e` sets the container's environment; the script's own (exports, prefixes) stays outside it
    env = _set_before(words, run[0], run[0]) if in_container and run is not None else \
        {**ctx.env, **_set_before(words, max(at, 0), None)}
    if env != ctx.env:
        ctx = LaunchContext(**{**ctx.__dict__, "env": env})
    if launcher is None:
        launcher = _launcher([w.text for w in words[at:first_arg]]) if at >= 0 else "image entrypoint"
    if image is None and launcher.removeprefix("python -m ") in STACK_MODULES:
        image = ctx.runs_image  # a stack's runtime image: its tag names the stack's release (stack_launch.py)
    if at > 0 and words[at].text == "-m" and PurePosixPath(words[at - 1].text).name.startswith("python"):
        at -= 1  # argv starts at the interpreter: python3 -m sglang.launch_server
    if image is not None and parse_image(image)[0] not in (None, engine):
        image, version = None, None  # an SGLang image running vLLM (or the reverse): its tag says nothing
    args = list(words[first_arg:])
    line = words[0].line if words else ctx.line or 1
    argv = [w.text for w in words[max(at, 0):]]
    if at < 0:
        argv = ["<image entrypoint>", *argv]
    return _build(engine, args, positional, ctx, line=line, argv=argv, image=image, version=version,
                  launcher=launcher)


_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")


def _set_before(words: Sequence[Word], at: int, image_at: int | None) -> dict[str, int]:
    """Environment variables a command sets for the engine -> line: assignments before the engine token
    (``VLLM_USE_V1=0 vllm serve``, ``env VLLM_X=1 ...``), or (``image_at``: the image's index in a
    ``docker run``) the container's ``-e NAME=V`` / ``--env NAME``."""
    out: dict[str, int] = {}
    if image_at is None:
        for w in words[:at]:
            m = _ASSIGN.match(w.text)
            if m:
                out[m.group(1)] = w.line
    else:
        for k in range(image_at):
            t = words[k].text
            value = None
            if t in ("-e", "--env") and k + 1 < image_at:
                value = words[k + 1].text
            elif t.startswith("--env="):
                value = t[6:]
            elif t.startswith("-e") and len(t) > 2:
                value = t[2:]
            if value:
                name = value.split("=", 1)[0]
                if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                    out[name] = words[k].line
    return out


def _launcher(tokens: list[str]) -> str:
    """How find_engine's tokens start the server: ``vllm serve``, ``sglang serve`` or ``python -m MODULE``."""
    if tokens and tokens[0].startswith("-m"):
        mod = tokens[1] if tokens[0] == "-m" and len(tokens) > 1 else tokens[0][2:]
        return "vllm serve" if mod == "vllm.entrypoints.cli.main" else f"python -m {mod}"
    return " ".join([tokens[0].rsplit("/", 1)[-1], *tokens[1:]]) if tokens else "image entrypoint"


def _build(engine: Engine, args: Sequence[Word], positional: bool | str, ctx: LaunchContext, *, line: int,
           argv: list[str], image: str | None, version: str | None, launcher: str | None = None) -> EngineInvocation:
    table = ENGINES[engine]
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    raw: dict[str, str] = {}
    other: dict[str, str | bool] = {}
    warnings = list(ctx.warnings)
    unresolved: list[str] = []
    for w in args:
        unresolved.extend(w.unresolved)
    where = ctx.file

    def put(flag: Flag, text: str, word: Word, spelled: str) -> None:
        canon = flag.field
        if canon in lines and canon != "speculative_config":
            warnings.append(f"{where}: line {word.line}: {spelled} is given again (first at line {lines[canon]}); "
                            f"the engine uses the last")
        lines[canon] = word.line
        raw[canon] = text
        if word.unresolved:
            values[canon] = None
            return
        values[canon] = _typed(flag, text, spelled, word, where, warnings)

    vocab = _options(ctx.options, engine, version)  # the release's option list, once for every word

    i = 0
    positional_seen = False
    tick = current(ctx.file).tick
    named, underscores, n_args = table.named, table.underscores, len(args)  # once, not per word
    while i < n_args:
        tick(16)  # a lookup is a few microseconds
        w = args[i]
        t = w.text
        if t == "--":
            i += 1
            continue
        if t.startswith("-") and len(t) > 1 and not (t[1] in _NUMERIC and _is_number(t)):
            name, eq, val = t.partition("=")
            if underscores and name.startswith("--"):  # vLLM: up to the first dot (argparse_utils.py)
                head, dot, tail = name[2:].partition(".")
                name = "--" + head.replace("_", "-") + dot + tail
            flag = named(name)  # else the release's reading, once per word: a table flag's prefix? takes a value?
            hit = vocab.lookup(name, suggest=False) if vocab is not None and flag is None else None
            flag = flag or (_prefix_of(hit, table, name, w.line, where, warnings) if name.startswith("--") else None)
            base, dot, key = name.partition(".")
            parent = _json_parent(ctx.options, table, engine, version, base) if flag is None and dot else None
            if parent is not None and parent.type == "json":  # --speculative-config.method eagle3
                if not eq and i + 1 < n_args:
                    val, i = args[i + 1].text, i + 1
                spec = values.get(parent.field)
                spec = dict(spec) if isinstance(spec, dict) else {}
                spec[key] = _jsonish(val)
                values[parent.field] = spec
                lines.setdefault(parent.field, w.line)
                raw[parent.field] = json.dumps(spec)
                i += 1
                continue
            if flag is not None:
                if eq:
                    put(flag, val, w, name)
                elif i + 1 < n_args:
                    v = args[i + 1]
                    put(flag, v.text, Word(v.text, w.line, v.unresolved), name)
                    i += 1
                else:
                    warnings.append(f"{where}: line {w.line}: {name} has no value")
                i += 1
                continue
            # not understood: kept in `other`
            nxt = args[i + 1].text if i + 1 < n_args else ""
            bare = not eq and takes_no_value(vocab, name, hit)
            if eq:
                other[name] = val
            elif bare and nxt.lower() in ("true", "false"):
                other[name] = nxt  # older vLLM: --enable-chunked-prefill False
                stray = _stray_boolean(ctx.options, engine, version, name, nxt)
                if stray:
                    warnings.append(f"{where}: line {w.line}: {stray}")
                i += 1
            elif bare:
                other[name] = True
            elif i + 1 < n_args and (not args[i + 1].text.startswith("-") or _is_number(args[i + 1].text)):
                other[name] = args[i + 1].text
                i += 1
            else:
                other[name] = True
            lines.setdefault(name, w.line)
            i += 1
            continue
        if positional and not positional_seen and (positional is True or i == 0):
            positional_seen = True
            if "model" in lines:
                warnings.append(f"{where}: line {w.line}: the model is given both as --model and as the positional "
                                f"argument; vllm serve uses the positional one")
            lines["model"] = w.line
            raw["model"] = t
            values["model"] = None if w.unresolved else t
        elif w.unresolved:  # "${ARGS[@]}", $EXTRA_ARGS: flags the gate cannot see
            warnings.append(f"{where}: line {w.line}: {t} is set at run time: the flags in it are not read (assign "
                            "it in the script, or put the flags that matter on the command line)")
            unresolved.extend(w.unresolved)
        else:
            other.setdefault("<positional>", t)
        i += 1
    if "model" in raw and values.get("model") is None:
        values["model"] = raw["model"]  # keep an unresolved model visible: "${MODEL}"
    if ctx.gpus is not None:
        text, gline = ctx.gpus
        raw["gpu_count"], lines["gpu_count"] = text, gline
        values["gpu_count"] = gpu_request_count(text)
    prefix = table.env_prefix
    return EngineInvocation(
        engine=engine, file=ctx.file, line=line, source=ctx.source, context=ctx.context, launcher=launcher, image=image,
        engine_version=version, argv=argv, flag_lines=lines, raw=raw,
        env={k: v for k, v in ctx.env.items() if prefix and k.startswith(prefix)},
        unresolved_env=list(dict.fromkeys(unresolved)), other=other, warnings=warnings,
        **{k: v for k, v in values.items() if k in EngineInvocation.model_fields},
    )


def _prefix_of(hit: Lookup | None, table: EngineFlags, name: str, line: int, where: str,
               warnings: list[str]) -> Flag | None:
    """The table flag a long option ``name`` is a unique prefix of, as the release's argparse reads it from its
    option list (``hit``, its lookup there: ``--mem-fraction`` is SGLang's ``--mem-fraction-static``), with a
    warning that says so."""
    flag = table.named(hit.option) if hit is not None and hit.verdict == "abbreviation" and hit.option else None
    if flag is not None:
        warnings.append(f"{where}: line {line}: {name} is read as {flag.name} (a unique prefix of it, which "
                        f"argparse accepts until a release adds another option starting with {name}): write "
                        f"{flag.name}")
    return flag


def _json_parent(lists: OptionLists | None, table: EngineFlags, engine: Engine, version: str | None,
                 base: str) -> Flag | None:
    """The table's JSON flag a dotted spelling sets a key of (``--speculative-config.method``, ``-sc.method``):
    the option before the first dot, as the release's launcher reads it (its parser sidecar), where the release
    rewrites dotted spellings; without a release's list, the table's own JSON flags under vLLM's rule."""
    vocab = _options(lists, engine, version)
    if vocab is not None and vocab.launcher is not None:
        if vocab.launcher.dotted_json is None:
            return None  # this release passes `--x.key` to argparse as it is (an unknown option)
        hit = vocab.lookup(base + ".", suggest=False)
        canon = vocab.json_options.get(hit.option or "", hit.option) if hit.verdict == "known" else None
        flag = table.named(canon) if canon else None
    else:
        flag = table.named(base) if table.dotted_json else None
    return flag if flag is not None and flag.type == "json" else None


def _stray_boolean(lists: OptionLists | None, engine: Engine, version: str | None, name: str, word: str) -> str | None:
    """Why the release refuses ``--flag true``/``false`` when ``--flag`` takes no value in it (argparse
    leaves the word over: "unrecognized arguments: False"); None when the release is not on file (older
    releases parsed some as booleans) or the option takes a value."""
    vocab = _options(lists, engine, version, exact=True)
    if vocab is None:
        return None
    option = vocab.lookup(name, suggest=False).option
    row = vocab.registered.get(option) if option is not None else None
    if option is None or row is None or row.kind == "value":
        return None
    if word.lower() == "true":
        fix = name
    else:
        fix = f"--no-{option[2:]}" if row.kind == "negatable" else "leave the option out"
    return (f"{name} takes no value in {ENGINES[engine].label} {vocab.version}, so '{word}' after it is an argument "
            f"the parser does not take (unrecognized arguments: {word}); the engine would refuse it: write {fix}")


def _options(lists: OptionLists | None, engine: Engine, version: str | None, exact: bool = False) -> FlagVocabulary | None:
    """The option list of ``version`` (None: the newest release on file, the one the gate assumes); one not
    on file is None when ``exact``, else the newest's; None without ``lists``."""
    return lists(engine, version.removeprefix("v") if version else None, exact) if lists is not None else None


def gpu_request_count(text: str) -> int | None:
    """GPUs in a request: ``2``, ``"device=0,1"``, ``device=GPU-abc`` -> 2, 2, 1; ``all``, or 10+ digits -> None."""
    t = text.strip().strip("'\"")
    if t.isdecimal():  # not isdigit: "²" is a digit int() refuses
        return int(t) if len(t) <= 9 else None
    m = re.search(r"device=([^\s\"']+)", t)
    if m:
        return len([d for d in m.group(1).split(",") if d])
    return None


def _jsonish(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, TypeError, RecursionError):  # not JSON, 5,000 digits, nested past the limit
        return text


def _typed(flag: Flag, text: str, spelled: str, word: Word, where: str, warnings: list[str]) -> Any:
    """A flag's value as the engine parses it (None, with a warning, where the engine would refuse it)."""
    if flag.type == "int":
        if flag.field == "max_model_len" and text.strip().lower() in ("auto", "-1"):
            return None  # the engine derives it from the model config
        try:
            n = _human_int(text, flag.human_int)
        except ValueError:
            warnings.append(f"{where}: line {word.line}: {spelled} {shown(text)} is not an integer; the engine "
                            "would refuse it")
            return None
        if n < 1:  # every integer flag the gate reads is a count or a length (both engines validate ge=1)
            warnings.append(f"{where}: line {word.line}: {spelled} {shown(n)} is not a positive integer; the engine "
                            "would refuse it")
            return None
        if n > MAX_ENGINE_INT:
            warnings.append(f"{where}: line {word.line}: {spelled} {shown(n)} is larger than any count or length an "
                            "engine takes (a 64-bit integer); the engine would refuse it")
            return None
        return n
    if flag.type == "float":
        try:
            x = float(text)
        except ValueError:
            warnings.append(f"{where}: line {word.line}: {spelled} {shown(text)} is not a number; the engine would "
                            "refuse it")
            return None
        fraction = flag.field == "gpu_memory_utilization"  # vLLM's Field(gt=0, le=1); SGLang's the same share
        if (fraction and not 0 < x <= 1) or x != x or x in (float("inf"), float("-inf")):
            warnings.append(f"{where}: line {word.line}: {spelled} {text} is not "
                            f"{'a fraction in (0, 1]' if fraction else 'a finite number'}; the engine would refuse it")
            return None
        return x
    if flag.type == "json":
        v = _jsonish(text)
        if not isinstance(v, dict):
            warnings.append(f"{where}: line {word.line}: {spelled} is not a JSON object")
            return text
        return v
    return text


def pip_versions(text: str) -> dict[str, str]:
    """Engine versions pinned in ``pip install vllm==0.8.5`` style text."""
    return {m.group(1): m.group(2) for m in _PIP_PIN.finditer(text)}


def with_version(inv: EngineInvocation, versions: Mapping[str, str]) -> EngineInvocation:
    """The invocation with its engine's pinned version, where no image tag gave one."""
    if inv.engine_version is None and inv.engine in versions:
        return inv.model_copy(update={"engine_version": versions[inv.engine]})
    return inv


def launch_position(words: Sequence[Word]) -> bool:
    """The engine starts the command, after nothing but wrappers, their flags and assignments."""
    found = find_engine(words)
    if found is None:
        return docker_run_image(words) is not None
    for w in words[:found[1]]:
        name = PurePosixPath(w.text).name
        if not (w.assign or name in _WRAPPERS or name.startswith("python") or w.text.startswith("-")
                or re.fullmatch(r"[\d.]+[smhd]?", w.text)):
            return False
    return True


# --- shell scripts -------------------------------------------------------------------------------------


def parse_shell(text: str, file: str, *, env: Mapping[str, str] | None = None,
                options: OptionLists | None = None) -> list[EngineInvocation]:
    """Engine launches in a shell script."""
    out = []
    ctx = LaunchContext(file=file, source="shell", options=options)
    exported = _exports(text)
    for words in split_shell(text, file, env=env):
        first = words[0].line if words else 0
        ctx.env = {name: line for name, line in exported if line < first}
        inv = invocation_from_words(words, ctx)
        if inv is not None:
            out.append(inv)
    versions = pip_versions(text)
    return [with_version(i, versions) for i in out]


_EXPORT = re.compile(r"^[ \t]*(?:export[ \t]+)?((?:VLLM|SGLANG)_[A-Za-z0-9_]*)=", re.MULTILINE)


def _exports(text: str) -> list[tuple[str, int]]:
    """The engines' own environment variables a script assigns on a line of their own (``export VLLM_X=1``),
    with their lines: a launch below them inherits them (exported, or assigned for an ``export``-less shell
    that still passes them: only exported ones reach the engine, but a script that sets one means it)."""
    return [(m.group(1), text.count("\n", 0, m.start()) + 1) for m in _EXPORT.finditer(text)]

