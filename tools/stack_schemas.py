"""Maintainer script: rebuild a CRD schema fixture of tests/fixtures/stacks/ from the CRD YAML a stack publishes.

    python tools/stack_schemas.py CRD.yaml VERSION OUT.json.gz "repository path @ commit"

Keeps the openAPIV3Schema of VERSION (``description`` keys dropped: they are most of the bytes), minified and
gzipped with a fixed mtime, so a rebuild from the same CRD gives the same bytes. The production-stack chart
publishes its values.schema.json directly (copied as it is, minified and gzipped).
"""

from __future__ import annotations

import gzip
import json
import sys
from typing import Any


def strip(o: Any) -> Any:
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if k != "description"}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o


def main(argv: list[str]) -> int:
    import yaml

    src, version, out, note = argv
    with open(src) as fh:
        crd = next(d for d in yaml.safe_load_all(fh) if d and d.get("kind") == "CustomResourceDefinition")
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    doc = {"source": note, "group": crd["spec"]["group"], "kind": crd["spec"]["names"]["kind"],
           "versions": {version: strip(versions[version]["schema"]["openAPIV3Schema"])},
           "served": {version: versions[version].get("served")},
           "storage": [v["name"] for v in crd["spec"]["versions"] if v.get("storage")]}
    raw = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
    with gzip.GzipFile(out, "wb", mtime=0) as fh:
        fh.write(raw)
    print(out, doc["kind"], version)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
