"""Serving stacks whose workers start an engine with options of their own: NVIDIA Dynamo's
``python -m dynamo.vllm`` / ``python -m dynamo.sglang`` (``data/flags/launchers/dynamo-<version>.yaml``,
written by ``tools/extract_dynamo_flags.py`` from the ai-dynamo wheel).

Such a worker parses its command line in steps (dynamo/vllm/args.py ``_parse_cli_args``, dynamo/sglang/args.py
``parse_args`` in 1.6.1): the stack's own parser takes its options (``parse_known_args``), the worker's router
parser takes the router's, and the engine's parser (vLLM's ``AsyncEngineArgs.add_cli_args``, SGLang's
``ServerArgs.add_cli_args``) parses what is left, refusing what it does not register. So the stack's options
are known and are not the engine's; every other option is judged as the engine release's. Pure: the tables
are values (``catalog.stack_launchers`` reads them).
"""

from datetime import date
from functools import cached_property
from typing import Literal

from ..results import Strict
from .kernels import WheelSource
from .vocabulary import OptionRow

STACK_DATA_VERSION = 1


class StackLauncher(Strict):
    """One ``python -m MODULE`` worker of a stack and the engine it starts."""

    module: str  # dynamo.vllm
    engine: Literal["vllm", "sglang"]
    entry: str  # file:line of the function that parses the worker's command line
    engine_parser: str  # file:line where the engine's own options are registered on the engine's parser
    router_parser: str | None = None  # file:line of the router parser that takes its options out first
    # the engine release's options this parser registers are those cited in these files (vLLM: AsyncEngineArgs'
    # vllm/engine/arg_utils.py, not `vllm serve`'s frontend options); empty: all of the release's server options
    engine_option_files: tuple[str, ...] = ()
    abbreviations: bool  # the stack's parser reads a unique prefix of its own long option as that option
    abbreviations_source: str
    options: tuple[OptionRow, ...]  # every option the stack takes before the engine's parser runs

    @cached_property
    def registered(self) -> dict[str, OptionRow]:
        """Every option string the stack's parsers take -> its row (``--no-X`` of a negatable one included)."""
        out: dict[str, OptionRow] = {}
        for row in self.options:
            for name in row.names:
                out.setdefault(name, row)
                if row.kind == "negatable" and name.startswith("--"):
                    out.setdefault("--no-" + name[2:], row)
        return out

    def passes_to_engine(self, source: str) -> bool:
        """Whether the engine's parser in this worker registers an option of the release cited at ``source``."""
        return not self.engine_option_files or source.split(":", 1)[0] in self.engine_option_files


class StackImage(Strict):
    """A stack's runtime image and the engine release it runs (the release the stack pins)."""

    repository: str  # nvcr.io/nvidia/ai-dynamo/vllm-runtime
    engine: Literal["vllm", "sglang"]
    engine_version: str
    source: str


class StackRelease(Strict):
    """One release of a serving stack (``data/flags/launchers/<stack>-<version>.yaml``)."""

    schema_version: int
    stack: str
    version: str
    source: WheelSource
    as_of: date
    images: tuple[StackImage, ...]
    launchers: tuple[StackLauncher, ...]
    not_extracted: tuple[str, ...] = ()

    def launcher(self, module: str) -> StackLauncher | None:
        return next((x for x in self.launchers if x.module == module), None)

    def image(self, repository: str) -> StackImage | None:
        """The runtime image ``repository`` (its path without the tag; a registry host may be left out)."""
        return next((i for i in self.images if repository == i.repository or i.repository.endswith("/" + repository)),
                    None)
