"""What runs on a Ray worker: one attempt through :func:`pi_host.run_batch_task`.

The attempt, the run and the result cross the cluster as JSON-ready dicts, not pickled
models, so a worker only needs a pi-host that reads the same fields.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from pi_host import BatchAttempt, BatchRun, run_batch_task

__all__ = ["run_attempt"]

_OWN_PYTHON = ("-m", "pi_host")

# Started in front of the task's command on Linux: asks for SIGTERM when the Ray worker dies
# (PR_SET_PDEATHSIG, which survives the exec), gives up if the worker is already gone, then
# becomes the command (same pid, same process group). Plain stdlib, no site: a few ms.
_GUARD = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(1)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def run_attempt(attempt: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """Run one attempt on this worker and return its :class:`pi_host.BatchResult` as JSON.

    A ``python -m pi_host`` command (what ``pi-host batch`` sends) is started with this
    worker's own Python: the coordinator's interpreter path means nothing on another node.
    Ray's ``cancel`` interrupts the call with ``KeyboardInterrupt``; ``run_batch_task`` then
    stops its ``pi-host`` process (SIGTERM, then SIGKILL to its group) before re-raising.
    A worker that dies without that (killed, out of memory) takes its ``pi-host`` with it: on
    Linux the process gets SIGTERM when the worker dies, and shuts its tools down.
    """
    batch_run = BatchRun.model_validate(run)
    command = tuple(batch_run.command)
    if command[1:] == _OWN_PYTHON:
        command = (sys.executable, *_OWN_PYTHON)
    if sys.platform == "linux":
        command = (sys.executable, "-I", "-S", "-c", _GUARD, str(os.getpid()), *command)
    batch_run = batch_run.model_copy(update={"command": command})
    result = run_batch_task(BatchAttempt.model_validate(attempt), batch_run)
    return result.model_dump(mode="json")
