"""Layer 3, the plugin machinery: the async dispatcher, the plugin manager and discovery.

- :class:`PluginManager`: a fresh pluggy registry per host, with pi-host's rules;
- :func:`load_plugins`: essentials, then installed plugins (entry-point group
  ``pi_host.plugins``), each failure isolated and reported in one line;
- :func:`load_local_plugins`: a trusted project's ``.pi/plugins/*.py``;
- :class:`Dispatcher`: awaits lifecycle hooks one implementation at a time and combines their
  results per the hook's :class:`~pi_host.hookspecs.Strategy` (the reducers are exported for
  testing pipelines without an event loop).
"""

from __future__ import annotations

from ._discovery import ENTRY_POINT_GROUP, InstalledPlugin, installed_plugins, load_entrypoint_plugins
from ._dispatch import Dispatcher, ErrorListener, ExtensionError
from ._loading import DISABLE_ENV, PLUGINS_ENV, PluginControls, load_plugins, parse_plugin_names
from ._local import LOCAL_PLUGIN_DIR, load_local_plugins, local_plugin_files
from ._manager import ESSENTIAL_PLUGINS, PluginInfo, PluginManager, PluginSource, PluginStatus
from ._strategies import Reducer, ResultRejected, Step, reducer_for
from ._trace import TRACE_ENV

__all__ = [
    "DISABLE_ENV",
    "ENTRY_POINT_GROUP",
    "ESSENTIAL_PLUGINS",
    "LOCAL_PLUGIN_DIR",
    "PLUGINS_ENV",
    "TRACE_ENV",
    "Dispatcher",
    "ErrorListener",
    "ExtensionError",
    "InstalledPlugin",
    "PluginControls",
    "PluginInfo",
    "PluginManager",
    "PluginSource",
    "PluginStatus",
    "Reducer",
    "ResultRejected",
    "Step",
    "installed_plugins",
    "load_entrypoint_plugins",
    "load_local_plugins",
    "load_plugins",
    "local_plugin_files",
    "parse_plugin_names",
    "reducer_for",
]
