"""The engine facts say where they come from, and the lines they cite say the same thing.

tools/extract_engine.py writes every row's ``source`` as ``file:line (what)`` and, beside the data,
the cited lines verbatim (tests/fixtures/engine_quotes/<engine>-<version>.json, stamped with the
wheel's sha256). These tests read a sample of facts back out of the quoted lines: the value in the
data must be the one on the line it cites. With ``ENGINE_WHEELS_DIR`` pointing at a folder holding
the wheels, the quotes themselves are checked against the wheel (skipped offline by default).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path

import pytest
import yaml

from tests.data.wheels import line_in, open_artifact, wheel_or_skip

REPO = Path(__file__).resolve().parents[2]
QUOTES = REPO / "tests" / "fixtures" / "engine_quotes"
RELEASES = [p.stem for p in sorted((REPO / "data" / "engines").glob("*.yaml")) if p.stem.startswith(("vllm-", "sglang-"))]
CITE = re.compile(r"([\w./-]+\.py):(\d+)(?:-(\d+))?(?: \(([^)]*)\))?")
TORCH = {"float16": ("torch.half", "torch.float16"), "bfloat16": ("torch.bfloat16",),
         "float32": ("torch.float32", "torch.float"), "float8_e4m3fn": ("torch.float8_e4m3fn",),
         "int8": ("torch.int8",)}


@functools.cache
def _parsed(path: Path) -> dict:
    """A release file parsed once per process (the safe loader; libyaml's where installed): every test of
    a release reads the same document."""
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506


def load(release: str) -> tuple[dict, dict[str, str]]:
    doc = copy.deepcopy(_parsed(REPO / "data" / "engines" / f"{release}.yaml"))  # a test may change its copy
    quotes = json.loads((QUOTES / f"{release}.json").read_text())
    assert quotes["sha256"] == doc["source"]["sha256"], "quotes and data were read from different wheels"
    return doc, quotes["lines"]


def cites(row: dict) -> list[tuple[str, int, int, str]]:
    return [(m.group(1), int(m.group(2)), int(m.group(3) or m.group(2)), m.group(4) or "")
            for m in CITE.finditer(row["source"])]


def span(quotes: dict[str, str], path: str, start: int, end: int) -> str:
    return " ".join(quotes[f"{path}:{i}"] for i in range(start, min(end, start + 7) + 1))


# vLLM registers its online shorthands in a loop (vllm/model_executor/layers/quantization/__init__.py):
# `method_to_config[scheme.value] = ...` (0.20-0.21), `method_to_config[shorthand] = ...` (0.22.1-0.23.0),
# `method_to_config.setdefault(shorthand, ...)` (0.24.0 on): the line names the loop variable, not the method
LOOP_REGISTRATION = re.compile(r"method_to_config(?:\.setdefault\(|\[)(?:shorthand|scheme\.value)\b")


def number_on(value: int, line: str) -> bool:
    """``value`` as a whole number on ``line`` (``return -1``, ``return 100 if ... else 80``)."""
    return re.search(rf"(?<![\w.-]){re.escape(str(value))}(?![\w.])", line) is not None


@pytest.mark.parametrize("release", RELEASES)
def test_every_method_fact_is_on_the_line_it_cites(release):
    doc, quotes = load(release)
    checked = 0
    notes = " ".join(doc.get("notes", []))
    for m in doc["methods"]:
        every = " ".join(span(quotes, *c[:3]) for c in cites(m))
        read: set[str] = set()
        for path, start, end, what in cites(m):
            line = span(quotes, path, start, end)
            if what in ("QuantizationMethods", "QUANTIZATION_CHOICES"):
                assert f'"{m["id"]}"' in line, (m["id"], what, line)
                read.add("registry")
            elif what in ("method_to_config", "BASE_QUANTIZATION_METHODS") and m.get("config_class"):
                # the registry line names the class, or a local variable whose assignment / aliased
                # import the row cites too (vLLM's deepseek_config)
                assert f'"{m["id"]}"' in line or LOOP_REGISTRATION.match(line) is not None, (m["id"], line)
                assert m["config_class"].split(" (")[0] in every, (m["id"], line)
                read.add("registry")
            elif what.endswith(".get_min_capability") and m.get("min_capability") is not None:
                # "return 75", "return -1" (CPU-only methods), or one branch of "return 100 if self.use_mxfp8 else 80"
                assert number_on(m["min_capability"], line) and "return" in line, (m["id"], line)
                read.add("min_capability")
            elif what == "get_supported_act_dtypes":
                for dt in m["supported_act_dtypes"]:
                    assert any(t in line for t in TORCH[dt]), (m["id"], dt, line)
                read.add("act_dtypes")
            elif what == "get_name":
                assert f'"{m.get("canonical") or m["id"]}"' in line, (m["id"], line)
            elif what == "get_config_filenames":
                for f in m.get("config_filenames") or []:
                    assert f'"{f}"' in line, (m["id"], f, line)
            else:
                continue
            checked += 1
        assert "registry" in read, m["id"]  # every method is read back from the list that registers it
        if m.get("config_class") and m.get("min_capability") is None and "get_min_capability" not in m["source"] \
                and "imported from" in notes:
            # a class the release does not define (SGLang 0.4.0-0.4.3 import vLLM's AWQConfig, GPTQConfig ...):
            # the file's notes say its capability, activation dtypes and config files were not read
            assert f"methods[{m['id']}]" in notes, m["id"]
    # several facts per method whose config class this release defines (a capability it states): the registry,
    # the capability, the activation dtypes, the name. (Where SGLang 0.4.0-0.4.3 import a class from vLLM only
    # the registry is read: the other facts are null in the file, not guessed.)
    defined = [m for m in doc["methods"] if m.get("min_capability") is not None]
    assert checked > 3 * len(defined)


@pytest.mark.parametrize("release", RELEASES)
def test_kv_dtypes_and_messages_are_on_their_lines(release):
    doc, quotes = load(release)
    for k in doc["kv_cache_dtypes"]:
        path, start, end, _ = cites(k)[0]
        assert f'"{k["id"]}"' in span(quotes, path, start, end)
    n = 0
    for m in doc["messages"]:
        pieces = [m["text"]] if m.get("text") else m.get("parts", [])
        for path, start, end, _ in cites(m):
            line = span(quotes, path, start, end)
            unbound = re.fullmatch(r"name '(\w+)' is not defined", m.get("text") or "")
            if m.get("exception") == "NameError" and unbound:  # Python's own: the line uses a name never bound
                assert unbound.group(1) in line, (m["id"], line)
                n += 1
                continue
            # the longest literal run of the template (placeholders and quote-splitting removed)
            words = max(re.split(r"\{\w+\}|%s", pieces[0]), key=len).strip()[:25]
            assert words.split()[0] in line, (m["id"], words, line)
            n += 1
    assert n >= len(doc["messages"]) - 2  # every printed message is cited (the two `parts` ones included)


def test_vllm_kv_cache_scheme_rule_reads_or():
    # compressed_tensors.py:1117  `if type_ != "float" or num_bits != 8:` -> both must match
    doc, quotes = load("vllm-0.33.0")
    rule = doc["compressed_tensors"]["kv_cache_scheme"]
    assert rule["type_and_bits"] == "both_must_match"
    path, start, _, what = next(c for c in cites(rule) if "or" in c[3])
    assert quotes[f"{path}:{start}"] == 'if type_ != "float" or num_bits != 8:'


def test_gptq_and_awq_type_maps_are_what_the_rules_allow():
    doc, quotes = load("vllm-0.33.0")
    rules = {r["id"]: r for r in doc["config_rules"]}
    gptq = rules["auto-gptq-type-map"]
    path, start, end, _ = next(c for c in cites(gptq) if c[3] == "AutoGPTQConfig.TYPE_MAP")
    text = span(quotes, path, start, end)
    assert "(4, True)" in text and "(8, True)" in text and gptq["allowed"] == [[4, True], [8, True]]
    awq = rules["auto-awq-type-map"]
    path, start, end, _ = next(c for c in cites(awq) if c[3] == "AutoAWQConfig.TYPE_MAP")
    assert "4: scalar_types.uint4" in span(quotes, path, start, end) and awq["allowed"] == [[4]]


def test_sglang_nvfp4_fallback_and_wna16_bits_follow_the_source():
    doc, quotes = load("sglang-0.5.23")
    rows = {d["id"]: d for d in doc["compressed_tensors"]["dispatch"]}
    assert rows["wna16"]["weights"]["num_bits"] == [4, 8]
    path, start, end, _ = next(c for c in cites(rows["wna16"]) if c[3] == "WNA16_SUPPORTED_TYPES_MAP")
    assert "4: scalar_types.uint4b8" in quotes[f"{path}:{start}"]
    w4a4 = rows["w4a4-nvfp4"]
    assert w4a4["fallback"] == "CompressedTensorsW4A16Fp4" and w4a4["fallback_min_capability"] == 80


def test_without_config_follows_the_no_argument_call_and_the_init_it_cites():
    # what get_quant_config does without a checkpoint quantization config (issue 13): quant_cls() with no
    # arguments where get_config_filenames() is empty, and the __init__ whose required parameters make it raise
    for release, bare in (("vllm-0.33.0", "return maybe_compose_online_quantization(quant_cls())"),
                          ("sglang-0.5.23", "return quant_cls()")):
        doc, quotes = load(release)
        methods = {m["id"]: m for m in doc["methods"]}
        ct = methods["compressed-tensors"]
        assert ct["without_config"]["raises"] == "config_class_needs_arguments"
        init = next(c for c in cites(ct) if c[3].startswith("CompressedTensorsConfig.__init__ needs"))
        text = span(quotes, *init[:3])
        assert "def __init__(" in text and all(f"{a}:" in text for a in ct["without_config"]["missing"]), text
        msg = next(m for m in doc["messages"] if m["id"] == "config_class_needs_arguments")
        path, start, _, _ = cites(msg)[0]
        assert quotes[f"{path}:{start}"] == bare
        # a method with config file names fails its file lookup instead ("Cannot find the config file for")
        assert methods["awq"]["without_config"] == {"raises": "config_file_missing"}
    # vLLM quark: QuarkConfig(quant_config, ...) has no default for quant_config
    vq = {m["id"]: m for m in load("vllm-0.33.0")[0]["methods"]}["quark"]["without_config"]
    assert vq == {"raises": "config_class_needs_arguments", "init": "QuarkConfig.__init__", "missing": ["quant_config"]}
    # names get_quant_config handles before the lookup fails: vLLM's mxfp8 shorthand, SGLang's modelopt_fp4
    v_doc, v_quotes = load("vllm-0.33.0")
    mx = next(m for m in v_doc["methods"] if m["id"] == "mxfp8")
    assert "without_config" not in mx and mx["config_filenames"] == ["hf_quant_config.json"]
    c = next(c for c in cites(mx) if c[3] == "get_quant_config without a checkpoint quantization config")
    assert v_quotes[f"{c[0]}:{c[1]}"] == "if model_config.quantization in _ONLINE_SHORTHANDS:"
    s_doc, s_quotes = load("sglang-0.5.23")
    fp4 = next(m for m in s_doc["methods"] if m["id"] == "modelopt_fp4")
    c = next(c for c in cites(fp4) if c[3] == "get_quant_config without a checkpoint quantization config")
    assert "without_config" not in fp4 and s_quotes[f"{c[0]}:{c[1]}"] == 'if model_config.quantization == "modelopt_fp4":'


def test_sglang_marlin_compatibility_and_config_checks_follow_the_source():
    doc, quotes = load("sglang-0.5.23")
    marlin = {r["id"]: r for r in doc["marlin_compatible"]}
    # AWQMarlinConfig.TYPE_MAP {4: uint4, 8: uint8}; with zero points Marlin lists only uint4 (marlin_utils.py:93-95)
    assert marlin["awq"]["allowed"] == [[4, True]] and marlin["gptq"]["allowed"] == [[4, True], [8, True]]
    path, start, end, _ = next(c for c in cites(marlin["awq"]) if c[3].startswith("query_marlin_supported_quant_types"))
    text = span(quotes, path, start, end)
    assert text.startswith("if has_zp:") and "return [scalar_types.uint4]" in text
    path, start, end, _ = next(c for c in cites(marlin["awq"]) if c[3] == "AWQMarlinConfig.TYPE_MAP")
    assert "4: scalar_types.uint4," in span(quotes, path, start, end)
    rules = {r["id"]: r for r in doc["config_rules"]}
    awq = rules["awq-weight-bits"]
    path, start, _, _ = next(c for c in cites(awq) if c[3] == "AWQConfig.__init__")
    assert quotes[f"{path}:{start}"] == "if self.weight_bits != 4:" and awq["allowed"] == [[4]]
    assert awq["methods"] == ["awq"] and awq["message"] == "awq_unsupported_bits"
    fp8 = rules["modelopt-fp8-algo"]
    path, start, _, _ = next(c for c in cites(fp8) if c[3] == "ModelOptFp8Config.from_config")
    assert quotes[f"{path}:{start}"] == 'if quant_method != "FP8":' and fp8["allowed"] == [["FP8"]]
    assert set(fp8["methods"]) == {"modelopt", "modelopt_fp8"} and not fp8.get("case_insensitive")


def test_sglang_rewrites_test_quant_algo_as_the_source_does():
    # model_config.py _parse_modelopt_quant_config: == for MIXED_PRECISION, FP8, MXFP8; "in" for FP4 / NVFP4;
    # the raw string (no .upper()), tried in the order of the if / elif chain
    doc, quotes = load("sglang-0.5.23")
    rw = {r["id"]: r for r in doc["rewrites"]}
    assert rw["modelopt-fp8"]["quant_algo"] == {"equals": ["FP8"], "case_sensitive": True}
    assert rw["modelopt-mxfp8"]["quant_algo"] == {"equals": ["MXFP8"], "case_sensitive": True}
    assert rw["modelopt-fp4"]["quant_algo"] == {"contains": ["FP4", "NVFP4"], "case_sensitive": True}
    for rid, line in (("modelopt-fp8", 'elif quant_algo == "FP8":'), ("modelopt-mxfp8", 'elif quant_algo == "MXFP8":'),
                      ("modelopt-fp4", 'elif quant_algo and ("FP4" in quant_algo or "NVFP4" in quant_algo):')):
        path, start, _, _ = next(c for c in cites(rw[rid]) if "quant_algo" in c[3])
        assert quotes[f"{path}:{start}"] == line
    assert [r["id"] for r in doc["rewrites"]][2:] == ["modelopt-fp4", "modelopt-fp8", "modelopt-mxfp8"]


@pytest.mark.parametrize("release", RELEASES)
def test_quotes_match_the_wheel(release):
    """Offline by default: set ENGINE_WHEELS_DIR to a folder holding the downloaded wheels."""
    doc, quotes = load(release)
    wheel = wheel_or_skip(doc["source"]["artifact"])
    with open_artifact(wheel) as z:
        for key, text in quotes.items():
            path, _, ln = key.rpartition(":")
            assert line_in(z, path, ln) == text, key


@pytest.mark.parametrize("release", [r for r in RELEASES if r.startswith("vllm-")])
def test_method_spellings_are_on_their_lines(release):
    # every vLLM release on file lower-cases a checkpoint's quant_method and writes compressed_tensors as
    # compressed-tensors before probing (config.py _parse_quant_hf_config, later the model arch convertor's
    # _normalize_quantization_config); the cited line names both spellings
    doc, quotes = load(release)
    rows = doc.get("method_spellings") or []
    assert [(r["old"], r["new"]) for r in rows] == [("compressed_tensors", "compressed-tensors")]
    for row in rows:
        if not row["source"].startswith(f"vllm {doc['version']} "):
            assert "carried" in row["notes"]  # read in the neighbouring releases, said so
            continue
        ((path, start, end, _),) = cites(row)
        text = span(quotes, path, start, end)
        assert f'"{row["old"]}"' in text and f'"{row["new"]}"' in text and "replace(" in text
