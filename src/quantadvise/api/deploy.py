"""``deploy``: the manifests that serve the recommended layout on a stack that already scales (vLLM's
production-stack chart, llm-d, KServe, NVIDIA Dynamo), and the quantadvise.yaml ``check`` holds them to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..advisor.layout_result import DeployResult
from ..errors import InputError

if TYPE_CHECKING:
    from ..advisor.layout_result import LayoutRow
    from ..advisor.result import Recommendation
    from ..workload import Workload


def deploy(workload: Workload | dict[str, Any] | None = None, *, target: str, **overrides: Any) -> DeployResult:
    """Recommend over the workload's pool (a layout search: ``max_gpus``, ``node``, several ``gpu`` types, or
    one GPU type's layouts) and write the winner's manifests for ``target`` (helm, llm-d, kserve, dynamo), with a
    quantadvise.yaml that declares the deployment for ``quantadvise check``."""
    from ..artifacts.stacks import TARGETS, VERSIONS, manifests, resource_name
    from .recommend import recommend

    if target not in TARGETS:
        raise InputError(f"--target {target}: not a stack quantadvise writes", hint=f"one of {', '.join(TARGETS)}",
                         field="target")
    pool_keys = {"max_gpus", "node", "layouts"}
    given = {k: v for k, v in overrides.items() if v is not None}
    pinned = _stack_engine(target, workload, given)
    if not pool_keys & set(given):
        given["layouts"] = True  # one GPU type's layouts: the table the winner comes from
    rec = recommend(workload, **given)
    found = rec.layouts
    if found is None or found.plan is None or not found.rows:
        raise InputError("no layout to deploy", field="workload")
    row = found.rows[0]
    engine = rec.workload.engine
    cmds = found.plan.engines.get(engine)
    if not cmds:
        why = "; ".join(found.plan.notes) or f"{engine} has no command for this scheme and layout"
        raise InputError(f"{engine} cannot serve {row.scheme} as {row.layout}: {why}", field="engine")
    model = _model(rec)
    short = (rec.workload.model_id or rec.workload.model).rsplit("/", 1)[-1]
    files = manifests(target, cmds, row, engine=engine, version=rec.workload.engine_version or "", model=model,
                      name=resource_name(short, row.scheme), gpus_per_node=row.gpus_per_node)
    files["quantadvise.yaml"] = _declaration(rec, row, model, sorted(files))
    notes = [*([pinned] if pinned else []), *found.plan.notes]
    if not row.native and rec.checkpoint.suggested_path:
        notes.append(f"the manifests serve {model}: produce that checkpoint first ({rec.checkpoint.summary}) and put "
                     "it where the pods read it (a model registry, a volume or the Hub)")
    return DeployResult(target=target, format=VERSIONS[target], engine=engine,
                        engine_version=rec.workload.engine_version or "", model=model, scheme=row.scheme, layout=row,
                        files=files, check="quantadvise check DIR --config DIR/quantadvise.yaml", notes=notes)


def _stack_engine(target: str, workload: Workload | dict[str, Any] | None, given: dict[str, Any]) -> str | None:
    """A stack whose image pins the engine release (Dynamo's runtime images: data/flags/launchers/): the
    recommendation is made for that release, so the commands in the manifests are checked against the engine
    that will run them, and the quantadvise.yaml declares it. ``given`` is updated; returns the note that says
    so (None: the stack runs the release asked for). A different release asked for is an InputError."""
    from .. import catalog, defaults
    from ..artifacts.stacks import DYNAMO_RELEASE
    from ..engines.versions import version_key

    if target != "dynamo":
        return None
    rel = catalog.stack_release("dynamo", DYNAMO_RELEASE)  # the release whose runtime image the manifest names
    base = workload if isinstance(workload, dict) else (workload.model_dump() if workload is not None else {})
    engine = given.get("engine") or base.get("engine") or defaults.ENGINE
    img = next((i for i in rel.images if i.engine == engine), None) if rel is not None else None
    if rel is None or img is None:
        return None
    asked = given.get("engine_version") or base.get("engine_version")
    if asked and version_key(str(asked)) != version_key(img.engine_version):
        raise InputError(f"--engine-version {asked}: Dynamo {rel.version}'s {engine} runtime image "
                         f"({img.repository}:{rel.version}) runs {engine} {img.engine_version}, the release the "
                         "manifests would start", hint=f"leave --engine-version out, or give {img.engine_version}",
                         field="engine_version")
    given["engine_version"] = img.engine_version
    return (f"the commands are written for and checked against {engine} {img.engine_version}: the release Dynamo "
            f"{rel.version}'s {img.repository} image runs ({img.source})")


def _model(rec: Recommendation) -> str:
    """The checkpoint the pods serve: the model as shipped, else the re-quantized checkpoint's path."""
    if rec.scheme.native or not rec.checkpoint.suggested_path:
        return rec.workload.model_id or rec.workload.model
    return rec.checkpoint.suggested_path


def _declaration(rec: Recommendation, row: LayoutRow, model: str, files: list[str]) -> str:
    """The quantadvise.yaml that declares the deployment the manifests make (docs/ci.md)."""
    w = rec.workload
    lines = ["# The deployment quantadvise deploy wrote; `quantadvise check` holds the manifests to it (docs/ci.md).",
             "version: 1", f"model: {w.model_id or w.model}" if model == (w.model_id or w.model) else
             f"model: {model}", f"engine: {w.engine}", f"engine_version: {w.engine_version}", f"gpu: {row.gpu}"]
    if not rec.scheme.native:
        lines.append(f"quantization: {rec.scheme.id}")
    lines += ["workload:"]
    if w.prompt is not None:
        lines.append(f"  prompt: {w.prompt}")
    if w.output is not None:
        lines.append(f"  output: {w.output}")
    lines += [f"  mode: {w.serving_mode}", "deployment:", *(f"  - {f}" for f in files)]
    return "\n".join(lines) + "\n"
