"""The executor interface: how the attempts of a batch are spread over processes or machines."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from pi_host.errors import PiError

if TYPE_CHECKING:
    from ._models import BatchAttempt, BatchResult, BatchRun

__all__ = ["BatchExecutor", "BatchExecutorError"]


class BatchExecutorError(PiError):
    """An executor cannot be found, reached or started; the message names the remedy."""


class BatchExecutor(ABC):
    """Runs the attempts of a batch, each through :func:`pi_host.run_batch_task`.

    Return one from the ``pi_batch_executor`` hook. The coordinator (``pi-host batch``) calls
    :meth:`map` once per round of attempts (the first tries, then each round of retries) and
    :meth:`aclose` once at the end, also after Ctrl+C.
    """

    @abstractmethod
    def map(
        self, attempts: Sequence[BatchAttempt], run: BatchRun, *, concurrency: int
    ) -> AsyncIterator[BatchResult]:
        """Run every attempt, at most ``concurrency`` at once; yield results as they finish.

        Results come in any order, exactly one per attempt. An attempt that cannot be run
        (a worker lost, a remote error) is yielded as a failed result with
        ``infrastructure=True`` rather than raised, so the coordinator can retry it.
        Closing the iterator early (``aclose()``, Ctrl+C, cancellation) must stop all running
        work of this call (kill the subprocesses, cancel the remote tasks) before it returns.
        """

    async def aclose(self) -> None:  # noqa: B027 - optional: most executors hold nothing
        """Release what the executor holds (connections, a cluster it started)."""
