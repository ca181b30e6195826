"""Write src/quantadvise/cli/fast_spec.py: the options of each command that runs without typer on a plain
command line (``cli/fastpath.py``), read from its typer declaration. Run it after changing such a command's
options; tests/cli/test_fastpath.py fails until it is run.

    python tools/fast_spec.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from quantadvise.cli.typer_app import fast_spec

TARGET = Path(__file__).resolve().parent.parent / "src" / "quantadvise" / "cli" / "fast_spec.py"
HEADER = '''"""The options of the commands ``fastpath.py`` parses without typer, as their typer declarations give them.

Written by ``python tools/fast_spec.py`` from ``typer_app.fast_spec``; do not edit (tests/cli/test_fastpath.py
fails when it is stale)."""

from typing import Any

'''


def literal(value: Any) -> str:
    """``value`` (None, a bool, a number, text, a list or dict of them) as Python source."""
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a Python string literal
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {literal(v)}" for k, v in sorted(value.items())) + "}"
    raise TypeError(f"{value!r} is not plain data")


def source(spec: dict[str, Any]) -> str:
    lines = ["SPEC: dict[str, Any] = {"]
    for name, command in spec.items():  # one parameter a line: a change reads as one line of diff
        lines.append(f'    {json.dumps(name)}: {{"params": [')
        for p in command["params"]:
            row = f"        {literal(p)},"
            if len(row) > 120:  # the house's line length: a long row one key a line
                row = "        {\n" + "".join(f"            {json.dumps(k)}: {literal(v)},\n"
                                             for k, v in sorted(p.items())) + "        },"
            lines.append(row)
        lines.append("    ]},")
    lines.append("}")
    return HEADER + "\n".join(lines) + "\n"


def main() -> None:
    TARGET.write_text(source(fast_spec()), encoding="utf-8")
    print(f"wrote {TARGET.name}")


if __name__ == "__main__":
    main()
