"""A serving stack's worker read as the engine launch it is: ``python -m dynamo.vllm`` / ``dynamo.sglang``
(``engines.launchers``). The launch readers (``artifacts.launch``) find the worker as its engine's launch and
keep every option they do not understand in ``other``; here the stack's own options move to
``stack_options`` (its parsers take them before the engine's parser runs, so they are known and are not the
engine's), the engine release comes from the stack's runtime image, and an option of the engine's server that
the worker's engine parser does not register is said to be refused. Pure: the caller passes the tables.
"""

from __future__ import annotations

from collections.abc import Callable

from ..engines.flags import STACK_MODULES, engine_label
from ..engines.invocation import EngineInvocation
from ..engines.launchers import StackLauncher, StackRelease
from ..engines.vocabulary import FlagVocabulary

# argparse's and the stack's options that print and exit (left in `other`: launch.not_a_deployment reads them)
_EXITS = frozenset({"-h", "--help", "--version"})

# (stack, version or None for the newest on file) -> the release's table (catalog.stack_release)
StackReleases = Callable[[str, str | None], StackRelease | None]
# (engine, release or None, exact) -> the release's option list (launch.OptionLists)
Vocabularies = Callable[[str, str | None, bool], FlagVocabulary | None]


def stack_module(inv: EngineInvocation) -> str | None:
    """The stack worker module a launch runs (``dynamo.vllm``), None for the engine's own server."""
    module = inv.launcher.removeprefix("python -m ") if inv.launcher and inv.launcher.startswith("python -m ") \
        else None
    return module if module in STACK_MODULES else None


def _image_release(image: str | None) -> tuple[str | None, str | None]:
    """(repository, tag) of an image reference."""
    if not image:
        return None, None
    ref = image.split("@", 1)[0]
    if ":" in ref.rsplit("/", 1)[-1]:
        repo, tag = ref.rsplit(":", 1)
        return repo, tag
    return ref, None


def with_stack(inv: EngineInvocation, releases: StackReleases, options: Vocabularies | None = None) -> EngineInvocation:
    """``inv`` as its stack's worker starts the engine (unchanged when it is not a stack's worker)."""
    module = stack_module(inv)
    if module is None:
        return inv
    stack = module.split(".", 1)[0]
    repo, tag = _image_release(inv.image)
    rel = releases(stack, tag.removeprefix("v")) if tag else None
    version = inv.engine_version
    if rel is not None and repo is not None and version is None:
        row = rel.image(repo)
        if row is not None and row.engine == inv.engine:
            version = row.engine_version  # the engine release this stack release pins (its runtime image's)
    rel = rel or releases(stack, None)
    launcher = rel.launcher(module) if rel is not None else None
    if launcher is None:
        return inv.model_copy(update={"engine_version": version})
    other: dict[str, str | bool] = {}
    own: dict[str, str | bool] = {}
    for name, value in inv.other.items():
        if name in launcher.registered and name not in _EXITS:
            own[name] = value
        else:
            other[name] = value
    warnings = list(inv.warnings)
    vocab = options(inv.engine, version, False) if options is not None else None
    if vocab is not None:
        warnings += _not_passed(inv, launcher, vocab, other)
    return inv.model_copy(update={"other": other, "stack_options": own, "engine_version": version,
                                  "warnings": warnings})


def _not_passed(inv: EngineInvocation, launcher: StackLauncher, vocab: FlagVocabulary,
                other: dict[str, str | bool]) -> list[str]:
    """An option of the engine's server that this worker's engine parser does not register (``--port`` for
    ``dynamo.vllm``, whose parser holds vLLM's engine arguments only): the engine's parser refuses it."""
    out = []
    for name in other:
        if not name.startswith("-") or name in _EXITS:
            continue
        hit = vocab.lookup(name, suggest=False)
        row = vocab.registered.get(hit.option) if hit.verdict == "known" and hit.option else None
        if row is not None and not launcher.passes_to_engine(row.source):
            line = inv.flag_lines.get(name, inv.line)
            out.append(f"{inv.file}: line {line}: {name} is a {engine_label(inv.engine)} {vocab.version} server option "
                       f"({row.source}) that `python -m {launcher.module}` does not take: its engine parser registers "
                       f"only {', '.join(launcher.engine_option_files)}'s options ({launcher.engine_parser}), so "
                       f"the engine would refuse it (unrecognized arguments: {name})")
    return out
