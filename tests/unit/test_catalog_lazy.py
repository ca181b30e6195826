"""``quantadvise.catalog`` imports its table families on first use (start-up, issue 30)."""

from __future__ import annotations

import subprocess
import sys


def test_every_exported_name_resolves_lazily():
    from quantadvise import catalog

    assert sorted(catalog.__all__) == sorted(catalog._NAMES)  # a new export needs its module named
    for name in catalog.__all__:
        assert getattr(catalog, name) is getattr(__import__(f"quantadvise.catalog.{catalog._NAMES[name]}",
                                                            fromlist=[name]), name)


def test_importing_the_package_loads_no_table_family():
    code = ("import sys, quantadvise.catalog; "
            "print(sorted(m for m in sys.modules if m.startswith('quantadvise.catalog.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_unknown_name_is_an_attribute_error():
    import pytest

    from quantadvise import catalog

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        catalog.nope  # noqa: B018


def test_a_bundled_model_needs_no_hub_module():
    # `size` and `recommend` of a bundled model resolve it from data/ alone: catalog/hub.py (the Hub and
    # HF-cache search) is not imported, nor the regular-expression tokenizer pydantic would compile to read
    # inspect.signature(list) for a `default_factory=list` field (1.5 ms of start-up, issue 30)
    code = ("import sys, io, contextlib\n"
            "from quantadvise.cli.app import main\n"
            "for argv in (['size', 'meta-llama/Llama-3-8B', '--bits', '4', '--ctx', '4096'],\n"
            "             ['recommend', '--batch', '64', '--ctx', '2048']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        try: main(argv)\n"
            "        except SystemExit: pass\n"
            "import tokenize\n"
            "print('quantadvise.catalog.hub' in sys.modules, tokenize._compile.cache_info().currsize)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"}).stdout
    assert out.split() == ["False", "0"]


def test_size_and_roofline_read_a_bundled_config_once(monkeypatch):
    # the architecture, the checkpoint as shipped and the context limit come from one read of config.json
    # (size with --ctx read it three times: load_model, the shipped-scheme check, the context warning)
    import quantadvise as qa
    from quantadvise import catalog
    from quantadvise.catalog import models

    reads: list[str] = []
    real = models.bundled_config
    counted = lambda row: reads.append(row.id) or real(row)  # noqa: E731
    monkeypatch.setattr(models, "bundled_config", counted)
    monkeypatch.setattr(catalog, "bundled_config", counted, raising=False)  # the package's lazily bound name
    qa.size("meta-llama/Llama-3-8B", bits=4, ctx=4096)
    assert reads == ["meta-llama/Meta-Llama-3-8B"]
    reads.clear()
    qa.roofline("meta-llama/Llama-3-8B", "bf16", batches="1", ctx="4096")
    assert reads == ["meta-llama/Meta-Llama-3-8B"]
