"""Build one assistant reply block by block and emit pi's stream events for each step.

Every wire format drives a :class:`ReplyBuilder`: it keeps the reply's content, usage and stop
reason, and each call returns the event pi would emit at that point (``text_start``,
``toolcall_delta`` …), whose ``partial`` is a frozen snapshot of the reply so far. Sharing the
builder keeps event shapes identical across providers.

Snapshots are built with ``model_construct``: the values come from our own code, already of
the right types, and validating them again on every delta would be the dominant cost of
streaming. Unchanged blocks are shared between snapshots (they are frozen), so a delta costs a
new block, a new message shell and the event, a few microseconds.
"""

from __future__ import annotations

from typing import Any, Literal

from pi_host.messages import (
    AssistantContent,
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    StopReason,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    Usage,
    now_ms,
)

from ._partial_json import StreamingJson, parse_tool_arguments
from ._types import Model

__all__ = ["ReplyBuilder"]


class ReplyBuilder:
    """The reply under construction. Indices returned by ``open_*`` are pi's ``contentIndex``."""

    __slots__ = (
        "_args",
        "content",
        "error_message",
        "extra",
        "model",
        "response_id",
        "stop_reason",
        "timestamp",
        "usage",
    )

    def __init__(self, model: Model) -> None:
        self.model = model
        self.content: list[AssistantContent] = []
        self.usage = Usage()
        self.stop_reason: StopReason = "stop"
        self.response_id: str | None = None
        self.error_message: str | None = None
        self.timestamp = now_ms()
        #: Extra JSON fields of the message (``responseModel``, ``retryAfterMs``).
        self.extra: dict[str, Any] = {}
        self._args: dict[int, StreamingJson] = {}

    def message(self) -> AssistantMessage:
        """A frozen snapshot of the reply as it stands."""
        return AssistantMessage.model_construct(
            content=list(self.content),
            api=self.model.api,
            provider=self.model.provider,
            model=self.model.id,
            response_id=self.response_id,
            usage=self.usage,
            stop_reason=self.stop_reason,
            error_message=self.error_message,
            timestamp=self.timestamp,
            **self.extra,
        )

    def start(self) -> StartEvent:
        return StartEvent.model_construct(partial=self.message())

    # -- text ------------------------------------------------------------------------------

    def open_text(self) -> tuple[int, TextStartEvent]:
        index = self._append(TextContent.model_construct(text=""))
        return index, TextStartEvent.model_construct(content_index=index, partial=self.message())

    def text_delta(self, index: int, delta: str) -> TextDeltaEvent:
        block = self.content[index]
        assert isinstance(block, TextContent)
        self.content[index] = TextContent.model_construct(
            text=block.text + delta, text_signature=block.text_signature
        )
        return TextDeltaEvent.model_construct(content_index=index, delta=delta, partial=self.message())

    def close_text(self, index: int) -> TextEndEvent:
        block = self.content[index]
        assert isinstance(block, TextContent)
        return TextEndEvent.model_construct(content_index=index, content=block.text, partial=self.message())

    # -- thinking --------------------------------------------------------------------------

    def open_thinking(
        self, *, thinking: str = "", signature: str | None = None, redacted: bool | None = None
    ) -> tuple[int, ThinkingStartEvent]:
        block = ThinkingContent.model_construct(
            thinking=thinking, thinking_signature=signature, redacted=redacted
        )
        index = self._append(block)
        return index, ThinkingStartEvent.model_construct(content_index=index, partial=self.message())

    def thinking_delta(self, index: int, delta: str) -> ThinkingDeltaEvent:
        block = self.content[index]
        assert isinstance(block, ThinkingContent)
        self.content[index] = block.model_copy(update={"thinking": block.thinking + delta})
        return ThinkingDeltaEvent.model_construct(content_index=index, delta=delta, partial=self.message())

    def add_thinking_signature(self, index: int, fragment: str) -> None:
        """Append to a thinking block's signature (no event: pi emits none for signatures)."""
        block = self.content[index]
        assert isinstance(block, ThinkingContent)
        signature = (block.thinking_signature or "") + fragment
        self.content[index] = block.model_copy(update={"thinking_signature": signature})

    def close_thinking(self, index: int) -> ThinkingEndEvent:
        block = self.content[index]
        assert isinstance(block, ThinkingContent)
        return ThinkingEndEvent.model_construct(
            content_index=index, content=block.thinking, partial=self.message()
        )

    # -- tool calls ------------------------------------------------------------------------

    def open_tool_call(
        self, *, id: str, name: str, arguments: dict[str, Any] | None = None
    ) -> tuple[int, ToolCallStartEvent]:
        index = self._append(ToolCall.model_construct(id=id, name=name, arguments=dict(arguments or {})))
        self._args[index] = StreamingJson()
        return index, ToolCallStartEvent.model_construct(content_index=index, partial=self.message())

    def update_tool_call(
        self,
        index: int,
        *,
        id: str | None = None,
        name: str | None = None,
        thought_signature: str | None = None,
    ) -> None:
        """Fill in fields that arrive after the call opened (OpenAI sends id and name late)."""
        block = self.content[index]
        assert isinstance(block, ToolCall)
        update: dict[str, Any] = {}
        if id is not None:
            update["id"] = id
        if name is not None:
            update["name"] = name
        if thought_signature is not None:
            update["thought_signature"] = thought_signature
        if update:
            self.content[index] = block.model_copy(update=update)

    def tool_call_delta(self, index: int, fragment: str) -> ToolCallDeltaEvent:
        block = self.content[index]
        assert isinstance(block, ToolCall)
        if fragment:
            parser = self._args[index]
            parser.feed(fragment)
            value = parser.value()
            arguments = value if isinstance(value, dict) else {}
            self.content[index] = block.model_copy(update={"arguments": arguments})
        return ToolCallDeltaEvent.model_construct(content_index=index, delta=fragment, partial=self.message())

    def close_tool_call(self, index: int) -> ToolCallEndEvent:
        block = self.content[index]
        assert isinstance(block, ToolCall)
        parser = self._args.pop(index, None)
        if parser is not None and parser.text:
            block = block.model_copy(update={"arguments": parse_tool_arguments(parser.text)})
            self.content[index] = block
        return ToolCallEndEvent.model_construct(content_index=index, tool_call=block, partial=self.message())

    def tool_call_text(self, index: int) -> str:
        """The raw argument JSON received so far for the call at ``index``."""
        parser = self._args.get(index)
        return parser.text if parser is not None else ""

    # -- the end ---------------------------------------------------------------------------

    def done(self) -> DoneEvent:
        reason = self.stop_reason
        assert reason in ("stop", "length", "toolUse")
        return DoneEvent.model_construct(reason=reason, message=self.message())

    def fail(self, reason: Literal["error", "aborted"], error_message: str) -> ErrorEvent:
        """End the reply as failed, keeping whatever content arrived."""
        for index in list(self._args):
            block = self.content[index]
            assert isinstance(block, ToolCall)
            self.content[index] = block.model_copy(
                update={"arguments": parse_tool_arguments(self._args.pop(index).text)}
            )
        self.stop_reason = reason
        self.error_message = error_message
        return ErrorEvent.model_construct(reason=reason, error=self.message())

    def _append(self, block: AssistantContent) -> int:
        self.content.append(block)
        return len(self.content) - 1
