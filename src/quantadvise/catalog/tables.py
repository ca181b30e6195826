"""The compiled (JSON) form of a shipped YAML table: fast to load and unable to run code.

Parsing the YAML tables costs about 70 ms per process even with libyaml; ``json.loads`` of the same
documents about 2 ms. The wheel build (``hatch_build.py``) writes ``<table>.yaml.json`` beside each
``data/**/*.yaml``: the parsed document plus the SHA-256 of the YAML bytes it came from. The loader
(``catalog.data_yaml``) uses the JSON only when that hash matches the YAML beside it, so an edited
table is never shadowed by a stale compiled copy; a missing or mismatched one falls back to YAML.
Nothing here evaluates anything: JSON and YAML's safe loader build only plain data (str, number, list, dict, date).

The release families (``data/engines/``, ``data/flags/`` with ``parser/``, ``data/kernels/`` with
``carried/``: about 310 files, 7 MB of YAML and as much again compiled) ship compiled only: one folder per family
(:data:`BUNDLES`, ``data/<family>-compiled/``) holding each table's compiled JSON, named by its path inside the
family (``vllm-0.21.0.json``, ``parser/vllm-0.21.0.json``). A lookup lists a folder and reads only the member asked
for, so a command reads only the release it judges (a zip per family, as shipped before, cost a command ~4 ms to
read its directory and inflate its members: ``zipfile`` reads the directory in Python). The wheel carries no YAML
of a bundled family (nothing to shadow); a checkout reads the YAML folders and has no compiled folder.

The published kernel tables (``data/kernel_tables/<gpu>/*.csv.gz``, 2.9 MB gzipped, 7.6 MB of text) ship
inflated (:func:`inflated_name`: ``<table>.csv``): a ``recommend`` reads about nine of them, and inflating them
cost ~5 ms of its run. The wheel deflates its members anyway, so the download is the same size; a checkout reads
the ``.csv.gz`` files (``catalog.lookup_tables`` reads the inflated form first where there is one). Each GEMM
table ships with its cell index beside it (:func:`cells_index`: ``<table>.csv.cells.json``), so a lookup reads
only the cells it prices (splitting every line of the eight a ``recommend`` reads cost it ~6 M instructions).

Standalone on purpose (stdlib and PyYAML only): the build hook imports it before the package's
dependencies exist.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from pathlib import Path
from typing import Any

SUFFIX = ".json"  # data/hardware.yaml -> data/hardware.yaml.json
FORMAT = "quantadvise-table/1"
BUNDLES = ("engines", "flags", "kernels", "moe_configs")  # data/<family>/**/*.yaml -> data/<family>-compiled/**/*.json in a wheel
BUNDLE_SUFFIX = "-compiled"


def _default(value: Any) -> Any:
    if isinstance(value, datetime.date):  # as_of: the only non-JSON scalar the tables hold
        return value.isoformat()
    raise TypeError(f"cannot compile a {type(value).__name__} into a data table")


def parse_yaml(text: str) -> Any:
    """YAML with the safe loader (libyaml's C one when present): plain data only."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader only


def compile_yaml(yaml_bytes: bytes) -> bytes:
    """The compiled form of one YAML table (dates become ISO strings; pydantic reads them back)."""
    doc = parse_yaml(yaml_bytes.decode("utf-8"))
    out = {"format": FORMAT, "sha256": hashlib.sha256(yaml_bytes).hexdigest(), "data": doc}
    return json.dumps(out, default=_default, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def load_compiled(yaml_bytes: bytes, compiled: bytes) -> tuple[bool, Any]:
    """(True, document) when ``compiled`` is the compiled form of exactly ``yaml_bytes``;
    (False, None) otherwise (stale, foreign or corrupt: the caller parses the YAML)."""
    try:
        doc = json.loads(compiled)
    except ValueError:
        return False, None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return False, None
    if doc.get("sha256") != hashlib.sha256(yaml_bytes).hexdigest():
        return False, None
    return True, doc.get("data")


GZIP_SUFFIX = ".gz"  # data/kernel_tables/<gpu>/<table>.csv.gz -> <table>.csv in a wheel


def inflated_name(rel: str) -> str | None:
    """A gzipped shipped file's name in a wheel, where it ships inflated (``h100/vllm-cutlass-fp8.csv.gz`` ->
    ``h100/vllm-cutlass-fp8.csv``); None for a file that ships as it is."""
    return rel.removesuffix(GZIP_SUFFIX) if rel.endswith(".csv" + GZIP_SUFFIX) else None


CELLS_SUFFIX = ".cells.json"  # a wheel's <table>.csv of a GEMM table -> <table>.csv.cells.json beside it
CELLS_FORMAT = "quantadvise-cells/1"


def cells_index(text: str) -> bytes | None:
    """Where each cell's line starts in a GEMM table's text (``n,k,<M...>`` then one line per cell): the wheel
    ships it beside the inflated table, so a lookup finds a cell's line without splitting the table's ~400 lines
    (``perf.kernel_tables.parse_gemm``). None for a table of another form (attention, fused MoE). Offsets count
    characters of the decoded text; ``chars`` is its length, so an index of other text is never read."""
    ns: list[int] = []
    ks: list[int] = []
    at: list[int] = []
    pos, header = 0, False
    for line in text.split("\n"):
        if line and not line.startswith("#"):
            if not header:
                if not line.startswith("n,k,"):
                    return None
                header = True
            else:
                n_text, k_text, _times = line.split(",", 2)
                ns.append(int(n_text))
                ks.append(int(k_text))
                at.append(pos)
        pos += len(line) + 1
    by_k: dict[int, list[int]] = {}
    for n, k in zip(ns, ks):  # noqa: B905 - the same length
        by_k.setdefault(k, []).append(n)
    doc = {"format": CELLS_FORMAT, "chars": len(text), "n": ns, "k": ks, "at": at,
           "by_k": [[k, sorted(by_k[k])] for k in sorted(by_k)]}
    return json.dumps(doc, separators=(",", ":")).encode("utf-8")


def read_cells_index(raw: bytes, text: str) -> tuple[dict[tuple[int, int], int], dict[int, list[int]]] | None:
    """(each cell's line offset, the Ns of each K) from a cell index written for exactly ``text`` (its length);
    None for anything else (stale, foreign or corrupt: the text is parsed instead). A cell whose line its offset
    does not start is an error when it is read (``perf.kernel_tables.GemmTable.cell``)."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("format") != CELLS_FORMAT or doc.get("chars") != len(text):
        return None
    ns: Any = doc.get("n")
    ks: Any = doc.get("k")
    at: Any = doc.get("at")
    by_k: Any = doc.get("by_k")
    try:
        if len(ns) == len(ks) == len(at) == sum(len(ns_) for _k, ns_ in by_k):
            return dict(zip(zip(ns, ks), at)), dict(by_k)  # noqa: B905 - lengths checked
    except (TypeError, ValueError):
        pass
    return None


def member_name(rel_yaml: str) -> str:
    """A table's member in its family's bundle: ``parser/vllm-0.21.0.yaml`` -> ``parser/vllm-0.21.0.json``."""
    return rel_yaml.removesuffix(".yaml") + ".json"


def write_bundle(folder: Path, out: Path) -> list[str]:
    """Compile every YAML table under ``folder`` into the folder ``out`` (one member file per table, at its path
    inside the family); returns the members written, sorted."""
    members = []
    for src in sorted(folder.rglob("*.yaml")):
        member = member_name(src.relative_to(folder).as_posix())
        target = out / member
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(compile_yaml(src.read_bytes()))
        members.append(member)
    return members


def read_member(raw: bytes) -> tuple[bool, Any]:
    """(True, document) for a bundle member in the compiled form; (False, None) for anything else."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return False, None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return False, None
    return True, doc.get("data")
