"""KServe's LLMInferenceService (serving.kserve.io v1alpha1 / v1alpha2) read as the vLLM servers it runs.

The resource names the model and the layout, not a command: the controller starts ``vllm serve`` on the
downloaded model with ``spec.parallelism`` as vLLM's parallel options (tensor -> --tensor-parallel-size,
pipeline -> --pipeline-parallel-size, data -> --data-parallel-size, dataLocal -> --data-parallel-size-local,
expert -> --enable-expert-parallel; kserve @ aaac4e2 pkg/apis/serving/v1alpha2/llm_inference_service_types.go)
and appends the ``main`` container's ``VLLM_ADDITIONAL_ARGS`` (the KServe samples' way to pass other flags).
One invocation per workload: the service itself and, when present, its ``prefill`` pool; the GPUs are the
``main`` container's ``nvidia.com/gpu``. Pure over YAML nodes (their lines kept)."""

from __future__ import annotations

from typing import Any

from ..engines.invocation import EngineInvocation
from .launch import LaunchContext, OptionLists, invocation_from_words
from .nodes import get as _get
from .nodes import scalar as _scalar
from .shell import Word, split_shell

KINDS = ("LLMInferenceService",)
PARALLELISM = (("tensor", "--tensor-parallel-size"), ("pipeline", "--pipeline-parallel-size"),
               ("data", "--data-parallel-size"), ("dataLocal", "--data-parallel-size-local"))


def is_llm_inference_service(root: Any) -> bool:
    kind = _scalar(_get(root, "kind"))
    api = _scalar(_get(root, "apiVersion")) or ""
    return kind in KINDS and api.startswith("serving.kserve.io/")


def _main(spec: Any) -> Any:
    containers = _get(_get(spec, "template"), "containers")
    if containers is None or type(containers).__name__ != "SequenceNode":
        return None
    return next((c for c in containers.value if _scalar(_get(c, "name")) == "main"), None)


def _workload(spec: Any, model: str, model_line: int, file: str, label: str,
              options: OptionLists | None) -> EngineInvocation | None:
    words = [Word("vllm", model_line), Word("serve", model_line), Word(model, model_line)]
    par = _get(spec, "parallelism")
    for key, flag in PARALLELISM:
        v = _get(par, key)
        if _scalar(v) is not None:
            words += [Word(flag, v.start_mark.line + 1), Word(_scalar(v) or "", v.start_mark.line + 1)]
    expert = _get(par, "expert")
    if (_scalar(expert) or "").lower() == "true":
        words.append(Word("--enable-expert-parallel", expert.start_mark.line + 1))
    main = _main(spec)
    gpus = None
    env = _get(main, "env")
    if env is not None and type(env).__name__ == "SequenceNode":
        for item in env.value:
            if _scalar(_get(item, "name")) == "VLLM_ADDITIONAL_ARGS":
                v = _get(item, "value")
                if _scalar(v):
                    line = v.start_mark.line + 1
                    words += [w for c in split_shell(_scalar(v) or "", file, line_map=[line]) for w in c]
    limits = _get(_get(main, "resources"), "limits")
    g = _get(limits, "nvidia.com/gpu")
    if _scalar(g) is not None:
        gpus = (_scalar(g) or "", g.start_mark.line + 1)
    ctx = LaunchContext(file=file, source="kubernetes", context=label, gpus=gpus, options=options)
    return invocation_from_words(words, ctx)


def parse_llm_inference_service(root: Any, file: str, options: OptionLists | None = None) -> list[EngineInvocation]:
    """The vLLM servers an LLMInferenceService runs (the service's workload and its prefill pool)."""
    spec = _get(root, "spec")
    model_node = _get(spec, "model")
    name_node = _get(model_node, "name")
    uri_node = _get(model_node, "uri")
    ref = _scalar(name_node) or (_scalar(uri_node) or "").removeprefix("hf://")
    at = (name_node or uri_node)
    line = at.start_mark.line + 1 if at is not None else root.start_mark.line + 1
    svc = _scalar(_get(_get(root, "metadata"), "name")) or "llminferenceservice"
    out = []
    for part, label in ((spec, f"LLMInferenceService/{svc}"), (_get(spec, "prefill"), f"LLMInferenceService/{svc} "
                                                                                        "prefill")):
        if part is None:
            continue
        inv = _workload(part, ref, line, file, label, options)
        if inv is not None:
            out.append(inv)
    return out
