"""A preset regrouped to another group size (``--group``, or a model whose shapes the preset's group
does not divide): its description and deploy hints say the group it now has. Pure."""

from __future__ import annotations

import re

from .axes import DeployHints, Scheme


def regrouped(text: str, scheme: Scheme) -> str:
    """``text`` about a regrouped preset with the group it now has (``w4a16-g64`` is not "group 128")."""
    w = scheme.weight
    g = w.scale.group.reduction_group if w is not None and w.scale else None
    if not g:
        return text
    out = re.sub(r"group \d+", f"group {g}", text)
    out = re.sub(r"\bg\d+\b", f"g{g}", out)
    return out if out != text else f"{text} (regrouped to group {g} for this model)"


def regrouped_deploy(deploy: DeployHints, scheme: Scheme) -> DeployHints:
    """A regrouped preset's deploy hints: the named compressed-tensors / llm-compressor presets fix
    their own group (W4A16 is group 128), so they no longer name it (the plan writes the config
    groups out instead), and the alternative formats carry the new group."""
    return deploy.model_copy(update={
        "compressed_tensors_preset": None, "llmcompressor_scheme": None,
        "alternatives": tuple(regrouped(a, scheme) if re.search(r"\bg\d+\b|group \d+", a) else a
                              for a in deploy.alternatives)})


def regrouped_description(base: Scheme, s: Scheme) -> str:
    """The description of preset ``base`` after ``--group`` regrouped it into ``s``: the group the preset
    names is rewritten as ``recommend`` rewrites it; otherwise the new group is said after it."""
    old = base.weight.scale.group if base.weight is not None and base.weight.scale is not None else None
    new = s.weight.scale.group if s.weight is not None and s.weight.scale is not None else None
    if old is None or new is None or old == new:
        return base.description
    if old.is_per_group and new.is_per_group and f"group {old.reduction_group}" in base.description:
        return regrouped(base.description, s)
    return (f"{base.description}; weights regrouped by --group to "
            + (f"group {new.reduction_group}" if new.is_per_group else "per-channel scales"))
