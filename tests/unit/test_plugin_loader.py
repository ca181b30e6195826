"""cli/plugins.py: pydantic's plugin loader left unread while plugins are off, and pydantic's behaviour unchanged.

Each test runs in a fresh interpreter (a subprocess): the stand-in lives in ``sys.modules``, which the test process
shares with every other test."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import textwrap

import pydantic.plugin._schema_validator as schema_validator


def _run(code: str, env_value: str | None) -> str:
    env = {"PATH": "", "PYTHONDONTWRITEBYTECODE": "1"}
    if env_value is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = env_value
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                         timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


PROBE = """
    import sys
    from quantadvise.cli.plugins import skip_plugin_loader
    placed = skip_plugin_loader()
    from pydantic import BaseModel, TypeAdapter
    class A(BaseModel):
        x: int
    assert A(x="4").x == 4 and TypeAdapter(float).validate_python("2.5") == 2.5
    print(placed, "importlib.metadata" in sys.modules, type(sys.modules["pydantic.plugin._loader"]).__name__)
"""


def test_plugins_off_validators_build_without_reading_package_metadata():
    # every value pydantic's get_plugins takes for "off" (pydantic/plugin/_loader.py: '__all__', '1', 'true')
    for value in ("__all__", "1", "true"):
        assert _run(PROBE, value) == "True False _NoPlugins", value


def test_plugins_on_nothing_is_replaced():
    # unset, or naming plugins to skip: pydantic's own loader reads the entry points
    for value in (None, "logfire", "0"):
        assert _run(PROBE, value) == "False True module", value


def test_other_names_and_plugins_turned_on_later_read_the_real_loader():
    code = """
        import os, sys
        from quantadvise.cli.plugins import skip_plugin_loader
        skip_plugin_loader()
        loader = sys.modules["pydantic.plugin._loader"]
        assert tuple(loader.get_plugins()) == ()
        assert loader.PYDANTIC_ENTRY_POINT_GROUP == "pydantic"  # not ours: the real module's
        os.environ["PYDANTIC_DISABLE_PLUGINS"] = "someplugin"
        print(type(loader.get_plugins()).__name__, type(sys.modules["pydantic.plugin._loader"]).__name__)
    """
    # the real get_plugins with plugins on returns its registry's values (no plugins installed: empty)
    assert _run(code, "__all__") == "dict_values module"


def test_pydantic_reads_only_get_plugins_from_its_loader():
    """The stand-in serves ``get_plugins`` itself; if a pydantic release imports more names from its loader,
    they still come from the real module (``__getattr__``), and this test says the stand-in needs a look."""
    tree = ast.parse(inspect.getsource(schema_validator))
    names = {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module == "_loader"
             for a in node.names}
    assert names == {"get_plugins"}
