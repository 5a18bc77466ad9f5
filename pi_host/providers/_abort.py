"""AbortSignal: one run's abort switch, turned into anyio cancellation where work is awaited."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

import anyio

__all__ = ["AbortSignal", "AbortedError"]


class AbortedError(Exception):
    """Raised by :meth:`AbortSignal.raise_if_aborted` once the signal is aborted."""


class AbortSignal:
    """Shared by everything a run awaits: provider streams, hooks and tools.

    ``abort()`` flips :attr:`aborted` and cancels every scope opened with :meth:`scope`, so an
    awaiting provider stream, hook or subprocess wait stops at once through anyio cancellation.
    Code that does not await can poll :attr:`aborted`.
    """

    __slots__ = ("_event", "_listeners", "_reason", "_scopes", "aborted")

    def __init__(self) -> None:
        self.aborted = False
        self._reason: str | None = None
        self._scopes: set[anyio.CancelScope] = set()
        self._listeners: list[Callable[[], None]] = []
        self._event: anyio.Event | None = None

    @property
    def reason(self) -> str | None:
        """The reason given to :meth:`abort`, if any."""
        return self._reason

    def abort(self, reason: str | None = None) -> None:
        """Abort: cancel every open scope and wake :meth:`wait`. Idempotent."""
        if self.aborted:
            return
        self.aborted = True
        self._reason = reason
        for scope in list(self._scopes):
            scope.cancel()
        for listener in list(self._listeners):
            listener()
        if self._event is not None:
            self._event.set()

    async def wait(self) -> None:
        """Return once the signal is aborted."""
        if self.aborted:
            return
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()

    def raise_if_aborted(self) -> None:
        """:raises AbortedError: if the signal is aborted."""
        if self.aborted:
            raise AbortedError(self._reason or "Operation aborted")

    def on_abort(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` on abort (at once if already aborted); returns its remover.

        For waits that are no anyio cancel scope, such as the lean HTTP client's body reads,
        which wake themselves instead of paying for a scope per read.
        """
        if self.aborted:
            listener()
            return _nothing
        listeners = self._listeners
        listeners.append(listener)

        def remove() -> None:
            if listener in listeners:
                listeners.remove(listener)

        return remove

    def scope(self) -> _SignalScope:
        """Open a cancel scope that :meth:`abort` cancels (at once if already aborted).

        Check ``scope.cancelled_caught`` (or :attr:`aborted`) after the block to tell an abort
        from normal completion.
        """
        return _SignalScope(self)


def _nothing() -> None:
    return None


class _SignalScope:
    """``with signal.scope() as cancel_scope:`` — a class rather than a generator context
    manager because the agent loop opens several per turn and this halves their cost."""

    __slots__ = ("_cancel_scope", "_signal")

    def __init__(self, signal: AbortSignal) -> None:
        self._signal = signal
        self._cancel_scope = anyio.CancelScope()

    def __enter__(self) -> anyio.CancelScope:
        scope = self._cancel_scope.__enter__()
        if self._signal.aborted:
            scope.cancel()
        self._signal._scopes.add(scope)
        return scope

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        self._signal._scopes.discard(self._cancel_scope)
        return bool(self._cancel_scope.__exit__(exc_type, exc, tb))
