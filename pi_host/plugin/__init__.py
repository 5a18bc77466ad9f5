"""Layer 3, the plugin machinery: the async dispatcher, the plugin manager and discovery.

- :class:`PluginManager`: a fresh pluggy registry per host, with pi-host's rules and the
  plugin tiers (:data:`TIER_ORDER`: a later tier comes first in every call order);
- :func:`load_plugins`: essentials, then the default set, then the other installed plugins
  (entry-point group ``pi_host.plugins``), each failure isolated and reported in one line;
- :func:`load_local_plugins`: a trusted project's ``.pi/plugins/*.py``;
- :func:`load_extensions`: ``pi-host -e PATH`` plugins, for one run;
- :class:`Dispatcher`: awaits lifecycle hooks one implementation at a time and combines their
  results per the hook's :class:`~pi_host.hookspecs.Strategy` (the reducers are exported for
  testing pipelines without an event loop).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_host import _lazy

if TYPE_CHECKING:
    from ._discovery import ENTRY_POINT_GROUP, InstalledPlugin, installed_plugins, load_entrypoint_plugins
    from ._dispatch import Dispatcher, ErrorListener, ExtensionError
    from ._extensions import load_extensions
    from ._info import Conflict, PluginInfo
    from ._loading import DISABLE_ENV, PLUGINS_ENV, PluginControls, load_plugins, parse_plugin_names
    from ._local import LOCAL_PLUGIN_DIR, load_local_plugins, local_plugin_files
    from ._manager import (
        ESSENTIAL_PLUGINS,
        TIER_ORDER,
        PluginManager,
        PluginSource,
        PluginStatus,
        PluginTier,
        default_distributions,
    )
    from ._strategies import Reducer, ResultRejected, Step, VetoFailure, reducer_for
    from ._timeouts import HOOK_TIMEOUT_ENV, HookAborted, HookTimeout
    from ._trace import TRACE_ENV

__all__ = [
    "DISABLE_ENV",
    "ENTRY_POINT_GROUP",
    "ESSENTIAL_PLUGINS",
    "HOOK_TIMEOUT_ENV",
    "LOCAL_PLUGIN_DIR",
    "PLUGINS_ENV",
    "TIER_ORDER",
    "TRACE_ENV",
    "Conflict",
    "Dispatcher",
    "ErrorListener",
    "ExtensionError",
    "HookAborted",
    "HookTimeout",
    "InstalledPlugin",
    "PluginControls",
    "PluginInfo",
    "PluginManager",
    "PluginSource",
    "PluginStatus",
    "PluginTier",
    "Reducer",
    "ResultRejected",
    "Step",
    "VetoFailure",
    "default_distributions",
    "installed_plugins",
    "load_entrypoint_plugins",
    "load_extensions",
    "load_local_plugins",
    "load_plugins",
    "local_plugin_files",
    "parse_plugin_names",
    "reducer_for",
]

# Names are imported on first access (PEP 562): ``pi-host --help`` loads plugins with the
# manager and discovery alone, without the dispatcher and its result reducers.
_EXPORTS: dict[str, str] = {
    "Conflict": "_info",
    "default_distributions": "_manager",
    "DISABLE_ENV": "_loading",
    "HOOK_TIMEOUT_ENV": "_timeouts",
    "HookAborted": "_timeouts",
    "HookTimeout": "_timeouts",
    "PluginTier": "_manager",
    "TIER_ORDER": "_manager",
    "VetoFailure": "_strategies",
    "load_extensions": "_extensions",
    "Dispatcher": "_dispatch",
    "ENTRY_POINT_GROUP": "_discovery",
    "ESSENTIAL_PLUGINS": "_manager",
    "ErrorListener": "_dispatch",
    "ExtensionError": "_dispatch",
    "InstalledPlugin": "_discovery",
    "LOCAL_PLUGIN_DIR": "_local",
    "PLUGINS_ENV": "_loading",
    "PluginControls": "_loading",
    "PluginInfo": "_info",
    "PluginManager": "_manager",
    "PluginSource": "_manager",
    "PluginStatus": "_manager",
    "Reducer": "_strategies",
    "ResultRejected": "_strategies",
    "Step": "_strategies",
    "TRACE_ENV": "_trace",
    "installed_plugins": "_discovery",
    "load_entrypoint_plugins": "_discovery",
    "load_local_plugins": "_local",
    "load_plugins": "_loading",
    "local_plugin_files": "_local",
    "parse_plugin_names": "_loading",
    "reducer_for": "_strategies",
}


__getattr__, __dir__ = _lazy.lazy_exports(__name__, _EXPORTS, __all__)
