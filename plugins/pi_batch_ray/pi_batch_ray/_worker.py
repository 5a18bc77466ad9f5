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
    A worker that dies without that (killed, out of memory) takes its ``pi-host`` with it:
    ``run_batch_task`` gives the process a lifeline pipe whose write end this worker holds,
    and the process shuts down (its tools too) as on SIGTERM when the worker is gone.
    """
    batch_run = BatchRun.model_validate(run)
    command = tuple(batch_run.command)
    if command[1:] == _OWN_PYTHON:
        command = (sys.executable, *_OWN_PYTHON)
    batch_run = batch_run.model_copy(update={"command": command})
    result = run_batch_task(BatchAttempt.model_validate(attempt), batch_run)
    return result.model_dump(mode="json")
