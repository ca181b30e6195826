"""The Python API, one small module per command: each resolves names and files (the only I/O the
commands do), calls the pure core and returns a typed result whose ``model_dump(mode="json")`` is
exactly what ``--format json`` prints.

Import the functions from ``quantadvise`` (``quantadvise.size``, ``quantadvise.recommend`` ...) or
from their module here (``quantadvise.api.size.size``). This package deliberately exports nothing
itself: a submodule named like its function (``api.size``) would shadow it once imported.
"""
