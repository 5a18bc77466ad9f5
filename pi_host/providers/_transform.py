"""Make a conversation replayable to a given model (pi's ``transformMessages``).

Shared by every wire format, before it maps messages to its own JSON:

- images become a placeholder text for models without image input;
- thinking: the same model keeps its signed blocks (even empty ones) and redacted blocks;
  another model gets thinking as plain text, loses redacted and empty thinking;
- tool-call ids from another model are rewritten by the wire format's ``normalize_id`` (and
  the matching tool results follow);
- replies that ended in ``error`` or ``aborted`` are skipped: they are incomplete turns;
- a tool call left without a result gets a synthetic error result ``"No result provided"``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import cast

from pi_host.messages import (
    BLOCK_KINDS,
    MESSAGE_KINDS,
    AssistantContent,
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    now_ms,
)

from ._types import Model

__all__ = ["sanitize_surrogates", "transform_messages"]

_USER_IMAGE_PLACEHOLDER = "(image omitted: model does not support images)"
_TOOL_IMAGE_PLACEHOLDER = "(tool image omitted: model does not support images)"
_SURROGATE = re.compile("[\ud800-\udfff]")


def sanitize_surrogates(text: str) -> str:
    """Drop lone UTF-16 surrogates, which providers reject as invalid JSON text.

    In a Python string a properly paired surrogate is already one code point, so every
    surrogate code point left is unpaired.
    """
    if text.isascii():  # the common case, and a cheaper test than the search
        return text
    return _SURROGATE.sub("", text) if _SURROGATE.search(text) else text


def _without_images(
    content: Sequence[TextContent | ImageContent], placeholder: str
) -> list[TextContent | ImageContent]:
    result: list[TextContent | ImageContent] = []
    previous_was_placeholder = False
    for block in content:
        if isinstance(block, ImageContent):
            if not previous_was_placeholder:
                result.append(TextContent(text=placeholder))
            previous_was_placeholder = True
            continue
        result.append(block)
        previous_was_placeholder = block.text == placeholder
    return result


def _without_image(message: UserMessage | ToolResultMessage, model: Model) -> Message:
    """``message`` with its images as placeholder text if ``model`` takes none (else itself).

    Only messages that carry an image change; the others are passed on as they are (copying
    every message of the history on every request was most of the cost).
    """
    content = message.content
    if isinstance(content, str) or "image" in model.input:
        return message
    kinds = BLOCK_KINDS
    for block in content:
        if kinds[type(block)] is ImageContent:
            break
    else:
        return message
    placeholder = _USER_IMAGE_PLACEHOLDER if isinstance(message, UserMessage) else _TOOL_IMAGE_PLACEHOLDER
    return message.model_copy(update={"content": _without_images(content, placeholder)})


def transform_messages(
    messages: Sequence[Message], model: Model, normalize_id: Callable[[str], str] | None = None
) -> list[Message]:
    """Return the messages as ``model`` should receive them; see the module docstring."""
    # One pass: a message's transformation depends only on the messages before it (tool-call
    # ids rewritten earlier), and so does the orphan repair, which sees transformed messages.
    id_map: dict[str, str] = {}
    result: list[Message] = []
    pending: list[ToolCall] = []
    answered: set[str] = set()

    def flush_orphans() -> None:
        nonlocal pending, answered
        for call in pending:
            if call.id not in answered:
                result.append(
                    ToolResultMessage(
                        tool_call_id=call.id,
                        tool_name=call.name,
                        content=[TextContent(text="No result provided")],
                        is_error=True,
                        timestamp=now_ms(),
                    )
                )
        pending = []
        answered = set()

    kinds, block_kinds = MESSAGE_KINDS, BLOCK_KINDS
    for message in messages:
        kind = kinds[type(message)]
        if kind is AssistantMessage:
            assert isinstance(message, AssistantMessage)  # a match costs little; a miss is slow
            message = _transform_assistant(message, model, normalize_id, id_map)
            if pending:
                flush_orphans()
            if message.stop_reason in ("error", "aborted"):
                continue
            calls: list[ToolCall] = []
            for block in message.content:
                if block_kinds[type(block)] is ToolCall:
                    assert isinstance(block, ToolCall)
                    calls.append(block)
            if calls:
                pending = calls
                answered = set()
            result.append(message)
        elif kind is ToolResultMessage:
            assert isinstance(message, ToolResultMessage)
            message = _without_image(message, model)
            assert isinstance(message, ToolResultMessage)
            mapped = id_map.get(message.tool_call_id)
            if mapped and mapped != message.tool_call_id:
                message = message.model_copy(update={"tool_call_id": mapped})
            answered.add(message.tool_call_id)
            result.append(message)
        else:
            if kind is UserMessage:
                assert isinstance(message, UserMessage)
                message = _without_image(message, model)
            if pending:
                flush_orphans()
            result.append(message)
    flush_orphans()
    return result


def _transform_assistant(
    message: AssistantMessage,
    model: Model,
    normalize_id: Callable[[str], str] | None,
    id_map: dict[str, str],
) -> AssistantMessage:
    same_model = message.provider == model.provider and message.api == model.api and message.model == model.id
    kinds = BLOCK_KINDS
    if same_model:
        for block in message.content:
            if kinds[type(block)] is ThinkingContent:
                break
        else:
            return message  # for the model that wrote it only thinking can change
    content: list[AssistantContent] = []
    changed = False
    for block in message.content:
        kind = kinds[type(block)]
        if kind is ThinkingContent:
            assert isinstance(block, ThinkingContent)
            if block.redacted:
                if same_model:
                    content.append(block)
                else:
                    changed = True
                continue
            if same_model and block.thinking_signature:
                content.append(block)
            elif not block.thinking or not block.thinking.strip():
                changed = True
            elif same_model:
                content.append(block)
            else:
                content.append(TextContent(text=block.thinking))
                changed = True
        elif kind is TextContent:
            assert isinstance(block, TextContent)
            if same_model or block.text_signature is None:
                content.append(block)
            else:
                content.append(TextContent(text=block.text))
                changed = True
        else:
            call = cast(ToolCall, block)
            if not same_model and call.thought_signature:
                call = call.model_copy(update={"thought_signature": None})
            if not same_model and normalize_id is not None:
                normalized = normalize_id(call.id)
                if normalized != call.id:
                    id_map[call.id] = normalized
                    call = call.model_copy(update={"id": normalized})
            changed = changed or call is not block
            content.append(call)
    return message.model_copy(update={"content": content}) if changed else message
