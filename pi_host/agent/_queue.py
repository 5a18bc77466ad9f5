"""The steering and follow-up queues of an :class:`~pi_host.agent.Agent`."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Literal, TypeAlias

from pi_host.messages import AgentMessage

__all__ = ["MessageQueue", "QueueMode"]

QueueMode: TypeAlias = Literal["all", "one-at-a-time"]
"""How a queue is drained: every queued message at once, or only the oldest one."""


class MessageQueue:
    """A FIFO of messages waiting for the next drain point of a run.

    ``"one-at-a-time"`` (pi's default) hands out only the oldest message per drain, so each
    queued message gets its own assistant reply; ``"all"`` hands out everything at once.
    """

    __slots__ = ("_items", "mode")

    def __init__(self, mode: QueueMode = "one-at-a-time") -> None:
        if mode not in ("all", "one-at-a-time"):
            raise ValueError(f"queue mode must be 'all' or 'one-at-a-time', not {mode!r}")
        self.mode: QueueMode = mode
        self._items: deque[AgentMessage] = deque()

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    @property
    def messages(self) -> tuple[AgentMessage, ...]:
        """The queued messages, oldest first (a snapshot)."""
        return tuple(self._items)

    def enqueue(self, message: AgentMessage) -> None:
        """Add ``message`` at the back."""
        self._items.append(message)

    def drain(self) -> list[AgentMessage]:
        """Remove and return the messages due now, according to :attr:`mode`."""
        if not self._items:
            return []
        if self.mode == "all":
            drained = list(self._items)
            self._items.clear()
            return drained
        return [self._items.popleft()]

    def restore(self, messages: Iterable[AgentMessage]) -> None:
        """Put drained-but-unused messages back at the front, keeping their order."""
        self._items.extendleft(reversed(list(messages)))

    def clear(self) -> None:
        """Drop every queued message."""
        self._items.clear()
