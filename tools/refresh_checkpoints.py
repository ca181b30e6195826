#!/usr/bin/env python3
"""Refresh ``data/checkpoints.yaml`` (the published-checkpoint index) from the Hugging Face Hub.

Maintainer tool, run by hand (never at run time, never imported by ``quantadvise``)::

    python tools/refresh_checkpoints.py                         # every bundled model, every Hub id it answers to
    python tools/refresh_checkpoints.py --model meta-llama/Llama-3.1-8B --dry-run
    python tools/refresh_checkpoints.py --all-producers         # not only defaults.PUBLISHED_PRODUCERS

For each bundled model, each of its Hub ids (the id and the aliases that are ``org/name``: an -Instruct
release is an alias of its model) is asked for its model tree, ``HfApi.list_models(filter=
"base_model:quantized:<id>")``, most downloaded first; each variant's ``config.json`` (and ModelOpt's
``hf_quant_config.json`` when config.json has no quantization_config) is downloaded through the HF cache
(``hf_hub_download``: configs only, never weights) and read with quantadvise's own parser: the method,
the closest scheme preset of data/schemes.yaml, the KV preset, and the quantization_config snapshot
(``config_status: full``). Downloads (the Hub's count of the last 30 days) and likes are recorded with
the day they were read.

A row already in the index keeps what a person wrote there (producer, accuracy quotes, notes,
scheme_note, inferred_from that still applies) and gets the Hub's fresh facts; a new variant gets a row
of Hub facts only (its card's accuracy figures are not read: add them by hand, with the quote). Rows
the Hub no longer lists are kept and reported. The file's comment header is kept.
"""

from __future__ import annotations

import argparse
import sys
from datetime import date
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
INDEX = REPO / "data" / "checkpoints.yaml"
sys.path.insert(0, str(REPO / "src"))


def hub_ids(model: Any) -> list[str]:
    """The Hub repositories a bundled model answers to: its id and its ``org/name`` aliases."""
    out = [model.id]
    for a in model.aliases:
        if "/" in a and a not in out:
            out.append(a)
    return out


def read_variant(repo_id: str) -> dict[str, Any]:
    """A variant's method, scheme, KV preset and quantization_config, read from its config files."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    from quantadvise import catalog
    from quantadvise.checkpoint.parse import parse_checkpoint, parse_quantization_config
    from quantadvise.checkpoint.presets import match_preset
    from quantadvise.errors import ConfigError

    def load(name: str) -> dict[str, Any] | None:
        import json

        try:
            path = hf_hub_download(repo_id, name)
        except EntryNotFoundError:
            return None
        doc = json.loads(Path(path).read_text())
        return doc if isinstance(doc, dict) else None

    cfg = load("config.json")
    where, raw = "config.json", None
    if cfg is not None:
        raw = cfg.get("quantization_config") or cfg.get("compression_config")
    if raw is None:
        hf = load("hf_quant_config.json")
        if hf is not None:
            where, raw = "hf_quant_config.json", hf
    if not isinstance(raw, dict):
        return {"config_status": "not_read"}
    try:
        ck = (parse_quantization_config(None, hf_quant_config=raw) if where == "hf_quant_config.json"
              else parse_checkpoint(cfg))
    except ConfigError as exc:
        return {"config_status": "not_read", "notes": f"config.json read but not parsed: {exc}"}
    if ck is None:
        return {"config_status": "not_read"}
    presets = [catalog.get_scheme(s) for s in catalog.scheme_ids()]
    scheme = next((p for g in ck.groups if (p := match_preset(g, presets)) is not None), None)
    kv = None
    if ck.kv_cache_quant is not None and ck.kv_cache_quant.format == "fp8_e4m3":
        kv = "kv-fp8"
    return {"method": ck.quant_method, "scheme": scheme, "kv": kv, "config_status": "full", "read_from": where,
            "quantization_config": raw, "scheme_basis": "config"}


def refresh(models: list[Any], rows: list[dict[str, Any]], *, today: date, limit: int,
            producers: tuple[str, ...] | None, log: Any = sys.stderr) -> list[dict[str, Any]]:
    """The index with every bundled model's Hub variants refreshed or added (pure but for the Hub calls)."""
    from huggingface_hub import HfApi

    by_id = {r["id"].lower(): r for r in rows}
    api = HfApi()
    seen: set[str] = set()
    for model in models:
        for base in hub_ids(model):
            listed = api.list_models(filter=f"base_model:quantized:{base}", sort="downloads", limit=limit,
                                     expand=["downloads", "likes", "tags"])
            for info in listed:
                rid = info.id
                org = rid.split("/")[0]
                if producers is not None and org not in producers and rid.lower() not in by_id:
                    continue
                if rid.lower() in seen:
                    continue
                seen.add(rid.lower())
                facts = read_variant(rid)
                pop = {"downloads": getattr(info, "downloads", None), "likes": getattr(info, "likes", None),
                       "seen": f"Hub API (downloads of the last 30 days), read {today.isoformat()}",
                       "source": f"https://huggingface.co/api/models?filter=base_model:quantized:{base}"}
                pop = {k: v for k, v in pop.items() if v is not None}
                row = by_id.get(rid.lower())
                if row is None:
                    row = {"id": rid, "model": model.id, "base_model": base, "producer": org, "method": None,
                           "scheme": None, "scheme_basis": "hub tags", "config_status": "not_read",
                           "source": f"https://huggingface.co/{rid}", "as_of": today}
                    rows.append(row)
                    by_id[rid.lower()] = row
                    print(f"+ {rid} (new: add its card's accuracy figures by hand)", file=log)
                else:
                    print(f"~ {rid}", file=log)
                if facts.get("config_status") == "full":
                    for k in ("method", "scheme", "kv", "config_status", "read_from", "quantization_config",
                              "scheme_basis"):
                        if facts.get(k) is not None:
                            row[k] = facts[k]
                    row.pop("config_note", None)
                    row["inferred_from"] = [x for x in row.get("inferred_from", ()) if "inferred from" not in x
                                            and not x.startswith("not read:")]
                    if not row["inferred_from"]:
                        row.pop("inferred_from")
                if facts.get("notes"):
                    row["notes"] = facts["notes"]
                row["popularity"] = pop
                row["as_of"] = today
    for r in rows:
        if r["id"].lower() not in seen and any(r["model"] == m.id for m in models):
            print(f"= {r['id']}: not in the Hub's model tree listing (kept as read on {r['as_of']})", file=log)
    return rows


def header(text: str) -> str:
    lines = []
    for line in text.splitlines(keepends=True):
        if not line.startswith("#"):
            break
        lines.append(line)
    return "".join(lines)


def dump(rows: list[dict[str, Any]], head: str) -> str:
    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    body = yaml.dump({"schema_version": 1, "checkpoints": rows}, Dumper=Dumper, sort_keys=False, width=118,
                     allow_unicode=True)
    return head + body


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", action="append", help="a bundled model id (repeat; default: every bundled model)")
    ap.add_argument("--limit", type=int, default=50, help="variants read per Hub id, most downloaded first")
    ap.add_argument("--all-producers", action="store_true", help="add variants from any producer, not only "
                    "quantadvise.defaults.PUBLISHED_PRODUCERS (rows already in the index are always refreshed)")
    ap.add_argument("--out", type=Path, default=INDEX, help="where to write (default: data/checkpoints.yaml)")
    ap.add_argument("--dry-run", action="store_true", help="report what would change, write nothing")
    ap.add_argument("--as-of", type=date.fromisoformat, help="the day stamped on refreshed rows (default: today)")
    args = ap.parse_args(argv)

    from quantadvise import catalog, defaults

    names = args.model or catalog.bundled_model_ids()
    models = []
    for n in names:
        row = catalog.find_bundled_model(n)
        if row is None:
            print(f"Error: '{n}' is not a bundled model", file=sys.stderr)
            return 2
        models.append(row)
    text = INDEX.read_text()
    doc = yaml.safe_load(text)
    rows = list(doc.get("checkpoints") or [])
    rows = refresh(models, rows, today=args.as_of or date.today(), limit=args.limit,
                   producers=None if args.all_producers else defaults.PUBLISHED_PRODUCERS)
    out = dump(rows, header(text))
    if args.dry_run:
        print(f"{len(rows)} rows (not written)", file=sys.stderr)
        return 0
    args.out.write_text(out)
    print(f"wrote {args.out} ({len(rows)} rows)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
