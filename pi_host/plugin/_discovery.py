"""Installed plugins: entry-point discovery and isolated loading.

The only module that uses stevedore, and the one that reads entry points from
``importlib.metadata`` (``_manager`` reads pi-host's own ``default`` extra). stevedore's
``NamedExtensionManager`` loads an allow-list of entry points, checking each name *before*
importing it (a disabled plugin is never imported) and reporting each failure through a
callback instead of aborting; ``importlib.metadata`` names the distribution and version of
each plugin. pluggy does everything after that: ``pm.register(ext.plugin, name=ext.name)``
is the only bridge.
"""

from __future__ import annotations

import importlib.metadata
import logging
import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from stevedore import NamedExtensionManager

from pi_host.errors import PluginLoadError

from ._containment import is_plugin_fault
from ._manager import PluginManager, tier_of_source, warn_if_slow

__all__ = ["ENTRY_POINT_GROUP", "InstalledPlugin", "installed_plugins", "load_entrypoint_plugins"]

logger = logging.getLogger("pi_host.plugin")

ENTRY_POINT_GROUP = "pi_host.plugins"
"""The entry-point group plugins register under; the entry-point name is the plugin's short name::

    [project.entry-points."pi_host.plugins"]
    bash = "pi_bash"
"""


@dataclass(frozen=True)
class InstalledPlugin:
    """An entry point of :data:`ENTRY_POINT_GROUP`, read from metadata without importing it."""

    name: str
    value: str
    distribution: str | None
    version: str | None


def _entry_points(group: str) -> list[importlib.metadata.EntryPoint]:
    seen: set[tuple[str, str]] = set()
    found = []
    for entry_point in importlib.metadata.entry_points(group=group):
        # The same distribution reachable twice on sys.path (an editable install next to a
        # regular one) lists its entry points twice.
        key = (entry_point.name, entry_point.value)
        if key not in seen:
            seen.add(key)
            found.append(entry_point)
    return found


def _origin(entry_point: importlib.metadata.EntryPoint) -> tuple[str | None, str | None]:
    dist = entry_point.dist
    if dist is None:
        return None, None
    fields = _name_and_version(dist.read_text("METADATA"))
    if fields is not None:
        return fields
    # One parse of the metadata: ``dist.name`` and ``dist.version`` would each parse it.
    metadata = dist.metadata
    return metadata["Name"], metadata["Version"]


def _name_and_version(text: str | None) -> tuple[str, str] | None:
    """``Name`` and ``Version`` from the header of a METADATA file, or None to ask the parser.

    Both are single-line fields at the top of the header; reading them directly costs a
    tenth of parsing the whole file as an e-mail message (~0.4 ms per plugin at start-up).
    A header where either is missing, repeated or folded is left to ``dist.metadata``.
    """
    if text is None:
        return None
    found: dict[str, str] = {}
    for line in text.split("\n", 64)[:64]:
        line = line.rstrip("\r")
        if not line:
            break  # the end of the header
        if line[0] in " \t":
            return None  # a folded field: the parser's business
        key, colon, value = line.partition(":")
        key = key.lower()
        if colon and key in ("name", "version"):
            if key in found:
                return None
            found[key] = value.strip()
    if "name" not in found or "version" not in found:
        return None
    return found["name"], found["version"]


def installed_plugins(group: str = ENTRY_POINT_GROUP) -> list[InstalledPlugin]:
    """Every plugin entry point installed, sorted by name; nothing is imported."""
    return _installed(_entry_points(group))


def _installed(entry_points: list[importlib.metadata.EntryPoint]) -> list[InstalledPlugin]:
    plugins = [
        InstalledPlugin(entry_point.name, entry_point.value, *_origin(entry_point))
        for entry_point in entry_points
    ]
    return sorted(plugins, key=lambda plugin: plugin.name)


class _AllowListLoader(NamedExtensionManager[Any]):
    """stevedore's allow-list loader over entry points read from ``importlib.metadata``.

    stevedore's own entry-point cache keeps ``(name, value, group)`` only, which loses the
    distribution that error messages and the listing name, persists in the user's home
    directory and lives for the whole process. The loader is handed the entry points the
    host listed a moment before (one read of the metadata per start), so it is never stale.
    """

    def __init__(self, entry_points: list[importlib.metadata.EntryPoint], *args: Any, **kwargs: Any) -> None:
        self._entry_points = entry_points  # before stevedore's __init__, which lists them
        super().__init__(*args, **kwargs)

    def list_entry_points(self) -> list[importlib.metadata.EntryPoint]:
        return list(self._entry_points)

    def _load_one_plugin(
        self,
        ep: importlib.metadata.EntryPoint,
        invoke_on_load: bool,
        invoke_args: tuple[Any, ...],
        invoke_kwds: dict[str, Any],
    ) -> Any:
        started = time.perf_counter()
        try:
            return super()._load_one_plugin(ep, invoke_on_load, invoke_args, invoke_kwds)
        except AssertionError as exc:
            # stevedore lets AssertionError escape its isolation (for its own test suite); a
            # plugin whose import-time assert fails is broken like any other.
            raise _FailedAssertion(exc) from exc
        except BaseException as exc:
            # sys.exit() or KeyboardInterrupt at import: the plugin's failure, not pi-host's end.
            if isinstance(exc, Exception) or not is_plugin_fault(exc):
                raise
            raise _FailedAssertion(exc) from exc
        finally:
            warn_if_slow(ep.name, time.perf_counter() - started)


class _FailedAssertion(Exception):
    """Carries a plugin's AssertionError (or BaseException) through stevedore's isolation."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def load_entrypoint_plugins(
    pm: PluginManager,
    *,
    allow: Collection[str] | None = None,
    disabled: Collection[str] = (),
    group: str = ENTRY_POINT_GROUP,
) -> list[PluginLoadError]:
    """Import and register the installed plugins that are enabled.

    A plugin is enabled unless its name is in ``disabled`` or ``allow`` is given and does not
    name it. Disabled plugins are recorded for the listing but never imported. The default
    set (the distributions ``pi-host[default]`` installs, see
    :func:`~._manager.default_distributions`) registers first, then the other installed
    plugins, each tier in name order: with pluggy's last-registered-first call order, an
    installed plugin comes before the default set whatever its name, and the order never
    depends on the installation order.

    A plugin that fails to import or register is reported in one log line and returned as a
    :class:`PluginLoadError`; the others still load.
    """
    errors: list[PluginLoadError] = []
    entry_points = _entry_points(group)
    installed = _installed(entry_points)
    origins = {(plugin.name, plugin.value): (plugin.distribution, plugin.version) for plugin in installed}
    taken = {name for name, plugin in pm.list_name_plugin() if plugin is not None}
    wanted: list[str] = []
    for plugin in installed:
        if plugin.name in wanted:
            continue  # a second distribution with the same name: registering it reports the clash
        if plugin.name in taken:
            clash = ValueError(f'the name "{plugin.name}" is already taken by another plugin')
            errors.append(pm.report(PluginLoadError(plugin.name, plugin.distribution, plugin.version, clash)))
            continue
        if plugin.name in disabled or (allow is not None and plugin.name not in allow):
            why = "disabled" if plugin.name in disabled else "not in the PI_HOST_PLUGINS allow-list"
            pm.record(
                plugin.name,
                "entrypoint",
                "disabled",
                distribution=plugin.distribution,
                version=plugin.version,
                error=why,
            )
            continue
        wanted.append(plugin.name)
        pm.record(
            plugin.name, "entrypoint", "enabled", distribution=plugin.distribution, version=plugin.version
        )

    if allow is not None:
        known = {plugin.name for plugin in installed} | taken
        for name in sorted(set(allow) - known):
            logger.warning('plugin "%s" is named in PI_HOST_PLUGINS but is not installed', name)

    if not wanted:
        return errors
    tiers = {
        plugin.name: tier_of_source("entrypoint", plugin.name, plugin.distribution) for plugin in installed
    }
    wanted.sort(key=lambda name: (tiers[name] != "default", name))

    def on_load_failure(manager: Any, entry_point: importlib.metadata.EntryPoint, exc: BaseException) -> None:
        dist, version = origins[entry_point.name, entry_point.value]
        cause = exc.error if isinstance(exc, _FailedAssertion) else exc
        errors.append(pm.fail(entry_point.name, PluginLoadError(entry_point.name, dist, version, cause)))

    loader = _AllowListLoader(
        entry_points,
        group,
        names=wanted,
        name_order=True,
        on_load_failure_callback=on_load_failure,
        on_missing_entrypoints_callback=None,
    )
    for extension in loader.extensions:
        dist, version = origins[extension.entry_point.name, extension.entry_point.value]
        if pm.get_plugin(extension.name) is not None:
            # Two distributions offer the same name; the first one registered keeps it.
            clash = ValueError(f'the name "{extension.name}" is already taken by another plugin')
            errors.append(pm.report(PluginLoadError(extension.name, dist, version, clash)))
            continue
        try:
            pm.register(extension.plugin, name=extension.name)
        except BaseException as exc:
            if not is_plugin_fault(exc):
                raise
            errors.append(pm.fail(extension.name, PluginLoadError(extension.name, dist, version, exc)))
    return errors
