"""``read_deployment``: the engine commands in a deployment repository."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..engines.invocation import DeploymentScan


def read_deployment(paths: str | Path | Sequence[str | Path], *, env: dict[str, str] | None = None) -> DeploymentScan:
    """Engine invocations (``vllm serve``, ``python -m sglang.launch_server`` ...) found in shell
    scripts, Dockerfiles, Kubernetes manifests, Helm values and docker-compose files under
    ``paths``, each with its file and line and the flags that matter. Returns a ``DeploymentScan``.
    """
    from .. import catalog
    from ..artifacts.scan import read_paths
    from ..artifacts.stack_launch import with_stack

    scan = read_paths([paths] if isinstance(paths, str | Path) else list(paths), env=env, options=catalog.option_list)
    # a stack's worker (python -m dynamo.vllm): its own options known, its engine release from its runtime image
    invs = [with_stack(inv, catalog.stack_release, catalog.option_list) for inv in scan.invocations]
    return scan.model_copy(update={"invocations": invs}) if invs != scan.invocations else scan


