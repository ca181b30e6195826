"""Where model configs come from, in order: bundled -> local path -> local HF cache -> the Hub; and the
``--hub`` query of ``checkpoints`` (:func:`hub_published`, below).

The only importer of ``huggingface_hub`` (imported lazily, only when a name is neither bundled nor
a local path, or ``--hub`` is asked). Only ``config.json`` (and, for ModelOpt checkpoints,
``hf_quant_config.json``) is ever fetched — never weights.

The ``--hub`` query of ``checkpoints``: a model's quantized variants asked of the Hugging Face Hub
live — its model tree (``base_model:quantized:<id>``) and each variant's config.json, read with the
parser ``inspect`` uses.

It keeps to the Hub's own cache conventions: each config.json goes through ``hf_hub_download`` (the HF
cache, ``HF_HUB_CACHE`` / ``HF_HOME``), the model-tree listing is kept beside it
(``<HF_HOME>/quantadvise/model-tree/<org>--<name>.json``) for :data:`LISTING_TTL_S`; ``HF_HUB_OFFLINE``
reads only what is cached. A Hub that cannot be reached fails in seconds with one line saying so.
"""

from __future__ import annotations

import json
import os
import re
import time
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import catalog
from ..errors import ConfigError, InputError, SourceUnavailableError, UnknownNameError
from ..files import json_loads, not_regular, special
from ..inputs import finite
from .models import FoundConfig

if TYPE_CHECKING:  # the --hub query only: `size` does not import the published-checkpoint types
    from ..checkpoint.published import ConfigStatus, Published

MAX_CONFIG_BYTES = 16 * 1024 * 1024  # a config.json is kilobytes; refuse to parse junk blobs
MAX_NAME_CHARS = 1024  # a Hub id is at most 96 + 1 + 96 characters; a path rarely passes 1 KiB
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


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
    return json_loads(text, str(path))


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
    bundled = catalog.bundled_source(name)
    if bundled is not None:
        return bundled
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


# ---- checkpoints --hub: the model tree ----

LISTING_TTL_S = 24 * 3600.0  # a cached model-tree listing is asked again after a day
MAX_HUB_VARIANTS = 50  # the most-downloaded variants a --hub query reads the config of


def _hf_home() -> Path:
    home = os.environ.get("HF_HOME")
    return Path(home).expanduser() if home else Path("~/.cache/huggingface").expanduser()


def _listing_path(repo_id: str) -> Path:
    return _hf_home() / "quantadvise" / "model-tree" / (repo_id.replace("/", "--") + ".json")


def _cached_listing(repo_id: str, *, any_age: bool) -> list[dict[str, Any]] | None:
    p = _listing_path(repo_id)
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError, RecursionError):  # unreadable, not JSON, nested past the recursion limit
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), list):
        return None
    # a listing that does not say when it was read (or says nonsense: text, inf, 10**400) is stale
    fetched = finite(doc.get("fetched")) or 0.0
    if not any_age and time.time() - fetched > LISTING_TTL_S:
        return None
    return _clean_listing(doc["models"])


def _count(v: Any) -> int | None:
    """A download or like count as a listing may hold it: a non-negative integer, else unknown."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 10**15 else None


def _clean_listing(models: list[Any]) -> list[dict[str, Any]]:
    """The variants of a listing (the Hub's answer or the cached copy, a file anyone can edit) as the report
    reads them: an id string, counts that are non-negative integers (else unknown), tags as strings; a row
    without an id is dropped."""
    out = []
    for m in models:
        if not isinstance(m, dict) or not isinstance(m.get("id"), str) or not m["id"]:
            continue
        tags = m.get("tags")
        out.append({"id": m["id"], "downloads": _count(m.get("downloads")), "likes": _count(m.get("likes")),
                    "tags": [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []})
    return out


def _store_listing(repo_id: str, models: list[dict[str, Any]]) -> None:
    p = _listing_path(repo_id)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps({"fetched": time.time(), "models": models}))
    except OSError:  # a read-only cache is only slower
        pass


def _model_tree(repo_id: str) -> list[dict[str, Any]]:
    """The Hub's quantized variants of ``repo_id`` (model tree filter ``base_model:quantized:<id>``), most
    downloaded first: id, downloads (last 30 days), likes, tags."""
    from huggingface_hub import HfApi

    models = HfApi().list_models(filter=f"base_model:quantized:{repo_id}", sort="downloads",
                                 limit=MAX_HUB_VARIANTS, expand=["downloads", "likes", "tags"])
    return _clean_listing([{"id": m.id, "downloads": getattr(m, "downloads", None), "likes": getattr(m, "likes", None),
                            "tags": list(getattr(m, "tags", None) or [])} for m in models])


def _config(repo_id: str, offline: bool) -> tuple[dict[str, Any] | None, str | None]:
    """A variant's config.json (and ModelOpt's hf_quant_config.json when config.json has no
    quantization_config), through the HF cache; (None, None) when neither can be read."""
    from huggingface_hub import hf_hub_download, try_to_load_from_cache

    from .. import defaults

    def get(name: str) -> dict[str, Any] | None:
        try:
            if offline:
                hit = try_to_load_from_cache(repo_id, name)
                path = hit if isinstance(hit, str) else None
            else:
                path = _deadline(lambda: hf_hub_download(repo_id, name, etag_timeout=defaults.HUB_TIMEOUT_S),
                                 defaults.HUB_DOWNLOAD_TIMEOUT_S)
            doc = read_json_file(Path(path)) if path else None
        except Exception:  # noqa: BLE001 - a variant that cannot be read is listed without its config
            return None
        return doc if isinstance(doc, dict) else None

    cfg = get("config.json")
    if cfg is not None and ("quantization_config" in cfg or "compression_config" in cfg):
        return cfg, "config.json"
    hf = get("hf_quant_config.json")
    if hf is not None:
        return hf, "hf_quant_config.json"
    return cfg, "config.json" if cfg is not None else None


def _probe(repo_id: str) -> None:
    """The model's config.json metadata, asked once within ``defaults.HUB_TIMEOUT_S`` (as ``catalog.hub``
    asks before a download): raises when the Hub does not answer; an answer of any kind (even "not found")
    means it can be asked. A Hub this process already found unreachable is not asked again."""
    import time as _time

    from huggingface_hub import errors as hf_errors
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    from .. import defaults

    down = _unreachable.get(_endpoint())
    if down is not None and _time.monotonic() - down[0] < UNREACHABLE_MEMO_S:
        raise ConnectionError(f"{down[1]} (not asked again)")
    timeout = defaults.HUB_TIMEOUT_S
    try:
        _deadline(lambda: get_hf_file_metadata(hf_hub_url(repo_id, "config.json"), timeout=timeout), timeout + 0.3)
    except (hf_errors.RepositoryNotFoundError, hf_errors.GatedRepoError, hf_errors.RemoteEntryNotFoundError):
        return
    except Exception as exc:
        if _no_connection(exc):
            _unreachable[_endpoint()] = (_time.monotonic(), type(exc).__name__, repo_id)
        raise


class _quiet:
    """huggingface_hub's retry warnings off while the one-line answer is prepared."""

    def __enter__(self) -> None:
        import logging

        self.logger = logging.getLogger("huggingface_hub")
        self.level = self.logger.level
        self.logger.setLevel(logging.ERROR)

    def __exit__(self, *exc: object) -> None:
        self.logger.setLevel(self.level)


def hub_published(repo_id: str, *, model: str | None = None) -> tuple[list[Published], str]:
    """Ask the Hub for ``repo_id``'s quantized variants and read each one's config (at most
    :data:`MAX_HUB_VARIANTS`, most downloaded first). Returns the rows and where the listing came from.
    Raises :class:`SourceUnavailableError` (one line, within seconds) when the Hub cannot be reached and
    nothing is cached."""
    from .. import defaults
    from .hub import _deadline, _offline

    offline = _offline()
    listing = _cached_listing(repo_id, any_age=False)
    where = "the Hub's model tree (cached listing)"
    if listing is None and offline:
        listing = _cached_listing(repo_id, any_age=True)
        if listing is None:
            raise SourceUnavailableError(f"--hub: HF_HUB_OFFLINE is set and no model-tree listing of '{repo_id}' is "
                                         "cached", hint="unset HF_HUB_OFFLINE, or drop --hub to read the bundled index")
    if listing is None:
        try:
            with _quiet():
                _probe(repo_id)  # one quick probe, no retries: an unreachable Hub fails here, in seconds
                listing = _deadline(lambda: _model_tree(repo_id), defaults.HUB_DOWNLOAD_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - many network error classes; one line says which
            stale = _cached_listing(repo_id, any_age=True)
            if stale is None:
                why = " ".join(str(exc).split())[:100] or type(exc).__name__
                raise SourceUnavailableError(f"--hub: cannot reach the Hugging Face Hub for the model tree of "
                                             f"'{repo_id}' ({type(exc).__name__}: {why})",
                                             hint="drop --hub to read the bundled index; set HF_ENDPOINT for a "
                                             "mirror") from None
            listing, where = stale, "the Hub's model tree (a stale cached listing: the Hub did not answer)"
        else:
            _store_listing(repo_id, listing)
            where = "the Hub's model tree"
    today = datetime.now(UTC).date()
    rows = [_hub_row(m, repo_id, model or repo_id, offline, today) for m in listing]
    return rows, where


def _hub_row(m: dict[str, Any], base: str, model: str, offline: bool, today: date) -> Published:
    from ..checkpoint.parse import parse_checkpoint, parse_quantization_config
    from ..checkpoint.presets import match_preset
    from ..checkpoint.published import Popularity, Published
    from .schemes import get_scheme, scheme_ids

    rid = str(m["id"])
    cfg, where = _config(rid, offline)
    qc = None
    method = scheme = None
    status: ConfigStatus = "not_read"
    if cfg is not None and where is not None:
        try:
            ck = (parse_quantization_config(None, hf_quant_config=cfg) if where == "hf_quant_config.json"
                  else parse_checkpoint(cfg))
        except Exception:  # noqa: BLE001 - an unreadable config is shown as such
            ck = None
        if ck is not None:
            raw = cfg if where == "hf_quant_config.json" else (cfg.get("quantization_config")
                                                             or cfg.get("compression_config"))
            qc = raw if isinstance(raw, dict) else None
            method, status = ck.quant_method, "full"
            presets = [get_scheme(s) for s in scheme_ids()]
            scheme = next((p for g in ck.groups if (p := match_preset(g, presets)) is not None), None)
    tags = [str(t) for t in m.get("tags") or []]
    if "gguf" in tags and status == "not_read":
        status, method = "gguf", "gguf"
    pop = Popularity(downloads=m.get("downloads"), likes=m.get("likes"),
                     seen=f"Hub API (downloads of the last 30 days), read {today.isoformat()}",
                     source=f"https://huggingface.co/api/models?filter=base_model:quantized:{base}")
    return Published(
        id=rid, model=model, base_model=base, producer=rid.split("/")[0], method=method, scheme=scheme,
        scheme_basis="config" if status == "full" else "hub tags", config_status=status,
        read_from=where if qc is not None else None, quantization_config=qc,
        inferred_from=() if status == "full" else (f"Hub tags: {', '.join(tags[:8])}",) if tags else (),
        popularity=pop, source=f"https://huggingface.co/{rid}", as_of=today,
    )
