"""The ``--hub`` query of ``checkpoints``: a model's quantized variants asked of the Hugging Face Hub
live — its model tree (``base_model:quantized:<id>``) and each variant's config.json, read with the
parser ``inspect`` uses.

It keeps to the Hub's own cache conventions: each config.json goes through ``hf_hub_download`` (the HF
cache, ``HF_HUB_CACHE`` / ``HF_HOME``), the model-tree listing is kept beside it
(``<HF_HOME>/quantadvise/model-tree/<org>--<name>.json``) for :data:`LISTING_TTL_S`; ``HF_HUB_OFFLINE``
reads only what is cached. A Hub that cannot be reached fails in seconds with one line saying so."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from ..checkpoint.published import ConfigStatus, Popularity, Published
from ..errors import SourceUnavailableError

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
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), list):
        return None
    if not any_age and time.time() - float(doc.get("fetched", 0)) > LISTING_TTL_S:
        return None
    return [m for m in doc["models"] if isinstance(m, dict) and isinstance(m.get("id"), str)]


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
    out = []
    for m in models:
        out.append({"id": m.id, "downloads": getattr(m, "downloads", None), "likes": getattr(m, "likes", None),
                    "tags": list(getattr(m, "tags", None) or [])})
    return out


def _config(repo_id: str, offline: bool) -> tuple[dict[str, Any] | None, str | None]:
    """A variant's config.json (and ModelOpt's hf_quant_config.json when config.json has no
    quantization_config), through the HF cache; (None, None) when neither can be read."""
    from huggingface_hub import hf_hub_download, try_to_load_from_cache

    from .. import defaults
    from .hub import _deadline, read_json_file

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
    from .hub import UNREACHABLE_MEMO_S, _deadline, _endpoint, _no_connection, _unreachable

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
