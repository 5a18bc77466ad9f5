"""Session-level events: what an AgentSession adds to the agent loop's events (pi's AgentSessionEvent).

Every run emits :class:`SessionAgentEndEvent`, which lives in :mod:`._agent_end` so that a plain
reply creates none of the other event classes; the session imports each where it emits it.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from pi_host._frozen_fields import FrozenJson, FrozenSeq
from pi_host.messages import AgentEvent, WireModel

from ._agent_end import SessionAgentEndEvent

__all__ = [
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "CompactionEndEvent",
    "CompactionReason",
    "CompactionStartEvent",
    "ExtensionErrorEvent",
    "QueueUpdateEvent",
    "SessionAgentEndEvent",
    "SessionEvent",
    "SessionInfoChangedEvent",
    "ThinkingLevelChangedEvent",
]

CompactionReason: TypeAlias = Literal["manual", "threshold", "overflow"]


class QueueUpdateEvent(WireModel):
    """The full steering and follow-up queues (display texts), after any change."""

    type: Literal["queue_update"] = "queue_update"
    steering: FrozenSeq[str]
    follow_up: FrozenSeq[str]


class CompactionStartEvent(WireModel):
    type: Literal["compaction_start"] = "compaction_start"
    reason: CompactionReason


class CompactionEndEvent(WireModel):
    """Compaction finished, failed (``error_message``) or was aborted."""

    type: Literal["compaction_end"] = "compaction_end"
    reason: CompactionReason
    result: FrozenJson[Any] = None
    aborted: bool = False
    will_retry: bool = False
    error_message: str | None = None


class AutoRetryStartEvent(WireModel):
    type: Literal["auto_retry_start"] = "auto_retry_start"
    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str


class AutoRetryEndEvent(WireModel):
    type: Literal["auto_retry_end"] = "auto_retry_end"
    success: bool
    attempt: int
    final_error: str | None = None


class SessionInfoChangedEvent(WireModel):
    type: Literal["session_info_changed"] = "session_info_changed"
    name: str | None = None


class ThinkingLevelChangedEvent(WireModel):
    type: Literal["thinking_level_changed"] = "thinking_level_changed"
    level: str


class ExtensionErrorEvent(WireModel):
    """A plugin hook raised or returned a wrong value; the run went on (RPC's ``extension_error``)."""

    type: Literal["extension_error"] = "extension_error"
    extension_path: str
    event: str
    error: str


SessionEvent: TypeAlias = (
    AgentEvent
    | SessionAgentEndEvent
    | QueueUpdateEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | AutoRetryStartEvent
    | AutoRetryEndEvent
    | SessionInfoChangedEvent
    | ThinkingLevelChangedEvent
    | ExtensionErrorEvent
)
