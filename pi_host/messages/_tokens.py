"""pi's token estimates: characters / 4 per message, anchored on the last reported usage.

No tokenizer: the context size is the last successful reply's usage plus an estimate of what
followed it, as pi computes it for the footer, context usage and the compaction trigger.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from ._content import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = ["context_tokens", "estimate_context_tokens", "estimate_tokens"]

# An image counts as this many characters (1,200 tokens), as pi estimates.
_IMAGE_CHARS = 4800


def _blocks_chars(content: str | Sequence[Any]) -> int:
    if isinstance(content, str):
        return len(content)
    chars = 0
    for block in content:
        if isinstance(block, TextContent):
            chars += len(block.text)
        elif isinstance(block, ImageContent):
            chars += _IMAGE_CHARS
    return chars


def _js_json(value: Any) -> str:
    """``JSON.stringify`` spacing, so estimates match pi's."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def estimate_tokens(message: AgentMessage) -> int:
    """Conservative size of one message: characters / 4, rounded up (pi's ``estimateTokens``)."""
    if isinstance(message, UserMessage):
        chars = _blocks_chars(message.content)
    elif isinstance(message, AssistantMessage):
        chars = 0
        for block in message.content:
            if isinstance(block, TextContent):
                chars += len(block.text)
            elif isinstance(block, ThinkingContent):
                chars += len(block.thinking)
            elif isinstance(block, ToolCall):
                chars += len(block.name) + len(_js_json(block.arguments))
    elif isinstance(message, ToolResultMessage | CustomMessage):
        chars = _blocks_chars(message.content)
    elif isinstance(message, BashExecutionMessage):
        chars = len(message.command) + len(message.output)
    elif isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
        chars = len(message.summary)
    else:
        return 0
    return math.ceil(chars / 4)


def context_tokens(message: AssistantMessage) -> int:
    """Tokens a reply's usage says the context held (pi's ``calculateContextTokens``)."""
    usage = message.usage
    return usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write


def estimate_context_tokens(messages: Sequence[AgentMessage]) -> int:
    """The last usable reply's usage plus estimates of what followed it (all estimated if none).

    A reply is usable when it neither failed nor was aborted and reported some usage.
    """
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if (
            isinstance(message, AssistantMessage)
            and message.stop_reason not in ("aborted", "error")
            and context_tokens(message) > 0
        ):
            return context_tokens(message) + sum(estimate_tokens(m) for m in messages[index + 1 :])
    return sum(estimate_tokens(m) for m in messages)
