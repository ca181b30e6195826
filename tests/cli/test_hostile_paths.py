"""Issue 29, hostile paths and names: special files (FIFOs, devices, sockets) never block a read or a
write — each is one ``Error:`` line or skipped by the walk; a file or folder name that is not UTF-8 is
read (surrogate escapes in) and written as ``\\xNN`` in every output format; control characters from
input (ESC, CR ...) are escaped in human output; a CSV cell never starts a spreadsheet formula; a run
leaves nothing in the temporary folder. Before, a non-UTF-8 name crashed ``check`` in every format, a
FIFO given as --output/--baseline/--workload/--profile blocked forever, and raw ESC bytes reached the
terminal."""

from __future__ import annotations

import csv
import io
import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from tests.limits import time_limit
from tests.oneline import one_error

REPO = Path(__file__).resolve().parents[2]
FORMATS = ["table", "json", "markdown", "github", "sarif", "junit"]
SERVE = "vllm serve meta-llama/Llama-3.1-8B --max-model-len 999999 --bogus-flag 1\n"

posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and AF_UNIX sockets are POSIX")




@pytest.fixture
def specials(tmp_path):
    """A FIFO no one writes or reads, a listening socket's path, and /dev/zero (never ends)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(sock_path))
    (tmp_path / "serve.sh").write_text(SERVE)
    yield {"a FIFO": fifo, "a socket": sock_path, "a character device": Path("/dev/zero")}
    s.close()


@posix_only
@pytest.mark.parametrize("kind", ["a FIFO", "a socket", "a character device"])
def test_a_special_file_is_refused_in_one_line_and_never_blocks(cli, specials, kind):
    p = str(specials[kind])
    cases = [
        (["check", p, "--gpu", "h100"], "name a deployment file or folder"),
        (["check", "serve.sh", "--gpu", "h100", "--baseline", p], p),
        (["check", "serve.sh", "--gpu", "h100", "--config", p], "--config"),
        (["recommend", "-w", p], "--workload"),
        (["roofline", "--profile", p], "--profile"),
        (["size", p], p),
        (["accuracy", p, p], "BASE"),
        (["validate", p], p),
    ]
    for args, fragment in cases:
        with time_limit(cpu=10, wall=20, what=" ".join(args)):
            r = cli(*args)
        one_error(r, fragment, kind)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="a Linux /proc")
def test_a_kernel_file_is_refused(cli, tmp_path):
    """/proc and /sys files stat as regular files, but reading one can block (/proc/kmsg) or never end."""
    (tmp_path / "serve.sh").write_text(SERVE)
    for args in (["size", "/proc/self/status"], ["check", "/proc/self/status", "--gpu", "h100"],
                 ["recommend", "-w", "/proc/self/status"], ["accuracy", "/proc/self/status", "/proc/self/status"],
                 ["check", "serve.sh", "--gpu", "h100", "--baseline", "/proc/self/status"]):
        with time_limit(cpu=10, wall=20, what=" ".join(args)):
            one_error(cli(*args), "virtual file system")


@posix_only
@pytest.mark.parametrize(("kind", "flag"), [("a FIFO", "--output"), ("a FIFO", "--write-baseline"),
                                            ("a socket", "--output"), ("a socket", "--write-baseline")])
def test_writing_to_a_special_file_no_one_reads(cli, specials, kind, flag):
    with time_limit(cpu=20, wall=30, what=flag):
        r = cli("check", "serve.sh", "--gpu", "h100", flag, str(specials[kind]))
    one_error(r, flag, "cannot write it")


@posix_only
def test_a_plot_or_profile_is_never_written_to_a_fifo(cli, tmp_path):
    os.mkfifo(tmp_path / "p.png")
    with time_limit(cpu=10, wall=20):
        one_error(cli("recommend", "--plot", "p.png"), "--plot", "FIFO")
        one_error(cli("calibrate", "--backend", "simulated", "--gpu", "h100", "--out", "p.png"), "--out", "FIFO")


@posix_only
def _read_fifo(fifo: Path, opened: threading.Event, got: list[bytes]) -> None:
    """A program reading ``fifo``: it holds the FIFO open before ``opened`` is set (the CLI opens it without
    waiting, so a reader must already be there), then reads until the writer has written and closed."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    opened.set()
    chunks: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            try:
                b = os.read(fd, 65536)
            except BlockingIOError:  # a writer is connected, nothing to read yet
                time.sleep(0.005)
                continue
            if b:
                chunks.append(b)
            elif chunks:
                break  # the writer wrote and closed
            else:
                time.sleep(0.005)  # no writer yet
    finally:
        os.close(fd)
    got.append(b"".join(chunks))


def test_output_to_a_fifo_a_program_reads(cli, tmp_path):
    fifo = tmp_path / "report"
    os.mkfifo(fifo)
    got: list[bytes] = []
    opened = threading.Event()
    reader = threading.Thread(target=_read_fifo, args=(fifo, opened, got))
    reader.start()
    assert opened.wait(10)
    (tmp_path / "serve.sh").write_text(SERVE)
    try:
        with time_limit(cpu=20, wall=30):
            r = cli("check", "serve.sh", "--gpu", "h100", "--format", "json", "--output", str(fifo))
    finally:
        reader.join(timeout=30)
    assert r.code == 1, r.stderr
    assert json.loads(got[0])["findings"]


def test_output_to_dev_null_still_works(cli, tmp_path):
    (tmp_path / "serve.sh").write_text(SERVE)
    r = cli("check", "serve.sh", "--gpu", "h100", "--output", os.devnull)
    assert r.code == 1 and "written to" in r.stderr, r.stderr


@posix_only
def test_the_walk_passes_over_special_files(cli, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    os.mkfifo(repo / "serve.sh")  # named like a deployment file
    (repo / "ok.sh").write_text(SERVE)
    with time_limit(cpu=20, wall=30):
        r = cli("check", "repo", "--gpu", "h100", "--format", "json")
    assert r.code == 1 and [f["file"] for f in r.json()["findings"]][0].endswith("ok.sh"), r.stderr


# -- names that are not UTF-8, control characters ---------------------------------------------------

BAD_DIR = b"d\xff\xfe"
BAD_FILE = b"serve\xe9.sh"
ESC_FILE = b"\x1b[31mred\rx.sh"


@pytest.fixture
def odd_repo(tmp_path):
    root = os.fsencode(tmp_path / "repo")
    os.makedirs(os.path.join(root, BAD_DIR))
    with open(os.path.join(root, BAD_DIR, BAD_FILE), "w") as fh:
        fh.write(SERVE)
    with open(os.path.join(root, ESC_FILE), "w") as fh:
        fh.write(SERVE)
    return tmp_path / "repo"


def _clean(text: str) -> None:
    """Writable as UTF-8 (no lone surrogate), and no control character but newline and tab."""
    text.encode("utf-8")
    bad = [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]
    assert not bad, f"raw control characters {bad!r} in the output"


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_name_that_is_not_utf8_in_every_format(cli, odd_repo, fmt):
    r = cli("check", "repo", "--gpu", "h100", "--format", fmt, "-v")
    assert r.code == 1, r.stderr[-2000:]  # UnicodeEncodeError from the findings' fingerprints before
    _clean(r.stdout)
    _clean(r.stderr)
    shown = r.stdout if fmt != "sarif" else json.dumps(json.loads(r.stdout))
    if fmt == "sarif":
        uris = {loc["physicalLocation"]["artifactLocation"]["uri"] for res in json.loads(r.stdout)["runs"][0]["results"]
                for loc in res.get("locations", [])}
        assert "repo/d%FF%FE/serve%E9.sh" in uris  # a URI carries the name's own bytes
    elif fmt == "json":
        files = {f["file"] for f in r.json()["findings"]}
        # the bytes that are not UTF-8 as \xNN; a control character as JSON's own escape (\u001b)
        assert "repo/d\\xff\\xfe/serve\\xe9.sh" in files and "repo/\x1b[31mred\rx.sh" in files
    else:
        assert "d\\xff\\xfe/serve\\xe9.sh" in shown, shown[:3000]
        assert "\\x1b[31mred" in shown
    assert "read repo/\\x1b[31mred\\x0dx.sh" in r.stderr  # -v names every file read, escaped too


def test_an_escape_in_a_name_never_reaches_the_terminal(cli, tmp_path):
    r = cli("size", "\x1b[2J\x1b[31mllama")
    one_error(r, "\\x1b[2J")
    assert "\x1b" not in r.stderr
    for args in (["recommend", "--gpu", "h1\n00"], ["size", "--scheme", "a\nb"], ["check", "a\nb"],
                 ["recommend", "--batch", "1\n2"]):  # a newline in a value: still one line
        r = cli(*args)
        assert r.code == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_control_characters_from_a_config_json_in_human_output(cli, tmp_path):
    cfg = json.loads((REPO / "data/models/meta-llama/Llama-3.1-8B.json").read_text())
    cfg["model_type"] = "llama\x1b]0;pwned\x07\udcff"  # an OSC title sequence, and a lone surrogate
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    for fmt in ("table", "json"):
        r = cli("size", "m", "--format", fmt)
        assert r.code == 0, r.stderr
        _clean(r.stdout)
        _clean(r.stderr)
        assert "\\x1b]0;pwned\\x07" in r.stderr  # the warning names it, escaped


# -- CSV ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cell", ["=HYPERLINK(\"http://x\")", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_a_csv_text_cell_never_starts_a_formula(cell):
    from quantadvise.report.text import csv_cell, csv_text

    out = csv_cell(cell)
    assert out.startswith("'") and out[1:].replace("\\x09", "\t").replace("\\x0d", "\r") == cell
    row = next(csv.reader(io.StringIO(csv_text(["model"], [[cell]]).splitlines()[1])))
    assert row[0][0] == "'"
    assert csv_cell("-1.5e-05") == "-1.5e-05" and csv_cell(-3) == -3 and csv_cell("nan") == "nan"  # numbers stay


def test_roofline_csv_neutralises_a_model_name(cli, tmp_path):
    (tmp_path / "=HYPERLINK(x)").mkdir()
    (tmp_path / "=HYPERLINK(x)" / "config.json").write_text(
        (REPO / "data/models/meta-llama/Llama-3.1-8B.json").read_text())
    for extra in ([], ["--pareto"]):
        r = cli("roofline", "--model", "./=HYPERLINK(x)", "--batch", "1", "--format", "csv", *extra)
        assert r.code == 0, r.stderr
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        assert rows and all(not row["model"].startswith(("=", "+", "-", "@")) for row in rows), rows[0]
        assert rows[0]["model"].startswith("'")


# -- no temp-dir litter --------------------------------------------------------------------------------


def test_a_run_leaves_nothing_in_the_temporary_folder(cli, tmp_path, monkeypatch):
    import tempfile

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    (tmp_path / "serve.sh").write_text(SERVE)
    runs = [["size", "llama-3-8b"], ["recommend", "--format", "json"], ["roofline", "--format", "csv"],
            ["check", "serve.sh", "--gpu", "h100", "--output", "r.sarif", "--format", "sarif"],
            ["check", "serve.sh", "--gpu", "h100", "--write-baseline", "b.json"],
            ["calibrate", "--backend", "simulated", "--gpu", "h100", "--out", "p.yaml", "--schemes", "bf16",
             "--batches", "1,8,64,512"], ["recommend", "--plot", "r.png"]]
    for args in runs:
        r = cli(*args)
        assert r.code in (0, 1), (args, r.stderr[-1000:])
    assert list(tmp.iterdir()) == []


def test_an_oversized_file_is_refused_before_it_is_read(cli, tmp_path):
    """A configuration of 17 MiB, evidence of 300 MiB (sparse files: no disk used): one Error: line each,
    from the size alone (before: read whole, then parsed for minutes)."""
    for name, size in (("quantadvise.yaml", 17 * 2**20), ("w.yaml", 17 * 2**20), ("b.jsonl", 300 * 2**20)):
        with open(tmp_path / name, "wb") as fh:
            fh.truncate(size)
    (tmp_path / "serve.sh").write_text(SERVE)
    with time_limit(cpu=10):
        one_error(cli("check", "serve.sh", "--gpu", "h100"), "too large")
        one_error(cli("recommend", "-w", "w.yaml"), "too large")
        one_error(cli("accuracy", "b.jsonl", "b.jsonl"), "too large")


def test_a_plot_of_a_model_whose_name_is_not_utf8(cli, tmp_path):
    folder = os.path.join(os.fsencode(tmp_path), b"m\xff")
    os.makedirs(folder)
    with open(os.path.join(folder, b"config.json"), "w") as fh:
        fh.write((REPO / "data/models/meta-llama/Llama-3.1-8B.json").read_text())
    model = os.fsdecode(folder)
    for args in (["recommend", "--model", model, "--plot", "a.png"], ["roofline", "--model", model, "--plot", "b.svg"],
                 ["roofline", "--model", model, "--pareto", "--plot", "c.png"]):
        r = cli(*args)  # a TypeError from matplotlib's text layout before
        assert r.code == 0 and "wrote" in r.stderr, r.stderr[-1000:]
    assert "m\\xff" in (tmp_path / "b.svg").read_text()


LONG = "a" * 5000  # longer than any file name the system allows (255 bytes a name, 4,096 a path on Linux)


@pytest.mark.parametrize("args", [
    ["size", "--profile", LONG], ["roofline", "--profile", LONG], ["check", "--config", LONG, "--gpu", "h100"],
    ["validate", LONG], ["accuracy", LONG, LONG], ["check", ".", "--gpu", "h100", "--baseline", LONG],
    ["recommend", "--profile", LONG], ["validate", "--bench", LONG],
])
def test_a_name_longer_than_the_system_allows_is_one_error_line(cli, args, tmp_path):
    # Before: OSError [Errno 36] File name too long escaped as a traceback (exit 1) from Path.is_file(),
    # which lets ENAMETOOLONG (and EACCES) through where it answers False for a missing file.
    r = cli(*[str(tmp_path) if a == "." else a for a in args])
    assert r.code == 2, (r.code, r.stderr[-1500:])
    errors = [x for x in r.stderr.splitlines() if x.startswith("Error: ")]
    assert len(errors) == 1 and "Traceback" not in r.stderr, r.stderr[-1500:]
    assert len(errors[0]) < 400, errors[0]  # the name is shortened, not printed whole


def test_a_terminal_that_cannot_encode_the_report_gets_plain_ascii(tmp_path):
    # Before: PYTHONIOENCODING=ascii (or a latin-1 terminal) raised UnicodeEncodeError on the first dash of
    # every report. Now each character the output cannot encode is written in ASCII (a dash as "-", the
    # band's sign as "+/-") and the run exits 0.
    import subprocess
    import sys

    env = {**os.environ, "PYTHONIOENCODING": "ascii", "COLUMNS": "80"}
    res = subprocess.run([sys.executable, "-m", "quantadvise", "recommend", "--batch", "8"], capture_output=True,
                         env=env, cwd=tmp_path, timeout=120)
    assert res.returncode == 0 and b"Traceback" not in res.stderr, res.stderr[-1500:]
    out = res.stdout.decode("ascii")  # nothing but ASCII
    assert "+/-" in out and "Recommendation:" in out


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symbolic links")
def test_a_symbolic_link_loop_is_one_error_line_or_passed_over(cli, tmp_path):
    # Before: Path.resolve() raised RuntimeError("Symlink loop") from `check LOOP` (a traceback, exit 1).
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    one_error(cli("check", str(tmp_path / "a"), "--gpu", "h100"), "a")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "serve.sh").write_text(SERVE)
    os.symlink("loop", repo / "loop")  # a link to itself inside the walked folder
    r = cli("check", str(repo), "--gpu", "h100", "--format", "json")
    assert r.code in (0, 1) and "Traceback" not in r.stderr, r.stderr[-1500:]


@pytest.mark.parametrize(("redirect", "args", "code"), [
    (">&-", ["list", "gpus"], 0),  # stdout closed: the report goes nowhere, the command still succeeds
    (">&-", ["--version"], 0),
    ("2>&-", ["list", "nope"], 2),  # stderr closed: the error line goes nowhere, the exit code still says why
    ("2>&-", ["size", "meta-llama/Llama-3-8B", "--bits", "4", "--group", "128"], 0),
])
def test_a_closed_stdout_or_stderr_is_written_nowhere(tmp_path, redirect, args, code):
    # a stream the caller closed is None in Python: the first write raised AttributeError (exit 1, no Error line)
    import shlex
    import subprocess
    import sys

    line = f"{shlex.quote(sys.executable)} -m quantadvise {' '.join(map(shlex.quote, args))} {redirect}"
    res = subprocess.run(["bash", "-c", line + "; echo rc=$?"], capture_output=True, cwd=tmp_path, timeout=120,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    out = res.stdout.decode()
    assert out.strip().endswith(f"rc={code}"), (out[-500:], res.stderr[-1500:])
    assert b"Traceback" not in res.stderr
    if redirect == "2>&-" and code == 0:
        assert "Llama-3-8B" in out  # the report still reaches stdout


@pytest.mark.parametrize(("env", "says"), [
    ({"_QUANTADVISE_COMPLETE": "complete_bash"}, "bash completion needs COMP_WORDS"),
    ({"_QUANTADVISE_COMPLETE": "complete_bash", "COMP_WORDS": "quantadvise ", "COMP_CWORD": "x"},
     "COMP_CWORD to be a word index, got 'x'"),
    ({"_QUANTADVISE_COMPLETE": "bogus"}, "is not a completion instruction"),
])
def test_a_malformed_completion_request_isone_error(tmp_path, env, says):
    # typer's bash completion read os.environ["COMP_WORDS"] and int(COMP_CWORD) unchecked (KeyError,
    # ValueError, exit 1); an unknown instruction printed click's own line and exited 1
    import subprocess
    import sys

    base = {k: v for k, v in os.environ.items() if not k.startswith(("COMP_", "_QUANTADVISE"))}
    res = subprocess.run([sys.executable, "-m", "quantadvise"], capture_output=True, cwd=tmp_path, timeout=60,
                         env={**base, **env})
    err = res.stderr.decode()
    assert res.returncode == 2 and "Traceback" not in err and err.startswith("Error: ") and says in err, err[-800:]
    assert err.count("\n") == 1


def test_a_well_formed_bash_completion_request_completes(tmp_path):
    import subprocess
    import sys

    env = {**os.environ, "_QUANTADVISE_COMPLETE": "complete_bash", "COMP_WORDS": "quantadvise reco", "COMP_CWORD": "1"}
    res = subprocess.run([sys.executable, "-m", "quantadvise"], capture_output=True, cwd=tmp_path, timeout=60, env=env)
    assert res.returncode == 0 and res.stdout.decode().split() == ["recommend"], res.stderr[-800:]


def test_main_leaves_the_callers_garbage_collector_as_it_found_it(cli):
    # main() turns the cyclic collector off for the command (a one-shot process) and back on after it: an API
    # user or a test suite calling it keeps its own setting, on or off
    import gc

    assert gc.isenabled()
    assert cli("list", "gpus").code == 0
    assert gc.isenabled()
    gc.disable()
    try:
        assert cli("list", "gpus").code == 0
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_config_json_with_a_byte_order_mark(cli, tmp_path):
    # json.loads refuses a BOM ("Unexpected UTF-8 BOM (decode using utf-8-sig)") and transformers reads
    # config.json with it, so the engines refuse the checkpoint too: one Error line that says what to do,
    # not Python's hint
    cfg = (Path(__file__).resolve().parents[2] / "data/models/meta-llama/Llama-3.1-8B.json").read_text(encoding="utf-8")
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("\ufeff" + cfg, encoding="utf-8")
    for cmd in ("size", "inspect"):
        r = cli(cmd, str(tmp_path / "m"))
        errors = [x for x in r.stderr.splitlines() if x.startswith("Error: ")]
        assert r.code == 2 and len(errors) == 1 and "Traceback" not in r.stderr
        assert "byte-order mark" in errors[0] and "without the BOM" in errors[0] and "utf-8-sig" not in errors[0]
