"""The loop's tool-call callbacks: what ``before_tool_call`` and ``after_tool_call`` see and answer.

Their own module so that a run which calls no tool creates none of these classes: the loop
imports them with its first tool call, :mod:`pi_host.agent` on first access.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from pi_host.providers import AbortSignal

if TYPE_CHECKING:
    from pydantic import BaseModel

    from pi_host.messages import AssistantMessage, ImageContent, TextContent, ToolCall, ToolResult

    from ._loop import AgentContext

__all__ = [
    "AfterToolCall",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "BeforeToolCall",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
]


@dataclass(frozen=True)
class BeforeToolCallContext:
    """What ``before_tool_call`` sees: the call and its validated arguments.

    :ivar args: the validated parameters model. Return replaced ``args`` in
        :class:`BeforeToolCallResult` (or mutate this one) to change what the tool receives;
        replacements are not validated again.
    """

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: BaseModel
    context: AgentContext


@dataclass(frozen=True)
class BeforeToolCallResult:
    """``before_tool_call``'s verdict: block the call (``reason`` is what the model reads) or
    replace its arguments."""

    block: bool = False
    reason: str | None = None
    args: BaseModel | None = None


@dataclass(frozen=True)
class AfterToolCallContext:
    """What ``after_tool_call`` sees: the call, its arguments and its result so far."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: BaseModel
    result: ToolResult
    is_error: bool
    context: AgentContext


@dataclass(frozen=True)
class AfterToolCallResult:
    """Overrides for a tool's result. Each field given replaces the result's field whole
    (no deep merge); ``None`` keeps it."""

    content: list[TextContent | ImageContent] | None = None
    details: Any = None
    is_error: bool | None = None
    terminate: bool | None = None


BeforeToolCall: TypeAlias = Callable[
    [BeforeToolCallContext, AbortSignal], Awaitable[BeforeToolCallResult | None]
]
AfterToolCall: TypeAlias = Callable[
    [AfterToolCallContext, AbortSignal], Awaitable[AfterToolCallResult | None]
]
