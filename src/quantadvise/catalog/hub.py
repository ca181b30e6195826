"""Where model configs come from, in order: bundled -> local path -> local HF cache -> the Hub.

The only importer of ``huggingface_hub`` (imported lazily, only when a name is neither bundled nor
a local path). Only ``config.json`` (and, for ModelOpt checkpoints, ``hf_quant_config.json``) is
ever fetched — never weights.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import catalog
from ..errors import ConfigError, InputError, SourceUnavailableError, UnknownNameError
from ..files import not_regular, special

MAX_CONFIG_BYTES = 16 * 1024 * 1024  # a config.json is kilobytes; refuse to parse junk blobs
MAX_NAME_CHARS = 1024  # a Hub id is at most 96 + 1 + 96 characters; a path rarely passes 1 KiB
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class FoundConfig:
    """Where a model's config.json was found (the report's :class:`~quantadvise.model.arch.ModelSource`
    is built from it): its id, how (bundled, local, cache, hub), the file, and the folder beside it."""

    id: str
    kind: str  # bundled | local | cache | hub
    location: str
    published_params: int | None = None
    params_source: str | None = None
    directory: str | None = None  # folder holding config.json (for sidecar files), when there is one


def parse_json_text(text: str, where: str) -> Any:
    from ..files import MAX_NESTING, json_depth

    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise ConfigError(f"{where}: invalid JSON value: {str(exc).split(';')[0]}") from None
    except RecursionError:
        raise ConfigError(f"{where}: JSON nested too deeply to be a model config") from None
    if json_depth(doc) > MAX_NESTING:
        raise ConfigError(f"{where}: JSON nested more than {MAX_NESTING} levels deep; a config.json is a few levels")
    return doc


def read_json_file(path: Path) -> Any:
    what = special(path)
    if what is not None:
        raise ConfigError(not_regular(path, what), hint="pass a model folder or its config.json")
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"{path}: {size / 1e6:.0f} MB is far too large for a config.json",
                hint="pass the model's config.json, not a weights file",
            )
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file (is it a weights file?)") from None
    return parse_json_text(text, str(path))


def _path(name: str) -> Path | None:
    """``name`` as a local path, None when the OS cannot even look it up (``~nosuchuser``, a name
    longer than the file system allows)."""
    try:
        p = Path(name).expanduser()
        p.exists()
    except (OSError, RuntimeError, ValueError):
        return None
    return p


def _looks_like_path(name: str) -> bool:
    return (
        name.endswith(".json")
        or name.startswith((".", "~", os.sep))
        or (os.sep in name and not _REPO_ID.match(name))
        or name.count("/") > 1
    )


def resolve_model(name: str, *, allow_hub: bool = True) -> tuple[FoundConfig, dict[str, Any]]:
    """Find a model's config.json and return (source, config dict)."""
    if not name or not name.strip():
        raise ConfigError("model name is empty", hint="pass a Hub id such as meta-llama/Llama-3.1-8B or a path")
    name = name.strip()
    if len(name) > MAX_NAME_CHARS or any(ord(c) < 32 for c in name):
        raise InputError(f"model name {name[:40]!r}{'...' if len(name) > 40 else ''} ({len(name):,} characters) is not "
                         "a Hub id or a path", hint="pass a Hub id such as meta-llama/Llama-3.1-8B or a path",
                         field="model")
    row = catalog.find_bundled_model(name)
    if row is not None:
        cfg = catalog.bundled_config(row)
        return (
            FoundConfig(row.id, "bundled", f"data/{row.config}", row.published_params, row.params_source),
            cfg,
        )
    path = _path(name)
    what = special(path) if path is not None else None
    if path is not None and what is not None:
        raise ConfigError(not_regular(path, what), hint="pass a model folder or its config.json")
    if path is not None and path.exists():
        cfg_path = path / "config.json" if path.is_dir() else path
        if not cfg_path.is_file():
            raise ConfigError(f"{path} has no config.json", hint="pass a model folder or its config.json")
        cfg = read_json_file(cfg_path)
        return FoundConfig(str(path), "local", str(cfg_path), directory=str(cfg_path.parent)), cfg
    if _looks_like_path(name):
        raise ConfigError(f"no such file or folder: {name}", hint="pass a config.json path or a Hub model id")
    if not _REPO_ID.match(name):
        raise UnknownNameError(
            "model",
            name,
            catalog.bundled_model_names(),
            hint="`quantadvise list models` lists the bundled ones; or give an org/name Hub id, or a path to config.json",
        )
    cached = _from_cache(name)
    if cached is not None:
        return FoundConfig(name, "cache", str(cached), directory=str(cached.parent)), read_json_file(cached)
    if not allow_hub:
        raise SourceUnavailableError(f"model '{name}' is not bundled and not in the local Hugging Face cache"
                                     + _near_bundled(name), hint="`quantadvise list models` lists the bundled ones")
    downloaded = _from_hub(name)
    return FoundConfig(name, "hub", str(downloaded), directory=str(downloaded.parent)), read_json_file(downloaded)


def read_sidecar(source: FoundConfig, filename: str) -> dict[str, Any] | None:
    """A second JSON file beside config.json (e.g. hf_quant_config.json), when one is reachable
    locally (never downloaded)."""
    if source.directory is None:
        return None
    p = Path(source.directory) / filename
    if not p.is_file():
        return None
    doc = read_json_file(p)
    return doc if isinstance(doc, dict) else None


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _from_cache(repo_id: str) -> Path | None:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    # Read the cache location now (huggingface_hub freezes its constants at import time).
    cache_dir = os.environ.get("HF_HUB_CACHE") or (
        os.path.join(os.environ["HF_HOME"], "hub") if os.environ.get("HF_HOME") else None
    )
    try:
        hit = try_to_load_from_cache(repo_id, "config.json", cache_dir=cache_dir)
    except Exception:  # noqa: BLE001 - a corrupt cache is a miss, never a crash
        return None
    return Path(hit) if isinstance(hit, str) and Path(hit).is_file() else None


def _deadline(fn: Any, seconds: float) -> Any:
    """``fn()`` in a daemon thread, given ``seconds``: returns its value, re-raises its exception, or
    raises TimeoutError (a DNS lookup or a dead proxy can block past any socket timeout; the thread
    is left to die with the process)."""
    import threading

    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    t = threading.Thread(target=run, name="quantadvise-hub", daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        raise TimeoutError(f"no answer within {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _near_bundled(repo_id: str) -> str:
    """``; did you mean 'meta-llama/Llama-3.1-70B'?`` when a bundled id is a near spelling of ``repo_id``
    (a typo of a bundled model, not any other Hub id: the bar is high)."""
    from ..errors import closest

    # ids and aliases alike, nearest first (the one suggestion ranking, errors.closest)
    close = closest(repo_id, catalog.bundled_model_names(), n=2, cutoff=0.9)
    return "; did you mean " + ", ".join(f"'{c}'" for c in close) + "?" if close else ""


# Once the Hub could not be reached (no route, refused, no answer in time), later lookups in the same
# process fail at once with the same line instead of waiting ~1.8 s each: a gate over N private models
# would otherwise wait N times. Remembered per endpoint, for UNREACHABLE_MEMO_S (a long-lived process
# tries again later); a Hub that answers, even "not found", is never remembered as down.
UNREACHABLE_MEMO_S = 300.0
_unreachable: dict[str, tuple[float, str, str]] = {}  # endpoint -> (when, why, the model first asked for)


def forget_unreachable() -> None:
    """Forget that the Hub was unreachable (the next lookup asks it again)."""
    _unreachable.clear()


def _endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "").strip() or "https://huggingface.co"


def _no_connection(exc: BaseException) -> bool:
    """Whether a failure means the Hub was not reached at all (no route, refused, reset, no answer in
    time), as opposed to an answer (not found, gated, a server error)."""
    from huggingface_hub import errors as hf_errors

    if isinstance(exc, hf_errors.LocalEntryNotFoundError | ConnectionError | TimeoutError):
        return True
    import socket

    if isinstance(exc, socket.gaierror):
        return True
    # httpx / httpx2 (huggingface_hub 2.x): ConnectError, ProxyError, ReadTimeout ... are TransportErrors
    return any(c.__name__ in ("TransportError", "ConnectionError", "ConnectTimeout") for c in type(exc).__mro__)


def _from_hub(repo_id: str) -> Path:
    """config.json from the Hub: one quick probe (no retries, :data:`defaults.HUB_TIMEOUT_S`), then the
    download. An unreachable Hub fails in seconds with what happened, not huggingface_hub's minute of
    retries ending in "entry not found" (its ``LocalEntryNotFoundError`` subclasses
    ``EntryNotFoundError``)."""
    from .. import defaults

    offline_hint = (
        f"pass a local config.json path, or fetch it once with `hf download {repo_id} config.json` and rerun; "
        "set HF_HUB_OFFLINE=1 to skip the Hub"
    )
    if _offline():
        raise SourceUnavailableError(
            f"model '{repo_id}' is not bundled or in the local Hugging Face cache, and HF_HUB_OFFLINE is set"
            + _near_bundled(repo_id),
            hint=offline_hint.removesuffix("; set HF_HUB_OFFLINE=1 to skip the Hub")
            + "; `quantadvise list models` lists the bundled ones",
        )
    from huggingface_hub import errors as hf_errors
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    def unreachable(why: str, exc: BaseException) -> SourceUnavailableError:
        if _no_connection(exc):
            _unreachable[_endpoint()] = (time.monotonic(), why, repo_id)
        return SourceUnavailableError(f"cannot reach the Hugging Face Hub for '{repo_id}' ({why})", hint=offline_hint)

    down = _unreachable.get(_endpoint())
    if down is not None and time.monotonic() - down[0] < UNREACHABLE_MEMO_S:
        _, why, first = down
        said = why if first == repo_id else f"{why}, when '{first}' was looked up"
        raise SourceUnavailableError(f"cannot reach the Hugging Face Hub for '{repo_id}' ({said}; not asked again)",
                                     hint=offline_hint)
    timeout = defaults.HUB_TIMEOUT_S
    try:
        _deadline(lambda: get_hf_file_metadata(hf_hub_url(repo_id, "config.json"), timeout=timeout), timeout + 0.3)
        return Path(_deadline(lambda: hf_hub_download(repo_id, "config.json", etag_timeout=timeout),
                              defaults.HUB_DOWNLOAD_TIMEOUT_S))
    except hf_errors.GatedRepoError:
        raise SourceUnavailableError(
            f"model '{repo_id}' is gated on the Hub", hint="run `hf auth login` after accepting its licence"
        ) from None
    except hf_errors.RepositoryNotFoundError:
        raise UnknownNameError("model", repo_id, catalog.bundled_model_names(),
                               hint="not found on the Hugging Face Hub either (private? run `hf auth login`)") from None
    except hf_errors.LocalEntryNotFoundError as exc:  # a connection failure, after the library's own retries
        raise unreachable(type(exc.__cause__ or exc).__name__, exc) from None
    except hf_errors.EntryNotFoundError:  # RemoteEntryNotFoundError: the repository has no config.json
        raise SourceUnavailableError(f"model '{repo_id}' has no config.json on the Hub",
                                     hint="pass the folder or config.json of the checkpoint you serve") from None
    except TimeoutError as exc:
        raise unreachable(str(exc), exc) from None
    except Exception as exc:  # noqa: BLE001 - network failures come in many classes (httpx2.ConnectError ...)
        raise unreachable(f"{type(exc).__name__}: {' '.join(str(exc).split())[:120]}", exc) from None
