"""NVIDIA Dynamo's workers read as the engine launches they are (issue 31: `check` reads `deploy --target dynamo` back).

Expected values come from ai-dynamo 1.6.1's own source (the wheel ai_dynamo-1.6.1-py3-none-any.whl):

- dynamo/vllm/__main__.py and dynamo/sglang/__main__.py run the worker's main(); dynamo/vllm/args.py:117-165
  (_parse_cli_args) parses with Dynamo's own parser first (args.py:122-126, allow_abbrev=False; DynamoRuntimeArgGroup
  and DynamoVllmArgGroup), takes the router's options out (router_args.py:352 parse_worker_router_config), and
  hands the rest to a parser holding only vLLM's AsyncEngineArgs.add_cli_args (args.py:136-137, parse_args at
  :156: anything else is "unrecognized arguments"). dynamo/sglang/args.py:555-633 does the same with
  ServerArgs.add_cli_args (:579). The model is the engine's own --model (vLLM) / --model-path (SGLang); neither
  parser takes a positional model.
- Dynamo-only options: --endpoint (common/configuration/groups/runtime_args.py:224), --disaggregation-mode for
  vLLM (vllm/backend_args.py:106), --fpm-trace (a BooleanOptionalAction, runtime_args.py:271, so --no-fpm-trace
  too), --router-mode (router_args.py:224).
- The engine each runtime image runs: the release ai-dynamo 1.6.1 pins for its extras, METADATA:55
  (vllm==0.31.0) and METADATA:41 (sglang==0.5.21).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from quantadvise.artifacts.launch import find_engine
from quantadvise.artifacts.shell import Word
from tests.cli.test_check_cli import line_of, make_repo

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "stacks" / "example.dynamo-1.6.1.v1beta1-vllm-agg.yaml"


def _words(text: str) -> list[Word]:
    return [Word(t, 1) for t in text.split()]


@pytest.mark.parametrize("command,expected", [
    # (engine, index of the engine token "-m", index of its first argument, no positional model)
    ("python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B", ("vllm", 1, 3, False)),
    ("python -m dynamo.sglang --model-path Qwen/Qwen3-0.6B --tp-size 2", ("sglang", 1, 3, False)),
    ("exec python3 -mdynamo.vllm --model m", ("vllm", 2, 3, False)),
])
def test_find_engine_reads_dynamo_workers_as_their_engine(command, expected):
    assert find_engine(_words(command)) == expected


def test_the_frontend_and_other_dynamo_modules_are_not_engine_launches():
    assert find_engine(_words("python3 -m dynamo.frontend --http-port 8000")) is None
    assert find_engine(_words("python3 -m dynamo.vllm_extras --model m")) is None


def test_dynamo_1_6_1_table_names_its_workers_options_and_pins():
    from quantadvise import catalog

    rel = catalog.stack_release("dynamo", "1.6.1")
    vllm, sglang = rel.launcher("dynamo.vllm"), rel.launcher("dynamo.sglang")
    assert (vllm.engine, sglang.engine) == ("vllm", "sglang")
    assert vllm.registered["--endpoint"].source == "dynamo/common/configuration/groups/runtime_args.py:224"
    assert vllm.registered["--disaggregation-mode"].source == "dynamo/vllm/backend_args.py:106"
    assert "--no-fpm-trace" in vllm.registered and "--router-mode" in sglang.registered
    assert "--disaggregation-mode" not in sglang.registered  # SGLang's own option (disagg.py:55): passed through
    assert (vllm.abbreviations, sglang.abbreviations) == (False, True)  # args.py:125 allow_abbrev=False; sglang's default
    assert (rel.image("nvcr.io/nvidia/ai-dynamo/vllm-runtime").engine_version,
            rel.image("nvcr.io/nvidia/ai-dynamo/sglang-runtime").engine_version) == ("0.31.0", "0.5.21")
    assert vllm.passes_to_engine("vllm/engine/arg_utils.py:951")  # --max-model-len: an engine argument
    assert not vllm.passes_to_engine("vllm/entrypoints/launchers/cli_args.py:282")  # --port: vllm serve's frontend


def test_dynamos_own_example_is_read_as_a_vllm_launch():
    """The Dynamo 1.6.1 example (examples/backends/vllm/deploy/agg.yaml): the worker runs vLLM on Qwen3-0.6B with the
    vllm-runtime:1.6.1 image, so vLLM 0.31.0; the Frontend (python3 -m dynamo.frontend) starts no engine."""
    from quantadvise.api.artifacts import read_deployment

    scan = read_deployment(FIXTURE)
    (inv,) = scan.invocations
    assert (inv.engine, inv.model, inv.engine_version) == ("vllm", "Qwen/Qwen3-0.6B", "0.31.0")
    assert inv.launcher == "python -m dynamo.vllm"
    assert inv.image == "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1"
    assert inv.gpu_count == 1
    assert inv.flag_lines["model"] == line_of(FIXTURE, "- --model")


_MANIFEST = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: llama
spec:
  components:
  - name: prefill
    type: prefill
    replicas: 1
    podTemplate:
      spec:
        containers:
        - name: main
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1
          command: [python3, -m, dynamo.vllm]
          args: [--model, meta-llama/Meta-Llama-3-8B-Instruct, --max-model-len, "8192", --endpoint,
                 dyn://dynamo.prefill.generate, --disaggregation-mode, prefill, --no-fpm-trace{extra}]
          resources:
            limits:
              nvidia.com/gpu: "1"
"""


def _check(cli, root, monkeypatch):
    monkeypatch.chdir(root)
    r = cli("check", ".", "--gpu", "h100", "--format", "json")
    assert r.code in (0, 1), r.stderr
    return r, r.json()


def test_dynamo_options_are_known_and_the_engines_are_judged(cli, tmp_path, monkeypatch):
    from quantadvise.api.artifacts import read_deployment

    root = make_repo(tmp_path, {"dgd.yaml": _MANIFEST.format(extra="")})
    (inv,) = read_deployment(root / "dgd.yaml").invocations
    assert (inv.engine_version, inv.max_model_len) == ("0.31.0", 8192)
    assert inv.stack_options == {"--endpoint": "dyn://dynamo.prefill.generate", "--disaggregation-mode": "prefill",
                                 "--no-fpm-trace": True}
    assert inv.other == {}
    r, doc = _check(cli, root, monkeypatch)
    assert not [f for f in doc["findings"] if f["rule_id"] == "QA108"], doc["findings"]


def test_a_misspelt_dynamo_option_is_still_refused(cli, tmp_path, monkeypatch):
    """--endpiont is no option of Dynamo's parser (allow_abbrev=False, exact spellings only), nor the router's, so it
    reaches vLLM's parser (args.py:156), which has no such option: unrecognized arguments."""
    root = make_repo(tmp_path, {"dgd.yaml": _MANIFEST.format(extra=", --endpiont, dyn://x.y.z")})
    r, doc = _check(cli, root, monkeypatch)
    found = [f for f in doc["findings"] if f["rule_id"] == "QA108"]
    assert len(found) == 1 and found[0]["message"].startswith("--endpiont is not a vLLM 0.31.0 option"), found
    assert "did you mean --endpoint" not in found[0]["message"]  # the suggestion is the engine's; --endpoint is Dynamo's
    assert r.code == 1


def test_a_vllm_serve_frontend_option_is_refused_by_the_dynamo_worker(cli, tmp_path, monkeypatch):
    """--port is `vllm serve`'s (vllm/entrypoints/launchers/cli_args.py:282), not an engine argument: dynamo.vllm's
    engine parser holds AsyncEngineArgs.add_cli_args only (dynamo/vllm/args.py:136-137)."""
    root = make_repo(tmp_path, {"dgd.yaml": _MANIFEST.format(extra=", --port, '8000'")})
    r, doc = _check(cli, root, monkeypatch)
    found = [f for f in doc["findings"] if f["rule_id"] == "QA108"]
    assert len(found) == 1 and "--port is a vLLM 0.31.0 server option" in found[0]["message"], found
    assert "python -m dynamo.vllm` does not take" in found[0]["message"]
