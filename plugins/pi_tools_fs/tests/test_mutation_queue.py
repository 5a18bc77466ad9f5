"""The per-file mutation queue across event loops and threads: sessions of one process may each
run in a thread with a loop of its own, and their mutations of one file still take turns."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from pi_tools_fs import _mutation_queue, edit_tool, file_mutation_lock

from pi_host import AbortSignal, ToolCallContext

# Generous: a deadlock shows as a TimeoutError here; a correct run takes a fraction of a second.
LIMIT = 10


def _in_threads(*targets: Callable[[], object]) -> list[BaseException]:
    """Run each ``target`` in a thread of its own, all released at once; what they raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(targets))

    def run(target: Callable[[], object]) -> None:
        try:
            start.wait()
            target()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(target,)) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(LIMIT * 2)
        assert not thread.is_alive()
    return errors


async def _wait(event: threading.Event) -> None:
    """Wait for ``event`` (set by another thread) without blocking the loop."""
    with anyio.fail_after(LIMIT):
        await anyio.to_thread.run_sync(event.wait, abandon_on_cancel=True)


async def _edits(tmp_path: Path, loop: str, count: int) -> None:
    """``count`` edits of one shared file at once, each replacing a line of its own."""

    async def one(index: int) -> None:
        ctx = ToolCallContext(tool_call_id=f"{loop}{index}", signal=AbortSignal(), cwd=str(tmp_path))
        edits = [{"oldText": f"slot {loop}{index}\n", "newText": f"done {loop}{index}\n"}]
        await edit_tool.execute(edit_tool.validate_arguments({"path": "shared.txt", "edits": edits}), ctx)

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as group:
            for index in range(count):
                group.start_soon(one, index)


def test_edits_of_one_file_from_two_event_loops_all_land(tmp_path: Path) -> None:
    # The queue was one anyio lock per file for the whole process: a loop releasing it could
    # not wake the other loop's waiter (a TimeoutError here), and its bookkeeping raced.
    loops, count = ("a", "b"), 12
    path = tmp_path / "shared.txt"
    path.write_text("".join(f"slot {loop}{i}\n" for loop in loops for i in range(count)))
    errors = _in_threads(*(partial(anyio.run, _edits, tmp_path, loop, count) for loop in loops))
    assert errors == []
    assert path.read_text() == "".join(f"done {loop}{i}\n" for loop in loops for i in range(count))
    assert _mutation_queue._shared == {}


async def _increments(path: Path, count: int, order: list[int]) -> None:
    """``count`` read-modify-writes of a counter in ``path`` at once, yielding in between."""

    async def one(index: int) -> None:
        async with file_mutation_lock(str(path)):
            order.append(index)
            value = int(path.read_text())
            await anyio.lowlevel.checkpoint()
            await anyio.to_thread.run_sync(path.write_text, str(value + 1))

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as group:
            for index in range(count):
                group.start_soon(one, index)


def test_three_event_loops_take_turns_and_each_keeps_its_order(tmp_path: Path) -> None:
    path = tmp_path / "counter.txt"
    path.write_text("0")
    count = 30
    orders: list[list[int]] = [[], [], []]
    errors = _in_threads(*(partial(anyio.run, _increments, path, count, order) for order in orders))
    assert errors == []
    assert int(path.read_text()) == 3 * count
    # Within a loop, waiters are still served first come, first served.
    assert orders == [list(range(count))] * 3
    assert _mutation_queue._shared == {}


async def test_waiters_of_one_loop_are_served_in_arrival_order(tmp_path: Path) -> None:
    path = str(tmp_path / "f.txt")
    order: list[int] = []
    held, queued = anyio.Event(), anyio.Event()
    count = 10

    async def holder() -> None:
        async with file_mutation_lock(path):
            held.set()
            await queued.wait()

    async def waiter(index: int) -> None:
        if index == count - 1:
            queued.set()
        # No await before the lock: every waiter is queued by the time the holder wakes.
        async with file_mutation_lock(path):
            order.append(index)

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as group:
            group.start_soon(holder)
            await held.wait()
            for index in range(count):
                group.start_soon(waiter, index)
    assert order == list(range(count))


# -- cancellation of a wait for a lock another loop holds ------------------------------------


class _OtherLoop:
    """Another event loop, in a thread of its own, that holds ``path``'s lock until released."""

    def __init__(self, path: str) -> None:
        self.held, self.release = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=anyio.run, args=(self._hold, path))

    async def _hold(self, path: str) -> None:
        async with file_mutation_lock(path):
            self.held.set()
            await _wait(self.release)

    async def __aenter__(self) -> _OtherLoop:
        self.thread.start()
        await _wait(self.held)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.release.set()
        await anyio.to_thread.run_sync(self.thread.join, LIMIT)
        assert not self.thread.is_alive()


class _Spy:
    """Wraps the worker thread's wait for a lock: ``started`` is set before it waits, ``after``
    runs once it has taken the lock (or given it back), ``locks`` are the locks it waited for."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, after: Callable[[], object]) -> None:
        self.started = threading.Event()
        self.locks: list[threading.Lock] = []
        original = _mutation_queue._take

        def take(lock: threading.Lock, wait: Any) -> None:
            self.locks.append(lock)
            self.started.set()
            original(lock, wait)
            after()

        monkeypatch.setattr(_mutation_queue, "_take", take)

    def assert_free(self) -> None:
        """The lock waited for is free (an entry no longer in the table can be held yet)."""
        [lock] = self.locks
        assert not lock.locked()


async def _hold_once(path: str) -> None:
    with anyio.fail_after(LIMIT):
        async with file_mutation_lock(path):
            pass


async def _assert_usable(path: str) -> None:
    """The lock of ``path`` can be taken by this loop and by another one."""
    await _hold_once(path)
    errors = await anyio.to_thread.run_sync(_in_threads, partial(anyio.run, _hold_once, path))
    assert errors == []


async def _cancelled_waiter(path: str, before_cancel: Callable[[], Awaitable[object]]) -> None:
    """Start a mutation of ``path``, await ``before_cancel``, then cancel the mutation: it never
    ran, and the cancellation took effect at once."""
    entered = False

    async def waiter() -> None:
        nonlocal entered
        async with file_mutation_lock(path):
            entered = True

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as group:
            group.start_soon(waiter)
            await before_cancel()
            group.cancel_scope.cancel()
    assert not entered


async def test_a_wait_cancelled_while_another_loop_holds_the_lock_leaves_it_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "f.txt")
    given_back = threading.Event()
    spy = _Spy(monkeypatch, given_back.set)
    async with _OtherLoop(path):
        await _cancelled_waiter(path, partial(_wait, spy.started))
    # The abandoned thread takes the lock once the other loop lets go, and gives it back.
    await _wait(given_back)
    spy.assert_free()
    await _assert_usable(path)
    assert _mutation_queue._shared == {}


async def test_a_wait_cancelled_as_its_thread_takes_the_lock_gives_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The thread has the lock but has not yet handed it to the task when the task is
    # cancelled: the task gives it back itself.
    path = str(tmp_path / "f.txt")
    taken, proceed = threading.Event(), threading.Event()

    def hold_thread() -> None:
        taken.set()
        proceed.wait(LIMIT)

    spy = _Spy(monkeypatch, hold_thread)
    try:
        async with _OtherLoop(path) as other:

            async def release_then_wait_for_the_thread() -> None:
                await _wait(spy.started)
                other.release.set()
                await _wait(taken)

            await _cancelled_waiter(path, release_then_wait_for_the_thread)
        # Free while the worker thread is still held up.
        spy.assert_free()
        await _assert_usable(path)
    finally:
        proceed.set()
    assert _mutation_queue._shared == {}
