"""Layer 5, the coding runtime: AgentSession (pi's prompt pipeline, events, persistence) and its factory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_host import _lazy

if TYPE_CHECKING:
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
    )
    from ._host import BUILTIN_TOOL_NAMES, ESSENTIALS, Host
    from ._models import ModelResolver
    from ._plugin_events import PluginEvent
    from ._session import (
        AgentSession,
        SessionError,
        SessionImport,
        SessionListener,
        TreeNavigation,
        clamp_thinking_level,
    )
    from ._settings import settings_disabled_plugins

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "DEFAULT_ACTIVE_TOOLS",
    "DEFAULT_THINKING_LEVEL",
    "ESSENTIALS",
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
    "PluginEvent",
    "QueueUpdateEvent",
    "SessionAgentEndEvent",
    "SessionError",
    "SessionEvent",
    "SessionImport",
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

# Names are imported on first access (PEP 562): ``pi-host --help`` needs the plugin
# loading of _host and the settings of _settings, not the session machinery.
_EXPORTS: dict[str, str] = {
    "AgentSession": "_session",
    "AutoRetryEndEvent": "_events",
    "AutoRetryStartEvent": "_events",
    "BUILTIN_TOOL_NAMES": "_host",
    "CompactionEndEvent": "_events",
    "CompactionReason": "_events",
    "CompactionStartEvent": "_events",
    "DEFAULT_ACTIVE_TOOLS": "_factory",
    "DEFAULT_THINKING_LEVEL": "_factory",
    "ESSENTIALS": "_host",
    "ExtensionErrorEvent": "_events",
    "Host": "_host",
    "ModelResolver": "_models",
    "NullUI": "_context",
    "PluginEvent": "_plugin_events",
    "QueueUpdateEvent": "_events",
    "SessionAgentEndEvent": "_events",
    "SessionError": "_session",
    "SessionEvent": "_events",
    "SessionImport": "_session",
    "SessionInfoChangedEvent": "_events",
    "SessionListener": "_session",
    "SessionOptions": "_factory",
    "SessionPluginContext": "_context",
    "ThinkingLevelChangedEvent": "_events",
    "TreeNavigation": "_session",
    "clamp_thinking_level": "_session",
    "create_session": "_factory",
    "settings_disabled_plugins": "_settings",
}


__getattr__, __dir__ = _lazy.lazy_exports(__name__, _EXPORTS, __all__)
