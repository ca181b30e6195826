"""The vLLM production-stack chart's values (vllm-project/production-stack, helm/) read as the engines it deploys.

Each ``servingEngineSpec.modelSpec[]`` entry becomes ``vllm serve <modelURL>`` with its ``vllmConfig`` keys as
flags (helm/templates/deployment-vllm-multi.yaml) and its ``extraArgs``; with ``raySpec.enabled`` the engine
places its workers over the head and ``replicaCount`` worker pods (templates/ray-cluster.yaml). Pure over
YAML nodes (their lines kept); a count is read only from at most 9 ASCII digits."""

from __future__ import annotations

from typing import Any

from ..engines.invocation import EngineInvocation
from .launch import LaunchContext, OptionLists, invocation_from_words, parse_image
from .nodes import get as _get
from .nodes import is_map as _is_map
from .nodes import is_scalar as _is_scalar
from .nodes import is_seq as _is_seq
from .shell import Word


def _count(value: Any) -> int | None:
    """A scalar of ASCII digits as a count (at most 9 of them: no pod or GPU count has more; ``²`` and
    5,000 digits are strings int() refuses), else None."""
    v = str(value)
    return int(v) if v.isascii() and v.isdigit() and len(v) <= 9 else None


# vLLM production-stack chart (vllm-project/production-stack, helm/templates/deployment-vllm-multi.yaml): each
# servingEngineSpec.modelSpec[] entry becomes `vllm serve <modelURL>` with these vllmConfig keys as flags
_STACK_FLAGS = (("maxModelLen", "--max-model-len"), ("dtype", "--dtype"), ("tensorParallelSize", "--tensor-parallel-size"),
                ("pipelineParallelSize", "--pipeline-parallel-size"),  # templates/ray-cluster.yaml (raySpec)
                ("maxNumSeqs", "--max-num-seqs"), ("gpuMemoryUtilization", "--gpu-memory-utilization"),
                ("maxLoras", "--max-loras"))


def production_stack(root: Any, file: str, options: OptionLists | None = None) -> list[EngineInvocation]:
    """The engines a vLLM production-stack values file deploys (``servingEngineSpec.modelSpec[]``)."""
    specs = _get(_get(root, "servingEngineSpec"), "modelSpec")
    out: list[EngineInvocation] = []
    if not _is_seq(specs):
        return out
    for spec in specs.value:
        url = _get(spec, "modelURL")
        if not _is_map(spec) or url is None or not _is_scalar(url):
            continue
        repo, tag = _get(spec, "repository"), _get(spec, "tag")
        image = None
        if repo is not None and _is_scalar(repo):
            image = f"{repo.value}:{tag.value}" if tag is not None and _is_scalar(tag) and tag.value else repo.value
        line = url.start_mark.line + 1
        words = [Word("vllm", line), Word("serve", line), Word(str(url.value), line)]
        cfg = _get(spec, "vllmConfig")
        for key, flag in _STACK_FLAGS:
            v = _get(cfg, key)
            if v is not None and _is_scalar(v):
                vline = v.start_mark.line + 1
                words += [Word(flag, vline), Word(str(v.value), vline)]
        extra = _get(cfg, "extraArgs")
        if _is_seq(extra):
            words += [Word(str(x.value), x.start_mark.line + 1) for x in extra.value if _is_scalar(x)]
        gpus = _get(spec, "requestGPU")
        name = _get(spec, "name")
        ray = _get(_get(spec, "raySpec"), "enabled")
        workers = _get(spec, "replicaCount")
        if gpus is not None and _is_scalar(gpus) and ray is not None and _is_scalar(ray) and str(ray.value).lower() == \
                "true" and workers is not None and _is_scalar(workers) and _count(workers.value) is not None \
                and _count(gpus.value) is not None:
            # on the chart's RayCluster the engine places its workers over the head and replicaCount worker pods
            gpus.value = str(int(gpus.value) * (1 + int(workers.value)))
        engine, _, version = parse_image(image) if image else (None, False, None)
        ctx = LaunchContext(file=file, source="helm-values", options=options,
                            context=f"modelSpec {name.value}" if name is not None and _is_scalar(name) else "modelSpec",
                            image=image if engine else None, engine_version=version,
                            gpus=(str(gpus.value), gpus.start_mark.line + 1) if gpus is not None and _is_scalar(gpus)
                            else None)
        inv = invocation_from_words(words, ctx)
        if inv is not None:
            out.append(inv)
    return out
