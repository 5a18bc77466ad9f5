"""Layer 2, the hook specifications: one module per lifecycle area, hooks in firing order.

- :mod:`~pi_host.hookspecs.bootstrap`: ``pi_addhooks``, ``pi_configure`` (setup, historic)
- :mod:`~pi_host.hookspecs.registration`: ``pi_register_providers|tools|tool_middleware|commands|flags``,
  ``pi_register_settings|abort_scopes``, ``pi_register_shortcuts|message_renderers|tool_renderers``
- :mod:`~pi_host.hookspecs.resources`: ``pi_project_trust``, ``pi_resources_discover``
- :mod:`~pi_host.hookspecs.session`: ``pi_session_*``, ``pi_summarize_branch``
- :mod:`~pi_host.hookspecs.input`: ``pi_input``, ``pi_before_prompt``, ``pi_before_agent_start``,
  ``pi_user_bash``
- :mod:`~pi_host.hookspecs.agent`: ``pi_agent_*``, ``pi_turn_*``, ``pi_prepare_next_turn``,
  ``pi_will_continue_run``, ``pi_after_agent_run``
- :mod:`~pi_host.hookspecs.provider`: ``pi_context``, ``pi_before|after_provider_*``
- :mod:`~pi_host.hookspecs.message`: ``pi_message_start|update|end``
- :mod:`~pi_host.hookspecs.tool`: ``pi_tool_call``, ``pi_tool_result``, ``pi_tool_execution_*``
- :mod:`~pi_host.hookspecs.model`: ``pi_model_select``, ``pi_thinking_level_select``

Every hook's docstring is its reference documentation: when it fires, its arguments, what it
may return, how results combine (its :class:`Strategy`), its error policy, and an example.
Implement hooks with :data:`hookimpl`; results are the frozen models exported here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._context import (
        CommandContext,
        ContextUsage,
        DeliverAs,
        ExecResult,
        HookImplementation,
        HostConfig,
        Mode,
        NotifyLevel,
        PluginContext,
        PluginUI,
        SessionView,
    )
    from ._markers import PROJECT_NAME, hookimpl
    from ._payloads import (
        CompactionPreparation,
        CompactionReason,
        EntryView,
        FileOperations,
        InputSource,
        ModelSelectSource,
        SessionShutdownReason,
        SessionStartReason,
        StreamingBehavior,
        TreePreparation,
    )
    from ._reducers import Reducer, ResultRejected, Step, VetoFailure, reducer_for
    from ._registration import (
        AbortScope,
        Command,
        Flag,
        FlagType,
        MessageRenderer,
        RpcCommand,
        SettingsSection,
        Shortcut,
        ToolCallView,
        ToolRenderer,
    )
    from ._results import (
        BeforeAgentStartOutcome,
        BeforeAgentStartResult,
        BranchSummary,
        Cancel,
        CompactionResult,
        ContinueRun,
        DiscoveredResources,
        HookResult,
        InputHandled,
        InputTransform,
        NextTurnUpdate,
        ProjectTrustDecision,
        ResourcePaths,
        SessionBeforeForkResult,
        SourcedPath,
        ToolCallBlock,
        ToolCallRewrite,
        ToolResultPatch,
        TreeSummaryResult,
        UserBashResult,
    )
    from ._stash import Stash, StashKey
    from ._strategy import HookContract, Strategy, get_contract, hookspec

    SPEC_MODULES: tuple[ModuleType, ...]

__all__ = [
    "PROJECT_NAME",
    "SPEC_MODULES",
    "AbortScope",
    "BeforeAgentStartOutcome",
    "BeforeAgentStartResult",
    "BranchSummary",
    "Cancel",
    "Command",
    "CommandContext",
    "CompactionPreparation",
    "CompactionReason",
    "CompactionResult",
    "ContextUsage",
    "ContinueRun",
    "DeliverAs",
    "DiscoveredResources",
    "EntryView",
    "ExecResult",
    "FileOperations",
    "Flag",
    "FlagType",
    "HookContract",
    "HookImplementation",
    "HookResult",
    "HostConfig",
    "InputHandled",
    "InputSource",
    "InputTransform",
    "MessageRenderer",
    "Mode",
    "ModelSelectSource",
    "NextTurnUpdate",
    "NotifyLevel",
    "PluginContext",
    "PluginUI",
    "ProjectTrustDecision",
    "Reducer",
    "ResourcePaths",
    "ResultRejected",
    "RpcCommand",
    "SessionBeforeForkResult",
    "SessionShutdownReason",
    "SessionStartReason",
    "SessionView",
    "SettingsSection",
    "Shortcut",
    "SourcedPath",
    "Stash",
    "StashKey",
    "Step",
    "Strategy",
    "StreamingBehavior",
    "ToolCallBlock",
    "ToolCallRewrite",
    "ToolCallView",
    "ToolRenderer",
    "ToolResultPatch",
    "TreePreparation",
    "TreeSummaryResult",
    "UserBashResult",
    "VetoFailure",
    "get_contract",
    "hookimpl",
    "hookspec",
    "iter_hookspecs",
    "reducer_for",
]

_SPEC_MODULE_NAMES = (
    "bootstrap",
    "registration",
    "resources",
    "session",
    "input",
    "agent",
    "provider",
    "message",
    "tool",
    "model",
)
"""The hookspec modules in lifecycle order: :data:`SPEC_MODULES` once imported."""

# Names are imported on first access (PEP 562): a plugin's ``from pi_host import hookimpl``
# and ``pi-host --help`` need pluggy's markers and the registration hooks, not the result
# models (pydantic, the message models) that the lifecycle hookspecs refer to.
_EXPORTS: dict[str, str] = {
    "AbortScope": "_registration",
    "BeforeAgentStartOutcome": "_results",
    "BeforeAgentStartResult": "_results",
    "BranchSummary": "_results",
    "Cancel": "_results",
    "Command": "_registration",
    "RpcCommand": "_registration",
    "CommandContext": "_context",
    "CompactionPreparation": "_payloads",
    "CompactionReason": "_payloads",
    "CompactionResult": "_results",
    "ContextUsage": "_context",
    "ContinueRun": "_results",
    "DeliverAs": "_context",
    "DiscoveredResources": "_results",
    "EntryView": "_payloads",
    "ExecResult": "_context",
    "HookImplementation": "_context",
    "FileOperations": "_payloads",
    "Flag": "_registration",
    "FlagType": "_registration",
    "HookContract": "_strategy",
    "HookResult": "_results",
    "HostConfig": "_context",
    "InputHandled": "_results",
    "InputSource": "_payloads",
    "InputTransform": "_results",
    "MessageRenderer": "_registration",
    "Mode": "_context",
    "ModelSelectSource": "_payloads",
    "NextTurnUpdate": "_results",
    "NotifyLevel": "_context",
    "PROJECT_NAME": "_markers",
    "PluginContext": "_context",
    "PluginUI": "_context",
    "ProjectTrustDecision": "_results",
    "Reducer": "_reducers",
    "ResultRejected": "_reducers",
    "Step": "_reducers",
    "VetoFailure": "_reducers",
    "ResourcePaths": "_results",
    "SessionBeforeForkResult": "_results",
    "SessionShutdownReason": "_payloads",
    "SessionStartReason": "_payloads",
    "SessionView": "_context",
    "SettingsSection": "_registration",
    "Shortcut": "_registration",
    "SourcedPath": "_results",
    "Stash": "_stash",
    "StashKey": "_stash",
    "Strategy": "_strategy",
    "StreamingBehavior": "_payloads",
    "ToolCallBlock": "_results",
    "ToolCallView": "_registration",
    "ToolRenderer": "_registration",
    "ToolCallRewrite": "_results",
    "ToolResultPatch": "_results",
    "TreePreparation": "_payloads",
    "TreeSummaryResult": "_results",
    "UserBashResult": "_results",
    "get_contract": "_strategy",
    "hookimpl": "_markers",
    "hookspec": "_strategy",
    "reducer_for": "_reducers",
}


def __getattr__(name: str) -> Any:
    value: Any
    if name == "SPEC_MODULES":
        value = _spec_modules()
    elif name in _SPEC_MODULE_NAMES:
        value = importlib.import_module(f"{__name__}.{name}")
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def _spec_modules() -> tuple[ModuleType, ...]:
    """The hookspec modules in lifecycle order; the plugin manager adds each of them."""
    return tuple(importlib.import_module(f"{__name__}.{module}") for module in _SPEC_MODULE_NAMES)


def __dir__() -> list[str]:
    return sorted({*__all__, *_SPEC_MODULE_NAMES})


def iter_hookspecs() -> Iterator[tuple[ModuleType, Callable[..., Any], HookContract]]:
    """Every ``pi_*`` hookspec as ``(module, function, contract)``, in documentation order.

    Modules come in :data:`SPEC_MODULES` order and hooks in the order their module declares
    them, which is the order they fire in.
    """
    from ._strategy import get_contract

    for module in _spec_modules():
        for name, value in vars(module).items():
            contract = get_contract(value)
            if name.startswith("pi_") and contract is not None:
                yield module, value, contract
