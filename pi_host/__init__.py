"""pi-host: a plugin-centric Python framework for AI coding agents.

The public API. Plugins import from here only, never from a ``pi_host._private`` module.
"""

from __future__ import annotations

from pi_host.agent import Tool, ToolArgumentsError, ToolCallContext, ToolExecutionMode
from pi_host.hookspecs import hookimpl
from pi_host.messages import (
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
    ToolResult,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_host.providers import AbortedError, AbortSignal, Model

__version__ = "0.1.0"

__all__ = [
    "AbortSignal",
    "AbortedError",
    "AgentMessage",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "CustomMessage",
    "ImageContent",
    "Model",
    "TextContent",
    "ThinkingContent",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallContext",
    "ToolExecutionMode",
    "ToolResult",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "__version__",
    "hookimpl",
]
