"""The agent's events on their way out: to plugins, then session subscribers, then the session file.

Persistence happens at ``message_end``, after plugins, so a message a ``pi_message_end``
implementation replaced is what subscribers see and what is stored. Events plugins emit while
an agent event is dispatched reach subscribers after it (the cause before the reaction).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from pi_host.messages import (
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    MessageEndEvent,
    MessageStartEvent,
    TextContent,
    UserMessage,
    now_ms,
)

from ._agent_end import SessionAgentEndEvent
from ._event_hooks import EventHooks

if TYPE_CHECKING:
    from pi_host.providers import AbortSignal
    from pi_host.session import SessionManager

    from ._context import SessionPluginContext
    from ._host import Host
    from ._session_queues import MessageQueues

__all__ = ["AgentEventRelay", "user_text"]


class _Session(Protocol):
    """What the relay needs of its session."""

    host: Host
    session_manager: SessionManager
    ctx: SessionPluginContext

    def emit_event(self, event: Any) -> None: ...


def user_text(message: UserMessage) -> str:
    """The text of a user message, its images left out."""
    if isinstance(message.content, str):
        return message.content
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


class AgentEventRelay:
    """Hands one session's agent events on, counts its turns, and stores its messages."""

    def __init__(
        self, session: _Session, queues: MessageQueues, emit: Callable[[Any], Awaitable[None]]
    ) -> None:
        self._session = session
        self._queues = queues
        self._emit = emit
        self._turn_index = 0
        self._last_assistant: AssistantMessage | None = None
        # Events plugins emit while an agent event is dispatched reach subscribers after it.
        self._deferred_events: list[Any] | None = None
        # Agent events reach their hooks by name; what the hooks take beyond the events'
        # fields comes from here.
        self._event_hooks = EventHooks(
            session.host.dispatcher,
            {"ctx": lambda: session.ctx, "turn_index": lambda: self._turn_index, "timestamp": now_ms},
        )

    def forget_last_reply(self) -> None:
        """Another session file was entered: its last reply is not this run's."""
        self._last_assistant = None

    def emit_plugin_event(self, event: Any) -> None:
        """Deliver an event a plugin emitted: at once, or after the agent event being dispatched."""
        if self._deferred_events is not None:
            self._deferred_events.append(event)
        else:
            self._session.emit_event(event)

    async def on_agent_event(self, event: AgentEvent, signal: AbortSignal) -> AgentMessage | None:
        """The agent's listener: returns the message ``message_end`` leaves (maybe replaced)."""
        outer, self._deferred_events = self._deferred_events, []
        try:
            return await self._handle_agent_event(event)
        finally:
            deferred, self._deferred_events = self._deferred_events, outer
            for plugin_event in deferred:
                self.emit_plugin_event(plugin_event)

    async def _handle_agent_event(self, event: AgentEvent) -> AgentMessage | None:
        kind = event.type
        if kind == "agent_start":
            self._turn_index = 0
        elif kind == "message_start":
            message = cast("MessageStartEvent", event).message
            if isinstance(message, UserMessage):
                self._queues.dequeue_display(user_text(message))
        # Plugins see every event before session subscribers (pi's order).
        call = self._event_hooks.dispatch(event)
        outcome = None if call is None else await call
        if kind == "message_end":
            return await self._end_message(cast("MessageEndEvent", event), outcome)
        if kind == "turn_end":
            self._turn_index += 1
        elif kind == "agent_end":
            session = self._session
            messages = cast("AgentEndEvent", event).messages
            will_retry = False
            if self._last_assistant is not None and self._last_assistant.stop_reason == "error":
                will_retry = await session.host.dispatcher.will_continue_run(
                    message=self._last_assistant, ctx=session.ctx
                )
            await self._emit(SessionAgentEndEvent(messages=messages, will_retry=will_retry))
            return None
        await self._emit(event)
        return None

    async def _end_message(self, event: MessageEndEvent, replacement: AgentMessage | None) -> AgentMessage:
        """Tell subscribers and the session file about the message as ``pi_message_end`` left
        it; the agent takes the same message back (``Agent`` listeners may replace one), so the
        rest of the run sees the replacement too."""
        message = event.message
        if replacement is not None and replacement is not message:
            message = replacement
            event = MessageEndEvent(message=message)
        await self._emit(event)
        self.persist(message)
        asks_for_tools = isinstance(message, AssistantMessage) and any(
            block.type == "toolCall" for block in message.content
        )
        if asks_for_tools:
            # The reply that asks for tools is saved before they run (and maybe crash the
            # process), as a file append is; a store's write is awaited off the loop.
            manager = self._session.session_manager
            if not manager.wait_for_writes(timeout=0):
                import anyio

                await anyio.to_thread.run_sync(manager.wait_for_writes)
        return message

    def persist(self, message: AgentMessage) -> None:
        """Append ``message`` to the session file (the roles pi stores)."""
        manager = self._session.session_manager
        if isinstance(message, CustomMessage):
            manager.append_custom_message_entry(
                message.custom_type, message.content, message.display, message.details
            )
        elif isinstance(message, UserMessage):
            manager.append_message(message)
        elif isinstance(message, AssistantMessage):
            manager.append_message(message)
            self._last_assistant = message
        elif message.role == "toolResult":
            manager.append_message(message)
