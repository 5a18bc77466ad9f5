"""A plugin's ``BaseException`` stays inside pi-host; the user's own Ctrl+C still aborts.

``sys.exit()``, ``raise KeyboardInterrupt`` or ``raise GeneratorExit`` in a plugin's import
or hook would otherwise end pi-host with no word about the plugin. Such a plugin is reported
like one that raised an ordinary exception. Two kinds of ``BaseException`` are never held:
cancellation (how aborts and timeouts reach awaiting code) and a ``KeyboardInterrupt`` that
a real SIGINT caused. The latter is told apart by :func:`watch_user_interrupts`, which counts
the SIGINTs the process receives while it is installed (around plugin imports and a run).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["PluginExit", "is_plugin_fault", "user_interrupted", "watch_user_interrupts"]

_received = 0
"""Real SIGINTs seen while :func:`watch_user_interrupts` was installed."""

_interrupt_hooks: list[Callable[[], None]] = []


class PluginExit(Exception):
    """A plugin raised a ``BaseException`` that would have ended pi-host; kept as its failure."""

    def __init__(self, error: BaseException) -> None:
        name, detail = type(error).__name__, str(error)
        if isinstance(error, SystemExit):
            text = f"{name} (sys.exit({error.code!r}))"
        else:
            text = f"{name}: {detail}" if detail else name
        super().__init__(text)
        self.error = error


def user_interrupted() -> bool:
    """Whether the user pressed Ctrl+C (a real SIGINT) while interrupts were watched."""
    return _received > 0


def is_plugin_fault(exc: BaseException) -> bool:
    """Whether ``exc``, raised by plugin code, is the plugin's failure to report (not to propagate).

    Every ``Exception`` is; so are ``SystemExit``, ``GeneratorExit`` and other
    ``BaseException`` subclasses, and a ``KeyboardInterrupt`` no real SIGINT caused.
    Cancellation is never a fault.
    """
    if isinstance(exc, Exception):
        return True
    if isinstance(exc, KeyboardInterrupt):
        return not user_interrupted()
    # asyncio is looked up, not imported: a process without it has no asyncio cancellation
    # (and `pi-host --help`, which loads plugins, need not import it).
    asyncio = sys.modules.get("asyncio")
    cancelled = asyncio is not None and isinstance(exc, asyncio.CancelledError)
    return not (cancelled or type(exc).__module__.startswith("trio"))


def as_exception(exc: BaseException) -> Exception:
    """``exc`` itself when it is an ``Exception``, else a :class:`PluginExit` wrapping it."""
    return exc if isinstance(exc, Exception) else PluginExit(exc)


def on_user_interrupt(callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback()`` in the main thread on each real SIGINT (while watched), after the
    previous handler ran (it may raise into the interrupted code); returns a remover."""
    _interrupt_hooks.append(callback)
    return lambda: _interrupt_hooks.remove(callback) if callback in _interrupt_hooks else None


@contextmanager
def watch_user_interrupts() -> Iterator[None]:
    """Count real SIGINTs while inside, then hand each to the handler that was installed.

    Only in the main thread (elsewhere Python delivers no signal); nested uses are harmless.
    The previous handler keeps its meaning: the default one raises ``KeyboardInterrupt``,
    asyncio's cancels the run.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: FrameType | None) -> None:
        global _received
        _received += 1
        # The previous handler first (asyncio's schedules the abort; the default one raises
        # KeyboardInterrupt), then the callbacks, which may raise into the interrupted code.
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt
        for callback in list(_interrupt_hooks):
            callback()

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is handler:
            signal.signal(signal.SIGINT, previous)
