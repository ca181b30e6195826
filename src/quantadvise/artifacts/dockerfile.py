"""Engine launches in Dockerfiles: the final stage's effective ``ENTRYPOINT`` + ``CMD``, in exec (JSON)
and shell form, with ``ENV`` (and ``ARG`` defaults inside ``ENV``) resolved, and the engine image's
own entrypoint when ``FROM vllm/vllm-openai`` leaves it in place.

What does not hold at run time is a warning on the invocation: an ``ARG`` used after the build,
``$VAR`` in an exec-form ``CMD``, a shell-form ``CMD`` appended to the engine image's entrypoint. Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import field

from ..engines.flags import Engine
from ..engines.invocation import EngineInvocation
from ..errors import ConfigError
from ..results import record
from .budget import current, reading
from .launch import (
    Asides,
    LaunchContext,
    OptionLists,
    ServerImage,
    find_engine,
    invocation_from_words,
    parse_image,
    pip_versions,
    with_version,
)
from .shell import EnvValue, Unknown, Word, expand_word, split_shell


@record(frozen=False)
class _Instr:
    """One Dockerfile instruction: its keyword, its arguments and the lines they came from."""

    keyword: str
    text: str  # the arguments, physical lines joined with "\n" (continuation backslashes kept)
    line_map: list[int]

    @property
    def line(self) -> int:
        return self.line_map[0]


def _dockerfile_instructions(text: str, file: str) -> list[_Instr]:
    lines = text.splitlines()
    out: list[_Instr] = []
    i = 0
    while i < len(lines):
        raw = lines[i]
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        m = re.match(r"\s*([A-Za-z]+)\s?(.*)$", raw)
        if not m:
            raise ConfigError(f"{file}: line {i + 1}: not a Dockerfile instruction: {stripped[:40]}")
        keyword, rest = m.group(1).upper(), m.group(2)
        segs, lmap = [rest], [i + 1]
        heredoc = re.search(r"<<-?[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?", rest) if keyword == "RUN" else None
        cur = rest
        while cur.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            nxt = lines[i]
            if nxt.strip().startswith("#") or not nxt.strip():
                continue  # Docker drops comment and empty lines inside a continuation
            segs.append(nxt)
            lmap.append(i + 1)
            cur = nxt
        if heredoc:
            delim = heredoc.group(1)
            while i + 1 < len(lines):
                i += 1
                segs.append(lines[i])
                lmap.append(i + 1)
                if lines[i].strip() == delim:
                    break
        out.append(_Instr(keyword, "\n".join(segs), lmap))
        i += 1
    return out


@record(frozen=False)
class _Stage:
    """One build stage: its base image, name, and the ARG / ENV / ENTRYPOINT / CMD it sets."""

    image: str
    name: str | None = None
    args: dict[str, EnvValue] = field(default_factory=dict)
    env: dict[str, EnvValue] = field(default_factory=dict)
    entrypoint: _Instr | None = None
    cmd: _Instr | None = None
    cmd_inherited: bool = False


def _exec_form(ins: _Instr, file: str) -> list[Word] | None:
    """Exec-form (JSON array) words with their lines, None for shell form."""
    joined = "\n".join(seg.rstrip()[:-1] if seg.rstrip().endswith("\\") else seg for seg in ins.text.split("\n"))
    if not joined.strip().startswith("["):
        return None
    try:
        arr = json.loads(joined)
    except json.JSONDecodeError as exc:
        line = ins.line_map[min(joined.count("\n", 0, exc.pos), len(ins.line_map) - 1)]
        raise ConfigError(
            f"{file}: line {line}: {ins.keyword} is not valid JSON ({exc.msg}); Docker would run it as a shell "
            f"string — use double quotes in exec form [\"vllm\", \"serve\", ...]"
        ) from None
    except (ValueError, RecursionError) as exc:  # an integer of more than 4,300 digits; nesting past the limit
        raise ConfigError(f"{file}: line {ins.line}: {ins.keyword} is not a JSON array quantadvise can read "
                          f"({str(exc).split(';')[0][:80] or 'nested too deeply'})") from None
    if not isinstance(arr, list) or not all(isinstance(a, str) for a in arr):
        raise ConfigError(f"{file}: line {ins.line}: {ins.keyword} exec form must be a JSON array of strings")
    words = []
    for m, value in zip(re.finditer(r'"(?:[^"\\]|\\.)*"', joined), arr, strict=False):
        line = ins.line_map[min(joined.count("\n", 0, m.start()), len(ins.line_map) - 1)]
        refs = tuple(dict.fromkeys(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", value)))
        words.append(Word(value, line, refs))
    return words


def _docker_kv(text: str) -> list[tuple[str, str]]:
    """``ENV a=1 b="x y"`` or legacy ``ENV a 1`` -> pairs (raw values, quotes kept for the lexer)."""
    body = text.replace("\\\n", " ").strip()
    if re.match(r"^[A-Za-z_][A-Za-z0-9_]*\s", body) and "=" not in body.split(None, 1)[0]:
        name, value = body.split(None, 1)
        return [(name, value.strip())]
    pairs = []
    for m in re.finditer(r"([A-Za-z_][A-Za-z0-9_]*)(?:=((?:\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^\s])*))?", body):
        pairs.append((m.group(1), m.group(2)))
    return pairs


def parse_dockerfile(text: str, file: str, *, asides: Asides | None = None,
                     options: OptionLists | None = None) -> list[EngineInvocation]:
    """The engine launch of a Dockerfile's final stage (its effective ENTRYPOINT + CMD). A final stage
    that runs an engine's server and leaves its arguments to run time (``ENTRYPOINT ["vllm", "serve"]``,
    or an engine image's own entrypoint with no CMD) goes to ``asides.server_images`` too."""
    with reading(file):
        return _parse_dockerfile(text, file, asides=asides, options=options)


def _parse_dockerfile(text: str, file: str, *, asides: Asides | None = None,
                      options: OptionLists | None = None) -> list[EngineInvocation]:
    instrs = _dockerfile_instructions(text, file)
    global_args: dict[str, EnvValue] = {}
    stages: list[_Stage] = []
    named: dict[str, _Stage] = {}  # the last stage of each name (FROM base AS name): no search per FROM
    versions: dict[str, str] = {}
    tick = current(file).tick
    for ins in instrs:
        tick(8)
        if ins.keyword == "FROM":
            parts = [p for p in ins.text.replace("\\\n", " ").split() if not p.startswith("--")]
            if not parts:
                raise ConfigError(f"{file}: line {ins.line}: FROM names no image")
            image_v = _expand_build(parts[0], {**global_args}, file, ins.line)
            image = image_v if isinstance(image_v, str) else parts[0]
            name = parts[2] if len(parts) >= 3 and parts[1].lower() == "as" else None
            parent = named.get(image)
            if parent is not None:
                st = _Stage(image=parent.image, name=name, env=dict(parent.env), entrypoint=parent.entrypoint,
                            cmd=parent.cmd, cmd_inherited=parent.cmd is not None)
            else:
                st = _Stage(image=image, name=name)
            stages.append(st)
            if name:
                named[name] = st
            continue
        if ins.keyword == "ARG":
            target = stages[-1].args if stages else global_args
            for name, value in _docker_kv(ins.text):
                if value is None and not stages and name in global_args:
                    continue
                if value is None and stages and name in global_args:
                    target[name] = global_args[name]  # re-declared global ARG: its default comes in
                    continue
                target[name] = None if value is None else _expand_build(value, {}, file, ins.line)
            continue
        if not stages:
            continue
        st = stages[-1]
        if ins.keyword == "ENV":
            for name, value in _docker_kv(ins.text):
                if value is None:
                    continue
                scope = {**{k: v for k, v in st.args.items() if v is not None}, **st.env}
                st.env[name] = _expand_build(value, scope, file, ins.line)
        elif ins.keyword == "ENTRYPOINT":
            st.entrypoint = ins
            if st.cmd_inherited:
                st.cmd, st.cmd_inherited = None, False
        elif ins.keyword == "CMD":
            st.cmd, st.cmd_inherited = ins, False
        elif ins.keyword == "RUN":
            versions.update(pip_versions(ins.text))
    if not stages:
        return []
    st = stages[-1]
    inv = _dockerfile_launch(st, file, options)
    if inv is not None:
        inv = with_version(inv, versions)
    if asides is not None:
        engine, entry_is_server, tag_version = parse_image(st.image)
        if inv is not None and inv.source == "dockerfile" and not (inv.raw or inv.other or inv.unresolved_env) \
                and not inv.argv[0].startswith("<"):
            asides.server_images.append(ServerImage(file, inv.line, inv.engine, inv.engine_version, list(inv.argv)))
        elif inv is None and engine is not None and entry_is_server and st.entrypoint is None and st.cmd is None:
            version = tag_version or versions.get(engine)
            line = next((i.line for i in reversed(instrs) if i.keyword == "FROM"), 1)
            asides.server_images.append(ServerImage(file, line, engine, version, []))
    return [inv] if inv is not None else []


def _expand_build(value: str, scope: Mapping[str, EnvValue], file: str, line: int) -> EnvValue:
    """Build-time substitution Docker applies to FROM/ENV/ARG values (quotes removed); an
    :class:`Unknown` when it refers to something unset."""
    w = expand_word(value, file, line, {k: v for k, v in scope.items() if v is not None})
    if w is None:
        return ""
    return Unknown(w.unresolved) if w.unresolved else w.text


def _dockerfile_launch(st: _Stage, file: str, options: OptionLists | None) -> EngineInvocation | None:
    engine, entry_is_server, tag_version = parse_image(st.image)
    build_only = {k for k in st.args if k not in st.env}
    ctx = LaunchContext(file=file, source="dockerfile", image=st.image if engine else None, engine_version=tag_version,
                        options=options)

    def shell(ins: _Instr, label: str, extra: list[str]) -> EngineInvocation | None:
        c = LaunchContext(**{**ctx.__dict__, "context": label, "warnings": list(extra)})
        for words in split_shell(ins.text, file, env=st.env, line_map=ins.line_map):
            inv = invocation_from_words(words, c)
            if inv is not None:
                return _arg_warnings(inv, build_only, file)
        return None

    def exec_words(words: list[Word], label: str, extra: list[str], implicit: Engine | None = None,
                   line: int | None = None) -> EngineInvocation | None:
        if len(words) >= 3 and words[0].text.rsplit("/", 1)[-1] in ("sh", "bash", "dash") and words[1].text == "-c":
            script = _Instr("CMD", words[2].text, [words[2].line])
            return shell(script, label, extra)
        c = LaunchContext(**{**ctx.__dict__, "context": label, "implicit": implicit, "line": line, "warnings": list(extra)})
        inv = invocation_from_words(words, c)
        if inv is None:
            return None
        refs = sorted({r for w in words for r in w.unresolved})
        if refs:
            inv = inv.model_copy(update={"warnings": [*inv.warnings, (
                f"{file}: line {inv.line}: exec-form {label} does not expand "
                + ", ".join(f"${r}" for r in refs)
                + " (no shell runs it); use shell form or [\"sh\", \"-c\", \"...\"]")]})
        return inv

    ep, cmd = st.entrypoint, st.cmd
    if ep is not None:
        ep_words = _exec_form(ep, file)
        if ep_words is None:
            return shell(ep, "ENTRYPOINT", [])
        cmd_words: list[Word] = []
        extra: list[str] = []
        if cmd is not None:
            cw = _exec_form(cmd, file)
            if cw is None:
                extra.append(f"{file}: line {cmd.line}: shell-form CMD is passed to the exec-form ENTRYPOINT as "
                             f"\"/bin/sh -c ...\" arguments; write CMD in exec form")
                cw = [Word("/bin/sh", cmd.line), Word("-c", cmd.line), Word(cmd.text, cmd.line)]
            cmd_words = cw
        return exec_words(ep_words + cmd_words, "ENTRYPOINT + CMD" if cmd_words else "ENTRYPOINT", extra)
    if cmd is None:
        return None  # no command of this file's own (an engine image's default has no flags to check)
    cw = _exec_form(cmd, file)
    implicit = engine if entry_is_server else None
    if cw is None:
        extra = []
        if implicit is not None:
            extra.append(f"{file}: line {cmd.line}: {st.image} runs the vLLM server as its ENTRYPOINT; a shell-form "
                         f"CMD is appended to it as \"/bin/sh -c ...\" arguments; reset ENTRYPOINT or give only the "
                         f"server's arguments in exec form")
        return shell(cmd, "CMD", extra)
    if implicit is not None and find_engine(cw) is not None:
        return exec_words(cw, "CMD", [f"{file}: line {cmd.line}: {st.image} already runs the server as its "
                                      f"ENTRYPOINT; this CMD repeats the command and is passed to it as arguments "
                                      f"(vllm: error: unrecognized arguments); reset ENTRYPOINT or drop the command"])
    return exec_words(cw, "CMD", [], implicit=implicit, line=cmd.line)


def _arg_warnings(inv: EngineInvocation, build_only: set[str], file: str) -> EngineInvocation:
    hit = [r for r in inv.unresolved_env if r in build_only]
    if not hit:
        return inv
    return inv.model_copy(update={"warnings": [*inv.warnings, (
        f"{file}: line {inv.line}: ARG {', '.join(hit)} is set only while building; the container starts without it "
        f"(copy it into ENV: ENV {hit[0]}=${{{hit[0]}}})")]})
