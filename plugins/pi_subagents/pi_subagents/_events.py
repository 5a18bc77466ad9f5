"""The events pi-subagents emits: JSON and RPC clients see them as lines of their own type."""

from __future__ import annotations

from typing import Any, Literal

from pi_host import PluginEvent

__all__ = [
    "FORWARDED_EVENTS",
    "SubagentDefinitionErrorEvent",
    "SubagentEndEvent",
    "SubagentEvent",
    "SubagentStartEvent",
]

FORWARDED_EVENTS = frozenset(
    {
        "agent_start",
        "agent_end",
        "turn_start",
        "turn_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
        "auto_retry_start",
        "auto_retry_end",
        "compaction_start",
        "compaction_end",
        "subagent_start",
        "subagent_event",
        "subagent_end",
    }
)
"""The child's events its parent's clients see: its own, and (nested) those of its children.
Streaming deltas (``message_update``) stay in the child: its ``message_end`` carries the whole
message."""


class SubagentStartEvent(PluginEvent):
    """A child started: ``{"type": "subagent_start", "subagentId": ..., "sessionFile": ...}``.

    :ivar subagent_id: the child's session id, which tags every event of the child.
    :ivar tool_call_id: the parent's ``task`` call the child answers.
    :ivar session_file: the child's session file, or ``<store URI>#<id>`` when sessions are
        kept in a store (``--session-store``); ``pi-host --session`` resumes either. ``None``
        when the parent keeps no session.
    """

    type: Literal["subagent_start"] = "subagent_start"
    subagent_id: str
    tool_call_id: str
    agent: str
    description: str
    depth: int
    session_file: str | None = None
    cwd: str


class SubagentEvent(PluginEvent):
    """One event of a running child (``event`` is the child's own event line)."""

    type: Literal["subagent_event"] = "subagent_event"
    subagent_id: str
    tool_call_id: str
    agent: str
    event: dict[str, Any]


class SubagentEndEvent(PluginEvent):
    """A child ended: ``status`` ``done``, ``error``, ``aborted`` or ``budget``."""

    type: Literal["subagent_end"] = "subagent_end"
    subagent_id: str
    tool_call_id: str
    agent: str
    status: Literal["done", "error", "aborted", "budget"]
    turns: int
    cost: float
    session_file: str | None = None
    branch: str | None = None
    error: str | None = None


class SubagentDefinitionErrorEvent(PluginEvent):
    """An ``agents/*.md`` file that was skipped, with the line at fault."""

    type: Literal["subagent_definition_error"] = "subagent_definition_error"
    path: str
    line: int
    message: str
