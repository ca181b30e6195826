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
