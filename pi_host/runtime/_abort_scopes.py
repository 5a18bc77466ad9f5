"""Named abort scopes: plugin work that the session's abort and ``abort_<name>`` reach.

A plugin opens a scope around its own wait or request (``with ctx.abort_scope("myWait") as
signal:``). :meth:`AbortScopes.abort` aborts the open scopes of one name (RPC
``abort_<name>``), :meth:`AbortScopes.abort_all` every open scope (Escape, RPC ``abort``).

An abort can arrive just before the work it means starts: a client sends pi's ``abort_retry``
while the failed run is still ending, before the plugin opened its wait. Such an
abort is kept while a run is in progress and makes a scope of that name opened later in the
same run start aborted; the run's end forgets it, so it never cancels the next prompt's work.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pi_host.providers import AbortSignal

__all__ = ["AbortScopes"]

_EVERY = "*"


class AbortScopes:
    """The open scopes of one session, and the aborts waiting for a scope during a run."""

    def __init__(self) -> None:
        self._open: dict[AbortSignal, str] = {}
        self._pending: set[str] = set()
        self._running = 0

    @contextmanager
    def open(self, name: str, *, fresh: bool = False) -> Iterator[AbortSignal]:
        """A signal for work of kind ``name``, aborted by :meth:`abort` (``name``) and
        :meth:`abort_all`; forgotten when the block ends.

        :param fresh: ignore an abort that arrived before the scope opened (work the user
            started explicitly after aborting, such as ``/compact``).
        """
        signal = AbortSignal()
        if fresh:
            self._pending.discard(name)
        elif name in self._pending or _EVERY in self._pending:
            self._pending.discard(name)
            signal.abort()
        self._open[signal] = name
        try:
            yield signal
        finally:
            self._open.pop(signal, None)

    def is_open(self, name: str) -> bool:
        """Whether work of kind ``name`` is in progress."""
        return name in self._open.values()

    def abort(self, name: str) -> bool:
        """Abort the open scopes of ``name``; returns whether any was open.

        With none open during a run, the abort waits for a scope of ``name`` until the run ends.
        """
        matching = [signal for signal, kind in self._open.items() if kind == name]
        for signal in matching:
            signal.abort()
        if not matching and self._running:
            self._pending.add(name)
        return bool(matching)

    def abort_all(self) -> None:
        """Abort every open scope (and, during a run, any scope opened before it ends)."""
        for signal in tuple(self._open):
            signal.abort()
        if self._running:
            self._pending.add(_EVERY)

    @contextmanager
    def run(self) -> Iterator[None]:
        """Mark a run (a prompt and what plugins continue after it): aborts that find no open
        scope wait for one until it ends."""
        if not self._running:
            self._pending.clear()
        self._running += 1
        try:
            yield
        finally:
            self._running -= 1
            if not self._running:
                self._pending.clear()
