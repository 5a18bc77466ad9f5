"""What runs on a Ray worker: one attempt through :func:`pi_host.run_batch_task`.

The attempt, the run and the result cross the cluster as JSON-ready dicts, not pickled
models, so a worker only needs a pi-host that reads the same fields.
"""

from __future__ import annotations

import sys
from typing import Any

from pi_host import BatchAttempt, BatchRun, run_batch_task

__all__ = ["run_attempt"]

_OWN_PYTHON = ("-m", "pi_host")


def run_attempt(attempt: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """Run one attempt on this worker and return its :class:`pi_host.BatchResult` as JSON.

    A ``python -m pi_host`` command (what ``pi-host batch`` sends) is started with this
    worker's own Python: the coordinator's interpreter path means nothing on another node.
    Ray's ``cancel`` interrupts the call with ``KeyboardInterrupt``; ``run_batch_task`` then
    stops its ``pi-host`` process (SIGTERM, then SIGKILL to its group) before re-raising.
    """
    batch_run = BatchRun.model_validate(run)
    if tuple(batch_run.command[1:]) == _OWN_PYTHON:
        batch_run = batch_run.model_copy(update={"command": (sys.executable, *_OWN_PYTHON)})
    result = run_batch_task(BatchAttempt.model_validate(attempt), batch_run)
    return result.model_dump(mode="json")
