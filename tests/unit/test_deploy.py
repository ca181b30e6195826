"""Engine arguments from deployment artifacts: shell, Dockerfile, Kubernetes, Helm values, compose.

Expected line numbers are found in the fixture text itself (``line_of``: the 1-based line holding a
unique snippet), so the test states where a flag is in the file independently of the parser.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import quantadvise as api
from quantadvise.artifacts.dockerfile import parse_dockerfile
from quantadvise.artifacts.launch import parse_image, parse_shell
from quantadvise.artifacts.manifests import parse_yaml
from quantadvise.artifacts.scan import read_paths
from quantadvise.artifacts.shell import split_shell
from quantadvise.catalog import option_list
from quantadvise.engines.invocation import EngineInvocation
from quantadvise.errors import ConfigError, InputError

DEPLOY = Path(__file__).resolve().parent.parent / "fixtures" / "deploy"


def line_of(path: Path, needle: str) -> int:
    hits = [i for i, line in enumerate(path.read_text().splitlines(), start=1) if needle in line]
    assert len(hits) == 1, f"{needle!r} occurs {len(hits)} times in {path}"
    return hits[0]


def only(invs: list[EngineInvocation]) -> EngineInvocation:
    assert len(invs) == 1, invs
    return invs[0]


# --- the shell lexer ------------------------------------------------------------------------------


def words(text: str, **kw) -> list[list[str]]:
    return [[w.text for w in c] for c in split_shell(text, **kw)]


def test_quoting_continuations_and_comments():
    text = "vllm serve 'a b' \"c $X d\" e\\ f \\\n  --g=h  # comment\nnext cmd"
    assert words(text, env={"X": "x"}) == [["vllm", "serve", "a b", "c x d", "e f", "--g=h"], ["next", "cmd"]]


def test_operators_split_commands_and_redirections_are_dropped():
    text = "cd /app && vllm serve m > /tmp/log 2>&1 | tee out; echo done &"
    assert words(text) == [["cd", "/app"], ["vllm", "serve", "m"], ["tee", "out"], ["echo", "done"]]


def test_parameter_expansion_defaults_and_assignments():
    text = (
        'MODEL="${MODEL:-org/m}"\n'
        "TP=${TP:-2}\n"
        ': "${CTX:=4096}"\n'
        "EMPTY=\n"
        "run $MODEL $TP $CTX ${EMPTY:-fallback} ${EMPTY-kept} ${UNSET:+alt}x\n"
    )
    cmds = split_shell(text)
    last = [w.text for w in cmds[-1]]
    # ${EMPTY:-fallback}: set but empty -> the default; ${EMPTY-kept}: set -> its empty value, which
    # (unquoted) vanishes; ${UNSET:+alt}: unset -> nothing, leaving "x".
    assert last == ["run", "org/m", "2", "4096", "fallback", "x"]


def test_unresolved_references_stay_visible_and_are_listed():
    cmds = split_shell('serve "$MODEL" ${PORT} $(cat tp.txt) $1 \'$LITERAL\'')
    w = cmds[0]
    assert [x.text for x in w] == ["serve", "$MODEL", "${PORT}", "$(cat tp.txt)", "$1", "$LITERAL"]
    assert [x.unresolved for x in w] == [(), ("MODEL",), ("PORT",), ("$(...)",), ("1",), ()]


def test_unquoted_expansion_is_word_split_quoted_is_not():
    env = {"EXTRA": "--enforce-eager --max-num-seqs 8"}
    assert words('x $EXTRA "$EXTRA"', env=env) == [
        ["x", "--enforce-eager", "--max-num-seqs", "8", "--enforce-eager --max-num-seqs 8"]
    ]


def test_heredoc_body_is_skipped_and_eval_is_reparsed():
    text = "cat > /tmp/x <<'EOF'\nvllm serve not-a-launch\nEOF\neval \"vllm serve real --tp 2\"\n"
    assert words(text) == [["cat"], ["vllm", "serve", "real", "--tp", "2"]]


def test_lines_follow_continuations():
    text = "a \\\n  b \\\n  c\nd"
    cmds = split_shell(text, first_line=10)
    assert [(w.text, w.line) for w in cmds[0]] == [("a", 10), ("b", 11), ("c", 12)]
    assert cmds[1][0].line == 13


def test_unterminated_quote_is_a_config_error_with_line():
    with pytest.raises(ConfigError, match=r"run.sh: line 2: unterminated double quote"):
        split_shell('ok\nvllm serve "oops\n', "run.sh")


# --- shell scripts ---------------------------------------------------------------------------------


def test_run_sh_every_field_and_line():
    f = DEPLOY / "run.sh"
    inv = only(parse_shell(f.read_text(), str(f), options=option_list))
    assert inv.engine == "vllm" and inv.source == "shell"
    assert inv.line == line_of(f, "exec vllm serve")
    assert inv.model == "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"  # ${MODEL:-...} default
    assert inv.quantization == "awq_marlin"
    assert inv.kv_cache_dtype == "fp8"
    assert inv.tensor_parallel_size == 2  # TP=${TP:-2}
    assert inv.max_num_seqs == 256  # --max-num-seqs=$MAX_SEQS, MAX_SEQS=256
    assert inv.max_model_len == 32_000  # vLLM's human_readable_int: lowercase k = 10^3
    assert inv.gpu_memory_utilization == 0.92
    assert inv.dtype == "auto"
    assert inv.flag_lines["model"] == line_of(f, "exec vllm serve")
    assert inv.flag_lines["quantization"] == line_of(f, "--quantization awq_marlin")
    assert inv.flag_lines["kv_cache_dtype"] == line_of(f, "--kv-cache-dtype fp8")
    assert inv.flag_lines["tensor_parallel_size"] == line_of(f, "--tensor-parallel-size")
    assert inv.flag_lines["max_num_seqs"] == line_of(f, "--max-num-seqs=")
    assert inv.flag_lines["max_model_len"] == line_of(f, "--max-model-len 32k")
    assert inv.flag_lines["dtype"] == line_of(f, "--dtype auto")
    # unknown flags are kept, booleans do not swallow the next token, quoting survives
    assert inv.other["--served-model-name"] == "llama 3.1 8b"
    assert inv.other["--enable-prefix-caching"] is True
    assert inv.other["--port"] == "${PORT}" and inv.unresolved_env == ["PORT"]
    assert inv.raw["max_model_len"] == "32k"


def test_sglang_script_native_and_docker_run():
    f = DEPLOY / "launch_sglang.sh"
    docker, native = parse_shell(f.read_text(), str(f), options=option_list)
    assert docker.engine == native.engine == "sglang"
    assert docker.line == line_of(f, "docker run")
    assert docker.image == "lmsysorg/sglang:v0.4.6.post1-cu124" and docker.engine_version == "0.4.6.post1"
    assert docker.model == "Qwen/Qwen2.5-72B-Instruct-AWQ"  # : "${MODEL_PATH:=...}" assigned it
    assert docker.tensor_parallel_size == 4  # --tp-size
    assert native.line == line_of(f, "  python3 -m sglang.launch_server --model-path $MODEL_PATH")
    assert native.tensor_parallel_size == 4  # --tp (argparse prefix of --tp-size)
    assert native.quantization == "awq_marlin"
    assert native.max_model_len == 32768  # --context-length $CTX
    assert native.max_num_seqs == 128  # --max-running-requests
    assert native.gpu_memory_utilization == 0.85  # --mem-fraction-static
    assert native.kv_cache_dtype == "fp8_e5m2"
    assert native.flag_lines["max_num_seqs"] == line_of(f, "--max-running-requests 128")
    assert native.other["--trust-remote-code"] is True and native.other["--port"] == "30000"
    assert native.image is None


def test_vllm_spellings_short_forms_underscores_and_human_ints():
    text = ("vllm serve m -q gptq -tp 4 --max_num_seqs 12 --max-num-batched-tokens 8K --max-model-len=1.5k "
            "--speculative-config '{\"method\": \"eagle3\", \"num_speculative_tokens\": 3}'")
    inv = only(parse_shell(text, "x.sh", options=option_list))
    assert (inv.quantization, inv.tensor_parallel_size, inv.max_num_seqs) == ("gptq", 4, 12)
    assert inv.max_num_batched_tokens == 8 * 1024  # uppercase K = 2^10
    assert inv.max_model_len == 1500  # 1.5k = 1.5 x 10^3
    assert inv.speculative_config == {"method": "eagle3", "num_speculative_tokens": 3}


def test_boolean_flags_do_not_swallow_the_model_but_take_an_explicit_true_false():
    inv = only(parse_shell("vllm serve --enforce-eager --enable-chunked-prefill False --trust-remote-code org/m",
                           "b.sh", options=option_list))
    assert inv.model == "org/m"
    assert inv.other == {"--enforce-eager": True, "--enable-chunked-prefill": "False", "--trust-remote-code": True}


def test_python_module_entrypoints():
    v = only(parse_shell("python3 -m vllm.entrypoints.openai.api_server --model org/m --dtype half", "a.sh", options=option_list))
    assert v.engine == "vllm" and v.model == "org/m" and v.argv[:3] == ["python3", "-m",
                                                                          "vllm.entrypoints.openai.api_server"]
    s = only(parse_shell("sglang serve --model-path org/s --tensor-parallel-size 2", "b.sh", options=option_list))
    assert s.engine == "sglang" and s.model == "org/s" and s.tensor_parallel_size == 2


def test_docker_run_with_the_vllm_image_passes_args_to_its_entrypoint():
    text = ("docker run --runtime nvidia --gpus all -v ~/.cache/huggingface:/root/.cache/huggingface \\\n"
            "  -p 8000:8000 --ipc=host vllm/vllm-openai:v0.9.1 \\\n"
            "  --model mistralai/Mistral-7B-Instruct-v0.3 --quantization fp8\n")
    inv = only(parse_shell(text, "d.sh", options=option_list))
    assert inv.engine == "vllm" and inv.engine_version == "0.9.1"
    assert inv.model == "mistralai/Mistral-7B-Instruct-v0.3" and inv.quantization == "fp8"
    assert inv.line == 1 and inv.flag_lines["quantization"] == 3
    assert inv.gpu_count is None and inv.raw["gpu_count"] == "all"  # --gpus all: as many as the host has


@pytest.mark.parametrize(("request_", "count"), [("2", 2), ('"device=0,1"', 2), ("device=GPU-3f2a", 1), ("all", None)])
def test_gpu_request_count(request_, count):
    from quantadvise.artifacts.launch import gpu_request_count

    assert gpu_request_count(request_) == count


def test_pinned_pip_install_gives_the_engine_version():
    inv = only(parse_shell("pip install vllm==0.7.3\nvllm serve org/m\n", "s.sh", options=option_list))
    assert inv.engine_version == "0.7.3"


def test_messages_and_unrelated_commands_are_not_launches():
    assert parse_shell('echo vllm serve x\nprintf "%s" "vllm serve"\ngrep "vllm serve" log\n', "e.sh", options=option_list) == []


def test_bad_values_warn_and_duplicates_warn():
    inv = only(parse_shell("vllm serve m --max-num-seqs lots --tensor-parallel-size 2 --tensor-parallel-size 4",
                           "w.sh", options=option_list))
    assert inv.max_num_seqs is None and inv.tensor_parallel_size == 4  # argparse keeps the last
    assert any("--max-num-seqs 'lots' is not an integer" in w for w in inv.warnings)
    assert any("given again" in w for w in inv.warnings)


# --- Dockerfiles -----------------------------------------------------------------------------------


def test_dockerfile_exec_form_cmd_with_the_engine_image_entrypoint():
    f = DEPLOY / "docker" / "Dockerfile"
    inv = only(parse_dockerfile(f.read_text(), str(f), options=option_list))
    assert inv.engine == "vllm" and inv.source == "dockerfile" and inv.context == "CMD"
    assert inv.image == "vllm/vllm-openai:v0.8.5"  # FROM vllm/vllm-openai:${VLLM_VERSION}, global ARG default
    assert inv.engine_version == "0.8.5"
    assert inv.model == "RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8"
    assert (inv.tensor_parallel_size, inv.max_model_len, inv.max_num_seqs, inv.kv_cache_dtype) == (4, 16384, 64, "fp8")
    assert inv.line == line_of(f, 'CMD ["--model"')
    assert inv.flag_lines["max_model_len"] == line_of(f, '"--max-model-len", "16384"')
    assert inv.flag_lines["kv_cache_dtype"] == line_of(f, '"--kv-cache-dtype", "fp8"')
    assert inv.other["--chat-template"] == "/app/chat_template.jinja"


def test_dockerfile_shell_form_env_and_build_only_arg():
    f = DEPLOY / "docker" / "Dockerfile.shell"
    inv = only(parse_dockerfile(f.read_text(), str(f), options=option_list))
    assert inv.model == "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8"  # ENV MODEL
    assert inv.max_model_len == 8192  # ${MAX_LEN} from ENV
    assert inv.max_num_seqs == 128
    assert inv.engine_version == "0.6.3.post1"  # RUN pip install "vllm==0.6.3.post1" in the parent stage
    # ARG QUANT exists only at build time: unresolved at run time, and said so
    assert inv.quantization is None and inv.raw["quantization"] == "$QUANT" and inv.unresolved_env == ["QUANT"]
    assert any("ARG QUANT is set only while building" in w for w in inv.warnings)
    # the comment line inside the continuation is dropped; lines still point at the right rows
    assert inv.line == line_of(f, "CMD vllm serve")
    assert inv.flag_lines["max_model_len"] == line_of(f, "--max-model-len ${MAX_LEN}")


def test_dockerfile_entrypoint_plus_cmd():
    f = DEPLOY / "docker" / "Dockerfile.entrypoint"
    inv = only(parse_dockerfile(f.read_text(), str(f), options=option_list))
    assert inv.engine == "sglang" and inv.context == "ENTRYPOINT + CMD"
    assert inv.line == line_of(f, "ENTRYPOINT")
    assert inv.flag_lines["model"] == line_of(f, "CMD")
    assert (inv.model, inv.tensor_parallel_size, inv.dtype) == ("meta-llama/Llama-3.1-8B-Instruct", 1, "bfloat16")
    assert inv.engine_version == "0.4.6.post1"  # sglang[all]==0.4.6.post1; python:3.11 is not an engine tag
    assert inv.image is None


def test_dockerfile_exec_form_does_not_expand_variables():
    text = 'FROM python:3.11\nENV MODEL=org/m\nCMD ["vllm", "serve", "$MODEL", "--tp", "2"]\n'
    inv = only(parse_dockerfile(text, "Dockerfile", options=option_list))
    assert inv.model == "$MODEL" and inv.unresolved_env == ["MODEL"]
    assert any("does not expand $MODEL" in w for w in inv.warnings)


def test_dockerfile_shell_cmd_on_the_engine_image_is_flagged():
    text = "FROM vllm/vllm-openai:v0.9.0\nCMD vllm serve org/m --quantization awq\n"
    inv = only(parse_dockerfile(text, "Dockerfile", options=option_list))
    assert inv.quantization == "awq"
    assert any("appended to it" in w for w in inv.warnings)


def test_dockerfile_sh_c_exec_form_and_last_stage_wins():
    text = (
        "FROM python:3.11 AS dev\nCMD [\"vllm\", \"serve\", \"dev/model\"]\n\n"
        "FROM python:3.11\nENV TP=8\n"
        "CMD [\"/bin/sh\", \"-c\", \"exec vllm serve prod/model --tensor-parallel-size $TP\"]\n"
    )
    inv = only(parse_dockerfile(text, "Dockerfile", options=option_list))
    assert inv.model == "prod/model" and inv.tensor_parallel_size == 8 and inv.line == 6


def test_dockerfile_bad_json_names_file_and_line():
    text = "FROM vllm/vllm-openai:v0.9.0\n\nCMD ['--model', 'org/m']\n"
    with pytest.raises(ConfigError, match=r"^Dockerfile: line 3: CMD is not valid JSON"):
        parse_dockerfile(text, "Dockerfile", options=option_list)


# --- Kubernetes, Helm values, compose -------------------------------------------------------------------


def test_kubernetes_deployment_args_list_and_env_substitution():
    f = DEPLOY / "k8s" / "deployment.yaml"
    inv = only(parse_yaml(f.read_text(), str(f), options=option_list))  # the Service document and the sidecar hold no launch
    assert inv.source == "kubernetes" and inv.context == "Deployment/llama-70b container vllm"
    assert inv.image == "vllm/vllm-openai:v0.10.1" and inv.engine_version == "0.10.1"
    assert inv.model == "RedHatAI/Llama-3.3-70B-Instruct-quantized.w4a16"  # $(MODEL_NAME) from env
    assert inv.tensor_parallel_size == 2 and inv.max_model_len == 65536 and inv.max_num_seqs == 96
    assert inv.gpu_memory_utilization == 0.95 and inv.kv_cache_dtype == "fp8_e4m3"
    assert inv.line == line_of(f, '"$(MODEL_NAME)"')
    assert inv.flag_lines["max_model_len"] == line_of(f, "- --max-model-len")
    assert inv.flag_lines["max_num_seqs"] == line_of(f, "- --max-num-seqs")
    assert inv.other["--download-dir"] == "$(CACHE_DIR)" and inv.unresolved_env == ["CACHE_DIR"]
    assert inv.gpu_count == 2 and inv.flag_lines["gpu_count"] == line_of(f, "nvidia.com/gpu: 2")


def test_kubernetes_sh_c_block_script():
    f = DEPLOY / "k8s" / "sglang-statefulset.yaml"
    inv = only(parse_yaml(f.read_text(), str(f), options=option_list))
    assert inv.engine == "sglang" and inv.engine_version == "0.4.9.post2"
    assert inv.model == "Qwen/Qwen3-235B-A22B-FP8" and inv.tensor_parallel_size == 8  # $TP from the container env
    assert inv.max_model_len == 40960 and inv.quantization == "fp8"
    assert inv.line == line_of(f, "python3 -m sglang.launch_server")
    assert inv.flag_lines["quantization"] == line_of(f, "--quantization fp8")


def test_helm_values_image_mapping_and_args():
    f = DEPLOY / "helm" / "values.yaml"
    inv = only(parse_yaml(f.read_text(), str(f), options=option_list))
    assert inv.source == "helm-values"
    assert inv.image == "vllm/vllm-openai:v0.9.2" and inv.engine_version == "0.9.2"
    assert inv.model == "mistralai/Mistral-Small-3.1-24B-Instruct-2503"  # positional after `vllm serve`
    assert inv.quantization == "fp8" and inv.max_num_seqs == 32 and inv.tensor_parallel_size == 1
    assert inv.max_num_batched_tokens == 8192  # 8K
    assert inv.line == line_of(f, 'command: ["vllm", "serve"]')
    assert inv.flag_lines["tensor_parallel_size"] == line_of(f, '- "-tp"')
    assert inv.gpu_count == 1  # resources.limits beside the args


def test_compose_string_and_list_commands_with_dotenv():
    f = DEPLOY / "compose" / "docker-compose.yml"
    dotenv = {"MODEL": "TheBloke/Mistral-7B-Instruct-v0.2-GPTQ", "VLLM_TAG": "v0.6.6"}
    vllm, sglang = parse_yaml(f.read_text(), str(f), dotenv=dotenv, options=option_list)
    assert vllm.source == "compose" and vllm.context == "service vllm"
    assert vllm.image == "vllm/vllm-openai:v0.6.6" and vllm.engine_version == "0.6.6"
    assert vllm.model == "TheBloke/Mistral-7B-Instruct-v0.2-GPTQ"
    assert (vllm.quantization, vllm.max_model_len, vllm.dtype) == ("gptq_marlin", 8192, "float16")
    # a folded (>) command keeps each flag's own line
    assert vllm.flag_lines["model"] == line_of(f, "--model ${MODEL}")
    assert vllm.flag_lines["quantization"] == line_of(f, "--quantization gptq_marlin")
    assert vllm.flag_lines["dtype"] == line_of(f, "--dtype float16")
    assert vllm.gpu_count == 1 and vllm.flag_lines["gpu_count"] == line_of(f, "count: 1")
    # $$MODEL_PATH reaches the container as $MODEL_PATH; sh -c expands it from `environment`
    assert sglang.model == "deepseek-ai/DeepSeek-V3" and sglang.tensor_parallel_size == 8
    assert sglang.kv_cache_dtype == "fp8_e5m2"
    assert sglang.line == line_of(f, "- python3 -m sglang.launch_server")


def test_compose_merge_keys_are_applied_as_compose_applies_them():
    # a service built from an x- anchor with `<<: *base` (YAML merge keys, which docker compose applies) was
    # not found: the readers walk composed nodes, where the merge is not yet done. Its own keys win; each value
    # keeps the line it is written on
    text = ("x-vllm: &base\n"
            "  image: vllm/vllm-openai:v0.11.0\n"
            "  command: [\"--model\", \"meta-llama/Llama-3.1-8B\", \"--max-model-len\", \"8192\"]\n"
            "services:\n"
            "  a:\n"
            "    <<: *base\n"
            "  b:\n"
            "    <<: [*base]\n"
            "    command: [\"--model\", \"Qwen/Qwen3-8B\"]\n")
    a, b = parse_yaml(text, "docker-compose.yml", options=option_list)
    assert (a.context, a.model, a.max_model_len, a.line) == ("service a", "meta-llama/Llama-3.1-8B", 8192, 3)
    assert (b.context, b.model, b.image, b.line) == ("service b", "Qwen/Qwen3-8B", "vllm/vllm-openai:v0.11.0", 9)
    with pytest.raises(ConfigError, match="expected a mapping or list of mappings for merging"):
        parse_yaml("services:\n  a:\n    <<: 5\n", "docker-compose.yml", options=option_list)


@pytest.mark.parametrize(("image", "expected"), [
    ("vllm/vllm-openai:${TAG:?set TAG}", ("vllm", True, None)),  # the message's ':' was taken for the tag's
    ("vllm/vllm-openai:${TAG:-latest}", ("vllm", True, None)),
    ("registry:5000/vllm/vllm-openai:v0.10.1", ("vllm", True, "0.10.1")),  # a registry port is no tag
    ("${REGISTRY}/lmsysorg/sglang:v0.5.23-cu129", ("sglang", False, "0.5.23")),
])
def test_an_image_whose_tag_is_an_unresolved_reference(image, expected):
    # compose `image: vllm/vllm-openai:${TAG:?set TAG}` without TAG in .env: the service was no engine (its
    # command became an unknown image's arguments: "nothing to check"); the engine is the image's, the
    # release unknown
    assert parse_image(image) == expected


def test_compose_without_dotenv_keeps_the_reference_and_default_tag():
    f = DEPLOY / "compose" / "docker-compose.yml"
    vllm, _ = parse_yaml(f.read_text(), str(f), options=option_list)
    assert vllm.model == "${MODEL}" and "MODEL" in vllm.unresolved_env
    assert vllm.engine_version == "0.10.0"  # ${VLLM_TAG:-v0.10.0}


def test_yaml_ci_step_scripts_are_scanned():
    text = "jobs:\n  smoke:\n    steps:\n      - run: |\n          pip install vllm==0.8.0\n" \
           "          vllm serve org/tiny --max-model-len 2048 &\n"
    inv = only(parse_yaml(text, "ci.yml", options=option_list))
    assert inv.model == "org/tiny" and inv.max_model_len == 2048 and inv.line == 6
    assert inv.context == "jobs.smoke.steps[0].run"


def test_malformed_yaml_names_file_and_line():
    with pytest.raises(ConfigError, match=r"^bad.yaml: line 3: invalid YAML"):
        parse_yaml("a:\n  b: [1, 2\nc: 3\n", "bad.yaml", options=option_list)


def test_args_must_be_strings():
    text = "containers:\n  - name: x\n    image: vllm/vllm-openai:v0.9.0\n    args:\n      - {a: 1}\n"
    with pytest.raises(ConfigError, match=r"^bad.yaml: line 5: command/args items must be strings"):
        parse_yaml(text, "bad.yaml", options=option_list)


# --- images and files ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("image", "expected"), [
    ("vllm/vllm-openai:v0.10.1", ("vllm", True, "0.10.1")),
    ("docker.io/vllm/vllm-openai:latest", ("vllm", True, None)),
    ("lmsysorg/sglang:v0.4.6.post1-cu124", ("sglang", False, "0.4.6.post1")),
    ("registry.local:5000/vllm/vllm-openai:v0.9.2@sha256:abcd", ("vllm", True, "0.9.2")),
    ("nvidia/cuda:12.4.1-runtime", (None, False, None)),
])
def test_parse_image(image, expected):
    assert parse_image(image) == expected


def test_read_paths_walks_a_repo_and_api_matches():
    scan = read_paths([DEPLOY], options=option_list)
    kinds = sorted({i.source for i in scan.invocations})
    assert kinds == ["compose", "dockerfile", "helm-values", "kubernetes", "shell"]
    # one launch per fixture file, two in the compose file and the sglang script: 9 files, 11 launches
    assert len(scan.files_scanned) == 9 and len(scan.invocations) == 11
    compose = [i for i in scan.invocations if i.source == "compose" and i.engine == "vllm"]
    assert compose[0].model == "TheBloke/Mistral-7B-Instruct-v0.2-GPTQ"  # compose/.env was read
    assert api.read_deployment(str(DEPLOY)).model_dump() == scan.model_dump()


def test_helm_templates_are_skipped_with_a_warning(tmp_path):
    chart = tmp_path / "chart" / "templates"
    chart.mkdir(parents=True)
    (chart / "deployment.yaml").write_text("spec:\n  replicas: {{ .Values.replicas }}\n  {{- if .Values.x }}\n")
    scan = read_paths([tmp_path], options=option_list)
    assert scan.invocations == [] and any("Helm template (not rendered)" in w for w in scan.warnings)


def test_missing_path_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file or directory"):
        read_paths([tmp_path / "nope"], options=option_list)


def test_json_dump_has_schema_version():
    doc = read_paths([DEPLOY / "run.sh"], options=option_list).model_dump(mode="json")
    assert doc["schema_version"] == 1 and doc["invocations"][0]["flag_lines"]["model"] == 12


def test_a_bash_array_of_flags_is_expanded():
    """r38: `ARGS=(... --tensor-parallel-size 2)` then `vllm serve ... "${ARGS[@]}"` lost TP 2 without a word
    (sized as TP 1). bash expands "${ARGS[@]}" to one word per element; `+=( )` appends."""
    text = ("#!/bin/bash\n"
            "ARGS=(\n"
            "  --max-num-seqs 64   # a comment inside the array\n"
            "  --tensor-parallel-size 2\n"
            ")\n"
            "ARGS+=(--kv-cache-dtype fp8)\n"
            "vllm serve org/m --max-model-len 16384 \"${ARGS[@]}\"\n")
    (inv,) = parse_shell(text, "run.sh", options=option_list)
    assert (inv.tensor_parallel_size, inv.max_num_seqs, inv.kv_cache_dtype, inv.max_model_len) == (2, 64, "fp8", 16384)
    assert inv.flag_lines["tensor_parallel_size"] == 4 and inv.flag_lines["kv_cache_dtype"] == 6  # where written
    assert inv.warnings == []


def test_flags_from_a_variable_the_script_never_sets_are_said_to_be_unread():
    text = "vllm serve org/m --max-model-len 8192 $EXTRA_ARGS \"${MORE[@]}\"\n"
    (inv,) = parse_shell(text, "run.sh", options=option_list)
    assert inv.max_model_len == 8192 and inv.unresolved_env == ["EXTRA_ARGS", "MORE"]
    assert [w.split(": ", 1)[1] for w in inv.warnings] == [
        "line 1: $EXTRA_ARGS is set at run time: the flags in it are not read (assign it in the script, or put the "
        "flags that matter on the command line)",
        "line 1: ${MORE[@]} is set at run time: the flags in it are not read (assign it in the script, or put the "
        "flags that matter on the command line)"]
