"""The messages waiting for the agent: steering, follow-ups, and plugin messages for the next turn.

The agent holds the queued messages themselves; this part keeps the texts the user sees
queued (RPC ``queue_update``, the editor's queue display) in step with it, and the plugin
messages that go out with the next prompt (``deliver_as="nextTurn"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pi_host.messages import AgentMessage, CustomMessage, ImageContent, TextContent, UserMessage, now_ms

from ._session_types import SessionError, StreamingBehavior

if TYPE_CHECKING:
    from pi_host.agent import Agent

    from ._host import Host

__all__ = ["MessageQueues", "split_content"]


class _Session(Protocol):
    """What the queues need of their session."""

    host: Host
    agent: Agent

    def emit_event(self, event: Any) -> None: ...


def split_content(content: str | Sequence[TextContent | ImageContent]) -> tuple[str, list[ImageContent]]:
    """A plugin's message content as (text, images)."""
    if isinstance(content, str):
        return content, []
    text = "\n".join(block.text for block in content if isinstance(block, TextContent))
    return text, [block for block in content if isinstance(block, ImageContent)]


class MessageQueues:
    """The steering and follow-up texts on display, and the messages kept for the next turn."""

    def __init__(self, session: _Session) -> None:
        self._session = session
        self.steering: list[str] = []
        self.follow_up: list[str] = []
        self._next_turn: list[AgentMessage] = []

    def queue(self, text: str, images: Sequence[ImageContent], behavior: StreamingBehavior) -> None:
        """Queue a user message with the agent and show its text queued."""
        content: list[TextContent | ImageContent] = [TextContent(text=text), *images]
        message = UserMessage(content=content, timestamp=now_ms())
        agent = self._session.agent
        if behavior == "followUp":
            self.follow_up.append(text)
            agent.follow_up(message)
        else:
            self.steering.append(text)
            agent.steer(message)
        self.emit_update()

    def reject_command(self, text: str) -> None:
        """:raises SessionError: ``text`` invokes a plugin command, which cannot be queued."""
        if text.startswith("/"):
            name = text[1:].partition(" ")[0]
            if name in self._session.host.commands:
                raise SessionError(
                    f'Extension command "/{name}" cannot be queued. Use prompt() or execute the command '
                    "when not streaming."
                )

    def clear(self) -> tuple[list[str], list[str]]:
        """Empty both queues; returns the (steering, follow-up) texts they held."""
        steering, follow_up = self.steering, self.follow_up
        self.steering, self.follow_up = [], []
        self._session.agent.clear_all_queues()
        self.emit_update()
        return steering, follow_up

    def forget(self) -> None:
        """Empty both queues without telling anyone (another session file was entered)."""
        self.steering.clear()
        self.follow_up.clear()
        self._session.agent.clear_all_queues()

    def dequeue_display(self, text: str) -> None:
        """A queued message reached the agent: stop showing its text queued."""
        for queue in (self.steering, self.follow_up):
            if text in queue:
                queue.remove(text)
                self.emit_update()
                return

    def emit_update(self) -> None:
        from ._events import QueueUpdateEvent

        self._session.emit_event(
            QueueUpdateEvent(steering=list(self.steering), follow_up=list(self.follow_up))
        )

    def enqueue_custom(self, message: CustomMessage, deliver_as: str | None) -> None:
        """Queue a plugin's message with the streaming agent (steering unless ``followUp``)."""
        if deliver_as == "followUp":
            self._session.agent.follow_up(message)
        else:
            self._session.agent.steer(message)

    def add_next_turn(self, message: AgentMessage) -> None:
        """Send ``message`` along with the next prompt."""
        self._next_turn.append(message)

    def take_next_turn(self) -> list[AgentMessage]:
        """The messages kept for the next prompt, handed over once."""
        taken, self._next_turn = self._next_turn, []
        return taken

    def queue_plugin_message(
        self,
        message: CustomMessage | str | Sequence[TextContent | ImageContent],
        deliver_as: Literal["steer", "followUp", "nextTurn"] | None,
    ) -> bool:
        """Queue a plugin's message now when nothing needs awaiting; ``False`` when it must
        take the asynchronous path (see :meth:`AgentSession.queue_plugin_message`)."""
        if isinstance(message, CustomMessage) and deliver_as == "nextTurn":
            self.add_next_turn(message.model_copy(update={"timestamp": now_ms()}))
            return True
        session = self._session
        if not session.agent.state.is_streaming or deliver_as == "nextTurn":
            return False
        if isinstance(message, CustomMessage):
            self.enqueue_custom(message.model_copy(update={"timestamp": now_ms()}), deliver_as)
            return True
        # pi_input must see a user message first, and one without a behaviour is an error.
        if deliver_as is None or session.host.dispatcher.has_implementations("pi_input"):
            return False
        text, images = split_content(message)
        self.queue(text, images, deliver_as)
        return True
