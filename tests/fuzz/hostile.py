"""Strategies for issue 29's hostile input classes (tests/fuzz/test_fuzz_hostile.py draws from them):
numbers past every limit and past what int() and float() take, expansion bombs in every reader's
syntax, and names that are not UTF-8 or hold control characters. Built for the classes, not for the
issue's examples: every numeric option is found in the app itself, every expansion form has a
generator, every byte can appear in a name."""

from __future__ import annotations

import functools

from hypothesis import strategies as st

# -- numbers ----------------------------------------------------------------------------------------

DIGITS = st.integers(min_value=1, max_value=6000).map(lambda n: "9" * n)  # past a float at 309, past int() at 4,301
number_text = st.one_of(
    DIGITS, DIGITS.map(lambda d: "-" + d), DIGITS.map(lambda d: d + ".5"), DIGITS.map(lambda d: "1e" + d[:6]),
    DIGITS.map(lambda d: d[:400] + "k"), DIGITS.map(lambda d: "1.." + d), DIGITS.map(lambda d: "0x" + d[:300]),
    st.sampled_from(["inf", "-inf", "nan", "1e309", "-1e309", "1e-400", "-0", "0", "1", "8", "64", "0.5", "1.0",
                     "١٢", "１２", "1_000", " 8 ", "8\t", "+8", "--8", "8e0", "2**64", "18446744073709551616",
                     "9223372036854775808", "-9223372036854775809", "1e18", "4096.0", "", " ", "abc", "5%", "8k",
                     "1,2", "1..0", "1..8:0", "1..8:" + "9" * 400, "\x00", "nan%", "inf%"]),
    st.integers(min_value=-(2**1100), max_value=2**1100).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
# values a file (JSON, YAML) holds where a number belongs
number_value = st.one_of(
    st.integers(min_value=-(10**1200), max_value=10**1200),
    st.sampled_from([10**400, -(10**400), 2**63, 2**64, -(2**63) - 1, 10**30, 0, -1, 1, 10**4000]),
    st.floats(allow_nan=True, allow_infinity=True), number_text, st.booleans(), st.none(),
    st.lists(st.integers(), max_size=2),
)
# hostile text only (never a small valid number): for commands whose valid runs are slow
hostile_number_text = st.one_of(DIGITS.filter(lambda d: len(d) > 30), DIGITS.map(lambda d: "-" + d),
                                st.sampled_from(["inf", "-inf", "nan", "1e309", "abc", "", "\x00", "1e-400"]))


def json_number_literal(n: str) -> str:
    """A number as a JSON / YAML / TOML literal may spell it (no quotes)."""
    return n


@functools.cache
def numeric_options() -> tuple[tuple[str, str, str | None, bool], ...]:
    """(command, long flag, environment variable, integer?) of every option typed int or float, and the
    list-valued number options (roofline --batch/--ctx, calibrate --batches), read from the app itself:
    a number option added later is fuzzed without touching this file."""
    import typer

    from quantadvise.cli.typer_app import build_app

    out = []
    for name, cmd in typer.main.get_command(build_app()).commands.items():
        for p in cmd.params:
            kind = getattr(getattr(p, "type_descriptor", None), "annotation", None)
            opts = [o for o in p.opts if o.startswith("--")]
            listed = kind is str and opts and opts[0] in ("--batch", "--ctx", "--batches")
            if opts and (kind in (int, float) or listed):
                out.append((name, max(opts, key=len), getattr(p, "envvar", None), kind is int))
    return tuple(out)


# -- expansion --------------------------------------------------------------------------------------

@st.composite
def bomb(draw) -> tuple[str, str, dict[str, str]]:
    """(reader, text, compose .env) of a file whose expansions grow: levels of variables each naming the
    one below several times, a variable doubling itself, defaults nested in defaults, eval chains,
    arrays, make += chains, Dockerfile ENV chains, compose / Kubernetes references to a large value."""
    form = draw(st.sampled_from(["shell-levels", "shell-double", "shell-nested", "shell-eval", "shell-array",
                                 "make-levels", "make-self", "make-append", "docker-env", "docker-arg", "compose",
                                 "k8s", "k8s-script", "many-words", "many-lines"]))
    levels = draw(st.integers(min_value=1, max_value=24))
    fan = draw(st.integers(min_value=1, max_value=14))
    seed = "x" * draw(st.sampled_from([1, 7, 46, 500, 5000, 70000]))
    if len(seed) > 500:  # a large value needs few levels to pass every allowance
        levels = min(levels, 4)
    launch = draw(st.sampled_from(["vllm serve m/m", "python -m sglang.launch_server --model-path m/m"]))
    quote = draw(st.sampled_from(["", '"']))
    if form == "shell-levels":
        body = f"V0={seed}\n" + "".join(f"V{i}={quote}" + f"${{V{i - 1}}}" * fan + f"{quote}\n" for i in range(1, levels + 1))
        return "shell", body + f"{launch} --x ${{V{levels}}} $V{levels}\n", {}
    if form == "shell-double":
        return "shell", f"A={seed}\n" + 'A="$A$A"\n' * (levels * 3) + f"{launch} $A\n", {}
    if form == "shell-nested":
        n = levels * fan * 40
        return "shell", f"{launch} --x " + "${X:-" * n + "v" + "}" * n + "\n", {}
    if form == "shell-eval":
        return "shell", "eval " * (levels * fan * 50) + launch + "\n", {}
    if form == "shell-array":
        grow = draw(st.sampled_from(['A=("${A[@]}" "${A[@]}")', 'A+=("${A[@]}")', "A=(${A[@]} ${A[@]} x)"]))
        return "shell", "A=(x)\n" + (grow + "\n") * (levels * 4) + f"{launch} ${{A[@]}} ${{A[0]}}\n", {}
    if form == "make-levels":
        body = f"X0 = {seed}\n" + "".join(f"X{i} = " + f"$(X{i - 1})" * fan + "\n" for i in range(1, levels + 1))
        return "makefile", body + f"serve:\n\t{launch} $(X{levels}) ${{X{levels}}}\n", {}
    if form == "make-self":
        return "makefile", f"X = a $(X) $(X) {seed[:50]}\nY = $(X)$(X)\nserve:\n\t{launch} $(Y)\n", {}
    if form == "make-append":
        return "makefile", "X += y\n" * (levels * fan * 200) + f"serve:\n\t{launch} $(X)\n", {}
    if form in ("docker-env", "docker-arg"):
        kw = "ENV" if form == "docker-env" else "ARG"
        body = f"FROM vllm/vllm-openai:v0.11.0\n{kw} A0={seed}\n" + "".join(
            f"{kw} A{i}=" + f"${{A{i - 1}}}" * min(fan, 4) + "\n" for i in range(1, levels + 1))
        return "dockerfile", body + f"CMD {launch} --x $A{levels}\n", {}
    if form == "compose":
        refs = " ".join(["${BIG}"] * (fan * 20))
        return "yaml", (f"services:\n  llm:\n    image: vllm/vllm-openai:v0.11.0\n    command: {launch} {refs}\n"), \
            {"BIG": seed * levels}
    if form in ("k8s", "k8s-script"):
        refs = ", ".join([f'"{"$(BIG)" * fan}"'] * (levels * 5))
        cmd = f"[{', '.join(launch.split())}, {refs}]" if form == "k8s" else \
            f"[sh, -c, '{launch} " + " ".join(["$BIG"] * (fan * levels * 5)) + "']"
        return "yaml", ("apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n"
                        "      - name: x\n        image: vllm/vllm-openai:v0.11.0\n        env:\n        - name: BIG\n"
                        f"          value: '{seed * levels}'\n        command: {cmd}\n"), {}
    if form == "many-words":
        return "shell", launch + " " + " ".join(f"--q{i % (fan * 100)}" for i in range(levels * 500)) + "\n", {}
    return "shell", (launch + " --max-model-len 8192\n") * (levels * fan * 4), {}


# -- names ------------------------------------------------------------------------------------------

# bytes a file name can hold on POSIX (all but NUL and '/'): lone bytes that are not UTF-8, control
# characters, quotes, the separators of GitHub workflow commands (: , %), markdown (| ` <), CSV (= + - @)
NAME_BYTES = st.binary(min_size=1, max_size=24).map(lambda b: b.replace(b"\x00", b"").replace(b"/", b"_") or b"x")
name_bytes = st.one_of(
    NAME_BYTES,
    st.sampled_from([b"\xff\xfe", b"serve\xe9.sh", b"\x1b[31mred", b"a\rb", b"a\nb", b"%0A::error::x", b"x,line=1",
                     b"=HYPERLINK(1)", b"+cmd", b"-x", b"@x", b"\tx", b"|x`<b>", b"\xe2\x80\xae", b"\xed\xa0\x80",
                     b"..", b".", b" "]),
)
# the same, as Python carries a name it read from the file system (surrogate escapes), or a JSON "\udcff"
name_text = st.one_of(name_bytes.map(lambda b: b.decode("utf-8", "surrogateescape")),
                      st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=20),
                      st.sampled_from(["\ud800", "x\udfff", "\u202e", "\x9b31m", "\x07"]))


# -- layer patterns ----------------------------------------------------------------------------------

PATTERN_PIECES = [".*", ".+", "(", ")", "(?:", "|", "*", "+", "?", "{2,}", "{0,50}", r"\d+", r"\.", "a", "mlp",
                  "layers", "proj", "[a-z]*", "$", "^", "x", "\\1", "(?=", "(?!", ")*", ")+"]
layer_pattern = st.one_of(
    st.lists(st.sampled_from(PATTERN_PIECES), min_size=1, max_size=24).map(lambda ps: "re:" + "".join(ps)),
    st.text(max_size=30).map(lambda t: "re:" + t),
    st.sampled_from(["lm_head", "Linear", "re:.*lm_head", "re:.*self_attn.(q|k|v)_proj$", "*mlp*", "model.layers.0"]),
)
