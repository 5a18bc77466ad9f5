"""Hook timeouts: a hung hook is named, bounded and abortable, and the fast path stays cheap.

Two kinds of hang, two mechanisms:

- an ``async def`` implementation that never returns. A timer (or cancel scope) per call
  would cost ten times the dispatch itself, so the loop only notes which implementations are
  awaiting (:meth:`HookGuard.enter`) and a watchdog thread times them. One past the timeout,
  or still awaiting when :meth:`HookGuard.abort` runs (RPC ``abort``, Escape), has its task
  cancelled at the await it waits on (asyncio's ``Task.cancel``, taken back with
  ``Task.uncancel`` once it arrives), so the cancel scopes the hook opened unwind in order;
  it is reported as :class:`HookTimeout` or :class:`HookAborted`, that plugin's failure in
  that hook. The hooks that fire once per streamed delta (``pi_message_update``,
  ``pi_tool_execution_update``) are not bounded; the run's own abort still cancels them.
- a blocking ``def`` implementation, which holds the event loop (or the thread of a
  synchronous call). Python has no clean way to stop code running in a thread, and running
  ``def`` hooks in worker threads would hand plugins a ``ctx`` that is not safe to use
  there; so such a hook runs on, as pluggy and pytest run theirs. A watchdog thread, started
  on the first synchronous implementation, samples what runs (two attribute stores per call,
  no timer, no thread switch). Past the timeout it names the plugin and hook in a warning,
  and when the hook returns its result is ignored and it is reported as
  :class:`HookTimeout` (``blocked=True``), that plugin's failure in that hook, as an
  ``async def`` past the limit is. Ctrl+C while such a hook blocks raises
  :class:`HookAborted` in it at once (the SIGINT handler runs in that thread, see
  :func:`~._containment.watch_user_interrupts`), then aborts as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Iterator
from typing import Any

__all__ = [
    "DEFAULT_HOOK_TIMEOUT",
    "HOOK_TIMEOUT_ENV",
    "HookAborted",
    "HookGuard",
    "HookTimeout",
    "parse_timeout",
]

logger = logging.getLogger("pi_host.plugin")

HOOK_TIMEOUT_ENV = "PI_HOST_HOOK_TIMEOUT"
"""Seconds one hook implementation may take (``0`` or ``off``: no limit); beats the setting."""

DEFAULT_HOOK_TIMEOUT = 60.0
"""The limit when neither ``PI_HOST_HOOK_TIMEOUT`` nor ``plugins.hookTimeout`` says otherwise."""


class HookTimeout(Exception):
    """A hook implementation ran past the hook timeout: stopped (``async def``), or, for a
    blocking ``def`` (``blocked``), its result ignored once it returned."""

    def __init__(self, plugin: str, hook: str, seconds: float, *, blocked: bool = False) -> None:
        if blocked:
            what = (
                "; it blocked pi-host until it returned and its result was ignored (a def hook "
                "cannot be stopped: do blocking work in async def with anyio.to_thread.run_sync)"
            )
        else:
            what = " and was stopped"
        super().__init__(
            f'plugin "{plugin}" did not finish {hook} within {seconds:g} s{what} '
            f"(the limit is plugins.hookTimeout in settings.json or {HOOK_TIMEOUT_ENV})"
        )
        self.plugin, self.hook, self.seconds, self.blocked = plugin, hook, seconds, blocked


class HookAborted(Exception):
    """A hook implementation was still running when the user aborted."""

    def __init__(self, plugin: str, hook: str) -> None:
        super().__init__(f'plugin "{plugin}" was still running {hook} when the run was aborted')
        self.plugin, self.hook = plugin, hook


def parse_timeout(value: object, *, origin: str) -> float | None:
    """Seconds from a setting or variable: a positive number; ``0``/``off``/``none`` is no limit.

    :raises ValueError: naming ``origin`` for anything else.
    """
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("0", "off", "none", "no", "false"):
            return None
        try:
            value = float(text)
        except ValueError:
            raise ValueError(
                f"{origin} must be a number of seconds or 0 for no limit, not {value!r}"
            ) from None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"{origin} must be a number of seconds or 0 for no limit, not {value!r}")
    return None if value == 0 else float(value)


def timeout_from_environ(default: float | None = DEFAULT_HOOK_TIMEOUT) -> float | None:
    """``PI_HOST_HOOK_TIMEOUT`` when set (a bad value is reported and ignored), else ``default``."""
    text = os.environ.get(HOOK_TIMEOUT_ENV)
    if text is None or not text.strip():
        return default
    try:
        return parse_timeout(text, origin=HOOK_TIMEOUT_ENV)
    except ValueError as exc:
        logger.warning("%s; using %s s", exc, default)
        return default


class HookGuard:
    """The timeout, the implementations in flight and the watchdog of one dispatcher.

    The loop side only notes what runs (a few attribute stores and a set insertion per
    call); the watchdog thread does the timing, so no timer is armed per call.

    :ivar timeout: seconds per implementation, ``None`` for no limit.
    """

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        # What the loop thread runs now: (plugin, hook) of a synchronous implementation, and
        # a counter that tells one call from the next. Written on the loop, read by the watchdog.
        self.current: tuple[str, str] | None = None
        self.calls = 0
        # The serial of the synchronous call the watchdog found past the timeout (written by
        # the watchdog, read by call_blocking once the call returns).
        self.overdue = -1
        self.watching = False
        # Async implementations awaiting now: (label, task, serial) each.
        self.inflight: set[tuple[tuple[str, str], Any, int]] = set()
        # Those the guard cancelled, with why: "timeout" or "abort".
        self.claims: dict[tuple[tuple[str, str], Any, int], str] = {}
        # Tasks waiting for the user (a plugin's dialog): their time is not the hook's.
        # Replaced whole, never changed in place: the watchdog thread reads it.
        self.asking: frozenset[Any] = frozenset()
        self.async_ok: bool | None = None
        self._loop: Any = None
        self._loop_thread = 0
        self._remove_interrupt_hook: Any = None
        # The watchdog's own view, only touched on its thread.
        self._clock = 0.0
        self._waiting: dict[tuple[tuple[str, str], Any, int], float] = {}
        self._seen: tuple[int, tuple[str, str] | None] = (-1, None)
        self._blocked_for = 0.0

    # -- async implementations ----------------------------------------------------------------

    def enter(self, label: tuple[str, str]) -> tuple[tuple[str, str], Any, int] | None:
        """Note an async implementation about to be awaited; ``None`` where it cannot be
        stopped from outside (an event loop other than asyncio's).

        The dispatcher inlines the same three lines once the guard is watching; this is the
        first call's path (and the one without a timeout, which only abort can end).
        """
        if self.async_ok is None:
            self._detect_loop()
        if not self.async_ok:
            return None
        if not self.watching and self.timeout is not None:
            self.start_watchdog()
        self.calls += 1
        entry = (label, asyncio.current_task(), self.calls)
        self.inflight.add(entry)
        return entry

    @contextlib.contextmanager
    def waiting_for_user(self) -> Iterator[None]:
        """``with guard.waiting_for_user():`` around a dialog a hook opened: the time the user
        takes does not count towards the hook's timeout, which starts afresh after it (the
        user's abort still ends the hook)."""
        try:
            task = asyncio.current_task()
        except RuntimeError:
            task = None
        if task is None or task in self.asking:
            yield
            return
        self.asking = self.asking | {task}
        try:
            yield
        finally:
            self.asking = self.asking - {task}

    def _detect_loop(self) -> None:
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self.async_ok = False  # trio, or no loop: outer cancellation still works
        else:
            self.async_ok = True

    def stopped(self, entry: tuple[tuple[str, str], Any, int] | None) -> Exception | None:
        """The failure to report when the guard itself cancelled ``entry`` (the cancellation
        is taken back from its task), else ``None``: the cancellation is someone else's."""
        if entry is None or entry not in self.claims:
            return None
        why = self.claims.pop(entry)
        entry[1].uncancel()
        plugin, hook = entry[0]
        return HookAborted(plugin, hook) if why == "abort" else HookTimeout(plugin, hook, self.timeout or 0.0)

    def release(self, entry: tuple[tuple[str, str], Any, int]) -> None:
        """``entry`` returned although the guard cancelled it (it swallowed the cancellation)."""
        if self.claims.pop(entry, None) is not None:
            entry[1].uncancel()

    def _cancel(self, entry: tuple[tuple[str, str], Any, int], why: str) -> bool:
        # On the loop thread.
        if entry not in self.inflight or entry in self.claims:
            return False
        self.claims[entry] = why
        entry[1].cancel(f"pi-host stopped {entry[0][0]} in {entry[0][1]}: {why}")
        return True

    def abort(self) -> int:
        """End every implementation awaiting now (each fails with :class:`HookAborted`).

        :returns: how many were running.
        """
        return sum(self._cancel(entry, "abort") for entry in tuple(self.inflight))

    # -- the watchdog ---------------------------------------------------------------------------

    def start_watchdog(self) -> None:
        """Join the watchdog (once, from the loop thread); one thread serves every guard."""
        if self.watching or self.timeout is None:
            return
        from ._containment import on_user_interrupt

        self.watching = True
        self._loop_thread = threading.get_ident()
        if self._loop is None:
            with contextlib.suppress(RuntimeError):
                self._loop = asyncio.get_running_loop()
        me = weakref.ref(self)

        def interrupted() -> None:
            guard = me()
            if guard is not None:
                guard._on_user_interrupt()

        self._remove_interrupt_hook = on_user_interrupt(interrupted)
        _watch(self)

    def close(self) -> None:
        """Leave the watchdog (the guard also leaves when it is garbage)."""
        _watched.discard(self)
        if self._remove_interrupt_hook is not None:
            self._remove_interrupt_hook()
            self._remove_interrupt_hook = None

    def __del__(self) -> None:
        remove = self._remove_interrupt_hook
        if remove is not None:
            remove()

    def _on_user_interrupt(self) -> None:
        # In the main thread, inside the SIGINT handler: when a def hook holds the loop, stop
        # it now (the raise lands in the hook's frame); the run is aborted as usual after.
        current = self.current
        if current is not None and threading.get_ident() == self._loop_thread:
            raise HookAborted(*current)

    def _interval(self) -> float:
        timeout = self.timeout
        return 1.0 if timeout is None else min(max(timeout / 8, 0.02), 1.0)

    def _tick(self, elapsed: float) -> None:
        """One look at what runs, ``elapsed`` seconds after the last (on the watchdog thread)."""
        self._clock += elapsed
        timeout = self.timeout
        if timeout is None:
            self._waiting.clear()
            return
        # Async implementations: how long each has been seen awaiting.
        clock, waiting, asking = self._clock, self._waiting, self.asking
        self._waiting = waiting = {
            entry: clock if entry[1] in asking else waiting.get(entry, clock)
            for entry in tuple(self.inflight)
        }
        for entry, since in waiting.items():
            if clock - since >= timeout and self._loop is not None:
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    self._loop.call_soon_threadsafe(self._cancel, entry, "timeout")
        # A synchronous implementation holding the loop.
        sample = (self.calls, self.current)
        if sample[1] is None or sample != self._seen:
            self._seen, self._blocked_for = sample, 0.0
            return
        self._blocked_for += elapsed
        if self._blocked_for < timeout or sample[0] == self.overdue:
            return  # within the limit, or named already
        plugin, hook = sample[1]
        logger.warning(
            'plugin "%s" has blocked pi-host for %.1f s in %s (a def hook runs on the event '
            "loop and cannot be stopped; do blocking work in async def with anyio.to_thread); "
            "its result will be ignored",
            plugin,
            self._blocked_for,
            hook,
        )
        self.overdue = sample[0]

    def check_overdue(self, serial: int, label: tuple[str, str]) -> None:
        """After synchronous call ``serial`` returned: :raises HookTimeout: if the watchdog
        found it past the timeout."""
        if self.overdue == serial:
            self.overdue = -1
            raise HookTimeout(*label, self.timeout or 0.0, blocked=True)


_watched: weakref.WeakSet[HookGuard] = weakref.WeakSet()
_watchdog_lock = threading.Lock()
_watchdog_thread: threading.Thread | None = None


def _watch(guard: HookGuard) -> None:
    """Add ``guard`` to the watched ones, starting the watchdog thread if none runs."""
    global _watchdog_thread
    with _watchdog_lock:
        _watched.add(guard)
        if _watchdog_thread is None or not _watchdog_thread.is_alive():
            _watchdog_thread = threading.Thread(target=_watchdog, name="pi-host hook watchdog", daemon=True)
            _watchdog_thread.start()


def _watchdog() -> None:
    """The one watchdog thread: ticks every guard; ends when none is left."""
    global _watchdog_thread
    pause = threading.Event()
    while True:
        with _watchdog_lock:
            guards = list(_watched)
            if not guards:
                _watchdog_thread = None
                return
        interval = min(guard._interval() for guard in guards)
        del guards  # hold no guard while waiting: a dispatcher dropped meanwhile is collected
        pause.wait(interval)
        for guard in list(_watched):
            guard._tick(interval)
