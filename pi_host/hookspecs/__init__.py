"""Layer 2, the hook specifications: one module per lifecycle area, hooks in firing order.

- :mod:`~pi_host.hookspecs.bootstrap`: ``pi_addhooks``, ``pi_configure`` (setup, historic)
- :mod:`~pi_host.hookspecs.registration`: ``pi_register_providers|tools|commands|flags``
- :mod:`~pi_host.hookspecs.resources`: ``pi_project_trust``, ``pi_resources_discover``
- :mod:`~pi_host.hookspecs.session`: ``pi_session_*``, ``pi_summarize_branch``
- :mod:`~pi_host.hookspecs.input`: ``pi_input``, ``pi_before_prompt``, ``pi_before_agent_start``,
  ``pi_user_bash``
- :mod:`~pi_host.hookspecs.agent`: ``pi_agent_*``, ``pi_turn_*``, ``pi_prepare_next_turn``,
  ``pi_will_retry``, ``pi_after_agent_run``
- :mod:`~pi_host.hookspecs.provider`: ``pi_context``, ``pi_before|after_provider_*``
- :mod:`~pi_host.hookspecs.message`: ``pi_message_start|update|end``
- :mod:`~pi_host.hookspecs.tool`: ``pi_tool_call``, ``pi_tool_result``, ``pi_tool_execution_*``
- :mod:`~pi_host.hookspecs.model`: ``pi_model_select``, ``pi_thinking_level_select``

Every hook's docstring is its reference documentation: when it fires, its arguments, what it
may return, how results combine (its :class:`Strategy`), its error policy, and an example.
Implement hooks with :data:`hookimpl`; results are the frozen models exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from . import agent, bootstrap, input, message, model, provider, registration, resources, session, tool
from ._context import (
    CommandContext,
    ContextUsage,
    DeliverAs,
    ExecResult,
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
    CompactionSettings,
    EntryView,
    FileOperations,
    InputSource,
    ModelSelectSource,
    SessionShutdownReason,
    SessionStartReason,
    StreamingBehavior,
    TreePreparation,
)
from ._registration import Command, Flag, FlagType
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

__all__ = [
    "PROJECT_NAME",
    "SPEC_MODULES",
    "BeforeAgentStartOutcome",
    "BeforeAgentStartResult",
    "BranchSummary",
    "Cancel",
    "Command",
    "CommandContext",
    "CompactionPreparation",
    "CompactionReason",
    "CompactionResult",
    "CompactionSettings",
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
    "HookResult",
    "HostConfig",
    "InputHandled",
    "InputSource",
    "InputTransform",
    "Mode",
    "ModelSelectSource",
    "NextTurnUpdate",
    "NotifyLevel",
    "PluginContext",
    "PluginUI",
    "ProjectTrustDecision",
    "ResourcePaths",
    "SessionBeforeForkResult",
    "SessionShutdownReason",
    "SessionStartReason",
    "SessionView",
    "SourcedPath",
    "Stash",
    "StashKey",
    "Strategy",
    "StreamingBehavior",
    "ToolCallBlock",
    "ToolCallRewrite",
    "ToolResultPatch",
    "TreePreparation",
    "TreeSummaryResult",
    "UserBashResult",
    "get_contract",
    "hookimpl",
    "hookspec",
    "iter_hookspecs",
]

SPEC_MODULES: tuple[ModuleType, ...] = (
    bootstrap,
    registration,
    resources,
    session,
    input,
    agent,
    provider,
    message,
    tool,
    model,
)
"""The hookspec modules in lifecycle order; the plugin manager adds each of them."""


def iter_hookspecs() -> Iterator[tuple[ModuleType, Callable[..., Any], HookContract]]:
    """Every ``pi_*`` hookspec as ``(module, function, contract)``, in documentation order.

    Modules come in :data:`SPEC_MODULES` order and hooks in the order their module declares
    them, which is the order they fire in.
    """
    for module in SPEC_MODULES:
        for name, value in vars(module).items():
            contract = get_contract(value)
            if name.startswith("pi_") and contract is not None:
                yield module, value, contract
