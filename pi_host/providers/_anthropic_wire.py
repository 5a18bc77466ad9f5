"""The Anthropic Messages API wire format, without any I/O: the single source of truth.

Both Anthropic transports (the official SDK, and the lean httpx one used for one-shot runs; see
``_anthropic``) build their request with :func:`build_request` and turn the response's SSE
events into pi's stream events with :class:`AnthropicStreamMapper`. Nothing here imports the
SDK or httpx, so the mapping costs no start-up time and is unit-testable without a network.

Request (pi's ``buildParams`` and ``convertMessages``):

- messages go through :func:`._transform.transform_messages` (tool-call ids normalised to
  ``^[a-zA-Z0-9_-]+$``, at most 64 characters; results follow);
- consecutive tool results become one user message of ``tool_result`` blocks;
- signed thinking is replayed as ``thinking`` with its signature, redacted thinking as
  ``redacted_thinking``, unsigned thinking (an aborted stream) as plain text;
- prompt caching: ``cache_control`` on the system prompt, the last tool and the last block of
  the last user turn (``ttl: "1h"`` for long retention);
- thinking: adaptive with an effort for Opus 4.6+/Sonnet 4.6, a token budget per level for the
  other reasoning models (max tokens raised to fit it), ``disabled`` when off.

Subscription (OAuth, ``sk-ant-oat…``) tokens are sent the way pi sends them: Bearer auth, the
Claude Code identity system block and beta headers, and Claude Code's tool-name casing.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pi_host.messages import (
    BLOCK_KINDS,
    MESSAGE_KINDS,
    AssistantMessage,
    AssistantMessageEvent,
    ImageContent,
    Message,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

from ._builder import ReplyBuilder
from ._cost import make_usage
from ._errors import redact
from ._http import ProviderFailure
from ._partial_json import parse_json_with_repair
from ._sse import ServerSentEvent
from ._transform import sanitize_surrogates, transform_messages
from ._types import LlmContext, Model, StreamOptions, ThinkingLevel, ToolSpec

__all__ = [
    "ANTHROPIC_VERSION",
    "AnthropicRequest",
    "AnthropicStreamMapper",
    "build_request",
    "convert_messages",
    "is_oauth_token",
    "map_stop_reason",
    "normalize_tool_call_id",
]

ANTHROPIC_VERSION = "2023-06-01"
_FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"
_INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
_CLAUDE_CODE_VERSION = "2.1.75"
_CLAUDE_CODE_IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
_CLAUDE_CODE_TOOLS = (
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
)
_CLAUDE_CODE_BY_LOWER = {name.lower(): name for name in _CLAUDE_CODE_TOOLS}
_DEFAULT_BUDGETS: dict[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
_MIN_OUTPUT_TOKENS = 1024
_INVALID_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
    "refusal": "error",
    "pause_turn": "stop",
    "stop_sequence": "stop",
    "sensitive": "error",
    "model_context_window_exceeded": "length",
}
_MESSAGE_EVENTS = frozenset(
    (
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    )
)


def normalize_tool_call_id(tool_call_id: str) -> str:
    """Make a tool-call id acceptable to Anthropic: ``[a-zA-Z0-9_-]``, at most 64 characters."""
    return _INVALID_ID_CHARS.sub("_", tool_call_id)[:64]


def is_oauth_token(api_key: str) -> bool:
    """Whether ``api_key`` is a Claude subscription (OAuth) token rather than an API key."""
    return "sk-ant-oat" in api_key


def supports_adaptive_thinking(model_id: str) -> bool:
    """Opus 4.6+, Sonnet 4.6: thinking is adaptive, steered by an effort instead of a budget."""
    return any(
        tag in model_id
        for tag in ("opus-4-6", "opus-4.6", "opus-4-7", "opus-4.7", "sonnet-4-6", "sonnet-4.6")
    )


def map_stop_reason(reason: str) -> StopReason:
    """pi's stop reason for an Anthropic ``stop_reason``. :raises ProviderFailure: for unknown ones."""
    try:
        return _STOP_REASONS[reason]
    except KeyError:
        raise ProviderFailure(f"Unhandled stop reason: {reason}") from None


def _cache_control(model: Model, options: StreamOptions) -> dict[str, Any] | None:
    if options.cache_retention == "none":
        return None
    long_supported = (model.compat or {}).get("supportsLongCacheRetention", True)
    if options.cache_retention == "long" and long_supported:
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def _effort(model: Model, level: ThinkingLevel) -> str:
    mapped = (model.thinking_level_map or {}).get(level)
    if isinstance(mapped, str):
        return mapped
    return {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}.get(level, "high")


@dataclass(frozen=True)
class AnthropicRequest:
    """A request ready to send: the JSON body and the headers beyond auth and content type."""

    params: dict[str, Any]
    headers: dict[str, str]
    is_oauth: bool


def build_request(
    model: Model, context: LlmContext, options: StreamOptions, api_key: str
) -> AnthropicRequest:
    """Build the Messages API request pi would send for ``context`` (see the module docstring)."""
    oauth = is_oauth_token(api_key)
    cache_control = _cache_control(model, options)
    reasoning = options.reasoning if options.reasoning not in (None, "off") else None
    adaptive = supports_adaptive_thinking(model.id)

    max_tokens = options.max_tokens
    if max_tokens is None and model.max_tokens > 0:
        max_tokens = min(model.max_tokens, 32_000)
    budget: int | None = None
    if reasoning is not None and not adaptive:
        budgets = {**_DEFAULT_BUDGETS, **options.thinking_budgets}
        budget = budgets["high" if reasoning == "xhigh" else reasoning]
        max_tokens = min((max_tokens or 0) + budget, model.max_tokens)
        if max_tokens <= budget:
            budget = max(0, max_tokens - _MIN_OUTPUT_TOKENS)

    params: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(context.messages, model, oauth=oauth, cache_control=cache_control),
        "max_tokens": max_tokens or model.max_tokens // 3,
        "stream": True,
    }
    system: list[dict[str, Any]] = []
    if oauth:
        system.append(_text_block(_CLAUDE_CODE_IDENTITY, cache_control))
    if context.system_prompt:
        system.append(_text_block(sanitize_surrogates(context.system_prompt), cache_control))
    if system:
        params["system"] = system
    if options.temperature is not None and reasoning is None:
        params["temperature"] = options.temperature
    if context.tools:
        params["tools"] = _convert_tools(context.tools, model, oauth=oauth, cache_control=cache_control)
    if model.reasoning:
        if reasoning is None:
            params["thinking"] = {"type": "disabled"}
        elif adaptive:
            params["thinking"] = {"type": "adaptive", "display": "summarized"}
            params["output_config"] = {"effort": _effort(model, reasoning)}
        else:
            params["thinking"] = {"type": "enabled", "budget_tokens": budget or 1024, "display": "summarized"}

    return AnthropicRequest(
        params=params, headers=_headers(model, context, options, oauth=oauth), is_oauth=oauth
    )


def _headers(model: Model, context: LlmContext, options: StreamOptions, *, oauth: bool) -> dict[str, str]:
    betas: list[str] = []
    eager_tools = (model.compat or {}).get("supportsEagerToolInputStreaming", True)
    if context.tools and not eager_tools:
        betas.append(_FINE_GRAINED_TOOL_STREAMING_BETA)
    if not supports_adaptive_thinking(model.id):
        betas.append(_INTERLEAVED_THINKING_BETA)
    headers: dict[str, str] = {"accept": "application/json"}
    if oauth:
        headers["anthropic-dangerous-direct-browser-access"] = "true"
        headers["anthropic-beta"] = ",".join(("claude-code-20250219", "oauth-2025-04-20", *betas))
        headers["user-agent"] = f"claude-cli/{_CLAUDE_CODE_VERSION}"
        headers["x-app"] = "cli"
    elif betas:
        headers["anthropic-beta"] = ",".join(betas)
    headers.update(model.headers or {})
    headers.update(options.headers)
    return headers


def _text_block(text: str, cache_control: dict[str, Any] | None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if cache_control is not None:
        block["cache_control"] = cache_control
    return block


def _image_block(image: ImageContent) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.mime_type, "data": image.data}}


def _tool_result_content(content: Sequence[TextContent | ImageContent]) -> str | list[dict[str, Any]]:
    kinds = BLOCK_KINDS
    texts: list[str] = []
    for block in content:
        kind = kinds[type(block)]
        if kind is ImageContent:
            break
        if kind is TextContent:
            assert isinstance(block, TextContent)  # a match costs little; a miss is what is slow
            texts.append(block.text)
    else:
        return sanitize_surrogates("\n".join(texts))
    blocks = [
        {"type": "text", "text": sanitize_surrogates(block.text)}
        if isinstance(block, TextContent)
        else _image_block(block)
        for block in content
    ]
    if not any(block["type"] == "text" for block in blocks):
        blocks.insert(0, {"type": "text", "text": "(see attached image)"})
    return blocks


def _tool_result(message: ToolResultMessage) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": _tool_result_content(message.content),
        "is_error": message.is_error,
    }


class _WireMemo:
    """The wire form of every message that is still alive, by identity.

    A request repeats the previous one's history and adds a few messages, so only those are
    converted: converting the whole history on every request grew with the conversation.
    Messages are frozen and the wire form depends only on the message and ``oauth``, so a
    message's wire form is valid for every request that sends that very object; a hit needs
    the same object (``is``), never an equal one.

    Why by weak reference, not "the previous request's messages": many sessions share one
    process (``create_session`` on one event loop, issue 21). A single "previous request"
    slot was replaced by each session's request in turn, so interleaved sessions converted
    their whole history every time, and a closed session's messages stayed alive until some
    other request replaced them. Here each session hits its own messages' entries, and an
    entry goes when its message does. The wire dicts are never changed after they are made:
    the payload is read-only for ``pi_before_provider_request``, and :func:`convert_messages`
    copies the one dict it changes (the last, for ``cache_control``).
    """

    __slots__ = ("_entries", "_forget")

    def __init__(self) -> None:
        entries: dict[int, _MemoRef] = {}
        self._entries = entries

        def forget(ref: weakref.ref[Message]) -> None:
            # Only this reference's own entry: a later one for the same message replaced it.
            assert isinstance(ref, _MemoRef)
            if entries.get(ref.key) is ref:
                entries.pop(ref.key, None)  # pop: another thread's request may have replaced it

        # One callback for every entry, not a closure each (with its tuple: ~270 bytes a
        # message, 2.6 MiB for a resumed 10,000-entry session).
        self._forget = forget

    def __len__(self) -> int:
        return len(self._entries)

    def wire(self, message: Message, oauth: bool) -> dict[str, Any] | None:
        """``message``'s wire form, converted now unless it is remembered."""
        key = id(message)
        hit = self._entries.get(key)
        if hit is not None and hit() is message and hit.oauth == oauth:
            return hit.wire
        wire = _message_wire(message, oauth)
        self._entries[key] = _MemoRef(message, self._forget, key, oauth, wire)
        return wire


class _MemoRef(weakref.ref[Message]):
    """A weak reference to a message that carries its memo entry (see :class:`_WireMemo`)."""

    __slots__ = ("key", "oauth", "wire")

    def __init__(
        self,
        message: Message,
        callback: Callable[[weakref.ref[Message]], None],
        key: int,
        oauth: bool,
        wire: dict[str, Any] | None,
    ) -> None:
        # The reference itself is made by __new__ (weakref.ref takes no other arguments).
        self.key = key
        self.oauth = oauth
        self.wire = wire

    def __new__(cls, message: Message, callback: Callable[[weakref.ref[Message]], None], *_: Any) -> _MemoRef:
        return super().__new__(cls, message, callback)


_wire_memo = _WireMemo()


def convert_messages(
    messages: Sequence[Message],
    model: Model,
    *,
    oauth: bool = False,
    cache_control: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """pi's messages as Messages API ``messages``."""
    out: list[dict[str, Any]] = []
    transformed = transform_messages(messages, model, normalize_tool_call_id)
    memo = _wire_memo.wire
    kinds = MESSAGE_KINDS
    results: list[dict[str, Any]] | None = None  # consecutive tool results, gathered
    for message in transformed:
        wire = memo(message, oauth)
        kind = kinds[type(message)]
        if kind is UserMessage or kind is AssistantMessage:
            results = None
            if wire is not None:
                out.append(wire)
            continue
        assert wire is not None  # a tool result always has its block
        # Consecutive tool results travel in one user message (z.ai's endpoint insists).
        if results is None or kind is not ToolResultMessage:
            results = []
            out.append({"role": "user", "content": results})
        results.append(wire)

    if cache_control is not None and out and out[-1]["role"] == "user":
        last = out[-1]
        content = last["content"]
        if isinstance(content, str):
            out[-1] = {**last, "content": [_text_block(content, cache_control)]}
        elif content and content[-1]["type"] in ("text", "image", "tool_result"):
            out[-1] = {**last, "content": [*content[:-1], {**content[-1], "cache_control": cache_control}]}
    return out


def _message_wire(message: Message, oauth: bool) -> dict[str, Any] | None:
    """A user or assistant message's wire message (``None`` if it has nothing to send), or a
    tool result's ``tool_result`` block."""
    kind = MESSAGE_KINDS[type(message)]
    if kind is UserMessage:
        assert isinstance(message, UserMessage)  # a match costs little; a miss is what is slow
        if isinstance(message.content, str):
            if message.content.strip():
                return {"role": "user", "content": sanitize_surrogates(message.content)}
            return None
        blocks: list[dict[str, Any]] = []
        block_kinds = BLOCK_KINDS
        for block in message.content:
            if block_kinds[type(block)] is TextContent:
                assert isinstance(block, TextContent)
                if block.text.strip():
                    blocks.append({"type": "text", "text": sanitize_surrogates(block.text)})
            else:
                blocks.append(_image_block(cast(ImageContent, block)))
        return {"role": "user", "content": blocks} if blocks else None
    if kind is AssistantMessage:
        assert isinstance(message, AssistantMessage)
        assistant_blocks = _assistant_blocks(message, oauth)
        return {"role": "assistant", "content": assistant_blocks} if assistant_blocks else None
    return _tool_result(cast(ToolResultMessage, message))


def _assistant_blocks(message: AssistantMessage, oauth: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    kinds = BLOCK_KINDS
    for block in message.content:
        kind = kinds[type(block)]
        if kind is TextContent:
            assert isinstance(block, TextContent)  # a match costs little; a miss is what is slow
            if block.text.strip():
                blocks.append({"type": "text", "text": sanitize_surrogates(block.text)})
        elif kind is ThinkingContent:
            assert isinstance(block, ThinkingContent)
            if block.redacted:
                blocks.append({"type": "redacted_thinking", "data": block.thinking_signature or ""})
            elif not block.thinking.strip():
                continue
            elif not block.thinking_signature or not block.thinking_signature.strip():
                # Unsigned thinking (an aborted stream) would be rejected as thinking; as plain
                # text without tags the model does not learn to imitate the tags.
                blocks.append({"type": "text", "text": sanitize_surrogates(block.thinking)})
            else:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": sanitize_surrogates(block.thinking),
                        "signature": block.thinking_signature,
                    }
                )
        elif kind is ToolCall:
            assert isinstance(block, ToolCall)
            name = _CLAUDE_CODE_BY_LOWER.get(block.name.lower(), block.name) if oauth else block.name
            blocks.append({"type": "tool_use", "id": block.id, "name": name, "input": block.arguments})
    return blocks


def _convert_tools(
    tools: Sequence[ToolSpec], model: Model, *, oauth: bool, cache_control: dict[str, Any] | None
) -> list[dict[str, Any]]:
    eager = (model.compat or {}).get("supportsEagerToolInputStreaming", True)
    out: list[dict[str, Any]] = []
    for position, tool in enumerate(tools):
        schema = tool.parameters
        input_schema: dict[str, Any] = {
            "type": "object",
            "properties": schema.get("properties", {}),
            "required": schema.get("required", []),
        }
        # pydantic puts nested models in "$defs" and points at them with "$ref"; without the
        # definitions the schema would be unresolvable (pi's TypeBox schemas inline them).
        for key in ("$defs", "definitions"):
            if key in schema:
                input_schema[key] = schema[key]
        entry: dict[str, Any] = {
            "name": _CLAUDE_CODE_BY_LOWER.get(tool.name.lower(), tool.name) if oauth else tool.name,
            "description": tool.description,
        }
        if eager:
            entry["eager_input_streaming"] = True
        entry["input_schema"] = input_schema
        if cache_control is not None and position == len(tools) - 1:
            entry["cache_control"] = cache_control
        out.append(entry)
    return out


class AnthropicStreamMapper:
    """Turn the Messages API's SSE events into pi's stream events, through a :class:`ReplyBuilder`.

    :meth:`handle` raises :class:`ProviderFailure` for an ``error`` event, an event whose data is
    not JSON, or an unknown stop reason; :meth:`finish` raises when the stream ended early.
    """

    def __init__(
        self,
        builder: ReplyBuilder,
        *,
        tools: Sequence[ToolSpec] = (),
        oauth: bool = False,
        api_key: str | None = None,
    ) -> None:
        self._builder = builder
        self._tool_names = {tool.name.lower(): tool.name for tool in tools} if oauth else {}
        self._api_key = api_key
        self._blocks: dict[int, int] = {}  # Anthropic block index -> our content index
        self._kinds: dict[int, str] = {}
        self._started = False
        self._stopped = False
        self._usage = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}

    def handle(self, sse: ServerSentEvent) -> list[AssistantMessageEvent]:
        """The pi events for one SSE event (often one, sometimes none)."""
        if sse.event == "error":
            raise ProviderFailure(redact(sse.data, self._api_key))
        if sse.event not in _MESSAGE_EVENTS:
            return []  # ping, and event types added after this was written
        try:
            event = parse_json_with_repair(sse.data)
            if not isinstance(event, dict):
                raise ValueError("expected a JSON object")
        except ValueError as exc:
            raise ProviderFailure(
                redact(
                    f"Could not parse Anthropic SSE event {sse.event}: {exc}; data={sse.data}", self._api_key
                )
            ) from None
        kind = event.get("type", sse.event)
        try:
            return self._dispatch(kind, event)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ProviderFailure(
                redact(f"Malformed Anthropic SSE event {kind}: {exc!r}; data={sse.data}", self._api_key)
            ) from None

    def finish(self) -> list[AssistantMessageEvent]:
        """Check the stream ended properly (no events are due). :raises ProviderFailure: if not."""
        if not self._started:
            raise ProviderFailure("Anthropic stream ended without a message_start event")
        if not self._stopped:
            raise ProviderFailure("Anthropic stream ended before message_stop")
        return []

    def _dispatch(self, kind: str, event: dict[str, Any]) -> list[AssistantMessageEvent]:
        builder = self._builder
        if kind == "message_start":
            self._started = True
            message = event["message"]
            builder.response_id = message.get("id")
            usage = message.get("usage") or {}
            self._update_usage(usage, replace_all=True)
            return []
        if kind == "content_block_start":
            return self._block_start(event["index"], event["content_block"])
        if kind == "content_block_delta":
            return self._block_delta(event["index"], event["delta"])
        if kind == "content_block_stop":
            return self._block_stop(event["index"])
        if kind == "message_delta":
            reason = (event.get("delta") or {}).get("stop_reason")
            if reason:
                builder.stop_reason = map_stop_reason(reason)
                if builder.stop_reason == "error":
                    builder.error_message = f"Provider stop_reason: {reason}"
            self._update_usage(event.get("usage") or {}, replace_all=False)
            return []
        if kind == "message_stop":
            self._stopped = True
        return []

    def _update_usage(self, usage: dict[str, Any], *, replace_all: bool) -> None:
        # message_delta may omit fields (proxies do); keep what message_start reported.
        for ours, theirs in (
            ("input", "input_tokens"),
            ("output", "output_tokens"),
            ("cache_read", "cache_read_input_tokens"),
            ("cache_write", "cache_creation_input_tokens"),
        ):
            value = usage.get(theirs)
            if value is not None:
                self._usage[ours] = int(value)
            elif replace_all:
                self._usage[ours] = 0
        self._builder.usage = make_usage(self._builder.model, **self._usage)

    def _block_start(self, index: int, block: dict[str, Any]) -> list[AssistantMessageEvent]:
        builder = self._builder
        kind = block.get("type")
        event: AssistantMessageEvent
        if kind == "text":
            position, event = builder.open_text()
        elif kind == "thinking":
            position, event = builder.open_thinking(signature="")
        elif kind == "redacted_thinking":
            position, event = builder.open_thinking(
                thinking="[Reasoning redacted]", signature=block.get("data", ""), redacted=True
            )
        elif kind == "tool_use":
            name = block.get("name", "")
            name = self._tool_names.get(name.lower(), name)
            initial = block.get("input")
            position, event = builder.open_tool_call(
                id=block.get("id", ""), name=name, arguments=initial if isinstance(initial, dict) else {}
            )
        else:
            return []  # server tool use and other block types pi does not model
        self._blocks[index] = position
        self._kinds[index] = kind
        return [event]

    def _block_delta(self, index: int, delta: dict[str, Any]) -> list[AssistantMessageEvent]:
        position = self._blocks.get(index)
        if position is None:
            return []
        builder = self._builder
        kind = delta.get("type")
        block_kind = self._kinds[index]
        if kind == "text_delta" and block_kind == "text":
            return [builder.text_delta(position, delta["text"])]
        if kind == "thinking_delta" and block_kind == "thinking":
            return [builder.thinking_delta(position, delta["thinking"])]
        if kind == "input_json_delta" and block_kind == "tool_use":
            return [builder.tool_call_delta(position, delta["partial_json"])]
        if kind == "signature_delta" and block_kind == "thinking":
            builder.add_thinking_signature(position, delta["signature"])
        return []

    def _block_stop(self, index: int) -> list[AssistantMessageEvent]:
        position = self._blocks.pop(index, None)
        if position is None:
            return []
        block_kind = self._kinds.pop(index)
        builder = self._builder
        if block_kind == "text":
            return [builder.close_text(position)]
        if block_kind == "tool_use":
            return [builder.close_tool_call(position)]
        return [builder.close_thinking(position)]
