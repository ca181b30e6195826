"""--plot names a file that must be writable: a path that cannot be one is one ``Error:`` line naming
--plot, exit 2, no traceback and nothing created, found before the computation where it can be
(recommend, roofline, roofline --pareto); a write that fails anyway is the same kind of error.
Missing folders are created, as ``calibrate --out`` creates them, and the ``wrote`` line says so."""

from __future__ import annotations

import errno
import os
import sys

import pytest

# (command line without --plot, the module attribute that does the computation, the one that writes)
COMMANDS = {
    "recommend": (("recommend", "--batch", "8", "--ctx", "2048"), "quantadvise.api.recommend.recommend",
                  "quantadvise.report.recommend.write_plot"),
    "roofline": (("roofline", "--batch", "1..64"), "quantadvise.api.roofline.roofline",
                 "quantadvise.report.roofline.write_plot"),
    "roofline-pareto": (("roofline", "--pareto", "--batch", "1..64"), "quantadvise.api.roofline.roofline",
                        "quantadvise.report.roofline.write_pareto_plot"),
}


def tree(root):
    """Every path under ``root`` (to show that nothing was created)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def assert_one_plot_error(r, *words):
    assert r.code == 2, (r.code, r.stderr)
    assert "Traceback" not in r.stderr and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: --plot "), r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


def never_called(monkeypatch, target):
    def boom(*_a, **_k):
        raise AssertionError(f"{target} ran: the --plot path should have been refused before any work")

    monkeypatch.setattr(target, boom)


@pytest.mark.parametrize("case", sorted(COMMANDS))
def test_a_file_on_the_way_is_refused_before_any_work(cli, tmp_path, monkeypatch, case):
    # a plain file where a folder should be: os.mkdir raised FileExistsError, writing ENOTDIR
    argv, compute, _ = COMMANDS[case]
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file, not a folder\n")
    never_called(monkeypatch, compute)
    before = tree(tmp_path)
    for plot in (blocker / "x.png", blocker / "deeper" / "x.svg"):
        r = cli(*argv, "--plot", str(plot))
        assert_one_plot_error(r, str(plot), f"{blocker} is not a folder", "cannot write it")
    assert tree(tmp_path) == before and blocker.read_text() == "a file, not a folder\n"


@pytest.mark.parametrize("case", sorted(COMMANDS))
def test_a_folder_is_not_a_plot_file(cli, tmp_path, monkeypatch, case):
    argv, compute, _ = COMMANDS[case]
    (tmp_path / "out.png").mkdir()
    never_called(monkeypatch, compute)
    r = cli(*argv, "--plot", str(tmp_path / "out.png"))
    # typer's own dir_okay=False check or ours: either way one Error line naming --plot
    assert r.code == 2 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("Error:") and "--plot" in line


@pytest.mark.skipif(sys.platform == "win32" or not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root (and Windows) may write into a read-only folder")
@pytest.mark.parametrize("case", sorted(COMMANDS))
def test_a_read_only_folder_is_refused_before_any_work(cli, tmp_path, monkeypatch, case):
    argv, compute, _ = COMMANDS[case]
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    never_called(monkeypatch, compute)
    try:
        for plot in (ro / "x.png", ro / "new" / "x.png"):
            r = cli(*argv, "--plot", str(plot))
            assert_one_plot_error(r, str(plot), "permission denied")
        assert tree(ro) == []
    finally:
        ro.chmod(0o755)


@pytest.mark.parametrize("case", sorted(COMMANDS))
def test_a_write_that_fails_anyway_is_one_error_line(cli, tmp_path, monkeypatch, case):
    # a place that passes the check but refuses the file when written (/proc as root, a full disk):
    # the writer raises the OSError the OS would; its strerror is what the line must show
    argv, _, writer = COMMANDS[case]

    def refuse(_result, path):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(writer, refuse)
    plot = tmp_path / "x.png"
    r = cli(*argv, "--plot", str(plot))
    assert_one_plot_error(r, str(plot), "cannot write it (Permission denied)")
    assert not plot.exists()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_proc_is_one_error_line(cli):
    # /proc accepts no new files, for root either (ENOENT or EACCES, depending on who runs it)
    for argv in (("recommend", "--batch", "8"), ("roofline", "--pareto", "--batch", "1..64")):
        r = cli(*argv, "--plot", "/proc/quantadvise-test.png")
        assert_one_plot_error(r, "/proc/quantadvise-test.png", "cannot write it")


@pytest.mark.parametrize("case", sorted(COMMANDS))
def test_missing_folders_are_created_as_calibrate_out_does(cli, tmp_path, case):
    pytest.importorskip("matplotlib")
    argv, _, _ = COMMANDS[case]
    plot = tmp_path / "new" / "sub" / "p.svg"
    r = cli(*argv, "--plot", str(plot), "-f", "json")
    assert r.code == 0, r.stderr
    r.json()  # stdout is still the report only
    assert plot.read_text().lstrip().startswith(("<?xml", "<svg"))
    assert f"wrote {plot} (created the folder {plot.parent})" in r.stderr.splitlines()


def test_the_suffix_is_still_checked_first(cli, tmp_path, monkeypatch):
    never_called(monkeypatch, "quantadvise.api.recommend.recommend")
    r = cli("recommend", "--plot", str(tmp_path / "notes.txt" / "x.pdf"))
    assert_one_plot_error(r, ".png or .svg")


def test_validate_plot_paths_are_one_error_line(cli, tmp_path):
    # validate --plot used to raise FileNotFoundError on an unwritable path, and ValueError ("Number of
    # rows must be a positive integer, not 0") on a shipped profile, which has kernel curves and no
    # per-scheme timings to draw
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = cli("validate", "h100-sxm", "--plot", str(blocker / "v.png"))
    assert_one_plot_error(r)
    r = cli("validate", "h100-sxm", "--plot", str(tmp_path / "v.png"))
    assert_one_plot_error(r, "no per-scheme timings")
    assert not (tmp_path / "v.png").exists()


def test_calibrate_out_is_checked_before_any_work(cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = cli("calibrate", "--backend", "simulated", "--out", str(blocker / "p.yaml"))
    assert r.code == 2 and r.stderr.startswith("Error: --out ") and r.stderr.count("\n") == 1, r.stderr
