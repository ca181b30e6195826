"""Engine arguments from the artifacts a deployment repo commits.

Finds ``vllm serve MODEL ...``, ``python -m vllm.entrypoints.openai.api_server --model ...``,
``python -m sglang.launch_server --model-path ...`` and ``sglang serve ...`` in

- shell scripts: line continuations, quoting, comments, heredocs, ``$VAR`` / ``${VAR:-default}``
  resolved from earlier assignments and defaults (unresolved references stay visible, e.g.
  ``${MODEL}``, and are listed), ``docker run IMAGE ARGS`` of an engine image;
- Dockerfiles: ``ENTRYPOINT`` / ``CMD`` in exec (JSON) and shell form, the final stage's, with
  ``ENV`` (and ``ARG`` defaults inside ``ENV``) resolved, and the engine image's own entrypoint
  when ``FROM vllm/vllm-openai`` leaves it in place;
- Kubernetes manifests and Helm values: every container-like mapping's ``command`` / ``args`` (YAML
  lists, ``sh -c`` strings, ``$(VAR)`` from the container's ``env``), multi-document;
- docker-compose: each service's ``command`` / ``entrypoint`` (string or list) with compose
  interpolation (``${VAR:-default}``, ``$$``) from the ``.env`` beside the file;
- any other YAML string that holds an engine command (a CI step's ``run: |`` block).

Each hit is an :class:`EngineInvocation` with the file and line of the command (the line of its
first token) and of every flag, the understood flags typed (vLLM and SGLang spellings: model,
``--quantization``/``-q``, ``--kv-cache-dtype``, ``--max-num-seqs``/``--max-running-requests``,
``--max-model-len``/``--context-length``, ``--tensor-parallel-size``/``-tp``/``--tp-size``/``--tp``,
``--pipeline-parallel-size``, ``--dtype``, ``--gpu-memory-utilization``/``--mem-fraction-static``,
``--max-num-batched-tokens``, ``--speculative-config``), the GPUs the container is given, the
engine version from the image tag or a pinned ``pip install``, and every other flag kept in
``other`` (ignored). Things that do not hold at run time are warnings on the invocation: an
``ARG`` used after the build, ``$VAR`` in an exec-form ``CMD``, a shell-form ``CMD`` appended to
the engine image's entrypoint, a flag given twice, a value the engine would refuse.

Parsing is pure over text; :func:`read_paths` reads the files. A file that cannot be parsed is a
:class:`~quantadvise.errors.ConfigError` naming the file and line when it was named explicitly or
mentions an engine; otherwise (an unrelated script in a scanned folder) it is skipped with a
warning.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..errors import ConfigError, InputError
from ..files import read_text

SCHEMA_VERSION = 1

Engine = Literal["vllm", "sglang"]
Source = Literal["shell", "dockerfile", "kubernetes", "helm-values", "compose", "yaml"]


# --- the result -----------------------------------------------------------------------------------


class EngineInvocation(BaseModel):
    """One engine launch found in a file, with the flags that matter parsed and located."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    engine: Engine
    file: str
    line: int  # the line of the command's first token (the engine's, or the image's arguments)
    source: Source
    context: str | None = None  # "Deployment/llm container vllm", "service api", "CMD", "docker run" ...
    image: str | None = None
    engine_version: str | None = None  # from the image tag or a pinned `pip install vllm==...`
    argv: list[str]
    model: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    dtype: str | None = None
    max_num_seqs: int | None = None
    max_model_len: int | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    gpu_memory_utilization: float | None = None
    max_num_batched_tokens: int | None = None
    speculative_config: dict[str, Any] | str | None = None
    gpu_count: int | None = None  # GPUs the container is given: k8s resources, compose devices, docker --gpus
    flag_lines: dict[str, int] = {}  # understood field (or spelled flag, for `other`) -> line
    raw: dict[str, str] = {}  # understood field -> the value as written (after env resolution)
    unresolved_env: list[str] = []
    other: dict[str, str | bool] = {}
    warnings: list[str] = []

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"


class DeploymentScan(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)
    schema_version: int = SCHEMA_VERSION
    paths: list[str]
    files_scanned: list[str]
    invocations: list[EngineInvocation]
    warnings: list[str] = []


# --- flags ----------------------------------------------------------------------------------------

_VLLM_FLAGS = {
    "--model": "model",
    "--quantization": "quantization", "-q": "quantization",
    "--kv-cache-dtype": "kv_cache_dtype",
    "--max-num-seqs": "max_num_seqs",
    "--max-model-len": "max_model_len",
    "--tensor-parallel-size": "tensor_parallel_size", "-tp": "tensor_parallel_size",
    "--pipeline-parallel-size": "pipeline_parallel_size", "-pp": "pipeline_parallel_size",
    "--dtype": "dtype",
    "--gpu-memory-utilization": "gpu_memory_utilization",
    "--max-num-batched-tokens": "max_num_batched_tokens",
    "--speculative-config": "speculative_config",
}
_SGLANG_FLAGS = {
    "--model-path": "model", "--model": "model",
    "--quantization": "quantization",
    "--kv-cache-dtype": "kv_cache_dtype",
    "--max-running-requests": "max_num_seqs",
    "--context-length": "max_model_len",
    "--tp-size": "tensor_parallel_size", "--tensor-parallel-size": "tensor_parallel_size", "--tp": "tensor_parallel_size",
    "--pp-size": "pipeline_parallel_size", "--pipeline-parallel-size": "pipeline_parallel_size",
    "--dtype": "dtype",
    "--mem-fraction-static": "gpu_memory_utilization",
}
_INT_FIELDS = {"max_num_seqs", "max_model_len", "tensor_parallel_size", "pipeline_parallel_size",
               "max_num_batched_tokens"}
# vLLM parses these with human_readable_int: 32k = 32000, 32K = 32768.
_VLLM_HUMAN_INT = {"max_model_len", "max_num_batched_tokens"}
# Flags known to take no value (so the next token is not swallowed as one).
_BOOL_FLAGS = frozenset({
    "--trust-remote-code", "--enforce-eager", "--enable-prefix-caching", "--enable-chunked-prefill",
    "--disable-log-requests", "--disable-log-stats", "--enable-log-requests", "--enable-lora",
    "--enable-auto-tool-choice", "--enable-expert-parallel", "--disable-custom-all-reduce",
    "--disable-sliding-window", "--skip-tokenizer-init", "--disable-frontend-multiprocessing",
    "--enable-reasoning", "--disable-fastapi-docs", "--enable-prompt-tokens-details", "--enable-sleep-mode",
    "--async-scheduling", "--enable-eplb", "--headless", "--enable-server-load-tracking",
    "--enable-force-include-usage", "--enable-request-id-headers", "--disable-uvicorn-access-log",
    "--use-v2-block-manager", "--enable-log-outputs", "--calculate-kv-scales", "--disable-cascade-attn",
    "--return-tokens-as-token-ids", "--enable-lora-bias", "--fully-sharded-loras",
    "--disable-radix-cache", "--disable-cuda-graph", "--disable-cuda-graph-padding", "--enable-torch-compile",
    "--enable-dp-attention", "--enable-mixed-chunk", "--enable-metrics", "--enable-ep-moe", "--enable-deepep-moe",
    "--disable-overlap-schedule", "--enable-cache-report", "--log-requests", "--enable-p2p-check",
    "--enable-nan-detection", "--enable-two-batch-overlap", "--disable-chunked-prefix-cache",
    "--enable-hierarchical-cache", "--show-time-cost", "--enable-dp-lm-head", "--enable-multimodal",
    "--allow-auto-truncate", "--enable-memory-saver", "--enable-deterministic-inference",
    "--enable-priority-scheduling", "--disable-shared-experts-fusion", "--enable-symm-mem",
})
_BOOL_PREFIXES = ("--enable-", "--disable-", "--no-")

_VLLM_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
_SGLANG_MODULES = ("sglang.launch_server", "sglang_router.launch_server")
_ENGINE_MARKER = re.compile(
    r"\b(?:vllm\s+serve|sglang\s+serve|-m\s+(?:vllm\.entrypoints\.(?:openai\.)?api_server"
    r"|vllm\.entrypoints\.cli\.main|sglang(?:_router)?\.launch_server))\b"
)
_PIP_PIN = re.compile(r"""(?:^|[\s"'])(vllm|sglang)(?:\[[^\]]*\])?==(\d[\w.+\-]*)""")
_NOT_LAUNCH = frozenset({"echo", "printf", "logger", "grep", "sed", "awk", "#"})


# --- words: the common currency of every parser ---------------------------------------------------


@dataclass(frozen=True)
class Word:
    text: str
    line: int
    unresolved: tuple[str, ...] = ()
    assign: bool = False  # NAME=value in assignment position (not word-split)


class _Unknown(tuple):
    """The value of a variable set from something unresolvable (``$(cmd)``, ``$1``)."""


EnvValue = str | _Unknown | None
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL = "@*#?$!-0123456789"


# --- a small POSIX-shell lexer with line numbers and parameter expansion --------------------------


class _Shell:
    """Split shell text into simple commands of :class:`Word` s, expanding variables.

    ``line_map[i]`` is the file line of the text's i-th physical line. ``expand=False`` only
    honours quoting (compose's ``command:`` string is split, not run by a shell).
    """

    _RESERVED = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}",
                           "time", "esac", "exec", "nohup"})
    _DECLARE = frozenset({"export", "declare", "typeset", "readonly", "local"})

    def __init__(self, text: str, file: str, line_map: Sequence[int], env: dict[str, EnvValue] | None = None,
                 *, expand: bool = True, fragment: bool = False):
        self.s = text
        self.file = file
        self.line_map = list(line_map) or [1]
        self.env: dict[str, EnvValue] = env if env is not None else {}
        self.expand = expand
        self.fragment = fragment
        self.i = 0
        self.phys = 0
        self.commands: list[list[Word]] = []
        self._words: list[Word] = []
        self._reset_word()
        self._skip_next = False
        self._heredocs: list[tuple[str, bool]] = []
        self._want_heredoc: bool | None = None

    # line bookkeeping
    @property
    def line(self) -> int:
        return self.line_map[min(self.phys, len(self.line_map) - 1)]

    def _advance_over(self, chunk: str) -> None:
        self.phys += chunk.count("\n")

    def _err(self, msg: str) -> ConfigError:
        return ConfigError(f"{self.file}: line {self.line}: {msg}")

    # word assembly
    def _reset_word(self) -> None:
        self._parts: list[str] = []
        self._unres: list[str] = []
        self._started = False
        self._literal = True  # only unquoted literal characters so far (for NAME= detection)
        self._assign = False
        self._wline = 0

    def _start(self) -> None:
        if not self._started:
            self._started = True
            self._wline = self.line

    def _finish(self) -> None:
        if not self._started:
            return
        w = Word("".join(self._parts), self._wline, tuple(dict.fromkeys(self._unres)), self._assign)
        self._reset_word()
        if self._want_heredoc is not None:
            self._heredocs.append((w.text, self._want_heredoc))
            self._want_heredoc = None
            return
        if self._skip_next:
            self._skip_next = False
            return
        self._words.append(w)

    def _end_command(self) -> None:
        self._finish()
        words, self._words = self._words, []
        self._skip_next = False
        if words:
            self._process(words)

    # parsing
    def run(self) -> list[list[Word]]:
        s, n = self.s, len(self.s)
        while self.i < n:
            c = s[self.i]
            if c == "\\":
                if self.i + 1 < n and s[self.i + 1] == "\n":
                    self.i += 2
                    self.phys += 1
                    continue
                self._start()
                self._literal = False
                if self.i + 1 < n:
                    self._parts.append(s[self.i + 1])
                self.i += 2
                continue
            if c == "'":
                self._start()
                self._literal = False
                j = s.find("'", self.i + 1)
                if j < 0:
                    raise self._err("unterminated single quote")  # self.line is still the opening line
                chunk = s[self.i + 1:j]
                self._parts.append(chunk)
                self._advance_over(chunk)
                self.i = j + 1
                continue
            if c == '"':
                self._start()
                self._literal = False
                self._double_quoted()
                continue
            if c == "$" and self.expand:
                self._dollar(quoted=False)  # starts a word only if the expansion yields text
                continue
            if c == "`" and self.expand:
                self._start()
                self._backtick()
                continue
            if self.fragment:
                self._start()
                self._parts.append(c)
                self._advance_over(c)
                self.i += 1
                continue
            if c == "\n":
                self._end_command()
                self.i += 1
                self.phys += 1
                self._read_heredoc_bodies()
                continue
            if c in " \t\r":
                self._finish()
                self.i += 1
                continue
            if c == "#" and not self._started:
                j = s.find("\n", self.i)
                self.i = n if j < 0 else j
                continue
            if c in "<>" or (c == "&" and s.startswith("&>", self.i)):
                self._redirect()
                continue
            if c in ";&|()":
                self._end_command()
                self.i += 1
                continue
            self._start()
            if c == "=" and self._literal and not self._assign and _NAME.fullmatch("".join(self._parts)):
                self._assign = True
            self._parts.append(c)
            self.i += 1
        if self.fragment:
            self._finish()
            words, self._words = self._words, []
            if words:
                self.commands.append(words)
        else:
            self._end_command()
        return self.commands

    def _double_quoted(self) -> None:
        s, n = self.s, len(self.s)
        self.i += 1
        opened = self.line
        while True:
            if self.i >= n:
                raise ConfigError(f"{self.file}: line {opened}: unterminated double quote")
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < n and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] == "\n":
                    self.phys += 1
                else:
                    self._parts.append(s[self.i + 1])
                self.i += 2
                continue
            if c == "$" and self.expand:
                self._dollar(quoted=True)
                continue
            if c == "`" and self.expand:
                self._backtick()
                continue
            if c == "\n":
                self.phys += 1
            self._parts.append(c)
            self.i += 1

    def _backtick(self) -> None:
        j = self.s.find("`", self.i + 1)
        if j < 0:
            raise self._err("unterminated backquote")
        chunk = self.s[self.i:j + 1]
        self._parts.append(chunk)
        self._unres.append("$(...)")
        self._advance_over(chunk)
        self.i = j + 1

    def _matching(self, start: int, open_: str, close: str) -> int:
        """Index of the ``close`` matching the ``open_`` before ``start`` (quotes skipped)."""
        s, depth, i = self.s, 1, start
        while i < len(s):
            c = s[i]
            if c == "\\":
                i += 2
                continue
            if c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    break
                i = j + 1
                continue
            if c == '"':
                i += 1
                while i < len(s) and s[i] != '"':
                    i += 2 if s[i] == "\\" else 1
                i += 1
                continue
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    return i
            i += 1
        raise self._err(f"unterminated '{open_}' ... '{close}'")

    def _dollar(self, *, quoted: bool) -> None:
        s, n, i = self.s, len(self.s), self.i
        nxt = s[i + 1] if i + 1 < n else ""
        if nxt == "{":
            j = self._matching(i + 2, "{", "}")
            body = s[i + 2:j]
            source = s[i:j + 1]
            self.i = j + 1
            value, unres = self._brace(body, source)
            self._advance_over(source)
        elif nxt == "(":
            j = self._matching(i + 2, "(", ")")
            source = s[i:j + 1]
            self.i = j + 1
            self._advance_over(source)
            value, unres = source, ["$(...)"]
        elif nxt == "'" and not quoted:  # $'...' ANSI-C quoting: taken literally
            j = s.find("'", i + 2)
            if j < 0:
                raise self._err("unterminated $' quote")
            self._start()
            self._literal = False
            self._parts.append(s[i + 2:j])
            self.i = j + 1
            return
        else:
            m = _NAME.match(s, i + 1)
            if m:
                name, self.i = m.group(0), m.end()
                value, unres = self._lookup(name, f"${name}")
            elif nxt and nxt in _SPECIAL:
                self.i = i + 2
                value, unres = f"${nxt}", [nxt]
            else:
                self.i = i + 1
                self._start()
                self._parts.append("$")
                return
        self._emit(value, unres, split=not quoted and not self._assign and not unres)

    def _lookup(self, name: str, source: str) -> tuple[str, list[str]]:
        v = self.env.get(name)
        if isinstance(v, _Unknown):
            return source, [name, *v]
        if v is None:
            return source, [name]
        return v, []

    def _brace(self, body: str, source: str) -> tuple[str, list[str]]:
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(?:(:?[-=+?])(.*))?", body, re.S)
        if not m:
            names = _NAME.findall(body)[:1] or ["${...}"]
            return source, names
        name, op, word = m.group(1), m.group(2), m.group(3)
        value = self.env.get(name)
        known = isinstance(value, str)
        unknown = isinstance(value, _Unknown)
        empty = known and value == ""
        if op is None:
            if known:
                return value, []  # type: ignore[return-value]
            return source, [name, *(value if unknown else ())]
        use_word = (not known and not unknown) if op[0] != ":" else ((not known and not unknown) or empty)
        kind = op[-1]
        if kind in "-=":
            if unknown:
                return source, [name, *value]  # type: ignore[misc]
            if use_word:
                text, unres = self._fragment(word)
                if kind == "=" and not unres:
                    self.env[name] = text
                return text, unres
            return value, []  # type: ignore[return-value]
        if kind == "+":
            if unknown:
                return source, [name, *value]  # type: ignore[misc]
            return ("", []) if use_word else self._fragment(word)
        # '?': an error if unset; the value when set
        if known and not use_word:
            return value, []  # type: ignore[return-value]
        return source, [name]

    def _fragment(self, text: str) -> tuple[str, list[str]]:
        """Expand a word inside ``${NAME:-word}`` (quotes removed, no splitting)."""
        sub = _Shell(text, self.file, [self.line], self.env, expand=self.expand, fragment=True)
        cmds = sub.run()
        if not cmds:
            return "", []
        w = cmds[0][0]
        return w.text, list(w.unresolved)

    def _emit(self, value: str, unres: list[str], *, split: bool) -> None:
        if not split or self.fragment:
            self._start()
            self._unres.extend(unres)
            self._literal = False
            self._parts.append(value)
            return
        pieces = re.split(r"[ \t\n]+", value)
        for k, piece in enumerate(pieces):
            if k > 0:
                self._finish()
            if piece:
                self._start()
                self._literal = False
                self._parts.append(piece)

    def _redirect(self) -> None:
        s = self.s
        if self._started and self._literal and "".join(self._parts).isdigit():
            self._reset_word()  # "2>" : the fd number is not an argument
        else:
            self._finish()
        if s.startswith("<<<", self.i):
            self.i += 3
            self._skip_next = True
            return
        if s.startswith("<<", self.i):
            self.i += 2
            strip = s.startswith("-", self.i)
            self.i += strip
            self._want_heredoc = strip
            return
        op = re.match(r"&>>?|[<>][>&|]?", s[self.i:])
        self.i += len(op.group(0)) if op else 1
        if op and op.group(0).endswith("&"):
            m = re.match(r"[0-9]+-?|-", s[self.i:])
            if m:
                self.i += len(m.group(0))
                return
        self._skip_next = True

    def _read_heredoc_bodies(self) -> None:
        while self._heredocs:
            delim, strip = self._heredocs.pop(0)
            while self.i < len(self.s):
                j = self.s.find("\n", self.i)
                line = self.s[self.i: len(self.s) if j < 0 else j]
                self.i = len(self.s) if j < 0 else j + 1
                self.phys += 1
                if (line.lstrip("\t") if strip else line) == delim:
                    break

    # command bookkeeping: assignments update the environment, the rest is kept
    def _process(self, words: list[Word]) -> None:
        while words and words[0].text in self._RESERVED and not words[0].unresolved:
            words = words[1:]
        if not words:
            return
        first = words[0].text
        if first in self._DECLARE:
            for w in words[1:]:
                if w.assign:
                    self._assign_var(w)
            return
        if all(w.assign for w in words):
            for w in words:
                self._assign_var(w)
            return
        if first == "eval" and len(words) > 1:
            text = " ".join(w.text for w in words[1:])
            sub = _Shell(text, self.file, [words[1].line], self.env, expand=self.expand)
            self.commands.extend(sub.run())
            return
        self.commands.append(words)

    def _assign_var(self, w: Word) -> None:
        name, _, value = w.text.partition("=")
        self.env[name] = _Unknown(w.unresolved) if w.unresolved else value


def split_shell(text: str, file: str = "<text>", *, first_line: int = 1, env: Mapping[str, EnvValue] | None = None,
                line_map: Sequence[int] | None = None, expand: bool = True) -> list[list[Word]]:
    """Shell text -> simple commands (lists of words with lines); variables expanded from ``env`` and
    from assignments earlier in the text."""
    lines = list(line_map) if line_map is not None else [first_line + k for k in range(text.count("\n") + 1)]
    return _Shell(text, file, lines, dict(env or {}), expand=expand).run()


# --- from words to an invocation --------------------------------------------------------------------


@dataclass
class _Ctx:
    file: str
    source: Source
    context: str | None = None
    image: str | None = None
    engine_version: str | None = None
    implicit: Engine | None = None  # the image's entrypoint is this engine's server
    line: int | None = None  # where an implicit invocation starts, when there are no words
    gpus: tuple[str, int] | None = None  # (the request as written, its line)
    warnings: list[str] = field(default_factory=list)


def parse_image(image: str) -> tuple[Engine | None, bool, str | None]:
    """(engine, whether the image's entrypoint is the engine's server, version from the tag)."""
    ref = image.split("@", 1)[0]
    name, tag = ref, None
    if ":" in ref.rsplit("/", 1)[-1]:
        name, tag = ref.rsplit(":", 1)
    last = PurePosixPath(name).name
    engine: Engine | None = None
    entry = False
    if last in ("vllm-openai", "vllm-openai-rocm", "vllm-openai-xpu"):
        engine, entry = "vllm", True
    elif last == "sglang":
        engine = "sglang"
    version = None
    if tag and engine is not None:
        m = re.match(r"v?(\d+\.\d+(?:\.\d+)?(?:(?:\.post|rc|\.dev|a|b)\d+)?)", tag)
        version = m.group(1) if m else None
    return engine, entry, version


def _find_engine(words: Sequence[Word]) -> tuple[Engine, int, int, bool] | None:
    """(engine, index of the engine token, index of its first argument, positional model allowed)."""
    if not words or words[0].text in _NOT_LAUNCH:
        return None
    for i, w in enumerate(words):
        nxt = words[i + 1].text if i + 1 < len(words) else ""
        base = w.text.rsplit("/", 1)[-1]
        if base == "vllm" and nxt == "serve":
            return "vllm", i, i + 2, True
        if base == "sglang" and nxt == "serve":
            return "sglang", i, i + 2, False
        if w.text == "-m" or (w.text.startswith("-m") and w.text[2:] in (*_VLLM_MODULES, *_SGLANG_MODULES)):
            mod = nxt if w.text == "-m" else w.text[2:]
            skip = 2 if w.text == "-m" else 1
            if mod in _VLLM_MODULES:
                return "vllm", i, i + skip, False
            if mod == "vllm.entrypoints.cli.main" and i + 2 < len(words) and words[i + 2].text == "serve":
                return "vllm", i, i + 3, True
            if mod in _SGLANG_MODULES:
                return "sglang", i, i + skip, False
    return None


def _docker_run_image(words: Sequence[Word]) -> tuple[int, str] | None:
    """Index and name of an engine image in a ``docker run ...`` command."""
    for i, w in enumerate(words[:-1]):
        if w.text.rsplit("/", 1)[-1] in ("docker", "podman", "nerdctl") and words[i + 1].text == "run":
            for j in range(i + 2, len(words)):
                engine, _, _ = parse_image(words[j].text)
                if engine is not None and not words[j].text.startswith("-"):
                    return j, words[j].text
    return None


def _human_int(text: str, vllm: bool) -> int:
    t = text.strip()
    if vllm:
        m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmgtKMGT])", t)
        if m:
            num, suf = m.groups()
            if suf.islower():
                return int(float(num) * 10 ** (3 * "kmgt".index(suf) + 3))
            if "." in num:
                raise ValueError(text)
            return int(num) * 2 ** (10 * "KMGT".index(suf) + 10)
    return int(t)


def _is_number(text: str) -> bool:
    return re.fullmatch(r"-?\d+(?:\.\d+)?", text) is not None


def invocation_from_words(words: Sequence[Word], ctx: _Ctx) -> EngineInvocation | None:
    """The engine launch in one command's words, if there is one."""
    found = _find_engine(words)
    image, version = ctx.image, ctx.engine_version
    run = _docker_run_image(words)
    if run is not None:
        j, run_image = run
        for k in range(j):
            t = words[k].text
            if t.startswith("--gpus="):
                ctx = _Ctx(**{**ctx.__dict__, "gpus": (t.split("=", 1)[1], words[k].line)})
            elif t == "--gpus" and k + 1 < j:
                ctx = _Ctx(**{**ctx.__dict__, "gpus": (words[k + 1].text, words[k].line)})
        run_engine, entry, tag_version = parse_image(run_image)
        if found is not None and found[1] > j:
            image, version = run_image, tag_version or version  # `docker run IMAGE python -m sglang...`
        elif found is None and entry and run_engine is not None:
            image, version = run_image, tag_version or version
            found = (run_engine, j, j + 1, True)  # the arguments go to the image's server entrypoint
    elif found is None and ctx.implicit is not None:
        found = (ctx.implicit, -1, 0, True)
    if found is None:
        return None
    engine, at, first_arg, positional = found
    if at > 0 and words[at].text == "-m" and PurePosixPath(words[at - 1].text).name.startswith("python"):
        at -= 1  # argv starts at the interpreter: python3 -m sglang.launch_server
    if image is not None and parse_image(image)[0] not in (None, engine):
        image, version = None, None  # an SGLang image running vLLM (or the reverse): its tag says nothing
    args = list(words[first_arg:])
    line = words[0].line if words else ctx.line or 1
    argv = [w.text for w in words[max(at, 0):]]
    if at < 0:
        argv = ["<image entrypoint>", *argv]
    return _build(engine, args, positional, ctx, line=line, argv=argv, image=image, version=version)


def _build(engine: Engine, args: Sequence[Word], positional: bool, ctx: _Ctx, *, line: int, argv: list[str],
           image: str | None, version: str | None) -> EngineInvocation:
    table = _VLLM_FLAGS if engine == "vllm" else _SGLANG_FLAGS
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    raw: dict[str, str] = {}
    other: dict[str, str | bool] = {}
    warnings = list(ctx.warnings)
    unresolved: list[str] = []
    for w in args:
        unresolved.extend(w.unresolved)
    where = ctx.file

    def put(canon: str, text: str, word: Word, flag: str) -> None:
        if canon in lines and canon != "speculative_config":
            warnings.append(f"{where}: line {word.line}: {flag} is given again (first at line {lines[canon]}); "
                            f"the engine uses the last")
        lines[canon] = word.line
        raw[canon] = text
        if word.unresolved:
            values[canon] = None
            return
        values[canon] = _typed(engine, canon, text, flag, word, where, warnings)

    i = 0
    positional_seen = False
    while i < len(args):
        w = args[i]
        t = w.text
        if t == "--":
            i += 1
            continue
        if t.startswith("-") and len(t) > 1 and not _is_number(t):
            name, eq, val = t.partition("=")
            if engine == "vllm" and name.startswith("--"):
                name = "--" + name[2:].replace("_", "-")
            canon = table.get(name)
            if canon is None and engine == "vllm" and name.startswith("--speculative-config."):
                key = name[len("--speculative-config."):]
                if not eq and i + 1 < len(args):
                    val, i = args[i + 1].text, i + 1
                spec = values.get("speculative_config")
                spec = dict(spec) if isinstance(spec, dict) else {}
                spec[key] = _jsonish(val)
                values["speculative_config"] = spec
                lines.setdefault("speculative_config", w.line)
                raw["speculative_config"] = json.dumps(spec)
                i += 1
                continue
            if canon is not None:
                if eq:
                    put(canon, val, w, name)
                elif i + 1 < len(args):
                    v = args[i + 1]
                    put(canon, v.text, Word(v.text, w.line, v.unresolved), name)
                    i += 1
                else:
                    warnings.append(f"{where}: line {w.line}: {name} has no value")
                i += 1
                continue
            # not understood: kept in `other`
            nxt = args[i + 1].text if i + 1 < len(args) else None
            if eq:
                other[name] = val
            elif (name in _BOOL_FLAGS or name.startswith(_BOOL_PREFIXES)) and (nxt or "").lower() in ("true", "false"):
                other[name] = nxt  # older vLLM: --enable-chunked-prefill False
                i += 1
            elif name in _BOOL_FLAGS or name.startswith(_BOOL_PREFIXES):
                other[name] = True
            elif i + 1 < len(args) and (not args[i + 1].text.startswith("-") or _is_number(args[i + 1].text)):
                other[name] = args[i + 1].text
                i += 1
            else:
                other[name] = True
            lines.setdefault(name, w.line)
            i += 1
            continue
        if positional and not positional_seen:
            positional_seen = True
            if "model" in lines:
                warnings.append(f"{where}: line {w.line}: the model is given both as --model and as the positional "
                                f"argument; vllm serve uses the positional one")
            lines["model"] = w.line
            raw["model"] = t
            values["model"] = None if w.unresolved else t
        else:
            other.setdefault("<positional>", t)
        i += 1
    if "model" in raw and values.get("model") is None:
        values["model"] = raw["model"]  # keep an unresolved model visible: "${MODEL}"
    if ctx.gpus is not None:
        text, gline = ctx.gpus
        raw["gpu_count"], lines["gpu_count"] = text, gline
        values["gpu_count"] = gpu_request_count(text)
    if engine == "vllm" and "--config" in other:
        warnings.append(f"{where}: line {lines['--config']}: flags in --config {other['--config']} are not read; "
                        f"put the flags that matter on the command line to have them checked")
    return EngineInvocation(
        engine=engine, file=ctx.file, line=line, source=ctx.source, context=ctx.context, image=image,
        engine_version=version, argv=argv, flag_lines=lines, raw=raw,
        unresolved_env=list(dict.fromkeys(unresolved)), other=other, warnings=warnings,
        **{k: v for k, v in values.items() if k in EngineInvocation.model_fields},
    )


def gpu_request_count(text: str) -> int | None:
    """GPUs in a request: ``2``, ``"device=0,1"``, ``device=GPU-abc`` -> 2, 2, 1; ``all`` -> None."""
    t = text.strip().strip("'\"")
    if t.isdigit():
        return int(t)
    m = re.search(r"device=([^\s\"']+)", t)
    if m:
        return len([d for d in m.group(1).split(",") if d])
    return None


def _jsonish(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return text


def _typed(engine: Engine, canon: str, text: str, flag: str, word: Word, where: str, warnings: list[str]) -> Any:
    if canon in _INT_FIELDS:
        if canon == "max_model_len" and text.strip().lower() in ("auto", "-1"):
            return None  # the engine derives it from the model config
        try:
            return _human_int(text, engine == "vllm" and canon in _VLLM_HUMAN_INT)
        except ValueError:
            warnings.append(f"{where}: line {word.line}: {flag} '{text}' is not an integer; the engine would refuse it")
            return None
    if canon == "gpu_memory_utilization":
        try:
            return float(text)
        except ValueError:
            warnings.append(f"{where}: line {word.line}: {flag} '{text}' is not a number; the engine would refuse it")
            return None
    if canon == "speculative_config":
        v = _jsonish(text)
        if not isinstance(v, dict):
            warnings.append(f"{where}: line {word.line}: {flag} is not a JSON object")
        return v
    return text


def _pip_versions(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _PIP_PIN.finditer(text)}


def _with_version(inv: EngineInvocation, versions: Mapping[str, str]) -> EngineInvocation:
    if inv.engine_version is None and inv.engine in versions:
        return inv.model_copy(update={"engine_version": versions[inv.engine]})
    return inv


# --- shell scripts -------------------------------------------------------------------------------------


def parse_shell(text: str, file: str, *, env: Mapping[str, str] | None = None) -> list[EngineInvocation]:
    """Engine launches in a shell script."""
    out = []
    ctx = _Ctx(file=file, source="shell")
    for words in split_shell(text, file, env=env):
        inv = invocation_from_words(words, ctx)
        if inv is not None:
            out.append(inv)
    versions = _pip_versions(text)
    return [_with_version(i, versions) for i in out]


# --- Dockerfiles ----------------------------------------------------------------------------------------


@dataclass
class _Instr:
    keyword: str
    text: str  # the arguments, physical lines joined with "\n" (continuation backslashes kept)
    line_map: list[int]

    @property
    def line(self) -> int:
        return self.line_map[0]


def _dockerfile_instructions(text: str, file: str) -> list[_Instr]:
    lines = text.splitlines()
    out: list[_Instr] = []
    i = 0
    while i < len(lines):
        raw = lines[i]
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        m = re.match(r"\s*([A-Za-z]+)\s?(.*)$", raw)
        if not m:
            raise ConfigError(f"{file}: line {i + 1}: not a Dockerfile instruction: {stripped[:40]}")
        keyword, rest = m.group(1).upper(), m.group(2)
        segs, lmap = [rest], [i + 1]
        heredoc = re.search(r"<<-?[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?", rest) if keyword == "RUN" else None
        cur = rest
        while cur.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            nxt = lines[i]
            if nxt.strip().startswith("#") or not nxt.strip():
                continue  # Docker drops comment and empty lines inside a continuation
            segs.append(nxt)
            lmap.append(i + 1)
            cur = nxt
        if heredoc:
            delim = heredoc.group(1)
            while i + 1 < len(lines):
                i += 1
                segs.append(lines[i])
                lmap.append(i + 1)
                if lines[i].strip() == delim:
                    break
        out.append(_Instr(keyword, "\n".join(segs), lmap))
        i += 1
    return out


@dataclass
class _Stage:
    image: str
    name: str | None = None
    args: dict[str, EnvValue] = field(default_factory=dict)
    env: dict[str, EnvValue] = field(default_factory=dict)
    entrypoint: _Instr | None = None
    cmd: _Instr | None = None
    cmd_inherited: bool = False


def _exec_form(ins: _Instr, file: str) -> list[Word] | None:
    """Exec-form (JSON array) words with their lines, None for shell form."""
    joined = "\n".join(seg.rstrip()[:-1] if seg.rstrip().endswith("\\") else seg for seg in ins.text.split("\n"))
    if not joined.strip().startswith("["):
        return None
    try:
        arr = json.loads(joined)
    except json.JSONDecodeError as exc:
        line = ins.line_map[min(joined.count("\n", 0, exc.pos), len(ins.line_map) - 1)]
        raise ConfigError(
            f"{file}: line {line}: {ins.keyword} is not valid JSON ({exc.msg}); Docker would run it as a shell "
            f"string — use double quotes in exec form [\"vllm\", \"serve\", ...]"
        ) from None
    if not isinstance(arr, list) or not all(isinstance(a, str) for a in arr):
        raise ConfigError(f"{file}: line {ins.line}: {ins.keyword} exec form must be a JSON array of strings")
    words = []
    for m, value in zip(re.finditer(r'"(?:[^"\\]|\\.)*"', joined), arr, strict=False):
        line = ins.line_map[min(joined.count("\n", 0, m.start()), len(ins.line_map) - 1)]
        refs = tuple(dict.fromkeys(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", value)))
        words.append(Word(value, line, refs))
    return words


def _docker_kv(text: str) -> list[tuple[str, str]]:
    """``ENV a=1 b="x y"`` or legacy ``ENV a 1`` -> pairs (raw values, quotes kept for the lexer)."""
    body = text.replace("\\\n", " ").strip()
    if re.match(r"^[A-Za-z_][A-Za-z0-9_]*\s", body) and "=" not in body.split(None, 1)[0]:
        name, value = body.split(None, 1)
        return [(name, value.strip())]
    pairs = []
    for m in re.finditer(r"([A-Za-z_][A-Za-z0-9_]*)(?:=((?:\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^\s])*))?", body):
        pairs.append((m.group(1), m.group(2)))
    return pairs


def parse_dockerfile(text: str, file: str) -> list[EngineInvocation]:
    """The engine launch of a Dockerfile's final stage (its effective ENTRYPOINT + CMD)."""
    instrs = _dockerfile_instructions(text, file)
    global_args: dict[str, EnvValue] = {}
    stages: list[_Stage] = []
    versions: dict[str, str] = {}
    for ins in instrs:
        if ins.keyword == "FROM":
            parts = [p for p in ins.text.replace("\\\n", " ").split() if not p.startswith("--")]
            if not parts:
                raise ConfigError(f"{file}: line {ins.line}: FROM names no image")
            image_v = _expand_build(parts[0], {**global_args}, file, ins.line)
            image = image_v if isinstance(image_v, str) else parts[0]
            name = parts[2] if len(parts) >= 3 and parts[1].lower() == "as" else None
            parent = next((s for s in reversed(stages) if s.name and s.name == image), None)
            if parent is not None:
                st = _Stage(image=parent.image, name=name, env=dict(parent.env), entrypoint=parent.entrypoint,
                            cmd=parent.cmd, cmd_inherited=parent.cmd is not None)
            else:
                st = _Stage(image=image, name=name)
            stages.append(st)
            continue
        if ins.keyword == "ARG":
            target = stages[-1].args if stages else global_args
            for name, value in _docker_kv(ins.text):
                if value is None and not stages and name in global_args:
                    continue
                if value is None and stages and name in global_args:
                    target[name] = global_args[name]  # re-declared global ARG: its default comes in
                    continue
                target[name] = None if value is None else _expand_build(value, {}, file, ins.line)
            continue
        if not stages:
            continue
        st = stages[-1]
        if ins.keyword == "ENV":
            for name, value in _docker_kv(ins.text):
                if value is None:
                    continue
                scope = {**{k: v for k, v in st.args.items() if v is not None}, **st.env}
                st.env[name] = _expand_build(value, scope, file, ins.line)
        elif ins.keyword == "ENTRYPOINT":
            st.entrypoint = ins
            if st.cmd_inherited:
                st.cmd, st.cmd_inherited = None, False
        elif ins.keyword == "CMD":
            st.cmd, st.cmd_inherited = ins, False
        elif ins.keyword == "RUN":
            versions.update(_pip_versions(ins.text))
    if not stages:
        return []
    inv = _dockerfile_launch(stages[-1], file)
    return [_with_version(inv, versions)] if inv is not None else []


def _expand_build(value: str, scope: Mapping[str, EnvValue], file: str, line: int) -> EnvValue:
    """Build-time substitution Docker applies to FROM/ENV/ARG values (quotes removed); an
    :class:`_Unknown` when it refers to something unset."""
    env = {k: v for k, v in scope.items() if v is not None}
    cmds = _Shell(value, file, [line], dict(env), fragment=True).run()
    if not cmds:
        return ""
    w = cmds[0][0]
    return _Unknown(w.unresolved) if w.unresolved else w.text


def _dockerfile_launch(st: _Stage, file: str) -> EngineInvocation | None:
    engine, entry_is_server, tag_version = parse_image(st.image)
    build_only = {k for k in st.args if k not in st.env}
    ctx = _Ctx(file=file, source="dockerfile", image=st.image if engine else None, engine_version=tag_version)

    def shell(ins: _Instr, label: str, extra: list[str]) -> EngineInvocation | None:
        c = _Ctx(**{**ctx.__dict__, "context": label, "warnings": list(extra)})
        for words in split_shell(ins.text, file, env=st.env, line_map=ins.line_map):
            inv = invocation_from_words(words, c)
            if inv is not None:
                return _arg_warnings(inv, build_only, file)
        return None

    def exec_words(words: list[Word], label: str, extra: list[str], implicit: Engine | None = None,
                   line: int | None = None) -> EngineInvocation | None:
        if len(words) >= 3 and words[0].text.rsplit("/", 1)[-1] in ("sh", "bash", "dash") and words[1].text == "-c":
            script = _Instr("CMD", words[2].text, [words[2].line])
            return shell(script, label, extra)
        c = _Ctx(**{**ctx.__dict__, "context": label, "implicit": implicit, "line": line, "warnings": list(extra)})
        inv = invocation_from_words(words, c)
        if inv is None:
            return None
        refs = sorted({r for w in words for r in w.unresolved})
        if refs:
            inv = inv.model_copy(update={"warnings": [*inv.warnings, (
                f"{file}: line {inv.line}: exec-form {label} does not expand "
                + ", ".join(f"${r}" for r in refs)
                + " (no shell runs it); use shell form or [\"sh\", \"-c\", \"...\"]")]})
        return inv

    ep, cmd = st.entrypoint, st.cmd
    if ep is not None:
        ep_words = _exec_form(ep, file)
        if ep_words is None:
            return shell(ep, "ENTRYPOINT", [])
        cmd_words: list[Word] = []
        extra: list[str] = []
        if cmd is not None:
            cw = _exec_form(cmd, file)
            if cw is None:
                extra.append(f"{file}: line {cmd.line}: shell-form CMD is passed to the exec-form ENTRYPOINT as "
                             f"\"/bin/sh -c ...\" arguments; write CMD in exec form")
                cw = [Word("/bin/sh", cmd.line), Word("-c", cmd.line), Word(cmd.text, cmd.line)]
            cmd_words = cw
        return exec_words(ep_words + cmd_words, "ENTRYPOINT + CMD" if cmd_words else "ENTRYPOINT", extra)
    if cmd is None:
        return None  # no command of this file's own (an engine image's default has no flags to check)
    cw = _exec_form(cmd, file)
    implicit = engine if entry_is_server else None
    if cw is None:
        extra = []
        if implicit is not None:
            extra.append(f"{file}: line {cmd.line}: {st.image} runs the vLLM server as its ENTRYPOINT; a shell-form "
                         f"CMD is appended to it as \"/bin/sh -c ...\" arguments; reset ENTRYPOINT or give only the "
                         f"server's arguments in exec form")
        return shell(cmd, "CMD", extra)
    if implicit is not None and _find_engine(cw) is not None:
        return exec_words(cw, "CMD", [f"{file}: line {cmd.line}: {st.image} already runs the server as its "
                                      f"ENTRYPOINT; this CMD repeats the command and is passed to it as arguments "
                                      f"(vllm: error: unrecognized arguments); reset ENTRYPOINT or drop the command"])
    return exec_words(cw, "CMD", [], implicit=implicit, line=cmd.line)


def _arg_warnings(inv: EngineInvocation, build_only: set[str], file: str) -> EngineInvocation:
    hit = [r for r in inv.unresolved_env if r in build_only]
    if not hit:
        return inv
    return inv.model_copy(update={"warnings": [*inv.warnings, (
        f"{file}: line {inv.line}: ARG {', '.join(hit)} is set only while building; the container starts without it "
        f"(copy it into ENV: ENV {hit[0]}=${{{hit[0]}}})")]})


# --- YAML: Kubernetes manifests, Helm values, docker-compose, anything else --------------------------


def _yaml_nodes(text: str, file: str) -> list[Any]:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return [n for n in yaml.compose_all(text, Loader=loader) if n is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = f" line {mark.line + 1}:" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{file}:{line} invalid YAML: {problem}") from None


def _is_map(n: Any) -> bool:
    return type(n).__name__ == "MappingNode"


def _is_seq(n: Any) -> bool:
    return type(n).__name__ == "SequenceNode"


def _is_scalar(n: Any) -> bool:
    return type(n).__name__ == "ScalarNode"


def _get(node: Any, key: str) -> Any:
    if not _is_map(node):
        return None
    for k, v in node.value:
        if _is_scalar(k) and k.value == key:
            return v
    return None


def _scalar_lines(node: Any) -> list[int]:
    """File line of each physical line of a scalar's value (exact for | blocks, else its first line)."""
    start = node.start_mark.line + 1
    n = node.value.count("\n") + 1
    if node.style == "|":
        return [start + 1 + k for k in range(n)]
    return [start] * n


def _scalar_source(node: Any, src: Sequence[str] | None) -> tuple[str, list[int]]:
    """A string scalar as text to split, with the file line of each of its physical lines.

    Folded (``>``) and plain multi-line scalars lose their line breaks in the value; they are
    re-read from the source with each break turned into a shell line continuation, so every word
    keeps its own line."""
    start, end = node.start_mark, node.end_mark
    if src is not None and node.style in (">", None) and end.line > start.line:
        if node.style == ">":
            first = start.line + 1
            last = end.line + (1 if end.column > 0 else 0)
            rows = list(src[first:last])
        else:
            first = start.line
            rows = list(src[start.line:end.line + 1])
            rows[-1] = rows[-1][:end.column]
            rows[0] = rows[0][start.column:]
        while rows and not rows[-1].strip():
            rows.pop()
        if rows:
            return " \\\n".join(r.rstrip() for r in rows), [first + 1 + k for k in range(len(rows))]
    return node.value, _scalar_lines(node)


def _scalar_words(node: Any, file: str, env: Mapping[str, str] | None, *, expand: bool,
                  src: Sequence[str] | None = None) -> list[list[Word]]:
    text, lines = _scalar_source(node, src)
    return split_shell(text, file, env=env, line_map=lines, expand=expand)


def _k8s_expand(text: str, env: Mapping[str, str | None]) -> tuple[str, list[str]]:
    """Kubernetes ``$(VAR)`` substitution in command/args (``$$`` escapes; unknown stays as is)."""
    unres: list[str] = []

    def sub(m: re.Match[str]) -> str:
        if m.group(0).startswith("$$"):
            return m.group(0)[1:]
        name = m.group(1)
        v = env.get(name)
        if v is None:
            unres.append(name)
            return m.group(0)
        return v

    return re.sub(r"\$\$\([A-Za-z_][A-Za-z0-9_]*\)|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", sub, text), unres


def _image_of(node: Any) -> str | None:
    if node is None:
        return None
    if _is_scalar(node):
        return node.value or None
    if _is_map(node):
        repo = _get(node, "repository") or _get(node, "name")
        tag = _get(node, "tag")
        registry = _get(node, "registry")
        if repo is not None and _is_scalar(repo):
            ref = repo.value
            if registry is not None and _is_scalar(registry) and registry.value:
                ref = f"{registry.value}/{ref}"
            if tag is not None and _is_scalar(tag) and str(tag.value):
                ref = f"{ref}:{tag.value}"
            return ref
    return None


def _container_env(node: Any) -> dict[str, str | None]:
    env: dict[str, str | None] = {}
    e = _get(node, "env")
    if _is_seq(e):
        for item in e.value:
            name, value = _get(item, "name"), _get(item, "value")
            if name is not None and _is_scalar(name):
                env[name.value] = value.value if value is not None and _is_scalar(value) else None
    elif _is_map(e):  # Helm values often use a mapping
        for k, v in e.value:
            if _is_scalar(k):
                env[k.value] = v.value if _is_scalar(v) else None
    return env


def _k8s_gpus(node: Any) -> tuple[str, int] | None:
    """``resources.limits`` (else ``requests``) ``<vendor>/gpu`` of a container."""
    res = _get(node, "resources")
    for section in ("limits", "requests"):
        m = _get(res, section) if res is not None else None
        if not _is_map(m):
            continue
        for k, v in m.value:
            if _is_scalar(k) and str(k.value).endswith("/gpu") and _is_scalar(v):
                return str(v.value), v.start_mark.line + 1
    return None


def _compose_gpus(svc: Any) -> tuple[str, int] | None:
    """``deploy.resources.reservations.devices[]`` with the gpu capability: its ``count`` or ``device_ids``."""
    res = _get(_get(_get(svc, "deploy"), "resources"), "reservations")
    devices = _get(res, "devices") if res is not None else None
    if not _is_seq(devices):
        return None
    for d in devices.value:
        caps = _get(d, "capabilities")
        if caps is not None and _is_seq(caps) and not any(_is_scalar(c) and c.value == "gpu" for c in caps.value):
            continue
        count, ids = _get(d, "count"), _get(d, "device_ids")
        if count is not None and _is_scalar(count):
            return str(count.value), count.start_mark.line + 1
        if ids is not None and _is_seq(ids):
            return str(len(ids.value)), ids.start_mark.line + 1
    return None


def _list_words(node: Any, file: str, env: Mapping[str, str | None], used: set[int],
                src: Sequence[str] | None = None) -> list[Word] | None:
    """``command`` / ``args`` as words: a YAML list (one word per item, ``$(VAR)`` expanded) or a
    string (split like a shell line)."""
    if node is None:
        return []
    used.add(id(node))
    if _is_seq(node):
        words = []
        for item in node.value:
            used.add(id(item))
            if not _is_scalar(item):
                raise ConfigError(f"{file}: line {item.start_mark.line + 1}: command/args items must be strings")
            text, unres = _k8s_expand(item.value, env)
            words.append(Word(text, item.start_mark.line + 1, tuple(unres)))
        return words
    if _is_scalar(node):
        known = {k: v for k, v in env.items() if v is not None}
        cmds = _scalar_words(node, file, known, expand=True, src=src)
        return [w for c in cmds for w in c]
    return None


def _shell_wrapped(words: list[Word]) -> Word | None:
    """The script of ``sh -c SCRIPT`` / ``bash -lc SCRIPT``."""
    for k, w in enumerate(words[:-1]):
        if w.text.rsplit("/", 1)[-1] in ("sh", "bash", "dash", "zsh") and k + 1 < len(words):
            for j in range(k + 1, len(words) - 1):
                flag = words[j].text
                if not flag.startswith("-"):
                    break
                if "c" in flag[1:]:
                    return words[j + 1]
    return None


def _container_invocation(node: Any, file: str, source: Source, label: str | None, used: set[int],
                          src: Sequence[str] | None = None) -> EngineInvocation | None:
    env = _container_env(node)
    image = _image_of(_get(node, "image"))
    engine, entry, version = parse_image(image) if image else (None, False, None)
    cmd_node, args_node = _get(node, "command"), _get(node, "args")
    cmd = _list_words(cmd_node, file, env, used, src)
    args = _list_words(args_node, file, env, used, src)
    if cmd is None or args is None:
        return None
    words = cmd + args
    ctx = _Ctx(file=file, source=source, context=label, image=image if engine else None, engine_version=version,
               gpus=_k8s_gpus(node))
    script = _shell_wrapped(words)
    if script is not None:
        script_node = _script_source(script, cmd_node, args_node)
        lines = _scalar_lines(script_node) if script_node is not None else [script.line]
        known = {k: v for k, v in env.items() if v is not None}
        for c in split_shell(script.text, file, env=known, line_map=lines):
            inv = invocation_from_words(c, ctx)
            if inv is not None:
                return inv
        return None
    if not cmd and entry and engine is not None:
        ctx.implicit = engine
        ctx.line = args[0].line if args else None
        if not args:
            return None
    return invocation_from_words(words, ctx)


def _script_source(script: Word, *nodes: Any) -> Any:
    for n in nodes:
        if n is not None and _is_seq(n):
            for item in n.value:
                if _is_scalar(item) and item.start_mark.line + 1 == script.line and item.value == script.text:
                    return item
    return None


def _walk(node: Any, path: str, visit: Any) -> None:
    visit(node, path)
    if _is_map(node):
        for k, v in node.value:
            _walk(v, f"{path}.{k.value}" if path else str(getattr(k, "value", "?")), visit)
    elif _is_seq(node):
        for i, v in enumerate(node.value):
            _walk(v, f"{path}[{i}]", visit)


def _compose_interpolate(text: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """docker compose interpolation: ``$$``, ``$VAR``, ``${VAR}``, ``${VAR:-d}``, ``${VAR-d}``,
    ``${VAR:+a}``, ``${VAR:?e}``; an unknown variable stays visible (compose would use "")."""
    unres: list[str] = []

    def sub(m: re.Match[str]) -> str:
        whole = m.group(0)
        if whole == "$$":
            return "$"
        name = m.group("n1") or m.group("n2")
        op, word = m.group("op"), m.group("w") or ""
        value = env.get(name)
        if op is None:
            if value is None:
                unres.append(name)
                return whole
            return value
        empty_counts = op.startswith(":")
        missing = value is None or (empty_counts and value == "")
        if op.endswith("-"):
            if missing:
                w, u = _compose_interpolate(word, env)
                unres.extend(u)
                return w
            return value  # type: ignore[return-value]
        if op.endswith("+"):
            return "" if missing else _compose_interpolate(word, env)[0]
        if missing:
            unres.append(name)
            return whole
        return value  # type: ignore[return-value]

    pattern = r"\$\$|\$\{(?P<n1>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-+?])(?P<w>[^}]*))?\}|\$(?P<n2>[A-Za-z_][A-Za-z0-9_]*)"
    return re.sub(pattern, sub, text), unres


def _compose_words(node: Any, file: str, env: Mapping[str, str], used: set[int],
                   src: Sequence[str] | None = None) -> list[Word]:
    if node is None:
        return []
    used.add(id(node))
    if _is_seq(node):
        out = []
        for item in node.value:
            used.add(id(item))
            if not _is_scalar(item):
                raise ConfigError(f"{file}: line {item.start_mark.line + 1}: command items must be strings")
            text, unres = _compose_interpolate(item.value, env)
            out.append(Word(text, item.start_mark.line + 1, tuple(unres)))
        return out
    if _is_scalar(node):
        raw_text, lines = _scalar_source(node, src)
        text, unres = _compose_interpolate(raw_text, env)
        words = [w for c in split_shell(text, file, line_map=lines, expand=False) for w in c]
        return [Word(w.text, w.line, tuple(r for r in unres if r in w.text)) for w in words]
    raise ConfigError(f"{file}: line {node.start_mark.line + 1}: command must be a string or a list of strings")


def _parse_compose(root: Any, file: str, dotenv: Mapping[str, str], used: set[int],
                   src: Sequence[str] | None = None) -> list[EngineInvocation]:
    out = []
    services = _get(root, "services")
    for key, svc in services.value:
        if not _is_map(svc):
            continue
        label = f"service {key.value}"
        image_node = _get(svc, "image")
        image = _compose_interpolate(image_node.value, dotenv)[0] if image_node is not None and _is_scalar(
            image_node) else None
        engine, entry, version = parse_image(image) if image else (None, False, None)
        cenv: dict[str, str] = {}
        e = _get(svc, "environment")
        if _is_map(e):
            for k, v in e.value:
                if _is_scalar(v) and v.value is not None:
                    cenv[k.value] = _compose_interpolate(str(v.value), dotenv)[0]
        elif _is_seq(e):
            for item in e.value:
                if _is_scalar(item) and "=" in item.value:
                    k, _, v = item.value.partition("=")
                    cenv[k] = _compose_interpolate(v, dotenv)[0]
        ep = _compose_words(_get(svc, "entrypoint"), file, dotenv, used, src)
        cmd = _compose_words(_get(svc, "command"), file, dotenv, used, src)
        words = ep + cmd
        ctx = _Ctx(file=file, source="compose", context=label, image=image if engine else None, engine_version=version,
                   gpus=_compose_gpus(svc))
        script = _shell_wrapped(words)
        inv = None
        if script is not None:
            node = _script_source(script, _get(svc, "entrypoint"), _get(svc, "command"))
            lines = _scalar_lines(node) if node is not None else [script.line]
            for c in split_shell(script.text, file, env=cenv, line_map=lines):
                inv = invocation_from_words(c, ctx)
                if inv is not None:
                    break
        else:
            if not ep and entry and engine is not None and cmd and _find_engine(cmd) is None:
                ctx.implicit = engine
            inv = invocation_from_words(words, ctx) if words else None
        if inv is not None:
            out.append(inv)
    return out


_PROSE_KEY = re.compile(r"(?:^|\.)(?:description|help|summary|title|message|msg|notes?|comment|examples?|text)$")
_WRAPPERS = frozenset({"exec", "nohup", "env", "sudo", "time", "uv", "uvx", "run", "poetry", "pipenv", "timeout",
                       "numactl", "taskset", "nice", "stdbuf", "setsid", "srun", "command", "ray", "job", "submit",
                       "--"})


def _launch_position(words: Sequence[Word]) -> bool:
    """The engine starts the command, after nothing but wrappers, their flags and assignments."""
    found = _find_engine(words)
    if found is None:
        return _docker_run_image(words) is not None
    for w in words[:found[1]]:
        name = PurePosixPath(w.text).name
        if not (w.assign or name in _WRAPPERS or name.startswith("python") or w.text.startswith("-")
                or re.fullmatch(r"[\d.]+[smhd]?", w.text)):
            return False
    return True


def _yaml_source(file: str, root: Any) -> Source:
    name = PurePosixPath(file).name.lower()
    if re.match(r"values[\w.\-]*\.ya?ml$", name):
        return "helm-values"
    if _get(root, "apiVersion") is not None and _get(root, "kind") is not None:
        return "kubernetes"
    return "yaml"


def _doc_label(root: Any) -> str | None:
    kind, meta = _get(root, "kind"), _get(root, "metadata")
    name = _get(meta, "name") if meta is not None else None
    if kind is not None and _is_scalar(kind):
        return f"{kind.value}/{name.value}" if name is not None and _is_scalar(name) else kind.value
    return None


def parse_yaml(text: str, file: str, *, dotenv: Mapping[str, str] | None = None) -> list[EngineInvocation]:
    """Engine launches in a Kubernetes manifest, Helm values file, compose file or other YAML."""
    out: list[EngineInvocation] = []
    src = text.splitlines()
    for root in _yaml_nodes(text, file):
        used: set[int] = set()
        services = _get(root, "services")
        if services is not None and _is_map(services) and _get(root, "apiVersion") is None:
            out.extend(_parse_compose(root, file, dotenv or {}, used, src))
            continue
        source = _yaml_source(file, root)
        doc = _doc_label(root)

        def visit(node: Any, path: str, source: Source = source, doc: str | None = doc,
                  used: set[int] = used) -> None:
            if not _is_map(node) or id(node) in used:
                return
            if _get(node, "command") is None and _get(node, "args") is None:
                return
            name = _get(node, "name")
            label = " ".join(x for x in (doc, f"container {name.value}" if name is not None and _is_scalar(name)
                                         else (path or None)) if x)
            inv = _container_invocation(node, file, source, label or None, used, src)
            if inv is not None:
                out.append(inv)

        _walk(root, "", visit)

        def scan_strings(node: Any, path: str, source: Source = source, used: set[int] = used) -> None:
            if not _is_scalar(node) or id(node) in used or not isinstance(node.value, str):
                return
            if not _ENGINE_MARKER.search(node.value) or _PROSE_KEY.search(path):
                return
            ctx = _Ctx(file=file, source=source, context=path or None)
            for c in _scalar_words(node, file, None, expand=True, src=src):
                if not _launch_position(c):
                    continue  # "... pass these to vllm serve ..." in some text, not a command
                inv = invocation_from_words(c, ctx)
                if inv is not None:
                    out.append(inv)

        _walk(root, "", scan_strings)
    return out


# --- files --------------------------------------------------------------------------------------------

FileKind = Literal["shell", "dockerfile", "yaml"]
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache",
                        ".pytest_cache", "dist", "build"})
MAX_FILE_BYTES = 2_000_000


def classify(path: str | Path, head: str = "") -> FileKind | None:
    """Which parser reads a file, from its name (and first line for extension-less scripts)."""
    name = Path(path).name
    low = name.lower()
    if low.startswith(("dockerfile", "containerfile")) or low.endswith((".dockerfile", ".containerfile")):
        return "dockerfile"
    if low.endswith((".yaml", ".yml")):
        return "yaml"
    if low.endswith((".sh", ".bash", ".zsh", ".ksh")):
        return "shell"
    if head.startswith("#!") and re.search(r"\b(ba|da|k|z)?sh\b", head.splitlines()[0] if head else ""):
        return "shell"
    return None


def parse_text(text: str, file: str, kind: FileKind, *, env: Mapping[str, str] | None = None,
               dotenv: Mapping[str, str] | None = None) -> list[EngineInvocation]:
    if kind == "shell":
        return parse_shell(text, file, env=env)
    if kind == "dockerfile":
        return parse_dockerfile(text, file)
    return parse_yaml(text, file, dotenv=dotenv)


def parse_dotenv(text: str) -> dict[str, str]:
    """A compose ``.env`` file: KEY=VALUE lines, ``#`` comments, optional quotes and ``export``."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].strip()
        out[key.strip()] = value
    return out


def _relevant(text: str) -> bool:
    """Whether a file mentions an engine launch or an engine image (its parse errors then matter)."""
    return bool(_ENGINE_MARKER.search(text) or re.search(r"vllm-openai|lmsysorg/sglang", text))


def _iter_files(root: Path) -> Iterable[Path]:
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).parts
        if any(part in _SKIP_DIRS or (part.startswith(".") and part not in (".", "..")) for part in rel[:-1]):
            continue
        if p.is_file():
            yield p




def read_paths(paths: Sequence[str | Path], *, env: Mapping[str, str] | None = None) -> DeploymentScan:
    """Scan files and directories for engine launches (the only function here that reads files).

    A named file is parsed whatever its name (shell unless it looks like a Dockerfile or YAML); a
    directory contributes its scripts, Dockerfiles and YAML files. Helm chart templates (Go
    templates, not YAML until rendered) are skipped with a warning.
    """
    invocations: list[EngineInvocation] = []
    scanned: list[str] = []
    warnings: list[str] = []
    templates: list[Path] = []
    if not paths:
        raise InputError("no deployment paths given", field="paths")
    for given in paths:
        root = Path(given)
        if not root.exists():
            raise InputError(f"no such file or directory: {root}", field="paths")
        explicit = root.is_file()
        files = [root] if explicit else list(_iter_files(root))
        for f in files:
            try:
                size = f.stat().st_size
            except OSError as exc:
                raise ConfigError(f"cannot read {f}: {exc.strerror or exc}") from None
            if size > MAX_FILE_BYTES:
                if explicit:
                    raise InputError(f"{f}: {size:,} bytes is too large for a deployment file", field="paths")
                continue
            head = ""
            kind = classify(f)
            if kind is None:
                if not explicit and f.suffix:
                    continue
                text = read_text(f) if explicit or size < 200_000 else ""
                head = text[:200]
                kind = classify(f, head) or ("shell" if explicit else None)
                if kind is None:
                    continue
            else:
                text = read_text(f)
            if kind == "yaml" and ("templates" in f.parts or "{{" in text):
                try:
                    _yaml_nodes(text, str(f))
                except ConfigError:
                    if "{{" in text:
                        templates.append(f)
                        continue
                    raise
            dotenv: dict[str, str] = {}
            if kind == "yaml":
                envfile = f.parent / ".env"
                if envfile.is_file():
                    dotenv = parse_dotenv(read_text(envfile))
                dotenv = {**dotenv, **(env or {})}
            scanned.append(str(f))
            try:
                invocations.extend(parse_text(text, str(f), kind, env=env, dotenv=dotenv))
            except ConfigError as exc:
                if explicit or _relevant(text):
                    raise
                warnings.append(f"skipped (no engine launch in it, and it could not be parsed): {exc}")
    if templates:
        dirs = sorted({str(t.parent) for t in templates})
        warnings.append(f"skipped {len(templates)} Helm/Go template(s) in {', '.join(dirs)} (not YAML until rendered); "
                        f"scan the chart's values.yaml or the output of `helm template`")
    for inv in invocations:
        warnings.extend(inv.warnings)
    return DeploymentScan(paths=[str(p) for p in paths], files_scanned=scanned, invocations=invocations,
                          warnings=list(dict.fromkeys(warnings)))
