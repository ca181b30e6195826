"""Engine launches in YAML: Kubernetes manifests, Helm values, docker-compose files, and any other
YAML string that holds an engine command (a CI step's ``run: |`` block).

- Kubernetes manifests and Helm values: every container-like mapping's ``command`` / ``args`` (YAML
  lists, ``sh -c`` strings, ``$(VAR)`` from the container's ``env``), multi-document, with the GPUs
  its ``resources`` give it;
- docker-compose: each service's ``command`` / ``entrypoint`` (string or list) with compose
  interpolation (``${VAR:-default}``, ``$$``) from the ``.env`` beside the file.

Every word keeps its file line, folded and plain multi-line scalars included. Pure over text (the
YAML is composed to nodes, which carry the lines; PyYAML is imported on first use).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from ..engines.invocation import EngineInvocation, Source
from ..errors import ConfigError
from .budget import current, reading
from .kserve import is_llm_inference_service, parse_llm_inference_service
from .launch import (
    ENGINE_MARKER,
    Asides,
    ImageArgs,
    LaunchContext,
    OptionLists,
    find_engine,
    has_arguments,
    invocation_from_words,
    launch_position,
    parse_image,
    pip_versions,
    with_version,
)
from .nodes import get as _get
from .nodes import is_map as _is_map
from .nodes import is_scalar as _is_scalar
from .nodes import is_seq as _is_seq
from .production_stack import production_stack
from .shell import Word, split_shell


def yaml_nodes(text: str, file: str) -> list[Any]:
    import yaml

    from ..files import check_yaml_nodes, yaml_errors

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with yaml_errors(file):
        nodes = [n for n in yaml.compose_all(text, Loader=loader) if n is not None]
        check_yaml_nodes(nodes, file)
        _merge_keys(nodes, yaml.SafeLoader(""))
    return nodes


def _merge_keys(nodes: list[Any], loader: Any) -> None:
    """YAML merge keys (``<<: *base``, compose's ``x-`` anchors) applied at the node level, as a YAML load
    applies them (PyYAML's own ``flatten_mapping``): the merged keys join each mapping, its own keys win (the
    readers take a key's first value, so each key is kept once), and each keeps the line it is written on.
    Every node once (an anchor is shared), after ``check_yaml_nodes`` bounded their number."""
    seen: set[int] = set()
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if _is_map(n):
            if any(k.tag == "tag:yaml.org,2002:merge" for k, _ in n.value):
                loader.flatten_mapping(n)  # the merged pairs first, the mapping's own after them
                last = {k.value: i for i, (k, _) in enumerate(n.value) if _is_scalar(k)}
                n.value = [(k, v) for i, (k, v) in enumerate(n.value) if not _is_scalar(k) or last[k.value] == i]
            stack.extend(v for pair in n.value for v in pair)
        elif _is_seq(n):
            stack.extend(n.value)



def _scalar_lines(node: Any) -> list[int]:
    """File line of each physical line of a scalar's value (exact for | blocks, else its first line)."""
    start = node.start_mark.line + 1
    n = node.value.count("\n") + 1
    if node.style == "|":
        return [start + 1 + k for k in range(n)]
    return [start] * n


def _scalar_source(node: Any, src: Sequence[str] | None) -> tuple[str, list[int]]:
    """A string scalar as text to split, with the file line of each of its physical lines.

    Folded (``>``) and plain multi-line scalars lose their line breaks in the value; they are
    re-read from the source with each break turned into a shell line continuation, so every word
    keeps its own line."""
    start, end = node.start_mark, node.end_mark
    if src is not None and node.style in (">", None) and end.line > start.line:
        if node.style == ">":
            first = start.line + 1
            last = end.line + (1 if end.column > 0 else 0)
            rows = list(src[first:last])
        else:
            first = start.line
            rows = list(src[start.line:end.line + 1])
            rows[-1] = rows[-1][:end.column]
            rows[0] = rows[0][start.column:]
        while rows and not rows[-1].strip():
            rows.pop()
        if rows:
            return " \\\n".join(r.rstrip() for r in rows), [first + 1 + k for k in range(len(rows))]
    return node.value, _scalar_lines(node)


def _scalar_words(node: Any, file: str, env: Mapping[str, str] | None, *, expand: bool,
                  src: Sequence[str] | None = None) -> list[list[Word]]:
    text, lines = _scalar_source(node, src)
    return split_shell(text, file, env=env, line_map=lines, expand=expand)


def _k8s_expand(text: str, env: Mapping[str, str | None]) -> tuple[str, list[str]]:
    """Kubernetes ``$(VAR)`` substitution in command/args (``$$`` escapes; unknown stays as is)."""
    unres: list[str] = []

    budget = current()
    size = [0]

    def sub(m: re.Match[str]) -> str:
        if m.group(0).startswith("$$"):
            return m.group(0)[1:]
        name = m.group(1)
        v = env.get(name)
        if v is None or not budget.expand(m.group(0), size[0] + len(v)):
            unres.append(name)
            return m.group(0)
        size[0] += len(v)
        return v

    return re.sub(r"\$\$\([A-Za-z_][A-Za-z0-9_]*\)|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", sub, text), unres


def _image_of(node: Any) -> str | None:
    if node is None:
        return None
    if _is_scalar(node):
        return node.value or None
    if _is_map(node):
        repo = _get(node, "repository") or _get(node, "name")
        tag = _get(node, "tag")
        registry = _get(node, "registry")
        if repo is not None and _is_scalar(repo):
            ref = repo.value
            if registry is not None and _is_scalar(registry) and registry.value:
                ref = f"{registry.value}/{ref}"
            if tag is not None and _is_scalar(tag) and str(tag.value):
                ref = f"{ref}:{tag.value}"
            return ref
    return None


def _container_env(node: Any) -> dict[str, str | None]:
    env: dict[str, str | None] = {}
    e = _get(node, "env")
    if _is_seq(e):
        for item in e.value:
            name, value = _get(item, "name"), _get(item, "value")
            if name is not None and _is_scalar(name):
                env[name.value] = value.value if value is not None and _is_scalar(value) else None
    elif _is_map(e):  # Helm values often use a mapping
        for k, v in e.value:
            if _is_scalar(k):
                env[k.value] = v.value if _is_scalar(v) else None
    return env


def _env_lines(node: Any) -> dict[str, int]:
    """The names a container's ``env`` sets (a list of name/value items, or a mapping) -> their lines."""
    out: dict[str, int] = {}
    e = _get(node, "env") if _is_map(node) else None
    if e is None:
        return out
    if _is_seq(e):
        for item in e.value:
            name = _get(item, "name") if _is_map(item) else None
            if name is not None and _is_scalar(name):
                out[str(name.value)] = name.start_mark.line + 1
    elif _is_map(e):
        for k, _ in e.value:
            if _is_scalar(k):
                out[str(k.value)] = k.start_mark.line + 1
    return out


def _compose_env_lines(e: Any) -> dict[str, int]:
    """The names a compose service's ``environment`` sets (a mapping, or ``NAME=value`` items) -> their lines."""
    out: dict[str, int] = {}
    if _is_map(e):
        for k, _ in e.value:
            if _is_scalar(k):
                out[str(k.value)] = k.start_mark.line + 1
    elif _is_seq(e):
        for item in e.value:
            if _is_scalar(item) and isinstance(item.value, str):
                out[item.value.split("=", 1)[0]] = item.start_mark.line + 1
    return out


def _k8s_gpus(node: Any) -> tuple[str, int] | None:
    """``resources.limits`` (else ``requests``) ``<vendor>/gpu`` of a container."""
    res = _get(node, "resources")
    for section in ("limits", "requests"):
        m = _get(res, section)
        if not _is_map(m):
            continue
        for k, v in m.value:
            if _is_scalar(k) and str(k.value).endswith("/gpu") and _is_scalar(v):
                return str(v.value), v.start_mark.line + 1
    return None


def _compose_gpus(svc: Any) -> tuple[str, int] | None:
    """``deploy.resources.reservations.devices[]`` with the gpu capability: its ``count`` or ``device_ids``."""
    res = _get(_get(_get(svc, "deploy"), "resources"), "reservations")
    devices = _get(res, "devices")
    if not _is_seq(devices):
        return None
    for d in devices.value:
        caps = _get(d, "capabilities")
        if caps is not None and _is_seq(caps) and not any(_is_scalar(c) and c.value == "gpu" for c in caps.value):
            continue
        count, ids = _get(d, "count"), _get(d, "device_ids")
        if count is not None and _is_scalar(count):
            return str(count.value), count.start_mark.line + 1
        if ids is not None and _is_seq(ids):
            return str(len(ids.value)), ids.start_mark.line + 1
    return None


def _item_words(node: Any, file: str, used: set[int], expand: Callable[[str], tuple[str, list[str]]],
                what: str) -> list[Word]:
    """A YAML list of strings as words, one per item, each expanded (its unresolved names kept)."""
    words = []
    for item in node.value:
        used.add(id(item))
        if not _is_scalar(item):
            raise ConfigError(f"{file}: line {item.start_mark.line + 1}: {what} items must be strings")
        text, unres = expand(item.value)
        words.append(Word(text, item.start_mark.line + 1, tuple(unres)))
    return words


def _list_words(node: Any, file: str, env: Mapping[str, str | None], used: set[int],
                src: Sequence[str] | None = None) -> list[Word] | None:
    """``command`` / ``args`` as words: a YAML list (one word per item, ``$(VAR)`` expanded) or a
    string (split like a shell line)."""
    if node is None:
        return []
    used.add(id(node))
    if _is_seq(node):
        return _item_words(node, file, used, lambda text: _k8s_expand(text, env), "command/args")
    if _is_scalar(node):
        known = {k: v for k, v in env.items() if v is not None}
        cmds = _scalar_words(node, file, known, expand=True, src=src)
        return [w for c in cmds for w in c]
    return None


def _shell_wrapped(words: list[Word]) -> Word | None:
    """The script of ``sh -c SCRIPT`` / ``bash -lc SCRIPT``."""
    for k, w in enumerate(words[:-1]):
        if w.text.rsplit("/", 1)[-1] in ("sh", "bash", "dash", "zsh") and k + 1 < len(words):
            for j in range(k + 1, len(words) - 1):
                flag = words[j].text
                if not flag.startswith("-"):
                    break
                if "c" in flag[1:]:
                    return words[j + 1]
    return None


def _container_invocation(node: Any, file: str, source: Source, label: str | None, used: set[int],
                          src: Sequence[str] | None = None, fallback_image: str | None = None,
                          asides: Asides | None = None, options: OptionLists | None = None) -> EngineInvocation | None:
    env = _container_env(node)
    image = _image_of(_get(node, "image")) or fallback_image
    engine, entry, version = parse_image(image) if image else (None, False, None)
    cmd_node, args_node = _get(node, "command"), _get(node, "args")
    cmd = _list_words(cmd_node, file, env, used, src)
    args = _list_words(args_node, file, env, used, src)
    if cmd is None or args is None:
        return None
    words = cmd + args
    ctx = LaunchContext(file=file, source=source, context=label, image=image if engine else None, engine_version=version,
               gpus=_k8s_gpus(node), options=options, env=_env_lines(node), runs_image=image)
    script = _shell_wrapped(words)
    if script is not None:
        script_node = _script_source(script, cmd_node, args_node)
        lines = _scalar_lines(script_node) if script_node is not None else [script.line]
        known = {k: v for k, v in env.items() if v is not None}
        for c in split_shell(script.text, file, env=known, line_map=lines):
            inv = invocation_from_words(c, ctx)
            if inv is not None:
                return inv
        return None
    if not cmd and entry and engine is not None:
        ctx.implicit = engine
        ctx.line = args[0].line if args else None
        if not args:
            return None
    inv = invocation_from_words(words, ctx)
    if inv is None and not cmd and args and engine is None and image and asides is not None:
        # another image's entrypoint gets these arguments: an engine server built by this repository's Dockerfile?
        asides.image_args.append(ImageArgs(args, LaunchContext(**{**ctx.__dict__, "image": image})))
    return inv


def _script_source(script: Word, *nodes: Any) -> Any:
    for n in nodes:
        if n is not None and _is_seq(n):
            for item in n.value:
                if _is_scalar(item) and item.start_mark.line + 1 == script.line and item.value == script.text:
                    return item
    return None


def _walk(node: Any, path: str, visit: Any) -> None:
    visit(node, path)
    if _is_map(node):
        for k, v in node.value:
            key = str(getattr(k, "value", "?"))
            key = key if len(key) <= 60 else key[:57] + "..."  # a path per node: never a megabyte key in each
            _walk(v, f"{path}.{key}" if path else key, visit)
    elif _is_seq(node):
        for i, v in enumerate(node.value):
            _walk(v, f"{path}[{i}]", visit)


def _compose_interpolate(text: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """docker compose interpolation: ``$$``, ``$VAR``, ``${VAR}``, ``${VAR:-d}``, ``${VAR-d}``,
    ``${VAR:+a}``, ``${VAR:?e}``; an unknown variable stays visible (compose would use "")."""
    unres: list[str] = []
    budget = current()
    size = [0]

    def sub(m: re.Match[str]) -> str:
        whole = m.group(0)
        if whole == "$$":
            return "$"
        name = m.group("n1") or m.group("n2")
        op, word = m.group("op"), m.group("w") or ""
        value = env.get(name)
        if value is not None and not budget.expand(whole, size[0] + len(value)):
            unres.append(name)
            return whole
        size[0] += len(value or word)
        if op is None:
            if value is None:
                unres.append(name)
                return whole
            return value
        empty_counts = op.startswith(":")
        missing = value is None or (empty_counts and value == "")
        if op.endswith("-"):
            if missing:
                w, u = _compose_interpolate(word, env)
                unres.extend(u)
                return w
            return value  # type: ignore[return-value]
        if op.endswith("+"):
            return "" if missing else _compose_interpolate(word, env)[0]
        if missing:
            unres.append(name)
            return whole
        return value  # type: ignore[return-value]

    pattern = r"\$\$|\$\{(?P<n1>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-+?])(?P<w>[^}]*))?\}|\$(?P<n2>[A-Za-z_][A-Za-z0-9_]*)"
    return re.sub(pattern, sub, text), unres


def _compose_words(node: Any, file: str, env: Mapping[str, str], used: set[int],
                   src: Sequence[str] | None = None) -> list[Word]:
    if node is None:
        return []
    used.add(id(node))
    if _is_seq(node):
        return _item_words(node, file, used, lambda text: _compose_interpolate(text, env), "command")
    if _is_scalar(node):
        raw_text, lines = _scalar_source(node, src)
        text, unres = _compose_interpolate(raw_text, env)
        words = [w for c in split_shell(text, file, line_map=lines, expand=False) for w in c]
        return [Word(w.text, w.line, tuple(r for r in unres if r in w.text)) for w in words]
    raise ConfigError(f"{file}: line {node.start_mark.line + 1}: command must be a string or a list of strings")


def _parse_compose(root: Any, file: str, dotenv: Mapping[str, str], used: set[int],
                   src: Sequence[str] | None = None, asides: Asides | None = None,
                   options: OptionLists | None = None) -> list[EngineInvocation]:
    out = []
    services = _get(root, "services")
    for key, svc in services.value:
        if not _is_map(svc):
            continue
        label = f"service {key.value}"
        image_node = _get(svc, "image")
        image = _compose_interpolate(image_node.value, dotenv)[0] if image_node is not None and _is_scalar(
            image_node) else None
        engine, entry, version = parse_image(image) if image else (None, False, None)
        cenv: dict[str, str] = {}
        e = _get(svc, "environment")
        if _is_map(e):
            for k, v in e.value:
                if _is_scalar(v) and v.value is not None:
                    cenv[k.value] = _compose_interpolate(str(v.value), dotenv)[0]
        elif _is_seq(e):
            for item in e.value:
                if _is_scalar(item) and "=" in item.value:
                    k, _, v = item.value.partition("=")
                    cenv[k] = _compose_interpolate(v, dotenv)[0]
        ep = _compose_words(_get(svc, "entrypoint"), file, dotenv, used, src)
        cmd = _compose_words(_get(svc, "command"), file, dotenv, used, src)
        words = ep + cmd
        ctx = LaunchContext(file=file, source="compose", context=label, image=image if engine else None, runs_image=image,
                            engine_version=version, gpus=_compose_gpus(svc), options=options, env=_compose_env_lines(e))
        script = _shell_wrapped(words)
        inv = None
        if script is not None:
            node = _script_source(script, _get(svc, "entrypoint"), _get(svc, "command"))
            lines = _scalar_lines(node) if node is not None else [script.line]
            for c in split_shell(script.text, file, env=cenv, line_map=lines):
                inv = invocation_from_words(c, ctx)
                if inv is not None:
                    break
        else:
            if not ep and entry and engine is not None and cmd and find_engine(cmd) is None:
                ctx.implicit = engine
            inv = invocation_from_words(words, ctx) if words else None
            if inv is None and not ep and cmd and engine is None and image and asides is not None:
                asides.image_args.append(ImageArgs(cmd, LaunchContext(**{**ctx.__dict__, "image": image})))
        if inv is not None:
            out.append(inv)
    return out


_PROSE_KEY = re.compile(r"(?:^|\.)(?:description|help|summary|title|message|msg|notes?|comment|examples?|text)$")


def _yaml_source(file: str, root: Any) -> Source:
    name = PurePosixPath(file).name.lower()
    if re.match(r"values[\w.\-]*\.ya?ml$", name):
        return "helm-values"
    if _get(root, "apiVersion") is not None and _get(root, "kind") is not None:
        return "kubernetes"
    return "yaml"


def _doc_label(root: Any) -> str | None:
    kind, meta = _get(root, "kind"), _get(root, "metadata")
    name = _get(meta, "name") if meta is not None else None
    if kind is not None and _is_scalar(kind):
        return f"{kind.value}/{name.value}" if name is not None and _is_scalar(name) else kind.value
    return None


def _engine_image(root: Any) -> str | None:
    """The first engine image named anywhere in a values document (``image: {repository, tag}`` at the
    top while the container ``args:`` sit elsewhere, as Helm charts lay them out)."""
    found: list[str] = []

    def look(node: Any, path: str) -> None:
        if found or not _is_map(node):
            return
        ref = _image_of(_get(node, "image"))
        if ref is None and _get(node, "repository") is not None:
            ref = _image_of(node)
        if ref is not None and parse_image(ref)[0] is not None:
            found.append(ref)

    _walk(root, "", look)
    return found[0] if found else None


def parse_yaml(text: str, file: str, *, dotenv: Mapping[str, str] | None = None,
               asides: Asides | None = None, options: OptionLists | None = None) -> list[EngineInvocation]:
    """Engine launches in a Kubernetes manifest, Helm values file, compose file or other YAML.

    A one-line string value that is only a launcher, with no argument (``prog: python -m
    sglang.launch_server`` in a data file), names the server; it is not a launch (``asides.skipped``).
    A container that passes arguments to an image no reader knows goes to ``asides.image_args``."""
    with reading(file):
        return _parse_yaml(text, file, dotenv=dotenv, asides=asides, options=options)


def _parse_yaml(text: str, file: str, *, dotenv: Mapping[str, str] | None = None,
                asides: Asides | None = None, options: OptionLists | None = None) -> list[EngineInvocation]:
    out: list[EngineInvocation] = []
    src = text.splitlines()
    budget = current(file)
    for root in yaml_nodes(text, file):
        used: set[int] = set()
        services = _get(root, "services")
        if services is not None and _is_map(services) and _get(root, "apiVersion") is None:
            out.extend(_parse_compose(root, file, dotenv or {}, used, src, asides, options))
            continue
        if _get(root, "servingEngineSpec") is not None:
            out.extend(production_stack(root, file, options))
            continue
        if is_llm_inference_service(root):  # KServe: the servers its controller starts (artifacts/kserve.py)
            out.extend(parse_llm_inference_service(root, file, options))
            continue
        source = _yaml_source(file, root)
        doc = _doc_label(root)
        values_image = _engine_image(root) if source == "helm-values" else None

        def visit(node: Any, path: str, source: Source = source, doc: str | None = doc,
                  used: set[int] = used, values_image: str | None = values_image) -> None:
            budget.tick()
            if not _is_map(node) or id(node) in used:
                return
            if _get(node, "command") is None and _get(node, "args") is None:
                return
            used.add(id(node))  # one container, however many aliases reach it
            name = _get(node, "name")
            label = " ".join(x for x in (doc, f"container {name.value}" if name is not None and _is_scalar(name)
                                         else (path or None)) if x)
            inv = _container_invocation(node, file, source, label or None, used, src, fallback_image=values_image,
                                        asides=asides, options=options)
            if inv is not None:
                out.append(inv)

        _walk(root, "", visit)

        seen: set[int] = set()  # a scalar reached again through an alias: searched once

        def scan_strings(node: Any, path: str, source: Source = source, used: set[int] = used,
                         seen: set[int] = seen) -> None:
            budget.tick()
            if not _is_scalar(node) or id(node) in used or id(node) in seen or not isinstance(node.value, str):
                return
            seen.add(id(node))
            if not ENGINE_MARKER.search(node.value) or _PROSE_KEY.search(path):
                return
            ctx = LaunchContext(file=file, source=source, context=path or None, options=options)
            one_line = "\n" not in node.value.strip()
            for c in _scalar_words(node, file, None, expand=True, src=src):
                if not launch_position(c):
                    continue  # "... pass these to vllm serve ..." in some text, not a command
                inv = invocation_from_words(c, ctx)
                if inv is not None and one_line and not has_arguments(inv):
                    if asides is not None:  # `prog: python -m sglang.launch_server`: a name, not a launch
                        asides.skipped.append(f"{file}: line {inv.line}: {path} is the launcher's name only "
                                              f"(`{inv.launcher or inv.engine}`, no model, no argument): not a launch")
                    continue
                if inv is not None:
                    out.append(with_version(inv, pip_versions(node.value)))  # a pin in the same step first

        _walk(root, "", scan_strings)
    versions = pip_versions(text)  # `pip install vllm==0.9.2` in another step, or a container's shell command
    return [with_version(i, versions) for i in out]

