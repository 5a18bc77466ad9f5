"""pi-subagents: child agents with their own context, tools and model, run in parallel as linked sessions.

Install it and the model gets a ``task`` tool (Claude Code's ``Task``): each call runs a child
session in-process with the chosen agent definition's system prompt, tools and model, and
returns only the child's final answer. Several calls in one turn run in parallel. Agents are
Claude Code's ``agents/*.md`` files, from ``<agent dir>/agents/`` and, in a trusted project,
``.claude/agents/`` and ``.pi/agents/``; a ``general-purpose`` agent is built in. ``/agents``
lists them and the children running. See ``docs/user-guide/subagents.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._plugin import (
    agents_report,
    pi_agent_start,
    pi_before_agent_start,
    pi_register_commands,
    pi_register_rpc_commands,
    pi_register_settings,
    pi_register_shortcuts,
    pi_register_tool_renderers,
    pi_register_tools,
    pi_session_start,
)

if TYPE_CHECKING:
    from ._definitions import (
        BUILTIN_AGENT,
        CLAUDE_MODEL_ALIASES,
        CLAUDE_TOOL_NAMES,
        PROJECT_DIRS,
        USER_DIR,
        AgentDefinition,
        DefinitionProblem,
        LoadedDefinitions,
        load_definitions,
        parse_definition,
    )
    from ._events import SubagentDefinitionErrorEvent, SubagentEndEvent, SubagentEvent, SubagentStartEvent
    from ._settings import SubagentSettings

__all__ = [
    "BUILTIN_AGENT",
    "CLAUDE_MODEL_ALIASES",
    "CLAUDE_TOOL_NAMES",
    "PROJECT_DIRS",
    "USER_DIR",
    "AgentDefinition",
    "DefinitionProblem",
    "LoadedDefinitions",
    "SubagentDefinitionErrorEvent",
    "SubagentEndEvent",
    "SubagentEvent",
    "SubagentSettings",
    "SubagentStartEvent",
    "agents_report",
    "load_definitions",
    "parse_definition",
    "pi_agent_start",
    "pi_before_agent_start",
    "pi_register_commands",
    "pi_register_rpc_commands",
    "pi_register_settings",
    "pi_register_shortcuts",
    "pi_register_tool_renderers",
    "pi_register_tools",
    "pi_session_start",
]

# The entry point is imported by every pi-host start, --help included: the definitions, events
# and settings (pydantic models) load on first use.
_LAZY: dict[str, str] = {
    "BUILTIN_AGENT": "_definitions",
    "CLAUDE_MODEL_ALIASES": "_definitions",
    "CLAUDE_TOOL_NAMES": "_definitions",
    "PROJECT_DIRS": "_definitions",
    "USER_DIR": "_definitions",
    "AgentDefinition": "_definitions",
    "DefinitionProblem": "_definitions",
    "LoadedDefinitions": "_definitions",
    "load_definitions": "_definitions",
    "parse_definition": "_definitions",
    "SubagentDefinitionErrorEvent": "_events",
    "SubagentEndEvent": "_events",
    "SubagentEvent": "_events",
    "SubagentStartEvent": "_events",
    "SubagentSettings": "_settings",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
