"""Manifests for the serving stacks that already scale, for one chosen layout (``quantadvise deploy``): the
vLLM production-stack Helm values, llm-d's LeaderWorkerSets, a KServe LLMInferenceService and an NVIDIA Dynamo
DynamoGraphDeployment. Each is the stack's documented format at the version named (tests validate the output
against the published schemas in tests/fixtures/stacks/); GPUs per pod, pods per replica (nodes) and the engine
command come from the layout plan (``advisor/layout_plan.py``). No orchestration of our own: the stacks run it.

- **helm** (vllm-project/production-stack chart 0.1.12, ``values.yaml``): one ``servingEngineSpec.modelSpec``
  per pool; ``vllmConfig`` carries the flags the chart names (tensorParallelSize, pipelineParallelSize,
  maxModelLen, maxNumSeqs, gpuMemoryUtilization, dtype) and ``extraArgs`` the rest; a replica over several
  nodes runs on the chart's RayCluster (``raySpec``: the head and ``replicaCount`` workers, the layout's
  pipeline stages across them, templates/ray-cluster.yaml). vLLM only; a layout the chart cannot place
  (data parallel across nodes, disaggregated pools) is refused with the stacks that can.
- **llm-d** (the 2026 guides: kustomize over LeaderWorkerSet, leaderworkerset.x-k8s.io/v1): one
  LeaderWorkerSet per pool, ``replicas`` groups of ``size`` pods (one per node); the leader runs node 0's
  command, the workers node 1's with their rank from ``LWS_WORKER_INDEX`` and the head from
  ``LWS_LEADER_ADDRESS`` (injected by LWS). Pools are labelled ``llm-d.ai/role`` prefill / decode.
- **kserve** (serving.kserve.io/v1alpha2 LLMInferenceService, kserve @ aaac4e2): ``parallelism`` {tensor,
  pipeline, data, dataLocal, expert}, a ``worker`` pod spec for a replica over several nodes, ``prefill`` for
  a disaggregated pool; the other engine flags in ``VLLM_ADDITIONAL_ARGS`` on the ``main`` container, as the
  KServe samples pass them. vLLM only.
- **dynamo** (nvidia.com/v1beta1 DynamoGraphDeployment, ai-dynamo 1.6.1): a Frontend and one worker component
  per pool (``type`` worker, or prefill / decode with ``--disaggregation-mode``), ``multinode.nodeCount`` for a
  replica over several nodes (the operator starts each node; data parallelism over nodes with
  ``--data-parallel-size-local`` and ``--data-parallel-hybrid-lb``, as Dynamo's profiler writes DEP,
  dynamo/profiler/utils/config_modifiers/vllm.py); workers run ``python3 -m dynamo.vllm`` / ``dynamo.sglang``.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from ..engines.flags import ENGINES, IMAGES, PARALLEL, STACKS
from ..errors import InputError

TARGETS = ("helm", "llm-d", "kserve", "dynamo")
VERSIONS = {"helm": "vllm-project/production-stack chart 0.1.12 (values.schema.json)",
            "llm-d": "leaderworkerset.x-k8s.io/v1 (kubernetes-sigs/lws 060ab4d), llm-d guides 2026",
            "kserve": "serving.kserve.io/v1alpha2 LLMInferenceService (kserve/kserve aaac4e2)",
            "dynamo": "nvidia.com/v1beta1 DynamoGraphDeployment (ai-dynamo 1.6.1)"}
DYNAMO_RELEASE = "1.6.1"  # the DynamoGraphDeployment format written and the runtime image tag its workers run
DYNAMO_IMAGE = "nvcr.io/nvidia/ai-dynamo/{engine}-runtime:" + DYNAMO_RELEASE
DYNAMO_MODULE = {"vllm": "dynamo.vllm", "sglang": "dynamo.sglang"}
# production-stack vllmConfig keys and the flags the chart writes from them (templates/deployment-vllm-multi.yaml,
# templates/ray-cluster.yaml); artifacts/manifests.py reads the same keys back
STACK_KEYS = {"--tensor-parallel-size": "tensorParallelSize", "--pipeline-parallel-size": "pipelineParallelSize",
              "--max-model-len": "maxModelLen", "--max-num-seqs": "maxNumSeqs",
              "--gpu-memory-utilization": "gpuMemoryUtilization", "--dtype": "dtype"}
HEAD = "HEAD_ADDRESS"  # the placeholder the layout plan writes for node 0's address
LWS_HEAD, LWS_INDEX = "LWS_LEADER_ADDRESS", "LWS_WORKER_INDEX"


def resource_name(*parts: str) -> str:
    """A DNS-1123 name (lowercase letters, digits and '-', at most 63) from ``parts``."""
    raw = "-".join(p for p in parts if p).lower()
    name = re.sub(r"[^a-z0-9-]+", "-", raw).strip("-")
    return re.sub(r"-{2,}", "-", name)[:63].strip("-") or "llm"


def _argv(command: str) -> tuple[list[str], str | None, list[str]]:
    """(launcher words, the model, the options) of a command the plan wrote."""
    words = shlex.split(command)
    table = next((t for t in ENGINES.values() if words[: len(t.launch)] == list(t.launch)), None)
    if table is None:
        raise ValueError(f"not a command the layout plan writes: {command}")
    n = len(table.launch)
    if table.positional_model:
        return words[:n], words[n], words[n + 1:]
    model_flags = table.for_field("model").names
    rest, model = [], None
    i = n
    while i < len(words):
        if words[i] in model_flags and i + 1 < len(words):
            model = words[i + 1]
            i += 2
            continue
        rest.append(words[i])
        i += 1
    return words[:n], model, rest


def _pairs(options: list[str]) -> list[tuple[str, str | None]]:
    """Options as (name, value or None for a switch)."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(options):
        name = options[i]
        value = options[i + 1] if i + 1 < len(options) and not options[i + 1].startswith("--") else None
        out.append((name, value))
        i += 2 if value is not None else 1
    return out


def _without(options: list[str], names: set[str]) -> list[str]:
    return [w for name, value in _pairs(options) if name not in names for w in (name, *(() if value is None else
                                                                                     (value,)))]


def _runs(target: str, engine: str, what: str) -> None:
    if target not in STACKS.get(engine, ()):
        others = [t for t in STACKS.get(engine, ()) if t != target]
        raise InputError(f"--target {target} writes {what}, which does not run {ENGINES[engine].label}",
                         hint=f"use --target {' / '.join(others)}" if others else None, field="target")


def _resources(gpus: int) -> dict[str, Any]:
    return {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"nvidia.com/gpu": str(gpus)}}


def _pools(cmds: list[Any], row: Any) -> list[tuple[str, list[Any], int]]:
    """(role, that pool's node commands, replicas) for the chosen engine."""
    roles: dict[str, list[Any]] = {}
    for c in cmds:
        roles.setdefault(c.role, []).append(c)
    out = []
    for role, nodes in roles.items():
        replicas = row.prefill.replicas if role == "prefill" and row.prefill is not None else row.replicas
        out.append((role, sorted(nodes, key=lambda c: c.node_rank), replicas))
    return out


def _worker_script(command: str, gpus_per_node: int) -> str:
    """Node 1's command as every worker of a LeaderWorkerSet runs it: its rank from LWS_WORKER_INDEX (times the
    node's GPUs for vLLM's data-parallel start rank), the head from LWS_LEADER_ADDRESS."""
    words = shlex.split(command)
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("--node-rank",) and i + 1 < len(words):
            out += [w, f"${{{LWS_INDEX}}}"]
            i += 2
            continue
        if w == "--data-parallel-start-rank" and i + 1 < len(words):
            local = max(1, int(words[i + 1]))  # node 1's start rank is the ranks one node holds
            out += [w, f"$(( {LWS_INDEX} * {local} ))"]
            i += 2
            continue
        out.append(w.replace(HEAD, f"${{{LWS_HEAD}}}"))
        i += 1
    del gpus_per_node
    return "exec " + " ".join(a if a.startswith("$") else shlex.quote(a) for a in out)


def helm(pools: list[tuple[str, list[Any], int]], *, engine: str, version: str, name: str,
         gpus_per_node: int) -> dict[str, Any]:
    _runs("helm", engine, "the vLLM production-stack chart")
    specs = []
    repository, tag = IMAGES[engine].format(version=version).split(":")
    for role, nodes, replicas in pools:
        if role != "replica":
            raise InputError("the production-stack chart has no prefill/decode pools of its own layout",
                             hint="use --target llm-d, kserve or dynamo for a disaggregated layout", field="target")
        first = nodes[0]
        _, model, options = _argv(first.command)
        pairs = _pairs(options)
        multi = len(nodes) > 1
        if multi and any(n in ("--data-parallel-size-local", "--data-parallel-address") for n, _ in pairs):
            raise InputError("the production-stack chart runs a replica over several nodes on Ray, by pipeline stages: "
                             "it cannot place data parallelism across nodes",
                             hint="use --target llm-d, kserve or dynamo for this layout", field="target")
        cfg: dict[str, Any] = {}
        extra: list[str] = []
        drop = {"--nnodes", "--node-rank", "--master-addr", "--master-port"} if multi else set()
        for flag, value in pairs:
            if flag in drop:
                continue
            if flag in STACK_KEYS and value is not None:
                cfg[STACK_KEYS[flag]] = float(value) if "." in value else int(value) if value.isdigit() else value
            else:
                extra += [flag, *([value] if value is not None else [])]
        if extra:
            cfg["extraArgs"] = extra
        for r in range(replicas if multi else 1):
            spec: dict[str, Any] = {"name": resource_name(name, str(r) if multi and replicas > 1 else ""),
                                    "repository": repository, "tag": tag, "modelURL": model,
                                    "replicaCount": len(nodes) - 1 if multi else replicas, "requestGPU": first.gpus,
                                    "vllmConfig": cfg}
            if multi:
                spec["raySpec"] = {"enabled": True, "headNode": {"requestGPU": first.gpus}}
            specs.append(spec)
    del gpus_per_node
    return {"servingEngineSpec": {"modelSpec": specs}}


def _container(name: str, image: str, gpus: int, *, argv: list[str] | None = None,
               script: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": image}
    if script is not None:
        c["command"] = ["/bin/sh", "-c"]
        c["args"] = [script]
    elif argv is not None:
        c["command"], c["args"] = argv[:1], argv[1:]
    c["resources"] = _resources(gpus)
    return c


def llm_d(pools: list[tuple[str, list[Any], int]], *, engine: str, version: str, name: str,
          gpus_per_node: int) -> list[dict[str, Any]]:
    image = IMAGES[engine].format(version=version)
    docs = []
    for role, nodes, replicas in pools:
        labels = {"llm-d.ai/inference-serving": "true", "llm-d.ai/role": "decode" if role != "prefill" else role}
        lead_argv = [w.replace(HEAD, f"$({LWS_HEAD})") for w in shlex.split(nodes[0].command)]
        leader = {"metadata": {"labels": labels},
                  "spec": {"containers": [_container(engine, image, nodes[0].gpus, argv=lead_argv)]}}
        tmpl: dict[str, Any] = {"size": len(nodes)}
        if len(nodes) > 1:
            tmpl["leaderTemplate"] = leader
            tmpl["workerTemplate"] = {"metadata": {"labels": labels}, "spec": {"containers": [
                _container(engine, image, nodes[1].gpus, script=_worker_script(nodes[1].command, gpus_per_node))]}}
        else:
            tmpl["workerTemplate"] = leader
        docs.append({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                     "metadata": {"name": resource_name(name, role if role != "replica" else ""), "labels": labels},
                     "spec": {"replicas": replicas, "leaderWorkerTemplate": tmpl}})
    return docs


_KSERVE_PARALLEL = {"--tensor-parallel-size": "tensor", "--pipeline-parallel-size": "pipeline",
                    "--data-parallel-size": "data", "--data-parallel-size-local": "dataLocal"}
_KSERVE_OWN = {"--nnodes", "--node-rank", "--master-addr", "--master-port", "--data-parallel-address",
               "--data-parallel-start-rank", "--headless", "--enable-expert-parallel"}


def _kserve_workload(nodes: list[Any], replicas: int) -> dict[str, Any]:
    _, _, options = _argv(nodes[0].command)
    par: dict[str, Any] = {}
    extra: list[str] = []
    for flag, value in _pairs(options):
        if flag in _KSERVE_PARALLEL and value is not None:
            par[_KSERVE_PARALLEL[flag]] = int(value)
        elif flag == "--enable-expert-parallel":
            par["expert"] = True
        elif flag not in _KSERVE_OWN:
            extra += [flag, *([value] if value is not None else [])]
    env = [{"name": "VLLM_ADDITIONAL_ARGS", "value": shlex.join(extra)}] if extra else []
    main = {"name": "main", "env": env, "resources": _resources(nodes[0].gpus)}
    spec: dict[str, Any] = {"replicas": replicas, "parallelism": par or {"tensor": 1}, "template": {"containers": [main]}}
    if len(nodes) > 1:
        spec["worker"] = {"containers": [{**main, "resources": _resources(nodes[1].gpus)}]}
    return spec


def kserve(pools: list[tuple[str, list[Any], int]], *, engine: str, version: str, name: str,
           gpus_per_node: int, model: str) -> dict[str, Any]:
    _runs("kserve", engine, "KServe's LLMInferenceService")
    by = {role: (nodes, replicas) for role, nodes, replicas in pools}
    main_role = "decode" if "decode" in by else "replica"
    nodes, replicas = by[main_role]
    spec: dict[str, Any] = {"model": {"uri": model if "://" in model else f"hf://{model}", "name": model},
                            **_kserve_workload(nodes, replicas), "router": {"scheduler": {}, "route": {}, "gateway": {}}}
    if "prefill" in by:
        spec["prefill"] = _kserve_workload(*by["prefill"])
    del version, gpus_per_node
    return {"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
            "metadata": {"name": resource_name(name)}, "spec": spec}


def dynamo(pools: list[tuple[str, list[Any], int]], *, engine: str, version: str, name: str,
           gpus_per_node: int) -> dict[str, Any]:
    image = DYNAMO_IMAGE.format(engine=engine)
    f = PARALLEL[engine]
    comps: list[dict[str, Any]] = [{"name": "Frontend", "type": "frontend", "replicas": 1, "podTemplate": {"spec": {
        "containers": [{"name": "main", "image": image, "command": ["python3"], "args": ["-m", "dynamo.frontend"]}]}}}]
    operator = {f.nnodes, f.node_rank, f.head, *(x for x in (f.head_port and "--master-port",) if x),
                *(x for x in (f.dp_address, f.dp_start_rank, f.headless) if x)}
    for role, nodes, replicas in pools:
        _, model, options = _argv(nodes[0].command)
        args = ["--model", model or "", *_without(options, operator | set(f.disaggregation.get(role, ())[:1]))]
        if role in f.disaggregation:
            args += ["--disaggregation-mode", role]
        if len(nodes) > 1 and f.dp_local is not None and f.dp_local in args:
            args.append("--data-parallel-hybrid-lb")
        comp: dict[str, Any] = {"name": role if role != "replica" else "worker",
                                "type": role if role != "replica" else "worker", "replicas": replicas,
                                "podTemplate": {"spec": {"containers": [{
                                    "name": "main", "image": image, "command": ["python3", "-m", DYNAMO_MODULE[engine]],
                                    "args": args, "resources": {"limits": {"nvidia.com/gpu": str(nodes[0].gpus)}}}]}}}
        if len(nodes) > 1:
            comp["multinode"] = {"nodeCount": len(nodes)}
        comps.append(comp)
    del version, gpus_per_node
    return {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment",
            "metadata": {"name": resource_name(name)}, "spec": {"components": comps}}


def manifests(target: str, node_commands: list[Any], row: Any, *, engine: str, version: str, model: str,
              name: str, gpus_per_node: int) -> dict[str, str]:
    """File name -> YAML text of ``target``'s manifests for the layout ``row`` (its node commands for ``engine``)."""
    import yaml

    pools = _pools(node_commands, row)
    head = (f"# {VERSIONS[target]}: {row.scheme} on {row.gpus} x {row.gpu_name}, {row.replicas} x {row.layout}"
            " (written by quantadvise deploy; the figures behind it: quantadvise recommend ... --format json)\n")
    class _Plain(yaml.SafeDumper):  # no &anchors / *aliases for a dict used twice
        def ignore_aliases(self, data: Any) -> bool:
            return True

    def dump(d: Any) -> str:
        return yaml.dump(d, Dumper=_Plain, sort_keys=False, width=120)

    if target == "helm":
        return {"values.yaml": head + dump(helm(pools, engine=engine, version=version, name=name,
                                                gpus_per_node=gpus_per_node))}
    if target == "llm-d":
        docs = llm_d(pools, engine=engine, version=version, name=name, gpus_per_node=gpus_per_node)
        return {"leaderworkerset.yaml": head + "---\n".join(dump(d) for d in docs)}
    if target == "kserve":
        return {"llminferenceservice.yaml": head + dump(kserve(pools, engine=engine, version=version, name=name,
                                                               gpus_per_node=gpus_per_node, model=model))}
    if target == "dynamo":
        return {"dynamographdeployment.yaml": head + dump(dynamo(pools, engine=engine, version=version, name=name,
                                                                 gpus_per_node=gpus_per_node))}
    raise InputError(f"--target {target}: not a stack quantadvise writes", hint=f"one of {', '.join(TARGETS)}",
                     field="target")
