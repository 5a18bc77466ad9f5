"""The built-in ``local`` executor: a pool of at most N ``pi-host`` subprocesses on this machine."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Sequence
from functools import partial
from typing import TYPE_CHECKING

from ._executor import BatchExecutor
from ._task import run_batch_task

if TYPE_CHECKING:
    from ._models import BatchAttempt, BatchResult, BatchRun

__all__ = ["LocalExecutor"]


class LocalExecutor(BatchExecutor):
    """Runs each attempt with :func:`pi_host.run_batch_task` in a worker thread, at most
    ``concurrency`` at once; every attempt is its own ``pi-host`` process.

    Closing the iterator sets the attempts' cancel event: each running process gets SIGTERM,
    then SIGKILL for its group (see :func:`pi_host.run_batch_task`), and the iterator's
    ``aclose()`` returns once every one of them has exited.
    """

    async def map(
        self, attempts: Sequence[BatchAttempt], run: BatchRun, *, concurrency: int
    ) -> AsyncIterator[BatchResult]:
        import anyio
        from anyio.abc import ObjectSendStream

        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        cancel = threading.Event()
        limiter = anyio.CapacityLimiter(concurrency)
        send, receive = anyio.create_memory_object_stream["BatchResult"](len(attempts) or 1)

        async def one(attempt: BatchAttempt, results: ObjectSendStream[BatchResult]) -> None:
            async with results:
                # The thread is not abandoned on cancellation: it returns soon after `cancel`
                # is set, once its process is gone, so no process outlives the pool.
                result = await anyio.to_thread.run_sync(
                    partial(run_batch_task, attempt, run, cancel=cancel), limiter=limiter
                )
                if not cancel.is_set():
                    await results.send(result)

        async with anyio.create_task_group() as group:
            try:
                async with send:
                    for attempt in attempts:
                        group.start_soon(one, attempt, send.clone())
                async with receive:
                    async for result in receive:
                        yield result
            finally:
                cancel.set()
                group.cancel_scope.cancel()
