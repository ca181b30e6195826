"""data/moe_configs/ against the artifacts it was read from (``ENGINE_WHEELS_DIR``; skipped without it): the file
list is the release's own, and every cited line says what the data says it does."""

from __future__ import annotations

import re
import tarfile
import zipfile

import pytest

from quantadvise import catalog
from quantadvise.catalog import loader
from tests.data.wheels import wheel_or_skip

STEMS = loader.family("moe_configs").stems()


def _members(path) -> dict[str, bytes | None]:
    """Every member path inside the package (an sdist's top folder dropped); .py sources read."""
    out: dict[str, bytes | None] = {}
    if path.name.endswith(".tar.gz"):
        with tarfile.open(path, "r:gz") as tar:
            for m in tar:
                if m.isfile() and "/" in m.name:
                    rel = m.name.split("/", 1)[1]
                    f = tar.extractfile(m) if rel.endswith(".py") else None
                    out[rel] = f.read() if f is not None else None
    else:
        with zipfile.ZipFile(path) as z:
            for n in z.namelist():
                out[n] = z.read(n) if n.endswith(".py") else None
    return out


def _lines(members: dict[str, bytes | None], cite: str) -> list[str]:
    m = re.match(r"([\w/.]+\.py):(\d+)(?:-(\d+))?", cite)
    assert m, cite
    text = members[m.group(1)]
    assert text is not None
    lines = text.decode().splitlines()
    return lines[int(m.group(2)) - 1:int(m.group(3) or m.group(2))]


@pytest.mark.parametrize("stem", STEMS)
def test_the_list_and_its_citations_are_the_release_s_own(stem):
    engine, _, version = stem.partition("-")
    c = catalog.moe_configs(engine, version)
    members = _members(wheel_or_skip(c.source.split(" ", 1)[0]))
    folder = c.source.split(": ", 1)[1].split("*.json", 1)[0]
    shipped = sorted(n[len(folder):-5] for n in members if n.startswith(folder) and n.endswith(".json")
                     and n[len(folder):].count("/") == (1 if engine == "sglang" else 0))
    assert list(c.configs) == shipped
    name = _lines(members, c.file_name)
    assert name[0].startswith("def get_config_file_name(") and 'device_name={device_name}' in name[-1]
    assert (".replace(\" \", \"\")" not in "\n".join(name).split("block_shape_selector", 1)[1]) == c.block_shape_spaces
    if c.h200_family is not None:
        assert '"H200" in device_name' in _lines(members, c.h200_family)[0]
    assert "E, _, N = w2_shape" in _lines(members, c.shape)[0]
    assert _lines(members, c.lookup)[0].startswith("def get_moe_configs(")
    assert c.default_message in " ".join(x.strip().strip('"') for x in _lines(members, c.default_message_at))
