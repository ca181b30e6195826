"""Engine release versions: their order, which release on file stands in for one that is not, and the
release an image tag names."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ..errors import InputError
from ..results import record

# image tags (and --engine-version words) for a build newer than any release: vllm/vllm-openai:nightly,
# vllm/vllm-openai:nightly-<commit>, lmsysorg/sglang:dev, rocm/vllm-dev:nightly_main_20250901, rocm/vllm-dev:main
NIGHTLY = "nightly"
_NIGHTLY_TAG = r"(?i:nightly|dev|main)(?:[-_.].*)?"  # patterns compiled on first use (re's cache)
# a release at the start of a tag (v0.21.0, 0.5.7-cu129, v0.4.6.post5-cu124, v0.5.3rc0-rocm700-mi30x-20250925,
# v0.10.1.1), or after "vllm" inside one (AMD's rocm/vllm: rocm6.4.1_vllm_0.10.1_20250909,
# rocm6.3.1_instinct_vllm0.7.3_20250311, rocm6.4_mi300_ubuntu22.04_py3.11_vllm_0.10.x)
_RELEASE = r"(\d+\.\d+(?:\.\d+)*(?:\.?post\d+|rc\d+|\.?dev\d+|a\d+|b\d+)?)"
_TAG_START = r"v?" + _RELEASE + r"(?![\w.])|v?" + _RELEASE + r"[-_+]"
_TAG_VLLM = r"(?:^|[_-])vllm[_-]?v?" + _RELEASE


@lru_cache(maxsize=4096)  # a command sorts the ~60 releases on file a few times
def version_key(version: str) -> tuple[int, ...]:
    """``"0.33.0"`` -> ``(0, 33, 0)``: the first three numbers (``v0.30.0``, ``0.5.23rc1`` alike)."""
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])


def nearest_version(versions: Iterable[str], wanted: str) -> str:
    """The newest of ``versions`` not newer than ``wanted``, else the oldest (the rule the tables keyed by
    engine release follow: kernel tables, start-up facts)."""
    vs = list(versions)
    older = [v for v in vs if version_key(v) <= version_key(wanted)]
    return max(older, key=version_key) if older else min(vs, key=version_key)


def closest_release(versions: Iterable[str], wanted: str) -> str:
    """The release on file that stands in for ``wanted``: the same release (its first three numbers:
    0.10.1.1 -> 0.10.1, 0.5.3rc0 -> 0.5.3.post3, 0.8.5 -> 0.8.5.post1), else one of the same minor release
    (the data keeps vLLM's newest patch of each minor: 0.11.0 -> 0.11.2; SGLang 0.5.0 -> 0.5.1.post3), the
    newest not newer than it else the oldest; else the newest on file not newer than it (0.35.0 -> 0.34.0),
    else the oldest on file (0.7.3 -> 0.8.5.post1)."""
    vs = sorted(versions, key=version_key)
    key = version_key(wanted)
    same = [v for v in vs if version_key(v) == key]
    if same:
        return same[-1]
    minor = [v for v in vs if version_key(v)[:2] == key[:2]]
    pool = minor or vs
    older = [v for v in pool if version_key(v) <= key]
    return older[-1] if older else pool[0]


@record
class ReleaseChoice:
    """The release on file a requested one is judged as: ``version`` is on file, ``asked`` as requested
    (an image tag's release, a pinned package, ``nightly``); ``exact`` when they are the same release."""

    label: str  # the engine as it writes its name (vLLM, SGLang)
    version: str
    asked: str
    exact: bool
    newest: bool = False  # ``version`` is the newest on file and ``asked`` newer than it

    @property
    def warning(self) -> str | None:
        """The one warning naming both releases, None when the release is on file."""
        if self.exact:
            return None
        if self.asked == NIGHTLY:
            return (f"{self.label} nightly is not a release on file: checked against {self.label} {self.version}, the "
                    f"newest on file (a nightly build is newer: its options, methods and messages may differ)")
        how = "the newest on file" if self.newest else "the closest release on file"
        return (f"{self.label} {self.asked} is not on file: checked against {self.label} {self.version}, {how} (its "
                "options, methods and messages may differ; add the release: docs/data.md)")


def choose_release(label: str, versions: list[str], asked: str | None) -> ReleaseChoice:
    """The release on file for ``asked`` (None, '' or ``latest``: the newest on file; ``nightly``: the newest,
    said); a spelling that names no release is an input error (exit 2)."""
    newest = max(versions, key=version_key)
    text = (asked or "").strip().removeprefix("v").removeprefix("V")
    if text.lower() in ("", "latest"):
        return ReleaseChoice(label, newest, newest, True)
    if text in versions:
        return ReleaseChoice(label, text, text, True)
    if text.lower() == NIGHTLY or re.fullmatch(_NIGHTLY_TAG, text):
        return ReleaseChoice(label, newest, NIGHTLY, False)
    if not re.match(r"\d+\.\d+", text):
        raise InputError(f"'{asked}' is not a {label} release (a version such as {newest}, or nightly)",
                         field="engine_version", hint=f"{label} releases on file: {', '.join(versions)}")
    chosen = closest_release(versions, text)
    return ReleaseChoice(label, chosen, text, False, newest=chosen == newest and version_key(text) > version_key(newest))


def release_in_tag(tag: str) -> str | None:
    """The engine release an image tag names (``v0.21.0`` -> 0.21.0, ``v0.5.7-cu129`` -> 0.5.7,
    ``rocm6.4.1_vllm_0.10.1_20250909`` -> 0.10.1), ``nightly`` for a nightly / dev build's tag, None for a
    tag that names no release (``latest``, ``gptoss``)."""
    t = tag.strip()
    m = re.match(_TAG_START, t)
    if m:
        return m.group(1) or m.group(2)
    m = re.search(_TAG_VLLM, t)
    if m:
        return m.group(1)
    if re.fullmatch(_NIGHTLY_TAG, t):
        return NIGHTLY
    return None


def parse_target(spec: str) -> tuple[str, str]:
    """``vllm@0.33.0`` (also ``vllm==0.33.0``) -> ("vllm", "0.33.0")."""
    m = re.fullmatch(r"\s*([A-Za-z][\w-]*?)\s*(?:@|==)\s*v?([\w.+-]+)\s*", spec or "")
    if not m:
        raise InputError(f"--upgrade-to expects ENGINE@VERSION (vllm@0.33.0, sglang@0.5.23), got '{spec}'",
                         field="upgrade_to")
    return m.group(1).lower(), m.group(2)
