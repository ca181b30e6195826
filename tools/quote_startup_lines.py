"""Quote the wheel lines data/engine_startup.yaml cites (maintainers, by hand; never at run time).

    pip download vllm==0.33.0 vllm==0.34.0 sglang==0.5.23 --no-deps -d /tmp/wheels  # one at a time
    python tools/quote_startup_lines.py /tmp/wheels > tests/fixtures/engine_quotes/startup.json

Every ``file:line`` / ``file:first-last`` under a release's ``lines:`` is read from the release's wheel
(named in data/engines/<release>.yaml's ``source.artifact``) and written verbatim (stripped), with the
wheel's sha256, so tests/data/test_engine_startup.py can check the facts against the lines offline.
Where the engine data was extracted from the release's sdist (``<package>-<version>.tar.gz``: vLLM
0.34.0), the start-up facts were still read from its wheel: the one the release's own ``source`` in
data/engine_startup.yaml names (the sdist's Python sources are the wheel's; tests/data/test_kernel_sources.py
checks the engine data's quotes in that wheel).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
CITE = re.compile(r"([\w./-]+\.py):(\d+)(?:-(\d+))?")
WHEEL = re.compile(r"[\w.+-]+\.whl")


def wheel_name(rel: dict[str, object], engine: dict[str, object]) -> str:
    """The wheel a release's start-up facts were read from: the engine data's artifact, or, where that is the
    release's sdist, the wheel the start-up row's ``source`` names (of the same package and version)."""
    src = engine["source"]
    assert isinstance(src, dict)
    artifact = str(src["artifact"])
    if artifact.endswith(".whl"):
        return artifact
    if artifact != f"{src['package']}-{src['version']}.tar.gz":
        raise SystemExit(f"{rel['id']}: {artifact} is neither a wheel nor the release's sdist")
    named = WHEEL.findall(str(rel["source"]))
    if len(named) != 1 or not named[0].startswith(f"{src['package']}-{src['version']}-"):
        raise SystemExit(f"{rel['id']}: its source must name the one {src['package']} {src['version']} wheel it was read from")
    return named[0]


def main(wheels: Path) -> dict[str, object]:
    doc = yaml.safe_load((REPO / "data" / "engine_startup.yaml").read_text())
    out: dict[str, object] = {}
    for rel in doc["releases"]:
        engine = yaml.safe_load((REPO / "data" / "engines" / f"{rel['id']}.yaml").read_text())
        wheel = wheels / wheel_name(rel, engine)
        lines: dict[str, str] = {}
        with zipfile.ZipFile(wheel) as z:
            for cite in rel["lines"].values():
                for m in CITE.finditer(cite):
                    path, first, last = m.group(1), int(m.group(2)), int(m.group(3) or m.group(2))
                    text = z.read(path).decode("utf-8").splitlines()
                    for i in range(first, last + 1):
                        lines[f"{path}:{i}"] = text[i - 1].strip()
        out[rel["id"]] = {"wheel": wheel.name, "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
                          "lines": lines}
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    json.dump(main(Path(sys.argv[1])), sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
