"""pi-batch-ray: ``pi-host batch --executor ray`` runs each task as a Ray task.

``pi-host batch TASKS.jsonl --out DIR --executor ray`` starts a local Ray instance for the
run; ``--address HOST:PORT`` (or ``ray://HOST:10001``, or ``RAY_ADDRESS``) joins a cluster.
Each attempt is one Ray task running :func:`pi_host.run_batch_task` on a worker, so the
worker nodes need pi-host, this plugin and the plugins the tasks use installed, and the
batch's paths (``--out``, the tasks' folders) or a shared session store (see the README).

The entry point imports this package on every pi-host start, so Ray (most of a second and
about 80 MB to import) is loaded only when the ``ray`` executor is chosen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._plugin import pi_batch_executor

if TYPE_CHECKING:
    from ._executor import RayExecutor

__all__ = ["RayExecutor", "pi_batch_executor"]


def __getattr__(name: str) -> Any:
    if name == "RayExecutor":
        from ._executor import RayExecutor

        return RayExecutor
    raise AttributeError(f"module 'pi_batch_ray' has no attribute {name!r}")
