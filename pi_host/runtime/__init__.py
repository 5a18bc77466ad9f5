"""Layer 5, the coding runtime: AgentSession (pi's prompt pipeline, events, persistence) and its factory."""

from __future__ import annotations

from ._context import NullUI, SessionPluginContext
from ._events import (
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionEndEvent,
    CompactionReason,
    CompactionStartEvent,
    ExtensionErrorEvent,
    QueueUpdateEvent,
    SessionAgentEndEvent,
    SessionEvent,
    SessionInfoChangedEvent,
    ThinkingLevelChangedEvent,
)
from ._factory import (
    DEFAULT_ACTIVE_TOOLS,
    DEFAULT_THINKING_LEVEL,
    SessionOptions,
    create_session,
    settings_disabled_plugins,
)
from ._host import BUILTIN_TOOL_NAMES, ESSENTIALS, Host
from ._models import ModelResolver
from ._session import (
    ABORT_REQUESTED,
    RETRY_ATTEMPT,
    AgentSession,
    SessionError,
    SessionListener,
    TreeNavigation,
    clamp_thinking_level,
)

__all__ = [
    "ABORT_REQUESTED",
    "BUILTIN_TOOL_NAMES",
    "DEFAULT_ACTIVE_TOOLS",
    "DEFAULT_THINKING_LEVEL",
    "ESSENTIALS",
    "RETRY_ATTEMPT",
    "AgentSession",
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "CompactionEndEvent",
    "CompactionReason",
    "CompactionStartEvent",
    "ExtensionErrorEvent",
    "Host",
    "ModelResolver",
    "NullUI",
    "QueueUpdateEvent",
    "SessionAgentEndEvent",
    "SessionError",
    "SessionEvent",
    "SessionInfoChangedEvent",
    "SessionListener",
    "SessionOptions",
    "SessionPluginContext",
    "ThinkingLevelChangedEvent",
    "TreeNavigation",
    "clamp_thinking_level",
    "create_session",
    "settings_disabled_plugins",
]
