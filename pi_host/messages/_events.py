"""Events: provider stream events (pi's ``AssistantMessageEvent``) and agent loop events.

Every event serialises to pi's JSON shape (``{"type": "message_update", ...}``), which is what
JSON and RPC modes write, one object per line.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from pydantic import Field

from pi_host._frozen import empty_frozen_list

from ._base import FrozenJson, FrozenSeq, WireModel, json_bytes
from ._content import AgentMessage, AssistantMessage, ImageContent, TextContent, ToolCall, ToolResultMessage

__all__ = [
    "AgentEndEvent",
    "AgentEvent",
    "AgentStartEvent",
    "AssistantMessageEvent",
    "DoneEvent",
    "ErrorEvent",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "StartEvent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingStartEvent",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "ToolResult",
    "TurnEndEvent",
    "TurnStartEvent",
]


# -- provider stream events ---------------------------------------------------------------


class StartEvent(WireModel):
    """The provider accepted the request; ``partial`` is the (empty) reply so far."""

    type: Literal["start"] = "start"
    partial: AssistantMessage


class TextStartEvent(WireModel):
    type: Literal["text_start"] = "text_start"
    content_index: int
    partial: AssistantMessage


class TextDeltaEvent(WireModel):
    type: Literal["text_delta"] = "text_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


class TextEndEvent(WireModel):
    type: Literal["text_end"] = "text_end"
    content_index: int
    content: str
    partial: AssistantMessage


class ThinkingStartEvent(WireModel):
    type: Literal["thinking_start"] = "thinking_start"
    content_index: int
    partial: AssistantMessage


class ThinkingDeltaEvent(WireModel):
    type: Literal["thinking_delta"] = "thinking_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


class ThinkingEndEvent(WireModel):
    type: Literal["thinking_end"] = "thinking_end"
    content_index: int
    content: str
    partial: AssistantMessage


class ToolCallStartEvent(WireModel):
    type: Literal["toolcall_start"] = "toolcall_start"
    content_index: int
    partial: AssistantMessage


class ToolCallDeltaEvent(WireModel):
    """A fragment of a tool call's JSON arguments; ``partial`` holds a best-effort parse."""

    type: Literal["toolcall_delta"] = "toolcall_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


class ToolCallEndEvent(WireModel):
    type: Literal["toolcall_end"] = "toolcall_end"
    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage


class DoneEvent(WireModel):
    """The reply finished normally; ``message`` is final."""

    type: Literal["done"] = "done"
    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage


class ErrorEvent(WireModel):
    """The reply failed or was aborted; ``error`` is the final message carrying ``error_message``."""

    type: Literal["error"] = "error"
    reason: Literal["aborted", "error"]
    error: AssistantMessage


AssistantMessageEvent: TypeAlias = (
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent
)


# -- tool results -------------------------------------------------------------------------


class ToolResult(WireModel):
    """What a tool's ``execute`` returns (pi's ``AgentToolResult``).

    ``terminate`` asks the loop to stop after this batch of tool calls, when every call of the
    batch asks for it.
    """

    content: FrozenSeq[TextContent | ImageContent] = Field(default_factory=empty_frozen_list)
    details: FrozenJson[Any] = None
    terminate: bool | None = None

    @classmethod
    def text(cls, text: str, details: Any = None) -> ToolResult:
        """Shorthand for a result holding one text block."""
        return cls(content=[TextContent(text=text)], details=details)


# -- agent loop events --------------------------------------------------------------------


class AgentStartEvent(WireModel):
    type: Literal["agent_start"] = "agent_start"


class AgentEndEvent(WireModel):
    """The last event of a run. ``messages`` are all messages the run produced."""

    type: Literal["agent_end"] = "agent_end"
    messages: FrozenSeq[AgentMessage]


class TurnStartEvent(WireModel):
    type: Literal["turn_start"] = "turn_start"


class TurnEndEvent(WireModel):
    """One assistant reply and its tool results are complete."""

    type: Literal["turn_end"] = "turn_end"
    message: AgentMessage
    tool_results: FrozenSeq[ToolResultMessage]


class MessageStartEvent(WireModel):
    type: Literal["message_start"] = "message_start"
    message: AgentMessage


class MessageUpdateEvent(WireModel):
    """A streaming delta of the assistant reply (assistant messages only)."""

    type: Literal["message_update"] = "message_update"
    message: AgentMessage
    assistant_message_event: AssistantMessageEvent

    @classmethod
    def of(cls, message: AssistantMessage, event: AssistantMessageEvent) -> MessageUpdateEvent:
        """The agent loop's event for one streamed delta, built without validation.

        Both parts are models the provider already built and validated; validating them
        again (two unions of model instances) was a measurable share of the per-delta cost,
        so this is pydantic's ``model_construct``. The result equals
        ``cls(message=message, assistant_message_event=event)``, fields set and extras
        included (checked by a test).
        """
        # The fields set model_construct computes is the one construction gives (``type`` is
        # left to its default), a new set for each event. Keying the values by the JSON names
        # would save 0.6 µs, but pydantic's mypy plugin types model_construct by field names.
        return cls.model_construct(message=message, assistant_message_event=event)

    def to_json(self) -> str:
        return self.to_json_bytes().decode("utf-8")

    def to_json_bytes(self) -> bytes:
        return b"".join(self.json_parts())

    def json_parts(self) -> tuple[bytes, ...]:
        """pi's JSON line in pieces that concatenate to :meth:`to_json_bytes`.

        The streamed message and the event's ``partial`` are normally the same object, so it
        is serialised once and its bytes appear twice in the pieces: JSON and RPC modes write
        one of these lines per delta, the message grows with the reply, and a writer can hand
        the pieces to ``os.writev`` without joining them (:mod:`pi_host.modes._jsonl`).
        """
        event = self.assistant_message_event
        message = self.message
        if (
            getattr(event, "partial", None) is not message
            or not isinstance(message, WireModel)
            or event.model_extra  # extras follow ``partial`` in the generic output
            or self.model_extra
        ):
            return (WireModel.to_json(self).encode("utf-8"),)
        body = json_bytes(message)
        head = json_bytes(event, exclude=_PARTIAL)
        return (
            b'{"type":"message_update","message":',
            body,
            b',"assistantMessageEvent":',
            head[:-1],
            b',"partial":',
            body,
            b"}}",
        )


_PARTIAL = {"partial"}


class MessageEndEvent(WireModel):
    type: Literal["message_end"] = "message_end"
    message: AgentMessage


class ToolExecutionStartEvent(WireModel):
    """A tool call is about to be prepared; ``args`` are the raw arguments from the model."""

    type: Literal["tool_execution_start"] = "tool_execution_start"
    tool_call_id: str
    tool_name: str
    args: FrozenJson[Any]


class ToolExecutionUpdateEvent(WireModel):
    type: Literal["tool_execution_update"] = "tool_execution_update"
    tool_call_id: str
    tool_name: str
    args: FrozenJson[Any]
    partial_result: ToolResult


class ToolExecutionEndEvent(WireModel):
    type: Literal["tool_execution_end"] = "tool_execution_end"
    tool_call_id: str
    tool_name: str
    result: ToolResult
    is_error: bool


AgentEvent: TypeAlias = (
    AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
)
