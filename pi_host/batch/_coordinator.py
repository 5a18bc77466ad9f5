"""The coordinator of a batch: rounds of attempts through an executor, retries, the results log."""

from __future__ import annotations

import glob
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio

from ._models import BatchAttempt, BatchResult, BatchRun, BatchTask
from ._task import attempt_file_stem

if TYPE_CHECKING:
    from ._executor import BatchExecutor
    from ._files import ResultsLog

__all__ = ["BatchOutcome", "Progress", "run_batch"]


class Progress(Protocol):
    """What the coordinator reports while it runs (a progress bar, plain lines, nothing)."""

    def started(self, attempts: int) -> None:
        """``attempts`` more attempts were handed to the executor."""

    def finished(self, result: BatchResult, *, retrying: bool) -> None:
        """An attempt finished; ``retrying``: it failed and another attempt follows."""


@dataclass
class BatchOutcome:
    """The last result of every task this run ran, in the tasks file's order."""

    results: list[BatchResult] = field(default_factory=list)

    @property
    def failed(self) -> list[BatchResult]:
        return [result for result in self.results if result.status != "ok"]

    @property
    def cost(self) -> float:
        return sum(result.cost for result in self.results)


async def run_batch(
    tasks: Sequence[BatchTask],
    run: BatchRun,
    executor: BatchExecutor,
    log: ResultsLog,
    *,
    concurrency: int,
    retries: int,
    progress: Progress,
) -> BatchOutcome:
    """Run ``tasks`` (those to run this time) to a final result each.

    A round hands every pending attempt to ``executor.map``; each result is appended to
    ``log`` as it arrives. A failed result with ``infrastructure=True`` is tried again in the
    next round while the task has retries left; any other result is the task's last. An
    attempt the executor never answered counts as an infrastructure failure. Cancellation
    (Ctrl+C) closes the executor's iterator, which stops the running attempts; what finished
    is already in ``log``.
    """
    by_id = {task.id: task for task in tasks}
    retries_left = dict.fromkeys(by_id, retries)
    final: dict[str, BatchResult] = {}
    events = Path(run.out_dir) / "events"
    pending = [
        BatchAttempt(task=task, attempt=max(log.attempts.get(task.id, 0), _logged(events, task.id)) + 1)
        for task in tasks
    ]
    while pending:
        waiting = {attempt.task.id: attempt for attempt in pending}
        progress.started(len(pending))
        next_round: list[BatchAttempt] = []

        def settle(result: BatchResult, next_round: list[BatchAttempt] = next_round) -> None:
            log.append(result)
            retry = result.status != "ok" and result.infrastructure and retries_left[result.id] > 0
            if retry:
                retries_left[result.id] -= 1
                next_round.append(BatchAttempt(task=by_id[result.id], attempt=result.attempt + 1))
            else:
                final[result.id] = result
            progress.finished(result, retrying=retry)

        results = executor.map(pending, run, concurrency=concurrency)
        try:
            async for result in results:
                if waiting.pop(result.id, None) is None:
                    continue  # not an attempt of this round: an executor's mistake, not a result
                settle(result)
        finally:
            # An async generator (the usual map) stops its work when closed: Ctrl+C.
            close = getattr(results, "aclose", None)
            if close is not None:
                with anyio.CancelScope(shield=True):
                    await close()
        for attempt in waiting.values():
            settle(_lost(attempt))
        pending = next_round
    return BatchOutcome([final[task.id] for task in tasks if task.id in final])


def _logged(events: Path, task_id: str) -> int:
    """The highest attempt with an event log: one stopped by Ctrl+C has no result line, and
    its log (and session) must not be overwritten by the rerun."""
    stem = attempt_file_stem(task_id, 0)[: -len(".0")] + "."
    highest = 0
    for path in events.glob(f"{glob.escape(stem)}*.jsonl"):
        number = path.name[len(stem) : -len(".jsonl")]
        if number.isdigit():
            highest = max(highest, int(number))
    return highest


def _lost(attempt: BatchAttempt) -> BatchResult:
    return BatchResult.failed(
        attempt, "the executor returned no result for this attempt", infrastructure=True
    )
