"""Write data/moe_configs/<engine>-<version>.yaml: the tuned fused-MoE Triton configurations a release ships, and
how the release names and looks them up, read from its own wheel or sdist (cited file:line).

vLLM and SGLang run routed experts through their Triton fused-MoE kernel with a tile configuration per token count
read from a JSON file named after the experts per GPU (E), the per-GPU intermediate size (N), the GPU's torch device
name and the quantization (dtype, block shape); with no such file the kernel runs its default tiles and the engine
logs that performance might be sub-optimal. One file per release that has a kernel table on file
(data/kernels/<engine>-<version>.yaml: the releases whose fused-MoE routes are known).

    ENGINE_WHEELS_DIR=/path/to/artifacts python tools/extract_moe_configs.py [--check]

``--check`` rewrites nothing and exits 1 when a file on file differs from what the artifact gives.
Maintainer tooling: never imported by the ``quantadvise`` package.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from wheel_source import NotFound, Wheel, call_message  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "moe_configs"

# per engine: the module that names and looks up the files, the folder they ship in (SGLang: one subfolder per Triton
# version), the anchors of the facts cited
LAYOUT: dict[str, dict[str, str]] = {
    "vllm": {
        "module": "vllm/model_executor/layers/fused_moe/fused_moe.py",
        "configs": "vllm/model_executor/layers/fused_moe/configs/",
        "default_message": "Using default MoE config. Performance might be sub-optimal!",
    },
    "sglang": {
        "module": "sglang/srt/layers/moe/moe_runner/triton_utils/fused_moe_triton_config.py",
        "configs": "sglang/srt/layers/moe/moe_runner/triton_utils/configs/",
        "default_message": "Using default MoE kernel config. Performance might be sub-optimal!",
    },
}


def artifact(engine: str, version: str) -> Path | None:
    folder = os.environ.get("ENGINE_WHEELS_DIR")
    if not folder:
        return None
    found = [p for p in Path(folder).glob(f"{engine}-{version}*")
             if p.name.startswith(f"{engine}-{version}-") or p.name == f"{engine}-{version}.tar.gz"]
    return min(found, key=lambda p: not p.name.endswith(".whl"), default=None)  # a wheel before the sdist


def release_doc(engine: str, version: str, path: Path) -> dict[str, Any]:
    lay = LAYOUT[engine]
    w = Wheel(path)
    rel = lay["module"]
    name_fn = w.grep(rel, r"^def get_config_file_name\(")
    name_ret = w.grep(rel, r'return f"E=\{E\},N=\{N\},device_name=', name_fn.line)
    source_text = "\n".join(w.lines(rel)[name_fn.line - 1:name_ret.line])
    try:
        h200 = w.grep(rel, r'"H200" in device_name', name_fn.line)
        h200_at: str | None = h200.cite() if h200.line < name_ret.line else None
    except NotFound:
        h200_at = None
    lookup = w.grep(rel, r"^def get_moe_configs\(")
    shape = w.grep(rel, r"E, _, N = w2_shape")
    message = call_message(w, rel, lay["default_message"])
    prefix = lay["configs"]
    files = []
    for n in w.names:
        rest = n[len(prefix):-len(".json")] if n.startswith(prefix) and n.endswith(".json") else None
        if rest is not None and (rest.count("/") == 0 if engine == "vllm" else
                                 rest.count("/") == 1 and rest.startswith("triton_")):
            files.append(rest)
    files.sort()
    if not files:
        raise NotFound(f"{path.name}: no tuned configurations under {prefix}")
    return {
        "schema_version": 1,
        "engine": engine,
        "version": version,
        "source": f"{path.name} (sha256 {w.sha256[:16]}...): {prefix}*.json"
                  + (" (one folder per Triton version)" if engine == "sglang" else ""),
        "as_of": date.today().isoformat(),
        "file_name": f"{rel}:{name_fn.line}-{name_ret.line} (get_config_file_name)",
        "block_shape_spaces": '.replace(" ", "")' not in source_text.split("block_shape_selector", 1)[-1],
        "h200_family": h200_at,
        "lookup": f"{lookup.cite()} (get_moe_configs: the tuned file, else the default tiles and the warning)",
        "shape": f"{shape.cite()} (E, _, N = w2_shape: the experts and the intermediate size one GPU holds)",
        "default_message": message.value.split(" Config file not found")[0].strip(),
        "default_message_at": message.cite(),
        "configs": files,
    }


def dump(doc: dict[str, Any]) -> str:
    head = ("# Written by tools/extract_moe_configs.py from the release's own artifact: the tuned fused-MoE Triton\n"
            "# configurations it ships (file stems) and where it names and looks them up (docs/calibration.md §11).\n")
    lines = []
    for k, v in doc.items():
        if k == "configs":
            lines += ["configs:", *(f"  - {json.dumps(c)}" for c in v)]
        else:  # JSON scalars are YAML's; the date unquoted, as YAML reads a date
            lines.append(f"{k}: {v if k == 'as_of' else json.dumps(v)}")
    return head + "\n".join(lines) + "\n"


def releases() -> list[tuple[str, str]]:
    out = []
    for p in sorted((ROOT / "data" / "kernels").glob("*.yaml")):
        engine, _, version = p.stem.partition("-")
        if engine in LAYOUT:
            out.append((engine, version))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    bad = 0
    for engine, version in releases():
        path = artifact(engine, version)
        if path is None:
            print(f"{engine} {version}: no artifact in ENGINE_WHEELS_DIR, skipped")
            continue
        doc = release_doc(engine, version, path)
        target = OUT / f"{engine}-{version}.yaml"
        text = dump(doc)
        if a.check:
            old = target.read_text() if target.exists() else ""
            same = [x for x in old.splitlines() if not x.startswith("as_of:")] == \
                [x for x in text.splitlines() if not x.startswith("as_of:")]
            print(f"{engine} {version}: {'ok' if same else 'DIFFERS'}")
            bad += not same
        else:
            OUT.mkdir(exist_ok=True)
            target.write_text(text)
            print(f"wrote {target.relative_to(ROOT)} ({len(doc['configs'])} configurations)")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
