"""Holding prompts back while a plugin rewrites the history (a summary replacing old turns, a rebuild).

A prompt that arrives while the agent is idle but a plugin is replacing the transcript waits
until the plugin is done, instead of racing it for the messages (the terminal UI shows such a
prompt as queued meanwhile).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio

__all__ = ["PromptGate"]


class PromptGate:
    """Counts the holds in progress; :meth:`wait` returns once there are none."""

    def __init__(self) -> None:
        self._holds = 0
        self._released: anyio.Event | None = None

    @property
    def held(self) -> bool:
        return self._holds > 0

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Prompts wait while the block runs."""
        if self._holds == 0:
            self._released = anyio.Event()
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            if self._holds == 0 and self._released is not None:
                self._released.set()
                self._released = None

    async def wait(self) -> None:
        """Return when no hold is in progress."""
        while self._released is not None:
            await self._released.wait()
