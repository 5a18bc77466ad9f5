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
    "Agent": "pi_host.agent",
    "AgentMessage": "pi_host.messages",
    "AgentSession": "pi_host.runtime",
    "AssistantMessage": "pi_host.messages",
    "BashExecutionMessage": "pi_host.messages",
    "BeforeAgentStartResult": "pi_host.hookspecs",
    "BranchSummary": "pi_host.hookspecs",
    "BranchSummaryMessage": "pi_host.messages",
    "Cancel": "pi_host.hookspecs",
    "Command": "pi_host.hookspecs",
    "CommandContext": "pi_host.hookspecs",
    "CompactionResult": "pi_host.hookspecs",
    "CompactionSummaryMessage": "pi_host.messages",
    "ContextFile": "pi_host.resources",
    "ContinueRun": "pi_host.hookspecs",
    "CustomMessage": "pi_host.messages",
    "DEFAULT_MAX_BYTES": "pi_host.agent",
    "DEFAULT_MAX_LINES": "pi_host.agent",
    "Dispatcher": "pi_host.plugin",
    "Distribution": "pi_host.modes._distribution",
    "ExtensionError": "pi_host.plugin",
    "Flag": "pi_host.hookspecs",
    "HookError": "pi_host.errors",
    "ImageContent": "pi_host.messages",
    "InputHandled": "pi_host.hookspecs",
    "InputTransform": "pi_host.hookspecs",
    "LlmContext": "pi_host.providers",
    "Model": "pi_host.providers",
    "NextTurnUpdate": "pi_host.hookspecs",
    "PiError": "pi_host.errors",
    "PluginContext": "pi_host.hookspecs",
    "PluginInfo": "pi_host.plugin",
    "PluginLoadError": "pi_host.errors",
    "PluginManager": "pi_host.plugin",
    "PluginValidationError": "pi_host.errors",
    "ProjectTrustDecision": "pi_host.hookspecs",
    "PromptTemplate": "pi_host.resources",
    "Provider": "pi_host.providers",
    "ResourceDiagnostic": "pi_host.resources",
    "ResourcePaths": "pi_host.hookspecs",
    "SessionBeforeForkResult": "pi_host.hookspecs",
    "SessionError": "pi_host.runtime",
    "SessionOptions": "pi_host.runtime",
    "Settings": "pi_host.resources",
    "SettingsManager": "pi_host.resources",
    "Skill": "pi_host.resources",
    "Stash": "pi_host.hookspecs",
    "StashKey": "pi_host.hookspecs",
    "StreamOptions": "pi_host.providers",
    "TextContent": "pi_host.messages",
    "ThinkingContent": "pi_host.messages",
    "Tool": "pi_host.agent",
    "ToolArgumentsError": "pi_host.agent",
    "ToolCall": "pi_host.messages",
    "ToolCallBlock": "pi_host.hookspecs",
    "ToolCallContext": "pi_host.agent",
    "ToolCallRewrite": "pi_host.hookspecs",
    "ToolExecutionMode": "pi_host.agent",
    "ToolResult": "pi_host.messages",
    "ToolResultMessage": "pi_host.messages",
    "ToolResultPatch": "pi_host.hookspecs",
    "TreeSummaryResult": "pi_host.hookspecs",
    "TruncationResult": "pi_host.agent",
    "Usage": "pi_host.messages",
    "UsageError": "pi_host.errors",
    "UserBashResult": "pi_host.hookspecs",
    "UserMessage": "pi_host.messages",
    "create_session": "pi_host.runtime",
    "format_size": "pi_host.agent",
    "hookimpl": "pi_host.hookspecs._markers",
    "truncate_head": "pi_host.agent",
    "truncate_line": "pi_host.agent",
    "truncate_tail": "pi_host.agent",
}

# Plain sorted() order (tests/test_public_api.py), not ruff's constants-first order.
__all__ = [  # noqa: RUF022
    "AbortSignal",
    "AbortedError",
    "Agent",
    "AgentMessage",
    "AgentSession",
    "AssistantMessage",
    "BashExecutionMessage",
    "BeforeAgentStartResult",
    "BranchSummary",
    "BranchSummaryMessage",
    "Cancel",
    "Command",
    "CommandContext",
    "CompactionResult",
    "CompactionSummaryMessage",
    "ContextFile",
    "ContinueRun",
    "CustomMessage",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "Dispatcher",
    "Distribution",
    "ExtensionError",
    "Flag",
    "HookError",
    "ImageContent",
    "InputHandled",
    "InputTransform",
    "LlmContext",
    "Model",
    "NextTurnUpdate",
    "PiError",
    "PluginContext",
    "PluginInfo",
    "PluginLoadError",
    "PluginManager",
    "PluginValidationError",
    "ProjectTrustDecision",
    "PromptTemplate",
    "Provider",
    "ResourceDiagnostic",
    "ResourcePaths",
    "SessionBeforeForkResult",
    "SessionError",
    "SessionOptions",
    "Settings",
    "SettingsManager",
    "Skill",
    "Stash",
    "StashKey",
    "StreamOptions",
    "TextContent",
    "ThinkingContent",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallBlock",
    "ToolCallContext",
    "ToolCallRewrite",
    "ToolExecutionMode",
    "ToolResult",
    "ToolResultMessage",
    "ToolResultPatch",
    "TreeSummaryResult",
    "TruncationResult",
    "Usage",
    "UsageError",
    "UserBashResult",
    "UserMessage",
    "__version__",
    "create_session",
    "format_size",
    "hookimpl",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
]

if TYPE_CHECKING:
    from pi_host.agent import (
        DEFAULT_MAX_BYTES,
        DEFAULT_MAX_LINES,
        Agent,
        Tool,
        ToolArgumentsError,
        ToolCallContext,
        ToolExecutionMode,
        TruncationResult,
        format_size,
        truncate_head,
        truncate_line,
        truncate_tail,
    )
    from pi_host.errors import (
        HookError,
        PiError,
        PluginLoadError,
        PluginValidationError,
        UsageError,
    )
    from pi_host.hookspecs import (
        BeforeAgentStartResult,
        BranchSummary,
        Cancel,
        Command,
        CommandContext,
        CompactionResult,
        ContinueRun,
        Flag,
        InputHandled,
        InputTransform,
        NextTurnUpdate,
        PluginContext,
        ProjectTrustDecision,
        ResourcePaths,
        SessionBeforeForkResult,
        Stash,
        StashKey,
        ToolCallBlock,
        ToolCallRewrite,
        ToolResultPatch,
        TreeSummaryResult,
        UserBashResult,
    )
    from pi_host.hookspecs._markers import (
        hookimpl,
    )
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
    from pi_host.modes._distribution import (
        Distribution,
    )
    from pi_host.plugin import (
        Dispatcher,
        ExtensionError,
        PluginInfo,
        PluginManager,
    )
    from pi_host.providers import (
        AbortedError,
        AbortSignal,
        LlmContext,
        Model,
        Provider,
        StreamOptions,
    )
    from pi_host.resources import (
        ContextFile,
        PromptTemplate,
        ResourceDiagnostic,
        Settings,
        SettingsManager,
        Skill,
    )
    from pi_host.runtime import (
        AgentSession,
        SessionError,
        SessionOptions,
        create_session,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pi_host' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
