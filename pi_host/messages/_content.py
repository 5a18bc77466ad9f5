"""Content blocks and messages: pi's ``Message`` and ``AgentMessage`` unions as pydantic models.

Field order follows pi's TypeScript object literals so that ``to_json()`` of a message pi
wrote reproduces pi's bytes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field, TypeAdapter

from pi_host._frozen import empty_frozen_dict, empty_frozen_list

from ._base import FrozenJson, FrozenSeq, WireModel, now_ms

__all__ = [
    "AgentMessage",
    "AssistantContent",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "Cost",
    "CustomMessage",
    "ErrorClass",
    "ImageContent",
    "Message",
    "StopReason",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserContent",
    "UserMessage",
    "parse_message",
]

StopReason: TypeAlias = Literal["stop", "length", "toolUse", "error", "aborted"]

ErrorClass: TypeAlias = Literal["context_overflow", "transient", "permanent"]
"""What kind of failure a failed reply is (:attr:`AssistantMessage.error_class`)."""


class TextContent(WireModel):
    """A run of text. ``text_signature`` is an opaque provider token kept for replay."""

    type: Literal["text"] = "text"
    text: str
    text_signature: str | None = None


class ThinkingContent(WireModel):
    """Model reasoning. ``redacted`` blocks carry an opaque payload in ``thinking_signature``."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    thinking_signature: str | None = None
    redacted: bool | None = None


class ImageContent(WireModel):
    """A base64-encoded image."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str


class ToolCall(WireModel):
    """A tool invocation requested by the model. ``arguments`` is the parsed JSON object."""

    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: FrozenJson[dict[str, Any]] = Field(default_factory=empty_frozen_dict)
    thought_signature: str | None = None


UserContent: TypeAlias = Annotated[TextContent | ImageContent, Field(discriminator="type")]
AssistantContent: TypeAlias = Annotated[TextContent | ThinkingContent | ToolCall, Field(discriminator="type")]


class Cost(WireModel):
    """Dollar cost of one response, split like :class:`Usage`."""

    # int | float keeps a whole number whole, so ``0`` round-trips as ``0`` the way JavaScript
    # writes it rather than ``0.0``.
    input: int | float = 0
    output: int | float = 0
    cache_read: int | float = 0
    cache_write: int | float = 0
    total: int | float = 0


class Usage(WireModel):
    """Token counts reported by the provider, and their cost."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = Field(default_factory=Cost)


class UserMessage(WireModel):
    """A prompt from the user: a plain string or a list of text and image blocks."""

    role: Literal["user"] = "user"
    content: str | FrozenSeq[UserContent]
    timestamp: int = Field(default_factory=now_ms)


class AssistantMessage(WireModel):
    """A model reply. Failures are replies too: ``stop_reason`` ``error`` or ``aborted``."""

    # Declared in the order pi's providers write the keys (responseId and errorMessage are
    # added to the object last), so the JSON and session lines come out in pi's order.
    role: Literal["assistant"] = "assistant"
    content: FrozenSeq[AssistantContent] = Field(default_factory=empty_frozen_list)
    api: str = "unknown"
    provider: str = "unknown"
    model: str = "unknown"
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    timestamp: int = Field(default_factory=now_ms)
    response_id: str | None = None
    error_message: str | None = None

    # What a policy over failed replies (a retry plugin) needs, read from what the reply
    # holds in pi's format: properties, not fields, so the JSON and session lines stay pi's.

    @property
    def http_status(self) -> int | None:
        """The HTTP status of a failed request (``429``, ``529``), ``None`` when the failure was
        not an HTTP error response (a network failure, a broken stream) or the reply did not fail.

        Read from ``error_message``, which pi's transports start with the status.
        """
        if self.stop_reason != "error" or not self.error_message:
            return None
        head = self.error_message[:4]
        if (
            len(head) >= 3
            and head[:3].isdigit()
            and head[0] in "12345"
            and (len(head) == 3 or head[3] == " ")
        ):
            return int(head[:3])
        return None

    @property
    def retry_after(self) -> float | None:
        """Seconds the server asked to wait before trying again (its ``retry-after-ms`` or
        ``retry-after`` header, seconds or an HTTP date), ``None`` when it did not say.

        Kept with the failed reply as the extra JSON field ``retryAfterMs``.
        """
        value = (self.model_extra or {}).get("retryAfterMs")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return value / 1000
        return None

    @property
    def error_class(self) -> ErrorClass | None:
        """What kind of failure this reply is, by pi's patterns (``None`` unless it failed):

        - ``"context_overflow"``: the prompt did not fit the model's context window;
        - ``"transient"``: overloaded, rate limited, 5xx, network or stream failure, timeout —
          worth trying again;
        - ``"permanent"``: anything else (an invalid request, authentication, billing limits).

        The same as :func:`pi_host.classify_error` without a context window (which also
        recognises overflow that a provider accepted silently from the usage).
        """
        from ._failures import classify_error

        return classify_error(self)


class ToolResultMessage(WireModel):
    """The outcome of one tool call, sent back to the model."""

    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: FrozenSeq[UserContent] = Field(default_factory=empty_frozen_list)
    details: FrozenJson[Any] = None
    is_error: bool = False
    timestamp: int = Field(default_factory=now_ms)


class BashExecutionMessage(WireModel):
    """A command the user ran with ``!cmd`` (``!!cmd`` sets ``exclude_from_context``)."""

    role: Literal["bashExecution"] = "bashExecution"
    command: str
    output: str = ""
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    exclude_from_context: bool | None = None
    timestamp: int = Field(default_factory=now_ms)


class CustomMessage(WireModel):
    """A message injected by a plugin; the model sees it as a user message."""

    role: Literal["custom"] = "custom"
    custom_type: str
    content: str | FrozenSeq[UserContent]
    display: bool = True
    details: FrozenJson[Any] = None
    timestamp: int = Field(default_factory=now_ms)


class BranchSummaryMessage(WireModel):
    """A summary of a branch the conversation came back from."""

    role: Literal["branchSummary"] = "branchSummary"
    summary: str
    from_id: str
    timestamp: int = Field(default_factory=now_ms)


class CompactionSummaryMessage(WireModel):
    """The summary that stands in for compacted history."""

    role: Literal["compactionSummary"] = "compactionSummary"
    summary: str
    tokens_before: int
    timestamp: int = Field(default_factory=now_ms)


Message: TypeAlias = Annotated[
    UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")
]
"""What a provider understands: user, assistant and tool-result messages."""


AgentMessage: TypeAlias = Annotated[
    UserMessage
    | AssistantMessage
    | ToolResultMessage
    | BashExecutionMessage
    | CustomMessage
    | BranchSummaryMessage
    | CompactionSummaryMessage,
    # A plain field discriminator: pydantic dispatches on it in Rust, about twice as fast as
    # a callable when a long session is parsed. v1/v2's "hookMessage" role is renamed before
    # validation (parse_message, and session migration).
    Field(discriminator="role"),
]
"""Everything the agent keeps in its transcript: :data:`Message` plus the coding-agent roles."""

_AGENT_MESSAGE: TypeAdapter[AgentMessage] | None = None


def parse_message(data: Any) -> AgentMessage:
    """Validate a pi-shaped JSON object (or a model) into the matching message class.

    :raises pydantic.ValidationError: when ``data`` is not a message pi would write.
    """
    global _AGENT_MESSAGE
    if _AGENT_MESSAGE is None:
        # Built on first use: import pi_host.messages stays cheap for runs that never parse.
        _AGENT_MESSAGE = TypeAdapter(AgentMessage)
    if isinstance(data, dict) and data.get("role") == "hookMessage":
        data = {**data, "role": "custom"}
    return _AGENT_MESSAGE.validate_python(data)


# The message models are built now, bottom-up, and only they: pydantic reuses a built model's
# schema inside every model that refers to it, while a deferred one is regenerated inline in
# each. Deferred, the AgentMessage union was rebuilt once per event and entry class a run
# touches (about 8 ms each, ~50 ms in a one-shot reply); built here it costs ~15 ms once.
for _model in (
    TextContent,
    ThinkingContent,
    ImageContent,
    ToolCall,
    Cost,
    Usage,
    UserMessage,
    AssistantMessage,
    ToolResultMessage,
    BashExecutionMessage,
    CustomMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
):
    _model.model_rebuild()
del _model
