"""Issue 29, expansion bombs: every form of variable expansion the deployment readers perform — shell
``$X`` / ``${X}`` / ``${X:-...}`` / arrays / ``eval``, make ``$(X)`` / ``${X}``, Dockerfile ARG/ENV,
compose ``${X}`` from ``.env``, Kubernetes ``$(X)`` — draws on one budget per file
(``artifacts/budget.py``): past it a reference stays as written, with one warning; commands keep their
first 1,000 words, files their first 100,000; a file gets 2 s of CPU. Before, a 577-byte Makefile of
nested ``$(X)`` references ran past 60 s at 380 MB and growing, a 10-line shell script of nested
``${X}`` raised MemoryError, and a one-line file of 300,000 unknown flags took 139 s."""

from __future__ import annotations

import os
import time

import pytest

from quantadvise.artifacts import budget
from quantadvise.artifacts.scan import parse_text, read_paths
from quantadvise.artifacts.shell import split_shell
from quantadvise.catalog import option_list
from tests.limits import time_limit


def _parse(text: str, kind: str, file: str = "f", **kw):
    """(invocations, the file's budget warnings, CPU seconds), under a hard limit."""
    t0 = time.process_time()
    with time_limit(cpu=10, what=file), budget.reading(file) as b:
        found = parse_text(text, file, kind, options=option_list, **kw)
    return found, b.warnings, time.process_time() - t0


def _longest_word(found) -> int:
    return max((len(a) for inv in found for a in inv.argv), default=0)


# the issue's examples, rebuilt: ten references per level, eight or nine levels
MAKE_BOMB = "X0 = vllm serve m/m --a b c d e f g h i j\n" + "".join(
    f"X{i} = " + f"$(X{i - 1})" * 10 + "\n" for i in range(1, 8)) + "serve:\n\t$(X7)\n"
SHELL_BOMB = "#!/bin/sh\nA=" + "x" * 46 + "\n" + "".join(
    f"B{i}=" + (f"${{B{i - 1}}}" if i > 1 else "${A}") * 10 + "\n" for i in range(1, 9)) + "vllm serve m/m --x ${B8}\n"


def test_the_issue_makefile_bomb_is_bounded():
    assert len(MAKE_BOMB) < 600
    found, warnings, cpu = _parse(MAKE_BOMB, "makefile", "Makefile")
    assert cpu < 3 and any("an expansion bomb?" in w for w in warnings), warnings
    assert _longest_word(found) <= budget.MAX_VALUE_CHARS + len(MAKE_BOMB)


def test_the_issue_shell_bomb_is_bounded():
    assert SHELL_BOMB.count("\n") == 11
    found, warnings, cpu = _parse(SHELL_BOMB, "shell", "bomb.sh")
    assert cpu < 3 and any("would grow past 65,536 characters" in w for w in warnings), warnings
    (inv,) = found
    assert "$" in inv.other["--x"] and len(inv.other["--x"]) <= budget.MAX_VALUE_CHARS + len(SHELL_BOMB)


def test_a_line_of_300000_unknown_flags():
    text = "vllm serve m/m " + " ".join(f"-{chr(97 + i % 26)}" for i in range(300_000)) + "\n"
    found, warnings, cpu = _parse(text, "shell", "flags.sh")
    assert cpu < 3, cpu
    assert any("more than 1,000 words" in w for w in warnings)
    assert all(len(inv.argv) <= budget.MAX_WORDS for inv in found)


def test_300000_distinct_unknown_flags_over_many_commands():
    text = "".join("vllm serve m/m " + " ".join(f"--q{j}-{i}" for i in range(900)) + "\n" for j in range(150))
    found, warnings, cpu = _parse(text, "shell", "many.sh")
    assert cpu < 4 and any("100,000 words in the file" in w for w in warnings), (cpu, warnings)


def test_past_the_file_s_words_the_rest_is_not_scanned():
    # 100,000 words are read and the next is refused; the 40 lines after it are not scanned at all (they used to be
    # walked character by character to drop every word: a quarter of the file above), so even an unterminated
    # quote there is not met: the file reads with the one warning
    text = "vllm serve m/m " + "".join(f"--a{i}\n" for i in range(99_997)) + "vllm serve m/m --x 1\n" * 40 + "echo '\n"
    found, warnings, cpu = _parse(text, "shell", "long.sh")
    assert any("100,000 words in the file" in w for w in warnings), warnings
    assert [inv.line for inv in found] == [1]  # the 40 later commands were never read


@pytest.mark.parametrize(("name", "text", "says"), [
    ("nested defaults", "echo " + "${X:-" * 5000 + "v" + "}" * 5000 + "\n", "nested more than 16 deep"),
    ("eval chain", "eval " * 20000 + "vllm serve m/m\n", "nested more than 16 deep"),
    ("doubling", "A=x\n" + 'A="$A$A"\n' * 200 + "vllm serve m/m $A\n", "would grow past"),
    ("array doubling", "A=(x)\n" + 'A=("${A[@]}" "${A[@]}")\n' * 200 + "vllm serve m/m ${A[@]}\n", "1,000 words"),
    ("array appends", "A=(x)\n" + 'A+=("${A[@]}")\n' * 200 + "vllm serve m/m ${A[@]}\n", "1,000 words"),
    ("a 60 kB value 3,000 times", "A=" + "q" * 60000 + "\nvllm serve m/m " + " ".join(["$A"] * 3000) + "\n",
     "4,000,000 characters"),
])
def test_shell_expansion_forms(name, text, says):
    found, warnings, cpu = _parse(text, "shell", "s.sh")
    assert cpu < 3, (name, cpu)
    assert any(says in w for w in warnings), (name, warnings)
    assert _longest_word(found) <= budget.MAX_VALUE_CHARS + 100


@pytest.mark.parametrize("text", [
    "echo -" + "=" * 300_000 + "\n",  # NAME= decided once per word (a join per '=' before: quadratic)
    "cat " + "<<A " * 100_000 + "\nA\n",  # the heredoc queue (a list.pop(0) per heredoc before)
    "echo ${A[" + "9" * 5000 + "]}\n",  # an array index int() refuses
    "x " * 400_000,
])
def test_shell_text_that_was_quadratic_or_crashed(text):
    t0 = time.process_time()
    with time_limit(cpu=10):
        try:
            split_shell(text, "s.sh")
        except budget.TimeUp:
            pass  # said and skipped by the scan: bounded either way
    assert time.process_time() - t0 < 3


def test_makefile_forms():
    many = "A = " + "x" * 60000 + "\n" + "".join(f"B{i} = $(A)\n" for i in range(100)) + \
        "serve:\n\tvllm serve m/m " + " ".join(f"$(B{i % 100})" for i in range(3000)) + "\n"
    appends = "X += " + "\nX += ".join("abcdefgh" for _ in range(50_000)) + "\nserve:\n\tvllm serve m/m $(X)\n"
    conts = "serve:\n\tvllm serve m/m \\\n" + "\t--x y \\\n" * 50_000 + "\t--z w\n"
    for text in (many, appends, conts):
        found, warnings, cpu = _parse(text, "makefile", "Makefile")
        assert cpu < 3, (cpu, warnings)
        assert _longest_word(found) <= budget.MAX_VALUE_CHARS + 100


def test_dockerfile_arg_and_env_doubling():
    env = "FROM vllm/vllm-openai:v0.11.0\nENV A0=" + "x" * 50 + "\n" + "".join(
        f"ENV A{i}=${{A{i - 1}}}${{A{i - 1}}}\n" for i in range(1, 40)) + "CMD vllm serve m/m --x $A39\n"
    found, warnings, cpu = _parse(env, "dockerfile", "Dockerfile")
    assert cpu < 3 and any("an expansion bomb?" in w for w in warnings), warnings
    assert _longest_word(found) <= budget.MAX_VALUE_CHARS + 100


def test_compose_interpolation_from_a_large_env_value():
    dotenv = {"BIG": "y" * 1_000_000}
    for command in ("vllm serve m/m " + " ".join(["${BIG}"] * 300),
                    "[vllm, serve, m/m, " + ", ".join(['"${BIG}${BIG}"'] * 300) + "]"):
        text = f"services:\n  llm:\n    image: vllm/vllm-openai:v0.11.0\n    command: {command}\n"
        found, warnings, cpu = _parse(text, "yaml", "docker-compose.yml", dotenv=dotenv)
        assert cpu < 3 and any("an expansion bomb?" in w for w in warnings), warnings
        assert _longest_word(found) <= budget.MAX_VALUE_CHARS + 100


def test_kubernetes_env_references_and_aliases():
    big = "z" * 1_000_000
    k8s = ("apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - name: x\n"
           "        image: vllm/vllm-openai:v0.11.0\n        env:\n        - name: BIG\n          value: '" + big +
           "'\n        command: [vllm, serve, m/m, " + ", ".join(['"$(BIG)$(BIG)$(BIG)"'] * 200) + "]\n")
    found, warnings, cpu = _parse(k8s, "yaml", "d.yaml")
    assert cpu < 3 and any("an expansion bomb?" in w for w in warnings), warnings
    assert _longest_word(found) <= budget.MAX_VALUE_CHARS + 100
    # one 750 kB scalar reached through 100,000 aliases: searched once, not 100,000 times
    aliases = "a: &a '" + "vllm serve m/m " * 50_000 + "'\nb: [" + ", ".join(["*a"] * 100_000) + "]\n"
    _, _, cpu = _parse(aliases, "yaml", "x.yaml")
    assert cpu < 3
    # one container map reached through 5,000 aliases: one launch
    one = ("c: &c {name: x, image: vllm/vllm-openai:v0.11.0, command: [vllm, serve, m/m]}\n"
           "spec: {containers: [" + ", ".join(["*c"] * 5000) + "]}\n")
    found, _, _ = _parse(one, "yaml", "y.yaml")
    assert len(found) == 1


def test_a_megabyte_key_does_not_repeat_in_every_path():
    text = "? '" + "k" * 1_000_000 + "'\n:\n" + "".join(f"  - x{i}\n" for i in range(50_000))
    _, _, cpu = _parse(text, "yaml", "k.yaml")
    assert cpu < 3


def test_the_scan_says_what_the_budget_left(tmp_path):
    (tmp_path / "bomb.sh").write_text(SHELL_BOMB)
    scan = read_paths([tmp_path / "bomb.sh"], options=option_list)
    assert any("an expansion bomb?" in w for w in scan.warnings), scan.warnings


def test_the_scan_keeps_at_most_its_launches(tmp_path):
    from quantadvise.artifacts.scan import MAX_SCAN_LAUNCHES

    (tmp_path / "many.sh").write_text("".join(f"vllm serve m/m --max-model-len {1000 + i}\n" for i in range(500)))
    scan = read_paths([tmp_path], options=option_list)
    assert len(scan.invocations) == MAX_SCAN_LAUNCHES
    assert any(f"more than {MAX_SCAN_LAUNCHES} engine launches" in w for w in scan.warnings)


def test_a_file_past_its_cpu_seconds_is_skipped_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(budget, "MAX_SECONDS", 0.0)
    monkeypatch.setattr(budget, "_CLOCK_EVERY", 1)
    (tmp_path / "slow.sh").write_text("vllm serve m/m\n" * 100)
    (tmp_path / "ok.yaml").write_text("x: 1\n")
    scan = read_paths([tmp_path], options=option_list)  # found by the walk: skipped, the scan goes on
    assert any("of CPU" in w for w in scan.warnings), scan.warnings
    with pytest.raises(budget.TimeUp):  # named: the one error
        read_paths([tmp_path / "slow.sh"], options=option_list)


def test_the_walk_is_bounded_by_entries_and_bytes(tmp_path, monkeypatch):
    from quantadvise.artifacts import walk

    for i in range(30):
        (tmp_path / f"d{i:02d}").mkdir()  # folders only: no file to count
    (tmp_path / "zz.sh").write_text("vllm serve m/m\n")
    monkeypatch.setattr(walk, "MAX_WALK_ENTRIES", 10)
    scan = read_paths([tmp_path], options=option_list)
    assert scan.stopped is not None and any("10 folder entries" in w for w in scan.warnings)
    monkeypatch.setattr(walk, "MAX_WALK_ENTRIES", 1000)
    monkeypatch.setattr(walk, "MAX_WALK_BYTES", 5)
    scan = read_paths([tmp_path], options=option_list)
    assert scan.invocations == [] and any("MiB read" in w for w in scan.warnings)


def test_real_scripts_are_untouched():
    text = ('MODEL=${MODEL:-meta-llama/Llama-3.1-8B}\nARGS=(--max-model-len 8192 -tp 2)\nX="$MODEL"\n'
            'eval vllm serve "$X" "${ARGS[@]}" --gpu-memory-utilization 0.9\n')
    (inv,), warnings, _ = _parse(text, "shell", "serve.sh")
    assert warnings == [] and inv.model == "meta-llama/Llama-3.1-8B" and inv.max_model_len == 8192
    assert inv.tensor_parallel_size == 2


def test_a_path_named_many_times_is_read_once(tmp_path):
    (tmp_path / "serve.sh").write_text("vllm serve m/m --max-model-len 4096\n")
    (tmp_path / "d").mkdir()
    given = [tmp_path / "serve.sh", tmp_path / "d" / ".." / "serve.sh", *[tmp_path / "serve.sh"] * 50_000]
    with time_limit(cpu=10, what="one file named 50,002 times"):
        scan = read_paths(given, options=option_list)
    assert scan.files_scanned == [str(tmp_path / "serve.sh")] and len(scan.invocations) == 1  # one file, one launch
    assert scan.paths == [str(given[0]), str(given[1])]  # each spelling once, as given


def test_named_files_draw_on_the_walks_bytes(tmp_path, monkeypatch):
    from quantadvise.artifacts import walk

    for name in ("a.sh", "b.sh"):
        (tmp_path / name).write_text("vllm serve m/m\n")  # 15 bytes each
    monkeypatch.setattr(walk, "MAX_WALK_BYTES", 20)  # room for the first file (15), not the second (15 + 15 = 30)
    scan = read_paths([tmp_path / "a.sh", tmp_path / "b.sh"], options=option_list)
    assert len(scan.invocations) == 1 and scan.stopped is not None
    assert any(s.startswith(str(tmp_path / "b.sh") + ": not read") for s in scan.files_skipped), scan.files_skipped


# ---- an engine's --config FILE (issue 28's reader) is read as a named deployment file is ----------------------------
def _with_config(tmp_path, make) -> list[str]:
    (tmp_path / "serve.sh").write_text("vllm serve m/m --config cfg.yaml\n")
    make(tmp_path / "cfg.yaml")
    with time_limit(cpu=10, what="--config"):
        scan = read_paths([tmp_path / "serve.sh"], options=option_list)
    (inv,) = scan.invocations
    return inv.warnings


def test_a_config_file_that_is_read_as_its_engine_reads_it(tmp_path):
    warnings = _with_config(tmp_path, lambda p: p.write_text("max-model-len: 4096\n"))
    assert not any("--config" in w for w in warnings), warnings  # a real one: its options are checked, no warning


@pytest.mark.parametrize(("make", "says"), ids=["fifo", "alias-bomb", "5000-digits", "3-MB", "not-utf8"], argvalues=[
    (lambda p: os.mkfifo(p), "a FIFO"),
    (lambda p: p.write_text('a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
        f'{c}: &{c} [*{p_}, *{p_}, *{p_}, *{p_}, *{p_}, *{p_}, *{p_}, *{p_}, *{p_}]\n'
        for p_, c in zip("abcdefgh", "bcdefghi", strict=True)) + "max-model-len: *i\n"), "alias"),
    (lambda p: p.write_text("max-model-len: " + "9" * 5000 + "\n"), "invalid YAML value"),
    (lambda p: p.write_text("# " + "x" * 3_000_000 + "\n"), "too large"),  # past the 2 MB of a deployment file
    (lambda p: p.write_bytes(b"max-model-len: \xff\xfe\n"), "not UTF-8"),
])
def test_a_hostile_config_file_is_one_warning(tmp_path, make, says):
    warnings = [w for w in _with_config(tmp_path, make) if "--config cfg.yaml" in w]
    assert len(warnings) == 1 and says in warnings[0], warnings


def test_production_stack_counts_are_digits(tmp_path):
    from quantadvise.artifacts.production_stack import _count

    assert [_count(v) for v in ("8", "²", "9" * 5000, "-1", "1e3", "123456789", "1234567890")] == \
        [8, None, None, None, None, 123456789, None]
    values = ("servingEngineSpec:\n  modelSpec:\n  - name: a\n    repository: vllm/vllm-openai\n    tag: v0.11.0\n"
              "    modelURL: m/m\n    requestGPU: 2\n    replicaCount: " + "9" * 5000 + "\n    raySpec:\n"
              "      enabled: true\n")
    (tmp_path / "values.yaml").write_text(values)
    (inv,) = read_paths([tmp_path / "values.yaml"], options=option_list).invocations
    assert inv.gpu_count == 2  # the 5,000-digit replicaCount is no count: the head's 2 GPUs, not a ValueError
