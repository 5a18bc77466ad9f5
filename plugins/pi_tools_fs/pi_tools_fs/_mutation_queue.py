"""Per-file serialisation of mutations.

Tools run in parallel by default, so two ``edit`` calls on one file in the same batch would
each read the original and the second write would drop the first one's change (pi#2327).
Every mutation takes the file's lock first; different files still run in parallel.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

import anyio

__all__ = ["file_mutation_lock", "with_file_mutation_queue"]

T = TypeVar("T")


class _Slot:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.users = 0


_slots: dict[str, _Slot] = {}


def _queue_key(path: str) -> str:
    # realpath (non-strict) resolves every existing component, so a file that does not exist
    # yet gets the same key before and after it is created, and two spellings of one file
    # (symlink, ``..``) share a lock.
    return os.path.realpath(os.path.abspath(path))


@asynccontextmanager
async def file_mutation_lock(path: str) -> AsyncIterator[None]:
    """Hold the mutation lock of ``path``; waiters are served first come, first served."""
    key = _queue_key(path)
    slot = _slots.get(key)
    if slot is None:
        slot = _slots[key] = _Slot()
    slot.users += 1
    try:
        async with slot.lock:
            yield
    finally:
        slot.users -= 1
        if slot.users == 0 and _slots.get(key) is slot:
            del _slots[key]


async def with_file_mutation_queue(path: str, fn: Callable[[], Awaitable[T]]) -> T:
    """Run ``fn`` once every earlier mutation of ``path`` has finished."""
    async with file_mutation_lock(path):
        return await fn()
