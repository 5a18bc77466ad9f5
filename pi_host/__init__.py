"""pi-host: a plugin-centric Python framework for AI coding agents.

The public API. Plugins import from here only, never from a ``pi_host._private`` module.

Names are imported lazily on first access (PEP 562), so ``import pi_host`` and the
``pi-host --version`` path cost almost nothing; type checkers see ordinary imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "AbortSignal": "pi_host.providers",
    "AbortedError": "pi_host.providers",
    "AgentMessage": "pi_host.messages",
    "AssistantMessage": "pi_host.messages",
    "BashExecutionMessage": "pi_host.messages",
    "BranchSummaryMessage": "pi_host.messages",
    "CompactionSummaryMessage": "pi_host.messages",
    "CustomMessage": "pi_host.messages",
    "ImageContent": "pi_host.messages",
    "Model": "pi_host.providers",
    "TextContent": "pi_host.messages",
    "ThinkingContent": "pi_host.messages",
    "Tool": "pi_host.agent",
    "ToolArgumentsError": "pi_host.agent",
    "ToolCall": "pi_host.messages",
    "ToolCallContext": "pi_host.agent",
    "ToolExecutionMode": "pi_host.agent",
    "ToolResult": "pi_host.messages",
    "ToolResultMessage": "pi_host.messages",
    "Usage": "pi_host.messages",
    "UserMessage": "pi_host.messages",
    "hookimpl": "pi_host.hookspecs._markers",
}

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

if TYPE_CHECKING:
    from pi_host.agent import Tool, ToolArgumentsError, ToolCallContext, ToolExecutionMode
    from pi_host.hookspecs._markers import hookimpl
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pi_host' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
