"""Message hooks: every message of a run starts, (for assistant replies) streams, and ends.

Prompt, custom, tool-result and assistant messages all get ``pi_message_start`` and
``pi_message_end``; assistant replies also get one ``pi_message_update`` per streamed delta,
between them. The session records a message when its ``pi_message_end`` has run, as that
hook left it.
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_host.messages import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ToolResultMessage,
    UserMessage,
)

from ._reducers import MessageEndReducer
from ._strategy import Strategy, hookspec

if TYPE_CHECKING:
    from pi_host.messages import AgentMessage, AssistantMessageEvent

    from ._context import PluginContext

__all__ = ["pi_message_end", "pi_message_start", "pi_message_update"]

_MESSAGE_TYPES = (
    UserMessage,
    AssistantMessage,
    ToolResultMessage,
    BashExecutionMessage,
    CustomMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
)


@hookspec(strategy=Strategy.NOTIFY)
def pi_message_start(message: AgentMessage, ctx: PluginContext) -> None:
    """A message enters the conversation (for a streamed reply: its first, empty state).

    Fires for the run's prompt messages right after ``pi_agent_start``, for each assistant
    reply after ``pi_after_provider_response``, and for each tool result after its
    ``pi_tool_execution_end``.

    :param message: the message (a partial reply for assistant messages).
    :param ctx: the plugin context.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_message_start(message, ctx):
            if message.role == "assistant":
                ctx.ui.set_working_message("thinking…")
    """


@hookspec(strategy=Strategy.NOTIFY, bounded=False)
def pi_message_update(
    message: AgentMessage, assistant_message_event: AssistantMessageEvent, ctx: PluginContext
) -> None:
    """An assistant reply streamed a delta (text, thinking or tool-call arguments).

    Fires between the reply's ``pi_message_start`` and ``pi_message_end``, once per provider
    stream event, so many times per reply: keep implementations quick.

    :param message: the reply so far.
    :param assistant_message_event: the provider event that produced this state
        (``text_delta``, ``thinking_delta``, ``toolcall_end`` …).
    :param ctx: the plugin context.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_message_update(assistant_message_event, ctx):
            if assistant_message_event.type == "toolcall_end":
                ctx.ui.set_working_message(f"calling {assistant_message_event.tool_call.name}")
    """


@hookspec(strategy=Strategy.PIPELINE, returns=_MESSAGE_TYPES, pipe="message", reducer=MessageEndReducer)
def pi_message_end(message: AgentMessage, ctx: PluginContext) -> AgentMessage | None:
    """A message is final; replace it before it is recorded, if you must.

    Fires after the message's ``pi_message_start`` (and updates); for an assistant reply,
    before its tool calls run (``pi_tool_execution_start``). From then on the replacement is
    the message: the agent's state, the next provider request, later hooks (``pi_turn_end``,
    ``pi_agent_end`` …), the ``message_end``, ``turn_end`` and ``agent_end`` events that
    subscribers and JSON/RPC clients receive, and the session file. A replaced reply's tool
    calls are the ones that run. The ``pi_message_update`` deltas streamed before this hook
    (JSON/RPC ``message_update`` lines) have already gone out with the original text.

    :param message: the final message (as replaced by earlier implementations).
    :param ctx: the plugin context.
    :returns: a replacement message with the same ``role``, or ``None`` to keep it.

    **Combination:** pipeline — every implementation runs; each sees the previous replacement.
    **On error:** reported and skipped. A replacement with another role is reported and
    ignored.

    Example::

        from pi_host import TextContent, hookimpl


        @hookimpl
        def pi_message_end(message):
            if message.role != "assistant":
                return None
            content = [
                TextContent(text=block.text.replace("sk-live-", "sk-****-"))
                if block.type == "text"
                else block
                for block in message.content
            ]
            return message.model_copy(update={"content": content})
    """
