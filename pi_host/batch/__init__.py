"""Batch runs: many tasks, each its own ``pi-host --mode json -p`` agent, behind executors.

``pi-host batch TASKS.jsonl --out DIR`` reads :class:`BatchTask` lines, runs each attempt with
:func:`run_batch_task` through a :class:`BatchExecutor` (the built-in local pool, or one a
plugin returns from ``pi_batch_executor``), and appends a :class:`BatchResult` line per
finished attempt to ``DIR/results.jsonl``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_host import _lazy

if TYPE_CHECKING:
    from ._executor import BatchExecutor, BatchExecutorError
    from ._local import LocalExecutor
    from ._models import BatchAttempt, BatchResult, BatchRun, BatchTask
    from ._task import run_batch_task

__all__ = [
    "BatchAttempt",
    "BatchExecutor",
    "BatchExecutorError",
    "BatchResult",
    "BatchRun",
    "BatchTask",
    "LocalExecutor",
    "run_batch_task",
]

_EXPORTS = {
    "BatchAttempt": "_models",
    "BatchExecutor": "_executor",
    "BatchExecutorError": "_executor",
    "BatchResult": "_models",
    "BatchRun": "_models",
    "BatchTask": "_models",
    "LocalExecutor": "_local",
    "run_batch_task": "_task",
}

__getattr__, __dir__ = _lazy.lazy_exports(__name__, _EXPORTS, __all__)
