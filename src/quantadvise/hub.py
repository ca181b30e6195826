"""Where model configs come from, in order: bundled -> local path -> local HF cache -> the Hub.

The only importer of ``huggingface_hub`` (imported lazily, only when a name is neither bundled nor
a local path). Only ``config.json`` (and, for ModelOpt checkpoints, ``hf_quant_config.json``) is
ever fetched — never weights.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import catalog
from .errors import ConfigError, SourceUnavailableError, UnknownNameError

MAX_CONFIG_BYTES = 16 * 1024 * 1024  # a config.json is kilobytes; refuse to parse junk blobs
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class ModelSource:
    """Where a model's config came from."""

    id: str
    kind: str  # bundled | local | cache | hub
    location: str
    published_params: int | None = None
    params_source: str | None = None
    directory: str | None = None  # folder holding config.json (for sidecar files), when there is one

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "location": self.location,
            "published_params": self.published_params,
        }


def parse_json_text(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def read_json_file(path: Path) -> Any:
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


def _looks_like_path(name: str) -> bool:
    return (
        name.endswith(".json")
        or name.startswith((".", "~", os.sep))
        or (os.sep in name and not _REPO_ID.match(name))
        or name.count("/") > 1
    )


def resolve_model(name: str, *, allow_hub: bool = True) -> tuple[ModelSource, dict[str, Any]]:
    """Find a model's config.json and return (source, config dict)."""
    if not name or not name.strip():
        raise ConfigError("model name is empty", hint="pass a Hub id such as meta-llama/Llama-3.1-8B or a path")
    name = name.strip()
    row = catalog.find_bundled_model(name)
    if row is not None:
        cfg = catalog.bundled_config(row)
        return (
            ModelSource(row.id, "bundled", f"data/{row.config}", row.published_params, row.params_source),
            cfg,
        )
    path = Path(name).expanduser()
    if path.exists():
        cfg_path = path / "config.json" if path.is_dir() else path
        if not cfg_path.is_file():
            raise ConfigError(f"{path} has no config.json", hint="pass a model folder or its config.json")
        cfg = read_json_file(cfg_path)
        return ModelSource(str(path), "local", str(cfg_path), directory=str(cfg_path.parent)), cfg
    if _looks_like_path(name):
        raise ConfigError(f"no such file or folder: {name}", hint="pass a config.json path or a Hub model id")
    if not _REPO_ID.match(name):
        raise UnknownNameError(
            "model",
            name,
            catalog.bundled_model_names(),
            hint="use a bundled id, an org/name Hub id, or a path to config.json",
        )
    cached = _from_cache(name)
    if cached is not None:
        return ModelSource(name, "cache", str(cached), directory=str(cached.parent)), read_json_file(cached)
    if not allow_hub:
        raise SourceUnavailableError(f"model '{name}' is not bundled and not in the local Hugging Face cache")
    downloaded = _from_hub(name)
    return ModelSource(name, "hub", str(downloaded), directory=str(downloaded.parent)), read_json_file(downloaded)


def read_sidecar(source: ModelSource, filename: str) -> dict[str, Any] | None:
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


def _from_hub(repo_id: str) -> Path:
    offline_hint = (
        f"pass a local config.json path, or fetch it once with "
        f"`huggingface-cli download {repo_id} config.json` and rerun"
    )
    if _offline():
        raise SourceUnavailableError(
            f"model '{repo_id}' is not bundled or in the local Hugging Face cache, and HF_HUB_OFFLINE is set",
            hint=offline_hint,
        )
    from huggingface_hub import errors as hf_errors
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(repo_id, "config.json"))
    except hf_errors.GatedRepoError:
        raise SourceUnavailableError(
            f"model '{repo_id}' is gated on the Hub", hint="run `huggingface-cli login` after accepting its licence"
        ) from None
    except hf_errors.RepositoryNotFoundError:
        raise UnknownNameError("model", repo_id, catalog.bundled_model_names(),
                               hint="not found on the Hugging Face Hub either") from None
    except hf_errors.EntryNotFoundError:
        raise SourceUnavailableError(f"model '{repo_id}' has no config.json on the Hub") from None
    except Exception as exc:  # noqa: BLE001 - network failures come in many classes
        raise SourceUnavailableError(
            f"cannot reach the Hugging Face Hub for '{repo_id}' ({type(exc).__name__})", hint=offline_hint
        ) from None
