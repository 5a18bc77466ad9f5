"""Where ``create_session`` does its blocking work: in worker threads, off the event loop.

Loading plugins (entry points, imports, registration hooks, ``pi_configure``), reading the
settings and resource files and opening the session (a store's connection, a long session
file read back) take from milliseconds to seconds. On the event loop that time is taken from
every other session sharing it: fifty sessions created at once held a 5 ms timer back by
half a second to three seconds. A host that ``create_session`` loads itself (or a child's,
from its parent's ``respawn``) is nobody else's until the session is returned, so all of that
can happen in a thread; a host the caller passes may be in use on the loop, and stays there.

Plugin work (loading a host, configuring it) runs one call at a time in the process: two
threads importing plugins that import each other can each find the other's module half
initialised, a project's ``.pi/plugins`` file is executed under one module name per
directory, and plugins were written for set-up calls that never overlap. The calls queue on
a capacity limiter of one per event loop, so waiting holds no worker thread (the default
limiter's threads stay free for file work); a process-wide lock covers loops in other threads.
Opening the session and reading files take no lock: stores and files of different sessions
are independent, and a database's connection time overlaps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

__all__ = ["in_thread", "plugin_work_in_thread"]

T = TypeVar("T")

_plugin_lock = threading.Lock()
_plugin_limiters: RunVar[anyio.CapacityLimiter] = RunVar("pi_host.runtime.plugin_work")


def _plugin_limiter() -> anyio.CapacityLimiter:
    """This event loop's limiter of plugin work (one call at a time)."""
    try:
        return _plugin_limiters.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(1)
        _plugin_limiters.set(limiter)
        return limiter


def _locked(work: Callable[[], T]) -> T:
    with _plugin_lock:
        return work()


async def plugin_work_in_thread(work: Callable[[], T]) -> T:
    """``work()`` in a worker thread, after the plugin work asked for before it in the process.

    For work that imports, registers or configures plugins. Cancellation waits for ``work``
    to return (a thread cannot be stopped), then raises.
    """
    return await anyio.to_thread.run_sync(_locked, work, limiter=_plugin_limiter())


async def in_thread(work: Callable[[], T]) -> T:
    """``work()`` in a worker thread of the default limiter (file and database work)."""
    return await anyio.to_thread.run_sync(work)
