"""Reading user files: one place that turns every failure into a one-line ConfigError, and the
guards every reader of a user's YAML or JSON applies before trusting its shape (alias bombs,
absurd nesting)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import ConfigError, InputError
from .inputs import MAX_NESTING, json_depth

# A YAML document whose aliases expand past this many nodes is an alias bomb, not a config (a
# deployment manifest or quantadvise.yaml has hundreds; the largest Helm values files thousands).
MAX_YAML_NODES = 200_000


# A user's file larger than this is no config, profile, workload or evidence file quantadvise reads (lm-eval's
# per-sample logs of a whole suite are tens of MB); it is refused before it is read into memory.
MAX_READ_BYTES = 256 * 1024 * 1024
# A configuration a person writes (quantadvise.yaml, pyproject.toml, a workload, a profile, a scheme file,
# a compose .env, a baseline) larger than this is not one: its parse alone would take minutes and gigabytes.
MAX_CONFIG_BYTES = 16 * 1024 * 1024


KERNEL_FILES = ("/proc/", "/sys/")  # "regular" files that are the kernel's: a read may block or never end


def special(path: str | Path) -> str | None:
    """What a path is when it is neither a regular file nor a folder — ``a FIFO (named pipe)``, ``a
    character device``, ``a block device``, ``a socket``, a file under /proc or /sys — else None (a
    file, a folder, or nothing there). Reading one blocks (a FIFO with no writer) or never ends (``/dev/zero``): every reader and
    writer of a user's path asks first. Symbolic links are followed."""
    import stat

    try:
        mode = os.stat(path).st_mode
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) and real.startswith(KERNEL_FILES):  # /proc/kmsg blocks, /proc/self/fd/0 may
        return "a file of the kernel's virtual file system"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    for test, what in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a regular file"


def not_regular(path: str | Path, what: str, want: str = "a regular file") -> str:
    """The one sentence for a special file where a file was wanted: ``p: a FIFO (named pipe), not a
    file quantadvise reads; name a regular file``."""
    return f"{path}: {what}, not a file quantadvise reads; name {want}"


def read_text(path: Path, max_bytes: int = MAX_READ_BYTES) -> str:
    """A UTF-8 text file; an unreadable, binary, special (:func:`special`: a FIFO, a device, a socket)
    or oversized (``max_bytes``: :data:`MAX_READ_BYTES`, :data:`MAX_CONFIG_BYTES` for a configuration)
    file is a ConfigError naming it. Never blocks; never reads more than ``max_bytes``."""
    what = special(path)
    if what is not None:
        raise ConfigError(not_regular(path, what))
    too_large = f"{path}: larger than {max_bytes / 2**20:g} MiB, too large to be a file quantadvise reads"
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size > max_bytes:
                raise ConfigError(too_large)
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise ConfigError(too_large)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text  # as text mode reads it


def json_loads(text: str, where: str) -> Any:
    """JSON from a user's file: a syntax error, an integer of more than 4,300 digits (Python refuses to
    convert it) or nesting past Python's recursion limit is one ConfigError naming ``where`` and the line;
    :data:`MAX_NESTING` is checked too."""
    import json

    if text.startswith("\ufeff"):  # json.loads: "Unexpected UTF-8 BOM (decode using utf-8-sig)"
        raise ConfigError(f"{where}: starts with a UTF-8 byte-order mark, which JSON does not allow (Python's JSON "
                          "reader, and so transformers, vLLM and SGLang, refuse it): save it as UTF-8 without the BOM")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:  # an integer too long to convert
        raise ConfigError(f"{where}: invalid JSON value: {str(exc).split(';')[0]}") from None
    except RecursionError:
        raise ConfigError(f"{where}: JSON nested too deeply") from None
    if json_depth(doc) > MAX_NESTING:
        raise ConfigError(f"{where}: JSON nested more than {MAX_NESTING} levels deep")
    return doc


def _children(node: Any) -> list[Any]:
    kind = type(node).__name__
    if kind == "SequenceNode":
        return list(node.value)
    if kind == "MappingNode":
        return [x for kv in node.value for x in kv]
    return []


def check_yaml_nodes(roots: Iterable[Any], where: str) -> None:
    """Refuse composed YAML whose aliases expand past :data:`MAX_YAML_NODES` nodes (the "billion
    laughs": a few hundred bytes that would take minutes to walk), refer to themselves, or nest past
    :data:`MAX_NESTING` levels. Linear in the distinct nodes; no recursion."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    for root in roots:
        if root is None or id(root) in size:
            continue
        stack: list[tuple[Any, bool]] = [(root, False)]
        open_: set[int] = set()
        while stack:
            node, done = stack.pop()
            key = id(node)
            if done:
                kids = _children(node)
                size[key] = 1 + sum(size[id(k)] for k in kids)
                depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
                open_.discard(key)
                if size[key] > MAX_YAML_NODES:
                    raise ConfigError(f"{where}: YAML aliases expand to more than {MAX_YAML_NODES:,} nodes (an alias "
                                      "bomb?); write the values out")
                if depth[key] > MAX_NESTING:
                    raise ConfigError(f"{where}: YAML nested more than {MAX_NESTING} levels deep")
                continue
            if key in size:
                continue
            kids = _children(node)
            if not kids:  # a scalar or an empty collection: one node, one level, nothing below to walk
                size[key] = depth[key] = 1
                continue
            if key in open_:
                raise ConfigError(f"{where}: a YAML alias refers to a node that contains it (recursive YAML)")
            open_.add(key)
            stack.append((node, True))
            for k in kids:
                if id(k) in open_:
                    raise ConfigError(f"{where}: a YAML alias refers to a node that contains it (recursive YAML)")
                if id(k) not in size:
                    stack.append((k, False))


def check_yaml_text(text: str, where: str) -> None:
    """:func:`check_yaml_nodes` on a YAML text (its syntax errors are left to the parser that reports
    them with their line)."""
    import yaml

    try:
        check_yaml_nodes(yaml.compose_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)), where)
    except yaml.YAMLError:
        return
    except RecursionError:
        raise ConfigError(f"{where}: YAML nested too deeply") from None


@contextmanager
def yaml_errors(where: str) -> Iterator[None]:
    """A YAML syntax error or a document nested past Python's recursion limit, raised inside, as one
    ConfigError naming ``where`` and the line: ``deploy/values.yaml: line 3: invalid YAML: ...``."""
    import yaml

    try:
        yield
    except RecursionError:
        raise ConfigError(f"{where}: YAML nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = f" line {mark.line + 1}:" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where}:{line} invalid YAML: {problem}") from None
    except (ValueError, OverflowError) as exc:  # a scalar the loader cannot build: 5,000 digits, 2024-13-45
        raise ConfigError(f"{where}: invalid YAML value: {str(exc).split(';')[0][:120]}") from None




def exists(path: str | Path) -> bool:
    """Whether a path exists, False (not an exception) for names the OS cannot even look up: too
    long, ``~nosuchuser``, an embedded NUL."""
    try:
        return Path(path).expanduser().exists()
    except (OSError, RuntimeError, ValueError):
        return False


def resolved(path: str | Path) -> Path:
    """The absolute path with symbolic links followed (``Path.resolve``), never an exception: a link
    loop (which ``Path.resolve`` raises RuntimeError for) or a name the OS cannot look up stays as far as
    it resolved."""
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return Path(os.path.abspath(path))


def expand(path: str | Path) -> Path:
    """``~`` expanded where it can be; the path as given where it cannot (``~nosuchuser``)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        return Path(path)


def is_file(path: str | Path) -> bool:
    """Whether a path is a file, False for names the OS cannot look up (see :func:`exists`)."""
    try:
        return Path(path).expanduser().is_file()
    except (OSError, RuntimeError, ValueError):
        return False


# -- writing a file the user named (--out, --output, --plot) ---------------------------------------


def check_output_path(path: Path, flag: str, *, stream: bool = False) -> Path | None:
    """Before any work, one :class:`InputError` naming ``flag`` when no file can be written at
    ``path``: it is a folder, something on the way is not a folder, or the nearest existing folder
    (or the file itself) is not writable; a socket or a block device; a FIFO unless ``stream`` (the
    writer is :func:`write_file`, which never blocks on one). Missing folders are not an error: writing
    creates them, as ``calibrate --out`` and ``check --output`` do; the topmost one that will be made is
    returned (None when the folder exists). A place that passes this and still refuses the file
    (``/proc`` as root, a full disk) fails inside :func:`writing`, with the same error."""
    what = special(path)
    if what is not None and not (what.startswith("a character") or (stream and what.startswith("a FIFO"))):
        raise _cannot_write(path, flag, f"it is {what}")
    try:
        if path.is_dir():
            raise _cannot_write(path, flag, "it is a folder", fix="name a file")
        if os.path.lexists(path) and not os.access(path, os.W_OK):
            raise _cannot_write(path, flag, "permission denied")
        folder, made = path.parent, None
        while not os.path.lexists(folder) and folder.parent != folder:
            folder, made = folder.parent, folder
        if not folder.is_dir():
            raise _cannot_write(path, flag, f"{folder} is not a folder")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise _cannot_write(path, flag, f"{folder}: permission denied")
    except OSError as exc:  # a name the OS cannot even look up (too long, ...)
        raise _cannot_write(path, flag, exc.strerror or str(exc)) from None
    except ValueError:  # an embedded NUL
        raise _cannot_write(path, flag, "not a valid file name") from None
    return made


@contextmanager
def writing(path: Path, flag: str) -> Iterator[None]:
    """Write the file ``flag`` names inside this block: an OSError becomes the one-line error of
    :func:`check_output_path`."""
    try:
        yield
    except OSError as exc:
        raise _cannot_write(path, flag, exc.strerror or str(exc)) from None


def write_file(path: Path, text: str, flag: str) -> None:
    """Write the text file ``flag`` names (``--output``, ``--write-baseline``, ``--init``), creating
    missing folders. Never blocks: a FIFO is opened without waiting, and written only when a program
    is reading it (none: one error); a socket or a block device is refused; a character device
    (``/dev/null``) is written. Every failure is the one InputError of :func:`check_output_path`."""
    import errno

    what = special(path)
    fifo = what is not None and what.startswith("a FIFO")
    if what is not None and not (fifo or what.startswith("a character")):
        raise _cannot_write(path, flag, f"it is {what}")
    with writing(path, flag):
        if what is None:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK if fifo else os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        except OSError as exc:
            if fifo and exc.errno == errno.ENXIO:
                raise _cannot_write(path, flag, "it is a FIFO (named pipe) that no program is reading") from None
            raise
        if fifo:
            os.set_blocking(fd, True)  # a reader is there: write as to any pipe
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)


def _cannot_write(path: Path, flag: str, reason: str, fix: str = "name a file in a folder you can write") -> InputError:
    return InputError(f"{flag} {path}: cannot write it ({reason}); {fix}", field=flag.lstrip("-").replace("-", "_"))
