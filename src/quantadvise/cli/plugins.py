"""pydantic's plugin loader, left unread while plugins are off.

pydantic finds its plugins (observability hooks other packages register under the ``pydantic`` entry-point group)
in ``pydantic.plugin._loader``, imported at the first validator a process builds (typer builds one per option it
reads). That module imports ``importlib.metadata`` at its top (with ``email``, ``zipfile``, ``csv``: ~10-15 ms of a
cold command) although its ``get_plugins`` returns no plugins without reading any metadata when
``PYDANTIC_DISABLE_PLUGINS`` is ``__all__``, ``1`` or ``true`` — as the CLI sets it unless you set it yourself
(``cli/app.py``). :func:`skip_plugin_loader` puts in its place a module whose ``get_plugins`` returns what the real
one returns then: no plugins. Any other name read from it imports the real module and reads it there, and with
plugins on (the variable unset or naming plugins) nothing is replaced, so pydantic behaves as it does without this.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Iterable
from typing import Any

LOADER = "pydantic.plugin._loader"
OFF = ("__all__", "1", "true")  # the values under which pydantic's get_plugins returns () at once


def skip_plugin_loader(environ: Any = os.environ) -> bool:
    """Put the no-plugins loader in place when plugins are off and pydantic has not loaded its own; True if it did."""
    if environ.get("PYDANTIC_DISABLE_PLUGINS") not in OFF or LOADER in sys.modules:
        return False
    sys.modules[LOADER] = _NoPlugins(LOADER, __doc__)
    return True


class _NoPlugins(types.ModuleType):
    """``pydantic.plugin._loader`` while plugins are off: ``get_plugins()`` is ``()`` (as pydantic's own returns
    with ``PYDANTIC_DISABLE_PLUGINS`` off); any other attribute is the real module's, imported on first use."""

    @staticmethod
    def get_plugins() -> Iterable[Any]:
        if os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in OFF:  # turned on since: pydantic's own decides
            return _real().get_plugins()
        return ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # the import system asking what kind of module this is (``__path__``): not one
            raise AttributeError(name)
        return getattr(_real(), name)


def _real() -> types.ModuleType:
    """pydantic's own loader, imported in place of the stand-in."""
    if isinstance(sys.modules.get(LOADER), _NoPlugins):
        del sys.modules[LOADER]
    module = importlib.import_module(LOADER)
    parent = sys.modules.get("pydantic.plugin")
    if parent is not None:
        parent._loader = module  # type: ignore[attr-defined]
    return module
