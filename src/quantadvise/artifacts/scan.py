"""Which files a deployment is read from, and the reader each one gets.

:func:`read_paths` walks the named files and directories (the only function in this package that
reads files), :func:`classify` picks each file's reader, :func:`parse_text` runs it. A file that
cannot be parsed is a :class:`~quantadvise.errors.ConfigError` naming the file and line when it was
named explicitly or mentions an engine; otherwise (an unrelated script in a scanned folder) it is
skipped with a warning.

The walk of a folder (:class:`~.walk.Walk`) is bounded: it passes over folders that hold no deployment
(.git, node_modules, virtual environments, __pycache__, a test suite's fixtures — tests/fixtures,
testdata — unless named, /proc and other virtual file systems), does
not follow symbolic links or read special files, lists what it cannot read instead of failing, and
stops after :data:`~.walk.MAX_WALK_FILES` files (or its entries, bytes or seconds) with one warning.
A file found by the walk that spells no engine (``vllm``, ``sglang``) is read but not parsed: it holds
no launch. Each file's readers draw on its :class:`~.budget.Budget` (expansion, words, seconds).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Literal

from .. import defaults
from ..engines.flags import ENGINES
from ..engines.invocation import DeploymentScan, EngineInvocation
from ..errors import ConfigError, InputError
from ..files import exists, not_regular, read_text, special
from ..results import record
from ..wording import plural
from .budget import TimeUp, reading
from .config_file import config_file_of, config_words, with_config
from .dockerfile import parse_dockerfile
from .launch import (
    ENGINE_MARKER,
    Asides,
    ImageArgs,
    LaunchContext,
    OptionLists,
    has_arguments,
    invocation_from_words,
    not_a_deployment,
    parse_shell,
)
from .manifests import parse_yaml, yaml_nodes
from .programs import parse_makefile, parse_python
from .shell import Word
from .walk import MAX_WALK_FILES, Walk, is_virtual  # noqa: F401 - the walk's names, as the package has had them

FileKind = Literal["shell", "dockerfile", "yaml", "makefile", "python"]
MAX_FILE_BYTES = 2_000_000
MAX_SNIFF_BYTES = 200_000  # an extension-less or unknown file is read for a shebang / an engine mention up to this


def classify(path: str | Path, head: str = "") -> FileKind | None:
    """Which parser reads a file, from its name (and first line for extension-less scripts)."""
    name = Path(path).name
    low = name.lower()
    if is_dockerfile_name(low):  # Dockerfile, app.dockerfile: certain
        return "dockerfile"
    if low.endswith((".yaml", ".yml")):  # the extension wins over a name that starts like a Dockerfile's
        return "yaml"
    if low.endswith((".sh", ".bash", ".zsh", ".ksh")):
        return "shell"
    if low in ("makefile", "gnumakefile") or low.endswith(".mk"):
        return "makefile"
    if low.endswith(".py"):
        return "python"
    if low.startswith(("dockerfile", "containerfile")):  # Dockerfile.cuda, dockerfile-old: a guess by name
        return "dockerfile"
    first = head.splitlines()[0] if head else ""
    if first.startswith("#!") and re.search(r"\b(ba|da|k|z)?sh\b", first):
        return "shell"
    if first.startswith("#!") and re.search(r"\bpython[\d.]*\b", first):
        return "python"
    return None


def is_dockerfile_name(name: str) -> bool:
    """A name only a Dockerfile has (``Dockerfile``, ``Containerfile``, ``*.dockerfile``); a name that
    merely starts with one (``Dockerfile.cuda``) is a guess, and a guess that does not parse is skipped."""
    low = name.lower()
    return low in ("dockerfile", "containerfile") or low.endswith((".dockerfile", ".containerfile"))


def parse_text(text: str, file: str, kind: FileKind, *, env: Mapping[str, str] | None = None,
               dotenv: Mapping[str, str] | None = None, asides: Asides | None = None,
               options: OptionLists | None = None) -> list[EngineInvocation]:
    """The launches in one file's text; ``asides`` collects what the readers notice besides them;
    ``options`` gives each release's option list (how the engine's parser reads a spelling). The
    readers draw on one :class:`~quantadvise.artifacts.budget.Budget` for the file (what it left unexpanded
    or unread goes to ``asides.warnings``); past its seconds, :class:`~quantadvise.artifacts.budget.TimeUp`."""
    with reading(file) as budget:
        found = _parse_text(text, file, kind, env=env, dotenv=dotenv, asides=asides, options=options)
    if asides is not None:
        asides.warnings.extend(budget.warnings)
    return found


def _parse_text(text: str, file: str, kind: FileKind, *, env: Mapping[str, str] | None = None,
                dotenv: Mapping[str, str] | None = None, asides: Asides | None = None,
                options: OptionLists | None = None) -> list[EngineInvocation]:
    if kind == "shell":
        return parse_shell(text, file, env=env, options=options)
    if kind == "dockerfile":
        return parse_dockerfile(text, file, asides=asides, options=options)
    if kind == "makefile":
        return parse_makefile(text, file, env=env, options=options)
    if kind == "python":
        return parse_python(text, file, options=options)
    return parse_yaml(text, file, dotenv=dotenv, asides=asides, options=options)


_HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")


def join_images(invocations: list[EngineInvocation], asides: Asides) -> tuple[list[EngineInvocation], list[str]]:
    """A launch split between this repository's Dockerfile and a manifest: the Dockerfile builds an
    image whose entrypoint is an engine's server and leaves the model to run time
    (``ENTRYPOINT ["vllm", "serve"]``, or ``FROM vllm/vllm-openai`` kept as it is); a Kubernetes /
    compose / Helm container runs an image no reader knows, passing arguments that name a model the
    way that server takes it. With exactly one such Dockerfile in the scan, each such container is
    checked as that server with those arguments (at the manifest's lines, on the Dockerfile's engine
    release), in place of the Dockerfile's own launch with no model. Two or more such Dockerfiles:
    which image a container runs is not known here, and nothing is joined. Returns the launches and
    a note for each joined one."""
    if len(asides.server_images) != 1 or not asides.image_args:
        _unjoined(asides.image_args, asides)
        return invocations, []
    srv = asides.server_images[0]
    joined, notes, left = [], [], []
    for ia in asides.image_args:
        line = ia.words[0].line
        ctx = LaunchContext(**{**ia.ctx.__dict__, "engine_version": srv.version,
                               "implicit": None if srv.launcher else srv.engine, "line": line})
        inv = invocation_from_words([Word(t, line) for t in srv.launcher] + ia.words, ctx)
        if inv is None or inv.engine != srv.engine or "model" not in inv.raw:
            left.append(ia)
            continue
        model = inv.raw["model"]
        # the arguments are this server's: a Hub id or a run-time value as its model, or another of its flags
        if _HUB_ID.fullmatch(model) or "$" in model or len(inv.raw) > 1:
            joined.append(inv.model_copy(update={"image": ia.ctx.image, "engine_version": srv.version}))
            runs = f"`{' '.join(srv.launcher)}`" if srv.launcher else f"{ENGINES[srv.engine].label}'s server"
            notes.append(f"{inv.file}:{inv.line} runs {ia.ctx.image}, the image {srv.file}:{srv.line} builds to run "
                         f"{runs}: checked as that server with the container's arguments")
        else:
            left.append(ia)
    _unjoined(left, asides)
    if not joined:
        return invocations, []
    own = [i for i in invocations if i.file == srv.file and i.source == "dockerfile" and not has_arguments(i)]
    return [i for i in invocations if i not in own] + joined, notes


# engine options no other server spells: a container passing one to an unknown image is likely an engine
_ENGINE_ONLY = ("--max-model-len", "--max-num-seqs", "--gpu-memory-utilization", "--kv-cache-dtype",
                "--tensor-parallel-size", "--max-num-batched-tokens", "--model-path", "--context-length",
                "--mem-fraction-static", "--max-running-requests", "--tp-size")


def _unjoined(left: Sequence[ImageArgs], asides: Asides) -> None:
    """Containers passing engine options to an image no reader knows and no Dockerfile here builds:
    listed under ``check -v`` (they are not checked)."""
    for ia in left:
        spelled = next((w.text.split("=", 1)[0] for w in ia.words if w.text.split("=", 1)[0] in _ENGINE_ONLY), None)
        if spelled is not None:
            what = f" ({ia.ctx.context})" if ia.ctx.context else ""
            asides.skipped.append(
                f"{ia.ctx.file}: line {ia.words[0].line}: a container{what} passes {spelled} to {ia.ctx.image}, an "
                "image no reader knows as an engine's and no Dockerfile in the scan builds as one (one Dockerfile "
                "with ENTRYPOINT [\"vllm\", \"serve\"] or FROM vllm/vllm-openai): not checked")


def parse_dotenv(text: str) -> dict[str, str]:
    """A compose ``.env`` file: KEY=VALUE lines, ``#`` comments, optional quotes and ``export``."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].strip()
        out[key.strip()] = value
    return out


def _spells_engine(text: str) -> bool:
    """Whether the text spells an engine's name (``vllm``, ``sglang``): every launch the readers find
    does, in a command, a module, an image (parse_image) or a chart key. Substring tests: fast on
    megabytes, where the launch patterns are not."""
    return any(e in text for e in defaults.ENGINES)


_SERVE = re.compile(r"serve\b")  # a literal first: re's fast prefix search (a leading \b would defeat it)


def _serve_word(text: str) -> bool:
    """``serve`` as a word (not ``server``, ``observe``)."""
    return any(m.start() == 0 or not (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_")
               for m in _SERVE.finditer(text))


_MARK_MODULE = re.compile(r"-m\s*(?:vllm\.entrypoints\.|sglang|dynamo\.)")  # a literal prefix (ENGINE_MARKER has none)


def _engine_marker(text: str) -> bool:
    """``ENGINE_MARKER.search(text)``, run only around each ``serve`` (as a word) and each ``-m MODULE``
    of an engine (every match holds one; up to 250 characters of space between ``vllm`` and ``serve``):
    the pattern has no literal prefix, so a whole large file is slow to search."""
    n = len(text)
    for m in _SERVE.finditer(text):
        if ENGINE_MARKER.search(text, max(0, m.start() - 256), min(n, m.end() + 1)):
            return True
    for m in _MARK_MODULE.finditer(text):
        end = m.end()
        while end < n and (text[end].isalnum() or text[end] in "._"):
            end += 1  # the whole module name: never end a window inside a word (its closing \b would match)
        if ENGINE_MARKER.search(text, max(0, m.start() - 1), min(n, end + 1)):
            return True
    return False


# the calls parse_python reads a launch from (programs._ARGV_CALLS, _EXEC_ARGV, _EXEC_VARARGS)
_PY_CALL = re.compile(r"(?:run|call|check_output|Popen|exec[lv]\w*|spawn[lv]\w*|subprocess_exec)\s*\(")  # (or more: a superset)


def _may_launch(text: str, kind: FileKind, env: Mapping[str, str]) -> bool:
    """Whether a file found by the walk can hold a launch, and so is worth parsing: it spells an engine,
    or a variable it uses may (the environment or a compose ``.env`` names one); the vLLM production-stack
    chart's values say ``servingEngineSpec``; a manifest may pass engine options (``--max-model-len``) to
    the image a Dockerfile here builds (:func:`join_images`). Every other file is read and holds none. A
    Python file (parsed with ``ast``, the costly reader) must also spell what starts a server — ``serve``
    (``vllm serve``, ``sglang serve``), a server module, or ``docker`` (``docker run`` an engine image) — and
    one of the calls that run it, as every launch ``parse_python`` finds does: an engine's own source tree
    is not parsed."""
    if kind == "python":
        if _relevant(text):  # it mentions a launch: parsed (if it does not parse, Python 2, that is said)
            return True
        starts = "vllm.entrypoints" in text or "launch_server" in text or (
            _spells_engine(text) and ("docker" in text or _serve_word(text)))
        return starts and _PY_CALL.search(text) is not None
    if _spells_engine(text):
        return True
    if kind == "yaml" and ("servingEngineSpec" in text or any(f in text for f in _ENGINE_ONLY)):
        return True  # the production-stack chart; a container passing engine options to this repository's image
    return kind in ("shell", "makefile", "yaml") and "$" in text and any(_spells_engine(v) for v in env.values())


_LAUNCH_WORDS = ("vllm-openai", "lmsysorg/sglang", "sglang.launch_server", "vllm.entrypoints.", "dynamo.vllm",
                 "dynamo.sglang")
_QUOTED_SERVE = re.compile(r"[\"']vllm[\"']\s*,\s*[\"']serve[\"']")


def _relevant(text: str) -> bool:
    """Whether a file mentions an engine launch or an engine image (its parse errors then matter).
    Substring tests first: the patterns are slow on large files that cannot match."""
    if not _spells_engine(text):
        return False
    if any(w in text for w in _LAUNCH_WORDS):
        return True
    if _engine_marker(text):
        return True
    return "serve" in text and _QUOTED_SERVE.search(text) is not None


def _parses(text: str, file: str) -> bool:
    try:
        yaml_nodes(text, file)
    except ConfigError:
        return False
    return True


def _unreadable(f: Path, kind: FileKind, exc: ConfigError, guessed: bool) -> str:
    """``FILE: why`` for a candidate that did not parse and is skipped."""
    why = str(exc).removeprefix(f"{f}: ").removeprefix(f"{f}:").strip()
    if guessed:
        return f"{f}: named like a Dockerfile, but not one ({why})"
    if kind == "python":
        return f"{f}: {why}; a launch in it is not read (a Python 2 script?)"
    return f"{f}: could not be parsed as {'a ' + kind if kind != 'yaml' else 'YAML'} ({why})"


def _sniff(f: Path, size: int) -> str | None:
    """A small text file's text (None: too large, binary or unreadable: not a candidate)."""
    if size > MAX_SNIFF_BYTES:
        return None
    try:
        return f.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _read_config_file(inv: EngineInvocation, roots: Sequence[str], options: OptionLists | None) -> EngineInvocation:
    """The launch with the options of the ``--config`` YAML file it names, where the release reads one and the
    file is in the repository (beside the command's file, else under a scanned folder): its top-level keys
    are checked like command-line options, each at its own line; otherwise a warning says they are not read.
    The file is read as a named deployment file is: at most :data:`MAX_FILE_BYTES`, never a FIFO, a device
    or a kernel file, its aliases bounded, its keys under its own :class:`~.budget.Budget`."""
    name = config_file_of(inv, options)
    if name is None:
        return inv
    line = inv.flag_lines.get("--config", inv.line)
    absolute = Path(name).is_absolute()
    candidates = [Path(inv.file).parent / name, *(Path(r) / name for r in roots if Path(r).is_dir())]
    found = None if absolute else next((c for c in candidates if exists(c) and not c.is_dir()), None)

    def warn(why: str) -> EngineInvocation:
        return inv.model_copy(update={"warnings": [*inv.warnings, f"{inv.file}: line {line}: {why}"]})

    if found is None:
        why = "a path in the container, not in the repository" if absolute else \
            "not found beside the command or under the scanned folders"
        return warn(f"the options in --config {name} are not checked ({why}); scan the folder that holds it")
    try:
        text = read_text(found, MAX_FILE_BYTES)  # a FIFO, a device, 3 MB: said, not opened or not read
    except ConfigError as exc:
        return warn(f"the options in --config {name} are not checked: {exc}")
    try:
        with reading(str(found)) as budget:
            nodes = yaml_nodes(text, str(found))  # an alias bomb or 5,000 nesting levels: a ConfigError
            root = nodes[0] if nodes else None
            if root is None or not hasattr(root, "value") or not isinstance(root.value, list) or root.tag != \
                    "tag:yaml.org,2002:map":
                return warn(f"--config {name} does not hold a mapping of options: the engine would refuse it")
            import yaml

            from ..files import yaml_errors

            entries = []
            with yaml_errors(str(found)):  # a 5,000-digit number, a date that is none: one line
                for key, value in root.value:
                    budget.tick()
                    loader = yaml.SafeLoader("")
                    entries.append((str(key.value), loader.construct_object(value, deep=True),
                                    key.start_mark.line + 1))
            return with_config(inv, config_words(inv.engine, entries), str(found), options)
    except TimeUp as exc:
        return warn(f"the options in --config {name} are not checked: {exc}")
    except ConfigError as exc:
        return warn(f"--config {name}: {exc}; the engine would refuse it")


MAX_SCAN_LAUNCHES = 64  # engine launches one scan checks (each is judged on its own, ~30 ms; a repository has a few)


@record(frozen=False)
class _Scan:
    """What one scan has found so far."""

    env: Mapping[str, str] | None
    options: OptionLists | None
    walk: Walk = field(default_factory=Walk)
    asides: Asides = field(default_factory=Asides)
    invocations: list[EngineInvocation] = field(default_factory=list)
    scanned: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    templates: list[Path] = field(default_factory=list)
    dropped: int = 0  # launches past MAX_SCAN_LAUNCHES

    def template(self, f: Path) -> None:
        self.templates.append(f)
        self.skipped.append(f"{f}: a Helm template (not rendered): scan the output of `helm template`")


def read_paths(paths: Sequence[str | Path], *, env: Mapping[str, str] | None = None,
               options: OptionLists | None = None) -> DeploymentScan:
    """Scan files and directories for engine launches (the only function here that reads files).

    A named file is parsed whatever its name (shell unless it looks like a Dockerfile, YAML, a
    Makefile or Python); a directory contributes its scripts (by extension or shebang),
    Dockerfiles, YAML files (``.github/workflows`` included), Makefiles and Python files. Helm
    chart templates (Go templates, not YAML until rendered) are skipped with a warning; every
    candidate file no reader took is listed in ``files_skipped``. A named FIFO, device or socket is
    refused (reading one blocks); the walk of a folder is bounded (:class:`~.walk.Walk`); each file's
    readers by its :class:`~.budget.Budget`; at most :data:`MAX_SCAN_LAUNCHES` launches are kept.
    """
    if not paths:
        raise InputError("no deployment paths given", field="paths")
    st = _Scan(env, options)
    roots = list(dict.fromkeys(str(p) for p in paths))  # each spelling once (a path given 50,000 times)
    seen: set[str] = set()
    for given in paths:
        root = Path(given)
        key = os.path.realpath(root) if exists(root) else str(root)
        if key in seen:  # the same file or folder named twice (or 50,000 times): read once
            continue
        seen.add(key)
        what = special(root)
        if what is not None:  # a FIFO would block the read, /dev/zero never end it
            raise InputError(not_regular(root, what, "a deployment file or folder"), field="paths")
        if not exists(root):
            raise InputError(f"no such file or directory: {str(root)[:200]}", field="paths")
        explicit = root.is_file()
        for f in [root] if explicit else st.walk.files(root):
            got = _candidate(f, explicit, st)
            if got is not None:
                _parse_file(f, *got, explicit, st)
    invocations, notes = join_images(st.invocations, st.asides)
    invocations = [_read_config_file(inv, roots, options) for inv in invocations]
    warnings, walk = st.warnings, st.walk
    if st.dropped:
        warnings.append(f"the scan found more than {MAX_SCAN_LAUNCHES} engine launches: {st.dropped:,} more are not "
                        "checked; name the deployment files or folders to check them")
    if walk.cut is not None:
        warnings.append(f"the scan stopped after {walk.why} (in {walk.cut}): name the deployment files or folders "
                        "(`quantadvise check deploy/ Dockerfile`), or list them under deployment: in quantadvise.yaml")
    if st.templates:
        dirs = sorted({str(t.parent) for t in st.templates})
        warnings.append(f"skipped {plural(len(st.templates), 'Helm template')} (not rendered) in {', '.join(dirs)}: "
                        f"scan the chart's values.yaml or the output of `helm template`")
    warnings.extend(st.asides.warnings)
    for inv in invocations:
        warnings.extend(inv.warnings)
    skipped = [*st.skipped, *st.asides.skipped, *walk.skipped]
    return DeploymentScan(paths=roots, files_scanned=st.scanned, invocations=invocations,
                          warnings=list(dict.fromkeys(warnings)), files_skipped=list(dict.fromkeys(skipped)),
                          stopped=walk.cut, notes=notes)


def _candidate(f: Path, explicit: bool, st: _Scan) -> tuple[str, FileKind, dict[str, str]] | None:
    """A file's text, reader and compose ``.env`` when it is worth parsing; None (said in ``st``) when not."""
    skipped = st.skipped
    try:
        size = f.stat().st_size
    except OSError as exc:
        if explicit:
            raise ConfigError(f"cannot read {f}: {exc.strerror or exc}") from None
        skipped.append(f"{f}: cannot be read ({exc.strerror or exc})")
        return None
    if size > MAX_FILE_BYTES:
        if explicit:
            raise InputError(f"{f}: {size:,} bytes is too large for a deployment file", field="paths")
        skipped.append(f"{f}: {size:,} bytes, larger than a deployment file ({MAX_FILE_BYTES:,})")
        return None
    if not st.walk.read(f, size):  # the scan's bytes and seconds, named files too
        if explicit:  # named, so said by name (the walk's warning says why)
            skipped.append(f"{f}: not read, the scan stopped after {st.walk.why}")
        return None
    kind = classify(f)
    if kind is None:
        text = read_text(f) if explicit else _sniff(f, size)
        if text is None:
            return None
        kind = classify(f, text[:200]) or ("shell" if explicit else None)
        if kind is None:
            if _relevant(text):
                skipped.append(f"{f}: mentions an engine launch, but no reader takes this kind of file (shell, "
                               "Dockerfile, YAML, Makefile, Python); name it explicitly to read it as a shell script")
            return None
    elif explicit:
        text = read_text(f)
    else:
        try:
            text = read_text(f)
        except ConfigError as exc:  # unreadable or not UTF-8: not a deployment file of this repository
            skipped.append(f"{f}: {str(exc).removeprefix(f'{f}: ').removeprefix('cannot read ')}")
            return None
    if kind == "yaml" and "{{" in text and ("templates" in f.parts or not _parses(text, str(f))):
        st.template(f)
        return None
    dotenv: dict[str, str] = {}
    if kind == "yaml":
        envfile = f.parent / ".env"
        if envfile.is_file():
            try:
                dotenv = parse_dotenv(read_text(envfile, MAX_FILE_BYTES))
            except ConfigError:  # unreadable or not UTF-8: its values are not used
                if explicit:
                    raise
                skipped.append(f"{envfile}: cannot be read as a compose .env file")
        dotenv = {**dotenv, **(st.env or {})}
    if not explicit and not _may_launch(text, kind, {**(st.env or {}), **dotenv}):
        st.scanned.append(str(f))  # read: it spells no engine, so it holds no launch to parse
        return None
    return text, kind, dotenv


def _parse_file(f: Path, text: str, kind: FileKind, dotenv: dict[str, str], explicit: bool, st: _Scan) -> None:
    """Parse one candidate into ``st``: its launches, or why it was skipped."""
    try:
        found = parse_text(text, str(f), kind, env=st.env, dotenv=dotenv, asides=st.asides, options=st.options)
    except TimeUp as exc:  # a file built to stall a parser: said, and the scan goes on
        if explicit:
            raise
        st.skipped.append(str(exc))
        st.warnings.append(f"skipped {exc}")
        return
    except ConfigError as exc:
        if kind == "yaml" and "{{" in text:  # YAML, but its values are Go template actions
            st.template(f)
            return
        guessed = kind == "dockerfile" and not is_dockerfile_name(f.name)
        if not guessed and (explicit or (_relevant(text) and kind != "python")):
            raise  # a deployment file that does not parse: the gate cannot check it
        why = _unreadable(f, kind, exc, guessed)
        st.skipped.append(why)
        if explicit or (_relevant(text) and not guessed):  # it may hold a launch: said without -v too
            st.warnings.append(f"skipped {why}")
        return
    st.scanned.append(str(f))
    for inv in found:
        not_one = not_a_deployment(inv)
        if not_one is not None:  # `vllm serve --help`: said with -v
            st.skipped.append(f"{f}: line {inv.line}: {not_one}")
        elif len(st.invocations) < MAX_SCAN_LAUNCHES:
            st.invocations.append(inv)
        else:
            st.dropped += 1
    if not found and _relevant(text) and not any(a.startswith(f"{f}: ") for a in st.asides.skipped):
        st.skipped.append(f"{f}: mentions an engine, but no launch was found in it (prose, or a command built at "
                          "run time)")
