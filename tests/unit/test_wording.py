"""wording.printable: a text with nothing to escape is returned without compiling the escape pattern
(start-up), and every text comes out exactly as the escape rule (its docstring) says."""

import random
import re

from quantadvise import wording
from quantadvise.wording import json_text, printable

# the escape rule, written out from printable's docstring: C0 controls but tab and newline, DEL, C1
# controls, the bidirectional overrides U+202A-202E and isolates U+2066-2069, lone surrogates
_RULE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _by_rule(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        c = ord(m.group(0))
        if 0xDC80 <= c <= 0xDCFF:
            return f"\\x{c - 0xDC00:02x}"
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"

    return _RULE.sub(one, text)


def test_printable_matches_the_rule_on_mixed_text() -> None:
    rng = random.Random(30)
    # printable ASCII, tab/newline/CR, C0/C1/DEL, NBSP and the line separator (not str.isprintable, yet
    # not escaped), box drawing and the report's symbols, the bidi ranges and their neighbours, surrogates,
    # private use and an astral character
    alphabet = ([chr(c) for c in range(0x20, 0x7F)] + ["\t", "\n", "\r", "\x00", "\x1b", "\x7f", "\x85", "\x9f",
                "\xa0", "\u2028", "\u2500", "\u00b1", "\u2014", "\u2029", "\u202a", "\u202e", "\u202f", "\u2065",
                "\u2066", "\u2069", "\u206a", "\ud800", "\udcff", "\udfff", "\ue000", "\U0001f600"])
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert printable(text) == _by_rule(text), repr(text)
        # controls=False: surrogates only
        assert printable(text, controls=False) == re.sub("[\ud800-\udfff]", lambda m: _by_rule(m.group(0)), text)


def test_clean_text_needs_no_pattern() -> None:
    wording.pattern.cache_clear()
    report = "component     params  bits/param\n\u2500\u2500\u2500  7.50B \u00b1 9%\tok \u2014 done\n"
    assert printable(report) is report
    assert json_text({"model": "meta-llama/Llama-3-8B", "note": "\u00b1"}) == \
        '{"model": "meta-llama/Llama-3-8B", "note": "\\u00b1"}'
    assert wording.pattern.cache_info().currsize == 0  # nothing compiled for either


def test_surrogate_in_json_is_escaped_as_its_byte() -> None:
    # a file name byte 0xff carried as the surrogate escape U+DCFF: \xff in the JSON, not "\udcff"
    assert json_text({"path": "d\udcff/serve.sh"}) == '{"path": "d\\\\xff/serve.sh"}'
