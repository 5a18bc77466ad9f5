"""pi-shell-hooks: pi-host hooks written in any language, configured in ``settings.json``.

Each command gets the event as JSON on standard input and answers with JSON on standard
output, or with its exit status (0 allow, 2 block with standard error as the reason) — the
contract of Claude Code's command hooks, so existing scripts need few or no changes::

    {"hooks": {
        "tool_call": [{"matcher": "bash", "hooks": [{"type": "command", "command": "~/hooks/check.py"}]}],
        "session_start": [{"hooks": [{"command": "git status --short"}]}]
    }}

Supported events: ``input``, ``before_agent_start``, ``tool_call``, ``tool_result``,
``turn_end``, ``agent_end``, ``session_start``, ``session_shutdown`` and
``session_before_compact`` (Claude Code's ``UserPromptSubmit``, ``PreToolUse``,
``PostToolUse``, ``Stop``, ``SessionStart``, ``SessionEnd`` and ``PreCompact`` are accepted as
aliases). Every command has a timeout (60 s by default) after which its whole process group
is killed; failures are reported and never wedge the session; ``tool_call`` hooks fail
closed. See ``docs/plugins/shell-hooks.md``.
"""

from __future__ import annotations

from ._config import EVENT_ALIASES, EVENTS, Event, HookCommand, HookConfig, load_config, parse_hooks
from ._plugin import (
    CONTEXT_MESSAGE_TYPE,
    MAX_STOP_CONTINUATIONS,
    ShellHooksState,
    pi_agent_end,
    pi_before_agent_start,
    pi_input,
    pi_session_before_compact,
    pi_session_shutdown,
    pi_session_start,
    pi_tool_call,
    pi_tool_result,
    pi_turn_end,
    run_event,
)
from ._protocol import CONTEXT_EVENTS, HookAnswer, interpret
from ._runner import DEFAULT_TIMEOUT, KILL_GRACE, MAX_OUTPUT, CommandResult, run_command, shell_argv

__all__ = [
    "CONTEXT_EVENTS",
    "CONTEXT_MESSAGE_TYPE",
    "DEFAULT_TIMEOUT",
    "EVENTS",
    "EVENT_ALIASES",
    "KILL_GRACE",
    "MAX_OUTPUT",
    "MAX_STOP_CONTINUATIONS",
    "CommandResult",
    "Event",
    "HookAnswer",
    "HookCommand",
    "HookConfig",
    "ShellHooksState",
    "interpret",
    "load_config",
    "parse_hooks",
    "pi_agent_end",
    "pi_before_agent_start",
    "pi_input",
    "pi_session_before_compact",
    "pi_session_shutdown",
    "pi_session_start",
    "pi_tool_call",
    "pi_tool_result",
    "pi_turn_end",
    "run_command",
    "run_event",
    "shell_argv",
]
