"""YAML nodes as the manifest readers walk them (``yaml.compose`` output, which keeps each value's file
line): the kind of a node and a mapping's value by key. Pure; PyYAML itself is not imported here (the
node classes are recognised by name)."""

from __future__ import annotations

from typing import Any


def is_map(n: Any) -> bool:
    return type(n).__name__ == "MappingNode"


def is_seq(n: Any) -> bool:
    return type(n).__name__ == "SequenceNode"


def is_scalar(n: Any) -> bool:
    return type(n).__name__ == "ScalarNode"


def get(node: Any, key: str) -> Any:
    """A mapping node's value node under the scalar key ``key`` (None: not a mapping, or no such key)."""
    if not is_map(node):
        return None
    for k, v in node.value:
        if is_scalar(k) and k.value == key:
            return v
    return None


def scalar(node: Any) -> str | None:
    """A scalar node's text (None for anything else)."""
    return str(node.value) if node is not None and is_scalar(node) else None
