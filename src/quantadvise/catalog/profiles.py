"""Efficiency profiles (data/perf_profile.yaml, the measured data/profiles/<gpu>.yaml, user
``--profile`` files) and the accuracy priors (data/accuracy.yaml)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import ConfigError, DataError, format_validation_error, norm_name
from ..results import plain_numbers
from . import loader
from .trusted import shipped

if TYPE_CHECKING:
    from ..evals.priors import AccuracyRule
    from ..perf.profiles import PerfProfile


@cache
def default_perf_profile() -> PerfProfile:
    """The shipped efficiency profile, data/perf_profile.yaml."""
    from ..perf.profiles import PerfProfile

    return shipped(PerfProfile, loader.table("perf_profile.yaml"))


def deployment_doc(path: Path | str) -> dict[str, Any] | None:
    """The parsed document of a user profile file when it is a deployment profile (``kind: deployment``,
    written by ``calibrate --from-bench``), else None (an efficiency profile, a shipped name, no file)."""
    p = Path(path)
    if not p.is_file() or p.suffix.lower() not in (".yaml", ".yml"):
        return None
    doc = loader.load_yaml_file(p)
    return doc if isinstance(doc, dict) and doc.get("kind") == "deployment" else None


def load_site_profile(path: Path | str) -> Any:
    """A deployment profile file (``perf.loop.SiteProfile``); a ConfigError names the bad key."""
    from ..perf.loop import SiteProfile

    doc = deployment_doc(path)
    if doc is None:
        raise ConfigError(f"{path}: not a deployment profile (kind: deployment); `quantadvise calibrate --from-bench` "
                          "writes one", field="profile")
    try:
        return SiteProfile.model_validate(plain_numbers(SiteProfile, doc))
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, str(path)), field="profile") from None


def load_perf_profile(path: Path) -> PerfProfile:
    """A user ``--profile FILE`` (same format as data/perf_profile.yaml), or the name of a profile
    measured on a real GPU and shipped under data/profiles/ (``h200-2026-11-29``) when no such
    file exists."""
    from ..perf.profiles import parse_profile

    p = Path(path)
    if not p.exists() and p.parent == Path("."):
        shipped = shipped_profile_paths()
        key = norm_name(p.name.removesuffix(".yaml").removesuffix(".yml"))
        if key in shipped:
            return parse_profile(loader.load_yaml_file(shipped[key]), f"data/profiles/{shipped[key].name}")
    return parse_profile(loader.load_yaml_file(p), str(path))


@cache
def measured_profile(gpu_id: str) -> PerfProfile | None:
    """The measured kernel profile shipped for a bundled GPU (data/profiles/<gpu id>.yaml), or None."""
    path = loader.data_dir() / "profiles" / f"{gpu_id}.yaml"
    if not path.is_file():
        return None
    where = f"data/profiles/{path.name}"
    return shipped_profile(loader.data_yaml(path, where), where)


def shipped_profile(doc: Any, where: str) -> PerfProfile:
    """A shipped profile's document built without validating it again (``catalog.validate_all`` validates every
    one and holds the built profile to the validated one)."""
    from ..perf.profiles import PerfProfile, profile_document

    try:
        return shipped(PerfProfile, profile_document(doc, where))
    except ConfigError as exc:
        raise DataError(str(exc)) from None


def profile_heldout(gpu_id: str) -> Any:
    """The held-out measurements of a shipped measured profile (data/profiles/heldout/<gpu id>.yaml)."""
    path = loader.data_dir() / "profiles" / "heldout" / f"{gpu_id}.yaml"
    return loader.data_yaml(path, f"data/profiles/heldout/{path.name}") if path.is_file() else None


def shipped_profile_paths(root: Path | None = None) -> dict[str, Path]:
    """Profiles measured by ``quantadvise calibrate`` on real GPUs and shipped as data
    (data/profiles/*.yaml), by file stem."""
    folder = (root or loader.data_dir()) / "profiles"
    if not folder.is_dir():
        return {}
    return {norm_name(f.stem): f for f in sorted(folder.glob("*.yaml"))}


@cache
def accuracy_rules() -> tuple[AccuracyRule, ...]:
    """Published accuracy evidence the recommender applies as a veto (data/accuracy.yaml)."""
    from ..evals.priors import AccuracyRule

    doc = loader.table("accuracy.yaml")
    out = []
    for raw in doc.get("rules", []):
        try:
            out.append(shipped(AccuracyRule, raw))
        except ValidationError as exc:
            raise DataError(format_validation_error(exc, f"data/accuracy.yaml rule '{raw.get('id')}'")) from None
    return tuple(out)


