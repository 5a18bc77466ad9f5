"""Hook timeouts: a hung hook is named, bounded and abortable, and the fast path stays cheap.

Two kinds of hang, two mechanisms:

- an ``async def`` implementation that never returns: each one of a bounded hook runs in a
  cancel scope with a deadline (:meth:`HookGuard.bounded`); the timeout or
  :meth:`HookGuard.abort` (RPC ``abort``, Escape) ends it with :class:`HookTimeout` or
  :class:`HookAborted`, reported as that plugin's failure in that hook. The hooks that fire
  once per streamed delta (``pi_message_update``, ``pi_tool_execution_update``) are not
  bounded: a scope per delta would cost more than the dispatch; the run's own abort still
  cancels them.
- a blocking ``def`` implementation, which holds the event loop: nothing on the loop can
  stop it. A watchdog thread, started on the first synchronous implementation, samples what
  runs (two attribute stores per call, no timer, no thread switch). Past the timeout it
  names the plugin and hook in a warning and raises :class:`HookTimeout` inside the blocked
  code (CPython's ``PyThreadState_SetAsyncExc``: pure-Python code stops at once, a blocking
  system call when it returns). Ctrl+C while such a hook blocks raises :class:`HookAborted`
  in it at once (see :func:`~._containment.watch_user_interrupts`), then aborts as usual.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from collections.abc import Awaitable
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
    """A hook implementation ran past the hook timeout and was stopped."""

    def __init__(self, plugin: str, hook: str, seconds: float) -> None:
        super().__init__(
            f'plugin "{plugin}" did not finish {hook} within {seconds:g} s and was stopped '
            f"(the limit is plugins.hookTimeout in settings.json or {HOOK_TIMEOUT_ENV})"
        )
        self.plugin, self.hook, self.seconds = plugin, hook, seconds


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
    """The timeout, the in-flight async implementations and the watchdog of one dispatcher.

    :ivar timeout: seconds per implementation, ``None`` for no limit.
    """

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self._scopes: set[Any] = set()
        self._aborted: set[Any] = set()
        # What the loop thread runs now: (plugin, hook) of a synchronous implementation, and
        # a counter that tells one call from the next. Written on the loop, read by the watchdog.
        self.current: tuple[str, str] | None = None
        self.calls = 0
        self.watching = False
        self._watchdog: threading.Thread | None = None
        self._loop_thread = 0
        self._stop = threading.Event()
        self._remove_interrupt_hook: Any = None

    # -- async implementations ----------------------------------------------------------------

    async def bounded(self, plugin: str, hook: str, awaitable: Awaitable[Any]) -> Any:
        """Await an implementation under the timeout, abortable by :meth:`abort`."""
        import anyio

        timeout = self.timeout
        deadline = float("inf") if timeout is None else anyio.current_time() + timeout
        with anyio.CancelScope(deadline=deadline) as scope:
            self._scopes.add(scope)
            try:
                return await awaitable
            finally:
                self._scopes.discard(scope)
        if scope in self._aborted:
            self._aborted.discard(scope)
            raise HookAborted(plugin, hook)
        raise HookTimeout(plugin, hook, timeout or 0.0)

    def abort(self) -> int:
        """End every implementation awaiting now (each fails with :class:`HookAborted`).

        :returns: how many were running.
        """
        scopes = list(self._scopes)
        for scope in scopes:
            self._aborted.add(scope)
            scope.cancel()
        return len(scopes)

    # -- synchronous implementations ----------------------------------------------------------

    def start_watchdog(self) -> None:
        """Start watching synchronous implementations (once, from the loop thread)."""
        if self._watchdog is not None or self.timeout is None:
            return
        from ._containment import on_user_interrupt

        self.watching = True
        self._loop_thread = threading.get_ident()
        self._remove_interrupt_hook = on_user_interrupt(self._on_user_interrupt)
        self._watchdog = threading.Thread(target=self._watch, name="pi-host hook watchdog", daemon=True)
        self._watchdog.start()

    def close(self) -> None:
        self._stop.set()
        if self._remove_interrupt_hook is not None:
            self._remove_interrupt_hook()
            self._remove_interrupt_hook = None

    def _on_user_interrupt(self) -> None:
        # In the main thread, inside the SIGINT handler: when a def hook holds the loop, stop
        # it now (the raise lands in the hook's frame); the run is aborted as usual after.
        current = self.current
        if current is not None and threading.get_ident() == self._loop_thread:
            raise HookAborted(*current)

    def _watch(self) -> None:
        timeout = self.timeout
        assert timeout is not None
        interval = min(max(timeout / 8, 0.02), 1.0)
        seen: tuple[int, tuple[str, str] | None] = (-1, None)
        blocked_for = 0.0
        while not self._stop.wait(interval):
            sample = (self.calls, self.current)
            if sample[1] is None or sample != seen:
                seen, blocked_for = sample, 0.0
                continue
            blocked_for += interval
            if blocked_for < timeout:
                continue
            plugin, hook = sample[1]
            logger.warning(
                'plugin "%s" has blocked pi-host for %.1f s in %s (a def hook runs on the event '
                "loop; do blocking work in async def with anyio.to_thread); stopping it",
                plugin,
                blocked_for,
                hook,
            )
            # Checked again just before: the exception must land in the hook, not after it.
            if (self.calls, self.current) == seen:
                _raise_in_thread(self._loop_thread, plugin, hook, timeout)
            seen, blocked_for = (-1, None), 0.0


def _raise_in_thread(thread_id: int, plugin: str, hook: str, seconds: float) -> None:
    """Raise :class:`HookTimeout` in the thread (CPython's documented ``PyThreadState_SetAsyncExc``).

    The C API takes a type, not an instance; the details travel on a subclass made for it.
    """

    class _Stopped(HookTimeout):
        def __init__(self) -> None:
            super().__init__(plugin, hook, seconds)

    _Stopped.__name__ = _Stopped.__qualname__ = "HookTimeout"  # what reports show

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(_Stopped))
