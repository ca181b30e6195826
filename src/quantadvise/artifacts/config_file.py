"""An engine launch's ``--config FILE``: the YAML whose top-level keys the release's launcher reads as options
(vLLM's FlexibleArgumentParser ``load_config_file``; SGLang's ``ConfigArgumentMerger``, from 0.5.3), turned
into the words it makes of them and merged into the launch under the command line's own options, each
located in the file (``EngineInvocation.flag_files``). The scan (I/O) finds and reads the file; this is pure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..engines.flags import ENGINES, Engine
from ..engines.invocation import EngineInvocation
from .launch import LaunchContext, OptionLists, _build, _options
from .shell import Word


def config_file_of(inv: EngineInvocation, lists: OptionLists | None) -> str | None:
    """The ``--config FILE`` whose YAML keys the release's launcher reads as options (vLLM's
    FlexibleArgumentParser, SGLang's ConfigArgumentMerger; the parser sidecar's ``config_file``), None when
    the command gives none or its release reads none."""
    opt = ENGINES[inv.engine].config_option
    value = inv.other.get(opt) if opt else None
    if not isinstance(value, str) or not value or "$" in value:
        return None
    vocab = _options(lists, inv.engine, inv.engine_version)
    if vocab is not None and vocab.launcher is not None and vocab.launcher.config_file is None:
        return None
    return value


def config_words(engine: Engine, entries: Sequence[tuple[str, Any, int]]) -> list[Word]:
    """The words a release's launcher makes of its ``--config`` YAML file's top-level keys, each on its key's
    line (vLLM: load_config_file in vllm/utils/argparse_utils.py; SGLang: _convert_config_to_args in
    sglang/srt/server_args_config_parser.py): ``true`` is ``--key``, ``false`` nothing, a list ``--key a b``,
    a mapping ``--key`` and its JSON (vLLM; SGLang writes Python's ``str`` of it), anything else ``--key
    value``."""
    out: list[Word] = []
    for key, value, line in entries:
        name = f"--{key}"
        if isinstance(value, bool):
            if value:
                out.append(Word(name, line))
        elif isinstance(value, list):
            if value:
                out += [Word(name, line), *(Word(str(v), line) for v in value)]
        elif isinstance(value, dict):
            out += [Word(name, line), Word(json.dumps(value) if ENGINES[engine].config_mapping_json else str(value),
                                           line)]
        else:
            out += [Word(name, line), Word(str(value), line)]
    return out


def with_config(inv: EngineInvocation, words: Sequence[Word], config_file: str,
                lists: OptionLists | None) -> EngineInvocation:
    """The launch with the options its ``--config`` file gives (``words``: :func:`config_words`): the launcher
    puts them before the command line's own, so a flag the command gives wins; each option read from the file
    is located in it (``flag_files``)."""
    ctx = LaunchContext(file=config_file, source=inv.source, options=lists)
    cfg = _build(inv.engine, list(words), False, ctx, line=inv.line, argv=[], image=inv.image,
                 version=inv.engine_version, launcher=inv.launcher)
    update: dict[str, Any] = {"other": dict(inv.other), "flag_lines": dict(inv.flag_lines), "raw": dict(inv.raw),
                              "flag_files": dict(inv.flag_files), "warnings": [*inv.warnings, *cfg.warnings]}
    for key, line in cfg.flag_lines.items():
        if key in inv.flag_lines:
            continue  # the command line gives it too, and wins
        update["flag_lines"][key] = line
        update["flag_files"][key] = config_file
        if key in cfg.other:
            update["other"][key] = cfg.other[key]
        elif key in EngineInvocation.model_fields:
            update[key] = getattr(cfg, key)
            if key in cfg.raw:
                update["raw"][key] = cfg.raw[key]
    return inv.model_copy(update=update)
