"""Per-file serialisation of mutations.

Tools run in parallel by default, so two ``edit`` calls on one file in the same batch would
each read the original and the second write would drop the first one's change (pi#2327).
Every mutation takes the file's lock first; different files still run in parallel.

One process may run sessions in several event loops, each in a thread of its own (a host
embedding sessions), and their mutations of one file must take turns too. One anyio lock per
file cannot do that: it is not thread-safe, and its holder cannot wake a waiter in another
loop (two loops contending for one deadlocked). So a file's lock has two levels:

- in each event loop, an anyio lock queues that loop's mutations of the file, first come,
  first served;
- in the process, a ``threading.Lock`` that the head of each loop's queue then takes: at once
  when no other loop wants it (the common case costs no thread hop), else by waiting for it
  in a worker thread, so the loop runs on meanwhile.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

__all__ = ["file_mutation_lock", "with_file_mutation_queue"]

T = TypeVar("T")


class _Slot:
    """One event loop's queue for one file: only that loop touches it."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.users = 0


class _Shared:
    """The process's lock of one file; ``users``: the loops at the head of their queue for it."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0


class _Wait:
    """One wait for a shared lock in a worker thread; read and written under ``_guard``.

    :ivar taken: the thread has the lock and hands it to the waiting task.
    :ivar abandoned: the task was cancelled and has gone; the thread gives the lock back.
    """

    __slots__ = ("abandoned", "taken")

    def __init__(self) -> None:
        self.abandoned = False
        self.taken = False


_slots: RunVar[dict[str, _Slot]] = RunVar("pi_tools_fs.mutation_slots")
_shared: dict[str, _Shared] = {}
# Guards `_shared`, the users counts of its entries and every `_Wait`; held only for a few
# reads and writes (never while waiting), so taking it on a loop's thread does not stall it.
_guard = threading.Lock()


def _queue_key(path: str) -> str:
    # realpath (non-strict) resolves every existing component, so a file that does not exist
    # yet gets the same key before and after it is created, and two spellings of one file
    # (symlink, ``..``) share a lock.
    return os.path.realpath(os.path.abspath(path))


def _take(lock: threading.Lock, wait: _Wait) -> None:
    """Block until ``lock`` is taken (in a worker thread); give it back at once if the waiting
    task has gone, so a cancelled wait never leaves the file locked."""
    lock.acquire()
    with _guard:
        keep = not wait.abandoned
        wait.taken = keep
    if not keep:
        lock.release()


async def _wait_for(shared: _Shared) -> None:
    """Take ``shared.lock``, waiting in a worker thread; cancellation leaves it free (or with
    whoever else took it)."""
    wait = _Wait()
    try:
        # Abandoned on cancellation, so a cancelled task leaves at once, not when the holder
        # (another loop's edit) is done; the thread gives the lock back when it gets it.
        # A limiter of its own: waits must not take the default limiter's tokens, which the
        # holders' file work needs (loops waiting for each other's files could otherwise
        # starve each other of threads).
        await anyio.to_thread.run_sync(
            _take, shared.lock, wait, abandon_on_cancel=True, limiter=anyio.CapacityLimiter(1)
        )
    except BaseException:
        with _guard:
            wait.abandoned = True
            taken = wait.taken
        if taken:
            # The thread got the lock but the cancellation reached the task first.
            shared.lock.release()
        raise


@asynccontextmanager
async def file_mutation_lock(path: str) -> AsyncIterator[None]:
    """Hold the mutation lock of ``path``, in any event loop or thread of the process.

    Waiters of one event loop are served first come, first served; loops take turns in the
    order the operating system's lock gives.
    """
    key = _queue_key(path)
    slots = _slots.get(None)
    if slots is None:
        slots = {}
        _slots.set(slots)
    slot = slots.get(key)
    if slot is None:
        slot = slots[key] = _Slot()
    slot.users += 1
    try:
        async with slot.lock:
            with _guard:
                shared = _shared.get(key)
                if shared is None:
                    shared = _shared[key] = _Shared()
                shared.users += 1
                alone = shared.users == 1
            try:
                # At once only when no other loop wants the file (one waiting in a thread is
                # not overtaken): the common case, with no thread hop.
                if not (alone and shared.lock.acquire(blocking=False)):
                    await _wait_for(shared)
                try:
                    yield
                finally:
                    # From the loop's thread even when a worker thread took it: a plain
                    # threading.Lock (unlike an RLock) has no owner thread.
                    shared.lock.release()
            finally:
                with _guard:
                    shared.users -= 1
                    if shared.users == 0:
                        del _shared[key]
    finally:
        slot.users -= 1
        if slot.users == 0 and slots.get(key) is slot:
            del slots[key]


async def with_file_mutation_queue(path: str, fn: Callable[[], Awaitable[T]]) -> T:
    """Run ``fn`` once every earlier mutation of ``path`` has finished."""
    async with file_mutation_lock(path):
        return await fn()
