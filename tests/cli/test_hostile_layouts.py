"""Hostile ``layout.tensors`` in a user scheme file (found by a hostile-input hunt): every shape expression is
checked against the grammar of quantadvise/scheme/layout.py when the file is loaded, and the evaluator raises
nothing but SchemeError. Before the fix these were a ZeroDivisionError / IndexError / AssertionError /
RecursionError / ValueError traceback, or an absurd report with exit 0 (negative bytes, 9e40 bytes, 0
effective bits, a trailing token ignored, unbalanced brackets, an Arabic-Indic digit read as 3)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from quantadvise.errors import SchemeError
from quantadvise.scheme.layout import Layout, _eval_dim
from tests.limits import time_limit

MODEL = "meta-llama/Llama-3-8B"
HEAD = "weight: {format: int4, scale: {format: bf16, group: g128}}\nlayout:\n  id: h\n"
ENV = {"N": 4096, "K": 4096, "G": 32, "b": 4}  # Llama-3-8B q_proj under int4 g128: G = 4096 / 128 = 32


def _scheme(tmp_path: Path, tensors: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(HEAD + tensors, encoding="utf-8")
    return p


def _one_error(r) -> str:
    assert r.code == 2, (r.code, r.stdout[-300:], r.stderr[-600:])
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    return lines[0]


def _q(expr: str) -> str:
    """A YAML single-quoted scalar."""
    return "'" + expr.replace("'", "''") + "'"


# (expression as YAML, a fragment the one Error: line says); each crashed or was misread before the fix
BAD_SYNTAX = [
    (_q("K/0"), "divides by zero"),                            # ZeroDivisionError
    (_q("K+"), "ends where a name, a number or '(' is expected"),  # IndexError
    (_q(""), "it is empty"),                                   # IndexError
    (_q("  "), "it is empty"),                                 # IndexError
    (_q("*"), "'*' where a name"),                             # AssertionError
    (_q(")"), "')' where a name"),                             # AssertionError
    (_q("-K"), "'-' where a name"),                            # AssertionError (no unary minus)
    (_q("K//32"), "'/' where a name"),                         # AssertionError
    (_q("K**2"), "'*' where a name"),                          # AssertionError
    (_q("(" * 3000 + "K"), "3,001 characters"),                # RecursionError
    (_q("x"), "unknown name 'x'"),                             # ValueError
    (_q("K%2"), "character '%' is not allowed"),               # ValueError
    (_q("K.5"), "character '.' is not allowed"),               # ValueError
    (_q("9" * 5000), "5,000 characters"),                      # ValueError (int() refuses > 4300 digits)
    (_q("0-K"), "the integer '0' is outside 1 to 2^40"),       # exit 0 with -0.006 effective bits
    (_q("K 32"), "'32' follows a complete expression"),        # the 32 was ignored
    (_q("(((((K"), "a '(' is never closed"),                   # accepted unbalanced
    (_q("K)"), "a ')' without its '('"),                       # the ) was ignored
    (_q("\u0663"), "is not allowed"),                          # ARABIC-INDIC DIGIT THREE read as 3
    (_q("(" * 9 + "K" + ")" * 9), "nested more than 8 deep"),  # 9 > MAX_DEPTH = 8
    (_q("1099511627777"), "outside 1 to 2^40"),                # 2^40 + 1 = 1,099,511,627,777
    ("-99999999999", "-99,999,999,999, outside 1 to 2^40"),    # a negative total before
    ("9" * 41, "a 137-bit number, outside 1 to 2^40"),         # 41 * log2(10) = 136.2: 2^136 < 10^41 - 1 < 2^137
    ("true", "tensors.qweight"),                               # a bool was read as the dimension 1
]


@pytest.mark.parametrize(("dim", "says"), BAD_SYNTAX, ids=[d[:20] for d, _ in BAD_SYNTAX])
def test_a_bad_shape_expression_is_one_error_naming_file_tensor_and_expression(cli, tmp_path, dim, says):
    p = _scheme(tmp_path, f"  tensors:\n    qweight: [int32, [{dim}]]\n")
    with time_limit(cpu=10, what=dim[:20]):
        line = _one_error(cli("size", MODEL, "--scheme", str(p)))
    assert str(p) in line and says in line, line
    assert "tensor 'qweight'" in line or dim == "true", line  # pydantic names it: field 'tensors.qweight...'


def test_the_roofline_command_refuses_the_same_file(cli, tmp_path):
    p = _scheme(tmp_path, "  tensors:\n    qweight: [int32, ['K/0']]\n")
    line = _one_error(cli("roofline", "-s", str(p)))
    assert str(p) in line and "'K/0'" in line and "divides by zero" in line


def test_a_layout_without_tensors_is_refused(cli, tmp_path):
    # before: every quantized layer sized at 0 bytes, "0.000 effective bits", exit 0
    p = _scheme(tmp_path, "  tensors: {}\n")
    line = _one_error(cli("size", MODEL, "--scheme", str(p)))
    assert str(p) in line and "lists no tensors" in line


def test_a_tensor_too_large_for_any_linear_layer_is_refused(cli, tmp_path):
    # 10^40 as one dimension was ~9e40 bytes with exit 0; two dims of 2^40 are 2^80 elements > 2^62
    p = _scheme(tmp_path, "  tensors:\n    qweight: [int32, [1099511627776, 1099511627776]]\n")
    line = _one_error(cli("size", MODEL, "--scheme", str(p)))
    assert str(p) in line and "tensor 'qweight'" in line and "at most 2^62" in line


@pytest.mark.parametrize(("dim", "says"), [
    ("1-K", "gives -4,095"),            # 1 - 4096 at q_proj (K = 4096): a negative dimension
    ("K-K", "gives 0"),                 # 4096 - 4096: a tensor of no elements
    ("K/(K-K)", "divides by 0"),        # K - K = 0 as a divisor
    ("N*K*N*K", "outside 1 to 2^40"),   # (N*K)^2 >= (1024 * 4096)^2 = 2^44 > 2^40 on every linear (k_proj smallest)
])
def test_an_expression_that_evaluates_to_nonsense_is_one_error_naming_the_tensor(cli, tmp_path, dim, says):
    p = _scheme(tmp_path, f"  tensors:\n    qweight: [int32, [{_q(dim)}]]\n")
    line = _one_error(cli("size", MODEL, "--scheme", str(p)))
    assert "layout 'h' tensor 'qweight'" in line and f"'{dim}'" in line and says in line, line


def test_a_layout_in_the_grammar_sizes_like_the_formula_and_a_trailing_token_is_refused(cli, tmp_path):
    # Llama-3-8B's quantized linears have K = 4096 or 14336, both multiples of 128 and of 8, so
    # qweight int32 [K*b/32, N] = 32 * K*4/32 * N = 4*N*K bits and scales bf16 [G, N] = 16 * K/128 * N bits:
    # 4 + 16/128 = 4.125 bits per weight, the same as the scheme without a layout
    ok = _scheme(tmp_path, "  tensors:\n    qweight: [int32, ['(K * b) / 32', N]]\n    scales: [bf16, ['((G))', N]]\n")
    r = cli("size", MODEL, "--scheme", str(ok), "-f", "json")
    assert r.code == 0, r.stderr
    assert r.json()["effective_bits_per_weight"] == pytest.approx(4 + 16 / 128)
    bad = _scheme(tmp_path, "  tensors:\n    qweight: [int32, ['(K * b) / 32 32', N]]\n")
    assert "follows a complete expression" in _one_error(cli("size", MODEL, "--scheme", str(bad)))


# --- the evaluator, directly ---------------------------------------------------------------------------------

def test_the_evaluator_reads_the_shipped_grammar_and_raises_only_scheme_error():
    # the shipped forms, by hand at N = K = 4096, G = 32, b = 4
    assert _eval_dim("K*b/32", ENV) == 512            # 4096 * 4 / 32
    assert _eval_dim("N*K/64/256", ENV) == 1024       # 4096 * 4096 / 64 = 262,144; / 256 = 1024
    assert _eval_dim("(K+127)/128", ENV) == 33        # 4223 / 128 = 32.99, rounded up
    assert _eval_dim("K*3/32", {**ENV, "K": 4100}) == 385  # 12,300 / 32 = 384.375, rounded up
    assert _eval_dim(16, ENV) == 16
    for expr, _ in BAD_SYNTAX:
        text = expr[1:-1].replace("''", "'") if expr.startswith("'") else None
        if text is None:
            continue
        with pytest.raises(SchemeError):
            _eval_dim(text, ENV)
    for value in (0, -1, 2**40 + 1, 10**5000, True):
        with pytest.raises(SchemeError):
            _eval_dim(value, ENV)
    with pytest.raises(SchemeError, match="gives -4,095"):
        _eval_dim("1-K", ENV)                         # 1 - 4096
    with pytest.raises(SchemeError, match="divides by 0"):
        _eval_dim("K/(K-K)", ENV)
    with pytest.raises(SchemeError, match="gives 1,152,921,504,606,846,976"):
        _eval_dim("N*N*N", {**ENV, "N": 2**20})      # 2^60 > 2^40
    with pytest.raises(SchemeError, match="names K, which has no value"):
        _eval_dim("K", {"N": 1})


def test_the_evaluator_is_the_same_under_python_O():
    # asserts were the parser's checks: under -O '*' and 'K**2' were misread instead of refused
    code = ("from quantadvise.scheme.layout import _eval_dim\nfrom quantadvise.errors import SchemeError\n"
            "for e in ('*', 'K**2', ')', '-K'):\n"
            "    try:\n        print(_eval_dim(e, {'N': 8, 'K': 8, 'G': 1, 'b': 4}))\n"
            "    except SchemeError:\n        print('refused')\n")
    out = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["refused"] * 4


def test_a_layout_built_in_code_is_checked_and_sized_sanely():
    base = {"id": "x", "source": "test", "as_of": "2026-01-01"}
    with pytest.raises(ValidationError, match="lists no tensors"):
        Layout.model_validate({**base, "tensors": {}})
    with pytest.raises(ValidationError, match=re.escape("shape expression 'K 32'")):
        Layout.model_validate({**base, "tensors": {"q": ["int32", ["K 32"]]}})
    with pytest.raises(ValidationError, match="unknown number format 'int33'"):
        Layout.model_validate({**base, "tensors": {"q": ["int33", ["K"]]}})
    lay = Layout.model_validate({**base, "tensors": {"q": ["int32", ["N-4000", "K"]]}})
    # N - 4000 = 96 at N = 4096: 96 * 4096 int32 = 96 * 4096 * 4 bytes = 1,572,864
    assert lay.stored_bytes(4096, 4096, 128, 4, True) == 1_572_864
    with pytest.raises(SchemeError, match=r"layout 'x' tensor 'q': shape expression 'N-4000' at N=4000.* gives 0"):
        lay.stored_bytes(4000, 4096, 128, 4, True)  # 4000 - 4000 = 0
    big = Layout.model_validate({**base, "tensors": {"q": ["int32", ["N*K", "N*K"]]}})
    with pytest.raises(SchemeError, match=r"at most 2\^62"):
        big.stored_bytes(2**20, 2**20, None, 4, True)  # (2^40)^2 = 2^80 elements > 2^62


@pytest.mark.parametrize("weight", ["{format: nosuch, scale: {format: bf16, group: g128}}",
                                    "{format: int4, scale: {format: nosuch, group: g128}}"])
def test_a_scheme_file_with_an_unknown_format_names_the_file(cli, tmp_path, weight):
    # the format lookup raised its own error from inside validation: "unknown number format 'nosuch'", no file
    (tmp_path / "s.yaml").write_text(f"weight: {weight}\n", encoding="utf-8")
    r = cli("size", "--scheme", str(tmp_path / "s.yaml"))
    line = _one_error(r)
    assert "unknown number format 'nosuch'" in line, line
    assert line.startswith(f"Error: {tmp_path / 's.yaml'}: "), line
