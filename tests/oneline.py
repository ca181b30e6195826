"""The one ``Error:`` line a refused input ends with (exit 2, no traceback), shared by the hostile-input tests."""

from __future__ import annotations


def one_error(r, *fragments: str) -> str:
    """The single ``Error:`` line of ``r`` (a CLI run that must exit 2 without a traceback), holding every fragment."""
    assert r.code == 2, (r.code, r.stdout[-800:], r.stderr[-2000:])
    errors = [x for x in r.stderr.splitlines() if x.startswith("Error: ")]
    assert len(errors) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    for f in fragments:
        assert f in errors[0], errors[0]
    return errors[0]
